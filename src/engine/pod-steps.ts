/**
 * Executes the Pod CIDR part of a MigrationPlan (src/plan/pod-plan.ts) with the same runner, journal,
 * backups and locks as the Service part: the steps every pod path shares here, each path's own steps and gates
 * through its engine (src/pod-paths/<id>/engine.ts, installed into ./pod-paths/registry.ts). Every step derives
 * "done" from the cluster:
 *  - pools (calico path): the new pool exists and is enabled; the old ones are disabled, then gone;
 *  - restarts: no non-hostNetwork pod has an address in the old range;
 *  - nodes (node path, src/pod-paths/node/executor.ts): a node's podCIDR is in NEW (or it is gone between its
 *    drain and its re-registration);
 *  - leftovers (calico path): no IPAMBlock / BlockAffinity / IPAMHandle in the old range.
 * So a crash at any point is resumed by running again.
 */
import type { KubeObject } from '../cluster/types.ts';
import { errorLine } from '../errors.ts';
import type { KubeClient } from '../kube/client.ts';
import { ENDPOINTSLICES, getObject, listAll, PODS } from '../kube/resources.ts';
import { DEPLOYMENTS, WORKLOAD_TYPES } from '../kube/workloads.ts';
import { parseCidr, type Cidr } from '../net/index.ts';
import {
  GATE_CONDITION_INFO, STEP_KINDS, type GateConditionInfo, type GateStep, type MigrationPlan, type PlanStep, type SharedPodStepKind, type StepKindInfo,
} from '../plan/plan.ts';
import type { PodCIDRSpec } from '../plan/pod-plan.ts';
import { firstAndMore } from '../text.ts';
import { active, inAny, ipsOf, withKind } from './pod-paths/common.ts';
import { pathGateCheck, pathStepExecutor, podPathEngine, type PodPathHosts } from './pod-paths/registry.ts';
import { resolveWorkloads, restoreScale, scaledReplicas, scaleUp, type Workload } from './restarts.ts';
import { missingBarePods, recreateMissing, restartInWaves } from './restart-run.ts';
import { withPlanSupersessions, type Step, type StepContext } from './runner.ts';
import { poll, sleep, withRetry } from './toolkit.ts';

export interface PodExecOptions {
  acknowledgedGates?: readonly string[];
  /** How long to wait for the cluster to show an effect (default 60 s). */
  timeoutMs?: number;
  /** How long one workload's restart (rollout or evictions) may take (default 5 min). */
  rolloutTimeoutMs?: number;
  /** Identifies the run in pod templates (kube-renumber.io/restart); the plan id. */
  token: string;
  /**
   * The whole environment of the node hook besides KUBE_RENUMBER_NODE (see hookEnvironment); default: PATH and
   * HOME of this process only.
   */
  hookEnv?: Readonly<Record<string, string>>;
  /** May the node hook run (--allow-hook)? apply and resume check it before; a rollback's node steps here (default false). */
  hookAllowed?: boolean;
  /**
   * Least time between two node drains starting, across waves (--node-interval; default 0: a wave's nodes drain
   * at once). A wave's nodes are still cordoned together; their drains start one per interval.
   */
  nodeIntervalMs?: number;
  /** Called with a summary of each restart wave (benchmarks read it). */
  onWaves?: (r: { totalSeconds: number; sumSeconds: number; maxInFlight: number; workloads: number }) => void;
}

export class PodExecutor implements PodPathHosts {
  /**
   * The steps every pod path shares, one executor per kind (the other pod kinds belong to one path each:
   * src/engine/pod-paths/).
   */
  static readonly sharedSteps: { readonly [K in SharedPodStepKind]: (x: PodExecutor, p: PlanStep) => Step } = {
    'scale-critical': (x, p) => x.scaleStep(p),
    'restart-pods': (x, p) => x.restartStep(p),
    'restore-scale': (x, p) => x.restoreScaleStep(p),
    'verify-pods': (x, p) => ({
      id: p.id, title: p.description, kind: 'action', check: async () => false, apply: async () => {},
      // the last wave's replacements (a DaemonSet's pod on the last node that registered again) may still be starting
      // when a run resumes past its last gate: replicas short of desired are waited for, up to --timeout
      verify: (ctx) => x.settledEndState(ctx),
      // it only reads: nothing to undo
      rollback: async () => {},
    }),
  };

  readonly plan: MigrationPlan;
  readonly spec: PodCIDRSpec;
  readonly old: Cidr[];
  readonly target: Cidr[];
  readonly opts: Required<Omit<PodExecOptions, 'onWaves'>> & Pick<PodExecOptions, 'onWaves'>;

  /** The run (the plan id), as PodPathHost names it. */
  get run(): string { return this.opts.token; }

