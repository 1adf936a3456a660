/**
 * The planners of the platforms, installed by src/platforms/registry.ts: each platform's (by its kind), and the
 * fallback platform's for a platform whose configuration the plan does not edit itself (its gates name the flags).
 * Nothing here names a platform.
 */
import { platformKindOf, type Snapshot } from '../../cluster/types.ts';
import type { Distribution, DistributionPlanner } from './types.ts';

const BY_PLATFORM = new Map<string, DistributionPlanner>();
const BY_ID = new Map<Distribution, DistributionPlanner>();
let FALLBACK: DistributionPlanner | undefined;

/** Installs the planner of platform `kind` (undefined: it plans with the fallback's); `fallback` marks the fallback platform's. */
export function installPlanner(kind: string, planner: DistributionPlanner | undefined, fallback = false): void {
  if (BY_PLATFORM.has(kind)) throw new Error(`the planner of platform ${kind} is installed already`);
  if (fallback) {
    if (!planner || FALLBACK) throw new Error('one fallback planner, given');
    FALLBACK = planner;
  }
  if (!planner) return;
  BY_PLATFORM.set(kind, planner);
  const same = BY_ID.get(planner.id);
  if (same && same !== planner) throw new Error(`two planners with id ${planner.id}`);
  BY_ID.set(planner.id, planner);
}

function fallback(): DistributionPlanner {
  if (!FALLBACK) throw new Error('no planner installed: call install() (src/install.ts) first');
  return FALLBACK;
}

/** Every installed planner, once each, the fallback's included. */
export function planners(): DistributionPlanner[] {
  fallback();
  return [...BY_ID.values()];
}

/** The planner of platform `kind`: its own, else the fallback's. */
export function plannerOfPlatform(kind: string): DistributionPlanner {
  return BY_PLATFORM.get(kind) ?? fallback();
}

/** The planner with this id (as a plan's patches name it); the fallback's for an id no longer known. */
export function plannerById(id: Distribution): DistributionPlanner {
  return BY_ID.get(id) ?? fallback();
}

/** The id of the planner whose procedure the plan follows: the snapshot's platform's (kubespray: kubeadm's). */
export function distributionOf(snap: Snapshot): Distribution {
  return distributionPlanner(snap).id;
}

/** The planner of the snapshot's platform. */
export function distributionPlanner(snap: Pick<Snapshot, 'platform'>): DistributionPlanner {
  return plannerOfPlatform(platformKindOf(snap));
}
