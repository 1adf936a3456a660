// Pod CIDR migration on the node IPAM path end to end against the real control plane: 20 nodes in 2 zones and
// more than 500 pods (pod IPs from node podCIDRs, given by kwok); kube-controller-manager stops allocating, the
// nodes are drained, deleted, re-registered by a hook and given a podCIDR in NEW in waves of 5
// (--max-unavailable 25%, each wave spread over both zones), then kcm allocates from NEW. A watcher follows every
// PodDisruptionBudget: none may ever be violated.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { watchPDBs, type PDBWatcher } from '../testbed/pdb-watch.ts';
import { populateWorkloads, type WorkloadSummary } from '../testbed/workloads.ts';
import { readJournal } from '../../src/engine/journal.ts';
import { run } from '../unit/run-cli.ts';
import { assertAllPodsIn, assertWorkloadsReady, getJSON, inRange, ROOT } from './pod-helpers.ts';

install();

const SVC = '10.96.0.0/16';

describe('Pod CIDR migration, node IPAM: nodes drained, deleted and re-registered in waves', () => {
  const OLD = '10.244.0.0/16';
  const NEW = '10.60.0.0/16';
  const tb = useTestbed({ serviceCIDR: SVC, podCIDR: OLD, nodes: 20, zones: 2, podIPAM: 'kwok', calicoCRDs: false, populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-pod-node-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  let watcher: PDBWatcher | undefined;
  // a test that fails before watcher.stop() must not leave the watch loop reconnecting: the file would never exit
  after(async () => { await watcher?.stop(); });
  let summary: WorkloadSummary;
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s'];

  test('plan with a re-registration hook in waves of 5 across both zones; apply stops until kcm stops allocating', { timeout: 600_000 }, async () => {
    // One small StatefulSet per namespace: an evicted StatefulSet pod comes back under the same name, and the
    // disruption controller keeps counting that name as disrupted for up to 2 minutes (disruptedPods), which
    // blocks the next eviction of the same StatefulSet that long (measured; kubectl drain waits the same).
    summary = await populateWorkloads(tb, { statefulSets: 1, statefulSetReplicas: 3, replicas: 24 });
    assert.ok(summary.totalPods >= 500, `${summary.totalPods} pods`);
    const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '25%', '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    writeFileSync(planPath, r.out);
    assert.match(r.out, /ipam: node/);
    assert.match(r.out, /maxUnavailable: 25%/);
    const waves = (JSON.parse((await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '25%', '-o', 'json'])).out).steps as any[])
      .filter((s) => s.kind === 'move-nodes');
    assert.equal(waves.length, 4);
    const zoneOf = new Map((await getJSON(tb, ['get', 'nodes'])).items.map((n: any) => [n.metadata.name, n.metadata.labels['topology.kubernetes.io/zone']]));
    for (const w of waves) {
      assert.equal(w.items.length, 5);
      const zones = w.items.map((it: any) => zoneOf.get(it.name));
      assert.ok(zones.filter((z: string) => z === 'zone-0').length >= 2 && zones.filter((z: string) => z === 'zone-1').length >= 2, `${w.id} spreads across zones: ${zones}`);
    }
    const a = await run(['apply', planPath, '--yes', '--allow-hook', ...common()]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate kcm-stop-allocating/);
  });

  test('every node re-registers with a podCIDR in NEW; kcm keeps running; no PDB violated', { timeout: 1_500_000 }, async () => {
    const stop = await tb.restartControllerManager({ allocateNodeCIDRs: false });
    assert.equal(stop.running, true);
    watcher = watchPDBs(tb);
    await watcher.ready;
    // --node-interval 1s: each wave's 5 drains start a second apart (asserted below from the journal)
    const r = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--node-interval', '1s', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
    assert.equal(tb.controllerManagerAlive(), true, 'kube-controller-manager kept running while nodes of both ranges existed');
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, 20);
    for (const n of nodes) assert.ok(inRange(NEW, n.spec.podCIDR.split('/')[0]), `${n.metadata.name} ${n.spec.podCIDR}`);
    const up = await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: true });
    assert.equal(up.running, true, 'kcm starts with --cluster-cidr=NEW once every node is in NEW');
    const done = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr', ...common()]);
    assert.equal(done.code, 0, done.err);
    const res = await watcher!.stop();
    assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');
    assert.ok(res.observations >= summary.pdbs.length);
    // each wave's nodes moved at once, each journaled
    const entries = readJournal(join(stateDir, 'journal.jsonl')).filter((e) => e.event === 'report' && e.detail?.includes('"node"'))
      .map((e) => ({ step: e.step!, node: JSON.parse(e.detail!).node }));
    assert.equal(entries.filter((x) => x.node.status === 'done').length, 20);
    // --node-interval: within each wave, the seconds from the wave's start to each node's drain (its phases up to and
    // including its wait for a turn) are at least one interval apart
    const byWave = new Map<string, number[]>();
    for (const { step, node: n } of entries) {
      if (n.phases?.pace === undefined) continue;
      const starts = byWave.get(step) ?? [];
      starts.push((n.phases.check ?? 0) + (n.phases.cordon ?? 0) + n.phases.pace);
      byWave.set(step, starts);
    }
    assert.equal([...byWave.values()].flat().length, 20, 'every node waited its turn');
    for (const [wave, starts] of byWave) {
      const s = starts.sort((a, b) => a - b);
      for (let i = 1; i < s.length; i++) assert.ok(s[i]! - s[i - 1]! >= 0.95, `${wave}: drains ${i - 1} and ${i} started ${(s[i]! - s[i - 1]!).toFixed(2)} s apart: ${s.join(', ')}`);
    }
  });

  test('end state: pods in NEW, workloads back, nothing cordoned, verify passes', async () => {
    await assertAllPodsIn(tb, NEW, OLD);
    await assertWorkloadsReady(tb);
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.ok(nodes.every((n: any) => !n.spec.unschedulable), 'no node left cordoned');
    await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    // a node added now gets its podCIDR from kube-controller-manager, in NEW
    await tb.kubectl(['delete', 'node', nodes[0].metadata.name, '--wait=true']);
    const again = await tb.reregisterNode(nodes[0].metadata.name);
    void again;
    let cidr = '';
    for (let i = 0; i < 50 && !cidr; i++) {
      cidr = (await getJSON(tb, ['get', 'node', nodes[0].metadata.name])).spec.podCIDR ?? '';
      if (!cidr) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(inRange(NEW, cidr.split('/')[0]), `kcm allocates from NEW again: ${cidr}`);
  });
});
