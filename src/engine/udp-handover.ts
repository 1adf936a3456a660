/**
 * Hand-over of the pods of a Deployment that serves a UDP Service (CoreDNS above all): the restart engine
 * replaces them one at a time in a way that no lookup fails because a pod left while nodes still sent to it.
 *
 * Why: every UDP request a pod sends to a Service is a conntrack entry on its node, DNATed to one endpoint, and
 * kept alive by every later request from the same source port. When an endpoint leaves, each kube-proxy deletes
 * the entries pointing at it, but only after it synced its rules, and the deletion takes time (1.32–1.35:
 * quadratic, 29 s for 17,000 entries; 1.36+: linear, ~0.3 ms an entry). A rollout deletes the old pod at once;
 * it answers through its grace period (CoreDNS: 5 s lameduck) and lookups still pinned to it fail after that.
 *
 * The hand-over, per old pod:
 *   1. replace: its `pod-template-hash` label is taken off (stashed in an annotation) and the label
 *      HANDOVER_LABEL put on: its ReplicaSet lets go of it and starts a replacement, while the pod stays in its
 *      Services, serving; wait until the replacement is Ready and listed ready in the EndpointSlices of every
 *      UDP Service the pod serves, then SYNC_MS for kube-proxy to program it;
 *   2. release: the labels the selectors of its Services use are taken off too (stashed): it leaves every
 *      Service, still running and answering whatever conntrack still sends it;
 *   3. hold: once no EndpointSlice lists it, it stays for holdFor() (every kube-proxy's sync and conntrack
 *      clean-up, bounded from the kube-proxy version and the cluster's size: the tool cannot read the nodes'
 *      tables), then it is evicted. The next pod's step 1 starts while a pod is held.
 * Each write is journaled. The pod's labels and annotation are the state: a run killed at any point finds
 * the pods it had taken out (finishPending) and goes on from their stage; the replacement exists already, so
 * nothing is restarted twice and no pod is lost. No replica count changes: the old pod serves until its
 * replacement does, so the Deployment needs no scale-up (scaleUp leaves such Deployments alone).
 */
import { isReady } from '../cluster/readers.ts';
import type { KubeObject } from '../cluster/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { ENDPOINTSLICES, getObject, listAll, PODS, SERVICES } from '../kube/resources.ts';
import { DEPLOYMENTS, patchWithPrecondition, REPLICASETS } from '../kube/workloads.ts';
import type { StepContext } from './runner.ts';
import { evictRespectingPdb, poll, retryOnConflict, waitFor, withRetry } from './toolkit.ts';

/** Label on a pod taken out of its ReplicaSet for a hand-over (value "held"): not a workload to restart. */
export const HANDOVER_LABEL = 'kube-renumber.io/handover';
/** Annotation with the hand-over's state (JSON HandoverState). */
export const HANDOVER_ANNOTATION = 'kube-renumber.io/handover';
const HASH_LABEL = 'pod-template-hash';

/** Time kube-proxy takes to put an EndpointSlice change into its rules: its min-sync-period (1 s) and a sync. */
export const SYNC_MS = 2000;

export interface HandoverState {
  token: string;
  /** replaced: out of its ReplicaSet, still in its Services; released: out of its Services too. */
  stage: 'replaced' | 'released';
  /** The labels taken off, with their values. */
  removed: Record<string, string>;
  /** When it left its Services (ISO). */
  releasedAt?: string;
}

export function handoverState(pod: KubeObject): HandoverState | undefined {
  if (pod.metadata?.labels?.[HANDOVER_LABEL] === undefined) return undefined;
  try {
    const s = JSON.parse(pod.metadata?.annotations?.[HANDOVER_ANNOTATION] ?? '') as HandoverState;
    if (s.stage === 'replaced' || s.stage === 'released') return { ...s, removed: s.removed ?? {} };
  } catch { /* a label without a readable state: treated as released now */ }
  return { token: '', stage: 'released', removed: {} };
}

