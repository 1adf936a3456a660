/**
 * kubeadm and kubespray (which drives kubeadm): their control plane is reconfigured through the kubeadm
 * ClusterConfiguration and static pod manifests (kubespray: its inventory too); recognised by what they leave
 * (signs.ts). kubespray is tried first: its evidence is its own signs, then kubeadm's.
 */
import { SUPPORTED, type Platform } from '../../platform/types.ts';
import { kubeadmSigns } from './signs.ts';

export const kubespray: Platform<'kubespray'> = {
  kind: 'kubespray',
  title: 'kubespray',
  detect(input) {
    const s = kubeadmSigns(input);
    return s.kubespray.length > 0 && (s.kubeadm.length > 0 || s.kubesprayStrong) ? [...s.kubespray, ...s.kubeadm] : undefined;
  },
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  namedInPlans: true,
  sources: ['https://github.com/kubernetes-sigs/kubespray/blob/master/docs/ansible/vars.md'],
};

export const kubeadm: Platform<'kubeadm'> = {
  kind: 'kubeadm',
  title: 'kubeadm',
  detect(input) {
    const s = kubeadmSigns(input);
    return s.kubeadm.length > 0 ? s.kubeadm : undefined;
  },
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  namedInPlans: true,
  sources: ['https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-reconfigure/'],
};
