/**
 * Restarting pods onto new IPs: the restart layer of a Pod CIDR migration. Which pods need a restart is
 * the caller's decision (e.g. "pod IP in the old range"); this module
 *   - resolves each such pod to the workload that owns it (a Deployment through its ReplicaSet, read live),
 *   - restarts the workload the way its controller supports without downtime: a pod template restart
 *     (`kubectl rollout restart`) for Deployments, StatefulSets and DaemonSets, awaited like
 *     `kubectl rollout status`; the Eviction API (PodDisruptionBudgets respected) for Job pods and pods of
 *     other controllers; evict and create again from the backup for pods without a controller,
 *   - runs many restarts in parallel, critical workloads (CoreDNS) first, and scales critical Deployments
 *     up for the duration.
 * Everything is derived from the live cluster and the run's backups, so running it again after a crash at
 * any point continues where the first run stopped: the pod template carries this run's token once
 * patched, a bare pod whose backup's uid is gone has been evicted, a budget that blocks is named.
 */
import { isReady } from '../cluster/readers.ts';
import { errorLine, UserError } from '../errors.ts';
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { createObject, forCreate, getObject, listAll, PODS, type ResourceType } from '../kube/resources.ts';
import {
  DEPLOYMENTS, evictPod, JOBS, PODDISRUPTIONBUDGETS, patchWithPrecondition, REPLICASETS, WORKLOAD_TYPES,
} from '../kube/workloads.ts';
import { jobEvictionRefusal, jobEvictionRisk } from './job-eviction.ts';
import { HANDOVER_LABEL, handoverState, handsOverLive } from './udp-handover.ts';
import { backUpLate } from './runner.ts';
import { EvictionBlocked, evictRespectingPdb, mapLimit, poll, PollTimeout, retryOnConflict, sleep, withRetry } from './toolkit.ts';
import type { StepContext } from './runner.ts';

/** Pod template annotation naming the run that restarted the workload: a resumed run does not restart it again. */
export const RESTART_ANNOTATION = 'kube-renumber.io/restart';
/** The annotation `kubectl rollout restart` sets. */
export const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt';

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'Pod' | 'Other';

export interface Workload {
  kind: WorkloadKind;
  namespace: string;
  /** The workload's name; for 'Pod' the pod's; for 'Other' the owning controller's. */
  name: string;
  /** Names of the pods that need a restart. */
  pods: string[];
  /** For 'Other': the controller that owns the pods (a ReplicaSet without Deployment, a custom controller...). */
  owner?: { apiVersion: string; kind: string; name: string };
}

export type SkipReason = 'host-network' | 'no-ip' | 'terminal' | 'terminating' | 'static-pod' | 'handover';

export interface PodGrouping {
  workloads: Workload[];
  /** Pods left alone: they keep the node's IP, have none, have ended, are going anyway, or belong to the kubelet. */
  skipped: Array<{ namespace: string; name: string; reason: SkipReason }>;
  /** Pods whose controller is of a kind this tool does not know: evicted, the caller should warn. */
  unknownOwners: Array<{ namespace: string; pod: string; apiVersion: string; kind: string; name: string }>;
}

type OwnerRef = NonNullable<NonNullable<KubeObject['metadata']>['ownerReferences']>[number];

/** Controllers that replace an evicted pod and are known to do so ('Other' without a warning). */
const KNOWN_REPLACING = new Set(['ReplicaSet', 'ReplicationController', 'StatefulSet']);

export function controllerOf(o: KubeObject): OwnerRef | undefined {
  return (o.metadata?.ownerReferences ?? []).find((r) => r.controller === true);
}

export function workloadKey(w: Pick<Workload, 'kind' | 'namespace' | 'name' | 'owner'>): string {
  return w.kind === 'Other' && w.owner ? `${w.owner.kind}/${w.namespace}/${w.name}` : `${w.kind}/${w.namespace}/${w.name}`;
}

export function describeWorkload(w: Workload): string {
  if (w.kind === 'Other') return `${w.owner?.kind ?? 'controller'} ${w.namespace}/${w.name}`;
  return `${w.kind === 'Pod' ? 'pod' : w.kind} ${w.namespace}/${w.name}`;
}

/** Why this pod needs no restart (undefined: it does, if the caller says its IP must change). */
export function skipReason(pod: KubeObject): SkipReason | undefined {
  if (pod.spec?.hostNetwork) return 'host-network';
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return 'static-pod';
  if (pod.metadata?.deletionTimestamp) return 'terminating';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return 'terminal';
  if (!pod.status?.podIP) return 'no-ip';
  return undefined;
}

/**
 * Group pods by the workload that owns them. `replicaSets` are the live ReplicaSets of the pods owned by
 * one, keyed "namespace/name" (their own controller tells whether a Deployment owns them). Pure.
 */
