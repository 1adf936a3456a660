/**
 * Ranges sized for the cluster's future (pure): the most nodes it may reach, where it says so, and the floor no
 * suggested or assigned range goes below. Used by `suggest`, `plan`'s pre-flight and `plan --fleet`.
 *
 * Floors (docs/plan.md#range-sizes; the platforms' defaults behind them are cited in docs/platforms.md):
 *  - Service range: IPv4 /20 (4,096 addresses: GKE's default Service range, the smallest default of the platforms
 *    kube-renumber knows; kubeadm /12, kOps /13, EKS/AKS/k3s /16), IPv6 /112 (the smallest kube-renumber suggests:
 *    the apiserver takes up to /108).
 *  - Pod range: 256 nodes at the node mask (a /16 of /24s: the smallest default pod range of those platforms,
 *    k3s's and flannel's 10.x.0.0/16 and Calico's 192.168.0.0/16; kOps /11, kubeadm none, GKE /14).
 * `--min-prefix` overrides either (a longer prefix lowers the floor; the family's width turns it off).
 */
import type { Family, Snapshot } from '../cluster/types.ts';
import { bits, tryParseCidr } from '../net/index.ts';

/** The default floor of a Service range, as the longest prefix suggested. */
export const SERVICE_FLOOR_PREFIX: Readonly<Record<Family, number>> = { 4: 20, 6: 112 };
/** The default floor of a pod range: room for this many nodes at the node mask. */
export const POD_FLOOR_NODES = 256;

/** What a range was sized for: a count of nodes or Services, and where that count comes from. */
export interface SizedFor {
  what: 'nodes' | 'services';
  count: number;
  /** Where the count was read or how it was reached: "kOps InstanceGroups maxSize", "9 Services x headroom 2", "floor". */
  from: string;
  /** Present when the floor decided the size: what the cluster's need alone would have given. */
  need?: { count: number; from: string; prefix: number };
}

/** The most nodes the cluster may reach where it says so: the largest of its sources, with what it is. */
export interface NodeReach { count: number; from: string; groups: number }

export function nodeReach(snap: Snapshot): NodeReach | undefined {
  const best = [...(snap.nodeLimits?.sources ?? [])].sort((a, b) => b.max - a.max)[0];
  return best ? { count: best.max, from: best.what, groups: best.groups.length } : undefined;
}

/** The node mask pods are sized at for `family`: the nodes' podCIDRs' prefix, else /24 (IPv4) or /64 (IPv6). */
export function podNodeMask(snap: Snapshot, family: Family): number {
  for (const n of snap.nodes) {
    for (const s of n.podCIDRs) {
      const c = tryParseCidr(s);
      if (c?.family === family) return c.prefix;
    }
  }
  return family === 4 ? 24 : 64;
}

function log2Ceil(n: number): number {
  let p = 0;
  while (2 ** p < n) p++;
  return p;
}

/** The floor's prefix: `minPrefix` when given, else the default for what the range is for. */
export function floorPrefix(what: 'pods' | 'services', family: Family, nodeMask: number, minPrefix?: number): number {
  if (minPrefix !== undefined) return Math.min(minPrefix, bits(family));
  return what === 'services' ? SERVICE_FLOOR_PREFIX[family] : Math.max(1, nodeMask - log2Ceil(POD_FLOOR_NODES));
}

/** How the floor reads in a sizedFor line. */
export function floorText(minPrefix?: number): string {
  return minPrefix !== undefined ? `the floor --min-prefix ${minPrefix}` : 'the floor (--min-prefix to change)';
}

/**
 * The nodes a pod range is sized for: `--nodes` x headroom when given; else the most nodes the cluster may reach
 * when it says so and that is more than today's nodes x headroom; else today's nodes x headroom.
 */
export function podDemand(snap: Snapshot, headroom: number, nodes?: number): { count: number; from: string; nodes: number } {
  if (nodes !== undefined) return { count: Math.ceil(nodes * headroom), from: `--nodes ${nodes} x headroom ${headroom}`, nodes };
  const today = Math.max(1, snap.nodes.length);
  const byToday = Math.ceil(today * headroom);
  const reach = nodeReach(snap);
  if (reach && reach.count >= byToday) {
    return { count: reach.count, from: `${reach.from} (${reach.groups} group${reach.groups === 1 ? '' : 's'})`, nodes: today };
  }
  const why = reach ? `; more than ${reach.from}'s ${reach.count}` : '';
  return { count: byToday, from: `today's ${today} node${today === 1 ? '' : 's'} x headroom ${headroom}${why}`, nodes: today };
}

/** How long a range lasts: "N× today's count" (two significant digits), or "already too small". */
export function lastsText(capacity: bigint, today: number, what: string): string {
  if (today <= 0) return `room for ${capacity} ${what}`;
  if (capacity < BigInt(today)) return `already too small for today's ${today} ${what}`;
  const x = Number(capacity) / today;
  const shown = x >= 100 ? Math.round(x).toString() : x >= 10 ? x.toFixed(0) : x.toFixed(1);
  return `room for ${capacity} ${what}, ${shown}x today's ${today}`;
}
