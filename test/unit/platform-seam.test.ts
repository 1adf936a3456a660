/**
 * The platform and pod-IPAM seams (src/platform/, src/ipam/): the registries' invariants, detection with evidence on
 * the bundled examples, and refusals that come before any plan (exit 2, one error line, the owner's reason).
 */
import { install } from '../../src/install.ts';
import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { capabilityOf, detectPlatform, platforms } from '../../src/platform/registry.ts';
import { IPAM_OWNERS, detectIpamOwner, ipamResources } from '../../src/ipam/registry.ts';
import { platformRefusal, podOwnerRefusal } from '../../src/plan/platform-gate.ts';
import { podTargetRefusals } from '../../src/plan/targets.ts';
import type { Platform } from '../../src/platform/types.ts';
import { run } from './run-cli.ts';

install();

const snapOf = async (dir: string) => buildSnapshot(await readInventoryFiles([dir]));

describe('platform registry', () => {
  test('kinds are unique, every platform cites its sources, and generic comes last and matches anything', () => {
    const kinds = platforms().map((p) => p.kind);
    assert.equal(new Set(kinds).size, kinds.length);
    for (const p of platforms()) assert.ok(p.sources.length > 0 && p.sources.every((s) => s.startsWith('https://')), p.kind);
    assert.equal(kinds.at(-1), 'generic');
    const none = detectPlatform({ nodes: [], objects: new Map(), daemonSets: new Set(), namespaces: new Set(), configMaps: new Map(), systemWorkloads: [], controlPlaneFlags: [], calicoClusterTypes: [], configs: [] });
    assert.equal(none.facts.kind, 'generic');
    assert.ok(none.facts.evidence.length > 0);
  });

  test('the bundled examples keep their installer as platform, with evidence', async () => {
    for (const [dir, kind] of [['kops-tailscale', 'kops'], ['kops-legacy-pool', 'kops'], ['kubeadm-exhausted', 'kubespray']] as const) {
      const snap = await snapOf(join('examples', dir));
      assert.equal(snap.platform?.kind, kind, dir);
      assert.ok((snap.platform?.evidence.length ?? 0) > 0, dir);
      assert.equal(platformRefusal(snap, 'service'), undefined, dir);
      assert.equal(platformRefusal(snap, 'pod'), undefined, dir);
    }
  });

  test('a platform no longer known is refused for both moves, naming it', async () => {
    const snap = await snapOf('examples/kops-tailscale');
    snap.platform = { kind: 'mystery', title: 'Mystery Cloud', evidence: ['node label mystery.example/pool'], reserved: [] };
    for (const move of ['service', 'pod'] as const) {
      assert.equal(capabilityOf('mystery', move).supported, false);
      assert.match(platformRefusal(snap, move) ?? '', /refused on Mystery Cloud: platform "mystery" is not one kube-renumber knows.*mystery\.example\/pool/);
    }
  });
});

