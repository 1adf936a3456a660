/**
 * The Pod CIDR part of a migration plan as data (spec.podCIDR): what pod-plan.ts writes, the pod step lists
 * are built from, and the engine executes. A leaf of src/plan/.
 */

export type PodIpam = 'calico' | 'node';

export interface PoolData {
  name: string;
  cidr: string;
  blockSize: number;
  ipipMode?: string;
  vxlanMode?: string;
  natOutgoing?: boolean;
  nodeSelector?: string;
  allowedUses?: string[];
}

export interface PodCIDRSpec {
  /** The pod ranges the migration leaves (pools or cluster CIDRs of NEW's families). */
  from: string[];
  /** NEW. */
  to: string[];
  ipam: PodIpam;
  calico?: { operatorManaged: boolean; oldPools: PoolData[]; newPools: PoolData[] };
  node?: { maskSize: number; hook?: string; nodes: Array<{ name: string; from: string[]; to: string[] }> };
  restarts: { parallel: number; critical: string[] };
}

/** The gates whose distribution patches a Pod CIDR migration writes. */
export type PodPatchGate = 'kcm-stop-allocating' | 'kcm-cluster-cidr' | 'pod-cidr-config';
