/**
 * The bundled examples, read through the offline loader and built into snapshots: the exact facts each
 * one carries (analyzer tests rely on these; examples/README.md lists them too).
 */
import { install } from '../../src/install.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { Snapshot } from '../../src/cluster/types.ts';

install();

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');

async function example(name: string): Promise<Snapshot> {
  return buildSnapshot(await readInventoryFiles([join(EXAMPLES, name)]));
}

const ranges = (s: Snapshot, ...roles: string[]): string[] =>
  s.ranges.filter((r) => roles.length === 0 || roles.includes(r.role)).map((r) => `${r.role} ${r.cidr} <${r.source}>`);

function blocksPerNode(s: Snapshot): Map<string, number> {
  const m = new Map<string, number>();
  for (const b of s.blocks) if (b.node) m.set(b.node, (m.get(b.node) ?? 0) + 1);
  return m;
}

test('kops-tailscale (seed 000): kOps defaults colliding with Tailscale 100.64.0.0/10', async () => {
  const s = await example('kops-tailscale');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.kubernetesVersion, 'v1.33.4');
  assert.equal(s.serviceCIDRApi, 'v1');
  assert.equal(s.platform.kind, 'kops');
  assert.deepEqual([s.cni.plugin, s.cni.ipam, s.cni.operatorManaged], ['calico', 'calico-ipam', false]);
  assert.deepEqual(ranges(s, 'service', 'pod', 'pool', 'masquerade', 'node'), [
    'service 100.64.0.0/13 <kube-apiserver --service-cluster-ip-range>',
    'service 100.64.0.0/13 <kOps serviceClusterIPRange>',
    'service 100.64.0.0/13 <ServiceCIDR/kubernetes>',
    'pod 100.96.0.0/11 <kube-controller-manager --cluster-cidr>',
    'pod 100.96.0.0/11 <kOps podCIDR>',
    'pod 100.96.0.0/11 <kube-proxy --cluster-cidr>',
    'pool 100.96.0.0/11 <IPPool/default-ipv4-ippool>',
    'masquerade 100.64.0.0/10 <kOps nonMasqueradeCIDR>',
    'node 172.20.0.0/16 <kOps networkCIDR>',
  ]);
  assert.deepEqual(ranges(s, 'node-pod'), [0, 1, 2, 3, 4, 5].map((i) => `node-pod 100.96.${i}.0/24 <Node/i-0a4c1e7f2b9d3000${i + 1} spec.podCIDR>`));
  assert.deepEqual(s.serviceCIDRs, [{ name: 'kubernetes', cidrs: ['100.64.0.0/13'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }]);
  assert.deepEqual(s.kubernetesServiceIPs, ['100.64.0.1']);
  assert.deepEqual(s.clusterDNS, ['100.64.0.10']);
  assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['100.64.0.10'], foundBy: 'kubelet clusterDNS' });
  assert.deepEqual(s.kops, {
    layout: 'networking', kubernetesVersion: 'v1.33.4', nonMasqueradeCIDR: '100.64.0.0/10', podCIDR: '100.96.0.0/11', serviceClusterIPRange: '100.64.0.0/13',
    networkCIDR: '172.20.0.0/16', kubeDNSServerIP: '100.64.0.10', networkingProvider: 'calico',
  });
  assert.deepEqual(s.apiservers.map((a) => [a.pod, a.serviceClusterIPRange]), [['kube-apiserver-i-0a4c1e7f2b9d30001', ['100.64.0.0/13']]]);
  assert.deepEqual(s.controllerManagers, [{ pod: 'kube-controller-manager-i-0a4c1e7f2b9d30001', clusterCIDR: ['100.96.0.0/11'], allocateNodeCIDRs: true }]);
  assert.deepEqual(s.kubeProxy, { clusterCIDR: '100.96.0.0/11' });
  assert.equal(s.kubeadm, undefined);

  assert.equal(s.nodes.length, 6);
  assert.equal(s.nodes.filter((n) => n.podCIDRs.length > 0).length, 6);
  assert.ok(s.nodes.every((n) => n.labels['kops.k8s.io/instancegroup'] && n.internalIPs[0].startsWith('172.20.')));
  assert.equal(s.pods.length, 32);
  assert.equal(s.pods.filter((p) => p.hostNetwork).length, 16);
  const podNet = s.pods.filter((p) => !p.hostNetwork);
  assert.equal(podNet.length, 16);
  assert.ok(podNet.every((p) => p.podIPs[0].startsWith('100.')));
  assert.deepEqual(s.pods.find((p) => p.name === 'debug')?.owner, undefined);
  assert.equal(s.pods.find((p) => p.namespace === 'batch')?.owner?.kind, 'Job');

  assert.equal(s.services.length, 12);
  const types = s.services.reduce<Record<string, number>>((m, x) => ({ ...m, [x.type]: (m[x.type] ?? 0) + 1 }), {});
  assert.deepEqual(types, { ClusterIP: 9, LoadBalancer: 1, NodePort: 1, ExternalName: 1 });
  assert.deepEqual(s.services.filter((x) => x.headless).map((x) => `${x.namespace}/${x.name}`), ['default/web-headless', 'monitoring/prometheus-operated']);
  const lb = s.services.find((x) => x.type === 'LoadBalancer');
  assert.deepEqual([lb?.name, lb?.clusterIPs, lb?.loadBalancerIPs], ['ingress-nginx-controller', ['100.66.133.7'], ['203.0.113.25']]);

  assert.deepEqual(s.pools, [{
    name: 'default-ipv4-ippool', cidr: '100.96.0.0/11', blockSize: 26, disabled: false, nodeSelector: 'all()', ipipMode: 'CrossSubnet',
    vxlanMode: 'Never', natOutgoing: true, allowedUses: ['Workload', 'Tunnel'],
  }]);
  assert.deepEqual(s.blocks.map((b) => `${b.node} ${b.cidr} ${b.allocated}`), [
    'i-0a4c1e7f2b9d30001 100.105.14.64/26 1',
    'i-0a4c1e7f2b9d30002 100.112.201.0/26 4',
    'i-0a4c1e7f2b9d30003 100.99.37.128/26 5',
    'i-0a4c1e7f2b9d30004 100.121.88.192/26 5',
    'i-0a4c1e7f2b9d30005 100.103.250.0/26 3',
    'i-0a4c1e7f2b9d30006 100.117.6.64/26 4',
  ]);
  assert.equal(s.blockAffinities.length, 6);
  assert.ok(s.blockAffinities.every((a) => a.state === 'confirmed'));
  // Every pod-network pod holds an allocation in its node's block, and the tunnel address one more.
  assert.equal(s.blocks.reduce((n, b) => n + b.allocated, 0), podNet.length + 6);
});