describe('pod IPAM owners', () => {
  const base = { operatorManaged: false, evidence: ['test'], daemonSets: new Set<string>(), pools: 0, nodesWithPodCIDR: 3 };
  test('kinds are unique and each cites its sources', () => {
    const kinds = IPAM_OWNERS.map((o) => o.kind);
    assert.equal(new Set(kinds).size, kinds.length);
    for (const o of IPAM_OWNERS) assert.ok(o.sources.length > 0, o.kind);
  });

  test('what the owners read: several versions of one resource newest first, and their objects become the owner\'s facts, version by version', () => {
    const reads = ipamResources().map((r) => `${r.group}/${r.version} ${r.plural} ${r.kind}`);
    assert.deepEqual(reads, ['cilium.io/v2 ciliumpodippools CiliumPodIPPool', 'cilium.io/v2alpha1 ciliumpodippools CiliumPodIPPool']);
    for (const version of ['v2', 'v2alpha1']) {
      const pool = { apiVersion: `cilium.io/${version}`, kind: 'CiliumPodIPPool', metadata: { name: 'default' }, spec: { ipv4: { cidrs: ['10.42.0.0/16'], maskSize: 24 } } };
      const other = { apiVersion: 'example.com/v1', kind: 'CiliumPodIPPool', metadata: { name: 'lookalike' }, spec: { ipv4: { cidrs: ['10.9.0.0/16'], maskSize: 24 } } };
      const snap = buildSnapshot({ source: { kind: 'file', files: ['test'] }, objects: [pool, other], configs: [], gaps: [] });
      assert.deepEqual(snap.cilium, { config: {}, pools: [{ name: 'default', apiVersion: `cilium.io/${version}`, ipv4: { cidrs: ['10.42.0.0/16'], maskSize: 24 } }] }, version);
      assert.deepEqual(snap.ranges.filter((r) => r.role === 'pool').map((r) => `${r.cidr} ${r.source}`), ['10.42.0.0/16 CiliumPodIPPool/default'], version);
    }
  });

  test('each CNI setting maps to its owner', () => {
    const owner = (over: Partial<Parameters<typeof detectIpamOwner>[0]>) => detectIpamOwner({ plugin: 'unknown', ipam: 'unknown', ...base, ...over })?.kind;
    assert.equal(owner({ plugin: 'calico', ipam: 'calico-ipam' }), 'calico');
    assert.equal(owner({ plugin: 'calico', ipam: 'calico-ipam', operatorManaged: true }), 'calico-operator');
    assert.equal(owner({ plugin: 'calico', ipam: 'host-local' }), 'node');
    assert.equal(owner({ plugin: 'flannel', ipam: 'host-local' }), 'node');
    assert.equal(owner({ plugin: 'cilium', ipam: 'cilium', ipamMode: 'kubernetes' }), 'node');
    assert.equal(owner({ plugin: 'cilium', ipam: 'cilium', ipamMode: 'cluster-pool' }), 'cilium-cluster-pool');
    assert.equal(owner({ plugin: 'cilium', ipam: 'cilium', ipamMode: 'multi-pool' }), 'cilium-multi-pool');
    assert.equal(owner({ plugin: 'cilium', ipam: 'cilium', ipamMode: 'eni' }), 'cilium-other');
    assert.equal(owner({ daemonSets: new Set(['kube-system/aws-node']) }), 'aws-vpc-cni');
    assert.equal(owner({ daemonSets: new Set(['kube-system/azure-cns']) }), 'azure-cni');
    assert.equal(owner({ plugin: 'cilium', ipam: 'cilium', daemonSets: new Set(['kube-system/anetd']) }), 'gke-alias-ranges');
    assert.equal(owner({ daemonSets: new Set(['kube-system/netd']) }), 'gke-alias-ranges');
    assert.equal(owner({ pools: 2 }), 'calico');
    assert.equal(owner({}), 'node');
    assert.equal(owner({ nodesWithPodCIDR: 0 }), undefined);
  });
});

/** A dump directory: three nodes with podCIDRs, the kube-dns Service and pods, and `extra` objects. */
function dumpDir(extra: object[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'kr-seam-'));
  const nodes = [0, 1, 2].map((i) => ({
    apiVersion: 'v1', kind: 'Node', metadata: { name: `n${i}`, labels: {} }, spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
    status: { addresses: [{ type: 'InternalIP', address: `192.168.1.${10 + i}` }] },
  }));
  const objects = [
    ...nodes,
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubernetes', namespace: 'default' }, spec: { type: 'ClusterIP', clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1'], ports: [{ port: 443 }] } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kube-dns', namespace: 'kube-system' }, spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], selector: { 'k8s-app': 'kube-dns' }, ports: [{ port: 53 }] } },
    ...[0, 1].map((i) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `web-${i}`, namespace: 'default' }, spec: { nodeName: `n${i}` }, status: { phase: 'Running', podIP: `10.244.${i}.5`, podIPs: [{ ip: `10.244.${i}.5` }] } })),
    ...extra,
  ];
  writeFileSync(join(dir, 'all.yaml'), dump({ apiVersion: 'v1', kind: 'List', items: objects }));
  return dir;
}

const ciliumConfig = (ipam: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cilium-config', namespace: 'kube-system' }, data: { ipam, 'cluster-pool-ipv4-cidr': '10.244.0.0/16' } });
const ciliumAgent = (node: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `cilium-${node}`, namespace: 'kube-system', labels: { 'k8s-app': 'cilium' } }, spec: { nodeName: node, hostNetwork: true }, status: { phase: 'Running', podIP: '192.168.1.10' } });
const awsNode = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'aws-node', namespace: 'kube-system' }, spec: {} };

