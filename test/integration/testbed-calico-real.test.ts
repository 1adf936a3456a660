// The testbed's `podIPAM: 'calico'` mode with Calico's own IPAM (the default): every pod's address comes from
// Calico's calico-ipam plugin run as a CNI IPAM plugin (test/testbed/calico-cni.ts), calico-kube-controllers
// runs, the CRDs are those of the same Calico commit, and calicoctl reads it all back.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { calicoctl, calicoIpamCheck } from '../testbed/calicoctl.ts';
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

const ipNum = (ip: string) => ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);

describe("Calico's own IPAM in the testbed", () => {
  const tb = useTestbed({ nodes: 3, podIPAM: 'calico', podCIDR: '10.244.0.0/16' });

  const podsOf = async (app: string) => (await tb.client.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3D${app}`)).items;
  const runningWithIP = (app: string, n: number) =>
    eventually(`${n} ${app} pods Running with an IP`, async () => {
      const pods = (await podsOf(app)).filter((p) => !p.metadata.deletionTimestamp);
      const ok = pods.filter((p) => p.status?.phase === 'Running' && p.status.podIP);
      return ok.length === n && pods.length === n ? ok : undefined;
    }, 90_000);

  test("Calico's components run, on Calico's own CRDs, the datastore marked ready", async () => {
    for (const name of ['calico-cni', 'calico-kube-controllers']) {
      assert.ok(tb.processes().find((x) => x.name === name)?.running, `${name} running`);
    }
    assert.equal(tb.processes().find((x) => x.name === 'calico-ipam'), undefined, 'no stand-in');
    await eventually('driver log', async () => readFileSync(tb.logPath('calico-cni'), 'utf8').includes('calico CNI driver running'));
    // kube-controllers' node controller, on the kubernetes datastore
    await eventually('kube-controllers started its node controller', async () => readFileSync(tb.logPath('calico-kube-controllers'), 'utf8').includes('Starting Node controller'), 30_000);
    // Calico's CRD set (the project's own has no KubeControllersConfiguration nor FelixConfiguration)
    const crds = (await tb.client.list('/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).items.map((c) => c.metadata.name);
    for (const n of ['kubecontrollersconfigurations', 'felixconfigurations', 'ipamblocks', 'blockaffinities', 'ipamhandles', 'ippools']) {
      assert.ok(crds.includes(`${n}.crd.projectcalico.org`), n);
    }
    const ci = await tb.client.get(`${CALICO}/clusterinformations/default`);
    assert.equal(ci.spec.datastoreReady, true);
    const ver = await calicoctl(tb, ['version']);
    assert.equal(ver.code, 0, ver.stderr);
    assert.match(ver.stdout, /Client Version:\s+v1\.11\.0/);
  });

  test("pods wait for a pool, then get addresses from Calico's calico-ipam, recorded as Calico records them", async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => tb.client.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    await tb.client.create(deployment('a', 6));
    await tb.client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hostnet', namespace: NS, labels: { app: 'hostnet' } },
      spec: { hostNetwork: true, containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 0 },
    });
    await eventually('pods bound', async () => (await podsOf('a')).filter((p) => p.spec.nodeName).length === 6);
    // no IPPool: Calico's ADD fails, the driver tries again (as a kubelet retries the sandbox)
    await eventually('a failed ADD logged', async () => /ADD ipam\/a-.*exit \d+/.test(readFileSync(tb.logPath('calico-cni'), 'utf8')), 30_000);
    for (const p of await podsOf('a')) assert.equal(p.status?.podIP, undefined, `${p.metadata.name} has no IP without a pool`);

    await tb.client.create(pool('pool-a', { cidr: '10.244.0.0/16' }));
    const pods = await runningWithIP('a', 6);
    const hostnet = (await runningWithIP('hostnet', 1))[0]!;
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
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/containerID'], p.metadata.uid);
      assert.equal(p.metadata.annotations?.[POD_IP_ANNOTATION], ip);
      const node = p.spec.nodeName as string;
      const aff = affinities.find((a) => a.spec.node === node && cidrContains(a.spec.cidr, ip));
      assert.ok(aff, `a BlockAffinity of ${node} holds ${ip}`);
      assert.equal(aff.spec.state, 'confirmed');
      assert.match(aff.spec.cidr, /\/26$/);
      const block = blocks.get(aff.spec.cidr)!;
      assert.equal(block.spec.affinity, `host:${node}`);
      const ord = ipNum(ip) - ipNum(aff.spec.cidr.split('/')[0]);
      const attr = block.spec.attributes[block.spec.allocations[ord]];
      const handle = `k8s-pod-network.${p.metadata.uid}`;
      assert.equal(attr.handle_id, handle);
      assert.deepEqual({ ns: attr.secondary.namespace, pod: attr.secondary.pod, node: attr.secondary.node }, { ns: NS, pod: p.metadata.name, node });
      assert.equal(Object.values(handles.get(handle)?.spec.block ?? {}).reduce((a: number, b) => a + Number(b), 0), 1, `${handle} holds one address`);
    }
    assert.equal(ips.size, 6, 'unique IPs');
    assert.equal(hostnet.metadata.annotations?.['cni.projectcalico.org/podIP'], undefined, 'hostNetwork: no Calico address');
    assert.equal(handles.size, 6, 'one handle per pod-network pod');

    const check = await calicoIpamCheck(tb);
    assert.equal(check.problems, 0, check.output);
    assert.equal(check.allocations, 6, check.output);
    const pools = JSON.parse((await calicoctl(tb, ['get', 'ippools', '-o', 'json'])).stdout);
    assert.deepEqual(pools.items.map((p: any) => p.spec.cidr), ['10.244.0.0/16']);
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
    for (const p of await podsOf('a')) assert.equal(p.status.podIP, before.get(p.metadata.name), 'running pods keep their addresses');
  });

  test('deleted pods: the plugin\'s DEL frees their addresses and handles; empty blocks and affinities stay', async () => {
    const pods = await podsOf('b');
    const uids = pods.map((p) => p.metadata.uid!);
    const cidrs = new Set((await tb.client.list(`${CALICO}/blockaffinities`)).items.filter((a) => a.spec.cidr.startsWith('10.50.')).map((a) => a.spec.cidr as string));
    await tb.client.delete(`/apis/apps/v1/namespaces/${NS}/deployments/b`);
    await eventually('pods of b gone', async () => (await podsOf('b')).length === 0);
    await eventually('handles of b deleted', async () => {
      const hs = (await tb.client.list(`${CALICO}/ipamhandles`)).items.map((h) => h.metadata.name);
      return uids.every((u) => !hs.includes(`k8s-pod-network.${u}`));
    });
    const blocks = (await tb.client.list(`${CALICO}/ipamblocks`)).items.filter((b) => cidrs.has(b.spec.cidr));
    assert.equal(blocks.length, cidrs.size, 'IPAMBlocks stay');
    for (const b of blocks) assert.ok(b.spec.allocations.every((a: number | null) => a === null), `${b.spec.cidr} empty`);
    const affs = (await tb.client.list(`${CALICO}/blockaffinities`)).items.filter((a) => cidrs.has(a.spec.cidr));
    assert.equal(affs.length, cidrs.size, 'BlockAffinities stay');
    const check = await calicoIpamCheck(tb);
    assert.equal(check.problems, 0, check.output);
    assert.equal(check.leaked, 0, check.output);
  });

  test('calicoctl ipam check finds an address Calico gave to no pod, and nothing once the plugin\'s DEL released it', async () => {
    // an allocation made for a pod that does not exist: the plugin's ADD with a name no pod has
    const cni = JSON.stringify({
      cniVersion: '0.3.1', name: 'k8s-pod-network', type: 'calico', datastore_type: 'kubernetes', nodename: 'tb-node-0', log_level: 'warning',
      ipam: { type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'false' }, kubernetes: { kubeconfig: tb.kubeconfigPath },
    });
    const { spawnSync } = await import('node:child_process');
    const plugin = tb.calicoctlPath()!.replace(/calicoctl$/, 'calico-ipam');
    const r = spawnSync(plugin, [], {
      input: cni,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'leak-0', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent', CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=nobody` },
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const leaked = JSON.parse(r.stdout).ips[0].address.split('/')[0];
    const check = await calicoIpamCheck(tb);
    assert.equal(check.leaked, 1, check.output);
    assert.match(check.output, new RegExp(`${leaked.replace(/\./g, '\\.')} leaked`));
    const del = spawnSync(plugin, [], { input: cni, encoding: 'utf8', env: { PATH: process.env.PATH, CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'leak-0', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent', CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=nobody` } });
    assert.equal(del.status, 0, del.stdout + del.stderr);
    assert.equal((await calicoIpamCheck(tb)).problems, 0);
    assert.ok(tb.processes().find((x) => x.name === 'calico-kube-controllers')?.running, 'calico-kube-controllers still running');
  });
});
