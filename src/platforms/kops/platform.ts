/**
 * kOps: the control plane is reconfigured through the kOps Cluster spec (plan.ts). Recognised by what kOps leaves
 * (signs.ts): the Cluster spec given, the instance-group node label, kops-controller. Its Cluster spec and
 * InstanceGroups live in the kOps state store, not in the API: they are read from files (configFiles), and the
 * InstanceGroups' maxSize is the most nodes each group may reach (nodeGroups).
 */
import { SUPPORTED, type Platform } from '../../platform/types.ts';
import { kopsSigns } from './signs.ts';
import { KOPS_GROUPS, kopsNodeGroups } from './instance-groups.ts';

export const kops: Platform<'kops'> = {
  kind: 'kops',
  title: 'kOps',
  detect: (input) => {
    const signs = kopsSigns(input);
    return signs.length > 0 ? signs : undefined;
  },
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  configFiles: { groups: KOPS_GROUPS, kinds: ['Cluster', 'InstanceGroup'], validated: ['Cluster'] },
  nodeGroups: { what: 'kOps InstanceGroups maxSize', read: kopsNodeGroups },
  namedInPlans: true,
  envelopeSetting: 'nonMasqueradeCIDR',
  sources: [
    'https://kops.sigs.k8s.io/networking/', 'https://kops.sigs.k8s.io/operations/updates_and_upgrades/',
    'https://kops.sigs.k8s.io/instance_groups/',
  ],
};
