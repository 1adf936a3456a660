/**
 * What Cilium's own objects say, as the snapshot records it (Snapshot.cilium): read by the Cilium owner
 * (src/ipam/cilium.ts) from the cilium-config ConfigMap and the CiliumPodIPPools it declares in `reads`. Types only.
 */

/** A CiliumPodIPPool (multi-pool IPAM): its CIDRs and per-node mask size per family. */
export interface CiliumPoolInfo {
  name: string;
  /** The apiVersion it was read with, e.g. cilium.io/v2alpha1. */
  apiVersion: string;
  ipv4?: { cidrs: string[]; maskSize: number };
  ipv6?: { cidrs: string[]; maskSize: number };
}

/** What Cilium's own objects say, when it is the CNI: its cilium-config settings and its pools. */
export interface CiliumFacts {
  /** ConfigMap kube-system/cilium-config's data (string values only). */
  config: Record<string, string>;
  /** CiliumPodIPPools read (multi-pool IPAM); absent when none were in the input. */
  pools?: CiliumPoolInfo[];
}
