// Kill the real CLI process (SIGKILL) at the mutation points of a Service CIDR migration in turn: each run is killed
// at a write to the apiserver (after its answer, or with it in flight), before a backup's fsync, or right after a
// state chunk (helpers.ts KILL_POINTS, in turn). `npm run test:full` kills each run at its first such write, so every
// write of the migration is the last thing some process did before dying; `npm test` kills each at its 1st to 4th
// (seeded: KillSweep). Resuming again and again must end in the same state as an uninterrupted run, with nothing lost.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { assertHandedOver, cli, handoverPicture, KILL_POINTS, killFigures, KillSweep, servicesByKey, ServiceGates, specWithoutIPs, udpServedDeployments, withHistory } from './helpers.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';


for (const strategy of (process.env.KR_CRASH_STRATEGY ? [process.env.KR_CRASH_STRATEGY] : ['in-place', 'recreate']) as Array<'in-place' | 'recreate'>) {
  describe(`Service CIDR migration (${strategy}) killed at every write, resumed each time`, () => {
    const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 4 } });
    const dir = mkdtempSync(join(tmpdir(), `kr-crash-${strategy}-`));
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');

    test('ends in the planned state with nothing lost', { timeout: 20 * 60_000 }, async () => {
      const sweep = new KillSweep(`Service CIDR migration (${strategy})`);
      const history: string[] = [];
      await withHistory(sweep, history, async () => {
        const before = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
        const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--strategy', strategy,
          '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
        assert.equal(p.code, 0, p.err);
        writeFileSync(planPath, p.out);
        const args = ['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--kubeconfig', tb.kubeconfigPath,
          '--state-dir', stateDir, '--timeout', '90s', '--propagation-delay', '0s',
        // each killed run is known to be gone: take its Lease at once instead of waiting out its 60 s
        '--force-unlock'];
        const podUidsBefore = new Set<string>(JSON.parse((await tb.kubectl(['get', 'pods', '-A', '-o', 'json'])).stdout).items.map((p: any) => p.metadata.uid));
        let kills = 0;
        const byPoint = new Map<string, number>();
        const gates = new ServiceGates(tb, NEW);
        for (let i = 0; i < 400; i++) {
          const { point, env, nth } = sweep.next(i);
          const r = await cli(args, env);
          const steps = r.err.split('\n').filter((l) => /^\[\d+\/\d+\]/.test(l));
          history.push(`${i}: ${point.name} #${nth}: ${r.signal ?? r.code} after ${steps.at(-1) ?? 'no step'} ${r.err.split('\n').filter((l) => /error|stopped|waiting|timed out/.test(l)).join(' | ').slice(0, 600)}`);
          writeFileSync(join(dir, 'history.txt'), history.join('\n'));
          if (r.signal === 'SIGKILL') { kills++; byPoint.set(point.name, (byPoint.get(point.name) ?? 0) + 1); continue; }
          if (r.code === 0) break;
          if (r.code !== 7) {
            // what the hand-overs wait on (the cold run of issue 46 timed out waiting for a replacement of tb-app-0/web-0)
            const pics = await Promise.all(['kube-system', 'tb-app-0', 'tb-app-1'].map(async (ns) => `--- ${ns}\n${await handoverPicture(tb, ns)}`));
            assert.fail(`run ${i} exited ${r.code}: ${r.err}\n${pics.join('\n')}`);
          }
          await gates.pass(r.err);
        }
        process.stderr.write(`# ${strategy}: ${kills} kills (${killFigures(byPoint)})\n`);
        assert.ok(KILL_POINTS.every((k) => byPoint.has(k.name)), `every kill point fired: ${killFigures(byPoint)}`);
        assert.ok(gates.both);
        // the run restarted every workload itself (step restart-workloads), each exactly once across the kills: rolled
        // out, or, serving a UDP Service (CoreDNS), handed over pod by pod
        const handed = await udpServedDeployments(tb);
        assert.ok(handed.has('kube-system/coredns'), `CoreDNS is served by a UDP Service: ${[...handed].join(', ')}`);
        for (const d of JSON.parse((await tb.kubectl(['get', 'deployments', '-A', '-o', 'json'])).stdout).items) {
          const key = `${d.metadata.namespace}/${d.metadata.name}`;
          if (handed.has(key)) { await assertHandedOver(tb, key, 1, podUidsBefore); continue; }
          assert.ok(d.spec.template.metadata.annotations?.['kube-renumber.io/restart'], `${key} restarted by the run`);
          assert.equal(d.metadata.annotations['deployment.kubernetes.io/revision'], '2', `${key} rolled out once`);
        }
        // a full sweep kills after every write (20 or more); a sample at least once per kill point
        assert.ok(kills >= sweep.minKills(20), `kills spread over the whole migration (${kills})`);

        const v = await run(['verify', planPath, '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir]);
        assert.equal(v.code, 0, `${v.err}\n${history.slice(-15).join('\n')}`);
        const byKey = await servicesByKey(tb);
        for (const s of before) {
          const key = `${s.metadata.namespace}/${s.metadata.name}`;
          const a: any = byKey.get(key);
          assert.ok(a, `${key} survived`);
          if (key === 'default/kubernetes' || s.spec.type === 'ExternalName' || s.spec.clusterIP === 'None' || s.spec.type === 'LoadBalancer') continue;
          assert.equal(a.spec.clusterIP, `10.100.${s.spec.clusterIP.split('.').slice(2).join('.')}`, `${key} at its mapped IP`);
          assert.deepEqual(specWithoutIPs(a), specWithoutIPs(s), `${key} spec unchanged but for the IPs`);
          if (strategy === 'in-place') assert.equal(a.metadata.uid, s.metadata.uid, `${key} kept its uid`);
          assert.deepEqual(a.metadata.labels ?? {}, s.metadata.labels ?? {}, `${key} labels`);
        }
        assert.equal([...byKey.values()].filter((s: any) => s.metadata.labels?.['kube-renumber.io/bridge-for']).length, 0, 'no bridge left');
      });
    });
  });
}
