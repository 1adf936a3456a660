import { install } from '../../src/install.ts';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildSnapshot } from '../../src/cluster/build.ts';
import type { KubeObject, Snapshot } from '../../src/cluster/types.ts';
import { addressTokens, parseAddressToken, reverseZone } from '../../src/cluster/reference-sources.ts';
import { renderReferences, scanReferences, type RangeMove, type Reference } from '../../src/analyze/references.ts';
import { slimReferenceObject } from '../../src/kube/discover.ts';
import { type Cidr, cidrFrom, formatCidr, overlaps, parseCidr } from '../../src/net/index.ts';

install();

function snap(objects: KubeObject[]): Snapshot {
  return buildSnapshot({ source: { kind: 'live' }, objects, configs: [], gaps: [] });
}

const POD: RangeMove = { role: 'pod', from: '10.244.0.0/16', to: '10.200.0.0/16' };
const SVC: RangeMove = { role: 'service', from: '10.96.0.0/12', to: '172.20.0.0/16' };

function netpol(name: string, spec: Record<string, unknown>, ns = 'default'): KubeObject {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec };
}
const ipBlock = (cidr: string, except?: string[]) => ({ ipBlock: except ? { cidr, except } : { cidr } });

function calico(kind: string, name: string, spec: Record<string, unknown>, apiVersion = 'crd.projectcalico.org/v1', ns?: string): KubeObject {
  return { apiVersion, kind, metadata: { name, ...(ns ? { namespace: ns } : {}) }, spec };
}

function ingress(name: string, annotations: Record<string, string>, ns = 'web'): KubeObject {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: ns, annotations }, spec: { rules: [] } };
}

function configMap(name: string, data: Record<string, string>, ns = 'kube-system'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data };
}

function service(name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}, ns = 'default'): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns, annotations }, spec };
}

/** The references as one line each: "severity role Kind ns/name field: value → proposed". */
function lines(refs: Reference[]): string[] {
  return refs.map((r) => `${r.severity} ${r.role} ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.field}: ${r.value} → ${r.proposed ?? '-'}`);
}

// ---------------------------------------------------------------- sources

