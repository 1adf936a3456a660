// Dual-stack Pod CIDR migration on the node IPAM path against the real control plane: kube-apiserver with a
// dual-stack service range, kube-controller-manager with a dual-stack --cluster-cidr (a podCIDR per family for
// every node, --node-cidr-mask-size-ipv4/-ipv6), pods with an address of each family (the testbed's host-local
// stand-in, node-ipam.ts). The plan moves both families at once with node podCIDR sizes per family; every node
// is drained, deleted, re-registered by the hook and given one podCIDR per family in NEW.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { contains, parseCidr, parseIP } from '../../src/net/index.ts';
import { useTestbed } from '../testbed/harness.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { activePodNetworkPods, assertWorkloadsReady, getJSON, ROOT } from './pod-helpers.ts';

install();

const OLD = ['10.244.0.0/16', 'fd00:10:244::/56'];
const NEW = ['10.245.0.0/16', 'fd00:10:245::/56'];
const NODES = 6;

/** The CIDR of `list` that holds `x` (an address or a CIDR), if any. */
function holder(list: string[], x: string): string | undefined {
  const v = x.includes('/') ? parseCidr(x) : parseIP(x);
  return list.find((c) => { const r = parseCidr(c); return r.family === v.family && contains(r, v); });
}

/** Each of `cidrsOrIPs` lies in a different range of `ranges`, one per range: one per family, both covered. */
function onePerRange(ranges: string[], cidrsOrIPs: string[]): boolean {
  const hit = cidrsOrIPs.map((x) => holder(ranges, x));
  return cidrsOrIPs.length === ranges.length && hit.every(Boolean) && new Set(hit).size === ranges.length;
}

