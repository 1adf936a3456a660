/**
 * Azure Kubernetes Service: a managed control plane whose kube-apiserver flags nobody outside Azure can change;
 * pod addresses come from Azure CNI (Overlay: a pod CIDR Azure owns; node subnet: the VNet) or kubenet.
 * Sources: docs/platforms.md.
 */
import { managedEvidence } from '../managed/signs.ts';
import { objectsOf, type Platform, type PlatformInput, type PlatformRange, type ReservedRange } from '../../platform/types.ts';

/** Azure CNS's per-node network config (kube-system); an overlay network container names the cluster's pod CIDR. */
const NNC = { group: 'acn.azure.com', version: 'v1alpha', plural: 'nodenetworkconfigs', kind: 'NodeNetworkConfig', namespaced: true } as const;

function detect(input: PlatformInput): string[] | undefined {
  const evidence = managedEvidence(input, {
    // AKS-reserved labels. kubernetes.azure.com/cluster and /role are left out: aks-engine set them on
    // self-managed clusters too.
    labels: [{ key: 'kubernetes.azure.com/managedby', value: 'aks' }, { key: 'kubernetes.azure.com/agentpool' }, { key: 'kubernetes.azure.com/node-image-version' }, { key: 'kubernetes.azure.com/mode' }],
    serverHost: /\.azmk8s\.io$/,
    providerID: 'azure:///',
    daemonSets: ['kube-system/azure-cns', 'kube-system/azure-ip-masq-agent', 'kube-system/cloud-node-manager'],
    configMaps: ['kube-system/azure-ip-masq-agent-config-reconciled'],
  });
  if (!evidence) return undefined;
  const overlay = input.nodes.find((n) => n.labels['kubernetes.azure.com/azure-cni-overlay'] === 'true');
  if (overlay) evidence.push(`Azure CNI Overlay (node label kubernetes.azure.com/azure-cni-overlay=true on ${overlay.name})`);
  return evidence;
}

/**
 * The Azure CNI Overlay pod CIDR as Azure CNS holds it: status.networkContainers[].subnetAddressSpace of the
 * NodeNetworkConfigs whose container type is overlay (AKS checks a pod CIDR expansion there: `kubectl get nnc`).
 */
function ranges(input: PlatformInput): PlatformRange[] {
  const seen = new Map<string, string>();
  for (const o of objectsOf(input, NNC.group, NNC.kind)) {
    const ncs: unknown = o.status?.networkContainers;
    if (!Array.isArray(ncs)) continue;
    for (const nc of ncs) {
      if (nc?.type !== 'overlay' || typeof nc.subnetAddressSpace !== 'string' || seen.has(nc.subnetAddressSpace)) continue;
      seen.set(nc.subnetAddressSpace, `${o.metadata?.namespace ?? 'kube-system'}/${o.metadata?.name ?? '?'}`);
    }
  }
  return [...seen].map(([cidr, where]) => ({
    cidr, role: 'pod' as const, source: `NodeNetworkConfig ${where} status.networkContainers[].subnetAddressSpace`, label: 'Azure CNI Overlay pod CIDR',
  }));
}

function reserved(): ReservedRange[] {
  const why = 'AKS clusters cannot use it for the Service, pod or virtual network range';
  return ['169.254.0.0/16', '172.30.0.0/16', '172.31.0.0/16', '192.0.2.0/24'].map((cidr) => ({ cidr, reason: why }));
}

export const aks: Platform<'aks'> = {
  kind: 'aks',
  title: 'Azure Kubernetes Service (AKS)',
  reads: [NNC],
  detect,
  ranges,
  reserved,
  dnsServices: [{ namespace: 'kube-system', name: 'kube-dns', selector: { 'k8s-app': 'kube-dns' } }],
  capabilities: {
    service: {
      supported: false,
      reason: 'AKS sets the Service range (--service-cidr, default 10.0.0.0/16) when the cluster is created; before Kubernetes 1.33 it cannot be updated, and from 1.33 it can only be extended with an extra ServiceCIDR while the kube-apiserver\'s own range, which the move must change, stays',
      instead: 'on Kubernetes 1.33 or later, extend the range with an additional ServiceCIDR object; to leave the range, create a new AKS cluster with the new --service-cidr and move the workloads to it (blue-green)',
    },
    pod: {
      supported: false,
      reason: 'AKS assigns pod addresses itself: Azure CNI Overlay from a pod CIDR that can only be expanded to a superset (shrinking or replacing it is not supported), kubenet from a pod CIDR that cannot be changed once the cluster is deployed, Azure CNI node subnet from the VNet subnet',
      instead: 'on Azure CNI Overlay with Linux nodes, `az aks update --pod-cidr <a superset of the current range>` expands it in place; for any other pod range create a new AKS cluster and move the workloads to it (blue-green)',
    },
  },
  sources: [
    'https://learn.microsoft.com/en-us/azure/aks/concepts-network-azure-cni-overlay',
    'https://learn.microsoft.com/en-us/azure/aks/azure-cni-overlay-pod-expand',
    'https://learn.microsoft.com/en-us/azure/aks/azure-cni-overlay',
    'https://learn.microsoft.com/en-us/azure/aks/configure-kubenet',
    'https://learn.microsoft.com/en-us/azure/aks/concepts-network-legacy-cni',
    'https://learn.microsoft.com/en-us/azure/aks/use-labels',
    'https://github.com/Azure/azure-container-networking/blob/master/crd/nodenetworkconfig/api/v1alpha/nodenetworkconfig.go',
  ],
};
