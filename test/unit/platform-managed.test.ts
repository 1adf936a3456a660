/**
 * Amazon EKS, GKE and AKS (src/platform/eks.ts, gke.ts, aks.ts): the faithful dumps under
 * test/fixtures/platforms/ are recognised with their evidence, look-alikes (kOps on AWS or GCE, aks-engine, EKS
 * Distro, a providerID alone) are not, and `plan` refuses both moves on each with one error line that names the
 * platform, its reason and its own path, and writes no plan.
 */
import { install } from '../../src/install.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, Snapshot } from '../../src/cluster/types.ts';
import { detectPlatform } from '../../src/platform/registry.ts';
import { objectKey, type PlatformInput, type PlatformNode } from '../../src/platform/types.ts';
import { run } from './run-cli.ts';

install();

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'platforms');

async function snapshotOf(dir: string, extra: KubeObject[] = []): Promise<Snapshot> {
  const inv = await readInventoryFiles([dir]);
  inv.objects.push(...extra);
  return buildSnapshot(inv);
}

const fixture = (name: string) => snapshotOf(join(FIXTURES, name));

function input(nodes: PlatformNode[], over: Partial<PlatformInput> = {}): PlatformInput {
  return {
    nodes, objects: new Map(), daemonSets: new Set(), namespaces: new Set(['kube-system']), configMaps: new Map(),
    systemWorkloads: [], controlPlaneFlags: [], calicoClusterTypes: [], configs: [], ...over,
  };
}

const bare = (name: string, over: Partial<PlatformNode> = {}): PlatformNode => ({ name, labels: {}, annotations: {}, ...over });

// ------------------------------------------------------------------------------------------ detection

test('eks (1.31, VPC CNI): Amazon EKS by its managed node group labels and kubelet build, with the supporting signs', async () => {
  const s = await fixture('eks');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.platform?.kind, 'eks');
  assert.equal(s.platform?.title, 'Amazon EKS');
  assert.deepEqual(s.platform?.evidence, [
    'node label eks.amazonaws.com/nodegroup=ng-general on all 3 nodes',
    'node label eks.amazonaws.com/capacityType=ON_DEMAND on all 3 nodes',
    'kubelet v1.31.4-eks-aeac579 on ip-198-51-100-23.us-west-2.compute.internal, ip-198-51-100-87.us-west-2.compute.internal and 1 more',
    'providerID aws:///us-west-2a/i-0570f5b2e580f5cc1',
    'DaemonSets kube-system/aws-node, kube-system/eks-pod-identity-agent',
  ]);
  assert.deepEqual(s.platform?.reserved, [{ cidr: '169.254.170.23/32', reason: 'EKS Pod Identity Agent (link-local address on every node)' }]);
  assert.equal(s.serviceCIDRApi, undefined);
  assert.deepEqual(s.dnsService && [s.dnsService.namespace, s.dnsService.name, s.dnsService.clusterIPs], ['kube-system', 'kube-dns', ['10.100.0.10']]);
});

test('eks-1.33: Amazon EKS with the ServiceCIDR API served and the apiserver\'s default ServiceCIDR read as a service range', async () => {
  const s = await fixture('eks-1.33');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.platform?.kind, 'eks');
  assert.equal(s.serviceCIDRApi, 'v1');
  assert.deepEqual(s.serviceCIDRs.map((c) => [c.name, c.cidrs]), [['kubernetes', ['10.100.0.0/16']]]);
  assert.ok(s.platform?.evidence.includes('kubelet v1.33.1-eks-b9b9ed7 on ip-198-51-100-31.us-west-2.compute.internal, ip-198-51-100-95.us-west-2.compute.internal and 1 more'));
});

test('eks-custom-networking: Amazon EKS, the ENIConfigs (crd.k8s.amazonaws.com) kept and named, pods on 100.64.0.0/10 addresses', async () => {
  const s = await fixture('eks-custom-networking');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.platform?.kind, 'eks');
  assert.equal(s.platform?.evidence.at(-1), 'ENIConfigs us-west-2a, us-west-2b, us-west-2c (VPC CNI custom networking)');
  const cgnat = s.pods.filter((p) => p.podIPs.some((ip) => ip.startsWith('100.64.')));
  assert.equal(cgnat.length, 24);
});

test('gke (VPC-native, Dataplane V2): GKE by its node pool labels and kubelet build; netd-config and the system DaemonSets support it', async () => {
  const s = await fixture('gke');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.platform?.kind, 'gke');
  assert.deepEqual(s.platform?.evidence, [
    'node label cloud.google.com/gke-nodepool=default-pool on all 3 nodes',
    'node label cloud.google.com/gke-os-distribution=cos on all 3 nodes',
    'node label cloud.google.com/gke-provisioning=standard on all 3 nodes',
    'kubelet v1.31.3-gke.1162000 on gke-prod-default-pool-7beaa45a-j4m8, gke-prod-default-pool-7beaa45a-scgg and 1 more',
    'providerID gce://example-project/us-central1-a/gke-prod-default-pool-7beaa45a-j4m8',
    'DaemonSets kube-system/netd, kube-system/anetd, kube-system/gke-metadata-server, kube-system/fluentbit-gke, kube-system/pdcsi-node',
    'ConfigMap kube-system/netd-config',
  ]);
  assert.deepEqual(s.kubernetesServiceIPs, ['34.118.224.1']);
  assert.deepEqual(s.dnsService?.clusterIPs, ['34.118.224.10']);
});

