// deploy/rbac*.yaml are written by `npm run rbac` from what the code declares (src/plan/rbac-core.ts,
// src/plan/rbac-platforms.ts, each pod path's rbac.ts): generated again here, in memory, and compared byte for byte
// with the committed files. And `kube-renumber rbac PLAN`: the per-namespace Roles of create pods a plan needs.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { shippedRbac } from '../../src/pod-paths/rbac.ts';
import { run } from './run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('generated RBAC', () => {
  const files = shippedRbac();

  test('every committed deploy/rbac*.yaml is what npm run rbac writes', () => {
    const stale = files.filter((f) => readFileSync(join(ROOT, f.path), 'utf8') !== f.text).map((f) => f.path);
    assert.deepEqual(stale, [], `${stale.join(', ')} differ from the declarations: run npm run rbac`);
  });

  test('every deploy/rbac*.yaml is generated', () => {
    const shipped = readdirSync(join(ROOT, 'deploy')).filter((f) => /^rbac.*\.yaml$/.test(f)).map((f) => `deploy/${f}`).sort();
    assert.deepEqual(files.map((f) => f.path).sort(), shipped);
  });

  test('the written files parse as the objects declared', () => {
    for (const f of files) {
      const docs = yaml.loadAll(f.text) as any[];
      assert.ok(docs.length > 0 && docs.every((d) => d && typeof d.kind === 'string' && d.metadata?.name), f.path);
    }
  });
});

describe('kube-renumber rbac PLAN', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kr-rbac-'));
  const plan = async (args: string[], example: string) => {
    const r = await run(['plan', ...args, '-f', join(ROOT, 'examples', example), '-o', 'yaml']);
    const d = yaml.load(r.out) as any;
    return d;
  };
  const write = (name: string, d: unknown) => { const p = join(dir, name); writeFileSync(p, yaml.dump(d, { lineWidth: -1 })); return p; };

  test('a Role of create pods and its RoleBinding in each namespace of the plan\'s bare pods, nothing cluster-wide', async () => {
    const d = await plan(['--pod-cidr', '100.0.0.0/14', '--ipam', 'node'], 'kops-tailscale');
    d.spec.podCIDR.barePodNamespaces = ['team-a', 'team-b'];
    if (d.spec.serviceCIDR?.restarts) d.spec.serviceCIDR.restarts.barePodNamespaces = [];
    const r = await run(['rbac', write('pod.yaml', d)]);
    assert.equal(r.code, 0, r.err);
    const docs = (yaml.loadAll(r.out) as any[]).filter(Boolean);
    assert.deepEqual(docs.map((x) => `${x.kind} ${x.metadata.namespace}/${x.metadata.name}`), [
      'Role team-a/kube-renumber-recreate-pods', 'RoleBinding team-a/kube-renumber-recreate-pods',
      'Role team-b/kube-renumber-recreate-pods', 'RoleBinding team-b/kube-renumber-recreate-pods',
    ]);
    for (const x of docs.filter((y) => y.kind === 'Role')) assert.deepEqual(x.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['create'] }]);
    for (const x of docs.filter((y) => y.kind === 'RoleBinding')) {
      assert.deepEqual(x.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kube-renumber-recreate-pods' });
      assert.deepEqual(x.subjects, [{ kind: 'ServiceAccount', namespace: 'kube-system', name: 'kube-renumber-migrate' }]);
    }
  });

  test('a Service-only plan whose restarts meet bare pods: the same Roles, from spec.serviceCIDR.restarts.barePodNamespaces', async () => {
    const d = await plan(['--service-cidr', '100.32.0.0/16', '--restart-workloads', 'tool'], 'kops-tailscale');
    assert.ok(d.spec.serviceCIDR.restarts, 'the tool restarts the workloads');
    d.spec.serviceCIDR.restarts.barePodNamespaces = ['team-s'];
    const r = await run(['rbac', write('svc.yaml', d)]);
    assert.equal(r.code, 0, r.err);
    const docs = (yaml.loadAll(r.out) as any[]).filter(Boolean);
    assert.deepEqual(docs.map((x) => `${x.kind} ${x.metadata.namespace}`), ['Role team-s', 'RoleBinding team-s']);
  });

  test('a plan that creates no bare pod again: nothing to grant', async () => {
    const d = await plan(['--pod-cidr', '100.0.0.0/14', '--ipam', 'node'], 'kops-tailscale');
    d.spec.podCIDR.barePodNamespaces = [];
    const r = await run(['rbac', write('none.yaml', d)]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual((yaml.loadAll(r.out) as any[]).filter(Boolean), []);
    assert.match(r.out, /nothing to grant/);
  });
});