// ---- which pods are handed over -------------------------------------------------------------------------

const UDP = (p: { protocol?: string }) => (p.protocol ?? 'TCP') === 'UDP';

/** Does the Service select pods with these labels (a selector of plain labels; none or empty selects nothing here)? */
export function serviceSelects(svc: KubeObject, labels: Record<string, string> | undefined): boolean {
  const sel = svc.spec?.selector as Record<string, string> | undefined;
  if (!sel || Object.keys(sel).length === 0) return false;
  return Object.entries(sel).every(([k, v]) => labels?.[k] === v);
}

/** The Services among `services` with a UDP port that select pods with these labels. */
export function udpServicesFor(labels: Record<string, string> | undefined, services: readonly KubeObject[]): KubeObject[] {
  return services.filter((s) => (s.spec?.ports ?? []).some(UDP) && serviceSelects(s, labels));
}

/**
 * Pure: does this Deployment's restart go through the hand-over? Its pods serve a UDP Service, and it is at
 * rest (not paused, no rollout in progress: the ReplicaSet that replaces a pod is its only one).
 */
export function handsOver(deployment: KubeObject, services: readonly KubeObject[]): boolean {
  if (deployment.spec?.paused) return false;
  if (udpServicesFor(deployment.spec?.template?.metadata?.labels, services).length === 0) return false;
  const st = deployment.status ?? {};
  const want = deployment.spec?.replicas ?? 1;
  return (st.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0)
    && (st.replicas ?? 0) === want && (st.updatedReplicas ?? 0) === want;
}

/** handsOver with the Deployment's namespace's Services read live. */
export async function handsOverLive(client: KubeClient, deployment: KubeObject): Promise<boolean> {
  const services = await withRetry(() => listAll(client, SERVICES, { namespace: deployment.metadata?.namespace }));
  return handsOver(deployment, services);
}

// ---- how long an old pod stays --------------------------------------------------------------------------

export interface HoldInputs {
  /** Minor version of the oldest kubelet (kube-proxy runs the kubelet's version); undefined: unknown. */
  kubeProxyMinor?: number;
  /** Services in the cluster (a kube-proxy sync's length grows with them). */
  services: number;
}

/**
 * How long a pod stays, serving, after no EndpointSlice lists it: every kube-proxy's sync plus its deletion of the
 * conntrack entries pointing at it (the pod answers until then; after, nothing is sent to it). From the API alone:
 *   - sync: SYNC_MS, plus 1 s per 5,000 Services (a full iptables/nftables sync of a large cluster);
 *   - clean-up of the entries to one pod on a node (one pod leaves at a time, so only its share of the table):
 *       1.36+   linear, one netlink request per entry: measured 17,898 entries in 6.5 s and 7,000 in 4.6 s on a
 *               loaded 2-core machine; bound 15 s (~25,000–40,000 entries to one pod on one node);
 *       1.32–35 each entry matched against one filter per stale entry (kubernetes/kubernetes#135323): 16,926
 *               entries of two pods in 29 s; one pod's share is a quarter of that work; bound 45 s;
 *       ≤ 1.31  one conntrack filter per stale endpoint: 10 s;
 *       unknown the quadratic bound.
 */
export function holdFor(i: HoldInputs): { ms: number; why: string } {
  const sync = SYNC_MS + 1000 * Math.ceil(Math.max(0, i.services) / 5000);
  const m = i.kubeProxyMinor;
  const [clean, what] = m === undefined ? [45_000, 'kube-proxy version unknown: the quadratic clean-up\'s bound']
    : m >= 36 ? [15_000, `kube-proxy 1.${m}: linear conntrack clean-up`]
      : m >= 32 ? [45_000, `kube-proxy 1.${m}: quadratic conntrack clean-up`]
        : [10_000, `kube-proxy 1.${m}: conntrack clean-up per endpoint`];
  return { ms: sync + clean, why: `${what}, ${i.services} Services` };
}

const minorOf = (v: string | undefined) => { const m = /^v?1\.(\d+)/.exec(v ?? ''); return m ? Number(m[1]) : undefined; };

