import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildSnapshot } from '../../src/cluster/build.ts';
import type { ServiceInfo, Snapshot } from '../../src/cluster/types.ts';
import { cidrSize, contains, formatCidr, formatIP, parseCidr, parseIP, usable } from '../../src/net/index.ts';
import { keptRanges, mapServices, MIN_KEPT_PREFIX, parseTarget, readTier, type ServiceMapping } from '../../src/plan/service-mapping.ts';

install();

// ---- fixtures -------------------------------------------------------------------------------------

function svc(ns: string, name: string, ips: string | string[], over: Partial<ServiceInfo> = {}): ServiceInfo {
  const list = typeof ips === 'string' ? (ips === '' ? [] : [ips]) : ips;
  return {
    namespace: ns, name, type: 'ClusterIP', clusterIPs: list, headless: false, ports: [{ port: 80 }],
    loadBalancerIPs: [], loadBalancerSourceRanges: [], externalIPs: [], labels: {}, annotations: {}, ...over,
  };
}

function snapshot(services: ServiceInfo[], over: Partial<Snapshot> = {}, serviceRanges = ['100.64.0.0/13']): Snapshot {
  return {
    source: { kind: 'file', files: ['test'] },
    kubernetesVersion: 'v1.33.4',
    serviceCIDRApi: 'v1',
    platform: { kind: 'generic', title: 'generic', evidence: [], reserved: [] },
    cni: { plugin: 'unknown', ipam: 'unknown', operatorManaged: false, evidence: [] },
    ranges: serviceRanges.map((cidr) => ({ cidr, role: 'service' as const, source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' })),
    serviceCIDRs: [{ name: 'kubernetes', cidrs: serviceRanges, apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
    kubernetesServiceIPs: services.filter((s) => s.namespace === 'default' && s.name === 'kubernetes').flatMap((s) => s.clusterIPs),
    clusterDNS: [],
    apiservers: [{ pod: 'kube-apiserver-a', serviceClusterIPRange: serviceRanges }],
    controllerManagers: [],
    nodes: [], services, pods: [], pools: [], blocks: [], blockAffinities: [], warnings: [],
    ...over,
  };
}

const byName = (m: ServiceMapping[], name: string) => m.find((e) => e.name === name)!;

// ---- examples --------------------------------------------------------------------------------------

describe('mapServices: examples', () => {
  const base = [
    svc('default', 'kubernetes', '100.64.0.1'),
    svc('kube-system', 'kube-dns', '100.64.0.10', { selector: { 'k8s-app': 'kube-dns' } }),
    svc('default', 'web', '100.64.3.7'),
  ];
  const snap = snapshot(base, { dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['100.64.0.10'], foundBy: 'kubelet clusterDNS' } });

  it('keeps the offset: 100.64.0.10 → 172.24.0.10, and default/kubernetes gets 172.24.0.1', () => {
    const m = mapServices(snap, { target: '172.24.0.0/15' });
    assert.deepEqual(byName(m, 'kube-dns').to, ['172.24.0.10']);
    assert.equal(byName(m, 'kube-dns').isDNS, true);
    assert.equal(byName(m, 'kube-dns').action, 'move');
    const k = byName(m, 'kubernetes');
    assert.deepEqual(k.to, ['172.24.0.1']);
    assert.equal(k.isKubernetes, true);
    assert.equal(k.action, 'move');
    assert.deepEqual(byName(m, 'web').to, ['172.24.3.7']);
  });

  it('returns one entry per Service, sorted by namespace then name', () => {
    const m = mapServices(snap, { target: '172.24.0.0/15' });
    assert.deepEqual(m.map((e) => `${e.namespace}/${e.name}`), ['default/kubernetes', 'default/web', 'kube-system/kube-dns']);
  });

  it('a smaller NEW: offsets that do not fit fall back to the lowest free address', () => {
    const s = snapshot([...base, svc('a', 'far', '100.65.0.5'), svc('b', 'farther', '100.66.0.9')], { dnsService: snap.dnsService });
    const m = mapServices(s, { target: '172.24.0.0/24' });
    // .0 network, .1 kubernetes, .10 DNS (kept offset); fallbacks by old address: 100.64.3.7 first.
    assert.deepEqual(byName(m, 'web').to, ['172.24.0.2']);
    assert.deepEqual(byName(m, 'far').to, ['172.24.0.3']);
    assert.deepEqual(byName(m, 'farther').to, ['172.24.0.4']);
    assert.deepEqual(byName(m, 'kube-dns').to, ['172.24.0.10']);
    assert.match(byName(m, 'far').reason, /offset does not fit/);
  });

  it('never hands out the broadcast address or the first IP', () => {
    const s = snapshot([svc('a', 'bcast', '100.64.0.255'), svc('a', 'first', '10.9.0.1')], {}, ['100.64.0.0/13', '10.9.0.0/24']);
    const m = mapServices(s, { target: '172.24.0.0/24' });
    // Fallbacks go in order of old address: 10.9.0.1 before 100.64.0.255.
    assert.deepEqual(byName(m, 'first').to, ['172.24.0.2']);
    assert.deepEqual(byName(m, 'bcast').to, ['172.24.0.3']);
    assert.match(byName(m, 'bcast').reason, /taken or reserved/);
  });

  it('collisions between two old ranges: the lower old address keeps the offset, the other takes the lowest free', () => {
    const s = snapshot([svc('a', 'x', '100.64.0.20'), svc('a', 'y', '10.9.0.20')], {}, ['100.64.0.0/13', '10.9.0.0/24']);
    const m = mapServices(s, { target: '172.24.0.0/15' });
    assert.deepEqual(byName(m, 'y').to, ['172.24.0.20']); // 10.9.0.20 < 100.64.0.20
    assert.deepEqual(byName(m, 'x').to, ['172.24.0.2']);
  });

  it('the DNS Service wins a contested offset', () => {
    const s = snapshot([svc('a', 'x', '10.9.0.10'), svc('kube-system', 'dns', '100.64.0.10')], {
      dnsService: { namespace: 'kube-system', name: 'dns', clusterIPs: ['100.64.0.10'], foundBy: 'kubelet clusterDNS' },
    }, ['100.64.0.0/13', '10.9.0.0/24']);
    const m = mapServices(s, { target: '172.24.0.0/15' });
    assert.deepEqual(byName(m, 'dns').to, ['172.24.0.10']);
    assert.deepEqual(byName(m, 'x').to, ['172.24.0.2']);
  });

  it('policy: headless and ExternalName skipped, LoadBalancer and --keep kept, NodePort moved', () => {
    const s = snapshot([
      svc('a', 'headless', [], { headless: true }),
      svc('a', 'ext', [], { type: 'ExternalName', externalName: 'db.example.com' }),
      svc('a', 'lb', '100.66.133.7', { type: 'LoadBalancer' }),
      svc('a', 'kept', '100.67.0.4'),
      svc('a', 'np', '100.64.9.9', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }),
    ]);
    const m = mapServices(s, { target: '172.24.0.0/15', keep: ['a/kept'] });
    assert.equal(byName(m, 'headless').action, 'skip');
    assert.match(byName(m, 'headless').reason, /never touched/);
    assert.equal(byName(m, 'ext').action, 'skip');
    assert.match(byName(m, 'ext').reason, /never touched/);
    assert.equal(byName(m, 'lb').action, 'keep');
    assert.deepEqual(byName(m, 'lb').to, ['100.66.133.7']);
    assert.match(byName(m, 'lb').reason, /ServiceCIDR covering the kept IPs/);
    assert.equal(byName(m, 'kept').action, 'keep');
    assert.match(byName(m, 'kept').reason, /--keep/);
    assert.equal(byName(m, 'np').action, 'move');
    assert.deepEqual(byName(m, 'np').to, ['172.24.9.9']);
  });

  it('--keep cannot keep default/kubernetes', () => {
    const m = mapServices(snapshot(base), { target: '172.24.0.0/15', keep: ['default/kubernetes'] });
    assert.equal(byName(m, 'kubernetes').action, 'move');
    assert.match(byName(m, 'kubernetes').reason, /--keep ignored/);
  });

  it('a Service already inside NEW is kept and its address is not handed out again', () => {
    const s = snapshot([svc('a', 'done', '172.24.3.7'), svc('a', 'todo', '100.64.3.7')]);
    const m = mapServices(s, { target: '172.24.0.0/15' });
    assert.equal(byName(m, 'done').action, 'keep');
    assert.match(byName(m, 'done').reason, /already inside/);
    assert.deepEqual(byName(m, 'todo').to, ['172.24.0.2']);
  });

  it('dual-stack: a family NEW has no range for keeps its address; both families map when NEW has both', () => {
    const s = snapshot([svc('a', 'ds', ['100.64.0.20', 'fd00:10::20']), svc('a', 'v6', 'fd00:10::30')], {}, ['100.64.0.0/13', 'fd00:10::/108']);
    const v4only = mapServices(s, { target: '172.24.0.0/15' });
    assert.equal(byName(v4only, 'ds').action, 'move');
    assert.deepEqual(byName(v4only, 'ds').to, ['172.24.0.20', 'fd00:10::20']);
    assert.match(byName(v4only, 'ds').reason, /IPv6 address is kept/);
    assert.equal(byName(v4only, 'v6').action, 'keep');
    assert.equal(byName(v4only, 'v6').keptBecause, 'no-family');
    const both = mapServices(s, { target: ['172.24.0.0/15', 'fd00:99::/108'] });
    assert.deepEqual(byName(both, 'ds').to, ['172.24.0.20', 'fd00:99::20']);
    assert.deepEqual(byName(both, 'v6').to, ['fd00:99::30']);
  });

  it('NEW too small: the Services that do not fit keep their IPs and say so', () => {
    const s = snapshot(Array.from({ length: 10 }, (_, i) => svc('a', `s${i}`, `100.64.1.${i + 2}`)));
    const m = mapServices(s, { target: '172.24.0.0/29' }); // usable .1-.6, .1 reserved: 5 addresses
    assert.equal(m.filter((e) => e.action === 'move').length, 5);
    assert.equal(m.filter((e) => e.keptBecause === 'no-room').length, 5);
  });

  it('reads the tier from the label, then the annotation; numbers become numbers', () => {
    assert.equal(readTier({ labels: { t: '2' }, annotations: { t: '9' } }, 't'), 2);
    assert.equal(readTier({ labels: {}, annotations: { t: 'gold' } }, 't'), 'gold');
    assert.equal(readTier({ labels: {}, annotations: {} }, 't'), null);
    const m = mapServices(snapshot([svc('a', 'x', '100.64.0.5', { labels: { 'kube-renumber.io/tier': '3' } })]), { target: '172.24.0.0/15' });
    assert.equal(m[0]!.tier, 3);
    const k = mapServices(snapshot([svc('a', 'x', '100.64.0.5', { annotations: { crit: 'low' } })]), { target: '172.24.0.0/15', tierKey: 'crit' });
    assert.equal(k[0]!.tier, 'low');
  });

  it('parseTarget refuses two CIDRs of one family and bad CIDRs', () => {
    assert.throws(() => parseTarget('172.24.0.0/15,10.0.0.0/16'), /two IPv4 ranges/);
    assert.throws(() => parseTarget('172.24.0.1/15'), /host bits/);
    assert.equal(parseTarget('172.24.0.0/15, fd00::/108').size, 2);
  });
});

describe('mapServices: the DNS Service is found by what it is, not by its name', () => {
  const raw = (objects: any[]) => buildSnapshot({ source: { kind: 'file', files: ['t'] }, objects, configs: [], gaps: [] });
  const service = (ns: string, name: string, ip: string, selector: Record<string, string>) => ({
    apiVersion: 'v1', kind: 'Service', metadata: { namespace: ns, name }, spec: { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip], selector, ports: [{ port: 53 }] },
  });
  const kubeletCM = (dns: string) => ({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'kube-system', name: 'kubelet-config' },
    data: { kubelet: `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS:\n- ${dns}\n` },
  });

  it('a DNS Service with another name, found by the kubelets\' clusterDNS', () => {
    const snap = raw([
      service('dns-system', 'resolver', '10.96.0.53', { app: 'resolver' }),
      service('kube-system', 'kube-dns', '10.96.0.10', { 'k8s-app': 'kube-dns' }), // named like DNS, but not what kubelets use
      kubeletCM('10.96.0.53'),
      { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.96.0.0/12'] } },
    ]);
    const m = mapServices(snap, { target: '172.24.0.0/16' });
    assert.equal(byName(m, 'resolver').isDNS, true);
    assert.equal(byName(m, 'kube-dns').isDNS, false);
    assert.deepEqual(byName(m, 'resolver').to, ['172.24.0.53']);
    assert.match(byName(m, 'resolver').reason, /cluster DNS Service \(found by kubelet clusterDNS\)/);
  });
});

// ---- properties ------------------------------------------------------------------------------------

const OLD = '10.96.0.0/16';
const TARGETS = ['172.24.0.0/16', '172.24.0.0/20', '172.24.0.0/24', '172.24.0.0/26', '172.24.0.0/28'];

const serviceArb = fc.record({
  offset: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 65534 })),
  ns: fc.constantFrom('a', 'b', 'c'),
  kind: fc.constantFrom('ClusterIP', 'ClusterIP', 'ClusterIP', 'NodePort', 'LoadBalancer', 'headless', 'ExternalName'),
  keep: fc.boolean(),
  tier: fc.constantFrom(undefined, '0', '1', 'x'),
});

