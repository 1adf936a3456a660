/**
 * The steps of a migration plan as types: a union by kind, so the planner states what each step carries
 * (a gate its condition, a move its Services, a step superseded by a later one which) and each executor
 * dispatches on kinds and gate conditions, never on step ids. A leaf of src/plan/: the Service and the
 * Pod planners both build these.
 */
import type { DistroPatch } from './distro-patches.ts';
import type { Tier } from './service-mapping.ts';
import type { PodPathId } from '../ipam/types.ts';

/**
 * Who runs a step kind: the runner itself (gates, confirmations), the Service executor, the Pod executor, or the
 * extension executor (a plan that only adds room: src/plan/extend.ts, src/engine/service/extension.ts), or the pod
 * extension executor (a Calico pool added next to the pod range: src/plan/extend-pod.ts, src/engine/pod-extension.ts).
 */
export type StepFamily = 'control' | 'service' | 'pod' | 'extend' | 'extend-pod';

/** What a step kind is: one entry of STEP_KINDS. */
export interface StepKindInfo {
  readonly family: StepFamily;
  /**
   * Pod kinds: the pod path whose steps these are (its executor lives in src/engine/pod-paths/<path>.ts); absent:
   * a step any pod path uses (PodExecutor runs it).
   */
  readonly path?: PodPathId;
  /**
   * What the step's items name: `service` a Service (namespace and name required, the name a DNS label),
   * `deployment` a Deployment (namespace/name), `object` anything else (cluster-scoped: the namespace may be empty).
   */
  readonly items: 'service' | 'deployment' | 'object';
  /** The step names what it works on in its first item (a plan without one is refused). */
  readonly firstItem?: boolean;
  /** The items name nodes, each at most once (a wave of node moves). */
  readonly nodesOnce?: boolean;
  /** Each item's `to` is the podCIDRs patched onto a node: one per family of spec.podCIDR.to, inside it. */
  readonly nodePodCIDRs?: boolean;
  /**
   * What the step restarts, for the plan's summary (./summary.ts): `workloads` every workload with a pod in the
   * moved range, `nodes` the nodes its items name (drained, deleted, registered again).
   */
  readonly restarts?: 'workloads' | 'nodes';
  /** A rollback cannot put back what this step changes as it was (restarted pods, a deleted ServiceCIDR or Node). */
  readonly oneWay?: boolean;
}

/**
 * Every step kind, once: the union StepKind, the validator (src/plan/render.ts) and the executors' exhaustive
 * tables (src/engine/service-steps.ts, src/engine/pod-steps.ts, src/engine/pod-paths/) all come from here, so a
 * new kind is one line here and the compiler names the executor it needs. A pod path in a folder of its own
 * (src/pod-paths/<id>/) declares its kinds there: their types merge into PathStepKinds, their entries into
 * STEP_KINDS when src/pod-paths/registry.ts installs the path.
 */
const CORE_STEP_KINDS = {
  gate: { family: 'control', items: 'object' },
  confirm: { family: 'control', items: 'object' },
  // Service CIDR (plan.ts)
  'create-servicecidrs': { family: 'service', items: 'object' },
  'move-services': { family: 'service', items: 'service' },
  // LoadBalancer Services re-created in NEW with their external address pinned (--load-balancers move; load-balancers.ts)
  'move-load-balancers': { family: 'service', items: 'service', firstItem: true },
  'drain-servicecidrs': { family: 'service', items: 'object', oneWay: true },
  'sweep-services': { family: 'service', items: 'service' },
  'move-kubernetes': { family: 'service', items: 'service', firstItem: true },
  'remove-bridges': { family: 'service', items: 'service' },
  'finalize-servicecidrs': { family: 'service', items: 'object' },
  // the kept ServiceCIDRs in the old range deleted at the end: they keep their addresses and give out no new ones
  'retire-servicecidrs': { family: 'service', items: 'object' },
  'restart-workloads': { family: 'service', items: 'object', restarts: 'workloads', oneWay: true },
  verify: { family: 'service', items: 'object' },
  // Service range extended by a second ServiceCIDR, nothing moved (extend.ts)
  'extend-servicecidr': { family: 'extend', items: 'object' },
  'verify-extension': { family: 'extend', items: 'object' },
  // pod range extended by a second Calico IPPool, nothing moved (extend-pod.ts)
  'extend-masquerade': { family: 'extend-pod', items: 'object' },
  'extend-ippool': { family: 'extend-pod', items: 'object' },
  'verify-pod-extension': { family: 'extend-pod', items: 'object' },
  // Pod CIDR (pod-plan.ts, pod-paths/)
  'scale-critical': { family: 'pod', items: 'deployment' },
  'restart-pods': { family: 'pod', items: 'object', restarts: 'workloads', oneWay: true },
  'restore-scale': { family: 'pod', items: 'deployment' },
  'verify-pods': { family: 'pod', items: 'object' },
} as const satisfies Record<string, StepKindInfo>;

