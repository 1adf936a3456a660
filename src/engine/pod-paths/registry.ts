/**
 * The pod paths' executors at run time: src/pod-paths/registry.ts lists every path once (a Record over
 * PodPathId) and installs each path's engine here. PodExecutor implements PodPathHosts, the host every path's
 * executors are given; a path whose executors need more of it than that is a compile error in the registry.
 */
import type { PodPathId } from '../../ipam/types.ts';
import { GATE_CONDITION_INFO, STEP_KINDS, type GateCondition, type GateConditionInfo, type StepKind, type StepKindInfo } from '../../plan/steps.ts';
import type { PathGateCheck, PathStepExecutor, PodPathEngine, PodPathHosts } from './types.ts';

export type { PodPathHosts } from './types.ts';

const ENGINES = new Map<PodPathId, PodPathEngine<PodPathId, PodPathHosts>>();

/** Adds a path's engine (src/pod-paths/registry.ts, once per path). */
export function installPodPathEngine<I extends PodPathId>(e: PodPathEngine<I, PodPathHosts>): void {
  if (ENGINES.has(e.id)) throw new Error(`pod path ${e.id} is installed twice`);
  ENGINES.set(e.id, e as unknown as PodPathEngine<PodPathId, PodPathHosts>);
}

/** The engine of the path of this id. */
export function podPathEngine(id: PodPathId): PodPathEngine<PodPathId, PodPathHosts> {
  const e = ENGINES.get(id);
  if (!e) throw new Error(ENGINES.size === 0 ? 'no pod path is installed: call install() (src/install.ts) first' : `pod path ${id} is not installed`);
  return e;
}

/** The executor of a step kind that belongs to a pod path, with its path; undefined for any other kind. */
export function pathStepExecutor(kind: StepKind): { path: PodPathId; run: PathStepExecutor<PodPathHosts> } | undefined {
  const info: StepKindInfo | undefined = STEP_KINDS[kind];
  if (!info?.path) return undefined;
  const run = (podPathEngine(info.path).steps as Partial<Record<StepKind, PathStepExecutor<PodPathHosts>>>)[kind];
  return run ? { path: info.path, run } : undefined;
}

/** The check of a gate condition that belongs to a pod path, with its path; undefined for any other condition. */
export function pathGateCheck(condition: GateCondition): { path: PodPathId; run: PathGateCheck<PodPathHosts> } | undefined {
  const info: GateConditionInfo | undefined = GATE_CONDITION_INFO[condition];
  if (!info?.path) return undefined;
  const run = (podPathEngine(info.path).gates as Partial<Record<GateCondition, PathGateCheck<PodPathHosts>>>)[condition];
  return run ? { path: info.path, run } : undefined;
}
