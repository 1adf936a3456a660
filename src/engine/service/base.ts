/**
 * The Service CIDR executor's state, which every part of it reads (src/engine/service/: ServiceCIDRs, bridges,
 * covers, the mapping's moves, default/kubernetes, gates, restarts; src/engine/service-steps.ts puts them together
 * as ServiceExecutor): the plan and options, the ServiceCIDR API version, the ranges left, the helpers this run
 * created (journaled by uid), the Services the plan knows per namespace, a Service's backup and its DNS name.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { ipAddresses, serviceCIDRs, type ResourceType } from '../../kube/resources.ts';
import { contains, parseCidr, type Cidr } from '../../net/index.ts';
import type { MigrationPlan, StepItem } from '../../plan/plan.ts';
import { refKey, refOf } from '../backup.ts';
import { ownedHelper } from '../covers.ts';
import { createdUids } from '../journal.ts';
import type { StepContext } from '../runner.ts';
import { svcRef, type ServiceExecOptions } from './common.ts';
import { notOursError } from './decisions.ts';

export class ServiceExecutorBase {
  readonly plan: MigrationPlan;
  readonly opts: Required<Omit<ServiceExecOptions, 'acknowledgedGates' | 'token'>> & { acknowledgedGates: readonly string[]; token?: string };
  readonly scVersion: string;
  readonly svc: NonNullable<MigrationPlan['spec']['serviceCIDR']>;
  readonly strategy: 'in-place' | 'recreate';
  constructor(plan: MigrationPlan, opts: ServiceExecOptions = {}) {
    this.plan = plan;
    if (!plan.spec.serviceCIDR) throw new Error('the plan does not move the Service CIDR');
    this.svc = plan.spec.serviceCIDR;
    this.strategy = plan.spec.strategy ?? 'recreate';
    this.opts = {
      clusterDomain: opts.clusterDomain ?? 'cluster.local',
      acknowledgedGates: opts.acknowledgedGates ?? [],
      readKubeletConfig: opts.readKubeletConfig ?? false,
      timeoutMs: opts.timeoutMs ?? 60_000,
      concurrency: opts.concurrency ?? 8,
      covers: opts.covers ?? true,
      propagationDelayMs: opts.propagationDelayMs ?? 5_000,
      nodePortLeakWaitMs: opts.nodePortLeakWaitMs ?? 12 * 60_000,
      watch: opts.watch ?? true,
      rolloutTimeoutMs: opts.rolloutTimeoutMs ?? 300_000,
      ...(opts.token ? { token: opts.token } : {}),
    };
    this.scVersion = this.svc.apiVersion.split('/')[1] ?? 'v1';
  }

  get SC(): ResourceType { return serviceCIDRs(this.scVersion); }
  get IPADDR(): ResourceType { return ipAddresses(this.scVersion); }

  /** The ranges the migration leaves: every current range not inside the target. */
  oldRanges(): Cidr[] {
    const targets = this.svc.target.map((t) => parseCidr(t));
    return this.svc.from.map((f) => parseCidr(f)).filter((c) => !targets.some((t) => contains(t, c)));
  }

  // ---- ownership of helpers (bridges, covers) ------------------------------------------------------

  /** "<refKey>@<uid>" of the helpers this run journaled as created, read from the journal once per process. */
  protected created?: Set<string>;

  protected createdSet(ctx: StepContext): Set<string> {
    if (!this.created) this.created = this.opts.token ? createdUids(ctx.journal.entries(), ctx.journal.run) : new Set();
    return this.created;
  }

  protected static uidKey(o: KubeObject): string {
    return `${refKey(refOf({ ...o, apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'Service' }))}@${o.metadata?.uid ?? ''}`;
  }

  /**
   * Journals a helper this run created (or found with this run's labels after a crash between its create and
   * the journal line), so moveBack may delete it later by that uid. A helper of the same name that is not this
   * run's stops the step (nothing of it was changed).
   */
  protected adopt(ctx: StepContext, o: KubeObject, forLabel: string, forName: string): KubeObject {
    if (!ownedHelper(o, forLabel, forName, this.opts.token)) throw notOursError([`${o.metadata?.namespace}/${o.metadata?.name}`], this.opts.token, () => o);
    if (ctx.dryRun !== 'none' || !o.metadata?.uid) return o;
    const key = ServiceExecutorBase.uidKey(o);
    const set = this.createdSet(ctx);
    if (!set.has(key)) {
      set.add(key);
      ctx.journal.append('created', { objects: [key] });
    }
    return o;
  }

  /** Was this helper journaled as created by this run (same uid)? Always true for a run without a token. */
  protected createdByThisRun(ctx: StepContext, o: KubeObject): boolean {
    return !this.opts.token || this.createdSet(ctx).has(ServiceExecutorBase.uidKey(o));
  }

  /** Services the plan knows per namespace (moved or not), to choose one LIST over GETs per Service. */
  protected nsSizes?: Map<string, number>;

  /**
   * One namespace is read with one LIST when that costs less than a GET per moved Service and is not much
   * more data: up to 10× the Services wanted, and never fewer than 100 (bridges and covers come with it).
   */
  protected listWholeNamespace(namespace: string, wanted: number): boolean {
    const size = this.namespaceSizes().get(namespace);
    return size !== undefined && size <= Math.max(100, 10 * wanted);
  }

  protected namespaceSizes(): Map<string, number> {
    if (!this.nsSizes) {
      this.nsSizes = new Map();
      for (const m of this.plan.mapping) this.nsSizes.set(m.namespace, (this.nsSizes.get(m.namespace) ?? 0) + 1);
    }
    return this.nsSizes;
  }

  /** The original Service: from the backup when one exists (a resumed run), else as seen. */
  protected original(ctx: StepContext, it: StepItem, seen: KubeObject | undefined): KubeObject | undefined {
    return ctx.backups.load(svcRef(it.namespace, it.name)) ?? seen;
  }

  /** A Service's DNS name, for ExternalName targets. */
  protected fqdn(name: string, namespace: string): string {
    return `${name}.${namespace}.svc.${this.opts.clusterDomain}`;
  }

}
