/**
 * Cilium's own IPAM modes. In `kubernetes` mode Cilium takes addresses from the nodes' podCIDRs (the node owner,
 * node-podcidr.ts). In cluster-pool the operator hands each CiliumNode its podCIDRs from the cilium-config pool
 * list; multi-pool takes them from CiliumPodIPPool objects; the cloud modes (eni, azure, ...) from the cloud.
 * None has a path here yet.
 */
import type { IpamOwner } from './types.ts';

const IPAM_DOCS = 'https://docs.cilium.io/en/stable/network/concepts/ipam/';

export const ciliumClusterPool: IpamOwner<'cilium-cluster-pool'> = {
  kind: 'cilium-cluster-pool',
  title: 'Cilium cluster-pool IPAM',
  detect: (i) => (i.plugin === 'cilium' && (i.ipamMode === 'cluster-pool' || i.ipamMode === 'cluster-pool-v2beta') ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  pod: {
    supported: false,
    reason: 'Cilium cluster-pool IPAM: the cilium-operator gives each CiliumNode its podCIDRs from the cilium-config pool list, and Cilium documents '
      + 'no change of an existing cluster\'s pool (its docs advise against changing the IPAM setup of a running cluster; IPAM migration is cilium/cilium#27164)',
    instead: 'move to a new cluster, or adopt multi-pool IPAM (CiliumPodIPPool) where Cilium documents moving node groups between pools',
  },
  sources: [IPAM_DOCS, `${IPAM_DOCS}cluster-pool/`, 'https://github.com/cilium/cilium/issues/27164'],
};

export const ciliumMultiPool: IpamOwner<'cilium-multi-pool'> = {
  kind: 'cilium-multi-pool',
  title: 'Cilium multi-pool IPAM',
  detect: (i) => (i.plugin === 'cilium' && i.ipamMode === 'multi-pool' ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  pod: {
    supported: false,
    reason: 'Cilium multi-pool IPAM: pod addresses come from CiliumPodIPPool objects, and kube-renumber has no multi-pool path yet',
    instead: 'add a CiliumPodIPPool in the new range and move workloads to it as Cilium\'s multi-pool documentation describes',
  },
  sources: [IPAM_DOCS, `${IPAM_DOCS}multi-pool/`],
};

export const ciliumOther: IpamOwner<'cilium-other'> = {
  kind: 'cilium-other',
  title: 'Cilium IPAM',
  detect: (i) => (i.plugin === 'cilium' && i.ipamMode !== undefined && i.ipamMode !== 'kubernetes' ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  pod: {
    supported: false,
    reason: 'Cilium hands out pod addresses in this IPAM mode itself (cloud or CRD-backed), not from node podCIDRs or Calico pools',
    instead: 'change the address source as Cilium\'s documentation for this IPAM mode describes',
  },
  sources: [IPAM_DOCS],
};