test('kops-legacy-pool (seed 002): Calico pool = nonMasqueradeCIDR, containing the service range', async () => {
  const s = await example('kops-legacy-pool');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.kubernetesVersion, 'v1.28.9');
  assert.equal(s.serviceCIDRApi, undefined);
  assert.deepEqual(s.serviceCIDRs, []);
  assert.equal(s.platform.kind, 'kops');
  assert.deepEqual([s.cni.plugin, s.cni.ipam], ['calico', 'calico-ipam']);
  assert.equal(s.kops?.layout, 'legacy');
  assert.deepEqual(s.kops, {
    layout: 'legacy', kubernetesVersion: 'v1.28.9', nonMasqueradeCIDR: '100.64.0.0/10', podCIDR: '100.96.0.0/11', serviceClusterIPRange: '100.64.0.0/13',
    networkCIDR: '172.20.0.0/16', kubeDNSServerIP: '100.64.0.10', kubeletClusterDNS: '100.64.0.10', allocateNodeCIDRs: true, networkingProvider: 'calico',
  });
  assert.deepEqual(ranges(s, 'service', 'pod', 'pool', 'masquerade', 'node'), [
    'service 100.64.0.0/13 <kube-apiserver --service-cluster-ip-range>',
    'service 100.64.0.0/13 <kOps serviceClusterIPRange>',
    'pod 100.96.0.0/11 <kube-controller-manager --cluster-cidr>',
    'pod 100.96.0.0/11 <kOps podCIDR>',
    'pod 100.96.0.0/11 <kube-proxy --cluster-cidr>',
    'pool 100.64.0.0/10 <IPPool/default-ipv4-ippool>',
    'masquerade 100.64.0.0/10 <kOps nonMasqueradeCIDR>',
    'node 172.20.0.0/16 <kOps networkCIDR>',
  ]);
  assert.deepEqual(s.pools.map((p) => [p.name, p.cidr, p.blockSize, p.disabled]), [['default-ipv4-ippool', '100.64.0.0/10', 26, false]]);
  assert.deepEqual(s.blocks.map((b) => `${b.cidr} ${b.allocated}`), ['100.66.3.0/26 3', '100.101.7.64/26 3', '100.88.240.128/26 3']);
  assert.deepEqual(s.dnsService?.clusterIPs, ['100.64.0.10']);
  assert.equal(s.nodes.length, 3);
  assert.equal(s.pods.length, 14);
  // The collision the seed warns about: a pod and a Service share 100.66.3.5.
  const pod = s.pods.find((p) => p.podIPs.includes('100.66.3.5'));
  const svc = s.services.find((x) => x.clusterIPs.includes('100.66.3.5'));
  assert.deepEqual([pod?.namespace, svc?.name], ['default', 'queue']);
  assert.ok(pod?.name.startsWith('worker-'));
});

