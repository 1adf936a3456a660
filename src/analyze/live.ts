/**
 * The addresses a cluster holds right now, whatever its configured ranges say: every Service ClusterIP, every
 * pod IP (a hostNetwork pod's IP is its node's address), every node InternalIP and ExternalIP. Occupied means
 * configured OR live: a range that contains one of these addresses is in use even when no configured range
 * says so (k3s and managed clusters show no service range; EKS custom networking gives pods 100.64.x addresses
 * with no pod range configured anywhere).
 *
 * Built once per snapshot: each family's addresses parsed and sorted once, so "which live addresses lie in this
 * range" is a binary search (150,000 pods and 20,000 Services stay cheap). Pure.
 */
import type { Family, Snapshot } from '../cluster/types.ts';
import { formatIP, parseIP, type Range } from '../net/index.ts';

/** What holds a live address; the order is the precedence when two holders share one address. */
export type LiveKind = 'node' | 'host-network' | 'cluster-ip' | 'pod';
const RANK: Record<LiveKind, number> = { node: 0, 'host-network': 1, 'cluster-ip': 2, pod: 3 };

export interface LiveAddress {
  family: Family;
  value: bigint;
  kind: LiveKind;
  /** namespace/name of the Service or pod, or the node's name. */
  holder: string;
  /** Nodes: which address (InternalIP or ExternalIP). */
  type?: 'InternalIP' | 'ExternalIP';
}

/** Two different holders of one address where only one may be (a pod IP that is also a ClusterIP, ...). */
export interface LiveCollision {
  a: LiveAddress;
  b: LiveAddress;
}

export interface LiveIndex {
  /** Per family: distinct addresses ascending (values[i] is entries[i].value), each with its first holder by LiveKind order. */
  families: Map<Family, { values: bigint[]; entries: LiveAddress[] }>;
  collisions: LiveCollision[];
}

/** At most this many collisions are kept (a cluster where every pod collides says so with the first ones). */
export const MAX_COLLISIONS = 100;

const cache = new WeakMap<Snapshot, { key: unknown[]; index: LiveIndex }>();

/**
 * The live addresses of a snapshot. Cached per snapshot object; the cache is dropped when its nodes, services or
 * pods arrays are replaced or change length. Pods that finished (Succeeded, Failed) hold no address any more.
 */
export function liveIndex(snap: Snapshot): LiveIndex {
  const key = [snap.nodes, snap.nodes.length, snap.services, snap.services.length, snap.pods, snap.pods.length];
  const hit = cache.get(snap);
  if (hit && hit.key.every((k, i) => k === key[i])) return hit.index;
  const index = buildIndex(snap);
  cache.set(snap, { key, index });
  return index;
}

function buildIndex(snap: Snapshot): LiveIndex {
  const all: LiveAddress[] = [];
  const add = (text: string, kind: LiveKind, holder: string, type?: LiveAddress['type']) => {
    let ip;
    try { ip = parseIP(text); } catch { return; }
    const e: LiveAddress = { family: ip.family, value: ip.value, kind, holder };
    if (type) e.type = type;
    all.push(e);
  };
  for (const n of snap.nodes) {
    for (const a of n.internalIPs) add(a, 'node', n.name, 'InternalIP');
    for (const a of n.externalIPs) add(a, 'node', n.name, 'ExternalIP');
  }
  for (const s of snap.services) for (const a of s.clusterIPs) add(a, 'cluster-ip', `${s.namespace}/${s.name}`);
  for (const p of snap.pods) {
    if (p.phase === 'Succeeded' || p.phase === 'Failed') continue;
    for (const a of p.podIPs) add(a, p.hostNetwork ? 'host-network' : 'pod', `${p.namespace}/${p.name}`);
  }
  all.sort((x, y) => (x.family - y.family) || (x.value < y.value ? -1 : x.value > y.value ? 1 : RANK[x.kind] - RANK[y.kind]));
  const families: LiveIndex['families'] = new Map();
  const collisions: LiveCollision[] = [];
  let prev: LiveAddress | undefined;
  for (const e of all) {
    if (prev && prev.family === e.family && prev.value === e.value) {
      if (collides(prev, e) && collisions.length < MAX_COLLISIONS) collisions.push({ a: prev, b: e });
      continue;
    }
    let f = families.get(e.family);
    if (!f) families.set(e.family, f = { values: [], entries: [] });
    f.values.push(e.value);
    f.entries.push(e);
    prev = e;
  }
  return { families, collisions };
}

/**
 * Whether two holders of one address are a real collision. A node's address is also held by its hostNetwork
 * pods; pods may share an address with each other only when one of them is gone (finished pods are left out),
 * and Services never share one; two pods of one address are reported as a collision too.
 */
function collides(a: LiveAddress, b: LiveAddress): boolean {
  if (a.kind === 'node' && b.kind === 'host-network') return false;
  if (a.kind === 'host-network' && b.kind === 'host-network') return false;
  if (a.kind === 'node' && b.kind === 'node') return a.holder !== b.holder;
  return !(a.kind === b.kind && a.holder === b.holder);
}

/** The first index whose value is >= v. */
function lowerBound(values: readonly bigint[], v: bigint): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < v) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/**
 * The live addresses inside `r`: how many, and the first few (`limit`, default 1) in address order. `skip`
 * leaves addresses out (and uncounted), e.g. ClusterIPs a target is allowed to hold.
 */
export function liveIn(
  index: LiveIndex, r: Range, opts: { limit?: number; skip?: (a: LiveAddress) => boolean; kinds?: readonly LiveKind[] } = {},
): { count: number; first: LiveAddress[] } {
  const f = index.families.get(r.family);
  if (!f) return { count: 0, first: [] };
  const from = lowerBound(f.values, r.start);
  const to = lowerBound(f.values, r.end + 1n);
  const limit = opts.limit ?? 1;
  if (!opts.skip && !opts.kinds) return { count: to - from, first: f.entries.slice(from, Math.min(to, from + limit)) };
  let count = 0;
  const first: LiveAddress[] = [];
  for (let i = from; i < to; i++) {
    const e = f.entries[i]!;
    if (opts.kinds && !opts.kinds.includes(e.kind)) continue;
    if (opts.skip?.(e)) continue;
    count++;
    if (first.length < limit) first.push(e);
  }
  return { count, first };
}

/** What holds the address, e.g. "the ClusterIP of kube-system/kube-dns". */
export function holderText(a: LiveAddress): string {
  switch (a.kind) {
    case 'cluster-ip': return `the ClusterIP of ${a.holder}`;
    case 'pod': return `the IP of pod ${a.holder}`;
    case 'host-network': return `a node address (hostNetwork pod ${a.holder})`;
    case 'node': return `the ${a.type ?? 'address'} of node ${a.holder}`;
  }
}

/** "10.43.0.10, the ClusterIP of kube-system/kube-dns". */
export function describeLive(a: LiveAddress): string {
  return `${formatIP(a)}, ${holderText(a)}`;
}

/** The kind of address in plain words, plural. */
export const LIVE_KIND_NAME: Record<LiveKind, string> = {
  node: 'node addresses', 'host-network': 'node addresses', 'cluster-ip': 'ClusterIPs', pod: 'pod IPs',
};
