import { install } from '../../src/install.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSnapshot, MAX_WARNINGS } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, RawInventory } from '../../src/cluster/types.ts';
import { parseKopsCluster } from '../../src/cluster/kops-spec.ts';
import { normalizeExtraArgs, parseClusterConfiguration } from '../../src/cluster/kubeadm-config.ts';
import { cniConfigIpam } from '../../src/cni/detect.ts';
import { MAX_COMPARE, setObjectOrigin } from '../../src/cluster/validate.ts';
import { InputError } from '../../src/errors.ts';

install();

const FIX = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'inventory');

function inv(objects: KubeObject[], extra: Partial<RawInventory> = {}): RawInventory {
  return { source: { kind: 'live' }, objects, configs: [], gaps: [], ...extra };
}

const ranges = (s: ReturnType<typeof buildSnapshot>, role?: string): string[] =>
  s.ranges.filter((r) => role === undefined || r.role === role).map((r) => `${r.role} ${r.cidr} <${r.source}>`);

function svc(ns: string, name: string, spec: Record<string, unknown>, status?: Record<string, unknown>): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec, ...(status ? { status } : {}) };
}

function node(name: string, podCIDRs: string[] | undefined, ips: string[], labels: Record<string, string> = {}, annotations: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Node', metadata: { name, labels, annotations },
    spec: podCIDRs ? { podCIDR: podCIDRs[0], podCIDRs } : {},
    status: { addresses: ips.map((address) => ({ type: 'InternalIP', address })), conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function staticPod(name: string, labels: Record<string, string>, command: string[], image: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'kube-system', labels }, spec: { hostNetwork: true, containers: [{ name: labels.component ?? labels['k8s-app'], image, command }] }, status: { podIP: '192.168.1.10' } };
}

function configMap(ns: string, name: string, data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data };
}

// ---------------------------------------------------------------- kOps

test('kOps legacy layout (v1alpha2 top-level fields)', () => {
  const p = parseKopsCluster({
    apiVersion: 'kops.k8s.io/v1alpha2', kind: 'Cluster', metadata: { name: 'c' },
    spec: {
      kubernetesVersion: '1.28.9', nonMasqueradeCIDR: '100.64.0.0/10', serviceClusterIPRange: '100.64.0.0/13', networkCIDR: '172.20.0.0/16',
      kubeControllerManager: { clusterCIDR: '100.96.0.0/11', allocateNodeCIDRs: true }, kubeDNS: { serverIP: '100.64.0.10' }, kubelet: { clusterDNS: '100.64.0.10' },
      networking: { calico: { crossSubnet: true } },
    },
  });
  assert.deepEqual(p.networking, {
    layout: 'legacy', kubernetesVersion: 'v1.28.9', nonMasqueradeCIDR: '100.64.0.0/10', podCIDR: '100.96.0.0/11', serviceClusterIPRange: '100.64.0.0/13',
    networkCIDR: '172.20.0.0/16', kubeDNSServerIP: '100.64.0.10', kubeletClusterDNS: '100.64.0.10', allocateNodeCIDRs: true, networkingProvider: 'calico',
  });
  assert.deepEqual(p.ranges.map((r) => `${r.role} ${r.cidr} ${r.source}`), [
    'masquerade 100.64.0.0/10 kOps nonMasqueradeCIDR', 'service 100.64.0.0/13 kOps serviceClusterIPRange', 'pod 100.96.0.0/11 kOps podCIDR', 'node 172.20.0.0/16 kOps networkCIDR',
  ]);
  assert.deepEqual(p.clusterDNS, ['100.64.0.10']);
});

test('kOps networking layout (v1alpha3 spec.networking.*), top-level podCIDR in legacy', () => {
  const p = parseKopsCluster({
    apiVersion: 'kops.k8s.io/v1alpha3', kind: 'Cluster', metadata: { name: 'c' },
    spec: {
      networking: { cilium: {}, nonMasqueradeCIDR: '10.0.0.0/8', podCIDR: '10.32.0.0/11', serviceClusterIPRange: '10.0.0.0/16', networkCIDR: '192.168.0.0/16', additionalNetworkCIDRs: ['192.169.0.0/16'] },
      kubeDNS: { nodeLocalDNS: { enabled: true } },
    },
  });
  assert.equal(p.networking.layout, 'networking');
  assert.equal(p.networking.networkingProvider, 'cilium');
  assert.equal(p.networking.podCIDR, '10.32.0.0/11');
  assert.deepEqual(p.ranges.filter((r) => r.role === 'node').map((r) => r.cidr), ['192.168.0.0/16', '192.169.0.0/16']);
  assert.deepEqual(p.clusterDNS, ['169.254.20.10'], 'NodeLocal DNSCache address');
  const legacy = parseKopsCluster({ apiVersion: 'kops.k8s.io/v1alpha2', kind: 'Cluster', spec: { podCIDR: '100.96.0.0/11', networking: { kubenet: {} } } });
  assert.equal(legacy.networking.layout, 'legacy');
  assert.equal(legacy.networking.podCIDR, '100.96.0.0/11');
  assert.equal(legacy.networking.networkingProvider, 'kubenet');
});

