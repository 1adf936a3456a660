/**
 * Continuous clients that measure whether a migration causes failed requests. Each client kind is a loop: one
 * request, then wait out the rest of the interval. See docs/probe.md.
 */
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Series, type FailureReason, type SeriesSummary } from './stats.ts';
import { Conn, echoFramer, httpFramer, oneShot, type Dial, type Framer, type Outcome, type Protocol } from './wire.ts';

export const CLIENT_KINDS = ['dns', 'env', 'kubernetes', 'long', 'nodeport'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/**
 * The kinds run when none are asked for: dns, env, kubernetes and long, and nodeport when there are node-port
 * targets (a probe without them reports as it did before the nodeport kind existed).
 */
export function defaultKinds(hasNodePorts: boolean): ClientKind[] {
  return CLIENT_KINDS.filter((k) => k !== 'nodeport' || hasNodePorts);
}

export interface ServiceTarget {
  namespace: string;
  name: string;
  port: number;
}

/** A Service's node port: the nodeport client connects to `<node address>:nodePort`. */
export interface NodePortTarget {
  namespace: string;
  name: string;
  nodePort: number;
}

export interface ProbeOptions {
  services: ServiceTarget[];
  kinds: ClientKind[];
  /** the nodeport client's targets (one client each) */
  nodePorts?: NodePortTarget[];
  /** the node address the nodeport client connects to (an IP); needed when it runs */
  nodeAddress?: string;
  /** The cluster DNS server, `IP` or `IP:PORT` (`[IPv6]:PORT`); needed by dns, long, and kubernetes without an address. */
  dnsServer?: string;
  /** default cluster.local */
  clusterDomain?: string;
  /** default 20 */
  intervalMs?: number;
  /** per-request timeout (DNS lookup, connect and answer together); default 1000 */
  timeoutMs?: number;
  /** default echo */
  protocol?: Protocol;
  /** HTTP path; default / */
  httpPath?: string;
  /** long-lived connections per Service; default 1 */
  connections?: number;
  /** A, AAAA, or A then AAAA when there is no A record (default) */
  family?: 4 | 6 | 'any';
  /** kubernetes client: connect here (`HOST[:PORT]`, default port 443) instead of resolving kubernetes.default.svc */
  kubernetesAddress?: string;
  /** where the env client learns each Service's ClusterIP at start: `<NAME>_SERVICE_HOST` (default: process.env) */
  env?: NodeJS.ProcessEnv;
  /** stop after this long; otherwise run until `signal` aborts */
  durationMs?: number;
  signal?: AbortSignal;
  /**
   * Rewrite the address a client is about to connect to. The report keeps the address the client chose; for
   * tests and port-forwarded setups.
   */
  mapAddress?: (host: string, port: number) => { host: string; port: number };
  /**
   * Call `onReport` with the cumulative report so far (`stoppedBy: 'running'`) every this many ms while the
   * clients run; the report `probe()` resolves with is the final one.
   */
  reportEveryMs?: number;
  onReport?: (report: ProbeReport) => void;
  /** Called on every failure, for progress output. */
  onFailure?: (e: { service: string; kind: ClientKind; reason: FailureReason; address?: string; detail?: string; atMs: number }) => void;
}

export interface ProbeResult extends SeriesSummary {
  /** namespace/name */
  service: string;
  /** the Service port; for the nodeport kind the node port */
  port: number;
  kind: ClientKind;
  /** env client: the address learned at start and where it came from */
  startAddress?: { address: string; from: 'env' | 'dns' };
}

export interface ProbeReport {
  apiVersion: 'kube-renumber.io/v1';
  kind: 'ProbeReport';
  startedAt: string;
  endedAt: string;
  durationMs: number;
  /** `running`: an interim report (printed every `--report-every` by the in-pod probe), not the final one */
  stoppedBy: 'duration' | 'signal' | 'running';
  settings: {
    kinds: ClientKind[];
    intervalMs: number;
    timeoutMs: number;
    protocol: Protocol;
    clusterDomain: string;
    dnsServer?: string;
    kubernetesAddress?: string;
    /** the nodeport client's node address */
    nodeAddress?: string;
    connections: number;
  };
  totals: { requests: number; failures: number; dnsFailures: number; breaks: number };
  results: ProbeResult[];
}

export const KUBERNETES_SERVICE: ServiceTarget = { namespace: 'default', name: 'kubernetes', port: 443 };

/** `NAME_SERVICE_HOST` as the kubelet spells it: upper case, dashes to underscores. */
export function envVarName(service: string): string {
  return `${service.toUpperCase().replace(/-/g, '_')}_SERVICE_HOST`;
}

/** Split `HOST[:PORT]` / `[IPv6]:PORT` / bare IPv6; throws on a malformed value. */
export function splitHostPort(value: string, defaultPort: number): { host: string; port: number } {
  const v = value.trim();
  let host = v;
  let port = defaultPort;
  const bracket = v.match(/^\[([^\]]+)\](?::(\d+))?$/);
  if (bracket) {
    host = bracket[1]!;
    if (bracket[2] !== undefined) port = Number(bracket[2]);
  } else if (isIP(v) !== 6) {
    const m = v.match(/^([^:]+)(?::(\d+))?$/);
    if (!m) throw new Error(`"${value}" is not HOST[:PORT]`);
    host = m[1]!;
    if (m[2] !== undefined) port = Number(m[2]);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`"${value}": port must be 1-65535`);
  if (!host) throw new Error(`"${value}" has no host`);
  return { host, port };
}

