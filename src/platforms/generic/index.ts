/**
 * The generic platform: the fallback, last in the registry: a self-managed cluster whose installer is not recognised; its planner names the flags to change (plan.ts), and plans with it on every platform without a planner of its own.
 */
import type { PlatformModule } from '../module.ts';
import { generic as genericPlatform } from './platform.ts';
import { generic as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    generic: true;
  }
}

export const generic: PlatformModule<'generic'> = { platform: genericPlatform, planner };
