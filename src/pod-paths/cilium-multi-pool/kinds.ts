/**
 * The Cilium multi-pool path's part of the plan's types: its id, its section of spec.podCIDR, its step kinds and
 * its gate condition. The types merge into the plan's (declaration merging) and src/pod-paths/registry.ts adds
 * the entries to STEP_KINDS and GATE_CONDITION_INFO when it installs the path.
 */
import type { GateConditionInfo, StepKindInfo } from '../../plan/steps.ts';

/** A CiliumPodIPPool's addresses: its CIDRs and per-node mask size, per family. */
export interface CiliumPoolData {
  name: string;
  ipv4?: { cidrs: string[]; maskSize: number };
  ipv6?: { cidrs: string[]; maskSize: number };
}

/** One key of ConfigMap kube-system/cilium-config: its value before and after (absent: the key is not set). */
export interface CiliumConfigChange {
  key: string;
  from?: string;
  to?: string;
}

/**
 * spec.podCIDR.cilium-multi-pool: the default pool left (`oldPool`, the one pods without a pool annotation use), the
 * pool created in NEW, and the cilium-config keys changed before the restarts (`move`: the default pool, the
 * native-routing CIDR widened) and after the old pool is gone (`final`).
 */
export interface CiliumMultiPoolSection {
  /** The CiliumPodIPPool apiVersion the cluster serves, e.g. cilium.io/v2alpha1. */
  apiVersion: string;
  oldPool: CiliumPoolData;
  newPool: CiliumPoolData;
  config: { move: CiliumConfigChange[]; final: CiliumConfigChange[] };
}

export const CILIUM_STEP_KINDS = {
  'create-ciliumpodippool': { family: 'pod', path: 'cilium-multi-pool', items: 'object', firstItem: true },
  'cilium-config-move': { family: 'pod', path: 'cilium-multi-pool', items: 'object' },
  'delete-ciliumpodippool': { family: 'pod', path: 'cilium-multi-pool', items: 'object', firstItem: true },
  'cilium-config-final': { family: 'pod', path: 'cilium-multi-pool', items: 'object' },
} as const satisfies Record<string, StepKindInfo>;

export const CILIUM_GATE_CONDITIONS = {
  'cilium-pod-cidr-config': { family: 'pod', path: 'cilium-multi-pool' },
} as const satisfies Record<string, GateConditionInfo>;

type Kinds = typeof CILIUM_STEP_KINDS;
type Conditions = typeof CILIUM_GATE_CONDITIONS;

declare module '../../ipam/types.ts' {
  interface PodPathIds {
    'cilium-multi-pool': true;
  }
}

declare module '../../plan/pod-spec.ts' {
  interface PodCIDRSpec {
    'cilium-multi-pool'?: CiliumMultiPoolSection;
  }
}

declare module '../../plan/steps.ts' {
  interface PathStepKinds extends Kinds {}
  interface PathGateConditions extends Conditions {}
}
