import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { inspect } from '../../src/analyze/inspect.ts';
import { clusterFamilies, obstacles, SEARCH_SPACES, suggest, suggestFamilies } from '../../src/analyze/suggest.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, Snapshot } from '../../src/cluster/types.ts';
import { findFreeBlock, formatCidr, overlaps, parseCidr } from '../../src/net/index.ts';
import { run } from './run-cli.ts';

install();

const ex = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
const load = async (name: string) => buildSnapshot(await readInventoryFiles([ex(name)]));

function snapshotOf(objects: KubeObject[]): Snapshot {
  return buildSnapshot({ source: { kind: 'file', files: ['test'] }, objects, configs: [], gaps: [] });
}

const node = (name: string, podCIDR?: string, ip?: string): KubeObject => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name },
  spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
  status: { addresses: ip ? [{ type: 'InternalIP', address: ip }] : [] },
});
const kcm = (clusterCIDR: string, mask = 24): KubeObject => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'kube-controller-manager-m1', namespace: 'kube-system', labels: { component: 'kube-controller-manager', tier: 'control-plane' } },
  spec: { containers: [{ name: 'kube-controller-manager', command: ['kube-controller-manager', `--cluster-cidr=${clusterCIDR}`, `--node-cidr-mask-size=${mask}`, '--allocate-node-cidrs=true'] }] },
});
const apiserver = (range: string): KubeObject => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'kube-apiserver-m1', namespace: 'kube-system', labels: { component: 'kube-apiserver', tier: 'control-plane' } },
  spec: { containers: [{ name: 'kube-apiserver', command: ['kube-apiserver', `--service-cluster-ip-range=${range}`] }] },
});
const pool = (name: string, cidr: string): KubeObject => ({
  apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name }, spec: { cidr, blockSize: 26 },
});

describe('inspect on the bundled kOps + Tailscale cluster (seed 000)', async () => {
  const snap = await load('kops-tailscale');
  const r = inspect(snap);

  it('finds the ranges and where they come from', () => {
    assert.deepEqual(r.serviceCIDRs.map((s) => s.cidr), ['100.64.0.0/13']);
    assert.ok(r.serviceCIDRs[0]!.sources.some((s) => s.includes('ServiceCIDR')));
    assert.ok(r.serviceCIDRs[0]!.sources.some((s) => s.includes('kube-apiserver')));
    assert.deepEqual(r.podCIDRs.map((s) => s.cidr), ['100.96.0.0/11']);
    assert.deepEqual(r.pools.map((p) => p.cidr), ['100.96.0.0/11']);
    assert.deepEqual(r.masqueradeCIDRs.map((s) => s.cidr), ['100.64.0.0/10']);
    assert.deepEqual(r.nodeCIDRs.map((s) => s.cidr), ['172.20.0.0/16']);
    assert.equal(r.platform.kind, 'kops');
    assert.equal(r.cni.ipam, 'calico-ipam');
    assert.equal(r.serviceCIDRApi, 'v1');
  });

  it('reports the Tailscale collision of both the service and pod ranges, and no errors', () => {
    const cgnat = r.conflicts.filter((c) => c.kind === 'catalog' && c.b.cidr === '100.64.0.0/10');
    assert.deepEqual(cgnat.map((c) => c.a.cidr).sort(), ['100.64.0.0/10', '100.64.0.0/13', '100.96.0.0/11']);
    assert.ok(cgnat.every((c) => c.severity === 'warning' && /Tailscale/.test(c.reason)));
    assert.equal(r.conflicts.filter((c) => c.severity === 'error').length, 0);
    // the pod range and the pool share one CIDR: one conflict per CIDR, naming both roles
    const pod = cgnat.find((c) => c.a.cidr === '100.96.0.0/11')!;
    assert.match(pod.a.what, /pod range/);
    assert.match(pod.a.what, /Calico pool/);
  });

  it('computes capacity', () => {
    assert.equal(r.capacity.maxNodes, 8192);
    assert.equal(r.capacity.nodeIpam[0]!.nodesLeft, 8192 - snap.nodes.length);
    const svc = r.capacity.serviceRanges[0]!;
    assert.equal(svc.usable, 2 ** 19 - 2);
    assert.equal(svc.used, snap.services.flatMap((s) => s.clusterIPs).length);
    assert.equal(r.dnsService?.clusterIPs[0], '100.64.0.10');
    assert.equal(r.dnsService?.foundBy, 'kubelet clusterDNS');
  });

  it('suggests ranges outside CGNAT and every cluster range', () => {
    for (const what of ['services', 'pods'] as const) {
      const s = suggest(snap, { for: what });
      assert.ok(s.cidr, `a ${what} range`);
      const c = parseCidr(s.cidr!);
      for (const bad of ['100.64.0.0/10', '172.20.0.0/16', '172.17.0.0/16', '10.0.0.0/16']) {
        assert.ok(!overlaps(c, parseCidr(bad)), `${s.cidr} must avoid ${bad}`);
      }
    }
  });

  it('--avoid moves the suggestion and is reported as a conflict when the cluster overlaps it', () => {
    const before = suggest(snap, { for: 'services' }).cidr!;
    const after = suggest(snap, { for: 'services', avoid: [{ cidr: before, reason: 'peer', from: '--avoid' }] }).cidr!;
    assert.notEqual(after, before);
    assert.ok(!overlaps(parseCidr(after), parseCidr(before)));
    const rep = inspect(snap, { avoid: [{ cidr: '172.20.5.0/24', reason: 'office VPN', from: '--avoid' }] });
    const hit = rep.conflicts.find((c) => c.kind === 'avoid');
    assert.equal(hit?.a.cidr, '172.20.0.0/16');
    assert.equal(hit?.reason, 'office VPN');
  });
});

