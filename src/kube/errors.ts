import { UserError, type ErrorKind } from '../errors.ts';
import { redact } from './redact.ts';

/** The cluster could not be reached (refused, DNS, TLS, timeout, not an API server), or there is no kubeconfig. */
export class UnreachableError extends UserError {
  constructor(message: string) {
    super(redact(message), 'unreachable');
    this.name = 'UnreachableError';
  }
}

/** A non-2xx answer from the API server. */
export class KubeApiError extends UserError {
  readonly status: number;
  readonly reason?: string;
  readonly method: string;
  readonly path: string;
  /** A 429 or 5xx answer's Retry-After, in ms (seconds or an HTTP date, as the server sent it). */
  readonly retryAfterMs?: number;
  constructor(method: string, path: string, status: number, reason: string | undefined, message: string, kind?: ErrorKind, retryAfterMs?: number) {
    super(redact(message), kind ?? (status === 401 || status === 403 ? 'forbidden' : 'internal'));
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.method = method;
    this.path = path;
    if (retryAfterMs !== undefined) this.retryAfterMs = retryAfterMs;
  }
}
