// A fault-injecting reverse proxy between a client (the CLI under test) and the testbed's kube-apiserver, on
// 127.0.0.1. For a share of the requests it passes through (seeded, so the sequence of decisions is the same
// for the same seed and the same sequence of requests) it does one of:
//
//   429          answers 429 TooManyRequests with Retry-After, without forwarding (as API priority and fairness does)
//   500          answers 500 InternalError without forwarding
//   503          answers 503 ServiceUnavailable without forwarding (every other one with Retry-After)
//   reset        forwards the request, waits for the apiserver's whole answer (the request was applied), then
//                closes the connection without sending it: the client sees a reset and never learns the outcome
//   slow         forwards the request and holds the answer back for a while before sending it
//
// Everything else is forwarded untouched. Every request is counted by method, and every fault by kind and by
// method (stats()). Leases are faulted like everything else. Watches are forwarded as streams and never faulted.
// The tests' own kubectl talks to the apiserver directly, never through the proxy.
//
//   const proxy = await FaultProxy.start({ target: tb.server, cert, key, rate: 0.15, seed: 42 });
//   ... the CLI with a kubeconfig whose server is proxy.url ...
//   proxy.stats()   // { requests, faulted, rate, byKind, byMethod }
//   proxy.timeline()  // with timeline: true, each counted request's arrival time, method, path and fault
//   await proxy.stop();

