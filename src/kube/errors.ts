import { UserError } from '../errors.ts';
import { redact } from './redact.ts';

/** The cluster could not be reached (refused, DNS, TLS, timeout, not an API server), or there is no kubeconfig. */
export class UnreachableError extends UserError {
  constructor(message: string) {
    super(redact(message), 'unreachable');
    this.name = 'UnreachableError';
  }
}
