// Changing a Service's clusterIP in place through type ExternalName (brief item 4), on the real
// apiserver + controllers. Tests run in order on one cluster.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, useTestbed } from '../testbed/harness.ts';
import type { KubeObject } from '../testbed/kube.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const NS = 'cip';
const SVC = `/api/v1/namespaces/${NS}/services`;
const IPADDR = '/apis/networking.k8s.io/v1/ipaddresses';
const MERGE = 'application/merge-patch+json';

describe('clusterIP change through ExternalName', () => {
  const tb = useTestbed({ serviceCIDR: OLD, nodes: 2, calicoCRDs: false });

  const patch = (name: string, spec: Record<string, unknown>) => tb.client.raw('PATCH', `${SVC}/${name}`, { spec }, MERGE);
  const slices = async (name: string) =>
    (await tb.client.list(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${name}`))
      .items;
  const readyEndpoints = (items: KubeObject[]) =>
    items.flatMap((s: any) => s.endpoints ?? []).filter((e: any) => e.conditions?.ready).length;

  let original: KubeObject;
  let sliceNames: string[] = [];

  test('setup: Service web (10.96.0.50) with 2 ready endpoints, ServiceCIDR for the new range', async () => {
    const c = tb.client;
    await c.create({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'renumber-new' }, spec: { cidrs: [NEW] } });
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => c.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    await c.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
      },
    });
    original = await c.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS, labels: { keep: 'label' }, annotations: { keep: 'annotation' } },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }], clusterIP: '10.96.0.50' },
    });
    const items = await eventually('2 ready endpoints', async () => {
      const s = await slices('web');
      return readyEndpoints(s) === 2 ? s : undefined;
    });
    sliceNames = items.map((s) => s.metadata.name).sort();
    const ip = await c.get(`${IPADDR}/10.96.0.50`);
    assert.equal(ip.spec.parentRef.name, 'web');
  });

  test('a direct clusterIP change is refused; blanking it with type ClusterIP is silently ignored', async () => {
    const r = await tb.client.raw('PUT', `${SVC}/web`, { ...original, spec: { ...original.spec, clusterIP: '10.100.0.50', clusterIPs: ['10.100.0.50'] } });
    assert.equal(r.status, 422);
    assert.match(r.body.message, /spec\.clusterIPs\[0\]: Invalid value: \["10\.100\.0\.50"\]: may not change once set/);
    const blank = await patch('web', { clusterIP: '', clusterIPs: null });
    assert.equal(blank.status, 200, blank.text);
    assert.equal(blank.body.spec.clusterIP, '10.96.0.50', 'kept: the apiserver copies the allocated IP back');
  });

  test('to ExternalName: clusterIP(s) and family fields cleared, IPAddress released, EndpointSlices left alone', async () => {
    // only type + externalName: the apiserver itself drops the type-dependent fields
    const r = await patch('web', { type: 'ExternalName', externalName: 'web.example.com' });
    assert.equal(r.status, 200, r.text);
    const s = r.body;
    assert.equal(s.metadata.uid, original.metadata.uid);
    assert.equal(s.spec.type, 'ExternalName');
    for (const f of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy']) {
      assert.equal(s.spec[f], undefined, `${f} cleared`);
    }
    assert.deepEqual(s.spec.selector, { app: 'web' }, 'selector kept');
    assert.equal(s.spec.ports.length, 1, 'ports kept');
    await eventually('IPAddress 10.96.0.50 released', async () => !(await tb.client.getOrUndefined(`${IPADDR}/10.96.0.50`)), 5000, 100);
    // The EndpointSlice controller skips ExternalName Services: the old slices stay as they were.
    await new Promise((res) => setTimeout(res, 3000));
    const items = await slices('web');
    assert.deepEqual(items.map((x) => x.metadata.name).sort(), sliceNames);
    assert.equal(readyEndpoints(items), 2);
  });

  test('while ExternalName, the old IP is free for anyone', async () => {
    const r = await tb.client.raw('POST', SVC, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'squatter' },
      spec: { ports: [{ port: 80 }], clusterIP: '10.96.0.50' },
    });
    assert.equal(r.status, 201, r.text);
    await tb.client.delete(`${SVC}/squatter`);
    await eventually('squatter IP released', async () => !(await tb.client.getOrUndefined(`${IPADDR}/10.96.0.50`)), 5000, 100);
  });

  test('back to ClusterIP with an explicit new clusterIP: same uid, labels, annotations, slices', async () => {
    const r = await patch('web', { type: 'ClusterIP', externalName: null, clusterIP: '10.100.0.50', clusterIPs: ['10.100.0.50'] });
    assert.equal(r.status, 200, r.text);
    const s = r.body;
    assert.equal(s.metadata.uid, original.metadata.uid);
    assert.equal(s.metadata.creationTimestamp, original.metadata.creationTimestamp);
    assert.deepEqual(s.metadata.labels, { keep: 'label' });
    assert.deepEqual(s.metadata.annotations, { keep: 'annotation' });
    assert.equal(s.spec.clusterIP, '10.100.0.50');
    assert.deepEqual(s.spec.clusterIPs, ['10.100.0.50']);
    assert.deepEqual(s.spec.ipFamilies, ['IPv4']);
    assert.equal(s.spec.ipFamilyPolicy, 'SingleStack');
    assert.equal(s.spec.internalTrafficPolicy, 'Cluster');
    assert.equal(s.spec.externalName, undefined);
    const ip = await tb.client.get(`${IPADDR}/10.100.0.50`);
    assert.deepEqual(ip.spec.parentRef, { resource: 'services', namespace: NS, name: 'web' });
    assert.equal(await tb.client.getOrUndefined(`${IPADDR}/10.96.0.50`), undefined);
    await new Promise((res) => setTimeout(res, 2000));
    const items = await slices('web');
    assert.deepEqual(items.map((x) => x.metadata.name).sort(), sliceNames, 'same EndpointSlice objects');
    assert.equal(readyEndpoints(items), 2);
  });

  test('going back without clearing externalName leaves it set on the ClusterIP Service', async () => {
    let r = await patch('web', { type: 'ExternalName', externalName: 'web.example.com', clusterIP: '', clusterIPs: [] });
    assert.equal(r.status, 200, r.text);
    r = await patch('web', { type: 'ClusterIP', clusterIP: '10.100.0.51', clusterIPs: ['10.100.0.51'] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.clusterIP, '10.100.0.51');
    assert.equal(r.body.spec.externalName, 'web.example.com', 'stale externalName kept');
    r = await patch('web', { externalName: null });
    assert.equal(r.status, 200, r.text);
  });

  test('NodePort: the nodePort is dropped on the way but can be asked for again', async () => {
    let r = await tb.client.raw('POST', SVC, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'np' },
      spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }] },
    });
    assert.equal(r.status, 201, r.text);
    r = await patch('np', { type: 'ExternalName', externalName: 'np.example.com' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.ports[0].nodePort, undefined);
    assert.equal(r.body.spec.externalTrafficPolicy, undefined);
    r = await patch('np', {
      type: 'NodePort',
      externalName: null,
      clusterIP: '10.100.0.80',
      clusterIPs: ['10.100.0.80'],
      ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }],
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.clusterIP, '10.100.0.80');
    assert.equal(r.body.spec.ports[0].nodePort, 30080);
  });

  test('LoadBalancer: the apiserver accepts the change to ExternalName and clears status.loadBalancer', async () => {
    let r = await tb.client.raw('POST', SVC, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb' },
      spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    assert.equal(r.status, 201, r.text);
    r = await tb.client.raw('PATCH', `${SVC}/lb/status`, { status: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } } }, MERGE);
    assert.equal(r.status, 200, r.text);
    r = await patch('lb', { type: 'ExternalName', externalName: 'lb.example.com' });
    assert.equal(r.status, 200, r.text);
    // nothing stops it: a cloud controller would now release the load balancer
    assert.deepEqual(r.body.status, { loadBalancer: {} });
  });

  test('back into a Terminating ServiceCIDR is refused', async () => {
    await tb.client.delete('/apis/networking.k8s.io/v1/servicecidrs/kubernetes');
    await eventually('kubernetes ServiceCIDR not Ready', async () => {
      const sc = await tb.client.get('/apis/networking.k8s.io/v1/servicecidrs/kubernetes');
      return sc.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'False');
    }, 10_000);
    let r = await patch('web', { type: 'ExternalName', externalName: 'web.example.com' });
    assert.equal(r.status, 200, r.text);
    r = await patch('web', { type: 'ClusterIP', externalName: null, clusterIP: '10.96.0.50', clusterIPs: ['10.96.0.50'] });
    assert.equal(r.status, 422);
    assert.match(r.body.message, /the provided network does not match the current range/);
    // the Service is left as ExternalName: a failed move back must be retried or rolled forward
    const s = await tb.client.get(`${SVC}/web`);
    assert.equal(s.spec.type, 'ExternalName');
  });
});