test('kOps spec: node /24 heuristic only for InternalIPs outside networkCIDR', () => {
  const s = buildSnapshot(inv(
    [node('a', undefined, ['172.20.1.5']), node('b', undefined, ['10.1.2.3'])],
    { configs: [{ apiVersion: 'kops.k8s.io/v1alpha2', kind: 'Cluster', metadata: { name: 'c' }, spec: { networkCIDR: '172.20.0.0/16' } }] },
  ));
  assert.deepEqual(ranges(s, 'node'), ['node 172.20.0.0/16 <kOps networkCIDR>', 'node 10.1.2.0/24 <node InternalIPs>']);
  assert.equal(s.platform.kind, 'kops');
});

// ---------------------------------------------------------------- kubeadm

test('kubeadm extraArgs: v1beta3 map and v1beta4 list forms', () => {
  assert.deepEqual(normalizeExtraArgs({ 'cluster-cidr': '10.0.0.0/16', 'node-cidr-mask-size': 24 }), { 'cluster-cidr': '10.0.0.0/16', 'node-cidr-mask-size': '24' });
  assert.deepEqual(normalizeExtraArgs([{ name: 'cluster-cidr', value: '10.0.0.0/16' }, { name: 'v', value: '2' }, { name: 'v', value: '4' }]), { 'cluster-cidr': '10.0.0.0/16', v: '4' });
  assert.equal(normalizeExtraArgs(undefined), undefined);
  const k = parseClusterConfiguration({
    apiVersion: 'kubeadm.k8s.io/v1beta3', kind: 'ClusterConfiguration', kubernetesVersion: '1.29.2',
    networking: { podSubnet: '10.244.0.0/16', serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' },
    controllerManager: { extraArgs: { 'node-cidr-mask-size': '25' } },
  });
  assert.deepEqual(k, {
    podSubnet: ['10.244.0.0/16'], serviceSubnet: ['10.96.0.0/12'], dnsDomain: 'cluster.local', kubernetesVersion: 'v1.29.2',
    controllerManagerExtraArgs: { 'node-cidr-mask-size': '25' },
  });
});

test('kubeadm-config ConfigMap (v1beta3) + kubelet-config + kube-proxy; plain kubeadm distribution', () => {
  const cc = 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.29.2\nnetworking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/12\ncontrollerManager:\n  extraArgs:\n    cluster-cidr: 10.244.0.0/16\n';
  const s = buildSnapshot(inv([
    configMap('kube-system', 'kubeadm-config', { ClusterConfiguration: cc }),
    configMap('kube-system', 'kubelet-config-1.28', { kubelet: 'kind: KubeletConfiguration\nclusterDNS: [10.96.0.99]\n' }),
    configMap('kube-system', 'kubelet-config', { kubelet: 'kind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n' }),
    configMap('kube-system', 'kube-proxy', { 'config.conf': 'kind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: iptables\n' }),
    svc('kube-system', 'kube-dns', { clusterIP: '10.96.0.10', selector: { 'k8s-app': 'kube-dns' } }),
    svc('kube-system', 'other-dns', { clusterIP: '10.96.0.11', selector: { 'k8s-app': 'kube-dns' } }),
  ]));
  assert.equal(s.platform.kind, 'kubeadm');
  assert.deepEqual(s.clusterDNS, ['10.96.0.10']);
  assert.deepEqual(s.kubeadm?.kubeletClusterDNS, ['10.96.0.10']);
  assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'], foundBy: 'kubelet clusterDNS' });
  assert.deepEqual(s.kubeProxy, { clusterCIDR: '10.244.0.0/16', mode: 'iptables' });
  assert.equal(s.kubernetesVersion, 'v1.29.2');
  assert.deepEqual(ranges(s), [
    'service 10.96.0.0/12 <kubeadm-config serviceSubnet>',
    'pod 10.244.0.0/16 <kubeadm-config podSubnet>',
    'pod 10.244.0.0/16 <kubeadm-config controllerManager.extraArgs cluster-cidr>',
    'pod 10.244.0.0/16 <kube-proxy clusterCIDR>',
  ]);
});

test('kubeadm v1beta4 file: dual-stack subnets, list extraArgs, KubeletConfiguration, KubeProxyConfiguration', async () => {
  const s = buildSnapshot(await readInventoryFiles([join(FIX, 'kubeadm-v1beta4.yaml')]));
  assert.equal(s.platform.kind, 'kubeadm');
  assert.deepEqual(s.kubeadm?.podSubnet, ['10.244.0.0/16', 'fd00:10:244::/56']);
  assert.deepEqual(s.kubeadm?.serviceSubnet, ['10.96.0.0/12', 'fd00:10:96::/112']);
  assert.deepEqual(s.kubeadm?.controllerManagerExtraArgs, { 'cluster-cidr': '10.244.0.0/16,fd00:10:244::/56', 'node-cidr-mask-size-ipv4': '24', 'node-cidr-mask-size-ipv6': '64' });
  assert.equal(s.kubeadm?.apiServerExtraArgs?.['feature-gates'], 'MultiCIDRServiceAllocator=true');
  assert.deepEqual(s.clusterDNS, ['10.96.0.10', 'fd00:10:96::a']);
  assert.deepEqual(s.kubeProxy, { clusterCIDR: '10.244.0.0/16,fd00:10:244::/56', mode: 'nftables' });
  assert.deepEqual(ranges(s), [
    'service 10.96.0.0/12 <ClusterConfiguration serviceSubnet>',
    'service fd00:10:96::/112 <ClusterConfiguration serviceSubnet>',
    'service 10.96.0.0/12 <ClusterConfiguration apiServer.extraArgs service-cluster-ip-range>',
    'service fd00:10:96::/112 <ClusterConfiguration apiServer.extraArgs service-cluster-ip-range>',
    'pod 10.244.0.0/16 <ClusterConfiguration podSubnet>',
    'pod fd00:10:244::/56 <ClusterConfiguration podSubnet>',
    'pod 10.244.0.0/16 <ClusterConfiguration controllerManager.extraArgs cluster-cidr>',
    'pod fd00:10:244::/56 <ClusterConfiguration controllerManager.extraArgs cluster-cidr>',
    'pod 10.244.0.0/16 <KubeProxyConfiguration clusterCIDR>',
    'pod fd00:10:244::/56 <KubeProxyConfiguration clusterCIDR>',
  ]);
});

// ---------------------------------------------------------------- control plane flags

test('dual-stack apiserver and controller-manager flags; HA pods de-duplicated in ranges', () => {
  const api = (n: string, range: string): KubeObject => staticPod(`kube-apiserver-${n}`, { component: 'kube-apiserver', tier: 'control-plane' },
    ['kube-apiserver', `--service-cluster-ip-range=${range}`, '--feature-gates=MultiCIDRServiceAllocator=true', '--runtime-config=networking.k8s.io/v1beta1=true', '--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs', '--advertise-address=192.168.1.10'],
    'registry.k8s.io/kube-apiserver:v1.31.4');
  const s = buildSnapshot(inv([
    api('cp1', '10.96.0.0/12,fd00:10:96::/112'),
    api('cp2', '10.96.0.0/12,fd00:10:96::/112'),
    api('cp3', '10.100.0.0/16'), // mid-rollout: a different flag
    staticPod('kube-controller-manager-cp1', { component: 'kube-controller-manager', tier: 'control-plane' },
      ['kube-controller-manager', '--cluster-cidr=10.244.0.0/16,fd00:10:244::/56', '--node-cidr-mask-size-ipv4=24', '--node-cidr-mask-size-ipv6=64', '--allocate-node-cidrs=false', '--service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/112'],
      'registry.k8s.io/kube-controller-manager:v1.31.4'),
  ]));
  assert.deepEqual(s.apiservers[0], {
    pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/12', 'fd00:10:96::/112'], featureGates: 'MultiCIDRServiceAllocator=true',
    runtimeConfig: 'networking.k8s.io/v1beta1=true', admissionPlugins: ['NodeRestriction', 'DenyServiceExternalIPs'], advertiseAddress: '192.168.1.10',
  });
  assert.equal(s.apiservers.length, 3);
  assert.deepEqual(s.controllerManagers, [{
    pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16', 'fd00:10:244::/56'], nodeCIDRMaskSizeIPv4: 24, nodeCIDRMaskSizeIPv6: 64,
    allocateNodeCIDRs: false, serviceClusterIPRange: ['10.96.0.0/12', 'fd00:10:96::/112'],
  }]);
  assert.deepEqual(ranges(s, 'service'), [
    'service 10.96.0.0/12 <kube-apiserver --service-cluster-ip-range>',
    'service fd00:10:96::/112 <kube-apiserver --service-cluster-ip-range>',
    'service 10.100.0.0/16 <kube-apiserver --service-cluster-ip-range>',
    'service 10.96.0.0/12 <kube-controller-manager --service-cluster-ip-range>',
    'service fd00:10:96::/112 <kube-controller-manager --service-cluster-ip-range>',
  ]);
  assert.equal(s.kubernetesVersion, 'v1.31.4');
});

// ---------------------------------------------------------------- services, DNS, ServiceCIDR

test('services: types, headless, ExternalName, LB ingress, dual-stack clusterIPs; kubernetes IPs', () => {
  const s = buildSnapshot(inv([
    svc('default', 'kubernetes', { clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1', 'fd00:10:96::1'], ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] }),
    svc('default', 'h', { clusterIP: 'None', clusterIPs: ['None'], selector: { app: 'h' } }),
    svc('default', 'x', { type: 'ExternalName', externalName: 'db.example.com' }),
    svc('default', 'lb', { type: 'LoadBalancer', clusterIP: '10.96.5.5', loadBalancerSourceRanges: ['0.0.0.0/0'], externalIPs: ['192.0.2.7'], ports: [{ port: 80, nodePort: 30080, targetPort: 'http' }] },
      { loadBalancer: { ingress: [{ ip: '203.0.113.9' }, { hostname: 'lb.example.com' }] } }),
  ]));
  assert.deepEqual(s.kubernetesServiceIPs, ['10.96.0.1', 'fd00:10:96::1']);
  const by = new Map(s.services.map((x) => [x.name, x]));
  assert.equal(by.get('h')?.headless, true);
  assert.deepEqual(by.get('h')?.clusterIPs, []);
  assert.equal(by.get('x')?.type, 'ExternalName');
  assert.equal(by.get('x')?.externalName, 'db.example.com');
  assert.deepEqual(by.get('x')?.clusterIPs, []);
  assert.deepEqual(by.get('lb'), {
    namespace: 'default', name: 'lb', type: 'LoadBalancer', clusterIPs: ['10.96.5.5'], headless: false, ports: [{ port: 80, targetPort: 'http', nodePort: 30080 }],
    loadBalancerIPs: ['203.0.113.9'], loadBalancerHostnames: ['lb.example.com'], loadBalancerSourceRanges: ['0.0.0.0/0'], externalIPs: ['192.0.2.7'], labels: {}, annotations: {},
  });
});

test('DNS service by selector when no clusterDNS is known; undefined when none', () => {
  const s = buildSnapshot(inv([
    svc('kube-system', 'coredns', { clusterIP: '10.43.0.10', selector: { 'k8s-app': 'kube-dns' } }),
    svc('default', 'fake', { clusterIP: '10.43.0.11', selector: { 'k8s-app': 'kube-dns' } }),
  ]));
  assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'coredns', clusterIPs: ['10.43.0.10'], foundBy: 'selector k8s-app=kube-dns' });
  assert.deepEqual(s.clusterDNS, []);
  assert.equal(buildSnapshot(inv([])).dnsService, undefined);
});

test('ServiceCIDRs: versions de-duplicated (newest wins), deleting and ready', () => {
  const sc = (v: string, name: string, cidrs: string[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: `networking.k8s.io/${v}`, kind: 'ServiceCIDR', metadata: { name, ...extra }, spec: { cidrs },
    status: { conditions: [{ type: 'Ready', status: extra.deletionTimestamp ? 'False' : 'True' }] },
  });
  const s = buildSnapshot(inv([
    sc('v1beta1', 'kubernetes', ['10.96.0.0/12']),
    sc('v1', 'kubernetes', ['10.96.0.0/12']),
    sc('v1', 'old', ['100.64.0.0/13'], { deletionTimestamp: '2025-01-01T00:00:00Z' }),
  ], { serviceCIDRApiVersions: ['networking.k8s.io/v1beta1', 'networking.k8s.io/v1'] }));
  assert.deepEqual(s.serviceCIDRs, [
    { name: 'kubernetes', cidrs: ['10.96.0.0/12'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true },
    { name: 'old', cidrs: ['100.64.0.0/13'], apiVersion: 'networking.k8s.io/v1', deleting: true, ready: false },
  ]);
  assert.equal(s.serviceCIDRApi, 'v1');
  assert.deepEqual(ranges(s, 'service'), ['service 10.96.0.0/12 <ServiceCIDR/kubernetes>', 'service 100.64.0.0/13 <ServiceCIDR/old>']);
  assert.equal(buildSnapshot(inv([], { serviceCIDRApiVersions: [] })).serviceCIDRApi, null);
  assert.equal(buildSnapshot(inv([], { serviceCIDRApiVersions: ['networking.k8s.io/v1alpha1', 'networking.k8s.io/v1beta1'] })).serviceCIDRApi, 'v1beta1');
  assert.equal('serviceCIDRApi' in buildSnapshot(inv([])), false);
});

// ---------------------------------------------------------------- nodes, pods

test('nodes: podCIDR(s), addresses, readiness; node-pod ranges; IPv4 /24 and IPv6 /64 node-network guesses', () => {
  const n = node('a', ['10.244.1.0/24', 'fd00:10:244:1::/64'], ['192.168.5.20', 'fd00:1:2:3::20']);
  n.status.addresses.push({ type: 'ExternalIP', address: '198.51.100.20' }, { type: 'Hostname', address: 'a' });
  n.spec.unschedulable = true;
  const s = buildSnapshot(inv([n, node('b', undefined, ['192.168.5.21']), node('c', ['10.244.2.0/24'], ['192.168.6.2'])]));
  assert.deepEqual(s.nodes[0], {
    name: 'a', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'], internalIPs: ['192.168.5.20', 'fd00:1:2:3::20'], externalIPs: ['198.51.100.20'],
    labels: {}, ready: true, unschedulable: true,
  });
  assert.deepEqual(s.nodes[1].podCIDRs, []);
  assert.deepEqual(ranges(s, 'node-pod'), [
    'node-pod 10.244.1.0/24 <Node/a spec.podCIDR>', 'node-pod fd00:10:244:1::/64 <Node/a spec.podCIDR>', 'node-pod 10.244.2.0/24 <Node/c spec.podCIDR>',
  ]);
  assert.deepEqual(ranges(s, 'node'), [
    'node 192.168.5.0/24 <node InternalIPs>', 'node fd00:1:2:3::/64 <node InternalIPs>', 'node 192.168.6.0/24 <node InternalIPs>',
  ]);
});

test('pods: podIPs (dual-stack), hostNetwork, controller owner', async () => {
  const s = buildSnapshot(await readInventoryFiles([join(FIX, 'pods.json')]));
  assert.deepEqual(s.pods, [
    { namespace: 'default', name: 'web-1', podIPs: ['10.244.0.5', 'fd00:10:244::5'], hostNetwork: false, labels: {}, nodeName: 'cp-1', phase: 'Running', owner: { kind: 'ReplicaSet', name: 'web-5d8' } },
    { namespace: 'kube-system', name: 'kube-proxy-abcde', podIPs: ['192.168.1.10'], hostNetwork: true, labels: {}, nodeName: 'cp-1', phase: 'Running' },
  ]);
});

// ---------------------------------------------------------------- Calico, CNI

test('Calico pools: defaults, v3 and CRD views de-duplicated, legacy fields', async () => {
  const crd = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name }, spec });
  const typed = await readInventoryFiles([join(FIX, 'typed-list.yaml')]);
  const s = buildSnapshot(inv([
    crd('default-ipv4-ippool', { cidr: '10.244.0.0/16', blockSize: 26 }),
    ...typed.objects,
    crd('v6', { cidr: 'fd00:10:244::/56' }),
    crd('old', { cidr: '10.10.0.0/16', 'nat-outgoing': true, ipip: { enabled: true } }),
  ]));
  assert.deepEqual(s.pools, [
    { name: 'default-ipv4-ippool', cidr: '10.244.0.0/16', blockSize: 26, disabled: false, ipipMode: 'Always' },
    { name: 'new-pool', cidr: '10.20.0.0/16', blockSize: 24, disabled: true },
    { name: 'v6', cidr: 'fd00:10:244::/56', blockSize: 122, disabled: false },
    { name: 'old', cidr: '10.10.0.0/16', blockSize: 26, disabled: false, ipipMode: 'Always', natOutgoing: true },
  ]);
  assert.deepEqual(ranges(s, 'pool'), [
    'pool 10.244.0.0/16 <IPPool/default-ipv4-ippool>', 'pool 10.20.0.0/16 <IPPool/new-pool>', 'pool fd00:10:244::/56 <IPPool/v6>', 'pool 10.10.0.0/16 <IPPool/old>',
  ]);
  assert.equal(s.cni.plugin, 'calico');
  assert.equal(s.cni.ipam, 'unknown', 'pools alone do not prove calico-ipam');
});

