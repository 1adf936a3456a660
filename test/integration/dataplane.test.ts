// The testbed's real data plane (issue #6, phase 1): node and pod network namespaces, the real
// kube-proxy (iptables mode) DNATing a ClusterIP to a pod in another node's netns, the real CoreDNS
// answering name.ns.svc.cluster.local at the kube-dns Service IP. Needs root (ip netns).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Dataplane, deployCoreDNS, listNetns } from '../testbed/dataplane.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';

const NS = 'dp';
const SERVICE_CIDR = '10.96.0.0/16';
const DNS_IP = '10.96.0.10';
const WEB_IP = '10.96.0.80';
const isRoot = process.getuid?.() === 0;

describe('data plane: kube-proxy + CoreDNS in network namespaces', { skip: isRoot ? false : 'needs root for ip netns' }, () => {
  const tb = useTestbed({ serviceCIDR: SERVICE_CIDR, nodes: 2, calicoCRDs: false });
  let dp: Dataplane | undefined;
  const timings: Record<string, number> = {};

  before(async () => {
    const t = Date.now();
    dp = await Dataplane.start(tb);
    timings.dataplaneStart = Date.now() - t;
  });

  after(async () => {
    if (!dp) return;
    const prefix = dp.prefix;
    const t = Date.now();
    await dp.stop();
    timings.dataplaneStop = Date.now() - t;
    const left = (await listNetns()).filter((n) => n.startsWith(prefix));
    process.stderr.write(`[dataplane test] timings (ms): ${JSON.stringify(timings)}\n`);
    assert.deepEqual(left, [], 'every netns of the data plane is deleted');
  });

  test('a ClusterIP reaches a pod in the other node netns; names resolve through CoreDNS', async () => {
    const c = tb.client;
    const d = dp!;
    let t = Date.now();
    await deployCoreDNS(tb, { clusterIP: DNS_IP });
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => c.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    await c.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            // one replica per node
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' },
                ],
              },
            },
            containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 8080 }] }],
          },
        },
      },
    });
    await c.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: { selector: { app: 'web' }, clusterIP: WEB_IP, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    const pods = await eventually('2 web pods Running with IPs', async () => {
      const items = (await c.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dweb`)).items;
      return items.length === 2 && items.every((p) => p.status?.phase === 'Running' && p.status?.podIP) ? items : undefined;
    });
    assert.notEqual(pods[0]!.spec.nodeName, pods[1]!.spec.nodeName, 'one web pod per node');
    timings.workloadsRunning = Date.now() - t;

    t = Date.now();
    const s = await d.syncPods();
    assert.equal(s.added, 3, `wired ${JSON.stringify(d.pods())}`);
    await d.waitCoreDNSReady();
    timings.podsWiredAndCoreDNSReady = Date.now() - t;

    // a client pod and the web pod on the other node
    const client = { namespace: NS, name: pods[0]!.metadata.name };
    const other = `${NS}/${pods[1]!.metadata.name}`;
    const direct = await d.get(client, `http://${pods[1]!.status.podIP}:8080/`);
    assert.equal(direct.code, 0, `pod-to-pod across nodes: ${direct.stderr}\n${d.logTails()}`);
    assert.equal(direct.stdout.trim(), other);

    t = Date.now();
    // through the ClusterIP: kube-proxy's rules in the client's node netns pick one of the 2 endpoints
    const seen = new Map<string, number>();
    await eventually(
      `an answer from ${other} through ${WEB_IP}:80`,
      async () => {
        const r = await d.get(client, `http://${WEB_IP}/`, 2000);
        const who = r.code === 0 ? r.stdout.trim() : `error: ${r.stderr.trim()}`;
        seen.set(who, (seen.get(who) ?? 0) + 1);
        return seen.has(other);
      },
      60_000,
      100,
    ).catch((e) => {
      throw new Error(`${e instanceof Error ? e.message : e}; answers ${JSON.stringify([...seen])}\n${d.logTails()}`);
    });
    timings.firstClusterIPAnswerFromOtherNode = Date.now() - t;
    const nat = await d.natRules(pods[0]!.spec.nodeName);
    assert.match(nat, new RegExp(`-A KUBE-SERVICES -d ${WEB_IP.replaceAll('.', '\\.')}/32 .*-j KUBE-SVC-`), 'kube-proxy wrote the Service rule');
    assert.match(nat, new RegExp(`DNAT .*--to-destination ${pods[1]!.status.podIP.replaceAll('.', '\\.')}:8080`), 'and the DNAT to the other pod');

    // after the rules are in: every request succeeds, both endpoints answer
    seen.clear();
    for (let i = 0; i < 20; i++) {
      const r = await d.get(client, `http://${WEB_IP}/`, 2000);
      assert.equal(r.code, 0, `request ${i} through the ClusterIP failed: ${r.stderr}`);
      seen.set(r.stdout.trim(), (seen.get(r.stdout.trim()) ?? 0) + 1);
    }
    assert.ok(seen.has(other), `answers ${JSON.stringify([...seen])}`);
    process.stderr.write(`[dataplane test] answers to 20 requests through ${WEB_IP}: ${JSON.stringify([...seen])}\n`);

    // DNS through the kube-dns ClusterIP (DNAT to CoreDNS in its pod netns)
    t = Date.now();
    const answer = await eventually(
      'web.dp.svc.cluster.local resolved',
      async () => {
        const r = await d.resolve(client, `web.${NS}.svc.cluster.local`, DNS_IP, 2000);
        return r.code === 0 ? r.stdout.trim() : undefined;
      },
      30_000,
      200,
    ).catch((e) => {
      throw new Error(`${e instanceof Error ? e.message : e}\n${d.logTails()}`);
    });
    timings.firstDNSAnswer = Date.now() - t;
    assert.equal(answer, WEB_IP);
    const api = await d.resolve(client, 'kubernetes.default.svc.cluster.local', DNS_IP);
    assert.equal(api.stdout.trim(), '10.96.0.1');
    const missing = await d.resolve(client, `nope.${NS}.svc.cluster.local`, DNS_IP);
    assert.notEqual(missing.code, 0, 'an unknown name is NXDOMAIN');
  });

  test('syncPods rewires a replaced pod: old netns deleted, the new pod answers through the ClusterIP', async () => {
    const c = tb.client;
    const d = dp!;
    const list = async () => (await c.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dweb`)).items;
    const before = await list();
    const [keep, gone] = before;
    const goneNetns = d.podNetns({ namespace: NS, name: gone!.metadata.name });
    assert.ok(goneNetns);
    await c.delete(`/api/v1/namespaces/${NS}/pods/${gone!.metadata.name}?gracePeriodSeconds=0`);
    const fresh = await eventually('a replacement pod Running with an IP', async () => {
      const items = await list();
      const n = items.find((p) => p.metadata.name !== keep!.metadata.name && p.metadata.name !== gone!.metadata.name);
      return items.length === 2 && n?.status?.phase === 'Running' && n.status.podIP ? n : undefined;
    });
    const t = Date.now();
    assert.deepEqual(await d.syncPods(), { added: 1, removed: 1 });
    timings.rewireReplacedPod = Date.now() - t;
    assert.ok(!(await d.namespaces()).includes(goneNetns!), 'the old pod netns is deleted');
    const client = { namespace: NS, name: keep!.metadata.name };
    const want = `${NS}/${fresh.metadata.name}`;
    await eventually(`an answer from ${want} through ${WEB_IP}`, async () => {
      const r = await d.get(client, `http://${WEB_IP}/`, 2000);
      return r.code === 0 && r.stdout.trim() === want;
    }, 30_000, 100);
  });
});