  constructor(plan: MigrationPlan, opts: PodExecOptions) {
    if (!plan.spec.podCIDR) throw new Error('the plan does not move the Pod CIDR');
    this.plan = plan;
    this.spec = plan.spec.podCIDR;
    this.old = this.spec.from.map((c) => parseCidr(c));
    this.target = this.spec.to.map((c) => parseCidr(c));
    this.opts = {
      acknowledgedGates: opts.acknowledgedGates ?? [],
      timeoutMs: opts.timeoutMs ?? 60_000,
      rolloutTimeoutMs: opts.rolloutTimeoutMs ?? 300_000,
      token: opts.token,
      onWaves: opts.onWaves,
      hookEnv: opts.hookEnv ?? hookEnvironment(process.env),
      hookAllowed: opts.hookAllowed ?? false,
      nodeIntervalMs: opts.nodeIntervalMs ?? 0,
    };
  }

  /** A step's verification: wait until `cond` holds; the timeout's message when it does not. */
  async until(what: string, cond: () => Promise<boolean>): Promise<string | undefined> {
    try {
      await poll(what, async () => ((await cond()) ? true : undefined), { timeoutMs: this.opts.timeoutMs });
      return undefined;
    } catch (e) {
      return errorLine(e);
    }
  }

  /** Does this executor handle the plan step? Its step kinds, and the gates whose condition it checks. */
  handles(p: PlanStep): boolean {
    if (p.kind === 'gate') return (GATE_CONDITION_INFO[p.gate.condition] as GateConditionInfo | undefined)?.family === 'pod';
    return (STEP_KINDS[p.kind] as StepKindInfo | undefined)?.family === 'pod';
  }

  step(p: PlanStep): Step {
    return withPlanSupersessions(p, this.stepOf(p));
  }

  private stepOf(p: PlanStep): Step {
    if (p.kind === 'gate') return { id: p.id, title: p.description, kind: 'gate', instructions: p.gate.instructions, check: (ctx) => this.gateHolds(p, ctx) };
    const shared = (PodExecutor.sharedSteps as Partial<Record<string, (x: PodExecutor, p: PlanStep) => Step>>)[p.kind];
    if (shared) return shared(this, p);
    const own = pathStepExecutor(p.kind);
    if (own) return own.run(this, p);
    throw new Error(`plan step ${p.id}: unknown kind ${String(p.kind)}`);
  }


  // ---- pods ---------------------------------------------------------------------------------------

  async podsInOld(client: KubeClient, fieldSelector?: string): Promise<KubeObject[]> {
    const pods = await withRetry(() => listAll(client, PODS, fieldSelector ? { fieldSelector } : {}));
    return pods.filter((p) => active(p) && ipsOf(p).some((a) => inAny(this.old, a)));
  }

  /** Bare pods this run backed up (to evict and create again) that do not exist now: a crash came between the two. */
  missingBarePods(ctx: StepContext): Promise<KubeObject[]> {
    return missingBarePods(ctx);
  }

  /** Create again, from their backups, the bare pods a crash left deleted. */
  recreateMissing(ctx: StepContext): Promise<void> {
    return recreateMissing(ctx, { token: this.opts.token, rolloutTimeoutMs: this.opts.rolloutTimeoutMs });
  }

  warn(ctx: StepContext, msg: string): void {
    (ctx.warn ?? ctx.log)(msg);
  }

  // ---- scaling ------------------------------------------------------------------------------------

  private critical(p: PlanStep): Array<{ namespace: string; name: string }> {
    return (p.items ?? []).map((i) => ({ namespace: i.namespace, name: i.name }));
  }

