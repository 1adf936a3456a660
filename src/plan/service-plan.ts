/**
 * The Service CIDR part of a migration plan: pre-flight checks, the Service mapping, and the ordered steps with
 * their gates. Pure: a function of (Snapshot, options). The engine (`apply`/`resume`) executes the steps;
 * docs/plan.md explains the order. ./plan.ts assembles it with the Pod part.
 */
import type { AvoidRange } from '../analyze/catalog.ts';
import { barePodNamespaces, DEFAULT_PARALLEL, dnsDeployment } from './pod-plan.ts';
import type { Family, Snapshot } from '../cluster/types.ts';
import { type Cidr, contains, formatCidr, parseIP, tryParseCidr } from '../net/index.ts';
import { compatibilityCheck } from './compatibility.ts';
import { dualWriteFlags } from './allocator-dual-write.ts';
import { distroPatches, type PatchContext } from './distro-patches.ts';
import {
  clusterChecks, minorOf, type PreflightCheck, serviceCIDRApiState, type ServiceCIDRApiState, serviceRangeCheck,
  targetChecks, withClusterDNS,
} from './preflight.ts';
import {
  enableServiceCIDRApiGate, kubeletClusterDNSGate, restartApiserversGate, restartWorkloadsGate, restartWorkloadsStep,
  type ServiceGateInputs, serviceRestartConsentStep,
} from './service-gates.ts';
import { distributionPlanner } from './distributions/registry.ts';
import {
  currentServiceRanges, DEFAULT_TIER_KEY, keptRanges, mapServices, MIN_KEPT_PREFIX, serviceKey, type ServiceMapping,
  type Tier,
} from './service-mapping.ts';
import { markSupersessions, type PlanStep, type ServiceCIDRSpec, type StepItem } from './steps.ts';
import { type NodePortCover, nodePortCoverCheck, nodePortCoverText } from './nodeport-cover.ts';
import {
  DEFAULT_LOAD_BALANCERS, loadBalancerAddress, type LoadBalancerMode, type LoadBalancerMove, loadBalancerSteps,
} from './load-balancers.ts';
import {
  OBJECT_PREFIX, PLAN_API_VERSION, PLAN_KIND, planMetadata, type RestartMode, type ServicePlan, type Strategy,
  type TierOrder,
} from './plan-document.ts';

export const DEFAULT_BATCH_SIZE = 20;
export const DEFAULT_HEADROOM = 2;
/**
 * `in-place`: the ExternalName round trip behind a bridge, with covers keeping the old and the new IP answering
 * (src/engine/covers.ts). Measured on the data-plane testbed (test/integration/zero-downtime.test.ts,
 * docs/benchmarks.md): no request failed while the tool worked; `recreate` loses every client of the old IP
 * until it restarts.
 */
export const DEFAULT_STRATEGY: Strategy = 'in-place';

export interface PlanOptions {
  /** NEW: one CIDR per family (array or comma-separated). */
  target: string | readonly string[];
  keep?: readonly string[];
  strategy?: Strategy;
  tierKey?: string;
  /** ascending (default): tier 0 first; descending: for criticality labels where 1 is the most critical. */
  tierOrder?: TierOrder;
  batchSize?: number;
  headroom?: number;
  apiserverCertSANs?: readonly string[];
  /** The SANs above were given by the operator (--apiserver-cert-san), not read live: the plan records them. */
  certSANsGiven?: boolean;
  avoid?: readonly AvoidRange[];
  /** Recorded in metadata.generator, e.g. "kube-renumber 0.1.0". */
  generator?: string;
  /**
   * Who restarts the workloads once the Services moved: `tool` (step restart-workloads) or `manual` (a gate);
   * default tool, except where the distribution's own procedure restarts every pod (a kOps node rolling update).
   */
  restartWorkloads?: RestartMode;
  /** Workload rollouts in flight at once in step restart-workloads (default DEFAULT_PARALLEL). */
  parallel?: number;
  /** Deployments (namespace/name) scaled up by one and restarted first, besides the cluster DNS. */
  critical?: readonly string[];
  /** --cluster-dns: `none` (the cluster has no cluster DNS) or NS/NAME (its DNS Service); default detected. */
  clusterDNS?: string;
  /** --load-balancers: keep (default) their ClusterIPs under kept ServiceCIDRs, or move them (src/plan/load-balancers.ts). */
  loadBalancers?: LoadBalancerMode;
  /** --nodeport-cover: cover the node ports of NodePort Services moved in place (src/plan/nodeport-cover.ts); absent: off. */
  nodePortCover?: NodePortCover;
  /** The new Pod CIDR of the same plan (buildMigrationPlan sets it): platform values are computed from where the cluster ends. */
  podsAfter?: ReadonlyMap<Family, Cidr>;
}

/** A DNS-safe name for a ServiceCIDR derived from CIDRs: 172.24.0.0/15 → 172-24-0-0-15. */
export function cidrSlug(cidrs: readonly string[]): string {
  return cidrs.map((c) => c.toLowerCase().replace(/[:./]/g, '-')).join('-').replace(/^-+|-+$/g, '');
}

function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** The bridge Service holding a moved Service's old IPs: "<name>-kr-old", shortened with a hash to fit 63. */
export function bridgeName(name: string): string {
  return suffixedName(name, 'old');
}

/**
 * Name of the cover Service that keeps both the old and the mapped IP answering while a Service is moved in
 * place (src/engine/service/covers.ts): `<name>-kr-cover`, shortened with a hash like bridgeName.
 */
