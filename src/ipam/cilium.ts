/**
 * Cilium's own IPAM modes. In `kubernetes` mode Cilium takes addresses from the nodes' podCIDRs (the node owner,
 * node-podcidr.ts). In cluster-pool the operator hands each CiliumNode its podCIDRs from the cilium-config pool
 * list; multi-pool takes them from CiliumPodIPPool objects; the cloud modes (eni, azure, ...) from the cloud.
 * Neither path of kube-renumber (Calico pools, node podCIDRs) moves them, and forcing one (--ipam node, --ipam
 * calico) changes objects Cilium does not read while pods keep the addresses Cilium gave them. Sources:
 *  - cluster-pool, https://docs.cilium.io/en/stable/network/concepts/ipam/cluster-pool/ ("Expanding the cluster
 *    pool"): "Don't change any existing elements of the clusterPoolIPv4PodCIDRList list, as changes cause
 *    unexpected behavior. If the pool is exhausted, add a new element to the list instead." and "Changing
 *    clusterPoolIPv4MaskSize is also not possible."; the operator's allocator (Go module github.com/cilium/cilium
 *    v1.20.2, operator/pkg/ipam/allocator/clusterpool/clusterpool.go:44-56, podcidr/podcidr.go:402-418, 848-853,
 *    923-947) reads the list once, gives the first range with room, and keeps a node's CIDR until its CiliumNode
 *    is deleted (docs/platforms.md, "Cilium", has the whole reading and the per-node sequence it would allow)
 *  - https://docs.cilium.io/en/stable/network/concepts/ipam/ : "Don't change the IPAM mode of an existing cluster.
 *    [...] The safest path to change IPAM mode is to install a fresh Kubernetes cluster with the new IPAM
 *    configuration." (migration between modes: https://github.com/cilium/cilium/issues/27164; a cluster-pool to
 *    multi-pool migration that keeps pod addresses is documented for newer releases,
 *    https://docs.cilium.io/en/latest/network/concepts/ipam/cluster-pool-to-multi-pool/, from cilium/cilium#46104)
 *  - multi-pool, https://docs.cilium.io/en/stable/network/concepts/ipam/multi-pool/ ("Updating existing
 *    CiliumPodIPPools"): "Once you configure the CiliumPodIPPools, you cannot update the existing pool. For example,
 *    you can't change the default pool to a different CIDR [...]": the multi-pool path (cilium-multi-pool) therefore
 *    leaves the old pool as it is, creates a new one and makes it the agents' default pool (ipam-default-ip-pool).
 */
import { objectKey, type KubeObject } from '../vocabulary.ts';
import type { CiliumPoolInfo } from './cilium-facts.ts';
import type { IpamObjectFacts, IpamObjectsInput, IpamOwner, IpamRange } from './types.ts';

const IPAM_DOCS = 'https://docs.cilium.io/en/stable/network/concepts/ipam/';
const CLUSTER_POOL_DOC = `${IPAM_DOCS}cluster-pool/`;
const MULTI_POOL_DOC = `${IPAM_DOCS}multi-pool/`;
const NOT_OURS = 'neither --ipam node (node podCIDRs), --ipam calico (Calico pools) nor --ipam cilium-multi-pool (CiliumPodIPPools, multi-pool mode only) owns these addresses, so forcing one would change what Cilium does not read';

/** The versions of CiliumPodIPPool, newest first (v2alpha1 in Cilium 1.14-1.17, v2 from 1.18): the newest served is listed. */
const CILIUM_POD_IP_POOL_VERSIONS = ['v2', 'v2alpha1'] as const;

/** A CiliumPodIPPool: name, CIDRs and mask size per family, and the ranges it names; undefined when it has no name. */
function readPool(o: KubeObject, input: IpamObjectsInput, ranges: IpamRange[]): CiliumPoolInfo | undefined {
  const name = o.metadata?.name;
  if (typeof name !== 'string') return undefined;
  const out: CiliumPoolInfo = { name, apiVersion: String(o.apiVersion ?? '') };
  for (const f of ['ipv4', 'ipv6'] as const) {
    const spec = o.spec?.[f];
    if (!spec || typeof spec !== 'object') continue;
    const cidrs = (Array.isArray(spec.cidrs) ? spec.cidrs : []).map((c: unknown) => input.cidr(c, `CiliumPodIPPool/${name} spec.${f}.cidrs`)).filter((c: string | undefined): c is string => !!c);
    const maskSize = typeof spec.maskSize === 'number' ? spec.maskSize : Number(spec.maskSize);
    if (cidrs.length > 0 && Number.isInteger(maskSize)) out[f] = { cidrs, maskSize };
    for (const c of cidrs) ranges.push({ cidr: c, source: `CiliumPodIPPool/${name}`, label: `Cilium pod pool ${name}` });
  }
  return out;
}

