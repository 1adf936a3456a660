// A Service move's workload restarts (step restart-workloads, or the gate with --restart-workloads=manual) and
// --cluster-dns none|NS/NAME: what the plan writes, what apply checks again on the live read, what a run asks of RBAC.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArgs } from 'node:util';
import { planCommand } from '../../src/cli/commands/plan.ts';
import { exitCodeOf, GLOBAL_OPTIONS, type Io } from '../../src/cli/main.ts';
import type { PodInfo, Snapshot } from '../../src/cluster/types.ts';
import { accessNeeds, needKey } from '../../src/plan/access.ts';
import { buildServicePlan, type MigrationPlan } from '../../src/plan/plan.ts';
import { recheckPreflight } from '../../src/plan/recheck.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

const SERVICES = [
  svc('default', 'kubernetes', '10.96.0.1'),
  svc('kube-system', 'kube-dns', '10.96.0.10', { selector: { 'k8s-app': 'kube-dns' } }),
  svc('app', 'web', '10.96.1.1'),
];
const pod = (ns: string, name: string, over: Partial<PodInfo> = {}): PodInfo => ({ namespace: ns, name, podIPs: ['10.244.0.5'], hostNetwork: false, phase: 'Running', labels: {}, ...over });
const PODS = [
  pod('kube-system', 'coredns-5d78c9869d-abcde', { owner: { kind: 'ReplicaSet', name: 'coredns-5d78c9869d' }, labels: { 'k8s-app': 'kube-dns', 'pod-template-hash': '5d78c9869d' } }),
  pod('app', 'web-1', { owner: { kind: 'ReplicaSet', name: 'web-6f9' } }),
  pod('team-b', 'bare'),
  pod('kube-system', 'host', { hostNetwork: true }),
];
const ids = (p: MigrationPlan) => p.steps.map((s) => s.id);
const step = (p: MigrationPlan, id: string) => p.steps.find((s) => s.id === id)!;
const check = (p: MigrationPlan, id: string) => p.preflight.find((c) => c.id === id)!;

