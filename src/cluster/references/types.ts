/**
 * One source of the references scan (src/analyze/references.ts): which objects it reads, what the live read lists
 * for it, and the ReferenceSource records one object holds. Every source is one file in this folder and one line of
 * ./registry.ts. Pure.
 */
import type { ApiResource } from '../../vocabulary.ts';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { slimReferenceConfig } from './slim.ts';

/** A list the live read makes for a source (when the server serves it), and what it may leave of each object. */
export interface ReferenceList extends ApiResource {
  /** Sent with the LIST: only the objects the source reads. */
  fieldSelector?: string;
  labelSelector?: string;
  /** Objects per page, when the objects may be large (default: the client's). */
  pageSize?: number;
  /**
   * Listed only when the user asks for it (`plan --read-helm-releases`): what it lists needs more than the read
   * role grants, so the read role leaves it out and an opt-in RBAC file grants it (src/plan/rbac-core.ts).
   */
  optIn?: ReferenceOptIn;
  /** What is kept of each object listed (the rest is dropped at once). */
  slim?: (o: KubeObject) => KubeObject;
}

/** The sources read only when asked for: Helm's release Secrets (listing Secrets in every namespace). */
export type ReferenceOptIn = 'helm-releases';

export interface ReferenceSourceModule {
  /** What the live read lists for this source; the RBAC read role grants get and list on each. */
  readonly lists: readonly ReferenceList[];
  /** The places in `o` that name addresses, for this source (none when `o` is not what it reads). */
  read(o: KubeObject): ReferenceSource[];
  /** Once every object was read: this source's records, settled against each other (GitOps: Services and Applications). */
  resolve?(sources: ReferenceSource[]): ReferenceSource[];
}

/** kind, apiVersion, namespace and name of a ReferenceSource, from its object. */
export function sourceBase(o: KubeObject): Pick<ReferenceSource, 'kind' | 'apiVersion' | 'namespace' | 'name'> {
  const b: Pick<ReferenceSource, 'kind' | 'apiVersion' | 'namespace' | 'name'> = {
    kind: o.kind ?? '', apiVersion: typeof o.apiVersion === 'string' ? o.apiVersion : '', name: o.metadata?.name ?? '',
  };
  if (typeof o.metadata?.namespace === 'string' && o.metadata.namespace !== '') b.namespace = o.metadata.namespace;
  return b;
}

/** The workload kinds whose pod template is read, and a pod without a controller (a bare pod: its own spec). */
const TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

/**
 * The pod template of a Deployment, StatefulSet or DaemonSet (apps/v1), or a bare pod itself, with the path of its
 * spec; undefined for anything else (a pod its controller owns is read through that controller).
 */
export function podTemplateOf(o: KubeObject): { at: string; metadata: Record<string, any>; spec: Record<string, any> } | undefined {
  const av = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  if (TEMPLATE_KINDS.has(o.kind ?? '') && av.startsWith('apps/')) {
    const t = o.spec?.template;
    return t && typeof t === 'object' ? { at: 'spec.template', metadata: t.metadata ?? {}, spec: t.spec ?? {} } : undefined;
  }
  if (o.kind === 'Pod' && av === 'v1' && !(o.metadata?.ownerReferences ?? []).some((r: any) => r?.controller)) {
    return { at: '', metadata: o.metadata ?? {}, spec: o.spec ?? {} };
  }
  return undefined;
}

/** `at` joined to a field: "spec.template" + "spec.x" → "spec.template.spec.x"; "" + "spec.x" → "spec.x". */
export function under(at: string, field: string): string {
  return at === '' ? field : `${at}.${field}`;
}

/**
 * What the workload sources read of a Deployment, StatefulSet, DaemonSet or bare pod: metadata without
 * managedFields and kubectl's copy, the template's annotations, and of each container only command, args and env
 * values (never valueFrom), and hostAliases.
 */
export function slimWorkload(o: KubeObject): KubeObject {
  const md = slimReferenceConfig(o).metadata ?? {};
  const t = podTemplateOf(o);
  const spec = t?.spec ?? {};
  const containers = (list: unknown) => (Array.isArray(list) ? list : []).map((c: any) => ({
    name: c?.name, command: c?.command, args: c?.args,
    env: Array.isArray(c?.env) ? c.env.filter((e: any) => typeof e?.value === 'string').map((e: any) => ({ name: e.name, value: e.value })) : undefined,
  }));
  const podSpec = { containers: containers(spec.containers), initContainers: containers(spec.initContainers), hostAliases: spec.hostAliases };
  if (o.kind === 'Pod') return { apiVersion: o.apiVersion, kind: o.kind, metadata: md, spec: podSpec };
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: md, spec: { template: { metadata: { annotations: t?.metadata.annotations }, spec: podSpec } } };
}

export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