describe('sources', () => {
  test('NetworkPolicy ipBlock.cidr and except, ingress and egress', () => {
    const s = snap([netpol('np', {
      ingress: [{ from: [{ podSelector: {} }, ipBlock('10.244.0.0/16', ['10.244.7.0/24'])] }],
      egress: [{ to: [ipBlock('0.0.0.0/0', ['10.244.0.0/16', '169.254.169.254/32'])] }],
    })]);
    assert.deepEqual(lines(scanReferences(s, [POD])), [
      'error pod NetworkPolicy default/np spec.ingress[0].from[1].ipBlock.cidr: 10.244.0.0/16 → 10.200.0.0/16',
      'error pod NetworkPolicy default/np spec.ingress[0].from[1].ipBlock.except: [10.244.7.0/24] → [10.200.7.0/24]',
      'error pod NetworkPolicy default/np spec.egress[0].to[0].ipBlock.except: [10.244.0.0/16, 169.254.169.254/32] → [10.244.0.0/16, 169.254.169.254/32, 10.200.0.0/16]',
    ]);
    const [peer, except, egress] = scanReferences(s, [POD]);
    assert.match(peer!.note, /add a second one with ipBlock\.cidr 10\.200\.0\.0\/16 \(its except entries moved likewise\); after it, only 10\.200\.0\.0\/16/);
    assert.match(except!.note, /new peer this except list/);
    assert.match(egress!.note, /no longer excluded.*During the move list both.*remove 10\.244\.0\.0\/16/);
  });

  test('a rule that already has a peer for the new range is not reported', () => {
    const s = snap([netpol('ready', {
      ingress: [{ from: [ipBlock('10.244.0.0/16', ['10.244.7.0/24']), ipBlock('10.200.0.0/16', ['10.200.7.0/24'])] }],
    })]);
    assert.deepEqual(scanReferences(s, [POD]), []);
    // …but another rule does not count
    const t = snap([netpol('other', { ingress: [{ from: [ipBlock('10.244.0.0/16')] }, { from: [ipBlock('10.200.0.0/16')] }] })]);
    assert.deepEqual(lines(scanReferences(t, [POD])), ['error pod NetworkPolicy default/other spec.ingress[0].from[0].ipBlock.cidr: 10.244.0.0/16 → 10.200.0.0/16']);
  });

  test('Calico NetworkPolicy and GlobalNetworkPolicy: nets and notNets, source and destination', () => {
    const s = snap([
      calico('GlobalNetworkPolicy', 'allow-cluster', {
        ingress: [{ action: 'Allow', source: { nets: ['10.244.0.0/16', '10.96.0.0/12'] } }],
        egress: [{ action: 'Allow', destination: { notNets: ['10.244.128.0/17'] } }],
      }),
      calico('NetworkPolicy', 'ns-pol', { ingress: [{ action: 'Allow', source: { nets: ['192.168.0.0/16'] }, destination: { nets: ['10.244.1.5/32'] } }] }, 'crd.projectcalico.org/v1', 'team'),
    ]);
    assert.deepEqual(lines(scanReferences(s, [POD, SVC])), [
      'error pod GlobalNetworkPolicy allow-cluster spec.ingress[0].source.nets: [10.244.0.0/16, 10.96.0.0/12] → [10.244.0.0/16, 10.96.0.0/12, 10.200.0.0/16, 172.20.0.0/16]',
      'error service GlobalNetworkPolicy allow-cluster spec.ingress[0].source.nets: [10.244.0.0/16, 10.96.0.0/12] → [10.244.0.0/16, 10.96.0.0/12, 10.200.0.0/16, 172.20.0.0/16]',
      'error pod GlobalNetworkPolicy allow-cluster spec.egress[0].destination.notNets: [10.244.128.0/17] → [10.244.128.0/17, 10.200.128.0/17]',
      'error pod NetworkPolicy team/ns-pol spec.ingress[0].destination.nets: [10.244.1.5/32] → [10.244.1.5/32, 10.200.1.5/32]',
    ]);
    const pod = scanReferences(s, [POD]).find((r) => r.name === 'ns-pol')!;
    assert.match(pod.note, /Pods get new addresses.*prefer selecting the pods by label/);
  });

  test('Calico objects seen through both APIs count once (the projectcalico.org/v3 view)', () => {
    const s = snap([
      calico('GlobalNetworkPolicy', 'g', { ingress: [{ source: { nets: ['10.244.0.0/16'] } }] }),
      calico('GlobalNetworkPolicy', 'g', { ingress: [{ source: { nets: ['10.244.0.0/16', '10.1.0.0/16'] } }] }, 'projectcalico.org/v3'),
      calico('GlobalNetworkSet', 'set', { nets: ['10.244.0.0/16'] }, 'projectcalico.org/v3'),
      calico('IPPool', 'p', { cidr: '10.244.0.0/16' }),
    ]);
    assert.deepEqual(lines(scanReferences(s, [POD])), [
      'error pod GlobalNetworkPolicy g spec.ingress[0].source.nets: [10.244.0.0/16, 10.1.0.0/16] → [10.244.0.0/16, 10.1.0.0/16, 10.200.0.0/16]',
      'error pod GlobalNetworkSet set spec.nets: [10.244.0.0/16] → [10.244.0.0/16, 10.200.0.0/16]',
    ]);
  });

  test('Service spec.loadBalancerSourceRanges and the source-ranges annotation', () => {
    const s = snap([
      service('lb', { type: 'LoadBalancer', loadBalancerSourceRanges: ['203.0.113.0/24', '10.244.0.0/16'] }),
      service('lb2', { type: 'LoadBalancer' }, { 'service.beta.kubernetes.io/load-balancer-source-ranges': '10.244.0.0/16,198.51.100.0/24' }),
      service('plain', { type: 'LoadBalancer', loadBalancerSourceRanges: ['203.0.113.0/24'] }),
    ]);
    assert.deepEqual(lines(scanReferences(s, [POD])), [
      'error pod Service default/lb spec.loadBalancerSourceRanges: [203.0.113.0/24, 10.244.0.0/16] → [203.0.113.0/24, 10.244.0.0/16, 10.200.0.0/16]',
      'error pod Service default/lb2 metadata.annotations["service.beta.kubernetes.io/load-balancer-source-ranges"]: 10.244.0.0/16,198.51.100.0/24 → 10.244.0.0/16,198.51.100.0/24,10.200.0.0/16',
    ]);
    assert.match(scanReferences(s, [POD])[0]!.note, /clients from 10\.200\.0\.0\/16 are refused/);
  });

  test('Ingress allow- and deny-list annotations (separators kept), other annotations as text, last-applied skipped', () => {
    const s = snap([
      ingress('nginx', { 'nginx.ingress.kubernetes.io/whitelist-source-range': '192.168.0.0/16, 10.244.0.0/16' }),
      ingress('nginx2', { 'nginx.ingress.kubernetes.io/allowlist-source-range': '10.244.3.7', 'nginx.ingress.kubernetes.io/denylist-source-range': '10.244.9.0/24' }),
      ingress('haproxy', { 'haproxy.org/allow-list': '10.0.0.0/8,10.244.0.0/16' }),
      ingress('traefik', { 'ingress.kubernetes.io/whitelist-source-range': '10.96.0.0/12' }),
      ingress('other', {
        'external-dns.alpha.kubernetes.io/target': '10.96.0.50',
        'kubectl.kubernetes.io/last-applied-configuration': '{"metadata":{"annotations":{"x":"10.244.0.1"}}}',
      }),
    ]);
    assert.deepEqual(lines(scanReferences(s, [POD, SVC])), [
      'error pod Ingress web/nginx metadata.annotations["nginx.ingress.kubernetes.io/whitelist-source-range"]: 192.168.0.0/16, 10.244.0.0/16 → 192.168.0.0/16, 10.244.0.0/16, 10.200.0.0/16',
      'error pod Ingress web/nginx2 metadata.annotations["nginx.ingress.kubernetes.io/allowlist-source-range"]: 10.244.3.7 → 10.244.3.7,10.200.3.7',
      'error pod Ingress web/nginx2 metadata.annotations["nginx.ingress.kubernetes.io/denylist-source-range"]: 10.244.9.0/24 → 10.244.9.0/24,10.200.9.0/24',
      'error service Ingress web/traefik metadata.annotations["ingress.kubernetes.io/whitelist-source-range"]: 10.96.0.0/12 → 10.96.0.0/12,172.20.0.0/16',
      'warning service Ingress web/haproxy metadata.annotations["haproxy.org/allow-list"]: 10.0.0.0/8,10.244.0.0/16 → -',
      'warning service Ingress web/other metadata.annotations["external-dns.alpha.kubernetes.io/target"]: 10.96.0.50 → 172.20.0.50',
    ], 'haproxy: 10.0.0.0/8 covers the new pod range; it holds the old Service range among others, so it is only to review');
  });

  test('kube-proxy clusterCIDR: the new range afterwards, a common supernet during the move', () => {
    const s = snap([configMap('kube-proxy', { 'config.conf': 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16,fd00:10:244::/56\nmode: iptables\n' })]);
    const refs = scanReferences(s, [POD]);
    assert.deepEqual(lines(refs), ['error pod ConfigMap kube-system/kube-proxy data["config.conf"].clusterCIDR: 10.244.0.0/16,fd00:10:244::/56 → 10.200.0.0/16,fd00:10:244::/56']);
    assert.match(refs[0]!.note, /one CIDR per family: during the move it must cover both ranges \(e\.g\. 10\.192\.0\.0\/10.*only 10\.200\.0\.0\/16 after it/);
    // the text scan does not report clusterCIDR a second time
    assert.equal(s.referenceSources!.filter((r) => r.name === 'kube-proxy').length, 1);
    // a supernet that already covers the new range keeps working
    const wide = snap([configMap('kube-proxy', { 'config.conf': 'clusterCIDR: 10.0.0.0/8\n' })]);
    assert.deepEqual(scanReferences(wide, [POD]), []);
    // a supernet that does not: the new range afterwards
    const narrowSuper = snap([configMap('kube-proxy', { 'config.conf': 'clusterCIDR: 10.244.0.0/15\n' })]);
    assert.deepEqual(lines(scanReferences(narrowSuper, [POD])), ['error pod ConfigMap kube-system/kube-proxy data["config.conf"].clusterCIDR: 10.244.0.0/15 → 10.200.0.0/16']);
  });

  test('ip-masq-agent nonMasqueradeCIDRs (YAML and JSON): both during the move', () => {
    for (const text of ['nonMasqueradeCIDRs:\n  - 10.244.0.0/16\n  - 10.96.0.0/12\nmasqLinkLocal: false\n', '{"nonMasqueradeCIDRs": ["10.244.0.0/16", "10.96.0.0/12"], "resyncInterval": "60s"}']) {
      const s = snap([configMap('ip-masq-agent', { config: text })]);
      const refs = scanReferences(s, [POD]);
      assert.deepEqual(lines(refs), ['error pod ConfigMap kube-system/ip-masq-agent data["config"].nonMasqueradeCIDRs: [10.244.0.0/16, 10.96.0.0/12] → [10.244.0.0/16, 10.96.0.0/12, 10.200.0.0/16]']);
      assert.match(refs[0]!.note, /masquerades \(SNATs\) traffic to 10\.200\.0\.0\/16/);
    }
  });

  test('CoreDNS Corefile: addresses are errors, zones warnings; any kube-system ConfigMap text is a warning; other namespaces\' text by the ConfigMap source', () => {
    const s = snap([
      configMap('coredns', { Corefile: '.:53 {\n    kubernetes cluster.local 244.10.in-addr.arpa 10.96.0.0/12 {\n       pods insecure\n    }\n    forward . /etc/resolv.conf\n}\nexample.org:53 {\n    forward . 10.96.0.53:53\n}\n' }),
      configMap('nodelocaldns', { Corefile: 'cluster.local:53 {\n  bind 169.254.20.10 10.96.0.10\n  forward . 10.96.0.10\n}\n' }),
      configMap('my-agent', { 'agent.yaml': 'upstream: 10.244.3.4\nversion: 1.2.3.4\n' }),
      configMap('elsewhere', { x: '10.244.0.0/16' }, 'default'),
      service('kube-dns', { clusterIP: '10.96.0.10', selector: { 'k8s-app': 'kube-dns' } }, {}, 'kube-system'),
    ]);
    assert.deepEqual(lines(scanReferences(s, [POD, SVC])), [
      'error service ConfigMap kube-system/coredns data["Corefile"]: 10.96.0.53 → 172.20.0.53',
      'error service ConfigMap kube-system/nodelocaldns data["Corefile"]: 10.96.0.10 → 172.20.0.10',
      'warning pod ConfigMap kube-system/coredns data["Corefile"]: 244.10.in-addr.arpa → 200.10.in-addr.arpa',
      'warning service ConfigMap kube-system/coredns data["Corefile"]: 10.96.0.0/12 → 172.20.0.0/16',
      'warning pod ConfigMap kube-system/my-agent data["agent.yaml"]: 10.244.3.4 → 10.200.3.4',
      'warning pod ConfigMap default/elsewhere data["x"]: 10.244.0.0/16 → 10.200.0.0/16',
    ]);
    const dns = scanReferences(s, [SVC]).find((r) => r.name === 'nodelocaldns')!;
    assert.match(dns.note, /ClusterIP of Service kube-system\/kube-dns/);
    assert.match(dns.note, /node-local DNS cache/);
  });
});

// ---------------------------------------------------------------- proposal rules

describe('proposals', () => {
  const one = (value: string, move: RangeMove): Reference[] =>
    scanReferences(snap([calico('GlobalNetworkSet', 's', { nets: [value] })]), [move]);
  const proposed = (value: string, move: RangeMove): string | undefined => one(value, move)[0]?.proposed;

  test('equal → to; inside → same offset, same prefix; covers → to added; already covering → nothing', () => {
    assert.equal(proposed('10.244.0.0/16', POD), '[10.244.0.0/16, 10.200.0.0/16]');
    assert.equal(proposed('10.244.12.0/22', POD), '[10.244.12.0/22, 10.200.12.0/22]');
    assert.equal(proposed('10.244.255.255', POD), '[10.244.255.255, 10.200.255.255]', 'a bare address stays a bare address');
    assert.equal(proposed('10.244.0.0/15', POD), '[10.244.0.0/15, 10.200.0.0/16]');
    assert.deepEqual(one('10.0.0.0/8', POD), [], '10.0.0.0/8 holds both ranges');
    assert.deepEqual(one('10.200.0.0/16', POD), [], 'the new range is not a reference');
  });

  test('host bits in a value are read as the network (as Kubernetes does for ipBlock)', () => {
    const refs = scanReferences(snap([netpol('h', { ingress: [{ from: [ipBlock('10.244.1.1/16')] }] })]), [POD]);
    assert.deepEqual(lines(refs), ['error pod NetworkPolicy default/h spec.ingress[0].from[0].ipBlock.cidr: 10.244.1.1/16 → 10.200.0.0/16']);
  });

  test('a larger new range: same offset from its start', () => {
    assert.equal(proposed('10.244.9.0/24', { role: 'pod', from: '10.244.0.0/16', to: '100.64.0.0/12' }), '[10.244.9.0/24, 100.64.9.0/24]');
  });

  test('a smaller new range: the offset when it fits, no proposal (review by hand) when it does not', () => {
    const small: RangeMove = { role: 'service', from: '10.96.0.0/12', to: '172.20.0.0/20' };
    assert.equal(proposed('10.96.0.10', small), '[10.96.0.10, 172.20.0.10]');
    const far = one('10.100.0.10', small);
    assert.equal(far.length, 1);
    assert.equal(far[0]!.proposed, undefined);
    assert.match(far[0]!.note, /smaller than 10\.96\.0\.0\/12 and has no block at the same offset: review by hand/);
    assert.match(far[0]!.note, /Review by hand/);
    const np = scanReferences(snap([netpol('far', { ingress: [{ from: [ipBlock('10.100.0.0/24')] }] })]), [small]);
    assert.equal(np[0]!.proposed, undefined);
  });

  test('IPv6: offsets, zones, and no cross-family matches', () => {
    const v6: RangeMove = { role: 'pod', from: 'fd00:10:244::/56', to: 'fd00:20::/56' };
    assert.equal(proposed('fd00:10:244::/56', v6), '[fd00:10:244::/56, fd00:20::/56]');
    assert.equal(proposed('fd00:10:244:3::/64', v6), '[fd00:10:244:3::/64, fd00:20:0:3::/64]');
    assert.equal(proposed('fd00:10:244:3::17', v6), '[fd00:10:244:3::17, fd00:20:0:3::17]');
    assert.deepEqual(one('10.244.0.0/16', v6), []);
    assert.deepEqual(one('fd00:10:244::/56', POD), []);
    const s = snap([configMap('coredns', { Corefile: 'f.f.f.f.0.0.0.0.0.0.d.f.ip6.arpa {\n  forward . fd00:10:244::53\n}\n4.4.2.0.0.1.0.0.0.0.d.f.ip6.arpa:53 { whoami }\n' })]);
    assert.deepEqual(lines(scanReferences(s, [v6])), [
      'error pod ConfigMap kube-system/coredns data["Corefile"]: fd00:10:244::53 → fd00:20::53',
      'warning pod ConfigMap kube-system/coredns data["Corefile"]: 4.4.2.0.0.1.0.0.0.0.d.f.ip6.arpa → 0.0.0.0.0.0.0.2.0.0.0.0.d.f.ip6.arpa',
    ], 'the /48 zone covers the old /56 but not the new one');
    const exact = snap([configMap('coredns', { Corefile: '0.0.4.4.2.0.0.1.0.0.0.0.d.f.ip6.arpa {\n}\n' })]);
    assert.deepEqual(scanReferences(exact, [v6]).map((r) => r.proposed), ['0.0.0.0.0.0.0.2.0.0.0.0.d.f.ip6.arpa']);
  });

  test('zones that do not end on an octet are proposed as a CIDR (CoreDNS takes CIDR zones)', () => {
    const s = snap([configMap('coredns', { Corefile: '244.10.in-addr.arpa {\n}\n' })]);
    const refs = scanReferences(s, [{ role: 'pod', from: '10.244.0.0/16', to: '10.200.128.0/17' }]);
    assert.deepEqual(lines(refs), ['warning pod ConfigMap kube-system/coredns data["Corefile"]: 244.10.in-addr.arpa → 10.200.128.0/17']);
    assert.match(refs[0]!.note, /serve 10\.200\.128\.0\/17 alongside \(CoreDNS accepts a CIDR as a zone\)/);
    const moved = scanReferences(s, [{ role: 'pod', from: '10.244.0.0/14', to: '172.16.0.0/14' }]);
    assert.deepEqual(lines(moved), ['warning pod ConfigMap kube-system/coredns data["Corefile"]: 244.10.in-addr.arpa → 16.172.in-addr.arpa']);
    const odd = scanReferences(snap([configMap('coredns', { Corefile: '10.in-addr.arpa {\n}\n' })]), [{ role: 'pod', from: '10.0.0.0/8', to: '100.64.0.0/10' }]);
    assert.deepEqual(lines(odd), ['warning pod ConfigMap kube-system/coredns data["Corefile"]: 10.in-addr.arpa → 100.64.0.0/10']);
    assert.match(odd[0]!.note, /CoreDNS accepts a CIDR as a zone/);
  });

  test('one proposed list for all moves; applying it (during) or the final list (after) leaves nothing to report', () => {
    const s = snap([calico('GlobalNetworkPolicy', 'g', { ingress: [{ source: { nets: ['10.244.0.0/16', '10.96.0.0/12', '192.168.0.0/16'] } }] })]);
    const refs = scanReferences(s, [POD, SVC]);
    assert.equal(refs.length, 2);
    assert.equal(refs[0]!.proposed, refs[1]!.proposed);
    const during = refs[0]!.proposed!.slice(1, -1).split(', ');
    assert.deepEqual(scanReferences(snap([calico('GlobalNetworkPolicy', 'g', { ingress: [{ source: { nets: during } }] })]), [POD, SVC]), []);
    const after = ['10.200.0.0/16', '172.20.0.0/16', '192.168.0.0/16'];
    assert.deepEqual(scanReferences(snap([calico('GlobalNetworkPolicy', 'g', { ingress: [{ source: { nets: after } }] })]), [POD, SVC]), []);
  });

  test('no moves, no sources, nothing matching: nothing reported; a bad move throws', () => {
    const s = snap([netpol('np', { ingress: [{ from: [ipBlock('192.168.0.0/16')] }] }), configMap('x', { a: 'hello 1.2.3.4' })]);
    assert.deepEqual(scanReferences(s, []), []);
    assert.deepEqual(scanReferences(s, [POD, SVC]), []);
    assert.deepEqual(scanReferences({ ...s, referenceSources: undefined }, [POD]), []);
    assert.throws(() => scanReferences(s, [{ role: 'pod', from: '10.244.0.0/16', to: 'fd00::/64' }]), /IPv6 but an IPv4 range was expected/);
    assert.throws(() => scanReferences(s, [{ role: 'pod', from: 'nope', to: '10.0.0.0/8' }]), /invalid CIDR/);
  });

  test('errors come before warnings', () => {
    const s = snap([configMap('a', { x: '10.244.1.1' }), netpol('np', { ingress: [{ from: [ipBlock('10.244.0.0/16')] }] })]);
    assert.deepEqual(scanReferences(s, [POD]).map((r) => r.severity), ['error', 'warning']);
  });
});

// ---------------------------------------------------------------- properties

/** A random IPv4 CIDR. */
const v4cidr = fc.tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), fc.integer({ min: 0, max: 32 }))
  .map(([v, p]): Cidr => cidrFrom(4, v & ~((1n << BigInt(32 - p)) - 1n), p));

describe('properties', () => {
  test('a value disjoint from every `from` is never reported, whatever the source', () => {
    fc.assert(fc.property(v4cidr.filter((c) => c.prefix >= 4), v4cidr, fc.array(v4cidr, { minLength: 1, maxLength: 4 }), (from, to, values) => {
      const disjoint = values.filter((v) => !overlaps(v, from)).map(formatCidr);
      fc.pre(disjoint.length > 0);
      const s = snap([
        netpol('np', { ingress: [{ from: disjoint.map((c) => ipBlock(c, [c])) }] }),
        calico('GlobalNetworkPolicy', 'g', { egress: [{ destination: { nets: disjoint, notNets: disjoint } }] }),
        ingress('i', { 'nginx.ingress.kubernetes.io/whitelist-source-range': disjoint.join(',') }),
        configMap('kube-proxy', { 'config.conf': `clusterCIDR: ${disjoint[0]}\n` }),
        configMap('ip-masq-agent', { config: `nonMasqueradeCIDRs: [${disjoint.join(', ')}]\n` }),
        configMap('coredns', { Corefile: disjoint.map((c) => `${c} {\n  forward . ${c.split('/')[0]}\n}`).join('\n') }),
        service('lb', { type: 'LoadBalancer', loadBalancerSourceRanges: disjoint }),
      ]);
      const role = to.prefix % 2 === 0 ? 'pod' : 'service';
      assert.deepEqual(scanReferences(s, [{ role, from: formatCidr(from), to: formatCidr(to) }]), []);
    }), { numRuns: 300 });
  });

  test('a value inside `from` (new range at least as large) is reported with the block at the same offset; `from` itself with `to`', () => {
    const gen = fc.tuple(v4cidr.filter((c) => c.prefix >= 8 && c.prefix <= 28), fc.integer({ min: 0, max: 4 }), fc.bigInt({ min: 0n, max: 0xffffffffn }), fc.integer({ min: 0, max: 8 }), fc.bigInt({ min: 0n, max: 0xffffffffn }))
      .map(([from, grow, toSeed, deeper, offSeed]) => {
        const toPrefix = Math.max(0, from.prefix - grow);
        const to = cidrFrom(4, toSeed & ~((1n << BigInt(32 - toPrefix)) - 1n), toPrefix);
        const vPrefix = Math.min(32, from.prefix + deeper);
        const span = 1n << BigInt(32 - from.prefix);
        const size = 1n << BigInt(32 - vPrefix);
        const off = (offSeed % span) & ~(size - 1n);
        return { from, to, v: cidrFrom(4, from.network + off, vPrefix), off };
      })
      .filter(({ from, to }) => !overlaps(from, to));
    fc.assert(fc.property(gen, ({ from, to, v, off }) => {
      const refs = scanReferences(snap([calico('GlobalNetworkSet', 's', { nets: [formatCidr(v)] })]), [{ role: 'pod', from: formatCidr(from), to: formatCidr(to) }]);
      assert.equal(refs.length, 1);
      const expected = v.prefix === from.prefix ? formatCidr(to) : formatCidr(cidrFrom(4, to.network + off, v.prefix));
      assert.equal(refs[0]!.proposed, `[${formatCidr(v)}, ${expected}]`);
    }), { numRuns: 300 });
  });
});

// ---------------------------------------------------------------- helpers

describe('address tokens', () => {
  test('addresses, CIDRs and reverse zones in text; look-alikes left out', () => {
    assert.deepEqual(
      addressTokens('forward . 10.96.0.10:53 fd00::1 [fd00::2]:53 at 12:30:45 mac aa:bb:cc:dd:ee:ff 1.0.96.10.in-addr.arpa v1.2.3.4 std::string :: 10.0.0.0/8. 999.1.1.1 010.1.1.1 10.96.0.10'),
      ['10.96.0.10', 'fd00::1', 'fd00::2', '1.0.96.10.in-addr.arpa', '10.0.0.0/8'],
    );
  });

  test('parseAddressToken and reverseZone', () => {
    assert.equal(formatCidr(parseAddressToken('96.10.in-addr.arpa.')!.cidr), '10.96.0.0/16');
    assert.equal(parseAddressToken('96.10.in-addr.arpa')!.form, 'zone');
    assert.equal(formatCidr(parseAddressToken('0.0.0.0.0.0.d.f.ip6.arpa')!.cidr), 'fd00::/32');
    assert.equal(formatCidr(parseAddressToken('10.244.1.1/16')!.cidr), '10.244.0.0/16');
    assert.equal(parseAddressToken('10.244.1.1')!.form, 'ip');
    assert.equal(parseAddressToken('300.10.in-addr.arpa'), undefined);
    assert.equal(parseAddressToken('hello'), undefined);
    assert.equal(reverseZone(parseCidr('10.96.0.0/12')), undefined);
    assert.equal(reverseZone(parseCidr('10.96.0.0/16')), '96.10.in-addr.arpa');
    assert.equal(reverseZone(parseCidr('fd00::/32')), '0.0.0.0.0.0.d.f.ip6.arpa');
  });

  test('slimReferenceObject drops managedFields and the last-applied copy', () => {
    const o = slimReferenceObject({
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress',
      metadata: { name: 'i', namespace: 'n', managedFields: [{}], annotations: { a: '1', 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
      spec: { rules: [] },
    });
    assert.deepEqual(o, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i', namespace: 'n', annotations: { a: '1' } }, spec: { rules: [] } });
  });
});

describe('renderReferences', () => {
  test('a Markdown table, pipes escaped; an empty scan says so', () => {
    assert.match(renderReferences([]), /^## References to the old ranges\n\nNothing found names an old range\.\n$/);
    const md = renderReferences(scanReferences(snap([
      ingress('i', { 'haproxy.org/allow-list': '10.244.0.0/16' }),
      configMap('a', { x: 'a|b 10.244.1.1' }),
    ]), [POD]));
    assert.match(md, /2 place\(s\) name an old range \(1 error\(s\), 1 warning\(s\)\)/);
    assert.match(md, /\| error \| pod \| Ingress web\/i \| `metadata\.annotations\["haproxy\.org\/allow-list"\]` \| `10\.244\.0\.0\/16` \| `10\.244\.0\.0\/16,10\.200\.0\.0\/16` \| /);
    assert.match(md, /\| warning \| pod \| ConfigMap kube-system\/a \| `data\["x"\]` \| `10\.244\.1\.1` \| `10\.200\.1\.1` \| /);
    assert.equal(md.trimEnd().split('\n').length, 8);
    const piped = renderReferences([{ kind: 'ConfigMap', namespace: 'kube-system', name: 'x', field: 'data["a|b"]', value: '10.244.0.1', role: 'pod', severity: 'warning', note: 'one | two' }]);
    assert.match(piped, /\| warning \| pod \| ConfigMap kube-system\/x \| `data\["a\\\|b"\]` \| `10\.244\.0\.1` \| - \| one \\\| two \|\n$/);
  });
});

test('a list holding the old range and a block inside it gets the new range once', () => {
  const s = snap([calico('GlobalNetworkSet', 's', { nets: ['10.244.0.0/16', '10.244.1.0/24', '10.244.1.0/24'] })]);
  assert.deepEqual(scanReferences(s, [POD]).map((r) => r.proposed), ['[10.244.0.0/16, 10.244.1.0/24, 10.244.1.0/24, 10.200.0.0/16]']);
});

describe('wide values: never rewritten to the new range', () => {
  const AWAY: RangeMove = { role: 'pod', from: '10.244.0.0/16', to: '172.16.0.0/16' };
  const AWAY6: RangeMove = { role: 'pod', from: 'fd00:10:244::/56', to: 'fd00:20::/56' };

  test('0.0.0.0/0 and ::/0 are never reported (GKE netd-config, NetworkPolicy ipBlock, Calico nets, allow-lists)', () => {
    const s = snap([
      configMap('netd-config', { 'cni.template': '{"routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}' }),
      netpol('all', { egress: [{ to: [ipBlock('0.0.0.0/0'), ipBlock('::/0')] }] }),
      calico('GlobalNetworkPolicy', 'g', { egress: [{ destination: { nets: ['0.0.0.0/0', '::/0'] } }] }),
      service('lb', { type: 'LoadBalancer', loadBalancerSourceRanges: ['0.0.0.0/0', '::/0'] }),
      configMap('ip-masq-agent', { config: 'nonMasqueradeCIDRs:\n  - 0.0.0.0/0\n' }),
    ]);
    assert.deepEqual(lines(scanReferences(s, [AWAY, AWAY6, SVC])), []);
  });

  test('a value that holds the old range among others (a private block, a node address) is a warning to review, with no proposal', () => {
    const nodeObj: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {}, status: { addresses: [{ type: 'InternalIP', address: '10.246.0.5' }] } };
    const s = snap([
      nodeObj,
      netpol('internal', { egress: [{ to: [ipBlock('10.0.0.0/8')] }] }),
      netpol('near', { egress: [{ to: [ipBlock('10.240.0.0/13')] }] }),
      configMap('netd-config', { 'cni.template': '{"ranges": "10.0.0.0/8"}' }),
    ]);
    const refs = scanReferences(s, [AWAY]);
    assert.deepEqual(lines(refs), [
      'warning pod NetworkPolicy default/internal spec.egress[0].to[0].ipBlock.cidr: 10.0.0.0/8 → -',
      'warning pod NetworkPolicy default/near spec.egress[0].to[0].ipBlock.cidr: 10.240.0.0/13 → -',
      'warning pod ConfigMap kube-system/netd-config data["cni.template"]: 10.0.0.0/8 → -',
    ]);
    assert.match(refs[0]!.note, /covers the old pod range 10\.244\.0\.0\/16 among others \(it is the whole private block 10\.0\.0\.0\/8\)/);
    assert.match(refs[1]!.note, /among others \(it also holds the node network 10\.246\.0\.0\/24\)/);
    for (const r of refs) {
      assert.match(r.note, /not rewritten: no change is needed/);
      assert.doesNotMatch(r.note, /Change it to|only 172\.16\.0\.0\/16/);
    }
    // a value only a little larger than the old range, holding nothing else, is still moved beside the new range
    assert.deepEqual(lines(scanReferences(snap([netpol('n', { egress: [{ to: [ipBlock('10.244.0.0/15')] }] })]), [AWAY])),
      ['error pod NetworkPolicy default/n spec.egress[0].to[0].ipBlock.cidr: 10.244.0.0/15 → 172.16.0.0/16']);
  });

  test('a list: the narrow entry moves, the wide one is kept and never proposed for removal', () => {
    const s = snap([configMap('ip-masq-agent', { config: 'nonMasqueradeCIDRs:\n  - 10.0.0.0/8\n  - 10.244.0.0/16\n' })]);
    const refs = scanReferences(s, [AWAY]);
    assert.deepEqual(lines(refs), ['error pod ConfigMap kube-system/ip-masq-agent data["config"].nonMasqueradeCIDRs: [10.0.0.0/8, 10.244.0.0/16] → [10.0.0.0/8, 10.244.0.0/16, 172.16.0.0/16]']);
    assert.match(refs[0]!.note, /after it, remove 10\.244\.0\.0\/16\./);
    assert.doesNotMatch(refs[0]!.note, /remove 10\.0\.0\.0\/8/);
    assert.match(refs[0]!.note, /never replace or remove it/);
    // only the wide entry: a warning that says the new range belongs beside it (ip-masq-agent), no proposed list
    const only = scanReferences(snap([configMap('ip-masq-agent', { config: 'nonMasqueradeCIDRs: [10.0.0.0/8]\n' })]), [AWAY]);
    assert.deepEqual(lines(only), ['warning pod ConfigMap kube-system/ip-masq-agent data["config"].nonMasqueradeCIDRs: [10.0.0.0/8] → -']);
    assert.match(only[0]!.note, /for ip-masq-agent it does/);
  });

  test('kube-proxy clusterCIDR: never a range holding everything or a node address during the move; the pod range after it', () => {
    const far = scanReferences(snap([configMap('kube-proxy', { 'config.conf': 'clusterCIDR: 10.244.0.0/16\n' })]), [AWAY]);
    assert.equal(far[0]!.proposed, '172.16.0.0/16');
    assert.doesNotMatch(far[0]!.note, /0\.0\.0\.0\/0|e\.g\./);
    assert.match(far[0]!.note, /no single range holds both without also holding every address.*detectLocalMode/);
    const nodeObj: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {}, status: { addresses: [{ type: 'InternalIP', address: '10.246.0.5' }] } };
    const near = scanReferences(snap([nodeObj, configMap('kube-proxy', { 'config.conf': 'clusterCIDR: 10.244.0.0/16\n' })]), [{ role: 'pod', from: '10.244.0.0/16', to: '10.240.0.0/16' }]);
    assert.doesNotMatch(near[0]!.note, /10\.240\.0\.0\/13/, 'the common supernet holds the node network');
    assert.match(near[0]!.note, /no single range holds both without also holding the node network 10\.246\.0\.0\/24/);
  });
});
