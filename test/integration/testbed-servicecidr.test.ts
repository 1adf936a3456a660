// ServiceCIDR behaviour of the real kube-apiserver + kube-controller-manager (brief items 1, 2, 3, 5).
// Tests run in order and build on each other's state. What they assert is what the apiserver did when
// measured (docs/testbed.md); where that differs from shared/notes/domain-facts.md it says so.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const SC = '/apis/networking.k8s.io/v1/servicecidrs';
const NS = 'cidr-tests';
const SVC = `/api/v1/namespaces/${NS}/services`;

type Cond = { type: string; status: string; reason?: string; message?: string };
const ready = (sc: KubeObject | undefined): Cond | undefined =>
  sc?.status?.conditions?.find((c: Cond) => c.type === 'Ready');

function service(name: string, clusterIP?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: NS },
    spec: { selector: { app: name }, ports: [{ port: 80 }], ...(clusterIP ? { clusterIP } : {}) },
  };
}

describe('ServiceCIDR on the real apiserver', () => {
  const tb = useTestbed({ serviceCIDR: OLD, nodes: 1, calicoCRDs: false });

  /** POSTs a Service; returns its clusterIP or the apiserver's refusal. */
  async function createService(name: string, clusterIP?: string): Promise<{ ip?: string; status: number; message?: string }> {
    const r = await tb.client.raw('POST', SVC, service(name, clusterIP));
    if (r.status === 201) return { ip: r.body.spec.clusterIP, status: r.status };
    return { status: r.status, message: r.body?.message };
  }

  test('setup', async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    const sc = await tb.client.get(`${SC}/kubernetes`);
    assert.deepEqual(sc.spec.cidrs, [OLD]);
    assert.deepEqual(sc.metadata.finalizers, ['networking.k8s.io/service-cidr-finalizer']);
    assert.equal(ready(sc)?.status, 'True');
  });

  test('(1) a new ServiceCIDR (networking.k8s.io/v1) becomes Ready', async () => {
    const t0 = Date.now();
    await tb.client.post(SC, { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'renumber-new' }, spec: { cidrs: [NEW] } });
    const sc = await eventually('renumber-new Ready', async () => {
      const s = await tb.client.get(`${SC}/renumber-new`);
      return ready(s)?.status === 'True' ? s : undefined;
    }, 10_000, 50);
    process.stderr.write(`# ServiceCIDR Ready after ${Date.now() - t0} ms\n`);
    assert.deepEqual(sc.metadata.finalizers, ['networking.k8s.io/service-cidr-finalizer']);
    // spec.cidrs is immutable
    const r = await tb.client.raw('PUT', `${SC}/renumber-new`, { ...sc, spec: { cidrs: ['10.101.0.0/16'] } });
    assert.equal(r.status, 422);
    assert.match(r.body.message, /immutable/);
    // a CIDR with host bits set is refused (e.g. 10.200.0.0/12)
    const bad = await tb.client.raw('POST', SC, { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'bad' }, spec: { cidrs: ['10.200.0.0/12'] } });
    assert.equal(bad.status, 422);
    assert.match(bad.body.message, /must not have bits set beyond the prefix length/);
  });

  test('(2) a Service takes an explicit clusterIP inside the new ServiceCIDR; IPAddress points at it', async () => {
    const r = await createService('explicit-new', '10.100.0.20');
    assert.equal(r.ip, '10.100.0.20', r.message);
    const ip = await tb.client.get('/apis/networking.k8s.io/v1/ipaddresses/10.100.0.20');
    assert.deepEqual(ip.spec.parentRef, { resource: 'services', namespace: NS, name: 'explicit-new' });
    assert.equal(ip.metadata.labels?.['ipaddress.kubernetes.io/managed-by'], 'ipallocator.k8s.io');
    // outside every ServiceCIDR: refused
    const out = await createService('explicit-outside', '10.200.0.1');
    assert.equal(out.status, 422);
    assert.match(out.message ?? '', /the provided network does not match the current range/);
  });

  test('(5a) with two Ready ServiceCIDRs a dynamic ClusterIP may come from either (no preference for the new one)', async () => {
    // MetaAllocator iterates a Go map of allocators: the order is random per allocation, not by age,
    // size or address. Measured on v1.35.4: 86/14 (old/new) over 100 Services.
    const n = 80;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => createService(`dyn-${i}`)));
    let inOld = 0;
    let inNew = 0;
    for (const r of results) {
      assert.ok(r.ip, r.message);
      if (cidrContains(OLD, r.ip)) inOld++;
      else if (cidrContains(NEW, r.ip)) inNew++;
      else assert.fail(`${r.ip} outside both ServiceCIDRs`);
    }
    process.stderr.write(`# dynamic ClusterIPs with two Ready ServiceCIDRs: ${inOld} old, ${inNew} new of ${n}\n`);
    assert.ok(inOld > 0 && inNew > 0, `both ranges used (old ${inOld}, new ${inNew})`);
  });

  let kubernetesUid = '';
  test('(3) deleting the `kubernetes` ServiceCIDR while Services use it leaves it Terminating, and it stays', async () => {
    const before = await tb.client.get(`${SC}/kubernetes`);
    kubernetesUid = before.metadata.uid!;
    const del = await tb.client.raw('DELETE', `${SC}/kubernetes`);
    assert.equal(del.status, 200);
    const check = async () => {
      const sc = await tb.client.get(`${SC}/kubernetes`);
      assert.equal(sc.metadata.uid, kubernetesUid);
      assert.ok(sc.metadata.deletionTimestamp, 'deletionTimestamp set');
      assert.deepEqual(sc.metadata.finalizers, ['networking.k8s.io/service-cidr-finalizer']);
      const c = ready(sc);
      assert.equal(c?.status, 'False');
      assert.equal(c?.reason, 'Terminating');
      assert.match(c?.message ?? '', /There are still IPAddresses referencing the ServiceCIDR/);
    };
    await eventually('Ready=False on the deleted ServiceCIDR', async () => {
      await check();
      return true;
    }, 10_000);
    // the controller's grace period is 10 s: it must still be there well after it
    await new Promise((r) => setTimeout(r, 15_000));
    await check();
  });

  test('(5b) an explicit clusterIP inside the Terminating ServiceCIDR is refused', async () => {
    const r = await createService('explicit-old', '10.96.7.7');
    assert.equal(r.status, 422);
    assert.match(r.message ?? '', /failed to allocate IP 10\.96\.7\.7: the provided network does not match the current range/);
  });

  test('(5c) dynamic ClusterIPs then come only from the Ready ServiceCIDR; old Services keep their IPs', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => createService(`after-${i}`)));
    for (const r of results) {
      assert.ok(r.ip, r.message);
      assert.ok(cidrContains(NEW, r.ip), `${r.ip} in ${NEW}`);
    }
    const k = await tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    assert.equal(k.spec.clusterIP, '10.96.0.1');
  });

  test('(5d) a second ServiceCIDR covering the old range accepts old IPs again and lets `kubernetes` finish deleting; the apiserver (old flag) recreates it', async () => {
    await tb.client.post(SC, { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'old-bridge' }, spec: { cidrs: [OLD] } });
    await eventually('old-bridge Ready', async () => ready(await tb.client.get(`${SC}/old-bridge`))?.status === 'True', 10_000, 50);
    const r = await createService('explicit-old-bridged', '10.96.7.7');
    assert.equal(r.ip, '10.96.7.7', r.message);
    // the finalizer controller sees every IP covered by old-bridge and releases `kubernetes`;
    // the apiserver's default-ServiceCIDR controller then recreates it from its flag
    const t0 = Date.now();
    const recreated = await eventually('`kubernetes` ServiceCIDR recreated with a new uid', async () => {
      const sc = await tb.client.getOrUndefined(`${SC}/kubernetes`);
      return sc && sc.metadata.uid !== kubernetesUid && !sc.metadata.deletionTimestamp ? sc : undefined;
    }, 60_000, 250);
    process.stderr.write(`# \`kubernetes\` ServiceCIDR deleted and recreated ${Date.now() - t0} ms after the bridge\n`);
    assert.deepEqual(recreated.spec.cidrs, [OLD]);
    await eventually('recreated `kubernetes` Ready', async () => ready(await tb.client.get(`${SC}/kubernetes`))?.status === 'True', 10_000);
  });

  test('restart with the new range: the existing `kubernetes` ServiceCIDR keeps its old range', async () => {
    // (official procedure, partly) a restarted apiserver does not rewrite an existing default ServiceCIDR
    await tb.restartApiserver({ serviceCIDR: NEW });
    const sc = await tb.client.get(`${SC}/kubernetes`);
    assert.deepEqual(sc.spec.cidrs, [OLD]);
  });
});