export function groupPods(pods: readonly KubeObject[], replicaSets: ReadonlyMap<string, KubeObject>): PodGrouping {
  const out: PodGrouping = { workloads: [], skipped: [], unknownOwners: [] };
  const byKey = new Map<string, Workload>();
  const add = (w: Omit<Workload, 'pods'>, pod: string) => {
    const key = workloadKey(w);
    let cur = byKey.get(key);
    if (!cur) byKey.set(key, (cur = { ...w, pods: [] }));
    if (!cur.pods.includes(pod)) cur.pods.push(pod);
  };
  for (const pod of pods) {
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    // a pod taken out of its ReplicaSet for a hand-over (udp-handover.ts) is replaced already: that hand-over ends it
    const reason = pod.metadata?.labels?.[HANDOVER_LABEL] !== undefined ? 'handover' : skipReason(pod);
    if (reason) {
      out.skipped.push({ namespace, name, reason });
      continue;
    }
    const ctl = controllerOf(pod);
    if (!ctl) {
      add({ kind: 'Pod', namespace, name }, name);
      continue;
    }
    const ctlKind = ctl.kind ?? '';
    const ctlName = ctl.name ?? '';
    if (ctlKind === 'StatefulSet' || ctlKind === 'DaemonSet' || ctlKind === 'Job') {
      add({ kind: ctlKind, namespace, name: ctlName }, name);
      continue;
    }
    let owner = { apiVersion: ctl.apiVersion ?? '', kind: ctlKind, name: ctlName };
    if (ctlKind === 'ReplicaSet') {
      const rs = replicaSets.get(`${namespace}/${ctlName}`);
      const top = rs ? controllerOf(rs) : undefined;
      if (top?.kind === 'Deployment') {
        add({ kind: 'Deployment', namespace, name: top.name ?? '' }, name);
        continue;
      }
      if (top) owner = { apiVersion: top.apiVersion ?? '', kind: top.kind ?? '', name: top.name ?? '' };
    }
    if (!KNOWN_REPLACING.has(owner.kind)) out.unknownOwners.push({ namespace, pod: name, ...owner });
    add({ kind: 'Other', namespace, name: owner.name, owner }, name);
  }
  const kindOrder: WorkloadKind[] = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'Other', 'Pod'];
  out.workloads = [...byKey.values()].sort((a, b) => a.namespace.localeCompare(b.namespace)
    || kindOrder.indexOf(a.kind) - kindOrder.indexOf(b.kind) || a.name.localeCompare(b.name));
  for (const w of out.workloads) w.pods.sort();
  return out;
}

/** groupPods with the pods' ReplicaSets read live (one GET per ReplicaSet). */
export async function resolveWorkloads(client: KubeClient, pods: readonly KubeObject[]): Promise<PodGrouping> {
  const wanted = new Set<string>();
  for (const p of pods) {
    const ctl = controllerOf(p);
    if (ctl?.kind === 'ReplicaSet' && !skipReason(p)) wanted.add(`${p.metadata?.namespace ?? 'default'}/${ctl.name}`);
  }
  const replicaSets = new Map<string, KubeObject>();
  const keys = [...wanted];
  for (let i = 0; i < keys.length; i += 8) {
    await Promise.all(keys.slice(i, i + 8).map(async (k) => {
      const [ns, name] = k.split('/') as [string, string];
      const rs = await withRetry(() => getObject(client, REPLICASETS, name, ns));
      if (rs) replicaSets.set(k, rs);
    }));
  }
  return groupPods(pods, replicaSets);
}

// ---- label selectors and PodDisruptionBudgets ---------------------------------------------------

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** Kubernetes label selector semantics: a missing selector selects nothing, an empty one everything. */
export function selectorMatches(sel: LabelSelector | null | undefined, labels: Record<string, string> | undefined): boolean {
  if (!sel) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In': if (!has || !values.includes(l[e.key]!)) return false; break;
      case 'NotIn': if (has && values.includes(l[e.key]!)) return false; break;
      case 'Exists': if (!has) return false; break;
      case 'DoesNotExist': if (has) return false; break;
      default: return false;
    }
  }
  return true;
}