test('Calico blocks and affinities', () => {
  const s = buildSnapshot(inv([
    { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: { name: '10-244-0-0-26' }, spec: { cidr: '10.244.0.0/26', affinity: 'host:n1', allocations: [0, null, 1, null], unallocated: [1, 3] } },
    { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: { name: '10-244-0-64-26' }, spec: { cidr: '10.244.0.64/26', affinity: null, allocations: [] } },
    { apiVersion: 'crd.projectcalico.org/v1', kind: 'BlockAffinity', metadata: { name: 'n1-10-244-0-0-26' }, spec: { node: 'n1', cidr: '10.244.0.0/26', state: 'confirmed', deleted: 'false' } },
  ]));
  assert.deepEqual(s.blocks, [{ cidr: '10.244.0.0/26', allocated: 2, node: 'n1' }, { cidr: '10.244.0.64/26', allocated: 0 }]);
  assert.deepEqual(s.blockAffinities, [{ name: 'n1-10-244-0-0-26', node: 'n1', cidr: '10.244.0.0/26', state: 'confirmed' }]);
  assert.equal(s.cni.ipam, 'calico-ipam');
});

test('calico-config CNI template: calico-ipam and host-local usePodCidr', () => {
  assert.deepEqual(cniConfigIpam('{"plugins":[{"type":"calico","mtu": __CNI_MTU__,"ipam": {"type": "calico-ipam"}}]}'), { type: 'calico-ipam', usePodCidr: false });
  assert.deepEqual(cniConfigIpam('"ipam": {\n "type": "host-local",\n "subnet": "usePodCidr"\n}'), { type: 'host-local', usePodCidr: true });
  const s = buildSnapshot(inv([configMap('kube-system', 'calico-config', { cni_network_config: '{"ipam": {"type": "host-local", "subnet": "usePodCidr"}}' })]));
  assert.equal(s.cni.plugin, 'calico');
  assert.equal(s.cni.ipam, 'host-local');
  assert.equal(s.cni.ipamMode, 'host-local usePodCidr');
});

