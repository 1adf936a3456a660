/**
 * The one retry policy for requests to the API server, used by the client for reads (GETs and LIST pages) and by
 * the engine for its writes (src/engine/toolkit.ts re-exports it):
 *
 *  - what is worth another try: 429, 5xx (but 501 Not Implemented), and a connection that was reset or timed out;
 *  - how long to wait: the server's Retry-After when a 429 or 5xx carries one (seconds or an HTTP date), capped at
 *    MAX_RETRY_AFTER_MS; else exponential back-off with jitter;
 *  - never beyond the caller's deadline: a wait that would end after it gives up at once with the last error;
 *  - an error that already went through its retries is marked, so an outer retry loop does not multiply them.
 */
import { KubeApiError, UnreachableError } from './errors.ts';

/** The longest Retry-After honoured; a server asking for more gets this. */
export const MAX_RETRY_AFTER_MS = 60_000;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A Retry-After header in ms: delta-seconds ("120") or an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", a date in
 * the past is 0); undefined when absent or neither.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Math.min(Number(v), 24 * 3600) * 1000;
  if (!/[A-Za-z]/.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** Network failures where the request may not have reached the server, or its answer was lost. */
const NETWORK_TRANSIENT = /timed out|ECONNRESET|ECONNREFUSED|EPIPE|UND_ERR_SOCKET|socket hang up|closed before the answer was complete/;
/** The same, without refusals and timeouts: a refused connection is a cluster that is not there (exit 4 at once). */
const NETWORK_RESET = /ECONNRESET|EPIPE|socket hang up|closed before the answer was complete/;

/** 429, 5xx (but 501) and network timeouts/resets are worth another try; 409 is not: the caller must re-read. */
export function isTransient(err: unknown): boolean {
  if (err instanceof KubeApiError) return err.status === 429 || (err.status >= 500 && err.status !== 501);
  if (err instanceof UnreachableError) return NETWORK_TRANSIENT.test(err.message);
  return false;
}

/** What the client retries of a read on its own: 429, 5xx (but 501), and a reset connection (like client-go). */
export function isRetryableRead(err: unknown): boolean {
  if (err instanceof KubeApiError) return err.status === 429 || (err.status >= 500 && err.status !== 501);
  if (err instanceof UnreachableError) return NETWORK_RESET.test(err.message);
  return false;
}

const EXHAUSTED = Symbol.for('kube-renumber.retriesExhausted');

/** True when `err` already went through a retry loop that gave up: retrying it again only multiplies the waits. */
export function retriesExhausted(err: unknown): boolean {
  return !!err && typeof err === 'object' && (err as Record<symbol, unknown>)[EXHAUSTED] === true;
}

function markExhausted(err: unknown): void {
  if (err && typeof err === 'object' && Object.isExtensible(err)) {
    try { Object.defineProperty(err, EXHAUSTED, { value: true, enumerable: false }); } catch { /* frozen */ }
  }
}

/** The server's Retry-After on this error, in ms, when it sent one. */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof KubeApiError ? err.retryAfterMs : undefined;
}

export interface RetryOptions {
  /** Attempts in all, the first included (default 6). */
  attempts?: number;
  /** First delay (default 200 ms); doubles each time, with ±20 % jitter, capped at maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Cap on a server's Retry-After (default MAX_RETRY_AFTER_MS). */
  maxRetryAfterMs?: number;
  /** No wait ends after this time (epoch ms, on `now`): the last error is thrown instead (default: DEFAULT_RETRY_BUDGET_MS from the first try). */
  deadline?: number;
  /** Called before each wait. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Which errors to retry (default: isTransient). */
  retryable?: (err: unknown) => boolean;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** Test seam for the jitter (default Math.random). */
  random?: () => number;
}

/** The wait before attempt `attempt + 1` after `err` (pure): the server's Retry-After, capped, else back-off. */
export function retryDelay(err: unknown, attempt: number, opts: RetryOptions = {}): number {
  const after = retryAfterOf(err);
  if (after !== undefined) return Math.min(after, opts.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS);
  const base = opts.baseDelayMs ?? 200;
  const max = opts.maxDelayMs ?? 10_000;
  return Math.min(max, base * 2 ** (attempt - 1)) * (0.8 + (opts.random ?? Math.random)() * 0.4);
}

/**
 * How long one call's retries may take in all when the caller gives no deadline: five Retry-After waits of 60 s
 * would hold a step for five minutes on one write; after this the last error is thrown (the step fails, resume
 * goes on from there).
 */
export const DEFAULT_RETRY_BUDGET_MS = 120_000;

/** `fn` again after transient errors, waiting as retryDelay says; anything else is thrown at once. */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 6;
  const retryable = opts.retryable ?? isTransient;
  const wait = opts.sleep ?? sleep;
  const now = opts.now ?? Date.now;
  const deadline = opts.deadline ?? now() + DEFAULT_RETRY_BUDGET_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!retryable(e) || retriesExhausted(e)) throw e;
      const delay = retryDelay(e, attempt, opts);
      if (attempt >= attempts || now() + delay > deadline) {
        markExhausted(e);
        throw e;
      }
      opts.onRetry?.(e, attempt, delay);
      await wait(delay);
    }
  }
}
