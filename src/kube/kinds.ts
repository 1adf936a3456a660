/**
 * The one place that maps an object's apiVersion and kind to the resource it is served as, and back (as
 * kubernetes-client/javascript's KubernetesObjectApi does from discovery): the kinds the core touches, listed here
 * from their resource constants (each carries its kind), and the kinds each pod path declares itself
 * (PodPathModule.kinds), installed by src/install.ts. `restore`, the backups and the executors look kinds up here
 * only, so a kind a path adds cannot be backed up and then skipped as unknown.
 */
import type { KubeObject } from '../cluster/types.ts';
import { NODES } from './calico.ts';
import { apiVersionOf, CONFIGMAPS, ENDPOINTSLICES, PODS, serviceCIDRs, SERVICES, type KindResource } from './resources.ts';
import { CRONJOBS, DAEMONSETS, DEPLOYMENTS, JOBS, PODDISRUPTIONBUDGETS, REPLICASETS, STATEFULSETS } from './workloads.ts';

export type { KindResource } from './resources.ts';

/** The kinds the core reads, changes and backs up (ServiceCIDR at its GA version; a backup names the version it was read at). */
const CORE_KINDS: readonly KindResource[] = [
  SERVICES, PODS, NODES, CONFIGMAPS, ENDPOINTSLICES, serviceCIDRs('v1'),
  DEPLOYMENTS, STATEFULSETS, DAEMONSETS, REPLICASETS, JOBS, CRONJOBS, PODDISRUPTIONBUDGETS,
];

const key = (group: string, kind: string) => `${group}/${kind}`;
const BY_KIND = new Map<string, KindResource>(CORE_KINDS.map((t) => [key(t.group, t.kind), t]));

/** Adds kinds (a pod path's, at install); the same kind again must name the same resource. Idempotent. */
export function installKinds(list: readonly KindResource[]): void {
  for (const t of list) {
    const k = key(t.group, t.kind);
    const had = BY_KIND.get(k);
    if (had && (had.plural !== t.plural || had.namespaced !== t.namespaced)) throw new Error(`kind ${k} is resource ${had.plural}, not ${t.plural}`);
    if (!had) BY_KIND.set(k, t);
  }
}

/** The group of an apiVersion ("apps/v1" → "apps", "v1" → ""). */
export function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

/**
 * The resource an object of this apiVersion and kind is served as, at the apiVersion's version (an object without
 * one: the version listed); undefined for a kind no core part and no installed path touches.
 */
export function resourceOfKind(apiVersion: string | undefined, kind: string | undefined): KindResource | undefined {
  if (!kind) return undefined;
  const t = BY_KIND.get(key(apiVersion ? groupOf(apiVersion) : '', kind))
    ?? (apiVersion ? undefined : [...BY_KIND.values()].find((x) => x.kind === kind));
  if (!t) return undefined;
  const version = apiVersion?.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
  return version && version !== t.version ? { ...t, version } : t;
}

/** The resource of an object (its apiVersion and kind). */
export function resourceOfObject(o: Pick<KubeObject, 'apiVersion' | 'kind'>): KindResource | undefined {
  return resourceOfKind(o.apiVersion, o.kind);
}

/** Every kind known, as "group/Kind" (the core's and the installed paths'). */
export function knownKinds(): string[] {
  return [...BY_KIND.keys()];
}

/** `o` (a list item: it carries neither) with the apiVersion and kind of the resource it was listed from. */
export function withKind(o: KubeObject, t: KindResource): KubeObject {
  return { ...o, apiVersion: apiVersionOf(t), kind: t.kind };
}