test('Tigera operator Installation: operatorManaged, IPAM type, pools as evidence', () => {
  const s = buildSnapshot(inv([{
    apiVersion: 'operator.tigera.io/v1', kind: 'Installation', metadata: { name: 'default' },
    spec: { cni: { type: 'Calico', ipam: { type: 'Calico' } }, calicoNetwork: { ipPools: [{ cidr: '192.168.0.0/16', blockSize: 26 }] } },
  }]));
  assert.equal(s.cni.plugin, 'calico');
  assert.equal(s.cni.operatorManaged, true);
  assert.equal(s.cni.ipam, 'calico-ipam');
  assert.ok(s.cni.evidence.some((e) => e.includes('calicoNetwork.ipPools: 192.168.0.0/16')));
});

test('Cilium: cilium-config ipam mode and cluster-pool ranges', () => {
  const s = buildSnapshot(inv([
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cilium-x2k9p', namespace: 'kube-system', labels: { 'k8s-app': 'cilium' } }, spec: { hostNetwork: true }, status: { podIP: '10.0.0.5' } },
    configMap('kube-system', 'cilium-config', { ipam: 'cluster-pool', 'cluster-pool-ipv4-cidr': '10.0.0.0/8', 'cluster-pool-ipv4-mask-size': '24' }),
  ]));
  assert.deepEqual([s.cni.plugin, s.cni.ipam, s.cni.ipamMode], ['cilium', 'cilium', 'cluster-pool']);
  assert.deepEqual(ranges(s, 'pod'), ['pod 10.0.0.0/8 <cilium-config cluster-pool-ipv4-cidr>']);
  const k = buildSnapshot(inv([configMap('kube-system', 'cilium-config', { ipam: 'kubernetes' })]));
  assert.deepEqual([k.cni.plugin, k.cni.ipam, k.cni.ipamMode], ['cilium', 'cilium', 'kubernetes']);
});

