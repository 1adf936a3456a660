import type { Snapshot } from '../cluster/types.ts';
import {
  alignUp, bits, cidrLast, formatCidr, formatIP, NetError, parseCidr, smallestPrefixFor, tryParseCidr,
  type Cidr, type Family,
} from '../net/index.ts';
import { addressPlan, nodePodCoverage } from './addressing.ts';
import { CATALOG, type AvoidRange } from './catalog.ts';
import { holderText, liveIn, liveIndex } from './live.ts';
import { floorPrefix, floorText, podDemand, podNodeMask, type SizedFor } from './sizing.ts';

/**
 * Where `suggest` looks, in this order (documented in the README): the private ranges of RFC 1918 from the
 * largest to the smallest for IPv4, the unique-local range for IPv6. Inside each, the lowest free aligned
 * block wins.
 */
export const SEARCH_SPACES: Record<Family, readonly string[]> = {
  4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
  6: ['fd00::/8'],
};

/** Service ranges the apiserver accepts: IPv4 /12 or smaller, IPv6 /108 or smaller. */
const SERVICE_MAX_SIZE: Record<Family, number> = { 4: 12, 6: 108 };

export interface SuggestOptions {
  for: 'pods' | 'services';
  family?: Family;
  /** pods: nodes to plan for (before headroom); default: the cluster's node count. */
  nodes?: number;
  /** pods: prefix of each node's block; default: the cluster's node mask, else 24 / 64. */
  nodeMask?: number;
  /** services: Services to plan for (before headroom); default: Services with a ClusterIP today. */
  services?: number;
  /** Multiplier on the count (default 2: room to double). */
  headroom?: number;
  avoid?: readonly AvoidRange[];
  /** How many further candidates to return beside the best one. */
  alternatives?: number;
  /** The floor: the longest prefix suggested (default: src/analyze/sizing.ts). The family's width turns it off. */
  minPrefix?: number;
}

export interface Rejection {
  /** The first and last rejected candidate blocks of this run. */
  from: string;
  to: string;
  count: string;
  by: string;
  reason: string;
}

export interface Suggestion {
  for: 'pods' | 'services';
  family: Family;
  cidr?: string;
  prefix: number;
  need: { count: number; headroom: number; addresses: string; nodeMask?: number; nodes?: number; services?: number };
  searched: string[];
  alternatives: string[];
  rejected: Rejection[];
  avoided: number;
  /** What the range was sized for: nodes or Services, how many, where the count comes from (the floor when it decided). */
  sizedFor: SizedFor;
}

interface Obstacle {
  cidr: Cidr;
  label: string;
  reason: string;
}

/** Everything a new range must not overlap: the cluster's ranges (current ones too), the catalog, --avoid. */
export function obstacles(snap: Snapshot, avoid: readonly AvoidRange[]): Obstacle[] {
  const out: Obstacle[] = [];
  for (const g of addressPlan(snap)) {
    out.push({ cidr: g.parsed, label: g.cidr, reason: `cluster ${g.role} range (${g.sources.join(', ')})` });
  }
  for (const c of nodePodCoverage(snap)) out.push({ cidr: c, label: formatCidr(c), reason: 'node podCIDRs' });
  for (const n of snap.nodes) {
    for (const a of [...n.internalIPs, ...n.externalIPs]) {
      const c = tryParseCidr(a.includes(':') ? `${a}/128` : `${a}/32`);
      if (c) out.push({ cidr: c, label: formatCidr(c), reason: `address of node ${n.name}` });
    }
  }
  for (const k of CATALOG) out.push({ cidr: parseCidr(k.cidr), label: k.cidr, reason: `${k.name}: ${k.reason}` });
  for (const a of avoid) {
    const c = tryParseCidr(a.cidr);
    if (c) out.push({ cidr: c, label: a.cidr, reason: `avoided (${a.from})${a.reason ? `: ${a.reason}` : ''}` });
  }
  return out;
}

