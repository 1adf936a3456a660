// A live kOps cluster as the API shows it: nodes labelled kops.k8s.io/instancegroup, kOps' default ranges
// (services 100.64.0.0/13, pods 100.96.0.0/11 from Calico pools), and no kOps Cluster spec, which lives in the
// kOps state store and never in the API. `plan` reads it live and writes the plan: the kOps patches name the
// fields for `kops edit cluster`, and a pre-flight check says the spec was not read and how to provide it.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { planFromYaml } from '../../src/plan/render.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';
import { run } from '../unit/run-cli.ts';

install();

const SVC_OLD = '100.64.0.0/13';
const POD_OLD = '100.96.0.0/11';
// kOps refuses a plan moving one range where no nonMasqueradeCIDR of /8 or smaller holds it and the unmoved one:
// the new ranges sit next to the old ones, outside 100.64.0.0/10 (nonMasqueradeCIDR 100.0.0.0/9 for one, 100.0.0.0/10 for both)
const POD_NEW = '100.0.0.0/14';
const SVC_NEW = '100.32.0.0/24';

/** The exit code `plan` documents for a written plan: 1 when a pre-flight check failed, else 0. */
function documentedCode(p: MigrationPlan): number {
  return p.preflight.some((c) => c.status === 'fail') ? 1 : 0;
}

function patches(p: MigrationPlan) {
  return p.steps.flatMap((s) => s.gate?.patches ?? []);
}

