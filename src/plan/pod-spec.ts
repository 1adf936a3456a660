/**
 * The Pod CIDR part of a migration plan as data (spec.podCIDR): what pod-plan.ts writes, the pod step lists
 * are built from, and the engine executes. A leaf of src/plan/.
 */
import type { PodPathId } from '../ipam/types.ts';

/** The pod path of the plan (src/plan/pod-paths/): who hands out pod addresses decides it. */
export type PodIpam = PodPathId;

/**
 * spec.podCIDR. Each pod path has its section under its id (node below; a path in a folder of its own,
 * src/pod-paths/<id>/, adds its section here by declaration merging).
 */
export interface PodCIDRSpec {
  /** The pod ranges the migration leaves (pools or cluster CIDRs of NEW's families). */
  from: string[];
  /** NEW. */
  to: string[];
  ipam: PodIpam;
  node?: {
    /**
     * The node podCIDR size per family of `to` (kube-controller-manager's --node-cidr-mask-size-ipv4/-ipv6).
     * Plans written before dual-stack named one `maskSize`; planFromYaml reads that as the size of to's one family.
     */
    maskSizes: NodeMaskSizes;
    hook?: string;
    /**
     * How many nodes may be drained at once (`--max-unavailable`): a whole number, or a percentage of the nodes
     * ("10%", rounded down, at least one). Absent (plans written before waves): one node at a time.
     */
    maxUnavailable?: number | string;
    /**
     * Each node's podCIDRs today (`from`) and in NEW (`to`: one per family of spec.podCIDR.to, in its order), and
     * its zone (label topology.kubernetes.io/zone) when it has one: the waves spread across zones.
     */
    nodes: Array<{ name: string; from: string[]; to: string[]; zone?: string }>;
  };
  restarts: { parallel: number; critical: string[] };
  /**
   * The namespaces of the bare pods (no controller) the run deletes and creates again from their backup, sorted.
   * The run asks `create pods` only there (plan/access.ts), so the ServiceAccount needs no cluster-wide pods
   * create: a Role kube-renumber-recreate-pods and its RoleBinding in each of them (kube-renumber rbac PLAN).
   * Absent (plans written before): the run asks `create pods` cluster-wide.
   */
  barePodNamespaces?: string[];
}

/** A node podCIDR size per family (only the families of spec.podCIDR.to). */
export interface NodeMaskSizes {
  ipv4?: number;
  ipv6?: number;
}

/** The key of a family in NodeMaskSizes. */
export function maskKey(family: 4 | 6): 'ipv4' | 'ipv6' {
  return family === 4 ? 'ipv4' : 'ipv6';
}

/** The gates whose distribution patches a Pod CIDR migration writes. */
export type PodPatchGate = 'kcm-stop-allocating' | 'kcm-cluster-cidr' | 'pod-cidr-config';