function log2Ceil(n: number): number {
  let p = 0;
  while (2 ** p < n) p++;
  return p;
}

function defaultFamily(snap: Snapshot): Family {
  const g = addressPlan(snap).find((x) => x.role === 'service' || x.role === 'pod');
  return g?.parsed.family ?? 4;
}

/**
 * The address families the cluster uses for `what`, the primary one first: the families of its service ranges
 * and ClusterIPs, or of its pod ranges, Calico pools and node podCIDRs. Two on a dual-stack cluster.
 */
export function clusterFamilies(snap: Snapshot, what: SuggestOptions['for']): Family[] {
  const roles = what === 'services' ? ['service'] : ['pod', 'pool'];
  const fams = new Set<Family>(addressPlan(snap).filter((g) => roles.includes(g.role)).map((g) => g.parsed.family));
  if (what === 'services') {
    for (const s of snap.services) for (const ip of s.clusterIPs) fams.add(ip.includes(':') ? 6 : 4);
  } else {
    for (const c of nodePodCoverage(snap)) fams.add(c.family);
  }
  const primary = defaultFamily(snap);
  return [...fams].sort((a, b) => (a === primary ? -1 : b === primary ? 1 : a - b));
}

/**
 * One suggestion per family: for `opts.family` when given, else for every family the cluster uses for
 * `opts.for` (both on a dual-stack cluster, the primary first), else the default family. Throws NetError for a
 * --node-mask without a family on a dual-stack cluster (each family has its own node mask).
 */
export function suggestFamilies(snap: Snapshot, opts: SuggestOptions): Suggestion[] {
  const fams = opts.family === undefined ? clusterFamilies(snap, opts.for) : [];
  if (fams.length < 2) return [suggest(snap, opts)];
  if (opts.for === 'pods' && opts.nodeMask !== undefined) {
    throw new NetError(`--node-mask ${opts.nodeMask} on a dual-stack cluster needs --family 4 or 6: each family has its own node mask`);
  }
  if (opts.minPrefix !== undefined) {
    throw new NetError(`--min-prefix ${opts.minPrefix} on a dual-stack cluster needs --family 4 or 6: each family has its own prefix lengths`);
  }
  return fams.map((family) => suggest(snap, { ...opts, family }));
}

/** The size of the range `suggest` looks for: its prefix (the floor applied), the need, what it was sized for. */
export interface RangeSize {
  family: Family;
  prefix: number;
  /** The prefix the need alone gives (no floor): what a current range must hold to stay (plan --fleet). */
  needPrefix: number;
  need: Suggestion['need'];
  sizedFor: SizedFor;
}

/**
 * How large a range for `opts.for` must be (pure): pods from the most nodes the cluster may reach (where it says so)
 * or today's nodes x headroom, Services from today's ClusterIPs x headroom; never below the floor
 * (src/analyze/sizing.ts, `--min-prefix`). Throws NetError for values out of range.
 */