describe('restart-workloads: a step the tool runs, or a gate', () => {
  const snap = kubeadmSnapshot(SERVICES, { pods: PODS });

  it('by default the tool restarts: the step after the moves, its settings recorded, the restarts confirmed before the first write', () => {
    const p = buildServicePlan(snap, { target: '100.32.0.0/16', parallel: 3, critical: ['app/web'] });
    assert.equal(p.spec.options.restartWorkloads, 'tool');
    // the cluster DNS Deployment (from the DNS Service's pods) first, then --critical; bare pods' namespaces listed
    assert.deepEqual(p.spec.serviceCIDR.restarts, { parallel: 3, critical: ['kube-system/coredns', 'app/web'], barePodNamespaces: ['team-b'] });
    const s = step(p, 'restart-workloads');
    assert.equal(s.kind, 'restart-workloads');
    assert.equal(s.gate, undefined);
    assert.match(s.description, /kube-system\/coredns, app\/web first \(a Deployment that a Service with a UDP port selects, as the cluster DNS, is handed over pod by pod.*; any other is scaled up by one replica \(at least 2\) and restarted\), 3 rollout\(s\) at a time/);
    assert.match(s.description, /Eviction API \(PodDisruptionBudgets respected/);
    const i = ids(p);
    assert.ok(i.indexOf('kubelet-cluster-dns') < i.indexOf('restart-workloads') && i.indexOf('move-kubernetes') < i.indexOf('restart-workloads'));
    assert.ok(i.indexOf('restart-workloads') < i.indexOf('remove-bridges'));
    assert.equal(i[0], 'confirm-pod-disruption');
    assert.equal(step(p, 'confirm-pod-disruption').kind, 'confirm');
    assert.match(step(p, 'confirm-pod-disruption').description, /they run in namespace\(s\) team-b/);
    assert.match(step(p, 'confirm-pod-disruption').gate!.instructions.join('\n'), /kubectl -n team-b create rolebinding kube-renumber-recreate-pods/);
  });

  it('--restart-workloads=manual keeps the gate, asks no confirmation, records no restarts, and needs no restart RBAC', () => {
    const p = buildServicePlan(snap, { target: '100.32.0.0/16', restartWorkloads: 'manual' });
    assert.equal(p.spec.options.restartWorkloads, 'manual');
    assert.equal(p.spec.serviceCIDR.restarts, undefined);
    assert.equal(step(p, 'restart-workloads').kind, 'gate');
    assert.ok(!ids(p).includes('confirm-pod-disruption'));
    const needs = accessNeeds(p).map(needKey);
    assert.ok(!needs.some((k) => k.includes('.apps') || k.startsWith('create pods')), needs.join(', '));
    const tool = accessNeeds(buildServicePlan(snap, { target: '100.32.0.0/16' })).map(needKey);
    for (const k of ['create pods/eviction', 'patch deployments.apps', 'create pods -n team-b']) assert.ok(tool.includes(k), k);
  });

  it('kOps: its node rolling update restarts every pod, so the gate is the default and says why; tool on request', () => {
    const kops: Partial<Snapshot> = {
      pods: PODS, platform: { kind: 'kops', title: 'kops', evidence: [], reserved: [] }, kubeadm: undefined,
      kops: { layout: 'networking', serviceClusterIPRange: '10.96.0.0/16', kubeDNSServerIP: '10.96.0.10', nonMasqueradeCIDR: '10.0.0.0/8' },
    };
    const p = buildServicePlan(kubeadmSnapshot(SERVICES, kops), { target: '10.200.0.0/16' });
    assert.equal(p.spec.options.restartWorkloads, 'manual');
    const g = step(p, 'restart-workloads');
    assert.equal(g.kind, 'gate');
    assert.match(g.description, /left to the operator: kOps replaces every node in the rolling update at gate kubelet-cluster-dns.*--restart-workloads=tool/);
    const t = buildServicePlan(kubeadmSnapshot(SERVICES, kops), { target: '10.200.0.0/16', restartWorkloads: 'tool' });
    assert.equal(step(t, 'restart-workloads').kind, 'restart-workloads');
  });

  it('the plan file carries the settings through YAML, and a damaged value is refused naming the field', () => {
    const p = buildServicePlan(snap, { target: '100.32.0.0/16' });
    const back = planFromYaml(planToYaml(p));
    assert.deepEqual(back.spec.serviceCIDR!.restarts, p.spec.serviceCIDR.restarts);
    assert.equal(back.spec.options!.restartWorkloads, 'tool');
    assert.throws(() => planFromYaml(planToYaml(p).replace('restartWorkloads: tool', 'restartWorkloads: maybe')), /spec\.options\.restartWorkloads/);
    assert.throws(() => planFromYaml(planToYaml(p).replace('parallel: 4', 'parallel: 0')), /spec\.serviceCIDR\.restarts\.parallel/);
  });

});

describe('--cluster-dns none | NS/NAME', () => {
  // upstream's TestMigrateServiceCIDR: a /29, four Services, no DNS at all
  const noDns = kubeadmSnapshot([
    svc('default', 'kubernetes', '192.168.0.1'), ...[2, 3, 4, 5].map((i) => svc('default', `svc-${i}`, `192.168.0.${i}`)),
  ], {
    dnsService: undefined, clusterDNS: [],
    ranges: [{ cidr: '192.168.0.0/29', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' }],
    serviceCIDRs: [{ name: 'kubernetes', cidrs: ['192.168.0.0/29'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
    kubernetesServiceIPs: ['192.168.0.1'],
    apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['192.168.0.0/29'] }],
    controllerManagers: [], kubeadm: { serviceSubnet: ['192.168.0.0/29'] },
  });

  it('without it, a cluster with no DNS fails pre-flight cluster-dns, and the fix names the flag', () => {
    const p = buildServicePlan(noDns, { target: '10.0.0.0/24' });
    assert.equal(check(p, 'cluster-dns').status, 'fail');
    assert.match(check(p, 'cluster-dns').fix, /--cluster-dns none/);
  });

  it('none: the check passes, no DNS step or kubelet gate, the choice recorded; apply fails it once a DNS Service appears', () => {
    const p = buildServicePlan(noDns, { target: '10.0.0.0/24', clusterDNS: 'none' });
    assert.equal(check(p, 'cluster-dns').status, 'pass');
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail'), []);
    assert.equal(p.spec.options.clusterDNS, 'none');
    assert.ok(!ids(p).includes('move-dns') && !ids(p).includes('kubelet-cluster-dns') && !ids(p).includes('confirm-dns'));
    assert.ok(ids(p).includes('move-kubernetes') && ids(p).includes('restart-workloads'));
    assert.ok(p.mapping.every((m) => !m.isDNS));
    // live read unchanged: passes again
    assert.equal(recheckPreflight(noDns, planFromYaml(planToYaml(p))).find((c) => c.id === 'cluster-dns')!.status, 'pass');
    // a DNS Service appeared since the plan: apply stops
    const now = { ...noDns, services: [...noDns.services, svc('kube-system', 'kube-dns', '192.168.0.6')], dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['192.168.0.6'], foundBy: 'selector k8s-app=kube-dns' } };
    const again = recheckPreflight(now, p).find((c) => c.id === 'cluster-dns')!;
    assert.equal(again.status, 'fail');
    assert.match(again.message, /--cluster-dns none, but kube-system\/kube-dns at 192\.168\.0\.6 is the cluster DNS/);
  });

  it('NS/NAME: that Service is the DNS Service (moved last behind its confirm, with the kubelet gate); one that does not exist fails', () => {
    const withDns = { ...noDns, services: [...noDns.services, svc('dns', 'resolver', '192.168.0.6')] };
    const p = buildServicePlan(withDns, { target: '10.0.0.0/24', clusterDNS: 'dns/resolver' });
    assert.equal(check(p, 'cluster-dns').status, 'pass');
    assert.match(check(p, 'cluster-dns').message, /dns\/resolver at 192\.168\.0\.6 \(found by --cluster-dns dns\/resolver\)/);
    assert.deepEqual(step(p, 'move-dns').items!.map((i) => `${i.namespace}/${i.name}`), ['dns/resolver']);
    assert.ok(ids(p).includes('kubelet-cluster-dns'));
    const gone = recheckPreflight(noDns, p).find((c) => c.id === 'cluster-dns')!;
    assert.equal(gone.status, 'fail');
    assert.match(gone.message, /--cluster-dns dns\/resolver names no Service with a ClusterIP/);
  });

  it('the plan file refuses a clusterDNS that is neither none nor namespace/name', () => {
    const p = buildServicePlan(noDns, { target: '10.0.0.0/24', clusterDNS: 'none' });
    assert.throws(() => planFromYaml(planToYaml(p).replace('clusterDNS: none', 'clusterDNS: Bad Name')), /spec\.options\.clusterDNS/);
  });
});

describe('kube-renumber plan: the flags', () => {
  async function plan(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent' } };
    try {
      const p = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...planCommand.options }, allowPositionals: true, strict: true });
      const code = await planCommand.run({ values: p.values as any, positionals: p.positionals, io });
      return { code, out, err };
    } catch (e) {
      return { code: exitCodeOf(e), out, err: `${err}error: ${(e as Error).message}\n` };
    }
  }
  const ex = new URL('../../examples/kops-tailscale', import.meta.url).pathname;

  it('bad values and flags without their move exit 2', async () => {
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--restart-workloads', 'later'])).code, 2);
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--cluster-dns', 'nonamespace'])).code, 2);
    assert.equal((await plan(['--pod-cidr', '100.32.0.0/15', '-f', ex, '--cluster-dns', 'none'])).code, 2);
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--restart-workloads', 'manual', '--parallel', '3'])).code, 2);
  });

  it('--cluster-dns and --restart-workloads reach the plan', async () => {
    const r = await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '-o', 'yaml', '--cluster-dns', 'kube-system/kube-dns', '--restart-workloads', 'tool', '--parallel', '2']);
    assert.equal(r.code, 0, r.err);
    const p = planFromYaml(r.out);
    assert.equal(p.spec.options!.clusterDNS, 'kube-system/kube-dns');
    assert.equal(p.spec.options!.restartWorkloads, 'tool');
    assert.equal(p.spec.serviceCIDR!.restarts!.parallel, 2);
    assert.equal(p.steps.find((s) => s.id === 'restart-workloads')!.kind, 'restart-workloads');
  });
});
