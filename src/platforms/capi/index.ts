/**
 * The Cluster API platform: a workload cluster whose machines a management cluster creates from its Cluster API
 * objects; recognised by the annotations on its Nodes, and refused for both moves (platform.ts).
 */
import type { PlatformModule } from '../module.ts';
import { capi as capiPlatform } from './platform.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    capi: true;
  }
}

export const capi: PlatformModule<'capi'> = { platform: capiPlatform };
