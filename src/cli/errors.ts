import type { ErrorKind } from '../errors.ts';

/**
 * Exit codes and the error types that map onto them. Every failure the user can cause or meet ends as
 * one `error:` line on stderr and one of these codes; a stack trace is printed only with -v.
 */
export const ExitCode = {
  ok: 0,
  /** `inspect --exit-code` (or `verify`) found conflicts or problems; like `kubectl diff`, 1 means "differences found". */
  findings: 1,
  /** Bad command line or bad value: malformed CIDR, wrong family, unknown flag, overlapping target. */
  usage: 2,
  /** An input file could not be read or is not Kubernetes YAML/JSON. */
  input: 3,
  /** The cluster could not be reached (connection refused, DNS, TLS, timeout) or no kubeconfig. */
  unreachable: 4,
  /** The cluster refused us: unauthenticated (401) or not allowed (403). */
  forbidden: 5,
  /** A step's verification (or `verify`) found the cluster not in the expected state; nothing further was changed. */
  verifyFailed: 6,
  /** apply/resume stopped at a gate that needs a person or a pipeline (the message says what to do); run `resume` after. */
  gate: 7,
  /** Another run holds the lock (a Lease in the cluster, or the local state lock). */
  locked: 8,
  /** Internal error: a bug. Run with -v and report it. */
  internal: 70,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code each kind of error ends in: the one place kinds become numbers. */
export const EXIT_CODE_OF_KIND: Record<ErrorKind, ExitCodeValue> = {
  findings: ExitCode.findings,
  usage: ExitCode.usage,
  input: ExitCode.input,
  unreachable: ExitCode.unreachable,
  forbidden: ExitCode.forbidden,
  verify: ExitCode.verifyFailed,
  gate: ExitCode.gate,
  locked: ExitCode.locked,
  internal: ExitCode.internal,
};

export { InputError, UsageError, UserError } from '../errors.ts';
export type { ErrorKind } from '../errors.ts';