test('flannel: host-local, net-conf Network; k3s distribution', () => {
  const s = buildSnapshot(inv([
    node('k3s-1', ['10.42.0.0/24'], ['192.168.2.10'], { 'node.kubernetes.io/instance-type': 'k3s' }, { 'k3s.io/node-args': '["server"]' }),
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kube-flannel-ds-abcde', namespace: 'kube-flannel', labels: { app: 'flannel' } }, spec: {}, status: {} },
    configMap('kube-flannel', 'kube-flannel-cfg', { 'net-conf.json': '{"Network": "10.42.0.0/16", "Backend": {"Type": "vxlan"}}' }),
  ]));
  assert.deepEqual([s.cni.plugin, s.cni.ipam], ['flannel', 'host-local']);
  // The k3s server names no --cluster-cidr: k3s's default applies (src/platform/k3s.ts), labelled as a default.
  assert.deepEqual(ranges(s, 'pod'), ['pod 10.42.0.0/16 <kube-flannel-cfg Network>', 'pod 10.42.0.0/16 <k3s default --cluster-cidr (not set in the k3s.io/node-args of server k3s-1)>']);
  assert.equal(s.platform.kind, 'k3s');
});

test('generic distribution, unknown CNI', () => {
  const s = buildSnapshot(inv([node('n', undefined, ['10.0.0.1'])]));
  assert.equal(s.platform.kind, 'generic');
  assert.deepEqual([s.cni.plugin, s.cni.ipam, s.cni.operatorManaged], ['unknown', 'unknown', false]);
});

