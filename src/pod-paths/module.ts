/**
 * What one pod path is, whole: its planner (src/plan/pod-paths/types.ts PodPath), its executors
 * (src/engine/pod-paths/types.ts PodPathEngine, given PodExecutor as PodPathHosts), and the step kinds and gate
 * conditions it declares itself (merged into STEP_KINDS and GATE_CONDITION_INFO at install), and its RBAC.
 */
import type { PodPathHosts, PodPathEngine } from '../engine/pod-paths/types.ts';
import type { PodPathId } from '../ipam/types.ts';
import type { KindResource } from '../kube/resources.ts';
import type { PodPath } from '../plan/pod-paths/types.ts';
import type { PathRbac } from '../plan/rbac-manifest.ts';
import type { GateConditionInfo, StepKindInfo } from '../plan/steps.ts';

export interface PodPathModule<I extends PodPathId = PodPathId> {
  readonly plan: PodPath<I>;
  readonly engine: PodPathEngine<I, PodPathHosts>;
  /**
   * The kinds its steps change and back up besides the core's (src/kube/kinds.ts), installed into the kind table:
   * `restore` puts back what its backups hold.
   */
  readonly kinds: readonly KindResource[];
  /** Its own step kinds (each naming this path), merged into STEP_KINDS at install. */
  readonly stepKinds?: Readonly<Record<string, StepKindInfo & { readonly path: I }>>;
  /** Its own gate conditions, merged into GATE_CONDITION_INFO at install. */
  readonly gateConditions?: Readonly<Record<string, GateConditionInfo & { readonly path: I }>>;
  /** What its run writes and reads besides what every pod path does: its part of deploy/rbac-migrate-pods.yaml (npm run rbac). */
  readonly rbac: PathRbac;
}
