/**
 * The eks platform: detection, the ranges it reserves, and its refusals (platform.ts).
 */
import type { PlatformModule } from '../module.ts';
import { eks as eksPlatform } from './platform.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    eks: true;
  }
}

export const eks: PlatformModule<'eks'> = { platform: eksPlatform };