// ---------------------------------------------------------------- robustness

test('values a real cluster can hold but we cannot use become warnings, not throws; gaps come first', () => {
  const s = buildSnapshot(inv([
    node('n1', undefined, ['300.1.1.1']),
    node('n2', ['10.244.2.7/24'], ['10.0.0.2']),
    configMap('kube-system', 'kube-proxy', { 'config.conf': 'clusterCIDR: [unclosed' }),
    configMap('kube-system', 'kube-flannel-cfg', { 'net-conf.json': '{"Network": "banana"}' }),
  ], { gaps: ['cannot list ipamblocks.crd.projectcalico.org: forbidden'] }));
  assert.equal(s.warnings[0], 'cannot list ipamblocks.crd.projectcalico.org: forbidden');
  assert.ok(s.warnings.includes('Node/n1: InternalIP "300.1.1.1" is not an IP'), s.warnings.join('\n'));
  assert.ok(s.warnings.includes('Node/n2 spec.podCIDR: "10.244.2.7/24" has host bits set; read as 10.244.2.0/24'));
  assert.ok(s.warnings.some((w) => w.startsWith('ConfigMap kube-system/kube-proxy: config.conf is not valid YAML')), s.warnings.join('\n'));
  assert.ok(s.warnings.some((w) => w.includes('"banana" is not a CIDR')), s.warnings.join('\n'));
  assert.deepEqual(s.nodes[1].podCIDRs, ['10.244.2.0/24']);
  assert.deepEqual(s.nodes[0].internalIPs, []);
});

test('warnings are capped', () => {
  const objs: KubeObject[] = [];
  for (let i = 0; i < MAX_WARNINGS + 50; i++) objs.push(node(`n${i}`, undefined, ['bad']));
  const s = buildSnapshot(inv(objs));
  assert.equal(s.warnings.length, MAX_WARNINGS + 1);
  assert.equal(s.warnings.at(-1), '50 more warning(s) not shown');
});

// ---------------------------------------------------------------- validation: objects that cannot be real

const inputError = (objects: KubeObject[], pattern: RegExp, extra: Partial<RawInventory> = {}) => {
  assert.throws(() => buildSnapshot(inv(objects, extra)), (e: unknown) => {
    assert.ok(e instanceof InputError, `expected an InputError, got ${String(e)}`);
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes('\n'), 'one line');
    return true;
  });
};

