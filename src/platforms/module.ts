/**
 * What one platform is, whole: how it is recognised and what it reads, reserves and allows (src/platform/types.ts
 * Platform, installed into the cluster model), and the planner of the configuration the plan edits on it
 * (src/plan/distributions/types.ts DistributionPlanner, installed into the planners' registry; absent: the
 * fallback platform's planner, whose gates name the flags to change).
 */
import type { DistributionPlanner } from '../plan/distributions/types.ts';
import type { Platform, PlatformId } from '../platform/types.ts';

export interface PlatformModule<I extends PlatformId = PlatformId> {
  readonly platform: Platform<I>;
  readonly planner?: DistributionPlanner;
}
