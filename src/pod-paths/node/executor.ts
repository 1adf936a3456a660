/**
 * The node pod path's executor: each node of a step (one, or a wave's) cordoned, drained (budgets respected, a Job
 * an eviction would fail refused first), deleted, re-registered by the node hook, given its podCIDR in NEW,
 * uncordoned and swept of pods that got an address from outside it; and the way back for a rollback. Every part is
 * read from the cluster first, so a crash mid-wave is resumed by running again. engine.ts hands it the steps and
 * gates of the path; PodExecutor (src/engine/pod-steps.ts) is its host and runs the steps every path shares.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { isReady } from '../../cluster/readers.ts';
import { errorLine } from '../../errors.ts';
import { NODES } from '../../kube/calico.ts';
import type { KubeClient } from '../../kube/client.ts';
import { deleteObject, getObject, listAll, PODS } from '../../kube/resources.ts';
import { DEPLOYMENTS, JOBS, PODDISRUPTIONBUDGETS } from '../../kube/workloads.ts';
import { contains, formatCidr, parseCidr, tryParseCidr, type Cidr } from '../../net/index.ts';
import type { PodCIDRSpec } from '../../plan/pod-spec.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { firstAndMore } from '../../text.ts';
import { jobEvictionRefusal, jobEvictionRisk } from '../../engine/job-eviction.ts';
import { nodeMetadataRestored, restoreNodeMetadata } from '../../engine/node-metadata.ts';
import { active, cidrIn, inAny, ipsOf, isDaemonSetPod, isMirrorPod, sameList, withKind } from '../../engine/pod-paths/common.ts';
import type { PodPathHost, PodPathHosts } from '../../engine/pod-paths/types.ts';
import { describePdb, pdbsFor, resolveWorkloads, restartWorkload } from '../../engine/restarts.ts';
import { reportWarnings } from '../../engine/restart-run.ts';
import { backUpLate, type Step, type StepContext } from '../../engine/runner.ts';
import { evictRespectingPdb, mapLimit, Pacer, poll, sleep, withRetry } from '../../engine/toolkit.ts';
import { runHook } from './hook.ts';

/** What the node path's executor uses of PodExecutor (src/engine/pod-steps.ts): PodPathHosts offers it. */
export interface NodePathHost extends PodPathHost, Pick<PodPathHosts, 'opts' | 'missingBarePods' | 'recreateMissing' | 'warn'> {}

/** A node of a node step: its name, its podCIDRs today and in NEW. */
type NodeItem = { name: string; from: string[]; to: string[] };

/**
 * Ends a phase of one node's move: the time since the previous mark counts for `phase` (the wave's node report);
 * `count` adds to a tally of the same report (pods the podCIDR sweep removed).
 */
type Mark = ((phase: string) => void) & { count?: (what: string, n: number) => void };
const noMark: Mark = () => {};

/** One listing of every Node, shared by the drains of a step, and whether it found a moved node ready. */
interface CordonAll { /** when the listing ended */ at: number; done: boolean; anyNew: boolean; cordoned: Set<string>; p: Promise<boolean> }

/**
 * Which way nodes move: forward (the migration: from the old range to NEW, podCIDRs `to`) or back (rollback:
 * from NEW to the old range, podCIDRs `from`, the ones each node had). Drain, re-registration and podCIDR are the
 * same moves either way.
 */
interface NodeDirection {
  /** The ranges the nodes leave: a pod with an address in them must go. */
  readonly leaves: readonly Cidr[];
  /** Must this node still move (it has a podCIDR in the ranges it leaves)? */
  leaving(n: KubeObject | undefined): boolean;
  /** The podCIDRs the node gets. */
  dest(it: NodeItem): string[];
  /** Why podCIDRs are not right where the node goes; undefined when they are. */
  problem(cidrs: readonly string[]): string | undefined;
  /** The ranges the nodes leave, in words. */
  leavesText: string;
  /** What the podCIDRs of a node that registered in the range it leaves say about kube-controller-manager. */
  allocating: string;
}

export class NodeExecutor {
  readonly spec: PodCIDRSpec;
  readonly old: Cidr[];
  readonly target: Cidr[];
  readonly opts: NodePathHost['opts'];
  private readonly host: NodePathHost;
  /** Turns for node drains, one per --node-interval, for the whole run (every wave, and a rollback's). */
  private readonly drains: Pacer;
  /** Per step: the listing of every Node that cordoned the ones still to move (cordonForDrain). */
  private readonly cordonedLeaving = new Map<string, CordonAll>();
  /** The migration's way: old range to NEW. */
  private readonly forward: NodeDirection;
  /** The rollback's way: NEW back to the old range, each node to the podCIDRs it had. */
  private readonly back: NodeDirection;

  constructor(host: NodePathHost) {
    this.host = host;
    this.spec = host.spec;
    this.old = host.old;
    this.target = host.target;
    this.opts = {
      token: host.opts.token,
      timeoutMs: host.opts.timeoutMs,
      rolloutTimeoutMs: host.opts.rolloutTimeoutMs,
      hookEnv: host.opts.hookEnv,
      hookAllowed: host.opts.hookAllowed,
      nodeIntervalMs: host.opts.nodeIntervalMs,
    };
    this.forward = {
      leaves: this.old, leaving: (n) => this.nodeOld(n), dest: (it) => it.to, problem: (c) => this.podCIDRProblem(c),
      leavesText: 'the old range', allocating: 'kube-controller-manager still allocates from it (gate kcm-stop-allocating)',
    };
    this.back = {
      leaves: this.target, leaving: (n) => nodeCIDRs(n).some((c) => cidrIn(this.target, c)), dest: (it) => it.from,
      problem: (c) => cidrsProblem(c, this.old, this.spec.from),
      leavesText: `NEW (${this.spec.to.join(',')})`, allocating: 'kube-controller-manager allocates from NEW: restart it with --allocate-node-cidrs=false, then roll back again',
    };
    this.drains = new Pacer(this.opts.nodeIntervalMs);
  }

