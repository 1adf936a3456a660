// The kube transport in-process against small local servers: plain http, any port (fetch's "bad ports"
// included), TLS with CA, client certificates and tls-server-name, tokens, basic auth, URL userinfo, exec plugins
// (cached, asked again after a 401), proxies, keep-alive, timeouts by phase, error kinds, and redaction.

import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { connect, KubeApiError, loadKubeConfig, UnreachableError } from '../../src/kube/client.ts';
import { redact, redactUrl, registerSecret, REDACTED } from '../../src/kube/redact.ts';
import { EXIT_CODE_OF_KIND } from '../../src/cli/errors.ts';
import { run } from './run-cli.ts';
import {
  apiServer, b64, closeAll, kubeconfigFile, closedPort, httpServer, httpsServer, makePki, onFirstFreePort, status, tcpServer, type Seen,
} from './kube-servers.ts';

const pki = makePki();
after(closeAll);

const dir = mkdtempSync(join(tmpdir(), 'kr-transport-'));
/** A kubeconfig file with one context; returns its path. */
const kubeconfig = (cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string => kubeconfigFile(dir, cluster, user);
const env = { HOME: join(dir, 'no-home'), PATH: process.env.PATH };

describe('transport', () => {
  test('plain http, no credentials (kubectl proxy), with pagination and query encoding', async () => {
    const seen: Seen[] = [];
    const port = await httpServer((req, res) => {
      const u = new URL(req.url!, 'http://x');
      if (u.pathname !== '/api/v1/pods') return apiServer(req, res, seen[0]!);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (!u.searchParams.get('continue')) {
        return res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { continue: 'next/page=1' }, items: [{ metadata: { name: 'a' } }] }));
      }
      return res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [{ metadata: { name: 'b' } }] }));
    }, seen);
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }), env });
    assert.equal(c.server, `http://127.0.0.1:${port}`);
    assert.equal((await c.request<any>('GET', '/version')).gitVersion, 'v1.35.0');
    const names: string[] = [];
    for await (const p of c.list('/api/v1/pods', { labelSelector: 'app in (x,y)' })) names.push(`${p.kind}/${p.apiVersion}/${p.metadata?.name}`);
    assert.deepEqual(names, ['Pod/v1/a', 'Pod/v1/b']);
    const second = new URL(seen.at(-1)!.url, 'http://x');
    assert.equal(second.searchParams.get('continue'), 'next/page=1');
    assert.equal(second.searchParams.get('labelSelector'), 'app in (x,y)');
    assert.equal(second.searchParams.get('limit'), '500');
    assert.equal(seen[0]!.headers.authorization, undefined);
    assert.equal(c.requestCount, 3);
  });

  test('a port fetch refuses ("bad port") works', async (t) => {
    const seen: Seen[] = [];
    const port = await onFirstFreePort([6666, 6667, 6668, 6669, 6665, 6000, 10080], (p) => httpServer(apiServer, seen, p));
    if (port === undefined) return t.skip('every fetch-blocked port tried is taken');
    // fetch itself refuses it, so the test really tests something
    await assert.rejects(fetch(`http://127.0.0.1:${port}/version`), (e: any) => /bad port/.test(String(e?.cause?.message ?? e)));
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }, { token: 'tok-abcdef' }), env });
    assert.equal((await c.request<any>('GET', '/version')).gitVersion, 'v1.35.0');
    assert.equal(seen[0]!.headers.authorization, 'Bearer tok-abcdef');
  });

  test('TLS: CA data and a client certificate', async () => {
    const seen: Seen[] = [];
    const port = await httpsServer(apiServer, { cert: pki.serverCert, key: pki.serverKey, ca: pki.caCert }, seen);
    const c = connect({
      kubeconfig: kubeconfig({ server: `https://127.0.0.1:${port}`, 'certificate-authority-data': b64(pki.caCert) },
        { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(pki.clientKey) }),
      env,
    });
    for (let i = 0; i < 3; i++) await c.request('GET', '/version');
    await Promise.all([1, 2, 3].map(() => c.request('GET', '/apis')));
    assert.equal(seen.length, 6);
    assert.ok(seen.every((s) => s.clientCertCN === 'kr-client'), 'the client certificate was presented');
  });

  test('keep-alive: sequential requests share one TCP connection', async () => {
    const peers = new Set<number>();
    const server = http.createServer((req, res) => { peers.add(req.socket.remotePort!); apiServer(req, res, {} as Seen); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    after(() => server.close());
    server.unref();
    const port = (server.address() as net.AddressInfo).port;
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }), env });
    for (let i = 0; i < 6; i++) await c.request('GET', '/version');
    assert.equal(peers.size, 1, `one connection, got ${peers.size}`);
    server.closeAllConnections();
  });

  test('TLS: tls-server-name is what the certificate is checked against; a file CA works', async () => {
    const port = await httpsServer(apiServer, { cert: pki.serverCert, key: pki.serverKey });
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, pki.caCert);
    const ok = connect({ kubeconfig: kubeconfig({ server: `https://127.0.0.1:${port}`, 'certificate-authority': caFile, 'tls-server-name': 'localhost' }), env });
    assert.equal((await ok.request<any>('GET', '/version')).major, '1');
    const wrong = connect({ kubeconfig: kubeconfig({ server: `https://127.0.0.1:${port}`, 'certificate-authority': caFile, 'tls-server-name': 'elsewhere.example' }), env });
    await assert.rejects(wrong.request('GET', '/version'), (e: unknown) => e instanceof UnreachableError && /TLS handshake failed/.test(e.message));
  });

  test('basic auth from username/password and from URL userinfo; userinfo never shown', async () => {
    const seen: Seen[] = [];
    const port = await httpServer(apiServer, seen);
    const a = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }, { username: 'admin', password: 'pw-123456' }), env });
    await a.request('GET', '/version');
    assert.equal(seen[0]!.headers.authorization, `Basic ${b64('admin:pw-123456')}`);
    const b = connect({ kubeconfig: kubeconfig({ server: `http://bob:s%40cret-99@127.0.0.1:${port}/` }), env });
    assert.equal(b.server, `http://127.0.0.1:${port}`);
    await b.request('GET', '/version');
    assert.equal(seen[1]!.headers.authorization, `Basic ${b64('bob:s@cret-99')}`);
    // a user's own token wins over the URL's userinfo
    const c = connect({ kubeconfig: kubeconfig({ server: `http://bob:s%40cret-99@127.0.0.1:${port}` }, { token: 'tok-own-1' }), env });
    await c.request('GET', '/version');
    assert.equal(seen[2]!.headers.authorization, 'Bearer tok-own-1');
    const kc = loadKubeConfig({ kubeconfig: kubeconfig({ server: `https://bob:hidden-pass-1@127.0.0.1:${port}` }), env });
    assert.doesNotMatch(kc.getCurrentCluster()!.server, /hidden-pass-1|bob/);
  });

  test('impersonation headers and a server path prefix', async () => {
    const seen: Seen[] = [];
    const port = await httpServer(apiServer, seen);
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}/k8s/clusters/c-1` }, { token: 't-123456', as: 'jane', 'as-groups': ['g1', 'g2'] }), env });
    await c.request('GET', '/version');
    assert.equal(seen[0]!.url, '/k8s/clusters/c-1/version');
    assert.equal(seen[0]!.headers['impersonate-user'], 'jane');
    assert.equal(seen[0]!.headers['impersonate-group'], 'g1, g2');
  });

  test('exec plugin: token used, run once while valid, asked again after a 401', async () => {
    const seen: Seen[] = [];
    let first = true;
    const port = await httpServer((req, res, s) => {
      if (req.headers.authorization === 'Bearer exec-token-1' && first) { first = false; return status(401, 'Unauthorized', 'Unauthorized')(req, res, s); }
      return apiServer(req, res, s);
    }, seen);
    const counter = join(dir, 'exec-count');
    writeFileSync(counter, '');
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(plugin, `#!/bin/sh
echo x >> "${counter}"
n=$(wc -l < "${counter}" | tr -d ' ')
[ "$(printenv KUBERNETES_EXEC_INFO | grep -c '"interactive":false')" = 1 ] || exit 3
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token-%s","expirationTimestamp":"2999-01-01T00:00:00Z"}}' "$n"
`);
    chmodSync(plugin, 0o755);
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } }), env });
    await c.request('GET', '/version'); // 401 with token 1, then token 2
    await c.request('GET', '/version');
    await c.request('GET', '/apis');
    assert.deepEqual(seen.map((s) => s.headers.authorization), ['Bearer exec-token-1', 'Bearer exec-token-2', 'Bearer exec-token-2', 'Bearer exec-token-2']);
    assert.equal(readFileSync(counter, 'utf8').split('\n').filter(Boolean).length, 2, 'the plugin ran twice: once, and once after the 401');
  });

  test('an HTTP CONNECT proxy from proxy-url carries the TLS connection', async () => {
    const port = await httpsServer(apiServer, { cert: pki.serverCert, key: pki.serverKey });
    const tunnels: string[] = [];
    const proxy = http.createServer();
    proxy.on('connect', (req, client, head) => {
      tunnels.push(req.url!);
      const [h, p] = req.url!.split(':');
      const up = net.connect(Number(p), h, () => { client.write('HTTP/1.1 200 Connection Established\r\n\r\n'); up.write(head); up.pipe(client); client.pipe(up); });
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxy.unref();
    after(() => { proxy.closeAllConnections(); proxy.close(); });
    const proxyPort = (proxy.address() as net.AddressInfo).port;
    const c = connect({ kubeconfig: kubeconfig({ server: `https://127.0.0.1:${port}`, 'certificate-authority-data': b64(pki.caCert), 'proxy-url': `http://127.0.0.1:${proxyPort}` }), env });
    assert.equal((await c.request<any>('GET', '/version')).major, '1');
    assert.deepEqual(tunnels, [`127.0.0.1:${port}`]);
  });

  test('timeouts fail fast and name the phase', async () => {
    const silent = await tcpServer();
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${silent}` }), env, requestTimeoutMs: 300 });
    const t0 = Date.now();
    await assert.rejects(c.request('GET', '/version'), (e: unknown) => e instanceof UnreachableError && /timed out after 300ms waiting for an answer/.test(e.message));
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
    const tls = connect({ kubeconfig: kubeconfig({ server: `https://127.0.0.1:${silent}` }), env, requestTimeoutMs: 300 });
    await assert.rejects(tls.request('GET', '/version'), /timed out after 300ms in the TLS handshake/);
    // a per-request timeout overrides the client's
    const slow = await httpServer((req, res, s) => { setTimeout(() => apiServer(req, res, s), 400); });
    const d = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${slow}` }), env, requestTimeoutMs: 100 });
    assert.equal((await d.request<any>('GET', '/version', { timeoutMs: 3000 })).major, '1');
  });

  test('error kinds: refused, 401/403, Status 404, not an API server, 5xx', async () => {
    const closed = await closedPort();
    const refused = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${closed}` }), env });
    await assert.rejects(refused.request('GET', '/version'), (e: any) => e instanceof UnreachableError && e.kind === 'unreachable' && /ECONNREFUSED/.test(e.message));
    const answers: Record<string, http.RequestListener> = {
      '/401': (q, r) => status(401, 'Unauthorized', 'Unauthorized')(q, r, {} as Seen),
      '/403': (q, r) => status(403, 'Forbidden', 'nope')(q, r, {} as Seen),
      '/404': (q, r) => status(404, 'NotFound', 'services "x" not found')(q, r, {} as Seen),
      '/plain404': (_q, r) => { r.writeHead(404); r.end('404 page not found'); },
      '/503': (q, r) => status(503, 'ServiceUnavailable', 'etcd')(q, r, {} as Seen),
      '/html': (_q, r) => { r.writeHead(200, { 'Content-Type': 'text/html' }); r.end('<html/>'); },
    };
    const port = await httpServer((q, r) => answers[q.url!]!(q, r));
    const c = connect({ kubeconfig: kubeconfig({ server: `http://127.0.0.1:${port}` }), env });
    const kindOf = async (path: string) => c.request('GET', path).then(() => 'ok', (e: any) => `${e.constructor.name}:${e.status ?? ''}:${e.kind}`);
    assert.equal(await kindOf('/401'), 'KubeApiError:401:forbidden');
    assert.equal(await kindOf('/403'), 'KubeApiError:403:forbidden');
    assert.equal(await kindOf('/404'), 'KubeApiError:404:internal');
    assert.equal(await kindOf('/plain404'), 'KubeApiError:404:unreachable');
    assert.equal(await kindOf('/503'), 'KubeApiError:503:unreachable');
    assert.equal(await kindOf('/html'), 'UnreachableError::unreachable');
    assert.equal(EXIT_CODE_OF_KIND.unreachable, 4);
    assert.ok(new KubeApiError('GET', '/x', 401, undefined, 'm') instanceof Error);
  });
});