describe('inspect on the exhausted kubeadm + Calico cluster (seed 004)', async () => {
  const snap = await load('kubeadm-exhausted');
  const r = inspect(snap);

  it('computes the 64-node cap and the nodes left waiting', () => {
    const n = r.capacity.nodeIpam[0]!;
    assert.equal(n.clusterCIDR, '10.233.64.0/18');
    assert.equal(n.nodeMask, 24);
    assert.equal(n.maxNodes, 64);
    assert.equal(n.nodesWithPodCIDR, 64);
    assert.equal(n.nodesLeft, 0);
    const waiting = snap.nodes.filter((x) => x.podCIDRs.length === 0).length;
    assert.ok(waiting > 0);
    assert.equal(n.nodesWaiting, waiting);
    assert.equal(r.capacity.serviceRanges[0]!.usable, 16382);
    assert.ok(r.readiness.some((f) => f.id === 'nodes-waiting' && f.ok === false));
  });

  it('suggests a pod range for 256 nodes that avoids the adjacent service range', () => {
    const s = suggest(snap, { for: 'pods', nodes: 256, headroom: 1 });
    assert.equal(s.prefix, 16);
    const c = parseCidr(s.cidr!);
    assert.ok(!overlaps(c, parseCidr('10.233.0.0/18')));
    assert.ok(!overlaps(c, parseCidr('10.233.64.0/18')));
  });

  it('widening the pod mask in place would overlap the services: the conflict check says so', () => {
    const wide = snapshotOf([kcm('10.233.0.0/16'), apiserver('10.233.0.0/18')]);
    const c = inspect(wide).conflicts.find((x) => x.kind === 'overlap');
    assert.ok(c, 'an overlap conflict');
    assert.equal(c.severity, 'error');
    assert.deepEqual([c.a.cidr, c.b.cidr].sort(), ['10.233.0.0/16', '10.233.0.0/18']);
    assert.match(c.reason, /ClusterIP and a pod IP/);
  });
});