/** The selector as a `labelSelector` query string. */
export function selectorString(sel: LabelSelector): string {
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const vals = `(${(e.values ?? []).join(',')})`;
    if (e.operator === 'In') parts.push(`${e.key} in ${vals}`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin ${vals}`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

/** The PodDisruptionBudgets (of the pod's namespace) that select the pod. */
export function pdbsFor(pod: KubeObject, pdbs: readonly KubeObject[]): KubeObject[] {
  const ns = pod.metadata?.namespace;
  return pdbs.filter((b) => b.metadata?.namespace === ns && selectorMatches(b.spec?.selector, pod.metadata?.labels));
}

export function describePdb(b: KubeObject): string {
  const s = b.status ?? {};
  const rule = b.spec?.maxUnavailable !== undefined ? `maxUnavailable ${b.spec.maxUnavailable}` : `minAvailable ${b.spec?.minAvailable}`;
  return `PodDisruptionBudget ${b.metadata?.namespace}/${b.metadata?.name} (${rule}; disruptionsAllowed ${s.disruptionsAllowed ?? '?'}, `
    + `currentHealthy ${s.currentHealthy ?? '?'}, desiredHealthy ${s.desiredHealthy ?? '?'}, expectedPods ${s.expectedPods ?? '?'})`;
}

// ---- rollout status, as `kubectl rollout status` judges it ----------------------------------------

export interface RolloutState {
  done: boolean;
  /** Set when the rollout cannot finish by waiting (progress deadline exceeded). */
  failed?: string;
  /** The observed counts, for logs and timeout messages. */
  detail: string;
}

/** Pure: is this Deployment, StatefulSet or DaemonSet rolled out? */
export function rolloutState(o: KubeObject): RolloutState {
  const st = o.status ?? {};
  const gen = Number(o.metadata?.generation ?? 0);
  const observed = Number(st.observedGeneration ?? 0);
  const want = o.spec?.replicas ?? 1;
  const notObserved = observed < gen;
  switch (o.kind) {
    case 'Deployment': {
      const updated = st.updatedReplicas ?? 0;
      const replicas = st.replicas ?? 0;
      const available = st.availableReplicas ?? 0;
      const detail = `desired ${want}, updated ${updated}, total ${replicas}, available ${available}, observedGeneration ${observed}/${gen}`;
      if (notObserved) return { done: false, detail };
      const progressing = (st.conditions ?? []).find((c: any) => c.type === 'Progressing');
      if (progressing?.reason === 'ProgressDeadlineExceeded') return { done: false, failed: `progress deadline exceeded: ${progressing.message ?? ''}`.trim(), detail };
      return { done: updated >= want && replicas <= updated && available >= want, detail };
    }
    case 'StatefulSet': {
      const ready = st.readyReplicas ?? 0;
      const updated = st.updatedReplicas ?? 0;
      const strategy = o.spec?.updateStrategy?.type ?? 'RollingUpdate';
      const partition = strategy === 'RollingUpdate' ? (o.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) : 0;
      const detail = `desired ${want}, ready ${ready}, updated ${updated}, currentRevision ${st.currentRevision ?? '?'}, `
        + `updateRevision ${st.updateRevision ?? '?'}, observedGeneration ${observed}/${gen}`;
      if (notObserved || !observed) return { done: false, detail };
      if (ready < want) return { done: false, detail };
      if (strategy === 'OnDelete') return { done: updated >= want, detail };
      if (partition > 0) return { done: updated >= want - partition, detail };
      return { done: st.updateRevision === st.currentRevision, detail };
    }
    case 'DaemonSet': {
      const desired = st.desiredNumberScheduled ?? 0;
      const updated = st.updatedNumberScheduled ?? 0;
      const available = st.numberAvailable ?? 0;
      const detail = `desired ${desired}, updated ${updated}, available ${available}, observedGeneration ${observed}/${gen}`;
      if (notObserved) return { done: false, detail };
      return { done: updated >= desired && available >= desired, detail };
    }
    default:
      return { done: false, failed: `no rollout status for kind ${o.kind}`, detail: '' };
  }
}

// ---- restarting one workload ---------------------------------------------------------------------

export interface RestartOptions {
  /** Identifies this run: a pod template that carries it was restarted by this run already. */
  token: string;
  /** For the whole restart of one workload, rollout or evictions included. */
  timeoutMs: number;
  /** Longest wait between eviction attempts while a PodDisruptionBudget blocks (default 5 s; starts at 0.5 s). */
  evictionRetryMs?: number;
  /** Poll interval for rollouts and pods (default 500 ms). */
  pollMs?: number;
}

export type RestartStatus = 'restarted' | 'evicted' | 'recreated' | 'paused' | 'stuck' | 'skipped' | 'failed';

export interface RestartResult {
  workload: Workload;
  status: RestartStatus;
  seconds: number;
  message?: string;
  /** What the operator should know even without -v: lost emptyDir state, Job backoffLimit, unknown controllers. */
  warnings: string[];
  /** For 'failed': the error (an unreachable cluster or missing permission keeps its exit code). */
  error?: unknown;
}

/** A wait that ran out of time or cannot finish: the workload is reported 'stuck'. */
class Stuck extends Error {}

interface Run {
  ctx: StepContext;
  w: Workload;
  opts: RestartOptions;
  deadline: number;
  poll: number;
  warnings: string[];
  warn(msg: string): void;
}

type Outcome = { status: RestartStatus; message?: string };

const secondsLeft = (r: Run) => Math.max(0, Math.round((r.deadline - Date.now()) / 1000));

/**
 * Restart one workload so that its pods get new IPs. Never throws: the result says what happened
 * ('failed' carries the error). dryRun 'client' only logs; 'server' sends the writes with dryRun=All and
 * does not wait.
 */
export async function restartWorkload(ctx: StepContext, w: Workload, opts: RestartOptions): Promise<RestartResult> {
  const t0 = Date.now();
  const warnings: string[] = [];
  const run: Run = {
    ctx, w, opts, deadline: t0 + opts.timeoutMs, poll: opts.pollMs ?? 500, warnings,
    // shown at once, without -v (the caller does not repeat what ctx.warn already showed)
    warn(msg) { if (!warnings.includes(msg)) { warnings.push(msg); if (ctx.warn) ctx.warn(msg); else ctx.log(`warning: ${msg}`); } },
  };
  const result = (o: Outcome, error?: unknown): RestartResult => ({
    workload: w, status: o.status, seconds: (Date.now() - t0) / 1000, ...(o.message ? { message: o.message } : {}), warnings,
    ...(error !== undefined ? { error } : {}),
  });
  try {
    let o: Outcome;
    switch (w.kind) {
      case 'Deployment': case 'StatefulSet': case 'DaemonSet': o = await restartTemplate(run); break;
      case 'Pod': o = await recreateBarePod(run); break;
      case 'Job': case 'Other': o = await evictOwnedPods(run); break;
      default: throw new Error(`unknown workload kind ${String((w as Workload).kind)}`);
    }
    if (o.status !== 'skipped' || ctx.dryRun === 'none') ctx.log(`${describeWorkload(w)}: ${o.status}${o.message ? ` (${o.message})` : ''} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    return result(o);
  } catch (e) {
    if (e instanceof Stuck) {
      ctx.log(`${describeWorkload(w)}: stuck: ${e.message}`);
      return result({ status: 'stuck', message: e.message });
    }
    ctx.log(`${describeWorkload(w)}: failed: ${errorLine(e)}`);
    return result({ status: 'failed', message: errorLine(e) }, e);
  }
}

