// Occupied means configured OR live: every ClusterIP, pod IP and node address counts, in inspect's conflicts, in
// the target checks of plan (--service-cidr, --pod-cidr) and in suggest's search; an unnamed service range is
// inferred from the ClusterIPs (or the plan fails before any write); the DNS Service is found by its well-known
// identity, and a plan that moves Services without knowing it fails.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { findConflicts } from '../../src/analyze/conflicts.ts';
import { inspect } from '../../src/analyze/inspect.ts';
import { liveIn, liveIndex } from '../../src/analyze/live.ts';
import { suggest } from '../../src/analyze/suggest.ts';
import { renderInspect } from '../../src/cli/commands/inspect.ts';
import { buildSnapshot, DNS_SERVICE_CANDIDATES } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, Snapshot } from '../../src/cluster/types.ts';
import { cidrToRange, parseCidr } from '../../src/net/index.ts';
import { buildMigrationPlan, buildServicePlan } from '../../src/plan/plan.ts';
import { overlapHits, refusals, runPreflight, targetChecks } from '../../src/plan/preflight.ts';
import { podTargetRefusals } from '../../src/plan/targets.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import {
  aksObjects, eksCustomNetworkingObjects, gkeObjects, k3sObjects, listJson, node, pod, service,
} from './live-fixtures.ts';
import { run } from './run-cli.ts';

install();

const snapOf = (objects: KubeObject[], opts?: Parameters<typeof buildSnapshot>[1]): Snapshot =>
  buildSnapshot({ source: { kind: 'file', files: ['test'] }, objects, configs: [], gaps: [] }, opts);
const ex = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
const range = (c: string) => cidrToRange(parseCidr(c));
const withoutName = (objects: KubeObject[], name: string) => objects.filter((o) => o.metadata?.name !== name);

describe('live addresses', () => {
  it('index ClusterIPs, pod IPs and node addresses once, sorted; finished pods hold none; one address held twice is a collision', () => {
    const s = snapOf([
      node('n1', '192.168.1.5', undefined, '203.0.113.5'),
      pod('kube-system', 'proxy', '192.168.1.5', 'n1', { hostNetwork: true }),
      service('shop', 'db', '10.43.0.20'),
      pod('shop', 'web-1', '10.42.0.7', 'n1'),
      pod('shop', 'job-1', '10.42.0.8', 'n1', { phase: 'Succeeded' }),
      pod('shop', 'stray', '10.43.0.20', 'n1'),
    ]);
    const index = liveIndex(s);
    assert.equal(liveIndex(s), index, 'built once per snapshot');
    assert.deepEqual(liveIn(index, range('10.42.0.0/16')).count, 1, 'the finished pod holds no address');
    const svcs = liveIn(index, range('10.43.0.0/16'), { limit: 5 });
    assert.equal(svcs.count, 1);
    assert.equal(svcs.first[0]!.kind, 'cluster-ip', 'the ClusterIP is named before the pod holding the same address');
    assert.equal(liveIn(index, range('192.168.1.0/24')).first[0]!.kind, 'node');
    assert.equal(liveIn(index, range('0.0.0.0/0')).count, 4);
    assert.equal(liveIn(index, range('0.0.0.0/0'), { kinds: ['pod'] }).count, 1, 'the pod sharing the ClusterIP is not counted twice');
    // The node and its hostNetwork pod share one address by design; the ClusterIP and the pod do not.
    assert.deepEqual(index.collisions.map((c) => [c.a.holder, c.b.holder]), [['shop/db', 'shop/stray']]);
  });

  it('a cached index is rebuilt when the pods, Services or nodes change', () => {
    const s = kubeadmSnapshot([svc('a', 'x', '10.96.0.5')]);
    assert.equal(liveIn(liveIndex(s), range('10.96.0.0/16')).count, 1);
    s.services = [...s.services, svc('a', 'y', '10.96.0.6')];
    assert.equal(liveIn(liveIndex(s), range('10.96.0.0/16')).count, 2);
  });
});

