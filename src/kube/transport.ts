/**
 * How requests reach the API server: Node's http/https modules with one keep-alive agent per client, so any
 * port works (fetch refuses the WHATWG "bad ports" such as 6000 or 6665-6669, which kubectl happily uses),
 * plain http works (kubectl proxy), and every failure says which phase failed: TCP connect, TLS handshake,
 * waiting for the answer, or reading it. Credentials come from the checked kubeconfig (src/kube/kubeconfig.ts):
 * tokens, basic auth, client certificates, exec credential plugins (run here, with a timeout and without
 * ever quoting their output), and client-node for auth-providers and proxy-url agents.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { InputError, UserError } from '../errors.ts';
import { checkClientPair, clientNode, type ExecConfig, type ResolvedKubeConfig } from './kubeconfig.ts';
import { UnreachableError } from './errors.ts';
import { redact, redactUrl, registerSecret } from './redact.ts';

/** Where a streamed answer's body goes (Transport.send). */
export interface StreamSink { data: (chunk: Buffer) => void; signal?: AbortSignal }

export interface SendResult {
  status: number;
  text: string;
  /** The Retry-After header, when the server sent one. */
  retryAfter?: string;
  /** X-Kubernetes-PF-PriorityLevel-UID: the API Priority and Fairness level the apiserver put the request in. */
  priorityLevel?: string;
}

interface Credential { token?: string; cert?: string; key?: string; expires?: number }

