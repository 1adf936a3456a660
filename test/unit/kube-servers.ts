/**
 * Small local servers and certificates for the kube transport tests: every server listens on 127.0.0.1 on an
 * ephemeral port (or a port the test asks for) and is closed by `closeAll()`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Pki {
  caCert: string;
  /** Another CA, which signed nothing here. */
  otherCaCert: string;
  /** Server certificate for IP 127.0.0.1 and DNS localhost, signed by the CA. */
  serverCert: string;
  serverKey: string;
  /** A self-signed server certificate for 127.0.0.1. */
  selfCert: string;
  selfKey: string;
  /** A client certificate signed by the CA (CN=kr-client). */
  clientCert: string;
  clientKey: string;
  /** A key that belongs to no certificate here. */
  strayKey: string;
}

/** Certificates made with openssl in a temporary directory. */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'kr-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', '/CN=kr-test-ca');
  ssl('req', '-x509', ...ec, '-keyout', 'other.key', '-out', 'other.crt', '-days', '3650', '-subj', '/CN=kr-other-ca');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '3650', '-extfile', 'san.ext');
  ssl('req', '-x509', ...ec, '-keyout', 'self.key', '-out', 'self.crt', '-days', '3650', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1');
  ssl('req', ...ec, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=kr-client');
  ssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '3650');
  ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'stray.key');
  const r = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    caCert: r('ca.crt'), otherCaCert: r('other.crt'), serverCert: r('server.crt'), serverKey: r('server.key'),
    selfCert: r('self.crt'), selfKey: r('self.key'), clientCert: r('client.crt'), clientKey: r('client.key'), strayKey: r('stray.key'),
  };
}

export const b64 = (s: string): string => Buffer.from(s).toString('base64');

let kubeconfigs = 0;
/** A 0600 kubeconfig file in `dir` with one context (cluster `cluster`, user `user`); returns its path. */
export function kubeconfigFile(dir: string, cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  const path = join(dir, `kubeconfig-${++kubeconfigs}`);
  writeFileSync(path, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster }], users: [{ name: 'u', user }], contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  }), { mode: 0o600 });
  return path;
}

const closers: Array<() => void> = [];

/** Close every server started here. */
export function closeAll(): void {
  for (const c of closers.splice(0)) c();
}

function listen(server: net.Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      const sockets = new Set<net.Socket>();
      server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
      server.on('secureConnection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
      closers.push(() => { for (const s of sockets) s.destroy(); server.close(); });
      server.unref();
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  const port = await new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port)));
  await new Promise((r) => s.close(r));
  return port;
}

/** A TCP server that accepts and then does what `onConnection` says (nothing: it never answers). */
export function tcpServer(onConnection: (s: net.Socket) => void = () => {}, port = 0): Promise<number> {
  const server = net.createServer((s) => { s.on('error', () => {}); onConnection(s); });
  return listen(server, port);
}

export interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; clientCertCN?: string }

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen) => void;

/** A Kubernetes-like answer: 200 JSON for /version and lists, or a Status. */
export function status(code: number, reason: string, message: string): Handler {
  return (_req, res) => {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }));
  };
}

/** A tiny API server: /version, /apis, and empty lists for everything else. */
export const apiServer: Handler = (req, res) => {
  const path = (req.url ?? '').split('?')[0]!;
  res.writeHead(200, { 'Content-Type': 'application/json' });
  if (path.endsWith('/version')) return res.end(JSON.stringify({ major: '1', minor: '35', gitVersion: 'v1.35.0' }));
  if (path.endsWith('/apis')) return res.end(JSON.stringify({ kind: 'APIGroupList', groups: [] }));
  const kind = path.includes('/nodes') ? 'NodeList' : path.includes('/services') ? 'ServiceList' : path.includes('/pods') ? 'PodList' : 'List';
  return res.end(JSON.stringify({ kind, apiVersion: 'v1', metadata: {}, items: [] }));
};

/** An HTTP server; `seen` collects every request it got. */
export async function httpServer(handler: Handler, seen: Seen[] = [], port = 0): Promise<number> {
  const server = http.createServer((req, res) => {
    const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers };
    seen.push(s);
    req.resume();
    req.on('end', () => handler(req, res, s));
  });
  server.keepAliveTimeout = 1000;
  return listen(server, port);
}

/** An HTTPS server with the given certificate; with `ca`, it asks for (but does not require) a client certificate. */
export async function httpsServer(handler: Handler, tls: { cert: string; key: string; ca?: string }, seen: Seen[] = [], port = 0): Promise<number> {
  const server = https.createServer({ cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca, requestCert: true, rejectUnauthorized: false } : {}) }, (req, res) => {
    const sock = req.socket as import('node:tls').TLSSocket;
    const peer = tls.ca && sock.authorized ? sock.getPeerCertificate() : undefined;
    const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, clientCertCN: peer?.subject?.CN as string | undefined };
    seen.push(s);
    req.resume();
    req.on('end', () => handler(req, res, s));
  });
  server.keepAliveTimeout = 1000;
  server.on('tlsClientError', () => {});
  return listen(server, port);
}

/** An HTTPS server that completes the TLS handshake and then never answers. */
export async function silentTlsServer(tls: { cert: string; key: string }): Promise<number> {
  const server = https.createServer({ cert: tls.cert, key: tls.key }, () => { /* never answers */ });
  server.on('tlsClientError', () => {});
  return listen(server);
}

/** The first of `ports` a server can listen on, with `start` run on it; undefined when all are taken. */
export async function onFirstFreePort(ports: number[], start: (port: number) => Promise<number>): Promise<number | undefined> {
  for (const p of ports) {
    try { return await start(p); } catch { /* taken */ }
  }
  return undefined;
}