  private scaleStep(p: PlanStep): Step {
    const refs = this.critical(p);
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        for (const r of refs) {
          const b = ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name });
          const cur = await getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace);
          if (!cur) continue;
          if (!b || (cur.spec?.replicas ?? 1) < scaledReplicas(b.spec?.replicas ?? 1)) return false;
        }
        return true;
      },
      backup: async (ctx) => (await Promise.all(refs.map((r) => withRetry(() => getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace)))))
        .filter((x): x is KubeObject => !!x).map((x) => ({ ...x, apiVersion: 'apps/v1', kind: 'Deployment' })),
      apply: async (ctx) => {
        for (const r of refs) {
          const rec = await scaleUp(ctx, r, { timeoutMs: this.opts.rolloutTimeoutMs });
          if (!rec) this.warn(ctx, `Deployment ${r.namespace}/${r.name} not found: not scaled up`);
        }
      },
      rollback: async (ctx) => { for (const r of refs) await restoreScale(ctx, r); },
    };
  }

  private restoreScaleStep(p: PlanStep): Step {
    const refs = this.critical(p);
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        for (const r of refs) {
          const b = ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name });
          const cur = await getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace);
          if (b && cur && (cur.spec?.replicas ?? 1) !== (b.spec?.replicas ?? 1)) return false;
        }
        return true;
      },
      apply: async (ctx) => {
        for (const r of refs) {
          if (!ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name })) continue;
          await restoreScale(ctx, r);
        }
      },
      // the replicas are the backup's again: nothing to undo (scale-critical's rollback puts them back too)
      rollback: async () => {},
      // Settled before the run goes on: the removed replicas are gone and no EndpointSlice still sends traffic
      // to them. A later gate restarts kube-controller-manager; a slice it had not updated before it stopped
      // would keep a deleted CoreDNS pod in kube-dns until it is back (measured on the data-plane testbed:
      // DNS queries unanswered for seconds).
      verify: (ctx) => this.until('the scaled-down replicas to be gone from their Deployments and EndpointSlices', async () => {
        for (const r of refs) {
          const d = await getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace);
          if (d && (d.status?.replicas ?? 0) > (d.spec?.replicas ?? 1)) return false;
          if ((await staleEndpoints(ctx.client, r.namespace)).length > 0) return false;
        }
        return true;
      }),
    };
  }

  // ---- restarts -----------------------------------------------------------------------------------

  /** Restart `workloads` in waves (./restart-run.ts); throws when any is paused, stuck or failed (after all have run). */
  async restartAll(ctx: StepContext, workloads: Workload[], critical: readonly string[]): Promise<void> {
    await restartInWaves(ctx, workloads, {
      parallel: this.spec.restarts.parallel, critical, token: this.opts.token, rolloutTimeoutMs: this.opts.rolloutTimeoutMs,
      ...(this.opts.onWaves ? { onWaves: this.opts.onWaves } : {}),
    });
  }

  /** The Deployments, StatefulSets and DaemonSets among `workloads`, as objects to back up (one LIST per kind). */
  private async workloadObjects(client: KubeClient, workloads: readonly Workload[]): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet'] as const) {
      const want = new Set(workloads.filter((w) => w.kind === kind).map((w) => `${w.namespace}/${w.name}`));
      if (want.size === 0) continue;
      for (const o of await withRetry(() => listAll(client, WORKLOAD_TYPES[kind]))) {
        if (want.has(`${o.metadata?.namespace}/${o.metadata?.name}`)) out.push(withKind(o, WORKLOAD_TYPES[kind]));
      }
    }
    return out;
  }

  private restartStep(p: PlanStep): Step {
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.podsInOld(ctx.client)).length === 0 && (await this.missingBarePods(ctx)).length === 0,
      // the workloads whose pod templates apply annotates; a bare pod is backed up right before its eviction
      // (backUpLate, journaled), so one deleted by someone else meanwhile is not brought back
      backup: async (ctx) => this.workloadObjects(ctx.client, (await resolveWorkloads(ctx.client, await this.podsInOld(ctx.client))).workloads),
      apply: async (ctx) => {
        if (ctx.dryRun === 'none') await this.recreateMissing(ctx);
        // Rounds: a pod created while the old pool was still enabled somewhere (or by a slow controller) is caught by the next one.
        for (let round = 1; round <= 3; round++) {
          const pods = await this.podsInOld(ctx.client);
          if (pods.length === 0) return;
          const g = await resolveWorkloads(ctx.client, pods);
          for (const u of g.unknownOwners) this.warn(ctx, `pod ${u.namespace}/${u.pod} is owned by ${u.kind} ${u.name} (${u.apiVersion}), which this tool does not know: it is evicted and left to that controller`);
          await this.restartAll(ctx, g.workloads, this.spec.restarts.critical);
          if (ctx.dryRun !== 'none') return;
        }
      },
      verify: async (ctx) => {
        try {
          await poll(`no pod left with an address in ${this.spec.from.join(', ')}`, async () => ((await this.podsInOld(ctx.client)).length === 0 ? true : undefined), { timeoutMs: this.opts.timeoutMs });
          return undefined;
        } catch {
          const left = await this.podsInOld(ctx.client);
          return `${left.length} pod(s) still have addresses in ${this.spec.from.join(', ')}: ${left.slice(0, 5).map((x) => `${x.metadata?.namespace}/${x.metadata?.name} ${ipsOf(x).join(',')}`).join(', ')}`;
        }
      },
      rollback: async () => { throw new Error('restarted pods cannot be un-restarted; re-enable the old pool and restart again to move back'); },
    };
  }

  // ---- gates --------------------------------------------------------------------------------------



  async gateHolds(p: GateStep, ctx: StepContext): Promise<boolean> {
    if (this.opts.acknowledgedGates.includes(p.id)) {
      ctx.log(`gate ${p.id}: acknowledged by --ack-gate`);
      return true;
    }
    const check = pathGateCheck(p.gate.condition);
    if (!check) throw new Error(`gate ${p.id}: condition ${p.gate.condition} belongs to the Service CIDR migration`);
    return check.run(this, p, ctx);
  }

  // ---- end state ----------------------------------------------------------------------------------

  /** The end state, waiting up to --timeout while the only problem is workloads short of their desired replicas. */
  async settledEndState(ctx: StepContext): Promise<string | undefined> {
    const deadline = Date.now() + this.opts.timeoutMs;
    for (;;) {
      const problem = await this.verifyEndState(ctx.client, ctx);
      if (!problem || !/^not at desired replicas: [^;]*$/.test(problem) || Date.now() >= deadline || ctx.dryRun !== 'none') return problem;
      ctx.log(`waiting: ${problem}`);
      await sleep(2000);
    }
  }

  async verifyEndState(client: KubeClient, ctx?: Pick<StepContext, 'backups'>): Promise<string | undefined> {
    const problems: string[] = [];
    const left = await this.podsInOld(client);
    if (left.length > 0) problems.push(`${left.length} pod(s) still have addresses in ${this.spec.from.join(', ')} (${left.slice(0, 3).map((x) => `${x.metadata?.namespace}/${x.metadata?.name}`).join(', ')})`);
    problems.push(...await podPathEngine(this.spec.ipam).endState(this, client, ctx));
    const notReady: string[] = [];
    for (const t of Object.values(WORKLOAD_TYPES)) {
      const kind = t.kind;
      for (const o of await withRetry(() => listAll(client, t))) {
        const s = o.status ?? {};
        const want = kind === 'DaemonSet' ? s.desiredNumberScheduled ?? 0 : o.spec?.replicas ?? 1;
        const have = kind === 'DaemonSet' ? s.numberAvailable ?? 0 : kind === 'StatefulSet' ? s.readyReplicas ?? 0 : s.availableReplicas ?? 0;
        if (have < want) notReady.push(`${kind} ${o.metadata?.namespace}/${o.metadata?.name} ${have}/${want}`);
      }
    }
    if (notReady.length > 0) problems.push(`not at desired replicas: ${firstAndMore(notReady, 5)}`);
    if (ctx && 'all' in ctx.backups) {
      const gone = ctx.backups.all().filter((o) => o.kind === 'Pod' && !(o.metadata?.ownerReferences ?? []).some((r) => r.controller));
      for (const b of gone) if (!(await getObject(client, PODS, b.metadata!.name!, b.metadata!.namespace))) problems.push(`bare pod ${b.metadata?.namespace}/${b.metadata?.name} is gone (restore it: kube-renumber restore)`);
    }
    if (ctx) {
      for (const c of this.spec.restarts.critical) {
        const [namespace, name] = c.split('/') as [string, string];
        const b = ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name });
        const cur = await getObject(client, DEPLOYMENTS, name, namespace);
        if (b && cur && (cur.spec?.replicas ?? 1) !== (b.spec?.replicas ?? 1)) problems.push(`Deployment ${c} has ${cur.spec?.replicas} replicas, not its original ${b.spec?.replicas ?? 1}`);
      }
    }
    return problems.length > 0 ? problems.join('; ') : undefined;
  }
}


