// The real cilium-operator (cilium-operator-generic, built from the Go module by
// `npm run testbed -- build-cilium`) against the testbed control plane. The test plays the Cilium agents'
// part: it writes CiliumNode objects as an agent does (pkg/nodediscovery/nodediscovery.go: created with an
// owner reference to the Node and no pod CIDR; in multi-pool mode the agent then asks for addresses in
// spec.ipam.pools.requested and lists what it keeps in spec.ipam.pools.allocated). It checks what the
// operator allocates, and measures what it does when the pool list changes while it runs, which decides
// the Pod CIDR path for each mode (docs/platforms.md, "Cilium").
//
// Runs only when the operator binary is already built: the build is not part of `npm test`
// (docs/testbed.md has its cold time); otherwise the file reports one skipped test saying so.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { CILIUM_VERSION, ciliumOperatorPath } from '../testbed/cilium-build.ts';
import { freePorts, Proc, type Testbed } from '../testbed/cluster.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';

const operator = ciliumOperatorPath();
const NODES = 3;
const CN = '/apis/cilium.io/v2/ciliumnodes';
const POOLS = '/apis/cilium.io/v2alpha1/ciliumpodippools';
const OLD = '10.10.0.0/16';
const NEW = '10.20.0.0/16';

/** Starts cilium-operator-generic under the testbed's supervisor, with `ipamArgs` for its IPAM mode. */
async function startOperator(tb: Testbed, name: string, ipamArgs: string[]): Promise<Proc> {
  const [api, gops] = await freePorts(2);
  const proc = new Proc(
    name,
    join(tb.binDir, 'tbsup'),
    operator!,
    [
      `--k8s-kubeconfig-path=${tb.kubeconfigPath}`,
      '--k8s-namespace=kube-system',
      '--cilium-pod-namespace=kube-system',
      '--identity-allocation-mode=crd',
      '--enable-ipv4=true',
      '--enable-ipv6=false',
      `--operator-api-serve-addr=127.0.0.1:${api}`,
      `--gops-port=${gops}`,
      '--enable-metrics=false',
      // The testbed has no agents: nothing may remove CiliumNodes, taint or restart pods behind the test's back.
      '--nodes-gc-interval=0',
      '--unmanaged-pod-watcher-interval=0',
      '--remove-cilium-node-taints=false',
      '--set-cilium-is-up-condition=false',
      ...ipamArgs,
    ],
    tb.logPath(name),
    5,
  );
  return proc;
}

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cilium-operator-resource-lock';

/** The holder of the operator's leader Lease now ('' when none). */
async function leaseHolder(tb: Testbed): Promise<string> {
  return (await tb.client.getOrUndefined(LEASE))?.spec?.holderIdentity ?? '';
}

/** Waits until `proc` leads: the Lease names a holder other than `previous` (the operator starts IPAM as leader). */
async function waitLeader(tb: Testbed, proc: Proc, previous: string): Promise<void> {
  await eventually(
    `${proc.name} to take kube-system/cilium-operator-resource-lock`,
    async () => {
      if (!proc.running()) throw new Error(`${proc.name} exited ${proc.exitCode}\n${proc.logTail(40)}`);
      const h = await leaseHolder(tb);
      return h !== '' && h !== previous;
    },
    180_000,
    500,
  );
}