import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export const FAULT_KINDS = ['429', '500', '503', 'reset', 'slow'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultProxyOptions {
  /** The apiserver's URL (https://127.0.0.1:PORT). */
  target: string;
  /** The proxy's serving certificate and key (PEM); without them it serves plain http. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Share of requests faulted, 0..1 (default 0.15). */
  rate?: number;
  /** Relative weight of each kind (default: all equal). */
  weights?: Partial<Record<FaultKind, number>>;
  /** PRNG seed (default 1). */
  seed?: number;
  /** Retry-After sent with 429 (and every other 503), in seconds (default 1). */
  retryAfterSeconds?: number;
  /** How long a slow answer is held back: uniformly in [min, max] ms (default 200..1500). */
  slowMs?: [number, number];
  /**
   * Besides the seeded share: the `nth` request to a Lease (from 1) gets this fault when the draw left it alone, so
   * that a run is sure to meet a faulted lock request however few it makes.
   */
  leaseFault?: { nth: number; kind: FaultKind };
  /** Keep a timeline of every counted request (arrival time, method, path, fault): timeline(). */
  timeline?: boolean;
}

/** One counted request as the proxy saw it arrive. */
export interface TimelineEntry { at: number; method: string; path: string; fault?: FaultKind }

export interface FaultStats {
  requests: number;
  faulted: number;
  /** faulted / requests */
  rate: number;
  byKind: Record<FaultKind, number>;
  byMethod: Record<string, { requests: number; faults: Partial<Record<FaultKind, number>> }>;
  /** Requests to Leases (the lock) and faults among them. */
  leases: { requests: number; faulted: number };
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The fault for one request, or undefined: a pure function of the PRNG's next draws. */
export function decide(random: () => number, rate: number, weights: Record<FaultKind, number>): FaultKind | undefined {
  const hit = random() < rate;
  const pick = random();
  if (!hit) return undefined;
  const total = FAULT_KINDS.reduce((s, k) => s + weights[k], 0);
  let x = pick * total;
  for (const k of FAULT_KINDS) {
    x -= weights[k];
    if (x < 0) return k;
  }
  return FAULT_KINDS[FAULT_KINDS.length - 1];
}

function statusBody(code: number, reason: string, message: string, retryAfter?: number): string {
  return JSON.stringify({
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code,
    ...(retryAfter !== undefined ? { details: { retryAfterSeconds: retryAfter } } : {}),
  });
}

export class FaultProxy {
  readonly url: string;
  readonly #server: http.Server;
  readonly #sockets = new Set<Socket>();
  readonly #stats: FaultStats;
  readonly #timeline: TimelineEntry[] = [];

  private constructor(server: http.Server, url: string) {
    this.#server = server;
    this.url = url;
    this.#stats = {
      requests: 0, faulted: 0, rate: 0,
      byKind: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
      byMethod: {},
      leases: { requests: 0, faulted: 0 },
    };
    server.on('connection', (s: Socket) => { this.#sockets.add(s); s.on('close', () => this.#sockets.delete(s)); });
    server.on('secureConnection', (s: Socket) => { this.#sockets.add(s); s.on('close', () => this.#sockets.delete(s)); });
  }

  static async start(opts: FaultProxyOptions): Promise<FaultProxy> {
    const target = new URL(opts.target);
    const random = seeded(opts.seed ?? 1);
    const rate = opts.rate ?? 0.15;
    const weights = Object.fromEntries(FAULT_KINDS.map((k) => [k, opts.weights?.[k] ?? 1])) as Record<FaultKind, number>;
    const retryAfter = opts.retryAfterSeconds ?? 1;
    const [slowMin, slowMax] = opts.slowMs ?? [200, 1500];
    const upstreamAgent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
    let proxy: FaultProxy | undefined;
    let n503 = 0;

    const forward = (req: http.IncomingMessage, body: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> =>
      new Promise((resolve, reject) => {
        const up = (target.protocol === 'https:' ? https : http).request({
          hostname: target.hostname, port: target.port, path: req.url, method: req.method,
          headers: { ...req.headers, host: target.host }, agent: target.protocol === 'https:' ? upstreamAgent : undefined,
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        });
        up.on('error', reject);
        up.end(body);
      });

    const send = (res: http.ServerResponse, a: { status: number; headers: http.IncomingHttpHeaders; body: Buffer }) => {
      const headers: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(a.headers)) {
        if (v === undefined || ['connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(k)) continue;
        headers[k] = v;
      }
      headers['content-length'] = a.body.length;
      res.writeHead(a.status, headers);
      res.end(a.body);
    };

    const handler = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1' || url.searchParams.get('follow') === 'true') {
        // streams: piped through untouched, not counted
        const up = (target.protocol === 'https:' ? https : http).request({
          hostname: target.hostname, port: target.port, path: req.url, method,
          headers: { ...req.headers, host: target.host }, agent: target.protocol === 'https:' ? upstreamAgent : undefined,
        }, (ures) => { res.writeHead(ures.statusCode ?? 502, ures.headers); ures.pipe(res); });
        up.on('error', () => res.destroy());
        up.end(body);
        return;
      }
      const st = proxy!.#stats;
      const lease = url.pathname.includes('/leases');
      const drawn = decide(random, rate, weights);
      const kind = drawn ?? (lease && opts.leaseFault && st.leases.requests + 1 === opts.leaseFault.nth ? opts.leaseFault.kind : undefined);
      st.requests++;
      const m = (st.byMethod[method] ??= { requests: 0, faults: {} });
      m.requests++;
      if (lease) st.leases.requests++;
      if (kind) {
        st.faulted++;
        st.byKind[kind]++;
        m.faults[kind] = (m.faults[kind] ?? 0) + 1;
        if (lease) st.leases.faulted++;
      }
      st.rate = st.faulted / st.requests;
      if (opts.timeline) proxy!.#timeline.push({ at: Date.now(), method, path: url.pathname, ...(kind ? { fault: kind } : {}) });
      const json = { 'content-type': 'application/json' };
      try {
        switch (kind) {
          case '429':
            res.writeHead(429, { ...json, 'retry-after': String(retryAfter) });
            res.end(statusBody(429, 'TooManyRequests', 'Too many requests, please try again later.', retryAfter));
            return;
          case '500':
            res.writeHead(500, json);
            res.end(statusBody(500, 'InternalError', 'Internal error occurred: injected fault'));
            return;
          case '503': {
            const ra = n503++ % 2 === 0 ? retryAfter : undefined;
            res.writeHead(503, { ...json, ...(ra !== undefined ? { 'retry-after': String(ra) } : {}) });
            res.end(statusBody(503, 'ServiceUnavailable', 'the server is currently unable to handle the request', ra));
            return;
          }
          case 'reset': {
            await forward(req, body);
            // the apiserver applied it; its answer is lost
            req.socket.destroy();
            return;
          }
          case 'slow': {
            const a = await forward(req, body);
            await new Promise((r) => setTimeout(r, slowMin + random() * (slowMax - slowMin)));
            send(res, a);
            return;
          }
          default:
            send(res, await forward(req, body));
        }
      } catch {
        req.socket.destroy();
      }
    };

    const server = opts.cert && opts.key
      ? https.createServer({ cert: opts.cert, key: opts.key }, (q, r) => { void handler(q, r); })
      : http.createServer((q, r) => { void handler(q, r); });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    proxy = new FaultProxy(server, `${opts.cert ? 'https' : 'http'}://127.0.0.1:${port}`);
    server.on('close', () => upstreamAgent.destroy());
    return proxy;
  }

  /** The figures so far (a copy). */
  stats(): FaultStats {
    return JSON.parse(JSON.stringify(this.#stats)) as FaultStats;
  }

  /** Every counted request so far, in arrival order (with `timeline: true`; a copy). */
  timeline(): TimelineEntry[] {
    return this.#timeline.map((e) => ({ ...e }));
  }

  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }
}
