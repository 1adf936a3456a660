/**
 * One adaptive concurrency window for all requests of a run, so the run is a well-behaved client of the apiserver:
 *
 *  - the window (how many requests may be in flight at once) grows by about one per round of requests while their
 *    smoothed latency stays within 2 × the unloaded latency of their kind (verb, resource, a list's scope:
 *    requestKind; the 10th percentile of its recent answers), and shrinks to ¾ when it rises above 3 × (and above
 *    50 ms: a loopback apiserver's jitter is not load); additive increase, multiplicative decrease, as TCP's
 *    congestion window;
 *  - an answer that says the apiserver is overloaded halves it at once: 429 from API Priority and Fairness (the
 *    answer carries X-Kubernetes-PF-FlowSchema-UID / X-Kubernetes-PF-PriorityLevel-UID, i.e. it was classified and
 *    its priority level's queues were full), any other 429 but an eviction's PodDisruptionBudget refusal (a
 *    budget, not a load, says no), 5xx other than 501, and a request that timed out;
 *  - a Retry-After on such an answer holds every request that has not started yet until it has passed (at most
 *    MAX_RETRY_AFTER_MS), not only the one that got it;
 *  - long work that makes its own requests (a node hook, another process) takes a task slot: at most half the
 *    window of them run at once, and they never take request slots (a hook waiting for a podCIDR that a request of
 *    ours gives cannot starve it).
 *
 * Watches hold no slot (they last minutes; APF counts them apart). The Lease renewal does not use this limiter at
 * all: it has its own connection (src/cli/session.ts), so the run's queue never delays it.
 *
 * The decisions are a pure function of what `observe` is fed and of the clock (`now`), so the unit tests drive
 * them with scripted latencies and answers (test/unit/limiter.test.ts).
 */
import { MAX_RETRY_AFTER_MS } from './retry.ts';

export interface LimiterOptions {
  /** Window to start with (default 8). */
  initial?: number;
  /** Never below this (default 1). */
  min?: number;
  /** Never above this (default 64). */
  max?: number;
  /** Smoothed latency up to this multiple of the kind's unloaded one (10th percentile of its recent answers) lets the window grow (default 2). */
  growBelow?: number;
  /** Smoothed latency above this multiple of it shrinks the window (default 3). */
  shrinkAbove?: number;
  /** Factor of a shrink on latency (default 0.75); an overload answer halves. */
  backoff?: number;
  /** Latencies below this many ms are never "slow" (a loopback apiserver answers in 1 ms; its jitter is not load). Default 50. */
  floorMs?: number;
  /** How many of each kind's latest latencies the unloaded one is taken from (default 200): a slower server becomes the norm. */
  history?: number;
  now?: () => number;
}

/** A run's closing line about its request window (written with -v; the control-plane-load bench reads it back). */
export function describeWindow(w: LimiterStats): string {
  return `request window: ${w.minWindow}-${w.maxWindow} (now ${w.window}), ${w.latencyShrinks} shrink(s) for latency, ${w.overloadShrinks} for 429/5xx/timeouts, `
    + `${Math.round(w.pausedMs / 1000)}s held by Retry-After, ${w.waited} request(s) waited (longest ${Math.round(w.longestWaitMs)} ms)`
    + `${w.priorityLevel ? `, API Priority and Fairness level ${w.priorityLevel}` : ''}`;
}

/**
 * What a request is, for its unloaded latency: verb, resource (and subresource) and, for a list, its scope. A list
 * of the pods on one node and a list of every pod in the cluster differ a hundredfold in latency at 1,000 nodes on
 * an idle apiserver; measured against one baseline (the small lists' 10th percentile), every large list looks like
 * load and shrinks the window, over and over, to its minimum. So each kind here has its own baseline:
 * `list pods selected` (a label or field selector), `list pods ns` (one namespace), `list pods all`,
 * `get nodes`, `get pods/log`, `POST pods/eviction`, `PATCH nodes`, … (a name never, so the kinds stay few).
 */
