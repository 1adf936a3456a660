import type { Snapshot } from '../cluster/types.ts';
import {
  contains, formatCidr, formatIP, merge, overlaps, parseCidr, subtract, toRange, tryParseCidr, type Cidr, type IP, parseIP,
} from '../net/index.ts';
import { firstAndMore } from '../text.ts';
import { addressPlan, cidrsOf, nodePodCIDRs, type RangeGroup } from './addressing.ts';
import { CATALOG, type AvoidRange, type Severity } from './catalog.ts';
import { holderText, LIVE_KIND_NAME, liveIn, liveIndex, MAX_COLLISIONS, type LiveAddress, type LiveKind } from './live.ts';

export type ConflictKind =
  | 'overlap'                    // two cluster ranges of roles that must be disjoint overlap
  | 'legacy-kops-pool'           // examples/kops-legacy-pool: the Calico pool is the whole nonMasqueradeCIDR, so it holds the service range
  | 'pool-outside-cluster-cidr'  // a Calico pool outside every pod range kube-proxy/kube-controller-manager know
  | 'outside-masquerade'         // kOps: pod/service range not inside nonMasqueradeCIDR
  | 'catalog'                    // a cluster range overlaps a well-known range
  | 'avoid'                      // a cluster range overlaps a range the user asked to avoid
  | 'node-podcidr-outside'       // a node's podCIDR is outside kube-controller-manager's --cluster-cidr
  | 'node-podcidr-overlap'       // two nodes' podCIDRs overlap, or one overlaps a service range
  | 'node-ip-inside'             // a node address lies inside a pod, pool or service range
  | 'platform-reserved'          // a range the platform reserves for itself (snap.platform.reserved) overlaps one
  | 'live-address'               // live ClusterIPs, pod IPs (or node addresses) inside a range they must not be in (a pod or service range, a well-known or avoided range)
  | 'live-collision';            // two holders of one address: a pod IP that is also a ClusterIP or a node address, ...

export interface ConflictSide {
  cidr: string;
  /** What the range is, e.g. "service range (ServiceCIDR/kubernetes, kube-apiserver --service-cluster-ip-range)". */
  what: string;
}

export interface Conflict {
  severity: Severity;
  kind: ConflictKind;
  a: ConflictSide;
  b: ConflictSide;
  reason: string;
}

const ROLE_NAME: Record<string, string> = {
  service: 'service range',
  pod: 'pod range',
  pool: 'Calico pool',
  node: 'node network',
  masquerade: 'nonMasqueradeCIDR',
};

function side(g: RangeGroup): ConflictSide {
  return { cidr: g.cidr, what: `${ROLE_NAME[g.role] ?? g.role} (${g.sources.join(', ')})` };
}

/** Why two roles must not overlap, or undefined when overlapping is expected. */
function overlapReason(a: string, b: string): string | undefined {
  const pair = [a, b].sort().join('+');
  switch (pair) {
    case 'pod+service':
    case 'pool+service':
      return 'a ClusterIP and a pod IP can be the same address: traffic to one reaches the other';
    case 'node+service':
      return 'node addresses inside the service range are captured by kube-proxy rules';
    case 'node+pod':
    case 'node+pool':
      return 'node addresses inside the pod range are routed to pods instead of nodes';
    case 'pool+pool':
      return 'Calico IP pools must not overlap';
    case 'masquerade+node':
      return 'kOps refuses a nonMasqueradeCIDR that overlaps the node network (networkCIDR): node traffic would not be masqueraded';
    default:
      return undefined;
  }
}

export interface ConflictOptions {
  avoid?: readonly AvoidRange[];
}