describe('inspect on the pre-1.7 kOps pool (seed 002)', async () => {
  const r = inspect(await load('kops-legacy-pool'));
  it('names the pool that swallows the service range', () => {
    const c = r.conflicts.find((x) => x.kind === 'legacy-kops-pool');
    assert.ok(c);
    assert.equal(c.severity, 'error');
    assert.equal(c.a.cidr, '100.64.0.0/10');
    assert.equal(c.b.cidr, '100.64.0.0/13');
  });
});

describe('conflict rules on synthetic clusters', () => {
  it('pool outside the cluster CIDR is a warning', () => {
    const r = inspect(snapshotOf([kcm('10.10.0.0/16'), pool('p', '10.20.0.0/16')]));
    const c = r.conflicts.find((x) => x.kind === 'pool-outside-cluster-cidr');
    assert.equal(c?.severity, 'warning');
    assert.equal(c?.a.cidr, '10.20.0.0/16');
    assert.equal(c?.b.cidr, '10.10.0.0/16');
  });

  it('node podCIDRs outside --cluster-cidr, overlapping each other, or overlapping services are errors', () => {
    const r = inspect(snapshotOf([
      kcm('10.10.0.0/16'), apiserver('10.96.0.0/12'),
      node('a', '10.10.1.0/24'), node('b', '10.11.0.0/24'), node('c', '10.10.1.0/25'), node('d', '10.96.5.0/24'),
    ]));
    const outside = r.conflicts.filter((x) => x.kind === 'node-podcidr-outside');
    assert.equal(outside.length, 1);
    assert.match(outside[0]!.a.what, /b 10\.11\.0\.0\/24/);
    assert.match(outside[0]!.a.what, /d 10\.96\.5\.0\/24/);
    const overlap = r.conflicts.filter((x) => x.kind === 'node-podcidr-overlap');
    assert.ok(overlap.some((x) => /\(a\)|\(c\)/.test(x.a.what) && /\(a\)|\(c\)/.test(x.b.what)));
    assert.ok(overlap.some((x) => x.b.cidr === '10.96.0.0/12' && /d/.test(x.a.what)));
    assert.equal(r.capacity.maxNodes, 256);
  });

  it('a node address inside the pod range is an error', () => {
    const r = inspect(snapshotOf([kcm('10.10.0.0/16'), node('a', '10.10.1.0/24', '10.10.200.7')]));
    const c = r.conflicts.find((x) => x.kind === 'node-ip-inside');
    assert.equal(c?.severity, 'error');
    assert.match(c!.a.what, /a 10\.10\.200\.7/);
  });

  it('link-local and loopback ranges are errors; defaults in use are info', () => {
    const r = inspect(snapshotOf([apiserver('169.254.0.0/20'), kcm('10.244.0.0/16')]));
    assert.ok(r.conflicts.some((c) => c.severity === 'error' && c.b.cidr === '169.254.0.0/16'));
    assert.ok(r.conflicts.some((c) => c.severity === 'info' && c.b.cidr === '10.244.0.0/16'));
  });
});

describe('readiness: Cilium IPAM', () => {
  const cilium = (data: Record<string, string>): KubeObject[] => [
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cilium-x2k9p', namespace: 'kube-system', labels: { 'k8s-app': 'cilium' } }, spec: { hostNetwork: true }, status: { podIP: '192.168.1.10' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cilium-config', namespace: 'kube-system' }, data },
  ];
  it('says up front that a cluster-pool pod range is not moved; kubernetes IPAM moves by re-registering nodes', () => {
    const pool = inspect(snapshotOf(cilium({ 'cluster-pool-ipv4-cidr': '10.0.0.0/8' }))).readiness.find((f) => f.id === 'pod-ipam')!;
    assert.equal(pool.ok, false);
    assert.match(pool.summary, /Cilium cluster-pool IPAM: it owns them, so plan --pod-cidr refuses to move them/);
    const k8s = inspect(snapshotOf(cilium({ ipam: 'kubernetes' }))).readiness.find((f) => f.id === 'pod-ipam')!;
    assert.equal(k8s.ok, true);
    assert.match(k8s.summary, /re-registering nodes/);
  });
});