test('aks-overlay: AKS by its reserved labels, Azure CNI Overlay named, and the ranges AKS forbids reserved', async () => {
  const s = await fixture('aks-overlay');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.platform?.kind, 'aks');
  assert.deepEqual(s.platform?.evidence.slice(0, 4), [
    'node label kubernetes.azure.com/managedby=aks on all 3 nodes',
    'node label kubernetes.azure.com/agentpool=nodepool1 on all 3 nodes',
    'node label kubernetes.azure.com/node-image-version=AKSUbuntu-2204gen2containerd-202410.15.0 on all 3 nodes',
    'node label kubernetes.azure.com/mode=system on all 3 nodes',
  ]);
  assert.equal(s.platform?.evidence.at(-1), 'Azure CNI Overlay (node label kubernetes.azure.com/azure-cni-overlay=true on aks-nodepool1-12345678-vmss000000)');
  assert.deepEqual(s.platform?.reserved.map((r) => r.cidr), ['169.254.0.0/16', '172.30.0.0/16', '172.31.0.0/16', '192.0.2.0/24']);
  assert.deepEqual(s.nodes.map((n) => n.podCIDRs[0]), ['10.244.0.0/24', '10.244.1.0/24', '10.244.2.0/24']);
  // the overlay pod CIDR as Azure CNS holds it (NodeNetworkConfig, acn.azure.com/v1alpha), once
  assert.deepEqual(s.ranges.filter((r) => r.role === 'pod').map((r) => `${r.cidr} <${r.source}>`), [
    '10.244.0.0/16 <NodeNetworkConfig kube-system/aks-nodepool1-12345678-vmss000000 status.networkContainers[].subnetAddressSpace>',
  ]);
  assert.deepEqual(s.dnsService?.clusterIPs, ['10.0.0.10']);
});

test('a kOps cluster on AWS stays kOps: aws:/// providerIDs, and even an aws-node DaemonSet (kOps amazonvpc networking), decide nothing', async () => {
  const awsNode: KubeObject = {
    apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'aws-node', namespace: 'kube-system', uid: 'f00d0000-0000-4000-a000-000000000001' },
    spec: { selector: { matchLabels: { 'k8s-app': 'aws-node' } }, template: { metadata: { labels: { 'k8s-app': 'aws-node' } }, spec: { containers: [{ name: 'aws-node', image: 'public.ecr.aws/eks/amazon-k8s-cni:v1.19.0' }] } } },
  };
  for (const extra of [[], [awsNode]]) {
    const s = await snapshotOf(join(ROOT, 'examples', 'kops-tailscale'), extra);
    assert.equal(s.platform?.kind, 'kops');
    assert.ok(s.nodes.length > 0);
  }
  const r = await run(['plan', '-f', join(ROOT, 'examples', 'kops-tailscale'), '--service-cidr', '100.32.0.0/16', '-o', 'yaml']); // kOps: next to the pods 100.96.0.0/11 (nonMasqueradeCIDR 100.0.0.0/9)
  assert.doesNotMatch(r.err, /refused on/);
  assert.match(r.out, /kind: MigrationPlan|serviceCIDR/);
});

test('look-alikes are not managed platforms: providerIDs alone, aks-engine labels, EKS Distro kubelets, kOps on GCE', () => {
  // A self-managed cluster on EC2 with the VPC CNI: providerID and aws-node, no EKS label, kubelet from upstream.
  assert.equal(detectPlatform(input([bare('ip-10-0-0-1', { providerID: 'aws:///us-west-2a/i-0abc', kubeletVersion: 'v1.31.4' })], { daemonSets: new Set(['kube-system/aws-node']) })).platform.kind, 'generic');
  // EKS Distro / EKS Anywhere builds: -eks-1-28-9, not the EKS AMIs' -eks-<7 hex>.
  assert.equal(detectPlatform(input([bare('n1', { kubeletVersion: 'v1.28.3-eks-1-28-9' })])).platform.kind, 'generic');
  // kOps on GCE: gce:// providerIDs and cloud.google.com/ labels that are not GKE's.
  assert.equal(detectPlatform(input([bare('n1', { providerID: 'gce://p/us-central1-a/n1', labels: { 'cloud.google.com/metadata-proxy-ready': 'true' } })], { daemonSets: new Set(['kube-system/netd']) })).platform.kind, 'generic');
  // aks-engine set kubernetes.azure.com/cluster and /role on self-managed clusters.
  assert.equal(detectPlatform(input([bare('k8s-agentpool1-0', { providerID: 'azure:///subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/k8s-agentpool1-0', labels: { 'kubernetes.azure.com/cluster': 'rg', 'kubernetes.azure.com/role': 'agent', agentpool: 'agentpool1' } })], { daemonSets: new Set(['kube-system/azure-cns']) })).platform.kind, 'generic');
});

