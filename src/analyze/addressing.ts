import type { ClusterRange, RangeRole, Snapshot } from '../cluster/types.ts';
import { compareCidr, formatCidr, merge, rangeToCidrs, tryParseCidr, type Cidr } from '../net/index.ts';

/** One distinct CIDR in one role, with every source that names it. */
export interface RangeGroup {
  cidr: string;
  parsed: Cidr;
  role: RangeRole;
  labels: string[];
  sources: string[];
}

const ROLE_ORDER: RangeRole[] = ['service', 'pod', 'pool', 'masquerade', 'node', 'node-pod'];

/**
 * The address plan at a glance: the snapshot's ranges grouped by (role, CIDR). Node podCIDRs are not
 * listed one by one (a cluster may have thousands); they are summarised by `nodePodCoverage`.
 */
export function addressPlan(snap: Snapshot): RangeGroup[] {
  const groups = new Map<string, RangeGroup>();
  for (const r of snap.ranges) {
    if (r.role === 'node-pod') continue;
    const parsed = tryParseCidr(r.cidr);
    if (!parsed) continue;
    const key = `${r.role} ${formatCidr(parsed)}`;
    let g = groups.get(key);
    if (!g) {
      g = { cidr: formatCidr(parsed), parsed, role: r.role, labels: [], sources: [] };
      groups.set(key, g);
    }
    if (!g.labels.includes(r.label)) g.labels.push(r.label);
    if (!g.sources.includes(r.source)) g.sources.push(r.source);
  }
  return [...groups.values()].sort(
    (a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role) || compareCidr(a.parsed, b.parsed),
  );
}

/** Node podCIDRs as parsed CIDRs with the node name. */
export function nodePodCIDRs(snap: Snapshot): Array<{ node: string; cidr: Cidr }> {
  const out: Array<{ node: string; cidr: Cidr }> = [];
  for (const n of snap.nodes) {
    for (const s of n.podCIDRs) {
      const c = tryParseCidr(s);
      if (c) out.push({ node: n.name, cidr: c });
    }
  }
  return out;
}

/** The union of all node podCIDRs, as a minimal list of CIDRs (for avoidance and display). */
export function nodePodCoverage(snap: Snapshot): Cidr[] {
  return merge(nodePodCIDRs(snap).map((x) => x.cidr)).flatMap(rangeToCidrs);
}

export function rangesOf(snap: Snapshot, role: RangeRole): ClusterRange[] {
  return snap.ranges.filter((r) => r.role === role);
}

/** Distinct parsed CIDRs of a role. */
export function cidrsOf(snap: Snapshot, role: RangeRole): Cidr[] {
  const seen = new Map<string, Cidr>();
  for (const r of rangesOf(snap, role)) {
    const c = tryParseCidr(r.cidr);
    if (c) seen.set(formatCidr(c), c);
  }
  return [...seen.values()].sort(compareCidr);
}