describe('readiness: the pod-ipam fact of each path', () => {
  const fact = (snap: Snapshot) => inspect(snap).readiness.find((f) => f.id === 'pod-ipam')!;
  it('Calico (by manifest and by the Tigera operator), node podCIDRs, Cilium multi-pool: where pods get IPs and how the range moves', async () => {
    const cases: Array<[Snapshot, string]> = [
      [await load('kubeadm-exhausted'), 'pods get IPs from Calico IPAM: the pod range moves by pool migration, node podCIDRs are not used'],
      [snapshotOf([{ apiVersion: 'operator.tigera.io/v1', kind: 'Installation', metadata: { name: 'default' },
        spec: { cni: { type: 'Calico', ipam: { type: 'Calico' } }, calicoNetwork: { ipPools: [{ cidr: '192.168.0.0/16', blockSize: 26 }] } } }]),
      'pods get IPs from Calico IPAM (operator-managed: pools change through Installation.spec.calicoNetwork.ipPools): the pod range moves by pool migration, node podCIDRs are not used'],
      [await load('k3s'), 'pods get IPs from each node\'s podCIDR (host-local (flannel, node podCIDR)): the pod range moves by re-registering nodes'],
      [await load('cilium-multi-pool'), 'pods get IPs from Cilium multi-pool IPAM (CiliumPodIPPools): the pod range moves by a new pool made the default and the workloads restarted'],
    ];
    for (const [snap, summary] of cases) {
      const f = fact(snap);
      assert.equal(f.ok, true, summary);
      assert.equal(f.summary, summary);
    }
  });
});

