/**
 * Every pod path's executors, once: a Record over POD_PATH_IDS (src/ipam/types.ts), so a new id makes the
 * compiler ask for its module here (as src/plan/pod-paths/registry.ts does for its planner). A new path is one
 * module under src/engine/pod-paths/ and one line here; PodExecutor implements every path's host (PodPathHosts),
 * so a path that needs more of it names what is missing there.
 */
import type { PodPathId } from '../../ipam/types.ts';
import { GATE_CONDITION_INFO, STEP_KINDS, type GateCondition, type GateConditionInfo, type StepKind, type StepKindInfo } from '../../plan/steps.ts';
import { calicoEngine } from './calico.ts';
import { ciliumMultiPoolEngine } from './cilium-multi-pool.ts';
import { nodeEngine } from './node.ts';
import type { PathGateCheck, PathStepExecutor, PodPathEngine } from './types.ts';

export const POD_PATH_ENGINES = {
  calico: calicoEngine,
  node: nodeEngine,
  'cilium-multi-pool': ciliumMultiPoolEngine,
} as const satisfies { readonly [I in PodPathId]: PodPathEngine<I, any> };

type Engines = typeof POD_PATH_ENGINES;
type HostOf<E> = E extends { endState(host: infer H, ...rest: never[]): unknown } ? H : never;
type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** Everything the paths' executors use of PodExecutor (the intersection of their hosts). */
export type PodPathHosts = Intersection<HostOf<Engines[PodPathId]>>;

/** The executor of a step kind that belongs to a pod path, with its path; undefined for any other kind. */
export function pathStepExecutor(kind: StepKind): { path: PodPathId; run: PathStepExecutor<PodPathHosts> } | undefined {
  const info: StepKindInfo | undefined = STEP_KINDS[kind];
  if (!info?.path) return undefined;
  const run = (POD_PATH_ENGINES[info.path].steps as Partial<Record<StepKind, PathStepExecutor<PodPathHosts>>>)[kind];
  return run ? { path: info.path, run } : undefined;
}

/** The check of a gate condition that belongs to a pod path, with its path; undefined for any other condition. */
export function pathGateCheck(condition: GateCondition): { path: PodPathId; run: PathGateCheck<PodPathHosts> } | undefined {
  const info: GateConditionInfo | undefined = GATE_CONDITION_INFO[condition];
  if (!info?.path) return undefined;
  const run = (POD_PATH_ENGINES[info.path].gates as Partial<Record<GateCondition, PathGateCheck<PodPathHosts>>>)[condition];
  return run ? { path: info.path, run } : undefined;
}
