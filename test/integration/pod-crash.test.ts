// Kill the real CLI process (SIGKILL) at every mutation point of a Pod CIDR migration in turn (Calico path):
// each run is killed at its first write (after its answer, or in flight), its first backup before the fsync, or
// right after its first state chunk (helpers.ts KILL_POINTS, in turn). The pod count must be equal. Resuming again and again must end in the same state as an
// uninterrupted run, with nothing lost: every workload back, the bare pod back, every pod in NEW.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { cli, KILL_POINTS, killFigures, KillSweep, withHistory } from './helpers.ts';
import { activePodNetworkPods, assertAllPodsIn, assertWorkloadsReady, getJSON, inRange } from './pod-helpers.ts';

install();

const OLD = '10.244.0.0/16';
const NEW = '10.50.0.0/16';


describe('Pod CIDR migration (Calico) killed at every write, resumed each time', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 3, podIPAM: 'calico', populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-pod-crash-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');

  test('ends in the planned state with nothing lost', { timeout: 25 * 60_000 }, async () => {
    await populateWorkloads(tb, { namespaces: 2, deploymentsPerNs: 2, replicas: 2, statefulSets: 1, statefulSetReplicas: 2 });
    const before = await activePodNetworkPods(tb);
    const names = (kind: string) => getJSON(tb, ['get', kind, '-A']).then((l) => l.items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}`).sort());
    const workloadsBefore = { deploy: await names('deployments'), sts: await names('statefulsets'), ds: await names('daemonsets'), jobs: await names('jobs') };
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--parallel', '1', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    const args = ['resume', planPath, '--yes', '--ack-gate', 'pod-cidr-config', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '90s',
      // each killed run is known to be gone: take its Lease at once instead of waiting out its 60 s
      '--force-unlock'];
    const history: string[] = [];
    const sweep = new KillSweep('Pod CIDR migration (Calico)');
    await withHistory(sweep, history, async () => {
      let kills = 0;
      const byPoint = new Map<string, number>();
      for (let i = 0; i < 300; i++) {
        const { point, env, nth } = sweep.next(i);
        const r = await cli(args, env);
        const steps = r.err.split('\n').filter((l) => /^\[\d+\/\d+\]/.test(l));
        history.push(`${i}: ${point.name} #${nth}: ${r.signal ?? r.code} after ${steps.at(-1) ?? 'no step'} ${r.err.split('\n').filter((l) => /error|stopped/.test(l)).join(' | ').slice(0, 300)}`);
        writeFileSync(join(dir, 'history.txt'), history.join('\n'));
        if (r.signal === 'SIGKILL') { kills++; byPoint.set(point.name, (byPoint.get(point.name) ?? 0) + 1); continue; }
        assert.equal(r.code, 0, `run ${i}: ${r.err}\n${history.slice(-10).join('\n')}`);
        break;
      }
      process.stderr.write(`# pod crash: ${kills} kills (${killFigures(byPoint)})\n`);
      assert.ok(KILL_POINTS.every((k) => byPoint.has(k.name)), `every kill point fired: ${killFigures(byPoint)}`);
      // a full sweep kills after every write (15 or more); a sample at least once per kill point
      assert.ok(kills >= sweep.minKills(15), `kills spread over the whole migration (${kills})`);

      const v = await run(['verify', planPath, '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir]);
      assert.equal(v.code, 0, `${v.err}\n${history.slice(-15).join('\n')}`);
      const n = await assertAllPodsIn(tb, NEW, OLD);
      assert.equal(n, before.length, `${n} pods, ${before.length} before: none lost`);
      await assertWorkloadsReady(tb);
      assert.deepEqual({ deploy: await names('deployments'), sts: await names('statefulsets'), ds: await names('daemonsets'), jobs: await names('jobs') }, workloadsBefore, 'no workload lost');
      const bare = await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
      assert.ok(inRange(NEW, bare.status.podIP), 'the bare pod is back, in NEW');
      const pools = (await getJSON(tb, ['get', 'ippools.crd.projectcalico.org'])).items;
      assert.deepEqual(pools.map((x: any) => x.spec.cidr), [NEW]);
      const left = (await getJSON(tb, ['get', 'ipamblocks.crd.projectcalico.org'])).items.filter((b: any) => inRange(OLD, b.spec.cidr.split('/')[0]));
      assert.equal(left.length, 0);
      await assertCalicoIpamClean(tb, [OLD]);
    });
  });
});
