// Calico's own data plane in the testbed (issue 49, items 1–2): calico-node built from the Calico monorepo module
// (calico-build.sh dataplane, CGO_ENABLED=0) runs its start-up, its VXLAN tunnel address allocator and felix in
// both node network namespaces of the data plane, on the kubernetes datastore, with an IPPool in vxlanMode Always.
// Felix creates vxlan.calico, routes the other node's IPAM block through it (its VTEP in the FDB and the neighbour
// table), and TCP from one node netns to the other node's tunnel address goes through VXLAN.
// Then pods through Calico's own CNI plugin (calico CNI ADD with calico-ipam in the node netns; the testbed's
// IPAM-only driver is off): workload veths felix programs as endpoints, TCP from a pod on one node to a pod on the
// other through VXLAN, and to a ClusterIP through the real kube-proxy; a deleted pod's CNI DEL frees its address.
//
// Needs root (ip netns) and the calico-node build, which only `npm run test:full` (KUBE_RENUMBER_TEST_FULL=1) and the
// bench make: skipped otherwise.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CalicoNodes, FELIX_HEALTH_PORT, IPV4_ADDRESS_ANNOTATION, VXLAN_IFACE, VXLAN_TUNNEL_ADDR_ANNOTATION } from '../testbed/calico-node.ts';
import { Dataplane, listNetns } from '../testbed/dataplane.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { POD_IP_ANNOTATION } from '../testbed/stages.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';

const CALICO = '/apis/crd.projectcalico.org/v1';
const POOL_CIDR = '10.244.0.0/16';
const NS = 'cdp';
const WEB_IP = '10.96.0.80';
const isRoot = process.getuid?.() === 0;
const full = process.env.KUBE_RENUMBER_TEST_FULL === '1';
const skip = !isRoot ? 'needs root for ip netns' : !full ? "Calico's data plane (calico-node build): npm run test:full (KUBE_RENUMBER_TEST_FULL=1) only" : false;

interface LinkJson {
  ifname: string;
  address: string;
  mtu: number;
  linkinfo?: { info_kind?: string; info_data?: { id?: number; local?: string; port?: number } };
  stats64?: { rx: { packets: number }; tx: { packets: number } };
}