async function waitCRDs(tb: Testbed, names: string[]): Promise<void> {
  for (const n of names) {
    await eventually(
      `CRD ${n} Established (registered by the operator)`,
      async () => {
        const crd = await tb.client.getOrUndefined(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`);
        return (crd?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True');
      },
      180_000,
      500,
    );
  }
}

/** A CiliumNode as the agent creates it (nodediscovery.go mutateNodeResource): owned by its Node, no pod CIDR. */
function agentCiliumNode(node: KubeObject, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumNode',
    metadata: {
      name: node.metadata.name,
      labels: node.metadata.labels ?? {},
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid }],
    },
    spec: { addresses: [{ type: 'InternalIP', ip: '127.0.0.1' }], ...spec },
  };
}

const pool = (name: string, cidr: string): KubeObject => ({
  apiVersion: 'cilium.io/v2alpha1',
  kind: 'CiliumPodIPPool',
  metadata: { name },
  spec: { ipv4: { cidrs: [cidr], maskSize: 24 } },
});

type Allocated = { pool: string; cidrs?: string[] }[];
const allocatedOf = (cn: KubeObject | undefined): Allocated => cn?.spec?.ipam?.pools?.allocated ?? [];
const cidrsOf = (cn: KubeObject | undefined, poolName: string): string[] => allocatedOf(cn).filter((a) => a.pool === poolName).flatMap((a) => a.cidrs ?? []);

/** Sets spec.ipam.pools as the agent would (it owns `requested` and writes back what it keeps of `allocated`). */
async function agentWritesPools(tb: Testbed, name: string, pools: { requested: { pool: string; needed: { 'ipv4-addrs': number } }[]; allocated: Allocated }) {
  await eventually(`the agent's update of CiliumNode ${name}`, async () => {
    const cn = await tb.client.get(`${CN}/${name}`);
    cn.spec.ipam = { ...(cn.spec.ipam ?? {}), pools };
    await tb.client.put(`${CN}/${name}`, cn); // a conflict with the operator's write throws: retried
    return true;
  });
}

function ms(t0: number): number {
  return Date.now() - t0;
}

if (!operator) {
  test(`cilium-operator ${CILIUM_VERSION} against the testbed`, { skip: `cilium-operator-generic ${CILIUM_VERSION} is not built; \`npm run testbed -- build-cilium\` builds it (not part of npm test)` }, () => {});
} else {
  describe(`cilium-operator ${CILIUM_VERSION}, multi-pool IPAM`, () => {
    const tb = useTestbed({ nodes: NODES, calicoCRDs: false });
    let op: Proc;
    let nodes: KubeObject[];
    before(async () => {
      op = await startOperator(tb, 'cilium-operator-mp', ['--ipam=multi-pool']);
      await waitCRDs(tb, ['ciliumnodes.cilium.io', 'ciliumpodippools.cilium.io']);
      await waitLeader(tb, op, '');
      nodes = (await tb.client.list('/api/v1/nodes')).items;
      assert.equal(nodes.length, NODES);
    });
    after(async () => op?.stop());

    test('allocates each requesting CiliumNode a /24 of the pool it asks for', async (t: TestContext) => {
      await tb.client.post(POOLS, pool('default', OLD));
      const t0 = Date.now();
      for (const n of nodes) {
        await tb.client.post(CN, agentCiliumNode(n, { ipam: { pools: { requested: [{ pool: 'default', needed: { 'ipv4-addrs': 16 } }] } } }));
      }
      const got = await eventually('every CiliumNode allocated from pool default', async () => {
        const cns = (await tb.client.list(CN)).items;
        return cns.length === NODES && cns.every((cn) => cidrsOf(cn, 'default').length === 1) ? cns : undefined;
      }, 120_000, 250);
      t.diagnostic(`${NODES} CiliumNodes allocated in ${ms(t0)} ms`);
      const cidrs = got.map((cn) => cidrsOf(cn, 'default')[0]!);
      assert.equal(new Set(cidrs).size, NODES, `distinct per-node CIDRs: ${cidrs.join(' ')}`);
      for (const c of cidrs) {
        assert.match(c, /\/24$/);
        assert.ok(cidrContains(OLD, c.split('/')[0]!), `${c} inside ${OLD}`);
      }
    });

    test('moves node by node to a pool added at runtime, then the drained pool is deleted', async (t: TestContext) => {
      await tb.client.post(POOLS, pool('renumbered', NEW));
      for (const n of nodes) {
        const name = n.metadata.name as string;
        const t0 = Date.now();
        // The node's pods were restarted into the new pool: the agent asks for it and no longer keeps the old CIDR.
        await agentWritesPools(tb, name, { requested: [{ pool: 'renumbered', needed: { 'ipv4-addrs': 16 } }], allocated: [] });
        const cn = await eventually(`${name} allocated from pool renumbered`, async () => {
          const c = await tb.client.get(`${CN}/${name}`);
          return cidrsOf(c, 'renumbered').length === 1 ? c : undefined;
        }, 60_000, 250);
        t.diagnostic(`${name}: ${cidrsOf(cn, 'renumbered')[0]} from renumbered in ${ms(t0)} ms`);
        assert.ok(cidrContains(NEW, cidrsOf(cn, 'renumbered')[0]!.split('/')[0]!));
        assert.deepEqual(cidrsOf(cn, 'default'), [], 'the released CIDR of the old pool is not given back');
      }
      await tb.client.delete(`${POOLS}/default`);
      // The operator keeps the nodes' allocations when an unused pool goes away.
      await new Promise((r) => setTimeout(r, 3000));
      for (const n of nodes) {
        const cn = await tb.client.get(`${CN}/${n.metadata.name}`);
        assert.equal(cidrsOf(cn, 'renumbered').length, 1);
        assert.ok(!cn.status?.ipam?.['operator-status']?.error, `no operator error on ${n.metadata.name}: ${cn.status?.ipam?.['operator-status']?.error}`);
      }
      assert.ok(op.running(), 'the operator is still running');
    });

    test('a pool deleted while a node still holds a CIDR of it: measured', async (t: TestContext) => {
      const name = nodes[0]!.metadata.name as string;
      await tb.client.post(POOLS, pool('doomed', '10.30.0.0/16'));
      const before = await tb.client.get(`${CN}/${name}`);
      await agentWritesPools(tb, name, {
        requested: [{ pool: 'renumbered', needed: { 'ipv4-addrs': 16 } }, { pool: 'doomed', needed: { 'ipv4-addrs': 1 } }],
        allocated: allocatedOf(before),
      });
      const held = await eventually(`${name} allocated from pool doomed`, async () => {
        const c = await tb.client.get(`${CN}/${name}`);
        return cidrsOf(c, 'doomed')[0];
      }, 60_000, 250);
      await tb.client.delete(`${POOLS}/doomed`);
      // The next write of the node (the agent's periodic sync) lets the operator reconcile it.
      const t0 = Date.now();
      const afterDelete = await tb.client.get(`${CN}/${name}`);
      await agentWritesPools(tb, name, {
        requested: [{ pool: 'renumbered', needed: { 'ipv4-addrs': 17 } }, { pool: 'doomed', needed: { 'ipv4-addrs': 1 } }],
        allocated: allocatedOf(afterDelete),
      });
      const settled = await eventually(`the operator's answer for ${name}`, async () => {
        const c = await tb.client.get(`${CN}/${name}`);
        return c.status?.ipam?.['operator-status']?.error ? c : undefined;
      }, 60_000, 250);
      const kept = cidrsOf(settled, 'doomed');
      t.diagnostic(`after deleting pool doomed (held ${held} on ${name}), ${ms(t0)} ms: allocated doomed = [${kept.join(' ')}]; operator error: ${settled.status.ipam['operator-status'].error}`);
      // Recorded, not assumed: the behaviour differs between releases (docs/platforms.md, "Cilium"); the
      // operator reports the missing pool on the node either way.
      assert.match(settled.status.ipam['operator-status'].error, /doomed/);
      assert.equal(cidrsOf(settled, 'renumbered').length, 1, 'the allocation from the live pool is untouched');
      process.stderr.write(`[cilium-operator ${CILIUM_VERSION}] in-use CIDR of a deleted pool: ${kept.length ? `kept in spec.ipam.pools.allocated (${kept.join(' ')})` : 'dropped from spec.ipam.pools.allocated'}\n`);
    });
  });

  describe(`cilium-operator ${CILIUM_VERSION}, cluster-pool IPAM`, () => {
    const tb = useTestbed({ nodes: NODES, calicoCRDs: false });
    let op: Proc | undefined;
    let nodes: KubeObject[];
    const clusterPool = (cidrs: string[]) => ['--ipam=cluster-pool', `--cluster-pool-ipv4-cidr=${cidrs.join(',')}`, '--cluster-pool-ipv4-mask-size=24'];
    const podCIDRs = async (name: string): Promise<string[]> => (await tb.client.get(`${CN}/${name}`)).spec?.ipam?.podCIDRs ?? [];
    const restart = async (name: string, cidrs: string[]) => {
      await op?.stop();
      const previous = await leaseHolder(tb);
      op = await startOperator(tb, name, clusterPool(cidrs));
      await waitCRDs(tb, ['ciliumnodes.cilium.io']);
      await waitLeader(tb, op, previous);
    };
    /** Deletes the CiliumNode and creates it again, as the agent does when it restarts and finds none. */
    const recreate = async (node: KubeObject): Promise<string[]> => {
      const name = node.metadata.name as string;
      await tb.client.delete(`${CN}/${name}`);
      await eventually(`CiliumNode ${name} gone`, async () => !(await tb.client.getOrUndefined(`${CN}/${name}`)));
      await tb.client.post(CN, agentCiliumNode(node));
      return await eventually(`a podCIDR for the re-created ${name}`, async () => {
        const c = await podCIDRs(name);
        return c.length ? c : undefined;
      }, 60_000, 250);
    };
    before(async () => {
      nodes = (await tb.client.list('/api/v1/nodes')).items;
    });
    after(async () => op?.stop());

    test('gives each CiliumNode a podCIDR from the configured list', async () => {
      await restart('cilium-operator-cp1', [OLD]);
      for (const n of nodes) await tb.client.post(CN, agentCiliumNode(n));
      const all = await eventually('a podCIDR on every CiliumNode', async () => {
        const cns = (await tb.client.list(CN)).items;
        return cns.length === NODES && cns.every((cn) => (cn.spec?.ipam?.podCIDRs ?? []).length === 1) ? cns : undefined;
      }, 120_000, 250);
      for (const cn of all) assert.ok(cidrContains(OLD, cn.spec.ipam.podCIDRs[0].split('/')[0]), `${cn.spec.ipam.podCIDRs[0]} inside ${OLD}`);
    });

    test('a cleared podCIDR is written back: the operator keeps the node\'s CIDR while the CiliumNode exists', async () => {
      const name = nodes[0]!.metadata.name as string;
      const had = await podCIDRs(name);
      const cn = await tb.client.get(`${CN}/${name}`);
      cn.spec.ipam.podCIDRs = [];
      await tb.client.put(`${CN}/${name}`, cn);
      const back = await eventually(`a podCIDR on ${name} again`, async () => {
        const c = await podCIDRs(name);
        return c.length ? c : undefined;
      }, 60_000, 250);
      assert.deepEqual(back, had);
    });

    test('a new CIDR needs a restart; a re-created node gets the first range with room: appended, the old one; listed first, the new one', async (t: TestContext) => {
      await restart('cilium-operator-cp2', [OLD, NEW]);
      const appended = await recreate(nodes[0]!);
      t.diagnostic(`re-created ${nodes[0]!.metadata.name} with [${OLD}, ${NEW}]: ${appended.join(' ')}`);
      assert.ok(cidrContains(OLD, appended[0]!.split('/')[0]!), `${appended[0]} comes from the first range with room, ${OLD}`);
      await restart('cilium-operator-cp3', [NEW, OLD]);
      const others = await Promise.all(nodes.slice(1).map((n) => podCIDRs(n.metadata.name)));
      for (const c of others) assert.ok(cidrContains(OLD, c[0]!.split('/')[0]!), `untouched nodes keep ${c[0]} across the restart`);
      const first = await recreate(nodes[0]!);
      t.diagnostic(`re-created ${nodes[0]!.metadata.name} with [${NEW}, ${OLD}]: ${first.join(' ')}`);
      assert.ok(cidrContains(NEW, first[0]!.split('/')[0]!), `${first[0]} comes from ${NEW}, listed first`);
    });

    test('with the old CIDR removed: existing nodes keep theirs and report it; re-created nodes move to the new one', async (t: TestContext) => {
      await restart('cilium-operator-cp4', [NEW]);
      const name = nodes[1]!.metadata.name as string;
      const stale = await eventually(`the operator's error on ${name}`, async () => {
        const c = await tb.client.get(`${CN}/${name}`);
        return c.status?.ipam?.['operator-status']?.error ? c : undefined;
      }, 60_000, 250);
      t.diagnostic(`${name} after restart with [${NEW}]: podCIDRs ${stale.spec.ipam.podCIDRs.join(' ')}; error: ${stale.status.ipam['operator-status'].error}`);
      assert.ok(cidrContains(OLD, stale.spec.ipam.podCIDRs[0].split('/')[0]), 'the node keeps its podCIDR');
      for (const n of nodes) {
        const t0 = Date.now();
        const got = await recreate(n);
        t.diagnostic(`${n.metadata.name}: ${got.join(' ')} in ${ms(t0)} ms after its CiliumNode was deleted`);
        assert.ok(cidrContains(NEW, got[0]!.split('/')[0]!), `${got[0]} inside ${NEW}`);
      }
      const cidrs = await Promise.all(nodes.map((n) => podCIDRs(n.metadata.name)));
      assert.equal(new Set(cidrs.flat()).size, NODES, 'distinct podCIDRs');
    });
  });
}
