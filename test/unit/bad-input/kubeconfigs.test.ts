/**
 * The bad-input corpus for kubeconfigs, credentials and the way to the API server: missing, unreadable,
 * malformed kubeconfigs (3), a bad value on the command line (2), no kubeconfig or no way to the server (4),
 * refused credentials (5); credentials in every field of the kubeconfig and in exec plugin output never
 * printed, with or without -v. Small servers on 127.0.0.1 stand in for API servers that refuse, hang, speak
 * TLS with the wrong certificate, or are not API servers at all.
 */
import { after } from 'node:test';
import { corpus, type BadInputCase } from './harness.ts';
import {
  apiServer, b64, closeAll, closedPort, httpServer, httpsServer, makePki, silentTlsServer, status, tcpServer,
} from '../kube-servers.ts';

const pki = makePki();
const closed = await closedPort();
const silent = await tcpServer();
const reset = await tcpServer((s) => s.destroy());
const ssh = await tcpServer((s) => s.end('SSH-2.0-OpenSSH_9.6\r\n'));
const plainHttp = await httpServer(apiServer);
const html = await httpServer((_q, r) => { r.writeHead(200, { 'Content-Type': 'text/html' }); r.end('<html>hello</html>'); });
const notFound = await httpServer((_q, r) => { r.writeHead(404, { 'Content-Type': 'text/plain' }); r.end('404 page not found'); });
const http401 = await httpServer(status(401, 'Unauthorized', 'Unauthorized'));
const http403 = await httpServer(status(403, 'Forbidden', 'nodes is forbidden: User "system:anonymous" cannot list resource "nodes"'));
const http500 = await httpServer(status(500, 'InternalError', 'etcdserver: request timed out'));
const tls401 = await httpsServer(status(401, 'Unauthorized', 'Unauthorized'), { cert: pki.serverCert, key: pki.serverKey });
const self401 = await httpsServer(status(401, 'Unauthorized', 'Unauthorized'), { cert: pki.selfCert, key: pki.selfKey });
const tlsSilent = await silentTlsServer({ cert: pki.serverCert, key: pki.serverKey });
after(closeAll);

const IS_ROOT = process.getuid?.() === 0;
const KC = '$D/kubeconfig';
const INSPECT = ['inspect', '--kubeconfig', KC];

/** A kubeconfig (as JSON, which is YAML) with one context "c" → cluster "k", user "u". */
function kubeconfig(cluster: Record<string, unknown> | null, user: Record<string, unknown> | null = {}, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    ...extra,
  }, null, 2);
}
const server = (url: string, more: Record<string, unknown> = {}) => ({ server: url, ...more });
const skip = (url: string) => server(url, { 'insecure-skip-tls-verify': true });

/** A case that runs `inspect` (or `args`) against the kubeconfig `text`. */
function live(name: string, code: number, text: string, more: Partial<BadInputCase> = {}): BadInputCase {
  return { name, args: INSPECT, code, ...more, files: { kubeconfig: text, ...(more.files ?? {}) } };
}

const EXEC_V1 = 'client.authentication.k8s.io/v1';
function execUser(script: string, extra: Record<string, unknown> = {}): { user: Record<string, unknown>; files: BadInputCase['files'] } {
  return {
    user: { exec: { apiVersion: EXEC_V1, command: '$D/plugin.sh', interactiveMode: 'Never', ...extra } },
    files: { 'plugin.sh': { content: `#!/bin/sh\n${script}\n`, mode: 0o755 } },
  };
}
function execCase(name: string, code: number, script: string, opts: { cluster?: Record<string, unknown>; extra?: Record<string, unknown>; more?: Partial<BadInputCase> } = {}): BadInputCase {
  const e = execUser(script, opts.extra);
  return live(name, code, kubeconfig(opts.cluster ?? server(`http://127.0.0.1:${http401}`), e.user), { ...opts.more, files: { ...e.files, ...(opts.more?.files ?? {}) } });
}
const credential = (status: Record<string, unknown>, apiVersion = EXEC_V1) => JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

