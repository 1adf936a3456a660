// Undoing a Service CIDR migration survives what the migration itself survives. The real CLI process is killed
// (SIGKILL) while `rollback` and `restore` run, at points of distinct phases: right after an in-place Service became
// ExternalName on its way back, with a write in flight, right after a bridge Service was deleted, right after a state
// chunk reached the cluster, right after the new ServiceCIDR was deleted, between a journal line's write and its
// fsync; and, for restore (which keeps no journal) run from a state directory of its own, between the write and the
// fsync of the journal and of a backup it pulls from the cluster's copy, with the create of a deleted Service in
// flight and right after it. Each is run again to completion. A recreate `apply` killed part way
// through a batch (one Service already at its new IP) is undone by `rollback` alone. Then rollback and restore run
// through the fault-injecting proxy (test/testbed/faults.ts). Nothing may be lost: every Service back with its
// uid (in place), type, ClusterIPs and nodePorts as the backup holds them, no bridge left.
//
// It prints one JSON line `{"rollbackKills":…}` with the figures (docs/reliability.md quotes one run).

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { FaultProxy, type FaultStats } from '../testbed/faults.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { cli, type KillPoint, kubeconfigWithToken, servicesByKey, specWithoutIPs, writeServicePlan } from './helpers.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const RATE = Number(process.env.KUBE_RENUMBER_FAULT_RATE ?? 0.15);
const SEED = Number(process.env.KUBE_RENUMBER_FAULT_SEED ?? 20261126);