function build(specs: Array<{ offset: number; ns: string; kind: string; keep: boolean; tier?: string }>) {
  const seen = new Set<number>();
  const services: ServiceInfo[] = [svc('default', 'kubernetes', '10.96.0.1')];
  const keep: string[] = [];
  specs.forEach((s, i) => {
    if (seen.has(s.offset) || s.offset === 1) return;
    seen.add(s.offset);
    const ip = formatIP({ family: 4, value: parseCidr(OLD).network + BigInt(s.offset) });
    const name = `svc-${i}`;
    const labels: Record<string, string> = s.tier === undefined ? {} : { 'kube-renumber.io/tier': s.tier };
    if (s.kind === 'headless') services.push(svc(s.ns, name, [], { headless: true, labels }));
    else if (s.kind === 'ExternalName') services.push(svc(s.ns, name, [], { type: 'ExternalName', labels }));
    else services.push(svc(s.ns, name, ip, { type: s.kind as ServiceInfo['type'], labels }));
    if (s.keep && i % 3 === 0) keep.push(`${s.ns}/${name}`);
  });
  return { services, keep };
}

function shuffle<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let x = seed || 1;
  for (let i = out.length - 1; i > 0; i--) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('mapServices: properties', () => {
  const arb = fc.record({ specs: fc.array(serviceArb, { maxLength: 80 }), target: fc.constantFrom(...TARGETS), seed: fc.integer() });

  it('no two Services get the same IP; every moved IP is inside NEW, usable, and not the first IP (except kubernetes)', () => {
    fc.assert(fc.property(arb, ({ specs, target }) => {
      const { services, keep } = build(specs);
      const m = mapServices(snapshot(services, {}, [OLD]), { target, keep });
      const t = parseCidr(target);
      const u = usable(t);
      const all = m.filter((e) => e.action !== 'skip').flatMap((e) => e.to);
      assert.equal(new Set(all).size, all.length, 'duplicate address');
      for (const e of m.filter((x) => x.action === 'move')) {
        for (const a of e.to) {
          const ip = parseIP(a);
          assert.ok(contains(t, ip), `${a} outside ${target}`);
          assert.ok(ip.value >= u.first && ip.value <= u.last, `${a} not usable`);
          if (e.isKubernetes) assert.equal(ip.value, t.network + 1n);
          else assert.notEqual(ip.value, t.network + 1n, 'first IP handed out');
        }
      }
    }), { numRuns: 300 });
  });

  it('the result does not depend on the order of the input', () => {
    fc.assert(fc.property(arb, ({ specs, target, seed }) => {
      const { services, keep } = build(specs);
      const a = mapServices(snapshot(services, {}, [OLD]), { target, keep });
      const b = mapServices(snapshot(shuffle(services, seed), {}, [OLD]), { target, keep: shuffle(keep, seed + 1) });
      assert.deepEqual(b, a);
    }), { numRuns: 200 });
  });

  it('offsets are preserved whenever the offset address exists, is usable and not reserved; fallbacks take the lowest free addresses', () => {
    fc.assert(fc.property(arb, ({ specs, target }) => {
      const { services, keep } = build(specs);
      const m = mapServices(snapshot(services, {}, [OLD]), { target, keep });
      const t = parseCidr(target);
      const old = parseCidr(OLD);
      const u = usable(t);
      const taken = new Set(m.filter((e) => e.action !== 'skip').flatMap((e) => e.to).map((a) => parseIP(a).value));
      for (const e of m.filter((x) => x.action === 'move' && !x.isKubernetes)) {
        const from = parseIP(e.from[0]!);
        const off = from.value - old.network;
        const pref = t.network + off;
        const fits = off < cidrSize(t) && pref >= u.first && pref <= u.last && pref !== t.network + 1n;
        const to = parseIP(e.to[0]!).value;
        if (fits) assert.equal(to, pref, `${e.from[0]} should keep offset ${off}`);
        else {
          // Lowest free: every usable address below it is taken by someone.
          for (let v = u.first; v < to; v++) assert.ok(taken.has(v) || v === t.network + 1n, `${formatIP({ family: 4, value: v })} was free below ${e.to[0]}`);
        }
      }
    }), { numRuns: 300 });
  });
});

