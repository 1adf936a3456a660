/**
 * Which Services move, which keep their ClusterIP, which are never touched, and the new address of every
 * moved ClusterIP. Pure: a function of (Snapshot, options). The rules are stated in docs/plan.md
 * ("Mapping"); the tests in test/unit/plan.mapping.test.ts check them as properties.
 */
import type { Family, ServiceInfo, Snapshot } from '../cluster/types.ts';
import {
  bits, cidrSize, compareCidr, contains, familyName, formatCidr, formatIP, merge, NetError, parseCidr,
  parseIP, rangeToCidrs, supernet, tryParseCidr, usable, type Cidr, type IP,
} from '../net/index.ts';
import { splitList } from '../text.ts';

/** The label (then annotation) a Service's migration tier is read from unless --tier-key says otherwise. */
export const DEFAULT_TIER_KEY = 'kube-renumber.io/tier';

/**
 * The smallest ServiceCIDR we create to keep kept IPs of a drained range allocated: IPv4 /30, IPv6 /120.
 * Measured on the real apiserver (test/integration/kept-servicecidr.test.ts, v1.35.4 and v1.36.4): a ServiceCIDR serves only
 * its usable addresses. A /32 or /31 serves none (an explicit clusterIP there is refused, and the drained
 * range's finalizer does not count the IP as covered: it stays Terminating: "a /32 won't work"); a
 * /30 serves its two middle addresses; the network and broadcast address of any ServiceCIDR are never served.
 * So each kept IP gets the smallest block of at least this prefix in which it is neither the first nor the
 * last address (`keptBlock`). IPv6 is not measured yet (the testbed is IPv4): /120, same interior rule.
 */
export const MIN_KEPT_PREFIX: Readonly<Record<Family, number>> = { 4: 30, 6: 120 };

/** The smallest aligned block of at least `minPrefix` in which `ip` is neither the first nor the last address. */
export function keptBlock(ip: IP, minPrefix: number): Cidr {
  const host: Cidr = { family: ip.family, network: ip.value, prefix: bits(ip.family) };
  for (let p = Math.min(minPrefix, bits(ip.family) - 2); p >= 1; p--) {
    const b = supernet(host, p);
    const last = b.network + (1n << BigInt(bits(ip.family) - p)) - 1n;
    if (ip.value !== b.network && ip.value !== last) return b;
  }
  return supernet(host, 0);
}

export type MappingAction = 'move' | 'keep' | 'skip';
/** A tier as read from the label/annotation: a whole number, any other string, or null (untiered). */
export type Tier = number | string | null;

export interface ServiceMapping {
  namespace: string;
  name: string;
  type: ServiceInfo['type'];
  action: MappingAction;
  reason: string;
  /** The ClusterIPs today (spec.clusterIPs order). */
  from: string[];
  /** The ClusterIPs afterwards, same order: mapped for moved families, unchanged otherwise; [] when skipped. */
  to: string[];
  tier: Tier;
  isDNS: boolean;
  isKubernetes: boolean;
  /** Why a 'keep' keeps: policy (LoadBalancer, --keep), already inside NEW, NEW lacks the family, or NEW is full. */
  keptBecause?: 'load-balancer' | 'keep-flag' | 'already-in-range' | 'no-family' | 'no-room';
}

export interface MappingOptions {
  /** NEW: one CIDR per family, as an array or comma-separated. */
  target: string | readonly string[];
  /** Services to keep, as "namespace/name". */
  keep?: readonly string[];
  /** Where the tier is read from: the label of this name, else the annotation. Default DEFAULT_TIER_KEY. */
  tierKey?: string;
  /** keep (default): LoadBalancer Services keep their ClusterIPs; move: they are mapped into NEW like the others. */
  loadBalancers?: 'keep' | 'move';
}

