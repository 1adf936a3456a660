/**
 * The gke platform: detection and its refusals (platform.ts).
 */
import type { PlatformModule } from '../module.ts';
import { gke as gkePlatform } from './platform.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    gke: true;
  }
}

export const gke: PlatformModule<'gke'> = { platform: gkePlatform };
