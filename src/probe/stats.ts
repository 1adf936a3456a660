/**
 * Counting for the prober: one Series per (Service, client kind). Pure: times are passed in (milliseconds on a
 * monotonic clock, relative to the probe's start), nothing here reads a clock or touches the network.
 */

/** Why one request failed. */
export const FAILURE_REASONS = [
  'dns-error', // the DNS server answered with an error (NXDOMAIN, SERVFAIL, no records) or refused
  'dns-timeout', // the DNS server did not answer in time
  'connect-refused', // TCP RST on connect (nothing listening, or no endpoints behind a ClusterIP)
  'connect-timeout', // no TCP connection within the timeout
  'unreachable', // no route to host / network unreachable
  'timeout', // connected, but no complete answer within the timeout
  'reset', // the connection was reset while in use
  'closed', // the peer closed the connection before a complete answer
  'bad-response', // an answer that is not what the protocol expects
  'tls-error', // the TLS handshake failed
  'error', // anything else
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export function isDnsFailure(r: FailureReason): boolean {
  return r === 'dns-error' || r === 'dns-timeout';
}

/** A gap between successes, in ms since the probe's start. */
export interface Gap {
  ms: number;
  /** ms since start at which the gap opened (the previous success, or the start) */
  fromMs: number;
  toMs: number;
}

export interface SeriesSummary {
  requests: number;
  successes: number;
  failures: number;
  /** failures by reason; only reasons that occurred */
  failuresByReason: Partial<Record<FailureReason, number>>;
  /** failures whose reason is dns-error or dns-timeout */
  dnsFailures: number;
  /** longest time between two consecutive successes; absent with fewer than two successes */
  longestGap?: Gap;
  /** from the start to the first success (the whole run when none succeeded) */
  startGap: Gap;
  /** from the last success to the end (the whole run when none succeeded) */
  endGap: Gap;
  /** latency of successful requests, ms; absent with no successes */
  latencyMs?: { p50: number; p99: number; max: number };
  /** the addresses requests went to (as the client saw them, before any mapping), with request counts */
  addresses: Record<string, number>;
  /** long-lived connections: connections that broke (closed or reset by the other side, or a failed exchange) */
  breaks?: number;
  /** long-lived connections: connections opened after the first one */
  reconnects?: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

export class Series {
  private requests = 0;
  private successes = 0;
  private readonly failures = new Map<FailureReason, number>();
  private readonly latencies: number[] = [];
  private readonly addresses = new Map<string, number>();
  private firstSuccess: number | undefined;
  private lastSuccess: number | undefined;
  private longest: Gap | undefined;
  private readonly long: boolean;
  private breaks = 0;
  private reconnects = 0;

  constructor(opts: { longLived?: boolean } = {}) {
    this.long = opts.longLived === true;
  }

  success(atMs: number, latencyMs: number, address?: string): void {
    this.requests++;
    this.successes++;
    this.latencies.push(latencyMs);
    this.addAddress(address);
    if (this.lastSuccess !== undefined) {
      const ms = atMs - this.lastSuccess;
      if (!this.longest || ms > this.longest.ms) this.longest = { ms, fromMs: this.lastSuccess, toMs: atMs };
    } else {
      this.firstSuccess = atMs;
    }
    this.lastSuccess = atMs;
  }

  failure(reason: FailureReason, address?: string): void {
    this.requests++;
    this.failures.set(reason, (this.failures.get(reason) ?? 0) + 1);
    this.addAddress(address);
  }

  connectionBroke(): void { this.breaks++; }
  reconnected(): void { this.reconnects++; }

  private addAddress(address: string | undefined): void {
    if (address !== undefined) this.addresses.set(address, (this.addresses.get(address) ?? 0) + 1);
  }

  /** The summary for a run that ended at `endMs` (ms since start). */
  summary(endMs: number): SeriesSummary {
    const failuresByReason: Partial<Record<FailureReason, number>> = {};
    let failures = 0;
    let dnsFailures = 0;
    for (const r of FAILURE_REASONS) {
      const n = this.failures.get(r);
      if (!n) continue;
      failuresByReason[r] = n;
      failures += n;
      if (isDnsFailure(r)) dnsFailures += n;
    }
    const gap = (fromMs: number, toMs: number): Gap => ({ ms: round(toMs - fromMs), fromMs: round(fromMs), toMs: round(toMs) });
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const s: SeriesSummary = {
      requests: this.requests,
      successes: this.successes,
      failures,
      failuresByReason,
      dnsFailures,
      longestGap: this.longest ? gap(this.longest.fromMs, this.longest.toMs) : undefined,
      startGap: gap(0, this.firstSuccess ?? endMs),
      endGap: gap(this.lastSuccess ?? 0, endMs),
      latencyMs: sorted.length
        ? { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted[sorted.length - 1]!) }
        : undefined,
      addresses: Object.fromEntries(this.addresses),
    };
    if (this.long) {
      s.breaks = this.breaks;
      s.reconnects = this.reconnects;
    }
    return s;
  }
}