/** holdFor with its inputs read live: the oldest kubelet's version, the number of Services. */
export async function holdLive(client: KubeClient): Promise<{ ms: number; why: string }> {
  const [nodes, services] = await Promise.all([
    withRetry(() => listAll(client, { group: '', version: 'v1', plural: 'nodes', namespaced: false })),
    withRetry(() => listAll(client, SERVICES)),
  ]);
  const minors = nodes.map((n) => minorOf(n.status?.nodeInfo?.kubeletVersion)).filter((x): x is number => x !== undefined);
  // no kubelet version to go by (kwok's nodes say "fake"): the apiserver's, as inspect does (analyze/readiness.ts)
  if (minors.length === 0) {
    const v = await client.request<{ gitVersion?: string }>('GET', '/version').catch(() => undefined);
    const m = minorOf(v?.gitVersion);
    if (m !== undefined) minors.push(m);
  }
  return holdFor({ ...(minors.length > 0 ? { kubeProxyMinor: Math.min(...minors) } : {}), services: services.length });
}

// ---- the label patches (pure) ---------------------------------------------------------------------------

/** Step 1's patch: out of the ReplicaSet (pod-template-hash off), marked held. undefined: the pod has no hash label. */
export function replacePatch(pod: KubeObject, token: string): Record<string, unknown> | undefined {
  const hash = pod.metadata?.labels?.[HASH_LABEL];
  if (hash === undefined) return undefined;
  const state: HandoverState = { token, stage: 'replaced', removed: { [HASH_LABEL]: hash } };
  return { metadata: { labels: { [HASH_LABEL]: null, [HANDOVER_LABEL]: 'held' }, annotations: { [HANDOVER_ANNOTATION]: JSON.stringify(state) } } };
}

/** Step 2's patch: the labels the selectors of `services` (those selecting the pod) use taken off. */
export function releasePatch(pod: KubeObject, services: readonly KubeObject[], now: Date): Record<string, unknown> {
  const prev = handoverState(pod) ?? { token: '', stage: 'replaced' as const, removed: {} };
  const labels = pod.metadata?.labels ?? {};
  const keys = new Set(services.filter((s) => serviceSelects(s, labels)).flatMap((s) => Object.keys(s.spec?.selector ?? {})));
  const removed = { ...prev.removed };
  for (const k of keys) if (labels[k] !== undefined && k !== HANDOVER_LABEL) removed[k] = labels[k]!;
  const state: HandoverState = { ...prev, stage: 'released', removed, releasedAt: now.toISOString() };
  return {
    metadata: {
      labels: Object.fromEntries([...keys].filter((k) => k !== HANDOVER_LABEL).map((k) => [k, null])),
      annotations: { [HANDOVER_ANNOTATION]: JSON.stringify(state) },
    },
  };
}

/** Ready endpoint addresses of a Service's EndpointSlices. */
export function readyAddresses(slices: readonly KubeObject[], service: string): Set<string> {
  const out = new Set<string>();
  for (const sl of slices) {
    if (sl.metadata?.labels?.['kubernetes.io/service-name'] !== service) continue;
    for (const ep of (sl as any).endpoints ?? []) if (ep.conditions?.ready !== false) for (const a of ep.addresses ?? []) out.add(a);
  }
  return out;
}

/** Is `ip` an endpoint (ready or not) of any of these EndpointSlices? */
export function listedIn(slices: readonly KubeObject[], ip: string): boolean {
  return slices.some((sl) => ((sl as any).endpoints ?? []).some((ep: any) => (ep.addresses ?? []).includes(ip)));
}

// ---- the run --------------------------------------------------------------------------------------------

export interface HandoverOptions {
  token: string;
  /** How long each wait may take (the rollout timeout). */
  timeoutMs: number;
  /** The step journaled under (none: nothing journaled). */
  step?: string;
  /** Overrides holdLive (tests). */
  hold?: { ms: number; why: string };
  pollMs?: number;
}