  private until(what: string, cond: () => Promise<boolean>): Promise<string | undefined> {
    return this.host.until(what, cond);
  }

  private missingBarePods(ctx: StepContext): Promise<KubeObject[]> {
    return this.host.missingBarePods(ctx);
  }

  private recreateMissing(ctx: StepContext): Promise<void> {
    return this.host.recreateMissing(ctx);
  }

  private warn(ctx: StepContext, msg: string): void {
    this.host.warn(ctx, msg);
  }

  /** Whether every node a step names (one, or a wave's) is registered again (gate node-reregistered). */
  allRegistered(client: KubeClient, p: PlanStep): Promise<boolean> {
    return this.allNodes(this.nodeItems(p), (it) => this.registered(client, it.name));
  }


  /** The nodes a node step works on: one (a plan written before waves, or a wave of one), or a wave's. */
  private nodeItems(p: PlanStep): NodeItem[] {
    const items = p.items ?? [];
    if (items.length === 0) throw new Error(`plan step ${p.id} names no node`);
    return items.map((it) => ({ name: it.name, from: it.from, to: it.to }));
  }

  private nodeOld(n: KubeObject | undefined): boolean {
    const cidrs: string[] = n?.spec?.podCIDRs ?? (n?.spec?.podCIDR ? [n.spec.podCIDR] : []);
    return cidrs.some((c) => cidrIn(this.old, c));
  }

  private podsOnNode(client: KubeClient, node: string): Promise<KubeObject[]> {
    return withRetry(() => listAll(client, PODS, { fieldSelector: `spec.nodeName=${node}` }));
  }

  /**
   * Evict one pod, waiting while a PodDisruptionBudget forbids it (naming the budget). When the budget has
   * blocked it for `fallbackAfterMs` and `fallback` is given, `fallback` is tried once (a rollout that
   * surges a replacement elsewhere before the pod goes: no budget is broken); either way, wait until the pod is gone.
   */
  async evictWaiting(ctx: StepContext, pod: KubeObject, fallback?: () => Promise<boolean>, fallbackAfterMs = 10_000): Promise<void> {
    const ns = pod.metadata!.namespace!;
    const name = pod.metadata!.name!;
    let lastBlock = '';
    let fellBack = false;
    const result = await evictRespectingPdb(ctx.client, pod, {
      dryRun: ctx.dryRun === 'server',
      deadline: Date.now() + this.opts.rolloutTimeoutMs,
      // A wave's evictions use its budgets whole: a refused one is allowed again as soon as a replacement is Ready
      // (about a second on the testbed), so it is tried again at most 1 s apart, not 5 s (a wave waits for its slowest node).
      maxDelayMs: 1000,
      budgets: async () => pdbsFor(pod, await withRetry(() => listAll(ctx.client, PODDISRUPTIONBUDGETS, { namespace: ns }))),
      describeBudget: describePdb,
      current: () => withRetry(() => getObject(ctx.client, PODS, name, ns)),
      onRefused: async (why, elapsedMs, byBudget) => {
        if (why !== lastBlock) { ctx.log(`eviction of ${ns}/${name} ${why}: waiting`); lastBlock = why; }
        if (!byBudget || !fallback || fellBack || elapsedMs < fallbackAfterMs) return false;
        fellBack = true;
        return fallback();
      },
    });
    if (result === 'gone' || ctx.dryRun !== 'none') return;
    await poll(`pod ${ns}/${name} to be gone`, async () => {
      const cur = await getObject(ctx.client, PODS, name, ns);
      return !cur || cur.metadata?.uid !== pod.metadata?.uid ? true : undefined;
    }, { timeoutMs: this.opts.rolloutTimeoutMs, intervalMs: 250, tolerateTransient: true });
  }

  /** Evict every pod on the node but DaemonSet and mirror pods; bare pods are created again elsewhere from their backup. */
  /** The pods a drain of `node` evicts or creates again: not DaemonSets', not mirror pods, not finished or going. */
  private async drainable(ctx: StepContext, node: string): Promise<KubeObject[]> {
    return (await this.podsOnNode(ctx.client, node)).filter((x) => !isDaemonSetPod(x) && !isMirrorPod(x)
      && x.status?.phase !== 'Succeeded' && x.status?.phase !== 'Failed' && !x.metadata?.deletionTimestamp);
  }

  /**
   * A Job counts an evicted pod as failed (./job-eviction.ts): throws, before anything is evicted, when evicting
   * these pods would fail the Job they belong to. `where` says which node(s) for the message.
   */
  private async refuseFailingJobs(ctx: StepContext, pods: readonly KubeObject[], where: string): Promise<void> {
    const jobs = new Map<string, { namespace: string; name: string; pods: KubeObject[] }>();
    for (const x of pods) {
      const o = (x.metadata?.ownerReferences ?? []).find((r) => r.controller);
      if (o?.kind !== 'Job' || !o.name || !o.apiVersion?.startsWith('batch/')) continue;
      const key = `${x.metadata!.namespace}/${o.name}`;
      const j = jobs.get(key) ?? { namespace: x.metadata!.namespace!, name: o.name, pods: [] };
      j.pods.push(x);
      jobs.set(key, j);
    }
    for (const j of jobs.values()) {
      const job = await withRetry(() => getObject(ctx.client, JOBS, j.name, j.namespace));
      const risk = jobEvictionRisk(job, j.pods);
      if (risk) throw new Error(jobEvictionRefusal(job!, risk, where));
    }
  }

