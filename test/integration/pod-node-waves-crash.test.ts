// Node waves killed and rolled back, on the node IPAM path against the real control plane: 6 kwok nodes in 2
// zones, waves of 2 (--max-unavailable 2). The move is killed (SIGKILL) mid-wave at named points of a node's move
// — after a Node's delete, an eviction, a podCIDR patch, a bare pod created again; a Node delete in flight; between a
// node report's write and its fsync — and resumed each time: every node ends with a podCIDR in NEW, no pod is lost, no PodDisruptionBudget is ever violated
// (watched from the first kill to the last rollback), no finished wave's node ever holds a pod outside its podCIDR,
// no workload rolled out twice, verify passes. Then the move is rolled back in waves, killed on the way back after a
// podCIDR patch, with a Node delete in flight and before a node report's fsync, and run again: every node is back in the old range with as many pods as before, and a third rollback has nothing
// left to undo.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { completedSteps, readJournal } from '../../src/engine/journal.ts';
import { useTestbed } from '../testbed/harness.ts';
import { type PDBWatcher, watchPDBs } from '../testbed/pdb-watch.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { cli, killFigures, type KillPoint } from './helpers.ts';
import { activePodNetworkPods, assertAllPodsIn, assertNoWorkloadRestartedTwice, assertWorkloadsReady, getJSON, inRange, ROOT, rollouts } from './pod-helpers.ts';

install();

const OLD = '10.244.0.0/16';
const NEW = '10.61.0.0/16';

/**
 * Named points inside a wave's node moves, in the order a run meets them; each run is killed at the next one. A
 * point the run never reaches lets it finish (the last one: the bare pod may have moved already).
 */