/** Kill points of a rollback, each in its own run of `rollback`, in this order. */
const ROLLBACK_KILLS: readonly KillPoint[] = [
  { name: 'rollback: after a Service became ExternalName', env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/services/:1:ExternalName' } },
  { name: 'rollback: write in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '2' } },
  { name: 'rollback: after a bridge was deleted', env: { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/services/:1' } },
  { name: 'rollback: after a state chunk', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/kube-renumber/secrets:1' } },
  { name: 'rollback: after the new ServiceCIDR was deleted', env: { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/servicecidrs/:1' } },
  // last: a rollback journals a line per step undone, so an earlier run killed at its 2nd line would have undone the
  // whole Service batch, leaving no bridge for the kill points above. Here: the ServiceCIDR step's "rolled-back" line.
  { name: 'rollback: before a journal line\'s fsync', env: { KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: '2' } },
];
/**
 * Kill points of a restore, run from a state directory of its own (another machine's, or the first one lost): it
 * first writes the plan and pulls the run's journal and backups from the cluster's copy into it, durably.
 */
const RESTORE_KILLS: readonly KillPoint[] = [
  { name: 'restore: before the pulled journal\'s fsync', env: { KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '1:journal.jsonl' } },
  { name: 'restore: before a pulled Service backup\'s fsync', env: { KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '2:_Service_' } },
  { name: 'restore: create in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '1' } },
  { name: 'restore: after a create', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/services:1' } },
];
/** The kill points before any create: each must fire (a create in flight may leave nothing for the next one). */
const RESTORE_FSYNC_KILLS = 2;

const isBridge = (s: any) => s.metadata.labels?.['kube-renumber.io/managed'] === 'true' || s.metadata.labels?.['kube-renumber.io/bridge-for'];

describe('rollback and restore killed mid-way, and through the fault proxy: nothing lost', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 1, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 4 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-rollback-crash-'));
  const figures: Record<string, unknown> = {};
  let proxy: FaultProxy | undefined;
  let faultKc = '';

  const common = (state: string, kc = tb.kubeconfigPath) => ['--kubeconfig', kc, '--state-dir', state, '--timeout', '90s', '--propagation-delay', '0s', '--force-unlock'];
  const services = async () => [...(await servicesByKey(tb)).values()].filter((s: any) => !isBridge(s));

  const plan = (strategy: string) => writeServicePlan(tb.kubeconfigPath, dir, NEW, strategy);

  /** Every Service of `before` is there as it was: type, ClusterIPs, nodePorts, the rest of its spec (and uid). */
  async function assertAsBefore(before: any[], opts: { uid: boolean }): Promise<void> {
    const now = await servicesByKey(tb);
    const lost: string[] = [];
    for (const s of before) {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      const a = now.get(key);
      if (!a) { lost.push(key); continue; }
      if (opts.uid) assert.equal(a.metadata.uid, s.metadata.uid, `${key} kept its uid`);
      assert.equal(a.spec.type, s.spec.type, `${key} type`);
      assert.deepEqual(a.spec.clusterIPs, s.spec.clusterIPs, `${key} at its old ClusterIPs`);
      assert.deepEqual((a.spec.ports ?? []).map((x: any) => x.nodePort), (s.spec.ports ?? []).map((x: any) => x.nodePort), `${key} nodePorts`);
      assert.deepEqual(specWithoutIPs(a), specWithoutIPs(s), `${key} spec`);
    }
    assert.deepEqual(lost, [], 'no Service lost');
    assert.deepEqual([...now.values()].filter(isBridge).map((s: any) => s.metadata.name), [], 'no bridge or cover left');
  }

  after(async () => { await proxy?.stop(); });
  const podList = async () => JSON.parse((await tb.kubectl(['get', 'pods', '-A', '-o', 'json'])).stdout).items.filter((p: any) => !p.metadata.deletionTimestamp);
  let podsAtStart: any[] = [];

  test('a NodePort Service; the fault proxy', async () => {
    const r = await tb.kubectl(['create', 'service', 'nodeport', 'np', '-n', 'default', '--tcp=80:8080', '--node-port=30080']);
    assert.equal(r.code, 0, r.stderr);
    const pki = join(tb.stateDir, 'pki', 'apiserver');
    proxy = await FaultProxy.start({ target: tb.server, cert: readFileSync(join(pki, 'apiserver.crt')), key: readFileSync(join(pki, 'apiserver.key')), rate: RATE, seed: SEED });
    faultKc = kubeconfigWithToken(proxy.url, tb.token);
    podsAtStart = await podList();
    assert.ok(podsAtStart.length > 0, 'pods at the start');
  });

  test('in place: rollback killed at six points, then run to completion: every Service back, uid kept', { timeout: 15 * 60_000 }, async () => {
    const before = await services();
    const planPath = await plan('in-place');
    const state = join(dir, 'inplace');
    const a = await run(['apply', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common(state)]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate restart-apiservers/);
    const moved = (await services()).filter((s: any) => s.spec.clusterIP?.startsWith('10.100.'));
    assert.ok(moved.length >= 4, `Services moved before the gate: ${moved.length}`);

    const kills: string[] = [];
    for (const k of ROLLBACK_KILLS) {
      const r = await cli(['rollback', planPath, ...common(state)], k.env);
      assert.equal(r.signal, 'SIGKILL', `${k.name}: the kill point fired (exit ${r.code}: ${r.err.slice(-500)})`);
      kills.push(k.name);
    }
    const r = await run(['rollback', planPath, ...common(state)]);
    assert.equal(r.code, 0, r.err);
    await assertAsBefore(before, { uid: true });
    figures.inPlace = { services: before.length, moved: moved.length, kills: kills.length, lost: 0 };
  });

  test('in place through the fault proxy: apply again, then rollback: every Service back, uid kept', { timeout: 15 * 60_000 }, async () => {
    const before = await services();
    const planPath = join(dir, 'plan-in-place.yaml');
    const state = join(dir, 'inplace');
    const a = await run(['apply', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common(state)]);
    assert.equal(a.code, 7, a.err);
    assert.ok((await services()).filter((s: any) => s.spec.clusterIP?.startsWith('10.100.')).length >= 4, 'moved again after the rollback');
    const start = proxy!.stats();
    const r = await run(['rollback', planPath, ...common(state, faultKc)]);
    assert.equal(r.code, 0, r.err);
    await assertAsBefore(before, { uid: true });
    figures.inPlaceFaults = delta(start, proxy!.stats());
  });

  test('recreate: apply killed right after a Service was created at its new IP; rollback alone puts every Service back', { timeout: 15 * 60_000 }, async () => {
    const before = await services();
    const planPath = await plan('recreate');
    const state = join(dir, 'recreate-partial');
    // the batch step dies half-way: it started, it did not finish, and one Service is already at its new IP
    const k = await cli(['apply', planPath, '--yes', ...common(state)], { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/services:1:10.100.' });
    assert.equal(k.signal, 'SIGKILL', k.err);
    const movedNow = (await services()).filter((s: any) => s.spec.clusterIP?.startsWith('10.100.'));
    assert.ok(movedNow.length >= 1, 'a Service at its new IP when the run died');
    const rb = await run(['rollback', planPath, ...common(state)]);
    assert.equal(rb.code, 0, rb.err);
    await assertAsBefore(before, { uid: false });
    figures.recreatePartial = { services: before.length, movedWhenKilled: movedNow.length, lost: 0 };
  });

  test('recreate: apply killed after Service deletes; restore killed four times from a state directory of its own, run again; rollback through the fault proxy', { timeout: 15 * 60_000 }, async () => {
    const before = await services();
    const planPath = await plan('recreate');
    const state = join(dir, 'recreate');
    const k = await cli(['apply', planPath, '--yes', ...common(state)], { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/services/:2' });
    assert.equal(k.signal, 'SIGKILL', k.err);
    const now = await services();
    const missing = before.filter((s: any) => !now.some((n: any) => n.metadata.name === s.metadata.name && n.metadata.namespace === s.metadata.namespace));
    assert.ok(missing.length >= 1, 'a Service deleted when the run died');

    let fired = 0;
    const elsewhere = join(dir, 'recreate-elsewhere');
    for (const [i, kp] of RESTORE_KILLS.entries()) {
      const r = await cli(['restore', planPath, ...common(elsewhere), '-o', 'json'], kp.env);
      if (i < RESTORE_FSYNC_KILLS) assert.equal(r.signal, 'SIGKILL', `${kp.name}: the kill point fired (exit ${r.code}: ${r.err.slice(-500)})`);
      // the in-flight create may have been applied, leaving nothing for the last kill point to interrupt
      if (r.signal === 'SIGKILL') fired++;
      else assert.equal(r.code, 0, `${kp.name}: ${r.err}`);
    }
    assert.ok(fired >= RESTORE_FSYNC_KILLS + 1, 'a restore was killed mid-fsync twice and at a create');
    // the directory the killed restores pulled into holds the run's backups, each whole
    const pulled = readdirSync(join(elsewhere, 'backups')).filter((f) => f.endsWith('.json') && !f.startsWith('.'));
    assert.ok(pulled.length >= missing.length, `backups pulled: ${pulled.length}`);
    for (const f of pulled) JSON.parse(readFileSync(join(elsewhere, 'backups', f), 'utf8'));
    const start = proxy!.stats();
    const rs = await run(['restore', planPath, ...common(state, faultKc), '-o', 'json']);
    assert.equal(rs.code, 0, `${rs.err}\n${rs.out}`);
    const rows = JSON.parse(rs.out).objects;
    assert.ok(!rows.some((x: any) => x.result === 'failed'), rs.out);
    // the batch the kill interrupted counts: rollback puts back what it had moved (and restore brought back)
    const rb = await run(['rollback', planPath, ...common(state, faultKc)]);
    assert.equal(rb.code, 0, `rollback: ${rb.err}`);
    await assertAsBefore(before, { uid: false });
    // nothing else was touched: every pod of the start still there (same uid: none lost, none restarted)
    const podsNow = new Set((await podList()).map((p: any) => p.metadata.uid));
    assert.deepEqual(podsAtStart.filter((p: any) => !podsNow.has(p.metadata.uid)).map((p: any) => `${p.metadata.namespace}/${p.metadata.name}`), [], 'no pod lost or restarted');
    figures.recreate = { services: before.length, missingAfterKill: missing.length, restoreKills: fired, lost: 0, faults: delta(start, proxy!.stats()) };
    console.log(JSON.stringify({ rollbackKills: { points: [...ROLLBACK_KILLS, ...RESTORE_KILLS].map((x) => x.name), ...figures } }));
  });
});

/** The proxy's figures between two readings. */
function delta(a: FaultStats, b: FaultStats): Record<string, unknown> {
  const requests = b.requests - a.requests;
  const faulted = b.faulted - a.faulted;
  const byKind = Object.fromEntries(Object.entries(b.byKind).map(([k, n]) => [k, n - a.byKind[k as keyof typeof a.byKind]]));
  return { requests, faulted, rate: requests > 0 ? Number((faulted / requests).toFixed(3)) : 0, byKind };
}
