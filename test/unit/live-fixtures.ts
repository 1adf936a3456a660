// Clusters that name their service or pod range nowhere we read: k3s (no apiserver pods, no ServiceCIDR), EKS
// with custom networking (pods on 100.64.x, no pod range anywhere), a cluster with its own DNS Service. As
// `kubectl get -o json` objects, for unit tests (buildSnapshot) and the bad-input corpus (a List file).
import type { KubeObject } from '../../src/cluster/types.ts';

export function node(name: string, internalIP: string, podCIDR?: string, externalIP?: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
    status: {
      addresses: [{ type: 'InternalIP', address: internalIP }, ...(externalIP ? [{ type: 'ExternalIP', address: externalIP }] : [])],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

export function service(namespace: string, name: string, clusterIP: string, selector: Record<string, string> = { app: name }): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Service', metadata: { name, namespace },
    spec: { type: 'ClusterIP', clusterIP, clusterIPs: [clusterIP], ports: [{ port: 53, protocol: 'UDP' }], selector },
  };
}

export function pod(namespace: string, name: string, ip: string, nodeName: string, opts: { hostNetwork?: boolean; phase?: string } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name}-rs`, controller: true }] },
    spec: { nodeName, ...(opts.hostNetwork ? { hostNetwork: true } : {}) },
    status: { phase: opts.phase ?? 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

/**
 * k3s on its defaults: pods 10.42.0.0/16 (node podCIDRs /24), services 10.43.0.0/16; nothing names the service
 * range (no apiserver pods, no ServiceCIDR objects), so it is inferred from default/kubernetes 10.43.0.1,
 * kube-system/kube-dns 10.43.0.10 and the other ClusterIPs (the highest 10.43.200.7: 10.43.0.0/16).
 */
export function k3sObjects(): KubeObject[] {
  return [
    node('server-1', '192.168.50.11', '10.42.0.0/24'),
    node('agent-1', '192.168.50.12', '10.42.1.0/24'),
    service('default', 'kubernetes', '10.43.0.1', {}),
    service('kube-system', 'kube-dns', '10.43.0.10', { 'k8s-app': 'kube-dns' }),
    service('kube-system', 'metrics-server', '10.43.17.3'),
    service('shop', 'web', '10.43.200.7'),
    pod('kube-system', 'coredns-1', '10.42.0.4', 'server-1'),
    pod('shop', 'web-1', '10.42.1.9', 'agent-1'),
    pod('kube-system', 'svclb-1', '192.168.50.12', 'agent-1', { hostNetwork: true }),
  ];
}

/**
 * EKS with custom networking: nodes in the VPC (10.0.0.0/16), pods on secondary ENIs in 100.64.0.0/16, and no pod
 * range configured anywhere (no controller-manager flags, no pools, no node podCIDRs). Services 172.20.0.0/16.
 */
export function eksCustomNetworkingObjects(): KubeObject[] {
  return [
    node('ip-10-0-1-10', '10.0.1.10'),
    node('ip-10-0-2-20', '10.0.2.20'),
    service('default', 'kubernetes', '172.20.0.1', {}),
    service('kube-system', 'kube-dns', '172.20.0.10', { 'k8s-app': 'kube-dns' }),
    service('shop', 'web', '172.20.91.4'),
    pod('kube-system', 'coredns-1', '100.64.3.7', 'ip-10-0-1-10'),
    pod('shop', 'web-1', '100.64.9.12', 'ip-10-0-2-20'),
    pod('shop', 'web-2', '100.64.9.13', 'ip-10-0-2-20'),
    pod('kube-system', 'aws-node-1', '10.0.1.10', 'ip-10-0-1-10', { hostNetwork: true }),
  ];
}

/** A List of objects as `kubectl get -o json` prints it. */
export function listJson(objects: KubeObject[]): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 1);
}

/** AKS with kubenet: service range 10.0.0.0/16 (not visible: managed control plane), pods 10.244.0.0/16, nodes 10.224.0.0/16. */
export function aksObjects(): KubeObject[] {
  return [
    node('aks-nodepool1-0', '10.224.0.4', '10.244.0.0/24'),
    node('aks-nodepool1-1', '10.224.0.5', '10.244.1.0/24'),
    service('default', 'kubernetes', '10.0.0.1', {}),
    service('kube-system', 'kube-dns', '10.0.0.10', { 'k8s-app': 'kube-dns' }),
    service('shop', 'web', '10.0.143.9'),
    pod('kube-system', 'coredns-1', '10.244.0.3', 'aks-nodepool1-0'),
    pod('shop', 'web-1', '10.244.1.8', 'aks-nodepool1-1'),
  ];
}

/** GKE (VPC-native): Services in GKE's default 34.118.224.0/20, pods 10.8.0.0/14 (node podCIDRs), nodes 10.128.0.0/20. */
export function gkeObjects(): KubeObject[] {
  return [
    node('gke-pool-1-a', '10.128.0.2', '10.8.0.0/24'),
    node('gke-pool-1-b', '10.128.0.3', '10.8.1.0/24'),
    service('default', 'kubernetes', '34.118.224.1', {}),
    service('kube-system', 'kube-dns', '34.118.224.10', { 'k8s-app': 'kube-dns' }),
    service('shop', 'web', '34.118.230.77'),
    pod('kube-system', 'kube-dns-1', '10.8.0.5', 'gke-pool-1-a'),
    pod('shop', 'web-1', '10.8.1.6', 'gke-pool-1-b'),
  ];
}