export function coverName(name: string): string {
  return suffixedName(name, 'cover');
}

/**
 * Name of the cover of a NodePort Service's node ports (plan --nodeport-cover; src/plan/nodeport-cover.ts):
 * `<name>-kr-npcover`, shortened with a hash like bridgeName.
 */
export function nodePortCoverName(name: string): string {
  return suffixedName(name, 'npcover');
}

function suffixedName(name: string, suffix: string): string {
  const plain = `${name}-kr-${suffix}`;
  if (plain.length <= 63) return plain;
  return `${name.slice(0, 63 - 13 - suffix.length).replace(/-+$/, '')}-${fnv1a(name)}-${suffix}`;
}

/** Orders tiers: untiered first, then numbers, then strings; numbers and strings by `order`. */
export function compareTiers(a: Tier, b: Tier, order: TierOrder = 'ascending'): number {
  const rank = (t: Tier) => (t === null ? 0 : typeof t === 'number' ? 1 : 2);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (a === null || b === null) return 0;
  const c = typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
  return order === 'descending' ? -c : c;
}

function familyOf(a: string): Family {
  return a.includes(':') ? 6 : 4;
}

/** --service-cluster-ip-range today: the apiserver flag, else ServiceCIDR/kubernetes, else configs, else every range. */
export function currentFlag(snap: Snapshot): string[] {
  const fromApi = snap.apiservers.find((a) => a.serviceClusterIPRange && a.serviceClusterIPRange.length > 0)?.serviceClusterIPRange;
  if (fromApi) return [...fromApi];
  const sc = snap.serviceCIDRs.find((s) => s.name === 'kubernetes');
  if (sc && sc.cidrs.length > 0) return [...sc.cidrs];
  if (snap.kubeadm?.serviceSubnet?.length) return [...snap.kubeadm.serviceSubnet];
  if (snap.kops?.serviceClusterIPRange) return snap.kops.serviceClusterIPRange.split(',').map((s) => s.trim());
  const byFamily = new Map<Family, string>();
  for (const r of snap.ranges) if (r.role === 'service' && !byFamily.has(familyOf(r.cidr))) byFamily.set(familyOf(r.cidr), r.cidr);
  return [...byFamily.values()];
}

const BRIDGE_NOTE = 'bridges carry only selector, ports and the label kube-renumber.io/managed (no addon-manager labels, no externalIPs)';

/** Builds the plan. Never throws on cluster data; NetError only for values that cannot be planned at all. */
export function buildServicePlan(read: Snapshot, opts: PlanOptions): ServicePlan {
  const detectedDNS = read.dnsService;
  const snap = withClusterDNS(read, opts.clusterDNS);
  const settings = serviceSettings(opts);
  const api = serviceCIDRApiState(snap);
  const oldFlag = currentFlag(snap);
  const plan = emptyServicePlan(snap, opts, settings, api);

  const tc = targetChecks(snap, { target: opts.target, avoid: opts.avoid });
  plan.preflight = tc.checks;
  if (!tc.target || tc.checks.some((c) => c.status === 'fail' && (c.id === 'target-parse' || c.id === 'target-family'))) return plan;
  const target = tc.target;
  const newFlag = newServiceFlag(oldFlag, target);
  plan.spec.serviceCIDR.target = [...target.values()].map(formatCidr);
  plan.spec.serviceCIDR.to = newFlag;
  const inferred = (snap.serviceRangeInference ?? []).filter((i) => i.cidr && target.has(familyOf(i.cidr)));
  if (inferred.length > 0) plan.spec.serviceCIDR.inferred = inferred.map((i) => ({ cidr: i.cidr!, evidence: i.evidence }));

  // No current service range to move from: say so, and plan nothing (no mapping, no step names an empty range).
  const range = serviceRangeCheck(snap, target);
  if (range?.status === 'fail') {
    plan.preflight = [...tc.checks, range];
    return plan;
  }
  // what the version matrix found on this minor (docs/compatibility.md): a failed run refuses the plan, a minor it
  // could not build is a warning
  const version = compatibilityCheck(snap.kubernetesVersion, 'service');
  if (version?.status === 'fail') {
    plan.preflight = [...tc.checks, version];
    return plan;
  }
  const mapping = mapServices(snap, { target: opts.target, keep: settings.keep, tierKey: settings.tierKey, loadBalancers: settings.loadBalancers });
  plan.mapping = mapping;
  plan.preflight = [...tc.checks, ...(version ? [version] : []), ...clusterChecks(snap, target, mapping, {
    target: opts.target, strategy: settings.strategy, headroom: settings.headroom, apiserverCertSANs: opts.apiserverCertSANs, avoid: opts.avoid, keep: settings.keep,
    ...(opts.clusterDNS !== undefined ? { clusterDNS: opts.clusterDNS, detectedDNS } : {}),
    ...(opts.podsAfter ? { podsAfter: opts.podsAfter } : {}),
  })];
  if (opts.nodePortCover !== undefined) plan.preflight.push(nodePortCoverCheck(snap, mapping, settings.strategy, opts.nodePortCover));

  const unknown = currentRangeUnknown(plan.spec.serviceCIDR.from, oldFlag);
  if (unknown) {
    plan.preflight.push(unknown);
    return plan; // nothing to write steps from: the apiservers' flag before and after, the ServiceCIDRs to drain
  }
  const layout = serviceCIDRLayout(snap, target, mapping, oldFlag, newFlag);
  plan.spec.serviceCIDR.kept = layout.kept;
  if (api.state === 'unsupported') return plan; // preflight explains; nothing can be planned

  const special = specialServices(mapping);
  const ctx = patchContext(snap, api, target, oldFlag, newFlag, special, opts.podsAfter);
  const restarts = restartSettings(snap, opts, special.dnsMoves);
  plan.spec.options.restartWorkloads = restarts.mode;
  if (restarts.spec) plan.spec.serviceCIDR.restarts = restarts.spec;
  plan.steps = serviceSteps({ snap, ctx, patches: distroPatches(snap, ctx), settings, api, target, mapping, layout, restarts, ...special });
  const lbCheck = loadBalancerCheck(loadBalancerMoves({ mapping, snap }));
  if (lbCheck) plan.preflight.push(lbCheck);
  return plan;
}

