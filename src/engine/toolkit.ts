/**
 * The engine's shared toolkit: the few loops every executor needs, written once.
 *
 *   withRetry        the same call again after a transient error (429, 5xx, resets), waiting the server's
 *                    Retry-After or backing off (src/kube/retry.ts, the policy the client's reads use too)
 *   retryOnConflict  re-read and re-derive a write when the apiserver answers 409 (a precondition failed)
 *   poll             wait until a condition gives a value, with backoff, a deadline and a telling timeout
 *   mapLimit         a bounded worker pool; every item runs, the first error is thrown at the end
 *   evictRespectingPdb  the Eviction API with PodDisruptionBudget back-off (429), transient-error tolerance
 *                    (a 503 or a reset is retried until the deadline), 404 = already gone
 *
 * The decisions (what is retried, how long to wait, when to give up) are pure functions of the answers, so
 * they are unit-tested with a scripted responder (test/unit/toolkit.test.ts); what they do against a cluster is
 * proven by the integration tests.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { KubeObject } from '../cluster/types.ts';
import { errorLine } from '../errors.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { isTransient, sleep } from '../kube/retry.ts';
import { evictPod } from '../kube/workloads.ts';


export { isTransient, isRetryableRead, MAX_RETRY_AFTER_MS, parseRetryAfter, retryAfterOf, retriesExhausted, retryDelay, type RetryOptions, sleep, withRetry } from '../kube/retry.ts';


// ---- progress of waits ------------------------------------------------------------------------------

/** Where a wait is reported: the running step's progress channel (StepContext.progress). */
type WaitSink = (e: { type: 'wait'; what: string; timeoutMs?: number } | { type: 'waited'; what: string; ms: number }) => void;
const progressScope = new AsyncLocalStorage<WaitSink | undefined>();

/**
 * Run `fn` with `sink` as the channel that poll() and waitFor() inside it report their waits to (the runner
 * wraps each phase of a step in it, so no executor threads the channel through every helper).
 */
export function withProgress<T>(sink: WaitSink | undefined, fn: () => Promise<T>): Promise<T> {
  return progressScope.run(sink, fn);
}

/** A fixed delay the run waits out (e.g. for kube-proxy and DNS caches), reported like a poll. */
export async function waitFor(what: string, ms: number): Promise<void> {
  const sink = progressScope.getStore();
  sink?.({ type: 'wait', what, timeoutMs: ms });
  const t0 = Date.now();
  await sleep(ms);
  sink?.({ type: 'waited', what, ms: Date.now() - t0 });
}
const realSleep = sleep;

// ---- 409 -------------------------------------------------------------------------------------------

/** A failed precondition (resourceVersion or uid) on an update: re-read and try again. A create's AlreadyExists is not one. */
export function isConflict(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 409 && e.reason !== 'AlreadyExists';
}

export class ConflictError extends Error {
  constructor(what: string, attempts: number) {
    super(`${what} kept changing under us (409 Conflict ${attempts} times)`);
    this.name = 'ConflictError';
  }
}

/**
 * Run `attempt` (which reads the current object itself and writes with a precondition) until it does not end
 * in a conflict; at most `attempts` times (default 5), then ConflictError naming `what`.
 */
export async function retryOnConflict<T>(what: string, attempt: (n: number) => Promise<T>, opts: { attempts?: number } = {}): Promise<T> {
  const max = opts.attempts ?? 5;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (e) {
      if (!isConflict(e)) throw e;
      if (n >= max) throw new ConflictError(what, max);
    }
  }
}

// ---- polling ---------------------------------------------------------------------------------------

