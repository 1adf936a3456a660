// The testbed's `podIPAM: 'calico'` mode with calicoIPAM 'stand-in' (Calico's own IPAM, the default, is tested
// in testbed-calico-real.test.ts): the Calico IPAM stand-in (test/testbed/calico-ipam.ts) gives pods
// IPs from IPPools through per-node IPAMBlocks/BlockAffinities/IPAMHandles, and kwok copies them into the
// pod status (test/testbed/stages.ts).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  allocateFromBlock,
  blockAffinityName,
  cidrToName,
  matchNodeSelector,
  newBlockSpec,
  releaseFromBlock,
} from '../testbed/calico-ipam.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';
import { POD_IP_ANNOTATION } from '../testbed/stages.ts';

const CALICO = '/apis/crd.projectcalico.org/v1';
const NS = 'ipam';

function pool(name: string, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name }, spec: { blockSize: 26, nodeSelector: 'all()', ...spec } };
}

function deployment(name: string, replicas: number, podSpec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }], ...podSpec },
      },
    },
  };
}

describe('calico IPAM stand-in', () => {
  const tb = useTestbed({ nodes: 3, podIPAM: 'calico', calicoIPAM: 'stand-in', podCIDR: '10.244.0.0/16' });

  const podsOf = async (app: string) => (await tb.client.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3D${app}`)).items;
  const runningWithIP = (app: string, n: number) =>
    eventually(`${n} ${app} pods Running with an IP`, async () => {
      const pods = (await podsOf(app)).filter((p) => !p.metadata.deletionTimestamp);
      const ok = pods.filter((p) => p.status?.phase === 'Running' && p.status.podIP);
      return ok.length === n && pods.length === n ? ok : undefined;
    }, 60_000);

  test('runs as a supervised component with its own log', async () => {
    const p = tb.processes().find((x) => x.name === 'calico-ipam');
    assert.ok(p?.running, 'calico-ipam process running');
    await eventually('stand-in log', async () => readFileSync(tb.logPath('calico-ipam'), 'utf8').includes('calico-ipam stand-in running'));
  });

  test('pods wait for a pool, then get IPs from per-node blocks with Calico objects', async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => tb.client.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    await tb.client.create(deployment('a', 6));
    await tb.client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hostnet', namespace: NS, labels: { app: 'hostnet' } },
      spec: { hostNetwork: true, containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 0 },
    });
    // no IPPool yet: bound pods stay without an IP
    await eventually('pods bound', async () => (await podsOf('a')).filter((p) => p.spec.nodeName).length === 6);
    await new Promise((r) => setTimeout(r, 1500));
    for (const p of await podsOf('a')) assert.equal(p.status?.podIP, undefined, `${p.metadata.name} has no IP without a pool`);

    await tb.client.create(pool('pool-a', { cidr: '10.244.0.0/16' }));
    const pods = await runningWithIP('a', 6);
    const hostnet = (await runningWithIP('hostnet', 1))[0]!;
    const nodes = new Map((await tb.client.list('/api/v1/nodes')).items.map((n) => [n.metadata.name, n]));
    const affinities = (await tb.client.list(`${CALICO}/blockaffinities`)).items;
    const blocks = new Map((await tb.client.list(`${CALICO}/ipamblocks`)).items.map((b) => [b.spec.cidr as string, b]));
    const handles = new Map((await tb.client.list(`${CALICO}/ipamhandles`)).items.map((h) => [h.metadata.name, h]));

    const ips = new Set<string>();
    for (const p of pods) {
      const ip: string = p.status.podIP;
      ips.add(ip);
      assert.ok(cidrContains('10.244.0.0/16', ip), `${ip} in pool-a`);
      assert.deepEqual(p.status.podIPs, [{ ip }]);
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/podIP'], `${ip}/32`);
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/podIPs'], `${ip}/32`);
      assert.equal(p.metadata.annotations?.[POD_IP_ANNOTATION], ip);
      const node = p.spec.nodeName as string;
      const aff = affinities.find((a) => a.spec.node === node);
      assert.ok(aff, `BlockAffinity for ${node}`);
      assert.equal(aff.metadata.name, blockAffinityName(node, aff.spec.cidr));
      assert.deepEqual({ state: aff.spec.state, deleted: aff.spec.deleted }, { state: 'confirmed', deleted: 'false' });
      assert.ok(cidrContains(aff.spec.cidr, ip), `${ip} in ${node}'s block ${aff.spec.cidr}`);
      const block = blocks.get(aff.spec.cidr)!;
      assert.equal(block.metadata.name, cidrToName(aff.spec.cidr));
      assert.equal(block.spec.affinity, `host:${node}`);
      assert.match(aff.spec.cidr, /\/26$/);
      const handle = `k8s-pod-network.${p.metadata.uid}`;
      const ord = Number(BigInt(ip.split('.').reduce((a, o) => a * 256 + Number(o), 0)) - BigInt(aff.spec.cidr.split('/')[0].split('.').reduce((a: number, o: string) => a * 256 + Number(o), 0)));
      const attr = block.spec.attributes[block.spec.allocations[ord]];
      assert.equal(attr.handle_id, handle);
      assert.deepEqual({ ns: attr.secondary.namespace, pod: attr.secondary.pod, node: attr.secondary.node }, { ns: NS, pod: p.metadata.name, node });
      assert.ok(!block.spec.unallocated.includes(ord));
      assert.deepEqual(handles.get(handle)?.spec.block, { [aff.spec.cidr]: 1 });
    }
    assert.equal(ips.size, 6, 'unique IPs');
    // hostNetwork: no Calico IP, the node's address
    assert.equal(hostnet.metadata.annotations?.['cni.projectcalico.org/podIP'], undefined);
    const nodeIP = nodes.get(hostnet.spec.nodeName)!.status.addresses.find((a: { type: string }) => a.type === 'InternalIP').address;
    assert.equal(hostnet.status.podIP, nodeIP);
    assert.equal(handles.size, 6, 'one handle per pod-network pod');
  });

  test('a disabled pool is not used; a newly created pool is (its own block size)', async () => {
    const before = new Map((await podsOf('a')).map((p) => [p.metadata.name, p.status.podIP]));
    await tb.client.mergePatch(`${CALICO}/ippools/pool-a`, { spec: { disabled: true } });
    await tb.client.create(pool('pool-b', { cidr: '10.50.0.0/16', blockSize: 28 }));
    await tb.client.create(deployment('b', 4));
    const pods = await runningWithIP('b', 4);
    for (const p of pods) assert.ok(cidrContains('10.50.0.0/16', p.status.podIP), `${p.status.podIP} from pool-b`);
    const affs = (await tb.client.list(`${CALICO}/blockaffinities`)).items.filter((a) => a.spec.cidr.startsWith('10.50.'));
    assert.ok(affs.length >= 1 && affs.every((a) => a.spec.cidr.endsWith('/28')), 'pool-b blocks are /28');
    // running pods keep their old addresses
    for (const p of await podsOf('a')) assert.equal(p.status.podIP, before.get(p.metadata.name));
  });

  test('deleting pods frees their ordinals and handles; empty blocks and affinities stay', async () => {
    const pods = await podsOf('b');
    const uids = pods.map((p) => p.metadata.uid!);
    const cidrs = new Set(
      (await tb.client.list(`${CALICO}/blockaffinities`)).items.filter((a) => a.spec.cidr.startsWith('10.50.')).map((a) => a.spec.cidr as string),
    );
    await tb.client.delete(`/apis/apps/v1/namespaces/${NS}/deployments/b`);
    await eventually('pods of b gone', async () => (await podsOf('b')).length === 0);
    await eventually('handles of b deleted', async () => {
      const hs = (await tb.client.list(`${CALICO}/ipamhandles`)).items.map((h) => h.metadata.name);
      return uids.every((u) => !hs.includes(`k8s-pod-network.${u}`));
    });
    const blocks = (await tb.client.list(`${CALICO}/ipamblocks`)).items.filter((b) => cidrs.has(b.spec.cidr));
    assert.equal(blocks.length, cidrs.size, 'IPAMBlocks stay');
    for (const b of blocks) {
      assert.ok(b.spec.allocations.every((a: number | null) => a === null), `${b.spec.cidr} empty`);
      assert.deepEqual(b.spec.attributes, []);
      assert.equal(b.spec.unallocated.length, 16);
    }
    const affs = (await tb.client.list(`${CALICO}/blockaffinities`)).items.filter((a) => cidrs.has(a.spec.cidr));
    assert.equal(affs.length, cidrs.size, 'BlockAffinities stay');
  });

  test('a nodeSelector pool serves only matching nodes; others wait until a pool fits', async () => {
    await tb.client.mergePatch(`${CALICO}/ippools/pool-b`, { spec: { disabled: true } });
    await tb.client.mergePatch('/api/v1/nodes/tb-node-0', { metadata: { labels: { pool: 'special' } } });
    await tb.client.create(pool('pool-c', { cidr: '10.60.0.0/16', nodeSelector: "pool == 'special'" }));
    await tb.client.create(pool('pool-x', { cidr: '10.70.0.0/16', nodeSelector: "pool in {'special'}" })); // outside the subset
    await tb.client.create(deployment('c0', 2, { nodeSelector: { 'kubernetes.io/hostname': 'tb-node-0' } }));
    await tb.client.create(deployment('c1', 2, { nodeSelector: { 'kubernetes.io/hostname': 'tb-node-1' } }));
    const c0 = await runningWithIP('c0', 2);
    for (const p of c0) assert.ok(cidrContains('10.60.0.0/16', p.status.podIP), `${p.status.podIP} from pool-c`);
    await new Promise((r) => setTimeout(r, 1500));
    const c1 = await podsOf('c1');
    assert.equal(c1.length, 2);
    for (const p of c1) assert.equal(p.status?.podIP, undefined, `${p.metadata.name} on tb-node-1 waits`);
    const log = readFileSync(tb.logPath('calico-ipam'), 'utf8');
    assert.match(log, /no eligible IPPool for its node; waiting/);
    assert.match(log, /pool-x: nodeSelector "pool in \{'special'\}" is not supported here/);
    // a pool for the other nodes: the waiting pods get addresses (retried every second)
    await tb.client.create(pool('pool-d', { cidr: '10.80.0.0/16', nodeSelector: '!has(pool)' }));
    const got = await runningWithIP('c1', 2);
    for (const p of got) assert.ok(cidrContains('10.80.0.0/16', p.status.podIP), `${p.status.podIP} from pool-d`);
  });

  test('selector subset and block bookkeeping follow Calico (pure functions)', () => {
    const labels = { a: '1', 'kubernetes.io/os': 'linux' };
    assert.equal(matchNodeSelector('', labels), true);
    assert.equal(matchNodeSelector('all()', labels), true);
    assert.equal(matchNodeSelector('!all()', labels), false);
    assert.equal(matchNodeSelector("a == '1' && has(kubernetes.io/os)", labels), true);
    assert.equal(matchNodeSelector("a != '1'", labels), false);
    assert.equal(matchNodeSelector("b != '1'", labels), true, '!= matches a missing label');
    assert.equal(matchNodeSelector('!has(b) && a == "1"', labels), true);
    assert.equal(matchNodeSelector("a in {'1'}", labels), undefined);
    assert.equal(matchNodeSelector("a == '1' || b == '2'", labels), undefined);

    const b = newBlockSpec('10.1.2.0/30', 'n1');
    assert.deepEqual(b.unallocated, [0, 1, 2, 3]);
    assert.equal(allocateFromBlock(b, 'h1', {}), '10.1.2.0');
    assert.equal(allocateFromBlock(b, 'h2', {}), '10.1.2.1');
    assert.equal(allocateFromBlock(b, 'h3', {}), '10.1.2.2');
    assert.deepEqual(b.allocations, [0, 1, 2, null]);
    assert.equal(releaseFromBlock(b, 'h2'), 1);
    // freed ordinals go to the end; unused attributes are dropped and indexes renumbered
    assert.deepEqual(b.unallocated, [3, 1]);
    assert.deepEqual(b.allocations, [0, null, 1, null]);
    assert.deepEqual(b.attributes.map((a) => a.handle_id), ['h1', 'h3']);
    assert.equal(allocateFromBlock(b, 'h4', {}), '10.1.2.3');
    assert.equal(allocateFromBlock(b, 'h5', {}), '10.1.2.1');
    assert.equal(allocateFromBlock(b, 'h6', {}), undefined, 'full');
    assert.equal(b.sequenceNumber, 5);
  });
});