/** Every conflict in the snapshot, most severe first. Pure. */
export function findConflicts(snap: Snapshot, opts: ConflictOptions = {}): Conflict[] {
  const out: Conflict[] = [];
  const groups = addressPlan(snap);
  const masq = groups.filter((g) => g.role === 'masquerade');
  const podGroups = groups.filter((g) => g.role === 'pod');

  // Pairwise among cluster ranges.
  for (let i = 0; i < groups.length; i++) {
    for (let j = i + 1; j < groups.length; j++) {
      const x = groups[i]!;
      const y = groups[j]!;
      if (!overlaps(x.parsed, y.parsed)) continue;
      // Node networks guessed from node addresses are checked address by address below instead.
      if (isGuessedNodeNetwork(x) || isGuessedNodeNetwork(y)) continue;
      const reason = overlapReason(x.role, y.role);
      if (!reason) continue;
      const pool = x.role === 'pool' ? x : y.role === 'pool' ? y : undefined;
      const svc = x.role === 'service' ? x : y.role === 'service' ? y : undefined;
      if (pool && svc && masq.some((m) => contains(pool.parsed, m.parsed))) {
        out.push({
          severity: 'error', kind: 'legacy-kops-pool', a: side(pool), b: side(svc),
          reason: 'the Calico pool is the whole nonMasqueradeCIDR (kOps clusters made before 1.7), so it contains the service '
            + 'range and pod IPs can collide with ClusterIPs; create a pool from the pod range and delete this one',
        });
        continue;
      }
      out.push({ severity: 'error', kind: 'overlap', a: side(x), b: side(y), reason });
    }
  }

  // Pools must sit inside the cluster CIDR kube-proxy and kube-controller-manager know.
  if (podGroups.length > 0) {
    for (const p of groups.filter((g) => g.role === 'pool')) {
      if (podGroups.some((g) => contains(g.parsed, p.parsed))) continue;
      if (masq.some((m) => contains(p.parsed, m.parsed))) continue; // reported as legacy-kops-pool
      const pod = podGroups.find((g) => g.parsed.family === p.parsed.family) ?? podGroups[0]!;
      out.push({
        severity: 'warning', kind: 'pool-outside-cluster-cidr', a: side(p), b: side(pod),
        reason: 'the pool is not inside the cluster CIDR: traffic from its pods is masqueraded (NATed) where it should not be',
      });
    }
  }

  // kOps: podCIDR and service range must sit inside nonMasqueradeCIDR.
  for (const m of masq) {
    for (const g of groups) {
      if ((g.role !== 'pod' && g.role !== 'service') || g.parsed.family !== m.parsed.family) continue;
      if (contains(m.parsed, g.parsed)) continue;
      out.push({
        severity: 'warning', kind: 'outside-masquerade', a: side(g), b: side(m),
        reason: 'kOps expects podCIDR and serviceClusterIPRange inside nonMasqueradeCIDR; traffic to this range is masqueraded',
      });
    }
  }

  // Well-known ranges and the user's own, once per distinct CIDR whatever roles it plays. A tool's default
  // (severity info) is reported only when the cluster range lies inside it, i.e. the cluster uses that default.
  const byCidr = new Map<string, RangeGroup[]>();
  for (const g of groups) byCidr.set(g.cidr, [...(byCidr.get(g.cidr) ?? []), g]);
  for (const same of byCidr.values()) {
    const g = same[0]!;
    const a: ConflictSide = { cidr: g.cidr, what: same.map((x) => side(x).what).join('; ') };
    for (const k of CATALOG) {
      const kc = parseCidr(k.cidr);
      if (!overlaps(g.parsed, kc)) continue;
      if (k.severity === 'info' && !contains(kc, g.parsed)) continue;
      out.push({ severity: k.severity, kind: 'catalog', a, b: { cidr: k.cidr, what: k.name }, reason: k.reason });
    }
    for (const av of opts.avoid ?? []) {
      const ac = tryParseCidr(av.cidr);
      if (!ac || !overlaps(g.parsed, ac)) continue;
      out.push({
        severity: 'warning', kind: 'avoid', a, b: { cidr: av.cidr, what: `avoided range (${av.from})` },
        reason: av.reason || 'listed as a range to avoid',
      });
    }
  }

  out.push(...nodePodCIDRConflicts(snap), ...nodeAddressConflicts(snap), ...platformReservedConflicts(snap, groups, opts.avoid ?? []),
    ...liveConflicts(snap, groups, opts.avoid ?? []));
  const rank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };
  return out.sort((p, q) => rank[p.severity] - rank[q.severity]);
}