test('the apiserver host of a live read decides on its own; a host that merely contains the name does not', () => {
  const node = bare('n1');
  const kind = (server: string) => detectPlatform(input([node], { server })).platform.kind;
  assert.equal(kind('https://0123456789ABCDEF0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com'), 'eks');
  assert.equal(kind('https://example-dns-0a1b2c3d.hcp.eastus.azmk8s.io:443'), 'aks');
  assert.equal(kind('https://gke-0123456789abcdef-123456789012.us-central1.gke.goog'), 'gke');
  assert.equal(kind('https://eks.amazonaws.com.example.net'), 'generic');
  assert.equal(kind('https://203.0.113.7'), 'generic');
  assert.deepEqual(detectPlatform(input([node], { server: 'https://x.hcp.eastus.azmk8s.io:443' })).facts.evidence, ['apiserver x.hcp.eastus.azmk8s.io']);
});

test('only overlay network containers of a NodeNetworkConfig name a pod range, and only on AKS', () => {
  const nnc = (type: string, cidr: string): KubeObject => ({ apiVersion: 'acn.azure.com/v1alpha', kind: 'NodeNetworkConfig', metadata: { name: 'n1', namespace: 'kube-system' }, status: { networkContainers: [{ type, subnetAddressSpace: cidr }] } });
  const objects = new Map([[objectKey('acn.azure.com', 'NodeNetworkConfig'), [nnc('vnet', '10.224.0.0/16'), nnc('overlay', '192.168.0.0/16')]]]);
  const aks = detectPlatform(input([bare('n1', { labels: { 'kubernetes.azure.com/agentpool': 'np1' } })], { objects }));
  assert.deepEqual(aks.ranges.map((r) => [r.cidr, r.role]), [['192.168.0.0/16', 'pod']]);
  assert.deepEqual(detectPlatform(input([bare('n1')], { objects })).ranges, []);
});

test('ENIConfigs alone (no EKS sign) decide nothing, and are only kept when EKS is otherwise recognised', () => {
  const objects = new Map([[objectKey('crd.k8s.amazonaws.com', 'ENIConfig'), [{ apiVersion: 'crd.k8s.amazonaws.com/v1alpha1', kind: 'ENIConfig', metadata: { name: 'us-west-2a' } }]]]);
  assert.equal(detectPlatform(input([bare('n1')], { objects })).platform.kind, 'generic');
  const eks = detectPlatform(input([bare('n1', { labels: { 'eks.amazonaws.com/compute-type': 'auto' } })], { objects }));
  assert.deepEqual(eks.facts.evidence, ['node label eks.amazonaws.com/compute-type=auto on n1', 'ENIConfig us-west-2a (VPC CNI custom networking)']);
});

// ------------------------------------------------------------------------------------------ plan refusals

const CASES: Array<{ dir: string; title: string; service: RegExp[]; pod: RegExp[] }> = [
  ...['eks', 'eks-1.33', 'eks-custom-networking'].map((dir) => ({
    dir, title: 'Amazon EKS',
    service: [/serviceIpv4Cidr/, /cannot be changed/, /instead: create a new EKS cluster/],
    pod: [/Amazon VPC CNI/, /ENIConfig/, /instead: associate a secondary CIDR block with the VPC/, /new node groups/],
  })),
  {
    dir: 'gke', title: 'Google Kubernetes Engine (GKE)',
    service: [/34\.118\.224\.0\/20/, /instead: create a new GKE cluster/],
    pod: [/alias IP ranges/, /unstable state/, /instead: add Pod IPv4 ranges with discontiguous multi-Pod CIDR/],
  },
  {
    dir: 'aks-overlay', title: 'Azure Kubernetes Service (AKS)',
    service: [/--service-cidr, default 10\.0\.0\.0\/16/, /ServiceCIDR/, /instead: .*create a new AKS cluster/],
    pod: [/Azure CNI Overlay/, /superset/, /az aks update --pod-cidr/],
  },
];

for (const c of CASES) {
  for (const [move, flag, target, reasons] of [['service', '--service-cidr', '10.200.0.0/16', c.service], ['pod', '--pod-cidr', '10.50.0.0/16', c.pod]] as const) {
    test(`${c.dir}: plan ${flag} exits 2 with one error line naming ${c.title}, its reason and its path, and no plan`, async () => {
      for (const out of [[], ['-o', 'yaml']]) {
        const r = await run(['plan', '-f', join(FIXTURES, c.dir), flag, target, ...out]);
        assert.equal(r.code, 2, r.err);
        assert.equal(r.out, '');
        const lines = r.err.split('\n').filter((l) => l !== '');
        assert.equal(lines.length, 1, r.err);
        const line = lines[0]!;
        assert.ok(line.startsWith(`error: moving the ${move === 'service' ? 'Service' : 'Pod'} CIDR is refused on ${c.title}: `), line);
        for (const re of reasons) assert.match(line, re);
        assert.match(line, /\(platform recognised by (node label|kubelet|apiserver) /);
        assert.doesNotMatch(line, /\n|    at /);
      }
    });
  }
}
