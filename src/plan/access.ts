/**
 * What a run of a plan asks of the API server beyond the reads of inspect and plan (deploy/rbac.yaml): each verb
 * on each resource, where, and why. apply / resume / rollback / restore check every one of them with a
 * SelfSubjectAccessReview before the first write (a missing one is named, exit 5, nothing changed), and
 * test/unit/rbac.test.ts checks the shipped roles (deploy/rbac*.yaml) against this list both ways: every need is
 * granted, and no role grants a write that no plan needs. Pure.
 */
import { HELM_RELEASES_RBAC_FILE, KUBELET_CONFIGZ_RBAC_FILE, need, POD_RBAC_FILE, type AccessNeed } from './access-need.ts';
import type { MigrationPlan } from './plan.ts';
import { podPath } from './pod-paths/registry.ts';
import { RECREATE_ROLE } from './recreate-grants.ts';

export type { AccessNeed } from './access-need.ts';
export { HELM_RELEASES_RBAC_FILE, KUBELET_CONFIGZ_RBAC_FILE } from './access-need.ts';
export { MIGRATE_SERVICE_ACCOUNT, RECREATE_ROLE, recreateGrantCommands, recreateGrants, recreateGrantText, recreateNamespaces } from './recreate-grants.ts';

/** The namespace kube-renumber keeps runs' state in (engine/cluster-state.ts). */
export const STATE_NAMESPACE = 'kube-renumber';
export const LEASE_NAMESPACE = 'kube-system';
export const LEASE_NAME = 'kube-renumber';

/** What every run needs: the Lease, the run's state in the cluster, the cluster's identity. */
function runNeeds(): AccessNeed[] {
  const m = 'deploy/rbac-migrate.yaml';
  const lease = { namespace: LEASE_NAMESPACE };
  const state = { namespace: STATE_NAMESPACE };
  return [
    need('create', 'coordination.k8s.io', 'leases', m, 'take the run\'s Lease', lease),
    ...['get', 'update', 'delete'].map((v) => need(v, 'coordination.k8s.io', 'leases', m, 'hold and release the run\'s Lease', { ...lease, name: LEASE_NAME })),
    need('list', '', 'secrets', m, 'read the run\'s state kept in the cluster', state),
    need('get', '', 'secrets', m, 'check a state chunk whose create answer was lost', state),
    need('create', '', 'secrets', m, 'keep the run\'s journal and backups in the cluster', state),
    need('deletecollection', '', 'secrets', m, 'drop the state chunks a newer whole copy replaced (one request)', state),
  ];
}

function serviceNeeds(plan: MigrationPlan): AccessNeed[] {
  const m = 'deploy/rbac-migrate.yaml';
  const inPlace = (plan.spec.strategy ?? 'in-place') === 'in-place';
  return [
    need('patch', '', 'services', m, 'move a Service in place (ExternalName and back), remove a bridge\'s selector, take the pin annotations off a rolled-back LoadBalancer Service'),
    need('create', '', 'services', m, 'bridge and cover Services; recreate and --load-balancers move: the Service at its new IP'),
    need('delete', '', 'services', m, 'bridges and covers when done; recreate and --load-balancers move: the Service at its old IP'),
    ...(inPlace ? [need('patch', '', 'services', m, 'the load-balancer status of the run\'s own cover Services (node-port covers included)', { subresource: 'status' })] : []),
    need('create', 'discovery.k8s.io', 'endpointslices', m, 'copies of a moved Service\'s endpoints for its bridge'),
    need('delete', 'discovery.k8s.io', 'endpointslices', m, 'those copies when done'),
    need('create', 'networking.k8s.io', 'servicecidrs', m, 'the new range (and temporary ones)'),
    need('delete', 'networking.k8s.io', 'servicecidrs', m, 'temporary and old ranges'),
    need('list', '', 'events', m, 'the apiserver\'s events about IP allocation'),
    ...(plan.spec.serviceCIDR?.restarts ? restartNeeds(m, plan.spec.serviceCIDR.restarts.barePodNamespaces) : []),
  ];
}

/** An extension plan (spec.serviceExtension): its ServiceCIDR. */
function extensionNeeds(): AccessNeed[] {
  const m = 'deploy/rbac-migrate.yaml';
  return [
    need('create', 'networking.k8s.io', 'servicecidrs', m, 'the added range'),
    need('delete', 'networking.k8s.io', 'servicecidrs', m, 'the added range, at rollback while no Service holds an address in it'),
  ];
}

/** A pod extension plan (spec.podExtension): its IPPool, the ip-masq-agent ConfigMap, the rollback's checks and clean-up. */
function podExtensionNeeds(plan: MigrationPlan): AccessNeed[] {
  const m = POD_RBAC_FILE;
  const ext = plan.spec.podExtension!;
  return [
    need('create', 'crd.projectcalico.org', 'ippools', m, 'the added pool'),
    need('patch', 'crd.projectcalico.org', 'ippools', m, 'rollback: the added pool disabled before it is deleted'),
    need('delete', 'crd.projectcalico.org', 'ippools', m, 'rollback: the added pool, while no pod holds an address in it'),
    ...['ipamblocks', 'blockaffinities', 'ipamhandles'].map((r) => need('delete', 'crd.projectcalico.org', r, m, 'rollback: empty IPAM objects Calico left in the added range')),
    ...(ext.masquerade ? [need('patch', '', 'configmaps', m, `ip-masq-agent's nonMasqueradeCIDRs (${ext.masquerade.namespace}/${ext.masquerade.name})`, { namespace: ext.masquerade.namespace })] : []),
  ];
}

