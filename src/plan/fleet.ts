/**
 * Fleet range assignment (pure): every cluster of a fleet gets a Service range and a Pod range that overlap no
 * other cluster's ranges, nothing the whole fleet avoids, and nothing of the cluster itself (its nodes, its own
 * other range). Current ranges stay wherever they can: the most ranges kept, then the most addresses kept.
 *
 * Rules, in order:
 *  1. A current range can be kept when it is large enough for the cluster's need (with headroom, and the most
 *     nodes the cluster may reach), lies in no shared range and in none of the cluster's own obstacles. The floor
 *     is not asked of a range that stays: moving one only to make it larger than it needs is the most expensive
 *     change a cluster's addressing can get.
 *  2. Of those, ranges that overlap are in conflict. CIDR blocks either nest or are disjoint, so the ranges form
 *     a forest by containment; the kept set is a maximum independent set in it: at each block, keep it or the
 *     best set of the blocks inside it, whichever keeps more ranges, then more addresses. Equal blocks held by
 *     several clusters: the first in the fleet file keeps it.
 *  3. Every other range gets a new block: the smallest aligned block that holds the need and the floor, first free in the
 *     search spaces (RFC 1918, largest first), clear of every shared range, every current range of every
 *     cluster (they stay in use until their migration ends) and every range given so far. Larger needs are
 *     placed first, to keep the space unfragmented.
 * IPv4 only: a cluster whose ranges are IPv6 or dual-stack is refused by the caller.
 */
import { formatCidr, NetError, parseCidr, type Cidr } from '../net/index.ts';

export type FleetRangeKind = 'service' | 'pod';
export const FLEET_KINDS: readonly FleetRangeKind[] = ['service', 'pod'];

/** IPv4 search spaces in preference order (as `suggest`'s). */
export const FLEET_SEARCH_SPACES: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

export interface FleetRangeNeed {
  /** The range in use today, if known (IPv4 CIDR). */
  current?: string;
  /** The longest prefix whose block holds the need with headroom (a /20 needs a block of at least 4096). */
  prefix: number;
  /**
   * The floor: the longest prefix a new range may have (src/analyze/sizing.ts); a new range gets the larger of
   * this and `prefix`. A current range is kept by `prefix` alone.
   */
  floor?: number;
}

export interface FleetClusterNeeds {
  name: string;
  service: FleetRangeNeed;
  pod: FleetRangeNeed;
  /** Ranges only this cluster's new ranges must avoid (its node addresses, other ranges it configures). */
  local?: readonly string[];
}

export interface FleetShared { cidr: string; reason: string }

export interface FleetRangeResult {
  from?: string;
  to: string;
  moved: boolean;
  /** Why it moves (absent when kept). */
  why?: string;
}

export interface FleetAssignment { name: string; service: FleetRangeResult; pod: FleetRangeResult }

export interface FleetResult {
  clusters: FleetAssignment[];
  /** Ranges that move, clusters with at least one move, addresses no longer kept. */
  moves: { ranges: number; clusters: number; addresses: number };
}

/** The rules cannot all be met: the message names the clusters and ranges in conflict. */
export class FleetConflictError extends NetError {}

interface Block { start: number; end: number }
interface Slot {
  cluster: number;
  kind: FleetRangeKind;
  need: number;
  /** The prefix of a new block: the need or the floor, whichever is larger. */
  size: number;
  current?: Cidr;
  block?: Block;
  keepable: boolean;
  why?: string;
}

const SIZE = (prefix: number) => 2 ** (32 - prefix);
const blockOf = (c: Cidr): Block => ({ start: Number(c.network), end: Number(c.network) + SIZE(c.prefix) - 1 });
const hits = (a: Block, b: Block) => a.start <= b.end && b.start <= a.end;
const show = (b: Block) => formatCidr({ family: 4, network: BigInt(b.start), prefix: 32 - Math.log2(b.end - b.start + 1) });

function parse4(s: string, what: string): Cidr {
  const c = parseCidr(s, { normalize: true });
  if (c.family !== 4) throw new FleetConflictError(`${what} ${s} is IPv6: fleet assignment handles IPv4 ranges only`);
  return c;
}