/** The step kinds of the pod paths in folders of their own (src/pod-paths/<id>/), merged in by `declare module`. */
export interface PathStepKinds {}
type StepKindTable = typeof CORE_STEP_KINDS & PathStepKinds;
export type StepKind = keyof StepKindTable & string;
/** Every step kind: the core's, and those of the paths installed (installPathKinds). */
export const STEP_KINDS: { readonly [K in StepKind]: StepKindTable[K] } = {} as StepKindTable;

/** What a gate condition is: one entry of GATE_CONDITION_INFO. */
export interface GateConditionInfo {
  /** control: the plan executor checks it, whichever migrations the plan holds. */
  readonly family: StepFamily;
  /** Pod conditions: the pod path whose gates check it (src/engine/pod-paths/<path>.ts). */
  readonly path?: PodPathId;
  /** The gate names what it waits for in its first item. */
  readonly firstItem?: boolean;
  /** The items name nodes, each at most once. */
  readonly nodesOnce?: boolean;
  /**
   * In a plan written before gates named their conditions, the id of a gate with this condition (ending in "-": the
   * start of the ids, one gate per item).
   */
  readonly legacyGateId?: string;
}

/** Every condition `resume` checks itself at a gate, and whose executor checks it (paths in folders: as STEP_KINDS). */
const CORE_GATE_CONDITIONS = {
  'servicecidr-api': { family: 'service' },
  'apiservers-on-new-range': { family: 'service' },
  'kubelet-cluster-dns': { family: 'service' },
  'workloads-restarted': { family: 'service' },
  'load-balancer-address': { family: 'service', firstItem: true },
  // no error-severity reference is left (src/plan/references-gate.ts; src/engine/references-gate.ts checks it)
  references: { family: 'control' },
  // an extension plan on 1.29–1.32 with the ServiceCIDR API off: as servicecidr-api, for the extension executor
  'extension-servicecidr-api': { family: 'extend' },
  // a pod extension plan whose kube-proxy clusterCIDR must grow to hold the added range (read when kube-proxy starts)
  'extension-kube-proxy': { family: 'extend-pod' },
} as const satisfies Record<string, GateConditionInfo>;

/** The gate conditions of the pod paths in folders of their own, merged in by `declare module`. */
export interface PathGateConditions {}
type GateConditionTable = typeof CORE_GATE_CONDITIONS & PathGateConditions;
export type GateCondition = keyof GateConditionTable & string;
export const GATE_CONDITION_INFO: { readonly [C in GateCondition]: GateConditionTable[C] } = {} as GateConditionTable;

type Info<K extends StepKind> = StepKindTable[K];
type KindsWhere<F> = { [K in StepKind]: Info<K> extends F ? K : never }[StepKind];
type ConditionsWhere<F> = { [C in GateCondition]: GateConditionTable[C] extends F ? C : never }[GateCondition];

