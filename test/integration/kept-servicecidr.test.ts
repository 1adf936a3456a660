// What a ServiceCIDR must look like to keep an IP of a drained range alive (LoadBalancer IPs a migration keeps):
// which addresses a small ServiceCIDR serves, for explicit allocation and for the drained range's finalizer.
// The plan's MIN_KEPT_PREFIX and keptBlock rule come from here.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { keptRanges, MIN_KEPT_PREFIX } from '../../src/plan/service-mapping.ts';
import { parseCidr } from '../../src/net/index.ts';

const SC = '/apis/networking.k8s.io/v1/servicecidrs';

describe('kept ServiceCIDRs on the real apiserver', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', nodes: 1, calicoCRDs: false });
  const sc = async (name: string, cidr: string) => {
    await tb.client.post(SC, { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name }, spec: { cidrs: [cidr] } });
    await eventually(`${name} Ready`, async () => (await tb.client.get(`${SC}/${name}`)).status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'), 10_000, 100);
  };
  const allocate = async (name: string, ip: string) => {
    const r = await tb.client.raw('POST', '/api/v1/namespaces/default/services', {
      apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { clusterIP: ip, ports: [{ port: 80 }] },
    });
    return r.status === 201;
  };

  test('a ServiceCIDR serves only its usable addresses: none in a /32 or /31, the two middle ones of a /30', async () => {
    await sc('p32', '10.201.0.5/32');
    await sc('p31', '10.202.0.4/31');
    await sc('p30', '10.203.0.4/30');
    await sc('p24', '10.204.0.0/24');
    assert.equal(await allocate('a32', '10.201.0.5'), false);
    assert.equal(await allocate('a31a', '10.202.0.4'), false);
    assert.equal(await allocate('a31b', '10.202.0.5'), false);
    assert.equal(await allocate('a30net', '10.203.0.4'), false);
    assert.equal(await allocate('a30one', '10.203.0.5'), true);
    assert.equal(await allocate('a30two', '10.203.0.6'), true);
    assert.equal(await allocate('a30bc', '10.203.0.7'), false);
    assert.equal(await allocate('a24net', '10.204.0.0'), false);
    assert.equal(await allocate('a24bc', '10.204.0.255'), false);
    assert.equal(await allocate('a24mid', '10.204.0.77'), true);
  });

  const drained = async (old: string, ip: string, keep: string) => {
    const n = old.split('.')[1];
    await sc(`old${n}`, old);
    assert.ok(await allocate(`s${n}`, ip), `Service at ${ip}`);
    await sc(`keep${n}`, keep);
    await tb.client.delete(`${SC}/old${n}`);
    const t0 = Date.now();
    while (Date.now() - t0 < 20_000) {
      if (!(await tb.client.getOrUndefined(`${SC}/old${n}`))) return true;
      await new Promise((r) => setTimeout(r, 500));
    }
    return false;
  };

  test('the drained range is released only when a kept ServiceCIDR serves the IP', async () => {
    assert.equal(await drained('10.205.0.0/24', '10.205.0.6', '10.205.0.4/30'), true, '/30 with the IP in the middle');
    assert.equal(await drained('10.206.0.0/24', '10.206.0.6', '10.206.0.6/32'), false, '/32: still Terminating');
    assert.equal(await drained('10.207.0.0/24', '10.207.0.4', '10.207.0.4/30'), false, '/30 with the IP as its network address');
  });

  // step retire-kept-servicecidrs deletes the kept ones at the end of a run; its rollback makes them Ready again
  test('a ServiceCIDR being deleted keeps the address in use and gives out none; another with its range lets it go (the rollback)', async () => {
    const gone = async (name: string) => !(await tb.client.getOrUndefined(`${SC}/${name}`));
    await sc('kept9', '10.209.0.0/24');
    assert.ok(await allocate('k9', '10.209.0.6'));
    await tb.client.delete(`${SC}/kept9`);
    const o = await eventually('kept9 Ready=False, reason Terminating', async () => {
      const x = await tb.client.get(`${SC}/kept9`);
      return x.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'False' && c.reason === 'Terminating') ? x : undefined;
    }, 20_000, 200);
    assert.ok(o.metadata.deletionTimestamp);
    await new Promise((r) => setTimeout(r, 12_000)); // past the controller's 10 s grace
    assert.equal(await gone('kept9'), false, 'held by the address in use');
    assert.equal(await allocate('k9b', '10.209.0.7'), false, 'an explicit address in it is refused');
    // the rollback: the same range under another name, the original goes, comes back, the other one goes
    await sc('kept9-restore', '10.209.0.0/24');
    await eventually('kept9 to go once kept9-restore holds its range', () => gone('kept9'), 30_000, 500);
    await sc('kept9', '10.209.0.0/24');
    await tb.client.delete(`${SC}/kept9-restore`);
    await eventually('kept9-restore to go', () => gone('kept9-restore'), 30_000, 500);
    const svc = await tb.client.get('/api/v1/namespaces/default/services/k9');
    assert.equal(svc.spec.clusterIP, '10.209.0.6', 'the Service kept its address throughout');
    assert.ok(await allocate('k9c', '10.209.0.7'), 'Ready again: it gives out addresses');
  });

  test('the plan rule picks exactly such blocks', async () => {
    assert.equal(MIN_KEPT_PREFIX[4], 30);
    const [block] = keptRanges(['10.208.0.7'], [parseCidr('10.208.0.0/16')]);
    assert.equal(block, '10.208.0.0/28');
    assert.equal(await drained('10.208.0.0/24', '10.208.0.7', block!), true);
  });
});