/** Poll until `check` gives a value; at the deadline throw Stuck with `what` and the last `detail`. */
async function until<T>(r: Run, what: string, check: () => Promise<{ value?: T; detail?: string; failed?: string }>): Promise<T> {
  try {
    return await poll(what, async (note) => {
      const v = await check();
      if (v.detail) note(v.detail);
      if (v.failed) throw new Stuck(`${what}: ${v.failed}${v.detail ? ` (${v.detail})` : ''}`);
      return v.value;
    }, { timeoutMs: Math.max(0, r.deadline - Date.now()), intervalMs: r.poll, tolerateTransient: true });
  } catch (e) {
    if (e instanceof PollTimeout) throw new Stuck(`${what}: not done after ${Math.round(r.opts.timeoutMs / 1000)}s${e.detail ? ` (${e.detail})` : ''}`);
    throw e;
  }
}

const get = (r: Run, t: ResourceType, name: string) => withRetry(() => getObject(r.ctx.client, t, name, r.w.namespace));

async function restartTemplate(r: Run): Promise<Outcome> {
  const { ctx, w, opts } = r;
  const kind = w.kind as keyof typeof WORKLOAD_TYPES;
  const t = WORKLOAD_TYPES[kind];
  const label = describeWorkload(w);
  let cur = await get(r, t, w.name);
  if (!cur) return { status: 'skipped', message: `${label} no longer exists` };
  if (kind === 'Deployment' && cur.spec?.paused) {
    r.warn(`${label} is paused: not restarted (its pods keep their IPs; resume it with kubectl rollout resume and run again)`);
    return { status: 'paused', message: 'paused Deployment: left as it is' };
  }
  const hasToken = (o: KubeObject) => o.spec?.template?.metadata?.annotations?.[RESTART_ANNOTATION] === opts.token;
  if (ctx.dryRun === 'client') {
    ctx.log(hasToken(cur) ? `would wait for the rollout of ${label} (restarted by this run already)`
      : `would restart ${label}: annotate its pod template with ${RESTART_ANNOTATION}=${opts.token} and wait for the rollout`);
    return { status: 'skipped', message: 'dry run' };
  }
  if (cur.kind === undefined) cur = { ...cur, apiVersion: 'apps/v1', kind };
  // the step's backup phase took it; one that appeared since is backed up (and journaled) here
  backUpLate(ctx, [cur]);
  const patched = await retryOnConflict(label, async (attempt) => {
    if (attempt > 1) {
      const again = await get(r, t, w.name); // someone else changed it meanwhile (or our retried write went through)
      if (!again) return 'deleted';
      cur = again;
    }
    if (hasToken(cur!)) return 'had';
    const patch = { spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: new Date().toISOString(), [RESTART_ANNOTATION]: opts.token } } } } };
    cur = await withRetry(() => patchWithPrecondition(ctx.client, t, cur!, patch, { dryRun: ctx.dryRun === 'server' }));
    if (ctx.dryRun !== 'server') ctx.log(`restarting ${label}`);
    return 'patched';
  }, { attempts: 10 });
  if (patched === 'deleted') return { status: 'skipped', message: `${label} was deleted meanwhile` };
  if (ctx.dryRun === 'server') {
    return { status: 'skipped', message: patched === 'patched' ? 'dry run (server): pod template patch accepted' : 'dry run (server): restarted by this run already' };
  }

  const strategy = cur.spec?.updateStrategy?.type;
  const rollout = () => until(r, `rollout of ${label}`, async () => {
    const o = await getObject(ctx.client, t, w.name, w.namespace);
    if (!o) return { failed: 'it was deleted' };
    const s = rolloutState({ ...o, kind });
    return { value: s.done ? o : undefined, detail: s.detail, failed: s.failed };
  });
  if ((kind === 'StatefulSet' || kind === 'DaemonSet') && strategy === 'OnDelete') {
    // The controller replaces only deleted pods: evict the old ones (without this run's token) one at a time,
    // once it has seen the new template (else it would replace them from the old one).
    await until(r, `${label} to observe its new pod template`, async () => {
      const o = await getObject(ctx.client, t, w.name, w.namespace);
      if (!o) return { failed: 'it was deleted' };
      const gen = Number(o.metadata?.generation ?? 0);
      const seen = Number(o.status?.observedGeneration ?? 0);
      return { value: seen >= gen ? true : undefined, detail: `observedGeneration ${seen}/${gen}` };
    });
    for (;;) {
      const owner = await get(r, t, w.name);
      if (!owner) return { status: 'skipped', message: `${label} was deleted meanwhile` };
      const old = (await ownedPods(r, owner)).filter((p) => p.metadata?.annotations?.[RESTART_ANNOTATION] !== opts.token && !p.metadata?.deletionTimestamp)
        .sort((a, b) => ordinal(b) - ordinal(a));
      if (old.length === 0) break;
      await evictAndWaitGone(r, old[0]!);
      await waitReplaced(r, t, label, old[0]!);
    }
    await rollout();
    return { status: 'restarted', message: 'OnDelete strategy: pods evicted one at a time' };
  }
  const done = await rollout();
  const partition = kind === 'StatefulSet' && strategy !== 'OnDelete' ? (done.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) : 0;
  if (partition > 0) {
    // Pods below the partition keep their revision; evict those still in `pods` once, one at a time.
    const below = (await Promise.all(w.pods.filter((n) => ordinal({ metadata: { name: n } }) < partition)
      .map((n) => get(r, PODS, n)))).filter((p): p is KubeObject => !!p && !p.metadata?.deletionTimestamp);
    for (const p of below.sort((a, b) => ordinal(b) - ordinal(a))) {
      await evictAndWaitGone(r, p);
      await waitReplaced(r, t, label, p);
    }
    return { status: 'restarted', message: `partition ${partition}: the ${below.length} pod(s) below it evicted one at a time (they keep their revision)` };
  }
  return { status: 'restarted' };
}