/** Step restart-workloads of a Service move (the Pod CIDR path's restart engine): rollouts, evictions, the critical Deployments' replicas. */
function restartNeeds(file: string, barePodNamespaces: string[]): AccessNeed[] {
  return [
    need('create', '', 'pods', file, 'evict Job and bare pods started before the moves (PodDisruptionBudgets respected)', { subresource: 'eviction' }),
    need('patch', '', 'pods', file, 'hand-over of pods serving a UDP Service (CoreDNS): labels taken off so that their ReplicaSet replaces them, then their Services drop them'),
    ...['deployments', 'statefulsets', 'daemonsets'].map((r) => need('patch', 'apps', r, file, 'rollout restart (and the replicas of critical Deployments)')),
    ...recreateNeeds(barePodNamespaces),
  ];
}

function podNeeds(plan: MigrationPlan): AccessNeed[] {
  const p = POD_RBAC_FILE;
  const pod = plan.spec.podCIDR!;
  return [
    need('create', '', 'pods', p, 'evict pods (PodDisruptionBudgets respected)', { subresource: 'eviction' }),
    need('delete', '', 'pods', p, 'pods left on a deleted node or started without their node\'s podCIDR'),
    need('patch', '', 'pods', p, 'hand-over of pods serving a UDP Service (CoreDNS): labels taken off so that their ReplicaSet replaces them, then their Services drop them'),
    ...recreateNeeds(pod.barePodNamespaces),
    ...['deployments', 'statefulsets', 'daemonsets'].map((r) => need('patch', 'apps', r, p, 'rollout restart (and the replicas of critical Deployments)')),
    need('patch', '', 'nodes', p, 'cordon and uncordon'),
    ...podPath(pod.ipam).access(pod),
  ];
}

/**
 * `create pods` for the bare pods created again from their backup: only in their namespaces (the plan lists them),
 * granted by the Role and RoleBinding `kube-renumber rbac PLAN` writes there (plan/recreate-grants.ts), not by a
 * file of deploy/. A plan written before the list: cluster-wide, as those runs asked (deploy/ grants it nowhere).
 */
const RECREATE_FILE = 'kube-renumber rbac PLAN';

function recreateNeeds(namespaces: string[] | undefined): AccessNeed[] {
  const why = 'bare pods created again from their backup';
  if (namespaces === undefined) return [need('create', '', 'pods', RECREATE_FILE, why)];
  return namespaces.map((namespace) => need('create', '', 'pods', RECREATE_FILE, `${why} (Role ${RECREATE_ROLE} in this namespace)`, { namespace }));
}

/** What a run needs beyond its plan: the run's flags that ask more of the API server. */
export interface RunAccessOptions {
  /** --read-kubelet-config: gate kubelet-cluster-dns reads each Ready kubelet's configz through the node proxy. */
  readKubeletConfig?: boolean;
}

/** Everything a run of `plan` (and of its flags `run`) needs beyond the read roles, in a stable order without repeats. */
export function accessNeeds(plan: MigrationPlan, run: RunAccessOptions = {}): AccessNeed[] {
  const dnsGate = (plan.steps ?? []).some((s) => s.kind === 'gate' && s.gate.condition === 'kubelet-cluster-dns');
  const configz = run.readKubeletConfig && dnsGate
    ? [need('get', '', 'nodes', KUBELET_CONFIGZ_RBAC_FILE, 'read each Ready kubelet\'s configz for gate kubelet-cluster-dns (--read-kubelet-config)', { subresource: 'proxy' })]
    : [];
  // a plan read with --read-helm-releases: its references gate lists Helm's release Secrets again
  const helm = (plan.steps ?? []).some((s) => s.kind === 'gate' && s.gate.condition === 'references' && s.gate.helmReleases === true)
    ? [need('list', '', 'secrets', HELM_RELEASES_RBAC_FILE, 'gate references reads the deployed Helm releases again (the plan was read with --read-helm-releases)')]
    : [];
  const all = [...runNeeds(), ...(plan.spec.serviceCIDR ? serviceNeeds(plan) : []), ...(plan.spec.podCIDR ? podNeeds(plan) : []),
    ...(plan.spec.serviceExtension ? extensionNeeds() : []), ...(plan.spec.podExtension ? podExtensionNeeds(plan) : []), ...configz, ...helm];
  const seen = new Set<string>();
  return all.filter((n) => {
    const k = needKey(n);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export function needKey(n: AccessNeed): string {
  return `${n.verb} ${n.resource}${n.subresource ? `/${n.subresource}` : ''}${n.group ? `.${n.group}` : ''}${n.name ? `/${n.name}` : ''}${n.namespace ? ` -n ${n.namespace}` : ''}`;
}
