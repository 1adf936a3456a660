// Step restart-workloads of a Service CIDR migration killed (SIGKILL) at every write in turn (helpers.ts KILL_POINTS:
// after a write's answer, with it in flight, before a backup's fsync, after a state chunk), resumed each time until it
// ends. On the workload fixture (Deployments, StatefulSets and a DaemonSet behind PodDisruptionBudgets, a bare pod, a
// Job whose evictions are not failures) and the cluster DNS: no PodDisruptionBudget ever violated (watched throughout),
// no workload restarted twice (one rollout each: one new Deployment revision, one new ControllerRevision per
// DaemonSet; each pod of a StatefulSet behind a budget evicted and created again once, no rollout; the bare pod
// created again once, each Job pod replaced at most once), CoreDNS back at its replicas, and no pod left that
// started before the moves.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { listWatch, watchPDBs } from '../testbed/pdb-watch.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { assertHandedOver, cli, KILL_POINTS, killFigures, KillSweep, runUpToRestarts, udpServedDeployments, withHistory } from './helpers.ts';
import { getJSON } from './pod-helpers.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

describe('step restart-workloads killed at every write, resumed each time', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 1, deployments: 1, replicas: 2, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-restart-crash-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = (): string[] => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '90s', '--propagation-delay', '0s'];

  test('finishes with no pod restarted twice and no PodDisruptionBudget violated', { timeout: 25 * 60_000 }, async () => {
    await populateWorkloads(tb, { namespaces: 1, deploymentsPerNs: 2, replicas: 2, statefulSets: 1, statefulSetReplicas: 2 });
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--parallel', '2',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(p.code, 0, p.err);
    writeFileSync(planPath, p.out);
    const plan = (await import('js-yaml')).load(p.out) as any;
    assert.deepEqual(plan.spec.serviceCIDR.restarts.critical, ['kube-system/coredns']);
    assert.deepEqual(plan.spec.serviceCIDR.restarts.barePodNamespaces, ['tb-wl-0']);

    // the migration up to the restarts, uninterrupted
    await runUpToRestarts(tb, plan, planPath, NEW, common());

    // what the restarts start from
    const list = (kind: string) => getJSON(tb, ['get', kind, '-A']).then((l) => l.items);
    const deploys = new Map((await list('deployments')).map((d: any) => [`${d.metadata.namespace}/${d.metadata.name}`, d]));
    const revisionsOf = async () => {
      const out = new Map<string, number>();
      for (const cr of await list('controllerrevisions')) {
        const o = (cr.metadata.ownerReferences ?? []).find((x: any) => x.controller);
        if (o) out.set(`${o.kind}/${cr.metadata.namespace}/${o.name}`, (out.get(`${o.kind}/${cr.metadata.namespace}/${o.name}`) ?? 0) + 1);
      }
      return out;
    };
    const revBefore = await revisionsOf();
    const podsBefore = (await list('pods')).filter((x: any) => !x.spec.hostNetwork);
    const jobPodsBefore = podsBefore.filter((x: any) => x.metadata.ownerReferences?.some((o: any) => o.kind === 'Job')).length;
    assert.ok(jobPodsBefore >= 2 && podsBefore.some((x: any) => x.metadata.name === 'standalone'));
    // pods created while the restarts run, by workload
    const added = new Map<string, number>();
    const keyOf = (x: any) => `${x.metadata.namespace}/${x.metadata.labels?.['kube-renumber.test/workload'] ?? x.metadata.labels?.['k8s-app'] ?? x.metadata.labels?.app ?? x.metadata.name}`;
    const seen = new Set((await list('pods')).map((x: any) => x.metadata.uid));
    const pw = listWatch(tb.client, '/api/v1/pods', {
      onList: (items: any[]) => { for (const x of items) if (!seen.has(x.metadata.uid)) { seen.add(x.metadata.uid); added.set(keyOf(x), (added.get(keyOf(x)) ?? 0) + 1); } },
      onEvent: (type, x: any) => { if (type === 'ADDED' && !seen.has(x.metadata.uid)) { seen.add(x.metadata.uid); added.set(keyOf(x), (added.get(keyOf(x)) ?? 0) + 1); } },
    });
    const pdbs = watchPDBs(tb);
    await Promise.all([pw.ready, pdbs.ready]);

    const args = ['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--only', 'restart-workloads', ...common(),
      // each killed run is known to be gone: take its Lease at once instead of waiting out its 60 s
      '--force-unlock'];
    const history: string[] = [];
    const sweep = new KillSweep('step restart-workloads');
    await withHistory(sweep, history, async () => {
      let kills = 0;
      const byPoint = new Map<string, number>();
      try {
        for (let i = 0; i < 200; i++) {
          const { point, env, nth } = sweep.next(i);
          const c = await cli(args, env);
          history.push(`${i}: ${point.name} #${nth}: ${c.signal ?? c.code} ${c.err.split('\n').filter((l) => /error|stopped|restarted|evicted|recreated|scaled/.test(l)).join(' | ').slice(0, 400)}`);
          writeFileSync(join(dir, 'history.txt'), history.join('\n'));
          if (c.signal === 'SIGKILL') { kills++; byPoint.set(point.name, (byPoint.get(point.name) ?? 0) + 1); continue; }
          assert.equal(c.code, 0, `run ${i}: ${c.err.slice(-3000)}\n${history.slice(-10).join('\n')}`);
          break;
        }
      } finally {
        await pw.stop();
      }
      const res = await pdbs.stop();
      process.stderr.write(`# restart-workloads: ${kills} kills (${killFigures(byPoint)}); ${res.observations} PDB states watched; pods created: ${JSON.stringify(Object.fromEntries(added))}\n`);
      assert.ok(KILL_POINTS.every((k) => byPoint.has(k.name)), `every kill point fired: ${killFigures(byPoint)}`);
      // a full sweep kills after every write (10 or more); a sample at least once per kill point
      assert.ok(kills >= sweep.minKills(10), `kills spread over the whole step (${kills})`);
      assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');

      // one rollout per workload, whatever the kills; a Deployment serving a UDP Service (CoreDNS) handed over pod by
      // pod instead, with no rollout
      const handed = await udpServedDeployments(tb);
      assert.ok(handed.has('kube-system/coredns'), `CoreDNS is served by a UDP Service: ${[...handed].join(', ')}`);
      const podUidsBefore = new Set<string>(podsBefore.map((x: any) => x.metadata.uid));
      for (const d of await list('deployments')) {
        const key = `${d.metadata.namespace}/${d.metadata.name}`;
        const b: any = deploys.get(key);
        const revision = Number(b.metadata.annotations['deployment.kubernetes.io/revision']);
        if (handed.has(key)) await assertHandedOver(tb, key, revision, podUidsBefore);
        else {
          assert.equal(Number(d.metadata.annotations['deployment.kubernetes.io/revision']), revision + 1, `Deployment ${key} rolled out once`);
          assert.equal(d.spec.template.metadata.annotations?.['kube-renumber.io/restart'] !== undefined, true, `Deployment ${key} restarted by the run`);
        }
        assert.equal(d.spec.replicas, b.spec.replicas, `Deployment ${key} at its replicas again`);
      }
      const revAfter = await revisionsOf();
      const hostNetwork = new Set([...(await list('daemonsets')), ...(await list('statefulsets'))]
        .filter((o: any) => o.spec.template.spec.hostNetwork).map((o: any) => `${o.kind ?? ''}/${o.metadata.namespace}/${o.metadata.name}`));
      for (const [k, n] of revBefore) {
        if (k.startsWith('ReplicaSet/')) continue;
        // a hostNetwork workload keeps the node's resolver and is left alone; a StatefulSet behind a budget (every
        // one here) has its pods evicted one at a time, no rollout
        const host = [...hostNetwork].some((h) => k.endsWith(h.slice(h.indexOf('/'))));
        const evicted = k.startsWith('StatefulSet/');
        assert.equal(revAfter.get(k), host || evicted ? n : n + 1, `${k}: ${host ? 'not restarted (hostNetwork)' : evicted ? 'no rollout (evicted)' : 'one new revision'}`);
      }
      for (const s of await list('statefulsets')) {
        const k = [...added.keys()].find((x) => x === `${s.metadata.namespace}/statefulset.${s.metadata.name}` || x === `${s.metadata.namespace}/${s.spec.selector.matchLabels?.app}`);
        const n = k ? added.get(k)! : 0;
        assert.ok(n <= s.spec.replicas, `StatefulSet ${s.metadata.namespace}/${s.metadata.name}: ${n} pods created, each at most once`);
      }
      assert.ok([...revBefore.keys()].some((k) => k === 'DaemonSet/tb-wl-0/host-agent'), 'the hostNetwork DaemonSet is among them');
      const standalone = [...added.entries()].filter(([k]) => k.endsWith('/pod.standalone')).reduce((a, [, n]) => a + n, 0);
      assert.equal(standalone, 1, 'the bare pod created again once');
      const jobAdded = [...added.entries()].filter(([k]) => k.includes('/job.')).reduce((a, [, n]) => a + n, 0);
      assert.ok(jobAdded <= jobPodsBefore, `Job pods replaced at most once each (${jobAdded} created, ${jobPodsBefore} before)`);
      // every Deployment pod replaced once: new pods per Deployment = its replicas (CoreDNS, scaled up by one for the
      // restarts: the scaled-up pod, then its replicas + 1 restarted)
      for (const [key, d] of deploys as Map<string, any>) {
        const k = [...added.keys()].find((x) => x === `${d.metadata.namespace}/deployment.${d.metadata.name}` || x === `${d.metadata.namespace}/${d.spec.selector.matchLabels?.['k8s-app'] ?? d.spec.selector.matchLabels?.app}`);
        const n = k ? added.get(k)! : 0;
        const want = d.spec.replicas + (key === 'kube-system/coredns' ? 2 : 0);
        assert.ok(n <= want, `Deployment ${key}: ${n} pods created, at most ${want}`);
      }

      // done from the cluster's point of view: a run now finds the step done; the rest of the plan ends; verify passes
      const r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common()]);
      assert.equal(r.code, 0, r.err.slice(-2000));
      const journal = readFileSync(join(stateDir, 'journal.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
      // step-done, or step-skip "already done" when a kill came after the step's last write and before its step-done
      assert.ok(journal.some((e: any) => e.step === 'restart-workloads' && (e.event === 'step-done' || (e.event === 'step-skip' && e.detail === 'already done'))),
        'restart-workloads ended, as its run or its check says');
      // read independently of the step's own check: no running pod but hostNetwork ones started before the kubelets took
      // the new DNS IP (the last of the moves here)
      const moved = Date.parse(journal.find((e: any) => e.step === 'kubelet-cluster-dns' && (e.event === 'step-done' || e.event === 'step-skip')).ts);
      const stale = (await list('pods')).filter((x: any) => !x.spec.hostNetwork && x.status.phase === 'Running' && Date.parse(x.status.startTime) < moved - 1000);
      assert.deepEqual(stale.map((x: any) => `${x.metadata.namespace}/${x.metadata.name}`), [], 'every pod started after the moves');
      // each workload journaled when its restart started (its outcome too, unless a kill came first)
      const reported = new Set(journal.filter((e: any) => e.event === 'report' && e.step === 'restart-workloads' && e.detail === 'restarting').flatMap((e: any) => e.objects ?? []));
      for (const key of deploys.keys()) assert.ok(reported.has(`Deployment/${key}`), `Deployment ${key} journaled`);
      assert.ok(reported.has('Pod/tb-wl-0/standalone'), 'the bare pod journaled');
      assert.ok(reported.has('Other/tb-app-0/db'), 'the StatefulSet behind a budget journaled (its pods evicted)');
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
    });
  });
});
