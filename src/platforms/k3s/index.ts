/**
 * The k3s platform: detection and ranges (platform.ts) and the config.yaml patches and gates of its planner (plan.ts), with what it shares with RKE2 in ../k3s-family/.
 */
import type { PlatformModule } from '../module.ts';
import { k3s as k3sPlatform } from './platform.ts';
import { k3s as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    k3s: true;
  }
}

export const k3s: PlatformModule<'k3s'> = { platform: k3sPlatform, planner };
