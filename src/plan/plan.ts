/**
 * The migration plan as data: the Service part (./service-plan.ts), the Pod part (./pod-plan.ts) or both, assembled
 * into one MigrationPlan (./plan-document.ts) with the references gate. Pure: a function of (Snapshot, options).
 * The engine (`apply`/`resume`) executes the steps; docs/plan.md explains the order. Re-exports the document, the
 * Service plan and the step vocabulary of ./steps.ts for the modules that import them from here.
 */
import type { AvoidRange } from '../analyze/catalog.ts';
import { splitList } from '../text.ts';
import { buildPodSection, parsePodTarget, type PodPlanOptions } from './pod-plan.ts';
import { scanReferences } from '../analyze/references.ts';
import { helmReleasesCheck, mappedClusterIPs, planMoves, referencesGate } from './references-gate.ts';
import type { Family, Snapshot } from '../cluster/types.ts';
import { type Cidr, tryParseCidr } from '../net/index.ts';
import { identityCheck } from './identity.ts';
import { parseTarget } from './service-mapping.ts';
import { markSupersessions } from './steps.ts';
import { POD_CONSENT_STEP } from './pod-consent.ts';
import { type MigrationPlan, PLAN_API_VERSION, PLAN_KIND, planMetadata } from './plan-document.ts';
import { buildServicePlan, type PlanOptions } from './service-plan.ts';

export {
  MANAGED_LABEL, mappingCounts, OBJECT_PREFIX, PLAN_API_VERSION, PLAN_KIND, planMetadata, sourceText,
  type MigrationPlan, type RestartMode, type ServicePlan, type Strategy, type TierOrder,
} from './plan-document.ts';
export {
  bridgeName, buildServicePlan, cidrSlug, compareTiers, coverName, currentFlag, DEFAULT_BATCH_SIZE, DEFAULT_HEADROOM, DEFAULT_STRATEGY,
  loadBalancerMoves, nodePortCoverName, type PlanOptions,
} from './service-plan.ts';
export {
  GATE_CONDITION_INFO, GATE_CONDITIONS, markSupersessions, POD_GATE_CONDITIONS, POD_STEP_KINDS, SERVICE_GATE_CONDITIONS, SERVICE_STEP_KINDS,
  STEP_KIND_NAMES, STEP_KINDS, stepKindPath,
  type ActionKind, type ExtendActionKind, type ExtendGateCondition, type ExtendPodActionKind, type ExtendPodGateCondition, type ControlGateCondition, type GateConditionInfo, type PathGateCondition, type PathStepKind, type ServiceActionKind, type ServiceGateCondition,
  type SharedPodStepKind, type StepFamily, type StepKindInfo, type ActionStep, type ConfirmStep, type Gate, type GateCondition, type GateStep, type Pause, type PlanStep,
  type ServiceCIDRSpec, type StepItem, type StepKind,
} from './steps.ts';

export interface CombinedPlanOptions {
  service?: PlanOptions;
  pod?: PodPlanOptions;
  generator?: string;
}

/**
 * One plan for the Service CIDR, the Pod CIDR, or both. Combined, the pod restarts run after the Services
 * and default/kubernetes moved and the kubelets name the new DNS, so one restart of every pod picks up the
 * new nameserver, Service variables and pod address together (the Service plan's restart-workloads gate
 * then holds by itself); the pod clean-up runs after the Service clean-up, and both verifications last.
 * Each target avoids the other.
 */
