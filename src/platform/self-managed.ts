/**
 * Self-managed installers whose control plane kube-renumber reconfigures through the installer's own
 * configuration (kubeadm ClusterConfiguration and static pod manifests, the kOps Cluster spec, kubespray's
 * inventory): recognised by the distribution signs the cluster model already weighs (src/distro/detect.ts).
 */
import { SUPPORTED, type Platform, type PlatformInput } from './types.ts';

function byDistribution(kind: string): (input: PlatformInput) => string[] | undefined {
  return (input) => (input.distribution.kind === kind ? [...input.distribution.evidence] : undefined);
}

export const kops: Platform<'kops'> = {
  kind: 'kops',
  title: 'kOps',
  detect: byDistribution('kops'),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  sources: ['https://kops.sigs.k8s.io/networking/', 'https://kops.sigs.k8s.io/operations/updates_and_upgrades/'],
};

export const kubespray: Platform<'kubespray'> = {
  kind: 'kubespray',
  title: 'kubespray',
  detect: byDistribution('kubespray'),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  sources: ['https://github.com/kubernetes-sigs/kubespray/blob/master/docs/ansible/vars.md'],
};

export const kubeadm: Platform<'kubeadm'> = {
  kind: 'kubeadm',
  title: 'kubeadm',
  detect: byDistribution('kubeadm'),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  sources: ['https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-reconfigure/'],
};
