/**
 * The kubeadm and kubespray platforms: recognised by what they leave (platform.ts, signs.ts); kubespray drives
 * kubeadm, so both plan with the planner of the kubeadm ClusterConfiguration and static pod manifests (plan.ts), and
 * inspect says when that ClusterConfiguration was not read.
 */
import type { PlatformReadinessFact } from '../../analyze/readiness.ts';
import type { PlatformModule } from '../module.ts';
import { kubeadm as kubeadmPlatform, kubespray as kubesprayPlatform } from './platform.ts';
import { kubeadm as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    kubeadm: true;
    kubespray: true;
  }
}

const readiness: PlatformReadinessFact = (snap) => (snap.kubeadm ? undefined : {
  id: 'kubeadm-config', ok: null,
  summary: 'kubeadm cluster without its ClusterConfiguration in the input (ConfigMap kube-system/kubeadm-config missing or not readable): podSubnet and serviceSubnet not read',
});

export const kubeadm: PlatformModule<'kubeadm'> = { platform: kubeadmPlatform, planner, readiness };
export const kubespray: PlatformModule<'kubespray'> = { platform: kubesprayPlatform, planner, readiness };
