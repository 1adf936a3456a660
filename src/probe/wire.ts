/**
 * The request/response exchange the probe clients do with a target server, over one TCP (or TLS) connection.
 *
 * Protocols (the target servers must speak one):
 * - `echo`: the client sends one line `kube-renumber-probe <seq>\n`; the server must send the same line back.
 *   Several lines may follow on one connection (the `long` client sends one per interval).
 * - `http`: the client sends `GET <path> HTTP/1.1`; any complete HTTP/1.x response counts as an answer. The body
 *   is framed by Content-Length, chunked encoding, or (short connections only) the end of the stream.
 * - `tls`: the client only completes a TLS handshake (certificate not verified) and closes.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { FailureReason } from './stats.ts';

export const PROTOCOLS = ['echo', 'http'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export type Outcome = { ok: true } | { ok: false; reason: FailureReason; detail?: string } | { ok: false; reason: 'aborted' };

/** Map a socket or DNS error to a failure reason. `connected`: the TCP connection had been established. */
export function reasonOf(e: unknown, connected: boolean): FailureReason {
  const code = (e as { code?: string } | undefined)?.code ?? '';
  switch (code) {
    case 'ECONNREFUSED': return 'connect-refused';
    case 'ECONNRESET': case 'EPIPE': case 'ECONNABORTED': return 'reset';
    case 'EHOSTUNREACH': case 'ENETUNREACH': case 'EHOSTDOWN': case 'ENETDOWN': case 'EADDRNOTAVAIL': return 'unreachable';
    case 'ETIMEDOUT': return connected ? 'timeout' : 'connect-timeout';
    case 'ENOTFOUND': case 'EAI_AGAIN': case 'EAI_FAIL': case 'EAI_NODATA': case 'EAI_NONAME': return 'dns-error';
  }
  if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS') || /SSL|TLS|certificate/i.test((e as Error)?.message ?? '')) return 'tls-error';
  return 'error';
}

/** Incremental response framing for one request on a connection. */
export interface Framer {
  request(seq: number): Buffer;
  /** Bytes that make up the complete response at the front of `buf`; 0 when incomplete; -1 when malformed. */
  complete(buf: Buffer, ended: boolean): number;
}

export function echoFramer(): Framer {
  let expect = '';
  return {
    request(seq) {
      expect = `kube-renumber-probe ${seq}`;
      return Buffer.from(`${expect}\n`);
    },
    complete(buf) {
      const nl = buf.indexOf(10);
      if (nl < 0) return buf.length > 4096 ? -1 : 0;
      const line = buf.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      return line === expect ? nl + 1 : -1;
    },
  };
}

