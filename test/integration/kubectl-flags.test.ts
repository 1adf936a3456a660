// kubectl's connection flags against the real apiserver (authorization Node,RBAC): --as a user with no rights is
// refused naming the user and what is missing (the list, and apply's access check); --as a user bound to the read ClusterRole of deploy/rbac.yaml
// reads the cluster; --as-group grants through a group; --server/--token/--insecure-skip-tls-verify connect without
// a kubeconfig; -v=6 prints one line per request and never the token.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('kubectl connection flags against the real apiserver', () => {
  const tb = useTestbed({ nodes: 1 });

  test('--as, --as-group, --server, --token and -v=6', async () => {
    // the read ClusterRole of deploy/rbac.yaml, bound to user "reader" and group "readers"; "nobody" gets nothing
    const apply = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml')]);
    assert.equal(apply.code, 0, apply.stderr);
    for (const [name, subject] of [['kr-reader', '--user=reader'], ['kr-readers', '--group=readers']] as const) {
      const b = await tb.kubectl(['create', 'clusterrolebinding', name, '--clusterrole=kube-renumber-read', subject]);
      assert.equal(b.code, 0, b.stderr);
    }
    const kc = ['--kubeconfig', tb.kubeconfigPath];

    const denied = await run(['inspect', ...kc, '--as', 'nobody', '-o', 'json']);
    assert.equal(denied.code, 5, denied.err);
    assert.match(denied.err, /^error: not allowed to list \S+ as user "nobody" \(403 Forbidden\): kube-renumber needs the read permissions in deploy\/rbac\.yaml\n$/);

    const reader = await run(['inspect', ...kc, '--as', 'reader', '-o', 'json']);
    assert.equal(reader.code, 0, reader.err);
    assert.equal(JSON.parse(reader.out).capacity.nodes.total, 1);

    // the access check before a run's first write (SelfSubjectAccessReviews) names the user it asked for
    // (the testbed's serving certificate names 10.96.0.1 and 10.100.0.1: the pre-flight checks pass)
    const planned = await run(['plan', ...kc, '--service-cidr', '10.100.0.0/16', '--cluster-dns', 'none', '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(planned.code, 0, planned.err);
    const planPath = join(mkdtempSync(join(tmpdir(), 'kr-flags-')), 'plan.yaml');
    writeFileSync(planPath, planned.out);
    const applied = await run(['apply', planPath, ...kc, '--as', 'reader', '--yes', '--state-dir', join(planPath, '..', 'state')]);
    assert.equal(applied.code, 5, applied.err);
    assert.match(applied.err, /^error: not allowed for user "reader": .*create leases\.coordination\.k8s\.io -n kube-system .*\(nothing was changed\)$/m);

    const group = await run(['inspect', ...kc, '--as', 'someone', '--as-group', 'readers', '--as-group', 'system:authenticated', '-o', 'json']);
    assert.equal(group.code, 0, group.err);

    // without a kubeconfig: --server and --token alone, as kubectl; -v=6 logs each request, never the token
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const token = tok.stdout.trim();
    const flagsOnly = await run(['inspect', '--server', tb.server, '--token', token, '--insecure-skip-tls-verify', '-v=6', '-o', 'json']);
    assert.equal(flagsOnly.code, 0, flagsOnly.err);
    assert.equal(JSON.parse(flagsOnly.out).capacity.nodes.total, 1);
    const lines = flagsOnly.err.split('\n').filter((l) => / in \d+ milliseconds$/.test(l));
    assert.ok(lines.some((l) => l.includes(`GET ${tb.server}/api/v1/nodes?limit=500 200 OK in `)), flagsOnly.err);
    assert.ok(lines.every((l) => /^I\d{4} \d\d:\d\d:\d\d\.\d{3} (GET|POST|PUT|PATCH|DELETE) https?:\/\/\S+ (\d{3} [A-Za-z ]+|\(no answer\)) in \d+ milliseconds$/.test(l)), lines.join('\n'));
    assert.ok(!flagsOnly.err.includes(token) && !flagsOnly.err.includes(token.slice(0, 20)), 'the token is never printed');
    assert.doesNotMatch(flagsOnly.err, /Authorization|Bearer/i);
  });
});
