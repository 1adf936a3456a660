// LoadBalancer Services in the new range (--load-balancers move): which platform keeps each external address across
// a re-creation, read from the annotations each platform documents (cited in docs/platforms.md, "LoadBalancer
// Services"), and the plan's steps and gates.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildServicePlan, type MigrationPlan } from '../../src/plan/plan.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import { externalDNSNames, loadBalancerAddress } from '../../src/plan/load-balancers.ts';
import { externalAddresses, loadBalancerEndProblems, loadBalancerMoved, missingAddresses, pinned } from '../../src/engine/load-balancers.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

const lb = (name: string, over: Parameters<typeof svc>[3] = {}) => svc('web', name, '10.96.7.7', { type: 'LoadBalancer', ...over });

describe('loadBalancerAddress: who keeps the external address across a re-creation', () => {
  it('MetalLB: a Service it assigned (metallb.io/ip-allocated-from-pool) is pinned with metallb.io/loadBalancerIPs', () => {
    const a = loadBalancerAddress(lb('a', { loadBalancerIPs: ['192.0.2.10'], annotations: { 'metallb.io/ip-allocated-from-pool': 'pool' } }));
    assert.equal(a.keeper, 'metallb');
    assert.deepEqual(a.pin, { 'metallb.io/loadBalancerIPs': '192.0.2.10' });
    assert.deepEqual(a.kept, ['192.0.2.10']);
    assert.deepEqual(a.changes, []);
  });
  it('MetalLB dual-stack: both addresses in one comma-separated annotation; the older metallb.universe.tf pool annotation is read too', () => {
    const a = loadBalancerAddress(lb('a', { loadBalancerIPs: ['192.0.2.10', '2001:db8::10'], annotations: { 'metallb.universe.tf/ip-allocated-from-pool': 'pool' } }));
    assert.deepEqual(a.pin, { 'metallb.io/loadBalancerIPs': '192.0.2.10,2001:db8::10' });
  });
  it('MetalLB: an address already requested by annotation (either prefix) needs no pin', () => {
    for (const k of ['metallb.io/loadBalancerIPs', 'metallb.universe.tf/loadBalancerIPs']) {
      const a = loadBalancerAddress(lb('a', { loadBalancerIPs: ['192.0.2.10'], annotations: { [k]: '192.0.2.10', 'metallb.io/ip-allocated-from-pool': 'p' } }));
      assert.equal(a.keeper, 'metallb-annotation', k);
      assert.equal(a.pin, undefined, k);
      assert.deepEqual(a.changes, []);
    }
  });
  it('spec.loadBalancerIP is asked for again, never pinned twice (MetalLB refuses the annotation and the field together)', () => {
    const a = loadBalancerAddress(lb('a', { loadBalancerIP: '203.0.113.5', loadBalancerIPs: ['203.0.113.5'], annotations: { 'metallb.io/ip-allocated-from-pool': 'p' } }));
    assert.equal(a.keeper, 'spec.loadBalancerIP');
    assert.equal(a.pin, undefined);
    assert.deepEqual(a.changes, []);
  });
  it('GKE: networking.gke.io/load-balancer-ip-addresses names reserved static addresses', () => {
    const a = loadBalancerAddress(lb('a', { loadBalancerIPs: ['34.1.2.3'], annotations: { 'networking.gke.io/load-balancer-ip-addresses': 'web-ipv4' } }));
    assert.equal(a.keeper, 'gke-static');
    assert.deepEqual(a.changes, []);
  });
  it('Azure: azure-load-balancer-ipv4/ipv6 and azure-pip-name keep the public IP', () => {
    for (const k of ['service.beta.kubernetes.io/azure-load-balancer-ipv4', 'service.beta.kubernetes.io/azure-load-balancer-ipv6', 'service.beta.kubernetes.io/azure-pip-name', 'service.beta.kubernetes.io/azure-pip-name-ipv6']) {
      const a = loadBalancerAddress(lb('a', { loadBalancerIPs: ['20.1.2.3'], annotations: { [k]: 'x' } }));
      assert.equal(a.keeper, 'azure-static', k);
      assert.deepEqual(a.changes, [], k);
    }
  });
  it('AWS: Elastic IP allocations keep the NLB addresses; its DNS name changes', () => {
    const a = loadBalancerAddress(lb('a', {
      loadBalancerIPs: [], loadBalancerHostnames: ['k8s-web-a-123.elb.us-east-1.amazonaws.com'],
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-eip-allocations': 'eipalloc-1,eipalloc-2', 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb', 'external-dns.alpha.kubernetes.io/hostname': 'web.example.com' },
    }));
    assert.equal(a.keeper, 'aws-eip');
    assert.deepEqual(a.changes, ['k8s-web-a-123.elb.us-east-1.amazonaws.com']);
    assert.deepEqual(a.dnsNames, ['web.example.com']);
    assert.match(a.note, /eipalloc-1, eipalloc-2/);
  });
  it('Tailscale operator: the MagicDNS name is pinned by tailscale.com/hostname, the tailnet IPs change', () => {
    const a = loadBalancerAddress(lb('a', { loadBalancerClass: 'tailscale', loadBalancerIPs: ['100.100.1.2'], loadBalancerHostnames: ['web-a.tailnet-x.ts.net'] }));
    assert.equal(a.keeper, 'tailscale-hostname');
    assert.deepEqual(a.pin, { 'tailscale.com/hostname': 'web-a' });
    assert.deepEqual(a.kept, ['web-a.tailnet-x.ts.net']);
    assert.deepEqual(a.changes, ['100.100.1.2']);
    const given = loadBalancerAddress(lb('a', { loadBalancerClass: 'tailscale', annotations: { 'tailscale.com/hostname': 'shop' }, loadBalancerIPs: [] }));
    assert.equal(given.pin, undefined);
  });
  it('no platform keeps it: every address changes, and the external-dns records (both prefixes) are named', () => {
    const a = loadBalancerAddress(lb('a', {
      loadBalancerIPs: ['198.51.100.7'],
      annotations: { 'external-dns.alpha.kubernetes.io/hostname': 'a.example.com, b.example.com', 'external-dns.kubernetes.io/internal-hostname': 'a.internal.example.com' },
    }));
    assert.equal(a.keeper, 'none');
    assert.deepEqual(a.changes, ['198.51.100.7']);
    assert.deepEqual(a.dnsNames, ['a.example.com', 'b.example.com', 'a.internal.example.com']);
    assert.match(a.note, /198\.51\.100\.7 will change and the DNS records a\.example\.com/);
  });
  it('externalDNSNames deduplicates', () => {
    assert.deepEqual(externalDNSNames({ 'external-dns.alpha.kubernetes.io/hostname': 'x.io', 'external-dns.kubernetes.io/hostname': 'x.io' }), ['x.io']);
  });
});

