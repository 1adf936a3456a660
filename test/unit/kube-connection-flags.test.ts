// kubectl's connection flags (--cluster, --user, --server, --token, --certificate-authority,
// --insecure-skip-tls-verify, --as, --as-group, --as-uid) laid over the kubeconfig as kubectl lays them, the
// Impersonate-* headers as client-go sends them, and -v=6's request lines.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { connect } from '../../src/kube/client.ts';
import { resolveKubeConfig } from '../../src/kube/kubeconfig.ts';
import { impersonationHeaders, requestLine } from '../../src/kube/transport.ts';
import { normalizeArgs } from '../../src/cli/args.ts';
import { GLOBAL_OPTIONS } from '../../src/cli/main.ts';
import { run } from './run-cli.ts';
import { apiServer, b64, closeAll, httpServer, makePki, type Seen } from './kube-servers.ts';

after(closeAll);
const pki = makePki();
const dir = mkdtempSync(join(tmpdir(), 'kr-connflags-'));
const env = { HOME: join(dir, 'no-home'), PATH: process.env.PATH };
const caFile = join(dir, 'ca.crt');
writeFileSync(caFile, pki.caCert);

/** Two clusters, two users, one context (cluster one, user alice, who acts as "robot" in groups g1, g2). */
function twoOfEach(): string {
  const p = join(dir, `kc-${Math.random().toString(36).slice(2)}`);
  writeFileSync(p, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [
      { name: 'one', cluster: { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64(pki.caCert), 'tls-server-name': 'api.one' } },
      { name: 'two', cluster: { server: 'https://10.0.0.2:6443', 'insecure-skip-tls-verify': true } },
    ],
    users: [
      { name: 'alice', user: { token: 'alice-token-123456', as: 'robot', 'as-groups': ['g1', 'g2'], 'as-uid': 'u-1', 'as-user-extra': { scopes: ['a', 'b'], 'team/name': ['x'] } } },
      { name: 'bob', user: { username: 'bob', password: 'bob-password-1' } },
    ],
    contexts: [{ name: 'c', context: { cluster: 'one', user: 'alice' } }],
  }));
  return p;
}

describe('connection flags over the kubeconfig', () => {
  test('no flags: the context as it is, with the user\'s impersonation (as, as-groups, as-uid, as-user-extra)', () => {
    const r = resolveKubeConfig({ kubeconfig: twoOfEach(), env });
    assert.equal(r.displayServer, 'https://10.0.0.1:6443');
    assert.equal(r.cluster.tlsServerName, 'api.one');
    assert.deepEqual(r.impersonate, { user: 'robot', groups: ['g1', 'g2'], uid: 'u-1', extra: { scopes: ['a', 'b'], 'team/name': ['x'] } });
  });

  test('--cluster and --user pick other entries; unknown names are usage errors listing the known ones', () => {
    const kubeconfig = twoOfEach();
    const r = resolveKubeConfig({ kubeconfig, env, overrides: { cluster: 'two', user: 'bob' } });
    assert.equal(r.displayServer, 'https://10.0.0.2:6443');
    assert.equal(r.cluster.skipTLSVerify, true);
    assert.equal(r.user?.username, 'bob');
    assert.equal(r.impersonate, undefined, 'bob acts as nobody else');
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { cluster: 'three' } }),
      (e: any) => e.kind === 'usage' && /^--cluster "three" is not in the kubeconfig \(clusters: one, two\)$/.test(e.message));
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { user: 'carol' } }),
      (e: any) => e.kind === 'usage' && /^--user "carol" is not in the kubeconfig \(users: alice, bob\)$/.test(e.message));
  });

  test('--server replaces the address and drops tls-server-name; --certificate-authority drops the CA data; --insecure-skip-tls-verify both', () => {
    const kubeconfig = twoOfEach();
    const s = resolveKubeConfig({ kubeconfig, env, overrides: { server: '127.0.0.1:7443' } });
    assert.equal(s.displayServer, 'https://127.0.0.1:7443', 'host:port is https, as kubectl reads it');
    assert.equal(s.cluster.tlsServerName, undefined);
    assert.ok(s.cluster.caData, 'the cluster\'s CA still applies');
    const ca = resolveKubeConfig({ kubeconfig, env, overrides: { certificateAuthority: caFile } });
    assert.equal(ca.cluster.caFile, caFile);
    assert.equal(ca.cluster.caData, undefined);
    const insecure = resolveKubeConfig({ kubeconfig, env, overrides: { insecureSkipTlsVerify: true } });
    assert.equal(insecure.cluster.skipTLSVerify, true);
    assert.equal(insecure.cluster.caData, undefined);
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { server: 'ftp://x' } }), (e: any) => e.kind === 'usage' && /^--server "ftp:\/\/x" has scheme ftp:/.test(e.message));
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { certificateAuthority: caFile, insecureSkipTlsVerify: true } }), (e: any) => e.kind === 'usage');
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { certificateAuthority: join(dir, 'missing.crt') } }), (e: any) => e.kind === 'input' && /missing\.crt/.test(e.message));
  });

  test('--token replaces the user\'s token and basic auth; --as, --as-group, --as-uid replace the user\'s as, as-groups, as-uid', () => {
    const kubeconfig = twoOfEach();
    const t = resolveKubeConfig({ kubeconfig, env, overrides: { user: 'bob', token: 'flag-token-987654' } });
    assert.equal(t.user?.token, 'flag-token-987654');
    assert.equal(t.user?.username, undefined);
    assert.equal(t.user?.password, undefined);
    const a = resolveKubeConfig({ kubeconfig, env, overrides: { as: 'jane', asGroups: ['admins'] } });
    assert.deepEqual(a.impersonate, { user: 'jane', groups: ['admins'], uid: 'u-1', extra: { scopes: ['a', 'b'], 'team/name': ['x'] } });
    const b = resolveKubeConfig({ kubeconfig, env, overrides: { user: 'bob', as: 'jane', asUid: 'u-9' } });
    assert.deepEqual(b.impersonate, { user: 'jane', groups: [], uid: 'u-9', extra: {} });
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { user: 'bob', asGroups: ['g'] } }),
      (e: any) => e.kind === 'usage' && /--as-group and --as-uid need --as USER/.test(e.message));
    assert.throws(() => resolveKubeConfig({ kubeconfig, env, overrides: { token: 'bad token with spaces' } }), (e: any) => e.kind === 'usage');
  });

  test('--server with no kubeconfig anywhere: the flags alone make the connection (not the in-cluster one)', () => {
    const r = resolveKubeConfig({ env: { ...env, KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, overrides: { server: 'https://192.0.2.1:6443', token: 'only-token-111111', as: 'jane' } });
    assert.equal(r.displayServer, 'https://192.0.2.1:6443');
    assert.equal(r.user?.token, 'only-token-111111');
    assert.equal(r.inCluster, false);
    assert.equal(r.impersonate?.user, 'jane');
    assert.throws(() => resolveKubeConfig({ env, overrides: { token: 'only-token-111111' } }), (e: any) => e.kind === 'unreachable', 'no server, no kubeconfig');
    assert.throws(() => resolveKubeConfig({ env, overrides: { server: 'https://192.0.2.1', user: 'x' } }), (e: any) => e.kind === 'usage');
  });
});

