/**
 * The aks platform: detection, the ranges it reads and reserves, and its refusals (platform.ts).
 */
import type { PlatformModule } from '../module.ts';
import { aks as aksPlatform } from './platform.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    aks: true;
  }
}

export const aks: PlatformModule<'aks'> = { platform: aksPlatform };
