// A 20-node testbed in calico IPAM mode with the workload fixture (>= 500 pods of every kind, PDBs), the
// PDB watcher (and proof that it can fail), kube-controller-manager restarts with a mismatched
// --cluster-cidr, and node re-registration through the hook script.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';
import { watchPDBs } from '../testbed/pdb-watch.ts';
import { COMPLETE_DELAY_ANNOTATION, READY_DELAY_ANNOTATION } from '../testbed/stages.ts';
import { populateWorkloads, WORKLOAD_LABEL, type WorkloadSummary } from '../testbed/workloads.ts';

const POD_CIDR = '10.244.0.0/16';
const CALICO = '/apis/crd.projectcalico.org/v1';
const REREGISTER = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'testbed', 'reregister-node.ts');

function runNode(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? 1, stderr }));
  });
}

const ready = (n: KubeObject | undefined) =>
  (n?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

describe('workload fixture on 20 nodes (calico IPAM)', () => {
  const tb = useTestbed({ nodes: 20, podIPAM: 'calico', podCIDR: POD_CIDR, controllerManagerQPS: 100 });
  let wl: WorkloadSummary;

  test('>= 500 pods of every kind come up with IPs from per-node Calico blocks', { timeout: 360_000 }, async (t) => {
    wl = await populateWorkloads(tb);
    t.diagnostic(`populateWorkloads: ${wl.totalPods} pods (${wl.podNetworkPods} on the pod network) in ${wl.elapsedMs} ms`);
    assert.ok(wl.podNetworkPods >= 500, `${wl.podNetworkPods} pod-network pods`);
    assert.deepEqual(new Set(wl.workloads.map((w) => w.kind)), new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Pod', 'Job']));
    assert.equal(wl.pdbs.length, wl.workloads.filter((w) => w.kind === 'Deployment' || w.kind === 'StatefulSet').length);

    const pods = (await tb.client.list(`/api/v1/pods?labelSelector=${encodeURIComponent(WORKLOAD_LABEL)}`)).items;
    assert.equal(pods.length, wl.totalPods);
    const nodes = new Map((await tb.client.list('/api/v1/nodes')).items.map((n) => [n.metadata.name, n]));
    const ips = new Set<string>();
    for (const p of pods) {
      assert.equal(p.status.phase, 'Running', `${p.metadata.namespace}/${p.metadata.name}`);
      if (p.spec.hostNetwork) {
        const nodeIP = nodes.get(p.spec.nodeName)!.status.addresses.find((a: { type: string }) => a.type === 'InternalIP').address;
        assert.equal(p.status.podIP, nodeIP, 'hostNetwork pod has its node IP');
        continue;
      }
      assert.ok(cidrContains(POD_CIDR, p.status.podIP));
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/podIP'], `${p.status.podIP}/32`);
      ips.add(p.status.podIP);
    }
    assert.equal(ips.size, wl.podNetworkPods, 'pod IPs unique');
    const jobPods = pods.filter((p) => p.metadata.labels?.[WORKLOAD_LABEL] === 'job.batch');
    assert.equal(jobPods.length, 2);
    assert.ok(jobPods.every((p) => p.metadata.annotations?.[COMPLETE_DELAY_ANNOTATION] === '1h'));
    const handles = (await tb.client.list(`${CALICO}/ipamhandles`)).items;
    assert.equal(handles.length, wl.podNetworkPods, 'one IPAMHandle per pod-network pod');
    const affs = (await tb.client.list(`${CALICO}/blockaffinities`)).items;
    assert.equal(new Set(affs.map((a) => a.spec.node)).size, 20, 'every node has a block');
  });

  test('PDB watcher: a rolling restart keeps every PDB; deleting pods directly breaks a tight one', { timeout: 180_000 }, async (t) => {
    const w = watchPDBs(tb);
    await w.ready;
    // a rollout (maxUnavailable 1 / maxSurge 1) of a 22-replica Deployment next to its maxUnavailable-1 PDB
    const ns = wl.namespaces[0]!;
    const restartedAt = new Date().toISOString();
    await tb.client.mergePatch(`/apis/apps/v1/namespaces/${ns}/deployments/web-0`, {
      spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': restartedAt } } } },
    });
    const t0 = Date.now();
    await eventually('web-0 rolled out', async () => {
      const d = await tb.client.get(`/apis/apps/v1/namespaces/${ns}/deployments/web-0`);
      const s = d.status ?? {};
      return s.observedGeneration === d.metadata.generation && s.updatedReplicas === 22 && s.availableReplicas === 22 && (s.replicas ?? 0) === 22;
    }, 120_000);
    t.diagnostic(`rolling restart of 22 pods: ${Date.now() - t0} ms`);
    assert.equal(w.violations.length, 0, `no PDB violated during a rollout: ${JSON.stringify(w.violations)}`);

    // tight budget: 3 replicas, maxUnavailable 1, replacements take 5 s to become Ready
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pdb-selftest' } });
    await eventually('default SA', () => tb.client.getOrUndefined('/api/v1/namespaces/pdb-selftest/serviceaccounts/default'));
    await tb.client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'tight', namespace: 'pdb-selftest' },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'tight' } },
        template: {
          metadata: { labels: { app: 'tight' }, annotations: { [READY_DELAY_ANNOTATION]: '5s' } },
          spec: { containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }] },
        },
      },
    });
    await tb.client.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'tight', namespace: 'pdb-selftest' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'tight' } } },
    });
    await eventually('tight PDB satisfied', async () => {
      const p = await tb.client.get('/apis/policy/v1/namespaces/pdb-selftest/poddisruptionbudgets/tight');
      return p.status?.observedGeneration === p.metadata.generation && p.status.currentHealthy === 3 && p.status.desiredHealthy === 2;
    }, 60_000);
    // the budget was broken while the pods started: only what happens from now on counts
    const before = w.violations.filter((v) => v.pdb === 'pdb-selftest/tight').length;
    const pods = (await tb.client.list('/api/v1/namespaces/pdb-selftest/pods')).items;
    await Promise.all(pods.slice(0, 2).map((p) => tb.client.delete(`/api/v1/namespaces/pdb-selftest/pods/${p.metadata.name}`)));
    await eventually('a violation recorded', async () => w.violations.filter((v) => v.pdb === 'pdb-selftest/tight').length > before, 30_000);
    const res = await w.stop();
    const v = res.violations.filter((x) => x.pdb === 'pdb-selftest/tight').slice(before);
    t.diagnostic(`observations ${res.observations}; violation ${JSON.stringify(v[0])}`);
    assert.ok(v.some((x) => x.currentHealthy < x.desiredHealthy && x.desiredHealthy === 2));
    assert.deepEqual(res.violations.filter((x) => x.pdb !== 'pdb-selftest/tight'), [], 'the fixture PDBs were never violated');
  });

  test('kube-controller-manager exits at start when node podCIDRs lie outside --cluster-cidr', { timeout: 120_000 }, async (t) => {
    const t0 = Date.now();
    const r = await tb.restartControllerManager({ clusterCIDR: '10.50.0.0/16' });
    t.diagnostic(`restart with --cluster-cidr=10.50.0.0/16: ${JSON.stringify(r)} after ${Date.now() - t0} ms`);
    assert.equal(r.running, false);
    assert.equal(r.exitCode, 1);
    assert.equal(tb.controllerManagerAlive(), false);
    const log = readFileSync(tb.logPath('kube-controller-manager'), 'utf8');
    assert.match(log, /failed to mark cidr\[10\.244\.\d+\.0\/24\] at idx \[0\] as occupied for node: tb-node-\d+: cidr 10\.244\.\d+\.0\/24 is out the range of cluster cidr 10\.50\.0\.0\/16/);

    // without node IPAM it runs with the same (mismatched) --cluster-cidr
    const r2 = await tb.restartControllerManager({ allocateNodeCIDRs: false });
    assert.deepEqual(r2, { running: true });
    assert.deepEqual(tb.controllerManagerFlags, { clusterCIDR: '10.50.0.0/16', allocateNodeCIDRs: false });
    assert.equal(await tb.controllerManagerExit(3000), undefined, 'still running 3 s later');
    assert.equal(tb.controllerManagerAlive(), true);
  });

  test('reregister-node re-creates a deleted node as a hook command; kcm gives it a podCIDR once allowed', { timeout: 120_000 }, async (t) => {
    const name = 'tb-node-19';
    const old = await tb.client.get(`/api/v1/nodes/${name}`);
    await tb.client.delete(`/api/v1/nodes/${name}`);
    await eventually('node gone', async () => !(await tb.client.getOrUndefined(`/api/v1/nodes/${name}`)));
    const t0 = Date.now();
    const r = await runNode([REREGISTER], { ...tb.nodeHookEnv(), KUBE_RENUMBER_NODE: name });
    t.diagnostic(`reregister-node: exit ${r.code} after ${Date.now() - t0} ms`);
    assert.equal(r.code, 0, r.stderr);
    const n = await tb.client.get(`/api/v1/nodes/${name}`);
    assert.notEqual(n.metadata.uid, old.metadata.uid);
    assert.ok(ready(n));
    assert.equal(n.spec.podCIDR, undefined, 'no podCIDR while kcm does not allocate');
    // kcm's node lifecycle controller adds the beta.kubernetes.io/{os,arch} labels asynchronously, as it did on the old node
    const same = (a: unknown, b: unknown) => JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());
    const labels = await eventually('labels of the old node', async () => {
      const l = (await tb.client.get(`/api/v1/nodes/${name}`)).metadata.labels;
      return same(l, old.metadata.labels) ? l : undefined;
    }, 30_000).catch(async () => (await tb.client.get(`/api/v1/nodes/${name}`)).metadata.labels);
    assert.deepEqual(labels, old.metadata.labels);
    assert.deepEqual(n.status.addresses.find((a: { type: string }) => a.type === 'InternalIP'), old.status.addresses.find((a: { type: string }) => a.type === 'InternalIP'));

    // an existing node: exit 0 at once; no name: exit 1
    assert.equal((await runNode([REREGISTER, '--kubeconfig', tb.kubeconfigPath, name], {})).code, 0);
    const bad = await runNode([REREGISTER, '--kubeconfig', tb.kubeconfigPath], { KUBE_RENUMBER_NODE: '' });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /no node name/);

    // the library call does the same
    await tb.client.delete('/api/v1/nodes/tb-node-18');
    await eventually('node gone', async () => !(await tb.client.getOrUndefined('/api/v1/nodes/tb-node-18')));
    const n18 = await tb.reregisterNode('tb-node-18');
    assert.ok(ready(n18));

    // back to the original flags: kcm allocates podCIDRs to the re-registered nodes
    const back = await tb.restartControllerManager({ clusterCIDR: POD_CIDR, allocateNodeCIDRs: true });
    assert.deepEqual(back, { running: true });
    for (const nn of [name, 'tb-node-18']) {
      const got = await eventually(`${nn} podCIDR`, async () => (await tb.client.get(`/api/v1/nodes/${nn}`)).spec.podCIDR, 30_000);
      assert.ok(cidrContains(POD_CIDR, got.split('/')[0]), got);
    }
  });
});