/** Who restarts the workloads, and how the tool does (spec.serviceCIDR.restarts). */
interface RestartSettings {
  mode: RestartMode;
  spec?: NonNullable<ServicePlan['spec']['serviceCIDR']['restarts']>;
  /** Why the default is manual on this distribution (the plan's gate says it); absent when the tool restarts or --restart-workloads chose. */
  manualBecause?: string;
}

/**
 * The restart settings: --restart-workloads, else tool, unless the distribution's own procedure already restarts
 * every pod after the moves (a kOps node rolling update at gate kubelet-cluster-dns).
 */
function restartSettings(snap: Snapshot, opts: PlanOptions, dnsMoves: boolean): RestartSettings {
  const rolls = dnsMoves ? distributionPlanner(snap).restartsEveryPod : undefined;
  const mode: RestartMode = opts.restartWorkloads ?? (rolls ? 'manual' : 'tool');
  if (mode === 'manual') return { mode, ...(opts.restartWorkloads === undefined && rolls ? { manualBecause: rolls } : {}) };
  const dns = dnsDeployment(snap);
  return {
    mode,
    spec: {
      parallel: opts.parallel ?? DEFAULT_PARALLEL,
      critical: [...new Set([...(dns ? [dns] : []), ...(opts.critical ?? [])])],
      barePodNamespaces: barePodNamespaces(snap),
    },
  };
}

/** PlanOptions with the defaults filled in. */
interface ServiceSettings {
  strategy: Strategy;
  tierKey: string;
  tierOrder: TierOrder;
  batchSize: number;
  headroom: number;
  keep: string[];
  loadBalancers: LoadBalancerMode;
  nodePortCover?: NodePortCover;
}

/** The options of a Service plan, defaults applied. */
function serviceSettings(opts: PlanOptions): ServiceSettings {
  return {
    strategy: opts.strategy ?? DEFAULT_STRATEGY,
    tierKey: opts.tierKey ?? DEFAULT_TIER_KEY,
    tierOrder: opts.tierOrder ?? 'ascending',
    batchSize: opts.batchSize ?? DEFAULT_BATCH_SIZE,
    headroom: opts.headroom ?? DEFAULT_HEADROOM,
    keep: [...(opts.keep ?? [])],
    loadBalancers: opts.loadBalancers ?? DEFAULT_LOAD_BALANCERS,
    ...(opts.nodePortCover !== undefined ? { nodePortCover: opts.nodePortCover } : {}),
  };
}

/** The plan before the target is checked: metadata, the current service ranges and the options; no steps yet. */
function emptyServicePlan(snap: Snapshot, opts: PlanOptions, s: ServiceSettings, api: ServiceCIDRApiState): ServicePlan {
  return {
    apiVersion: PLAN_API_VERSION,
    kind: PLAN_KIND,
    metadata: planMetadata(snap, opts.generator),
    spec: {
      serviceCIDR: {
        from: currentServiceRanges(snap).map(formatCidr), to: [], target: [],
        apiVersion: `networking.k8s.io/${api.version ?? 'v1'}`,
        kept: [],
        minKeptPrefix: { ipv4: MIN_KEPT_PREFIX[4], ipv6: MIN_KEPT_PREFIX[6] },
      },
      strategy: s.strategy,
      options: {
        batchSize: s.batchSize, headroom: s.headroom, tierKey: s.tierKey, tierOrder: s.tierOrder, keep: s.keep,
        ...(opts.certSANsGiven && opts.apiserverCertSANs?.length ? { apiserverCertSANs: [...opts.apiserverCertSANs] } : {}),
        ...(opts.clusterDNS !== undefined ? { clusterDNS: opts.clusterDNS } : {}),
        ...(s.loadBalancers !== DEFAULT_LOAD_BALANCERS ? { loadBalancers: s.loadBalancers } : {}),
        ...(opts.nodePortCover !== undefined ? { nodePortCover: opts.nodePortCover === 'nodes' ? 'nodes' : [...opts.nodePortCover] } : {}),
      },
    },
    preflight: [],
    mapping: [],
    steps: [],
  };
}

/**
 * Check `service-current-range` (a refusal: the plan is not written) when the cluster's service range today is
 * not known: no kube-apiserver flag, ServiceCIDR `kubernetes`, kubeadm or kOps setting names it. Without it the
 * plan cannot say what the apiservers run with now (the patches' "before", the rollback) or which range it leaves.
 */
