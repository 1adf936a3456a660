/**
 * Executes an extension plan (plan --extend-service-cidr, src/plan/extend.ts): step extend-servicecidr creates the
 * ServiceCIDR for the added range (journaled as created before the create), verify-extension checks it is Ready, and the gate extension-servicecidr-api waits for the API where the plan
 * enables it. Rollback deletes the ServiceCIDR only while no Service holds an address in it: once one does, it
 * refuses and names them (deleting it then would leave it Terminating, behind the service-cidr finalizer, while
 * those Services keep addresses no Ready ServiceCIDR serves).
 *
 * The ServiceCIDR helpers are those of the Service CIDR executor (service-cidrs.ts), given a view of the plan that
 * names the extension's range as its target.
 */
import type { KubeClient } from '../../kube/client.ts';
import { listAll, SERVICES } from '../../kube/resources.ts';
import { contains, formatIP, parseCidr, parseIP, tryParseCidr, type Cidr } from '../../net/index.ts';
import { MIN_KEPT_PREFIX } from '../../plan/service-mapping.ts';
import type { ExtendActionKind, ExtendGateCondition, GateStep, MigrationPlan, PlanStep, ServiceCIDRSpec } from '../../plan/plan.ts';
import type { ServiceExtensionSpec } from '../../plan/extend-spec.ts';
import { firstAndMore } from '../../text.ts';
import { withPlanSupersessions, type Step, type StepContext } from '../runner.ts';
import { withRetry } from '../toolkit.ts';
import type { ServiceExecOptions } from './common.ts';
import { ServiceCIDRSteps } from './service-cidrs.ts';

/** The plan as the ServiceCIDR helpers read it: the extension's range as target, every range kept. */
function helperView(plan: MigrationPlan, ext: ServiceExtensionSpec): MigrationPlan {
  return {
    ...plan,
    spec: {
      serviceCIDR: {
        from: [...ext.from], to: [...ext.flag], target: [...ext.add], apiVersion: ext.apiVersion, kept: [],
        minKeptPrefix: { ipv4: MIN_KEPT_PREFIX[4], ipv6: MIN_KEPT_PREFIX[6] },
      },
    },
  };
}

export class ExtensionExecutor extends ServiceCIDRSteps {
  readonly extension: ServiceExtensionSpec;
  readonly extensionPlan: MigrationPlan;

  constructor(plan: MigrationPlan, opts: ServiceExecOptions = {}) {
    const ext = plan.spec.serviceExtension;
    if (!ext) throw new Error('the plan does not extend the Service range');
    super(helperView(plan, ext), opts);
    this.extension = ext;
    this.extensionPlan = plan;
  }

  /** Does this executor run plan step `p` (an extension kind, or the gate of its condition)? */
  handles(p: PlanStep): boolean {
    if (p.kind === 'gate') return Object.hasOwn(ExtensionExecutor.gates, p.gate.condition);
    return Object.hasOwn(ExtensionExecutor.actions, p.kind);
  }

  step(p: PlanStep): Step {
    if (p.kind === 'gate') {
      const check = (ExtensionExecutor.gates as Partial<Record<string, (x: ExtensionExecutor, p: GateStep, ctx: StepContext) => Promise<boolean>>>)[p.gate.condition];
      if (!check) throw new Error(`gate ${p.id}: condition ${p.gate.condition} is not one of an extension plan`);
      return withPlanSupersessions(p, {
        id: p.id, title: p.description, kind: 'gate', instructions: p.gate.instructions,
        check: (ctx) => (this.opts.acknowledgedGates.includes(p.id) ? Promise.resolve(true) : check(this, p, ctx)),
      });
    }
    const make = (ExtensionExecutor.actions as Partial<Record<string, (x: ExtensionExecutor, p: PlanStep) => Step>>)[p.kind];
    if (!make) throw new Error(`plan step ${p.id}: kind ${String(p.kind)} is not one of an extension plan`);
    return withPlanSupersessions(p, make(this, p));
  }

