/**
 * Plans for clusters whose distribution is known but whose distribution configuration is not in the input:
 * a kOps cluster without its Cluster spec (the spec lives in the kOps state store, so a live read never has
 * it) and a kubeadm cluster without its ClusterConfiguration. The plan is still written: the distribution
 * patches name the fields to change, and a pre-flight check says what was not read and how to provide it.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readiness } from '../../src/analyze/readiness.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { Snapshot } from '../../src/cluster/types.ts';
import type { DistroPatch } from '../../src/plan/distro-patches.ts';
import { buildMigrationPlan, type MigrationPlan, type PlanStep } from '../../src/plan/plan.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';

install();

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');

/** An example read as files, leaving out the files named in `without`. */
async function exampleWithout(name: string, without: string[]): Promise<Snapshot> {
  const dir = join(EXAMPLES, name);
  const files = readdirSync(dir).filter((f) => !without.includes(f)).map((f) => join(dir, f));
  assert.ok(files.length > 0);
  return buildSnapshot(await readInventoryFiles(files));
}

/** The kubeadm example without the ConfigMap kube-system/kubeadm-config. */
async function kubeadmWithoutConfig(over: Partial<Snapshot> = {}): Promise<Snapshot> {
  const inv = await readInventoryFiles([join(EXAMPLES, 'kubeadm-exhausted')]);
  const before = inv.objects.length;
  inv.objects = inv.objects.filter((o) => !(o.kind === 'ConfigMap' && o.metadata?.name === 'kubeadm-config'));
  assert.equal(inv.objects.length, before - 1, 'the example has a kubeadm-config ConfigMap to leave out');
  return { ...buildSnapshot(inv), ...over };
}

// kOps refuses a range no nonMasqueradeCIDR of /8 or smaller holds with the unmoved one (services 100.64.0.0/13,
// pods 100.96.0.0/11): the targets sit next to them, outside 100.64.0.0/10 (nonMasqueradeCIDR 100.0.0.0/9)
const POD = '100.0.0.0/14';
const SVC = '100.32.0.0/24';

const gateSteps = (p: MigrationPlan): PlanStep[] => p.steps.filter((s) => s.gate);
const allPatches = (p: MigrationPlan): DistroPatch[] => gateSteps(p).flatMap((s) => s.gate!.patches ?? []);
const patch = (p: MigrationPlan, id: string): DistroPatch => {
  const found = allPatches(p).filter((x) => x.id === id);
  assert.equal(found.length, 1, `one patch ${id} in ${allPatches(p).map((x) => x.id).join(', ')}`);
  return found[0]!;
};
const check = (p: MigrationPlan, id: string) => {
  const found = p.preflight.filter((c) => c.id === id);
  assert.equal(found.length, 1, `one check ${id} in ${p.preflight.map((c) => c.id).join(', ')}`);
  return found[0]!;
};

/** Every patch a gate's instructions name ("patch X", "patches X, Y") is attached to that gate. */
function assertInstructionsNameAttachedPatches(p: MigrationPlan): number {
  let named = 0;
  for (const s of gateSteps(p)) {
    const ids = new Set((s.gate!.patches ?? []).map((x) => x.id));
    for (const line of s.gate!.instructions) {
      for (const m of line.matchAll(/\bpatch(?:es)? ([a-z0-9-]+(?:, [a-z0-9-]+)*)/g)) {
        for (const id of m[1]!.split(', ')) {
          named++;
          assert.ok(ids.has(id), `gate ${s.id} says "${line}" but carries ${[...ids].join(', ') || 'no patch'}`);
        }
      }
    }
  }
  return named;
}

