/**
 * Asking the API server what we may do, as `kubectl auth can-i` does: one SelfSubjectAccessReview per verb and
 * resource (any authenticated user may create them; they change nothing). Used before a run's first write, so a
 * missing permission is named up front instead of failing a step half-way.
 */
import { KubeApiError, type KubeClient } from './client.ts';
import { withRetry } from './retry.ts';

export interface ResourceAccess {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

const SSAR = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/**
 * The accesses of `wanted` the server denies (in order), or undefined when it does not answer access reviews
 * (403 or 404 on the review itself: nothing can be said before the run).
 */
export async function deniedAccess<T extends ResourceAccess>(client: KubeClient, wanted: readonly T[], concurrency = 8): Promise<T[] | undefined> {
  const allowed: boolean[] = new Array(wanted.length);
  let next = 0;
  let unanswered = false;
  const worker = async () => {
    while (next < wanted.length && !unanswered) {
      const i = next++;
      const w = wanted[i]!;
      try {
        // a review changes nothing: sent again after a transient error like a read
        const r = await withRetry(() => client.request<{ status?: { allowed?: boolean } }>('POST', SSAR, {
          body: {
            apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { verb: w.verb, group: w.group, resource: w.resource, subresource: w.subresource, namespace: w.namespace, name: w.name } },
          },
        }));
        allowed[i] = r?.status?.allowed === true;
      } catch (e) {
        if (e instanceof KubeApiError && (e.status === 403 || e.status === 404)) { unanswered = true; return; }
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, wanted.length) }, worker));
  if (unanswered) return undefined;
  return wanted.filter((_, i) => !allowed[i]);
}

/**
 * Who the server takes us for, as `kubectl auth whoami` asks it (a SelfSubjectReview: any authenticated user may
 * create one; it changes nothing): the user name, with --as the impersonated one. Undefined when the server does not
 * answer it (before Kubernetes 1.28, or refused): a refusal then names no user rather than fail for it.
 */
export async function whoAmI(client: KubeClient): Promise<string | undefined> {
  try {
    const r = await client.request<{ status?: { userInfo?: { username?: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const name = r?.status?.userInfo?.username;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
}