export interface HandoverResult {
  status: 'restarted' | 'skipped';
  message: string;
  /** Per pod: ms it was held after leaving its Services' EndpointSlices. */
  held: Array<{ pod: string; ms: number }>;
}

const podRef = (ns: string, name: string) => `Pod/${ns}/${name}`;

function journal(ctx: StepContext, opts: HandoverOptions, ns: string, name: string, detail: string): void {
  ctx.log(`pod ${ns}/${name}: ${detail}`);
  if (ctx.dryRun === 'none') ctx.journal.append('report', { ...(opts.step ? { step: opts.step } : {}), objects: [podRef(ns, name)], detail: `handover: ${detail}` });
}

async function patchPod(ctx: StepContext, ns: string, name: string, uid: string | undefined, patch: (cur: KubeObject) => Record<string, unknown> | undefined): Promise<KubeObject | undefined> {
  return retryOnConflict(`pod ${ns}/${name}`, async () => {
    const cur = await withRetry(() => getObject(ctx.client, PODS, name, ns));
    if (!cur || cur.metadata?.uid !== uid || cur.metadata?.deletionTimestamp) return undefined;
    const p = patch(cur);
    if (!p) return cur;
    return withRetry(() => patchWithPrecondition(ctx.client, PODS, cur, p));
  }, { attempts: 10 });
}

/** IPs of the held pods of a namespace (they leave, whatever the slices still say). */
async function heldIps(client: KubeClient, ns: string): Promise<Set<string>> {
  const held = await withRetry(() => listAll(client, PODS, { namespace: ns, labelSelector: HANDOVER_LABEL }));
  return new Set(held.map((p) => p.status?.podIP).filter((x): x is string => !!x));
}

/** Per UDP Service: its ready addresses that are not held pods. */
async function serving(client: KubeClient, ns: string, services: readonly KubeObject[]): Promise<Map<string, number>> {
  const [slices, held] = await Promise.all([withRetry(() => listAll(client, ENDPOINTSLICES, { namespace: ns })), heldIps(client, ns)]);
  return new Map(services.map((s) => [s.metadata!.name!, [...readyAddresses(slices, s.metadata!.name!)].filter((a) => !held.has(a)).length]));
}

/** What a wait for a serving replacement sees, for its timeout's message: each Service's count, and the pods it selects. */
async function replacementsSeen(client: KubeClient, ns: string, services: readonly KubeObject[], counts: ReadonlyMap<string, number>): Promise<string> {
  const pods = await withRetry(() => listAll(client, PODS, { namespace: ns }));
  const parts = services.map((s) => {
    const sel = pods.filter((p) => serviceSelects(s, p.metadata?.labels)).map((p) => `${p.metadata?.name} ${p.status?.phase ?? 'no phase'}`
      + `${isReady(p) ? ' ready' : ''}${p.metadata?.deletionTimestamp ? ' terminating' : ''}${handoverState(p) ? ' held' : ''} ${p.status?.podIP ?? 'no IP'}`);
    return `${s.metadata?.name}: ${counts.get(s.metadata!.name!) ?? 0} serving; selects ${sel.length === 0 ? 'no pod' : sel.slice(0, 6).join(', ')}`;
  });
  return parts.join('; ');
}

/**
 * Steps 1 (when `pod` is not held yet) and 2 for one pod, then step 3 as a promise the caller awaits later.
 * `need` per UDP Service: the serving addresses to wait for before the pod leaves (its replacement's in).
 */
