/**
 * kubeadm and kubespray (which drives kubeadm): their control plane is reconfigured through the kubeadm
 * ClusterConfiguration and static pod manifests (kubespray: its inventory too); recognised by the installer signs
 * the cluster model already weighs (src/distro/detect.ts).
 */
import { SUPPORTED, type Platform, type PlatformInput } from '../../platform/types.ts';

function byDistribution(kind: string): (input: PlatformInput) => string[] | undefined {
  return (input) => (input.installer.kind === kind ? [...input.installer.evidence] : undefined);
}

export const kubespray: Platform<'kubespray'> = {
  kind: 'kubespray',
  title: 'kubespray',
  detect: byDistribution('kubespray'),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  namedInPlans: true,
  sources: ['https://github.com/kubernetes-sigs/kubespray/blob/master/docs/ansible/vars.md'],
};

export const kubeadm: Platform<'kubeadm'> = {
  kind: 'kubeadm',
  title: 'kubeadm',
  detect: byDistribution('kubeadm'),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  namedInPlans: true,
  sources: ['https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-reconfigure/'],
};