/** Snapshot.cilium: the cilium-config data (string values) and the CiliumPodIPPools (by name, sorted); nothing when neither was read. */
function ciliumFacts(input: IpamObjectsInput): IpamObjectFacts | undefined {
  const ranges: IpamRange[] = [];
  const pools = new Map<string, CiliumPoolInfo>();
  for (const o of input.objects.get(objectKey('cilium.io', 'CiliumPodIPPool')) ?? []) {
    const p = readPool(o, input, ranges);
    if (p) pools.set(p.name, p);
  }
  const config = input.cniConfigMaps.get('cilium-config');
  if (!config && pools.size === 0) return undefined;
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(config?.data ?? {})) if (typeof v === 'string') data[k] = v;
  const sorted = [...pools.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { snapshot: { cilium: { config: data, ...(pools.size > 0 ? { pools: sorted } : {}) } }, ranges };
}

export const ciliumClusterPool: IpamOwner<'cilium-cluster-pool'> = {
  kind: 'cilium-cluster-pool',
  title: 'Cilium cluster-pool IPAM',
  detect: (i) => (i.plugin === 'cilium' && (i.ipamMode === 'cluster-pool' || i.ipamMode === 'cluster-pool-v2beta') ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  pod: {
    supported: false,
    reason: 'the cilium-operator reads clusterPoolIPv4PodCIDRList (cilium-config cluster-pool-ipv4-cidr) only when it starts, hands new nodes the first range with room, '
      + 'and keeps each node\'s pod CIDR while its CiliumNode exists (a cleared spec.ipam.podCIDRs is written back); a node moves only when its CiliumNode is deleted '
      + 'and its agent restarted with the new CIDR listed first, two changes of the list Cilium advises against '
      + `("Don't change any existing elements of the clusterPoolIPv4PodCIDRList list, as changes cause unexpected behavior", ${CLUSTER_POOL_DOC}); `
      + `kube-renumber has no such path, and ${NOT_OURS}`,
    instead: 'a new cluster with the new range, or migrating to multi-pool IPAM in place (documented from Cilium 1.20, enable-cluster-pool-to-multi-pool-migration keeps pod addresses), after which kube-renumber moves the pods through its multi-pool path (--ipam cilium-multi-pool)',
  },
  sources: [IPAM_DOCS, CLUSTER_POOL_DOC, 'https://github.com/cilium/cilium/issues/27164', 'https://docs.cilium.io/en/latest/network/concepts/ipam/cluster-pool-to-multi-pool/'],
};

export const ciliumMultiPool: IpamOwner<'cilium-multi-pool'> = {
  kind: 'cilium-multi-pool',
  title: 'Cilium multi-pool IPAM',
  detect: (i) => (i.plugin === 'cilium' && i.ipamMode === 'multi-pool' ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  // a new CiliumPodIPPool in NEW made the default pool, workloads restarted, the old pool deleted once no node
  // lists it (src/pod-paths/cilium-multi-pool/plan.ts; docs/platforms.md, "Cilium")
  pod: {
    supported: true,
    path: 'cilium-multi-pool',
    describe: () => 'pods get IPs from Cilium multi-pool IPAM (CiliumPodIPPools): the pod range moves by a new pool made the default and the workloads restarted',
  },
  reads: CILIUM_POD_IP_POOL_VERSIONS.map((version) => ({ group: 'cilium.io', version, plural: 'ciliumpodippools', kind: 'CiliumPodIPPool', namespaced: false })),
  facts: ciliumFacts,
  sources: [IPAM_DOCS, MULTI_POOL_DOC],
};

export const ciliumOther: IpamOwner<'cilium-other'> = {
  kind: 'cilium-other',
  title: 'Cilium IPAM',
  detect: (i) => (i.plugin === 'cilium' && i.ipamMode !== undefined && i.ipamMode !== 'kubernetes' ? [...i.evidence, `cilium-config ipam ${i.ipamMode}`] : undefined),
  pod: {
    supported: false,
    reason: `Cilium gives pods their addresses itself in this IPAM mode (CiliumNode objects or the cloud provider), not from node podCIDRs or Calico pools; kube-renumber has no path for it, and ${NOT_OURS}`,
    instead: 'change the address source as Cilium\'s documentation for this IPAM mode describes',
  },
  sources: [IPAM_DOCS],
};
