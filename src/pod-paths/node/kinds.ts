/**
 * The node IPAM path's part of the plan's types: its id, its step kinds and its gate conditions. The types merge
 * into the plan's (declaration merging) and src/pod-paths/registry.ts adds the entries to STEP_KINDS and
 * GATE_CONDITION_INFO when it installs the path. Its section of spec.podCIDR (node) is in src/plan/pod-spec.ts,
 * which the planner's shared code reads too (mask sizes).
 */
import type { GateConditionInfo, StepKindInfo } from '../../plan/steps.ts';

export const NODE_STEP_KINDS = {
  'drain-node': { family: 'pod', path: 'node', items: 'object', firstItem: true, nodesOnce: true, restarts: 'nodes', oneWay: true },
  'reregister-node': { family: 'pod', path: 'node', items: 'object', firstItem: true, nodesOnce: true },
  'assign-podcidr': { family: 'pod', path: 'node', items: 'object', firstItem: true, nodesOnce: true, nodePodCIDRs: true },
  'move-nodes': { family: 'pod', path: 'node', items: 'object', firstItem: true, nodesOnce: true, nodePodCIDRs: true, restarts: 'nodes', oneWay: true },
} as const satisfies Record<string, StepKindInfo>;

export const NODE_GATE_CONDITIONS = {
  'kcm-stop-allocating': { family: 'pod', path: 'node', legacyGateId: 'kcm-stop-allocating' },
  'kcm-cluster-cidr': { family: 'pod', path: 'node', legacyGateId: 'kcm-cluster-cidr' },
  'node-reregistered': { family: 'pod', path: 'node', firstItem: true, nodesOnce: true, legacyGateId: 'reregister-node-' },
} as const satisfies Record<string, GateConditionInfo>;

type Kinds = typeof NODE_STEP_KINDS;
type Conditions = typeof NODE_GATE_CONDITIONS;

declare module '../../ipam/types.ts' {
  interface PodPathIds {
    node: true;
  }
}

/** Its gates where the platforms' patches apply (kube-controller-manager stops allocating; the pod range changes). */
declare module '../../plan/pod-spec.ts' {
  interface PathPatchGates {
    'kcm-stop-allocating': true;
    'kcm-cluster-cidr': true;
  }
}

declare module '../../plan/steps.ts' {
  interface PathStepKinds extends Kinds {}
  interface PathGateConditions extends Conditions {}
}