export function httpFramer(host: string, path: string, keepAlive: boolean): Framer {
  return {
    request() {
      return Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: kube-renumber-probe\r\nAccept: */*\r\n`
        + `Connection: ${keepAlive ? 'keep-alive' : 'close'}\r\n\r\n`);
    },
    complete(buf, ended) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length >= 5 && !buf.subarray(0, 5).equals(Buffer.from('HTTP/'))) return -1;
        return buf.length > 65536 ? -1 : 0;
      }
      const head = buf.subarray(0, end).toString('latin1');
      if (!/^HTTP\/1\.[01] \d{3}/.test(head)) return -1;
      const bodyStart = end + 4;
      const len = head.match(/\r\ncontent-length:\s*(\d+)/i);
      if (len) {
        const total = bodyStart + Number(len[1]);
        return buf.length >= total ? total : 0;
      }
      if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
        // Walk the chunks to the zero-size one and the empty line after it.
        let at = bodyStart;
        for (;;) {
          const lineEnd = buf.indexOf('\r\n', at);
          if (lineEnd < 0) return 0;
          const size = parseInt(buf.subarray(at, lineEnd).toString('latin1').split(';')[0]!.trim(), 16);
          if (!Number.isFinite(size)) return -1;
          if (size === 0) {
            const fin = buf.indexOf('\r\n\r\n', lineEnd);
            return fin < 0 ? 0 : fin + 4;
          }
          at = lineEnd + 2 + size + 2;
          if (buf.length < at) return 0;
        }
      }
      if (/^HTTP\/1\.[01] (1\d\d|204|304)/.test(head)) return bodyStart;
      return ended ? buf.length : 0;
    },
  };
}

export interface Dial {
  host: string;
  port: number;
  /** TLS: complete a handshake with this server name, certificate not verified */
  tlsServerName?: string;
}

/**
 * A connection that can carry several exchanges, one at a time. Used directly by the long-lived client; a
 * short request is connect + one exchange + close.
 */
export class Conn {
  private socket: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;
  private closedErr: unknown;
  private closed = false;
  private wake: (() => void) | undefined;
  connected = false;
  private tcpUp = false;
  /** Called once when the connection breaks: closed or reset by the other side, or reportBreak(). */
  onBreak: (() => void) | undefined;
  private closing = false;
  private broke = false;

  constructor(d: Dial) {
    this.socket = d.tlsServerName !== undefined
      ? tls.connect({ host: d.host, port: d.port, servername: net.isIP(d.tlsServerName) ? undefined : d.tlsServerName, rejectUnauthorized: false })
      : net.connect({ host: d.host, port: d.port });
    this.socket.setNoDelay(true);
    const ready = d.tlsServerName !== undefined ? 'secureConnect' : 'connect';
    this.socket.on(ready, () => { this.connected = true; this.poke(); });
    if (d.tlsServerName !== undefined) this.socket.on('connect', () => { this.tcpUp = true; });
    this.socket.on('data', (b: Buffer) => { this.buf = this.buf.length ? Buffer.concat([this.buf, b]) : b; this.poke(); });
    this.socket.on('end', () => {
      this.ended = true;
      if (!this.wake && this.connected) this.reportBreak();
      this.poke();
    });
    this.socket.on('error', (e) => { this.closedErr = e; });
    this.socket.on('close', () => {
      this.closed = true;
      if (!this.wake && this.connected) this.reportBreak();
      this.poke();
    });
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private waitChange(deadline: number, signal: AbortSignal): Promise<'changed' | 'timeout' | 'aborted'> {
    if (signal.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const t = setTimeout(() => { done('timeout'); }, Math.max(0, deadline - performance.now()));
      const onAbort = () => { done('aborted'); };
      signal.addEventListener('abort', onAbort, { once: true });
      const done = (v: 'changed' | 'timeout' | 'aborted') => {
        clearTimeout(t);
        signal.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(v);
      };
      this.wake = () => { done('changed'); };
    });
  }

  /** Wait for the connection (and TLS handshake) to be up. */
  async open(deadline: number, signal: AbortSignal): Promise<Outcome> {
    while (!this.connected) {
      if (this.closed) return { ok: false, reason: this.failReason(), detail: errText(this.closedErr) };
      const w = await this.waitChange(deadline, signal);
      if (w === 'aborted') return { ok: false, reason: 'aborted' };
      if (w === 'timeout' && !this.connected) {
        return { ok: false, reason: this.tcpUp ? 'tls-error' : 'connect-timeout', detail: this.tcpUp ? 'TLS handshake timed out' : undefined };
      }
    }
    return { ok: true };
  }

  private failReason(): FailureReason {
    if (this.closedErr !== undefined) {
      const r = reasonOf(this.closedErr, this.connected);
      // an error after TCP came up but before the TLS handshake finished
      if (!this.connected && this.tcpUp && r !== 'reset') return 'tls-error';
      return r;
    }
    return this.connected || this.tcpUp ? (this.connected ? 'closed' : 'tls-error') : 'error';
  }

  private answered = 0;
  /**
   * The last exchange failed because the peer closed (or reset) a connection that had answered before,
   * without sending a byte of this answer: the request was not processed (safe to retry once).
   */
  closedBeforeAnswer = false;

  /** One request and its response. */
  async exchange(framer: Framer, seq: number, deadline: number, signal: AbortSignal): Promise<Outcome> {
    this.closedBeforeAnswer = false;
    const o = await this.exchangeOnce(framer, seq, deadline, signal);
    if (o.ok) this.answered++;
    else this.closedBeforeAnswer = this.answered > 0 && this.buf.length === 0 && (o.reason === 'closed' || o.reason === 'reset');
    return o;
  }

  private async exchangeOnce(framer: Framer, seq: number, deadline: number, signal: AbortSignal): Promise<Outcome> {
    if (this.closed || this.ended) return { ok: false, reason: this.failReason(), detail: errText(this.closedErr) };
    this.socket.write(framer.request(seq));
    for (;;) {
      const n = framer.complete(this.buf, this.ended || this.closed);
      if (n < 0) return { ok: false, reason: 'bad-response', detail: JSON.stringify(this.buf.subarray(0, 80).toString('latin1')) };
      if (n > 0) {
        this.buf = this.buf.subarray(n);
        return { ok: true };
      }
      if (this.closed || this.ended) return { ok: false, reason: this.failReason(), detail: errText(this.closedErr) };
      const w = await this.waitChange(deadline, signal);
      if (w === 'aborted') return { ok: false, reason: 'aborted' };
      if (w === 'timeout') {
        const again = framer.complete(this.buf, this.ended || this.closed);
        if (again > 0) {
          this.buf = this.buf.subarray(again);
          return { ok: true };
        }
        return { ok: false, reason: 'timeout' };
      }
    }
  }

  get isUsable(): boolean {
    return this.connected && !this.closed && !this.ended;
  }

  /** Count this connection as broken (once; not after close()). */
  reportBreak(): void {
    if (this.broke || this.closing) return;
    this.broke = true;
    this.onBreak?.();
  }

  close(): void {
    this.closing = true;
    this.socket.destroy();
  }
}

function errText(e: unknown): string | undefined {
  return e instanceof Error ? e.message : undefined;
}

/** Connect, do one exchange (none for TLS-only), close. */
export async function oneShot(d: Dial, framer: Framer | undefined, timeoutMs: number, signal: AbortSignal): Promise<Outcome> {
  const deadline = performance.now() + timeoutMs;
  const c = new Conn(d);
  try {
    const up = await c.open(deadline, signal);
    if (!up.ok || !framer) return up;
    return await c.exchange(framer, 1, deadline, signal);
  } finally {
    c.close();
  }
}
