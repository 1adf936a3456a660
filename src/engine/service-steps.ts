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
 */
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import {
  createObject, deleteObject, ENDPOINTSLICES, EVENTS, getObject, listAll, objectPath, PODS, SERVICES, serviceCIDRs,
  forCreate, ipAddresses, type ResourceType,
} from '../kube/resources.ts';
import { contains, formatIP, parseCidr, parseIP, tryParseCidr, type Cidr } from '../net/index.ts';
import {
  coverName, MANAGED_LABEL, type MigrationPlan, type GateStep, type PlanStep, type ServiceActionKind, type ServiceCIDRSpec, type ServiceGateCondition, type StepItem,
} from '../plan/plan.ts';
import { refOf } from './backup.ts';
import { UserError } from '../errors.ts';
import { refKey } from './backup.ts';
import { COVER_FOR_LABEL, coverCarries, coverService, coverStatus, ownedHelper, pickSpares, readyAddresses, RUN_LABEL } from './covers.ts';
import { createdUids, readJournal, sinceLastRollback } from './journal.ts';
import { withPlanSupersessions, type Step, type StepContext } from './runner.ts';
import { missingBarePods, recreateMissing, restartInWaves } from './restart-run.ts';
import { pdbsFor, resolveWorkloads, restoreScale, scaledReplicas, scaleUp, skipReason, type Workload } from './restarts.ts';
import { DEPLOYMENTS, PODDISRUPTIONBUDGETS } from '../kube/workloads.ts';
import { SliceWatch } from './slice-watch.ts';
import { kubeletsServeNewDNS } from './kubelet-dns-gate.ts';
import { mapLimit, poll, retryOnConflict, sleep, waitFor, withRetry } from './toolkit.ts';

export interface ServiceExecOptions {
  /** Cluster DNS domain for ExternalName targets (default cluster.local). */
  clusterDomain?: string;
  /** Gates the operator asserts by hand when the cluster cannot show them (e.g. no kubelet configz). */
  acknowledgedGates?: readonly string[];
  /** Gate kubelet-cluster-dns reads each Ready node's kubelet configz (needs get nodes/proxy: src/engine/kubelet-dns-gate.ts). */
  readKubeletConfig?: boolean;
  /** How long to wait for the apiserver/controllers to show an effect (default 60 s). */
  timeoutMs?: number;
  /** Parallel Service moves inside one batch (default 8). */
  concurrency?: number;
  /**
   * in-place: put up cover Services (src/engine/covers.ts) so the old and the new IP answer throughout a move
   * (default true). false: the move leaves a window of up to kube-proxy's sync period per Service.
   */
  covers?: boolean;
  /**
   * How long a change needs to reach every node's kube-proxy rules and every DNS cache (default 5 s: kube-proxy's
   * 1 s minimum sync period with room for slow syncs, and CoreDNS's 5 s TTL for Service records). Waited once
   * after the covers of a batch are up and once before they come down.
   */
  propagationDelayMs?: number;
  /**
   * How long an in-place move waits for a nodePort that the apiserver shows allocated though no Service holds it
   * (default 12 min; see patchBack).
   */
  nodePortLeakWaitMs?: number;
  /**
   * The run (the plan id): bridges, covers and copied EndpointSlices carry it as label RUN_LABEL, and only
   * objects with it (and, for deletes by moveBack, a uid journaled as `created` by this run) are changed.
   */
  token?: string;
  /**
   * Follow the EndpointSlices the engine waits for with a watch (default true); false: LIST them again every
   * 50–250 ms, as before the watch (the service-renumber benchmark compares the two).
   */
  watch?: boolean;
  /** How long one workload's restart (rollout or evictions) may take in step restart-workloads (default 5 min). */
  rolloutTimeoutMs?: number;
}

export const BRIDGE_FOR_LABEL = 'kube-renumber.io/bridge-for';
const MANAGED_BY = 'kube-renumber.io';

const svcRef = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: ns, name });
const itemKey = (it: { namespace: string; name: string }) => `${it.namespace}/${it.name}`;

function sameIPs(a: readonly string[] | undefined, b: readonly string[]): boolean {
  if (!a || a.length !== b.length) return false;
  return a.every((x, i) => formatIP(parseIP(x)) === formatIP(parseIP(b[i]!)));
}

function ipsOf(s: KubeObject | undefined): string[] {
  if (!s?.spec) return [];
  if (Array.isArray(s.spec.clusterIPs)) return s.spec.clusterIPs.filter((x: string) => x && x !== 'None');
  return s.spec.clusterIP && s.spec.clusterIP !== 'None' ? [s.spec.clusterIP] : [];
}

/** JSON with object keys sorted at every depth, so equal specs compare equal whatever their key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as any)[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// ---- decisions of a move, pure (unit-tested without an apiserver) ------------------------------------

/** What the cluster shows for a batch: "namespace/name" → the Service, its bridge, its cover (undefined: absent). */
export type ServiceView = Map<string, KubeObject | undefined>;

/** A planned ServiceCIDR as the cluster has it. */
type ServiceCIDRState = 'absent' | 'ready' | 'pending' | 'deleting' | 'different';

/** What the writes of one move returned: the end state, without another read. */
export interface MoveEvidence {
  service?: KubeObject;
  bridge?: KubeObject;
  /** Whether this process wrote the Service (else it was found moved already). */
  wrote: boolean;
}

/** The apiserver refused an explicit ClusterIP that is still (or already) allocated. */
export function isIPTaken(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 422 && /already allocated/i.test(e.message);
}

/**
 * "failed to allocate IP …: allocator not ready": before 1.33 (measured on v1.30.14) an explicit IP is served by the
 * allocator of the largest ServiceCIDR containing it, which refuses while that ServiceCIDR is being deleted, even when
 * a smaller Ready one covers the IP too. It passes once the Terminating one is gone (kube-controller-manager removes
 * it seconds after its last address is released), so such a create is tried again until then.
 */
export function isAllocatorNotReady(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 422 && /allocator not ready/i.test(e.message);
}

/**
 * The nodePorts a 422 of the apiserver refuses as taken ("spec.ports[0].nodePort: Invalid value: 31479: provided
 * port is already allocated"); empty for any other error.
 */
export function takenNodePorts(e: unknown): number[] {
  if (!(e instanceof KubeApiError) || e.status !== 422) return [];
  return [...e.message.matchAll(/nodePort: Invalid value: (\d+): provided port is already allocated/g)].map((m) => Number(m[1]));
}

/** Which Services, other than `self`, hold one of `ports` as a nodePort or healthCheckNodePort: "namespace/name" → ports. */
export function nodePortHolders(services: readonly KubeObject[], ports: readonly number[], self: { namespace: string; name: string }): Map<string, number[]> {
  const want = new Set(ports);
  const out = new Map<string, number[]>();
  for (const s of services) {
    if (s.metadata?.namespace === self.namespace && s.metadata?.name === self.name) continue;
    const held = [...(s.spec?.ports ?? []).map((p: { nodePort?: number }) => p.nodePort), s.spec?.healthCheckNodePort]
      .filter((n): n is number => typeof n === 'number' && want.has(n));
    if (held.length > 0) out.set(`${s.metadata?.namespace}/${s.metadata?.name}`, [...new Set(held)]);
  }
  return out;
}

export type MoveDecision =
  /** at the mapped IPs: only the bridge may be missing */
  | { action: 'ensure-bridge' }
  /** neither at the planned old IPs nor at the mapped ones: someone changed it */
  | { action: 'conflict'; message: string }
  /** gone (an interrupted recreate, or deleted by someone): bridge, then create at the mapped IPs from the backup */
  | { action: 'create' }
  /** recreate: delete (uid precondition), bridge, create at the mapped IPs */
  | { action: 'delete' }
  /** in-place, first hop: ExternalName, bridge, back at the mapped IPs */
  | { action: 'external-name' }
  /** in-place, ExternalName already (an interrupted run): bridge, back at the mapped IPs */
  | { action: 'back' };

/** The next move of one Service given what the cluster shows now. */
export function decideMove(it: StepItem, cur: KubeObject | undefined, strategy: 'in-place' | 'recreate'): MoveDecision {
  if (!cur) return { action: 'create' };
  const external = cur.spec?.type === 'ExternalName';
  if (!external && sameIPs(ipsOf(cur), it.to)) return { action: 'ensure-bridge' };
  if (!external && !sameIPs(ipsOf(cur), it.from)) {
    return { action: 'conflict', message: `Service ${it.namespace}/${it.name} has ClusterIPs ${ipsOf(cur).join(',') || 'none'}, neither the planned ${it.from.join(',')} nor ${it.to.join(',')}: changed since the plan; re-plan` };
  }
  if (strategy === 'recreate') return { action: 'delete' };
  return { action: external ? 'back' : 'external-name' };
}

/** Moved: at the mapped IPs, not ExternalName, its bridge (if any) at the old IPs. */
export function itemDone(view: ServiceView, it: StepItem): boolean {
  const s = view.get(itemKey(it));
  if (!s || s.spec?.type === 'ExternalName' || !sameIPs(ipsOf(s), it.to)) return false;
  if (!it.bridge) return true;
  const b = view.get(`${it.namespace}/${it.bridge}`);
  return !!b && sameIPs(ipsOf(b), it.from);
}

/** The covers of these items in a view (ours by label and name; of run `run` when given). */
export function coversIn(view: ServiceView, items: readonly StepItem[], run?: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const it of items) {
    const c = view.get(`${it.namespace}/${coverName(it.name)}`);
    if (c && ownedHelper(c, COVER_FOR_LABEL, it.name, run)) out.push(c);
  }
  return out;
}

/**
 * Objects in the view named like a helper of these items (`<svc>-kr-old` bridge, `<svc>-kr-cover` cover) that are
 * not helpers of this run: someone else's Service, which a move must neither patch nor delete. Pure.
 */
export function squatters(view: ServiceView, items: readonly StepItem[], run?: string): string[] {
  const out: string[] = [];
  for (const it of items) {
    const c = view.get(`${it.namespace}/${coverName(it.name)}`);
    if (c && !ownedHelper(c, COVER_FOR_LABEL, it.name, run)) out.push(`${it.namespace}/${coverName(it.name)}`);
    const b = it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined;
    if (b && !ownedHelper(b, BRIDGE_FOR_LABEL, it.name, run)) out.push(`${it.namespace}/${it.bridge}`);
  }
  return out;
}

/**
 * The error that stops a run at an object that has a helper's name but is not this run's (exit 6). `found` gives
 * the objects as seen: one that carries kube-renumber's helper labels but no run label (a bridge or cover made by a
 * version before run labels) is named with the command that labels it, if the operator knows it is this run's.
 */
