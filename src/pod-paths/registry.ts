/**
 * Every pod path kube-renumber knows, once: a Record over PodPathId (src/ipam/types.ts), so a new id makes the
 * compiler ask for its module here. A new path is one folder under src/pod-paths/ (its kinds, planner and
 * executors; its id, spec section and kinds merged into the plan's types by `declare module`) and one line here.
 *
 * installPodPathModules() installs every path into the layers below (the planners, the executors, the step kinds and
 * gate conditions, the kinds its steps back up); src/install.ts calls it, with the platforms' installer, for the CLI,
 * the library, the benchmarks and the tests before anything reads a cluster, plans or runs. Importing this module
 * does nothing else.
 */
import { installKinds } from '../kube/kinds.ts';
import { installPodPathEngine } from '../engine/pod-paths/registry.ts';
import type { PodPathId } from '../ipam/types.ts';
import { installPodPathPlanner } from '../plan/pod-paths/registry.ts';
import { installPathKinds } from '../plan/steps.ts';
import { calico } from './calico/index.ts';
import { ciliumMultiPool } from './cilium-multi-pool/index.ts';
import type { PodPathModule } from './module.ts';
import { node } from './node/index.ts';

export type { PodPathModule } from './module.ts';

export const POD_PATH_MODULES: { readonly [I in PodPathId]: PodPathModule<I> } = {
  calico,
  node,
  'cilium-multi-pool': ciliumMultiPool,
};

let installed = false;

/** Installs every pod path into the layers below, once (a second call does nothing). */
export function installPodPathModules(): void {
  if (installed) return;
  installed = true;
  for (const m of Object.values(POD_PATH_MODULES) as PodPathModule[]) {
    installPathKinds(m.plan.id, m.stepKinds ?? {}, m.gateConditions ?? {});
    installPodPathPlanner(m.plan);
    installPodPathEngine(m.engine);
    installKinds(m.kinds);
  }
}