/** Sorted, merged, disjoint intervals with insertion (binary search). */
class Occupied {
  readonly list: Block[] = [];
  constructor(blocks: Iterable<Block> = []) {
    for (const b of [...blocks].sort((x, y) => x.start - y.start)) this.push(b);
  }
  private push(b: Block): void {
    const last = this.list[this.list.length - 1];
    if (last && b.start <= last.end + 1) last.end = Math.max(last.end, b.end);
    else this.list.push({ ...b });
  }
  add(b: Block): void {
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.list[mid]!.end < b.start - 1) lo = mid + 1;
      else hi = mid;
    }
    let end = lo;
    let merged = { ...b };
    while (end < this.list.length && this.list[end]!.start <= merged.end + 1) {
      merged = { start: Math.min(merged.start, this.list[end]!.start), end: Math.max(merged.end, this.list[end]!.end) };
      end++;
    }
    this.list.splice(lo, end - lo, merged);
  }
  /** The first aligned block of `size` in `space` that overlaps no interval and none of `extra`. */
  firstFree(space: Block, size: number, extra: readonly Block[]): Block | undefined {
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.list[mid]!.end < space.start) lo = mid + 1;
      else hi = mid;
    }
    let cand = space.start;
    for (let i = lo; ; ) {
      cand = Math.ceil(cand / size) * size;
      const end = cand + size - 1;
      if (end > space.end) return undefined;
      // skip intervals that end before the candidate
      while (i < this.list.length && this.list[i]!.end < cand) i++;
      const o = this.list[i];
      if (o && o.start <= end) { cand = o.end + 1; continue; }
      const x = extra.find((e) => e.start <= end && cand <= e.end);
      if (x) { cand = x.end + 1; continue; }
      return { start: cand, end };
    }
  }
}

/** [ranges kept, addresses kept]: more is better, compared in that order. */
type Score = [number, number];
const better = (a: Score, b: Score) => a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/**
 * The ranges to keep among the keepable slots: a maximum independent set in the containment forest of their
 * blocks (rule 2). Returns the kept slots.
 */
function chooseKept(slots: Slot[]): Set<Slot> {
  const cands = slots.filter((s) => s.keepable);
  // groups of identical blocks: one node each, held by its first slot (fleet file order)
  const groups = new Map<string, Slot[]>();
  for (const s of cands) {
    const key = `${s.block!.start}-${s.block!.end}`;
    const g = groups.get(key);
    if (g) g.push(s); else groups.set(key, [s]);
  }
  interface Node { block: Block; holder: Slot; children: Node[] }
  const nodes: Node[] = [...groups.values()].map((g) => ({ block: g[0]!.block!, holder: g[0]!, children: [] }));
  nodes.sort((a, b) => a.block.start - b.block.start || b.block.end - a.block.end);
  const roots: Node[] = [];
  const stack: Node[] = [];
  for (const n of nodes) {
    while (stack.length > 0 && stack[stack.length - 1]!.block.end < n.block.start) stack.pop();
    const parent = stack[stack.length - 1];
    (parent ? parent.children : roots).push(n);
    stack.push(n);
  }
  const kept = new Set<Slot>();
  // iterative post-order: score of each node, then the choice from the roots down
  const score = new Map<Node, Score>();
  const keepSelf = new Map<Node, boolean>();
  const order: Node[] = [];
  const todo = [...roots];
  while (todo.length > 0) {
    const n = todo.pop()!;
    order.push(n);
    todo.push(...n.children);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i]!;
    const kids: Score = [0, 0];
    for (const c of n.children) { const s = score.get(c)!; kids[0] += s[0]; kids[1] += s[1]; }
    const self: Score = [1, n.block.end - n.block.start + 1];
    const mine = !better(kids, self);
    keepSelf.set(n, mine);
    score.set(n, mine ? self : kids);
  }
  const walk = [...roots];
  while (walk.length > 0) {
    const n = walk.pop()!;
    if (keepSelf.get(n)) kept.add(n.holder);
    else walk.push(...n.children);
  }
  return kept;
}

