/**
 * Retries and waits: kept as the engine's older entry point; the implementations live in the toolkit
 * (src/engine/toolkit.ts).
 */
import { poll } from './toolkit.ts';

export { isTransient, type RetryOptions, sleep, withRetry } from './toolkit.ts';

/** Poll `fn` until it returns a value other than undefined, or time out with `what` in the message. */
export function waitFor<T>(what: string, fn: () => Promise<T | undefined>, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  return poll(what, () => fn(), { timeoutMs: opts.timeoutMs, intervalMs: opts.intervalMs });
}