describe('Impersonate-* headers as client-go sends them', () => {
  test('one Impersonate-Group header per group, Impersonate-Uid, Impersonate-Extra-KEY per value with the key escaped', async () => {
    assert.deepEqual(impersonationHeaders(undefined), {});
    const raw: string[][] = [];
    const seen: Seen[] = [];
    const port = await httpServer((req, res, s) => { raw.push(req.rawHeaders); apiServer(req, res, s); }, seen);
    const kubeconfig = twoOfEach();
    const c = connect({ kubeconfig, env, overrides: { cluster: 'two', server: `http://127.0.0.1:${port}`, as: 'jane', asGroups: ['dev', 'ops'], asUid: 'uid-7' } });
    await c.request('GET', '/version');
    const pairs = (h: string[]) => h.flatMap((v, i) => (i % 2 === 0 ? [[v.toLowerCase(), h[i + 1]!]] : []));
    const got = pairs(raw[0]!).filter(([k]) => k!.startsWith('impersonate-'));
    assert.deepEqual(got, [
      ['impersonate-user', 'jane'], ['impersonate-uid', 'uid-7'], ['impersonate-group', 'dev'], ['impersonate-group', 'ops'],
      ['impersonate-extra-scopes', 'a'], ['impersonate-extra-scopes', 'b'], ['impersonate-extra-team%2fname', 'x'], // (the header name lower-cased by this listing; sent as %2F)
    ]);
    assert.equal(seen[0]!.headers.authorization, 'Bearer alice-token-123456');
  });
});