export function rangeSize(snap: Snapshot, opts: SuggestOptions): RangeSize {
  const family = opts.family ?? defaultFamily(snap);
  const width = bits(family);
  const headroom = opts.headroom ?? 2;
  if (!(headroom >= 1)) throw new NetError(`--headroom ${headroom} must be a number >= 1 (2 means room to double)`);
  if (opts.minPrefix !== undefined && (!Number.isInteger(opts.minPrefix) || opts.minPrefix < 1 || opts.minPrefix > width)) {
    throw new NetError(`--min-prefix ${opts.minPrefix} is out of range for IPv${family} (1–${width})`);
  }
  let prefix: number;
  let needPrefix: number;
  let sizedFor: SizedFor;
  const need: Suggestion['need'] = { count: 0, headroom, addresses: '0' };
  if (opts.for === 'pods') {
    const nodeMask = opts.nodeMask ?? podNodeMask(snap, family);
    if (!Number.isInteger(nodeMask) || nodeMask < 1 || nodeMask > width) {
      throw new NetError(`--node-mask ${nodeMask} is out of range for IPv${family} (1–${width})`);
    }
    if (opts.nodes !== undefined && (!Number.isInteger(opts.nodes) || opts.nodes < 1)) throw new NetError(`--nodes ${opts.nodes} must be a whole number >= 1`);
    const demand = podDemand(snap, headroom, opts.nodes);
    needPrefix = nodeMask - log2Ceil(Math.max(demand.count, 1));
    if (needPrefix < 1) throw new NetError(`${demand.count} nodes with /${nodeMask} blocks need more than half of the IPv${family} space`);
    const floor = floorPrefix('pods', family, nodeMask, opts.minPrefix);
    prefix = Math.min(needPrefix, floor);
    if (prefix < 1) throw new NetError(`the floor /${floor} for /${nodeMask} node blocks is out of range for IPv${family}`);
    sizedFor = prefix < needPrefix
      ? { what: 'nodes', count: 2 ** (nodeMask - prefix), from: floorText(opts.minPrefix), need: { count: demand.count, from: demand.from, prefix: needPrefix } }
      : { what: 'nodes', count: demand.count, from: demand.from };
    // need keeps its meaning (the nodes counted x headroom); what the range was sized for is sizedFor's
    need.nodes = opts.nodes ?? Math.max(1, snap.nodes.length);
    need.count = Math.ceil(need.nodes * headroom);
    need.nodeMask = nodeMask;
    need.addresses = ((1n << BigInt(width - prefix))).toString();
  } else {
    const services = opts.services ?? snap.services.filter((s) => s.clusterIPs.length > 0).length;
    if (!Number.isInteger(services) || services < 0) throw new NetError(`--services ${services} must be a whole number >= 0`);
    const wanted = Math.ceil(Math.max(services, 1) * headroom);
    // +2: the network and broadcast addresses are never handed out.
    needPrefix = smallestPrefixFor(BigInt(wanted + 2), family);
    const floor = floorPrefix('services', family, 0, opts.minPrefix);
    prefix = Math.min(needPrefix, floor);
    if (prefix < SERVICE_MAX_SIZE[family]) {
      throw new NetError(prefix < needPrefix
        ? `the floor /${floor} is larger than the largest service range the apiserver accepts (/${SERVICE_MAX_SIZE[family]})`
        : `${wanted} Service IPs need a /${prefix}, larger than the largest service range the apiserver accepts (/${SERVICE_MAX_SIZE[family]})`);
    }
    const from = `${opts.services !== undefined ? `--services ${services}` : `${services} Service${services === 1 ? '' : 's'} with a ClusterIP`} x headroom ${headroom}`;
    sizedFor = prefix < needPrefix
      ? { what: 'services', count: Number(assignable(width - prefix)), from: floorText(opts.minPrefix), need: { count: wanted, from, prefix: needPrefix } }
      : { what: 'services', count: wanted, from };
    need.count = wanted;
    need.services = services;
    need.addresses = (1n << BigInt(width - prefix)).toString();
  }
  return { family, prefix, needPrefix, need, sizedFor };
}

/** Addresses of a range with `hostBits` host bits, less the network and broadcast addresses. */
function assignable(hostBits: number): bigint {
  const n = 1n << BigInt(hostBits);
  return n > 2n ? n - 2n : n;
}

/** The free aligned blocks a search found, and the runs of candidates it rejected on the way and why. */
interface BlockSearch {
  found: Cidr[];
  rejected: Rejection[];
  searched: string[];
  avoided: number;
}

/**
 * The lowest `want` aligned blocks of `prefix` that overlap no obstacle and hold no live address, searched in
 * SEARCH_SPACES order; with the runs of candidates rejected on the way and why. Pure.
 */
