/**
 * A synthetic large inventory: 5,000 nodes, 100,000 pods, 20,000 services, 5,000 Calico blocks. Checks the
 * result is right at that size (timing belongs in the benchmarks).
 */
import { install } from '../../src/install.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSnapshot } from '../../src/cluster/build.ts';
import type { KubeObject } from '../../src/cluster/types.ts';

install();

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
import { podTargetRefusals } from '../../src/plan/targets.ts';
import { allChecks, LIVE_NODES, LIVE_SERVICES, liveSnapshot } from '../../bench/live-index.ts';

test('live addresses: 150,000 pods and 20,000 Services, each check right at that size (its speed: npm run bench -- live-index)', () => {
  const big = liveSnapshot(150_000);
  allChecks(big);
  // Right at that size: the refusal names the first pod, counts the rest; the CGNAT conflict counts every pod.
  assert.deepEqual(podTargetRefusals(big, { target: '100.64.0.0/16' }).slice(0, 1),
    ['100.64.0.0/16 contains 100.64.0.2, the IP of pod ns-0/p-0 (and 65533 more live addresses)']);
  const cgnat = findConflicts(big).find((c) => c.kind === 'live-address' && c.b.cidr === '100.64.0.0/10');
  assert.equal(cgnat?.a.cidr, '150000 pod IPs');
  assert.equal(liveIndex(big).families.get(4)!.values.length, 150_000 + LIVE_SERVICES + LIVE_NODES);
  assert.deepEqual(podTargetRefusals(big, { target: '10.7.0.0/16' }), [], 'a range with no live address is not refused');
});