export function notOursError(what: readonly string[], run?: string, found: (key: string) => KubeObject | undefined = () => undefined): UserError {
  const unlabelled = run === undefined ? [] : what.filter((k) => {
    const l = found(k)?.metadata?.labels ?? {};
    return l[MANAGED_LABEL] === 'true' && (l[BRIDGE_FOR_LABEL] !== undefined || l[COVER_FOR_LABEL] !== undefined) && l[RUN_LABEL] === undefined;
  });
  const label = unlabelled.length === 0 ? '' : `; ${unlabelled.join(', ')} carr${unlabelled.length === 1 ? 'ies' : 'y'} the helper labels but no ${RUN_LABEL} label `
    + '(made by a kube-renumber without run labels): only if this run made them, label them by hand and resume: '
    + unlabelled.map((k) => { const [ns, name] = k.split('/'); return `kubectl -n ${ns} label service ${name} ${RUN_LABEL}=${run}`; }).join('; ');
  // a helper of another plan's run (the plan was made again, so its id changed): that run's to finish or undo
  const others = run === undefined ? [] : what.flatMap((k) => {
    const l = found(k)?.metadata?.labels ?? {};
    const other = l[RUN_LABEL];
    return l[MANAGED_LABEL] === 'true' && (l[BRIDGE_FOR_LABEL] !== undefined || l[COVER_FOR_LABEL] !== undefined) && other !== undefined && other !== run
      ? [`${k} is a helper of the run of plan ${other}: finish or roll back that plan's run (kube-renumber rollback PLAN of id ${other}), `
        + `or, if that plan was replaced by this one, label it as this run's (kubectl -n ${k.split('/')[0]} label service ${k.split('/')[1]} ${RUN_LABEL}=${run} --overwrite) and resume`]
      : [];
  });
  return new UserError(`Service ${what.slice(0, 3).join(', ')}${what.length > 3 ? ` and ${what.length - 3} more` : ''} has the name of a kube-renumber helper `
    + `but is not one of this run's (labels ${MANAGED_LABEL}=true, ${BRIDGE_FOR_LABEL} or ${COVER_FOR_LABEL}${run ? `, ${RUN_LABEL}=${run}` : ''}): `
    + `it was left untouched; rename or remove it, then resume${label}${others.length > 0 ? `; ${others.join('; ')}` : ''}`, 'verify');
}

/** A move-services step is done when every Service is moved with its bridge and no cover of theirs is left. */
export function batchDone(view: ServiceView, items: readonly StepItem[]): boolean {
  return items.every((it) => itemDone(view, it)) && coversIn(view, items).length === 0;
}

/** What is wrong with one moved Service as seen (undefined: nothing). */
export function itemProblem(it: StepItem, svc: KubeObject | undefined, bridge: KubeObject | undefined): string | undefined {
  if (!svc) return `Service ${it.namespace}/${it.name} is missing`;
  if (svc.spec?.type === 'ExternalName' || !sameIPs(ipsOf(svc), it.to)) return `Service ${it.namespace}/${it.name} has ${ipsOf(svc).join(',') || 'no ClusterIP'}, expected ${it.to.join(',')}`;
  if (it.bridge && (!bridge || !sameIPs(ipsOf(bridge), it.from))) return `bridge ${it.namespace}/${it.bridge} is not at ${it.from.join(',')}`;
  return undefined;
}

/** Did a write of this process return the Service at `ips`? */
export function writtenAt(ev: MoveEvidence | undefined, ips: readonly string[]): boolean {
  return !!ev?.wrote && !!ev.service && ev.service.spec?.type !== 'ExternalName' && sameIPs(ipsOf(ev.service), ips);
}

/** Merge patch with a resourceVersion precondition: a concurrent edit gives 409 instead of being overwritten. */
async function patchService(client: KubeClient, cur: KubeObject, spec: Record<string, unknown>, dryRun: boolean): Promise<KubeObject> {
  return client.request<KubeObject>('PATCH', objectPath(SERVICES, cur.metadata!.name!, cur.metadata!.namespace), {
    body: { metadata: { resourceVersion: cur.metadata!.resourceVersion }, spec },
    contentType: 'application/merge-patch+json',
    query: { dryRun: dryRun ? 'All' : undefined, fieldManager: 'kube-renumber' },
  });
}

/** The Service as it must be re-created from its backup, at `ips`. */
function recreated(orig: KubeObject, ips: string[]): KubeObject {
  const o = forCreate(orig);
  return { ...o, apiVersion: 'v1', kind: 'Service', spec: { ...orig.spec, clusterIP: ips[0], clusterIPs: ips } };
}

/** The spec fields that return a Service from ExternalName to what it was, at `ips`. */
function backToType(orig: KubeObject, ips: string[]): Record<string, unknown> {
  const s = orig.spec ?? {};
  const out: Record<string, unknown> = {
    type: s.type ?? 'ClusterIP', externalName: null, clusterIP: ips[0], clusterIPs: ips, ports: s.ports,
  };
  for (const f of ['ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy', 'externalTrafficPolicy', 'sessionAffinity',
    'sessionAffinityConfig', 'healthCheckNodePort', 'allocateLoadBalancerNodePorts', 'trafficDistribution']) {
    if (s[f] !== undefined) out[f] = s[f];
  }
  return out;
}

/** A bridge: same selector and ports (no nodePorts), at the old IPs. Selectorless bridges get an EndpointSlice. */
function bridgeService(orig: KubeObject, name: string, ips: string[], run?: string): KubeObject {
  const s = orig.spec ?? {};
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name, namespace: orig.metadata!.namespace, labels: { [MANAGED_LABEL]: 'true', [BRIDGE_FOR_LABEL]: orig.metadata!.name!, ...(run ? { [RUN_LABEL]: run } : {}) } },
    spec: {
      type: 'ClusterIP', clusterIP: ips[0], clusterIPs: ips,
      ...(s.selector ? { selector: s.selector } : {}),
      ports: (s.ports ?? []).map((p: any) => { const { nodePort, ...rest } = p; void nodePort; return rest; }),
      ...(s.ipFamilies ? { ipFamilies: s.ipFamilies, ipFamilyPolicy: s.ipFamilyPolicy } : {}),
      ...(s.sessionAffinity ? { sessionAffinity: s.sessionAffinity } : {}),
      ...(s.publishNotReadyAddresses ? { publishNotReadyAddresses: true } : {}),
    },
  };
}

export class ServiceExecutor {
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

  /** Engine steps for the plan; `other` builds the steps this executor does not handle (the Pod CIDR ones). */
  steps(other?: (p: PlanStep) => Step | undefined): Step[] {
    return this.plan.steps.map((p) => other?.(p) ?? this.step(p));
  }

  step(p: PlanStep): Step {
    return withPlanSupersessions(p, this.stepOf(p));
  }

  private stepOf(p: PlanStep): Step {
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
    'drain-servicecidrs': (x, p) => x.drainStep(p),
    'sweep-services': (x, p) => x.sweepStep(p),
    'move-kubernetes': (x, p) => x.moveKubernetesStep(p),
    'remove-bridges': (x, p) => x.removeBridgesStep(p),
    'finalize-servicecidrs': (x, p) => x.finalizeStep(p),
    'restart-workloads': (x, p) => x.restartWorkloadsStep(p),
    verify: (x, p) => ({
      id: p.id, title: p.description, kind: 'action', check: async () => false, apply: async () => {}, verify: (ctx) => x.verifyEndState(ctx.client, ctx.backups),
    }),
  };

  /** One check per gate condition of the Service CIDR migration (GATE_CONDITION_INFO in src/plan/steps.ts). */
  static readonly gates: { readonly [C in ServiceGateCondition]: (x: ServiceExecutor, p: GateStep, ctx: StepContext) => Promise<boolean> } = {
    'apiservers-on-new-range': (x, p, ctx) => x.apiserversOnNewRange(ctx, p.id),
    'workloads-restarted': (x, _p, ctx) => x.podsRestarted(ctx),
    'kubelet-cluster-dns': (x, _p, ctx) => x.kubeletsOnNewDNS(ctx),
    // the plan holds this gate only when the API was not served at plan time
    'servicecidr-api': (x, _p, ctx) => x.serviceCIDRApiServed(ctx),
  };


  // ---- ownership of helpers (bridges, covers) ------------------------------------------------------

  /** "<refKey>@<uid>" of the helpers this run journaled as created, read from the journal once per process. */
  private created?: Set<string>;

  private createdSet(ctx: StepContext): Set<string> {
    if (!this.created) this.created = this.opts.token ? createdUids(ctx.journal.entries(), ctx.journal.run) : new Set();
    return this.created;
  }

  private static uidKey(o: KubeObject): string {
    return `${refKey(refOf({ ...o, apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'Service' }))}@${o.metadata?.uid ?? ''}`;
  }

  /**
   * Journals a helper this run created (or found with this run's labels after a crash between its create and
   * the journal line), so moveBack may delete it later by that uid. A helper of the same name that is not this
   * run's stops the step (nothing of it was changed).
   */
  private adopt(ctx: StepContext, o: KubeObject, forLabel: string, forName: string): KubeObject {
    if (!ownedHelper(o, forLabel, forName, this.opts.token)) throw notOursError([`${o.metadata?.namespace}/${o.metadata?.name}`], this.opts.token, () => o);
    if (ctx.dryRun !== 'none' || !o.metadata?.uid) return o;
    const key = ServiceExecutor.uidKey(o);
    const set = this.createdSet(ctx);
    if (!set.has(key)) {
      set.add(key);
      ctx.journal.append('created', { objects: [key] });
    }
    return o;
  }

  /** Was this helper journaled as created by this run (same uid)? Always true for a run without a token. */
  private createdByThisRun(ctx: StepContext, o: KubeObject): boolean {
    return !this.opts.token || this.createdSet(ctx).has(ServiceExecutor.uidKey(o));
  }

  // ---- ServiceCIDRs -------------------------------------------------------------------------------

