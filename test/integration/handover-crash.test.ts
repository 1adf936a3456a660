// Step restart-workloads of an in-place Service CIDR migration on the service-crash fixture (two namespaces, each with
// a one-replica Deployment web-0 that a UDP Service selects, svc-multiport, and CoreDNS in kube-system), killed
// (SIGKILL) at every write of the UDP hand-overs in turn (udp-handover.ts: an old pod taken out of its ReplicaSet,
// taken out of its Services, evicted) and at the evictions and state chunks around them, each run resumed until one
// ends. The cold run of 2026-12-02 (issue 46) timed out in service-crash.test.ts waiting "for a serving replacement of
// pod tb-app-0/web-0-…" after kills at earlier writes of this step; this file kills at each of those writes on
// purpose. Every run must end, or die at its kill point, within the rollout timeout: no run may wait out a replacement
// that never comes. At the end: every Deployment a UDP Service selects handed over once (no rollout, no old pod left,
// none held), every pod started after the moves, verify passes. It sweeps every write (about 170 s), so it runs under
// `npm run test:full` (KUBE_RENUMBER_TEST_FULL=1); `npm test` reports it skipped.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { fullRun } from '../testbed/background.ts';
import { run } from '../unit/run-cli.ts';
import { assertHandedOver, cli, handoverPicture, killFigures, KillSweep, type KillPoint, runUpToRestarts, udpServedDeployments, withHistory, writeServicePlan } from './helpers.ts';
import { getJSON } from './pod-helpers.ts';
import { install } from '../../src/install.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

/**
 * The hand-over's writes (every pod PATCH of the step is one: the other restarts patch pod templates) and the writes
 * around them, one kill point each, in turn.
 */
export const HANDOVER_KILL_POINTS: readonly KillPoint[] = [
  { name: 'after a hand-over patch', env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/pods/:1' } },
  { name: 'hand-over patch in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'PATCH:/pods/:1' } },
  { name: 'after an eviction', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/eviction:1' } },
  { name: 'eviction in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'POST:/eviction:1' } },
  { name: 'after a state chunk', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/kube-renumber/secrets:1' } },
];

describe('restart-workloads killed at each write of its UDP hand-overs, resumed each time', { skip: fullRun() ? false : 'every write of the hand-overs: npm run test:full (KUBE_RENUMBER_TEST_FULL=1)' }, () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 4 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-handover-crash-'));
  const stateDir = join(dir, 'state');
  const common = (): string[] => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '90s', '--propagation-delay', '0s'];

  test('every run ends or dies at its kill point; each Deployment behind a UDP Service handed over once', { timeout: 25 * 60_000 }, async () => {
    const planPath = await writeServicePlan(tb.kubeconfigPath, dir, NEW, 'in-place');
    const plan = (await import('js-yaml')).load(readFileSync(planPath, 'utf8')) as any;
    // the migration up to the restarts, uninterrupted
    await runUpToRestarts(tb, plan, planPath, NEW, common());

    const handed = await udpServedDeployments(tb);
    assert.deepEqual([...handed].sort(), ['kube-system/coredns', 'tb-app-0/web-0', 'tb-app-1/web-0'], 'the Deployments a UDP Service selects');
    const podUidsBefore = new Set<string>((await getJSON(tb, ['get', 'pods', '-A'])).items.map((p: any) => p.metadata.uid));
    const revisions = new Map<string, number>();
    for (const d of (await getJSON(tb, ['get', 'deployments', '-A'])).items) revisions.set(`${d.metadata.namespace}/${d.metadata.name}`, Number(d.metadata.annotations['deployment.kubernetes.io/revision']));

    // a run that waits out a replacement that never comes fails at this timeout instead of the default 5 minutes
    const args = ['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--rollout-timeout', '150s', ...common(), '--force-unlock'];
    // every write of the hand-overs is few enough to kill at each (N = 1 always)
    const sweep = new KillSweep('restart-workloads hand-overs', HANDOVER_KILL_POINTS, { full: true });
    const history: string[] = [];
    await withHistory(sweep, history, async () => {
      let kills = 0;
      const byPoint = new Map<string, number>();
      let last: Awaited<ReturnType<typeof cli>> | undefined;
      for (let i = 0; i < 120; i++) {
        const { point, env, nth } = sweep.next(i);
        const t0 = Date.now();
        const c = await cli(args, env);
        last = c;
        const lines = c.err.split('\n').filter((l) => /handover|hand-over|held|error|stopped|timed out|waiting|restarted|evicted|scaled/.test(l));
        history.push(`${i}: ${point.name} #${nth}: ${c.signal ?? c.code} in ${((Date.now() - t0) / 1000).toFixed(1)} s | ${lines.join(' | ').slice(0, 700)}`);
        writeFileSync(join(dir, 'history.txt'), history.join('\n'));
        if (c.signal === 'SIGKILL') { kills++; byPoint.set(point.name, (byPoint.get(point.name) ?? 0) + 1); continue; }
        if (c.code !== 0) {
          const pics = await Promise.all(['kube-system', 'tb-app-0', 'tb-app-1'].map(async (ns) => `--- ${ns}\n${await handoverPicture(tb, ns)}`));
          assert.fail(`run ${i} exited ${c.code}:\n${c.err.slice(-4000)}\n${pics.join('\n')}`);
        }
        break;
      }
      assert.equal(last?.code, 0, 'a run ended');
      process.stderr.write(`# hand-over kills: ${kills} (${killFigures(byPoint)})\n`);
      for (const p of HANDOVER_KILL_POINTS) assert.ok(byPoint.has(p.name), `kill point "${p.name}" fired: ${killFigures(byPoint)}`);
      for (const key of handed) await assertHandedOver(tb, key, revisions.get(key)!, podUidsBefore);
      // the hand-over tells pods apart by IP (a held pod's IP is not a replacement's): no two live pods share one
      const byIP = new Map<string, string[]>();
      for (const p of (await getJSON(tb, ['get', 'pods', '-A'])).items as any[]) {
        if (p.spec.hostNetwork || !p.status?.podIP || p.metadata.deletionTimestamp) continue;
        byIP.set(p.status.podIP, [...(byIP.get(p.status.podIP) ?? []), `${p.metadata.namespace}/${p.metadata.name}`]);
      }
      assert.deepEqual([...byIP.entries()].filter(([, ps]) => ps.length > 1), [], 'no pod IP held by two pods');
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
    });
  });
});
