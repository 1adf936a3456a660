// Cover Services for in-place moves (src/engine/covers.ts): the pure parts. The behaviour on a real data plane
// is measured by test/integration/zero-downtime.test.ts and `npm run bench -- zero-downtime`.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { coverCarries, coverIngress, coverService, coverStatus, pickSpares, readyAddresses, COVER_CLASS, COVER_FOR_LABEL } from '../../src/engine/covers.ts';
import { contains, formatIP, parseCidr, parseIP, usable } from '../../src/net/index.ts';
import { coverName, bridgeName } from '../../src/plan/plan.ts';

install();

const svc = (spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', uid: 'u1', resourceVersion: '7' }, spec });

describe('coverService', () => {
  test('a LoadBalancer of our class at the given IPs, same selector and ports, no node ports', () => {
    const orig = svc({
      type: 'NodePort', clusterIP: '10.96.0.80', clusterIPs: ['10.96.0.80'], selector: { app: 'web' },
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080, protocol: 'TCP' }, { name: 'dns', port: 53, protocol: 'UDP', nodePort: 30053 }],
      sessionAffinity: 'ClientIP', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', externalTrafficPolicy: 'Local',
    });
    const c = coverService(orig, coverName('web'), ['10.100.255.254']);
    assert.equal(c.metadata!.name, 'web-kr-cover');
    assert.equal(c.metadata!.namespace, 'shop');
    assert.equal(c.metadata!.labels![COVER_FOR_LABEL], 'web');
    assert.equal(c.metadata!.uid, undefined);
    assert.equal(c.metadata!.resourceVersion, undefined);
    assert.equal(c.spec.type, 'LoadBalancer');
    assert.equal(c.spec.loadBalancerClass, COVER_CLASS);
    assert.equal(c.spec.allocateLoadBalancerNodePorts, false);
    assert.equal(c.spec.externalTrafficPolicy, 'Cluster');
    assert.deepEqual(c.spec.clusterIPs, ['10.100.255.254']);
    assert.deepEqual(c.spec.selector, { app: 'web' });
    assert.deepEqual(c.spec.ports, [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }, { name: 'dns', port: 53, protocol: 'UDP' }]);
    assert.equal(c.spec.sessionAffinity, 'ClientIP');
    assert.deepEqual(c.spec.ipFamilies, ['IPv4']);
    assert.equal(c.spec.ipFamilyPolicy, 'SingleStack');
  });

  test('a selectorless Service gives a selectorless cover (its EndpointSlices are copied by the engine)', () => {
    const c = coverService(svc({ clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] }), 'kubernetes-kr-cover', ['10.100.255.254']);
    assert.equal(c.spec.selector, undefined);
  });

  test('cover names fit a Service name and differ from bridge names', () => {
    fc.assert(fc.property(fc.stringMatching(/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/), (name) => {
      const c = coverName(name);
      assert.ok(c.length <= 63, c);
      assert.match(c, /^[a-z]([a-z0-9-]*[a-z0-9])?$/);
      assert.notEqual(c, bridgeName(name));
    }));
    assert.notEqual(coverName(`${'a'.repeat(62)}b`), coverName(`${'a'.repeat(62)}c`));
  });
});

describe('coverStatus / coverCarries', () => {
  test('one ingress entry per distinct address, normalised', () => {
    assert.deepEqual(coverStatus(['10.96.0.80', '10.100.0.80', '10.96.0.80']), { loadBalancer: { ingress: [{ ip: '10.96.0.80' }, { ip: '10.100.0.80' }] } });
    assert.deepEqual(coverStatus(['fd00:0:0::a']).loadBalancer.ingress, [{ ip: 'fd00::a' }]);
  });
  test('carries means every wanted address is in the status', () => {
    const s = { status: { loadBalancer: { ingress: [{ ip: '10.96.0.80', ipMode: 'VIP' }, { ip: '10.100.0.80' }] } } };
    assert.deepEqual(coverIngress(s), ['10.96.0.80', '10.100.0.80']);
    assert.equal(coverCarries(s, ['10.100.0.80', '10.96.0.80']), true);
    assert.equal(coverCarries(s, ['10.96.0.80', '10.100.0.81']), false);
    assert.equal(coverCarries(undefined, ['10.96.0.80']), false);
    assert.equal(coverCarries({ status: {} }, []), true);
  });
});

describe('pickSpares', () => {
  test('from the top of the range down, skipping used addresses and the IPv4 broadcast', () => {
    const used = new Set(['10.100.255.254', '10.100.255.252']);
    const picks = pickSpares(['10.100.0.0/16'], [4], used, 3);
    assert.deepEqual(picks, [['10.100.255.253'], ['10.100.255.251'], ['10.100.255.250']]);
    assert.ok(used.has('10.100.255.250'), 'picked addresses are added to used');
  });

  test('dual-stack: one address per family; undefined when a range is exhausted', () => {
    const picks = pickSpares(['10.100.0.0/30', 'fd00:10::/120'], [4, 6], new Set(['10.100.0.2']), 2);
    assert.deepEqual(picks[0], ['10.100.0.1', 'fd00:10::ff']);
    assert.equal(picks[1], undefined);
    assert.deepEqual(pickSpares(['10.100.0.0/16'], [6], new Set(), 1), [undefined]);
  });

  test('property: picks are distinct, usable, inside the target and never used before', () => {
    fc.assert(fc.property(
      fc.integer({ min: 22, max: 29 }), fc.array(fc.integer({ min: 0, max: 1023 }), { maxLength: 60 }), fc.integer({ min: 1, max: 12 }),
      (prefix, offsets, count) => {
        const cidr = parseCidr(`10.100.0.0/${prefix}`, { normalize: true });
        const { first, last } = usable(cidr);
        const used = new Set(offsets.map((o) => formatIP({ family: 4, value: first + (BigInt(o) % (last - first + 1n)) })));
        const before = new Set(used);
        const picks = pickSpares([`10.100.0.0/${prefix}`], [4], used, count);
        const got = picks.filter((p): p is string[] => !!p).map((p) => p[0]!);
        assert.equal(new Set(got).size, got.length);
        for (const ip of got) {
          const v = parseIP(ip).value;
          assert.ok(contains(cidr, parseIP(ip)) && v >= first && v <= last, ip);
          assert.ok(!before.has(ip), `${ip} was used`);
        }
        const free = Number(last - first + 1n) - before.size;
        assert.equal(got.length, Math.min(count, free));
      },
    ));
  });
});

describe('readyAddresses', () => {
  test('ready or unset counts; not-ready does not', () => {
    const slices = [
      { endpoints: [{ addresses: ['10.244.0.5'], conditions: { ready: true } }, { addresses: ['10.244.0.6'], conditions: { ready: false, serving: true, terminating: true } }] },
      { endpoints: [{ addresses: ['10.244.1.7'] }] },
      {},
    ];
    assert.deepEqual([...readyAddresses(slices as any)].sort(), ['10.244.0.5', '10.244.1.7']);
  });
});
