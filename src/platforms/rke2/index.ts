/**
 * The rke2 platform: detection and ranges (platform.ts) and the config.yaml patches and gates of its planner (plan.ts), with what it shares with k3s in ../k3s-family/.
 */
import type { PlatformModule } from '../module.ts';
import { rke2 as rke2Platform } from './platform.ts';
import { rke2 as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    rke2: true;
  }
}

export const rke2: PlatformModule<'rke2'> = { platform: rke2Platform, planner };
