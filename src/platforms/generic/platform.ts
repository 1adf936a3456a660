/**
 * A self-managed cluster whose installer is not recognised: the control plane's flags are changed by hand, as the
 * plan's gates say. Last in the registry: it matches whatever no other platform claimed.
 */
import { SUPPORTED, type Platform } from '../../platform/types.ts';

export const generic: Platform<'generic'> = {
  kind: 'generic',
  title: 'self-managed (installer not recognised)',
  detect: () => ['no signs of kOps, kubeadm, kubespray, k3s, RKE2, OpenShift, EKS, GKE, AKS or Cluster API'],
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  sources: ['https://kubernetes.io/docs/tasks/network/reconfigure-default-service-ip-ranges/'],
};