export function buildMigrationPlan(snap: Snapshot, opts: CombinedPlanOptions): MigrationPlan {
  const podTargets = opts.pod ? splitList(String(opts.pod.target)) : [];
  const svcTargets = opts.service ? (typeof opts.service.target === 'string' ? splitList(opts.service.target) : [...opts.service.target].map((t) => t.trim()).filter(Boolean)) : [];
  // Each part computes its platform values (kOps nonMasqueradeCIDR) from where the cluster ends: the other part's target.
  const parsedAfter = (parse: () => Map<Family, Cidr>): Map<Family, Cidr> | undefined => { try { return parse(); } catch { return undefined; } };
  const podsAfter = opts.pod && opts.service ? parsedAfter(() => parsePodTarget(opts.pod!.target)) : undefined;
  const serviceAfter = opts.pod && opts.service ? parsedAfter(() => parseTarget(opts.service!.target)) : undefined;
  const asAvoid = (cidrs: string[], what: string): AvoidRange[] => cidrs.filter((c) => tryParseCidr(c)).map((c) => ({ cidr: c, reason: what, from: 'this plan' }) as AvoidRange);
  const base: MigrationPlan = opts.service
    ? buildServicePlan(snap, { ...opts.service, ...(podsAfter ? { podsAfter } : {}), avoid: [...(opts.service.avoid ?? []), ...asAvoid(podTargets, 'the new pod CIDR of this plan')], ...(opts.generator ? { generator: opts.generator } : {}) })
    : {
      apiVersion: PLAN_API_VERSION, kind: PLAN_KIND,
      metadata: planMetadata(snap, opts.generator),
      spec: {}, preflight: [], mapping: [], steps: [],
    };
  const withRefs = (p: MigrationPlan): MigrationPlan => {
    // first of the pre-flight checks: is the plan bound to the cluster it was read from
    p.preflight = [identityCheck(snap), ...p.preflight.filter((c) => c.id !== 'cluster-identity')];
    const helm = p.spec.serviceCIDR ? helmReleasesCheck(snap) : undefined;
    if (helm) p.preflight = [...p.preflight.filter((c) => c.id !== helm.id), helm];
    const moves = planMoves(p.spec);
    try {
      const refs = moves.length > 0 ? scanReferences(snap, moves, { clusterIPs: mappedClusterIPs(p.mapping) }) : [];
      if (refs.length > 0) p.references = refs;
      // before the first change: the run stops until the errors are gone or accepted
      const gate = p.steps.length > 0 ? referencesGate(refs, p.spec, snap.source.kind === 'live' && snap.source.helmReleases === true) : undefined;
      if (gate) p.steps.unshift(gate);
    } catch { /* a move that is not two CIDRs of one family: nothing to scan */ }
    return p;
  };
  // A Service part with no current range to move from is no Service plan (its failed service-range check says why).
  if (base.spec.serviceCIDR && base.spec.serviceCIDR.from.length === 0) {
    delete base.spec.serviceCIDR;
    delete base.spec.strategy;
    delete base.spec.options;
  }
  if (!opts.pod) return withRefs(base);
  const pod = buildPodSection(snap, { ...opts.pod, ...(serviceAfter ? { serviceAfter } : {}), avoid: [...(opts.pod.avoid ?? []), ...asAvoid(svcTargets, 'the new Service CIDR of this plan')] });
  base.preflight = [...base.preflight, ...pod.preflight.filter((c) => !base.preflight.some((b) => b.id === c.id))];
  if (pod.spec) base.spec.podCIDR = pod.spec;
  if (!pod.spec || (opts.service && base.steps.length === 0)) {
    base.steps = opts.service ? base.steps : [];
    return withRefs(base);
  }
  if (!opts.service) {
    base.steps = [...pod.prepare, ...pod.restart, ...pod.finish];
    markSupersessions(base.steps);
    return withRefs(base);
  }
  // the Pod part's confirmation covers the Service part's restarts (the same pods, restarted once)
  const steps = base.steps.filter((s) => !(s.kind === 'confirm' && s.id === POD_CONSENT_STEP));
  if (base.spec.serviceCIDR?.restarts) base.spec.serviceCIDR.restarts.barePodNamespaces = [];
  const at = (id: string) => steps.findIndex((s) => s.id === id);
  let i = at('restart-workloads');
  if (i < 0) i = at('remove-bridges');
  if (i < 0) i = steps.length;
  steps.splice(i, 0, ...pod.prepare, ...pod.restart);
  let v = at('verify');
  if (v < 0) v = steps.length;
  const finish = pod.finish;
  steps.splice(v, 0, ...finish.filter((s) => s.kind !== 'verify-pods'));
  steps.push(...finish.filter((s) => s.kind === 'verify-pods'));
  markSupersessions(steps);
  base.steps = steps;
  return withRefs(base);
}