/** Assigns every cluster its ranges (see the rules above); throws FleetConflictError when they cannot all be met. */
export function assignFleetRanges(clusters: readonly FleetClusterNeeds[], shared: readonly FleetShared[],
  opts: { spaces?: readonly string[] } = {}): FleetResult {
  const names = new Set<string>();
  for (const c of clusters) {
    if (names.has(c.name)) throw new FleetConflictError(`two clusters are named ${c.name}: each needs its own name`);
    names.add(c.name);
  }
  const sharedBlocks = shared.map((s) => ({ ...s, block: blockOf(parse4(s.cidr, 'shared range')) }));
  const locals = clusters.map((c) => (c.local ?? []).map((l) => blockOf(parse4(l, `cluster ${c.name}: range`))));
  const slots: Slot[] = [];
  clusters.forEach((c, i) => {
    for (const kind of FLEET_KINDS) {
      const need = c[kind];
      if (!Number.isInteger(need.prefix) || need.prefix < 1 || need.prefix > 32) {
        throw new FleetConflictError(`cluster ${c.name}: ${kind} need /${need.prefix} is not an IPv4 prefix`);
      }
      if (need.floor !== undefined && (!Number.isInteger(need.floor) || need.floor < 1 || need.floor > 32)) {
        throw new FleetConflictError(`cluster ${c.name}: ${kind} floor /${need.floor} is not an IPv4 prefix`);
      }
      const slot: Slot = { cluster: i, kind, need: need.prefix, size: Math.min(need.prefix, need.floor ?? need.prefix), keepable: false };
      if (need.current !== undefined) {
        slot.current = parse4(need.current, `cluster ${c.name}: ${kind} range`);
        slot.block = blockOf(slot.current);
        const sh = sharedBlocks.find((s) => hits(s.block, slot.block!));
        const lo = locals[i]!.find((l) => hits(l, slot.block!));
        if (slot.current.prefix > need.prefix) slot.why = `too small: the need with headroom is a /${need.prefix}`;
        else if (sh) slot.why = `overlaps ${sh.cidr} (${sh.reason})`;
        else if (lo) slot.why = `overlaps ${show(lo)}, in use in the cluster`;
        else slot.keepable = true;
      } else {
        slot.why = 'no current range known';
      }
      slots.push(slot);
    }
  });
  const kept = chooseKept(slots);
  const label = (s: Slot) => `${clusters[s.cluster]!.name} ${s.kind} ${s.current ? formatCidr(s.current) : '?'}`;
  for (const s of slots) {
    if (!s.keepable || kept.has(s)) continue;
    const winner = [...kept].find((k) => hits(k.block!, s.block!));
    s.why = winner ? `overlaps ${label(winner)}, which stays` : 'overlaps another range';
  }
  const occupied = new Occupied([...sharedBlocks.map((s) => s.block), ...slots.filter((s) => s.block).map((s) => s.block!)]);
  const spaces = (opts.spaces ?? FLEET_SEARCH_SPACES).map((s) => blockOf(parse4(s, 'search space')));
  const to = new Map<Slot, Block>();
  const moving = slots.filter((s) => !kept.has(s)).sort((a, b) => a.size - b.size || a.cluster - b.cluster);
  for (const s of moving) {
    const size = SIZE(s.size);
    let found: Block | undefined;
    for (const sp of spaces) {
      found = occupied.firstFree(sp, size, locals[s.cluster]!);
      if (found) break;
    }
    if (!found) {
      const placed = [...to.entries()].slice(-4).map(([o, b]) => `${clusters[o.cluster]!.name} ${o.kind} ${show(b)}`);
      throw new FleetConflictError(`cluster ${clusters[s.cluster]!.name}: no free /${s.size} for its ${s.kind} range in ${(opts.spaces ?? FLEET_SEARCH_SPACES).join(', ')}`
        + ` clear of ${sharedBlocks.length} shared range(s) and the other clusters' ranges${placed.length ? ` (last given: ${placed.join(', ')})` : ''}`
        + '; lower the headroom or the floor (minPrefix), free some space, or give a larger search space');
    }
    occupied.add(found);
    to.set(s, found);
  }
  const result: FleetAssignment[] = clusters.map((c) => ({ name: c.name } as FleetAssignment));
  let addresses = 0;
  for (const s of slots) {
    const from = s.current ? formatCidr(s.current) : undefined;
    const r: FleetRangeResult = kept.has(s) ? { ...(from ? { from } : {}), to: from!, moved: false }
      : { ...(from ? { from } : {}), to: show(to.get(s)!), moved: true, why: s.why! };
    if (r.moved && s.block) addresses += s.block.end - s.block.start + 1;
    result[s.cluster]![s.kind] = r;
  }
  const movedClusters = result.filter((r) => r.service.moved || r.pod.moved).length;
  return { clusters: result, moves: { ranges: slots.length - kept.size, clusters: movedClusters, addresses } };
}
