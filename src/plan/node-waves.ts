/**
 * Node waves on the node-IPAM path: how many nodes may be out of service at once (`--max-unavailable N|P%`,
 * as kubectl drain, Cluster API MachineDeployments and managed node pools count it) and which nodes move
 * together. Pure: the planner writes the waves into the plan's steps, the engine moves each wave's nodes at once.
 */

/** The default: one node at a time, as `kubectl drain` one node after another and most managed node pools do. */
export const DEFAULT_MAX_UNAVAILABLE = 1;

/** The label that names a node's zone (well-known label, set by cloud providers and most installers). */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** `--max-unavailable` as given: a whole number of nodes, or a percentage of the nodes ("10%"). */
export type MaxUnavailable = number | string;

/**
 * Parses `--max-unavailable`: a whole number ≥ 1, or a percentage "P%" with 0 < P ≤ 100. Throws an Error
 * naming what is wrong otherwise. Returns the number, or the percentage text as given ("10%").
 */
export function parseMaxUnavailable(text: string | number): MaxUnavailable {
  if (typeof text === 'number') {
    if (!Number.isInteger(text) || text < 1) throw new Error(`max-unavailable ${text}: want a whole number of nodes (at least 1) or a percentage such as 10%`);
    return text;
  }
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(t);
  if (pct) {
    const p = Number(pct[1]);
    if (!(p > 0 && p <= 100)) throw new Error(`max-unavailable ${show(text)}: a percentage must be more than 0% and at most 100%`);
    return `${pct[1]}%`;
  }
  if (!/^\d+$/.test(t) || Number(t) < 1) throw new Error(`max-unavailable ${show(text)}: want a whole number of nodes (at least 1) or a percentage such as 10%`);
  return Number(t);
}

function show(v: string): string {
  return JSON.stringify(v);
}

/**
 * The wave size for `nodes` nodes: N as given (at most `nodes`), or P% of `nodes` rounded down, as Cluster API
 * and Kubernetes round maxUnavailable — but never below one node, so a migration always progresses.
 */
export function waveSize(max: MaxUnavailable | undefined, nodes: number): number {
  const m = max ?? DEFAULT_MAX_UNAVAILABLE;
  const n = typeof m === 'number' ? m : Math.floor((nodes * Number(m.slice(0, -1))) / 100);
  return Math.max(1, Math.min(n, Math.max(nodes, 1)));
}

/** A node to place in a wave: its name and its zone (undefined: no zone label; all such nodes count as one zone). */
export interface WaveNode {
  name: string;
  zone?: string;
}

/**
 * Groups nodes into waves of at most `size`, each wave spread across zones: from the nodes still to move, a
 * zone holding r of the R remaining nodes gives a wave at most ceil(size × r ÷ R) of them — its share — so a
 * wave never takes a zone's nodes out faster than the rest. Within a zone, nodes go in the given order
 * (callers pass name order: the plan is deterministic). Every node is in exactly one wave.
 */
export function planWaves<T extends WaveNode>(nodes: readonly T[], size: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new Error(`wave size ${size}: want a whole number ≥ 1`);
  const zones = new Map<string, T[]>();
  for (const n of nodes) {
    const k = n.zone ?? '';
    const q = zones.get(k);
    if (q) q.push(n); else zones.set(k, [n]);
  }
  const order = [...zones.keys()].sort();
  const waves: T[][] = [];
  let remaining = nodes.length;
  while (remaining > 0) {
    const want = Math.min(size, remaining);
    const share = new Map(order.map((z) => [z, zoneShare(size, zones.get(z)!.length, remaining)]));
    const taken = new Map(order.map((z) => [z, 0]));
    const wave: T[] = [];
    // one node per zone in turn, fullest zone first, until the wave is full or every zone gave its share
    while (wave.length < want) {
      const open = order.filter((z) => zones.get(z)!.length > 0 && taken.get(z)! < share.get(z)!);
      if (open.length === 0) break;
      open.sort((a, b) => zones.get(b)!.length - zones.get(a)!.length || (a < b ? -1 : 1));
      for (const z of open) {
        if (wave.length >= want) break;
        wave.push(zones.get(z)!.shift()!);
        taken.set(z, taken.get(z)! + 1);
      }
    }
    remaining -= wave.length;
    waves.push(wave);
  }
  return waves;
}

/** The most nodes a wave of `size` may take from a zone holding `inZone` of `remaining` nodes still to move. */
export function zoneShare(size: number, inZone: number, remaining: number): number {
  return Math.ceil((Math.min(size, remaining) * inZone) / remaining);
}