export interface PollOptions {
  /** Give up after this long (default 60 s). */
  timeoutMs?: number;
  /** First wait between two tries (default 250 ms). */
  intervalMs?: number;
  /** The wait grows by `backoff` (default 1: fixed) up to maxIntervalMs (default intervalMs × 8 when backing off). */
  backoff?: number;
  maxIntervalMs?: number;
  /** Transient API errors (429, 5xx, resets) count as "not yet" instead of failing the wait (default false). */
  tolerateTransient?: boolean;
  /** Test seams. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export class PollTimeout extends Error {
  readonly what: string;
  readonly detail?: string;
  constructor(what: string, timeoutMs: number, detail?: string) {
    super(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}${detail ? ` (${detail})` : ''}`);
    this.name = 'PollTimeout';
    this.what = what;
    this.detail = detail;
  }
}

/** The successive waits poll makes (pure, for tests and for reasoning about request counts). */
export function pollDelays(opts: PollOptions, count: number): number[] {
  const first = opts.intervalMs ?? 250;
  const factor = opts.backoff ?? 1;
  const max = opts.maxIntervalMs ?? (factor > 1 ? first * 8 : first);
  const out: number[] = [];
  let d = first;
  for (let i = 0; i < count; i++) {
    out.push(Math.min(d, max));
    d *= factor;
  }
  return out;
}

/**
 * Call `fn` until it returns a value other than undefined (returned), waiting between tries; at the deadline
 * throw PollTimeout with `what` and the last detail `fn` reported through `note`.
 */
export async function poll<T>(what: string, fn: (note: (detail: string) => void) => Promise<T | undefined>, opts: PollOptions = {}): Promise<T> {
  const now = opts.now ?? Date.now;
  const wait = opts.sleep ?? realSleep;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = now() + timeoutMs;
  const first = opts.intervalMs ?? 250;
  const factor = opts.backoff ?? 1;
  const max = opts.maxIntervalMs ?? (factor > 1 ? first * 8 : first);
  let delay = first;
  let detail: string | undefined;
  const note = (d: string) => { detail = d; };
  // reported once it has to wait at all (a condition that already holds is no wait), and when it ends
  const sink = progressScope.getStore();
  const t0 = now();
  let waiting = false;
  const done = (ended?: 'failed' | 'timed-out') => { if (waiting) sink?.({ type: 'waited', what, ms: now() - t0, ...(ended ? { ended } : {}) }); };
  for (;;) {
    let v: T | undefined;
    try {
      v = await fn(note);
    } catch (e) {
      if (!(opts.tolerateTransient && isTransient(e))) { done('failed'); throw e; }
      detail = `API error: ${errorLine(e)}`;
      v = undefined;
    }
    if (v !== undefined) { done(); return v; }
    const left = deadline - now();
    if (left <= 0) { done('timed-out'); throw new PollTimeout(what, timeoutMs, detail); }
    if (!waiting) { waiting = true; sink?.({ type: 'wait', what, timeoutMs }); }
    await wait(Math.max(1, Math.min(delay, left)));
    delay = Math.min(max, delay * factor);
  }
}

// ---- worker pool -----------------------------------------------------------------------------------

/**
 * `fn` over `items`, at most `limit` at a time, results in the items' order. Every item runs even when one
 * fails; then the first error (in completion order) is thrown.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (t: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  const errors: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try { results[i] = await fn(items[i]!, i); } catch (e) { errors.push(e); }
    }
  };
  await Promise.all(Array.from({ length: Math.max(0, Math.min(Math.max(1, Math.floor(limit)), items.length)) }, worker));
  if (errors.length > 0) throw errors[0];
  return results;
}

// ---- pacing ----------------------------------------------------------------------------------------

/**
 * Spreads starts out in time: each `turn()` returns once `intervalMs` has passed since the turn before it began
 * (the first at once). Turns go in call order, so callers that ask together (a wave's nodes) start one after
 * the other. An interval of 0 never waits. The node path's `--node-interval`: the control plane's reaction to a
 * drain (evictions, replacements scheduled and started, a node deleted and registered again) comes in a burst
 * per node, and a wave whose nodes all start at once stacks the bursts (docs/benchmarks.md, control-plane-load).
 */
export class Pacer {
  readonly intervalMs: number;
  private readonly now: () => number;
  private readonly wait: (ms: number) => Promise<void>;
  private next = Number.NEGATIVE_INFINITY;
  constructor(intervalMs: number, now: () => number = () => Date.now(), wait: (ms: number) => Promise<void> = sleep) {
    this.intervalMs = intervalMs;
    this.now = now;
    this.wait = wait;
  }

