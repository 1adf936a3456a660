// `inspect` live against the real control plane: it agrees with `inspect --from-file` on a kubectl dump of
// the same cluster, works under the shipped least-privilege RBAC, and fails cleanly without permissions.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { useTestbed } from '../testbed/harness.ts';
import { DEFAULT_VERSION } from '../testbed/build.ts';
import { run } from '../unit/run-cli.ts';
import { kubeconfigWithToken } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The parts of an inspect report that must not depend on how the cluster was read. */
function comparable(report: any) {
  const { source, kubernetesVersion, serviceCIDRApi, readiness, warnings, ...rest } = report;
  void source; void kubernetesVersion; void serviceCIDRApi; void warnings;
  // facts that follow the version, which a file dump does not carry
  return { ...rest, readiness: readiness.filter((f: any) => !['service-cidr-api', 'kube-proxy-udp-conntrack', 'gap'].includes(f.id)) };
}

describe('inspect against the real apiserver', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/20', nodeMask: 24, nodes: 3, populate: true });

  test('live inspect agrees with inspect --from-file on a kubectl dump of the same cluster', async () => {
    const live = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
    assert.equal(live.code, 0, live.err);
    const liveReport = JSON.parse(live.out);

    const dir = mkdtempSync(join(tmpdir(), 'kr-dump-'));
    const dumps: Array<[string, string[]]> = [
      ['core.yaml', ['get', 'nodes,services,pods', '-A', '-o', 'yaml']],
      ['configmaps.yaml', ['get', 'configmaps', '-n', 'kube-system', '-o', 'yaml']],
      ['servicecidrs.yaml', ['get', 'servicecidrs.networking.k8s.io', '-o', 'yaml']],
      ['calico.json', ['get', 'ippools.crd.projectcalico.org,ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org', '-o', 'json']],
    ];
    for (const [file, args] of dumps) {
      const r = await tb.kubectl(args);
      assert.equal(r.code, 0, r.stderr);
      writeFileSync(join(dir, file), r.stdout);
    }
    const off = await run(['inspect', '-f', dir, '-o', 'json']);
    assert.equal(off.code, 0, off.err);
    const offReport = JSON.parse(off.out);

    assert.deepEqual(comparable(offReport), comparable(liveReport));
    // and the facts themselves are the testbed's
    assert.deepEqual(liveReport.serviceCIDRs.map((s: any) => s.cidr), ['10.96.0.0/16']);
    assert.ok(liveReport.serviceCIDRs[0].sources.includes('ServiceCIDR/kubernetes'));
    assert.equal(liveReport.serviceCIDRApi, 'v1');
    assert.equal(liveReport.kubernetesVersion, DEFAULT_VERSION, 'the version the testbed was built from');
    const conntrack = liveReport.readiness.find((f: any) => f.id === 'kube-proxy-udp-conntrack');
    assert.equal(conntrack?.ok, Number(DEFAULT_VERSION.split('.')[1]) >= 36 ? true : null, `kube-proxy fact for ${DEFAULT_VERSION}: ${JSON.stringify(conntrack)}`);
    assert.deepEqual(liveReport.pools.map((p: any) => p.cidr), ['10.244.0.0/20']);
    assert.equal(liveReport.dnsService?.clusterIPs[0], tb.fixture!.kubeDnsIP);
    assert.equal(liveReport.capacity.nodes.total, 3);
    assert.equal(liveReport.capacity.nodes.withPodCIDR, 3);
    assert.equal(liveReport.capacity.services.total, tb.fixture!.services.length + 1);
    assert.equal(liveReport.cni.plugin, 'calico');
    assert.equal(liveReport.kubernetesServiceIPs[0], '10.96.0.1');
  });

  test('works under the shipped least-privilege RBAC (deploy/rbac.yaml)', async () => {
    const apply = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml')]);
    assert.equal(apply.code, 0, apply.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const kc = kubeconfigWithToken(tb.server, tok.stdout.trim());
    const limited = await run(['inspect', '--kubeconfig', kc, '-o', 'json']);
    assert.equal(limited.code, 0, limited.err);
    const full = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
    const l = JSON.parse(limited.out);
    assert.deepEqual(l.warnings.filter((w: string) => /could not list/.test(w)), [], 'nothing was out of reach');
    assert.deepEqual(comparable(l), comparable(JSON.parse(full.out)));
    // and the role really is limited: it cannot change a Service
    const can = await tb.kubectl(['auth', 'can-i', 'update', 'services', '--as', 'system:serviceaccount:kube-system:kube-renumber']);
    assert.equal(can.stdout.trim(), 'no');
  });

  test('without permissions: one error line, exit 5, token never printed', async () => {
    const sa = await tb.kubectl(['create', 'serviceaccount', 'nobody', '-n', 'default']);
    assert.equal(sa.code, 0, sa.stderr);
    const tok = await tb.kubectl(['create', 'token', 'nobody', '-n', 'default']);
    const token = tok.stdout.trim();
    const r = await run(['inspect', '--kubeconfig', kubeconfigWithToken(tb.server, token)]);
    assert.equal(r.code, 5, r.err);
    assert.equal(r.out, '');
    assert.equal(r.err.trimEnd().split('\n').length, 1);
    assert.match(r.err, /^error: not allowed to list (nodes|services|pods) as user "system:serviceaccount:[^"]+" \(403 Forbidden\): .*deploy\/rbac\.yaml/);
    assert.ok(!r.err.includes(token));
  });

  test('a wrong token: exit 5 with 401', async () => {
    const r = await run(['inspect', '--kubeconfig', kubeconfigWithToken(tb.server, 'not-a-real-token')]);
    assert.equal(r.code, 5, r.err);
    assert.match(r.err, /^error: the API server .* rejected our credentials \(401 Unauthorized\)/);
    assert.ok(!r.err.includes('not-a-real-token'));
  });
});
