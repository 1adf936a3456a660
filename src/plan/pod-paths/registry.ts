/**
 * The pod paths' planners at run time: src/pod-paths/registry.ts lists every path once (a Record over PodPathId,
 * so a new id makes the compiler ask for its module there) and installs each path's planner here before anything
 * plans. The plan layer reaches the planners only through here.
 */
import type { PodPathId } from '../../ipam/types.ts';
import type { PodPath } from './types.ts';

const PLANNERS = new Map<PodPathId, PodPath>();
/** The ids `--ipam` accepts, in the registry's order (filled by installPodPathPlanner). */
export const POD_PATH_NAMES: readonly PodPathId[] = [];

/** Adds a path's planner (src/pod-paths/registry.ts, once per path). */
export function installPodPathPlanner(p: PodPath): void {
  if (PLANNERS.has(p.id)) throw new Error(`pod path ${p.id} is installed twice`);
  PLANNERS.set(p.id, p);
  (POD_PATH_NAMES as PodPathId[]).push(p.id);
}

/** The path of this id (a plan's spec.podCIDR.ipam). */
export function podPath<I extends PodPathId>(id: I): PodPath<I> {
  const p = PLANNERS.get(id);
  if (!p) throw new Error(PLANNERS.size === 0 ? 'no pod path is installed: call install() (src/install.ts) first' : `pod path ${id} is not installed`);
  return p as PodPath<I>;
}

/** Whether `s` names a pod path. */
export function isPodPathId(s: string): s is PodPathId {
  return PLANNERS.has(s as PodPathId);
}

/** "a, b or c". */
export function orList(xs: readonly string[]): string {
  return xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}
