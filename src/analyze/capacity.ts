import type { Snapshot } from '../cluster/types.ts';
import { bits, contains, formatCidr, parseIP, tryParseCidr, usable, type Cidr, type IP } from '../net/index.ts';
import { addressPlan, nodePodCoverage } from './addressing.ts';
import { toCount, type Count } from './calc.ts';

export interface NodeIpamCapacity {
  clusterCIDR: string;
  clusterCIDRSource: string;
  nodeMask: number;
  nodeMaskSource: string;
  /** 2^(nodeMask − cluster prefix). */
  maxNodes: Count;
  nodesWithPodCIDR: number;
  /** Nodes that have no podCIDR yet: waiting for node IPAM (the range may be exhausted). */
  nodesWaiting: number;
  nodesLeft: Count;
  addressesPerNode: Count;
  usablePerNode: Count;
}

export interface ServiceRangeCapacity {
  cidr: string;
  sources: string[];
  usable: Count;
  used: number;
  free: Count;
}

export interface PodRangeUsage {
  cidr: string;
  role: 'pod' | 'pool';
  sources: string[];
  podIPs: number;
}

export interface PoolCapacity {
  name: string;
  cidr: string;
  blockSize: number;
  disabled: boolean;
  blocksTotal: Count;
  blocksUsed: number;
  nodesWithBlocks: number;
  maxBlocksOnANode: number;
}

export interface Capacity {
  /** Max nodes node IPAM can give a podCIDR (first family's cluster CIDR); absent when unknown. */
  maxNodes?: Count;
  nodeIpam: NodeIpamCapacity[];
  nodes: { total: number; withPodCIDR: number; withoutPodCIDR: number; waiting: string[] };
  /**
   * The most nodes the cluster may reach, where it says so (kOps InstanceGroups, cluster-autoscaler, Cluster API,
   * Karpenter: src/cluster/node-limits.ts), each source with its groups; absent when nothing says it.
   */
  nodeLimits?: NonNullable<Snapshot['nodeLimits']>;
  /**
   * outsideKnownRanges: pod IPs in no known pod range, pool or node podCIDR; podRangeKnown: false when the
   * cluster shows none of those (the count then means nothing: the pod range is unknown).
   */
  pods: { total: number; hostNetwork: number; outsideKnownRanges: number; podRangeKnown: boolean };
  services: { total: number; withClusterIP: number; headless: number; externalName: number; loadBalancer: number; nodePort: number };
  serviceRanges: ServiceRangeCapacity[];
  podRanges: PodRangeUsage[];
  pools: PoolCapacity[];
}

const MAX_LISTED = 20;

function firstDefined<T>(...xs: Array<[T | undefined, string]>): [T, string] | undefined {
  for (const [v, s] of xs) if (v !== undefined) return [v, s];
  return undefined;
}

/** The node mask used for `family`, and where it came from. */
function nodeMaskFor(snap: Snapshot, family: 4 | 6): [number, string] {
  const kcm = snap.controllerManagers[0];
  const cmArgs = snap.kubeadm?.controllerManagerExtraArgs ?? {};
  const flag = family === 4 ? 'node-cidr-mask-size-ipv4' : 'node-cidr-mask-size-ipv6';
  const found = firstDefined<number>(
    [family === 4 ? kcm?.nodeCIDRMaskSizeIPv4 : kcm?.nodeCIDRMaskSizeIPv6, `kube-controller-manager --${flag}`],
    [kcm?.nodeCIDRMaskSize, 'kube-controller-manager --node-cidr-mask-size'],
    [cmArgs[flag] !== undefined ? Number(cmArgs[flag]) : undefined, `kubeadm controllerManager ${flag}`],
    [cmArgs['node-cidr-mask-size'] !== undefined ? Number(cmArgs['node-cidr-mask-size']) : undefined, 'kubeadm controllerManager node-cidr-mask-size'],
  );
  if (found && Number.isFinite(found[0])) return found;
  // The most common prefix among node podCIDRs of this family.
  const counts = new Map<number, number>();
  for (const n of snap.nodes) {
    for (const s of n.podCIDRs) {
      const c = tryParseCidr(s);
      if (c && c.family === family) counts.set(c.prefix, (counts.get(c.prefix) ?? 0) + 1);
    }
  }
  const best = [...counts].sort((a, b) => b[1] - a[1])[0];
  if (best) return [best[0], 'node podCIDRs'];
  return family === 4 ? [24, 'kube-controller-manager default'] : [64, 'kube-controller-manager default'];
}

/** The cluster-cidr a k3s-family platform read from its servers' node-args (or its default), one per family. */
function platformClusterCIDR(snap: Snapshot): string[] | undefined {
  const read = snap.ranges.filter((r) => r.role === 'pod' && /(\.io\/node-args| default) --cluster-cidr\b/.test(r.source)).map((r) => r.cidr);
  return read.length > 0 ? [...new Set(read)] : undefined;
}

/** The cluster CIDRs node IPAM allocates from, and where they came from. */
export function clusterCIDRs(snap: Snapshot): Array<{ cidr: Cidr; source: string }> {
  const kcm = snap.controllerManagers.find((c) => c.clusterCIDR && c.clusterCIDR.length > 0);
  const candidates: Array<[string[] | undefined, string]> = [
    [kcm?.clusterCIDR, 'kube-controller-manager --cluster-cidr'],
    [snap.kubeadm?.podSubnet, 'kubeadm podSubnet'],
    [snap.kops?.podCIDR ? [snap.kops.podCIDR] : undefined, 'kOps podCIDR'],
    // a platform's own pod range (k3s and RKE2 servers' cluster-cidr: node-args, else the documented default; src/platforms/)
    [platformClusterCIDR(snap), 'the servers\' cluster-cidr'],
    [snap.kubeProxy?.clusterCIDR ? snap.kubeProxy.clusterCIDR.split(',') : undefined, 'kube-proxy clusterCIDR'],
  ];
  for (const [list, source] of candidates) {
    const parsed = (list ?? []).map((s) => tryParseCidr(s.trim())).filter((c): c is Cidr => !!c);
    if (parsed.length > 0) return parsed.map((cidr) => ({ cidr, source }));
  }
  return [];
}

