/**
 * The plan as a document: its apiVersion and kind, the MigrationPlan type every part writes into (the Service part,
 * the Pod part, an extension), its metadata, and the label and name prefix of every object a plan creates. Pure.
 * The Service part is built in ./service-plan.ts, the Pod part in ./pod-plan.ts, both assembled in ./plan.ts.
 */
import type { PodCIDRSpec } from './pod-spec.ts';
import type { Reference } from '../analyze/references.ts';
import { platformKindOf, type Snapshot } from '../cluster/types.ts';
import { type ClusterIdentity, identityOf, serverWithoutCredentials } from './identity.ts';
import type { PreflightCheck } from './preflight.ts';
import { planDistributionOf } from '../platform/registry.ts';
import type { ServiceMapping } from './service-mapping.ts';
import type { PlanStep } from './steps.ts';
import type { PodExtensionSpec, ServiceExtensionSpec } from './extend-spec.ts';
import type { NodePortCover } from './nodeport-cover.ts';
import type { LoadBalancerMode } from './load-balancers.ts';

export const PLAN_API_VERSION = 'kube-renumber.io/v1';
export const PLAN_KIND = 'MigrationPlan';
/** Prefix of every object the plan creates (ServiceCIDRs, bridge Services). */
export const OBJECT_PREFIX = 'kube-renumber';
/** Label on every object the plan creates. */
export const MANAGED_LABEL = 'kube-renumber.io/managed';

export type Strategy = 'in-place' | 'recreate';
export type TierOrder = 'ascending' | 'descending';
/** Who restarts the workloads after a Service move: the tool (a step) or the operator (a gate). */
export type RestartMode = 'tool' | 'manual';

export interface MigrationPlan {
  apiVersion: typeof PLAN_API_VERSION;
  kind: typeof PLAN_KIND;
  metadata: {
    generatedFrom: string;
    kubernetesVersion?: string;
    distribution: string;
    /** The platform the plan was written for (src/platform/); absent in plans written before platforms were known. */
    platform?: string;
    generator?: string;
    /**
     * The cluster the plan was read from (src/plan/identity.ts): apply/resume/rollback/restore refuse any other.
     * Absent in offline plans and plans written before plans were bound: those need --accept-unbound-plan.
     */
    cluster?: ClusterIdentity;
  };
  spec: {
    /** Present when the plan moves the Service CIDR. */
    serviceCIDR?: {
      /** Every service range the cluster has today. */
      from: string[];
      /** The new --service-cluster-ip-range (flag order; a family NEW does not name keeps its range). */
      to: string[];
      /** NEW as requested. */
      target: string[];
      /** networking.k8s.io version the ServiceCIDR objects use. */
      apiVersion: string;
      /** Ranges of `from` no configuration names, inferred from the ClusterIPs, with the evidence (absent when none is). */
      inferred?: Array<{ cidr: string; evidence: string }>;
      /** ServiceCIDRs kept for the IPs that stay in the old range. */
      kept: string[];
      minKeptPrefix: { ipv4: number; ipv6: number };
      /**
       * How step restart-workloads restarts the workloads (present when the tool restarts them): rollouts in
       * flight at once, the Deployments scaled up by one and restarted first (the cluster DNS and --critical),
       * and the namespaces of the bare pods it deletes and creates again (where it asks create pods).
       */
      restarts?: { parallel: number; critical: string[]; barePodNamespaces: string[] };
    };
    strategy?: Strategy;
    options?: {
      batchSize: number; headroom: number; tierKey: string; tierOrder: TierOrder; keep: string[];
      /** SANs the operator gave with --apiserver-cert-san (apply re-checks the certificate with them); absent when read live or not known. */
      apiserverCertSANs?: string[];
      /** Who restarts the workloads (absent in plans written before: the operator, at gate restart-workloads). */
      restartWorkloads?: RestartMode;
      /** --cluster-dns as given (`none` or NS/NAME); absent: detected. apply checks it again on the live read. */
      clusterDNS?: string;
      /** --load-balancers move: the LoadBalancer Services are re-created in the new range (absent: kept). */
      loadBalancers?: LoadBalancerMode;
      /**
       * --nodeport-cover: `nodes` or the addresses whose node ports a cover answers while a NodePort Service moves
       * in place (src/plan/nodeport-cover.ts); absent: off. apply checks it again on the live read.
       */
      nodePortCover?: NodePortCover;
    };
    /** Present when the plan moves the Pod CIDR. */
    podCIDR?: PodCIDRSpec;
    /** Present in an extension plan (plan --extend-service-cidr, src/plan/extend.ts): a range added, nothing moved. */
    serviceExtension?: ServiceExtensionSpec;
    /** Present in a pod extension plan (plan --extend-pod-cidr, src/plan/extend-pod.ts): a Calico pool added, nothing moved. */
    podExtension?: PodExtensionSpec;
  };
  preflight: PreflightCheck[];
  mapping: ServiceMapping[];
  /** What still names the old ranges outside the migrated objects (policies, allow-lists, ConfigMaps), with proposals. */
  references?: Reference[];
  steps: PlanStep[];
}

/** metadata.cluster for a plan read from `snap` ({} offline). */
function boundTo(snap: Snapshot): { cluster?: ClusterIdentity } {
  const id = identityOf(snap);
  return id ? { cluster: id } : {};
}

/** A plan's metadata: where it was read from, the version and platform, the generator, the cluster it is bound to. */
export function planMetadata(snap: Snapshot, generator?: string): MigrationPlan['metadata'] {
  return {
    generatedFrom: sourceText(snap.source),
    ...(snap.kubernetesVersion ? { kubernetesVersion: snap.kubernetesVersion } : {}),
    distribution: planDistributionOf(platformKindOf(snap)),
    platform: platformKindOf(snap),
    ...(generator ? { generator } : {}),
    ...boundTo(snap),
  };
}

export function sourceText(src: Snapshot['source']): string {
  return src.kind === 'live'
    ? `live cluster ${serverWithoutCredentials(src.server) ?? ''}${src.context ? ` (context ${src.context})` : ''}${src.files?.length ? ` with ${src.files.join(', ')}` : ''}`.replace(/\s+/g, ' ').trim()
    : `files: ${src.files.join(', ')}`;
}

/** A plan with its Service part present (what buildServicePlan returns). */
export type ServicePlan = MigrationPlan & {
  spec: Required<Pick<MigrationPlan['spec'], 'serviceCIDR' | 'strategy' | 'options'>>;
};

/** Counts for summaries. */
export function mappingCounts(plan: Pick<MigrationPlan, 'mapping'>): { move: number; keep: number; skip: number } {
  const c = { move: 0, keep: 0, skip: 0 };
  for (const m of plan.mapping) c[m.action]++;
  return c;
}