/** A StatefulSet pod's ordinal (-1 when the name has none). */
function ordinal(p: KubeObject): number {
  const m = /-(\d+)$/.exec(p.metadata?.name ?? '');
  return m ? Number(m[1]) : -1;
}

async function ownedPods(r: Run, owner: KubeObject): Promise<KubeObject[]> {
  const sel = owner.spec?.selector as LabelSelector | undefined;
  const pods = await withRetry(() => listAll(r.ctx.client, PODS, { namespace: r.w.namespace, labelSelector: sel ? selectorString(sel) : undefined }));
  return pods.filter((p) => controllerOf(p)?.uid === owner.metadata?.uid);
}

/**
 * After one eviction from a StatefulSet or DaemonSet: wait until the controller replaced the pod and every
 * pod of the workload is Ready again, judged on the pods themselves (the status may lag behind).
 */
async function waitReplaced(r: Run, t: ResourceType, label: string, evicted: KubeObject): Promise<void> {
  await until(r, `${label} to replace pod ${evicted.metadata?.name} and be ready again`, async () => {
    const o = await getObject(r.ctx.client, t, r.w.name, r.w.namespace);
    if (!o) return { failed: 'it was deleted' };
    const want = t.plural === 'daemonsets' ? (o.status?.desiredNumberScheduled ?? 0) : (o.spec?.replicas ?? 1);
    const pods = (await ownedPods(r, o)).filter((p) => !p.metadata?.deletionTimestamp && p.metadata?.uid !== evicted.metadata?.uid);
    const ready = pods.filter((p) => isReady(p));
    return { value: ready.length >= want && ready.length === pods.length ? true : undefined, detail: `desired ${want}, pods ${pods.length}, ready ${ready.length}` };
  });
}

// ---- eviction ------------------------------------------------------------------------------------

async function blockingPdbs(r: Run, pod: KubeObject): Promise<KubeObject[]> {
  return pdbsFor(pod, await listAll(r.ctx.client, PODDISRUPTIONBUDGETS, { namespace: pod.metadata?.namespace }));
}

/**
 * Evict `pod` (its uid as precondition), retrying while a PodDisruptionBudget forbids it (429) or the API
 * answers a transient error, until the deadline; then Stuck naming the budget(s). Returns false when the pod
 * was gone already.
 */
async function evict(r: Run, pod: KubeObject): Promise<boolean> {
  const { ctx } = r;
  const ns = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  let lastBlock = '';
  try {
    const res = await evictRespectingPdb(ctx.client, pod, {
      dryRun: ctx.dryRun === 'server',
      deadline: r.deadline,
      maxDelayMs: r.opts.evictionRetryMs ?? 5000,
      budgets: () => blockingPdbs(r, pod),
      describeBudget: describePdb,
      current: () => get(r, PODS, name),
      onRefused: (why) => {
        if (why !== lastBlock) ctx.log(`eviction of pod ${ns}/${name} ${why}; retrying for up to ${secondsLeft(r)}s`);
        lastBlock = why;
        return false;
      },
    });
    return res !== 'gone';
  } catch (e) {
    if (e instanceof EvictionBlocked) {
      throw new Stuck(ctx.dryRun === 'server' ? e.message : `eviction of pod ${ns}/${name} not possible within ${Math.round(r.opts.timeoutMs / 1000)}s: ${e.why}`);
    }
    throw e;
  }
}

async function waitGone(r: Run, pod: KubeObject): Promise<void> {
  const name = pod.metadata!.name!;
  await until(r, `pod ${r.w.namespace}/${name} to go`, async () => {
    const now = await getObject(r.ctx.client, PODS, name, r.w.namespace);
    return { value: !now || now.metadata?.uid !== pod.metadata?.uid ? true : undefined, detail: now?.metadata?.deletionTimestamp ? 'terminating' : 'still running' };
  });
}