  /** One executor per extension step kind (STEP_KINDS in src/plan/steps.ts). */
  static readonly actions: { readonly [K in ExtendActionKind]: (x: ExtensionExecutor, p: PlanStep) => Step } = {
    'extend-servicecidr': (x, p) => x.extendStep(p),
    'verify-extension': (x, p) => ({
      id: p.id, title: p.description, kind: 'action', check: async () => false, apply: async () => {}, verify: (ctx) => x.verifyEndState(ctx.client),
      // it wrote nothing: nothing to undo
      rollback: async () => {},
    }),
  };

  static readonly gates: { readonly [C in ExtendGateCondition]: (x: ExtensionExecutor, p: GateStep, ctx: StepContext) => Promise<boolean> } = {
    'extension-servicecidr-api': (x, _p, ctx) => x.serviceCIDRApiServed(ctx),
  };

  /** Step extend-servicecidr: the ServiceCIDR created (as create-servicecidrs), its rollback refused while it holds addresses. */
  protected extendStep(p: PlanStep): Step {
    const base = this.createServiceCIDRsStep(p);
    const specs = p.serviceCIDRs ?? [];
    return {
      ...base,
      rollback: async (ctx) => {
        const mine = specs.filter((s) => !this.opts.token || this.createdSet(ctx).has(`networking.k8s.io/ServiceCIDR/${s.name}`));
        for (const s of mine) {
          const holders = await this.holdersIn(ctx.client, s);
          if (holders.length > 0) {
            throw new Error(`ServiceCIDR ${s.name} (${s.cidrs.join(',')}) holds the ClusterIPs of ${holders.length} Service(s): `
              + `${firstAndMore(holders, 10)}; `
              + 'deleting it now would leave them on addresses no Ready ServiceCIDR serves: delete or move those Services, then run rollback again');
          }
        }
        if (base.rollback) await base.rollback(ctx);
      },
    };
  }

  /**
   * "ns/name ip" of every Service with a ClusterIP in the ServiceCIDR that no other live ServiceCIDR covers: the
   * Services' clusterIPs, and IPAddress objects (an allocation whose Service is not listed yet).
   */
  async holdersIn(client: KubeClient, spec: ServiceCIDRSpec): Promise<string[]> {
    const mine = spec.cidrs.map((c) => parseCidr(c));
    const others = (await withRetry(() => listAll(client, this.SC)))
      .filter((s) => s.metadata?.name !== spec.name && !s.metadata?.deletionTimestamp)
      .flatMap((s) => ((s.spec?.cidrs ?? []) as string[]).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c));
    const alone = (ip: string) => {
      const a = parseIP(ip);
      return mine.some((c) => contains(c, a)) && !others.some((c) => contains(c, a));
    };
    const [services, addresses] = await Promise.all([withRetry(() => listAll(client, SERVICES)), withRetry(() => listAll(client, this.IPADDR))]);
    const out = new Set<string>();
    for (const s of services) {
      for (const ip of (s.spec?.clusterIPs ?? []) as string[]) {
        if (ip && ip !== 'None' && alone(ip)) out.add(`${s.metadata?.namespace}/${s.metadata?.name} ${ip}`);
      }
    }
    for (const a of addresses) {
      const ip = a.metadata?.name;
      if (!ip || !alone(ip)) continue;
      const ref = a.spec?.parentRef;
      const key = `${ref?.namespace ?? ''}/${ref?.name ?? ''} ${formatIP(parseIP(ip))}`;
      if (![...out].some((x) => x.endsWith(` ${formatIP(parseIP(ip))}`))) out.add(ref?.resource === 'services' || !ref ? key : `${ref.resource} ${key}`);
    }
    return [...out].sort();
  }

  /**
   * The end state: the ServiceCIDR exists with the plan's ranges and is Ready (the allocator serves every Ready
   * ServiceCIDR). A server-side dry-run create at an address of it is no evidence either way: measured on v1.37.2
   * (test/integration/service-extension.test.ts), the apiserver refused it as outside the flag's range while real
   * creates were allocated there, so the test creates real Services instead.
   */
  async verifyEndState(client: KubeClient): Promise<string | undefined> {
    const spec: ServiceCIDRSpec = { name: this.extension.name, cidrs: this.extension.add, purpose: 'extend' };
    const state = await this.scState(client, spec);
    if (state !== 'ready') return `ServiceCIDR ${spec.name} is ${state === 'different' ? 'there with other CIDRs' : state}, not Ready with ${spec.cidrs.join(',')}`;
    return undefined;
  }
}
