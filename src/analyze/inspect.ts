import type { Snapshot } from '../cluster/types.ts';
import { addressPlan } from './addressing.ts';
import { computeCapacity, type Capacity } from './capacity.ts';
import type { AvoidRange } from './catalog.ts';
import { findConflicts, type Conflict } from './conflicts.ts';
import { readiness, type ReadinessFact } from './readiness.ts';

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
  warnings: string[];
}

export function inspect(snap: Snapshot, opts: { avoid?: readonly AvoidRange[] } = {}): InspectReport {
  const plan = addressPlan(snap);
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
    conflicts: findConflicts(snap, opts),
    capacity: computeCapacity(snap),
    readiness: readiness(snap),
    warnings: snap.warnings,
  };
}