  /** Waits for this caller's turn; returns the ms it waited. */
  async turn(): Promise<number> {
    if (!(this.intervalMs > 0)) return 0;
    const t = this.now();
    const at = Math.max(t, this.next);
    this.next = at + this.intervalMs;
    if (at > t) await this.wait(at - t);
    return at - t;
  }
}

// ---- eviction --------------------------------------------------------------------------------------

/** The Eviction API refuses a pod selected by more than one budget with a 500 naming them. */
export function isMultiPdb(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 500 && /more than one PodDisruptionBudget|multiple PodDisruptionBudgets/i.test(e.message);
}

/** What one eviction answer means for the loop (pure). */
export type EvictionVerdict = 'evicted' | 'gone' | 'check-uid' | 'blocked' | 'transient' | 'multi-pdb' | 'fatal';

export function evictionVerdict(e: unknown): EvictionVerdict {
  if (e === undefined) return 'evicted';
  if (e instanceof KubeApiError && e.status === 404) return 'gone';
  if (e instanceof KubeApiError && e.status === 409) return 'check-uid';
  if (e instanceof KubeApiError && e.status === 429) return 'blocked';
  if (isMultiPdb(e)) return 'multi-pdb';
  if (isTransient(e)) return 'transient';
  return 'fatal';
}

/** The eviction was refused (budget or transient errors) until the deadline. */
export class EvictionBlocked extends Error {
  readonly why: string;
  constructor(message: string, why: string) {
    super(message);
    this.name = 'EvictionBlocked';
    this.why = why;
  }
}

export interface EvictOptions {
  dryRun?: boolean;
  /** Give up (EvictionBlocked) when the next try would start after this time (epoch ms). */
  deadline: number;
  /** Back-off between tries: starts at min(500, max), doubles with ±20 % jitter up to maxDelayMs (default 5 s). */
  maxDelayMs?: number;
  /** The budgets selecting the pod (to name them in messages); errors here are ignored. */
  budgets?: () => Promise<KubeObject[]>;
  describeBudget?: (b: KubeObject) => string;
  /** Called at each refusal with why; returning true stops trying (e.g. a fallback moved the pod): result 'fallback'. */
  onRefused?: (why: string, elapsedMs: number, blockedByBudget: boolean) => Promise<boolean> | boolean;
  /** With dryRun: a refusal throws at once (the server said what a real run would meet). */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** For the uid check after a 409: the pod as it is now (undefined when gone). */
  current?: () => Promise<KubeObject | undefined>;
}

export type EvictResult = 'evicted' | 'gone' | 'fallback';

/**
 * Evict `pod` with its uid as precondition. 429 (a PodDisruptionBudget forbids it now) and transient errors
 * (429/5xx/resets: one 503 must not fail a drain) are retried with back-off until the deadline; 404 means
 * the pod is gone already; a 409 means the uid differs (ours is gone: 'gone') unless the pod still has our
 * uid. More than one budget selecting the pod is an error no wait fixes.
 */
export async function evictRespectingPdb(client: KubeClient, pod: KubeObject, opts: EvictOptions): Promise<EvictResult> {
  const ns = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  const uid = pod.metadata?.uid;
  const now = opts.now ?? Date.now;
  const wait = opts.sleep ?? realSleep;
  const max = opts.maxDelayMs ?? 5000;
  const t0 = now();
  let delay = Math.min(500, max);
  const names = async () => {
    try { return (await opts.budgets?.()) ?? []; } catch { return []; }
  };
  for (;;) {
    let err: unknown;
    try {
      await evictPod(client, ns, name, { uid, dryRun: opts.dryRun });
    } catch (e) {
      err = e;
    }
    const v = evictionVerdict(err);
    switch (v) {
      case 'evicted': return 'evicted';
      case 'gone': return 'gone';
      case 'check-uid': {
        if (!uid || !opts.current) return 'gone';
        const cur = await opts.current();
        if (!cur || cur.metadata?.uid !== uid) return 'gone';
        // the same pod: not our uid precondition but the budget's status update, which lost a race with another
        // eviction of the same budget ("the object has been modified; please apply your changes to the latest
        // version and try again"; measured with 100-node waves): tried again like a transient error
        break;
      }
      case 'multi-pdb': {
        const list = (await names()).map((b) => `${b.metadata?.namespace}/${b.metadata?.name}`);
        throw new Error(`cannot evict pod ${ns}/${name}: it is selected by more than one PodDisruptionBudget (${list.join(', ') || 'see kubectl get pdb'}), `
          + 'which the Eviction API refuses; make one budget select it, or restart it by hand');
      }
      case 'fatal': throw err;
      default: break;
    }
    let why: string;
    if (v === 'blocked') {
      const pdbs = await names();
      why = pdbs.length > 0 ? `blocked by ${pdbs.map(opts.describeBudget ?? ((b) => `PodDisruptionBudget ${b.metadata?.name}`)).join('; ')}` : `refused (429): ${errorLine(err)}`;
    } else {
      why = `refused: ${errorLine(err)}`;
    }
    if (opts.onRefused && (await opts.onRefused(why, now() - t0, v === 'blocked'))) return 'fallback';
    if (opts.dryRun && v === 'blocked') throw new EvictionBlocked(`eviction of pod ${ns}/${name} would be ${why} now`, why);
    if (now() + delay > opts.deadline) {
      throw new EvictionBlocked(`eviction of pod ${ns}/${name} not possible within ${Math.max(0, Math.round((opts.deadline - t0) / 1000))}s: ${why}`, why);
    }
    await wait(delay * (0.8 + Math.random() * 0.4));
    delay = Math.min(max, delay * 2);
  }
}
