/**
 * The openshift platform: detection, the ranges of its Network config, the ranges OVN-Kubernetes reserves, and its refusals (platform.ts).
 */
import type { PlatformModule } from '../module.ts';
import { openshift as openshiftPlatform } from './platform.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    openshift: true;
  }
}

export const openshift: PlatformModule<'openshift'> = { platform: openshiftPlatform };
