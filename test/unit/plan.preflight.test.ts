import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServiceInfo, Snapshot } from '../../src/cluster/types.ts';
import { buildServicePlan } from '../../src/plan/plan.ts';
import { refusals, runPreflight, type PreflightCheck } from '../../src/plan/preflight.ts';

install();

function svc(ns: string, name: string, ips: string | string[], over: Partial<ServiceInfo> = {}): ServiceInfo {
  const list = typeof ips === 'string' ? [ips] : ips;
  return {
    namespace: ns, name, type: 'ClusterIP', clusterIPs: list, headless: false, ports: [{ port: 80 }],
    loadBalancerIPs: [], loadBalancerSourceRanges: [], externalIPs: [], labels: {}, annotations: {}, ...over,
  };
}

const SERVICES = [
  svc('default', 'kubernetes', '10.96.0.1'),
  svc('kube-system', 'kube-dns', '10.96.0.10'),
  svc('app', 'web', '10.96.4.20'),
];

function snapshot(over: Partial<Snapshot> = {}): Snapshot {
  return {
    source: { kind: 'file', files: ['test'] },
    kubernetesVersion: 'v1.33.4',
    serviceCIDRApi: 'v1',
    platform: { kind: 'kubeadm', title: 'kubeadm', evidence: [], reserved: [] },
    cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: false, evidence: [] },
    ranges: [
      { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
      { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
      { cidr: '192.168.10.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' },
    ],
    serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/16'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
    kubernetesServiceIPs: ['10.96.0.1'],
    dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'], foundBy: 'kubelet clusterDNS' },
    clusterDNS: ['10.96.0.10'],
    apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16'], admissionPlugins: ['NodeRestriction'] }],
    controllerManagers: [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16'], serviceClusterIPRange: ['10.96.0.0/16'] }],
    kubeadm: { serviceSubnet: ['10.96.0.0/16'], podSubnet: ['10.244.0.0/16'], kubeletClusterDNS: ['10.96.0.10'] },
    nodes: [{ name: 'cp1', podCIDRs: ['10.244.0.0/24'], internalIPs: ['192.168.10.11'], externalIPs: [], labels: {}, unschedulable: false }],
    services: SERVICES,
    pods: [], pools: [], blocks: [], blockAffinities: [], warnings: [],
    ...over,
  };
}

const check = (cs: PreflightCheck[], id: string) => {
  const c = cs.find((x) => x.id === id);
  assert.ok(c, `no check ${id} in ${cs.map((x) => x.id).join(', ')}`);
  return c!;
};
const run = (over: Partial<Snapshot> = {}, opts: Partial<Parameters<typeof runPreflight>[1]> = {}) =>
  runPreflight(snapshot(over), { target: '172.24.0.0/16', ...opts });

describe('preflight: the target', () => {
  it('passes for a free range of the right family and size', () => {
    const cs = run();
    for (const id of ['target-parse', 'target-family', 'target-conflicts', 'target-size']) assert.equal(check(cs, id).status, 'pass', id);
    assert.deepEqual(refusals(cs), []);
  });

  it('refuses a CIDR that does not parse, with no other checks', () => {
    const cs = run({}, { target: '172.24.0.0/33' });
    assert.equal(check(cs, 'target-parse').status, 'fail');
    assert.equal(refusals(cs).length, 1);
    assert.equal(cs.length, 1);
  });

  it('refuses a family the cluster does not use', () => {
    const cs = run({}, { target: 'fd00:99::/108' });
    assert.equal(check(cs, 'target-family').status, 'fail');
    assert.match(check(cs, 'target-family').message, /adds IPv6/);
  });

  it('refuses overlaps and names the conflicting range: current service range, pod range, node network, catalog, --avoid', () => {
    const cases: Array<[string, RegExp, object?]> = [
      ['10.96.128.0/17', /overlaps 10\.96\.0\.0\/16 \(the current service range/],
      ['10.244.0.0/18', /overlaps 10\.244\.0\.0\/16 \(pod range/],
      ['192.168.0.0/16', /overlaps 192\.168\.10\.0\/24 \(node network/],
      ['172.17.0.0/16', /overlaps 172\.17\.0\.0\/16 \(Docker default bridge/],
      ['100.64.0.0/16', /CGNAT \/ Tailscale/],
      ['172.24.0.0/16', /avoided range \(--avoid\): the VPN/, { avoid: [{ cidr: '172.24.0.0/14', reason: 'the VPN', from: '--avoid' }] }],
    ];
    for (const [target, re, extra] of cases) {
      const cs = run({}, { target, ...(extra ?? {}) });
      const c = check(cs, 'target-conflicts');
      assert.equal(c.status, 'fail', target);
      assert.match(c.message, re, target);
      assert.equal(c.target, true);
      assert.ok(refusals(cs).includes(c));
    }
  });

  it('warns (does not refuse) on a tool default such as kubeadm\'s 10.96.0.0/12', () => {
    const cs = run({
      ranges: [{ cidr: '10.200.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'x' }],
      services: [svc('a', 'x', '10.200.0.5')], kubernetesServiceIPs: [], dnsService: undefined,
    }, { target: '10.100.0.0/16' });
    assert.equal(check(cs, 'target-defaults').status, 'warn');
    assert.equal(check(cs, 'target-conflicts').status, 'pass');
    assert.deepEqual(refusals(cs), []);
  });

  it('refuses a range too small for today\'s Services times the headroom, or larger than the apiserver accepts', () => {
    const many = Array.from({ length: 20 }, (_, i) => svc('a', `s${i}`, `10.96.1.${i + 1}`));
    const small = run({ services: [...SERVICES, ...many] }, { target: '172.24.0.0/27' });
    assert.equal(check(small, 'target-size').status, 'fail');
    assert.match(check(small, 'target-size').message, /for 23 Service IPs \(x2 headroom = 46\)/);
    assert.equal(check(run({ services: [...SERVICES, ...many] }, { target: '172.24.0.0/27', headroom: 1 }), 'target-size').status, 'pass');
    const big = run({}, { target: '172.0.0.0/11' });
    assert.equal(check(big, 'target-size').status, 'fail');
    assert.match(check(big, 'target-size').message, /larger than the apiserver accepts/);
  });
});

describe('preflight: the ServiceCIDR API', () => {
  it('passes when served', () => {
    assert.equal(check(run(), 'servicecidr-api').status, 'pass');
  });
  it('1.29–1.32 without the API: warns and the plan opens with a gate enabling it', () => {
    for (const [v, gv] of [['v1.31.2', 'v1beta1'], ['v1.29.0', 'v1alpha1']] as const) {
      const over = { kubernetesVersion: v, serviceCIDRApi: null, serviceCIDRs: [] };
      const c = check(run(over), 'servicecidr-api');
      assert.equal(c.status, 'warn', v);
      assert.match(c.message, new RegExp(`networking\\.k8s\\.io/${gv}`));
      const plan = buildServicePlan(snapshot(over), { target: '172.24.0.0/16' });
      // the first step that changes or waits for anything (the consent to restart pods may come before it)
      const first = plan.steps.find((s) => s.kind !== 'confirm')!;
      assert.equal(first.id, 'enable-servicecidr-api');
      assert.equal(first.kind, 'gate');
      assert.match(first.gate!.patches!.map((p) => p.after).join('\n'), new RegExp(`feature-gates=MultiCIDRServiceAllocator=true[\\s\\S]*runtime-config=networking\\.k8s\\.io/${gv}=true`));
      assert.equal(plan.spec.serviceCIDR.apiVersion, `networking.k8s.io/${gv}`);
    }
  });
  it('older than 1.29: fails, explains the RangeAllocation situation, and plans no steps', () => {
    const over = { kubernetesVersion: 'v1.28.9', serviceCIDRApi: null, serviceCIDRs: [] };
    const c = check(run(over), 'servicecidr-api');
    assert.equal(c.status, 'fail');
    assert.match(c.message, /RangeAllocation/);
    assert.match(c.fix, /upgrade to 1\.29/);
    assert.deepEqual(buildServicePlan(snapshot(over), { target: '172.24.0.0/16' }).steps, []);
  });
  it('offline on 1.33+: warns "not checked (offline)"', () => {
    const c = check(run({ serviceCIDRApi: undefined, serviceCIDRs: [] }), 'servicecidr-api');
    assert.equal(c.status, 'warn');
    assert.match(c.message, /not checked \(offline\)/);
  });
});

describe('preflight: the apiserver serving certificate', () => {
  it('not read → warn "not checked (offline)"', () => {
    const c = check(run(), 'apiserver-cert-san');
    assert.equal(c.status, 'warn');
    assert.match(c.message, /not checked \(offline\)/);
    assert.match(c.message, /172\.24\.0\.1/);
  });
  it('carries the new first IP → pass', () => {
    assert.equal(check(run({}, { apiserverCertSANs: ['10.96.0.1', '172.24.0.1', '192.168.10.11'] }), 'apiserver-cert-san').status, 'pass');
  });
  it('missing → fail, with the per-distribution fix', () => {
    const kubeadm = check(run({}, { apiserverCertSANs: ['10.96.0.1'] }), 'apiserver-cert-san');
    assert.equal(kubeadm.status, 'fail');
    assert.match(kubeadm.fix, /kubeadm init phase certs apiserver/);
    assert.match(kubeadm.fix, /172\.24\.0\.1,10\.96\.0\.1/);
    const kops = check(run({ platform: { kind: 'kops', title: 'kops', evidence: [], reserved: [] }, kubeadm: undefined, kops: { layout: 'networking', serviceClusterIPRange: '10.96.0.0/16' } }, { apiserverCertSANs: ['10.96.0.1'] }), 'apiserver-cert-san');
    assert.match(kops.fix, /spec\.api\.additionalSANs[\s\S]*kops rolling-update cluster --instance-group-roles=control-plane/);
    const generic = check(run({ platform: { kind: 'generic', title: 'generic', evidence: [], reserved: [] }, kubeadm: undefined }, { apiserverCertSANs: [] }), 'apiserver-cert-san');
    assert.match(generic.fix, /reissue the kube-apiserver serving certificate/);
  });
});

describe('preflight: admission, HA apiservers, --keep, DNS, kOps', () => {
  const deny = { apiservers: [{ pod: 'a', serviceClusterIPRange: ['10.96.0.0/16'], admissionPlugins: ['NodeRestriction', 'DenyServiceExternalIPs'] }] };
  const withExternal = { services: [...SERVICES, svc('app', 'ext', '10.96.4.30', { externalIPs: ['192.0.2.10'] })] };
  it('DenyServiceExternalIPs with recreate and a moved Service carrying externalIPs → fail', () => {
    const c = check(run({ ...deny, ...withExternal }, { strategy: 'recreate' }), 'admission');
    assert.equal(c.status, 'fail');
    assert.match(c.message, /app\/ext/);
  });
  it('DenyServiceExternalIPs with in-place, or no externalIPs → pass with a note', () => {
    assert.equal(check(run({ ...deny, ...withExternal }, { strategy: 'in-place' }), 'admission').status, 'pass');
    const c = check(run(deny, { strategy: 'recreate' }), 'admission');
    assert.equal(c.status, 'pass');
    assert.match(c.message, /DenyServiceExternalIPs is enabled; no step sets spec\.externalIPs/);
    assert.equal(check(run(), 'admission').status, 'pass');
  });
  it('HA apiservers that disagree on --service-cluster-ip-range → fail; agreeing → pass; none seen → warn', () => {
    const two = (b: string) => ({ apiservers: [{ pod: 'a', serviceClusterIPRange: ['10.96.0.0/16'] }, { pod: 'b', serviceClusterIPRange: [b] }] });
    const c = check(run(two('10.97.0.0/16')), 'apiservers-agree');
    assert.equal(c.status, 'fail');
    assert.match(c.message, /10\.96\.0\.0\/16 \(a\) vs 10\.97\.0\.0\/16 \(b\)/);
    assert.equal(check(run(two('10.96.0.0/16')), 'apiservers-agree').status, 'pass');
    assert.equal(check(run({ apiservers: [] }), 'apiservers-agree').status, 'warn');
  });
  it('--keep naming no Service → fail', () => {
    assert.equal(check(run({}, { keep: ['app/nope'] }), 'keep').status, 'fail');
    assert.equal(check(run({}, { keep: ['app/web'] }), 'keep').status, 'pass');
  });
  it('cluster DNS: found → pass with its new IP; not found while Services move → fail; not found, nothing moves → warn', () => {
    const c = check(run(), 'cluster-dns');
    assert.equal(c.status, 'pass');
    assert.match(c.message, /kube-system\/kube-dns at 10\.96\.0\.10 \(found by kubelet clusterDNS\) → 172\.24\.0\.10/);
    const lost = check(run({ dnsService: undefined }), 'cluster-dns');
    assert.equal(lost.status, 'fail');
    assert.match(lost.message, /the plan moves 2 Service\(s\).*no kubelet clusterDNS gate/);
    assert.equal(lost.target, undefined, 'a cluster finding, not a refusal of the target: the plan is printed for review');
    // Only default/kubernetes moves (it follows the apiserver flag): nothing else is moved, so nothing is lost.
    const onlyKube = check(run({ dnsService: undefined, services: [SERVICES[0]!] }), 'cluster-dns');
    assert.equal(onlyKube.status, 'warn');
  });
  it('kOps: NEW outside nonMasqueradeCIDR → warn with a proposal when one fits', () => {
    const kops = {
      platform: { kind: 'kops', title: 'kOps', evidence: [], reserved: [] }, kubeadm: undefined,
      kops: { layout: 'networking' as const, nonMasqueradeCIDR: '10.96.0.0/12', podCIDR: '10.100.0.0/16', serviceClusterIPRange: '10.96.0.0/16', networkCIDR: '172.20.0.0/16' },
      ranges: [
        { cidr: '10.96.0.0/16', role: 'service' as const, source: 'kOps serviceClusterIPRange', label: 'x' },
        { cidr: '10.100.0.0/16', role: 'pod' as const, source: 'kOps podCIDR', label: 'x' },
        { cidr: '172.20.0.0/16', role: 'node' as const, source: 'kOps networkCIDR', label: 'x' },
      ],
    };
    const c = check(run(kops, { target: '10.112.0.0/16' }), 'kops-non-masquerade');
    assert.equal(c.status, 'warn');
    assert.match(c.fix, /set nonMasqueradeCIDR to 10\.96\.0\.0\/11/);
  });
});