  /**
   * Gate `enable-servicecidr-api`: the apiserver serves the plan's ServiceCIDR API version, its bootstrap controller
   * has made ServiceCIDR/kubernetes Ready, and every Service's ClusterIP is registered as an IPAddress object. The
   * last one matters on 1.29–1.32 (measured on v1.30.14): the apiserver's IP repair loop makes its first pass before
   * ServiceCIDR/kubernetes exists, skips every address it cannot place yet ("is not within any service CIDR") and
   * registers them only at its next resync, 3 minutes later (repairLoopInterval). Until then the allocator does not
   * know those addresses: a new Service could be given one of them, and a ServiceCIDR holding only unregistered
   * addresses finishes deleting at once. So once the API is served this check waits for the registration (up to
   * REGISTRATION_WAIT_MS), then says which addresses are still missing.
   */
  async serviceCIDRApiServed(ctx: StepContext): Promise<boolean> {
    let sc: KubeObject | undefined;
    try {
      sc = await getObject(ctx.client, this.SC, 'kubernetes');
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) {
        ctx.log(`networking.k8s.io/${this.scVersion} servicecidrs not served yet`);
        return false;
      }
      throw e;
    }
    // once passed, later steps of this run drain ServiceCIDR/kubernetes: the API being served is all that still counts
    const passed = sinceLastRollback(readJournal(ctx.journal.path))
      .some((e) => e.step === 'enable-servicecidr-api' && e.event === 'step-skip');
    if (passed) return true;
    const ready = (sc?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    if (ready?.status !== 'True') {
      ctx.log(`ServiceCIDR kubernetes ${sc ? 'not Ready yet' : 'not created yet'}`);
      return false;
    }
    const deadline = Date.now() + ServiceExecutor.REGISTRATION_WAIT_MS;
    for (let first = true; ; first = false) {
      const missing = await this.unregisteredClusterIPs(ctx.client);
      if (missing.length === 0) return true;
      const shown = `${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}`;
      if (Date.now() >= deadline || ctx.dryRun !== 'none') {
        ctx.log(`${missing.length} ClusterIP(s) not registered as IPAddress objects yet (${shown}): the apiserver's repair loop registers `
          + 'the addresses of Services made before the API was enabled at its next pass (every 3 minutes); resume once it has');
        return false;
      }
      if (first) ctx.log(`waiting for the apiserver to register ${missing.length} existing ClusterIP(s) as IPAddress objects (${shown}; up to ${Math.round(ServiceExecutor.REGISTRATION_WAIT_MS / 1000)}s)`);
      await sleep(5000);
    }
  }

  /** How long the enable-servicecidr-api gate waits for existing ClusterIPs to be registered: one repair pass and a margin. */
  static REGISTRATION_WAIT_MS = 200_000;

  /** "ns/name ip" of every ClusterIP that has no IPAddress object naming its Service. */
  private async unregisteredClusterIPs(client: KubeClient): Promise<string[]> {
    const [services, addresses] = await Promise.all([withRetry(() => listAll(client, SERVICES)), withRetry(() => listAll(client, this.IPADDR))]);
    const owner = new Map(addresses.map((a) => [formatIP(parseIP(a.metadata!.name!)), `${a.spec?.parentRef?.namespace}/${a.spec?.parentRef?.name}`]));
    const out: string[] = [];
    for (const svc of services) {
      const key = `${svc.metadata?.namespace}/${svc.metadata?.name}`;
      for (const ip of (svc.spec?.clusterIPs ?? []) as string[]) {
        if (!ip || ip === 'None') continue;
        if (owner.get(formatIP(parseIP(ip))) !== key) out.push(`${key} ${ip}`);
      }
    }
    return out;
  }

  /** Each spec's state: one GET for one spec, one LIST of the (few) ServiceCIDRs for more. */
  private async scStates(client: KubeClient, specs: readonly ServiceCIDRSpec[]): Promise<ServiceCIDRState[]> {
    if (specs.length <= 1) return Promise.all(specs.map((s) => this.scState(client, s)));
    const byName = new Map((await withRetry(() => listAll(client, this.SC))).map((sc) => [sc.metadata?.name, sc]));
    return specs.map((s) => ServiceExecutor.judgeServiceCIDR(byName.get(s.name), s));
  }

  private async scState(client: KubeClient, spec: ServiceCIDRSpec): Promise<ServiceCIDRState> {
    return ServiceExecutor.judgeServiceCIDR(await getObject(client, this.SC, spec.name), spec);
  }

