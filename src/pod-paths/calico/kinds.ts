/**
 * The Calico path's part of the plan's types: its id, its section of spec.podCIDR, its step kinds and its gate
 * condition. The types merge into the plan's (declaration merging) and src/pod-paths/registry.ts adds the entries
 * to STEP_KINDS and GATE_CONDITION_INFO when it installs the path.
 */
import type { CalicoPoolSettings } from '../../plan/extend-spec.ts';
import type { GateConditionInfo, StepKindInfo } from '../../plan/steps.ts';

/** A Calico IPPool as the plan records it (the old pools, and the new one modelled on them). */
export type PoolData = CalicoPoolSettings;

/** spec.podCIDR.calico: whether the Tigera operator manages the pools, the pools left and the pools created. */
export interface CalicoSection {
  operatorManaged: boolean;
  oldPools: PoolData[];
  newPools: PoolData[];
}

export const CALICO_STEP_KINDS = {
  'create-ippool': { family: 'pod', path: 'calico', items: 'object' },
  'disable-ippools': { family: 'pod', path: 'calico', items: 'object' },
  'delete-ippools': { family: 'pod', path: 'calico', items: 'object' },
  'remove-ipam-leftovers': { family: 'pod', path: 'calico', items: 'object' },
} as const satisfies Record<string, StepKindInfo>;

export const CALICO_GATE_CONDITIONS = {
  'pod-cidr-config': { family: 'pod', path: 'calico' },
} as const satisfies Record<string, GateConditionInfo>;

type Kinds = typeof CALICO_STEP_KINDS;
type Conditions = typeof CALICO_GATE_CONDITIONS;

declare module '../../ipam/types.ts' {
  interface PodPathIds {
    calico: true;
  }
}

declare module '../../plan/pod-spec.ts' {
  interface PodCIDRSpec {
    calico?: CalicoSection;
  }
}

declare module '../../plan/steps.ts' {
  interface PathStepKinds extends Kinds {}
  interface PathGateConditions extends Conditions {}
}
