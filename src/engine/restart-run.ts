/**
 * The restart engine's run of many workloads, shared by the Pod CIDR path (step restart-pods, src/engine/pod-steps.ts)
 * and the Service CIDR path (step restart-workloads, src/engine/service/restarts.ts): waves of `parallel` rollouts, the
 * critical Deployments first, each workload's outcome journaled as it ends, bare pods a crash left deleted created
 * again from their backup. What a pod to restart is stays with each path (a pod in the old range; a pod started
 * before the Services moved).
 */
import type { KubeObject } from '../cluster/types.ts';
import { errorLine } from '../errors.ts';
import { getObject, PODS } from '../kube/resources.ts';
import { firstAndMore } from '../text.ts';
import { describeWorkload, fatalError, restartWorkload, runWaves, type RestartResult, type Workload } from './restarts.ts';
import type { StepContext } from './runner.ts';
import { finishPending, handOverDeployment, type HandoverOptions } from './udp-handover.ts';

export interface RestartRunOptions {
  /** Rollouts in flight at once. */
  parallel: number;
  /** Deployments (namespace/name) restarted first, in this order. */
  critical: readonly string[];
  /** Identifies the run in pod templates (kube-renumber.io/restart): a workload carrying it is not restarted again. */
  token: string;
  /** How long one workload's restart may take. */
  rolloutTimeoutMs: number;
  /** The step whose restarts these are: each workload's outcome is journaled under it (none: only the wave figures). */
  step?: string;
  /** How long a handed-over pod of a UDP Service stays after leaving its Services (default: udp-handover.ts's rule, read live). */
  handoverHold?: { ms: number; why: string };
  /** Told the wave figures (benchmarks read them). */
  onWaves?: (r: { totalSeconds: number; sumSeconds: number; maxInFlight: number; workloads: number }) => void;
}

function warn(ctx: StepContext, msg: string): void {
  (ctx.warn ?? ctx.log)(msg);
}

/** The restarts' warnings, for a context that could not show them as they came (no ctx.warn). */
export function reportWarnings(ctx: StepContext, results: readonly RestartResult[]): void {
  if (ctx.warn) return;
  for (const r of results) for (const w of r.warnings) warn(ctx, w);
}

/** "Kind/namespace/name" of a workload, as the journal names objects. */
function workloadRef(w: Workload): string {
  return `${w.kind}/${w.namespace}/${w.name}`;
}

/**
 * Restart one workload, journaling that it starts and its outcome (a real run with a step only): a run killed between
 * the two leaves the first, and the next run, which finds its pods restarted, has nothing more to say about it.
 */
async function restartJournaled(ctx: StepContext, w: Workload, opts: RestartRunOptions): Promise<RestartResult> {
  if (ctx.dryRun === 'none' && opts.step) ctx.journal.append('report', { step: opts.step, objects: [workloadRef(w)], detail: 'restarting' });
  const r = (w.kind === 'Deployment' ? await handOver(ctx, w, opts) : undefined)
    ?? await restartWorkload(ctx, w, { token: opts.token, timeoutMs: opts.rolloutTimeoutMs });
  if (ctx.dryRun === 'none' && opts.step) {
    ctx.journal.append('report', {
      step: opts.step, objects: [workloadRef(w)],
      detail: `${r.status} in ${r.seconds.toFixed(1)} s${r.message ? `: ${r.message}` : ''}`,
    });
  }
  return r;
}

const handoverOptions = (opts: RestartRunOptions): HandoverOptions => ({
  token: opts.token, timeoutMs: opts.rolloutTimeoutMs, ...(opts.step ? { step: opts.step } : {}), ...(opts.handoverHold ? { hold: opts.handoverHold } : {}),
});

