// Running inside a pod: no kubeconfig anywhere, KUBERNETES_SERVICE_HOST/PORT set, the ServiceAccount's token and
// CA under /var/run/secrets/kubernetes.io/serviceaccount. The CLI runs in a private mount namespace with a tmpfs
// over /run holding those files (nothing on this machine changes), against the real apiserver, as the
// read-only ServiceAccount of deploy/rbac.yaml.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { useTestbed } from '../testbed/harness.ts';
import { inPod, SA_DIR } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('in-cluster config (ServiceAccount token and CA, no kubeconfig)', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', nodes: 1, calicoCRDs: false, populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const home = mkdtempSync(join(tmpdir(), 'kr-pod-home-'));
  let env: NodeJS.ProcessEnv;
  let secrets: string;
  let token: string;

  test('inspect reads the cluster through the in-cluster config, and never prints the token', async () => {
    const rbac = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml')]);
    assert.equal(rbac.code, 0, rbac.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    token = tok.stdout.trim();
    secrets = mkdtempSync(join(tmpdir(), 'kr-sa-'));
    writeFileSync(join(secrets, 'token'), token, { mode: 0o600 });
    writeFileSync(join(secrets, 'ca.crt'), readFileSync(join(tb.stateDir, 'pki', 'apiserver', 'apiserver.crt')));
    writeFileSync(join(secrets, 'namespace'), 'kube-system');
    env = { HOME: home, KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: new URL(tb.server).port };

    const r = await inPod(['inspect', '-o', 'json', '-v'], secrets, env);
    assert.equal(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    assert.equal(report.source.kind, 'live');
    assert.ok(report.serviceCIDRs.some((c: { cidr: string }) => c.cidr === '10.96.0.0/16'), `the live Service range is in the report: ${JSON.stringify(report.serviceCIDRs)}`);
    assert.deepEqual(report.kubernetesServiceIPs, ['10.96.0.1']);
    assert.ok(!r.out.includes(token) && !r.err.includes(token), 'the token is never printed, even with -v');
  });

  test('a token without the rights is exit 5 with one error line; --context has no meaning in-cluster (exit 2)', async () => {
    const none = mkdtempSync(join(tmpdir(), 'kr-sa-none-'));
    const sa = await tb.kubectl(['create', 'serviceaccount', 'nobody', '-n', 'default']);
    assert.equal(sa.code, 0, sa.stderr);
    const tok = (await tb.kubectl(['create', 'token', 'nobody', '-n', 'default'])).stdout.trim();
    writeFileSync(join(none, 'token'), tok, { mode: 0o600 });
    writeFileSync(join(none, 'ca.crt'), readFileSync(join(secrets, 'ca.crt')));
    const denied = await inPod(['inspect'], none, env);
    assert.equal(denied.code, 5, denied.err);
    assert.equal(denied.err.split('\n').filter((l) => l.startsWith('error:')).length, 1, denied.err);
    assert.doesNotMatch(denied.err, /\n\s+at /, 'no stack trace');
    assert.ok(!denied.err.includes(tok));

    const ctx = await inPod(['inspect', '--context', 'prod'], secrets, env);
    assert.equal(ctx.code, 2, ctx.err);
    assert.match(ctx.err, /^error: --context "prod": there is no kubeconfig \(running in-cluster\)/);
  });

  test('KUBERNETES_SERVICE_HOST set but no token mounted: exit 4 naming the token path', async () => {
    const r = await inPod(['inspect'], undefined, env);
    assert.equal(r.code, 4, r.err);
    assert.match(r.err, new RegExp(`^error: no kubeconfig found .* no service account token at ${SA_DIR}/token for in-cluster access`));
  });
});