  private async drainPods(ctx: StepContext, node: string): Promise<void> {
    const pods = await this.drainable(ctx, node);
    const bare = pods.filter((x) => !(x.metadata?.ownerReferences ?? []).some((r) => r.controller));
    const owned = pods.filter((x) => !bare.includes(x));
    // A Deployment whose budget allows no disruption now (one replica, minAvailable 1) can still move: a
    // rollout surges the new pod onto a schedulable node before the old one goes.
    const rollout = (x: KubeObject) => async (): Promise<boolean> => {
      // only for a budget that can never allow an eviction (all healthy and still none allowed), not a passing block
      const pdbs = pdbsFor(x, await withRetry(() => listAll(ctx.client, PODDISRUPTIONBUDGETS, { namespace: x.metadata!.namespace! })));
      if (pdbs.length === 0 || pdbs.some((b) => (b.status?.expectedPods ?? 0) > (b.status?.desiredHealthy ?? 0))) return false;
      const g = await resolveWorkloads(ctx.client, [x]);
      const w = g.workloads.find((y) => y.kind === 'Deployment');
      if (!w) return false;
      const dep = await getObject(ctx.client, DEPLOYMENTS, w.name, w.namespace);
      const surge = dep?.spec?.strategy?.rollingUpdate?.maxSurge;
      if (dep?.spec?.strategy?.type === 'Recreate' || surge === 0 || surge === '0%') return false;
      this.warn(ctx, `pod ${x.metadata?.namespace}/${x.metadata?.name}: its PodDisruptionBudget allows no eviction now; restarting Deployment ${w.namespace}/${w.name} instead (its rollout surges a replacement first)`);
      const r = await restartWorkload(ctx, w, { token: `${this.opts.token}-${node}`, timeoutMs: this.opts.rolloutTimeoutMs });
      reportWarnings(ctx, [r]);
      return r.status === 'restarted';
    };
    // nothing of this node is evicted where that would fail a Job
    await this.refuseFailingJobs(ctx, owned, `on node ${node}`);
    await mapLimit(owned, 8, (x) => this.evictWaiting(ctx, x, rollout(x)));
    for (const x of bare) {
      // A copy this run created from the backup (an earlier move's, or a crashed run's) moves off this node too:
      // evicted here, then created again from the backup. (restartWorkload leaves a pod whose uid is not the
      // backup's where it is; on a node being deleted it would go with the node's leftovers.)
      const b = ctx.backups.load({ apiVersion: 'v1', kind: 'Pod', namespace: x.metadata!.namespace!, name: x.metadata!.name! });
      if (b && b.metadata?.uid !== x.metadata?.uid) await this.evictWaiting(ctx, x);
      const r = await restartWorkload(ctx, { kind: 'Pod', namespace: x.metadata!.namespace!, name: x.metadata!.name!, pods: [x.metadata!.name!] },
        { token: this.opts.token, timeoutMs: this.opts.rolloutTimeoutMs });
      reportWarnings(ctx, [r]);
      if (r.status !== 'failed' && r.status !== 'stuck') continue;
      // In a wave, the pod created again may land on another node of the wave before that node has its podCIDR,
      // whose move then creates it again in turn: it exists, elsewhere, and that move waits for it.
      const now = await withRetry(() => getObject(ctx.client, PODS, x.metadata!.name!, x.metadata!.namespace));
      if (now && now.metadata?.uid !== x.metadata?.uid && now.spec?.nodeName !== node && !now.metadata?.deletionTimestamp) {
        this.warn(ctx, `pod ${x.metadata?.namespace}/${x.metadata?.name}: created again once more by another node's move (${r.message ?? r.status}); it runs on ${now.spec?.nodeName ?? 'no node yet'}`);
        continue;
      }
      throw (r.error ?? new Error(`pod ${x.metadata?.namespace}/${x.metadata?.name}: ${r.status} ${r.message ?? ''}`));
    }
  }

