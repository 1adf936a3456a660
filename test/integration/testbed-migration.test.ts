// The official manual Service CIDR migration ("Kubernetes Default Service CIDR Reconfiguration", the
// procedure upstream's TestMigrateServiceCIDR encodes), run step by step on the real apiserver, with
// the final state checked. Tests run in order on one cluster.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const SC = '/apis/networking.k8s.io/v1/servicecidrs';
const NS = 'mig';
const SVC = `/api/v1/namespaces/${NS}/services`;
const N = 20;

const readyStatus = (sc: KubeObject | undefined) =>
  sc?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.status as string | undefined;

describe('official Service CIDR migration procedure', () => {
  const tb = useTestbed({ serviceCIDR: OLD, nodes: 1, calicoCRDs: false });
  let oldKubernetesUid = '';

  test('0. services in the old range', async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        tb.client.post(SVC, { metadata: { name: `s${i}` }, spec: { selector: { app: `s${i}` }, ports: [{ port: 80 }] } }),
      ),
    );
    const l = await tb.client.list(SVC);
    assert.ok(l.items.every((s) => cidrContains(OLD, s.spec.clusterIP)));
    oldKubernetesUid = (await tb.client.get(`${SC}/kubernetes`)).metadata.uid!;
  });

  test('1. add a ServiceCIDR for the new range; 2. delete the `kubernetes` ServiceCIDR (stays Terminating)', async () => {
    await tb.client.post(SC, { metadata: { name: 'migration-new' }, spec: { cidrs: [NEW] } });
    await eventually('new Ready', async () => readyStatus(await tb.client.get(`${SC}/migration-new`)) === 'True', 10_000);
    await tb.client.delete(`${SC}/kubernetes`);
    await eventually('old Terminating', async () => readyStatus(await tb.client.get(`${SC}/kubernetes`)) === 'False', 10_000);
  });

  test('3. recreate every Service: the new IPs all come from the new range', async () => {
    for (let i = 0; i < N; i++) {
      await tb.client.delete(`${SVC}/s${i}`);
      const s = await tb.client.post(SVC, { metadata: { name: `s${i}` }, spec: { selector: { app: `s${i}` }, ports: [{ port: 80 }] } });
      assert.ok(cidrContains(NEW, s.spec.clusterIP), `${s.spec.clusterIP} in ${NEW}`);
    }
    // only default/kubernetes still holds an old IP, so the old ServiceCIDR is still Terminating
    const sc = await tb.client.get(`${SC}/kubernetes`);
    assert.equal(sc.metadata.uid, oldKubernetesUid);
    assert.ok(sc.metadata.deletionTimestamp);
  });

  test('4. restart kube-apiserver with the new --service-cluster-ip-range; 5. delete default/kubernetes: recreated with the first new IP', async () => {
    await tb.restartApiserver({ serviceCIDR: NEW });
    const before = await tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    assert.equal(before.spec.clusterIP, '10.96.0.1', 'a restart alone does not move it');
    await tb.client.delete('/api/v1/namespaces/default/services/kubernetes');
    const after = await eventually('default/kubernetes recreated', async () => {
      const s = await tb.client.getOrUndefined('/api/v1/namespaces/default/services/kubernetes');
      return s && s.metadata.uid !== before.metadata.uid ? s : undefined;
    }, 30_000);
    assert.equal(after.spec.clusterIP, '10.100.0.1');
  });

  test('the old `kubernetes` ServiceCIDR finishes deleting and is recreated from the new flag', async () => {
    const t0 = Date.now();
    const sc = await eventually('`kubernetes` ServiceCIDR recreated', async () => {
      const s = await tb.client.getOrUndefined(`${SC}/kubernetes`);
      return s && s.metadata.uid !== oldKubernetesUid ? s : undefined;
    }, 60_000, 250);
    process.stderr.write(`# old \`kubernetes\` ServiceCIDR replaced ${Date.now() - t0} ms after default/kubernetes moved\n`);
    assert.deepEqual(sc.spec.cidrs, [NEW]);
    await eventually('recreated Ready', async () => readyStatus(await tb.client.get(`${SC}/kubernetes`)) === 'True', 10_000);
  });

  test('6. delete the temporary ServiceCIDR: gone after the ~10 s grace (its IPs are covered by `kubernetes`)', async () => {
    await tb.client.delete(`${SC}/migration-new`);
    await eventually('migration-new gone', async () => !(await tb.client.getOrUndefined(`${SC}/migration-new`)), 30_000);
    const ips = await tb.client.list('/apis/networking.k8s.io/v1/ipaddresses');
    assert.equal(ips.items.length, N + 1);
    assert.ok(ips.items.every((ip) => cidrContains(NEW, ip.metadata.name)));
    const all = await tb.client.list('/api/v1/services');
    assert.ok(all.items.every((s) => cidrContains(NEW, s.spec.clusterIP)));
    const left = (await tb.client.list(SC)).items.map((s) => `${s.metadata.name}=${s.spec.cidrs.join(',')}`);
    assert.deepEqual(left, [`kubernetes=${NEW}`]);
  });
});
