/**
 * Executes a Service CIDR MigrationPlan: turns each plan step into an engine Step with check / backup /
 * apply / verify / rollback against the live API. Every decision is re-derived from the cluster: a step is
 * done when the cluster shows its effect, so a crash or a kill at any point is resumed by running again.
 *
 * Moving one Service (measured on the real apiserver, see docs/testbed.md and docs/service-migration.md):
 *  in-place: merge-patch it to ExternalName (its ClusterIP is released, uid and EndpointSlices stay), create
 *            the bridge Service at the old IP with the same selector and ports, merge-patch the Service back
 *            to its type at the mapped IP with its nodePorts and family fields from the backup;
 *  recreate: delete it (uid precondition), create the bridge if the plan has one, create it again from the
 *            backup at the mapped IP.
 * All of it from the backup taken before the first change, so a resumed run rebuilds the original spec.
 *
 * The parts, one file each under src/engine/service/, each a class extending the one before it: base.ts (the
 * executor's state), service-cidrs.ts, bridges.ts, covers.ts, mapping.ts (move-services, sweep-services),
 * kubernetes.ts (move-kubernetes), gates.ts, restarts.ts (restart-workloads); the pure decisions of a move:
 * decisions.ts. ServiceExecutor here maps the plan's step kinds and gate conditions onto them, and checks the
 * end state.
 */
import type { KubeObject } from '../cluster/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { listAll, getObject, SERVICES } from '../kube/resources.ts';
import type { GateStep, PlanStep, ServiceActionKind, ServiceGateCondition } from '../plan/plan.ts';
import { COVER_FOR_LABEL } from './covers.ts';
import { withPlanSupersessions, type Step, type StepContext } from './runner.ts';
import { BRIDGE_FOR_LABEL, canonical, ipsOf, sameIPs, svcRef } from './service/common.ts';
import { RestartSteps } from './service/restarts.ts';
import { loadBalancerAddressGate, loadBalancerEndProblems, moveLoadBalancerStep } from './load-balancers.ts';

export { BRIDGE_FOR_LABEL, isIPTaken, type MoveEvidence, type ServiceExecOptions, type ServiceView } from './service/common.ts';
export {
  batchDone, coversIn, decideMove, itemDone, itemProblem, nodePortHolders, notOursError, squatters, takenNodePorts, writtenAt, type MoveDecision,
} from './service/decisions.ts';
export { isAllocatorNotReady } from './service/bridges.ts';

export class ServiceExecutor extends RestartSteps {
  /** Engine steps for the plan; `other` builds the steps this executor does not handle (the Pod CIDR ones). */
  steps(other?: (p: PlanStep) => Step | undefined): Step[] {
    return this.plan.steps.map((p) => other?.(p) ?? this.step(p));
  }

  step(p: PlanStep): Step {
    return withPlanSupersessions(p, this.stepOf(p));
  }

  protected stepOf(p: PlanStep): Step {
    if (p.kind === 'confirm') return { id: p.id, title: p.description, kind: 'confirm', check: async () => false };
    if (p.kind === 'gate') return { id: p.id, title: p.description, kind: 'gate', instructions: p.gate.instructions, check: (ctx) => this.gateHolds(p, ctx) };
    const make = (ServiceExecutor.actions as Partial<Record<string, (x: ServiceExecutor, p: PlanStep) => Step>>)[p.kind];
    if (!make) throw new Error(`plan step ${p.id}: unknown kind ${String(p.kind)}`);
    return make(this, p);
  }

  /** One executor per Service step kind (STEP_KINDS in src/plan/steps.ts: a new kind is a compile error here until it has one). */
  static readonly actions: { readonly [K in ServiceActionKind]: (x: ServiceExecutor, p: PlanStep) => Step } = {
    'create-servicecidrs': (x, p) => x.createServiceCIDRsStep(p),
    'move-services': (x, p) => x.moveServicesStep(p),
    'move-load-balancers': (x, p) => moveLoadBalancerStep(x, p),
    'drain-servicecidrs': (x, p) => x.drainStep(p),
    'sweep-services': (x, p) => x.sweepStep(p),
    'move-kubernetes': (x, p) => x.moveKubernetesStep(p),
    'remove-bridges': (x, p) => x.removeBridgesStep(p),
    'finalize-servicecidrs': (x, p) => x.finalizeStep(p),
    'retire-servicecidrs': (x, p) => x.retireStep(p),
    'restart-workloads': (x, p) => x.restartWorkloadsStep(p),
    verify: (x, p) => ({
      id: p.id, title: p.description, kind: 'action', check: async () => false, apply: async () => {}, verify: (ctx) => x.verifyEndState(ctx.client, ctx.backups),
    }),
  };