async function plan(kubeconfig: string, args: string[]): Promise<MigrationPlan> {
  const r = await run(['plan', '--kubeconfig', kubeconfig, ...args, '-o', 'yaml']);
  assert.notEqual(r.code, 70, r.err);
  assert.doesNotMatch(r.err, /internal/, r.err);
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err}`);
  const p = planFromYaml(r.out) as MigrationPlan;
  assert.equal(r.code, documentedCode(p), `exit ${r.code} for checks ${p.preflight.map((c) => `${c.id}=${c.status}`).join(', ')}`);
  assert.equal(p.metadata.distribution, 'kops');
  const spec = p.preflight.filter((c) => c.id === 'kops-spec');
  assert.equal(spec.length, 1, p.preflight.map((c) => c.id).join(', '));
  assert.equal(spec[0]!.status, 'warn');
  assert.match(spec[0]!.message, /no kOps Cluster spec/);
  assert.match(spec[0]!.fix, /kops get cluster .*-o yaml > cluster\.yaml.*-f cluster\.yaml/);
  assert.ok(!patches(p).some((x) => x.distribution === 'generic'), patches(p).map((x) => x.id).join(', '));
  return p;
}

describe('plan on a live kOps cluster without its Cluster spec', () => {
  const tb = useTestbed({ serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodeMask: 24, nodes: 3, podIPAM: 'calico', populate: true });

  test('the nodes carry kOps labels; inspect takes the cluster for kOps and says the spec was not read', async () => {
    const nodes = await tb.kubectl(['get', 'nodes', '-o', 'name']);
    assert.equal(nodes.code, 0, nodes.stderr);
    const names = nodes.stdout.trim().split('\n');
    assert.equal(names.length, 3);
    for (const [i, n] of names.entries()) {
      const r = await tb.kubectl(['label', n, `kops.k8s.io/instancegroup=${i === 0 ? 'control-plane-us-east-1a' : 'nodes-us-east-1a'}`]);
      assert.equal(r.code, 0, r.stderr);
    }
    const r = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    assert.equal(report.platform.kind, 'kops');
    assert.ok(report.platform.evidence.some((e: string) => /3 node\(s\) labelled kops\.k8s\.io\/instancegroup/.test(e)), report.platform.evidence.join('; '));
    assert.equal(report.readiness.find((f: any) => f.id === 'kops-spec')?.ok, null);
    assert.deepEqual(report.pools.map((p: any) => p.cidr), [POD_OLD]);
  });

  test('plan --pod-cidr: written; kops edit cluster names podCIDR, clusterCIDR and nonMasqueradeCIDR for both layouts', async () => {
    const p = await plan(tb.kubeconfigPath, ['--pod-cidr', POD_NEW]);
    assert.equal(p.spec.podCIDR?.ipam, 'calico');
    assert.deepEqual(p.spec.podCIDR?.from, [POD_OLD]);
    const gate = p.steps.find((s) => s.id === 'pod-cidr-config');
    assert.ok(gate?.gate?.instructions.some((l) => /^kops edit cluster \(patch kops-pod-cidr\)$/.test(l)), JSON.stringify(gate?.gate?.instructions));
    const k = patches(p).find((x) => x.id === 'kops-pod-cidr')!;
    assert.ok(k, patches(p).map((x) => x.id).join(', '));
    assert.match(k.description, /spec\.networking\.podCIDR, legacy layout spec\.podCIDR/);
    assert.match(k.before, /^\s+podCIDR: 100\.96\.0\.0\/11$/m);
    assert.match(k.after, /^\s+podCIDR: 100\.0\.0\.0\/14$/m);
    assert.match(k.after, /^\s+clusterCIDR: 100\.0\.0\.0\/14\b/m);
    assert.match(k.after, /nonMasqueradeCIDR: .*100\.0\.0\.0\/14/);
    assert.match(k.after, /^\s+allocateNodeCIDRs: false$/m);
  });

  test('plan --service-cidr: written; kops edit cluster names serviceClusterIPRange, kubeDNS.serverIP and the SANs', async () => {
    const p = await plan(tb.kubeconfigPath, ['--service-cidr', SVC_NEW]);
    const gate = p.steps.find((s) => s.id === 'restart-apiservers');
    assert.ok(gate?.gate?.instructions.some((l) => /apply patch kops-service-range/.test(l)));
    const k = patches(p).find((x) => x.id === 'kops-service-range')!;
    assert.ok(k, patches(p).map((x) => x.id).join(', '));
    assert.match(k.description, /spec\.networking\.serviceClusterIPRange, legacy layout spec\.serviceClusterIPRange/);
    assert.match(k.before, /^\s+serviceClusterIPRange: 100\.64\.0\.0\/13$/m);
    assert.match(k.after, /^\s+serviceClusterIPRange: 100\.32\.0\.0\/24$/m);
    assert.match(k.after, /^\s+serverIP: 100\.32\.0\.10$/m);
    assert.match(k.after, /- 100\.64\.0\.1\n\s+- 100\.32\.0\.1\n/);
  });

  test('with -f cluster.yaml alongside --kubeconfig: the spec joins the live read, its layout names the fields', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-kops-spec-'));
    const spec = join(dir, 'cluster.yaml');
    writeFileSync(spec, [
      'apiVersion: kops.k8s.io/v1alpha2', 'kind: Cluster', 'metadata: {name: k8s.example.com}', 'spec:',
      '  kubernetesVersion: 1.35.4', `  serviceClusterIPRange: ${SVC_OLD}`, '  nonMasqueradeCIDR: 100.64.0.0/10',
      `  kubeControllerManager: {clusterCIDR: ${POD_OLD}, allocateNodeCIDRs: true}`, '  networking: {calico: {}}', '',
    ].join('\n'));
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '-f', spec, '--service-cidr', SVC_NEW, '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err}`);
    const p = planFromYaml(r.out) as MigrationPlan;
    assert.equal(r.code, documentedCode(p));
    assert.equal(p.preflight.filter((c) => c.id === 'kops-spec').length, 0, 'the spec was read: no warning about it');
    assert.match(p.metadata.generatedFrom, new RegExp(`^live cluster https://127\\.0\\.0\\.1:\\d+ .*with ${spec.replace(/[.]/g, '\\.')}$`));
    assert.ok(p.spec.serviceCIDR, 'the live Services were read: a Service plan');
    const k = patches(p).find((x) => x.id === 'kops-service-range')!;
    assert.ok(k, patches(p).map((x) => x.id).join(', '));
    assert.doesNotMatch(k.description, /spec\.networking\.serviceClusterIPRange/, `the spec's own (legacy) layout only: ${k.description}`);
    assert.match(k.after, /^\s*serviceClusterIPRange: 100\.32\.0\.0\/24$/m);

    // Kubernetes objects in -f next to a live read are refused, before the cluster is read
    const objs = join(dir, 'services.yaml');
    writeFileSync(objs, 'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\nspec: {clusterIP: 100.64.0.9, ports: [{port: 80}]}\n');
    const bad = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-f', spec, '-f', objs]);
    assert.equal(bad.code, 2, bad.err);
    assert.match(bad.err, /^error: with --kubeconfig, -f adds distribution configs .* 1 Kubernetes object\(s\) \(e\.g\. Service\/a\)/);
  });

  test('both at once: one plan, both kOps patches, the missing spec reported once', async () => {
    const p = await plan(tb.kubeconfigPath, ['--service-cidr', SVC_NEW, '--pod-cidr', POD_NEW]);
    const ids = patches(p).map((x) => x.id);
    assert.ok(ids.includes('kops-service-range') && ids.includes('kops-pod-cidr'), ids.join(', '));
    assert.ok(p.spec.serviceCIDR && p.spec.podCIDR);
    // and the table output of the same plan exits the same way
    const t = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', SVC_NEW, '--pod-cidr', POD_NEW]);
    assert.equal(t.code, documentedCode(p), t.err);
  });
});
