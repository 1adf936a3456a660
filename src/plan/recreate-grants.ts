/**
 * How a run gets `create pods` only where it creates bare pods again (the plan's spec.podCIDR.barePodNamespaces and
 * spec.serviceCIDR.restarts.barePodNamespaces): a Role kube-renumber-recreate-pods that grants `create pods` alone,
 * and a RoleBinding of it to the ServiceAccount kube-renumber-migrate, in each of those namespaces and nowhere else.
 * deploy/ ships no role that creates pods: `kube-renumber rbac PLAN` writes these objects for a plan (to pipe into
 * kubectl apply -f -), and the confirm step and the access check print the same as kubectl commands. A leaf of
 * src/plan/. Pure.
 */

/** The name of the Role granting `create pods` alone, and of its RoleBinding, in each namespace of the plan's bare pods. */
export const RECREATE_ROLE = 'kube-renumber-recreate-pods';
export const MIGRATE_SERVICE_ACCOUNT = { namespace: 'kube-system', name: 'kube-renumber-migrate' };
/** The Role's one rule. */
export const RECREATE_RULES = [{ apiGroups: [''], resources: ['pods'], verbs: ['create'] }];

/** The kubectl commands that make the Role and its RoleBinding in each namespace (the same objects recreateGrants gives). */
export function recreateGrantCommands(namespaces: readonly string[]): string[] {
  const sa = `${MIGRATE_SERVICE_ACCOUNT.namespace}:${MIGRATE_SERVICE_ACCOUNT.name}`;
  return namespaces.flatMap((ns) => [
    `kubectl -n ${ns} create role ${RECREATE_ROLE} --verb=create --resource=pods`,
    `kubectl -n ${ns} create rolebinding ${RECREATE_ROLE} --role=${RECREATE_ROLE} --serviceaccount=${sa}`,
  ]);
}

/** What the confirm steps and the access check say to grant create pods in these namespaces (a plan's bare pods'). */
export function recreateGrantText(namespaces: readonly string[]): string {
  return `grant create pods where the bare pods are created again, and nowhere else (a Role and a RoleBinding in each of ${namespaces.join(', ')}): `
    + `kube-renumber rbac PLAN | kubectl apply -f -, or ${recreateGrantCommands(namespaces).join('; ')}`;
}

/** The Role and its RoleBinding in each namespace (kubectl apply -f), in the order of `namespaces`. */
export function recreateGrants(namespaces: readonly string[]): Array<Record<string, unknown>> {
  return namespaces.flatMap((namespace) => [{
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role',
    metadata: { name: RECREATE_ROLE, namespace },
    rules: RECREATE_RULES.map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] })),
  }, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding',
    metadata: { name: RECREATE_ROLE, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: RECREATE_ROLE },
    subjects: [{ kind: 'ServiceAccount', ...MIGRATE_SERVICE_ACCOUNT }],
  }]);
}

/** The namespaces a plan creates bare pods again in: its Pod CIDR move's and its Service move's restarts', once each, in order. */
export function recreateNamespaces(spec: { podCIDR?: { barePodNamespaces?: string[] }; serviceCIDR?: { restarts?: { barePodNamespaces: string[] } } }): string[] {
  return [...new Set([...(spec.podCIDR?.barePodNamespaces ?? []), ...(spec.serviceCIDR?.restarts?.barePodNamespaces ?? [])])];
}