function currentRangeUnknown(from: readonly string[], oldFlag: readonly string[]): PreflightCheck | undefined {
  if (from.length > 0 && oldFlag.length > 0) return undefined;
  return {
    id: 'service-current-range', status: 'fail', target: true,
    message: 'the current service range is not known: no kube-apiserver --service-cluster-ip-range (mirror pod), ServiceCIDR kubernetes, kubeadm serviceSubnet or kOps serviceClusterIPRange was read, so the plan could not name the range it leaves nor the flag the apiservers go back to: read the cluster live, or add its kubeadm ClusterConfiguration or kOps Cluster spec with -f',
    fix: 'read the cluster live (kube-apiserver mirror pods, ServiceCIDRs), or add its kubeadm ClusterConfiguration or kOps Cluster spec with -f',
  };
}

/** The new --service-cluster-ip-range: today's flag with each family NEW names replaced (flag order kept), else NEW. */
function newServiceFlag(oldFlag: readonly string[], target: Map<Family, Cidr>): string[] {
  return oldFlag.length > 0
    ? oldFlag.map((c) => { const t = target.get(familyOf(c)); return t ? formatCidr(t) : c; })
    : [...target.values()].map(formatCidr);
}

/** Whether an address (or CIDR) belongs to a family NEW moves. */
function inMovedFamily(target: Map<Family, Cidr>, a: string): boolean {
  return target.has(familyOf(a));
}

/** Whether an address lies inside NEW (false for anything that is not an address). */
function insideTarget(target: Map<Family, Cidr>, a: string): boolean {
  try { const ip = parseIP(a); const t = target.get(ip.family); return !!t && contains(t, ip); } catch { return false; }
}

/** The ServiceCIDRs of the migration: the one for NEW, those kept for kept IPs, and the old ones to drain. */
interface ServiceCIDRLayout {
  /** The current service ranges of the families NEW moves. */
  olds: Cidr[];
  /** ClusterIPs of kept Services that are in a moved family and outside NEW. */
  keptIPs: string[];
  /** CIDRs of existing ServiceCIDRs that stay because they hold kept IPs. */
  retainedCidrs: Cidr[];
  /** Those existing ServiceCIDRs: deleted at the end with the kept ones (step retire-kept-servicecidrs). */
  retainedSC: ServiceCIDRSpec[];
  /** The ranges of the kept ServiceCIDRs the plan creates. */
  kept: string[];
  targetSC: ServiceCIDRSpec;
  keptSC: ServiceCIDRSpec[];
  oldSC: ServiceCIDRSpec[];
}

/** Which ServiceCIDRs the plan creates, keeps and drains. */
function serviceCIDRLayout(
  snap: Snapshot, target: Map<Family, Cidr>, mapping: readonly ServiceMapping[], oldFlag: string[], newFlag: string[],
): ServiceCIDRLayout {
  const olds = currentServiceRanges(snap, target);
  const keptIPs = mapping.filter((m) => m.action === 'keep').flatMap((m) => m.from).filter((a) => inMovedFamily(target, a) && !insideTarget(target, a));
  const existing = snap.serviceCIDRs.filter((s) => s.name !== 'kubernetes' && !s.name.startsWith(`${OBJECT_PREFIX}-`) && !s.deleting);
  const retained = existing.filter((s) => s.cidrs.some((c) => { const p = tryParseCidr(c); return !!p && keptIPs.some((a) => contains(p, parseIP(a))); }));
  const retainedCidrs = retained.flatMap((s) => s.cidrs).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
  // kept ServiceCIDRs an earlier run deleted at its end: each still holds the addresses of its kept Services
  // (the service-cidr finalizer) and gives out none, which is what this run would make of them again
  const retired = snap.serviceCIDRs.filter((s) => s.deleting && s.name.startsWith(`${OBJECT_PREFIX}-keep-`))
    .flatMap((s) => s.cidrs).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
  const kept = keptRanges(keptIPs, olds, { covered: [...retainedCidrs, ...retired] });
  return {
    olds, keptIPs, retainedCidrs, kept,
    retainedSC: retained.map((s) => ({ name: s.name, cidrs: [...s.cidrs], purpose: 'keep' as const })),
    targetSC: { name: `${OBJECT_PREFIX}-${cidrSlug(newFlag)}`, cidrs: newFlag, purpose: 'target' },
    keptSC: kept.map((c) => ({ name: `${OBJECT_PREFIX}-keep-${cidrSlug([c])}`, cidrs: [c], purpose: 'keep' })),
    oldSC: [
      { name: 'kubernetes', cidrs: (snap.serviceCIDRs.find((s) => s.name === 'kubernetes')?.cidrs ?? oldFlag), purpose: 'old' },
      ...existing.filter((s) => !retained.includes(s)).map((s) => ({ name: s.name, cidrs: s.cidrs, purpose: 'old' as const })),
    ],
  };
}

/** default/kubernetes and the cluster DNS Service as mapped, and whether each moves. */
interface SpecialServices {
  kube?: ServiceMapping;
  dns?: ServiceMapping;
  kubeMoves: boolean;
  dnsMoves: boolean;
}

/** Finds default/kubernetes and the cluster DNS Service in the mapping. */
function specialServices(mapping: readonly ServiceMapping[]): SpecialServices {
  const kube = mapping.find((m) => m.isKubernetes);
  const dns = mapping.find((m) => m.isDNS);
  return { kube, dns, kubeMoves: !!kube && kube.action === 'move', dnsMoves: !!dns && dns.action === 'move' };
}

/** The (old, new) pairs of a mapping's IPs that change. */
function changedIPs(m: ServiceMapping | undefined): Array<readonly [string, string]> {
  return m ? m.from.map((a, i) => [a, m.to[i]!] as const).filter(([a, b]) => a !== b) : [];
}