  /** Merge-patch a Node's spec without a resourceVersion precondition (kubelets update nodes all the time, as kubectl cordon does). */
  private async patchNode(ctx: StepContext, name: string, spec: Record<string, unknown>): Promise<void> {
    await withRetry(() => ctx.client.request('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, {
      body: { spec }, contentType: 'application/merge-patch+json',
      query: { dryRun: ctx.dryRun === 'server' ? 'All' : undefined, fieldManager: 'kube-renumber' },
    }));
  }

  private async cordon(ctx: StepContext, n: KubeObject): Promise<void> {
    if (n.spec?.unschedulable === true) return;
    backUpLate(ctx, [withKind(n, NODES)]);
    await this.patchNode(ctx, n.metadata!.name!, { unschedulable: true });
  }

  private async nodeDone(client: KubeClient, name: string, dir: NodeDirection = this.forward): Promise<boolean> {
    const n = await getObject(client, NODES, name);
    if (n && dir.leaving(n)) return false;
    const left = (await this.podsOnNode(client, name)).filter((x) => active(x) && ipsOf(x).some((a) => inAny(dir.leaves, a)) && !isMirrorPod(x));
    return left.length === 0;
  }

  /**
   * Cordon `n` (a node still to move), then, once a node that moved can take pods, every node still to move (the
   * old range's, or NEW's on the way back).
   */
  private async cordonForDrain(ctx: StepContext, n: KubeObject, step: string, dir: NodeDirection = this.forward): Promise<void> {
    backUpLate(ctx, [withKind(n, NODES)], step);
    // One listing of every node serves all the drains of a step that start together (a wave): at 1,000 nodes, a
    // wave of 100 each listing every Node read ~400 MB from the apiserver. Reused while under 30 s old, and only
    // once it found a moved node ready (until then each drain looks again).
    let e = this.cordonedLeaving.get(step);
    if (!e || (e.done && (!e.anyNew || Date.now() - e.at > 30_000))) {
      const entry: CordonAll = { at: 0, done: false, anyNew: false, cordoned: new Set(), p: Promise.resolve(false) };
      entry.p = (async () => {
        const nodes = await withRetry(() => listAll(ctx.client, NODES));
        const anyNew = nodes.some((x) => !dir.leaving(x) && (x.spec?.podCIDRs ?? []).length > 0 && isReady(x) && x.spec?.unschedulable !== true);
        // Once a node that moved can take pods, cordon every node still to move so evicted pods land only where they go.
        if (anyNew) {
          await mapLimit(nodes.filter((y) => dir.leaving(y)), 8, async (x) => {
            await this.cordon(ctx, withKind(x, NODES));
            entry.cordoned.add(x.metadata!.name!);
          });
        }
        return anyNew;
      })().then((anyNew) => { entry.anyNew = anyNew; entry.at = Date.now(); return anyNew; }, (err) => { this.cordonedLeaving.delete(step); throw err; })
        .finally(() => { entry.done = true; });
      this.cordonedLeaving.set(step, entry);
      e = entry;
    }
    await e.p;
    // this node, unless the listing cordoned it (it registered after the listing, or no moved node was ready)
    if (!e.cordoned.has(n.metadata!.name!)) await this.cordon(ctx, withKind(n, NODES));
  }

  /** One node's drain: cordoned, its pods evicted (budgets respected), the Node deleted, what is left on it deleted. */
  private async drainOne(ctx: StepContext, it: NodeItem, step: string, dir: NodeDirection = this.forward, mark: Mark = noMark): Promise<void> {
    const n = await getObject(ctx.client, NODES, it.name);
    if (n && dir.leaving(n)) {
      await this.cordonForDrain(ctx, n, step, dir);
      mark('cordon');
      if (ctx.dryRun === 'client') return;
      if (ctx.dryRun === 'none') { await this.drains.turn(); mark('pace'); }
      await this.drainPods(ctx, it.name);
      mark('evict');
      if (ctx.dryRun === 'server') return;
      const cur = await getObject(ctx.client, NODES, it.name);
      if (cur && dir.leaving(cur)) await withRetry(() => deleteObject(ctx.client, NODES, it.name, undefined, { uid: cur.metadata?.uid }));
      await poll(`Node ${it.name} to be deleted`, async () => {
        const x = await getObject(ctx.client, NODES, it.name);
        return !x || !dir.leaving(x) ? true : undefined;
      }, { timeoutMs: this.opts.timeoutMs });
      mark('delete');
    }
    if (ctx.dryRun !== 'none') return;
    // What is left on the deleted node (DaemonSet pods, stragglers): delete it, as the pod garbage collector would.
    const left = (await this.podsOnNode(ctx.client, it.name)).filter((x) => ipsOf(x).some((a) => inAny(dir.leaves, a)) || !ipsOf(x).length);
    const node = await getObject(ctx.client, NODES, it.name);
    for (const x of left) {
      if (node && !dir.leaving(node) && !ipsOf(x).some((a) => inAny(dir.leaves, a))) continue;
      if (!(x.metadata?.ownerReferences ?? []).some((r) => r.controller)) backUpLate(ctx, [withKind(x, PODS)], step);
      await this.removePod(ctx, x);
    }
    mark('leftovers');
  }

  /** Every node in the old range and the step's nodes, to back up before a drain. */
  private async drainBackup(ctx: StepContext, items: readonly NodeItem[]): Promise<KubeObject[]> {
    const names = new Set(items.map((x) => x.name));
    return (await withRetry(() => listAll(ctx.client, NODES))).filter((x) => this.nodeOld(x) || names.has(x.metadata!.name!)).map((x) => withKind(x, NODES));
  }

  /** Are all of `items` true of `cond`? (Read concurrently: a wave of 100 nodes is read in one round trip's time.) */
  private async allNodes(items: readonly NodeItem[], cond: (it: NodeItem) => Promise<boolean>): Promise<boolean> {
    return (await mapLimit(items, 16, cond)).every(Boolean);
  }

  /**
   * Runs `move` for every node of a wave at once. A node that fails does not stop the others: each finishes its
   * move, so the wave ends at a clean point — every node moved, or still in the old range and uncordoned again
   * (its evicted pods run elsewhere) — and only then does the step fail, naming the nodes. A wave's nodes are
   * cordoned before any is drained, so a pod evicted from one never lands on another. Each node's outcome is
   * journaled (event report).
   */
  private async wave(ctx: StepContext, step: string, items: readonly NodeItem[], move: (it: NodeItem, mark: Mark) => Promise<void>, cordonFirst: boolean,
    dir: NodeDirection = this.forward): Promise<void> {
    if (items.length === 1) { await move(items[0]!, noMark); return; }
    if (cordonFirst) {
      // the wave's nodes still to leave their range, read once for both what follows
      const leaving = (await mapLimit(items, 16, (it) => withRetry(() => getObject(ctx.client, NODES, it.name))))
        .filter((n): n is KubeObject => !!n && dir.leaving(n));
      // the wave's nodes are drained at once: a Job with pods on several of them is judged on all of them together,
      // before any node of the wave is touched (each node's drain judges its own again)
      const pods = (await mapLimit(leaving, 16, (n) => this.drainable(ctx, n.metadata!.name!))).flat();
      await this.refuseFailingJobs(ctx, pods, `on nodes ${items.map((it) => it.name).join(', ')} (one wave)`);
      if (ctx.dryRun !== 'client') {
        // the wave's nodes cordoned together (16 at a time), before any of them is drained
        await mapLimit(leaving, 16, async (n) => { backUpLate(ctx, [withKind(n, NODES)], step); await this.cordon(ctx, withKind(n, NODES)); });
      }
    }
    const t0 = Date.now();
    const outcomes = await Promise.all(items.map(async (it) => {
      // seconds per phase of this node's move (drain, hook, podCIDR, ...), for the report: where a wave's time goes
      const phases: Record<string, number> = {};
      let last = t0;
      const counts: Record<string, number> = {};
      const mark: Mark = (phase) => { const t = Date.now(); phases[phase] = (phases[phase] ?? 0) + (t - last) / 1000; last = t; };
      mark.count = (what, n) => { counts[what] = (counts[what] ?? 0) + n; };
      try {
        await move(it, mark);
        return { it, error: undefined as string | undefined, seconds: (Date.now() - t0) / 1000, phases, counts };
      } catch (e) {
        return { it, error: errorLine(e), seconds: (Date.now() - t0) / 1000, phases, counts };
      }
    }));
    const failed = outcomes.filter((o) => o.error !== undefined);
    const uncordoned: string[] = [];
    if (ctx.dryRun === 'none') {
      for (const o of failed) {
        const n = await withRetry(() => getObject(ctx.client, NODES, o.it.name));
        const before = ctx.backups.load({ apiVersion: 'v1', kind: 'Node', name: o.it.name });
        if (n && dir.leaving(n) && n.spec?.unschedulable === true && before?.spec?.unschedulable !== true) {
          await this.patchNode(ctx, o.it.name, { unschedulable: false });
          uncordoned.push(o.it.name);
        }
      }
      for (const o of outcomes) {
        const phases = Object.fromEntries(Object.entries(o.phases).map(([k, v]) => [k, Math.round(v * 100) / 100]));
        ctx.journal.append('report', { step, detail: JSON.stringify({ node: { name: o.it.name, status: o.error === undefined ? 'done' : 'failed', seconds: Math.round(o.seconds * 10) / 10, ...(Object.keys(phases).length > 0 ? { phases } : {}), ...(Object.keys(o.counts).length > 0 ? { counts: o.counts } : {}), ...(o.error ? { error: o.error, uncordoned: uncordoned.includes(o.it.name) } : {}) } }) });
      }
    }
    if (failed.length > 0) {
      throw new Error(`${failed.length} of ${items.length} node(s) of the wave failed (${firstAndMore(failed.map((o) => `${o.it.name}: ${o.error}`), 5, '; ')}); `
        + `the others finished${uncordoned.length > 0 ? `; uncordoned again: ${uncordoned.join(', ')}` : ''}. Fix the cause, then kube-renumber resume`);
    }
  }

  drainNodeStep(p: PlanStep): Step {
    const items = this.nodeItems(p);
    const names = items.map((x) => x.name).join(', ');
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.allNodes(items, (it) => this.nodeDone(ctx.client, it.name))) && (await this.missingBarePods(ctx)).length === 0,
      // every node in the old range (apply cordons them once a node in NEW takes pods) and this step's nodes
      backup: (ctx) => this.drainBackup(ctx, items),
      apply: async (ctx) => {
        if (ctx.dryRun === 'none') await this.recreateMissing(ctx);
        await this.wave(ctx, p.id, items, (it) => this.drainOne(ctx, it, p.id), true);
      },
      verify: (ctx) => this.until(`node(s) ${names} drained and deleted`, () => this.allNodes(items, (it) => this.nodeDone(ctx.client, it.name))),
      rollback: (ctx) => this.rollBackNodes(ctx, p.id, items),
      rollbackPartial: true,
    };
  }

  /**
   * A wave with a hook (kind move-nodes): each node drained, re-registered by the hook and given its podCIDR,
   * every node of the wave at once. Each part is skipped when the cluster shows it done, so a resume after a
   * crash mid-wave finishes each node from where it was.
   */
  moveNodesStep(p: PlanStep): Step {
    const items = this.nodeItems(p);
    const hook = this.spec.node?.hook;
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.allNodes(items, async (it) => (await this.assigned(ctx.client, it)) === undefined && (await nodeMetadataRestored(ctx, it.name)))) && (await this.missingBarePods(ctx)).length === 0,
      backup: (ctx) => this.drainBackup(ctx, items),
      apply: async (ctx) => {
        if (!hook) throw new Error('the plan has no node hook');
        if (ctx.dryRun === 'none') await this.recreateMissing(ctx);
        await this.wave(ctx, p.id, items, async (it, mark) => {
          if (ctx.dryRun === 'none' && (await this.assigned(ctx.client, it)) === undefined) { await restoreNodeMetadata(ctx, it.name); return; }
          mark('check');
          if (!(await this.nodeDone(ctx.client, it.name))) await this.drainOne(ctx, it, p.id, this.forward, mark);
          if (ctx.dryRun !== 'none') { ctx.log(`would run: ${hook} (KUBE_RENUMBER_NODE=${it.name}) and give it podCIDR ${it.to.join(',')}`); return; }
          if (!(await this.registered(ctx.client, it.name))) await this.hookOne(ctx, it, this.forward, mark);
          await this.assignOne(ctx, it, this.forward, mark);
        }, true);
        // a bare pod deleted with a node's leftovers (or by a crash between its delete and its create) is created
        // again now that the wave's nodes have their podCIDRs: the last wave has no next step to do it
        if (ctx.dryRun === 'none') await this.recreateMissing(ctx);
      },
      verify: (ctx) => this.assignedAll(ctx, items),
      rollback: (ctx) => this.rollBackNodes(ctx, p.id, items),
      rollbackPartial: true,
    };
  }

  /**
   * Rollback of a node step: every node of `items` with a podCIDR in NEW moves back the way it came, as a wave
   * (drained, deleted, re-registered by the node hook, given the podCIDRs it had: the plan's `from`), each part
   * read from the cluster first, so a rollback killed mid-wave is finished by running it again. Nodes in the old
   * range the run cordoned are uncordoned first: evicted pods go back to them. Without a hook, nodes that are back
   * (re-registered by hand, podCIDRs in the old range) are enough; others are named. kube-controller-manager must
   * not allocate podCIDRs meanwhile (a node registering would get one from its --cluster-cidr).
   */
  private async rollBackNodes(ctx: StepContext, step: string, items: readonly NodeItem[]): Promise<void> {
    const hook = this.spec.node?.hook;
    const notBack = async () => (await mapLimit(items, 16, async (it) => ((await this.assigned(ctx.client, it, this.back)) === undefined ? undefined : it.name))).filter((x) => x !== undefined);
    if (!hook) {
      const left = await notBack();
      if (left.length > 0) throw new Error(`node(s) ${left.join(', ')} are not back in ${this.spec.from.join(',')}: without a node hook, delete each, re-register it (restart its kubelet) and patch spec.podCIDRs to the plan's "from" while kube-controller-manager does not allocate, then roll back again`);
      return;
    }
    if (ctx.dryRun !== 'none') { for (const it of items) ctx.log(`would move node ${it.name} back to podCIDR ${it.from.join(',')}`); return; }
    if (!this.opts.hookAllowed) {
      const left = await notBack();
      if (left.length === 0) return;
      throw new Error(`moving node(s) ${left.join(', ')} back runs the plan's node hook through /bin/sh: ${JSON.stringify(hook)}; review it, then roll back with --allow-hook`);
    }
    await this.uncordonMovedBack(ctx);
    await this.wave(ctx, step, items, async (it, mark) => {
      if ((await this.assigned(ctx.client, it, this.back)) === undefined) { await restoreNodeMetadata(ctx, it.name); return; }
      mark('check');
      if (!(await this.nodeDone(ctx.client, it.name, this.back))) await this.drainOne(ctx, it, step, this.back, mark);
      if (!(await this.registered(ctx.client, it.name, this.back))) await this.hookOne(ctx, it, this.back, mark);
      await this.assignOne(ctx, it, this.back, mark);
    }, true, this.back);
    await this.recreateMissing(ctx);
    const why = await this.assignedAll(ctx, items, this.back);
    if (why) throw new Error(why);
    await this.uncordonMovedBack(ctx);
  }

  /** Uncordon every Ready node in the old range that this run cordoned (its backup is schedulable). */
  private async uncordonMovedBack(ctx: StepContext): Promise<void> {
    for (const n of await withRetry(() => listAll(ctx.client, NODES))) {
      if (n.spec?.unschedulable !== true || !isReady(n) || this.back.leaving(n) || nodeCIDRs(n).length === 0) continue;
      const before = ctx.backups.load({ apiVersion: 'v1', kind: 'Node', name: n.metadata!.name! });
      if (before && before.spec?.unschedulable !== true) await this.patchNode(ctx, n.metadata!.name!, { unschedulable: false });
    }
  }

  async registered(client: KubeClient, name: string, dir: NodeDirection = this.forward): Promise<boolean> {
    const n = await getObject(client, NODES, name);
    return !!n && !dir.leaving(n);
  }

  /** Run the node hook for one node and wait until it is registered again. */
  private async hookOne(ctx: StepContext, it: NodeItem, dir: NodeDirection = this.forward, mark: Mark = noMark): Promise<void> {
    const hook = this.spec.node?.hook;
    if (!hook) throw new Error('the plan has no node hook');
    // A hook returns once the node is Ready, as a kubelet's start does; the node takes pods from the moment it
    // registers, and a pod bound to it before its podCIDR gets no address from it (the sweep removes it later,
    // and its owner creates it again). So the podCIDR is given as soon as the node registers, while the hook runs.
    let ended = false;
    const early = ctx.dryRun === 'none' ? this.assignOnRegister(ctx, it, dir, () => ended) : Promise.resolve();
    try {
      // the hook makes its own requests (a kubelet registering): it runs in a task slot of the run's window, so a
      // wave of 100 nodes does not start 100 hooks at once against an apiserver that is already slow
      const run = () => runHook(hook, it.name, this.opts.rolloutTimeoutMs, ctx.log, this.opts.hookEnv);
      await (ctx.client.limiter ? ctx.client.limiter.task(run) : run());
    } finally {
      ended = true;
    }
    await early;
    mark('hook');
    const why = await this.until(`node ${it.name} to register again`, () => this.registered(ctx.client, it.name, dir));
    mark('register');
    if (why) throw new Error(why);
  }

  reregisterStep(p: PlanStep): Step {
    const items = this.nodeItems(p);
    const hook = this.spec.node?.hook;
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => this.allNodes(items, (it) => this.registered(ctx.client, it.name)),
      apply: async (ctx) => {
        if (!hook) throw new Error('the plan has no node hook');
        if (ctx.dryRun !== 'none') { for (const it of items) ctx.log(`would run: ${hook} (KUBE_RENUMBER_NODE=${it.name})`); return; }
        await this.wave(ctx, p.id, items, async (it) => { if (!(await this.registered(ctx.client, it.name))) await this.hookOne(ctx, it); }, false);
      },
      verify: (ctx) => this.until(`node(s) ${items.map((x) => x.name).join(', ')} to register again`, () => this.allNodes(items, (it) => this.registered(ctx.client, it.name))),
      rollback: (ctx) => this.rollBackNodes(ctx, p.id, items),
      rollbackPartial: true,
    };
  }

  private async assigned(client: KubeClient, it: NodeItem, dir: NodeDirection = this.forward): Promise<string | undefined> {
    const n = await getObject(client, NODES, it.name);
    if (!n) return `node ${it.name} is not registered`;
    const cidrs: string[] = n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []);
    if (cidrs.length === 0) return `node ${it.name} has no podCIDR`;
    const off = dir.problem(cidrs);
    if (off) return `node ${it.name} ${off}`;
    if (!isReady(n)) return `node ${it.name} is not Ready`;
    // assignOne uncordons a node that registered cordoned: one that has its podCIDR but is still cordoned (a run
    // killed between the two) is not done, or a resume would skip it and leave it cordoned. (On the way back, the
    // rollback's last uncordon covers it.)
    if (dir === this.forward && n.spec?.unschedulable === true) return `node ${it.name} is cordoned`;
    const mine = cidrs.map((c) => parseCidr(c));
    const stray = (await this.podsOnNode(client, it.name)).filter((x) => active(x) && ipsOf(x).length > 0 && !ipsOf(x).every((a) => inAny(mine, a)));
    if (stray.length > 0) return `${stray.length} pod(s) on node ${it.name} have addresses outside its podCIDR`;
    return undefined;
  }

  /**
   * Why a node's podCIDRs are not in NEW: each must lie inside NEW's range of its family, and there must be one
   * for every family of NEW (a dual-stack NEW needs a dual-stack node). Undefined when they are.
   */
  podCIDRProblem(cidrs: readonly string[]): string | undefined {
    return cidrsProblem(cidrs, this.target, this.spec.to);
  }

  /** One node's podCIDR in NEW (unless it got one elsewhere), uncordoned, Ready, its pods that predate the podCIDR recreated. */
  private async assignOne(ctx: StepContext, it: NodeItem, dir: NodeDirection = this.forward, mark: Mark = noMark): Promise<void> {
    const n = await poll(`node ${it.name} to be registered`, async () => (await getObject(ctx.client, NODES, it.name)) ?? undefined, { timeoutMs: this.opts.timeoutMs });
    const cidrs: string[] = n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []);
    const dest = dir.dest(it);
    if (cidrs.length === 0) {
      await this.patchNode(ctx, it.name, { podCIDR: dest[0], podCIDRs: dest });
    } else if (cidrs.some((c) => cidrIn(dir.leaves, c))) {
      throw new Error(`node ${it.name} registered with podCIDR ${cidrs.join(',')} in ${dir.leavesText}: ${dir.allocating}`);
    } else if (dir.problem(cidrs)) {
      // spec.podCIDRs is set once: a node that registered with fewer families than NEW cannot be given the rest
      throw new Error(`node ${it.name} registered with podCIDR ${cidrs.join(',')}, not the planned ${dest.join(',')}: ${dir.problem(cidrs)}; podCIDRs cannot be changed once set; delete the node and re-register it while nothing else assigns podCIDRs`);
    } else if (!sameList(cidrs, dest)) {
      this.warn(ctx, `node ${it.name} got podCIDR ${cidrs.join(',')} from elsewhere, not the planned ${dest.join(',')}: kept`);
    }
    mark('podcidr');
    if (ctx.dryRun !== 'none') return;
    const ready = await getObject(ctx.client, NODES, it.name);
    if (ready?.spec?.unschedulable === true) await this.patchNode(ctx, it.name, { unschedulable: false });
    await poll(`node ${it.name} to be Ready`, async () => {
      const x = await getObject(ctx.client, NODES, it.name);
      return isReady(x) ? true : undefined;
    }, { timeoutMs: this.opts.timeoutMs });
    mark('ready');
    await restoreNodeMetadata(ctx, it.name);
    mark('metadata');
    // Pods that started on the node before it had its podCIDR got no address from it: their owners recreate them.
    // A pod bound then but given its address only later gets one from outside too: sweep until every pod on the
    // node has an address, each inside the podCIDR (or the wait ends: verify names what is left).
    const final = (await getObject(ctx.client, NODES, it.name))!;
    const mine = (final.spec?.podCIDRs ?? []).map((c: string) => parseCidr(c));
    const deadline = Date.now() + this.opts.timeoutMs;
    // Only the pods the first list shows (read after the podCIDR was set: every pod bound before it) can get an
    // address from outside it; a pod bound later gets one from the podCIDR. So only those are waited for.
    let boundBefore: Set<string | undefined> | undefined;
    for (;;) {
      const pods = (await this.podsOnNode(ctx.client, it.name)).filter((x) => active(x));
      boundBefore ??= new Set(pods.map((x) => x.metadata?.uid));
      const stray = pods.filter((x) => ipsOf(x).length > 0 && !ipsOf(x).every((a) => inAny(mine, a)));
      mark.count?.('swept', stray.length);
      for (const x of stray) {
        if (!(x.metadata?.ownerReferences ?? []).some((r) => r.controller)) {
          const r = await restartWorkload(ctx, { kind: 'Pod', namespace: x.metadata!.namespace!, name: x.metadata!.name!, pods: [x.metadata!.name!] }, { token: this.opts.token, timeoutMs: this.opts.rolloutTimeoutMs });
          reportWarnings(ctx, [r]);
          continue;
        }
        await this.removePod(ctx, x);
      }
      const waiting = pods.some((x) => ipsOf(x).length === 0 && boundBefore!.has(x.metadata?.uid));
      if ((stray.length === 0 && !waiting) || Date.now() > deadline) { mark('sweep'); return; }
      await sleep(500);
    }
  }

  /**
   * Remove a pod its owner recreates: a Ready pod through the Eviction API (it counts in its PodDisruptionBudget:
   * while nodes of a wave re-register, pods scheduled there before the podCIDR may be Ready, and deleting several
   * at once would take a budget below its minimum); a DaemonSet, mirror or not-Ready pod is deleted, as the pod
   * garbage collector would.
   */
  private async removePod(ctx: StepContext, x: KubeObject): Promise<void> {
    const ready = isReady(x);
    if (ready && !isDaemonSetPod(x) && !isMirrorPod(x) && (x.metadata?.ownerReferences ?? []).some((r) => r.controller)) {
      await this.evictWaiting(ctx, x);
      return;
    }
    await withRetry(() => deleteObject(ctx.client, PODS, x.metadata!.name!, x.metadata!.namespace, { uid: x.metadata?.uid }));
  }

  /** Wait until every one of `items` is in NEW and Ready; else the first node's problem. */
  private async assignedAll(ctx: StepContext, items: readonly NodeItem[], dir: NodeDirection = this.forward): Promise<string | undefined> {
    let last: string | undefined;
    try {
      await poll(`node(s) ${items.map((x) => x.name).join(', ')} in ${dir === this.forward ? 'NEW' : 'the old range'} and Ready`, async () => {
        last = (await mapLimit(items, 16, (it) => this.assigned(ctx.client, it, dir))).find((x) => x !== undefined);
        return last === undefined ? true : undefined;
      }, { timeoutMs: this.opts.timeoutMs });
      return undefined;
    } catch { return last ?? 'node(s) not in NEW'; }
  }

  /** Until `ended()`: once the node is registered again without a podCIDR, give it its podCIDR (failures are left to assignOne). */
  private async assignOnRegister(ctx: StepContext, it: NodeItem, dir: NodeDirection, ended: () => boolean): Promise<void> {
    const dest = dir.dest(it);
    while (!ended()) {
      const n = await getObject(ctx.client, NODES, it.name).catch(() => undefined);
      if (n && !dir.leaving(n) && !n.metadata?.deletionTimestamp) {
        if (nodeCIDRs(n).length === 0) await this.patchNode(ctx, it.name, { podCIDR: dest[0], podCIDRs: dest }).catch(() => undefined);
        return;
      }
      await sleep(200);
    }
  }

  assignStep(p: PlanStep): Step {
    const items = this.nodeItems(p);
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.allNodes(items, async (it) => (await this.assigned(ctx.client, it)) === undefined && (await nodeMetadataRestored(ctx, it.name)))) && (await this.missingBarePods(ctx)).length === 0,
      apply: async (ctx) => {
        // Bare pods missing since a drain are created again once the wave's nodes have their podCIDRs: created
        // before, one may land on a node that just registered and has no podCIDR yet, and wait there for an address.
        await this.wave(ctx, p.id, items, (it) => this.assignOne(ctx, it), false);
        if (ctx.dryRun === 'none') await this.recreateMissing(ctx);
      },
      verify: (ctx) => this.assignedAll(ctx, items),
      rollback: (ctx) => this.rollBackNodes(ctx, p.id, items),
      rollbackPartial: true,
    };
  }
}

/** A node's podCIDRs (spec.podCIDRs, else spec.podCIDR; none for no node). */
function nodeCIDRs(n: KubeObject | undefined): string[] {
  return n?.spec?.podCIDRs ?? (n?.spec?.podCIDR ? [n.spec.podCIDR] : []);
}

/**
 * Why `cidrs` are not right inside `ranges` (`text`: the ranges as written): each must lie inside the range of its
 * family, and there must be one for every family of `ranges`. Undefined when they are.
 */
function cidrsProblem(cidrs: readonly string[], ranges: readonly Cidr[], text: readonly string[]): string | undefined {
  const parsed = cidrs.map((c) => tryParseCidr(c));
  const outside = cidrs.filter((c, i) => { const x = parsed[i]; return !x || !ranges.some((t) => t.family === x.family && contains(t, x)); });
  if (outside.length > 0) return `has podCIDR ${cidrs.join(',')}: ${outside.join(',')} outside ${text.join(',')}`;
  const missing = ranges.filter((t) => !parsed.some((x) => x?.family === t.family));
  if (missing.length > 0) return `has podCIDR ${cidrs.join(',')}: none in ${missing.map((t) => formatCidr(t)).join(',')}`;
  return undefined;
}