/** "namespace owner-kind/owner-name" (or "namespace bare/name") → how many active pods: what a shortfall is of. */
function byOwner(pods: any[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const p of pods) {
    const o = (p.metadata.ownerReferences ?? []).find((r: any) => r.controller);
    const k = `${p.metadata.namespace} ${o ? `${o.kind}/${o.name}` : `bare/${p.metadata.name}`}`;
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/** Active pods (hostNetwork too) by namespace/owner kind, for the before/after count. */
async function activePods(tb: { kubectl: any; server: string }): Promise<any[]> {
  const pods = (await getJSON(tb, ['get', 'pods', '-A'])).items;
  return pods.filter((p: any) => !['Succeeded', 'Failed'].includes(p.status?.phase) && !p.metadata.deletionTimestamp);
}

describe('Pod CIDR migration, dual-stack node IPAM: one podCIDR per family per node', () => {
  const tb = useTestbed({
    serviceCIDR: '10.96.0.0/16,fd00:10:96::/112', podCIDR: OLD.join(','), nodes: NODES, podIPAM: 'node', calicoCRDs: false,
  });
  const dir = mkdtempSync(join(tmpdir(), 'kr-pod-dual-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s'];
  let before = 0;
  let beforeByOwner = new Map<string, number>();

  test('the dual-stack testbed: every node has a podCIDR per family, every pod an address per family', { timeout: 600_000 }, async (t) => {
    const summary = await populateWorkloads(tb, { namespaces: 2, deploymentsPerNs: 2, replicas: 5, statefulSets: 1, statefulSetReplicas: 3 });
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, NODES);
    for (const n of nodes) assert.ok(onePerRange(OLD, n.spec.podCIDRs ?? []), `${n.metadata.name} ${(n.spec.podCIDRs ?? []).join(',')}`);
    const pods = await activePodNetworkPods(tb);
    assert.ok(pods.length >= 30, `${pods.length} pods on the pod network`);
    for (const p of pods) {
      const ips = (p.status.podIPs ?? []).map((x: any) => x.ip);
      assert.ok(onePerRange(OLD, ips), `${p.metadata.namespace}/${p.metadata.name} ${ips.join(',')}`);
    }
    const all = await activePods(tb);
    before = all.length;
    beforeByOwner = byOwner(all);
    assert.equal(before, summary.totalPods, 'every pod of the workloads runs');
    // a label and a taint set through the API: gone when the node is deleted, put back after it registers again
    const first = nodes[0].metadata.name;
    assert.equal((await tb.kubectl(['label', 'node', first, 'kube-renumber-test/team=blue'])).code, 0);
    assert.equal((await tb.kubectl(['taint', 'node', first, 'kube-renumber-test/dedicated=db:PreferNoSchedule'])).code, 0);
    t.diagnostic(`${NODES} nodes, ${before} pods (${pods.length} on the pod network, each with an IPv4 and an IPv6 address)`);
  });

  test('plan: node podCIDR sizes per family; status, apply and resume read it; apply stops at kcm-stop-allocating', { timeout: 600_000 }, async () => {
    const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW.join(','), '--ipam', 'node', '--node-hook', hook, '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    writeFileSync(planPath, r.out);
    const plan = yaml.load(r.out) as any;
    const node = plan.spec.podCIDR.node;
    // the testbed's kcm has no mirror pod: the sizes come from the nodes' podCIDRs (kcm runs with 24 and 64)
    assert.deepEqual(node.maskSizes, { ipv4: 24, ipv6: 64 });
    assert.equal(node.nodes.length, NODES);
    for (const n of node.nodes) assert.ok(onePerRange(NEW, n.to), `${n.name} planned ${n.to.join(',')}`);
    assert.deepEqual(plan.preflight.filter((c: any) => c.status === 'fail'), [], 'no failed pre-flight check');
    const st = await run(['status', planPath, '--state-dir', stateDir]);
    assert.equal(st.code, 0, st.err);
    const a = await run(['apply', planPath, '--yes', '--allow-hook', ...common()]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate kcm-stop-allocating/);
  });

  test('every node re-registers with an IPv4 and an IPv6 podCIDR in NEW; kcm allocates from NEW afterwards', { timeout: 1_200_000 }, async (t) => {
    const t0 = Date.now();
    const stop = await tb.restartControllerManager({ allocateNodeCIDRs: false });
    assert.equal(stop.running, true);
    // A Job that one eviction would fail (backoffLimit 0, no podFailurePolicy): its node's drain is refused before
    // anything of that node is evicted, the run stops; deleted, the run resumes
    const fragile = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'fragile', namespace: 'default' },
      spec: { backoffLimit: 0, template: { metadata: { labels: { app: 'fragile' }, annotations: { 'pod-complete.stage.kwok.x-k8s.io/delay': '1h' } },
        spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox' }] } } } };
    assert.equal((await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify(fragile) })).code, 0);
    let jobPod: any;
    for (let i = 0; i < 120 && !jobPod?.status?.podIP; i++) {
      jobPod = (await getJSON(tb, ['get', 'pods', '-n', 'default', '-l', 'app=fragile'])).items[0];
      if (!jobPod?.status?.podIP) await new Promise((res) => setTimeout(res, 500));
    }
    assert.ok(jobPod?.status?.podIP, 'the Job\'s pod runs');
    const refused = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', ...common()]);
    assert.notEqual(refused.code, 0, refused.err);
    assert.notEqual(refused.code, 7, refused.err);
    assert.match(refused.err, new RegExp(`Job default/fragile: evicting its pod\\(s\\) on node ${jobPod.spec.nodeName} would fail it \\(backoffLimit 0, 0 failure\\(s\\) so far, 1 pod\\(s\\) to evict`));
    const still = (await getJSON(tb, ['get', 'pods', '-n', 'default', '-l', 'app=fragile'])).items;
    assert.deepEqual(still.map((p: any) => p.metadata.uid), [jobPod.metadata.uid], 'the Job\'s pod untouched');
    const j = await getJSON(tb, ['get', 'job', 'fragile', '-n', 'default']);
    assert.ok(!(j.status?.conditions ?? []).some((c: any) => c.type === 'Failed' && c.status === 'True'), 'the Job did not fail');
    assert.equal((await tb.kubectl(['delete', 'job', 'fragile', '-n', 'default', '--wait=true', '--cascade=foreground'])).code, 0);
    const r = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
    assert.equal(tb.controllerManagerAlive(), true, 'kube-controller-manager kept running while nodes of both ranges existed');
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.equal(nodes.length, NODES);
    for (const n of nodes) {
      assert.ok(onePerRange(NEW, n.spec.podCIDRs ?? []), `${n.metadata.name} ${(n.spec.podCIDRs ?? []).join(',')}`);
      assert.equal(n.spec.podCIDR, n.spec.podCIDRs[0]);
    }
    const up = await tb.restartControllerManager({ clusterCIDR: NEW.join(','), allocateNodeCIDRs: true });
    assert.equal(up.running, true, 'kcm starts with the dual-stack --cluster-cidr=NEW once every node is in NEW');
    const done = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr', ...common()]);
    assert.equal(done.code, 0, done.err);
    const labelled = (await getJSON(tb, ['get', 'nodes'])).items.find((n: any) => n.metadata.name === nodes[0].metadata.name);
    assert.equal(labelled.metadata.labels['kube-renumber-test/team'], 'blue', 'the label set through the API is back');
    assert.deepEqual((labelled.spec.taints ?? []).filter((x: any) => x.key === 'kube-renumber-test/dedicated').map((x: any) => `${x.value}:${x.effect}`), ['db:PreferNoSchedule'], 'the taint is back');
    t.diagnostic(`${NODES} nodes moved in ${Math.round((Date.now() - t0) / 1000)} s`);
  });

  test('end state: every pod has an address per family in NEW, as many pods as before, verify passes', { timeout: 300_000 }, async () => {
    // the last nodes' replacements may still be being created or started: as many pods as before, each with an
    // address per family in NEW, within a minute
    let now = 0;
    let bad: string[] = [];
    let pods: any[] = [];
    for (let i = 0; i < 60; i++) {
      pods = await activePods(tb);
      now = pods.length;
      bad = (await activePodNetworkPods(tb)).filter((p: any) => !onePerRange(NEW, (p.status?.podIPs ?? []).map((x: any) => x.ip)))
        .map((p: any) => `${p.metadata.namespace}/${p.metadata.name} ${(p.status?.podIPs ?? []).map((x: any) => x.ip).join(',')}`);
      if (now === before && bad.length === 0) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    assert.deepEqual(bad, []);
    const after = byOwner(pods);
    const short = [...beforeByOwner].filter(([k, n]) => (after.get(k) ?? 0) !== n).map(([k, n]) => `${k}: ${after.get(k) ?? 0} of ${n}`);
    const notRunning = pods.filter((p: any) => p.status?.phase !== 'Running').map((p: any) => `${p.metadata.namespace}/${p.metadata.name} ${p.status?.phase} on ${p.spec.nodeName ?? 'no node'}`);
    assert.equal(now, before, `as many pods as before the move; by owner: ${short.join('; ') || 'none short'}; not running: ${notRunning.join(', ') || 'none'}`);
    await assertWorkloadsReady(tb);
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.ok(nodes.every((n: any) => !n.spec.unschedulable), 'no node left cordoned');
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    // a node added now gets a podCIDR of each family from kube-controller-manager, in NEW
    const name = nodes[0].metadata.name;
    await tb.kubectl(['delete', 'node', name, '--wait=true']);
    await tb.reregisterNode(name);
    let cidrs: string[] = [];
    for (let i = 0; i < 50 && cidrs.length < 2; i++) {
      cidrs = (await getJSON(tb, ['get', 'node', name])).spec.podCIDRs ?? [];
      if (cidrs.length < 2) await new Promise((res) => setTimeout(res, 200));
    }
    assert.ok(onePerRange(NEW, cidrs), `kcm allocates from NEW again: ${cidrs.join(',')}`);
  });
});