describe('redaction', () => {
  test('patterns: URL userinfo, Authorization values, credential query parameters, keys, JWTs, credential fields', () => {
    const cases: Array<[string, string]> = [
      ['cannot reach https://admin:hunter2@10.0.0.1:6443/api', 'hunter2'],
      ['dial https://tok3n-only@example.com failed', 'tok3n-only'],
      ['header Authorization: Bearer abc.def-ghi', 'abc.def-ghi'],
      ['Basic YWRtaW46cGFzc3dvcmQ=', 'YWRtaW46cGFzc3dvcmQ='],
      ['GET https://h/api?watch=1&access_token=qwerty123&x=1', 'qwerty123'],
      ['GET https://h/api?token=zzz999', 'zzz999'],
      ['-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBsecretkeymaterial\n-----END EC PRIVATE KEY-----', 'MHcCAQEEIBsecretkeymaterial'],
      ['{"apiVersion":"v1","kind":"ExecCredential","status":{"token":"plugin-tok-1"}}', 'plugin-tok-1'],
      ['client-key-data: LS0tLS1CRUdJTi', 'LS0tLS1CRUdJTi'],
      ['password=letmein99 and more', 'letmein99'],
      ['id token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl here', 'eyJhbGciOiJSUzI1NiJ9'],
    ];
    for (const [text, secret] of cases) {
      const out = redact(text);
      assert.ok(!out.includes(secret), `${JSON.stringify(text)} → ${JSON.stringify(out)}`);
      assert.ok(out.includes(REDACTED), out);
    }
  });

  test('ordinary messages are left alone', () => {
    for (const text of [
      'not allowed to list secrets (403 Forbidden): kube-renumber needs the read permissions in deploy/rbac.yaml',
      'cannot reach the API server https://127.0.0.1:6443 (context "kind-kind"): ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:6443',
      'GET /api/v1/pods?limit=500&continue=abc: 410 Expired',
      'the exec credential plugin "aws" of user "u" printed an ExecCredential with no credentials (neither a token nor a client certificate)',
    ]) assert.equal(redact(text), text);
  });

  test('registered secrets are masked wherever they appear, also base64-decoded and URL-encoded', () => {
    registerSecret('s3cr3t/with+chars');
    assert.equal(redact('x s3cr3t/with+chars y'), `x ${REDACTED} y`);
    assert.equal(redact(`x ${encodeURIComponent('s3cr3t/with+chars')} y`), `x ${REDACTED} y`);
    registerSecret(b64('line-one-secret-material\nline-two-secret-material\n'));
    assert.doesNotMatch(redact('key: line-two-secret-material'), /line-two/);
    registerSecret('abc'); // too short to register: ordinary words stay readable
    assert.equal(redact('abc def'), 'abc def');
  });

  test('redactUrl keeps the server readable', () => {
    assert.equal(redactUrl('https://u:p-123456@10.0.0.1:6443'), 'https://10.0.0.1:6443');
    assert.equal(redactUrl('https://10.0.0.1:6443/prefix/'), 'https://10.0.0.1:6443/prefix/');
    assert.match(redactUrl('not a url user:pw@x'), /\[redacted\]@x/);
  });

  test('the CLI: no credential in the error, the progress lines or the -v stack', async () => {
    const closed = await closedPort();
    const secret = 'cli-secret-pass-4242';
    const kc = kubeconfig({ server: `https://admin:${secret}@127.0.0.1:${closed}` }, { token: 'cli-secret-token-4343' });
    const r = await run(['inspect', '--kubeconfig', kc, '-v'], env);
    assert.equal(r.code, 4, r.err);
    assert.match(r.err, /reading cluster https:\/\/127\.0\.0\.1:\d+ \(context "c"\)/);
    assert.match(r.err, /^\s+at /m, 'the -v stack is there');
    assert.doesNotMatch(r.err + r.out, /cli-secret-pass-4242|cli-secret-token-4343|admin:/);
  });

  test('the CLI filters any stderr line, whoever wrote it', async () => {
    registerSecret('registered-elsewhere-777');
    const { main } = await import('../../src/cli/main.ts');
    let err = '';
    // An unknown command's message carries the (registered) word back: it must come out masked.
    await main(['registered-elsewhere-777'], { out: () => {}, err: (s) => { err += s; }, env });
    assert.match(err, /^error: unknown command "\[redacted\]"/);
  });
});