async function handOverOne(ctx: StepContext, opts: HandoverOptions, hold: { ms: number }, pod: KubeObject,
  deployment: KubeObject | undefined): Promise<{ held: Promise<{ pod: string; ms: number }> }> {
  const ns = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  const uid = pod.metadata?.uid;
  const pollOpts = { timeoutMs: opts.timeoutMs, intervalMs: opts.pollMs ?? 250, tolerateTransient: true };
  let cur: KubeObject | undefined = pod;
  let state = handoverState(pod);
  const services = await withRetry(() => listAll(ctx.client, SERVICES, { namespace: ns }));
  if (!state) {
    const udp = udpServicesFor(pod.metadata?.labels, services);
    const before = await serving(ctx.client, ns, udp);
    // journaled before each write: a run killed right after it has said what it did
    journal(ctx, opts, ns, name, `out of its ReplicaSet (${HASH_LABEL} ${pod.metadata?.labels?.[HASH_LABEL]} taken off): a replacement starts, it serves on in ${udp.map((s) => s.metadata?.name).join(', ')}`);
    cur = await patchPod(ctx, ns, name, uid, (p) => (handoverState(p) ? undefined : replacePatch(p, opts.token)));
    if (!cur) return { held: Promise.resolve({ pod: name, ms: 0 }) };
    state = handoverState(cur)!;
    await poll(`the replacement of pod ${ns}/${name} to serve`, async (note) => {
      if (deployment) {
        const d = await getObject(ctx.client, DEPLOYMENTS, deployment.metadata!.name!, ns);
        const want = d?.spec?.replicas ?? 1;
        const avail = d?.status?.availableReplicas ?? 0;
        note(`available ${avail} of ${want}`);
        if (d && avail < want) return undefined;
      }
      const now = await serving(ctx.client, ns, udp);
      note([...now].map(([s, n]) => `${s}: ${n} of ${before.get(s) ?? 0} serving`).join(', '));
      return [...now].every(([s, n]) => n >= Math.max(1, before.get(s) ?? 0)) ? true : undefined;
    }, pollOpts);
    await waitFor(`kube-proxy to program the replacement of pod ${ns}/${name}`, SYNC_MS);
  } else if (state.stage === 'replaced') {
    // resumed: the replacement was started before the run stopped; wait until every UDP Service has a serving address
    const udp = udpServicesFor(pod.metadata?.labels, services);
    await poll(`a serving replacement of pod ${ns}/${name}`, async (note) => {
      const now = await serving(ctx.client, ns, udp);
      if ([...now.values()].every((n) => n >= 1)) return true;
      note(await replacementsSeen(ctx.client, ns, udp, now));
      return undefined;
    }, pollOpts);
    await waitFor(`kube-proxy to program the replacement of pod ${ns}/${name}`, SYNC_MS);
  }
  if (state.stage === 'replaced') {
    const keys = Object.keys((releasePatch(cur, services, new Date()).metadata as { labels: object }).labels);
    journal(ctx, opts, ns, name, `out of its Services (labels ${keys.join(', ') || 'none'} taken off): it answers what nodes still send it`);
    cur = await patchPod(ctx, ns, name, uid, (p) => (handoverState(p)?.stage === 'released' ? undefined : releasePatch(p, services, new Date())));
    if (!cur) return { held: Promise.resolve({ pod: name, ms: 0 }) };
    state = handoverState(cur)!;
  }
  const ip = cur.status?.podIP as string | undefined;
  const held = (async () => {
    // step 3: gone from every EndpointSlice, then held (a resumed run counts from when it first sees the pod out of
    // them, later than it left: never shorter)
    if (ip) await poll(`pod ${ns}/${name} to leave the EndpointSlices`, async () => (listedIn(await listAll(ctx.client, ENDPOINTSLICES, { namespace: ns }), ip) ? undefined : true), pollOpts);
    const outAt = Date.now();
    await waitFor(`pod ${ns}/${name} held until every kube-proxy has dropped it`, hold.ms);
    const heldMs = Date.now() - outAt;
    const live = await withRetry(() => getObject(ctx.client, PODS, name, ns));
    if (live && live.metadata?.uid === uid && !live.metadata?.deletionTimestamp) {
      journal(ctx, opts, ns, name, `evicted ${(heldMs / 1000).toFixed(1)} s after it left its Services' EndpointSlices`);
      await evictRespectingPdb(ctx.client, live, {
        deadline: Date.now() + opts.timeoutMs,
        current: () => withRetry(() => getObject(ctx.client, PODS, name, ns)),
      });
    }
    return { pod: name, ms: heldMs };
  })();
  return { held };
}