describe('plan --pod-cidr refuses what the owner of the pod addresses refuses', () => {
  const refused = async (dir: string, extra: string[] = []) => {
    const r = await run(['plan', '--pod-cidr', '172.16.0.0/16', '-f', dir, ...extra]);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.out, '', 'no plan is printed');
    const lines = r.err.trim().split('\n');
    assert.equal(lines.length, 1, r.err);
    assert.doesNotMatch(r.err, /\n\s+at /);
    return lines[0]!;
  };

  test('Cilium cluster-pool: its own reason at once, and --ipam node or calico cannot force it', async () => {
    const dir = dumpDir([ciliumConfig('cluster-pool'), ciliumAgent('n0')]);
    assert.match(await refused(dir), /^error: moving the Pod CIDR is refused: Cilium cluster-pool IPAM hands out pod addresses here: .*cilium-operator.*instead: .*multi-pool/);
    for (const ipam of ['node', 'calico']) assert.match(await refused(dir, ['--ipam', ipam]), new RegExp(`--ipam ${ipam} cannot change who hands out the addresses`));
  });

  test('Cilium multi-pool without its pools in the input, and the Amazon VPC CNI, are refused with their reasons', async () => {
    assert.match(await refused(dumpDir([ciliumConfig('multi-pool'), ciliumAgent('n0')])), /refused: no CiliumPodIPPool in the input: the multi-pool path moves the default pool/);
    assert.match(await refused(dumpDir([awsNode])), /Amazon VPC CNI hands out pod addresses here: .*private address of the VPC.*instead: .*ENIConfig.*\(recognised by DaemonSet kube-system\/aws-node/);
  });

  test('Cilium in kubernetes IPAM mode still plans through the node path', async () => {
    const dir = dumpDir([ciliumConfig('kubernetes'), ciliumAgent('n0')]);
    const snap = await snapOf(dir);
    assert.equal(snap.cni.owner?.kind, 'node');
    assert.equal(podOwnerRefusal(snap), undefined);
    const r = await run(['plan', '--pod-cidr', '172.16.0.0/16', '-f', dir, '-o', 'yaml']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    assert.match(r.out, /ipam: node/);
    assert.match(r.out, /platform: generic/);
  });
});

describe('ranges a platform reserves', () => {
  test('a target overlapping one is refused, naming the platform and the reason', async () => {
    const snap = await snapOf('examples/kubeadm-exhausted');
    const target = '10.250.0.0/16';
    assert.deepEqual(podTargetRefusals(snap, { target }), [], 'free before the platform reserves it');
    snap.platform = { ...snap.platform!, reserved: [{ cidr: '10.250.128.0/17', reason: 'the platform\'s internal transit subnet' }] };
    const refused = podTargetRefusals(snap, { target });
    assert.equal(refused.length, 1, refused.join('\n'));
    assert.match(refused[0]!, /10\.250\.128\.0\/17.*reserved by kubespray: the platform's internal transit subnet/);
  });
});

test('docs/platforms.md has a support-table row for every platform and every pod IPAM owner', async () => {
  const { readFileSync } = await import('node:fs');
  const doc = readFileSync('docs/platforms.md', 'utf8');
  const rows = doc.split('\n').filter((l) => l.startsWith('| '));
  for (const p of platforms()) assert.ok(rows.some((r) => r.includes(`(\`${p.kind}\``)), `platform ${p.kind}`);
  for (const o of IPAM_OWNERS) assert.ok(rows.some((r) => r.includes(`(\`${o.kind}\``)), `owner ${o.kind}`);
});

test('deploy/rbac.yaml grants get and list on every resource a platform reads', async () => {
  const { readFileSync } = await import('node:fs');
  const { loadAll } = await import('js-yaml');
  const docs = loadAll(readFileSync('deploy/rbac.yaml', 'utf8')) as any[];
  const rules = docs.filter((d) => d?.kind === 'ClusterRole').flatMap((d) => d.rules ?? []);
  for (const p of platforms()) {
    for (const r of p.reads ?? []) {
      const ok = rules.some((rule: any) => rule.apiGroups?.includes(r.group) && rule.resources?.includes(r.plural)
        && ['get', 'list'].every((v) => rule.verbs?.includes(v)));
      assert.ok(ok, `${p.kind} reads ${r.plural}.${r.group}: not granted in deploy/rbac.yaml`);
    }
  }
});