interface Ctx {
  opts: ProbeOptions;
  stop: AbortSignal;
  t0: number;
  intervalMs: number;
  timeoutMs: number;
  domain: string;
  resolvers: Resolver[];
  now(): number;
}

/** A fresh Resolver per client loop, so stopping can cancel its queries. */
function newResolver(ctx: Ctx): Resolver | undefined {
  if (!ctx.opts.dnsServer) return undefined;
  const r = new Resolver({ timeout: ctx.timeoutMs, tries: 1 });
  const { host, port } = splitHostPort(ctx.opts.dnsServer, 53);
  r.setServers([isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`]);
  ctx.resolvers.push(r);
  return r;
}

type Lookup = { ok: true; address: string } | { ok: false; reason: FailureReason | 'aborted'; detail?: string };

async function lookup(ctx: Ctx, r: Resolver | undefined, name: string): Promise<Lookup> {
  if (!r) return { ok: false, reason: 'dns-error', detail: 'no DNS server' };
  const family = ctx.opts.family ?? 'any';
  try {
    if (family === 4 || family === 'any') {
      try {
        const a = await r.resolve4(name);
        if (a.length) return { ok: true, address: a[0]! };
        if (family === 4) return { ok: false, reason: 'dns-error', detail: 'no A record' };
      } catch (e) {
        if (family === 4 || (e as { code?: string }).code !== 'ENODATA') throw e;
      }
    }
    const aaaa = await r.resolve6(name);
    if (aaaa.length) return { ok: true, address: aaaa[0]! };
    return { ok: false, reason: 'dns-error', detail: 'no address record' };
  } catch (e) {
    if (ctx.stop.aborted) return { ok: false, reason: 'aborted' };
    const code = (e as { code?: string }).code;
    return { ok: false, reason: code === 'ETIMEOUT' || code === 'ETIMEDOUT' ? 'dns-timeout' : 'dns-error', detail: `${code ?? ''} ${(e as Error).message}`.trim() };
  }
}

function dial(ctx: Ctx, host: string, port: number, tlsServerName?: string): Dial {
  const m = ctx.opts.mapAddress ? ctx.opts.mapAddress(host, port) : { host, port };
  return { ...m, tlsServerName };
}

function framerFor(ctx: Ctx, svc: ServiceTarget, keepAlive: boolean): Framer {
  const host = `${svc.name}.${svc.namespace}.svc.${ctx.domain}`;
  return (ctx.opts.protocol ?? 'echo') === 'http' ? httpFramer(host, ctx.opts.httpPath ?? '/', keepAlive) : echoFramer();
}

class Recorder {
  readonly series: Series;
  private readonly ctx: Ctx;
  readonly svc: ServiceTarget;
  readonly kind: ClientKind;
  constructor(ctx: Ctx, svc: ServiceTarget, kind: ClientKind) {
    this.ctx = ctx;
    this.svc = svc;
    this.kind = kind;
    this.series = new Series({ longLived: kind === 'long' });
  }
  get id(): string { return `${this.svc.namespace}/${this.svc.name}`; }
  /** Record one request's outcome; false when the probe was stopping (nothing recorded). */
  record(o: Outcome | Lookup, started: number, address?: string): boolean {
    if (!o.ok && o.reason === 'aborted') return false;
    if (this.ctx.stop.aborted) return false;
    const at = this.ctx.now();
    if (o.ok) this.series.success(at, at - started, address);
    else {
      const reason = o.reason as FailureReason;
      this.series.failure(reason, address);
      const detail = 'detail' in o ? o.detail?.split('\n')[0]?.trim() : undefined;
      this.ctx.opts.onFailure?.({ service: this.id, kind: this.kind, reason, address, detail, atMs: at });
    }
    return true;
  }
}

async function every(ctx: Ctx, tick: () => Promise<void>): Promise<void> {
  while (!ctx.stop.aborted) {
    const started = performance.now();
    await tick();
    const wait = ctx.intervalMs - (performance.now() - started);
    if (wait > 0 && !ctx.stop.aborted) {
      try { await sleep(wait, undefined, { signal: ctx.stop }); } catch { /* stopped */ }
    }
  }
}

const serviceName = (ctx: Ctx, s: ServiceTarget) => `${s.name}.${s.namespace}.svc.${ctx.domain}`;

/** (a) resolve the Service name on every request, then connect to the answer. */
async function dnsClient(ctx: Ctx, rec: Recorder): Promise<void> {
  const r = newResolver(ctx);
  const framer = framerFor(ctx, rec.svc, false);
  await every(ctx, async () => {
    const started = ctx.now();
    const l = await lookup(ctx, r, serviceName(ctx, rec.svc));
    if (!l.ok) { rec.record(l, started); return; }
    const lookupMs = ctx.now() - started;
    const left = Math.max(1, ctx.timeoutMs - lookupMs);
    const o = await oneShot(dial(ctx, l.address, rec.svc.port), framer, left, ctx.stop);
    // a slow answer leaves little of the timeout for the connection: say how long the lookup took
    const seen = !o.ok && o.reason !== 'aborted' ? { ...o, detail: [o.detail, `after a ${Math.round(lookupMs)} ms lookup`].filter(Boolean).join('; ') } : o;
    rec.record(seen, started, l.address);
  });
}

/** (b) connect to the ClusterIP learned at start (env var, else one DNS lookup), never re-resolving. */
async function envClient(ctx: Ctx, rec: Recorder, result: { startAddress?: ProbeResult['startAddress'] }): Promise<void> {
  const env = ctx.opts.env ?? process.env;
  const fromEnv = env[envVarName(rec.svc.name)];
  let address: string | undefined;
  if (fromEnv && isIP(fromEnv)) {
    address = fromEnv;
    result.startAddress = { address, from: 'env' };
  }
  const r = address ? undefined : newResolver(ctx);
  const framer = framerFor(ctx, rec.svc, false);
  await every(ctx, async () => {
    const started = ctx.now();
    if (!address) {
      // Not learned yet: keep trying until the first answer, then freeze it.
      const l = await lookup(ctx, r, serviceName(ctx, rec.svc));
      if (!l.ok) { rec.record(l, started); return; }
      address = l.address;
      result.startAddress = { address, from: 'dns' };
    }
    const left = Math.max(1, ctx.timeoutMs - (ctx.now() - started));
    rec.record(await oneShot(dial(ctx, address, rec.svc.port), framer, left, ctx.stop), started, address);
  });
}

/** (c) TLS handshake with kubernetes.default.svc (resolved every time) or a given address. */
async function kubernetesClient(ctx: Ctx, rec: Recorder): Promise<void> {
  const fixed = ctx.opts.kubernetesAddress ? splitHostPort(ctx.opts.kubernetesAddress, 443) : undefined;
  const r = fixed ? undefined : newResolver(ctx);
  const name = `kubernetes.default.svc.${ctx.domain}`;
  await every(ctx, async () => {
    const started = ctx.now();
    let host: string;
    let port = 443;
    if (fixed) ({ host, port } = fixed);
    else {
      const l = await lookup(ctx, r, name);
      if (!l.ok) { rec.record(l, started); return; }
      host = l.address;
    }
    const left = Math.max(1, ctx.timeoutMs - (ctx.now() - started));
    rec.record(await oneShot(dial(ctx, host, port, 'kubernetes.default.svc'), undefined, left, ctx.stop), started, host);
  });
}

/** (d) one long-lived connection: an exchange every interval; on a break, count it and reconnect (re-resolving). */
async function longClient(ctx: Ctx, rec: Recorder, startAddress: () => string | undefined): Promise<void> {
  const r = newResolver(ctx);
  const framer = framerFor(ctx, rec.svc, true);
  let conn: Conn | undefined;
  let address: string | undefined;
  let opened = 0;
  let seq = 0;
  const left = (started: number) => performance.now() + Math.max(1, ctx.timeoutMs - (ctx.now() - started));
  /** A new connection (resolving the name again); a failed Outcome when it cannot be opened. */
  const reconnect = async (started: number): Promise<Outcome | undefined> => {
    if (conn) {
      conn.reportBreak();
      conn.close();
    }
    conn = undefined;
    let target = r ? undefined : startAddress();
    if (!target) {
      const l = await lookup(ctx, r, serviceName(ctx, rec.svc));
      if (!l.ok) return l;
      target = l.address;
    }
    address = target;
    const c = new Conn(dial(ctx, target, rec.svc.port));
    const up = await c.open(left(started), ctx.stop);
    if (!up.ok) { c.close(); return up; }
    if (opened++ > 0) rec.series.reconnected();
    c.onBreak = () => { if (!ctx.stop.aborted) rec.series.connectionBroke(); };
    conn = c;
    return undefined;
  };
  try {
    await every(ctx, async () => {
      const started = ctx.now();
      if (!conn || !conn.isUsable) {
        const failed = await reconnect(started);
        if (failed) { rec.record(failed, started, address); return; }
      }
      let c = conn!;
      let o = await c.exchange(framer, ++seq, left(started), ctx.stop);
      if (!o.ok && o.reason !== 'aborted' && c.closedBeforeAnswer) {
        // The server closed a kept-alive connection while the request was on its way (a pod shutting down
        // closes its idle connections): no byte of an answer came back, so the request was not processed.
        // Like HTTP clients for idempotent requests (RFC 9110 9.2.2), retry once on a new connection; the
        // break is still counted.
        const failed = await reconnect(started);
        if (failed) { rec.record(failed, started, address); return; }
        c = conn!;
        o = await c.exchange(framer, ++seq, left(started), ctx.stop);
      }
      if (!rec.record(o, started, address)) return;
      if (!o.ok) {
        // a failed exchange ends this connection (one break, however it was noticed)
        c.reportBreak();
        c.close();
        conn = undefined;
      }
    });
  } finally {
    if (conn) {
      conn.onBreak = undefined;
      conn.close();
    }
  }
}

/** (e) the Service's node port on one node: connect to `host:nodePort`, one exchange, close (like env). */
async function nodePortClient(ctx: Ctx, rec: Recorder, host: string): Promise<void> {
  const framer = framerFor(ctx, rec.svc, false);
  await every(ctx, async () => {
    const started = ctx.now();
    rec.record(await oneShot(dial(ctx, host, rec.svc.port), framer, ctx.timeoutMs, ctx.stop), started, host);
  });
}

/** Run the clients until the duration passes or `signal` aborts; then the report. */
export async function probe(opts: ProbeOptions): Promise<ProbeReport> {
  const kinds = [...new Set(opts.kinds)];
  if (kinds.includes('nodeport') && (!opts.nodeAddress || !isIP(opts.nodeAddress))) throw new Error('the nodeport client needs nodeAddress, an IP address');
  const stopper = new AbortController();
  let stoppedBy: ProbeReport['stoppedBy'] = 'signal';
  const onAbort = () => { stopper.abort(); };
  if (opts.signal) {
    if (opts.signal.aborted) stopper.abort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });
  }
  const timer = opts.durationMs !== undefined
    ? setTimeout(() => { stoppedBy = 'duration'; stopper.abort(); }, opts.durationMs)
    : undefined;
  const t0 = performance.now();
  const startedAt = new Date();
  const ctx: Ctx = {
    opts,
    stop: stopper.signal,
    t0,
    intervalMs: opts.intervalMs ?? 20,
    timeoutMs: opts.timeoutMs ?? 1000,
    domain: (opts.clusterDomain ?? 'cluster.local').replace(/\.$/, ''),
    resolvers: [],
    now: () => performance.now() - t0,
  };
  const cancelDns = () => { for (const r of ctx.resolvers) r.cancel(); };
  stopper.signal.addEventListener('abort', cancelDns, { once: true });

  const recorders: Array<{ rec: Recorder; extra: { startAddress?: ProbeResult['startAddress'] } }> = [];
  const loops: Array<Promise<void>> = [];
  const connections = Math.max(1, opts.connections ?? 1);
  for (const kind of kinds) {
    const targets: ServiceTarget[] = kind === 'kubernetes'
      ? [{ ...KUBERNETES_SERVICE, port: opts.kubernetesAddress ? splitHostPort(opts.kubernetesAddress, 443).port : 443 }]
      : kind === 'nodeport'
        ? (opts.nodePorts ?? []).map((t) => ({ namespace: t.namespace, name: t.name, port: t.nodePort }))
        : opts.services;
    for (const svc of targets) {
      const rec = new Recorder(ctx, svc, kind);
      const extra: { startAddress?: ProbeResult['startAddress'] } = {};
      recorders.push({ rec, extra });
      if (kind === 'dns') loops.push(dnsClient(ctx, rec));
      else if (kind === 'env') loops.push(envClient(ctx, rec, extra));
      else if (kind === 'kubernetes') loops.push(kubernetesClient(ctx, rec));
      else if (kind === 'nodeport') loops.push(nodePortClient(ctx, rec, opts.nodeAddress!));
      else {
        const env = opts.env ?? process.env;
        const fixed = env[envVarName(svc.name)];
        for (let i = 0; i < connections; i++) loops.push(longClient(ctx, rec, () => (fixed && isIP(fixed) ? fixed : undefined)));
      }
    }
  }
  const snapshot = (end: number, by: ProbeReport['stoppedBy']): ProbeReport => {
    const endedAt = new Date(startedAt.getTime() + end);
    const results: ProbeResult[] = recorders.map(({ rec, extra }) => ({
      service: rec.id,
      port: rec.svc.port,
      kind: rec.kind,
      ...(extra.startAddress ? { startAddress: extra.startAddress } : {}),
      ...rec.series.summary(end),
    }));
    const totals = sumTotals(results);
    return {
      apiVersion: 'kube-renumber.io/v1',
      kind: 'ProbeReport',
      startedAt: startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      durationMs: Math.round(end),
      stoppedBy: by,
      settings: {
        kinds,
        intervalMs: ctx.intervalMs,
        timeoutMs: ctx.timeoutMs,
        protocol: opts.protocol ?? 'echo',
        clusterDomain: ctx.domain,
        dnsServer: opts.dnsServer,
        kubernetesAddress: opts.kubernetesAddress,
        ...(kinds.includes('nodeport') ? { nodeAddress: opts.nodeAddress } : {}),
        connections,
      },
      totals,
      results,
    };
  };
  const ticker = opts.onReport && opts.reportEveryMs && opts.reportEveryMs > 0
    ? setInterval(() => { if (!stopper.signal.aborted) opts.onReport!(snapshot(ctx.now(), 'running')); }, opts.reportEveryMs)
    : undefined;
  // A loop that throws (a bug, or a throwing mapAddress) stops all the others; the error is re-thrown.
  let settled: PromiseSettledResult<void>[];
  try {
    settled = await Promise.allSettled(loops.map((l) => l.catch((e: unknown) => { stopper.abort(); throw e; })));
  } finally {
    if (ticker) clearInterval(ticker);
  }
  if (timer) clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return snapshot(ctx.now(), stoppedBy);
}

/** A report's totals: requests, failures, DNS failures and breaks summed over its results. */
export function sumTotals(results: readonly ProbeResult[]): ProbeReport['totals'] {
  const totals = { requests: 0, failures: 0, dnsFailures: 0, breaks: 0 };
  for (const r of results) {
    totals.requests += r.requests;
    totals.failures += r.failures;
    totals.dnsFailures += r.dnsFailures;
    totals.breaks += r.breaks ?? 0;
  }
  return totals;
}
