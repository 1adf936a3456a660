/**
 * Who hands a snapshot's pods their addresses (src/ipam/): the snapshot's record, else (a snapshot made by hand)
 * detected from its CNI fields. Shared by the readiness facts and the planners.
 */
import type { Snapshot } from '../cluster/types.ts';
import { detectIpamOwner } from '../ipam/registry.ts';
import type { IpamOwnerFacts } from '../ipam/types.ts';

export function ipamOwnerFacts(snap: Snapshot): IpamOwnerFacts | undefined {
  if (snap.cni.owner) return snap.cni.owner;
  return detectIpamOwner({
    plugin: snap.cni.plugin, ipam: snap.cni.ipam, operatorManaged: snap.cni.operatorManaged, evidence: snap.cni.evidence, daemonSets: new Set(),
    pools: snap.pools.length, nodesWithPodCIDR: snap.nodes.filter((n) => n.podCIDRs.length > 0).length,
    ...(snap.cni.ipamMode !== undefined ? { ipamMode: snap.cni.ipamMode } : {}),
  });
}