/**
 * The node hook's environment, besides KUBE_RENUMBER_NODE: PATH and HOME, and KUBECONFIG when the run uses one
 * (`kubeconfig`: the --kubeconfig path, else $KUBECONFIG if set). Nothing else of this process's environment
 * (tokens, cloud credentials, proxies) reaches the hook.
 */
export function hookEnvironment(env: NodeJS.ProcessEnv, kubeconfig?: string): Record<string, string> {
  const out: Record<string, string> = { PATH: env.PATH || '/usr/local/bin:/usr/bin:/bin' };
  if (env.HOME) out.HOME = env.HOME;
  const kc = kubeconfig ?? env.KUBECONFIG;
  if (kc) out.KUBECONFIG = kc;
  return out;
}

/**
 * Ready endpoints in a namespace's EndpointSlices whose pod no longer exists or is being deleted: traffic the
 * EndpointSlice controller has not taken away yet. As `namespace/pod address`.
 */
export async function staleEndpoints(client: KubeClient, namespace: string): Promise<string[]> {
  const [slices, pods] = await Promise.all([listAll(client, ENDPOINTSLICES, { namespace }), listAll(client, PODS, { namespace })]);
  const live = new Set(pods.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata?.uid));
  const out: string[] = [];
  for (const sl of slices) {
    for (const ep of (sl as any).endpoints ?? []) {
      if (ep?.conditions?.ready === false || ep?.targetRef?.kind !== 'Pod') continue;
      if (!live.has(ep.targetRef.uid)) out.push(`${namespace}/${ep.targetRef.name} ${(ep.addresses ?? []).join(',')}`);
    }
  }
  return out;
}