export function requestKind(method: string, path: string, query?: Readonly<Record<string, string | number | boolean | undefined>>): string {
  const q = path.indexOf('?');
  const segs = (q < 0 ? path : path.slice(0, q)).split('/').filter((x) => x !== '');
  // /api/v1/… or /apis/GROUP/VERSION/…
  let i = segs[0] === 'api' ? 2 : segs[0] === 'apis' ? 3 : segs.length;
  let namespaced = false;
  if (segs[i] === 'namespaces' && segs.length > i + 2) { namespaced = true; i += 2; }
  const resource = segs[i] ?? (segs.length ? segs.join('/') : 'root');
  const named = segs.length > i + 1;
  const sub = segs.length > i + 2 ? `/${segs[i + 2]}` : '';
  if (method !== 'GET') return `${method} ${resource}${sub}`;
  if (named && query?.limit === undefined) return `get ${resource}${sub}`;
  const fromPath = q < 0 ? '' : path.slice(q);
  const selected = query?.labelSelector !== undefined || query?.fieldSelector !== undefined || /[?&](labelSelector|fieldSelector)=/.test(fromPath);
  return `list ${resource} ${selected ? 'selected' : namespaced ? 'ns' : 'all'}`;
}

/** What one answer said, as the limiter reads it. */
export interface Observation {
  /** What the request was (requestKind): each kind has its own unloaded latency. */
  kind: string;
  latencyMs: number;
  /** HTTP status; 0 when the request failed on the network. */
  status: number;
  /** The answer's Retry-After, in ms. */
  retryAfterMs?: number;
  /** The answer carried X-Kubernetes-PF-* headers (the apiserver's API Priority and Fairness classified it). */
  apf?: boolean;
  /** A 429 that is a PodDisruptionBudget's refusal of an eviction: no load signal. */
  budget?: boolean;
  /** The request timed out (no answer in time): a load signal. */
  timedOut?: boolean;
}

export interface LimiterStats {
  window: number;
  minWindow: number;
  maxWindow: number;
  inFlight: number;
  queued: number;
  /** Shrinks for latency, and for overload answers (429/5xx/timeouts). */
  latencyShrinks: number;
  overloadShrinks: number;
  /** Requests that waited for a slot, and the longest wait (ms). */
  waited: number;
  longestWaitMs: number;
  /** Total ms the window was held shut for Retry-After. */
  pausedMs: number;
  /** The priority level APF put our requests in, when the apiserver said (X-Kubernetes-PF-PriorityLevel-UID). */
  priorityLevel?: string;
}

type Waiter = { resolve: () => void; since: number };

/** Weight of a new answer in the smoothed latency. */
const SMOOTHING = 0.25;

/** The 10th percentile of `v` (not empty). */
function lowPercentile(v: readonly number[]): number {
  const w = [...v].sort((a, b) => a - b);
  return w[Math.floor((w.length - 1) / 10)]!;
}

export class AdaptiveLimiter {
  private win: number;
  private readonly min: number;
  private readonly max: number;
  private readonly growBelow: number;
  private readonly shrinkAbove: number;
  private readonly backoff: number;
  private readonly floorMs: number;
  private readonly history: number;
  private readonly now: () => number;
  private inFlight = 0;
  private tasks = 0;
  private readonly queue: Waiter[] = [];
  private readonly taskQueue: Waiter[] = [];
  private readonly kinds = new Map<string, { recent: number[]; smooth: number }>();
  /** No shrink again before this time: one shrink per round of requests, not one per slow answer of the same round. */
  private calmUntil = 0;
  private pausedUntil = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stat = { latencyShrinks: 0, overloadShrinks: 0, waited: 0, longestWaitMs: 0, pausedMs: 0, minWindow: 0, maxWindow: 0 };
  priorityLevel: string | undefined;

  constructor(opts: LimiterOptions = {}) {
    this.min = Math.max(1, opts.min ?? 1);
    this.max = Math.max(this.min, opts.max ?? 64);
    this.win = Math.min(this.max, Math.max(this.min, opts.initial ?? 8));
    this.growBelow = opts.growBelow ?? 2;
    this.shrinkAbove = opts.shrinkAbove ?? 3;
    this.backoff = opts.backoff ?? 0.75;
    this.floorMs = opts.floorMs ?? 50;
    this.history = opts.history ?? 200;
    this.now = opts.now ?? Date.now;
    this.stat.minWindow = this.stat.maxWindow = this.window;
  }

  /** Requests that may be in flight now. */
  get window(): number { return Math.max(this.min, Math.floor(this.win)); }

  /** Long tasks (node hooks) that may run now: half the window, at least one. */
  get taskWindow(): number { return Math.max(1, Math.floor(this.window / 2)); }

  /** Until when (epoch ms on `now`) a Retry-After holds new requests; 0 when it does not. */
  get heldUntil(): number { return this.pausedUntil > this.now() ? this.pausedUntil : 0; }

