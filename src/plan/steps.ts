/**
 * The steps of a migration plan as types: a union by kind, so the planner states what each step carries
 * (a gate its condition, a move its Services, a step superseded by a later one which) and each executor
 * dispatches on kinds and gate conditions, never on step ids. A leaf of src/plan/: the Service and the
 * Pod planners both build these.
 */
import type { DistroPatch } from './distro-patches.ts';
import type { Tier } from './service-mapping.ts';

export type StepKind =
  | 'gate'
  | 'confirm'
  | 'create-servicecidrs'
  | 'move-services'
  | 'drain-servicecidrs'
  | 'sweep-services'
  | 'move-kubernetes'
  | 'remove-bridges'
  | 'finalize-servicecidrs'
  | 'verify'
  // Pod CIDR (pod-plan.ts)
  | 'create-ippool'
  | 'disable-ippools'
  | 'scale-critical'
  | 'restart-pods'
  | 'restore-scale'
  | 'delete-ippools'
  | 'remove-ipam-leftovers'
  | 'drain-node'
  | 'reregister-node'
  | 'assign-podcidr'
  | 'move-nodes'
  | 'verify-pods';

export const SERVICE_STEP_KINDS: readonly StepKind[] = [
  'create-servicecidrs', 'move-services', 'drain-servicecidrs', 'sweep-services', 'move-kubernetes',
  'remove-bridges', 'finalize-servicecidrs', 'verify',
];
export const POD_STEP_KINDS: readonly StepKind[] = [
  'create-ippool', 'disable-ippools', 'scale-critical', 'restart-pods', 'restore-scale', 'delete-ippools', 'remove-ipam-leftovers',
  'drain-node', 'reregister-node', 'assign-podcidr', 'move-nodes', 'verify-pods',
];
export const STEP_KINDS: readonly StepKind[] = ['gate', 'confirm', ...SERVICE_STEP_KINDS, ...POD_STEP_KINDS];
/** What `resume` checks itself at a gate of a Service CIDR migration (ServiceExecutor owns these). */
export const SERVICE_GATE_CONDITIONS = ['servicecidr-api', 'apiservers-on-new-range', 'kubelet-cluster-dns', 'workloads-restarted'] as const;
/** What `resume` checks itself at a gate of a Pod CIDR migration (PodExecutor owns these). */
export const POD_GATE_CONDITIONS = ['kcm-stop-allocating', 'pod-cidr-config', 'kcm-cluster-cidr', 'node-reregistered'] as const;
export type GateCondition = typeof SERVICE_GATE_CONDITIONS[number] | typeof POD_GATE_CONDITIONS[number];
export const GATE_CONDITIONS: readonly GateCondition[] = [...SERVICE_GATE_CONDITIONS, ...POD_GATE_CONDITIONS];

export interface StepItem {
  namespace: string;
  name: string;
  from: string[];
  to: string[];
  /** Name (same namespace) of the bridge Service that keeps `from` answering until the bridges are removed. */
  bridge?: string;
}

export interface ServiceCIDRSpec {
  name: string;
  cidrs: string[];
  /** target: NEW until the apiserver's own `kubernetes` ServiceCIDR holds it; keep: kept IPs (permanent);
   *  bridge: the old default/kubernetes IP while its bridge lives; old: a range being drained. */
  purpose: 'target' | 'keep' | 'bridge' | 'old';
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
 * remove-bridges, the temporary target ServiceCIDR by finalize-servicecidrs, the scaled-up critical
 * Deployments by restore-scale. Sets the field on every step of the list, in place.
 */
export function markSupersessions(steps: PlanStep[]): void {
  const idsOf = (kind: StepKind) => steps.filter((s) => s.kind === kind).map((s) => s.id);
  const by: Partial<Record<StepKind, string[]>> = {
    'move-services': idsOf('remove-bridges'),
    'move-kubernetes': idsOf('remove-bridges'),
    'scale-critical': idsOf('restore-scale'),
  };
  const finalize = idsOf('finalize-servicecidrs');
  for (const s of steps) {
    let later = by[s.kind] ?? [];
    if (s.kind === 'create-servicecidrs' && (s.serviceCIDRs ?? []).some((c) => c.purpose === 'target')) later = finalize;
    if (later.length > 0) s.supersededBy = later;
    else delete s.supersededBy;
  }
}