/** A Deployment serving a UDP Service: its pods handed over (udp-handover.ts); undefined when it does not qualify. */
async function handOver(ctx: StepContext, w: Workload, opts: RestartRunOptions): Promise<RestartResult | undefined> {
  const t0 = Date.now();
  const result = (status: RestartResult['status'], message: string, error?: unknown): RestartResult => ({
    workload: w, status, seconds: (Date.now() - t0) / 1000, message, warnings: [], ...(error !== undefined ? { error } : {}),
  });
  try {
    const h = await handOverDeployment(ctx, w, handoverOptions(opts));
    if (!h) return undefined;
    if (h.status !== 'skipped' || ctx.dryRun === 'none') ctx.log(`${describeWorkload(w)}: ${h.status} (${h.message}) in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    return result(h.status, h.message);
  } catch (e) {
    const msg = errorLine(e);
    ctx.log(`${describeWorkload(w)}: hand-over failed: ${msg}`);
    return result('failed', `hand-over: ${msg}`, e);
  }
}

/** Restart `workloads` in waves; throws when any is paused, stuck or failed (after all have run). */
export async function restartInWaves(ctx: StepContext, workloads: readonly Workload[], opts: RestartRunOptions): Promise<void> {
  // pods an earlier run left in the middle of a hand-over first (they are no workload to restart: groupPods skips them)
  await finishPending(ctx, handoverOptions(opts));
  if (workloads.length === 0) return;
  const rep = await runWaves(workloads, { parallel: opts.parallel, order: opts.critical.map((c) => `Deployment/${c}`), ...(ctx.progress ? { progress: ctx.progress } : {}) },
    (w) => restartJournaled(ctx, w, opts));
  reportWarnings(ctx, rep.results);
  ctx.log(`restarted ${rep.results.length} workload(s) in ${rep.totalSeconds.toFixed(1)} s (sum of rollouts ${rep.sumSeconds.toFixed(1)} s, up to ${rep.maxInFlight} at once)`);
  const figures = { totalSeconds: rep.totalSeconds, sumSeconds: rep.sumSeconds, maxInFlight: rep.maxInFlight, workloads: rep.results.length };
  if (ctx.dryRun === 'none') ctx.journal.append('report', { ...(opts.step ? { step: opts.step } : {}), detail: JSON.stringify({ restarts: figures }) });
  opts.onWaves?.(figures);
  const fatal = fatalError(rep.results);
  if (fatal) throw fatal;
  const bad = rep.results.filter((r) => r.status === 'paused' || r.status === 'stuck' || r.status === 'failed');
  if (bad.length > 0) {
    throw new Error(`${bad.length} workload(s) not restarted: ${firstAndMore(bad.map((r) => `${describeWorkload(r.workload)} ${r.status}${r.message ? ` (${r.message})` : ''}`), 5, '; ')}`
      + ` — paused rollouts are never resumed by this tool: resume them (kubectl rollout resume) or fix them, then kube-renumber resume`);
  }
}

/** Bare pods this run backed up (to evict and create again) that do not exist now: a crash came between the two. */
export async function missingBarePods(ctx: StepContext): Promise<KubeObject[]> {
  const bare = ctx.backups.all().filter((o) => o.kind === 'Pod' && !(o.metadata?.ownerReferences ?? []).some((r) => r.controller));
  const out: KubeObject[] = [];
  for (const b of bare) if (!(await getObject(ctx.client, PODS, b.metadata!.name!, b.metadata!.namespace))) out.push(b);
  return out;
}

/** Create again, from their backups, the bare pods a crash left deleted. */
export async function recreateMissing(ctx: StepContext, opts: Pick<RestartRunOptions, 'token' | 'rolloutTimeoutMs' | 'step'>): Promise<void> {
  for (const b of await missingBarePods(ctx)) {
    const w: Workload = { kind: 'Pod', namespace: b.metadata!.namespace!, name: b.metadata!.name!, pods: [b.metadata!.name!] };
    const r = await restartJournaled(ctx, w, { ...opts, parallel: 1, critical: [] });
    reportWarnings(ctx, [r]);
    if (r.status === 'failed' || r.status === 'stuck') throw (r.error ?? new Error(`pod ${b.metadata?.namespace}/${b.metadata?.name}: ${r.status} ${r.message ?? ''}`));
  }
}
