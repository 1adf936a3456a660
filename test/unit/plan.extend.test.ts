// plan --extend-service-cidr: the extension plan (src/plan/extend.ts) as data, as a file apply reads, and through the CLI.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Snapshot } from '../../src/cluster/types.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { buildExtensionPlan, EXTEND_STEP, extensionName, podExtensionRefusal, VERIFY_EXTENSION_STEP } from '../../src/plan/extend.ts';
import { accessNeeds, needKey } from '../../src/plan/access.ts';
import { recheckPreflight } from '../../src/plan/recheck.ts';
import { planFromYaml, planToMarkdown, planToYaml, PlanFormatError } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { install } from '../../src/install.ts';
import { run } from './run-cli.ts';

install();

const SVCS = [svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10'), svc('web', 'api', '10.96.3.4')];
const snap = (over: Partial<Snapshot> = {}) => kubeadmSnapshot(SVCS, {
  ranges: [
    { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
    { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'Pod CIDR' },
    { cidr: '192.168.10.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' },
  ],
  ...over,
});

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `kube-renumber plan ARGV` in this process (test/unit/run-cli.ts). */
const plan = (argv: string[]) => run(['plan', ...argv]);

describe('buildExtensionPlan', () => {
  it('adds one ServiceCIDR, leaves the flag, verifies, and refuses nothing on a clear range', () => {
    const p = buildExtensionPlan(snap(), { add: '172.24.0.0/20' });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail'), []);
    const ext = p.spec.serviceExtension!;
    assert.deepEqual(ext.add, ['172.24.0.0/20']);
    assert.deepEqual(ext.from, ['10.96.0.0/16']);
    assert.deepEqual(ext.flag, ['10.96.0.0/16']);
    assert.equal(ext.apiVersion, 'networking.k8s.io/v1');
    assert.equal(ext.name, 'kube-renumber-extend-172-24-0-0-20');
    assert.equal(p.spec.serviceCIDR, undefined);
    assert.deepEqual(p.steps.map((s) => s.id), [EXTEND_STEP, VERIFY_EXTENSION_STEP]);
    assert.deepEqual(p.steps[0]!.serviceCIDRs, [{ name: ext.name, cidrs: ['172.24.0.0/20'], purpose: 'extend' }]);
    const flag = p.preflight.find((c) => c.id === 'extend-apiserver-flag')!;
    assert.match(flag.message, /stays 10\.96\.0\.0\/16: the apiserver keeps the default ServiceCIDR kubernetes/);
    assert.match(p.steps[0]!.rollback, /refused, naming the Services/);
  });

  for (const [what, add, re] of [
    ['the Service range', '10.96.128.0/20', /10\.96\.0\.0\/16/],
    ['a range holding the Service range', '10.0.0.0/8', /10\.96\.0\.0\/16/],
    ['the pod range', '10.244.16.0/20', /10\.244\.0\.0\/16/],
    ['the node network', '192.168.10.0/28', /192\.168\.10\.0\/24/],
  ] as const) {
    it(`refuses a range overlapping ${what}`, () => {
      const p = buildExtensionPlan(snap(), { add });
      const failed = p.preflight.filter((c) => c.status === 'fail' && c.target);
      assert.equal(failed.length, 1, JSON.stringify(p.preflight));
      assert.equal(failed[0]!.id, 'target-conflicts');
      assert.match(failed[0]!.message, re);
      assert.deepEqual(p.steps, []);
      assert.equal(p.spec.serviceExtension, undefined);
    });
  }

  it('refuses a range holding the Service range when only ServiceCIDR kubernetes names it (no apiserver flag read)', () => {
    const only = snap({ apiservers: [], kubeadm: undefined, ranges: [{ cidr: '10.96.0.0/16', role: 'service', source: 'ServiceCIDR/kubernetes', label: 'Service CIDR' }] });
    const p = buildExtensionPlan(only, { add: '10.96.0.0/12' });
    const failed = p.preflight.filter((c) => c.status === 'fail' && c.target);
    assert.deepEqual(failed.map((c) => c.id), ['target-conflicts']);
    assert.match(failed[0]!.message, /overlaps the current service range 10\.96\.0\.0\/16/);
    const own = snap({ ranges: [...snap().ranges, { cidr: '172.24.0.0/20', role: 'service', source: 'ServiceCIDR/kube-renumber-extend-172-24-0-0-20', label: 'Service CIDR' }] });
    assert.deepEqual(buildExtensionPlan(own, { add: '172.24.0.0/20' }).preflight.filter((c) => c.status === 'fail'), [], 'its own ServiceCIDR, planned again after apply');
  });

  it('refuses a family the Service range does not use, a range too small to serve an address, and a version without the API', () => {
    assert.equal(buildExtensionPlan(snap(), { add: 'fd00:10::/112' }).preflight.find((c) => c.status === 'fail')?.id, 'target-family');
    const tiny = buildExtensionPlan(snap(), { add: '172.24.0.0/31' }).preflight.find((c) => c.status === 'fail');
    assert.equal(tiny?.id, 'extend-size');
    assert.ok(buildExtensionPlan(snap(), { add: '172.24.0.0/30' }).spec.serviceExtension, 'a /30 serves two addresses');
    const old = buildExtensionPlan(snap({ kubernetesVersion: 'v1.28.9', serviceCIDRApi: null, serviceCIDRs: [] }), { add: '172.24.0.0/20' });
    const f = old.preflight.find((c) => c.status === 'fail')!;
    assert.equal(f.id, 'servicecidr-api');
    assert.match(f.message, /1\.29 and later/);
  });

  it('uses the version\'s API and, where it is off, opens with the gate that enables it', () => {
    const beta = buildExtensionPlan(snap({ kubernetesVersion: 'v1.32.5', serviceCIDRApi: null, serviceCIDRs: [] }), { add: '172.24.0.0/20' });
    assert.equal(beta.spec.serviceExtension!.apiVersion, 'networking.k8s.io/v1beta1');
    assert.deepEqual(beta.steps.map((s) => s.id), ['enable-servicecidr-api', EXTEND_STEP, VERIFY_EXTENSION_STEP]);
    const gate = beta.steps[0]!;
    assert.equal(gate.kind, 'gate');
    assert.equal(gate.kind === 'gate' && gate.gate.condition, 'extension-servicecidr-api');
    assert.match(gate.kind === 'gate' ? gate.gate.reason : '', /MultiCIDRServiceAllocator/);
    const alpha = buildExtensionPlan(snap({ kubernetesVersion: 'v1.30.14', serviceCIDRApi: 'v1alpha1', serviceCIDRs: [] }), { add: '172.24.0.0/20' });
    assert.equal(alpha.spec.serviceExtension!.apiVersion, 'networking.k8s.io/v1alpha1');
    assert.deepEqual(alpha.steps.map((s) => s.id), [EXTEND_STEP, VERIFY_EXTENSION_STEP], 'served: no gate');
  });

  it('lists the range references that must now name the added range too, as warnings', () => {
    const objects = [{
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'allow-svc', namespace: 'web' },
      spec: { egress: [{ to: [{ ipBlock: { cidr: '10.96.0.0/16' } }] }] },
    }];
    const refs = buildSnapshot({ source: { kind: 'live' }, objects, configs: [], gaps: [] }).referenceSources;
    const p = buildExtensionPlan(snap({ referenceSources: refs }), { add: '172.24.0.0/20' });
    assert.equal(p.references?.length, 1);
    const r = p.references![0]!;
    assert.equal(r.severity, 'warning');
    assert.equal(r.field, 'spec.egress[0].to[0].ipBlock.cidr');
    assert.equal(r.proposed, '10.96.0.0/16, 172.24.0.0/20');
    assert.match(r.note, /keeps 10\.96\.0\.0\/16: add the new range next to it/);
    assert.ok(!p.steps.some((s) => s.kind === 'gate'), 'nothing breaks: no references gate');
  });

  it('round-trips through YAML, and the validator holds the ServiceCIDR to the added range', () => {
    const p = buildExtensionPlan(snap(), { add: '172.24.0.0/20' });
    const back = planFromYaml(planToYaml(p));
    assert.deepEqual(back.spec, p.spec);
    const bad = planToYaml(p).replace(/cidrs:\n(\s+)- 172\.24\.0\.0\/20/, 'cidrs:\n$1- 172.25.0.0/20');
    assert.throws(() => planFromYaml(bad), (e: unknown) => e instanceof PlanFormatError && /must be spec\.serviceExtension\.add/.test((e as Error).message));
    const overlapping = planToYaml(p).replace(/add:\n(\s+)- 172\.24\.0\.0\/20/, 'add:\n$1- 10.96.0.0/20');
    assert.throws(() => planFromYaml(overlapping), /overlaps the service range 10\.96\.0\.0\/16/);
    assert.match(planToMarkdown(p), /# Extension: Service range 10\.96\.0\.0\/16 \+ 172\.24\.0\.0\/20/);
  });

  it('is rechecked against the live snapshot: a range taken since is a failed check', () => {
    const p = buildExtensionPlan(snap(), { add: '172.24.0.0/20' });
    assert.deepEqual(recheckPreflight(snap(), p).filter((c) => c.status === 'fail'), []);
    const later = snap({ pods: [{ namespace: 'x', name: 'p', podIPs: ['172.24.1.9'], hostNetwork: false, labels: {} }] });
    const now = recheckPreflight(later, p).filter((c) => c.status === 'fail');
    assert.deepEqual(now.map((c) => c.id), ['target-conflicts']);
    assert.match(now[0]!.message, /172\.24\.1\.9/);
  });

  it('asks for create/delete servicecidrs, nothing of a move', () => {
    const keys = accessNeeds(buildExtensionPlan(snap(), { add: '172.24.0.0/20' })).map(needKey);
    for (const k of ['create servicecidrs.networking.k8s.io', 'delete servicecidrs.networking.k8s.io']) assert.ok(keys.includes(k), `${k} in ${keys.join('; ')}`);
    assert.ok(!keys.includes('patch services'), 'an extension changes no Service');
  });

  it('names the ServiceCIDR after the range', () => {
    assert.equal(extensionName(['172.24.0.0/20', 'fd00::/112']), 'kube-renumber-extend-172-24-0-0-20-fd00---112');
  });
});

describe('kube-renumber plan --extend-service-cidr (examples/kops-tailscale)', () => {
  const ex = `${ROOT}examples/kops-tailscale`;

  it('writes the extension plan apply reads', async () => {
    const r = await plan(['--extend-service-cidr', '100.32.0.0/20', '-f', ex, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err);
    const p = planFromYaml(r.out);
    assert.deepEqual(p.spec.serviceExtension!.add, ['100.32.0.0/20']);
    assert.deepEqual(p.spec.serviceExtension!.flag, ['100.64.0.0/13']);
    const t = await plan(['--extend-service-cidr', '100.32.0.0/20', '-f', ex]);
    assert.match(t.out, /^apiserver flag\s+--service-cluster-ip-range stays 100\.64\.0\.0\/13/m);
  });

  it('a range overlapping the Service range exits 2 with one error line naming what it overlaps', async () => {
    // 100.64.0.0/13 lies in 100.64.0.0/10 (CGNAT, Tailscale), which the line names as the larger obstacle
    const r = await plan(['--extend-service-cidr', '100.64.16.0/20', '-f', ex, '-o', 'yaml']);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    assert.equal(r.err.trim().split('\n').length, 1, r.err);
    assert.match(r.err, /^error: --extend-service-cidr 100\.64\.16\.0\/20 refused: 100\.64\.16\.0\/20 overlaps 100\.64\.0\.0\/10/);
  });

  it('refuses a flag of the move, and a range that does not parse', async () => {
    const r = await plan(['--extend-service-cidr', '100.32.0.0/20', '--strategy', 'recreate', '-f', ex]);
    assert.equal(r.code, 2);
    assert.match(r.err, /--strategy does not go with --extend-service-cidr/);
    const bad = await plan(['--extend-service-cidr', '100.32.0.1/20', '-f', ex]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^error: --extend-service-cidr 100\.32\.0\.1\/20 refused/);
  });
});

describe('--extend-pod-cidr', () => {
  const withPods = (over: Partial<Snapshot>) => snap({
    controllerManagers: [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16'], nodeCIDRMaskSize: 24, allocateNodeCIDRs: true }],
    nodes: [{ name: 'n1', podCIDRs: ['10.244.0.0/24'], internalIPs: ['192.168.10.11'] } as never],
    ...over,
  });

  it('on node IPAM: refused with kube-controller-manager\'s reason and what to do instead', () => {
    const line = podExtensionRefusal(withPods({ cni: { plugin: 'flannel', ipam: 'host-local', operatorManaged: false, evidence: [] }, pools: [] }), '10.245.0.0/16');
    assert.match(line, /^--extend-pod-cidr 10\.245\.0\.0\/16 refused: pods get their addresses from the nodes' podCIDRs/);
    assert.match(line, /--cluster-cidr \(10\.244\.0\.0\/16\), and it takes one CIDR per family/);
    assert.match(line, /instead: move the range with plan --pod-cidr NEW, or, where Calico IPAM .* --allocate-node-cidrs=false/);
    assert.doesNotMatch(line, /\n/);
  });

  it('on Cilium multi-pool: refused as not written yet, saying what to add by hand', () => {
    const line = podExtensionRefusal(withPods({
      cni: { plugin: 'cilium', ipam: 'multi-pool', operatorManaged: false, evidence: [], ipamMode: 'multi-pool', owner: { kind: 'cilium-multi-pool', title: 'Cilium multi-pool', evidence: ['ConfigMap kube-system/cilium-config ipam: multi-pool'] } } as never,
    }), '10.245.0.0/16');
    assert.match(line, /does not write the extension of Cilium multi-pool pod addresses yet/);
    assert.match(line, /add ADD to spec\.ipv4\.cidrs \(or ipv6\) of the CiliumPodIPPool the pods take addresses from \(default, for pods and namespaces without an ipam\.cilium\.io\/ip-pool annotation/);
  });

  it('the CLI exits 2 with the line, and refuses a range that does not parse first', async () => {
    const bad = await plan(['--extend-pod-cidr', '10.245.0.1/16', '-f', `${ROOT}examples/kops-tailscale`]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^error: --extend-pod-cidr 10\.245\.0\.1\/16 refused/);
    const r = await plan(['--extend-pod-cidr', '10.245.0.0/16', '-f', `${ROOT}examples/kops-tailscale`]);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.out, '');
    assert.equal(r.err.trim().split('\n').length, 1);
    assert.match(r.err, /^error: --extend-pod-cidr 10\.245\.0\.0\/16 refused: /);
  });
});
