// Shared unit-test fixtures: a kubeadm cluster snapshot (Service CIDR 10.96.0.0/16, kube-dns at 10.96.0.10,
// Calico IPAM) and a ClusterIP Service, to be varied per test with `over`.
import type { ServiceInfo, Snapshot } from '../../src/cluster/types.ts';

export function svc(ns: string, name: string, ip: string, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace: ns, name, type: 'ClusterIP', clusterIPs: ip ? [ip] : [], headless: false, ports: [{ port: 80 }],
    loadBalancerIPs: [], loadBalancerSourceRanges: [], externalIPs: [], labels: {}, annotations: {}, ...over,
  };
}

export function kubeadmSnapshot(services: ServiceInfo[], over: Partial<Snapshot> = {}): Snapshot {
  return {
    source: { kind: 'file', files: ['test'] },
    kubernetesVersion: 'v1.33.4',
    serviceCIDRApi: 'v1',
    platform: { kind: 'kubeadm', title: 'kubeadm', evidence: [], reserved: [] },
    cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: false, evidence: [] },
    ranges: [{ cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' }],
    serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/16'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
    kubernetesServiceIPs: ['10.96.0.1'],
    dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'], foundBy: 'kubelet clusterDNS' },
    clusterDNS: ['10.96.0.10'],
    apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16'] }],
    controllerManagers: [{ pod: 'kube-controller-manager-cp1', serviceClusterIPRange: ['10.96.0.0/16'] }],
    kubeadm: { serviceSubnet: ['10.96.0.0/16'], kubeletClusterDNS: ['10.96.0.10'] },
    nodes: [], services, pods: [], pools: [], blocks: [], blockAffinities: [], warnings: [],
    ...over,
  };
}