/** NEW by family. NetError on a bad CIDR, or two CIDRs of one family. */
export function parseTarget(target: string | readonly string[]): Map<Family, Cidr> {
  const parts = (typeof target === 'string' ? [target] : [...target])
    .flatMap((t) => splitList(t));
  if (parts.length === 0) throw new NetError('--service-cidr is empty: give the new Service CIDR, e.g. 172.24.0.0/15');
  const out = new Map<Family, Cidr>();
  for (const p of parts) {
    const c = parseCidr(p);
    const prev = out.get(c.family);
    if (prev) {
      throw new NetError(`--service-cidr has two ${familyName(c.family)} ranges (${formatCidr(prev)} and ${formatCidr(c)}): give at most one per family`);
    }
    out.set(c.family, c);
  }
  return out;
}

export function serviceKey(s: { namespace: string; name: string }): string {
  return `${s.namespace}/${s.name}`;
}

export function isKubernetesService(s: { namespace: string; name: string }): boolean {
  return s.namespace === 'default' && s.name === 'kubernetes';
}

/**
 * The service ranges the cluster has today (flags, configs, ServiceCIDR objects), except ranges inside NEW
 * (a ServiceCIDR for NEW added by an earlier run is the target, not an old range). Sorted by compareCidr.
 */
export function currentServiceRanges(snap: Snapshot, target?: Map<Family, Cidr>): Cidr[] {
  const seen = new Map<string, Cidr>();
  for (const r of snap.ranges) {
    if (r.role !== 'service') continue;
    const c = tryParseCidr(r.cidr);
    if (!c) continue;
    const t = target?.get(c.family);
    if (t && contains(t, c)) continue;
    seen.set(formatCidr(c), c);
  }
  return [...seen.values()].sort(compareCidr);
}

/** The old range an address is measured from: the largest known range holding it (lowest network on a tie). */
export function containingRange(ranges: readonly Cidr[], ip: IP): Cidr | undefined {
  let best: Cidr | undefined;
  for (const r of ranges) {
    if (!contains(r, ip)) continue;
    if (!best || r.prefix < best.prefix || (r.prefix === best.prefix && r.network < best.network)) best = r;
  }
  return best;
}

/** The tier of a Service: the label `key`, else the annotation `key`; whole numbers become numbers. */
export function readTier(s: Pick<ServiceInfo, 'labels' | 'annotations'>, key: string): Tier {
  const raw = s.labels?.[key] ?? s.annotations?.[key];
  if (raw === undefined) return null;
  const v = String(raw).trim();
  if (v === '') return null;
  return /^-?\d{1,15}$/.test(v) ? Number(v) : v;
}

/** The first IP of a range: what the apiserver gives default/kubernetes. */
export function firstIP(c: Cidr): IP {
  return { family: c.family, value: c.network + 1n };
}

/** Addresses of NEW no Service may be given: network, broadcast (IPv4), and the first IP (default/kubernetes). */
function reservedIn(c: Cidr): bigint[] {
  const u = usable(c);
  const out = [c.network, firstIP(c).value];
  if (u.broadcast !== undefined) out.push(u.broadcast);
  return out;
}

interface Claim {
  entry: ServiceMapping;
  index: number;
  ip: IP;
  preferred?: bigint;
}

/** Claims are served in this order: the DNS Service first, then by old address, then by namespace/name. */
function claimOrder(a: Claim, b: Claim): number {
  if (a.entry.isDNS !== b.entry.isDNS) return a.entry.isDNS ? -1 : 1;
  if (a.ip.value !== b.ip.value) return a.ip.value < b.ip.value ? -1 : 1;
  const ka = serviceKey(a.entry);
  const kb = serviceKey(b.entry);
  return ka < kb ? -1 : ka > kb ? 1 : a.index - b.index;
}

/**
 * One entry per Service of the snapshot, sorted by namespace then name. See docs/plan.md "Mapping" for the
 * policy and the address rule; in short:
 *  - ExternalName and headless Services are skipped (never touched);
 *  - --keep Services keep their IPs, and LoadBalancer Services unless `loadBalancers` is move;
 *  - default/kubernetes moves to the first IP of NEW (the apiserver assigns it);
 *  - every other ClusterIP keeps its offset from the start of the old range holding it when that address of
 *    NEW is usable and free; the rest get the lowest free usable addresses of NEW;
 *  - an address whose family NEW has no range for is kept.
 */