export function computeCapacity(snap: Snapshot): Capacity {
  const withPod = snap.nodes.filter((n) => n.podCIDRs.length > 0);
  const without = snap.nodes.filter((n) => n.podCIDRs.length === 0);
  const nodeIpam: NodeIpamCapacity[] = [];
  for (const { cidr, source } of clusterCIDRs(snap)) {
    const [mask, maskSource] = nodeMaskFor(snap, cidr.family);
    if (mask < cidr.prefix || mask > bits(cidr.family)) continue;
    const max = 1n << BigInt(mask - cidr.prefix);
    const inside = snap.nodes.filter((n) => n.podCIDRs.some((s) => {
      const c = tryParseCidr(s);
      return !!c && contains(cidr, c);
    })).length;
    const per = 1n << BigInt(bits(cidr.family) - mask);
    nodeIpam.push({
      clusterCIDR: formatCidr(cidr),
      clusterCIDRSource: source,
      nodeMask: mask,
      nodeMaskSource: maskSource,
      maxNodes: toCount(max),
      nodesWithPodCIDR: inside,
      nodesWaiting: without.length,
      nodesLeft: toCount(max > BigInt(inside) ? max - BigInt(inside) : 0n),
      addressesPerNode: toCount(per),
      usablePerNode: toCount(usable({ family: cidr.family, network: 0n, prefix: mask }).count),
    });
  }

  const plan = addressPlan(snap);
  const serviceGroups = plan.filter((g) => g.role === 'service');
  const clusterIPs: IP[] = [];
  const svcCounts = { total: snap.services.length, withClusterIP: 0, headless: 0, externalName: 0, loadBalancer: 0, nodePort: 0 };
  for (const s of snap.services) {
    if (s.type === 'ExternalName') svcCounts.externalName++;
    else if (s.headless) svcCounts.headless++;
    if (s.type === 'LoadBalancer') svcCounts.loadBalancer++;
    if (s.type === 'NodePort') svcCounts.nodePort++;
    if (s.clusterIPs.length > 0) svcCounts.withClusterIP++;
    for (const ip of s.clusterIPs) {
      try { clusterIPs.push(parseIP(ip)); } catch { /* reported as a warning by the snapshot */ }
    }
  }
  const serviceRanges = serviceGroups.map((g) => {
    const u = usable(g.parsed).count;
    const used = clusterIPs.filter((ip) => contains(g.parsed, ip)).length;
    return { cidr: g.cidr, sources: g.sources, usable: toCount(u), used, free: toCount(u > BigInt(used) ? u - BigInt(used) : 0n) };
  });

  const podGroups = plan.filter((g) => g.role === 'pod' || g.role === 'pool');
  const nodePods = podGroups.length > 0 ? [] : nodePodCoverage(snap);
  const podRangeKnown = podGroups.length > 0 || nodePods.length > 0;
  const podUse = podGroups.map(() => 0);
  let hostNetwork = 0;
  let outside = 0;
  for (const p of snap.pods) {
    if (p.hostNetwork) { hostNetwork++; continue; }
    for (const a of p.podIPs) {
      let ip: IP;
      try { ip = parseIP(a); } catch { continue; }
      let hit = false;
      podGroups.forEach((g, i) => {
        if (contains(g.parsed, ip)) { podUse[i]!++; hit = true; }
      });
      if (!hit && nodePods.some((c) => contains(c, ip))) hit = true;
      if (!hit && podRangeKnown) outside++;
    }
  }

  const pools = snap.pools.map((pool) => {
    const c = tryParseCidr(pool.cidr);
    const blocks = c ? snap.blocks.filter((b) => {
      const bc = tryParseCidr(b.cidr);
      return !!bc && contains(c, bc);
    }) : [];
    const perNode = new Map<string, number>();
    for (const b of blocks) if (b.node) perNode.set(b.node, (perNode.get(b.node) ?? 0) + 1);
    const total = c && pool.blockSize >= c.prefix ? 1n << BigInt(pool.blockSize - c.prefix) : 0n;
    return {
      name: pool.name, cidr: pool.cidr, blockSize: pool.blockSize, disabled: pool.disabled,
      blocksTotal: toCount(total), blocksUsed: blocks.length, nodesWithBlocks: perNode.size,
      maxBlocksOnANode: Math.max(0, ...perNode.values()),
    };
  });

  return {
    maxNodes: nodeIpam[0]?.maxNodes,
    nodeIpam,
    nodes: {
      total: snap.nodes.length, withPodCIDR: withPod.length, withoutPodCIDR: without.length,
      waiting: without.slice(0, MAX_LISTED).map((n) => n.name),
    },
    ...(snap.nodeLimits ? { nodeLimits: snap.nodeLimits } : {}),
    pods: { total: snap.pods.length, hostNetwork, outsideKnownRanges: outside, podRangeKnown },
    services: svcCounts,
    serviceRanges,
    podRanges: podGroups.map((g, i) => ({ cidr: g.cidr, role: g.role as 'pod' | 'pool', sources: g.sources, podIPs: podUse[i]! })),
    pools,
  };
}