const SERVICES = [
  svc('default', 'kubernetes', '10.96.0.1'),
  svc('kube-system', 'kube-dns', '10.96.0.10'),
  svc('web', 'app', '10.96.1.1'),
  lb('kept-ip', { loadBalancerIPs: ['192.0.2.10'], annotations: { 'metallb.io/ip-allocated-from-pool': 'pool' } }),
  svc('web', 'ephemeral', '10.96.7.8', { type: 'LoadBalancer', loadBalancerIPs: ['198.51.100.7'], annotations: { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' } }),
];

describe('plan --load-balancers', () => {
  it('keep (default): LoadBalancer Services keep their ClusterIPs under kept ServiceCIDRs, no LoadBalancer step', () => {
    const p = buildServicePlan(kubeadmSnapshot(SERVICES), { target: '172.24.0.0/16' });
    assert.deepEqual(p.mapping.filter((m) => m.type === 'LoadBalancer').map((m) => m.action), ['keep', 'keep']);
    assert.ok(p.spec.serviceCIDR.kept.length > 0);
    assert.equal(p.spec.options.loadBalancers, undefined);
    assert.ok(!p.steps.some((s) => s.kind === 'move-load-balancers'));
  });
  it('move: no kept ServiceCIDR; one step per LoadBalancer Service, a gate before the one whose address changes; bridges removed later', () => {
    const p = buildServicePlan(kubeadmSnapshot(SERVICES), { target: '172.24.0.0/16', loadBalancers: 'move' });
    assert.equal(p.spec.options.loadBalancers, 'move');
    assert.deepEqual(p.spec.serviceCIDR.kept, []);
    assert.ok(!p.steps.some((s) => s.id === 'create-kept-servicecidrs'));
    assert.deepEqual(p.mapping.filter((m) => m.type === 'LoadBalancer').map((m) => [m.name, m.action]), [['ephemeral', 'move'], ['kept-ip', 'move']]);
    const ids = p.steps.map((s) => s.id);
    const lbSteps = p.steps.filter((s) => s.kind === 'move-load-balancers' || (s.kind === 'gate' && s.gate.condition === 'load-balancer-address'));
    assert.deepEqual(lbSteps.map((s) => s.id), ['load-balancer-1-address', 'move-load-balancer-1', 'move-load-balancer-2']);
    // the tier moves never carry a LoadBalancer Service
    assert.ok(!p.steps.filter((s) => s.kind === 'move-services').flatMap((s) => s.items ?? []).some((i) => i.name === 'kept-ip' || i.name === 'ephemeral'));
    const gate = p.steps.find((s) => s.id === 'load-balancer-1-address')!;
    assert.equal(gate.kind, 'gate');
    if (gate.kind === 'gate') {
      assert.match(gate.gate.reason, /198\.51\.100\.7/);
      assert.match(gate.gate.reason, /shop\.example\.com/);
      assert.ok(gate.gate.instructions.some((i) => i.includes('--ack-gate load-balancer-1-address')));
    }
    const pinnedItem = p.steps.find((s) => s.id === 'move-load-balancer-2')!.items![0]!;
    assert.deepEqual(pinnedItem.loadBalancer?.pin, { 'metallb.io/loadBalancerIPs': '192.0.2.10' });
    assert.equal(pinnedItem.bridge, 'kept-ip-kr-old');
    // before the apiservers' gate and the drain; their bridges are removed with the others, and supersede the moves
    assert.ok(ids.indexOf('move-load-balancer-2') < ids.indexOf('drain-old-servicecidrs'));
    const rb = p.steps.find((s) => s.kind === 'remove-bridges')!;
    assert.ok(rb.items!.some((i) => i.name === 'kept-ip-kr-old'));
    assert.deepEqual(p.steps.find((s) => s.id === 'move-load-balancer-2')!.supersededBy, ['remove-bridges']);
    const c = p.preflight.find((x) => x.id === 'load-balancers')!;
    assert.equal(c.status, 'warn');
    assert.match(c.message, /web\/kept-ip: MetalLB assigns 192\.0\.2\.10 again/);
    assert.match(c.fix, /web\/ephemeral \(198\.51\.100\.7; DNS shop\.example\.com\)/);
  });
  it('move: the plan survives its YAML round trip (validator accepts the loadBalancer items and the option)', () => {
    const p = buildServicePlan(kubeadmSnapshot(SERVICES), { target: '172.24.0.0/16', loadBalancers: 'move' });
    const back: MigrationPlan = planFromYaml(planToYaml(p));
    assert.deepEqual(back.steps.find((s) => s.id === 'move-load-balancer-2')!.items![0]!.loadBalancer, p.steps.find((s) => s.id === 'move-load-balancer-2')!.items![0]!.loadBalancer);
    const broken = planToYaml(p).replace('keeper: metallb', 'keeper: [1]');
    assert.throws(() => planFromYaml(broken), /loadBalancer\.keeper/);
  });
});

describe('engine decisions of a LoadBalancer move', () => {
  const it0 = { namespace: 'web', name: 'a', from: ['10.96.7.7'], to: ['172.24.7.7'], bridge: 'a-kr-old', loadBalancer: { keeper: 'metallb', kept: ['192.0.2.10'], changes: [], pin: { 'metallb.io/loadBalancerIPs': '192.0.2.10' } } };
  const at = (ip: string, ingress: string[] = []) => ({ metadata: { name: 'a', namespace: 'web' }, spec: { type: 'LoadBalancer', clusterIP: ip, clusterIPs: [ip] }, status: { loadBalancer: { ingress: ingress.map((x) => ({ ip: x })) } } });
  const bridge = { metadata: { name: 'a-kr-old', namespace: 'web' }, spec: { type: 'ClusterIP', clusterIP: '10.96.7.7', clusterIPs: ['10.96.7.7'] } };
  it('moved only at the new ClusterIP, with its bridge, and with its kept external address shown again', () => {
    assert.equal(loadBalancerMoved(it0, at('172.24.7.7', ['192.0.2.10']), bridge), true);
    assert.equal(loadBalancerMoved(it0, at('172.24.7.7', []), bridge), false, 'address not assigned yet');
    assert.equal(loadBalancerMoved(it0, at('172.24.7.7', ['192.0.2.11']), bridge), false, 'another address');
    assert.equal(loadBalancerMoved(it0, at('10.96.7.7', ['192.0.2.10']), bridge), false);
    assert.equal(loadBalancerMoved(it0, at('172.24.7.7', ['192.0.2.10']), undefined), false, 'bridge missing');
    assert.deepEqual(missingAddresses(it0.loadBalancer, at('172.24.7.7', [])), ['192.0.2.10']);
  });
  it('the re-created Service is its backup plus the pin annotations', () => {
    const orig = { metadata: { name: 'a', namespace: 'web', annotations: { keep: 'me' } }, spec: {} };
    assert.deepEqual(pinned(orig, it0.loadBalancer).metadata?.annotations, { keep: 'me', 'metallb.io/loadBalancerIPs': '192.0.2.10' });
    assert.equal(pinned(orig, { keeper: 'none', kept: [], changes: [] }), orig);
  });
  it('verify names a moved LoadBalancer Service that lost its kept external address', () => {
    const steps = [{ id: 'move-load-balancer-1', kind: 'move-load-balancers' as const, description: '', rollback: '', items: [it0] }];
    assert.deepEqual(loadBalancerEndProblems(steps, [at('172.24.7.7', ['192.0.2.10'])]), []);
    assert.deepEqual(loadBalancerEndProblems(steps, [at('172.24.7.7', ['192.0.2.11'])]), ['LoadBalancer Service web/a does not show its external address 192.0.2.10']);
  });
  it('externalAddresses reads IPs and hostnames, normalised', () => {
    assert.deepEqual(externalAddresses({ status: { loadBalancer: { ingress: [{ ip: '2001:DB8::1' }, { hostname: 'x.example.com' }] } } }), ['2001:db8::1', 'x.example.com']);
  });
});
