/**
 * spec.serviceExtension of a plan (plan --extend-service-cidr): what an extension plan adds. A leaf of src/plan/: the
 * plan's type (plan.ts) and the extension planner (extend.ts) both use it.
 */

export interface ServiceExtensionSpec {
  /** Every service range the cluster has today (they all stay). */
  from: string[];
  /** NEW: one CIDR per family, added as ServiceCIDR `name`. */
  add: string[];
  /** The ServiceCIDR the plan creates. */
  name: string;
  /** networking.k8s.io version of the ServiceCIDR API. */
  apiVersion: string;
  /** --service-cluster-ip-range, which stays as it is (ServiceCIDR `kubernetes` keeps its range). */
  flag: string[];
}

/** A Calico IPPool as a plan records it: the Calico path's old and new pools (its PoolData), an extension's pool. */
export interface CalicoPoolSettings {
  name: string;
  cidr: string;
  blockSize: number;
  ipipMode?: string;
  vxlanMode?: string;
  natOutgoing?: boolean;
  nodeSelector?: string;
  allowedUses?: string[];
}

/** Copies a pool's optional settings (encapsulation, natOutgoing, nodeSelector, allowedUses) that are set onto `to`. */
export function withPoolSettings<T extends CalicoPoolSettings>(to: T, from: Omit<CalicoPoolSettings, 'name' | 'cidr' | 'blockSize'>): T {
  if (from.ipipMode !== undefined) to.ipipMode = from.ipipMode;
  if (from.vxlanMode !== undefined) to.vxlanMode = from.vxlanMode;
  if (from.natOutgoing !== undefined) to.natOutgoing = from.natOutgoing;
  if (from.nodeSelector !== undefined) to.nodeSelector = from.nodeSelector;
  if (from.allowedUses !== undefined) to.allowedUses = [...from.allowedUses];
  return to;
}

/** A Calico IPPool an extension plan creates (plan --extend-pod-cidr): the old pool's settings on the added range. */
export interface ExtensionPool extends CalicoPoolSettings {
  /** The pool whose settings it copies. */
  model: string;
}

/**
 * spec.podExtension of a plan (plan --extend-pod-cidr on Calico IPAM): a second IPPool per family next to the pools
 * the cluster has, none disabled, and the settings that must name both ranges.
 */
export interface PodExtensionSpec {
  ipam: 'calico';
  /** The enabled pools' CIDRs today (they all stay). */
  from: string[];
  /** ADD: one CIDR per family. */
  add: string[];
  /** The new pools, one per CIDR of add. */
  pools: ExtensionPool[];
  /** kube-proxy's clusterCIDR, when it must grow to hold ADD: one CIDR per family, so the envelope of old and new. */
  kubeProxy?: { from: string; to: string; configMap: boolean };
  /** ConfigMap ip-masq-agent's nonMasqueradeCIDRs, when ADD is not in it: a list, so ADD is added to it. */
  masquerade?: { namespace: string; name: string; key: string; from: string[]; to: string[] };
}