const S = {
  token: 'kr-secret-token-7f3a9c21',
  password: 'kr-secret-password-51be07',
  urlPassword: 'kr-secret-urlpass-c0ffee42',
  urlToken: 'kr-secret-urltoken-d1a2b3c4',
  queryToken: 'kr-secret-query-9e8d7c6b',
  exec: 'kr-secret-exec-output-2468ac',
  execToken: 'kr-secret-exec-token-13579b',
  execEnv: 'kr-secret-exec-env-abcdef12',
  oidc: 'kr-secret-oidc-refresh-5544aa',
  clientSecret: 'kr-secret-client-secret-8899bb',
  proxy: 'kr-secret-proxy-pass-77cc11',
  garbage: 'kr-secret-in-garbage-yaml-0a0b',
  tokenFile: 'kr-secret-token-file-6d6e6f',
};
const keyBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----'));

const cases: BadInputCase[] = [
  // --- where the kubeconfig is (or is not) ---
  { name: 'no kubeconfig anywhere', args: ['inspect'], code: 4, message: /no kubeconfig found/ },
  { name: 'no kubeconfig: suggest', args: ['suggest', '--for', 'services'], code: 4, message: /no kubeconfig found/ },
  { name: 'no kubeconfig: plan', args: ['plan', '--service-cidr', '10.200.0.0/16'], code: 4, message: /no kubeconfig found/ },
  { name: 'empty ~/.kube directory', args: ['inspect'], code: 4, dirs: ['home/.kube'], message: /no kubeconfig found/ },
  { name: 'in-cluster variables without a service account', args: ['inspect'], code: 4, env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(closed) }, message: /service account token/ },
  { name: '--kubeconfig missing', args: ['inspect', '--kubeconfig', '$D/nope.yaml'], code: 3, message: /kubeconfig .*nope\.yaml \(named by --kubeconfig\) does not exist/ },
  { name: '--kubeconfig missing: plan', args: ['plan', '--service-cidr', '10.200.0.0/16', '--kubeconfig', '$D/nope.yaml'], code: 3, message: /does not exist/ },
  { name: '--kubeconfig missing: suggest', args: ['suggest', '--for', 'pods', '--kubeconfig', '$D/nope.yaml'], code: 3, message: /does not exist/ },
  { name: '--kubeconfig is a directory', args: ['inspect', '--kubeconfig', '$D/kc.d'], code: 3, dirs: ['kc.d'], message: /is a directory/ },
  { name: '--kubeconfig under a file', args: ['inspect', '--kubeconfig', '$D/file/kubeconfig'], code: 3, files: { file: 'x' } },
  { name: '--kubeconfig empty value', args: ['inspect', '--kubeconfig', ''], code: 2 },
  ...(IS_ROOT ? [] : [{ name: '--kubeconfig unreadable', args: INSPECT, code: 3, files: { kubeconfig: { content: kubeconfig(server('https://127.0.0.1:1')), mode: 0o000 } }, message: /permission denied/ }]),
  { name: 'KUBECONFIG names a missing file', args: ['inspect'], code: 3, env: { KUBECONFIG: '$D/missing' }, message: /missing \(named by KUBECONFIG\) does not exist/ },
  { name: 'KUBECONFIG names only missing files', args: ['inspect'], code: 3, env: { KUBECONFIG: '$D/a:$D/b' }, message: /none of the KUBECONFIG files exist/ },
  { name: 'KUBECONFIG of empty entries falls back to home', args: ['inspect'], code: 4, env: { KUBECONFIG: '::' }, message: /no kubeconfig found/ },
  live('KUBECONFIG skips a missing file', 4, '', { args: ['inspect'], env: { KUBECONFIG: '$D/missing:$D/good' }, files: { good: kubeconfig(server(`https://127.0.0.1:${closed}`)) }, message: /ECONNREFUSED/ }),
  live('KUBECONFIG with a garbage file', 3, '', { args: ['inspect'], env: { KUBECONFIG: '$D/good:$D/bad' }, files: { good: kubeconfig(server(`https://127.0.0.1:${closed}`)), bad: 'clusters: [\n' }, message: /bad .*not valid YAML/ }),
  live('KUBECONFIG with a directory', 3, '', { args: ['inspect'], env: { KUBECONFIG: '$D/good:$D/dir' }, dirs: ['dir'], files: { good: kubeconfig(server(`https://127.0.0.1:${closed}`)) }, message: /is a directory/ }),
  { name: 'KUBECONFIG of empty files', args: ['inspect'], code: 3, env: { KUBECONFIG: '$D/a:$D/b' }, files: { a: '', b: '# nothing\n' }, message: /is empty/ },
  {
    name: 'KUBECONFIG merged: current-context from one file, context from another', args: ['inspect'], code: 4, env: { KUBECONFIG: '$D/a:$D/b' },
    files: { a: 'current-context: c2\n', b: kubeconfig(server(`https://127.0.0.1:${closed}`), {}, { contexts: [{ name: 'c2', context: { cluster: 'k', user: 'u' } }] }) },
    message: /context "c2".*ECONNREFUSED/,
  },
  { name: '~/.kube/config is garbage', args: ['inspect'], code: 3, files: { 'home/.kube/config': '\u0000\u0001\u0002' }, message: /binary/ },
  { name: '~/.kube/config is a directory', args: ['inspect'], code: 3, dirs: ['home/.kube/config'], message: /is a directory/ },
  { name: '~/.kube/config with a bad server', args: ['inspect'], code: 3, files: { 'home/.kube/config': kubeconfig(server('not a url')) }, message: /cluster "k" in kubeconfig .*home\/\.kube\/config: server "not a url" is not a URL/ },

  // --- what the file holds ---
  live('empty kubeconfig', 3, '', { message: /is empty/ }),
  live('whitespace kubeconfig', 3, '  \n\n\t\n', { message: /is empty/ }),
  live('comments only', 3, '# a kubeconfig\n# nothing here\n', { message: /is empty/ }),
  live('garbage YAML quoting a token', 3, `apiVersion: v1\nusers:\n- name: u\n  user: {token: ${S.garbage}\n`, { secrets: [S.garbage], message: /not valid YAML.*line/ }),
  live('tab-indented YAML with a password', 3, `users:\n\t- name: u\n\t  user: {password: ${S.garbage}}\n`, { secrets: [S.garbage], message: /not valid YAML/ }),
  live('binary kubeconfig', 3, '', { files: { kubeconfig: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0xff, 0xfe]) }, message: /binary/ }),
  live('invalid UTF-8', 3, '', { files: { kubeconfig: Buffer.from([0x63, 0x6c, 0x75, 0x73, 0xc3, 0x28, 0x0a]) }, message: /binary/ }),
  live('a YAML list', 3, '- a\n- b\n', { message: /found a list/ }),
  live('a YAML string', 3, 'just some words\n', { message: /found a string/ }),
  live('a number', 3, '42\n', { message: /found a number/ }),
  live('two YAML documents', 3, `${kubeconfig(server('https://127.0.0.1:1'))}\n---\n{}\n`.replace(/^\{/, '---\n{'), { message: /not valid YAML/ }),
  live('a kubectl List, not a Config', 3, 'apiVersion: v1\nkind: List\nitems: []\n', { message: /kind is "List", expected Config/ }),
  live('clusters is a string', 3, 'clusters: oops\ncontexts: []\ncurrent-context: c\n', { message: /"clusters" must be a list, found a string/ }),
  live('contexts is a mapping', 3, 'contexts: {c: {cluster: k}}\ncurrent-context: c\n', { message: /"contexts" must be a list, found a mapping/ }),
  live('a cluster entry is a string', 3, 'clusters: [k]\ncurrent-context: c\n', { message: /clusters\[0\] must be a mapping/ }),
  live('a cluster entry without a name', 3, 'clusters: [{cluster: {server: "https://127.0.0.1:1"}}]\ncurrent-context: c\n', { message: /clusters\[0\] has no name/ }),
  live('a user body is a list', 3, 'users: [{name: u, user: [token]}]\ncurrent-context: c\n', { message: /user must be a mapping, found a list/ }),
  live('current-context is a number', 3, 'current-context: 7\ncontexts: []\n', { message: /current-context must be a string/ }),
  live('JSON kubeconfig that works up to the connection', 4, kubeconfig(server(`https://127.0.0.1:${closed}`)), { message: /ECONNREFUSED/ }),

  // --- contexts and references ---
  live('unknown --context', 2, kubeconfig(server('https://127.0.0.1:1')), { args: [...INSPECT, '--context', 'nope'], message: /context "nope" is not in the kubeconfig \(contexts: c\)/ }),
  live('unknown --context with credentials in the file', 2, kubeconfig(server(`https://x:${S.urlPassword}@127.0.0.1:1`), { token: S.token }), { args: [...INSPECT, '--context', 'other'], secrets: [S.token, S.urlPassword] }),
  live('no current-context', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { 'current-context': '' }), { message: /has no current-context: pass --context/ }),
  live('current-context names a missing context', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { 'current-context': 'gone' }), { message: /current-context "gone" .* is not one of its contexts/ }),
  live('context names a missing cluster', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { contexts: [{ name: 'c', context: { cluster: 'elsewhere', user: 'u' } }] }), { message: /context "c" .* names cluster "elsewhere", which is not in the kubeconfig \(clusters: k\)/ }),
  live('context names a missing user', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { contexts: [{ name: 'c', context: { cluster: 'k', user: 'nobody' } }] }), { message: /names user "nobody", which is not in the kubeconfig/ }),
  live('context without a cluster', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { contexts: [{ name: 'c', context: { user: 'u' } }] }), { message: /names no cluster/ }),
  live('context without a body', 3, kubeconfig(server('https://127.0.0.1:1'), {}, { contexts: [{ name: 'c' }] }), { message: /has no context mapping/ }),
  live('cluster without a body', 3, kubeconfig(null), { message: /cluster "k" .* has no cluster mapping/ }),
  live('cluster without a server', 3, kubeconfig({ 'insecure-skip-tls-verify': true }), { message: /has no server/ }),

  // --- server URLs ---
  live('server is not a URL', 3, kubeconfig(server('not a url')), { message: /cluster "k" in kubeconfig .*kubeconfig: server "not a url" is not a URL/ }),
  live('server is empty', 3, kubeconfig(server('   ')), { message: /server is empty/ }),
  live('server is a number', 3, kubeconfig(server(6443 as unknown as string)), { message: /server must be a string, found a number/ }),
  live('server has scheme ftp', 3, kubeconfig(server('ftp://127.0.0.1:21')), { message: /only https:\/\/ and http:\/\// }),
  live('server has scheme unix', 3, kubeconfig(server('unix:///var/run/kube.sock')), { message: /only https/ }),
  live('server is a bare scheme', 3, kubeconfig(server('https://')), { message: /is not a URL/ }),
  live('server port out of range', 3, kubeconfig(server('https://127.0.0.1:99999')), { message: /is not a URL/ }),
  live('server with an unclosed IPv6 bracket', 3, kubeconfig(server('https://[::1:6443')), { message: /is not a URL/ }),
  live('server with a space in the host', 3, kubeconfig(server('https://exa mple.com')), { message: /is not a URL/ }),
  live('server not a URL, with a credential before @', 3, kubeconfig(server(`not a url ${S.urlPassword}@host`)), { secrets: [S.urlPassword], message: /is not a URL/ }),
  live('server with a credential query', 3, kubeconfig(server(`https://127.0.0.1:${closed}/?token=${S.queryToken}`)), { secrets: [S.queryToken], message: /must not have a query/ }),
  live('server with user:password', 4, kubeconfig(server(`https://admin:${S.urlPassword}@127.0.0.1:${closed}`)), { secrets: [S.urlPassword], message: /cannot reach the API server https:\/\/127\.0\.0\.1:\d+ .*ECONNREFUSED/ }),
  live('server with a token as userinfo', 4, kubeconfig(server(`https://${S.urlToken}@127.0.0.1:${closed}`)), { secrets: [S.urlToken] }),
  live('server with user:password refused (401)', 5, kubeconfig(server(`http://admin:${S.urlPassword}@127.0.0.1:${http401}`)), { secrets: [S.urlPassword], message: /401 Unauthorized/ }),
  live('server host:port without a scheme', 4, kubeconfig(server(`127.0.0.1:${closed}`)), { message: /https:\/\/127\.0\.0\.1:\d+ .*ECONNREFUSED/ }),
  live('insecure-skip-tls-verify is a string', 3, kubeconfig(server('https://127.0.0.1:1', { 'insecure-skip-tls-verify': 'yes' })), { message: /insecure-skip-tls-verify must be true or false/ }),

  // --- CA, client certificate and key ---
  live('certificate-authority-data not base64', 3, kubeconfig(server('https://127.0.0.1:1', { 'certificate-authority-data': 'not*base64!' })), { message: /certificate-authority-data is not base64/ }),
  live('certificate-authority-data is not PEM', 3, kubeconfig(server('https://127.0.0.1:1', { 'certificate-authority-data': b64('hello world') })), { message: /holds no PEM certificate/ }),
  live('certificate-authority-data is a broken certificate', 3, kubeconfig(server('https://127.0.0.1:1', { 'certificate-authority-data': b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n') })), { message: /not a valid X\.509 certificate/ }),
  live('certificate-authority file missing', 3, kubeconfig(server('https://127.0.0.1:1', { 'certificate-authority': 'ca.crt' })), { message: /certificate-authority: cannot read .*ca\.crt: does not exist/ }),
  live('certificate-authority is a directory', 3, kubeconfig(server('https://127.0.0.1:1', { 'certificate-authority': '$D/ca.d' })), { dirs: ['ca.d'], message: /is a directory/ }),
  live('client certificate without a key', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate-data': b64(pki.clientCert) }), { message: /client certificate but no client-key/ }),
  live('client key without a certificate', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-key-data': b64(pki.clientKey) }), { secrets: keyBody(pki.clientKey), message: /client-key but no client certificate/ }),
  live('client-key-data is garbage', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(`${S.garbage} is not a key`) }), { secrets: [S.garbage], message: /client key holds no PEM private key/ }),
  live('client key does not match the certificate', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(pki.strayKey) }), { secrets: keyBody(pki.strayKey), message: /does not belong to the client certificate/ }),
  live('client key is a broken PEM block', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(`-----BEGIN PRIVATE KEY-----\n${S.garbage}\n-----END PRIVATE KEY-----\n`) }), { secrets: [S.garbage], message: /cannot be used/ }),
  live('client-certificate file missing', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate': 'client.crt', 'client-key': 'client.key' }), { message: /client-certificate: cannot read/ }),
  live('client-key file missing', 3, kubeconfig(server('https://127.0.0.1:1'), { 'client-certificate': 'client.crt', 'client-key': 'client.key' }), { files: { 'client.crt': pki.clientCert }, message: /client-key: cannot read/ }),
  live('client certificate accepted but refused (401), key never printed', 5, kubeconfig(skip(`https://127.0.0.1:${tls401}`), { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(pki.clientKey) }), { secrets: keyBody(pki.clientKey), message: /401/ }),

  // --- tokens, passwords, auth-providers ---
  live('token refused (401)', 5, kubeconfig(server(`http://127.0.0.1:${http401}`), { token: S.token }), { secrets: [S.token], message: /rejected our credentials \(401 Unauthorized\)/ }),
  live('token refused over TLS (401)', 5, kubeconfig(server(`https://127.0.0.1:${tls401}`, { 'certificate-authority-data': b64(pki.caCert) }), { token: S.token }), { secrets: [S.token] }),
  live('basic auth refused (401)', 5, kubeconfig(skip(`https://127.0.0.1:${self401}`), { username: 'admin', password: S.password }), { secrets: [S.password] }),
  live('token forbidden (403)', 5, kubeconfig(server(`http://127.0.0.1:${http403}`), { token: S.token }), { secrets: [S.token], message: /403 Forbidden/ }),
  live('token is a number', 3, kubeconfig(server('https://127.0.0.1:1'), { token: 12345 }), { message: /token must be a string/ }),
  live('token with a line break', 3, kubeconfig(server('https://127.0.0.1:1'), { token: `${S.token}\nmore` }), { secrets: [S.token], message: /characters a bearer token cannot have/ }),
  live('token-file missing', 3, kubeconfig(server('https://127.0.0.1:1'), { 'token-file': 'token' }), { message: /token-file: cannot read .*token: does not exist/ }),
  live('token-file empty', 3, kubeconfig(server('https://127.0.0.1:1'), { 'token-file': '$D/token' }), { files: { token: '\n' }, message: /token-file .* is empty/ }),
  live('token-file refused (401)', 5, kubeconfig(server(`http://127.0.0.1:${http401}`), { 'token-file': '$D/token' }), { files: { token: `${S.tokenFile}\n` }, secrets: [S.tokenFile] }),
  live('auth-provider is a string', 3, kubeconfig(server('https://127.0.0.1:1'), { 'auth-provider': 'oidc' }), { message: /auth-provider must be a mapping/ }),
  live('auth-provider without a name', 3, kubeconfig(server('https://127.0.0.1:1'), { 'auth-provider': { config: { 'client-secret': S.clientSecret } } }), { secrets: [S.clientSecret], message: /auth-provider has no name/ }),
  live('unknown auth-provider with secrets in its config, refused (401)', 5, kubeconfig(server(`http://127.0.0.1:${http401}`), { 'auth-provider': { name: 'vendor-sso', config: { 'refresh-token': S.oidc, 'client-secret': S.clientSecret } } }), { secrets: [S.oidc, S.clientSecret] }),
  live('impersonation refused (403)', 5, kubeconfig(server(`http://127.0.0.1:${http403}`), { token: S.token, as: 'someone', 'as-groups': ['g1'] }), { secrets: [S.token] }),
  live('as-groups is not a list', 3, kubeconfig(server('https://127.0.0.1:1'), { as: 'x', 'as-groups': 'g1' }), { message: /as-groups must be a list of strings/ }),

  // --- exec credential plugins ---
  live('exec plugin not found', 3, kubeconfig(server(`http://127.0.0.1:${http401}`), { exec: { apiVersion: EXEC_V1, command: 'kr-no-such-plugin', installHint: 'install kr-no-such-plugin from your vendor' } }), { message: /exec credential plugin "kr-no-such-plugin" of user "u" .* was not found: install kr-no-such-plugin/ }),
  live('exec plugin not executable', 3, kubeconfig(server(`http://127.0.0.1:${http401}`), { exec: { apiVersion: EXEC_V1, command: '$D/plugin.sh' } }), { files: { 'plugin.sh': { content: '#!/bin/sh\necho hi\n', mode: 0o644 } }, message: /permission denied/ }),
  live('exec without a command', 3, kubeconfig(server('https://127.0.0.1:1'), { exec: { apiVersion: EXEC_V1 } }), { message: /exec has no command/ }),
  live('exec args not a list', 3, kubeconfig(server('https://127.0.0.1:1'), { exec: { apiVersion: EXEC_V1, command: 'x', args: '--token' } }), { message: /args must be a list of strings/ }),
  live('exec with a bad apiVersion', 3, kubeconfig(server('https://127.0.0.1:1'), { exec: { apiVersion: 'v9', command: 'x' } }), { message: /apiVersion "v9" is not client\.authentication/ }),
  execCase('exec plugin exits 1, secret on its stderr', 5, `echo "login failed for ${S.exec}" >&2\nexit 1`, { more: { secrets: [S.exec], message: /failed \(exit code 1\): no credentials/ } }),
  execCase('exec plugin killed by a signal', 5, 'kill -9 $$', { more: { message: /killed by SIGKILL/ } }),
  execCase('exec plugin prints garbage with a secret', 3, `echo "token=${S.exec} and some garbage"`, { more: { secrets: [S.exec], message: /printed \d+ bytes that are not JSON: expected an ExecCredential/ } }),
  execCase('exec plugin prints cut-off JSON with its token', 3, `printf '%s' '{"apiVersion":"${EXEC_V1}","kind":"ExecCredential","status":{"token":"${S.execToken}'`, { more: { secrets: [S.execToken], message: /not JSON/ } }),
  execCase('exec plugin prints nothing', 3, 'exit 0', { more: { message: /printed nothing/ } }),
  execCase('exec plugin prints JSON that is not an ExecCredential', 3, `echo '{"token":"${S.execToken}"}'`, { more: { secrets: [S.execToken], message: /not an ExecCredential/ } }),
  execCase('exec plugin answers another apiVersion', 3, `echo '${credential({ token: S.execToken }, 'client.authentication.k8s.io/v1beta1')}'`, { more: { secrets: [S.execToken], message: /another apiVersion/ } }),
  execCase('exec credential without credentials', 3, `echo '${credential({ expirationTimestamp: '2099-01-01T00:00:00Z' })}'`, { more: { message: /no credentials/ } }),
  execCase('exec credential with a bad expiry', 3, `echo '${credential({ token: S.execToken, expirationTimestamp: 'soon' })}'`, { more: { secrets: [S.execToken], message: /expirationTimestamp is not a time/ } }),
  execCase('exec credential with a garbage client key', 3, `echo '${credential({ clientCertificateData: pki.clientCert.replaceAll('\n', '\\n'), clientKeyData: S.execToken })}'`, { more: { secrets: [S.execToken], message: /client key holds no PEM private key/ } }),
  execCase('exec credential token refused (401)', 5, `echo '${credential({ token: S.execToken })}'`, { more: { secrets: [S.execToken], message: /401 Unauthorized/ } }),
  execCase('exec credential token refused over TLS (401)', 5, `echo '${credential({ token: S.execToken })}'`, { cluster: server(`https://127.0.0.1:${tls401}`, { 'certificate-authority-data': b64(pki.caCert) }), more: { secrets: [S.execToken] } }),
  execCase('exec with a secret in its env, refused (401)', 5, `echo "{\\"apiVersion\\":\\"${EXEC_V1}\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"$SSO_KEY\\"}}"`, { extra: { env: [{ name: 'SSO_KEY', value: S.execEnv }] }, more: { secrets: [S.execEnv] } }),
  execCase('exec plugin hangs', 4, 'exec sleep 30', { more: { args: [...INSPECT, '--request-timeout', '1s'], timeoutMs: 30_000, message: /did not answer within 1s/ } }),
  execCase('exec plugin hangs with a child holding its output', 4, 'sleep 30\necho never', { more: { args: [...INSPECT, '--request-timeout', '1s'], timeoutMs: 30_000, message: /did not answer within 1s/ } }),

  // --- the way to the server ---
  live('connection refused (https)', 4, kubeconfig(server(`https://127.0.0.1:${closed}`)), { message: /cannot reach the API server https:\/\/127\.0\.0\.1:\d+ \(context "c"\): ECONNREFUSED/ }),
  live('connection refused (http)', 4, kubeconfig(server(`http://127.0.0.1:${closed}`)), { message: /ECONNREFUSED/ }),
  live('connection refused with a timeout', 4, kubeconfig(server(`https://127.0.0.1:${closed}`)), { args: [...INSPECT, '--request-timeout', '1s'], message: /ECONNREFUSED/ }),
  live('TLS to a plain http server', 4, kubeconfig(server(`https://127.0.0.1:${plainHttp}`)), { message: /TLS handshake failed: .*is the server plain http/ }),
  live('TLS to a server that resets', 4, kubeconfig(server(`https://127.0.0.1:${reset}`)), { message: /TLS handshake failed/ }),
  live('TLS to an SSH server', 4, kubeconfig(server(`https://127.0.0.1:${ssh}`)), { message: /TLS handshake failed/ }),
  live('TLS with a self-signed certificate and no CA', 4, kubeconfig(server(`https://127.0.0.1:${self401}`)), { message: /TLS handshake failed: self-signed certificate/ }),
  live('TLS with the wrong CA', 4, kubeconfig(server(`https://127.0.0.1:${tls401}`, { 'certificate-authority-data': b64(pki.otherCaCert) })), { message: /TLS handshake failed/ }),
  live('TLS with the wrong server name', 4, kubeconfig(server(`https://127.0.0.1:${tls401}`, { 'certificate-authority-data': b64(pki.caCert), 'tls-server-name': 'kubernetes.example' })), { message: /TLS handshake failed: .*ALTNAME|TLS handshake failed: .*kubernetes\.example/ }),
  live('TLS to a server that never answers', 4, kubeconfig(server(`https://127.0.0.1:${silent}`)), { args: [...INSPECT, '--request-timeout', '1s'], timeoutMs: 30_000, message: /timed out after 1s in the TLS handshake/ }),
  live('http to a server that never answers', 4, kubeconfig(server(`http://127.0.0.1:${silent}`)), { args: [...INSPECT, '--request-timeout', '1s'], timeoutMs: 30_000, message: /timed out after 1s waiting for an answer/ }),
  live('TLS handshake done, no answer', 4, kubeconfig(server(`https://127.0.0.1:${tlsSilent}`, { 'certificate-authority-data': b64(pki.caCert) })), { args: [...INSPECT, '--request-timeout', '1500ms'], timeoutMs: 30_000, message: /timed out after 1500ms waiting for an answer/ }),
  live('http to a server that resets', 4, kubeconfig(server(`http://127.0.0.1:${reset}`)), { message: /ECONNRESET/ }),
  live('http to an SSH server', 4, kubeconfig(server(`http://127.0.0.1:${ssh}`)), { message: /did not answer in HTTP/ }),
  live('http to a web page', 4, kubeconfig(server(`http://127.0.0.1:${html}`)), { message: /not JSON: is it a Kubernetes API server/ }),
  live('http to a server that knows no /version', 4, kubeconfig(server(`http://127.0.0.1:${notFound}`)), { message: /404 .*did not answer like a Kubernetes API server/ }),
  live('API server in trouble (500)', 4, kubeconfig(server(`http://127.0.0.1:${http500}`)), { message: /500 InternalError/ }),
  live('proxy-url is not a URL', 3, kubeconfig(server('https://127.0.0.1:1', { 'proxy-url': `proxy with ${S.proxy}` })), { secrets: [S.proxy], message: /proxy-url .* is not a URL/ }),
  live('proxy-url with an unknown scheme', 3, kubeconfig(server('https://127.0.0.1:1', { 'proxy-url': `ftp://u:${S.proxy}@127.0.0.1:21` })), { secrets: [S.proxy], message: /proxy-url .* has scheme ftp/ }),
  live('proxy refuses the connection', 4, kubeconfig(server('https://127.0.0.1:1', { 'proxy-url': `http://u:${S.proxy}@127.0.0.1:${closed}` }), { token: S.token }), { secrets: [S.proxy, S.token], message: /ECONNREFUSED/ }),
];

// Every run starts a Node process; on a loaded machine that alone can take many seconds, so a case is called
// hung only after a minute (the timeout cases, which must end within a few seconds, after 30 s).
corpus('kubeconfigs, credentials, the way to the API server', cases.map((c) => ({ timeoutMs: 60_000, ...c })));