  stats(): LimiterStats {
    return {
      window: this.window, inFlight: this.inFlight, queued: this.queue.length, ...this.stat,
      ...(this.priorityLevel ? { priorityLevel: this.priorityLevel } : {}),
    };
  }

  /** Wait for a request slot; call the returned function once the answer is in. */
  async acquire(): Promise<() => void> {
    if (this.queue.length > 0 || this.inFlight >= this.window || this.heldUntil) {
      const since = this.now();
      await new Promise<void>((resolve) => { this.queue.push({ resolve, since }); this.pump(); });
    } else {
      this.inFlight++;
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight--;
      this.pump();
    };
  }

  /** Run `fn` holding a task slot (long work that makes its own requests, e.g. a node hook). */
  async task<T>(fn: () => Promise<T>): Promise<T> {
    if (this.taskQueue.length > 0 || this.tasks >= this.taskWindow) {
      await new Promise<void>((resolve) => { this.taskQueue.push({ resolve, since: this.now() }); });
    } else {
      this.tasks++;
    }
    try {
      return await fn();
    } finally {
      this.tasks--;
      this.pump();
    }
  }

  /** Feed one answer (or failure) of a request that held a slot. */
  observe(o: Observation): void {
    const t = this.now();
    const overloaded = o.timedOut === true || (o.status === 429 && !o.budget) || (o.status >= 500 && o.status !== 501);
    if (overloaded) {
      if (o.retryAfterMs !== undefined && o.retryAfterMs > 0) {
        const until = t + Math.min(o.retryAfterMs, MAX_RETRY_AFTER_MS);
        if (until > this.pausedUntil) {
          this.stat.pausedMs += until - Math.max(this.pausedUntil, t);
          this.pausedUntil = until;
        }
      }
      if (t >= this.calmUntil) {
        this.win = Math.max(this.min, this.win / 2);
        this.stat.overloadShrinks++;
        this.calmUntil = t + Math.max(o.latencyMs, o.retryAfterMs ?? 0, 100);
      }
      this.note();
      return;
    }
    if (o.status === 0 || o.budget) return;
    const k = this.kinds.get(o.kind) ?? { recent: [], smooth: o.latencyMs };
    k.recent.push(o.latencyMs);
    if (k.recent.length > this.history) k.recent.shift();
    // the latency now: smoothed, so one slow answer (a GC pause, a busy machine's scheduler) is not a trend
    k.smooth = k.smooth * (1 - SMOOTHING) + o.latencyMs * SMOOTHING;
    this.kinds.set(o.kind, k);
    // the latency unloaded: a low percentile of the recent answers (the lowest one alone is a lucky outlier)
    const low = Math.max(lowPercentile(k.recent), 1);
    const ratio = k.smooth / low;
    if (k.smooth > this.floorMs && ratio > this.shrinkAbove) {
      if (t >= this.calmUntil) {
        this.win = Math.max(this.min, this.win * this.backoff);
        this.stat.latencyShrinks++;
        this.calmUntil = t + k.smooth;
      }
    } else if (k.smooth <= this.floorMs || ratio <= this.growBelow) {
      // about +1 per window's worth of fast answers; only while the window is used (idle slots prove nothing)
      if (this.inFlight >= this.window - 1 || this.queue.length > 0) this.win = Math.min(this.max, this.win + 1 / this.win);
    }
    this.note();
    this.pump();
  }

  private note(): void {
    this.stat.minWindow = Math.min(this.stat.minWindow, this.window);
    this.stat.maxWindow = Math.max(this.stat.maxWindow, this.window);
  }

  /** Hand free slots to the waiters, unless a Retry-After holds them. */
  private pump(): void {
    const t = this.now();
    if (this.pausedUntil > t) {
      if (!this.timer && this.queue.length > 0) {
        // not unref'd: the requests waiting here are the run's, which must not end while they wait
        this.timer = setTimeout(() => { this.timer = undefined; this.pump(); }, this.pausedUntil - t);
      }
    } else {
      while (this.queue.length > 0 && this.inFlight < this.window) {
        const w = this.queue.shift()!;
        this.inFlight++;
        this.stat.waited++;
        this.stat.longestWaitMs = Math.max(this.stat.longestWaitMs, t - w.since);
        w.resolve();
      }
    }
    while (this.taskQueue.length > 0 && this.tasks < this.taskWindow) {
      this.tasks++;
      this.taskQueue.shift()!.resolve();
    }
  }
}