/** The action kinds the Service executor runs. */
export type ServiceActionKind = KindsWhere<{ family: 'service' }>;
/** The pod kinds of one pod path (its engine module has one executor for each). */
export type PathStepKind<P extends PodPathId> = KindsWhere<{ path: P }>;
/** The pod kinds every pod path uses (PodExecutor runs them). */
export type SharedPodStepKind = Exclude<KindsWhere<{ family: 'pod' }>, KindsWhere<{ path: PodPathId }>>;
/** The action kinds the extension executor runs. */
export type ExtendActionKind = KindsWhere<{ family: 'extend' }>;
/** The gate conditions the extension executor checks. */
export type ExtendGateCondition = ConditionsWhere<{ family: 'extend' }>;
/** The action kinds the pod extension executor runs. */
export type ExtendPodActionKind = KindsWhere<{ family: 'extend-pod' }>;
/** The gate conditions the pod extension executor checks. */
export type ExtendPodGateCondition = ConditionsWhere<{ family: 'extend-pod' }>;
/** The gate conditions the Service executor checks. */
export type ServiceGateCondition = ConditionsWhere<{ family: 'service' }>;
/** The gate conditions the plan executor checks, whichever migrations the plan holds. */
export type ControlGateCondition = ConditionsWhere<{ family: 'control' }>;
/** The gate conditions one pod path checks. */
export type PathGateCondition<P extends PodPathId> = ConditionsWhere<{ path: P }>;

// The lists below are filled in the tables' order and grow when a path's kinds are installed.
export const SERVICE_STEP_KINDS: readonly StepKind[] = [];
export const POD_STEP_KINDS: readonly StepKind[] = [];
/** Every step kind, in the table's order. */
export const STEP_KIND_NAMES: readonly StepKind[] = [];
/** What `resume` checks itself at a gate of a Service CIDR migration (ServiceExecutor owns these). */
export const SERVICE_GATE_CONDITIONS: readonly GateCondition[] = [];
/** What `resume` checks itself at a gate of a Pod CIDR migration (PodExecutor and the pod paths own these). */
export const POD_GATE_CONDITIONS: readonly GateCondition[] = [];
export const GATE_CONDITIONS: readonly GateCondition[] = [];

function addKinds(kinds: Readonly<Record<string, StepKindInfo>>, conditions: Readonly<Record<string, GateConditionInfo>>): void {
  for (const [k, info] of Object.entries(kinds)) {
    (STEP_KINDS as Record<string, StepKindInfo>)[k] = info;
    (STEP_KIND_NAMES as string[]).push(k);
    if (info.family === 'service') (SERVICE_STEP_KINDS as string[]).push(k);
    if (info.family === 'pod') (POD_STEP_KINDS as string[]).push(k);
  }
  for (const [c, info] of Object.entries(conditions)) {
    (GATE_CONDITION_INFO as Record<string, GateConditionInfo>)[c] = info;
    (GATE_CONDITIONS as string[]).push(c);
    if (info.family === 'service') (SERVICE_GATE_CONDITIONS as string[]).push(c);
    if (info.family === 'pod') (POD_GATE_CONDITIONS as string[]).push(c);
  }
}
addKinds(CORE_STEP_KINDS, CORE_GATE_CONDITIONS);

/**
 * Adds a pod path's own step kinds and gate conditions (src/pod-paths/registry.ts, once per path): each must
 * name that path; a kind already known is refused.
 */
export function installPathKinds(path: PodPathId, kinds: Readonly<Record<string, StepKindInfo>>, conditions: Readonly<Record<string, GateConditionInfo>>): void {
  for (const [k, info] of [...Object.entries(kinds), ...Object.entries(conditions)]) {
    if (info.path !== path) throw new Error(`${k}: a kind of pod path ${path} must name it as its path`);
    if (Object.hasOwn(STEP_KINDS, k) || Object.hasOwn(GATE_CONDITION_INFO, k)) throw new Error(`${k} is already a step kind or gate condition`);
  }
  addKinds(kinds, conditions);
}

/** The pod path a step kind belongs to (undefined: not a pod kind, or one every pod path uses). */
export function stepKindPath(kind: StepKind): PodPathId | undefined {
  const info: StepKindInfo = STEP_KINDS[kind];
  return info.path;
}

export interface StepItem {
  namespace: string;
  name: string;
  from: string[];
  to: string[];
  /** Name (same namespace) of the bridge Service that keeps `from` answering until the bridges are removed. */
  bridge?: string;
  /** A LoadBalancer Service re-created in NEW (step move-load-balancers, gate load-balancer-address): its external address. */
  loadBalancer?: LoadBalancerItem;
}

