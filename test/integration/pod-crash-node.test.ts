// Kill the real CLI process (SIGKILL) on the node IPAM path's steps, one kill point per run, each in a distinct
// phase of a node's move and of each kind (after a write, mid-request, mid-fsync), nodes named in drain order a, b, c:
// drain (a): between a Node backup's write and its fsync, right after its cordon, right after a pod's eviction, its
// Node delete in flight; reregister (a): right after the hook re-registered it (the hook kills its caller); assign (a):
// its uncordon in flight; reregister (b): its podCIDR patch in flight, between its step-start journal line's write and
// fsync; assign (b): the same, and right after its uncordon; drain (c): right after the bare pod was created again;
// reregister (c): right after its podCIDR was set; then a write in flight. The hook registers every Node cordoned, so
// each assign step has an uncordon to do, and a run killed between a node's podCIDR and its uncordon leaves one for
// the next. Each killed run is resumed by the next; the last runs to completion. Nothing may be lost: as many pods
// after as before, every workload back, the bare pod back, every node in NEW and uncordoned, no PodDisruptionBudget
// ever violated, no workload rolled out twice. Every run goes as the ServiceAccount of the shipped roles, with create
// pods bound only where the plan's bare pod runs (a run without that RoleBinding is refused before its first write,
// told the command that adds it).
//
// It prints one JSON line `{"nodeKills":…}` with the figures (docs/reliability.md quotes one run).

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { type PDBWatcher, watchPDBs } from '../testbed/pdb-watch.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { cli, type KillPoint } from './helpers.ts';
import { activePodNetworkPods, assertAllPodsIn, assertNoWorkloadRestartedTwice, assertWorkloadsReady, getJSON, grantRecreate, inRange, migrateKubeconfig, ROOT, rollouts } from './pod-helpers.ts';

install();

const OLD = '10.244.0.0/16';
const NEW = '10.60.0.0/16';