/** The values the distribution patches and gate instructions are written from. */
function patchContext(
  snap: Snapshot, api: ServiceCIDRApiState, target: Map<Family, Cidr>, oldFlag: string[], newFlag: string[], special: SpecialServices,
  podsAfter?: ReadonlyMap<Family, Cidr>,
): PatchContext {
  const { kube, dns, kubeMoves, dnsMoves } = special;
  const ctx: PatchContext = {
    oldFlag, newFlag,
    ...(dnsMoves ? { oldDNS: changedIPs(dns)[0]?.[0], newDNS: changedIPs(dns)[0]?.[1] } : {}),
    ...(kubeMoves ? { oldKubernetesIP: changedIPs(kube)[0]?.[0], newKubernetesIP: changedIPs(kube)[0]?.[1] } : {}),
    ...(api.state === 'enable' ? { enableApi: api.version } : {}),
  };
  const gates = dualWriteFlags(api.minor ?? minorOf(snap.kubernetesVersion), snap.apiservers[0]?.featureGates, api.version !== undefined);
  if (gates) ctx.apiserverFeatureGates = gates;
  return { ...ctx, ...distributionPlanner(snap).serviceContext?.(snap, target, podsAfter) };
}

/** Everything the Service steps are built from. */
interface ServiceStepInputs extends ServiceGateInputs, SpecialServices {
  settings: ServiceSettings;
  restarts: RestartSettings;
  api: ServiceCIDRApiState;
  target: Map<Family, Cidr>;
  mapping: readonly ServiceMapping[];
  layout: ServiceCIDRLayout;
}

/**
 * The ordered steps: the ServiceCIDRs for NEW and the kept IPs, the Service moves, the apiservers on the new
 * flag, the old range drained, default/kubernetes moved, the kubelets and pods on the new IPs, then clean-up.
 */
function serviceSteps(inp: ServiceStepInputs): PlanStep[] {
  // Before 1.33 (v1alpha1/v1beta1; measured on v1.30.14) an explicit IP is served by the allocator of the largest
  // ServiceCIDR containing it, which refuses ("allocator not ready") while that ServiceCIDR is being deleted, even with a
  // Ready one covering the IP: the bridge at the old default/kubernetes IP could not be made once the old range drains
  // (the other bridges keep it Terminating). There, an in-place move of default/kubernetes, which does not wait for the
  // apiserver to recreate it, runs before the drain.
  const kubeFirst = inp.kubeMoves && inp.settings.strategy === 'in-place' && inp.api.version !== undefined && inp.api.version !== 'v1';
  const tool = inp.restarts.spec;
  const steps: PlanStep[] = [
    ...(tool ? [serviceRestartConsentStep(tool.barePodNamespaces)] : []),
    ...(inp.api.state === 'enable' ? [enableServiceCIDRApiGate(inp, inp.api)] : []),
    ...createServiceCIDRSteps(inp),
    ...serviceMoveSteps(inp),
    restartApiserversGate(inp),
    ...(kubeFirst ? [moveKubernetesStep(inp)] : []),
    drainOldServiceCIDRsStep(inp),
    sweepStragglersStep(),
    ...(inp.kubeMoves && !kubeFirst ? [moveKubernetesStep(inp)] : []),
    ...(inp.dnsMoves ? [kubeletClusterDNSGate(inp)] : []),
    tool ? restartWorkloadsStep(inp, tool, inp.dnsMoves) : restartWorkloadsGate(inp, inp.dnsMoves, inp.restarts.manualBecause),
  ];
  steps.push(removeBridgesStep(steps), finalizeServiceCIDRsStep(inp));
  const retire = retireKeptServiceCIDRsStep(inp);
  if (retire) steps.push(retire);
  steps.push(verifyServicesStep(inp));
  markSupersessions(steps);
  return steps;
}

/** Steps creating the ServiceCIDR for NEW and, when Services keep IPs in the old range, the kept ones. */
function createServiceCIDRSteps(inp: ServiceStepInputs): PlanStep[] {
  const { targetSC, keptSC, keptIPs, kept } = inp.layout;
  const steps: PlanStep[] = [{
    id: 'create-target-servicecidr', kind: 'create-servicecidrs',
    description: `create ServiceCIDR ${targetSC.name} for ${inp.ctx.newFlag.join(',')} so the new range can be allocated`,
    serviceCIDRs: [targetSC],
    rollback: `delete ServiceCIDR ${targetSC.name} (it stays Terminating while Services hold IPs in it)`,
  }];
  if (keptSC.length > 0) {
    steps.push({
      id: 'create-kept-servicecidrs', kind: 'create-servicecidrs',
      description: `create ServiceCIDRs covering the ${keptIPs.length} kept IP(s) of the old range (${kept.join(', ')}; no smaller than /${MIN_KEPT_PREFIX[4]} IPv4, /${MIN_KEPT_PREFIX[6]} IPv6) so they stay valid when the old range is drained`,
      serviceCIDRs: keptSC,
      rollback: 'delete them (only while the old range still exists)',
    });
  }
  return steps;
}

/**
 * The Service moves: every movable Service tier by tier, then the LoadBalancer Services one by one (--load-balancers
 * move: re-created, see load-balancers.ts), then the cluster DNS Service (after a confirmation).
 */