async function evictAndWaitGone(r: Run, pod: KubeObject): Promise<boolean> {
  const evicted = await evict(r, pod);
  if (evicted && r.ctx.dryRun === 'none') await waitGone(r, pod);
  return evicted;
}

/** A pod evictOwnedPods evicts: there, not finished, not already going. */
const toEvict = (pod: KubeObject | undefined): pod is KubeObject => !!pod && skipReason(pod) !== 'terminal' && !pod.metadata?.deletionTimestamp;

/** Job pods and pods of other controllers: evict them one at a time; their controller makes new ones. */
async function evictOwnedPods(r: Run): Promise<Outcome> {
  const { ctx, w } = r;
  const label = describeWorkload(w);
  if (w.kind === 'Job') {
    const job = await get(r, JOBS, w.name);
    const live = (await Promise.all(w.pods.map((name) => get(r, PODS, name)))).filter(toEvict);
    const risk = jobEvictionRisk(job, live);
    if (risk) throw new Error(jobEvictionRefusal(job!, risk, 'to give them new IPs'));
    const limit = job?.spec?.backoffLimit ?? 6;
    if (jobEvictionRisk(job, Number.MAX_SAFE_INTEGER)) {
      r.warn(`${label}: its pods are evicted, and each eviction counts as a failure against its backoffLimit (${limit}) `
        + 'as no podFailurePolicy rule of it ignores DisruptionTarget');
    }
  } else if (w.owner && !KNOWN_REPLACING.has(w.owner.kind)) {
    r.warn(`${label}: pods owned by a ${w.owner.apiVersion} ${w.owner.kind}, a controller this tool does not know, are evicted `
      + 'and left to it to replace');
  }
  let evicted = 0;
  for (const name of w.pods) {
    const pod = await get(r, PODS, name);
    if (!toEvict(pod)) continue;
    if (ctx.dryRun === 'client') {
      ctx.log(`would evict pod ${w.namespace}/${name} of ${label}`);
      continue;
    }
    if (await evictAndWaitGone(r, pod)) evicted++;
  }
  if (ctx.dryRun !== 'none') return { status: 'skipped', message: ctx.dryRun === 'server' ? 'dry run (server): evictions accepted' : 'dry run' };
  return { status: 'evicted', message: `${evicted} pod(s) evicted` };
}

/** A bare pod as it is created again from its backup: no server-set or node-bound fields, no Calico IP. */
export function podForRecreate(backup: KubeObject): KubeObject {
  const o = forCreate(backup);
  const annotations = Object.fromEntries(Object.entries(o.metadata?.annotations ?? {}).filter(([k]) => !k.startsWith('cni.projectcalico.org/')));
  const { nodeName, ephemeralContainers, priority, ...spec } = o.spec ?? {};
  void nodeName; void ephemeralContainers; void priority;
  const meta: KubeObject['metadata'] = { ...o.metadata };
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  else delete meta.annotations;
  return { ...o, apiVersion: 'v1', kind: 'Pod', metadata: meta, spec };
}

/** A pod without controller: back up, evict, wait until gone, create again from the backup. */
async function recreateBarePod(r: Run): Promise<Outcome> {
  const { ctx, w } = r;
  const ref = { apiVersion: 'v1', kind: 'Pod', namespace: w.namespace, name: w.name };
  let live = await get(r, PODS, w.name);
  let backup = ctx.backups.load(ref);
  if (!backup) {
    if (!live) return { status: 'skipped', message: 'pod no longer exists and has no backup' };
    backUpLate(ctx, [{ ...live, apiVersion: 'v1', kind: 'Pod' }]);
    backup = live;
  }
  const origUid = backup.metadata?.uid;
  const emptyDirs = (backup.spec?.volumes ?? []).filter((v: any) => v.emptyDir).map((v: any) => v.name);
  const lost = `its local state${emptyDirs.length ? ` (emptyDir ${emptyDirs.join(', ')})` : ''} is lost`;
  if (live && live.metadata?.uid === origUid) {
    if (ctx.dryRun === 'client') {
      ctx.log(`would evict pod ${w.namespace}/${w.name} (no controller) and create it again from its backup; ${lost}`);
      return { status: 'skipped', message: 'dry run' };
    }
    r.warn(`pod ${w.namespace}/${w.name} has no controller: it is evicted and created again from its backup with a new IP; ${lost}`);
    await evict(r, live);
    if (ctx.dryRun === 'server') return { status: 'skipped', message: 'dry run (server): eviction accepted' };
    await waitGone(r, live);
    live = await get(r, PODS, w.name);
  }
  if (ctx.dryRun === 'client') {
    ctx.log(live ? `pod ${w.namespace}/${w.name} was created again already` : `would create pod ${w.namespace}/${w.name} again from its backup`);
    return { status: 'skipped', message: 'dry run' };
  }
  if (!live) {
    live = await withRetry(() => createObject(ctx.client, PODS, podForRecreate(backup), { dryRun: ctx.dryRun === 'server' }));
    if (ctx.dryRun === 'server') return { status: 'skipped', message: 'dry run (server): re-creation accepted' };
    ctx.log(`created pod ${w.namespace}/${w.name} again from its backup`);
  }
  const uid = live.metadata?.uid;
  await until(r, `re-created pod ${w.namespace}/${w.name} to run with an IP`, async () => {
    const p = await getObject(ctx.client, PODS, w.name, w.namespace);
    if (!p || p.metadata?.uid !== uid) return { failed: 'it was deleted again' };
    return { value: p.status?.podIP && p.status?.phase === 'Running' ? true : undefined, detail: `phase ${p.status?.phase ?? '?'}` };
  });
  return { status: 'recreated' };
}

