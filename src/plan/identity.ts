/**
 * A plan bound to its cluster. `plan` records the cluster's identity in metadata.cluster: the uid of namespace
 * kube-system (created once with the cluster and never recreated, so it tells two clusters apart even behind the
 * same apiserver URL) and the apiserver URL, without credentials, for people to read. An offline plan (from -f)
 * records none. apply/resume/rollback/restore compare the recorded uid with the live one before anything is
 * written, and take an unbound plan only with --accept-unbound-plan. Pure.
 */
import type { Snapshot } from '../cluster/types.ts';
import type { PreflightCheck } from './preflight.ts';

export interface ClusterIdentity {
  /** metadata.uid of namespace kube-system. */
  uid: string;
  /** The apiserver URL the plan was read from: scheme, host, port and path only (no user, password or query). */
  server?: string;
}

/** The flag that lets apply/resume/rollback/restore take a plan that records no cluster identity. */
export const ACCEPT_UNBOUND_FLAG = '--accept-unbound-plan';

/** `url` with any user name, password, query and fragment removed; undefined when it is not a URL. */
export function serverWithoutCredentials(url: string | undefined): string | undefined {
  if (!url) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  return u.toString().replace(/\/$/, '');
}

/** The identity of the cluster a snapshot was read from: only a live read knows it. */
export function identityOf(snap: Snapshot): ClusterIdentity | undefined {
  if (snap.source.kind !== 'live' || !snap.source.kubeSystemUID) return undefined;
  const server = serverWithoutCredentials(snap.source.server);
  return { uid: snap.source.kubeSystemUID, ...(server ? { server } : {}) };
}

/** Pre-flight check `cluster-identity`: pass when the plan is bound to the cluster it was read from, else warn. */
export function identityCheck(snap: Snapshot): PreflightCheck {
  const id = identityOf(snap);
  if (id) {
    return { id: 'cluster-identity', status: 'pass', message: `bound to the cluster with kube-system uid ${id.uid}${id.server ? ` (${id.server})` : ''}: apply refuses any other cluster`, fix: '' };
  }
  return {
    id: 'cluster-identity', status: 'warn',
    message: snap.source.kind === 'live'
      ? 'not bound to a cluster: namespace kube-system could not be read, so the plan records no cluster identity'
      : 'not bound to a cluster: written offline (-f), so the plan records no cluster identity',
    fix: `apply checks nothing about which cluster it talks to and needs ${ACCEPT_UNBOUND_FLAG}: plan against the live cluster instead to bind the plan to it`,
  };
}

/**
 * Why a plan may not run against the live cluster, or undefined when it may. `live` is the live kube-system uid
 * (undefined when it could not be read). Exit 2 for the caller: the plan is for another cluster.
 */
export function bindingRefusal(recorded: ClusterIdentity | undefined, live: { uid?: string; server?: string }, acceptUnbound: boolean): string | undefined {
  if (!recorded) {
    if (acceptUnbound) return undefined;
    return `the plan records no cluster identity (written offline with -f, or before plans were bound): it could be for any cluster; `
      + `plan again against this cluster, or check it is for this one and pass ${ACCEPT_UNBOUND_FLAG} (nothing was changed)`;
  }
  if (live.uid === undefined) {
    return `the plan is bound to the cluster with kube-system uid ${recorded.uid}, and this cluster's identity cannot be read (get namespace kube-system): nothing was changed`;
  }
  if (live.uid !== recorded.uid) {
    const where = (s?: string) => (s ? ` (${s})` : '');
    return `the plan was written for another cluster: kube-system uid ${recorded.uid}${where(recorded.server)}, and this cluster's is ${live.uid}${where(serverWithoutCredentials(live.server))}: `
      + 'plan again against this cluster (nothing was changed)';
  }
  return undefined;
}