/**
 * The ranges the platform reserves for itself (src/platform/: OpenShift's OVN-Kubernetes join, transit and
 * masquerade subnets, ...) against the cluster's pod, pool and service ranges (error: the same addresses twice),
 * the catalog's networks that live beside clusters (its warning entries: Tailscale's 100.64.0.0/10, Docker, default
 * VPCs; the error entries are skipped, since a platform reserves link-local on purpose, and so are the info-level
 * tool defaults) and the ranges the user asked to avoid. Self-contained: reads only snap.platform.reserved.
 */
function platformReservedConflicts(snap: Snapshot, groups: RangeGroup[], avoid: readonly AvoidRange[]): Conflict[] {
  const out: Conflict[] = [];
  for (const r of snap.platform?.reserved ?? []) {
    const rc = tryParseCidr(r.cidr);
    if (!rc) continue;
    const a: ConflictSide = { cidr: r.cidr, what: `reserved by ${snap.platform!.title}: ${r.reason}` };
    for (const g of groups) {
      if ((g.role !== 'pod' && g.role !== 'pool' && g.role !== 'service') || !overlaps(rc, g.parsed)) continue;
      out.push({ severity: 'error', kind: 'platform-reserved', a, b: side(g), reason: `${snap.platform!.title} uses this range internally: cluster addresses in it collide with the platform's own` });
    }
    for (const k of CATALOG) {
      if (k.severity !== 'warning' || !overlaps(rc, parseCidr(k.cidr))) continue;
      out.push({ severity: 'warning', kind: 'platform-reserved', a, b: { cidr: k.cidr, what: k.name }, reason: k.reason });
    }
    for (const av of avoid) {
      const ac = tryParseCidr(av.cidr);
      if (!ac || !overlaps(rc, ac)) continue;
      out.push({ severity: 'warning', kind: 'platform-reserved', a, b: { cidr: av.cidr, what: `avoided range (${av.from})` }, reason: av.reason || 'listed as a range to avoid' });
    }
  }
  return out;
}

/** The node network derived from node InternalIPs (not configured anywhere). */
export const GUESSED_NODE_SOURCE = 'node InternalIPs';
function isGuessedNodeNetwork(g: RangeGroup): boolean {
  return g.role === 'node' && g.sources.every((s) => s === GUESSED_NODE_SOURCE);
}

