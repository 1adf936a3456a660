// Kubeconfig resolution as kubectl does it, and what the checks hand to the transport.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { resolveKubeConfig } from '../../src/kube/kubeconfig.ts';
import { redact } from '../../src/kube/redact.ts';
import { b64, makePki } from './kube-servers.ts';

const root = mkdtempSync(join(tmpdir(), 'kr-kubeconfig-'));
const write = (rel: string, text: string) => { const p = join(root, rel); mkdirSync(join(p, '..'), { recursive: true }); writeFileSync(p, text); return p; };
const doc = (o: Record<string, unknown>) => JSON.stringify({ apiVersion: 'v1', kind: 'Config', ...o });
const env = { HOME: join(root, 'home') };

describe('kubeconfig resolution', () => {
  test('KUBECONFIG: first file to name a cluster, user, context or current-context wins; missing files are skipped', () => {
    const a = write('merge/a', doc({
      'current-context': 'one',
      clusters: [{ name: 'k', cluster: { server: 'https://10.0.0.1:6443' } }],
      contexts: [{ name: 'one', context: { cluster: 'k', user: 'u' } }],
    }));
    const b = write('merge/b', doc({
      'current-context': 'two',
      clusters: [{ name: 'k', cluster: { server: 'https://10.9.9.9:6443' } }],
      users: [{ name: 'u', user: { token: 'merged-user-token-1' } }],
      contexts: [{ name: 'one', context: { cluster: 'other', user: 'nobody' } }, { name: 'two', context: { cluster: 'k' } }],
    }));
    const r = resolveKubeConfig({ env: { ...env, KUBECONFIG: [join(root, 'merge/missing'), a, b].join(':') } });
    assert.equal(r.context, 'one');
    assert.equal(r.displayServer, 'https://10.0.0.1:6443');
    assert.equal(r.user?.token, 'merged-user-token-1');
    assert.equal(r.clusterSource, `kubeconfig ${a}`);
    assert.equal(r.userSource, `kubeconfig ${b}`);
    const two = resolveKubeConfig({ env: { ...env, KUBECONFIG: `${a}:${b}` }, context: 'two' });
    assert.equal(two.user, null, 'a context without a user is anonymous');
  });

  test('--kubeconfig wins over KUBECONFIG and ~/.kube/config; ~/.kube/config is the default', () => {
    const home = write('home/.kube/config', doc({ 'current-context': 'h', clusters: [{ name: 'k', cluster: { server: 'https://10.1.1.1' } }], contexts: [{ name: 'h', context: { cluster: 'k' } }] }));
    const flag = write('flag', doc({ 'current-context': 'f', clusters: [{ name: 'k', cluster: { server: 'https://10.2.2.2' } }], contexts: [{ name: 'f', context: { cluster: 'k' } }] }));
    assert.equal(resolveKubeConfig({ env }).displayServer, 'https://10.1.1.1');
    assert.equal(resolveKubeConfig({ env: { ...env, KUBECONFIG: home }, kubeconfig: flag }).displayServer, 'https://10.2.2.2');
  });

  test('paths are relative to the kubeconfig that names them; host:port means https', () => {
    const pki = makePki();
    write('rel/pki/ca.crt', pki.caCert);
    write('rel/pki/client.crt', pki.clientCert);
    write('rel/pki/client.key', pki.clientKey);
    write('rel/token', '  file-token-abcdef \n');
    const kc = write('rel/config', doc({
      'current-context': 'c',
      clusters: [{ name: 'k', cluster: { server: '127.0.0.1:6443', 'certificate-authority': 'pki/ca.crt' } }],
      users: [{ name: 'u', user: { 'client-certificate': 'pki/client.crt', 'client-key': 'pki/client.key', 'token-file': 'token', exec: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/plugin' } } }],
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    }));
    const r = resolveKubeConfig({ env, kubeconfig: kc });
    assert.equal(r.server.toString(), 'https://127.0.0.1:6443/');
    assert.equal(r.cluster.caFile, join(root, 'rel/pki/ca.crt'));
    assert.equal(r.user?.certFile, join(root, 'rel/pki/client.crt'));
    assert.equal(r.tokenFromFile, 'file-token-abcdef');
    assert.equal(r.exec?.command, join(root, 'rel/bin/plugin'));
    assert.equal(r.user?.exec, undefined, 'client-node never runs the plugin itself');
    assert.equal(redact('saw file-token-abcdef'), 'saw [redacted]', 'the token is registered as a secret');
    assert.equal(redact(`key ${pki.clientKey.split('\n')[1]}`), 'key [redacted]');
  });

  test('credentials read from the kubeconfig are registered for redaction', () => {
    const kc = write('secrets', doc({
      'current-context': 'c',
      clusters: [{ name: 'k', cluster: { server: 'https://who:url-pass-qqq111@10.3.3.3', 'certificate-authority-data': b64(makePki().caCert) } }],
      users: [{ name: 'u', user: { username: 'admin', password: 'user-pass-rrr222', 'auth-provider': { name: 'oidc', config: { 'refresh-token': 'refresh-sss333' } } } }],
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    }));
    const r = resolveKubeConfig({ env, kubeconfig: kc });
    assert.deepEqual(r.urlUserinfo, { username: 'who', password: 'url-pass-qqq111' });
    assert.equal(r.displayServer, 'https://10.3.3.3');
    assert.equal(redact('a url-pass-qqq111 b user-pass-rrr222 c refresh-sss333'), 'a [redacted] b [redacted] c [redacted]');
  });
});