/** The kill points, in the order the nodes' moves meet them (a, b, c: the nodes in drain order). */
const nodeKills = (a: string, b: string, c: string): ReadonlyArray<KillPoint & { armHook?: boolean }> => [
  { name: `drain-node-${a}: before a Node backup's fsync`, env: { KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '1:Node__cluster' } },
  { name: `drain-node-${a}: after a cordon`, env: { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/nodes/:1:"unschedulable":true' } },
  { name: `drain-node-${a}: after an eviction`, env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/eviction:1' } },
  { name: `drain-node-${a}: Node delete in flight`, env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: `DELETE:/nodes/${a}:1` } },
  // the hook re-registered the Node and is killing its caller (the hook command does, once armed): before the run
  // records that the hook ran
  { name: `reregister-node-${a}: after the hook ran`, env: {}, armHook: true },
  { name: `assign-podcidr-${a}: uncordon in flight`, env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: `PATCH:/nodes/${a}:1:"unschedulable":false` } },
  { name: `reregister-node-${b}: podCIDR patch in flight`, env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: `PATCH:/nodes/${b}:1:podCIDRs` } },
  { name: `reregister-node-${b}: before its journal line's fsync`, env: { KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: `1:"step":"reregister-node-${b}"` } },
  { name: `assign-podcidr-${b}: before its journal line's fsync`, env: { KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: `1:"step":"assign-podcidr-${b}"` } },
  { name: `assign-podcidr-${b}: after an uncordon`, env: { KUBE_RENUMBER_TEST_KILL_AT: `PATCH:/nodes/${b}:1:"unschedulable":false` } },
  { name: `drain-node-${c}: after a bare pod was created again`, env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/pods:1:"kind":"Pod"' } },
  { name: `reregister-node-${c}: after a podCIDR was set (the node still cordoned)`, env: { KUBE_RENUMBER_TEST_KILL_AT: `PATCH:/nodes/${c}:1:podCIDRs` } },
  { name: 'write in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '1' } },
];

describe('Pod CIDR migration, node IPAM, killed on the node steps and resumed', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 3, podIPAM: 'kwok', calicoCRDs: false, populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-pod-crash-node-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  let pdbs: PDBWatcher | undefined;
  after(async () => { await pdbs?.stop(); });

  test('ends in the planned state with nothing lost', { timeout: 20 * 60_000 }, async () => {
    await populateWorkloads(tb, { namespaces: 1, deploymentsPerNs: 2, replicas: 2, statefulSets: 1, statefulSetReplicas: 2, job: false });
    // once the file `arm` exists, the hook (after it re-registered the Node) removes it and SIGKILLs the run that called it
    const arm = join(dir, 'arm-hook-kill');
    // every Node registers cordoned: each node's assign step uncordons it
    const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath} --unschedulable && if rm ${arm} 2>/dev/null; then kill -9 $PPID; fi`;
    const planArgs = ['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '-o', 'yaml'];
    // The kill points come in the order a node's move meets them, and the bare pod is created again while its own
    // node is drained: the scheduler puts it on any node, so put it on the node drained last, where the kill after
    // its creation comes after the kills of the earlier nodes' steps.
    const first = await run(planArgs);
    assert.ok(first.code === 0 || first.code === 1, first.err);
    const drained = [...new Set([...first.out.matchAll(/\bid: drain-node-(\S+)/g)].map((m) => m[1]))];
    assert.equal(drained.length, 3, `three drain steps in the plan: ${drained.join(', ')}`);
    await pinPod(tb, 'tb-wl-0', 'standalone', drained.at(-1)!);
    const before = await activePodNetworkPods(tb);
    const bareBefore = await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    const rolloutsBefore = await rollouts(tb);
    const p = await run(planArgs);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    const kc = await migrateKubeconfig(tb);
    const common = ['--yes', '--allow-hook', '--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s',
      // each killed run is known to be gone: take its Lease at once instead of waiting out its 60 s
      '--force-unlock'];
    const refused = await run(['apply', planPath, ...common]);
    assert.equal(refused.code, 5, refused.err);
    assert.match(refused.err, /^error: not allowed for user "system:serviceaccount:[^"]+": create pods -n tb-wl-0 .*kube-renumber rbac PLAN \| kubectl apply -f -, or kubectl -n tb-wl-0 create role kube-renumber-recreate-pods --verb=create --resource=pods; kubectl -n tb-wl-0 create rolebinding kube-renumber-recreate-pods --role=kube-renumber-recreate-pods --serviceaccount=kube-system:kube-renumber-migrate \(nothing was changed\)$/m);
    assert.deepEqual(await grantRecreate(tb, p.out), ['tb-wl-0']);
    const a = await run(['apply', planPath, ...common]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate kcm-stop-allocating/);
    assert.equal((await tb.restartControllerManager({ allocateNodeCIDRs: false })).running, true);

    const args = ['resume', planPath, '--ack-gate', 'kcm-stop-allocating', ...common];
    const history: string[] = [];
    const fired: string[] = [];
    // every PodDisruptionBudget, watched from the first killed run to the end: none may ever be violated
    await assertWorkloadsReady(tb);
    pdbs = watchPDBs(tb);
    await pdbs.ready;
    for (const k of nodeKills(drained[0]!, drained[1]!, drained[2]!)) {
      if (k.armHook) writeFileSync(arm, '');
      const r = await cli(args, k.env);
      const steps = r.err.split('\n').filter((l) => /^\[\d+\/\d+\]/.test(l));
      history.push(`${k.name}: ${r.signal ?? r.code} after ${steps.at(-1) ?? 'no step'}`);
      writeFileSync(join(dir, 'history.txt'), history.join('\n'));
      assert.equal(r.signal, 'SIGKILL', `${k.name}: the kill point fired (exit ${r.code}: ${r.err.slice(-600)})\n${history.join('\n')}`);
      if (k.armHook) assert.ok(!existsSync(arm), `${k.name}: the hook fired the kill\n${history.join('\n')}`);
      fired.push(`${k.name} (${steps.at(-1)?.replace(/^\[\d+\/\d+\]\s*/, '').slice(0, 60) ?? 'no step'})`);
    }
    const r = await run(args);
    assert.equal(r.code, 7, `${r.err}\n${history.join('\n')}`);
    assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
    assert.equal((await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: true })).running, true);
    const done = await run([...args, '--ack-gate', 'kcm-cluster-cidr']);
    assert.equal(done.code, 0, done.err);

    const v = await run(['verify', planPath, '--kubeconfig', kc, '--state-dir', stateDir]);
    assert.equal(v.code, 0, `${v.err}\n${history.join('\n')}`);
    const n = await assertAllPodsIn(tb, NEW, OLD);
    assert.equal(n, before.length, `${n} pods, ${before.length} before: none lost`);
    await assertWorkloadsReady(tb);
    const bare = await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    assert.notEqual(bare.metadata.uid, bareBefore.metadata.uid, 'the bare pod was created again');
    assert.ok(inRange(NEW, bare.status.podIP), 'the bare pod is back, in NEW');
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, 3);
    for (const node of nodes) {
      assert.ok(inRange(NEW, node.spec.podCIDR.split('/')[0]), `${node.metadata.name} ${node.spec.podCIDR}`);
      assert.ok(!node.spec.unschedulable, `${node.metadata.name} uncordoned`);
    }
    await assertNoWorkloadRestartedTwice(tb, rolloutsBefore);
    const res = await pdbs.stop();
    pdbs = undefined;
    assert.deepEqual(res.violations, [], 'no PodDisruptionBudget violated');
    assert.ok(res.observations > 0, 'PodDisruptionBudgets observed');
    console.log(JSON.stringify({ nodeKills: { points: fired, kills: fired.length, nodes: nodes.length, podsBefore: before.length, podsAfter: n, lost: before.length - n, pdbObservations: res.observations, pdbViolations: 0 } }));
  });
});

/** Bare pod NS/NAME on node `node`: created again there (same spec) unless it runs there already; waits for its IP. */
async function pinPod(tb: Parameters<typeof getJSON>[0], ns: string, name: string, node: string): Promise<void> {
  const pod = await getJSON(tb, ['get', 'pod', '-n', ns, name]);
  if (pod.spec.nodeName === node) return;
  const d = await tb.kubectl(['delete', 'pod', '-n', ns, name, '--wait=true', '--timeout=60s']);
  assert.equal(d.code, 0, d.stderr);
  const copy = { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: pod.metadata.labels }, spec: { ...pod.spec, nodeName: node } };
  const file = join(mkdtempSync(join(tmpdir(), 'kr-pin-')), 'pod.json');
  writeFileSync(file, JSON.stringify(copy));
  const c = await tb.kubectl(['create', '-f', file]);
  assert.equal(c.code, 0, c.stderr);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const now = await getJSON(tb, ['get', 'pod', '-n', ns, name]);
    if (now.status?.podIP && now.status?.phase === 'Running') return;
    assert.ok(Date.now() < deadline, `${ns}/${name} on ${node} has no IP after 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