export function mapServices(snap: Snapshot, opts: MappingOptions): ServiceMapping[] {
  const target = parseTarget(opts.target);
  const keep = new Set(opts.keep ?? []);
  const tierKey = opts.tierKey ?? DEFAULT_TIER_KEY;
  const olds = currentServiceRanges(snap, target);
  const dnsKey = snap.dnsService ? serviceKey(snap.dnsService) : undefined;

  const services = [...snap.services].sort((a, b) => {
    const ka = serviceKey(a);
    const kb = serviceKey(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });

  // Addresses of NEW that are taken: reserved ones, and IPs already inside NEW that stay where they are.
  const taken = new Map<Family, Set<bigint>>();
  for (const [f, c] of target) taken.set(f, new Set(reservedIn(c)));

  const entries: ServiceMapping[] = [];
  const claims: Claim[] = [];
  for (const s of services) {
    const e: ServiceMapping = {
      namespace: s.namespace,
      name: s.name,
      type: s.type,
      action: 'skip',
      reason: '',
      from: [...s.clusterIPs],
      to: [],
      tier: readTier(s, tierKey),
      isDNS: dnsKey !== undefined && serviceKey(s) === dnsKey,
      isKubernetes: isKubernetesService(s),
    };
    entries.push(e);
    if (s.type === 'ExternalName') {
      e.reason = 'ExternalName Service: has no ClusterIP, never touched';
      continue;
    }
    if (s.headless) {
      e.reason = 'headless Service (clusterIP: None): never touched';
      continue;
    }
    if (s.clusterIPs.length === 0) {
      e.reason = 'no ClusterIP recorded: nothing to move';
      continue;
    }
    const ips: IP[] = [];
    try {
      for (const a of s.clusterIPs) ips.push(parseIP(a));
    } catch {
      e.reason = `unreadable ClusterIP ${s.clusterIPs.join(',')}: not touched`;
      continue;
    }
    const keptByUser = keep.has(serviceKey(s));
    const lb = s.type === 'LoadBalancer' && opts.loadBalancers !== 'move';
    if (!e.isKubernetes && (keptByUser || lb)) {
      e.action = 'keep';
      e.keptBecause = keptByUser ? 'keep-flag' : 'load-balancer';
      e.to = [...e.from];
      e.reason = keptByUser
        ? 'kept (--keep): keeps its IP; the old range stays represented by a ServiceCIDR covering the kept IPs'
        : 'LoadBalancer: keeps its IP (moving it would release the cloud load balancer); the old range stays represented by a ServiceCIDR covering the kept IPs';
      for (const ip of ips) if (target.get(ip.family) && contains(target.get(ip.family)!, ip)) taken.get(ip.family)!.add(ip.value);
      continue;
    }

    // Per address: moves, already inside NEW, or kept because NEW has no range of its family.
    const notes: string[] = [];
    let moving = 0;
    let already = 0;
    e.to = ips.map((ip) => formatIP(ip));
    ips.forEach((ip, i) => {
      const t = target.get(ip.family);
      if (!t) {
        notes.push(`its ${familyName(ip.family)} address is kept: the new range has no ${familyName(ip.family)} CIDR`);
        return;
      }
      if (contains(t, ip)) {
        already++;
        taken.get(ip.family)!.add(ip.value);
        return;
      }
      moving++;
      if (e.isKubernetes) {
        e.to[i] = formatIP(firstIP(t));
        return;
      }
      const old = containingRange(olds, ip);
      const claim: Claim = { entry: e, index: i, ip };
      if (old) {
        const offset = ip.value - old.network;
        if (offset < cidrSize(t)) claim.preferred = t.network + offset;
      }
      claims.push(claim);
    });
    if (moving === 0) {
      e.action = 'keep';
      e.keptBecause = already > 0 ? 'already-in-range' : 'no-family';
      e.reason = already > 0 && notes.length === 0 ? 'already inside the new range' : [already > 0 ? 'already inside the new range' : '', ...notes].filter(Boolean).join('; ');
      continue;
    }
    e.action = 'move';
    if (e.isKubernetes) {
      const ignored = keptByUser ? '; --keep ignored: its IP follows the apiserver flag' : '';
      e.reason = `default/kubernetes: the apiserver recreates it at the first IP of the new range after its restart${ignored}`;
    } else {
      e.reason = '';
    }
    if (notes.length > 0) e.reason = [e.reason, ...notes].filter(Boolean).join('; ');
  }

  // Pass 1: preferred (offset-preserving) addresses, in claim order.
  claims.sort(claimOrder);
  const fallback: Claim[] = [];
  for (const c of claims) {
    const set = taken.get(c.ip.family)!;
    if (c.preferred !== undefined && !set.has(c.preferred)) {
      set.add(c.preferred);
      c.entry.to[c.index] = formatIP({ family: c.ip.family, value: c.preferred });
      addReason(c.entry, `offset kept: ${formatIP(c.ip)} → ${formatIP({ family: c.ip.family, value: c.preferred })}`);
    } else {
      fallback.push(c);
    }
  }
  // Pass 2: the rest get the lowest free usable address of NEW, in claim order.
  const cursor = new Map<Family, bigint>();
  for (const c of fallback) {
    const t = target.get(c.ip.family)!;
    const set = taken.get(c.ip.family)!;
    const u = usable(t);
    let v = cursor.get(c.ip.family) ?? u.first;
    while (v <= u.last && set.has(v)) v++;
    const why = c.preferred === undefined
      ? (containingRange(olds, c.ip) ? 'its offset does not fit the new range' : 'not inside a known service range')
      : 'its offset address is taken or reserved';
    if (v > u.last) {
      c.entry.to[c.index] = formatIP(c.ip);
      c.entry.action = 'keep';
      c.entry.keptBecause = 'no-room';
      addReason(c.entry, `the new range is full: no free address for ${formatIP(c.ip)} (kept)`);
      continue;
    }
    set.add(v);
    cursor.set(c.ip.family, v + 1n);
    c.entry.to[c.index] = formatIP({ family: c.ip.family, value: v });
    addReason(c.entry, `${why}: ${formatIP(c.ip)} → ${formatIP({ family: c.ip.family, value: v })} (lowest free address)`);
  }
  for (const e of entries) {
    if (e.action === 'move' && e.isDNS) e.reason = `cluster DNS Service (found by ${snap.dnsService?.foundBy ?? '?'}); ${e.reason}`;
  }
  return entries;
}

function addReason(e: ServiceMapping, text: string): void {
  e.reason = e.reason ? `${e.reason}; ${text}` : text;
}

/**
 * The CIDRs that keep `ips` represented once the old ranges are drained: every address's keptBlock (or the old
 * range itself when that is smaller), minus addresses another retained range already covers, merged into the
 * fewest aligned CIDRs covering exactly the union of those blocks. Merging keeps every address interior: each
 * block lies inside exactly one merged CIDR.
 */
export function keptRanges(
  ips: readonly string[],
  oldRanges: readonly Cidr[],
  opts: { minPrefix?: Readonly<Record<Family, number>>; covered?: readonly Cidr[] } = {},
): string[] {
  const min = opts.minPrefix ?? MIN_KEPT_PREFIX;
  const blocks: Cidr[] = [];
  for (const a of ips) {
    let ip: IP;
    try { ip = parseIP(a); } catch { continue; }
    if ((opts.covered ?? []).some((c) => contains(c, ip))) continue;
    let block = keptBlock(ip, min[ip.family]);
    const old = containingRange(oldRanges, ip);
    if (old && old.prefix > block.prefix) block = old;
    blocks.push(block);
  }
  return merge(blocks).flatMap(rangeToCidrs).map(formatCidr);
}

/** Addresses of `c` the mapping may hand out (usable minus the first IP). */
export function assignableCount(c: Cidr): bigint {
  const u = usable(c);
  const inside = firstIP(c).value >= u.first && firstIP(c).value <= u.last ? 1n : 0n;
  return u.count - inside;
}