describe('keptRanges', () => {
  const olds = [parseCidr('100.64.0.0/13')];
  it('covers each kept IP with the smallest block (/30 at least) where it is neither network nor broadcast', () => {
    assert.equal(MIN_KEPT_PREFIX[4], 30);
    assert.equal(MIN_KEPT_PREFIX[6], 120);
    assert.deepEqual(keptRanges(['100.66.133.7'], olds), ['100.66.133.0/28']); // .7 is the last address of .4/30 and .0/29
    assert.deepEqual(keptRanges(['100.66.133.6'], olds), ['100.66.133.4/30']);
    assert.deepEqual(keptRanges(['100.66.133.5', '100.66.133.9'], olds), ['100.66.133.4/30', '100.66.133.8/30']);
    assert.deepEqual(keptRanges(['100.66.133.5', '100.66.133.6'], olds), ['100.66.133.4/30']);
    assert.deepEqual(keptRanges(['100.66.133.0'], olds), ['100.66.132.0/23']); // a .0 needs a block that starts below it
    assert.deepEqual(keptRanges(['100.66.133.7', '100.66.135.9'], olds), ['100.66.133.0/28', '100.66.135.8/30']);
  });

  it('every kept IP is interior to the CIDR that covers it (property)', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: 2 ** 19 - 2 }), { minLength: 1, maxLength: 20 }), (offs) => { // ClusterIPs: usable addresses of the old range
      const ips = offs.map((o) => formatIP({ family: 4, value: parseIP('100.64.0.0').value + BigInt(o) }));
      const out = keptRanges(ips, olds).map((c) => parseCidr(c));
      for (const a of ips) {
        const ip = parseIP(a);
        const c = out.find((x) => contains(x, ip));
        assert.ok(c, `${a} covered`);
        const size = 1n << BigInt(32 - c.prefix);
        assert.ok(ip.value !== c.network && ip.value !== c.network + size - 1n, `${a} interior to ${formatCidr(c)}`);
      }
    }));
  });

  it('IPv6 and small old ranges', () => {
    assert.deepEqual(keptRanges(['fd00:10::1:5'], [parseCidr('fd00:10::/108')]), ['fd00:10::1:0/120']);
    assert.deepEqual(keptRanges(['10.9.0.70'], [parseCidr('10.9.0.64/26')]), ['10.9.0.68/30']);
    assert.deepEqual(keptRanges(['100.66.133.7'], olds, { covered: [parseCidr('100.66.133.0/24')] }), []);
  });

  it('property: every kept IP is covered, every range is no smaller than the minimum', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: (1 << 19) - 1 }), { maxLength: 40 }), (offs) => {
      const ips = offs.map((o) => formatIP({ family: 4, value: olds[0]!.network + BigInt(o) }));
      const out = keptRanges(ips, olds).map((c) => parseCidr(c));
      for (const a of ips) assert.ok(out.some((c) => contains(c, parseIP(a))));
      for (const c of out) assert.ok(c.prefix <= MIN_KEPT_PREFIX[4]);
      for (let i = 1; i < out.length; i++) assert.ok(out[i - 1]!.network + cidrSize(out[i - 1]!) <= out[i]!.network, 'overlapping or unsorted');
    }));
  });
});