describe('suggest', () => {
  it('agrees with the free-block search and never overlaps what it must avoid (property)', async () => {
    const base = await load('kops-tailscale');
    await fc.assert(fc.asyncProperty(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 8, max: 24 })), { maxLength: 12 }),
      fc.integer({ min: 16, max: 28 }),
      async (avoids, nodeMask) => {
        const avoid = avoids.map(([o, p]) => ({ cidr: formatCidr(parseCidr(`10.${o}.0.0/${p}`, { normalize: true })), reason: '', from: 't' }));
        const s = suggest(base, { for: 'pods', nodes: 3, headroom: 1, nodeMask, avoid });
        const obs = obstacles(base, avoid).filter((o) => o.cidr.family === 4).map((o) => o.cidr);
        const oracle = findFreeBlock(s.prefix, SEARCH_SPACES[4].map((x) => parseCidr(x)), obs);
        assert.equal(s.cidr, oracle ? formatCidr(oracle) : undefined);
        if (s.cidr) for (const o of obs) assert.ok(!overlaps(parseCidr(s.cidr), o));
      },
    ), { numRuns: 60 });
  });

  it('explains the rejected candidates', async () => {
    const s = suggest(await load('kops-tailscale'), { for: 'services', avoid: [{ cidr: '10.1.0.0/16', reason: 'peer VPC', from: '--avoid' }] });
    const r = s.rejected.find((x) => x.by === '10.1.0.0/16');
    assert.ok(r);
    assert.match(r.reason, /peer VPC/);
    assert.ok(!overlaps(parseCidr(s.cidr!), parseCidr('10.1.0.0/16')));
  });

  const dualStack = (): KubeObject[] => [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24', 'fd00:10:244::/64'] }, status: { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }, { type: 'InternalIP', address: 'fd00:1::10' }] } },
    apiserver('10.96.0.0/16,fd00:10:96::/112'),
    kcm('10.244.0.0/16,fd00:10:244::/56'),
  ];

  it('dual-stack: one suggestion per family, the primary first, each overlapping nothing of its family', () => {
    const s = snapshotOf(dualStack());
    for (const what of ['pods', 'services'] as const) {
      assert.deepEqual(clusterFamilies(s, what), [4, 6]);
      const all = suggestFamilies(s, { for: what });
      assert.deepEqual(all.map((x) => x.family), [4, 6], what);
      for (const x of all) {
        const c = parseCidr(x.cidr!);
        assert.equal(c.family, x.family);
        for (const o of obstacles(s, []).filter((y) => y.cidr.family === x.family)) assert.ok(!overlaps(c, o.cidr), `${x.cidr} overlaps ${o.label}`);
      }
      assert.equal(all[1]!.need.nodeMask, what === 'pods' ? 64 : undefined, 'the IPv6 node mask from the IPv6 podCIDRs');
    }
    assert.deepEqual(suggestFamilies(s, { for: 'pods', family: 6 }).map((x) => x.family), [6], '--family picks one');
    assert.deepEqual(suggestFamilies(snapshotOf([kcm('10.244.0.0/16')]), { for: 'pods' }).map((x) => x.family), [4], 'single-stack: one');
    assert.throws(() => suggestFamilies(s, { for: 'pods', nodeMask: 24 }), /--node-mask 24 on a dual-stack cluster needs --family 4 or 6/);
    assert.equal(suggestFamilies(s, { for: 'pods', nodeMask: 24, family: 4 })[0]!.need.nodeMask, 24);
  });

  it('suggest CLI on a dual-stack cluster: both families in the table and in -o json (families[], the primary at the top level)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-dual-'));
    try {
      const file = join(dir, 'cluster.json');
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: dualStack() }));
      for (const what of ['pods', 'services']) {
        const j = await run(['suggest', '--for', what, '-f', file, '-o', 'json']);
        assert.equal(j.code, 0, j.err);
        const out = JSON.parse(j.out);
        assert.equal(out.family, 4);
        assert.equal(parseCidr(out.cidr).family, 4);
        assert.deepEqual(out.families.map((x: { family: number }) => x.family), [4, 6]);
        assert.equal(out.families[0].cidr, out.cidr);
        assert.equal(parseCidr(out.families[1].cidr).family, 6);
        const t = await run(['suggest', '--for', what, '-f', file]);
        assert.equal(t.code, 0, t.err);
        assert.match(t.out, /^FOR\s+FAMILY\s+CIDR/m);
        assert.match(t.out, new RegExp(`^${what}\\s+IPv4\\s+10\\.`, 'm'));
        assert.match(t.out, new RegExp(`^${what}\\s+IPv6\\s+fd`, 'm'));
      }
      const six = JSON.parse((await run(['suggest', '--for', 'pods', '--family', '6', '-f', file, '-o', 'json'])).out);
      assert.equal(six.family, 6);
      assert.equal(six.families.length, 1);
      const mask = await run(['suggest', '--for', 'pods', '--node-mask', '24', '-f', file]);
      assert.equal(mask.code, 2);
      assert.match(mask.err, /^error: --node-mask 24 on a dual-stack cluster needs --family 4 or 6[^\n]*\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses needs larger than the apiserver accepts', () => {
    assert.throws(() => suggest(snapshotOf([]), { for: 'services', services: 3_000_000 }), /largest service range/);
  });
});

