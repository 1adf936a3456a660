/**
 * One executor for a whole plan: the Service CIDR steps go to ServiceExecutor, the Pod CIDR steps to
 * PodExecutor, in the plan's order, through the same runner, journal, backups and locks.
 */
import type { KubeClient } from '../kube/client.ts';
import type { ControlGateCondition, GateStep, MigrationPlan } from '../plan/plan.ts';
import type { BackupStore } from './backup.ts';
import { PodExecutor, type PodExecOptions } from './pod-steps.ts';
import type { Step } from './runner.ts';
import { ServiceExecutor, type ServiceExecOptions } from './service-steps.ts';
import { referencesGateStep } from './references-gate.ts';
import { ExtensionExecutor } from './service/extension.ts';
import { PodExtensionExecutor } from './pod-extension.ts';

export type PlanExecOptions = ServiceExecOptions & Omit<PodExecOptions, 'acknowledgedGates' | 'timeoutMs'>;

export class PlanExecutor {
  readonly plan: MigrationPlan;
  readonly service?: ServiceExecutor;
  readonly pod?: PodExecutor;
  /** An extension plan's executor (spec.serviceExtension: a range added, nothing moved). */
  readonly extension?: ExtensionExecutor;
  /** A pod extension plan's executor (spec.podExtension: a Calico pool added, nothing moved). */
  readonly podExtension?: PodExtensionExecutor;
  private readonly acknowledged: readonly string[];
  /** One check per gate condition of both migrations (family control in GATE_CONDITION_INFO, src/plan/steps.ts). */
  static readonly gates: { readonly [C in ControlGateCondition]: (plan: MigrationPlan, p: GateStep, acknowledged: readonly string[]) => Step } = {
    references: referencesGateStep,
  };
  constructor(plan: MigrationPlan, opts: PlanExecOptions) {
    this.plan = plan;
    this.acknowledged = opts.acknowledgedGates ?? [];
    if (plan.spec.serviceCIDR) this.service = new ServiceExecutor(plan, opts);
    if (plan.spec.podCIDR) this.pod = new PodExecutor(plan, opts);
    if (plan.spec.serviceExtension) this.extension = new ExtensionExecutor(plan, opts);
    if (plan.spec.podExtension) this.podExtension = new PodExtensionExecutor(plan, opts);
  }

  /** networking.k8s.io version of the ServiceCIDR objects (v1 when the plan moves no Service). */
  get scVersion(): string { return this.service?.scVersion ?? this.extension?.scVersion ?? 'v1'; }

  steps(): Step[] {
    const pod = this.pod;
    // the gates of both migrations (the references gate), then the Pod CIDR steps
    const gates = PlanExecutor.gates as Partial<Record<string, (plan: MigrationPlan, p: GateStep, acknowledged: readonly string[]) => Step>>;
    const other = (p: MigrationPlan['steps'][number]) => {
      const control = p.kind === 'gate' ? gates[p.gate.condition] : undefined;
      if (control && p.kind === 'gate') return control(this.plan, p, this.acknowledged);
      if (this.extension?.handles(p)) return this.extension.step(p);
      if (this.podExtension?.handles(p)) return this.podExtension.step(p);
      return pod?.handles(p) ? pod.step(p) : undefined;
    };
    if (this.service) return this.service.steps(other);
    return this.plan.steps.map((p) => {
      // a Pod plan's confirmations (the Service executor builds those of a plan with both)
      const s = other(p) ?? (p.kind === 'confirm' ? { id: p.id, title: p.description, kind: 'confirm' as const, check: async () => false } : undefined);
      if (!s) throw new Error(`plan step ${p.id} (${p.kind}) belongs to a Service CIDR migration, but the plan has no spec.serviceCIDR`);
      return s;
    });
  }

  async verifyEndState(client: KubeClient, backups: BackupStore): Promise<string | undefined> {
    const problems = [await this.service?.verifyEndState(client, backups), await this.pod?.verifyEndState(client, { backups }), await this.extension?.verifyEndState(client),
      await this.podExtension?.verifyEndState(client)].filter(Boolean);
    return problems.length > 0 ? problems.join('; ') : undefined;
  }
}
