/**
 * The kops platform: recognised by the installer signs (platform.ts); its planner edits the kOps Cluster spec (plan.ts).
 */
import type { PlatformModule } from '../module.ts';
import { kops as kopsPlatform } from './platform.ts';
import { kops as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    kops: true;
  }
}

export const kops: PlatformModule<'kops'> = { platform: kopsPlatform, planner };