const TLS_CODES = new Set(['EPROTO', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED', 'CERT_REJECTED', 'HOSTNAME_MISMATCH', 'INVALID_CA', 'ERR_TLS_CERT_ALTNAME_INVALID']);

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * One request as kubectl -v=6 logs it (klog's header, then "GET https://… 200 OK in 12 milliseconds"; no status
 * when no answer came). Never headers or bodies: they may hold credentials; the URL is redacted.
 */
export function requestLine(method: string, url: string, status: number | undefined, ms: number, now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `I${p(now.getMonth() + 1)}${p(now.getDate())} ${p(now.getHours())}:${p(now.getMinutes())}:${p(now.getSeconds())}.${p(now.getMilliseconds(), 3)}`;
  const answer = status === undefined ? '(no answer)' : `${status} ${http.STATUS_CODES[status] ?? ''}`.trim();
  return `${stamp} ${method} ${redactUrl(url)} ${answer} in ${Math.round(ms)} milliseconds`;
}

/** Where a request was when it failed. */
interface Progress { tcp: boolean; tls: boolean; response: boolean }

/** The most telling account of a network failure, by phase. */
export function describeFailure(e: unknown, p: Progress, overTls: boolean): string {
  const err = e as NodeJS.ErrnoException & { cause?: unknown };
  const code = err?.code ?? '';
  let msg = String(err?.message ?? e).split('\n')[0]!;
  if (code === 'KR_TIMEOUT') return msg;
  if (TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code.startsWith('ERR_OSSL_')) {
    // OpenSSL's "write EPROTO 40CD…:error:0A00010B:SSL routines:fn:wrong version number:file.c:77:" → its reason.
    const ossl = msg.match(/error:[0-9A-F]+:[^:]*:[^:]*:([^:]+)/);
    if (ossl) msg = ossl[1]!.trim();
    // Node's advice about its own flags means nothing to our users.
    msg = msg.replace(/; if the root CA is installed locally.*$/, '');
    const plain = /wrong.version.number|packet.length.too.long|http.request/i.test(`${code} ${msg}`) ? ' (is the server plain http://?)' : '';
    const verify = /CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|HOSTNAME/.test(code)
      ? ': the server certificate is not trusted by the kubeconfig (certificate-authority-data, tls-server-name)' : '';
    return `TLS handshake failed: ${msg} (${code})${plain}${verify}`;
  }
  if (overTls && p.tcp && !p.tls) {
    return `TLS handshake failed: the server closed the connection before the handshake finished (${code || msg}); is it a TLS server?`;
  }
  if (code.startsWith('HPE_')) return `the server did not answer in HTTP (${code}); is it an API server?${overTls ? '' : ' (or a TLS server: try https://)'}`;
  if (code) return `${code}: ${msg}`;
  return msg;
}

/**
 * The Impersonate-* headers as client-go's ImpersonatingRoundTripper sends them: Impersonate-User,
 * Impersonate-Uid, one Impersonate-Group header per group, and one Impersonate-Extra-KEY header per value (KEY
 * percent-encoded where an HTTP header name cannot hold the character).
 */
export function impersonationHeaders(imp: ResolvedKubeConfig['impersonate']): Record<string, string | string[]> {
  if (!imp) return {};
  const h: Record<string, string | string[]> = { 'Impersonate-User': imp.user };
  if (imp.uid !== undefined) h['Impersonate-Uid'] = imp.uid;
  if (imp.groups.length > 0) h['Impersonate-Group'] = [...imp.groups];
  for (const [k, v] of Object.entries(imp.extra)) {
    const name = [...Buffer.from(k, 'utf8')].map((b) => /[A-Za-z0-9!#$&'*+\-.^_`|~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
    h[`Impersonate-Extra-${name}`] = [...v];
  }
  return h;
}

export class Transport {
  readonly rk: ResolvedKubeConfig;
  private readonly env: NodeJS.ProcessEnv;
  private readonly isHttps: boolean;
  private agent: http.Agent | undefined;
  private agentKey = '';
  private proxyKc: KubeConfig | undefined;
  private cred: Credential | undefined;
  private pending: Promise<Credential> | undefined;
  private caCache: Buffer | undefined;

  /** Each request's line at -v=6 and above (requestLine), or none. */
  private readonly trace: ((line: string) => void) | undefined;

  constructor(rk: ResolvedKubeConfig, env: NodeJS.ProcessEnv, trace?: (line: string) => void) {
    this.rk = rk;
    this.env = env;
    this.trace = trace;
    this.isHttps = rk.server.protocol === 'https:';
    if (rk.cluster.proxyUrl || rk.user?.authProvider) {
      // client-node builds proxy agents and runs auth-providers; for an http:// server it insists on
      // insecure-skip-tls-verify, which means nothing without TLS.
      const kc = new (clientNode().KubeConfig)();
      const cluster = this.isHttps ? rk.cluster : { ...rk.cluster, skipTLSVerify: true };
      kc.loadFromOptions({ clusters: [cluster], users: rk.user ? [rk.user] : [], contexts: rk.kc.getContexts(), currentContext: rk.kc.getCurrentContext() });
      this.proxyKc = kc;
    }
  }

  /** True when a 401 may be cured by asking the exec plugin again. */
  get refreshable(): boolean { return !!this.rk.exec; }

  /** Forget the exec plugin's credential (after a 401). */
  invalidate(): void { this.cred = undefined; }

  private userWhere(): string { return `user "${this.rk.user?.name}" in ${this.rk.userSource}`; }

  /** Headers and TLS material for one request. */
  private async credentials(timeoutMs: number): Promise<{ headers: Record<string, string | string[]>; cert?: string | Buffer; key?: string | Buffer; agent?: http.Agent }> {
    const rk = this.rk;
    const u = rk.user;
    const headers: Record<string, string | string[]> = {};
    let cert: string | Buffer | undefined;
    let key: string | Buffer | undefined;
    let agent: http.Agent | undefined;
    const token = u?.token ?? rk.tokenFromFile;
    if (token) headers.Authorization = `Bearer ${token.trim()}`;
    else if (u?.username) headers.Authorization = `Basic ${Buffer.from(`${u.username}:${u.password ?? ''}`).toString('base64')}`;
    Object.assign(headers, impersonationHeaders(rk.impersonate));
    if (u?.certFile || u?.certData) {
      cert = u.certFile ? readFileSync(u.certFile) : Buffer.from(u.certData!, 'base64');
      key = u.keyFile ? readFileSync(u.keyFile) : Buffer.from(u.keyData!, 'base64');
    }
    if (rk.exec) {
      const c = await this.execCredential(rk.exec, timeoutMs);
      if (c.token) headers.Authorization = `Bearer ${c.token}`;
      if (c.cert && c.key) { cert = c.cert; key = c.key; }
    }
    if (this.proxyKc) {
      const o: https.RequestOptions & { headers?: Record<string, string> } = {};
      try {
        await this.proxyKc.applyToHTTPSOptions(o);
      } catch (e) {
        const code = (e as { code?: string }).code;
        throw new UserError(`could not get credentials for ${this.userWhere()} from its auth-provider "${u?.authProvider?.name ?? ''}"${code ? ` (${code})` : ''}`, 'forbidden');
      }
      const auth = o.headers?.Authorization ?? o.headers?.authorization;
      if (u?.authProvider && auth) { registerSecret(String(auth).replace(/^\S+\s+/, '')); headers.Authorization = String(auth); }
      if (rk.cluster.proxyUrl) agent = o.agent as http.Agent;
    }
    if (!headers.Authorization && rk.urlUserinfo) {
      headers.Authorization = `Basic ${Buffer.from(`${rk.urlUserinfo.username}:${rk.urlUserinfo.password}`).toString('base64')}`;
    }
    return { headers, cert, key, agent };
  }

  private ca(): Buffer | undefined {
    const c = this.rk.cluster;
    if (!this.isHttps || c.skipTLSVerify) return undefined;
    if (!this.caCache) {
      if (c.caFile) this.caCache = readFileSync(c.caFile);
      else if (c.caData) this.caCache = Buffer.from(c.caData, 'base64');
    }
    return this.caCache;
  }

  /** The keep-alive agent for this TLS material (an exec plugin may rotate the client certificate). */
  private agentFor(cert?: string | Buffer, key?: string | Buffer): http.Agent {
    const k = cert ? `${cert.toString().length}:${cert.toString()}` : '';
    if (this.agent && this.agentKey === k) return this.agent;
    this.agent?.destroy();
    const c = this.rk.cluster;
    this.agent = this.isHttps
      ? new https.Agent({
        keepAlive: true,
        ca: this.ca(),
        cert,
        key,
        rejectUnauthorized: !c.skipTLSVerify,
        ...(c.tlsServerName ? { servername: c.tlsServerName } : {}),
      })
      : new http.Agent({ keepAlive: true });
    this.agentKey = k;
    return this.agent;
  }

  private execCredential(exec: ExecConfig, timeoutMs: number): Promise<Credential> {
    const c = this.cred;
    if (c && (!c.expires || c.expires > Date.now() + 10_000)) return Promise.resolve(c);
    this.pending ??= this.runExec(exec, timeoutMs).then((cred) => { this.cred = cred; return cred; }).finally(() => { this.pending = undefined; });
    return this.pending;
  }

  private runExec(exec: ExecConfig, timeoutMs: number): Promise<Credential> {
    const where = `the exec credential plugin "${exec.command}" of ${this.userWhere()}`;
    const interactive = exec.interactiveMode !== 'Never' && !!process.stdin.isTTY && !!process.stderr.isTTY;
    const base = { ...this.env };
    if (!base.PATH && process.env.PATH) base.PATH = process.env.PATH;
    const env: NodeJS.ProcessEnv = {
      ...base,
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion: exec.apiVersion, kind: 'ExecCredential', spec: { interactive } }),
    };
    for (const e of exec.env) env[e.name] = e.value;
    return new Promise<Credential>((resolve, reject) => {
      let out = Buffer.alloc(0);
      let tooBig = false;
      let timedOut = false;
      let child;
      try {
        child = spawn(exec.command, exec.args, { env, stdio: [interactive ? 'inherit' : 'ignore', 'pipe', interactive ? 'inherit' : 'ignore'] });
      } catch (e) {
        reject(new InputError(`${where} cannot be started (${(e as { code?: string }).code ?? 'invalid command'})`));
        return;
      }
      const limit = timeoutMs > 0 && !interactive ? timeoutMs : 0;
      let done = false;
      const timer = limit ? setTimeout(() => {
        // Give up at once: a plugin's own children may hold its output open long after it was killed.
        timedOut = true;
        done = true;
        child.kill('SIGKILL');
        child.stdout?.destroy();
        child.unref();
        reject(new UnreachableError(`${where} did not answer within ${seconds(limit)} (--request-timeout): no credentials`));
      }, limit) : undefined;
      child.stdout!.on('data', (d: Buffer) => {
        if (out.length + d.length > 1 << 20) { tooBig = true; child.kill('SIGKILL'); return; }
        out = Buffer.concat([out, d]);
      });
      child.on('error', (e: NodeJS.ErrnoException) => {
        if (timer) clearTimeout(timer);
        if (done) return;
        done = true;
        const hint = exec.installHint ? `: ${redact(exec.installHint.split('\n').find((l) => l.trim()) ?? '').slice(0, 200)}` : '';
        if (e.code === 'ENOENT') reject(new InputError(`${where} was not found${hint}`));
        else if (e.code === 'EACCES') reject(new InputError(`${where} cannot be run: permission denied (EACCES)`));
        else reject(new InputError(`${where} cannot be run (${e.code ?? 'error'})`));
      });
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        if (timedOut || done) return;
        done = true;
        if (tooBig) return reject(new InputError(`${where} printed more than 1 MiB: not an ExecCredential`));
        if (code !== 0) {
          return reject(new UserError(`${where} failed (${signal ? `killed by ${signal}` : `exit code ${code}`}): no credentials; run it by hand to see why`, 'forbidden'));
        }
        try {
          resolve(this.parseCredential(out.toString('utf8'), exec, where));
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  /** An ExecCredential from the plugin's output; the output itself is never quoted (it is a credential). */
  private parseCredential(text: string, exec: ExecConfig, where: string): Credential {
    let obj: any;
    try { obj = JSON.parse(text); } catch {
      throw new InputError(`${where} printed ${text.trim() === '' ? 'nothing' : `${Buffer.byteLength(text)} bytes that are not JSON`}: expected an ExecCredential`);
    }
    // Whatever it printed is treated as a credential from here on.
    if (obj && typeof obj === 'object') {
      registerSecret(obj.status?.token);
      registerSecret(obj.status?.clientKeyData);
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj) || obj.kind !== 'ExecCredential') throw new InputError(`${where} printed JSON that is not an ExecCredential`);
    if (obj.apiVersion !== exec.apiVersion) throw new InputError(`${where} answered with another apiVersion than the configured ${exec.apiVersion}`);
    const s = obj.status;
    if (!s || typeof s !== 'object' || Array.isArray(s)) throw new InputError(`${where} printed an ExecCredential without status`);
    for (const f of ['token', 'clientCertificateData', 'clientKeyData', 'expirationTimestamp']) {
      if (s[f] !== undefined && s[f] !== null && typeof s[f] !== 'string') throw new InputError(`${where} printed an ExecCredential whose status.${f} is not a string`);
    }
    const cred: Credential = {};
    if (s.token) {
      if (!/^[\x21-\x7e]+$/.test(s.token)) throw new InputError(`${where} printed a token with characters a bearer token cannot have`);
      cred.token = s.token;
    }
    if (s.clientCertificateData || s.clientKeyData) {
      if (!s.clientCertificateData || !s.clientKeyData) throw new InputError(`${where} printed a client certificate without its key, or a key without its certificate`);
      checkClientPair(s.clientCertificateData, s.clientKeyData, where);
      cred.cert = s.clientCertificateData;
      cred.key = s.clientKeyData;
    }
    if (!cred.token && !cred.cert) throw new InputError(`${where} printed an ExecCredential with no credentials (neither a token nor a client certificate)`);
    if (s.expirationTimestamp) {
      const t = Date.parse(s.expirationTimestamp);
      if (Number.isNaN(t)) throw new InputError(`${where} printed an ExecCredential whose expirationTimestamp is not a time`);
      cred.expires = t;
    }
    return cred;
  }

  /**
   * One HTTP exchange; network failures become UnreachableError naming the phase. With `stream`, a 2xx answer's
   * body is handed to `stream.data` chunk by chunk as it arrives instead of being collected (a watch): the
   * timeout then covers only the wait for the answer's headers, and `stream.signal` ends the exchange early
   * (it resolves as a complete answer with an empty text).
   */
  async send(method: string, path: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, context: string, stream?: StreamSink,
    onSent?: () => void): Promise<SendResult> {
    let creds: Awaited<ReturnType<Transport['credentials']>>;
    try {
      creds = await this.credentials(timeoutMs);
    } catch (e) {
      if (e instanceof UserError) throw e;
      throw new InputError(`cannot load the credentials of ${this.userWhere()}: ${(e as { code?: string }).code ?? 'error'}`);
    }
    const agent = creds.agent ?? this.agentFor(creds.cert, creds.key);
    const server = this.rk.server;
    const prefix = server.pathname.replace(/\/+$/, '');
    const all: Record<string, string | string[]> = { 'User-Agent': 'kube-renumber', ...headers, ...creds.headers };
    if (body !== undefined) all['Content-Length'] = String(Buffer.byteLength(body));
    const proxy = this.rk.cluster.proxyUrl ? ` through the proxy ${redactUrl(this.rk.cluster.proxyUrl)}` : '';
    const where = `the API server ${this.rk.displayServer}${proxy} (context "${context}")`;
    const t0 = performance.now();
    const traced = (status: number | undefined) => this.trace?.(requestLine(method, `${this.rk.displayServer}${path}`, status, performance.now() - t0));
    try {
      const r = await this.exchange(agent, method, prefix + path, all, body, timeoutMs, stream, onSent);
      traced(r.status);
      return r;
    } catch (e) {
      traced(undefined);
      // A kept-alive connection the server closed just as we reused it: once more on a new one (reads only).
      const stale = (e as { staleSocket?: boolean }).staleSocket && (method === 'GET' || method === 'HEAD');
      const failure = stale ? await this.exchange(agent, method, prefix + path, all, body, timeoutMs, stream).then(
        (r) => ({ ok: r }), (e2: unknown) => ({ err: e2 })) : { err: e };
      if ('ok' in failure) return failure.ok;
      const f = failure.err as { progress?: Progress };
      if (!f.progress) throw failure.err;
      throw new UnreachableError(`cannot reach ${where}: ${describeFailure(failure.err, f.progress, this.isHttps)}`);
    }
  }

  /** One request on the agent; a failure is the raw error with `progress` (and `staleSocket`) attached. */
  private exchange(agent: http.Agent, method: string, path: string, all: Record<string, string | string[]>, body: string | undefined, timeoutMs: number, stream?: StreamSink,
    onSent?: () => void): Promise<SendResult> {
    const server = this.rk.server;
    const mod = this.isHttps ? https : http;
    const progress: Progress = { tcp: false, tls: false, response: false };
    return new Promise<SendResult>((resolve, reject) => {
      let settled = false;
      const fail = (e: unknown) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        const err = (e instanceof Error ? e : new Error(String(e))) as Error & { progress?: Progress; staleSocket?: boolean; code?: string };
        err.progress = progress;
        err.staleSocket = !!req?.reusedSocket && !progress.response && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        reject(err);
      };
      let req: http.ClientRequest | undefined;
      try {
        req = mod.request({
          protocol: server.protocol,
          hostname: server.hostname.replace(/^\[|\]$/g, ''),
          port: server.port || (this.isHttps ? 443 : 80),
          path,
          method,
          headers: all,
          agent,
        });
      } catch (e) {
        fail(e);
        return;
      }
      const timer = timeoutMs > 0 ? setTimeout(() => {
        const phase = !progress.tcp ? 'connecting'
          : this.isHttps && !progress.tls ? 'in the TLS handshake (the server accepted the connection but did not answer TLS)'
            : !progress.response ? 'waiting for an answer (the server accepted the connection but did not answer)'
              : 'reading the answer';
        req.destroy(Object.assign(new Error(`request timed out after ${seconds(timeoutMs)} ${phase}`), { code: 'KR_TIMEOUT' }));
      }, timeoutMs) : undefined;
      req.on('socket', (s: Socket) => {
        const mark = () => { progress.tcp = true; };
        if (!s.connecting) progress.tcp = true; else s.once('connect', mark);
        if ('encrypted' in s) {
          const tlsSocket = s as Socket & { _secureEstablished?: boolean };
          if (!s.connecting && tlsSocket._secureEstablished) progress.tls = true;
          else s.once('secureConnect', () => { progress.tcp = true; progress.tls = true; });
        }
      });
      req.on('error', fail);
      if (stream?.signal) {
        const stop = () => {
          if (settled) return;
          settled = true;
          if (timer) clearTimeout(timer);
          req!.destroy();
          resolve({ status: 200, text: '' });
        };
        if (stream.signal.aborted) { stop(); return; }
        stream.signal.addEventListener('abort', stop, { once: true });
      }
      req.on('response', (res) => {
        progress.response = true;
        progress.tls = true;
        const chunks: Buffer[] = [];
        const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
        if (stream && ok) {
          // the answer has begun: from here on it lasts as long as the server keeps it open (its timeoutSeconds)
          if (timer) clearTimeout(timer);
          res.on('data', (d: Buffer) => { if (!settled) stream.data(d); });
        } else {
          res.on('data', (d: Buffer) => chunks.push(d));
        }
        res.on('error', fail);
        res.on('aborted', () => fail(Object.assign(new Error('the connection closed before the answer was complete'), { code: 'ECONNRESET' })));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          if (timer) clearTimeout(timer);
          const retryAfter = res.headers['retry-after'];
          const pl = res.headers['x-kubernetes-pf-prioritylevel-uid'] ?? (res.headers['x-kubernetes-pf-flowschema-uid'] !== undefined ? '' : undefined);
          resolve({
            status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ...(retryAfter !== undefined ? { retryAfter } : {}),
            ...(pl !== undefined ? { priorityLevel: String(pl) } : {}),
          });
        });
      });
      // onSent: the request is written in full (the crash tests' kill mid-request)
      if (onSent) req.end(body, onSent); else req.end(body);
    });
  }

  close(): void { this.agent?.destroy(); }
}