// ---- many at once --------------------------------------------------------------------------------

export interface WaveOptions {
  /** Restarts in flight at once (at least 1). */
  parallel: number;
  /**
   * Critical workloads, by "Kind/namespace/name" or "namespace/name" (e.g. "Deployment/kube-system/coredns"):
   * restarted first, in this order, and finished before any other starts.
   */
  order?: readonly string[];
  /** Told how many are done and which are in flight, whenever that changes (StepContext.progress). */
  progress?: (e: { type: 'count'; what: string; done: number; total: number } | { type: 'inflight'; what: string; names: string[] }) => void;
}

export interface WaveReport {
  results: RestartResult[];
  /** Wall-clock time of the whole run. */
  totalSeconds: number;
  /** Sum of the individual restarts' durations (what one at a time would have taken). */
  sumSeconds: number;
  /** Most restarts in flight at once. */
  maxInFlight: number;
}

/** Pure: split into the critical workloads (in `order`'s order) and the rest (in their order). */
export function orderWorkloads(workloads: readonly Workload[], order: readonly string[] = []): { critical: Workload[]; rest: Workload[] } {
  const matches = (w: Workload, key: string) => key === workloadKey(w) || key === `${w.namespace}/${w.name}`;
  const critical: Workload[] = [];
  for (const key of order) for (const w of workloads) if (!critical.includes(w) && matches(w, key)) critical.push(w);
  return { critical, rest: workloads.filter((w) => !critical.includes(w)) };
}

/**
 * Run `fn` over the workloads, `parallel` at a time, critical ones first. One failure never stops the
 * others: a throw becomes a 'failed' result. Results come in the order the workloads were started.
 */
