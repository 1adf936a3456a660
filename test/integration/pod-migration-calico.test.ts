// Pod CIDR migration on the Calico path end to end against the real control plane: 20 nodes and more than
// 500 pods across Deployments, StatefulSets, DaemonSets (one of them hostNetwork), a bare pod and a Job, with
// PDBs; pod IPs from IPPools through per-node blocks (Calico's own calico-ipam plugin); run under the
// shipped least-privilege roles. A watcher follows every PodDisruptionBudget: none may ever be violated.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { watchPDBs, type PDBWatcher } from '../testbed/pdb-watch.ts';
import { populateWorkloads, type WorkloadSummary } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { activePodNetworkPods, assertAllPodsIn, assertWorkloadsReady, getJSON, inRange, grantRecreate, migrateKubeconfig } from './pod-helpers.ts';

install();

const SVC = '10.96.0.0/16';

describe('Pod CIDR migration, Calico IPAM: 20 nodes, 500+ pods, PDBs, least privilege', () => {
  const OLD = '10.244.0.0/16';
  const NEW = '10.50.0.0/16';
  const tb = useTestbed({ serviceCIDR: SVC, podCIDR: OLD, nodes: 20, podIPAM: 'calico', populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-pod-calico-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  let kc = '';
  let summary: WorkloadSummary;
  let watcher: PDBWatcher | undefined;
  // a test that fails before watcher.stop() must not leave the watch loop reconnecting: the file would never exit
  after(async () => { await watcher?.stop(); });
  let before: any[] = [];
  const common = () => ['--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s'];

  test('the cluster: ≥ 20 nodes, ≥ 500 pods in the old pool, blocks per node', { timeout: 600_000 }, async () => {
    summary = await populateWorkloads(tb, {});
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.ok(nodes.length >= 20, `${nodes.length} nodes`);
    before = await activePodNetworkPods(tb);
    assert.ok(before.length >= 500, `${before.length} pod-network pods`);
    for (const k of ['Deployment', 'StatefulSet', 'DaemonSet', 'Pod', 'Job']) assert.ok(summary.workloads.some((w) => w.kind === k), k);
    assert.ok(summary.pdbs.length > 0);
    assert.ok(before.every((p: any) => inRange(OLD, p.status.podIP)));
    const blocks = (await getJSON(tb, ['get', 'ipamblocks.crd.projectcalico.org'])).items;
    assert.ok(blocks.length >= 20, `${blocks.length} IPAMBlocks`);
    kc = await migrateKubeconfig(tb);
  });

  test('plan --pod-cidr: Calico path, the pool copied, the DNS Deployment critical', async () => {
    const r = await run(['plan', '--kubeconfig', kc, '--pod-cidr', NEW, '--parallel', '6', '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    assert.doesNotMatch(r.err, /pod-target|pod-ipam/, 'no failed pod pre-flight');
    writeFileSync(planPath, r.out);
    // create pods is granted only where the bare pod runs (the plan lists it): without that RoleBinding the run is
    // refused before its first write, told the command to run
    const refused = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(refused.code, 5, refused.err);
    assert.match(refused.err, /^error: not allowed for user "system:serviceaccount:[^"]+": create pods -n tb-wl-0 .*kube-renumber rbac PLAN \| kubectl apply -f -, or kubectl -n tb-wl-0 create role kube-renumber-recreate-pods --verb=create --resource=pods; kubectl -n tb-wl-0 create rolebinding kube-renumber-recreate-pods --role=kube-renumber-recreate-pods --serviceaccount=kube-system:kube-renumber-migrate \(nothing was changed\)$/m);
    assert.deepEqual(await grantRecreate(tb, r.out), ['tb-wl-0']);
    assert.match(r.out, /ipam: calico/);
    assert.match(r.out, /kube-system\/coredns/);
  });

  test('apply restarts everything into NEW, never violating a PDB, and stops at the config gate', { timeout: 900_000 }, async () => {
    watcher = watchPDBs(tb);
    await watcher.ready;
    const r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate pod-cidr-config/);
    assert.match(r.err, /warning: pod .*standalone.* has no controller/);
    await assertAllPodsIn(tb, NEW, OLD);
  });

  test('kube-controller-manager keeps starting with the gate\'s flags; resume finishes; verify passes', { timeout: 300_000 }, async () => {
    const kcm = await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: false });
    assert.equal(kcm.running, true, 'kcm starts with --cluster-cidr=NEW --allocate-node-cidrs=false while nodes keep old podCIDRs');
    const r = await run(['resume', planPath, '--yes', '--ack-gate', 'pod-cidr-config', ...common()]);
    assert.equal(r.code, 0, r.err);
    const res = await watcher!.stop();
    assert.ok(res.observations >= summary.pdbs.length, `watched ${res.observations} PDB states`);
    assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
  });

  test('end state: every pod in NEW, workloads back, old pool and its blocks gone, nothing lost', async () => {
    const n = await assertAllPodsIn(tb, NEW, OLD);
    assert.ok(n >= before.length - 2, `${n} pods now, ${before.length} before`);
    await assertWorkloadsReady(tb);
    const pools = (await getJSON(tb, ['get', 'ippools.crd.projectcalico.org'])).items;
    assert.deepEqual(pools.map((p: any) => p.spec.cidr), [NEW]);
    for (const kind of ['ipamblocks', 'blockaffinities']) {
      const left = (await getJSON(tb, ['get', `${kind}.crd.projectcalico.org`])).items.filter((b: any) => inRange(OLD, b.spec.cidr.split('/')[0]));
      assert.equal(left.length, 0, `${kind} left in ${OLD}`);
    }
    const bare = await getJSON(tb, ['get', 'pod', '-n', 'tb-wl-0', 'standalone']);
    assert.ok(inRange(NEW, bare.status.podIP), 'the bare pod came back in NEW');
    const coredns = await getJSON(tb, ['get', 'deploy', '-n', 'kube-system', 'coredns']);
    const orig = before.filter((p: any) => p.metadata.namespace === 'kube-system' && p.metadata.name.startsWith('coredns-')).length;
    assert.equal(coredns.spec.replicas, orig, 'CoreDNS back at its replicas');
    const hostPods = (await getJSON(tb, ['get', 'pods', '-A'])).items.filter((p: any) => p.spec.hostNetwork);
    assert.ok(hostPods.length >= 20 && hostPods.every((p: any) => !p.metadata.annotations?.['kubectl.kubernetes.io/restartedAt']), 'hostNetwork pods untouched');
    // Calico's own view: no problem, no leaked address, nothing of the old pool
    const check = await assertCalicoIpamClean(tb, [OLD]);
    assert.ok(check.allocations >= n, `${check.allocations} allocations for ${n} pods`);
  });
});

