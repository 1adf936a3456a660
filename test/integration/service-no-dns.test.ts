// A cluster without cluster DNS, as upstream's own TestMigrateServiceCIDR sets it up (kubernetes/kubernetes
// test/integration/servicecidr/migration_test.go): --service-cluster-ip-range 192.168.0.0/29, Services using most of it,
// no DNS at all, moved to 10.168.0.0/24. A new user's path: plan fails pre-flight cluster-dns and names the flag;
// plan --cluster-dns none plans it; apply checks the choice again on the live cluster (a DNS Service that appeared
// stops it before its first write); the run goes through the apiserver gate and restarts the workloads itself.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { servicesByKey } from './helpers.ts';
import { getJSON, inRange } from './pod-helpers.ts';

install();

const OLD = '192.168.0.0/29';
const NEW = '10.168.0.0/24';
const NS = 'test-migrate-service-cidr';

describe('Service CIDR migration of a cluster without cluster DNS (upstream TestMigrateServiceCIDR: /29 → /24)', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'kr-nodns-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '90s', '--propagation-delay', '0s'];
  const sans = ['--apiserver-cert-san', '192.168.0.1', '--apiserver-cert-san', '10.168.0.1'];
  const apply = async (doc: unknown) => {
    const f = join(dir, `obj-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(f, JSON.stringify(doc));
    const r = await tb.kubectl(['apply', '-f', f]);
    assert.equal(r.code, 0, r.stderr);
  };

  test('four Services in the /29 and one workload; no DNS Service anywhere', async () => {
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (let i = 0; i < 4; i++) {
      await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}`, namespace: NS }, spec: { type: 'ClusterIP', ports: [{ port: 80 }] } });
    }
    await apply({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 1, selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }], terminationGracePeriodSeconds: 0, tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }] },
        },
      },
    });
    const r = await tb.kubectl(['rollout', 'status', 'deployment/web', '-n', NS, '--timeout=120s'], { timeoutMs: 130_000 });
    assert.equal(r.code, 0, r.stderr);
    const svcs = [...(await servicesByKey(tb)).values()];
    assert.equal(svcs.length, 5, svcs.map((s: any) => `${s.metadata.namespace}/${s.metadata.name}`).join(', '));
    assert.ok(svcs.every((s: any) => inRange(OLD, s.spec.clusterIP)));
  });

  test('plan without --cluster-dns fails pre-flight cluster-dns and names the flag (exit 1)', async () => {
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, ...sans, '-o', 'json']);
    assert.equal(r.code, 1, r.err);
    const c = JSON.parse(r.out).preflight.find((x: any) => x.id === 'cluster-dns');
    assert.equal(c.status, 'fail');
    assert.match(c.fix, /--cluster-dns none/);
  });

  test('plan --cluster-dns none plans it: every check passes, no DNS step, the choice recorded', async () => {
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--cluster-dns', 'none', ...sans, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err);
    writeFileSync(planPath, r.out);
    const p = (await import('js-yaml')).load(r.out) as any;
    assert.equal(p.spec.options.clusterDNS, 'none');
    assert.deepEqual(p.preflight.filter((c: any) => c.status === 'fail'), []);
    const ids = p.steps.map((s: any) => s.id);
    assert.ok(!ids.includes('move-dns') && !ids.includes('kubelet-cluster-dns'), ids.join(', '));
    assert.equal(p.steps.find((s: any) => s.id === 'restart-workloads').kind, 'restart-workloads');
    assert.deepEqual(p.spec.serviceCIDR.restarts.critical, [], 'no DNS Deployment to scale up');
  });

  test('apply checks --cluster-dns none again: a DNS Service that appeared since stops it before its first write', async () => {
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'kube-dns', namespace: 'kube-system' }, spec: { selector: { 'k8s-app': 'kube-dns' }, ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] } });
    const r = await run(['apply', planPath, '--yes', ...common()]);
    assert.notEqual(r.code, 0, r.err);
    assert.match(r.err, /^error: pre-flight check cluster-dns fails against the live cluster: --cluster-dns none, but kube-system\/kube-dns at 192\.168\.0\.\d+ is the cluster DNS.*nothing was changed\n$/m);
    assert.deepEqual((await getJSON(tb, ['get', 'servicecidrs'])).items.map((s: any) => s.metadata.name), ['kubernetes'], 'nothing created');
    const del = await tb.kubectl(['delete', 'service', '-n', 'kube-system', 'kube-dns']);
    assert.equal(del.code, 0, del.stderr);
  });

  test('apply runs to the apiserver gate; after the restart, resume moves default/kubernetes, restarts the workload itself and ends', async () => {
    const webBefore = (await getJSON(tb, ['get', 'pods', '-n', NS, '-l', 'app=web'])).items.map((x: any) => x.metadata.uid);
    let r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err.slice(-3000));
    assert.match(r.err, /stopped at gate restart-apiservers/);
    await tb.restartApiserver({ serviceCIDR: NEW });
    r = await run(['resume', planPath, '--yes', '-v', ...common()]);
    assert.equal(r.code, 0, r.err.slice(-3000));
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    const by = await servicesByKey(tb);
    assert.equal((by.get('default/kubernetes') as any).spec.clusterIP, '10.168.0.1');
    for (let i = 0; i < 4; i++) assert.ok(inRange(NEW, (by.get(`${NS}/svc-${i}`) as any).spec.clusterIP), `svc-${i} in NEW`);
    const scs = (await getJSON(tb, ['get', 'servicecidrs'])).items;
    assert.deepEqual(scs.map((s: any) => [s.metadata.name, s.spec.cidrs]), [['kubernetes', [NEW]]]);
    const web = (await getJSON(tb, ['get', 'pods', '-n', NS, '-l', 'app=web'])).items;
    assert.equal(web.length, 1);
    assert.ok(!webBefore.includes(web[0].metadata.uid), 'the workload\'s pod was restarted by the run');
    const d = await getJSON(tb, ['get', 'deployment', '-n', NS, 'web']);
    assert.ok(d.spec.template.metadata.annotations['kube-renumber.io/restart'], 'by step restart-workloads');
  });
});
