// A moved Service's IP with no IPAddress object (the apiserver undid the allocation of a create whose client was cut
// off) is the one problem a batch waits on for the apiserver's IPAddress repair; an IPAddress held by another object,
// or a Service not at its IP, is never waited out that way.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ipAddressProblem, IPADDRESS_REPAIR_WAIT_MS, onlyMissingIPAddresses } from '../../src/engine/service/decisions.ts';

install();

const it1 = { namespace: 'shop', name: 'web' };
const addr = (namespace: string, name: string) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'IPAddress', metadata: { name: '10.100.0.7' },
  spec: { parentRef: { group: '', resource: 'services', namespace, name } } });

describe('IPAddress of a moved Service', () => {
  it('pointing at the Service: no problem', () => {
    assert.equal(ipAddressProblem('10.100.0.7', it1, addr('shop', 'web')), undefined);
  });

  it('missing: named as missing, and the only kind waited for', () => {
    const p = ipAddressProblem('10.100.0.7', it1, undefined)!;
    assert.equal(p, 'IPAddress 10.100.0.7 does not point at Service shop/web (there is no IPAddress object for it)');
    assert.equal(onlyMissingIPAddresses([p]), true);
    assert.equal(onlyMissingIPAddresses([p, ipAddressProblem('10.100.0.8', { namespace: 'shop', name: 'api' }, undefined)!]), true);
  });

  it('pointing at another Service: named with that Service, never waited out', () => {
    const p = ipAddressProblem('10.100.0.7', it1, addr('other', 'web'))!;
    assert.equal(p, 'IPAddress 10.100.0.7 does not point at Service shop/web (it points at services other/web)');
    assert.equal(onlyMissingIPAddresses([p]), false);
    assert.equal(onlyMissingIPAddresses([ipAddressProblem('10.100.0.8', it1, undefined)!, p]), false);
    assert.equal(onlyMissingIPAddresses(['Service shop/web has no EndpointSlice']), false);
    assert.equal(onlyMissingIPAddresses([]), false);
  });

  it('the wait covers one full pass of the repair (every 3 minutes)', () => {
    assert.ok(IPADDRESS_REPAIR_WAIT_MS > 180_000 && IPADDRESS_REPAIR_WAIT_MS <= 240_000);
  });
});