describe('kOps cluster without its Cluster spec (examples/kops-tailscale without cluster.yaml)', () => {
  it('is still detected as kOps (node labels, kops-controller) and has no spec', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    assert.equal(s.platform.kind, 'kops');
    assert.ok(s.platform.evidence.some((e) => /kops\.k8s\.io\/instancegroup/.test(e)), s.platform.evidence.join('; '));
    assert.equal(s.kops, undefined);
  });

  it('plan --pod-cidr: written, kOps patch names podCIDR, clusterCIDR, nonMasqueradeCIDR for both layouts; pre-flight names the missing spec', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    const p = buildMigrationPlan(s, { pod: { target: POD } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail').map((c) => c.id), []);
    assert.ok(p.steps.length > 0);
    assert.equal(p.spec.podCIDR?.ipam, 'calico');

    const c = check(p, 'kops-spec');
    assert.equal(c.status, 'warn');
    assert.match(c.message, /no kOps Cluster spec/);
    assert.match(c.message, /kOps state store/);
    assert.match(c.message, /kops\.k8s\.io\/instancegroup/, 'says why the cluster is taken for kOps');
    assert.match(c.fix, /kops get cluster .*-o yaml > cluster\.yaml/);
    assert.match(c.fix, /-f cluster\.yaml/);

    const gate = p.steps.find((x) => x.id === 'pod-cidr-config')!;
    assert.ok(gate.gate!.instructions.some((l) => /kops edit cluster \(patch kops-pod-cidr\)/.test(l)));
    const k = patch(p, 'kops-pod-cidr');
    assert.equal(k.gate, 'pod-cidr-config');
    assert.match(k.target, /kops edit cluster/);
    assert.match(k.description, /spec\.networking\.podCIDR/);
    assert.match(k.description, /spec\.podCIDR/);
    assert.match(k.description, /spec\.kubeControllerManager\.clusterCIDR/);
    for (const text of [k.before, k.after]) {
      assert.match(text, /spec\.networking/, 'names the networking layout');
      assert.match(text, /legacy layout/, 'names the legacy layout');
      assert.match(text, /not read/);
    }
    // before: the pod range read from the cluster itself; after: NEW everywhere the pod range is set
    assert.match(k.before, /^\s+podCIDR: 100\.96\.0\.0\/11$/m);
    assert.match(k.before, /^\s+clusterCIDR: 100\.96\.0\.0\/11\b/m);
    assert.match(k.after, /^\s+podCIDR: 100\.0\.0\.0\/14$/m);
    assert.match(k.after, /^\s+clusterCIDR: 100\.0\.0\.0\/14\b/m);
    assert.match(k.after, /^\s+allocateNodeCIDRs: false$/m);
    // nonMasqueradeCIDR: unknown today; after: the smallest range holding NEW and the service range 100.64.0.0/13, clear of the VPC
    assert.match(k.before, /nonMasqueradeCIDR: \(not read/);
    assert.match(k.after, /nonMasqueradeCIDR: 100\.0\.0\.0\/9 +# only if the current one does not contain 100\.0\.0\.0\/14 and 100\.64\.0\.0\/13/);
    assert.ok(assertInstructionsNameAttachedPatches(p) > 0);
  });

  it('plan --pod-cidr that no nonMasqueradeCIDR holds with the service range: refused (check kops-pod-non-masquerade) naming the pair', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    const p = buildMigrationPlan(s, { pod: { target: '10.1.0.0/20' } });
    const c = check(p, 'kops-pod-non-masquerade');
    assert.equal(c.status, 'fail');
    assert.match(c.message, /podCIDR 10\.1\.0\.0\/20 and the serviceClusterIPRange 100\.64\.0\.0\/13/);
    assert.match(c.message, /--service-cidr \S+ --pod-cidr \S+ \(kube-renumber suggest --for services,pods/);
    assert.ok(!allPatches(p).some((x) => /TODO/.test(x.after)), 'no placeholder');
    assert.ok(assertInstructionsNameAttachedPatches(p) > 0);
  });

  it('plan --pod-cidr on the node path: kops-stop-allocating is written without the spec too', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    const p = buildMigrationPlan(s, { pod: { target: POD, ipam: 'node' } });
    assert.ok(p.steps.length > 0);
    const stop = patch(p, 'kops-stop-allocating');
    assert.match(stop.after, /allocateNodeCIDRs: false/);
    assert.match(stop.before, /not read/);
    assert.match(patch(p, 'kops-pod-cidr').after, /allocateNodeCIDRs: true/);
    assertInstructionsNameAttachedPatches(p);
  });

  it('plan --service-cidr: the kOps patch (not the generic one) names serviceClusterIPRange, kubeDNS, SANs for both layouts', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    const p = buildMigrationPlan(s, { service: { target: SVC } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail').map((c) => c.id), []);
    assert.equal(check(p, 'kops-spec').status, 'warn');
    assert.ok(!allPatches(p).some((x) => x.distribution === 'generic'), allPatches(p).map((x) => x.id).join(', '));

    const k = patch(p, 'kops-service-range');
    assert.equal(k.gate, 'restart-apiservers');
    assert.match(k.description, /spec\.networking\.serviceClusterIPRange/);
    assert.match(k.description, /spec\.serviceClusterIPRange/);
    assert.match(k.before, /^\s+serviceClusterIPRange: 100\.64\.0\.0\/13$/m);
    assert.match(k.after, /^\s+serviceClusterIPRange: 100\.32\.0\.0\/24$/m);
    assert.match(k.before, /^\s+serverIP: 100\.64\.0\.10\b/m);
    assert.match(k.after, /^\s+serverIP: 100\.32\.0\.10$/m);
    assert.match(k.after, /^\s+clusterDNS: 100\.32\.0\.10\b/m);
    assert.match(k.after, /additionalSANs:\n\s+# \.\.\.existing entries\n\s+- 100\.64\.0\.1\n\s+- 100\.32\.0\.1\n/);
    assert.match(k.after, /spec\.additionalSans/, 'the legacy place of the SANs');
    assert.match(k.after, /nonMasqueradeCIDR: .*100\.32\.0\.0\/24/);
    // the certificate fix names both layouts too
    assert.match(check(p, 'apiserver-cert-san').fix, /spec\.api\.additionalSANs.*spec\.additionalSans/);
    const gate = p.steps.find((x) => x.id === 'restart-apiservers')!;
    assert.ok(gate.gate!.instructions.some((l) => /apply patch kops-service-range/.test(l)));
    assert.ok(assertInstructionsNameAttachedPatches(p) > 0);
  });

  it('both at once: one plan, both kOps patches, the missing spec reported once', async () => {
    const s = await exampleWithout('kops-tailscale', ['cluster.yaml']);
    const p = buildMigrationPlan(s, { service: { target: SVC }, pod: { target: POD } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail').map((c) => c.id), []);
    assert.equal(check(p, 'kops-spec').status, 'warn');
    assert.match(patch(p, 'kops-service-range').after, /serviceClusterIPRange: 100\.32\.0\.0\/24/);
    assert.match(patch(p, 'kops-pod-cidr').after, /podCIDR: 100\.0\.0\.0\/14/);
    assert.ok(p.spec.serviceCIDR && p.spec.podCIDR);
    assertInstructionsNameAttachedPatches(p);
    assert.deepEqual(planFromYaml(planToYaml(p)), JSON.parse(JSON.stringify(p)));
  });

  it('inspect readiness says the spec was not read; with the spec it says nothing of the kind', async () => {
    const without = readiness(await exampleWithout('kops-tailscale', ['cluster.yaml'])).find((f) => f.id === 'kops-spec');
    assert.equal(without?.ok, null);
    assert.match(without!.summary, /kops get cluster -o yaml > cluster\.yaml/);
    const withSpec = await exampleWithout('kops-tailscale', []);
    assert.ok(withSpec.kops);
    assert.equal(readiness(withSpec).find((f) => f.id === 'kops-spec'), undefined);
  });

  it('with the spec: no kops-spec check, and the patch is the spec\'s own layout as nested YAML', async () => {
    const s = await exampleWithout('kops-tailscale', []);
    const p = buildMigrationPlan(s, { service: { target: SVC }, pod: { target: POD } });
    assert.equal(p.preflight.find((c) => c.id === 'kops-spec'), undefined);
    const k = patch(p, 'kops-pod-cidr');
    assert.doesNotMatch(k.after, /not read|legacy layout/);
    assert.match(k.after, /^spec:\n {2}networking:\n {4}podCIDR: 100\.0\.0\.0\/14\n/);
    assert.doesNotMatch(k.after, /networking\.podCIDR/, 'no dotted keys');
    assertInstructionsNameAttachedPatches(p);

    const legacy = buildMigrationPlan(await exampleWithout('kops-legacy-pool', []), { pod: { target: POD } });
    const kl = patch(legacy, 'kops-pod-cidr');
    assert.match(kl.after, /^spec:\n {2}nonMasqueradeCIDR: /, 'legacy layout: directly under spec');
    assert.match(kl.after, /kubeControllerManager:\n {4}clusterCIDR: 100\.0\.0\.0\/14\n/, 'the field the legacy spec gives its pod range in');
  });
});

describe('kubeadm cluster without its ClusterConfiguration (examples/kubeadm-exhausted without kubeadm-config)', () => {
  it('plan --pod-cidr: written, the kubeadm patches show the flag values, pre-flight names the missing ConfigMap', async () => {
    const s = await kubeadmWithoutConfig();
    assert.equal(s.kubeadm, undefined);
    assert.ok(s.platform.kind === 'kubespray' || s.platform.kind === 'kubeadm', s.platform.kind);
    const p = buildMigrationPlan(s, { pod: { target: '100.0.0.0/14' } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail').map((c) => c.id), []);
    const c = check(p, 'kubeadm-config');
    assert.equal(c.status, 'warn');
    assert.match(c.message, /ConfigMap kube-system\/kubeadm-config/);
    assert.match(c.fix, /kubectl -n kube-system get configmap kubeadm-config -o yaml/);
    const sub = patch(p, 'kubeadm-config-pod-subnet');
    assert.match(sub.before, /podSubnet: 10\.233\.64\.0\/18/, 'from kube-controller-manager --cluster-cidr');
    assert.match(sub.after, /podSubnet: 100\.0\.0\.0\/14/);
    assertInstructionsNameAttachedPatches(p);
    assert.equal(readiness(s).find((f) => f.id === 'kubeadm-config')?.ok, null);
  });

  it('plan --service-cidr and both (on a version with the ServiceCIDR API): written, kubeadm patches from the flags', async () => {
    const s = await kubeadmWithoutConfig({ kubernetesVersion: 'v1.33.4', serviceCIDRApi: 'v1' });
    const p = buildMigrationPlan(s, { service: { target: '10.240.0.0/20' }, pod: { target: '100.0.0.0/14' } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail').map((c) => c.id), []);
    assert.equal(check(p, 'kubeadm-config').status, 'warn');
    const sub = patch(p, 'kubeadm-config-service-subnet');
    assert.match(sub.before, /serviceSubnet: 10\.233\.0\.0\/18/);
    assert.match(sub.after, /serviceSubnet: 10\.240\.0\.0\/20/);
    assert.match(patch(p, 'kubeadm-apiserver-manifest').after, /--service-cluster-ip-range=10\.240\.0\.0\/20/);
    assertInstructionsNameAttachedPatches(p);
  });
});
