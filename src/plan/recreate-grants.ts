/**
 * How a run gets `create pods` only where it creates bare pods again (the plan's spec.podCIDR.barePodNamespaces):
 * the ClusterRole kube-renumber-recreate-pods of deploy/rbac-migrate-pods.yaml, bound by a RoleBinding in each of
 * those namespaces. A leaf of src/plan/. Pure.
 */

/** The ClusterRole granting `create pods` alone, bound by a RoleBinding in each namespace of the plan's bare pods. */
export const RECREATE_ROLE = 'kube-renumber-recreate-pods';
export const MIGRATE_SERVICE_ACCOUNT = { namespace: 'kube-system', name: 'kube-renumber-migrate' };

/**
 * The commands that grant a plan's run `create pods` where it re-creates bare pods, and nowhere else: one
 * RoleBinding of the ClusterRole kube-renumber-recreate-pods (deploy/rbac-migrate-pods.yaml) per namespace.
 */
export function recreateGrantCommands(namespaces: readonly string[]): string[] {
  const sa = `${MIGRATE_SERVICE_ACCOUNT.namespace}:${MIGRATE_SERVICE_ACCOUNT.name}`;
  return namespaces.map((ns) => `kubectl -n ${ns} create rolebinding ${RECREATE_ROLE} --clusterrole=${RECREATE_ROLE} --serviceaccount=${sa}`);
}

/** The same grants as RoleBinding objects (kubectl apply -f), in the order of `namespaces`. */
export function recreateRoleBindings(namespaces: readonly string[]): Array<Record<string, unknown>> {
  return namespaces.map((namespace) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding',
    metadata: { name: RECREATE_ROLE, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: RECREATE_ROLE },
    subjects: [{ kind: 'ServiceAccount', ...MIGRATE_SERVICE_ACCOUNT }],
  }));
}

