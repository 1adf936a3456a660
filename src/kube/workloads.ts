/**
 * Resource types and small verbs for the workloads that own pods (apps/v1, batch/v1), the budgets that
 * guard their pods (policy/v1), and the Eviction subresource: what restarting pods onto new IPs touches.
 */
import type { KubeObject } from '../cluster/types.ts';
import type { KubeClient } from './client.ts';
import { objectPath, PODS, type KindResource, type ResourceType } from './resources.ts';

export const DEPLOYMENTS: KindResource = { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true, kind: 'Deployment' };
export const STATEFULSETS: KindResource = { group: 'apps', version: 'v1', plural: 'statefulsets', namespaced: true, kind: 'StatefulSet' };
export const DAEMONSETS: KindResource = { group: 'apps', version: 'v1', plural: 'daemonsets', namespaced: true, kind: 'DaemonSet' };
export const REPLICASETS: KindResource = { group: 'apps', version: 'v1', plural: 'replicasets', namespaced: true, kind: 'ReplicaSet' };
export const JOBS: KindResource = { group: 'batch', version: 'v1', plural: 'jobs', namespaced: true, kind: 'Job' };
export const CRONJOBS: KindResource = { group: 'batch', version: 'v1', plural: 'cronjobs', namespaced: true, kind: 'CronJob' };
export const PODDISRUPTIONBUDGETS: KindResource = { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', namespaced: true, kind: 'PodDisruptionBudget' };

/** The workload kinds a pod template restart applies to, by their kind. */
export const WORKLOAD_TYPES = Object.fromEntries([DEPLOYMENTS, STATEFULSETS, DAEMONSETS].map((t) => [t.kind, t])) as Readonly<Record<'Deployment' | 'StatefulSet' | 'DaemonSet', KindResource>>;

/** POST here evicts the pod (policy/v1 Eviction): the API server checks PodDisruptionBudgets first. */
export function evictionPath(namespace: string, pod: string): string {
  return `${objectPath(PODS, pod, namespace)}/eviction`;
}

/**
 * Evict one pod, only if it is still the pod with `uid` (a re-created pod of the same name is left alone).
 * Errors are the API server's: 429 while a PodDisruptionBudget forbids it, 500 when several budgets
 * select the pod, 404 when it is gone, 409 when `uid` no longer matches.
 */
export async function evictPod(client: KubeClient, namespace: string, pod: string, opts: { uid?: string; dryRun?: boolean } = {}): Promise<void> {
  await client.request('POST', evictionPath(namespace, pod), {
    body: {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: pod, namespace },
      deleteOptions: {
        ...(opts.uid ? { preconditions: { uid: opts.uid } } : {}),
        ...(opts.dryRun ? { dryRun: ['All'] } : {}),
      },
    },
  });
}

/** Merge patch with the object's resourceVersion as precondition (a concurrent edit gives 409). */
export async function patchWithPrecondition(client: KubeClient, t: ResourceType, cur: KubeObject, patch: Record<string, unknown>,
  opts: { dryRun?: boolean } = {}): Promise<KubeObject> {
  const meta = (patch.metadata ?? {}) as Record<string, unknown>;
  return client.request<KubeObject>('PATCH', objectPath(t, cur.metadata!.name!, cur.metadata!.namespace), {
    body: { ...patch, metadata: { ...meta, resourceVersion: cur.metadata!.resourceVersion } },
    contentType: 'application/merge-patch+json',
    query: { dryRun: opts.dryRun ? 'All' : undefined, fieldManager: 'kube-renumber' },
  });
}
