/**
 * Every pod path, once: a Record over POD_PATH_IDS (src/ipam/types.ts), so a new id makes the compiler ask for
 * its module here (and in src/engine/pod-paths/registry.ts). A new path is one module under src/plan/pod-paths/
 * and one line here.
 */
import { POD_PATH_IDS, type PodPathId } from '../../ipam/types.ts';
import { calicoPath } from './calico.ts';
import { ciliumMultiPoolPath } from './cilium-multi-pool.ts';
import { nodePath } from './node.ts';
import type { PodPath } from './types.ts';

export const POD_PATHS: { readonly [I in PodPathId]: PodPath<I> } = {
  calico: calicoPath,
  node: nodePath,
  'cilium-multi-pool': ciliumMultiPoolPath,
};

/** The ids `--ipam` accepts, in the registry's order. */
export const POD_PATH_NAMES: readonly PodPathId[] = POD_PATH_IDS;

/** The path of this id (a plan's spec.podCIDR.ipam). */
export function podPath(id: PodPathId): PodPath {
  return POD_PATHS[id];
}

/** Whether `s` names a pod path. */
export function isPodPathId(s: string): s is PodPathId {
  return (POD_PATH_IDS as readonly string[]).includes(s);
}

/** "a, b or c". */
export function orList(xs: readonly string[]): string {
  return xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}