function freeBlocks(snap: Snapshot, family: Family, prefix: number, avoid: readonly AvoidRange[], want: number): BlockSearch {
  const width = bits(family);
  const obs = obstacles(snap, avoid).filter((o) => o.cidr.family === family);
  const live = liveIndex(snap);
  const spaces = SEARCH_SPACES[family].map((s) => parseCidr(s));
  const found: Cidr[] = [];
  const rejected: Rejection[] = [];
  const blockSize = 1n << BigInt(width - prefix);
  for (const space of spaces) {
    if (found.length >= want || space.prefix > prefix) continue;
    const spaceEnd = cidrLast(space);
    let cand = space.network;
    let lastBy: Rejection | undefined;
    while (cand + blockSize - 1n <= spaceEnd && found.length < want) {
      const end = cand + blockSize - 1n;
      const hit = obs.filter((o) => o.cidr.network <= end && cidrLast(o.cidr) >= cand);
      if (hit.length === 0) {
        // Occupied means configured or live: a ClusterIP, pod IP or node address outside every known range.
        const a = liveIn(live, { family, start: cand, end }).first[0];
        if (a) hit.push({ cidr: { family, network: a.value, prefix: width }, label: formatIP(a), reason: holderText(a) });
      }
      if (hit.length === 0) {
        found.push({ family, network: cand, prefix });
        cand += blockSize;
        lastBy = undefined;
        continue;
      }
      // Skip every candidate the obstacles cover; report the run under the first obstacle.
      const maxEnd = hit.reduce((m, o) => (cidrLast(o.cidr) > m ? cidrLast(o.cidr) : m), 0n);
      const next = maxEnd + 1n > spaceEnd ? spaceEnd + 1n : alignUp(maxEnd + 1n, prefix, family);
      const lastRejected = next - blockSize;
      const by = hit.sort((a, b) => (a.cidr.network < b.cidr.network ? -1 : 1))[0]!;
      const count = (next - cand) / blockSize;
      if (lastBy && lastBy.by === by.label) {
        lastBy.to = formatCidr({ family, network: lastRejected, prefix });
        lastBy.count = (BigInt(lastBy.count) + count).toString();
      } else {
        lastBy = {
          from: formatCidr({ family, network: cand, prefix }),
          to: formatCidr({ family, network: lastRejected, prefix }),
          count: count.toString(),
          by: by.label,
          reason: by.reason,
        };
        rejected.push(lastBy);
      }
      cand = next;
    }
  }
  return { found, rejected, searched: spaces.map(formatCidr), avoided: obs.length };
}

/**
 * The smallest aligned range that fits the need (never below the floor) and overlaps nothing known, searched in
 * SEARCH_SPACES order; with the runs of candidates rejected on the way and why. Pure.
 */
export function suggest(snap: Snapshot, opts: SuggestOptions): Suggestion {
  const { family, prefix, need, sizedFor } = rangeSize(snap, opts);
  const { found, rejected, searched, avoided } = freeBlocks(snap, family, prefix, opts.avoid ?? [], 1 + (opts.alternatives ?? 3));
  return {
    for: opts.for,
    family,
    cidr: found[0] ? formatCidr(found[0]) : undefined,
    prefix,
    need,
    searched,
    alternatives: found.slice(1).map(formatCidr),
    rejected,
    avoided,
    sizedFor,
  };
}

/**
 * A Service range and a Pod range chosen together: disjoint, each sized as `suggest` sizes it, and placed inside
 * one aligned range, the envelope (the larger range at its start, the smaller at the start of its other half).
 * The whole envelope overlaps nothing `suggest` avoids, so one range names both: on kOps the nonMasqueradeCIDR
 * (clear of networkCIDR, the node network), elsewhere what a firewall rule, route or mesh setting names.
 */