describe("Calico's own data plane: calico-node (felix) with VXLAN in the node network namespaces", { skip }, () => {
  const tb = useTestbed({ nodes: 2, podIPAM: 'calico', podCIDR: POOL_CIDR, calicoCniDriver: false });
  let dp: Dataplane | undefined;
  let cn: CalicoNodes | undefined;
  const timings: Record<string, number> = {};

  before(
    async () => {
      await tb.client.create({
        apiVersion: 'crd.projectcalico.org/v1',
        kind: 'IPPool',
        metadata: { name: 'vxlan-pool' },
        spec: { cidr: POOL_CIDR, blockSize: 26, vxlanMode: 'Always', ipipMode: 'Never', natOutgoing: true, nodeSelector: 'all()' },
      });
      let t = Date.now();
      dp = await Dataplane.start(tb);
      timings.dataplaneStart = Date.now() - t;
      t = Date.now();
      cn = await CalicoNodes.start(dp);
      timings.calicoStart = Date.now() - t;
      process.stderr.write(`[calico-felix test] data plane ${timings.dataplaneStart} ms, calico-node on 2 nodes ${timings.calicoStart} ms (felix ready: ${JSON.stringify(Object.fromEntries(cn.readyMs))})\n`);
    },
    { timeout: 20 * 60_000 },
  );
  after(async () => {
    await cn?.stop();
    if (dp) {
      const prefix = dp.prefix;
      await dp.stop();
      assert.deepEqual((await listNetns()).filter((n) => n.startsWith(prefix)), [], 'no netns left');
    }
  });

  const d = () => {
    if (!dp || !cn) throw new Error('the data plane did not start');
    return { dp, cn };
  };
  const json = async <T>(netns: string, cmd: string, args: string[]): Promise<T> => {
    const r = await d().dp.exec(netns, cmd, args);
    assert.equal(r.code, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout || '[]') as T;
  };
  /** Per node: its fabric address, tunnel address and the CIDR of the IPAM block that holds the tunnel address. */
  const nodeInfo = async () => {
    const blocks = (await tb.client.list(`${CALICO}/ipamblocks`)).items as KubeObject[];
    return Promise.all(
      d().dp.nodes().map(async (n) => {
        const k = await tb.client.get(`/api/v1/nodes/${n.name}`);
        const tunnel = k.metadata.annotations?.[VXLAN_TUNNEL_ADDR_ANNOTATION] ?? '';
        const block = blocks.find((b) => tunnel && cidrContains(b.spec.cidr, tunnel));
        return { ...n, tunnel, block: block?.spec.cidr as string | undefined, affinity: block?.spec.affinity as string | undefined, annotations: k.metadata.annotations ?? {} };
      }),
    );
  };

  test("start-up writes each Node's address; the allocator gives each a VXLAN tunnel address from a block affine to it", async () => {
    const nodes = await nodeInfo();
    assert.equal(nodes.length, 2);
    for (const n of nodes) {
      assert.equal(n.annotations[IPV4_ADDRESS_ANNOTATION], `${n.fabricIP}/24`, `${n.name}: calico-node -startup's IP`);
      assert.ok(n.tunnel && cidrContains(POOL_CIDR, n.tunnel), `${n.name}: tunnel address ${n.tunnel} in the pool`);
      assert.equal(n.affinity, `host:${n.name}`, `${n.name}: its tunnel address is in a block affine to it`);
      const handle = await tb.client.get(`${CALICO}/ipamhandles/vxlan-tunnel-addr-${n.name}`);
      assert.equal(handle.spec.handleID, `vxlan-tunnel-addr-${n.name}`);
    }
    assert.notEqual(nodes[0]!.block, nodes[1]!.block, 'one block per node');
    const ci = await tb.client.get(`${CALICO}/clusterinformations/default`);
    assert.equal(ci.spec.datastoreReady, true);
    // felix answers its readiness check in every node netns
    for (const n of nodes) {
      const r = await d().dp.exec(n.netns, join(d().dp.binDir, 'dpnet'), ['get', '-timeout', '2s', `http://127.0.0.1:${FELIX_HEALTH_PORT}/readiness`]);
      assert.equal(r.code, 0, `${n.name} felix readiness: ${r.stderr}`);
    }
  });

  test(`felix creates ${VXLAN_IFACE} (VNI 4096, port 4789, on the node's fabric address) holding the tunnel address`, async () => {
    for (const n of await nodeInfo()) {
      const [link] = await eventually(`${VXLAN_IFACE} on ${n.name}`, async () => {
        const l = await json<LinkJson[]>(n.netns, 'ip', ['-j', '-d', 'link', 'show', 'dev', VXLAN_IFACE]).catch(() => []);
        return l.length ? l : undefined;
      }, 60_000, 500);
      assert.equal(link!.linkinfo?.info_kind, 'vxlan');
      assert.equal(link!.linkinfo?.info_data?.id, 4096);
      assert.equal(link!.linkinfo?.info_data?.port, 4789);
      assert.equal(link!.linkinfo?.info_data?.local, n.fabricIP);
      await eventually(`${n.tunnel}/32 on ${VXLAN_IFACE} of ${n.name}`, async () => {
        const a = await json<{ addr_info: { local: string; prefixlen: number }[] }[]>(n.netns, 'ip', ['-j', '-4', 'addr', 'show', 'dev', VXLAN_IFACE]);
        return a[0]?.addr_info.some((x) => x.local === n.tunnel && x.prefixlen === 32);
      }, 60_000, 500);
    }
  });

  test("each node routes the other node's block through vxlan.calico, its VTEP in the FDB and the neighbour table", async () => {
    const nodes = await nodeInfo();
    for (const [i, n] of nodes.entries()) {
      const other = nodes[1 - i]!;
      const [otherLink] = await json<LinkJson[]>(other.netns, 'ip', ['-j', 'link', 'show', 'dev', VXLAN_IFACE]);
      await eventually(`${n.name}: route ${other.block} via ${other.tunnel} dev ${VXLAN_IFACE} onlink`, async () => {
        const routes = await json<{ dst: string; gateway?: string; flags?: string[] }[]>(n.netns, 'ip', ['-j', '-4', 'route', 'show', 'dev', VXLAN_IFACE]);
        return routes.some((r) => r.dst === other.block && r.gateway === other.tunnel && (r.flags ?? []).includes('onlink'));
      }, 60_000, 500);
      await eventually(`${n.name}: FDB ${otherLink!.address} dst ${other.fabricIP}`, async () => {
        const fdb = await json<{ mac: string; dst?: string }[]>(n.netns, 'bridge', ['-j', 'fdb', 'show', 'dev', VXLAN_IFACE]);
        return fdb.some((f) => f.mac === otherLink!.address && f.dst === other.fabricIP);
      }, 60_000, 500);
      await eventually(`${n.name}: neighbour ${other.tunnel} lladdr ${otherLink!.address}`, async () => {
        const neigh = await json<{ dst: string; lladdr?: string }[]>(n.netns, 'ip', ['-j', '-4', 'neigh', 'show', 'dev', VXLAN_IFACE]);
        return neigh.some((x) => x.dst === other.tunnel && x.lladdr === otherLink!.address);
      }, 60_000, 500);
    }
  });

  test("TCP from one node netns to the other node's tunnel address goes through VXLAN, both ways", async () => {
    const nodes = await nodeInfo();
    const dpnet = join(d().dp.binDir, 'dpnet');
    for (const n of nodes) d().dp.spawnIn(n.netns, `vxlan-server-${n.name}`, dpnet, ['serve', '-listen', `${n.tunnel}:8080`, '-name', `tunnel-${n.name}`]);
    for (const [i, n] of nodes.entries()) {
      const other = nodes[1 - i]!;
      const stats = async (netns: string) => (await json<LinkJson[]>(netns, 'ip', ['-j', '-s', 'link', 'show', 'dev', VXLAN_IFACE]))[0]!.stats64!;
      const before = { tx: (await stats(n.netns)).tx.packets, rx: (await stats(other.netns)).rx.packets };
      const r = await eventually(`GET http://${other.tunnel}:8080/ from ${n.name}`, async () => {
        const x = await d().dp.exec(n.netns, dpnet, ['get', '-timeout', '2s', `http://${other.tunnel}:8080/`]);
        return x.code === 0 ? x : undefined;
      }, 30_000, 500);
      assert.equal(r.stdout.trim(), `tunnel-${other.name}`);
      const afterTx = (await stats(n.netns)).tx.packets;
      const afterRx = (await stats(other.netns)).rx.packets;
      assert.ok(afterTx > before.tx, `${n.name} sent through ${VXLAN_IFACE} (${before.tx} → ${afterTx} packets)`);
      assert.ok(afterRx > before.rx, `${other.name} received through ${VXLAN_IFACE} (${before.rx} → ${afterRx} packets)`);
    }
  });

  test("felix's iptables rules (cali- chains) stand beside kube-proxy's (KUBE- chains) in each node netns", async () => {
    for (const n of d().dp.nodes()) {
      const r = await d().dp.exec(n.netns, 'iptables-save', []);
      assert.equal(r.code, 0, r.stderr);
      for (const chain of ['cali-INPUT', 'cali-FORWARD', 'cali-PREROUTING', 'cali-POSTROUTING']) assert.match(r.stdout, new RegExp(`^:${chain} `, 'm'), `${n.name}: ${chain}`);
      assert.match(r.stdout, /^:KUBE-SERVICES /m, `${n.name}: kube-proxy's rules`);
      // VXLAN is let in from the hosts in felix's cali40all-vxlan-net set only, which holds the other node's address
      assert.match(r.stdout, /-A cali-INPUT -p udp .*--dports 4789 -m set --match-set cali40all-vxlan-net src .*-j ACCEPT/, `${n.name}: VXLAN from known hosts`);
      assert.match(r.stdout, /-A cali-INPUT -p udp .*Drop IPv4 VXLAN packets from non-allowed hosts.*--dports 4789 .*-j DROP/, `${n.name}: VXLAN from others dropped`);
      const other = d().dp.nodes().find((o) => o.name !== n.name)!;
      const set = await d().dp.exec(n.netns, 'ipset', ['list', 'cali40all-vxlan-net']);
      assert.equal(set.code, 0, set.stderr);
      assert.match(set.stdout, new RegExp(`^${other.fabricIP.replaceAll('.', '\\.')}$`, 'm'), `${n.name}: ${other.fabricIP} in cali40all-vxlan-net`);
    }
  });
  const podsReady = (names: string[]) =>
    eventually(`pods ${names.join(', ')} Running with Calico addresses`, async () => {
      const pods = (await tb.client.list(`/api/v1/namespaces/${NS}/pods`)).items as KubeObject[];
      const ok = names.map((n) => pods.find((p) => p.metadata.name === n && p.status?.phase === 'Running' && p.status.podIP));
      return ok.every(Boolean) ? (ok as KubeObject[]) : undefined;
    }, 120_000, 300);

  test('pods through the calico CNI plugin: Calico addresses, workload veths, felix endpoints; TCP pod to pod across nodes through VXLAN', async () => {
    const { dp, cn } = d();
    const [n0, n1] = dp.nodes();
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => tb.client.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    for (const [name, node] of [['a', n0!.name], ['b', n1!.name], ['b2', n1!.name]] as const) {
      await tb.client.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { app: name === 'a' ? 'a' : 'b' } },
        spec: { nodeName: node, terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'web', ports: [{ containerPort: 8080 }] }] },
      });
    }
    const t = Date.now();
    cn.follow();
    const pods = await podsReady(['a', 'b', 'b2']);
    process.stderr.write(`[calico-felix test] 3 pods Running with addresses from the calico CNI plugin in ${Date.now() - t} ms (ADD ${Math.round(cn.stats.addMs / Math.max(1, cn.stats.adds))} ms on average)\n`);
    const nodes = await nodeInfo();
    const affinities = (await tb.client.list(`${CALICO}/blockaffinities`)).items as KubeObject[];
    for (const p of pods) {
      const ip: string = p.status.podIP;
      const node = nodes.find((n) => n.name === p.spec.nodeName)!;
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/podIP'], `${ip}/32`, 'the plugin wrote the WorkloadEndpoint (pod annotations)');
      assert.equal(p.metadata.annotations?.['cni.projectcalico.org/containerID'], p.metadata.uid);
      assert.equal(p.metadata.annotations?.[POD_IP_ANNOTATION], ip);
      assert.ok(affinities.some((a) => a.spec.node === node.name && cidrContains(a.spec.cidr, ip)), `${ip} from a block of ${node.name}`);
      const cp = cn.pod({ namespace: NS, name: p.metadata.name })!;
      assert.match(cp.iface, /^cali[0-9a-f]{11}$/, 'the plugin named the host veth');
      // the plugin's /32 route to the workload in the node netns, felix's endpoint chains for its veth
      const routes = await json<{ dst: string; dev: string }[]>(node.netns, 'ip', ['-j', '-4', 'route', 'show', `${ip}/32`]);
      assert.deepEqual(routes.map((r) => r.dev), [cp.iface], `${ip}/32 dev ${cp.iface} in ${node.name}`);
      await eventually(`felix programs ${cp.iface} on ${node.name}`, async () => {
        const r = await dp.exec(node.netns, 'iptables-save', ['-t', 'filter']);
        return r.stdout.includes(`:cali-tw-${cp.iface} `) && r.stdout.includes(`:cali-fw-${cp.iface} `);
      }, 60_000, 500);
    }
    const ipOf = (name: string) => pods.find((p) => p.metadata.name === name)!.status.podIP as string;
    const txBefore = (await json<LinkJson[]>(n0!.netns, 'ip', ['-j', '-s', 'link', 'show', 'dev', VXLAN_IFACE]))[0]!.stats64!.tx.packets;
    const r = await eventually('a → b', async () => {
      const x = await cn.get({ namespace: NS, name: 'a' }, `http://${ipOf('b')}:8080/`, 2000);
      return x.code === 0 ? x : undefined;
    }, 60_000, 500);
    assert.equal(r.stdout.trim(), `${NS}/b`);
    const back = await cn.get({ namespace: NS, name: 'b' }, `http://${ipOf('a')}:8080/`, 2000);
    assert.equal(back.stdout.trim(), `${NS}/a`, back.stderr);
    const txAfter = (await json<LinkJson[]>(n0!.netns, 'ip', ['-j', '-s', 'link', 'show', 'dev', VXLAN_IFACE]))[0]!.stats64!.tx.packets;
    assert.ok(txAfter > txBefore, `${n0!.name} sent through ${VXLAN_IFACE} (${txBefore} → ${txAfter} packets)`);
  });

  test("a ClusterIP from a pod on one node to pods on the other, through the real kube-proxy and Calico's VXLAN", async () => {
    const { dp, cn } = d();
    await tb.client.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: { selector: { app: 'b' }, clusterIP: WEB_IP, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    await dp.waitServicesProgrammed([{ ip: WEB_IP, port: 80 }]);
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const r = await cn.get({ namespace: NS, name: 'a' }, `http://${WEB_IP}/`, 2000);
      assert.equal(r.code, 0, r.stderr);
      seen.add(r.stdout.trim());
    }
    assert.deepEqual([...seen].sort(), [`${NS}/b`, `${NS}/b2`], 'both endpoints on the other node answer');
  });

  test("a deleted pod: CNI DEL gives its address back to Calico's IPAM, its veth and netns go", async () => {
    const { dp, cn } = d();
    const b2 = cn.pod({ namespace: NS, name: 'b2' })!;
    await tb.client.delete(`/api/v1/namespaces/${NS}/pods/b2`);
    await eventually('b2 torn down', async () => cn.pod({ namespace: NS, name: 'b2' }) === undefined, 60_000, 300);
    assert.ok(!(await listNetns()).includes(b2.netns), 'its netns is deleted');
    const links = await json<{ ifname: string }[]>(dp.nodeNetns(b2.node), 'ip', ['-j', 'link', 'show']);
    assert.ok(!links.some((l) => l.ifname === b2.iface), `${b2.iface} is gone`);
    await eventually('its IPAM handle released', async () => (await tb.client.getOrUndefined(`${CALICO}/ipamhandles/k8s-pod-network.${b2.uid}`)) === undefined, 30_000, 300);
    assert.equal(cn.stats.failures, 0, 'no plugin run failed');
  });
});