describe('-v=6: one line per request, never a credential', () => {
  test('requestLine: verb, URL (redacted), status and milliseconds, or no answer', () => {
    const at = new Date(2026, 11, 2, 5, 40, 1, 123);
    assert.equal(requestLine('GET', 'https://10.0.0.1:6443/api/v1/nodes?limit=500', 200, 12.4, at), 'I1202 05:40:01.123 GET https://10.0.0.1:6443/api/v1/nodes?limit=500 200 OK in 12 milliseconds');
    assert.equal(requestLine('DELETE', 'https://h/x?token=abcdefgh', undefined, 3, at), 'I1202 05:40:01.123 DELETE https://h/x?token=[redacted] (no answer) in 3 milliseconds');
  });

  test('-v=6, -v 6, -v6, --v=6, --v 6 all set the level; -v alone stays --verbose; after -- nothing changes', () => {
    for (const form of [['-v=6'], ['-v', '6'], ['-v6'], ['--v=6'], ['--v', '6']]) assert.deepEqual(normalizeArgs(['inspect', ...form], GLOBAL_OPTIONS), ['inspect', '--v=6'], form.join(' '));
    assert.deepEqual(normalizeArgs(['-v', 'plan.yaml'], GLOBAL_OPTIONS), ['-v', 'plan.yaml']);
    assert.deepEqual(normalizeArgs(['--', '-v=6'], GLOBAL_OPTIONS), ['--', '-v=6']);
  });

  test('the CLI at -v=6 prints each request to stderr, without the token; at -v=5 and with -v alone it does not', async () => {
    const seen: Seen[] = [];
    const port = await httpServer(apiServer, seen);
    const server = `http://127.0.0.1:${port}`;
    const token = 'cli-secret-token-5550123';
    const six = await run(['inspect', '--server', server, '--token', token, '-v=6', '-o', 'json'], env);
    assert.ok(seen.length > 0);
    const lines = six.err.split('\n').filter((l) => / in \d+ milliseconds$/.test(l));
    assert.ok(lines.length >= seen.length, six.err);
    assert.ok(lines.some((l) => new RegExp(`^I\\d{4} [\\d:.]+ GET ${server}/version 200 OK in \\d+ milliseconds$`).test(l)), six.err);
    assert.ok(!six.err.includes(token) && !six.out.includes(token));
    for (const quiet of [['-v=5'], ['-v'], []]) {
      const r = await run(['inspect', '--server', server, '--token', token, ...quiet, '-o', 'json'], env);
      assert.equal(r.err.split('\n').filter((l) => / in \d+ milliseconds$/.test(l)).length, 0, `${quiet.join(' ')}: ${r.err}`);
    }
    assert.equal((await run(['inspect', '--server', server, '-v=11'], env)).code, 2);
  });
});

describe('who a refusal names', () => {
  test('whoAmI: the SelfSubjectReview\'s user name (with --as the impersonated one); undefined when the server does not answer it', async () => {
    const { whoAmI } = await import('../../src/kube/access-review.ts');
    const asked: string[] = [];
    const answering = { request: async (m: string, p: string) => { asked.push(`${m} ${p}`); return { status: { userInfo: { username: 'jane', groups: ['system:authenticated'] } } }; } };
    assert.equal(await whoAmI(answering as never), 'jane');
    assert.deepEqual(asked, ['POST /apis/authentication.k8s.io/v1/selfsubjectreviews']);
    const old = { request: async () => { throw Object.assign(new Error('404'), { status: 404 }); } };
    assert.equal(await whoAmI(old as never), undefined);
    assert.equal(await whoAmI({ request: async () => ({}) } as never), undefined);
  });
});

describe('one meaning per flag, unused flags refused', () => {
  const KOPS = join(import.meta.dirname, '../../examples/kops-tailscale');
  const cases: Array<[string[], RegExp]> = [
    [['version', '-o', 'wide'], /^error: version -o wide: version prints json or yaml/],
    [['rbac', 'plan.yaml', '-o', 'json'], /^error: rbac does not take --output: it writes the Roles as YAML manifests/],
    [['calc', '10.0.0.0/8', '--as', 'jane'], /^error: calc does not take --as: it reads no cluster/],
    [['probe', '--service', 'web', '--keep'], /^error: probe --keep is now --keep-deployment \(--keep is plan's/],
    [['probe', '--service', 'web', '--dns-server', '10.0.0.10', '-s', 'web'], /^error: --server \(-s\) needs --deploy: without it probe reads no cluster \(-s is --server, as in kubectl; a Service to probe is --service/],
    [['inspect', '-f', KOPS, '--as', 'jane'], /^error: --as is about the connection to a cluster, and -f alone reads files/],
    [['inspect', '--server', 'https://127.0.0.1:1', '--as-uid', 'u-1'], /^error: --as-group and --as-uid need --as USER/],
    [['inspect', '--server', 'https://127.0.0.1:1', '--certificate-authority', 'ca.crt', '--insecure-skip-tls-verify'], /^error: --certificate-authority cannot go with --insecure-skip-tls-verify/],
    [['inspect', '-f', KOPS, '-v=x'], /^error: -v x: the log level is a whole number from 0 to 10/],
  ];
  for (const [argv, msg] of cases) {
    test(argv.join(' '), async () => {
      const r = await run(argv, env);
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, msg);
      assert.equal(r.err.trim().split('\n').length, 1, `one error line: ${r.err}`);
    });
  }
  test('inspect -f with --request-timeout and -v=1 still reads the files (offline)', async () => {
    const r = await run(['inspect', '-f', KOPS, '--request-timeout', '5s', '-v=1', '-o', 'json'], env);
    assert.equal(r.code === 0 || r.code === 1, true, r.err);
    assert.match(r.err, /read \d+ objects from 1 path/);
  });
});