test('objects a real apiserver cannot return are InputErrors naming the object and the path', () => {
  const o = (x: unknown) => x as KubeObject;
  inputError([o({ apiVersion: 'v1', kind: 'Service', spec: { clusterIP: '10.0.0.1' } })], /^the cluster: a Service: metadata is missing/);
  inputError([o({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'default' } })], /a Service: metadata\.name is missing/);
  inputError([o({ apiVersion: 'v1', kind: 'Service', metadata: { name: 5, namespace: 'default' } })], /metadata\.name is a number \(5\), not a string/);
  inputError([o({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x', namespace: ['a'] } })], /Service x: metadata\.namespace is a list \(\["a"\]\), not a string/);
  inputError([o({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: {} })], /Service x: metadata\.namespace is missing/);
  inputError([svc('default', 'foo', { clusterIP: 'x' })], /Service default\/foo: spec\.clusterIP "x" is not an IP address/);
  inputError([svc('default', 'foo', { clusterIP: 12 })], /spec\.clusterIP is a number \(12\), not a string/);
  inputError([svc('default', 'foo', { clusterIPs: 'x' })], /spec\.clusterIPs is a string \("x"\), not a list/);
  inputError([svc('default', 'foo', { clusterIPs: ['10.0.0.1', '10.0.0.2'] })], /has two IPv4 addresses/);
  inputError([svc('default', 'foo', { clusterIP: '10.0.0.1', clusterIPs: ['10.0.0.2'] })], /spec\.clusterIPs\[0\] "10\.0\.0\.2" differs from spec\.clusterIP "10\.0\.0\.1"/);
  inputError([svc('default', 'foo', { type: 'Magic' })], /spec\.type "Magic" is not a Service type/);
  inputError([svc('default', 'foo', { ports: [{ port: 'http' }] })], /spec\.ports\[0\]\.port is "http", not a whole number/);
  inputError([o({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x', namespace: 'd', labels: { a: 1 } } })], /metadata\.labels\.a is a number/);
  inputError([node('n1', ['banana'], [])], /Node n1: spec\.podCIDR "banana" is not a CIDR/);
  inputError([node('n1', ['10.244.1.0/33'], [])], /spec\.podCIDR "10\.244\.1\.0\/33" is not a CIDR/);
  inputError([o({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: {}, status: { podIP: 'nope' } })], /Pod default\/p: status\.podIP "nope" is not an IP/);
  inputError([o({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'bad' }, spec: { cidr: 'garbage' } })], /IPPool bad: spec\.cidr "garbage" is not a CIDR/);
  inputError([o({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr: '10.0.0.0/16', blockSize: '26' } })], /spec\.blockSize is "26", not a whole number/);
  inputError([o({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'k' }, spec: { cidrs: ['10.96.0.0/12', 7] } })], /spec\.cidrs\[1\] is a number/);
  inputError([null as unknown as KubeObject], /^the cluster: an object: is null/);
  inputError([o({ apiVersion: 'v1', kind: 'List', metadata: {}, items: 'x' })], /items is a string/);
  inputError([o({ apiVersion: 'v1', metadata: { name: 'x' } })], /kind is missing/);
  // the file, when known
  inputError([svc('default', 'foo', { clusterIP: 12 })], /^dump\.yaml: Service default\/foo: spec\.clusterIP/, { source: { kind: 'file', files: ['dump.yaml'] } });
  inputError([svc('default', 'foo', { clusterIP: 12 })], /^object 1 of a\.yaml, b\.yaml: Service default\/foo/, { source: { kind: 'file', files: ['a.yaml', 'b.yaml'] } });
  const tagged = svc('default', 'foo', { clusterIP: 12 });
  setObjectOrigin(tagged, 'b.yaml document 3');
  inputError([tagged], /^b\.yaml document 3: Service default\/foo/, { source: { kind: 'file', files: ['a.yaml', 'b.yaml'] } });
  // distribution configs given as files
  inputError([], /ClusterConfiguration: networking\.serviceSubnet "garbage" is not a CIDR/, { configs: [{ apiVersion: 'kubeadm.k8s.io/v1beta3', kind: 'ClusterConfiguration', networking: { serviceSubnet: 'garbage' } }] });
  inputError([], /Cluster c: spec\.networking\.podCIDR "100\.96\.0\.0\/99" is not a CIDR/, { configs: [{ apiVersion: 'kops.k8s.io/v1alpha3', kind: 'Cluster', metadata: { name: 'c' }, spec: { networking: { podCIDR: '100.96.0.0/99' } } }] });
  inputError([], /Cluster c: spec\.serviceClusterIPRange is a number/, { configs: [{ apiVersion: 'kops.k8s.io/v1alpha2', kind: 'Cluster', metadata: { name: 'c' }, spec: { serviceClusterIPRange: 10 } }] });
});

test('everything a real apiserver returns is accepted', () => {
  const s = buildSnapshot(inv([
    svc('default', 'kubernetes', { type: 'ClusterIP', clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1'], ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] }),
    svc('default', 'headless', { clusterIP: 'None', clusterIPs: ['None'], selector: { app: 'x' } }),
    svc('default', 'ext', { type: 'ExternalName', externalName: 'example.com' }),
    svc('default', 'dual', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20', 'fd00:10:96::20'], ipFamilies: ['IPv4', 'IPv6'], ports: [{ port: 80, targetPort: 'http' }] }),
    svc('default', 'lb', { type: 'LoadBalancer', clusterIP: '10.96.0.30', ports: [{ port: 80, nodePort: 30080 }], loadBalancerSourceRanges: ['203.0.113.0/24'], externalIPs: ['198.51.100.7'] }, { loadBalancer: { ingress: [{ hostname: 'lb.example.com' }, { ip: '198.51.100.8' }] } }),
    svc('legacy', 'zeros', { clusterIP: '010.096.000.040' }),
    node('waiting', undefined, ['192.168.1.9']),
    node('v6', ['fd00:10:244:1::/64'], ['fd00::9']),
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pending', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] }, status: { phase: 'Pending' } },
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'nulls', namespace: 'default', labels: null, annotations: null } as unknown as KubeObject['metadata'], spec: null, status: { podIPs: null } },
    { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', extra: { any: [1, 2] } }, spec: 'anything', status: 42, unknownField: true },
    { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.96.0.0/12'] } },
    { apiVersion: 'networking.k8s.io/v1beta1', kind: 'ServiceCIDR', metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.96.0.0/12'] } },
  ]));
  assert.deepEqual(s.services.map((x) => `${x.namespace}/${x.name} ${x.clusterIPs.join(',')}${x.headless ? ' headless' : ''}`), [
    'default/kubernetes 10.96.0.1', 'default/headless  headless', 'default/ext ', 'default/dual 10.96.0.20,fd00:10:96::20', 'default/lb 10.96.0.30', 'legacy/zeros ',
  ]);
  assert.ok(s.warnings.some((w) => w.includes('010.096.000.040')), 'a legacy address is a warning, not an error');
  assert.deepEqual(s.nodes.map((n) => `${n.name} ${n.podCIDRs.join(',')}`), ['waiting ', 'v6 fd00:10:244:1::/64']);
  assert.deepEqual(s.pods.map((p) => `${p.name} ${p.podIPs.length}`), ['pending 0', 'nulls 0']);
  assert.deepEqual(s.serviceCIDRs.map((c) => `${c.name} ${c.apiVersion}`), ['kubernetes networking.k8s.io/v1']);
});

test('duplicates: exact copies are kept once, silently; different copies are an InputError naming both', () => {
  const objs = [svc('default', 'web', { clusterIP: '10.96.0.5' }), node('n1', ['10.244.1.0/24'], ['192.168.1.1'])];
  const once = buildSnapshot(inv(structuredClone(objs), { source: { kind: 'file', files: ['a.yaml'] } }));
  const twice = buildSnapshot(inv([...structuredClone(objs), ...structuredClone(objs)], { source: { kind: 'file', files: ['a.yaml'] } }));
  assert.deepEqual(twice, once);
  assert.equal(twice.services.length, 1);
  assert.deepEqual(twice.warnings, []);

  const a = svc('default', 'web', { clusterIP: '10.96.0.5' });
  a.metadata!.resourceVersion = '100';
  const b = structuredClone(a);
  b.metadata!.resourceVersion = '205';
  inputError([a, b], /^Service default\/web appears in object 1 of a\.yaml, b\.yaml and in object 2 of a\.yaml, b\.yaml with different content \(metadata\.resourceVersion: "100" vs "205"\)/, { source: { kind: 'file', files: ['a.yaml', 'b.yaml'] } });
  const c = structuredClone(a);
  c.spec.clusterIP = '10.96.0.6';
  setObjectOrigin(a, 'a.yaml');
  setObjectOrigin(c, 'b.yaml');
  inputError([a, c], /^Service default\/web appears in a\.yaml and in b\.yaml with different content \(spec\.clusterIP: "10\.96\.0\.5" vs "10\.96\.0\.6"\)/);
  inputError([structuredClone(a), structuredClone(c)], /appears twice in the cluster/);
  // not duplicates: other namespace, other kind, other group
  const s = buildSnapshot(inv([
    svc('default', 'web', { clusterIP: '10.96.0.5' }), svc('other', 'web', { clusterIP: '10.96.0.6' }),
    configMap('default', 'web', {}), { apiVersion: 'example.com/v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { clusterIP: 3 } },
  ]));
  assert.equal(s.services.length, 2);
});

test('exact copies through the file loader: a dump given twice, or two overlapping dumps, builds the same snapshot', async () => {
  const dir = join(FIX, '..', '..', '..', 'examples', 'kops-tailscale');
  const once = buildSnapshot(await readInventoryFiles([dir]));
  const twice = buildSnapshot(await readInventoryFiles([dir, dir, join(dir, 'services.yaml')]));
  assert.deepEqual({ ...twice, source: once.source }, once);
  assert.ok(once.services.length > 5);
});

test('duplicates that share YAML alias bombs compare in bounded time; past the bound they are different', () => {
  const chain = (leaf: string): unknown => {
    let x: unknown = Array(9).fill(leaf);
    for (let i = 0; i < 8; i++) x = Array(9).fill(x);
    return x;
  };
  const copy = (x: unknown) => svc('default', 'web', { clusterIP: '10.96.0.10', x });
  const started = Date.now();
  const s = buildSnapshot(inv([copy(chain('lol')), copy(chain('lol'))]));
  assert.equal(s.services.length, 1, 'equal copies (9^9 leaves each, separately built) are one object');
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
  // Deep nesting (beyond any call stack) in an unknown field of two copies.
  const deep = (leaf: number): unknown => { let x: unknown = leaf; for (let i = 0; i < 50_000; i++) x = [x]; return x; };
  inputError([copy(deep(1)), copy(deep(2))], /appears twice in the cluster with different content \(spec\.x(\[0\])+…(\[0\])+: 1 vs 2\)/);
  assert.equal(buildSnapshot(inv([copy(deep(1)), copy(deep(1))])).services.length, 1);
  // Not comparable within the bound: different.
  const wide = () => Array.from({ length: MAX_COMPARE + 10 }, (_, i) => i);
  inputError([copy(wide()), copy(wide())], /spec\.x: "\(too large to compare\)"/);
});

test('IPv6 addresses are normalized', () => {
  const s = buildSnapshot(inv([svc('default', 'v6', { clusterIP: 'FD00:10:96:0:0:0:0:A', clusterIPs: ['FD00:10:96:0:0:0:0:A'] })]));
  assert.deepEqual(s.services[0].clusterIPs, ['fd00:10:96::a']);
});

test('deterministic: same input, same snapshot', () => {
  const objs = [node('a', ['10.244.1.0/24'], ['192.168.5.20']), svc('default', 'kubernetes', { clusterIP: '10.96.0.1' })];
  assert.deepEqual(buildSnapshot(inv(structuredClone(objs))), buildSnapshot(inv(structuredClone(objs))));
});

test('Calico pools: blockSize 0 is the family default; v1-style IP-in-IP modes read as today\'s spelling', () => {
  const pool = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name }, spec });
  const s = buildSnapshot(inv([
    pool('v4', { cidr: '10.20.0.0/16', blockSize: 0, ipip: { enabled: true, mode: 'cross-subnet' } }),
    pool('v6', { cidr: 'fd00:20::/56', blockSize: 0, vxlanMode: 'always' }),
    pool('legacy', { cidr: '10.30.0.0/16', ipip: { enabled: true, mode: 'always' } }),
  ]));
  const by = new Map(s.pools.map((p) => [p.name, p]));
  assert.equal(by.get('v4')!.blockSize, 26);
  assert.equal(by.get('v4')!.ipipMode, 'CrossSubnet');
  assert.equal(by.get('v6')!.blockSize, 122);
  assert.equal(by.get('v6')!.vxlanMode, 'Always');
  assert.equal(by.get('legacy')!.ipipMode, 'Always');
});
