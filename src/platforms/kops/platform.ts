/**
 * kOps: the control plane is reconfigured through the kOps Cluster spec (plan.ts); recognised by the installer
 * signs the cluster model already weighs (src/distro/detect.ts): the Cluster spec given, the instance-group node
 * label, kops-controller.
 */
import { SUPPORTED, type Platform } from '../../platform/types.ts';

export const kops: Platform<'kops'> = {
  kind: 'kops',
  title: 'kOps',
  detect: (input) => (input.installer.kind === 'kops' ? [...input.installer.evidence] : undefined),
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  namedInPlans: true,
  sources: ['https://kops.sigs.k8s.io/networking/', 'https://kops.sigs.k8s.io/operations/updates_and_upgrades/'],
};