function serviceMoveSteps(inp: ServiceStepInputs): PlanStep[] {
  const isLB = (m: ServiceMapping) => m.type === 'LoadBalancer';
  const movable = inp.mapping.filter((m) => m.action === 'move' && !m.isKubernetes && !m.isDNS && !isLB(m));
  const tiers = tierMoveSteps(movable, inp.settings);
  const lbs = loadBalancerMoves(inp);
  return [...tiers.steps, ...loadBalancerSteps(lbs), ...(inp.dnsMoves ? dnsMoveSteps(inp.dns!, tiers.moved + lbs.length, inp.settings.strategy) : [])];
}

/**
 * Check `load-balancers` (--load-balancers move): per LoadBalancer Service, which external address is kept and by
 * whom, which changes and which DNS records name it; warn when any changes (a gate stops before that Service).
 */
function loadBalancerCheck(moves: readonly LoadBalancerMove[]): PreflightCheck | undefined {
  if (moves.length === 0) return undefined;
  const changing = moves.filter((m) => m.address.changes.length > 0);
  const each = moves.map((m) => `${m.namespace}/${m.name}: ${m.address.note}`);
  return {
    id: 'load-balancers', status: changing.length > 0 ? 'warn' : 'pass',
    message: `${moves.length} LoadBalancer Service(s) re-created in the new range, ${moves.length - changing.length} keeping their external address: ${each.join('; ')}`,
    fix: changing.length > 0
      ? `${changing.map((m) => `${m.namespace}/${m.name} (${m.address.changes.join(', ')}${m.address.dnsNames.length > 0 ? `; DNS ${m.address.dnsNames.join(', ')}` : ''})`).join(', ')}: `
        + 'a gate stops before each; keep the address with the platform\'s annotation (docs/platforms.md, "LoadBalancer Services") and plan again, or tell its clients'
      : '',
  };
}

/** The LoadBalancer Services the plan moves (none unless --load-balancers move), by namespace/name, with their external addresses. */
export function loadBalancerMoves(inp: { mapping: readonly ServiceMapping[]; snap: Pick<Snapshot, 'services'> }): LoadBalancerMove[] {
  const byKey = new Map(inp.snap.services.map((s) => [serviceKey(s), s]));
  return inp.mapping.filter((m) => m.action === 'move' && m.type === 'LoadBalancer' && !m.isKubernetes && !m.isDNS).sort(byServiceKey).map((m) => {
    const s = byKey.get(serviceKey(m));
    return {
      namespace: m.namespace, name: m.name, from: [...m.from], to: [...m.to], bridge: bridgeName(m.name),
      address: loadBalancerAddress(s ?? { namespace: m.namespace, name: m.name, annotations: {}, loadBalancerIPs: [] }),
    };
  });
}

/** A moved Service as a step item, with its bridge when one keeps the old IP answering. */
function moveItem(m: ServiceMapping, strategy: Strategy): StepItem {
  const bridged = strategy === 'in-place' || m.isDNS;
  return { namespace: m.namespace, name: m.name, from: [...m.from], to: [...m.to], ...(bridged ? { bridge: bridgeName(m.name) } : {}) };
}

/** Orders mappings by namespace/name. */
function byServiceKey(a: ServiceMapping, b: ServiceMapping): number {
  return serviceKey(a) < serviceKey(b) ? -1 : serviceKey(a) > serviceKey(b) ? 1 : 0;
}

/** The distinct tiers of `movable`, in moving order. */
function tiersOf(movable: readonly ServiceMapping[], order: TierOrder): Tier[] {
  const tiers: Tier[] = [];
  for (const m of movable) if (!tiers.some((t) => t === m.tier)) tiers.push(m.tier);
  return tiers.sort((a, b) => compareTiers(a, b, order));
}

/** The move steps of every tier (a confirmation before each tier after the first) and how many Services they move. */
function tierMoveSteps(movable: readonly ServiceMapping[], s: ServiceSettings): { steps: PlanStep[]; moved: number } {
  const steps: PlanStep[] = [];
  let moved = 0;
  tiersOf(movable, s.tierOrder).forEach((tier, ti) => {
    const inTier = movable.filter((m) => m.tier === tier).sort(byServiceKey);
    if (ti > 0) steps.push(confirmTierStep(tier, ti, inTier.length, moved));
    steps.push(...moveBatchSteps(tier, ti, inTier, s));
    moved += inTier.length;
  });
  return { steps, moved };
}

/** How a tier's Services are described: `untiered` or `tier N`. */
function tierLabel(tier: Tier): string {
  return tier === null ? 'untiered' : `tier ${tier}`;
}

/** The confirmation before the tier at index `ti` (not the first), after `movedSoFar` Services moved. */
function confirmTierStep(tier: Tier, ti: number, count: number, movedSoFar: number): PlanStep {
  return {
    id: `confirm-tier-${ti + 1}`, kind: 'confirm', tier,
    description: `confirm before moving ${tierLabel(tier)} (${count} Service(s)); ${movedSoFar} moved so far`,
    gate: { reason: 'tiers go lowest risk first: check the moved Services before the next tier', instructions: ['kube-renumber status', 'kube-renumber resume (apply --yes skips confirmations)'], check: 'none: a person confirms' },
    rollback: 'nothing to undo',
  };
}

