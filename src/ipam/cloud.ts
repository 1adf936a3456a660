/**
 * Cloud IPAM: the cloud's network hands pods their addresses, so there is no cluster pod range for kube-renumber to
 * move. Recognised by the CNI's node agent DaemonSet.
 */
import type { IpamOwner } from './types.ts';

export const awsVpcCni: IpamOwner<'aws-vpc-cni'> = {
  kind: 'aws-vpc-cni',
  title: 'Amazon VPC CNI',
  detect: (i) => (i.daemonSets.has('kube-system/aws-node') ? ['DaemonSet kube-system/aws-node (the Amazon VPC CNI plugin)'] : undefined),
  pod: {
    supported: false,
    reason: 'the Amazon VPC CNI gives every pod a private address of the VPC, from the subnets of the node\'s network interfaces: there is no cluster pod range to move',
    instead: 'give pods addresses from other subnets with the VPC CNI\'s custom networking (ENIConfig per zone, then new nodes), or add subnets to the VPC',
  },
  sources: [
    'https://docs.aws.amazon.com/eks/latest/userguide/cni-env-vars.html',
    'https://aws.github.io/aws-eks-best-practices/networking/vpc-cni',
    'https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network.html',
  ],
};

export const azureCni: IpamOwner<'azure-cni'> = {
  kind: 'azure-cni',
  title: 'Azure CNI',
  detect: (i) => {
    const ds = ['kube-system/azure-cns', 'kube-system/azure-cni', 'kube-system/azure-vnet'].find((d) => i.daemonSets.has(d));
    return ds ? [`DaemonSet ${ds} (Azure CNI)`] : undefined;
  },
  pod: {
    supported: false,
    reason: 'Azure CNI hands out pod addresses itself (from the virtual network subnet, or from the overlay pod CIDR Azure manages): kube-controller-manager and the nodes\' podCIDRs do not own them',
    instead: 'change the pod address space through Azure (the cluster\'s network profile), or move workloads to a cluster or node pool with the new range',
  },
  sources: [
    'https://learn.microsoft.com/training/modules/aks-network-design-azure-container-network-interface/3-overview-of-azure-cni-networking',
    'https://learn.microsoft.com/azure/aks/azure-cni-overlay',
  ],
};

export const gkeAliasRanges: IpamOwner<'gke-alias-ranges'> = {
  kind: 'gke-alias-ranges',
  title: 'GKE VPC-native alias IP ranges',
  detect: (i) => {
    const ds = ['kube-system/netd', 'kube-system/anetd'].filter((d) => i.daemonSets.has(d));
    return ds.length > 0 ? [`DaemonSet ${ds.join(', ')} (GKE's pod networking: ${ds.includes('kube-system/anetd') ? 'Dataplane V2, ' : ''}addresses from each node's alias IP range)`] : undefined;
  },
  pod: {
    supported: false,
    reason: 'GKE gives each node an alias IP range from the subnet\'s Pod secondary range and pods take their addresses from it: the range belongs to the VPC subnet, and a secondary range in use cannot be replaced',
    instead: 'add Pod IPv4 ranges with discontiguous multi-Pod CIDR (a new node pool with --pod-ipv4-range) and move the workloads onto it, or create a new cluster',
  },
  sources: [
    'https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips',
    'https://cloud.google.com/kubernetes-engine/docs/how-to/alias-ips',
    'https://github.com/GoogleCloudPlatform/netd/blob/master/netd.yaml',
  ],
};
