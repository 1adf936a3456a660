// The testbed itself against the real apiserver: version, nodes and podCIDRs, kwok pods (6), the
// fixture (7), apiserver restart with a new --service-cluster-ip-range.

import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DEFAULT_VERSION } from '../testbed/build.ts';
import { LB_INGRESS_IP, populate, type FixtureResult } from '../testbed/fixture.ts';
import { eventually as waitFor, useTestbed } from '../testbed/harness.ts';
import { cidrContains, nthIP } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';

const SERVICE_CIDR = '10.96.0.0/16';
const POD_CIDR = '10.244.0.0/20';


describe('testbed', () => {
  const tb = useTestbed({ serviceCIDR: SERVICE_CIDR, podCIDR: POD_CIDR, nodeMask: 24, nodes: 3 });

  test('serves the built version and writes a 0600 kubeconfig', async () => {
    const v = await tb.client.get<{ gitVersion: string }>('/version');
    assert.equal(v.gitVersion, DEFAULT_VERSION);
    assert.equal(statSync(tb.kubeconfigPath).mode & 0o777, 0o600);
    const r = await tb.kubectl(['version', '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.clientVersion.gitVersion, DEFAULT_VERSION);
    assert.equal(j.serverVersion.gitVersion, DEFAULT_VERSION);
  });

  test('nodes are Ready with distinct podCIDRs inside --cluster-cidr', async () => {
    const nodes = await tb.client.list('/api/v1/nodes');
    assert.equal(nodes.items.length, 3);
    const cidrs = new Set<string>();
    for (const n of nodes.items) {
      assert.ok(n.spec.podCIDR, `${n.metadata.name} has a podCIDR`);
      assert.match(n.spec.podCIDR, /\/24$/);
      assert.ok(cidrContains(POD_CIDR, n.spec.podCIDR.split('/')[0]), `${n.spec.podCIDR} inside ${POD_CIDR}`);
      assert.deepEqual(n.spec.podCIDRs, [n.spec.podCIDR]);
      cidrs.add(n.spec.podCIDR);
      const ready = n.status.conditions.find((c: { type: string }) => c.type === 'Ready');
      assert.equal(ready?.status, 'True');
    }
    assert.equal(cidrs.size, 3);
  });

  test('the default ServiceCIDR and `kubernetes` Service follow --service-cluster-ip-range', async () => {
    const sc = await tb.client.get('/apis/networking.k8s.io/v1/servicecidrs/kubernetes');
    assert.deepEqual(sc.spec.cidrs, [SERVICE_CIDR]);
    const ready = sc.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');
    const svc = await tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    assert.equal(svc.spec.clusterIP, nthIP(SERVICE_CIDR, 1));
  });

  test('(6) kwok pods of a Deployment run with IPs inside their node podCIDR', async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kwok-pods' } });
    await waitFor('default SA', () => tb.client.getOrUndefined('/api/v1/namespaces/kwok-pods/serviceaccounts/default'));
    await tb.client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'spread', namespace: 'kwok-pods' },
      spec: {
        replicas: 6,
        selector: { matchLabels: { app: 'spread' } },
        template: {
          metadata: { labels: { app: 'spread' } },
          spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
        },
      },
    });
    const pods = await waitFor('6 running pods', async () => {
      const l = await tb.client.list('/api/v1/namespaces/kwok-pods/pods?labelSelector=app%3Dspread');
      const running = l.items.filter((p) => p.status?.phase === 'Running' && p.status.podIP);
      return running.length === 6 ? running : undefined;
    });
    const nodes = new Map(
      (await tb.client.list('/api/v1/nodes')).items.map((n) => [n.metadata.name, n.spec.podCIDR as string]),
    );
    const ips = new Set<string>();
    for (const p of pods) {
      const cidr = nodes.get(p.spec.nodeName);
      assert.ok(cidr, `pod ${p.metadata.name} bound to a known node (${p.spec.nodeName})`);
      assert.ok(cidrContains(cidr, p.status.podIP), `${p.status.podIP} inside ${cidr} of ${p.spec.nodeName}`);
      assert.deepEqual(
        p.status.podIPs.map((x: { ip: string }) => x.ip),
        [p.status.podIP],
      );
      ips.add(p.status.podIP);
    }
    assert.equal(ips.size, 6, 'pod IPs are unique');
    // Endpoints follow: the EndpointSlice controller sees the kwok pods as ready
    await tb.client.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'spread', namespace: 'kwok-pods' },
      spec: { selector: { app: 'spread' }, ports: [{ port: 80 }] },
    });
    await waitFor('6 ready endpoints', async () => {
      const s = await tb.client.list('/apis/discovery.k8s.io/v1/namespaces/kwok-pods/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dspread');
      const n = s.items.flatMap((x: any) => x.endpoints ?? []).filter((e: any) => e.conditions?.ready).length;
      return n === 6;
    });
  });

  describe('(7) fixture', () => {
    let fx: FixtureResult;
    test('populates', async () => {
      const t0 = Date.now();
      fx = await populate(tb, { namespaces: 2, deployments: 2, replicas: 2, services: 40 });
      const ms = Date.now() - t0;
      process.stderr.write(`# fixture with ${fx.services.length} services, ${fx.expectedPods} pods in ${ms} ms\n`);
      assert.deepEqual(fx.namespaces, ['tb-app-0', 'tb-app-1']);
    });

    test('objects look as specified', async () => {
      const c = tb.client;
      // kube-dns at the 10th IP, CoreDNS-like deployment behind it
      const dns = await c.get('/api/v1/namespaces/kube-system/services/kube-dns');
      assert.equal(dns.spec.clusterIP, nthIP(SERVICE_CIDR, 10));
      assert.equal(fx.kubeDnsIP, '10.96.0.10');
      assert.deepEqual(
        dns.spec.ports.map((p: any) => `${p.port}/${p.protocol}`),
        ['53/UDP', '53/TCP', '9153/TCP'],
      );
      const coredns = await c.list('/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns');
      assert.equal(coredns.items.filter((p) => p.status.phase === 'Running').length, 2);

      for (const ns of fx.namespaces) {
        const svcs = new Map((await c.list(`/api/v1/namespaces/${ns}/services`)).items.map((s) => [s.metadata.name, s]));
        const get = (n: string): KubeObject => {
          const s = svcs.get(n);
          assert.ok(s, `${ns}/${n} exists`);
          return s;
        };
        assert.equal(get('web-0').spec.type, 'ClusterIP');
        assert.ok(cidrContains(SERVICE_CIDR, get('web-0').spec.clusterIP));
        assert.equal(get('db').spec.clusterIP, 'None');
        assert.equal(get('svc-nodeport').spec.type, 'NodePort');
        assert.ok(get('svc-nodeport').spec.ports[0].nodePort >= 30000);
        assert.equal(get('svc-lb').spec.type, 'LoadBalancer');
        assert.deepEqual(get('svc-lb').status.loadBalancer.ingress, [{ ip: LB_INGRESS_IP, ipMode: 'VIP' }]);
        assert.equal(get('svc-external').spec.type, 'ExternalName');
        assert.equal(get('svc-external').spec.clusterIP, undefined);
        assert.equal(get('svc-multiport').spec.ports.length, 3);
        const pdbs = (await c.list(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`)).items.map((p) => p.metadata.name);
        assert.deepEqual(pdbs.sort(), ['db', 'web-0']);
        const sts = await c.get(`/apis/apps/v1/namespaces/${ns}/statefulsets/db`);
        assert.equal(sts.status.readyReplicas, 2);
      }
      const bulk = await c.list('/api/v1/services?labelSelector=kube-renumber.test%2Fbulk%3Dtrue');
      assert.equal(bulk.items.length, 40);
      const ds = await c.get('/apis/apps/v1/namespaces/tb-app-0/daemonsets/agent');
      assert.equal(ds.status.numberReady, 3);

      // all pods Running with an IP inside the pod CIDR
      const pods = (await c.list('/api/v1/pods')).items.filter((p) => p.metadata.namespace !== 'kwok-pods');
      assert.equal(pods.length, fx.expectedPods);
      for (const p of pods) {
        assert.equal(p.status.phase, 'Running', `${p.metadata.namespace}/${p.metadata.name}`);
        assert.ok(cidrContains(POD_CIDR, p.status.podIP), `${p.status.podIP} in ${POD_CIDR}`);
      }

      // Calico
      const pool = await c.get('/apis/crd.projectcalico.org/v1/ippools/default-ipv4-ippool');
      assert.equal(pool.spec.cidr, POD_CIDR);
      assert.equal(pool.spec.blockSize, 26);
      assert.equal(pool.spec.ipipMode, 'Always');
      assert.equal(pool.spec.natOutgoing, true);
      const cm = await c.get('/api/v1/namespaces/kube-system/configmaps/calico-config');
      const cni = JSON.parse(cm.data!.cni_network_config!);
      assert.deepEqual(cni.plugins[0].ipam, { type: 'calico-ipam' });
      for (const crd of ['ipamblocks', 'blockaffinities', 'ipamhandles', 'ipamconfigs', 'ipreservations']) {
        const l = await c.list(`/apis/crd.projectcalico.org/v1/${crd}`);
        assert.ok(Array.isArray(l.items), `${crd} served`);
      }
    });
  });

  test('restartApiserver changes --service-cluster-ip-range; the `kubernetes` ServiceCIDR keeps its range', async () => {
    const before = await tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    await tb.restartApiserver({ serviceCIDR: '10.100.0.0/16' });
    assert.equal(tb.serviceCIDR, '10.100.0.0/16');
    // The apiserver never rewrites an existing `kubernetes` ServiceCIDR (it only reports the mismatch).
    const sc = await tb.client.get('/apis/networking.k8s.io/v1/servicecidrs/kubernetes');
    assert.deepEqual(sc.spec.cidrs, [SERVICE_CIDR]);
    const after = await tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.spec.clusterIP, before.spec.clusterIP);
    // the cluster still works after the restart: kubectl, the controllers and kwok reconnect
    const r = await tb.kubectl(['get', 'nodes', '-o', 'name']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').length, 3);
  });
});
