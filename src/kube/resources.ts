/**
 * Typed paths and small verbs over KubeClient for the objects migrations touch. Every write carries the
 * resourceVersion it was derived from (a concurrent edit by someone else gives 409, never an overwrite),
 * and transient failures are retried with backoff by the caller's withRetry.
 */
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from './client.ts';

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

/** A resource with the kind of its objects: every such constant is also an entry of the kind table (src/kube/kinds.ts). */
export interface KindResource extends ResourceType {
  kind: string;
}

export const SERVICES: KindResource = { group: '', version: 'v1', plural: 'services', namespaced: true, kind: 'Service' };
export const PODS: KindResource = { group: '', version: 'v1', plural: 'pods', namespaced: true, kind: 'Pod' };
export const ENDPOINTSLICES: KindResource = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true, kind: 'EndpointSlice' };
export const EVENTS: KindResource = { group: '', version: 'v1', plural: 'events', namespaced: true, kind: 'Event' };
export const CONFIGMAPS: KindResource = { group: '', version: 'v1', plural: 'configmaps', namespaced: true, kind: 'ConfigMap' };
export function serviceCIDRs(version: string): KindResource {
  return { group: 'networking.k8s.io', version, plural: 'servicecidrs', namespaced: false, kind: 'ServiceCIDR' };
}
export function ipAddresses(version: string): KindResource {
  return { group: 'networking.k8s.io', version, plural: 'ipaddresses', namespaced: false, kind: 'IPAddress' };
}

export function collectionPath(t: ResourceType, namespace?: string): string {
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  return t.namespaced && namespace ? `${base}/namespaces/${namespace}/${t.plural}` : `${base}/${t.plural}`;
}

export function objectPath(t: ResourceType, name: string, namespace?: string): string {
  return `${collectionPath(t, namespace)}/${encodeURIComponent(name)}`;
}

export function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function dryRunQuery(dryRun: boolean): Record<string, string | undefined> {
  return { dryRun: dryRun ? 'All' : undefined };
}

/** GET, or undefined on 404. */
export async function getObject(client: KubeClient, t: ResourceType, name: string, namespace?: string): Promise<KubeObject | undefined> {
  try {
    return await client.request<KubeObject>('GET', objectPath(t, name, namespace));
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
}

/**
 * True when `existing` can be the object `created` describes: it carries every label the create carried. This is
 * how a create whose answer was lost (the connection reset after the apiserver stored it) is told apart, when it
 * is sent again and answered AlreadyExists, from an object of the same name that someone else made.
 */
export function carriesLabelsOf(existing: KubeObject, created: KubeObject): boolean {
  const have = existing.metadata?.labels ?? {};
  return Object.entries(created.metadata?.labels ?? {}).every(([k, v]) => have[k] === v);
}

/**
 * POST; AlreadyExists (409) returns the existing object instead of failing (the step is idempotent, and a create
 * sent again after its answer was lost meets its own object) when it carries the create's labels; an object of
 * that name without them is someone else's, and the create fails saying so.
 */
export async function createObject(client: KubeClient, t: ResourceType, obj: KubeObject, opts: { dryRun?: boolean } = {}): Promise<KubeObject> {
  const ns = obj.metadata?.namespace;
  try {
    return await client.request<KubeObject>('POST', collectionPath(t, ns), { body: obj, query: dryRunQuery(!!opts.dryRun) });
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 409 && e.reason === 'AlreadyExists') {
      const cur = await getObject(client, t, obj.metadata!.name!, ns);
      if (cur && carriesLabelsOf(cur, obj)) return cur;
      if (cur) {
        const missing = Object.keys(obj.metadata?.labels ?? {}).filter((k) => cur.metadata?.labels?.[k] !== obj.metadata?.labels?.[k]);
        throw new KubeApiError(e.method, e.path, 409, 'AlreadyExists', `${t.plural} ${ns ? `${ns}/` : ''}${obj.metadata!.name} already exists and is not ours `
          + `(it lacks label ${missing.join(', ')}): move it away, then resume`);
      }
    }
    throw e;
  }
}

/** PUT with the object's resourceVersion as precondition. */
export async function replaceObject(client: KubeClient, t: ResourceType, obj: KubeObject, opts: { dryRun?: boolean } = {}): Promise<KubeObject> {
  if (!obj.metadata?.resourceVersion) throw new Error(`refusing to replace ${t.plural}/${obj.metadata?.name} without a resourceVersion`);
  return client.request<KubeObject>('PUT', objectPath(t, obj.metadata.name!, obj.metadata.namespace), { body: obj, query: dryRunQuery(!!opts.dryRun) });
}

/** DELETE with optional uid/resourceVersion preconditions; NotFound counts as done. Returns false when it was already gone. */
export async function deleteObject(client: KubeClient, t: ResourceType, name: string, namespace?: string,
  opts: { uid?: string; resourceVersion?: string; dryRun?: boolean } = {}): Promise<boolean> {
  const preconditions = opts.uid || opts.resourceVersion ? { uid: opts.uid, resourceVersion: opts.resourceVersion } : undefined;
  try {
    await client.request('DELETE', objectPath(t, name, namespace), {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions, dryRun: opts.dryRun ? ['All'] : undefined },
    });
    return true;
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return false;
    throw e;
  }
}

export async function listAll(client: KubeClient, t: ResourceType, opts: { namespace?: string; labelSelector?: string; fieldSelector?: string } = {}): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for await (const o of client.list(collectionPath(t, opts.namespace), opts)) out.push(o);
  return out;
}

/** A copy of `o` that can be POSTed again: server-set metadata (uid, resourceVersion, timestamps, managedFields) and status dropped. */
export function forCreate(o: KubeObject): KubeObject {
  const { uid, resourceVersion, creationTimestamp, managedFields, generation, selfLink, deletionTimestamp, deletionGracePeriodSeconds, ...meta } = o.metadata ?? {};
  void uid; void resourceVersion; void creationTimestamp; void managedFields; void generation; void selfLink; void deletionTimestamp; void deletionGracePeriodSeconds;
  const { status, ...rest } = o;
  void status;
  return { ...rest, metadata: meta };
}