export async function runWaves(workloads: readonly Workload[], opts: WaveOptions, fn: (w: Workload) => Promise<RestartResult>): Promise<WaveReport> {
  const t0 = Date.now();
  const parallel = Math.max(1, Math.floor(opts.parallel));
  const { critical, rest } = orderWorkloads(workloads, opts.order);
  const results: RestartResult[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let finished = 0;
  const running = new Set<string>();
  const tell = () => {
    opts.progress?.({ type: 'count', what: 'workloads restarted', done: finished, total: workloads.length });
    opts.progress?.({ type: 'inflight', what: 'rollouts', names: [...running] });
  };
  tell();
  const pool = (list: Workload[]) => mapLimit(list, parallel, async (w) => {
    const slot = results.length;
    results.push(undefined as unknown as RestartResult);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const label = describeWorkload(w);
    running.add(label);
    tell();
    const s = Date.now();
    try {
      results[slot] = await fn(w);
    } catch (e) {
      results[slot] = { workload: w, status: 'failed', seconds: (Date.now() - s) / 1000, message: errorLine(e), warnings: [], error: e };
    } finally {
      inFlight--;
      finished++;
      running.delete(label);
      tell();
    }
  });
  await pool(critical);
  await pool(rest);
  return {
    results,
    totalSeconds: (Date.now() - t0) / 1000,
    sumSeconds: results.reduce((a, r) => a + r.seconds, 0),
    maxInFlight,
  };
}

/** Errors that end the whole run (unreachable cluster, missing permission) among the results, if any. */
export function fatalError(results: readonly RestartResult[]): unknown {
  return results.find((r) => r.error instanceof UserError && (r.error.kind === 'unreachable' || r.error.kind === 'forbidden'))?.error;
}

// ---- scaling critical Deployments up for the duration ---------------------------------------------

export interface ScaleRecord {
  namespace: string;
  name: string;
  /** Replicas before scaleUp (from the backup on a resumed run). */
  original: number;
  /** Replicas now. */
  scaledTo: number;
}

/** The replicas scaleUp sets: one more, and at least 2, so one pod serves while another restarts. */
export function scaledReplicas(original: number): number {
  return Math.max(original + 1, 2);
}

async function patchReplicas(ctx: StepContext, ns: string, name: string, from: (cur: KubeObject) => number | undefined): Promise<KubeObject | undefined> {
  return retryOnConflict(`Deployment ${ns}/${name}`, async () => {
    const cur = await withRetry(() => getObject(ctx.client, DEPLOYMENTS, name, ns));
    if (!cur) return undefined;
    const want = from(cur);
    if (want === undefined || (cur.spec?.replicas ?? 1) === want) return cur;
    return withRetry(() => patchWithPrecondition(ctx.client, DEPLOYMENTS, cur, { spec: { replicas: want } }, { dryRun: ctx.dryRun === 'server' }));
  }, { attempts: 10 });
}

/**
 * Pods of `deployment` an earlier run left in the middle of a hand-over (labelled HANDOVER_LABEL, not terminating),
 * matched by its selector on their labels and the ones the hand-over stashed. While one is there the Deployment's
 * status may not look at rest (its replacement is still starting), yet its pods are being handed over: a resumed run
 * must not scale it up (the scale-down afterwards would delete a serving pod at once).
 */
export async function midHandover(client: KubeClient, deployment: KubeObject): Promise<KubeObject[]> {
  const held = await withRetry(() => listAll(client, PODS, { namespace: deployment.metadata?.namespace, labelSelector: HANDOVER_LABEL }));
  return held.filter((p) => !p.metadata?.deletionTimestamp
    && selectorMatches(deployment.spec?.selector, { ...p.metadata?.labels, ...(handoverState(p)?.removed ?? {}) }));
}

/**
 * Scale a (critical) Deployment to max(replicas + 1, 2) before its pods restart, and wait until the new
 * replicas are available. Backs it up first; the original count comes from the backup, so a resumed run
 * neither scales twice nor forgets the original. undefined when the Deployment does not exist.
 */
export async function scaleUp(ctx: StepContext, ref: { namespace: string; name: string }, opts: { timeoutMs: number; pollMs?: number }): Promise<ScaleRecord | undefined> {
  const live = await withRetry(() => getObject(ctx.client, DEPLOYMENTS, ref.name, ref.namespace));
  if (!live) return undefined;
  const bref = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: ref.namespace, name: ref.name };
  backUpLate(ctx, [{ ...live, apiVersion: 'apps/v1', kind: 'Deployment' }]);
  const original = (ctx.backups.load(bref) ?? live).spec?.replicas ?? 1;
  const target = scaledReplicas(original);
  const current = live.spec?.replicas ?? 1;
  const label = `Deployment ${ref.namespace}/${ref.name}`;
  if (current >= target) return { ...ref, original, scaledTo: current };
  if (current === original && (await handsOverLive(ctx.client, live) || (await midHandover(ctx.client, live)).length > 0)) {
    // its pods are handed over one at a time, each serving until its replacement does: no extra replica needed, and
    // none to scale away afterwards (a scale-down deletes a pod at once, lookups pinned to it by conntrack failing)
    ctx.log(`${label} serves a UDP Service: not scaled up (its pods are handed over one at a time)`);
    return { ...ref, original, scaledTo: current };
  }
  if (ctx.dryRun === 'client') {
    ctx.log(`would scale ${label} from ${original} to ${target} replicas for the restarts`);
    return { ...ref, original, scaledTo: current };
  }
  const after = await patchReplicas(ctx, ref.namespace, ref.name, (cur) => ((cur.spec?.replicas ?? 1) >= target ? undefined : target));
  if (!after) throw new Error(`${label} was deleted while scaling it up`);
  if (ctx.dryRun === 'server') return { ...ref, original, scaledTo: current };
  ctx.log(`scaled ${label} from ${original} to ${target} replicas`);
  const deadline = Date.now() + opts.timeoutMs;
  let detail = '';
  for (;;) {
    const o = await withRetry(() => getObject(ctx.client, DEPLOYMENTS, ref.name, ref.namespace));
    if (!o) throw new Error(`${label} was deleted while scaling it up`);
    const st = o.status ?? {};
    detail = `available ${st.availableReplicas ?? 0} of ${o.spec?.replicas ?? 1}`;
    if ((st.observedGeneration ?? 0) >= (o.metadata?.generation ?? 0) && (st.availableReplicas ?? 0) >= (o.spec?.replicas ?? 1)) {
      return { ...ref, original, scaledTo: o.spec?.replicas ?? target };
    }
    if (Date.now() > deadline) throw new Error(`${label}: scaled to ${target} replicas but not available after ${Math.round(opts.timeoutMs / 1000)}s (${detail})`);
    await sleep(opts.pollMs ?? 500);
  }
}

/**
 * Put back the replicas scaleUp changed. Idempotent: nothing to do when they are back already; left alone
 * (with a warning in the log) when someone else changed them since. Returns whether it wrote.
 */
export async function restoreScale(ctx: StepContext, ref: { namespace: string; name: string; original?: number }): Promise<boolean> {
  const bref = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: ref.namespace, name: ref.name };
  const original = ref.original ?? ctx.backups.load(bref)?.spec?.replicas;
  if (original === undefined) throw new Error(`no original replica count for Deployment ${ref.namespace}/${ref.name}: no backup`);
  const label = `Deployment ${ref.namespace}/${ref.name}`;
  let wrote = false;
  const after = await patchReplicas(ctx, ref.namespace, ref.name, (cur) => {
    const n = cur.spec?.replicas ?? 1;
    if (n === original) return undefined;
    if (n !== scaledReplicas(original)) {
      ctx.log(`warning: ${label} has ${n} replicas, neither its original ${original} nor the ${scaledReplicas(original)} set for the restarts: left as it is`);
      return undefined;
    }
    if (ctx.dryRun === 'client') {
      ctx.log(`would scale ${label} back to ${original} replicas`);
      return undefined;
    }
    wrote = true;
    return original;
  });
  if (wrote && after) ctx.log(`scaled ${label} back to ${original} replicas`);
  return wrote && !!after;
}