/** Node podCIDRs outside --cluster-cidr, overlapping each other, or overlapping a service range. */
function nodePodCIDRConflicts(snap: Snapshot): Conflict[] {
  const out: Conflict[] = [];
  const nodes = nodePodCIDRs(snap);
  if (nodes.length === 0) return out;
  const kcmCIDRs = snap.controllerManagers.flatMap((c) => c.clusterCIDR ?? []).map((s) => tryParseCidr(s)).filter((c): c is Cidr => !!c);
  const clusterCIDRs = kcmCIDRs.length > 0 ? kcmCIDRs : cidrsOf(snap, 'pod');
  const clusterSource = kcmCIDRs.length > 0 ? 'kube-controller-manager --cluster-cidr' : 'pod range';
  if (clusterCIDRs.length > 0) {
    const outside = new Map<string, string[]>();
    for (const n of nodes) {
      if (clusterCIDRs.some((c) => contains(c, n.cidr))) continue;
      if (!clusterCIDRs.some((c) => c.family === n.cidr.family)) continue;
      const key = formatCidr(clusterCIDRs.find((c) => c.family === n.cidr.family)!);
      const list = outside.get(key) ?? [];
      list.push(`${n.node} ${formatCidr(n.cidr)}`);
      outside.set(key, list);
    }
    for (const [cluster, list] of outside) {
      out.push({
        severity: 'error', kind: 'node-podcidr-outside',
        a: { cidr: list.length === 1 ? list[0]!.split(' ')[1]! : `${list.length} node podCIDRs`, what: `node podCIDR (${firstAndMore(list, 3)})` },
        b: { cidr: cluster, what: clusterSource },
        reason: 'node IPAM fails ("cidr is out the range of cluster cidr") and kube-controller-manager may not start; '
          + 'podCIDR is immutable, so these nodes must be re-registered',
      });
    }
  }
  // Overlaps among nodes: sort by start and sweep.
  const sorted = [...nodes].sort((p, q) => (p.cidr.family - q.cidr.family) || (p.cidr.network < q.cidr.network ? -1 : p.cidr.network > q.cidr.network ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (prev.node !== cur.node && overlaps(prev.cidr, cur.cidr)) {
      out.push({
        severity: 'error', kind: 'node-podcidr-overlap',
        a: { cidr: formatCidr(prev.cidr), what: `node podCIDR (${prev.node})` },
        b: { cidr: formatCidr(cur.cidr), what: `node podCIDR (${cur.node})` },
        reason: 'two nodes hand out the same pod addresses',
      });
    }
  }
  const services = addressPlan(snap).filter((g) => g.role === 'service');
  for (const s of services) {
    const hit = nodes.filter((n) => overlaps(n.cidr, s.parsed));
    if (hit.length === 0) continue;
    out.push({
      severity: 'error', kind: 'node-podcidr-overlap',
      a: { cidr: hit.length === 1 ? formatCidr(hit[0]!.cidr) : `${hit.length} node podCIDRs`, what: `node podCIDR (${firstAndMore(hit.map((h) => h.node), 3)})` },
      b: side(s),
      reason: 'pod addresses on these nodes can equal ClusterIPs',
    });
  }
  return out;
}

/** Node addresses that sit inside a pod, pool or service range. */
function nodeAddressConflicts(snap: Snapshot): Conflict[] {
  const out: Conflict[] = [];
  const targets = addressPlan(snap).filter((g) => g.role === 'service' || g.role === 'pod' || g.role === 'pool');
  const hits = new Map<RangeGroup, string[]>();
  for (const n of snap.nodes) {
    for (const addr of [...n.internalIPs, ...n.externalIPs]) {
      let ip: IP;
      try { ip = parseIP(addr); } catch { continue; }
      for (const t of targets) {
        if (!contains(t.parsed, ip)) continue;
        const list = hits.get(t) ?? [];
        list.push(`${n.name} ${formatIP(ip)}`);
        hits.set(t, list);
      }
    }
  }
  for (const [t, list] of hits) {
    out.push({
      severity: 'error', kind: 'node-ip-inside',
      a: { cidr: list.length === 1 ? list[0]!.split(' ')[1]! : `${list.length} node addresses`, what: `node address (${firstAndMore(list, 3)})` },
      b: side(t),
      reason: t.role === 'service'
        ? 'kube-proxy captures traffic to these node addresses as ClusterIP traffic'
        : 'traffic to these node addresses is routed into the pod network',
    });
  }
  return out;
}

/** At most this many collisions are listed one by one. */
const MAX_LISTED_COLLISIONS = 10;

/** "3 pod IPs" / "10.1.2.3" and "pod IP (ns/a, ns/b and 1 more)" for live addresses of one kind. */
function liveSide(kind: LiveKind, count: number, first: readonly LiveAddress[]): ConflictSide {
  const name = LIVE_KIND_NAME[kind];
  const singular = name.replace(/(address)es$|s$/, '$1');
  const holders = first.map((a) => `${a.holder} ${formatIP(a)}`);
  const more = count - first.length;
  return {
    cidr: count === 1 ? formatIP(first[0]!) : `${count} ${name}`,
    what: `live ${singular} (${holders.join(', ')}${more > 0 ? ` and ${more} more` : ''})`,
  };
}

/**
 * Live addresses where they must not be, whatever the configured ranges say (occupied means configured or live):
 *  - one address held twice (a pod IP that is also a ClusterIP or another pod's or node's address);
 *  - ClusterIPs inside a pod range, pool or configured node network, pod IPs inside a service range, unless the
 *    address lies in a range of its own role that overlaps that range (then the range overlap is the finding);
 *  - ClusterIPs, pod IPs and node addresses inside a well-known range (severity error or warning) or an --avoid
 *    range, outside every cluster range already reported against it: e.g. EKS custom networking, where pods hold
 *    100.64.x addresses and no pod range is configured anywhere.
 * Node addresses inside pod and service ranges are judged by nodeAddressConflicts.
 */
function liveConflicts(snap: Snapshot, groups: readonly RangeGroup[], avoid: readonly AvoidRange[]): Conflict[] {
  const out: Conflict[] = [];
  const index = liveIndex(snap);
  index.collisions.slice(0, MAX_LISTED_COLLISIONS).forEach((c) => {
    out.push({
      severity: 'error', kind: 'live-collision',
      a: { cidr: formatIP(c.a), what: holderText(c.a) }, b: { cidr: formatIP(c.b), what: holderText(c.b) },
      reason: `one address, two holders (${holderText(c.a)} and ${holderText(c.b)}): traffic to it reaches only one of them`
        + (index.collisions.length > MAX_LISTED_COLLISIONS ? ` (${index.collisions.length >= MAX_COLLISIONS ? 'at least ' : ''}${index.collisions.length} such addresses, ${MAX_LISTED_COLLISIONS} listed)` : ''),
    });
  });

  const own: Partial<Record<LiveKind, RangeGroup[]>> = {
    'cluster-ip': groups.filter((g) => g.role === 'service'),
    pod: groups.filter((g) => g.role === 'pod' || g.role === 'pool'),
  };
  const foreign: Array<{ roles: string[]; kind: LiveKind; reason: string }> = [
    { roles: ['pod', 'pool'], kind: 'cluster-ip', reason: 'a ClusterIP inside the pod range can be handed to a pod as well: traffic to one reaches the other' },
    { roles: ['node'], kind: 'cluster-ip', reason: 'kube-proxy captures traffic to these addresses of the node network as ClusterIP traffic' },
    { roles: ['service'], kind: 'pod', reason: 'a pod IP inside the service range can equal a ClusterIP: traffic to one reaches the other' },
  ];
  for (const f of foreign) {
    for (const g of groups.filter((x) => f.roles.includes(x.role) && !isGuessedNodeNetwork(x))) {
      const mine = (own[f.kind] ?? []).filter((o) => overlaps(o.parsed, g.parsed));
      const { count, first } = liveIn(index, toRange(g.parsed), {
        kinds: [f.kind], limit: 3, ...(mine.length > 0 ? { skip: (a: LiveAddress) => mine.some((o) => contains(o.parsed, a)) } : {}),
      });
      if (count > 0) out.push({ severity: 'error', kind: 'live-address', a: liveSide(f.kind, count, first), b: side(g), reason: f.reason });
    }
  }

  const known: Array<{ cidr: string; what: string; severity: Severity; reason: string }> = [
    ...CATALOG.filter((k) => k.severity !== 'info').map((k) => ({ cidr: k.cidr, what: k.name, severity: k.severity, reason: k.reason })),
    ...avoid.map((a) => ({ cidr: a.cidr, what: `avoided range (${a.from})`, severity: 'warning' as Severity, reason: a.reason || 'listed as a range to avoid' })),
  ];
  for (const k of known) {
    const kc = tryParseCidr(k.cidr);
    if (!kc) continue;
    // Addresses inside a cluster range that overlaps k are covered by that range's own finding.
    const covered = merge(groups.filter((g) => overlaps(g.parsed, kc)).map((g) => g.parsed));
    const rest = subtract(kc, covered);
    for (const kinds of [['cluster-ip'], ['pod'], ['node', 'host-network']] as const) {
      const kind = kinds[0];
      let count = 0;
      const first: LiveAddress[] = [];
      for (const r of rest) {
        const hit = liveIn(index, r, { kinds, limit: 3 - first.length });
        count += hit.count;
        first.push(...hit.first);
      }
      if (count === 0) continue;
      out.push({
        severity: k.severity, kind: 'live-address', a: liveSide(kind, count, first), b: { cidr: k.cidr, what: k.what },
        reason: k.reason,
      });
    }
  }
  return out;
}