/**
 * Hand over the pods `podNames` of Deployment `namespace/name` one at a time (steps above). undefined when the
 * Deployment does not qualify (handsOver): the caller restarts it the usual way.
 */
export async function handOverDeployment(ctx: StepContext, ref: { namespace: string; name: string; pods: readonly string[] },
  opts: HandoverOptions): Promise<HandoverResult | undefined> {
  const d = await withRetry(() => getObject(ctx.client, DEPLOYMENTS, ref.name, ref.namespace));
  if (!d || !(await handsOverLive(ctx.client, d))) return undefined;
  const label = `Deployment ${ref.namespace}/${ref.name}`;
  if (ctx.dryRun !== 'none') {
    ctx.log(`would hand over the pods of ${label} one at a time (it serves a UDP Service): each out of its ReplicaSet, then out of its Services once its replacement serves, evicted once every kube-proxy has dropped it`);
    return { status: 'skipped', message: 'dry run', held: [] };
  }
  const hold = opts.hold ?? await holdLive(ctx.client);
  ctx.log(`${label} serves a UDP Service: its pods are handed over one at a time, each held ${(hold.ms / 1000).toFixed(0)} s after it leaves its Services (${hold.why})`);
  const holds: Array<Promise<{ pod: string; ms: number }>> = [];
  const settled: Array<{ pod: string; ms: number }> = [];
  let firstError: unknown;
  for (const name of ref.pods) {
    const p = await withRetry(() => getObject(ctx.client, PODS, name, ref.namespace));
    if (!p || p.metadata?.deletionTimestamp) continue;
    const owner = (p.metadata?.ownerReferences ?? []).find((o) => o.controller);
    if (!handoverState(p)) {
      if (owner?.kind !== 'ReplicaSet') continue;
      const rs = await withRetry(() => getObject(ctx.client, REPLICASETS, owner.name!, ref.namespace));
      const rsOwner = (rs?.metadata?.ownerReferences ?? []).find((o) => o.controller);
      if (rsOwner?.uid !== d.metadata?.uid) continue;
    }
    try {
      const h = (await handOverOne(ctx, opts, hold, p, d)).held;
      holds.push(h.then((x) => { settled.push(x); return x; }, (e) => { firstError ??= e; return { pod: name, ms: -1 }; }));
    } catch (e) {
      firstError ??= e;
      break;
    }
  }
  await Promise.all(holds);
  if (firstError) throw firstError;
  const secs = settled.filter((x) => x.ms >= 0).map((x) => (x.ms / 1000).toFixed(1));
  return { status: 'restarted', message: `${settled.length} pod(s) handed over, each held ${secs.join(', ')} s after leaving its Services`, held: settled };
}

/**
 * Pods a run stopped in the middle of handing over (label HANDOVER_LABEL, not terminating): take each through the
 * rest of its hand-over. Called before any restart of a run (a resumed run meets them first).
 */
export async function finishPending(ctx: StepContext, opts: HandoverOptions): Promise<number> {
  if (ctx.dryRun !== 'none') return 0;
  const pods = (await withRetry(() => listAll(ctx.client, PODS, { labelSelector: HANDOVER_LABEL })))
    .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  if (pods.length === 0) return 0;
  const hold = opts.hold ?? await holdLive(ctx.client);
  ctx.log(`${pods.length} pod(s) left in the middle of a hand-over by an earlier run: finishing it`);
  let firstError: unknown;
  const holds: Array<Promise<unknown>> = [];
  for (const p of pods) {
    try {
      holds.push((await handOverOne(ctx, opts, hold, p, undefined)).held.catch((e) => { firstError ??= e; }));
    } catch (e) {
      firstError ??= e;
      break;
    }
  }
  await Promise.all(holds);
  if (firstError) throw firstError;
  return pods.length;
}
