// Which kept ServiceCIDR step retire-kept-servicecidrs may delete: never one sharing an address in use with another
// ServiceCIDR being deleted (the servicecidrs controller counts those too, so both could go and leave the address in
// none). src/engine/service/service-cidrs.ts retireBlockers, servesIP.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retireBlockers, servesIP } from '../../src/engine/service/service-cidrs.ts';
import { parseCidr, parseIP } from '../../src/net/index.ts';
import { install } from '../../src/install.ts';

install();

const sc = (name: string, cidrs: string[], deleting = false) => ({
  apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR',
  metadata: { name, ...(deleting ? { deletionTimestamp: '2026-12-02T10:00:00Z' } : {}) }, spec: { cidrs },
});

describe('servesIP: what a ServiceCIDR gives out and holds (pkg/api/servicecidr PrefixContainsIP)', () => {
  it('neither the network address nor the IPv4 broadcast address; the IPv6 last address yes', () => {
    const c = parseCidr('10.96.7.4/30');
    assert.deepEqual(['10.96.7.4', '10.96.7.5', '10.96.7.6', '10.96.7.7', '10.96.7.8'].map((a) => servesIP(c, parseIP(a))), [false, true, true, false, false]);
    assert.equal(servesIP(parseCidr('10.96.7.7/32'), parseIP('10.96.7.7')), false);
    assert.equal(servesIP(parseCidr('fd00::/120'), parseIP('fd00::ff')), true);
    assert.equal(servesIP(parseCidr('fd00::/120'), parseIP('fd00::')), false);
  });
});

describe('retireBlockers', () => {
  const keep = sc('kube-renumber-keep-10-96-7-0-28', ['10.96.7.0/28']);
  it('alone in the old range: may go', () => {
    assert.deepEqual(retireBlockers(keep, [keep, sc('kubernetes', ['100.32.0.0/16'])], ['10.96.7.7', '100.32.0.10']), []);
  });
  it('a Ready ServiceCIDR also serving the address does not block (it keeps it)', () => {
    assert.deepEqual(retireBlockers(keep, [keep, sc('extra', ['10.96.7.0/24'])], ['10.96.7.7']), []);
  });
  it('another being deleted serving an address in use blocks, naming both', () => {
    const other = sc('extra', ['10.96.7.0/24'], true);
    assert.deepEqual(retireBlockers(keep, [keep, other], ['10.96.7.7', '10.96.7.200']), ['10.96.7.7 also in ServiceCIDR extra, being deleted']);
  });
  it('not when the shared address is one the other does not serve, nor when no address is in use there', () => {
    assert.deepEqual(retireBlockers(keep, [keep, sc('edge', ['10.96.7.4/30'], true)], ['10.96.7.7']), [], '.7 is the /30\'s broadcast address');
    assert.deepEqual(retireBlockers(keep, [keep, sc('extra', ['10.96.7.0/24'], true)], []), []);
  });
});
