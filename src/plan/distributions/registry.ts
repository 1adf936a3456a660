/**
 * Every distribution whose configuration a plan edits. A new one is one module under src/plan/distributions/,
 * its id in DISTRIBUTION_IDS (types.ts) and one line here; the Record makes the compiler name a missing one.
 */
import type { Snapshot } from '../../cluster/types.ts';
import { generic } from './generic.ts';
import { k3s } from './k3s.ts';
import { kops } from './kops.ts';
import { kubeadm } from './kubeadm.ts';
import { rke2 } from './rke2.ts';
import { DISTRIBUTION_IDS, type Distribution, type DistributionPlanner } from './types.ts';

export const DISTRIBUTIONS: Record<Distribution, DistributionPlanner> = {
  kops,
  rke2,
  kubeadm,
  k3s,
  generic,
};

/** The distribution family whose procedure the plan follows: kubespray is kubeadm underneath. */
export function distributionOf(snap: Snapshot): Distribution {
  return DISTRIBUTION_IDS.find((d) => DISTRIBUTIONS[d].matches(snap)) ?? 'generic';
}

/** The planner of the snapshot's distribution. */
export function distributionPlanner(snap: Snapshot): DistributionPlanner {
  return DISTRIBUTIONS[distributionOf(snap)];
}
