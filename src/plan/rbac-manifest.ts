/**
 * The shape of the shipped RBAC files (deploy/rbac*.yaml) and their writer: each file is a comment and a list of
 * documents, each document a comment and a Kubernetes object, each rule of a role with a comment of its own. What
 * the files hold is declared next to what needs it (plan/rbac-core.ts, plan/rbac-platforms.ts, each pod path's
 * rbac.ts); scripts/rbac.ts (`npm run rbac`) writes them and test/unit/rbac-generated.test.ts fails when the
 * committed files differ. A leaf of src/plan/. Pure.
 */

export interface RbacRule {
  /** Comment lines written above the rule. */
  comment?: readonly string[];
  apiGroups: readonly string[];
  resources: readonly string[];
  resourceNames?: readonly string[];
  verbs: readonly string[];
}

/** One document of a file: a Kubernetes object (a role's rules as RbacRule) and the comment lines above it. */
export interface RbacDoc {
  comment?: readonly string[];
  object: Record<string, unknown>;
}

export interface RbacFile {
  /** Path from the repository root, e.g. deploy/rbac.yaml. */
  path: string;
  /** Comment lines at the top (without the leading "# "). */
  header: readonly string[];
  docs: readonly RbacDoc[];
}

/** What one pod path adds to deploy/rbac-migrate-pods.yaml: its lines of the file's comment, its cluster-wide rules, its own roles. */
export interface PathRbac {
  /** Lines of the file's "What it writes and why" list (each without the leading "#   "). */
  why: readonly string[];
  /** Rules added to the ClusterRole kube-renumber-migrate-pods. */
  rules: readonly RbacRule[];
  /** Namespaced Roles and RoleBindings of its own (e.g. one ConfigMap by name). */
  docs?: readonly RbacDoc[];
}

const SA = { kind: 'ServiceAccount', namespace: 'kube-system' };

/** A role (Role with a namespace, else ClusterRole) of these rules. */
export function role(name: string, rules: readonly RbacRule[], namespace?: string): Record<string, unknown> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: namespace ? 'Role' : 'ClusterRole',
    metadata: namespace ? { name, namespace } : { name }, rules,
  };
}

/** A binding of a role to a ServiceAccount of kube-system (RoleBinding with a namespace, else ClusterRoleBinding). */
export function binding(name: string, roleKind: 'Role' | 'ClusterRole', roleName: string, account: string, namespace?: string): Record<string, unknown> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: namespace ? 'RoleBinding' : 'ClusterRoleBinding',
    metadata: namespace ? { name, namespace } : { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
    subjects: [{ kind: SA.kind, name: account, namespace: SA.namespace }],
  };
}

function scalar(v: unknown): string {
  if (v === '') return '""';
  return String(v);
}

function isScalar(v: unknown): boolean {
  return v === null || typeof v !== 'object';
}

/** A mapping in block style at `indent`; arrays of scalars in flow style ([a, b]); a rule's comment above its item. */
function block(o: Record<string, unknown>, indent: string): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || k === 'comment') continue;
    if (Array.isArray(v) && v.every(isScalar)) out.push(`${indent}${k}: [${v.map(scalar).join(', ')}]`);
    else if (Array.isArray(v)) {
      out.push(`${indent}${k}:`);
      for (const item of v as Array<Record<string, unknown>>) {
        for (const c of (item.comment as string[] | undefined) ?? []) out.push(`${indent}  # ${c}`);
        const lines = block(item, `${indent}    `);
        out.push(`${indent}  - ${lines[0]!.trimStart()}`, ...lines.slice(1));
      }
    } else if (!isScalar(v)) {
      out.push(`${indent}${k}:`, ...block(v as Record<string, unknown>, `${indent}  `));
    } else out.push(`${indent}${k}: ${scalar(v)}`);
  }
  return out;
}

const comment = (lines: readonly string[]) => lines.map((l) => (l === '' ? '#' : `# ${l}`));

/** The file's text, as committed under deploy/. */
export function renderRbacFile(f: RbacFile): string {
  const docs = f.docs.map((d, i) => [...(i === 0 ? comment(f.header) : []), ...comment(d.comment ?? []), ...block(d.object, '')].join('\n'));
  return `${docs.join('\n---\n')}\n`;
}