describe('targets: a range holding a live address is refused and the address is named', () => {
  it('k3s: --pod-cidr 10.43.0.0/16 holds every ClusterIP', () => {
    const k3s = snapOf(k3sObjects());
    const r = podTargetRefusals(k3s, { target: '10.43.0.0/16' });
    assert.equal(r[0], '10.43.0.0/16 contains 10.43.0.1, the ClusterIP of default/kubernetes (and 3 more live addresses)');
    assert.match(podTargetRefusals(k3s, { target: '10.43.0.8/29' })[0]!, /^10\.43\.0\.8\/29 contains 10\.43\.0\.10, the ClusterIP of kube-system\/kube-dns$/);
    assert.deepEqual(podTargetRefusals(k3s, { target: '10.44.0.0/16' }), []);
  });

  it('live addresses alone refuse a target, with no configured range at all', () => {
    // No ranges anywhere: before, every target passed.
    const s = kubeadmSnapshot([svc('default', 'kubernetes', '10.0.0.1'), svc('kube-system', 'kube-dns', '10.0.0.10')], {
      ranges: [], serviceCIDRs: [], apiservers: [], controllerManagers: [], kubeadm: undefined,
      pods: [{ namespace: 'shop', name: 'web-1', podIPs: ['10.60.3.4'], hostNetwork: false, phase: 'Running', labels: {} }],
      nodes: [{ name: 'n1', podCIDRs: [], internalIPs: ['10.70.0.4'], externalIPs: ['203.0.113.9'], labels: {}, unschedulable: false }],
    });
    const t = (c: string) => new Map([[4 as const, parseCidr(c)]]);
    assert.deepEqual(overlapHits(s, [], t('10.0.0.0/24')), ['10.0.0.0/24 contains 10.0.0.1, the ClusterIP of default/kubernetes (and 1 more live address)']);
    assert.deepEqual(overlapHits(s, [], t('10.60.0.0/16')), ['10.60.0.0/16 contains 10.60.3.4, the IP of pod shop/web-1']);
    assert.deepEqual(overlapHits(s, [], t('10.70.0.0/24')), ['10.70.0.0/24 contains 10.70.0.4, the InternalIP of node n1']);
    assert.deepEqual(overlapHits(s, [], t('203.0.113.0/24')), ['203.0.113.0/24 contains 203.0.113.9, the ExternalIP of node n1']);
    assert.deepEqual(overlapHits(s, [], t('10.80.0.0/16')), []);
  });

  it('AKS: a pod target inside the (unconfigured) service range; GKE: its service range 34.118.224.0/20 as a pod target', () => {
    const aks = snapOf(aksObjects());
    assert.match(podTargetRefusals(aks, { target: '10.0.0.0/17' }).join('; '), /^10\.0\.0\.0\/17 contains 10\.0\.0\.1, the ClusterIP of default\/kubernetes \(and 1 more live address\); 10\.0\.0\.0\/17 overlaps 10\.0\.0\.0\/16 \(the current service range \(inferred/);
    const gke = snapOf(gkeObjects());
    assert.match(podTargetRefusals(gke, { target: '34.118.224.0/20' }).join('; '), /^34\.118\.224\.0\/20 contains 34\.118\.224\.1, the ClusterIP of default\/kubernetes \(and 2 more live addresses\)/);
  });

  it('the address named is one outside the configured ranges the target overlaps, when there is one', () => {
    // The target overlaps the current pod range (reported) and also holds a stray pod outside it: that pod is named.
    const k3s = snapOf([...k3sObjects(), pod('shop', 'stray', '10.42.200.9', 'agent-1')]);
    const r = podTargetRefusals(k3s, { target: '10.42.128.0/17' });
    assert.match(r[0]!, /^10\.42\.128\.0\/17 contains 10\.42\.200\.9, the IP of pod shop\/stray$/);
  });

  it('--service-cidr: a pod IP or node address counts; ClusterIPs in a ServiceCIDR for NEW from an earlier run are NEW\'s own', () => {
    const earlier = kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1'), svc('app', 'moved', '172.24.0.77')], {
      ranges: [
        { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
        { cidr: '172.24.0.0/16', role: 'service', source: 'ServiceCIDR/kube-renumber-172-24-0-0-16', label: 'ServiceCIDR' },
      ],
    });
    const pass = targetChecks(earlier, { target: '172.24.0.0/16' }).checks.find((c) => c.id === 'target-conflicts')!;
    assert.equal(pass.status, 'pass', pass.message);
    earlier.pods = [{ namespace: 'shop', name: 'web-1', podIPs: ['172.24.9.9'], hostNetwork: false, phase: 'Running', labels: {} }];
    const fail = targetChecks(earlier, { target: '172.24.0.0/16' }).checks.find((c) => c.id === 'target-conflicts')!;
    assert.equal(fail.status, 'fail');
    assert.equal(fail.message, '172.24.0.0/16 contains 172.24.9.9, the IP of pod shop/web-1');
    assert.equal(fail.target, true);
  });

  it('suggest skips a candidate block that holds a live address outside every known range', () => {
    const s = kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1')]);
    // a /20: the floor for Service ranges (src/analyze/sizing.ts)
    assert.equal(suggest(s, { for: 'services' }).cidr, '10.1.0.0/20');
    s.pods = [{ namespace: 'shop', name: 'stray', podIPs: ['10.1.0.7'], hostNetwork: false, phase: 'Running', labels: {} }];
    const sg = suggest(s, { for: 'services' });
    assert.equal(sg.cidr, '10.1.16.0/20');
    assert.deepEqual(sg.rejected.find((r) => r.by === '10.1.0.7'), { from: '10.1.0.0/20', to: '10.1.0.0/20', count: '1', by: '10.1.0.7', reason: 'the IP of pod shop/stray' });
  });
});

describe('inspect: live addresses in conflicts and capacity', () => {
  it('EKS custom networking: pod IPs in CGNAT with no pod range configured are a conflict; the pod range is said to be unknown', () => {
    const eks = snapOf(eksCustomNetworkingObjects());
    const c = findConflicts(eks).filter((x) => x.kind === 'live-address');
    assert.deepEqual(c.map((x) => [x.severity, x.a.cidr, x.b.cidr]), [['warning', '3 pod IPs', '100.64.0.0/10']]);
    assert.match(c[0]!.a.what, /^live pod IP \(kube-system\/coredns-1 100\.64\.3\.7, shop\/web-1 100\.64\.9\.12, shop\/web-2 100\.64\.9\.13\)$/);
    const report = inspect(eks);
    assert.equal(report.capacity.pods.podRangeKnown, false);
    const text = renderInspect(report, false);
    assert.match(text, /pod range unknown/);
    assert.doesNotMatch(text, /outside known pod ranges/);
    // A node's ExternalIP in CGNAT (outside the node network guessed from the InternalIPs) is one too.
    const tailnet = snapOf([...eksCustomNetworkingObjects(), node('ip-10-0-3-30', '10.0.3.30', undefined, '100.101.7.9')]);
    const n = findConflicts(tailnet).filter((x) => x.kind === 'live-address' && x.a.what.startsWith('live node address'));
    assert.deepEqual(n.map((x) => [x.a.cidr, x.a.what, x.b.cidr]), [['100.101.7.9', 'live node address (ip-10-0-3-30 100.101.7.9)', '100.64.0.0/10']]);
    // With a known pod range the count is printed as before.
    assert.match(renderInspect(inspect(snapOf(k3sObjects())), false), /0 IPs outside known pod ranges/);
  });

  it('a ClusterIP in the pod range and a pod IP in the service range, outside their own ranges, are errors', () => {
    const s = kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1'), svc('app', 'odd', '10.244.5.5')], {
      ranges: [
        { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
        { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
      ],
      pods: [{ namespace: 'shop', name: 'web-1', podIPs: ['10.96.7.7'], hostNetwork: false, phase: 'Running', labels: {} }],
    });
    const c = findConflicts(s).filter((x) => x.kind === 'live-address');
    assert.deepEqual(c.map((x) => [x.severity, x.a.cidr, x.b.cidr]), [['error', '10.244.5.5', '10.244.0.0/16'], ['error', '10.96.7.7', '10.96.0.0/16']]);
    assert.match(c[0]!.a.what, /app\/odd/);
    assert.match(c[1]!.a.what, /shop\/web-1/);
  });

  it('many collisions: ten are listed, each saying how many there are', () => {
    const objects: KubeObject[] = [node('n1', '192.168.1.5')];
    for (let i = 0; i < 15; i++) objects.push(service('shop', `s${i}`, `10.43.1.${i + 1}`), pod('shop', `p${i}`, `10.43.1.${i + 1}`, 'n1'));
    const col = findConflicts(snapOf(objects)).filter((x) => x.kind === 'live-collision');
    assert.equal(col.length, 10);
    assert.match(col[0]!.reason, /\(15 such addresses, 10 listed\)$/);
  });

  it('kOps legacy pool: the pod holding a ClusterIP is a collision naming both; kops-tailscale has no live findings (its ranges say it all)', async () => {
    const legacy = buildSnapshot(await readInventoryFiles([ex('kops-legacy-pool')]));
    const col = findConflicts(legacy).filter((x) => x.kind === 'live-collision');
    assert.equal(col.length, 1);
    assert.equal(col[0]!.a.cidr, '100.66.3.5');
    assert.equal(col[0]!.a.what, 'the ClusterIP of default/queue');
    assert.match(col[0]!.b.what, /^the IP of pod default\/worker-/);
    const kops = buildSnapshot(await readInventoryFiles([ex('kops-tailscale')]));
    assert.deepEqual(findConflicts(kops).filter((x) => x.kind.startsWith('live-')), []);
  });
});

describe('an unnamed service range is inferred from the ClusterIPs, or the plan fails before any write', () => {
  const EVIDENCE = 'inferred from default/kubernetes 10.43.0.1 and kube-system/kube-dns 10.43.0.10 and 2 other ClusterIPs; not read from the apiserver';

  it('k3s: the smallest CIDR starting at default/kubernetes that holds every ClusterIP, with its evidence', () => {
    const k3s = snapOf(k3sObjects());
    assert.deepEqual(k3s.serviceRangeInference, [{ family: 4, cidr: '10.43.0.0/16', evidence: EVIDENCE }]);
    assert.deepEqual(k3s.ranges.filter((r) => r.role === 'service'), [{ cidr: '10.43.0.0/16', role: 'service', source: EVIDENCE, label: 'Service CIDR (inferred)' }]);
    const small = snapOf(k3sObjects().filter((o) => !['metrics-server', 'web'].includes(o.metadata!.name!) || o.kind !== 'Service'));
    assert.deepEqual(small.serviceRangeInference?.map((i) => i.cidr), ['10.43.0.0/28']);
  });

  it('not inferred: a configured range, no default/kubernetes, nothing besides it, or ClusterIPs no such CIDR holds', () => {
    const configured = snapOf([...k3sObjects(), {
      apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.43.0.0/16'] },
    }]);
    assert.equal(configured.serviceRangeInference, undefined);
    assert.deepEqual(configured.ranges.filter((r) => r.role === 'service').map((r) => r.source), ['ServiceCIDR/kubernetes']);
    const cases: Array<[KubeObject[], RegExp]> = [
      [withoutName(k3sObjects(), 'kubernetes'), /default\/kubernetes has no IPv4 ClusterIP in the input/],
      [[service('default', 'kubernetes', '10.43.0.1', {})], /default\/kubernetes 10\.43\.0\.1 is the only IPv4 ClusterIP/],
      [[...k3sObjects(), service('x', 'below', '10.42.255.1')], /fit no CIDR that starts at default\/kubernetes 10\.43\.0\.1/],
      [[...k3sObjects(), service('x', 'far', '10.200.0.1')], /apiserver accepts \(\/12 at most\)/],
    ];
    for (const [objects, why] of cases) {
      const s = snapOf(objects);
      assert.equal(s.ranges.filter((r) => r.role === 'service').length, 0);
      assert.equal(s.serviceRangeInference?.length, 1);
      assert.equal(s.serviceRangeInference![0]!.cidr, undefined);
      assert.match(s.serviceRangeInference![0]!.evidence, why);
    }
  });

  it('an inferred range: pre-flight warns with the evidence, the plan marks it, and the DNS Service keeps its offset', () => {
    for (const objects of [k3sObjects(), k3sObjects().filter((o) => o.kind !== 'Service' || ['kubernetes', 'kube-dns'].includes(o.metadata!.name!))]) {
      const plan = buildServicePlan(snapOf(objects), { target: '10.100.0.0/16' });
      const w = plan.preflight.find((c) => c.id === 'service-range')!;
      assert.equal(w.status, 'warn');
      assert.match(w.message, /inferred from default\/kubernetes 10\.43\.0\.1 and kube-system\/kube-dns 10\.43\.0\.10.*not read from the apiserver/);
      assert.equal(plan.spec.serviceCIDR.inferred?.length, 1);
      assert.deepEqual(plan.spec.serviceCIDR.from, plan.spec.serviceCIDR.inferred!.map((i) => i.cidr));
      const dns = plan.mapping.find((m) => m.isDNS)!;
      assert.deepEqual([dns.from, dns.to], [['10.43.0.10'], ['10.100.0.10']]);
      assert.ok(plan.steps.length > 0);
      assert.deepEqual(refusals(plan.preflight), []);
    }
  });

  it('an unknown range: pre-flight fails, nothing is mapped or stepped, and nothing names an empty range', () => {
    const s = snapOf(withoutName(k3sObjects(), 'kubernetes'));
    const checks = runPreflight(s, { target: '10.100.0.0/16' });
    const fail = checks.find((c) => c.id === 'service-range')!;
    assert.equal(fail.status, 'fail');
    assert.match(fail.message, /the current service range is unknown: .*default\/kubernetes has no IPv4 ClusterIP/);
    assert.equal(fail.target, true, 'a refusal: no plan is printed (exit 2), since apply could not accept one without a range');
    const plan = buildMigrationPlan(s, { service: { target: '10.100.0.0/16' } });
    assert.equal(plan.spec.serviceCIDR, undefined);
    assert.deepEqual([plan.mapping, plan.steps], [[], []]);
    assert.ok(plan.preflight.some((c) => c.id === 'service-range' && c.status === 'fail'));
    const text = JSON.stringify(plan);
    assert.doesNotMatch(text, /service-cluster-ip-range=(\s|"|,|$)/);
    assert.doesNotMatch(text, /"from":\[\]/);
    // Combined with a Pod CIDR move: still no step at all.
    const both = buildMigrationPlan(s, { service: { target: '10.100.0.0/16' }, pod: { target: '10.60.0.0/16', ipam: 'node' } });
    assert.deepEqual(both.steps, []);
  });

  it('plan on the CLI: inferred → exit 0 with the warning; unknown → exit 2 naming the check, no plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-live-'));
    try {
      writeFileSync(join(dir, 'k3s.json'), listJson(k3sObjects()));
      writeFileSync(join(dir, 'nokube.json'), listJson(withoutName(k3sObjects(), 'kubernetes')));
      const ok = await run(['plan', '--service-cidr', '10.100.0.0/16', '-f', join(dir, 'k3s.json')]);
      assert.equal(ok.code, 0, ok.err);
      assert.match(ok.out, /WARN\s+service-range\s+the current service range 10\.43\.0\.0\/16 is inferred from/);
      const bad = await run(['plan', '--service-cidr', '10.100.0.0/16', '-f', join(dir, 'nokube.json'), '-o', 'yaml']);
      assert.equal(bad.code, 2, bad.err);
      assert.match(bad.err, /^error: --service-cidr 10\.100\.0\.0\/16 refused: the current service range is unknown/);
      assert.equal(bad.out, '');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the DNS Service: the kubelets\', else a well-known identity; unknown while Services move → pre-flight fails', () => {
  const openshift = [
    service('default', 'kubernetes', '172.30.0.1', {}),
    service('openshift-dns', 'dns-default', '172.30.0.10', { 'dns.operator.openshift.io/daemonset-dns': 'default' }),
    service('shop', 'web', '172.30.88.1'),
  ];

  it('a platform adds its own candidate; the default list is kube-system kube-dns/coredns selecting k8s-app=kube-dns', () => {
    assert.deepEqual(DNS_SERVICE_CANDIDATES.map((c) => `${c.namespace}/${c.name ?? '*'}`), ['kube-system/kube-dns', 'kube-system/coredns', 'kube-system/*']);
    assert.equal(snapOf(openshift).dnsService, undefined);
    const s = snapOf(openshift, {
      dnsServiceCandidates: [...DNS_SERVICE_CANDIDATES, { namespace: 'openshift-dns', name: 'dns-default', selector: { 'dns.operator.openshift.io/daemonset-dns': 'default' } }],
    });
    assert.deepEqual(s.dnsService, {
      namespace: 'openshift-dns', name: 'dns-default', clusterIPs: ['172.30.0.10'], foundBy: 'selector dns.operator.openshift.io/daemonset-dns=default',
    });
    // Its offset is kept in the inferred range like kube-dns's.
    const plan = buildServicePlan(s, { target: '10.200.0.0/16' });
    assert.deepEqual(plan.mapping.find((m) => m.isDNS)?.to, ['10.200.0.10']);
    assert.equal(plan.preflight.find((c) => c.id === 'cluster-dns')?.status, 'pass');
  });

  it('a plan that moves Services without knowing the DNS Service fails pre-flight (it would be moved like any Service)', async () => {
    const plan = buildServicePlan(snapOf(openshift), { target: '10.200.0.0/16' });
    const c = plan.preflight.find((x) => x.id === 'cluster-dns')!;
    assert.equal(c.status, 'fail');
    assert.match(c.message, /cluster DNS Service not found .*the plan moves 2 Service\(s\)/);
    assert.ok(!plan.steps.some((st) => st.id === 'kubelet-cluster-dns'), 'no DNS gate could be planned');
    const dir = mkdtempSync(join(tmpdir(), 'kr-live-'));
    try {
      writeFileSync(join(dir, 'os.json'), listJson(openshift));
      const r = await run(['plan', '--service-cidr', '10.200.0.0/16', '-f', join(dir, 'os.json')]);
      assert.equal(r.code, 1);
      assert.match(r.err, /pre-flight check\(s\) failed \(cluster-dns\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
