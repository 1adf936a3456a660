/**
 * Pre-flight checks `target-floor` (Service CIDR) and `pod-target-growth` (Pod CIDR): a warning when NEW is smaller
 * than the floor `suggest` keeps to, or holds fewer nodes than the cluster may reach where it says so (kOps
 * InstanceGroups, cluster-autoscaler, Cluster API, Karpenter), saying how long NEW lasts at the cluster's size.
 * Never a failure: the size check (`target-size`, `pod-target-size`) decides whether NEW holds today's cluster.
 */
import type { Family, Snapshot } from '../cluster/types.ts';
import { bits, formatCidr, type Cidr } from '../net/index.ts';
import { floorPrefix, lastsText, nodeReach, podNodeMask, POD_FLOOR_NODES, SERVICE_FLOOR_PREFIX } from '../analyze/sizing.ts';
import type { PreflightCheck } from './check.ts';

const familyOf = (ip: string): Family => (ip.includes(':') ? 6 : 4);

/** `target-floor`: each family of NEW at least the floor for Service ranges (IPv4 /20, IPv6 /112). */
export function serviceFloorCheck(snap: Snapshot, target: Map<Family, Cidr>): PreflightCheck {
  const small: string[] = [];
  const fine: string[] = [];
  for (const [f, t] of target) {
    const today = snap.services.reduce((n, s) => n + s.clusterIPs.filter((ip) => familyOf(ip) === f).length, 0);
    const size = 1n << BigInt(bits(f) - t.prefix);
    const usable = size > 2n ? size - 2n : size;
    const lasts = lastsText(usable, today, 'Service IPs');
    if (t.prefix > SERVICE_FLOOR_PREFIX[f]) small.push(`${formatCidr(t)} is smaller than the floor for Service ranges (/${SERVICE_FLOOR_PREFIX[f]}): ${lasts}`);
    else fine.push(`${formatCidr(t)}: ${lasts}`);
  }
  return small.length > 0
    ? { id: 'target-floor', status: 'warn', message: [...small, ...fine].join('; '), fix: 'a Service range that fills up means another migration: prefer a /20 or larger (`kube-renumber suggest --for services`)' }
    : { id: 'target-floor', status: 'pass', message: fine.join('; '), fix: '' };
}

/** The node mask NEW's nodes get for `family`: --node-mask-size (one per family of NEW, in its order), else the cluster's. */
function maskFor(snap: Snapshot, target: Map<Family, Cidr>, f: Family, nodeMaskSize: number | readonly number[] | undefined): number {
  if (typeof nodeMaskSize === 'number') return nodeMaskSize;
  if (Array.isArray(nodeMaskSize)) {
    const i = [...target.keys()].indexOf(f);
    const m = nodeMaskSize[i];
    if (typeof m === 'number') return m;
  }
  return podNodeMask(snap, f);
}

/**
 * `pod-target-growth`: each family of NEW holds at least the floor (256 nodes at the node mask) and the most nodes
 * the cluster may reach where it says so.
 */
export function podGrowthCheck(snap: Snapshot, target: Map<Family, Cidr>, nodeMaskSize?: number | readonly number[]): PreflightCheck {
  const today = snap.nodes.length;
  const reach = nodeReach(snap);
  const problems: string[] = [];
  const fine: string[] = [];
  for (const [f, t] of target) {
    const mask = maskFor(snap, target, f, nodeMaskSize);
    if (mask < t.prefix || mask > bits(f)) continue; // the size check reports a mask NEW cannot hold
    const holds = 1n << BigInt(mask - t.prefix);
    const lasts = `${formatCidr(t)} holds ${holds} nodes of /${mask} (${lastsText(holds, today, 'nodes')})`;
    const why: string[] = [];
    if (reach && holds < BigInt(reach.count)) why.push(`the cluster may reach ${reach.count} nodes (${reach.from}): NEW runs out at ${holds}`);
    const floor = floorPrefix('pods', f, mask);
    if (t.prefix > floor) why.push(`smaller than the floor for pod ranges (${POD_FLOOR_NODES} nodes of /${mask}: a /${floor})`);
    if (why.length > 0) problems.push(`${lasts}; ${why.join('; ')}`);
    else fine.push(`${lasts}${reach ? `; the cluster may reach ${reach.count} (${reach.from})` : ''}`);
  }
  if (problems.length > 0) {
    return {
      id: 'pod-target-growth', status: 'warn', message: [...problems, ...fine].join('; '),
      fix: 'a pod range that fills up leaves new nodes without pod addresses and means another migration: choose a larger range (`kube-renumber suggest --for pods` sizes it from the most nodes the cluster may reach)',
    };
  }
  return { id: 'pod-target-growth', status: 'pass', message: fine.join('; ') || 'no node mask fits NEW (see pod-target-size)', fix: '' };
}