const WAVE_KILL_POINTS: readonly KillPoint[] = [
  { name: 'after a Node delete', env: { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/api/v1/nodes/:1' } },
  { name: 'after a podCIDR patch', env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/api/v1/nodes/:1:podCIDR' } },
  { name: 'after an eviction', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/eviction:1' } },
  // mid-request: sent in full, its answer never read
  { name: 'Node delete in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'DELETE:/api/v1/nodes/:1' } },
  // mid-fsync: a node's report (written once each node of the wave is done), written and not yet synced
  { name: 'before a node report\'s fsync', env: { KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: '1:"event":"report"' } },
  { name: 'after a podCIDR patch', env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/api/v1/nodes/:2:podCIDR' } },
  { name: 'after a Node delete', env: { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/api/v1/nodes/:1' } },
  { name: 'after an eviction', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/eviction:1' } },
  { name: 'after a podCIDR patch', env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/api/v1/nodes/:1:podCIDR' } },
  { name: 'after a Node delete', env: { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/api/v1/nodes/:1' } },
  { name: 'after a bare pod created again', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/tb-wl-0/pods:1:"kind":"Pod"' } },
];

/** Pods on `node` with an address outside the node's podCIDRs (none expected on a node whose move is done). */
function strays(node: any, pods: any[]): string[] {
  const cidrs: string[] = node.spec.podCIDRs ?? (node.spec.podCIDR ? [node.spec.podCIDR] : []);
  return pods.filter((p) => p.spec.nodeName === node.metadata.name && !p.spec.hostNetwork && p.status?.podIP && !p.metadata.deletionTimestamp
    && !['Succeeded', 'Failed'].includes(p.status?.phase) && !cidrs.some((c) => inRange(c, p.status.podIP)))
    .map((p) => `${p.metadata.namespace}/${p.metadata.name} ${p.status.podIP} on ${node.metadata.name} (${cidrs.join(',') || 'no podCIDR'})`);
}

describe('Node waves: killed mid-wave and resumed, then rolled back in waves', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 6, zones: 2, podIPAM: 'kwok', calicoCRDs: false, populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-node-waves-crash-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s'];
  let before = 0;
  let waveItems: Array<{ id: string; nodes: string[] }> = [];
  const history: string[] = [];
  // every PodDisruptionBudget, watched from the first killed run to the last rollback: none may ever be violated
  let pdbs: PDBWatcher | undefined;
  after(async () => { await pdbs?.stop(); });

  test('killed at every named point of a wave, resumed each time: every node in NEW, nothing lost, no stray pod', { timeout: 1_200_000 }, async () => {
    await populateWorkloads(tb, { namespaces: 1, deploymentsPerNs: 2, replicas: 4, statefulSets: 1, statefulSetReplicas: 2 });
    before = (await activePodNetworkPods(tb)).length;
    const rolloutsBefore = await rollouts(tb);
    const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '2', '-o', 'json']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    waveItems = (JSON.parse(p.out).steps as any[]).filter((s) => s.kind === 'move-nodes').map((s) => ({ id: s.id, nodes: s.items.map((it: any) => it.name) }));
    assert.equal(waveItems.length, 3, 'three waves of two');
    const stop = await tb.restartControllerManager({ allocateNodeCIDRs: false });
    assert.equal(stop.running, true);
    await assertWorkloadsReady(tb);
    pdbs = watchPDBs(tb);
    await pdbs.ready;
    const args = ['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr', ...common(), '--force-unlock'];
    const byPoint = new Map<string, number>();
    let midWave = 0;
    let afterAFinishedWave = 0;
    let last: Awaited<ReturnType<typeof cli>> | undefined;
    for (let i = 0; i <= WAVE_KILL_POINTS.length; i++) {
      const point = WAVE_KILL_POINTS[i] ?? { name: 'no kill', env: {} };
      last = await cli(args, point.env);
      const steps = last.err.split('\n').filter((l) => /^\[\d+\/\d+\]/.test(l));
      history.push(`${i}: ${last.signal ?? last.code} (${point.name}) after ${steps.at(-1) ?? 'no step'}`);
      // no finished wave's node holds a pod outside its podCIDR, after any kill
      const done = completedSteps(readJournal(join(stateDir, 'journal.jsonl')));
      const finished = new Set(waveItems.filter((w) => done.includes(w.id)).flatMap((w) => w.nodes));
      const [nodes, pods] = [(await getJSON(tb, ['get', 'nodes'])).items, (await getJSON(tb, ['get', 'pods', '-A'])).items];
      const bad = nodes.filter((n: any) => finished.has(n.metadata.name)).flatMap((n: any) => strays(n, pods));
      assert.deepEqual(bad, [], `run ${i}: a finished wave's node holds a stray pod\n${history.join('\n')}`);
      if (last.signal === 'SIGKILL') {
        byPoint.set(point.name, (byPoint.get(point.name) ?? 0) + 1);
        if (/move-nodes-wave/.test(steps.at(-1) ?? '')) midWave++;
        if (finished.size > 0) afterAFinishedWave++;
        continue;
      }
      break;
    }
    writeFileSync(join(dir, 'history.txt'), history.join('\n'));
    process.stderr.write(`# node waves crash: ${[...byPoint.values()].reduce((a, b) => a + b, 0)} kills, ${midWave} mid-wave, ${afterAFinishedWave} after a finished wave (${killFigures(byPoint)})\n`);
    assert.equal(last?.code, 0, `${last?.err}\n${history.join('\n')}`);
    assert.ok(midWave >= 5, `killed mid-wave at least 5 times\n${history.join('\n')}`);
    assert.ok(afterAFinishedWave >= 2, `killed at least twice once a wave had finished\n${history.join('\n')}`);
    for (const k of ['Node delete in flight', 'before a node report\'s fsync']) assert.ok(byPoint.has(k), `killed: ${k}\n${history.join('\n')}`);
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, 6);
    for (const n of nodes) assert.ok(inRange(NEW, n.spec.podCIDR.split('/')[0]), `${n.metadata.name} ${n.spec.podCIDR}`);
    assert.ok(nodes.every((n: any) => !n.spec.unschedulable), 'no node left cordoned');
    const pods = (await getJSON(tb, ['get', 'pods', '-A'])).items;
    assert.deepEqual(nodes.flatMap((n: any) => strays(n, pods)), [], 'no pod outside its node\'s podCIDR');
    assert.equal(await assertAllPodsIn(tb, NEW, OLD), before, 'as many pods as before: none lost');
    await assertWorkloadsReady(tb);
    await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    assert.deepEqual(pdbs.violations, [], `no PodDisruptionBudget violated while killed mid-wave\n${history.join('\n')}`);
    await assertNoWorkloadRestartedTwice(tb, rolloutsBefore);
  });

  test('rolled back in waves, killed mid-wave and run again: every node back in the old range, as many pods as before, every workload back', { timeout: 1_200_000 }, async () => {
    // without --allow-hook the node steps are not undone (their hook would run), and nothing moves
    const refused = await run(['rollback', planPath, '-o', 'json', ...common()]);
    assert.equal(refused.code, 1, refused.err);
    for (const w of waveItems) assert.match(JSON.stringify(JSON.parse(refused.out).notUndone.find((x: any) => x.step === w.id) ?? {}), /--allow-hook/, `${w.id}: ${refused.out}`);
    assert.ok((await getJSON(tb, ['get', 'nodes'])).items.every((n: any) => inRange(NEW, n.spec.podCIDR.split('/')[0])), 'no node moved');
    const rolloutsBefore = await rollouts(tb);
    // killed on the way back, once the first node of the first wave rolled back has its old podCIDR again
    const k = await cli(['rollback', planPath, '--allow-hook', '-o', 'json', ...common()], { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/api/v1/nodes/:1:podCIDR' });
    assert.equal(k.signal, 'SIGKILL', k.err);
    const half = (await getJSON(tb, ['get', 'nodes'])).items.filter((n: any) => n.spec.podCIDR && inRange(OLD, n.spec.podCIDR.split('/')[0]));
    assert.ok(half.length >= 1 && half.length < 6, `killed mid-rollback: ${half.length} node(s) back`);
    // then with a Node delete in flight, and between a node report's write and its fsync
    for (const env of [{ KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'DELETE:/api/v1/nodes/:1' }, { KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: '1:"event":"report"' }]) {
      const kk = await cli(['rollback', planPath, '--allow-hook', '-o', 'json', ...common(), '--force-unlock'], env);
      assert.equal(kk.signal, 'SIGKILL', `rollback ${JSON.stringify(env)}: the kill point fired (exit ${kk.code}: ${kk.err.slice(-600)})`);
    }
    const r = await run(['rollback', planPath, '--allow-hook', '-o', 'json', ...common(), '--force-unlock']);
    assert.equal(r.code, 0, `${r.out}\n${r.err}`);
    const out = JSON.parse(r.out || '{}');
    // each wave undone by this run or by a killed one before it (the journal says which)
    const rolledBack = readJournal(join(stateDir, 'journal.jsonl')).filter((e) => e.event === 'rolled-back').map((e) => e.step);
    for (const w of waveItems) assert.ok((out.undone ?? []).includes(w.id) || rolledBack.includes(w.id), `${w.id} undone: ${r.out}\n${r.err}`);
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, 6);
    for (const n of nodes) assert.ok(inRange(OLD, n.spec.podCIDR.split('/')[0]), `${n.metadata.name} ${n.spec.podCIDR}`);
    assert.ok(nodes.every((n: any) => !n.spec.unschedulable), 'no node left cordoned');
    const pods = (await getJSON(tb, ['get', 'pods', '-A'])).items;
    assert.deepEqual(nodes.flatMap((n: any) => strays(n, pods)), [], 'no pod outside its node\'s podCIDR');
    // the last wave's replacements may still be starting: as many pods as before within a minute
    let now = 0;
    for (let i = 0; i < 60 && (now = (await activePodNetworkPods(tb)).length) !== before; i++) await new Promise((res) => setTimeout(res, 1000));
    assert.equal(now, before, 'as many pods as before');
    assert.equal(await assertAllPodsIn(tb, OLD, NEW), before, 'as many pods as before, all in the old range');
    await assertWorkloadsReady(tb);
    await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    // the journal says each wave was rolled back; a second rollback has nothing left to undo of them
    const again = await run(['rollback', planPath, '--allow-hook', '-o', 'json', ...common()]);
    const out2 = JSON.parse(again.out || '{}');
    for (const w of waveItems) assert.ok(!(out2.undone ?? []).includes(w.id) && !(out2.notUndone ?? []).some((x: any) => x.step === w.id), `${w.id} not rolled back twice: ${again.out}`);
    await assertNoWorkloadRestartedTwice(tb, rolloutsBefore);
    assert.ok(pdbs, 'the PodDisruptionBudgets were watched from the first test on');
    const res = await pdbs.stop();
    pdbs = undefined;
    assert.deepEqual(res.violations, [], 'no PodDisruptionBudget violated, killed mid-wave or rolled back in waves');
    assert.ok(res.observations > 0, 'PodDisruptionBudgets observed');
  });
});