/** The move-services steps of one tier, `batchSize` Services each. */
function moveBatchSteps(tier: Tier, ti: number, inTier: readonly ServiceMapping[], s: ServiceSettings): PlanStep[] {
  const how = s.strategy === 'in-place'
    ? `in place: a bridge Service takes the same selector and ports, the Service goes ExternalName (its ClusterIP is released), the bridge takes the old IP, the Service returns to ClusterIP at the mapped IP; ${BRIDGE_NOTE}`
    : 'recreate: back up, delete, create again at the mapped IP with the same spec (nodePorts kept); a short outage per Service';
  const steps: PlanStep[] = [];
  for (let b = 0; b * s.batchSize < inTier.length; b++) {
    const batch = inTier.slice(b * s.batchSize, (b + 1) * s.batchSize);
    const nodePorts = s.strategy === 'in-place' && s.nodePortCover !== undefined ? batch.filter((m) => m.type === 'NodePort' || m.type === 'LoadBalancer').length : 0;
    const npText = nodePorts > 0
      ? `; --nodeport-cover: the node ports of its ${nodePorts} NodePort Service(s) answered meanwhile by a second cover at ${s.nodePortCover === 'nodes' ? 'every Node\'s InternalIP and ExternalIP' : nodePortCoverText(s.nodePortCover!)} (one rule per address × nodePort while the batch moves)`
      : '';
    steps.push({
      id: `move-tier-${ti + 1}-batch-${b + 1}`, kind: 'move-services', tier,
      description: `move ${batch.length} Service(s) of ${tierLabel(tier)}, batch ${b + 1} of ${Math.ceil(inTier.length / s.batchSize)} (${how}${npText})`,
      items: batch.map((m) => moveItem(m, s.strategy)),
      rollback: 'restore each Service from its backup at its old IP (possible while the old range is not drained)',
    });
  }
  return steps;
}

/** The cluster DNS Service's move, behind a bridge whatever the strategy; confirmed first when other Services moved. */
function dnsMoveSteps(dns: ServiceMapping, movedSoFar: number, strategy: Strategy): PlanStep[] {
  const steps: PlanStep[] = [];
  if (movedSoFar > 0) {
    steps.push({
      id: 'confirm-dns', kind: 'confirm',
      description: `confirm before moving the cluster DNS Service ${serviceKey(dns)}`,
      gate: { reason: 'every pod resolves through it: move it after the procedure has worked on every other Service', instructions: ['kube-renumber status', 'kube-renumber resume (apply --yes skips confirmations)'], check: 'none: a person confirms' },
      rollback: 'nothing to undo',
    });
  }
  steps.push({
    id: 'move-dns', kind: 'move-services',
    description: `move the cluster DNS Service ${serviceKey(dns)} ${dns.from.join(',')} → ${dns.to.join(',')}; a bridge keeps the old DNS IP answering for every pod `
      + 'whose /etc/resolv.conf still names it, until all pods restarted (whatever the strategy)',
    items: [moveItem(dns, strategy)],
    rollback: 'restore it from its backup at its old IP and delete the bridge (before the old range is drained)',
  });
  return steps;
}

/** Step `drain-old-servicecidrs`: delete the old ServiceCIDRs, which then allocate nothing new. */
function drainOldServiceCIDRsStep(inp: ServiceStepInputs): PlanStep {
  const { oldSC } = inp.layout;
  const { oldFlag } = inp.ctx;
  return {
    id: 'drain-old-servicecidrs', kind: 'drain-servicecidrs',
    description: `delete ServiceCIDR ${oldSC.map((s) => s.name).join(', ')}: each stays Terminating (finalizer networking.k8s.io/service-cidr-finalizer) while it holds IPs no other ServiceCIDR covers, and allocates no new IPs`,
    serviceCIDRs: oldSC,
    rollback: `a deleted ServiceCIDR cannot be restored: create ServiceCIDR ${OBJECT_PREFIX}-rollback-${cidrSlug(oldFlag)} with ${oldFlag.join(',')} to make the old range allocatable again`,
  };
}

/** Step `sweep-stragglers`: move Services created or changed in the old range since the plan was written. */
function sweepStragglersStep(): PlanStep {
  return {
    id: 'sweep-stragglers', kind: 'sweep-services',
    description: 'list Services again and move any that still has a ClusterIP in a drained range and is not kept (created or changed since the plan): '
      + 'the same address rule against the addresses in use at that time; no bridge (an explicit IP inside a Terminating ServiceCIDR may be refused: measured on the testbed)',
    rollback: 'as for move-services',
  };
}

/** Step `move-kubernetes`: default/kubernetes to the first IP of NEW, a bridge (and its ServiceCIDR) at the old IP. */
function moveKubernetesStep(inp: ServiceStepInputs): PlanStep {
  const kube = inp.kube!;
  const { kept, retainedCidrs, olds } = inp.layout;
  const oldK = changedIPs(kube).map(([a]) => a);
  const coveredCidrs = [...kept, ...retainedCidrs.map(formatCidr)].map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
  const bridgeCidrs = keptRanges(oldK.filter((a) => inMovedFamily(inp.target, a)), olds, { covered: coveredCidrs });
  const bridgeSC: ServiceCIDRSpec[] = bridgeCidrs.map((c) => ({ name: `${OBJECT_PREFIX}-bridge-${cidrSlug([c])}`, cidrs: [c], purpose: 'bridge' }));
  return {
    id: 'move-kubernetes', kind: 'move-kubernetes',
    description: `${bridgeSC.length > 0 ? `create ServiceCIDR ${bridgeSC.map((s) => s.name).join(', ')} (so the old IP stays allocatable), ` : ''}`
      + (inp.settings.strategy === 'in-place'
        ? `move Service default/kubernetes in place to ${kube.to.join(',')} (the first IP of the new range, where the apiserver would recreate it) behind a cover, `
          + `keeping its uid, and create the selectorless bridge default/${bridgeName('kubernetes')} at ${oldK.join(',')} with an EndpointSlice copying default/kubernetes's endpoints, `
          + 'for pods whose KUBERNETES_SERVICE_HOST still names the old IP; the name and both IPs answer throughout'
        : `delete Service default/kubernetes; the apiserver recreates it at ${kube.to.join(',')}; then create the selectorless bridge default/${bridgeName('kubernetes')} `
          + `at ${oldK.join(',')} with an EndpointSlice copying default/kubernetes's endpoints, for pods whose KUBERNETES_SERVICE_HOST still names the old IP`),
    items: [{ namespace: 'default', name: 'kubernetes', from: [...kube.from], to: [...kube.to], bridge: bridgeName('kubernetes') }],
    serviceCIDRs: bridgeSC,
    rollback: 'restart the apiservers with the old flag, then delete default/kubernetes again so it returns at the old first IP',
  };
}