describe('inspect CLI', () => {
  it('--exit-code returns 1 on warnings, 0 with --fail-on error when there are no errors', async () => {
    const w = await run(['inspect', '-f', ex('kops-tailscale'), '--exit-code']);
    assert.equal(w.code, 1);
    const e = await run(['inspect', '-f', ex('kops-tailscale'), '--exit-code', '--fail-on', 'error']);
    assert.equal(e.code, 0);
    const legacy = await run(['inspect', '-f', ex('kops-legacy-pool'), '--exit-code', '--fail-on', 'error']);
    assert.equal(legacy.code, 1);
    const plain = await run(['inspect', '-f', ex('kops-legacy-pool')]);
    assert.equal(plain.code, 0);
  });

  it('json output follows the contract', async () => {
    const r = await run(['inspect', '-f', ex('kubeadm-exhausted'), '-o', 'json']);
    assert.equal(r.code, 0);
    const j = JSON.parse(r.out);
    assert.equal(j.kind, 'InspectReport');
    for (const k of ['serviceCIDRs', 'podCIDRs', 'nodeCIDRs', 'pools', 'conflicts']) assert.ok(Array.isArray(j[k]), k);
    assert.equal(j.capacity.maxNodes, 64);
    const y = await run(['inspect', '-f', ex('kubeadm-exhausted'), '-o', 'yaml']);
    assert.match(y.out, /^kind: InspectReport$/m);
  });

  it('table output shows ranges, conflicts, capacity and readiness', async () => {
    const r = await run(['inspect', '-f', ex('kops-tailscale')]);
    assert.match(r.out, /^RANGES$/m);
    assert.match(r.out, /^service\s+100\.64\.0\.0\/13/m);
    assert.match(r.out, /^CONFLICTS \(0 errors, 3 warnings/m);
    assert.match(r.out, /max 8192 nodes/);
    assert.match(r.out, /^READINESS$/m);
  });

  it('suggest -o json gives cidr; -o wide lists rejections', async () => {
    const j = await run(['suggest', '--for', 'pods', '-f', ex('kubeadm-exhausted'), '--nodes', '256', '--headroom', '1', '-o', 'json']);
    assert.equal(j.code, 0);
    assert.equal(parseCidr(JSON.parse(j.out).cidr).prefix, 16);
    assert.deepEqual(JSON.parse(j.out).families.map((x: { cidr: string }) => x.cidr), [JSON.parse(j.out).cidr], 'single-stack: one entry in families');
    const w = await run(['suggest', '--for', 'services', '-f', ex('kops-tailscale'), '-o', 'wide']);
    assert.match(w.out, /REJECTED CANDIDATES/);
  });
});

describe('readiness: the most nodes the cluster may reach against what its pod range holds', () => {
  const ca = (nodesFlag: string): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cluster-autoscaler-1', namespace: 'kube-system', labels: { app: 'cluster-autoscaler' } },
    spec: { containers: [{ name: 'cluster-autoscaler', image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0', command: ['./cluster-autoscaler', `--nodes=${nodesFlag}`] }] },
    status: { phase: 'Running' },
  });
  const base = [kcm('10.244.0.0/22'), node('n0', '10.244.0.0/24'), node('n1', '10.244.1.0/24')];

  it('an autoscaler maximum above what node IPAM can give is flagged before the range runs out', () => {
    const f = inspect(snapshotOf([...base, ca('1:10:asg-a')])).readiness.find((x) => x.id === 'node-reach');
    assert.equal(f?.ok, false);
    assert.match(f!.summary, /cluster-autoscaler --nodes allow 10 node\(s\) but 10\.244\.0\.0\/22 at \/24 per node holds only 4/);
  });

  it('a maximum the range holds is a passing fact; no maximum, no fact', () => {
    const f = inspect(snapshotOf([...base, ca('1:4:asg-a')])).readiness.find((x) => x.id === 'node-reach');
    assert.equal(f?.ok, true);
    assert.match(f!.summary, /allow 4 node\(s\); 10\.244\.0\.0\/22 at \/24 per node holds 4/);
    assert.equal(inspect(snapshotOf(base)).readiness.find((x) => x.id === 'node-reach'), undefined);
  });

  it('Calico pools: one block per node at least', () => {
    const f = inspect(snapshotOf([node('n0'), pool('p', '10.50.0.0/24'), ca('1:10:asg-a')])).readiness.find((x) => x.id === 'node-reach');
    assert.equal(f?.ok, false);
    assert.match(f!.summary, /10\.50\.0\.0\/24 in \/26 blocks holds only 4/);
  });
});
