// deploy/ as a kustomize base, rendered by the testbed's kubectl (`kubectl kustomize`, kustomize built in): the
// base gives the roles, the Job with the image and the plan's ConfigMap, whose hashed name the Job mounts; an
// overlay like overlays/eu-1 with a real plan of the testbed gives that plan byte for byte and the image by
// digest; the real apiserver accepts what it renders (server-side dry run).

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { binDir } from '../testbed/build.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { ROOT } from './pod-helpers.ts';

install();

const kubectl = () => join(binDir(), 'kubectl');

function kustomize(dir: string): any[] {
  const r = spawnSync(kubectl(), ['kustomize', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return (yaml.loadAll(r.stdout) as any[]).filter(Boolean);
}

const jobOf = (docs: any[]) => docs.find((d) => d.kind === 'Job' && d.metadata.name === 'kube-renumber-apply');
const planConfigMap = (docs: any[]) => {
  const job = jobOf(docs);
  const name = job.spec.template.spec.volumes.find((v: any) => v.configMap).configMap.name;
  return docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === name && d.metadata.namespace === job.metadata.namespace);
};

describe('deploy/ as a kustomize base', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/20', nodes: 1, calicoCRDs: false });
  const work = mkdtempSync(join(tmpdir(), 'kr-kustomize-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  test('the base renders the roles, the claim, the Job with the image and the plan\'s ConfigMap it mounts', () => {
    const docs = kustomize(join(ROOT, 'deploy'));
    const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
    for (const f of ['rbac.yaml', 'rbac-migrate.yaml', 'rbac-migrate-pods.yaml', 'job-apply.yaml']) {
      for (const d of (yaml.loadAll(readFileSync(join(ROOT, 'deploy', f), 'utf8')) as any[]).filter(Boolean)) assert.ok(kinds.includes(`${d.kind}/${d.metadata.name}`), `${f}: ${d.kind}/${d.metadata.name}`);
    }
    const job = jobOf(docs);
    assert.equal(job.spec.template.spec.containers[0].image, 'kube-renumber:0.1.0');
    const cm = planConfigMap(docs);
    assert.ok(cm, 'the Job mounts the generated ConfigMap');
    assert.match(cm.metadata.name, /^kube-renumber-plan-[a-z0-9]{10}$/, 'its name carries the hash of the plan');
    assert.equal(cm.data['plan.yaml'], readFileSync(join(ROOT, 'deploy', 'plan.yaml'), 'utf8'));
  });

  test('an overlay with the cluster\'s plan: that plan in the ConfigMap, the image by digest; the apiserver accepts it all', async () => {
    // deploy/ and overlays/ copied side by side, the example overlay given a real plan of this cluster
    const copy = join(work, 'repo');
    for (const d of ['deploy', 'overlays']) cpSync(join(ROOT, d), join(copy, d), { recursive: true });
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', '10.100.0.0/16', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    assert.match(p.out, /^kind: MigrationPlan$/m);
    writeFileSync(join(copy, 'overlays', 'eu-1', 'plan.yaml'), p.out);
    const digest = `sha256:${'ab'.repeat(32)}`;
    const k = join(copy, 'overlays', 'eu-1', 'kustomization.yaml');
    writeFileSync(k, readFileSync(k, 'utf8').replace(/sha256:0{64}/, digest));
    const docs = kustomize(join(copy, 'overlays', 'eu-1'));
    const job = jobOf(docs);
    assert.equal(job.spec.template.spec.containers[0].image, `registry.example.com/platform/kube-renumber@${digest}`);
    const cm = planConfigMap(docs);
    assert.equal(cm.data['plan.yaml'], p.out, 'the plan byte for byte');
    assert.equal(docs.filter((d) => d.kind === 'ConfigMap').length, 1, 'the overlay replaced the base\'s placeholder');
    assert.notEqual(cm.metadata.name, planConfigMap(kustomize(join(ROOT, 'deploy'))).metadata.name, 'another plan, another name');
    // the real apiserver validates every object; a dry run creates nothing, so the namespace the state Role lives in is made first
    const rendered = join(work, 'rendered.yaml');
    writeFileSync(rendered, docs.map((d) => yaml.dump(d)).join('---\n'));
    const ns = await tb.kubectl(['create', 'namespace', 'kube-renumber']);
    assert.ok(ns.code === 0 || /already exists/.test(ns.stderr), ns.stderr);
    const dry = await tb.kubectl(['apply', '--dry-run=server', '-f', rendered]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /job\.batch\/kube-renumber-apply created \(server dry run\)/);
  });
});