export interface PairSuggestion {
  family: Family;
  /** The envelope holding both ranges; undefined when no free block of its size was found. */
  envelope?: string;
  prefix: number;
  /** What the envelope becomes on this platform (kOps: nonMasqueradeCIDR). */
  envelopeIs?: string;
  services: Suggestion;
  pods: Suggestion;
  /** Further free envelopes, each holding the pair the same way. */
  alternatives: string[];
  searched: string[];
  rejected: Rejection[];
  avoided: number;
}

/** Both ranges inside `envelope`: the larger (pods on a tie) at its start, the other at the start of its second half. */
export function placePair(envelope: Cidr, servicePrefix: number, podPrefix: number): { services: Cidr; pods: Cidr } {
  const half = 1n << BigInt(bits(envelope.family) - envelope.prefix - 1);
  const first = envelope.network;
  const second = envelope.network + half;
  return podPrefix <= servicePrefix
    ? { pods: { family: envelope.family, network: first, prefix: podPrefix }, services: { family: envelope.family, network: second, prefix: servicePrefix } }
    : { services: { family: envelope.family, network: first, prefix: servicePrefix }, pods: { family: envelope.family, network: second, prefix: podPrefix } };
}

/** The pair for one family (`opts.family`, else the cluster's primary one). Pure. */
export function suggestPair(snap: Snapshot, opts: Omit<SuggestOptions, 'for'>): PairSuggestion {
  const svc = rangeSize(snap, { ...opts, for: 'services' });
  const pod = rangeSize(snap, { ...opts, for: 'pods', family: svc.family });
  const prefix = Math.min(svc.prefix, pod.prefix) - 1;
  if (prefix < 1) throw new NetError(`a /${svc.prefix} service range and a /${pod.prefix} pod range need more than half of the IPv${svc.family} space`);
  const search = freeBlocks(snap, svc.family, prefix, opts.avoid ?? [], 1 + (opts.alternatives ?? 3));
  const env = search.found[0];
  const placed = env ? placePair(env, svc.prefix, pod.prefix) : undefined;
  const part = (what: 'services' | 'pods', size: RangeSize, c: Cidr | undefined): Suggestion => ({
    for: what, family: size.family, cidr: c ? formatCidr(c) : undefined, prefix: size.prefix, need: size.need, sizedFor: size.sizedFor,
    searched: search.searched, alternatives: [], rejected: [], avoided: search.avoided,
  });
  return {
    family: svc.family,
    envelope: env ? formatCidr(env) : undefined,
    prefix,
    ...(snap.platform.envelopeSetting ? { envelopeIs: snap.platform.envelopeSetting } : {}),
    services: part('services', svc, placed?.services),
    pods: part('pods', pod, placed?.pods),
    alternatives: search.found.slice(1).map(formatCidr),
    searched: search.searched,
    rejected: search.rejected,
    avoided: search.avoided,
  };
}

/**
 * One pair per family: `opts.family` when given, else every family the cluster uses for both services and pods
 * (the primary first), else the default family. Throws NetError as suggestFamilies does.
 */
export function suggestPairFamilies(snap: Snapshot, opts: Omit<SuggestOptions, 'for'>): PairSuggestion[] {
  const pods = new Set(clusterFamilies(snap, 'pods'));
  const fams = opts.family === undefined ? clusterFamilies(snap, 'services').filter((f) => pods.has(f)) : [];
  if (fams.length < 2) return [suggestPair(snap, { ...opts, ...(fams[0] !== undefined && opts.family === undefined ? { family: fams[0] } : {}) })];
  if (opts.nodeMask !== undefined) throw new NetError(`--node-mask ${opts.nodeMask} on a dual-stack cluster needs --family 4 or 6: each family has its own node mask`);
  if (opts.minPrefix !== undefined) throw new NetError(`--min-prefix ${opts.minPrefix} on a dual-stack cluster needs --family 4 or 6: each family has its own prefix lengths`);
  return fams.map((family) => suggestPair(snap, { ...opts, family }));
}
