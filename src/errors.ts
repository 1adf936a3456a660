/**
 * The errors the user can cause or meet, by kind. This module imports nothing: every layer (net, cluster, plan,
 * engine, kube, probe) throws these, and only the CLI maps a kind to an exit code (src/cli/errors.ts).
 */

/** What went wrong, as far as the user is concerned. */
export type ErrorKind =
  /** The command ran and found something (conflicts, no free range, nothing started). */
  | 'findings'
  /** Bad command line or bad value: malformed CIDR, wrong family, unknown flag, overlapping target. */
  | 'usage'
  /** An input file could not be read or is not what it should be (dump, plan, config, kubeconfig, journal). */
  | 'input'
  /** The cluster could not be reached (connection refused, DNS, TLS, timeout) or there is no kubeconfig. */
  | 'unreachable'
  /** The cluster refused us: unauthenticated (401) or not allowed (403). */
  | 'forbidden'
  /** The cluster is not in the state a step or `verify` expected. */
  | 'verify'
  /** A run stopped at a gate or a confirmation. */
  | 'gate'
  /** Another run holds the lock. */
  | 'locked'
  /** A bug. */
  | 'internal';

/** An error whose message is already one clear line for the user. */
export class UserError extends Error {
  readonly kind: ErrorKind;
  constructor(message: string, kind: ErrorKind) {
    super(message);
    this.name = 'UserError';
    this.kind = kind;
  }
}

export class UsageError extends UserError {
  constructor(message: string) {
    super(message, 'usage');
    this.name = 'UsageError';
  }
}

/** Bad input files: unreadable, not YAML/JSON, not Kubernetes objects, empty. */
export class InputError extends UserError {
  constructor(message: string) {
    super(message, 'input');
    this.name = 'InputError';
  }
}

/** The first line of what was thrown: an Error's message up to its first newline, anything else as a string. */
export function errorLine(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0]! : String(e);
}
