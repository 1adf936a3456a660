/**
 * The kubeadm and kubespray platforms: recognised by the installer signs (platform.ts); kubespray drives kubeadm, so
 * both plan with the planner of the kubeadm ClusterConfiguration and static pod manifests (plan.ts).
 */
import type { PlatformModule } from '../module.ts';
import { kubeadm as kubeadmPlatform, kubespray as kubesprayPlatform } from './platform.ts';
import { kubeadm as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    kubeadm: true;
    kubespray: true;
  }
}

export const kubeadm: PlatformModule<'kubeadm'> = { platform: kubeadmPlatform, planner };
export const kubespray: PlatformModule<'kubespray'> = { platform: kubesprayPlatform, planner };