  private static judgeServiceCIDR(sc: KubeObject | undefined, spec: ServiceCIDRSpec): ServiceCIDRState {
    if (!sc) return 'absent';
    if (sc.metadata?.deletionTimestamp) return 'deleting';
    const cidrs: string[] = sc.spec?.cidrs ?? [];
    if (cidrs.length !== spec.cidrs.length || !cidrs.every((c, i) => c === spec.cidrs[i])) return 'different';
    const ready = (sc.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    return ready?.status === 'True' ? 'ready' : 'pending';
  }

  private async ensureServiceCIDR(ctx: StepContext, spec: ServiceCIDRSpec, seen?: ServiceCIDRState): Promise<void> {
    const state = seen ?? await this.scState(ctx.client, spec);
    if (state === 'ready' || state === 'pending') return;
    if (state === 'different') throw new Error(`ServiceCIDR ${spec.name} exists with other CIDRs: not ours to change`);
    if (state === 'deleting') {
      await poll(`ServiceCIDR ${spec.name} to finish deleting`, async () => ((await getObject(ctx.client, this.SC, spec.name)) ? undefined : true), { timeoutMs: this.opts.timeoutMs });
    }
    // journaled before the create, so that a crash between the two still leaves it this run's to delete
    if (ctx.dryRun === 'none' && this.opts.token) {
      const set = this.createdSet(ctx);
      const key = ServiceExecutor.scKey(spec.name);
      if (!set.has(key)) {
        set.add(key);
        ctx.journal.append('created', { objects: [key] });
      }
    }
    await withRetry(() => createObject(ctx.client, this.SC, {
      apiVersion: `networking.k8s.io/${this.scVersion}`, kind: 'ServiceCIDR',
      metadata: { name: spec.name, labels: { [MANAGED_LABEL]: 'true', ...(this.opts.token ? { [RUN_LABEL]: this.opts.token } : {}) } }, spec: { cidrs: spec.cidrs },
    }, { dryRun: ctx.dryRun === 'server' }));
  }

  /** The journal's name for a ServiceCIDR this run created (cluster-scoped: its name is its identity). */
  private static scKey(name: string): string {
    return `networking.k8s.io/ServiceCIDR/${name}`;
  }

  private createServiceCIDRsStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.scStates(ctx.client, specs)).every((s) => s === 'ready'),
      apply: async (ctx) => {
        const seen = await this.scStates(ctx.client, specs);
        for (const [i, s] of specs.entries()) await this.ensureServiceCIDR(ctx, s, seen[i]);
      },
      verify: async (ctx) => {
        try {
          await poll('the new ServiceCIDRs to be Ready', async () =>
            ((await this.scStates(ctx.client, specs)).every((s) => s === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      },
      rollback: async (ctx) => {
        // only those this run created: one that was there before (an earlier run's kept ServiceCIDR, holding the
        // IPs of the Services it kept) is not this run's to delete
        const mine = specs.filter((s) => !this.opts.token || this.createdSet(ctx).has(ServiceExecutor.scKey(s.name)));
        for (const s of mine) await withRetry(() => deleteObject(ctx.client, this.SC, s.name));
        // the service-cidr finalizer lets each go once no IP depends on it alone (10 s grace)
        await poll('the ServiceCIDRs to be deleted', async () =>
          ((await Promise.all(mine.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined),
        { timeoutMs: Math.max(this.opts.timeoutMs, 60_000), intervalMs: 500 });
      },
    };
  }

  // ---- moving Services ----------------------------------------------------------------------------

  /** Services the plan knows per namespace (moved or not), to choose one LIST over GETs per Service. */
  private nsSizes?: Map<string, number>;

  /**
   * One namespace is read with one LIST when that costs less than a GET per moved Service and is not much
   * more data: up to 10× the Services wanted, and never fewer than 100 (bridges and covers come with it).
   */
  private listWholeNamespace(namespace: string, wanted: number): boolean {
    const size = this.namespaceSizes().get(namespace);
    return size !== undefined && size <= Math.max(100, 10 * wanted);
  }

  private namespaceSizes(): Map<string, number> {
    if (!this.nsSizes) {
      this.nsSizes = new Map();
      for (const m of this.plan.mapping) this.nsSizes.set(m.namespace, (this.nsSizes.get(m.namespace) ?? 0) + 1);
    }
    return this.nsSizes;
  }

  /**
   * What the cluster shows for these items: each Service, its bridge and its cover, by "namespace/name"
   * (undefined: looked for and absent). Per namespace one LIST of its Services, or, for a namespace much larger
   * than the batch, one GET per Service plus one LIST of our own (bridges, covers). Never a read per object
   * and phase: check, backup and apply of a step share one view.
   */
  async observe(client: KubeClient, items: readonly StepItem[]): Promise<ServiceView> {
    const view: ServiceView = new Map();
    const byNs = new Map<string, StepItem[]>();
    for (const it of items) {
      byNs.set(it.namespace, [...(byNs.get(it.namespace) ?? []), it]);
      for (const n of [it.name, it.bridge, coverName(it.name)]) if (n) view.set(`${it.namespace}/${n}`, undefined);
    }
    await Promise.all([...byNs].map(async ([ns, list]) => {
      const keep = (s: KubeObject) => { const k = `${ns}/${s.metadata?.name}`; if (view.has(k)) view.set(k, s); };
      if (this.listWholeNamespace(ns, list.length)) {
        for (const s of await withRetry(() => listAll(client, SERVICES, { namespace: ns }))) keep(s);
        return;
      }
      for (const s of await withRetry(() => listAll(client, SERVICES, { namespace: ns, labelSelector: `${MANAGED_LABEL}=true` }))) keep(s);
      await mapLimit(list, this.opts.concurrency, async (it) => {
        view.set(itemKey(it), await withRetry(() => getObject(client, SERVICES, it.name, ns)));
      });
    }));
    return view;
  }

  /** The original Service: from the backup when one exists (a resumed run), else as seen. */
  private original(ctx: StepContext, it: StepItem, seen: KubeObject | undefined): KubeObject | undefined {
    return ctx.backups.load(svcRef(it.namespace, it.name)) ?? seen;
  }

  /**
   * Create the bridge at the old IPs unless it is there. The apiserver releases the IPAddress of a Service
   * that went ExternalName asynchronously (measured: usually at once, up to seconds): when the create is
   * refused because the old IP is still allocated, wait until it is released, then create again.
   */
  private async ensureBridge(ctx: StepContext, orig: KubeObject, it: StepItem, seen: KubeObject | undefined): Promise<KubeObject | undefined> {
    if (!it.bridge) return undefined;
    if (seen) {
      this.adopt(ctx, seen, BRIDGE_FOR_LABEL, it.name);
      if (!sameIPs(ipsOf(seen), it.from)) throw new Error(`bridge ${it.namespace}/${it.bridge} exists at ${ipsOf(seen).join(',')}, not ${it.from.join(',')}`);
      return seen;
    }
    const body = bridgeService(orig, it.bridge, it.from, this.opts.token);
    const notReadyUntil = Date.now() + Math.max(this.opts.timeoutMs, 60_000);
    for (let attempt = 1; ; attempt++) {
      try {
        // createObject returns an object that already exists under the name: adopt() refuses it unless it is ours
        const b = this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, body, { dryRun: ctx.dryRun === 'server' })), BRIDGE_FOR_LABEL, it.name);
        if (!sameIPs(ipsOf(b), it.from) && ctx.dryRun === 'none') throw new Error(`bridge ${it.namespace}/${it.bridge} exists at ${ipsOf(b).join(',')}, not ${it.from.join(',')}`);
        return b;
      } catch (e) {
        if (isAllocatorNotReady(e) && ctx.dryRun === 'none' && Date.now() < notReadyUntil) {
          if (attempt === 1 || attempt % 10 === 0) ctx.log(`bridge ${it.namespace}/${it.bridge} at ${it.from.join(',')}: the allocator of the draining ServiceCIDR refuses it until that ServiceCIDR is gone; trying again`);
          await sleep(1000);
          continue;
        }
        if (!isIPTaken(e) || ctx.dryRun !== 'none') throw e;
        // A create whose answer was lost (the connection broke after the apiserver stored it) is refused on retry
        // because the bridge itself now holds the old IP: the bridge is there, ours, at the old IPs.
        // adopt() refuses a bridge that is not this run's, and journals its uid.
        const existing = await withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace));
        if (existing && sameIPs(ipsOf(existing), it.from)) return this.adopt(ctx, existing, BRIDGE_FOR_LABEL, it.name);
        if (attempt >= 3) throw e;
        await this.waitReleased(ctx, it.from, it.namespace, it.bridge);
      }
    }
  }

  /**
   * The apiserver releases a Service's IPAddress objects asynchronously after the Service lets go of them
   * (measured: up to a few seconds); wait until each IP is free or already held by `holder`.
   */
  private async waitReleased(ctx: StepContext, ips: readonly string[], namespace: string, holder: string): Promise<void> {
    if (ctx.dryRun !== 'none') return;
    await poll(`IP ${ips.join(',')} to be released`, async (note) => {
      for (const ip of ips) {
        const a = await getObject(ctx.client, this.IPADDR, formatIP(parseIP(ip)));
        const ref = a?.spec?.parentRef;
        if (a && !(ref?.name === holder && ref?.namespace === namespace)) { note(`held by ${ref?.resource ?? 'object'} ${ref?.namespace ?? ''}/${ref?.name ?? ''}`); return undefined; }
      }
      return true;
    }, { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 1.5, maxIntervalMs: 250, tolerateTransient: true });
  }

  /** Move one Service to its mapped IPs, reading it first; safe to call again at any point of a previous attempt. */
  async moveOne(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate', externalName?: string): Promise<MoveEvidence> {
    const [svc, bridge] = await Promise.all([
      withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace)),
      it.bridge ? withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace)) : undefined,
    ]);
    return this.moveItem(ctx, it, strategy, { svc, bridge }, externalName);
  }

  /**
   * Move one Service from what was just seen of it and its bridge (the writes carry the seen resourceVersion
   * and uid as preconditions: a 409 re-reads both and decides again). Returns the objects the last writes
   * returned, which show the end state without another read.
   */
  async moveItem(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate', seen: { svc?: KubeObject; bridge?: KubeObject }, externalName?: string): Promise<MoveEvidence> {
    const dry = ctx.dryRun === 'server';
    let { svc: cur, bridge } = seen;
    return retryOnConflict(`Service ${it.namespace}/${it.name}`, async (attempt) => {
      if (attempt > 1) {
        [cur, bridge] = await Promise.all([
          withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace)),
          it.bridge ? withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace)) : undefined,
        ]);
      }
      const orig = this.original(ctx, it, cur);
      if (!orig) throw new Error(`Service ${it.namespace}/${it.name} is gone and has no backup`);
      const d = decideMove(it, cur, strategy);
      switch (d.action) {
        case 'conflict':
          throw new Error(d.message);
        case 'ensure-bridge':
          return { service: cur, bridge: await this.ensureBridge(ctx, orig, it, bridge), wrote: false };
        case 'delete': {
          await withRetry(() => deleteObject(ctx.client, SERVICES, it.name, it.namespace, { uid: cur!.metadata?.uid, dryRun: dry }));
          if (dry) return { wrote: true };
          await poll(`Service ${it.namespace}/${it.name} to be deleted`, async () => ((await getObject(ctx.client, SERVICES, it.name, it.namespace)) ? undefined : true),
            { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 2, maxIntervalMs: 500 });
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry })), bridge: b, wrote: true };
        }
        case 'create': {
          // a recreate was interrupted earlier, or someone deleted it: put it back at the new IP
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry })), bridge: b, wrote: true };
        }
        case 'external-name': {
          const target = externalName ?? this.fqdn(it.bridge ?? it.name, it.namespace);
          const now = await withRetry(() => patchService(ctx.client, cur!, { type: 'ExternalName', externalName: target }, dry));
          if (dry) return { wrote: true };
          cur = now;
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await this.patchBack(ctx, it, now, orig), bridge: b, wrote: true };
        }
        case 'back': {
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await this.patchBack(ctx, it, cur!, orig), bridge: b, wrote: true };
        }
      }
    });
  }

  /**
   * The last write of an in-place move: the Service back to its type at the mapped IPs, with its nodePorts. Going
   * ExternalName released those nodePorts, so the apiserver may refuse one as already allocated:
   * - another Service took it in between: stop, naming it (the Service stays ExternalName, reached through its
   *   cover and bridge, but not on its nodePort, until the port is freed and the run resumed);
   * - no Service holds it: the apiserver leaked it. It does when a write that releases the port is cut off
   *   mid-request (a crashed run, a dropped connection): the Service is stored, the release is rolled back. Its
   *   nodePort repair loop frees a leaked port on its third pass, 3 minutes apart (6–9 minutes): wait for that,
   *   asking again every 15 s, up to nodePortLeakWaitMs.
   */
  private async patchBack(ctx: StepContext, it: StepItem, cur: KubeObject, orig: KubeObject): Promise<KubeObject> {
    const dry = ctx.dryRun === 'server';
    const t0 = Date.now();
    for (let warned = false; ;) {
      try {
        return await withRetry(() => patchService(ctx.client, cur, backToType(orig, it.to), dry));
      } catch (e) {
        const ports = takenNodePorts(e);
        if (ports.length === 0 || dry) throw e;
        const holders = nodePortHolders(await withRetry(() => listAll(ctx.client, SERVICES)), ports, it);
        const what = `nodePort ${ports.join(', ')} of Service ${itemKey(it)}`;
        if (holders.size > 0) {
          throw new Error(`${what} was taken by ${[...holders.keys()].map((h) => `Service ${h}`).join(', ')} while ${itemKey(it)} was ExternalName `
            + `(between the two writes of its move): free the port, then resume; until then ${itemKey(it)} answers on its ClusterIPs (through its bridge and cover) but not on that nodePort`);
        }
        const waited = Date.now() - t0;
        if (waited >= this.opts.nodePortLeakWaitMs) {
          throw new Error(`${what} is still refused as allocated after ${Math.round(waited / 1000)} s though no Service holds it (leaked by the apiserver): `
            + `resume once its nodePort repair loop has freed it (it runs every 3 minutes and frees a leaked port on its third pass)`);
        }
        if (!warned) {
          ctx.warn?.(`${what} is refused as allocated though no Service holds it: the apiserver leaked it when an earlier write of this Service was cut off; `
            + `waiting for its nodePort repair loop to free it (6–9 minutes), at most ${Math.round(this.opts.nodePortLeakWaitMs / 1000)} s`);
          warned = true;
        }
        // every 15 s at the default wait; shorter waits ask proportionally more often
        await sleep(Math.min(15_000, this.opts.nodePortLeakWaitMs / 8, Math.max(0, this.opts.nodePortLeakWaitMs - waited)));
      }
    }
  }

  /**
   * EndpointSlices of these Service names, by label selector (at most 100 names per request), in one namespace
   * or, with `namespace` undefined, in every namespace.
   */
  private async slicesOf(client: KubeClient, namespace: string | undefined, names: readonly string[]): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    const uniq = [...new Set(names)];
    for (let i = 0; i < uniq.length; i += 100) {
      const sel = `kubernetes.io/service-name in (${uniq.slice(i, i + 100).join(',')})`;
      out.push(...await withRetry(() => listAll(client, ENDPOINTSLICES, { ...(namespace !== undefined ? { namespace } : {}), labelSelector: sel })));
    }
    return out;
  }

  /**
   * Read these namespaces' EndpointSlices with one LIST across all namespaces instead of one per namespace?
   * Only when they hold at least half of the Services the plan knows: the apiserver filters every slice of the
   * cluster for a cross-namespace LIST and only the namespace's for a namespaced one, so the one request then
   * costs it at most twice the work of the several.
   */
  clusterWideRead(namespaces: readonly string[]): boolean {
    if (namespaces.length < 2) return false;
    let inBatch = 0;
    let all = 0;
    for (const [ns, n] of this.namespaceSizes()) { all += n; if (namespaces.includes(ns)) inBatch += n; }
    return all > 0 && inBatch * 2 >= all;
  }

  /**
   * The EndpointSlices of these Service names, grouped by "namespace/service": one LIST per namespace, or one
   * across all namespaces when these namespaces hold most of the Services (clusterWideRead).
   */
  private async slicesByService(client: KubeClient, names: ReadonlyArray<{ namespace: string; name: string }>): Promise<Map<string, KubeObject[]>> {
    const byNs = new Map<string, string[]>();
    for (const n of names) byNs.set(n.namespace, [...(byNs.get(n.namespace) ?? []), n.name]);
    const out = new Map<string, KubeObject[]>();
    const add = (ns: string | undefined, sl: KubeObject) => {
      const k = `${ns}/${sl.metadata?.labels?.['kubernetes.io/service-name']}`;
      out.set(k, [...(out.get(k) ?? []), sl]);
    };
    if (this.clusterWideRead([...byNs.keys()])) {
      const wanted = new Set(names.map(itemKey));
      // the same name in another namespace comes along; only the asked-for "namespace/name" pairs are kept
      for (const sl of await this.slicesOf(client, undefined, names.map((n) => n.name))) {
        if (wanted.has(`${sl.metadata?.namespace}/${sl.metadata?.labels?.['kubernetes.io/service-name']}`)) add(sl.metadata?.namespace, sl);
      }
      return out;
    }
    await Promise.all([...byNs].map(async ([ns, list]) => {
      for (const sl of await this.slicesOf(client, ns, list)) add(ns, sl);
    }));
    return out;
  }

  /** Problems of a moved batch as the cluster shows it; IPAddress objects read only for moves this process did not write. */
  private async batchProblems(client: KubeClient, items: readonly StepItem[], evidence: ReadonlyMap<string, MoveEvidence>): Promise<string[]> {
    const view = await this.observe(client, items);
    const covers = coversIn(view, items);
    if (covers.length > 0) return [`${covers.length} cover Service(s) left, e.g. ${covers[0]!.metadata?.namespace}/${covers[0]!.metadata?.name}`];
    const problems: string[] = [];
    for (const it of items) {
      const p = itemProblem(it, view.get(itemKey(it)), it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined);
      if (p) problems.push(p);
    }
    if (problems.length > 0) return problems;
    // The apiserver allocates the IPAddress objects of a ClusterIP in the same request that sets it, so a write
    // of ours that returned the Service at its mapped IPs shows them; for the others, read them.
    await mapLimit(items.filter((it) => !writtenAt(evidence.get(itemKey(it)), it.to)), this.opts.concurrency, async (it) => {
      for (const ip of it.to) {
        const a = await withRetry(() => getObject(client, this.IPADDR, formatIP(parseIP(ip))));
        const ref = a?.spec?.parentRef;
        if (!a || ref?.name !== it.name || ref?.namespace !== it.namespace) problems.push(`IPAddress ${ip} does not point at Service ${it.namespace}/${it.name}`);
      }
    });
    const withSelector = items.filter((it) => { const s = view.get(itemKey(it)); return s?.spec?.selector && Object.keys(s.spec.selector).length > 0; });
    if (withSelector.length > 0) {
      const slices = await this.slicesByService(client, withSelector);
      for (const it of withSelector) if (!slices.get(itemKey(it))?.length) problems.push(`Service ${it.namespace}/${it.name} has no EndpointSlice`);
    }
    return problems;
  }

  private moveServicesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const strategy = this.strategy;
    // check, backup and apply of one run of the step share what check read (writes carry preconditions)
    let fresh: { view: ServiceView; at: number } | undefined;
    const take = async (client: KubeClient, keep: boolean): Promise<ServiceView> => {
      const f = fresh && Date.now() - fresh.at < 60_000 ? fresh.view : await this.observe(client, items);
      fresh = keep ? { view: f, at: fresh?.at ?? Date.now() } : undefined;
      return f;
    };
    let evidence = new Map<string, MoveEvidence>();
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        const view = await this.observe(ctx.client, items);
        fresh = { view, at: Date.now() };
        return batchDone(view, items);
      },
      backup: async (ctx) => {
        const view = await take(ctx.client, true);
        return items.map((it) => view.get(itemKey(it)))
          .filter((o): o is KubeObject => !!o && o.spec?.type !== 'ExternalName' && sameIPs(ipsOf(o), this.fromOf(items, o)))
          .map((o) => ({ ...o, apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'Service' }));
      },
      apply: async (ctx) => {
        const view = await take(ctx.client, false);
        evidence = new Map();
        // a Service named like one of our bridges or covers that is not this run's stops the step before any write
        const foreign = squatters(view, items, this.opts.token);
        if (foreign.length > 0) throw notOursError(foreign, this.opts.token, (k) => view.get(k));
        const seen = (it: StepItem) => ({ svc: view.get(itemKey(it)), bridge: it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined });
        let moved = 0;
        const count = () => ctx.progress?.({ type: 'count', what: 'Services moved', done: moved, total: items.length });
        count();
        if (!this.usesCovers(ctx)) {
          // a Service already at its mapped IPs with its bridge in place costs nothing here
          await mapLimit(items, this.opts.concurrency, async (it) => { evidence.set(itemKey(it), await this.moveItem(ctx, it, strategy, seen(it))); moved++; count(); });
          return;
        }
        const pending = items.filter((it) => !itemDone(view, it));
        moved = items.length - pending.length;
        count();
        const covers = new Map(coversIn(view, items, this.opts.token).map((c) => [`${c.metadata?.namespace}/${c.metadata?.labels?.[COVER_FOR_LABEL]}`, c]));
        const covered = pending.length > 0 ? await this.raiseCovers(ctx, pending, view, covers) : new Set<string>();
        const tm = Date.now();
        await mapLimit(pending, this.opts.concurrency, async (it) => {
          evidence.set(itemKey(it), await this.moveItem(ctx, it, strategy, seen(it), covered.has(itemKey(it)) ? this.fqdn(coverName(it.name), it.namespace) : undefined));
          moved++;
          count();
        });
        if (pending.length > 0) ctx.log(`${pending.length} Service(s) moved in ${Date.now() - tm} ms`);
        await this.lowerCovers(ctx, items, covers);
      },
      verify: async (ctx) => {
        let problems: string[] = [];
        try {
          await poll('the moved Services to settle', async () => {
            problems = await this.batchProblems(ctx.client, items, evidence);
            if (problems.length > 0 && /cover Service\(s\) left/.test(problems[0]!)) throw new Error(problems[0]);
            return problems.length === 0 ? true : undefined;
          }, { timeoutMs: this.opts.timeoutMs, intervalMs: 100, backoff: 2, maxIntervalMs: 1000 });
          return undefined;
        } catch (e) {
          return problems.length > 0 ? problems.slice(0, 3).join('; ') : (e as Error).message;
        }
      },
      rollback: async (ctx) => {
        for (const it of items) await this.moveBack(ctx, it);
      },
      // a batch killed half-way leaves some Services moved: rollback undoes those too (moveBack reads each one)
      rollbackPartial: true,
    };
  }

  private fromOf(items: StepItem[], o: KubeObject): string[] {
    return items.find((i) => i.name === o.metadata?.name && i.namespace === o.metadata?.namespace)?.from ?? [];
  }

  /** Undo one move: delete the bridge (freeing the old IP), then the same move towards the old IPs. */
  async moveBack(ctx: StepContext, it: StepItem): Promise<void> {
    const orig = ctx.backups.load(svcRef(it.namespace, it.name));
    if (!orig) {
      // a batch that stopped before its backup held this Service never wrote it: nothing to undo when it is as planned
      const cur = await withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace));
      if (cur && cur.spec?.type !== 'ExternalName' && sameIPs(ipsOf(cur), it.from)) return;
      throw new Error(`no backup of Service ${it.namespace}/${it.name}`);
    }
    if (it.bridge) {
      // only the bridge this run created: its labels, and its uid journaled as created (deleted with that uid as precondition)
      const b = await withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace));
      if (b) {
        if (!ownedHelper(b, BRIDGE_FOR_LABEL, it.name, this.opts.token)) throw notOursError([`${it.namespace}/${it.bridge}`], this.opts.token, () => b);
        if (!this.createdByThisRun(ctx, b)) {
          throw new UserError(`bridge ${it.namespace}/${it.bridge} (uid ${b.metadata?.uid}) is not journaled as created by this run: left as it is; delete it by hand if it is this migration's, then roll back again`, 'verify');
        }
        await withRetry(() => deleteObject(ctx.client, SERVICES, it.bridge!, it.namespace, { uid: b.metadata?.uid }));
      }
    }
    await this.waitReleased(ctx, it.from, it.namespace, it.name);
    await this.moveOne(ctx, { namespace: it.namespace, name: it.name, from: it.to, to: it.from }, this.strategy);
  }

  // ---- gates --------------------------------------------------------------------------------------

  private async gateHolds(p: GateStep, ctx: StepContext): Promise<boolean> {
    if (this.opts.acknowledgedGates.includes(p.id)) {
      ctx.log(`gate ${p.id}: acknowledged by --ack-gate`);
      return true;
    }
    const check = (ServiceExecutor.gates as Partial<Record<string, (x: ServiceExecutor, p: GateStep, ctx: StepContext) => Promise<boolean>>>)[p.gate.condition];
    if (!check) throw new Error(`gate ${p.id}: condition ${p.gate.condition} belongs to the Pod CIDR migration`);
    return check(this, p, ctx);
  }

  /**
   * Every apiserver runs with the new flag: from their mirror pods' flags when the cluster shows them, else
   * from the apiserver's own complaint that ServiceCIDR/kubernetes does not match its flag (event
   * KubernetesDefaultServiceCIDRInconsistent naming the new range), else from ServiceCIDR/kubernetes
   * already holding the new range.
   */
  async apiserversOnNewRange(ctx: StepContext, gateId?: string): Promise<boolean> {
    const want = this.svc.to.join(',');
    const pods = await listAll(ctx.client, PODS, { namespace: 'kube-system', labelSelector: 'component=kube-apiserver' });
    const flags = pods.map((pod) => {
      const c = (pod.spec?.containers ?? []).find((x: any) => x.name === 'kube-apiserver') ?? pod.spec?.containers?.[0];
      const words: string[] = [...(c?.command ?? []), ...(c?.args ?? [])];
      const i = words.findIndex((w) => w.startsWith('--service-cluster-ip-range'));
      if (i < 0) return undefined;
      return words[i]!.includes('=') ? words[i]!.split('=')[1] : words[i + 1];
    });
    if (pods.length > 0) {
      const ok = flags.every((f) => f === want);
      if (!ok) ctx.log(`apiserver pods still on: ${[...new Set(flags)].join(' ')}`);
      return ok;
    }
    const sc = await getObject(ctx.client, this.SC, 'kubernetes');
    if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === want) return true;
    const events = await listAll(ctx.client, EVENTS, { namespace: 'default', fieldSelector: 'reason=KubernetesDefaultServiceCIDRInconsistent' });
    const gateSeen = gateId ? this.firstJournalTime(ctx, 'gate', gateId) : undefined;
    const seen = events.some((e) => {
      const when = Date.parse(String(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? ""));
      return String(e.message ?? '').includes(this.svc.to[0]!) && (!gateSeen || when >= gateSeen - 1000);
    });
    // Before 1.33 the apiserver raises no KubernetesDefaultServiceCIDRInconsistent event (v1.30.14's default ServiceCIDR
    // controller only creates the object and sets it Ready): without apiserver pods nothing in the API shows the flag
    if (!seen) {
      ctx.log('no kube-apiserver pod and no KubernetesDefaultServiceCIDRInconsistent event show the new --service-cluster-ip-range yet'
        + (this.scVersion === 'v1'
          ? ` (a restarted apiserver raises that event): resume once every apiserver runs with ${want}`
          : ` (networking.k8s.io/${this.scVersion} apiservers raise no such event): once every apiserver runs with ${want}, resume with --ack-gate ${gateId ?? 'restart-apiservers'}`));
    }
    return seen;
  }

  private firstJournalTime(ctx: StepContext, event: string, step: string): number | undefined {
    const e = sinceLastRollback(readJournal(ctx.journal.path)).find((x) => x.event === event && x.step === step);
    return e ? Date.parse(e.ts) : undefined;
  }

  /**
   * When default/kubernetes and the DNS Service moved and the kubelets took the new DNS (ms since the epoch): the
   * latest of those steps' first completion since the last rollback; undefined while one is not done.
   */
  movedAt(ctx: StepContext): number | undefined {
    // since the last rollback: a move undone and made again counts from when it was made again
    const entries = sinceLastRollback(readJournal(ctx.journal.path));
    // when each of these first completed (later runs journal a skip again: those times do not count)
    const moved: number[] = [];
    const dnsKey = this.plan.mapping.filter((m) => m.isDNS).map((m) => `${m.namespace}/${m.name}`);
    const movers = this.plan.steps.filter((s) => s.kind === 'move-kubernetes'
      || (s.kind === 'move-services' && (s.items ?? []).some((i) => dnsKey.includes(`${i.namespace}/${i.name}`)))
      || (s.kind === 'gate' && s.gate.condition === 'kubelet-cluster-dns'));
    for (const { id } of movers) {
      const first = entries.find((e) => e.step === id && (e.event === 'step-done' || e.event === 'step-skip'));
      if (!first) return undefined;
      moved.push(Date.parse(first.ts));
    }
    return moved.length > 0 ? Math.max(...moved) : undefined;
  }

  /**
   * The running pods that started before `since` and so still hold the old nameserver and Service variables:
   * hostNetwork pods (dnsPolicy ClusterFirstWithHostNet included: the node's resolver) and mirror pods (the kubelet
   * owns them) aside.
   */
  async stalePods(client: KubeClient, since: number): Promise<KubeObject[]> {
    const pods = await withRetry(() => listAll(client, PODS));
    return pods.filter((p) => { const why = skipReason(p); return (why === undefined || why === 'no-ip') && p.status?.phase === 'Running'
      && Date.parse(p.status?.startTime ?? p.metadata?.creationTimestamp ?? '') < since - 1000; });
  }

  /** No running pod (hostNetwork and mirror pods aside) started before default/kubernetes and the DNS moved. */
  async podsRestarted(ctx: StepContext): Promise<boolean> {
    const since = this.movedAt(ctx);
    if (since === undefined) return false;
    const stale = await this.stalePods(ctx.client, since);
    if (stale.length > 0) ctx.log(`${stale.length} pod(s) still started before the move, e.g. ${stale.slice(0, 3).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ')}`);
    return stale.length === 0;
  }

  /**
   * A StatefulSet whose pods a PodDisruptionBudget covers has its stale pods evicted one at a time through the
   * Eviction API (its controller creates each again from the same template), not rolled out: the StatefulSet
   * controller's rolling update does not consult budgets (measured on the testbed, v1.37: a Parallel StatefulSet of 2
   * behind maxUnavailable 1 had both pods unready during a rollout restart). A Service move needs its pods started
   * again, not a new template.
   */
  private async budgetedStatefulSets(client: KubeClient, workloads: Workload[], pods: readonly KubeObject[]): Promise<Workload[]> {
    if (!workloads.some((w) => w.kind === 'StatefulSet')) return workloads;
    const pdbs = await withRetry(() => listAll(client, PODDISRUPTIONBUDGETS));
    return workloads.map((w): Workload => {
      if (w.kind !== 'StatefulSet') return w;
      const covered = pods.some((p) => p.metadata?.namespace === w.namespace && w.pods.includes(p.metadata?.name ?? '') && pdbsFor(p, pdbs).length > 0);
      return covered ? { kind: 'Other', namespace: w.namespace, name: w.name, pods: w.pods, owner: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: w.name } } : w;
    });
  }

  /**
   * Step restart-workloads: the restart engine of the Pod CIDR path (./restarts.ts, ./restart-run.ts) on every
   * workload with a pod started before the moves. The critical Deployments (the cluster DNS, --critical) are
   * scaled up by one and restarted first, then put back. Done, from the cluster: no such pod is left, no bare pod
   * this run deleted is missing, the critical Deployments are back at their replicas. A kill at any point is resumed
   * by running it again: a workload whose template carries this run's token is only awaited, a pod started after the
   * moves is never restarted, a scaled Deployment is not scaled twice (its original count is in its backup).
   */
  private restartWorkloadsStep(p: PlanStep): Step {
    const spec = this.svc.restarts ?? { parallel: 4, critical: [], barePodNamespaces: [] };
    const crit = spec.critical.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name! }; });
    const run = { parallel: spec.parallel, critical: spec.critical, token: this.opts.token ?? MANAGED_BY, rolloutTimeoutMs: this.opts.rolloutTimeoutMs, step: p.id };
    const movedAt = (ctx: StepContext) => {
      const since = this.movedAt(ctx);
      if (since === undefined) throw new Error('move-kubernetes (and kubelet-cluster-dns, where the DNS moves) are not done in this run: the restarts come after them');
      return since;
    };
    const scaledBack = async (ctx: StepContext) => {
      for (const r of crit) {
        const b = ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name });
        const cur = b && await withRetry(() => getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace));
        if (b && cur && (cur.spec?.replicas ?? 1) === scaledReplicas(b.spec?.replicas ?? 1) && (cur.spec?.replicas ?? 1) !== (b.spec?.replicas ?? 1)) return false;
      }
      return true;
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        const since = this.movedAt(ctx);
        return since !== undefined && (await this.stalePods(ctx.client, since)).length === 0 && (await missingBarePods(ctx)).length === 0 && (await scaledBack(ctx));
      },
      // each workload is backed up right before its pod template is patched (or a bare pod before its eviction),
      // and each critical Deployment before it is scaled (backUpLate, journaled): a resumed run keeps the first copy
      apply: async (ctx) => {
        const since = movedAt(ctx);
        if (ctx.dryRun === 'none') await recreateMissing(ctx, run);
        for (const r of crit) {
          if (!(await scaleUp(ctx, r, { timeoutMs: this.opts.rolloutTimeoutMs }))) (ctx.warn ?? ctx.log)(`Deployment ${r.namespace}/${r.name} not found: not scaled up`);
        }
        // Rounds: a pod a slow controller created from an old template meanwhile is caught by the next one.
        for (let round = 1; round <= 3; round++) {
          const pods = await this.stalePods(ctx.client, since);
          if (pods.length === 0) break;
          const g = await resolveWorkloads(ctx.client, pods);
          for (const u of g.unknownOwners) (ctx.warn ?? ctx.log)(`pod ${u.namespace}/${u.pod} is owned by ${u.kind} ${u.name} (${u.apiVersion}), which this tool does not know: it is evicted and left to that controller`);
          await restartInWaves(ctx, await this.budgetedStatefulSets(ctx.client, g.workloads, pods), run);
          if (ctx.dryRun !== 'none') break;
        }
        for (const r of crit) {
          if (ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name })) await restoreScale(ctx, r);
        }
      },
      verify: async (ctx) => {
        const since = movedAt(ctx);
        try {
          await poll('no pod left that started before the moves', async () => ((await this.stalePods(ctx.client, since)).length === 0 ? true : undefined), { timeoutMs: this.opts.timeoutMs });
        } catch {
          const left = await this.stalePods(ctx.client, since);
          return `${left.length} pod(s) still started before the moves: ${left.slice(0, 5).map((x) => `${x.metadata?.namespace}/${x.metadata?.name}`).join(', ')}`;
        }
        return (await scaledBack(ctx)) ? undefined : `${crit.map((r) => `${r.namespace}/${r.name}`).join(', ')} not back at their replicas`;
      },
      // restarted pods cannot be un-restarted (nor need to be): only the replicas of the scaled Deployments go back
      rollback: async (ctx) => {
        for (const r of crit) {
          if (ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name })) await restoreScale(ctx, r);
        }
      },
    };
  }

  /** kubelets hand out the new DNS IP: kubeadm's kubelet-config ConfigMap says so, or with readKubeletConfig each Ready kubelet's configz. */
  async kubeletsOnNewDNS(ctx: StepContext): Promise<boolean> {
    const dns = this.plan.mapping.find((m) => m.isDNS);
    if (!dns) return true;
    if (this.opts.readKubeletConfig) return kubeletsServeNewDNS(ctx, dns.from, dns.to);
    const cms = await listAll(ctx.client, { group: '', version: 'v1', plural: 'configmaps', namespaced: true }, { namespace: 'kube-system' });
    const kc = cms.find((c) => /^kubelet-config(-\d+\.\d+)?$/.test(c.metadata?.name ?? ''));
    if (!kc) {
      ctx.log('kubelet clusterDNS cannot be read from the cluster: after changing it, resume with --ack-gate kubelet-cluster-dns');
      return false;
    }
    return dns.to.every((ip) => String(kc.data?.kubelet ?? '').includes(ip));
  }

  // ---- covers (src/engine/covers.ts) ----------------------------------------------------------------

  private usesCovers(ctx: StepContext): boolean {
    return this.strategy === 'in-place' && this.opts.covers && ctx.dryRun === 'none';
  }

  /** Cover Services of these items that exist now (one LIST of every cover in the cluster). */
  async coversOf(client: KubeClient, items: readonly StepItem[]): Promise<KubeObject[]> {
    const keys = new Set(items.map(itemKey));
    const all = await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL });
    return all.filter((s) => keys.has(`${s.metadata?.namespace}/${s.metadata?.labels?.[COVER_FOR_LABEL]}`)
      && s.metadata?.name === coverName(s.metadata?.labels?.[COVER_FOR_LABEL] ?? '')
      && ownedHelper(s, COVER_FOR_LABEL, s.metadata?.labels?.[COVER_FOR_LABEL] ?? '', this.opts.token));
  }

  /**
   * Copies a selectorless Service's EndpointSlices to `to` (a cover or a bridge), unless already there; the first
   * copy is named `to` (move-kubernetes checks the bridge's slice by that name).
   */
  private async copySlices(ctx: StepContext, namespace: string, from: string, to: string): Promise<void> {
    const mine = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${to}` });
    if (mine.length > 0) return;
    const src = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${from}` });
    for (const [i, sl] of src.entries()) {
      await withRetry(() => createObject(ctx.client, ENDPOINTSLICES, {
        apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
        metadata: { name: i === 0 ? to : `${to}-${i}`, namespace, labels: {
          'kubernetes.io/service-name': to, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY, [MANAGED_LABEL]: 'true',
          ...(this.opts.token ? { [RUN_LABEL]: this.opts.token } : {}) } },
        addressType: sl.addressType, endpoints: sl.endpoints ?? [], ports: sl.ports ?? [],
      })).catch((e) => { if (!(e instanceof KubeApiError && e.status === 409)) throw e; });
    }
  }

  /**
   * Puts up a cover for each item (old and new IPs answering through a LoadBalancer status), `concurrency` at
   * a time, waits until each has the Service's ready endpoints, then one propagation delay. Returns the keys of
   * the covered items; `covers` gets every cover object ("namespace/service" → cover). A cover already there
   * (an interrupted run) is reused.
   */
  private async raiseCovers(ctx: StepContext, items: readonly StepItem[], view: ServiceView, covers: Map<string, KubeObject>): Promise<Set<string>> {
    const t0 = Date.now();
    let used: Set<string> | undefined;
    if (items.some((it) => !covers.has(itemKey(it)))) {
      used = new Set((await withRetry(() => listAll(ctx.client, this.IPADDR))).map((a) => formatIP(parseIP(a.metadata!.name!))));
      for (const m of this.plan.mapping) for (const ip of [...m.from, ...m.to]) used.add(formatIP(parseIP(ip)));
    }
    const covered = new Set<string>();
    await mapLimit(items, this.opts.concurrency, async (it) => {
      const orig = this.original(ctx, it, view.get(itemKey(it)));
      if (!orig) return; // moveItem reports it
      const name = coverName(it.name);
      let cover = covers.get(itemKey(it));
      for (let attempt = 1; !cover; attempt++) {
        const families = it.from.map((ip) => parseIP(ip).family);
        const spare = pickSpares(this.svc.target, families, used!, 1)[0];
        if (!spare) {
          ctx.warn?.(`no free address in ${this.svc.target.join(',')} for the cover of Service ${itemKey(it)}: it moves without one (old and new IP may not answer for up to kube-proxy's sync period)`);
          return;
        }
        try {
          // an existing Service of that name comes back from createObject: adopt() refuses it unless it is ours
          cover = this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, coverService(orig, name, spare, this.opts.token))), COVER_FOR_LABEL, it.name);
          ctx.log(`cover ${it.namespace}/${name} at ${spare.join(',')} for ${[...it.from, ...it.to].join(', ')}`);
        } catch (e) {
          if (e instanceof UserError && !(e instanceof KubeApiError)) throw e; // adopt() refused a cover not ours
          if (isIPTaken(e) && attempt < 5) {
            // A create whose answer was lost (the apiserver stored it): the cover itself holds the address. Adopt it
            // (refused unless it is this run's); else someone took the address since the IPAddress list: the next one.
            const existing = await withRetry(() => getObject(ctx.client, SERVICES, name, it.namespace));
            if (existing) cover = this.adopt(ctx, existing, COVER_FOR_LABEL, it.name);
            else for (const ip of spare) used!.add(formatIP(parseIP(ip)));
            continue;
          }
          throw new Error(`creating the cover Service ${it.namespace}/${name} (type LoadBalancer, loadBalancerClass kube-renumber.io/cover) failed: ${(e as Error).message}; `
            + 'allow it, or apply with --no-covers to move without covers (short blips per Service)');
        }
      }
      covers.set(itemKey(it), cover);
      if (!orig.spec?.selector || Object.keys(orig.spec.selector).length === 0) await this.copySlices(ctx, it.namespace, it.name, name);
      const want = [...it.from, ...it.to];
      if (!coverCarries(cover, want)) {
        const withStatus = await withRetry(() => ctx.client.request<KubeObject>('PATCH', `${objectPath(SERVICES, name, it.namespace)}/status`, {
          body: { status: coverStatus(want) }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kube-renumber' },
        }));
        if (withStatus?.metadata) covers.set(itemKey(it), withStatus);
      }
      covered.add(itemKey(it));
    });
    if (covered.size === 0) return covered;
    const list = items.filter((it) => covered.has(itemKey(it)));
    const t1 = Date.now();
    await this.untilSlices(ctx, 'the cover Services to have their Services\' ready endpoints', list.flatMap((it) => [it, { namespace: it.namespace, name: coverName(it.name) }]), (slices, note) => {
      const ready = (ns: string, name: string) => readyAddresses(slices.get(`${ns}/${name}`) ?? []);
      const behind = list.filter((it) => { const have = ready(it.namespace, coverName(it.name)); return [...ready(it.namespace, it.name)].some((a) => !have.has(a)); });
      if (behind.length > 0) note(`${behind.length} cover(s) behind, e.g. ${itemKey(behind[0]!)}`);
      return behind.length === 0;
    });
    ctx.log(`${list.length} cover(s) up (written in ${t1 - t0} ms, endpoints after ${Date.now() - t1} ms more); waiting ${this.opts.propagationDelayMs} ms for kube-proxy and DNS`);
    await waitFor('kube-proxy and DNS caches to pick up the covers (--propagation-delay)', this.opts.propagationDelayMs);
    return covered;
  }

  /**
   * Waits until `ready` holds for the EndpointSlices of these Services, read once and then followed by a watch
   * (./slice-watch.ts; LISTs in a loop where no watch can be had). Returns the slices it last saw.
   */
  private async untilSlices(ctx: StepContext, what: string, services: ReadonlyArray<{ namespace: string; name: string }>,
    ready: (slices: ReadonlyMap<string, KubeObject[]>, note: (detail: string) => void) => boolean): Promise<Map<string, KubeObject[]>> {
    let view: SliceWatch | undefined;
    let last = new Map<string, KubeObject[]>();
    try {
      await poll(what, async (note) => {
        if (this.opts.watch) view ??= await SliceWatch.open(ctx.client, services);
        last = view ? await view.current() : await this.slicesByService(ctx.client, services);
        return ready(last, note) ? true : undefined;
      }, { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 1.5, maxIntervalMs: 250, tolerateTransient: true,
        sleep: (ms: number) => (view ? view.next(ms) : sleep(ms)) });
    } finally {
      view?.close();
    }
    return last;
  }

  /**
   * Takes down the covers of these items once each moved Service (new IP) and its bridge (old IP) have the
   * cover's ready endpoints, after one more propagation delay. `covers`: "namespace/service" → cover, as
   * raiseCovers left it or as the step saw them.
   */
  private async lowerCovers(ctx: StepContext, items: readonly StepItem[], covers: ReadonlyMap<string, KubeObject>): Promise<void> {
    const list = items.filter((it) => covers.has(itemKey(it)));
    if (list.length === 0) return;
    const t0 = Date.now();
    const slices = await this.untilSlices(ctx, 'the moved Services and their bridges to have the covers\' ready endpoints', list.flatMap((it) => [it, { namespace: it.namespace, name: coverName(it.name) },
      ...(it.bridge ? [{ namespace: it.namespace, name: it.bridge }] : [])]), (sl, note) => {
      const size = (ns: string, name: string) => readyAddresses(sl.get(`${ns}/${name}`) ?? []).size;
      const behind = list.filter((it) => size(it.namespace, coverName(it.name)) > 0
        && (size(it.namespace, it.name) === 0 || (it.bridge !== undefined && size(it.namespace, it.bridge) === 0)));
      if (behind.length > 0) note(`${behind.length} behind, e.g. ${itemKey(behind[0]!)}`);
      return behind.length === 0;
    });
    ctx.log(`moved Services and bridges have their endpoints (after ${Date.now() - t0} ms); waiting ${this.opts.propagationDelayMs} ms before removing ${list.length} cover(s)`);
    await waitFor('kube-proxy and DNS caches to pick up the moved Services before the covers go (--propagation-delay)', this.opts.propagationDelayMs);
    await mapLimit(list, this.opts.concurrency, async (it) => {
      const c = covers.get(itemKey(it))!;
      const ns = c.metadata!.namespace!;
      const name = c.metadata!.name!;
      await withRetry(() => deleteObject(ctx.client, SERVICES, name, ns, { uid: c.metadata?.uid }));
      // our copies of a selectorless Service's slices; the EndpointSlice controller removes its own (which carry
      // the cover's labels, ours included, but not our managed-by)
      for (const sl of (slices.get(`${ns}/${name}`) ?? []).filter((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === MANAGED_BY)) {
        await withRetry(() => deleteObject(ctx.client, ENDPOINTSLICES, sl.metadata!.name!, ns, { uid: sl.metadata?.uid }));
      }
    });
  }

  // ---- drain, sweep, kubernetes, bridges, finalize --------------------------------------------------

  private drainStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    const drained = async (client: KubeClient, s: ServiceCIDRSpec) => {
      const sc = await getObject(client, this.SC, s.name);
      return !sc || !!sc.metadata?.deletionTimestamp || (sc.spec?.cidrs ?? []).join(',') !== s.cidrs.join(',');
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await Promise.all(specs.map((s) => drained(ctx.client, s)))).every(Boolean),
      backup: async (ctx) => (await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).filter((x): x is KubeObject => !!x),
      apply: async (ctx) => {
        for (const s of specs) {
          const sc = await getObject(ctx.client, this.SC, s.name);
          if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === s.cidrs.join(',')) {
            await withRetry(() => deleteObject(ctx.client, this.SC, s.name, undefined, { uid: sc.metadata?.uid, dryRun: ctx.dryRun === 'server' }));
          }
        }
      },
      verify: async (ctx) => ((await Promise.all(specs.map((s) => drained(ctx.client, s)))).every(Boolean) ? undefined : 'old ServiceCIDR still active'),
    };
  }

  /** Services holding a ClusterIP in a drained range that the plan neither keeps nor bridges. */
  async stragglers(client: KubeClient): Promise<KubeObject[]> {
    return (await listAll(client, SERVICES)).filter((s) => this.isStraggler(s));
  }

  private stragglerRules: { old: ReturnType<ServiceExecutor['oldRanges']>; keptSCs: ReturnType<typeof parseCidr>[]; skip: Set<string> } | undefined;

  /** A Service the sweep moves: still at an old-range IP (not kept, not ours, not a LoadBalancer), or half-swept. */
  private isStraggler(s: KubeObject): boolean {
    this.stragglerRules ??= (() => {
      const skip = new Set(this.plan.mapping.filter((m) => m.action !== 'move').map((m) => `${m.namespace}/${m.name}`));
      skip.add('default/kubernetes');
      return { old: this.oldRanges(), keptSCs: this.svc.kept.map((k) => parseCidr(k)), skip };
    })();
    const { old, keptSCs, skip } = this.stragglerRules;
    const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
    if (skip.has(key) || s.metadata?.labels?.[MANAGED_LABEL] === 'true' || s.spec?.type === 'LoadBalancer') return false;
    // half-swept by an interrupted run: ExternalName now, pointing at itself
    if (s.spec?.type === 'ExternalName' && s.spec?.externalName === this.fqdn(s.metadata!.name!, s.metadata!.namespace!)) return true;
    return ipsOf(s).some((ip) => {
      const a = parseIP(ip);
      return old.some((c) => contains(c, a)) && !keptSCs.some((k) => contains(k, a));
    });
  }

  /** A Service's DNS name, for ExternalName targets. */
  private fqdn(name: string, namespace: string): string {
    return `${name}.${namespace}.svc.${this.opts.clusterDomain}`;
  }

  private sweepStep(p: PlanStep): Step {
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.stragglers(ctx.client)).length === 0,
      backup: async (ctx) => this.stragglers(ctx.client),
      apply: async (ctx) => {
        for (const s of await this.stragglers(ctx.client)) {
          // No bridge (an explicit IP in a Terminating ServiceCIDR is refused) and no explicit address: the
          // apiserver allocates from the Ready ranges, the old one being drained. The backup (taken before
          // the first change) gives the type to return to when an earlier run was interrupted half-way.
          const orig = ctx.backups.load(refOf(s)) ?? s;
          const [ns, name] = [s.metadata!.namespace!, s.metadata!.name!];
          // A 409 (someone's edit, or our own write whose answer was lost) reads the Service again and decides again.
          await retryOnConflict(`Service ${ns}/${name}`, async (attempt) => {
            const cur = attempt === 1 ? s : await withRetry(() => getObject(ctx.client, SERVICES, name, ns));
            if (!cur || !this.isStraggler(cur)) return;
            const patched = cur.spec?.type === 'ExternalName' ? cur
              : await withRetry(() => patchService(ctx.client, cur, { type: 'ExternalName', externalName: this.fqdn(name, ns) }, false));
            const back = backToType(orig, []);
            delete back.clusterIP;
            delete back.clusterIPs;
            await withRetry(() => patchService(ctx.client, patched, back, false));
          });
          ctx.log(`swept Service ${ns}/${name} out of the old range`);
        }
      },
      verify: async (ctx) => {
        const left = await this.stragglers(ctx.client);
        return left.length === 0 ? undefined : `${left.length} Service(s) still in the old range, e.g. ${left[0]!.metadata?.namespace}/${left[0]!.metadata?.name}`;
      },
    };
  }

  private moveKubernetesStep(p: PlanStep): Step {
    const it = p.items![0]!;
    const specs = p.serviceCIDRs ?? [];
    const bridgeSliceName = `${it.bridge}`;
    const done = async (client: KubeClient) => {
      const k = await getObject(client, SERVICES, 'kubernetes', 'default');
      if (!k || k.spec?.type === 'ExternalName' || !sameIPs(ipsOf(k), it.to)) return false;
      if (!it.bridge) return (await this.coversOf(client, [it])).length === 0;
      const b = await getObject(client, SERVICES, it.bridge, 'default');
      const slice = await getObject(client, ENDPOINTSLICES, bridgeSliceName, 'default');
      return !!b && sameIPs(ipsOf(b), it.from) && !!slice && (await this.coversOf(client, [it])).length === 0;
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => done(ctx.client),
      backup: async (ctx) => {
        const k = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
        return k && sameIPs(ipsOf(k), it.from) ? [k] : [];
      },
      apply: async (ctx) => {
        for (const s of specs) await this.ensureServiceCIDR(ctx, s);
        await poll('the bridge ServiceCIDR to be Ready', async () =>
          ((await Promise.all(specs.map((s) => this.scState(ctx.client, s)))).every((x) => x === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
        if (this.strategy === 'in-place' && ctx.dryRun === 'none') {
          // The apiserver only creates default/kubernetes when it is missing (it has not reconciled an existing
          // one since 1.17), so it can be moved like any Service: the name and both IPs keep answering.
          const view = await this.observe(ctx.client, [it]);
          const foreign = squatters(view, [it], this.opts.token);
          if (foreign.length > 0) throw notOursError(foreign, this.opts.token, (k) => view.get(k));
          const covers = new Map(coversIn(view, [it], this.opts.token).map((c) => [itemKey(it), c]));
          const covered = this.opts.covers && !itemDone(view, it) ? await this.raiseCovers(ctx, [it], view, covers) : new Set<string>();
          if (it.bridge) await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
          await this.moveItem(ctx, it, 'in-place', { svc: view.get(itemKey(it)), bridge: it.bridge ? view.get(`default/${it.bridge}`) : undefined },
            covered.size > 0 ? this.fqdn(coverName('kubernetes'), 'default') : undefined);
          await this.lowerCovers(ctx, [it], covers);
          return;
        }
        const k = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
        if (k && sameIPs(ipsOf(k), it.from)) {
          await withRetry(() => deleteObject(ctx.client, SERVICES, 'kubernetes', 'default', { uid: k.metadata?.uid }));
        }
        const back = await poll('the apiserver to recreate default/kubernetes at the new first IP', async () => {
          const n = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
          return n && !sameIPs(ipsOf(n), it.from) ? n : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 90_000), intervalMs: 500 });
        if (!sameIPs(ipsOf(back), it.to)) {
          throw new Error(`default/kubernetes came back at ${ipsOf(back).join(',')}, not ${it.to.join(',')}: is every apiserver on the new --service-cluster-ip-range?`);
        }
        if (!it.bridge) return;
        const orig = ctx.backups.load(svcRef('default', 'kubernetes')) ?? back;
        const bridge = bridgeService({ ...orig, spec: { ...orig.spec, selector: undefined } }, it.bridge, it.from, this.opts.token);
        const there = await getObject(ctx.client, SERVICES, it.bridge, 'default');
        if (there) this.adopt(ctx, there, BRIDGE_FOR_LABEL, 'kubernetes');
        else {
          await this.waitReleased(ctx, it.from, 'default', it.bridge);
          const until = Date.now() + Math.max(this.opts.timeoutMs, 60_000);
          for (;;) {
            try {
              this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, bridge)), BRIDGE_FOR_LABEL, 'kubernetes');
              break;
            } catch (e) {
              if (!isAllocatorNotReady(e) || Date.now() >= until) throw e;
              await sleep(1000);
            }
          }
        }
        await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'default/kubernetes or its bridge is not in place'),
    };
  }

  private removeBridgesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const specs = p.serviceCIDRs ?? [];
    const present = async (client: KubeClient) => {
      const svcs = await Promise.all(items.map((i) => getObject(client, SERVICES, i.name, i.namespace)));
      // bridges of this run only (a Service of a bridge's name that is not ours is left alone)
      const mine = svcs.filter((s) => !!s && ownedHelper(s, BRIDGE_FOR_LABEL, s.metadata?.labels?.[BRIDGE_FOR_LABEL] ?? '', this.opts.token)) as KubeObject[];
      // covers of interrupted in-place moves (normally removed by their move step)
      mine.push(...(await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL }))
        .filter((s) => ownedHelper(s, COVER_FOR_LABEL, s.metadata?.labels?.[COVER_FOR_LABEL] ?? '', this.opts.token)));
      const scs = (await Promise.all(specs.map((s) => getObject(client, this.SC, s.name)))).filter((x) => x && !x.metadata?.deletionTimestamp) as KubeObject[];
      const slices = await listAll(client, ENDPOINTSLICES, { labelSelector: `${MANAGED_LABEL}=true${this.opts.token ? `,${RUN_LABEL}=${this.opts.token}` : ''}` });
      return [...mine, ...scs, ...slices];
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await present(ctx.client)).length === 0,
      backup: (ctx) => present(ctx.client),
      apply: async (ctx) => {
        for (const o of await present(ctx.client)) {
          const r = refOf(o);
          const t = o.kind === 'ServiceCIDR' ? this.SC : o.kind === 'EndpointSlice' ? ENDPOINTSLICES : SERVICES;
          await withRetry(() => deleteObject(ctx.client, t, r.name, r.namespace, { uid: o.metadata?.uid, dryRun: ctx.dryRun === 'server' }));
        }
      },
      verify: async (ctx) => {
        const left = await present(ctx.client);
        return left.length === 0 ? undefined : `${left.length} bridge object(s) left`;
      },
      rollback: async (ctx) => {
        for (const it of items) {
          const b = ctx.backups.load(svcRef(it.namespace, it.name));
          const forName = b?.metadata?.labels?.[BRIDGE_FOR_LABEL] ?? '';
          if (b) this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, recreated(b, ipsOf(b)))), BRIDGE_FOR_LABEL, forName);
        }
      },
    };
  }

  private finalizeStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    const want = this.svc.to;
    const kubernetesOnNew = async (client: KubeClient) => {
      const sc = await getObject(client, this.SC, 'kubernetes');
      return !!sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === want.join(',');
    };
    const done = async (client: KubeClient) => (await kubernetesOnNew(client))
      && (await Promise.all(specs.map((s) => getObject(client, this.SC, s.name)))).every((x) => !x);
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => done(ctx.client),
      backup: async (ctx) => (await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).filter((x): x is KubeObject => !!x),
      apply: async (ctx) => {
        await poll('ServiceCIDR/kubernetes to be recreated with the new range', async () => {
          const sc = await getObject(ctx.client, this.SC, 'kubernetes');
          if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') !== want.join(',') && !(await this.anyIPIn(ctx.client, sc.spec?.cidrs ?? []))) {
            ctx.log('ServiceCIDR/kubernetes came back with the old range (an apiserver still on the old flag?): deleting it again');
            await withRetry(() => deleteObject(ctx.client, this.SC, 'kubernetes', undefined, { uid: sc.metadata?.uid }));
          }
          return (await kubernetesOnNew(ctx.client)) ? true : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 120_000), intervalMs: 1000 });
        for (const s of specs) await withRetry(() => deleteObject(ctx.client, this.SC, s.name));
        await poll('the temporary ServiceCIDR to go', async () =>
          ((await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined), { timeoutMs: this.opts.timeoutMs });
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'ServiceCIDR/kubernetes does not hold the new range yet'),
    };
  }

  /** Does any IPAddress sit inside these CIDRs that no other Ready ServiceCIDR covers? */
  private async anyIPIn(client: KubeClient, cidrs: string[]): Promise<boolean> {
    const cs = cidrs.map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
    const others = (await listAll(client, this.SC)).filter((s) => s.metadata?.name !== 'kubernetes' && !s.metadata?.deletionTimestamp)
      .flatMap((s) => (s.spec?.cidrs ?? []).map((c: string) => tryParseCidr(c)).filter((c: Cidr | undefined): c is Cidr => !!c));
    const ips = await listAll(client, this.IPADDR);
    return ips.some((a) => {
      const ip = parseIP(a.metadata!.name!);
      return cs.some((c) => contains(c, ip)) && !others.some((o) => contains(o, ip));
    });
  }

  // ---- end state ----------------------------------------------------------------------------------

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
    const sc = await getObject(client, this.SC, 'kubernetes');
    if (!sc || (sc.spec?.cidrs ?? []).join(',') !== this.svc.to.join(',')) problems.push('ServiceCIDR/kubernetes does not hold the new range');
    const bridges = services.filter((s) => s.metadata?.labels?.[BRIDGE_FOR_LABEL]);
    if (bridges.length > 0) problems.push(`${bridges.length} bridge Service(s) left`);
    const covers = services.filter((s) => s.metadata?.labels?.[COVER_FOR_LABEL]);
    if (covers.length > 0) problems.push(`${covers.length} cover Service(s) left`);
    return problems.length === 0 ? undefined : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`;
  }
}
