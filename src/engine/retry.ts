import { KubeApiError, UnreachableError } from '../kube/client.ts';

export interface RetryOptions {
  /** Attempts in all, the first included (default 6). */
  attempts?: number;
  /** First delay (default 200 ms); doubles each time, with ±20 % jitter, capped at maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Called before each wait. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Which errors to retry (default: isTransient). */
  retryable?: (err: unknown) => boolean;
  sleep?: (ms: number) => Promise<void>;
}

/** 429, 5xx (but 501) and network timeouts/resets are worth another try; 409 is not: the caller must re-read. */
export function isTransient(err: unknown): boolean {
  if (err instanceof KubeApiError) return err.status === 429 || (err.status >= 500 && err.status !== 501);
  if (err instanceof UnreachableError) return /timed out|ECONNRESET|ECONNREFUSED|UND_ERR_SOCKET/.test(err.message);
  return false;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 6;
  const base = opts.baseDelayMs ?? 200;
  const max = opts.maxDelayMs ?? 10_000;
  const retryable = opts.retryable ?? isTransient;
  const wait = opts.sleep ?? sleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (attempt >= attempts || !retryable(e)) throw e;
      const delay = Math.min(max, base * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4);
      opts.onRetry?.(e, attempt, delay);
      await wait(delay);
    }
  }
}

/** Poll `fn` until it returns a value other than undefined, or time out with `what` in the message. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const interval = opts.intervalMs ?? 250;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round((opts.timeoutMs ?? 60_000) / 1000)}s waiting for ${what}`);
    await sleep(interval);
  }
}
