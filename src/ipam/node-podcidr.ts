/**
 * Node IPAM: kube-controller-manager gives each node a spec.podCIDR and the CNI (host-local, flannel, Canal,
 * Cilium in `kubernetes` IPAM mode, kubenet) hands out addresses from it. Moved by re-registering nodes with
 * podCIDRs from the new range.
 */
import type { IpamOwner } from './types.ts';

export const nodePodCIDR: IpamOwner<'node'> = {
  kind: 'node',
  title: 'node podCIDRs (kube-controller-manager node IPAM)',
  detect: (i) => {
    if (i.ipam === 'host-local') return [...i.evidence, `IPAM host-local${i.ipamMode ? ` (${i.ipamMode})` : ''}: addresses from each node's spec.podCIDR`];
    if (i.plugin === 'flannel') return [...i.evidence, 'flannel takes addresses from each node\'s spec.podCIDR'];
    if (i.plugin === 'cilium' && i.ipamMode === 'kubernetes') return [...i.evidence, 'Cilium IPAM mode kubernetes: addresses from each node\'s spec.podCIDR'];
    if (i.plugin === 'unknown' && i.pools === 0 && i.nodesWithPodCIDR > 0) return [`no CNI recognised; ${i.nodesWithPodCIDR} node(s) have a spec.podCIDR`];
    return undefined;
  },
  pod: {
    supported: true,
    path: 'node',
    describe: (cni) => `pods get IPs from each node's podCIDR (${cni.plugin === 'cilium' ? 'Cilium kubernetes IPAM' : cni.ipamMode ?? cni.ipam}): the pod range moves by re-registering nodes`,
  },
  sources: [
    'https://kubernetes.io/docs/reference/command-line-tools-reference/kube-controller-manager/',
    'https://docs.cilium.io/en/stable/network/concepts/ipam/kubernetes/',
  ],
};