/** What a re-created LoadBalancer Service keeps of its external address (src/plan/load-balancers.ts decides). */
export interface LoadBalancerItem {
  /** Who keeps the address across the re-creation (`none`: nobody, it changes). */
  keeper: string;
  /** The external addresses (IPs, hostnames) the re-created Service has again: checked after the move. */
  kept: string[];
  /** Those that change. */
  changes: string[];
  /** Annotations the re-created Service gets so its address comes back. */
  pin?: Record<string, string>;
  /** DNS names external-dns publishes for it. */
  dnsNames?: string[];
}

export interface ServiceCIDRSpec {
  name: string;
  cidrs: string[];
  /** target: NEW until the apiserver's own `kubernetes` ServiceCIDR holds it; keep: kept IPs (permanent);
   *  bridge: the old default/kubernetes IP while its bridge lives; old: a range being drained;
   *  extend: a range added next to the old one for good (an extension plan). */
  purpose: 'target' | 'keep' | 'bridge' | 'old' | 'extend';
}

/** Why a confirm step stops and what a person looks at before saying yes. */
export interface Pause {
  reason: string;
  instructions: string[];
  /** What `resume` verifies itself before continuing (for a confirm step: nothing, a person decides). */
  check: string;
  patches?: DistroPatch[];
}

export interface Gate extends Pause {
  /** The condition the executor checks at `resume` (the executor dispatches on this, never on the step id). */
  condition: GateCondition;
  /**
   * Gate references of a plan read with --read-helm-releases: its check lists Helm's release Secrets again (and
   * the run needs deploy/rbac-helm-releases.yaml). Absent: it reads what the read role grants.
   */
  helmReleases?: true;
}

interface StepBase {
  id: string;
  description: string;
  tier?: Tier;
  items?: StepItem[];
  serviceCIDRs?: ServiceCIDRSpec[];
  /**
   * Later steps (ids) that undo part of this step's effect on purpose (a bridge removed, a temporary
   * ServiceCIDR deleted, scaled Deployments restored): once a run reached one of them, this step counts as done.
   */
  supersededBy?: string[];
  /** How to undo the step, or why it cannot be undone. */
  rollback: string;
}

/** Stops the run until its condition holds (a person or pipeline acts outside the API). */
export interface GateStep extends StepBase { kind: 'gate'; gate: Gate }
/** Stops the run until a person confirms (or --yes). */
export interface ConfirmStep extends StepBase { kind: 'confirm'; gate: Pause }
export type ActionKind = Exclude<StepKind, 'gate' | 'confirm'>;
/** Changes the cluster through the API. */
export interface ActionStep extends StepBase { kind: ActionKind; gate?: undefined }
/** One step of a plan: a union by kind, so each executor gets the fields its kind carries. */
export type PlanStep = GateStep | ConfirmStep | ActionStep;

/**
 * Which later steps supersede which (see StepBase.supersededBy): moved Services and default/kubernetes by
 * remove-bridges, the temporary target ServiceCIDR by finalize-servicecidrs, the kept ServiceCIDRs by
 * retire-servicecidrs, the scaled-up critical Deployments by restore-scale. Sets the field on every step of the
 * list, in place.
 */
export function markSupersessions(steps: PlanStep[]): void {
  const idsOf = (kind: StepKind) => steps.filter((s) => s.kind === kind).map((s) => s.id);
  const by: Partial<Record<StepKind, string[]>> = {
    'move-services': idsOf('remove-bridges'),
    'move-load-balancers': idsOf('remove-bridges'),
    'move-kubernetes': idsOf('remove-bridges'),
    'scale-critical': idsOf('restore-scale'),
  };
  const finalize = idsOf('finalize-servicecidrs');
  const retire = idsOf('retire-servicecidrs');
  for (const s of steps) {
    let later = by[s.kind] ?? [];
    if (s.kind === 'create-servicecidrs' && (s.serviceCIDRs ?? []).some((c) => c.purpose === 'target')) later = finalize;
    else if (s.kind === 'create-servicecidrs' && (s.serviceCIDRs ?? []).some((c) => c.purpose === 'keep')) later = retire;
    if (later.length > 0) s.supersededBy = later;
    else delete s.supersededBy;
  }
}