test('kubeadm-exhausted (seed 004): kubespray/kubeadm + Calico, 64 node CIDRs for 79 nodes', async () => {
  const s = await example('kubeadm-exhausted');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.kubernetesVersion, 'v1.20.7');
  assert.equal(s.serviceCIDRApi, undefined);
  assert.equal(s.platform.kind, 'kubespray');
  assert.ok(s.platform.evidence.includes('ConfigMap kube-system/kubeadm-config'));
  assert.deepEqual([s.cni.plugin, s.cni.ipam, s.cni.operatorManaged], ['calico', 'calico-ipam', false]);
  assert.deepEqual(ranges(s, 'service', 'pod', 'pool', 'masquerade', 'node'), [
    'service 10.233.0.0/18 <kube-apiserver --service-cluster-ip-range>',
    'service 10.233.0.0/18 <kube-controller-manager --service-cluster-ip-range>',
    'service 10.233.0.0/18 <kubeadm-config serviceSubnet>',
    'pod 10.233.64.0/18 <kube-controller-manager --cluster-cidr>',
    'pod 10.233.64.0/18 <kubeadm-config podSubnet>',
    'pod 10.233.64.0/18 <kube-proxy clusterCIDR>',
    'pool 10.233.64.0/18 <IPPool/default-pool>',
    'node 192.168.10.0/24 <node InternalIPs>',
  ]);
  const nodePod = ranges(s, 'node-pod');
  assert.equal(nodePod.length, 64);
  assert.equal(nodePod[0], 'node-pod 10.233.64.0/24 <Node/k8s-master-01 spec.podCIDR>');
  assert.equal(nodePod[63], 'node-pod 10.233.127.0/24 <Node/k8s-node-gpu-43 spec.podCIDR>');

  assert.equal(s.nodes.length, 79);
  assert.equal(s.nodes.filter((n) => n.labels['node-role.kubernetes.io/control-plane'] !== undefined).length, 3);
  assert.equal(s.nodes.filter((n) => n.podCIDRs.length > 0).length, 64);
  assert.deepEqual(s.nodes.filter((n) => n.podCIDRs.length === 0).map((n) => n.name), Array.from({ length: 15 }, (_, i) => `k8s-node-gpu-${44 + i}`));

  assert.deepEqual(s.kubeadm?.podSubnet, ['10.233.64.0/18']);
  assert.deepEqual(s.kubeadm?.serviceSubnet, ['10.233.0.0/18']);
  assert.equal(s.kubeadm?.controllerManagerExtraArgs?.['node-cidr-mask-size'], '24');
  assert.deepEqual(s.kubeadm?.kubeletClusterDNS, ['10.233.0.3']);
  assert.equal(s.controllerManagers.length, 3);
  for (const c of s.controllerManagers) {
    assert.deepEqual([c.clusterCIDR, c.nodeCIDRMaskSize, c.allocateNodeCIDRs], [['10.233.64.0/18'], 24, true]);
  }
  assert.equal(s.apiservers.length, 3);
  assert.deepEqual(s.kubeProxy, { clusterCIDR: '10.233.64.0/18', mode: 'ipvs' });
  assert.deepEqual(s.clusterDNS, ['10.233.0.3']);
  assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'coredns', clusterIPs: ['10.233.0.3'], foundBy: 'kubelet clusterDNS' });
  assert.deepEqual(s.kubernetesServiceIPs, ['10.233.0.1']);

  assert.deepEqual(s.pools, [{ name: 'default-pool', cidr: '10.233.64.0/18', blockSize: 26, disabled: false, nodeSelector: 'all()', ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true }]);
  assert.equal(s.blocks.length, 79);
  assert.equal(s.blockAffinities.length, 79);
  const per = blocksPerNode(s);
  assert.equal(per.size, 79);
  assert.ok([...per.values()].every((n) => n === 1));
  assert.equal(s.blocks[0].cidr, '10.233.64.0/26');
  assert.equal(s.blocks[78].cidr, '10.233.83.128/26');

  assert.equal(s.pods.length, 324);
  assert.equal(s.pods.filter((p) => p.hostNetwork).length, 167);
  assert.equal(s.services.length, 10);
  assert.deepEqual(s.services.filter((x) => x.headless).map((x) => x.name), ['inference-headless']);
});