/** Step `remove-bridges`: delete every bridge the earlier `steps` created, and the bridge ServiceCIDRs. */
function removeBridgesStep(steps: readonly PlanStep[]): PlanStep {
  const bridgeItems = steps.filter((s) => s.kind === 'move-services' || s.kind === 'move-kubernetes' || s.kind === 'move-load-balancers').flatMap((s) => s.items ?? []).filter((i) => i.bridge);
  const bridgeSCs = steps.filter((s) => s.kind === 'move-kubernetes').flatMap((s) => s.serviceCIDRs ?? []);
  return {
    id: 'remove-bridges', kind: 'remove-bridges',
    description: `delete the ${bridgeItems.length} bridge Service(s) at old IPs${bridgeSCs.length > 0 ? ` and ServiceCIDR ${bridgeSCs.map((s) => s.name).join(', ')}` : ''}; the old range then holds no IPs outside the kept ServiceCIDRs`,
    items: bridgeItems.map((i) => ({ namespace: i.namespace, name: i.bridge!, from: [...i.from], to: [] })),
    serviceCIDRs: bridgeSCs,
    rollback: 'recreate a bridge from its backup while its old IP is still allocatable (a kept or bridge ServiceCIDR covers it)',
  };
}

/** Step `finalize-servicecidrs`: wait for ServiceCIDR/kubernetes on NEW, then delete the temporary target ServiceCIDR. */
function finalizeServiceCIDRsStep(inp: ServiceStepInputs): PlanStep {
  const { targetSC } = inp.layout;
  return {
    id: 'finalize-servicecidrs', kind: 'finalize-servicecidrs',
    description: `wait until the old ServiceCIDR/kubernetes is gone and the apiserver has recreated it with ${inp.ctx.newFlag.join(',')}; `
      + 'if it came back with the old range (an apiserver still on the old flag recreated it), delete it again; '
      + `then delete ServiceCIDR ${targetSC.name}`,
    serviceCIDRs: [targetSC],
    rollback: `create ServiceCIDR ${targetSC.name} again (harmless: ServiceCIDRs may overlap)`,
  };
}

/**
 * Step `retire-kept-servicecidrs`: delete the ServiceCIDRs that keep kept IPs in the old range (ours and the
 * existing ones that held them), once ServiceCIDR/kubernetes holds NEW. A ServiceCIDR being deleted keeps every
 * address in it that no other ServiceCIDR covers (the service-cidr finalizer) and gives out no new one (the
 * apiserver's allocator uses only Ready ServiceCIDRs that are not being deleted), so after the run no new ClusterIP
 * lands in the range the cluster left. Undefined when nothing is kept there.
 */
function retireKeptServiceCIDRsStep(inp: ServiceStepInputs): PlanStep | undefined {
  const { keptSC, retainedSC, keptIPs } = inp.layout;
  const all = [...keptSC, ...retainedSC];
  if (all.length === 0) return undefined;
  const names = all.map((s) => s.name).join(', ');
  return {
    id: 'retire-kept-servicecidrs', kind: 'retire-servicecidrs',
    description: `delete ServiceCIDR ${names}, which keep the ${keptIPs.length} kept IP(s) in the old range: each stays, marked as being deleted, `
      + 'for as long as a kept Service holds an address in it, and gives out no new address, so a Service created after the run '
      + 'never gets one in the old range; when the last kept Service in it is deleted or moved, the ServiceCIDR goes by itself',
    serviceCIDRs: all,
    rollback: `create each again, first under a temporary name (so the kept IPs stay covered), then under its own name once the one being deleted is gone; `
      + 'the temporary one is deleted after that',
  };
}

/** Step `verify`: the end state of the Service migration. */
function verifyServicesStep(inp: ServiceStepInputs): PlanStep {
  const { kept } = inp.layout;
  return {
    id: 'verify', kind: 'verify',
    description: 'check the end state: every moved Service at its mapped IP with its spec otherwise unchanged (against the backups) and EndpointSlices present; '
      + `default/kubernetes at ${inp.kube?.to.join(',') ?? 'the new first IP'}; ServiceCIDR/kubernetes is ${inp.ctx.newFlag.join(',')} and Ready; `
      + `${kept.length > 0 || inp.layout.retainedSC.length > 0 ? 'no ServiceCIDR in the old range gives out addresses (the kept ones are being deleted, holding the kept IPs) and kept Services unchanged; ' : ''}`
      + 'headless and ExternalName Services untouched; no IPAddress left in a drained range outside the kept ServiceCIDRs; no bridge left',
    rollback: 'nothing to undo',
  };
}