  /** One check per gate condition of the Service CIDR migration (GATE_CONDITION_INFO in src/plan/steps.ts). */
  static readonly gates: { readonly [C in ServiceGateCondition]: (x: ServiceExecutor, p: GateStep, ctx: StepContext) => Promise<boolean> } = {
    'apiservers-on-new-range': (x, p, ctx) => x.apiserversOnNewRange(ctx, p.id),
    'workloads-restarted': (x, _p, ctx) => x.podsRestarted(ctx),
    'load-balancer-address': (x, p, ctx) => loadBalancerAddressGate(x, p, ctx),
    'kubelet-cluster-dns': (x, _p, ctx) => x.kubeletsOnNewDNS(ctx),
    // the plan holds this gate only when the API was not served at plan time
    'servicecidr-api': (x, _p, ctx) => x.serviceCIDRApiServed(ctx),
  };


  protected async gateHolds(p: GateStep, ctx: StepContext): Promise<boolean> {
    if (this.opts.acknowledgedGates.includes(p.id)) {
      ctx.log(`gate ${p.id}: acknowledged by --ack-gate`);
      // what the apiserver shows of itself still counts: an acknowledged restart with the allocator's dual write on is refused
      return p.gate.condition === 'apiservers-on-new-range' ? this.dualWriteOffInMetrics(ctx) : true;
    }
    const check = (ServiceExecutor.gates as Partial<Record<string, (x: ServiceExecutor, p: GateStep, ctx: StepContext) => Promise<boolean>>>)[p.gate.condition];
    if (!check) throw new Error(`gate ${p.id}: condition ${p.gate.condition} belongs to the Pod CIDR migration`);
    return check(this, p, ctx);
  }

  /** The end state, from the cluster and the backups. undefined when all is well. */
  async verifyEndState(client: KubeClient, backups?: { load(r: { apiVersion: string; kind: string; namespace?: string; name: string }): KubeObject | undefined }): Promise<string | undefined> {
    const problems: string[] = [];
    const services = await listAll(client, SERVICES);
    const byKey = new Map(services.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
    for (const m of this.plan.mapping) {
      const s = byKey.get(`${m.namespace}/${m.name}`);
      if (!s) { problems.push(`Service ${m.namespace}/${m.name} is missing`); continue; }
      if (m.action === 'move' && !sameIPs(ipsOf(s), m.to)) problems.push(`Service ${m.namespace}/${m.name} is at ${ipsOf(s).join(',')}, expected ${m.to.join(',')}`);
      if (m.action !== 'move' && m.from.length > 0 && !sameIPs(ipsOf(s), m.from)) problems.push(`${m.action} Service ${m.namespace}/${m.name} changed its IPs`);
      const orig = backups?.load(svcRef(m.namespace, m.name));
      if (orig && m.action === 'move') {
        const strip = (o: KubeObject) => { const { clusterIP, clusterIPs, ...rest } = o.spec ?? {}; void clusterIP; void clusterIPs; return canonical(rest); };
        if (strip(orig) !== strip(s)) problems.push(`Service ${m.namespace}/${m.name}: spec differs from its backup beyond the IPs`);
      }
    }
    problems.push(...loadBalancerEndProblems(this.plan.steps, services));
    const sc = await getObject(client, this.SC, 'kubernetes');
    if (!sc || (sc.spec?.cidrs ?? []).join(',') !== this.svc.to.join(',')) problems.push('ServiceCIDR/kubernetes does not hold the new range');
    // the kept ranges in the old range give out no address after the run (step retire-kept-servicecidrs)
    for (const spec of this.plan.steps.filter((s) => s.kind === 'retire-servicecidrs').flatMap((s) => s.serviceCIDRs ?? [])) {
      const kept = await getObject(client, this.SC, spec.name);
      if (kept && !kept.metadata?.deletionTimestamp && (kept.spec?.cidrs ?? []).join(',') === spec.cidrs.join(',')) {
        problems.push(`ServiceCIDR ${spec.name} (${spec.cidrs.join(',')}, in the old range) still gives out addresses`);
      }
    }
    const bridges = services.filter((s) => s.metadata?.labels?.[BRIDGE_FOR_LABEL]);
    if (bridges.length > 0) problems.push(`${bridges.length} bridge Service(s) left`);
    const covers = services.filter((s) => s.metadata?.labels?.[COVER_FOR_LABEL]);
    if (covers.length > 0) problems.push(`${covers.length} cover Service(s) left`);
    return problems.length === 0 ? undefined : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`;
  }
}
