/**
 * A synthetic large inventory: 5,000 nodes, 100,000 pods, 20,000 services, 5,000 Calico blocks. Checks the
 * result is right at that size (timing belongs in the benchmarks).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSnapshot } from '../../src/cluster/build.ts';
import type { KubeObject } from '../../src/cluster/types.ts';

const NODES = 5000;
const PODS = 100_000;
const SERVICES = 20_000;

const ip4 = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const BASE_POD = (10 << 24) | (128 << 16); // 10.128.0.0/9, a /24 per node
const BASE_NODE = (172 << 24) | (16 << 16); // 172.16.0.0/16 → /24s
const BASE_SVC = (10 << 24) | (96 << 16); // 10.96.0.0/12

function inventory(): KubeObject[] {
  const objects: KubeObject[] = [];
  for (let i = 0; i < NODES; i++) {
    const podCIDR = i % 100 === 99 ? undefined : `${ip4(BASE_POD + i * 256)}/24`;
    objects.push({
      apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${i}`, labels: { 'kubernetes.io/hostname': `node-${i}` } },
      spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
      status: { addresses: [{ type: 'InternalIP', address: ip4(BASE_NODE + i) }], conditions: [{ type: 'Ready', status: i % 500 === 0 ? 'False' : 'True' }] },
    });
    objects.push({
      apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: { name: `b${i}` },
      spec: { cidr: `${ip4(BASE_POD + i * 256)}/26`, affinity: `host:node-${i}`, allocations: [0, null, 1, 2, null] },
    });
  }
  for (let i = 0; i < PODS; i++) {
    const n = i % NODES;
    const hostNetwork = i % 20 === 0;
    const ip = hostNetwork ? ip4(BASE_NODE + n) : ip4(BASE_POD + n * 256 + 2 + Math.floor(i / NODES));
    objects.push({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: `p-${i}`, namespace: `ns-${i % 200}`, labels: { app: `a${i % 1000}` }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `rs-${i % 3000}`, controller: true }] },
      spec: { nodeName: `node-${n}`, ...(hostNetwork ? { hostNetwork: true } : {}) },
      status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
    });
  }
  for (let i = 0; i < SERVICES; i++) {
    const clusterIP = i === 0 ? '10.96.0.1' : i === 1 ? '10.96.0.10' : ip4(BASE_SVC + 100 + i);
    const ns = i === 0 ? 'default' : i === 1 ? 'kube-system' : `ns-${i % 200}`;
    const name = i === 0 ? 'kubernetes' : i === 1 ? 'kube-dns' : `svc-${i}`;
    objects.push({
      apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns },
      spec: { type: i % 10 === 5 ? 'NodePort' : 'ClusterIP', clusterIP, clusterIPs: [clusterIP], ports: [{ port: 80, protocol: 'TCP', targetPort: 8080 }], selector: i === 1 ? { 'k8s-app': 'kube-dns' } : { app: `a${i % 1000}` } },
    });
  }
  objects.push({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubelet-config', namespace: 'kube-system' },
    data: { kubelet: 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n' },
  });
  objects.push({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'default-ipv4-ippool' }, spec: { cidr: '10.128.0.0/9' } });
  return objects;
}

test('5,000 nodes / 100,000 pods / 20,000 services build correctly', () => {
  const s = buildSnapshot({ source: { kind: 'live', context: 'big' }, objects: inventory(), configs: [], gaps: [] });
  assert.deepEqual(s.warnings, []);
  assert.equal(s.nodes.length, NODES);
  assert.equal(s.nodes.filter((n) => n.podCIDRs.length === 0).length, 50);
  assert.equal(s.nodes.filter((n) => n.ready === false).length, 10);
  assert.equal(s.pods.length, PODS);
  assert.equal(s.pods.filter((p) => p.hostNetwork).length, PODS / 20);
  assert.equal(s.pods[12345].podIPs[0], ip4(BASE_POD + (12345 % NODES) * 256 + 2 + Math.floor(12345 / NODES)));
  assert.deepEqual(s.pods[7].owner, { kind: 'ReplicaSet', name: 'rs-7' });
  assert.equal(s.services.length, SERVICES);
  assert.equal(s.services.filter((x) => x.type === 'NodePort').length, SERVICES / 10);
  assert.deepEqual(s.kubernetesServiceIPs, ['10.96.0.1']);
  assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'], foundBy: 'kubelet clusterDNS' });
  assert.equal(s.blocks.length, NODES);
  assert.equal(s.blocks.reduce((n, b) => n + b.allocated, 0), 3 * NODES);
  assert.equal(s.ranges.filter((r) => r.role === 'node-pod').length, NODES - 50);
  // 5,000 consecutive node addresses from 172.16.0.0 span 20 /24s (172.16.0.0 … 172.16.19.0).
  const nodeNets = s.ranges.filter((r) => r.role === 'node').map((r) => r.cidr);
  assert.equal(nodeNets.length, 20);
  assert.equal(nodeNets[0], '172.16.0.0/24');
  assert.equal(nodeNets[19], '172.16.19.0/24');
  assert.deepEqual(s.ranges.filter((r) => r.role === 'pool').map((r) => r.cidr), ['10.128.0.0/9']);
  assert.deepEqual([s.cni.plugin, s.cni.ipam], ['calico', 'calico-ipam']);
});

// ---- live addresses at scale: occupied means configured or live, and that must stay cheap ----

import { findConflicts } from '../../src/analyze/conflicts.ts';
import { liveIndex } from '../../src/analyze/live.ts';
import { suggest } from '../../src/analyze/suggest.ts';
import type { Snapshot } from '../../src/cluster/types.ts';
import { targetChecks } from '../../src/plan/preflight.ts';
import { podTargetRefusals } from '../../src/plan/targets.ts';

/** A snapshot (no parsing: the model directly) of `pods` pods on NODES nodes and SERVICES Services, no pod range configured. */
function liveSnapshot(pods: number): Snapshot {
  const nodes = Array.from({ length: NODES }, (_, i) => ({
    name: `node-${i}`, podCIDRs: [], internalIPs: [ip4(BASE_NODE + i)], externalIPs: [], labels: {}, unschedulable: false,
  }));
  return {
    source: { kind: 'file', files: ['scale'] }, platform: { kind: 'generic', title: 'generic', evidence: [], reserved: [] },
    cni: { plugin: 'unknown', ipam: 'unknown', operatorManaged: false, evidence: [] },
    ranges: [{ cidr: '10.96.0.0/12', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' }],
    serviceCIDRs: [], kubernetesServiceIPs: ['10.96.0.1'], clusterDNS: [], apiservers: [], controllerManagers: [], nodes,
    services: Array.from({ length: SERVICES }, (_, i) => ({
      namespace: `ns-${i % 200}`, name: `svc-${i}`, type: 'ClusterIP' as const, clusterIPs: [ip4(BASE_SVC + 1 + i)], headless: false,
      ports: [{ port: 80 }], loadBalancerIPs: [], loadBalancerSourceRanges: [], externalIPs: [], labels: {}, annotations: {},
    })),
    // Pods on 100.64.0.0/10 (EKS custom networking): every one of them is a live address in a catalog range.
    pods: Array.from({ length: pods }, (_, i) => ({
      namespace: `ns-${i % 200}`, name: `p-${i}`, nodeName: `node-${i % NODES}`, podIPs: [ip4(((100 << 24) | (64 << 16)) + 2 + i)],
      hostNetwork: false, phase: 'Running', labels: {},
    })),
    pools: [], blocks: [], blockAffinities: [], warnings: [],
  };
}

/**
 * The fastest of three runs of `work` on a fresh copy of the snapshot (the live index is cached per snapshot
 * object): with `warm`, the copy's index is built before the clock starts.
 */
function fastest(snap: Snapshot, work: (s: Snapshot) => void, warm = false): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const copy = { ...snap };
    if (warm) liveIndex(copy);
    const t = performance.now();
    work(copy);
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

test('live addresses: 150,000 pods and 20,000 Services are indexed once, and every check using them stays linear', () => {
  const all = (s: Snapshot) => {
    liveIndex(s);
    findConflicts(s);
    podTargetRefusals(s, { target: '100.64.0.0/16' });
    targetChecks(s, { target: '172.24.0.0/16' });
    suggest(s, { for: 'services' });
  };
  const big = liveSnapshot(150_000);
  const quarter = liveSnapshot(37_500);
  // Right at that size: the refusal names the first pod, counts the rest; the CGNAT conflict counts every pod.
  assert.deepEqual(podTargetRefusals(big, { target: '100.64.0.0/16' }).slice(0, 1),
    ['100.64.0.0/16 contains 100.64.0.2, the IP of pod ns-0/p-0 (and 65533 more live addresses)']);
  const cgnat = findConflicts(big).find((c) => c.kind === 'live-address' && c.b.cidr === '100.64.0.0/10');
  assert.equal(cgnat?.a.cidr, '150000 pod IPs');
  assert.equal(liveIndex(big).families.get(4)!.values.length, 150_000 + SERVICES + NODES);
  // Linear (n log n for the one sort): 4x the pods costs about 4x, far from the 16x of a scan per address.
  const tq = fastest(quarter, all);
  const tb = fastest(big, all);
  assert.ok(tb / tq < 10, `150,000 pods took ${tb.toFixed(0)} ms, 37,500 took ${tq.toFixed(0)} ms: ${(tb / tq).toFixed(1)}x for 4x the pods`);
  // A range query is a binary search: a thousand of them cost about the same at either size.
  const queries = (s: Snapshot) => { for (let i = 0; i < 1000; i++) podTargetRefusals(s, { target: `10.${i % 200}.0.0/16` }); };
  const qq = fastest(quarter, queries, true);
  const qb = fastest(big, queries, true);
  process.stderr.write(`live scale: all checks ${tq.toFixed(0)} → ${tb.toFixed(0)} ms, 1,000 target checks ${qq.toFixed(0)} → ${qb.toFixed(0)} ms\n`);
  assert.ok(qb / qq < 3, `1,000 target checks: ${qb.toFixed(0)} ms at 150,000 pods, ${qq.toFixed(0)} ms at 37,500`);
});
