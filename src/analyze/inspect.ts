import type { Snapshot } from '../cluster/types.ts';
import { addressPlan } from './addressing.ts';
import { computeCapacity, type Capacity } from './capacity.ts';
import type { AvoidRange } from './catalog.ts';
import { findConflicts, type Conflict } from './conflicts.ts';
import { readiness, type ReadinessFact } from './readiness.ts';
import { ipamOwnerFacts } from './ipam-owner.ts';
import { ownerCapabilityOf } from '../ipam/registry.ts';

export interface PlanEntry {
  cidr: string;
  labels: string[];
  sources: string[];
}

/**
 * The `inspect` report. Its JSON form is the documented, stable contract (docs/output.md):
 * fields are only ever added, never renamed or removed, within a major version.
 */
export interface InspectReport {
  apiVersion: 'kube-renumber.io/v1';
  kind: 'InspectReport';
  source: Snapshot['source'];
  kubernetesVersion?: string;
  serviceCIDRApi?: string | null;
  /** Where the cluster runs and who installed it (src/platforms/), with the evidence and the ranges it reserves. */
  platform: Snapshot['platform'];
  cni: Snapshot['cni'];
  serviceCIDRs: PlanEntry[];
  podCIDRs: PlanEntry[];
  pools: Array<PlanEntry & { name: string; blockSize: number; disabled: boolean; nodeSelector?: string }>;
  nodeCIDRs: PlanEntry[];
  masqueradeCIDRs: PlanEntry[];
  kubernetesServiceIPs: string[];
  dnsService?: Snapshot['dnsService'];
  conflicts: Conflict[];
  capacity: Capacity;
  readiness: ReadinessFact[];
  /**
   * Which fix fits a range that only ran out (one line each; absent when none ran out): extend it where nothing
   * conflicts and the range can take a second one, else move it.
   */
  recommendations?: string[];
  warnings: string[];
}

/** A Service range this full (used / usable) counts as running out. */
export const NEARLY_FULL = 0.9;

/**
 * The fix for each range that ran out: a Service range at least NEARLY_FULL used is extended when no conflict names it
 * (plan --extend-service-cidr: a second ServiceCIDR, nothing restarts) and moved when one does; nodes waiting for a
 * podCIDR under node IPAM can only be moved (kube-controller-manager takes one cluster CIDR per family); under Calico IPAM
 * (`podPath` calico) the nodes' podCIDRs go unused and kube-controller-manager can stop handing them out; an enabled
 * Calico pool with no free block is extended (plan --extend-pod-cidr: a second pool) when no conflict names it.
 */
export function recommendations(capacity: Capacity, conflicts: readonly Conflict[], podPath?: string): string[] {
  const out: string[] = [];
  const named = (cidr: string) => conflicts.some((c) => c.severity !== 'info' && (c.a.cidr === cidr || c.b.cidr === cidr));
  for (const s of capacity.serviceRanges) {
    const usable = Number(s.usable);
    if (!Number.isFinite(usable) || usable <= 0 || s.used / usable < NEARLY_FULL) continue;
    const pct = Math.round((100 * s.used) / usable);
    out.push(named(s.cidr)
      ? `the Service range ${s.cidr} is ${pct}% used and conflicts with another range: move it (kube-renumber suggest --for services, then plan --service-cidr NEW)`
      : `the Service range ${s.cidr} is ${pct}% used and conflicts with nothing: extend it (kube-renumber suggest --for services, then plan --extend-service-cidr ADD; nothing restarts) rather than move it`);
  }
  for (const p of capacity.pools ?? []) {
    const total = Number(p.blocksTotal);
    if (p.disabled || !Number.isFinite(total) || total <= 0 || p.blocksUsed < total) continue;
    out.push(named(p.cidr)
      ? `the Calico pool ${p.name} ${p.cidr} has no free block (${p.blocksUsed} of ${total} /${p.blockSize} blocks taken) and conflicts with another range: move it (kube-renumber suggest --for pods, then plan --pod-cidr NEW)`
      : `the Calico pool ${p.name} ${p.cidr} has no free block (${p.blocksUsed} of ${total} /${p.blockSize} blocks taken) and conflicts with nothing: extend it (kube-renumber suggest --for pods, then plan --extend-pod-cidr ADD: a second pool, nothing restarts) rather than move it`);
  }
  for (const n of capacity.nodeIpam) {
    if (n.nodesWaiting === 0) continue;
    if (podPath === 'calico') {
      out.push(`${n.nodesWaiting} node(s) wait for a podCIDR from ${n.clusterCIDR}, but Calico IPAM hands out the pod addresses here, not the nodes' podCIDRs: `
        + 'set --allocate-node-cidrs=false on kube-controller-manager (and, once its pool runs out of blocks, extend it: plan --extend-pod-cidr ADD) rather than move the range');
      continue;
    }
    out.push(`${n.nodesWaiting} node(s) wait for a podCIDR from ${n.clusterCIDR}: kube-controller-manager's node IPAM takes one cluster CIDR per family, so it cannot be extended: move it (kube-renumber suggest --for pods, then plan --pod-cidr NEW)`);
  }
  return out;
}

export function inspect(snap: Snapshot, opts: { avoid?: readonly AvoidRange[] } = {}): InspectReport {
  const plan = addressPlan(snap);
  const conflicts = findConflicts(snap, opts);
  const capacity = computeCapacity(snap);
  const owner = ipamOwnerFacts(snap);
  const cap = owner ? ownerCapabilityOf(owner.kind) : undefined;
  const recommended = recommendations(capacity, conflicts, cap?.supported ? cap.path : undefined);
  const entries = (role: string): PlanEntry[] =>
    plan.filter((g) => g.role === role).map((g) => ({ cidr: g.cidr, labels: g.labels, sources: g.sources }));
  return {
    apiVersion: 'kube-renumber.io/v1',
    kind: 'InspectReport',
    source: snap.source,
    kubernetesVersion: snap.kubernetesVersion,
    serviceCIDRApi: snap.serviceCIDRApi,
    platform: snap.platform,
    cni: snap.cni,
    serviceCIDRs: entries('service'),
    podCIDRs: entries('pod'),
    pools: snap.pools.map((p) => ({
      name: p.name, cidr: p.cidr, blockSize: p.blockSize, disabled: p.disabled, nodeSelector: p.nodeSelector,
      labels: [`Calico pool ${p.name}`], sources: [`IPPool/${p.name}`],
    })),
    nodeCIDRs: entries('node'),
    masqueradeCIDRs: entries('masquerade'),
    kubernetesServiceIPs: snap.kubernetesServiceIPs,
    dnsService: snap.dnsService,
    conflicts,
    capacity,
    readiness: readiness(snap),
    ...(recommended.length > 0 ? { recommendations: recommended } : {}),
    warnings: snap.warnings,
  };
}
