/**
 * k3s and RKE2 (src/platform/k3s.ts, rke2.ts): recognised from what their servers write on Node objects and
 * from RKE2's HelmCharts, with the evidence shown; the ranges read from the servers' node-args (both argument
 * forms, dual-stack lists), RKE2's chart values, else the documented defaults labelled as such; k3s's embedded
 * flannel recognised from its node annotations; both moves planned with patches to their config.yaml (RKE2 with
 * Calico refused); and a
 * token in node-args never shown anywhere. Fixtures: test/fixtures/platforms/{k3s,rke2-canal} (SOURCES.md).
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump, load } from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, RawInventory, Snapshot } from '../../src/cluster/types.ts';
import { readNodeArgs } from '../../src/platforms/k3s-family/node-args.ts';
import { platforms } from '../../src/platform/registry.ts';
import { run } from './run-cli.ts';

install();

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'platforms');
const K3S = join(FIXTURES, 'k3s');
const RKE2 = join(FIXTURES, 'rke2-canal');
/** The fake join token the k3s fixture's server was started with as `-t TOKEN` (k3s-io/k3s#14347 leaves it readable). */
const FIXTURE_TOKEN = 'fake-k3s-token-not-a-secret-7f3a';

const inventory = (dir: string): Promise<RawInventory> => readInventoryFiles([dir]);
const snapshot = async (dir: string): Promise<Snapshot> => buildSnapshot(await inventory(dir));
const ranges = (s: Snapshot, ...roles: string[]): string[] => s.ranges.filter((r) => roles.includes(r.role)).map((r) => `${r.role} ${r.cidr} <${r.source}>`);

function node(inv: RawInventory, name: string): KubeObject {
  const n = inv.objects.find((o) => o.kind === 'Node' && o.metadata?.name === name);
  assert.ok(n, `node ${name} in the fixture`);
  return n;
}

/** A copy of a fixture directory whose nodes.yaml went through `edit` (each node), for the CLI. */
function fixtureCopy(dir: string, edit: (n: KubeObject) => void): string {
  const out = mkdtempSync(join(tmpdir(), 'kr-k3s-'));
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
    let text = readFileSync(join(dir, f), 'utf8');
    if (f === 'nodes.yaml') {
      const doc = load(text) as { items: KubeObject[] };
      for (const n of doc.items) edit(n);
      text = dump(doc, { lineWidth: -1 });
    }
    writeFileSync(join(out, f), text);
  }
  return out;
}

describe('k3s', () => {
  it('is recognised from the k3s.io/ annotations, the instance-type label, providerID and kubelet version, with evidence', async () => {
    const s = await snapshot(K3S);
    assert.equal(s.platform?.kind, 'k3s');
    assert.equal(s.platform?.title, 'k3s');
    const ev = s.platform!.evidence;
    assert.match(ev[0]!, /^3 node\(s\) annotated k3s\.io\/\* by k3s \(e\.g\. k3s-server-1: k3s\.io\/node-args\)$/);
    assert.ok(ev.some((e) => e.includes('node.kubernetes.io/instance-type=k3s')), ev.join('\n'));
    assert.ok(ev.some((e) => e.includes('k3s://k3s-server-1')), ev.join('\n'));
    assert.ok(ev.some((e) => e.includes('v1.31.6+k3s1')), ev.join('\n'));
    assert.ok(ev.includes('k3s.io/node-args --cluster-dns 10.43.0.10 (node-args of server k3s-server-1)'), ev.join('\n'));
    assert.deepEqual(s.platform?.reserved, []);
  });

  it('reads --cluster-cidr and --service-cidr from the server\'s k3s.io/node-args, and the embedded flannel\'s Network', async () => {
    const s = await snapshot(K3S);
    assert.deepEqual(ranges(s, 'service', 'pod'), [
      'service 10.43.0.0/16 <k3s.io/node-args --service-cidr>',
      'pod 10.42.0.0/16 <k3s.io/node-args --cluster-cidr>',
      'pod 10.42.0.0/16 <k3s embedded flannel Network (the cluster CIDR)>',
    ]);
    assert.deepEqual(s.warnings, []);
    assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.43.0.10'], foundBy: "the platform's DNS Service (selector k8s-app=kube-dns)" });
    assert.deepEqual(s.kubernetesServiceIPs, ['10.43.0.1']);
  });

  it('labels k3s\'s documented defaults as defaults when no server names the flags, and says why', async () => {
    const inv = await inventory(K3S);
    const server = node(inv, 'k3s-server-1');
    server.metadata!.annotations!['k3s.io/node-args'] = JSON.stringify(['server', '--write-kubeconfig-mode', '0644']);
    const s = buildSnapshot(inv);
    assert.equal(s.platform?.kind, 'k3s');
    assert.deepEqual(ranges(s, 'service', 'pod'), [
      'service 10.43.0.0/16 <k3s default --service-cidr (not set in the k3s.io/node-args of server k3s-server-1)>',
      'pod 10.42.0.0/16 <k3s default --cluster-cidr (not set in the k3s.io/node-args of server k3s-server-1)>',
      'pod 10.42.0.0/16 <k3s embedded flannel Network (the cluster CIDR)>',
    ]);
    assert.ok(s.ranges.filter((r) => r.source.startsWith('k3s default')).every((r) => /default .*, not read from the cluster$/.test(r.label)));
    assert.ok(s.platform!.evidence.includes("--cluster-dns not in any server's k3s.io/node-args: k3s default 10.43.0.10"), s.platform!.evidence.join('\n'));

    // No node-args at all (a node recognised by its label only): the defaults say so.
    const bare = await inventory(K3S);
    for (const o of bare.objects) if (o.kind === 'Node') for (const k of Object.keys(o.metadata!.annotations!)) if (k.startsWith('k3s.io/')) delete o.metadata!.annotations![k];
    const b = buildSnapshot(bare);
    assert.equal(b.platform?.kind, 'k3s');
    assert.ok(!b.platform!.evidence.some((e) => e.includes('annotated k3s.io')), b.platform!.evidence.join('\n'));
    assert.deepEqual(ranges(b, 'service'), ["service 10.43.0.0/16 <k3s default --service-cidr (no server's k3s.io/node-args seen)>"]);
  });

  it('reads --flag value and --flag=value, repeated flags and dual-stack lists, servers only, and nothing but the named flags', () => {
    assert.deepEqual(readNodeArgs(JSON.stringify(['server', '--cluster-cidr=10.42.0.0/16,2001:cafe:42::/56', '--service-cidr', '10.43.0.0/16,2001:cafe:43::/112', '--cluster-dns', '10.43.0.10'])), {
      '--cluster-cidr': ['10.42.0.0/16', '2001:cafe:42::/56'], '--service-cidr': ['10.43.0.0/16', '2001:cafe:43::/112'], '--cluster-dns': ['10.43.0.10'],
    });
    assert.deepEqual(readNodeArgs(JSON.stringify(['server', '--cluster-cidr', '10.42.0.0/16', '--cluster-cidr', '2001:cafe:42::/56', '--flannel-backend=none'])), {
      '--cluster-cidr': ['10.42.0.0/16', '2001:cafe:42::/56'], '--flannel-backend': ['none'],
    });
    assert.equal(readNodeArgs(JSON.stringify(['agent', '--cluster-cidr', '10.42.0.0/16'])), undefined, 'an agent\'s node-args name no server flags');
    assert.equal(readNodeArgs('not json'), undefined);
    assert.equal(readNodeArgs(JSON.stringify({ server: true })), undefined);
    // A value that is not a CIDR or address is dropped, whatever it is; a flag's missing value is not taken from the next flag.
    const secretish = readNodeArgs(JSON.stringify(['server', '-t', 'K10abc::server:s3cret', '--token=s3cret', '--cluster-cidr', 'mysql://root:s3cret@tcp(db)/k3s', '--service-cidr', '--datastore-endpoint', 'postgres://u:s3cret@db']));
    assert.deepEqual(secretish, {});
    assert.ok(!JSON.stringify(secretish).includes('s3cret'));
  });

  it('reads dual-stack ranges (comma lists, --flag=value) into one range per family, flannel\'s IPv6Network too', async () => {
    const inv = await inventory(K3S);
    node(inv, 'k3s-server-1').metadata!.annotations!['k3s.io/node-args'] = JSON.stringify(['server', '--cluster-cidr=10.42.0.0/16,2001:db8:42::/56', '--service-cidr', '10.43.0.0/16,2001:db8:43::/112']);
    assert.deepEqual(ranges(buildSnapshot(inv), 'service', 'pod'), [
      'service 10.43.0.0/16 <k3s.io/node-args --service-cidr>',
      'service 2001:db8:43::/112 <k3s.io/node-args --service-cidr>',
      'pod 10.42.0.0/16 <k3s.io/node-args --cluster-cidr>',
      'pod 2001:db8:42::/56 <k3s.io/node-args --cluster-cidr>',
      'pod 10.42.0.0/16 <k3s embedded flannel Network (the cluster CIDR)>',
      'pod 2001:db8:42::/56 <k3s embedded flannel IPv6Network (the cluster CIDR)>',
    ]);
  });

  it('adds the embedded flannel\'s Network only where k3s\'s own flannel runs', async () => {
    const none = await inventory(K3S);
    const server = node(none, 'k3s-server-1');
    const args = JSON.parse(server.metadata!.annotations!['k3s.io/node-args']!) as string[];
    server.metadata!.annotations!['k3s.io/node-args'] = JSON.stringify([...args, '--flannel-backend=none']);
    assert.deepEqual(ranges(buildSnapshot(none), 'pod'), ['pod 10.42.0.0/16 <k3s.io/node-args --cluster-cidr>']);
    const kubeFlannel = await inventory(K3S);
    kubeFlannel.objects.push({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-flannel-ds', namespace: 'kube-flannel', uid: 'b1c9e3a0-0000-4000-a000-000000000003' }, spec: {} });
    assert.deepEqual(ranges(buildSnapshot(kubeFlannel), 'pod'), ['pod 10.42.0.0/16 <k3s.io/node-args --cluster-cidr>']);
    const noAnnotations = await inventory(K3S);
    for (const o of noAnnotations.objects) if (o.kind === 'Node') for (const k of Object.keys(o.metadata!.annotations!)) if (k.startsWith('flannel.')) delete o.metadata!.annotations![k];
    const n = buildSnapshot(noAnnotations);
    assert.deepEqual(ranges(n, 'pod'), ['pod 10.42.0.0/16 <k3s.io/node-args --cluster-cidr>']);
    assert.equal(n.cni.plugin, 'unknown');
  });

  it('recognises k3s\'s embedded flannel from the flannel.alpha.coreos.com annotations it leaves on nodes', async () => {
    const s = await snapshot(K3S);
    assert.deepEqual([s.cni.plugin, s.cni.ipam], ['flannel', 'host-local']);
    assert.deepEqual(s.cni.evidence, ["node k3s-server-1 annotated flannel.alpha.coreos.com/backend-type=vxlan (flannel's kube subnet manager)"]);
  });

  it('plans --service-cidr: one patch to /etc/rancher/k3s/config.yaml (service-cidr, cluster-dns, tls-san) at the server-restart gate', async () => {
    const r = await run(['plan', '-f', K3S, '--service-cidr', '10.96.0.0/16', '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const plan = JSON.parse(r.out);
    const gate = plan.steps.find((s: any) => s.id === 'restart-apiservers');
    assert.deepEqual(gate.gate.patches.map((p: any) => [p.id, p.target]), [['k3s-server-config', '/etc/rancher/k3s/config.yaml on every server (k3s-server-1)']]);
    const [patch] = gate.gate.patches;
    // v1.31 with the ServiceCIDR API already enabled: its feature gate is kept and DisableAllocatorDualWrite joins it
    assert.equal(patch.before, 'service-cidr: 10.43.0.0/16\ncluster-dns: 10.43.0.10\ntls-san:\n  # ...existing entries\n'
      + 'kube-apiserver-arg:\n  # ...existing entries\n  - feature-gates=MultiCIDRServiceAllocator=true\n');
    assert.equal(patch.after, 'service-cidr: 10.96.0.0/16\ncluster-dns: 10.96.0.10\ntls-san:\n  # ...existing entries\n  - 10.43.0.1\n  - 10.96.0.1\n'
      + 'kube-apiserver-arg:\n  # ...existing entries\n  - feature-gates=MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true\n');
    assert.match(gate.gate.instructions[1], /^systemctl restart k3s on each server in turn, first the one the others name in `server:`/);
    const dns = plan.steps.find((s: any) => s.id === 'kubelet-cluster-dns');
    assert.match(dns.gate.instructions[0], /systemctl restart k3s-agent on every agent/);
    assert.doesNotMatch(r.out, /kubeadm-config|static pod|\/etc\/kubernetes/);
  });

  it('plans --pod-cidr on the node path: cluster-cidr read from node-args, widened over both ranges with allocation off, then NEW', async () => {
    const r = await run(['plan', '-f', K3S, '--pod-cidr', '10.60.0.0/16', '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const plan = JSON.parse(r.out);
    assert.deepEqual([plan.spec.podCIDR.ipam, plan.spec.podCIDR.from, plan.spec.podCIDR.to], ['node', ['10.42.0.0/16'], ['10.60.0.0/16']]);
    const gates = plan.steps.filter((s: any) => s.kind === 'gate' && s.gate.patches?.length > 0);
    assert.deepEqual(gates.map((g: any) => [g.id, g.gate.patches.map((p: any) => p.id)]), [['kcm-stop-allocating', ['k3s-kcm-stop-allocating']], ['kcm-cluster-cidr', ['k3s-pod-cidr']]]);
    const [stop, final] = gates.map((g: any) => g.gate.patches[0]);
    // 10.32.0.0/11 is the smallest range holding 10.42.0.0/16 and 10.60.0.0/16: flannel's Network while nodes of both exist
    assert.equal(stop.after, 'cluster-cidr: 10.32.0.0/11\nkube-controller-manager-arg:\n  # ...existing entries\n  - allocate-node-cidrs=false\n');
    assert.equal(stop.before, 'cluster-cidr: 10.42.0.0/16\nkube-controller-manager-arg:\n  # ...existing entries\n');
    assert.equal(final.before, stop.after);
    assert.match(final.after, /^cluster-cidr: 10\.60\.0\.0\/16\n/);
    assert.doesNotMatch(final.after, /allocate-node-cidrs=false\n/);
    assert.ok(!plan.steps.some((s: any) => s.gate?.patches?.some((p: any) => p.id === 'kube-proxy-cluster-cidr')), 'no kube-proxy ConfigMap on k3s');
    for (const g of gates) assert.match(g.gate.instructions.at(-1), new RegExp(`^kube-renumber resume --ack-gate ${g.id}`));
    const rereg = plan.steps.find((s: any) => s.gate?.condition === 'node-reregistered');
    assert.match(rereg.gate.instructions[0], /systemctl restart k3s-agent \(k3s on a server\)/);
  });
});

describe('RKE2', () => {
  it('is recognised from the rke2.io/ annotations, labels, kubelet version and its HelmCharts, with evidence', async () => {
    const s = await snapshot(RKE2);
    assert.equal(s.platform?.kind, 'rke2');
    assert.equal(s.platform?.title, 'RKE2');
    const ev = s.platform!.evidence;
    assert.match(ev[0]!, /^3 node\(s\) annotated rke2\.io\/\* by rke2 \(e\.g\. rke2-server-1: rke2\.io\/node-args\)$/);
    assert.ok(ev.some((e) => e.includes('v1.36.4+rke2r1')), ev.join('\n'));
    assert.ok(ev.includes('HelmChart(s) kube-system/rke2-canal, rke2-coredns (helm.cattle.io/v1, deployed by RKE2)'), ev.join('\n'));
    assert.ok(ev.includes('DaemonSet(s) kube-system/rke2-canal'), ev.join('\n'));
    assert.ok(ev.includes('rke2.io/node-args --cluster-dns 10.53.0.10 (node-args of server rke2-server-1)'), ev.join('\n'));
  });

  it('reads its ranges from the static pods\' flags, the server\'s rke2.io/node-args and the charts\' injected values', async () => {
    const s = await snapshot(RKE2);
    assert.deepEqual(ranges(s, 'service', 'pod'), [
      'service 10.53.0.0/16 <kube-apiserver --service-cluster-ip-range>',
      'service 10.53.0.0/16 <kube-controller-manager --service-cluster-ip-range>',
      'service 10.53.0.0/16 <rke2.io/node-args --service-cidr>',
      'service 10.53.0.0/16 <RKE2 HelmChart spec.set global.serviceCIDR>',
      'pod 10.52.0.0/16 <kube-controller-manager --cluster-cidr>',
      'pod 10.52.0.0/16 <kube-proxy --cluster-cidr>',
      'pod 10.52.0.0/16 <rke2.io/node-args --cluster-cidr>',
      'pod 10.52.0.0/16 <RKE2 HelmChart spec.set global.clusterCIDR>',
    ]);
    assert.deepEqual(s.warnings, []);
    assert.deepEqual(s.dnsService, { namespace: 'kube-system', name: 'rke2-coredns-rke2-coredns', clusterIPs: ['10.53.0.10'], foundBy: "the platform's DNS Service (selector k8s-app=kube-dns)" });
  });

  it('labels RKE2\'s documented defaults when neither node-args nor charts name the ranges', async () => {
    const inv = await inventory(RKE2);
    inv.objects = inv.objects.filter((o) => o.kind !== 'HelmChart');
    node(inv, 'rke2-server-1').metadata!.annotations!['rke2.io/node-args'] = JSON.stringify(['server', '--token', '********']);
    const s = buildSnapshot(inv);
    assert.equal(s.platform?.kind, 'rke2');
    assert.deepEqual(ranges(s, 'service', 'pod').filter((r) => r.includes('RKE2')), [
      'service 10.43.0.0/16 <RKE2 default --service-cidr (not set in the rke2.io/node-args of server rke2-server-1, no RKE2 HelmChart global.serviceCIDR)>',
      'pod 10.42.0.0/16 <RKE2 default --cluster-cidr (not set in the rke2.io/node-args of server rke2-server-1, no RKE2 HelmChart global.clusterCIDR)>',
    ]);
  });

  it('reads Canal (the rke2-canal DaemonSet) as Calico on flannel, host-local IPAM', async () => {
    const s = await snapshot(RKE2);
    assert.deepEqual([s.cni.plugin, s.cni.ipam, s.cni.ipamMode], ['calico', 'host-local', 'host-local (Canal default)']);
    assert.match(s.cni.evidence[0]!, /^pod kube-system\/rke2-canal-\w+ \(Canal: Calico policy on flannel networking\)$/);
    // Without its pods, the DaemonSet alone says Canal.
    const inv = await inventory(RKE2);
    inv.objects = inv.objects.filter((o) => !(o.kind === 'Pod' && o.metadata?.name?.startsWith('rke2-canal-')));
    inv.objects.push({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'rke2-canal', namespace: 'kube-system', uid: 'b1c9e3a0-0000-4000-a000-000000000001' }, spec: {} });
    const d = buildSnapshot(inv);
    assert.deepEqual([d.cni.plugin, d.cni.ipamMode], ['calico', 'host-local (Canal default)']);
    assert.ok(d.cni.evidence.includes('pod DaemonSet kube-system/rke2-canal (Canal: Calico policy on flannel networking)'), d.cni.evidence.join('\n'));
  });

  it('plans both moves with patches to /etc/rancher/rke2/config.yaml, no kube-proxy ConfigMap, its static pods checked by the gates', async () => {
    const svc = await run(['plan', '-f', RKE2, '--service-cidr', '10.96.0.0/16', '-o', 'json']);
    assert.equal(svc.code, 0, svc.err);
    const sp = JSON.parse(svc.out);
    const patch = sp.steps.find((s: any) => s.id === 'restart-apiservers').gate.patches[0];
    assert.equal(patch.id, 'rke2-server-config');
    assert.match(patch.target, /^\/etc\/rancher\/rke2\/config\.yaml on every server/);
    assert.match(patch.after, /^service-cidr: 10\.96\.0\.0\/16\ncluster-dns: 10\.96\.0\.10\n/);
    const pod = await run(['plan', '-f', RKE2, '--pod-cidr', '10.60.0.0/16', '-o', 'json']);
    assert.equal(pod.code, 0, pod.err);
    const pp = JSON.parse(pod.out);
    const ids = pp.steps.flatMap((s: any) => s.gate?.patches ?? []).map((p: any) => p.id);
    assert.deepEqual(ids, ['rke2-kcm-stop-allocating', 'rke2-pod-cidr']);
    const final = pp.steps.find((s: any) => s.id === 'kcm-cluster-cidr');
    assert.equal(final.gate.instructions.at(-1), 'kube-renumber resume', 'the kube-controller-manager mirror pod shows its flags');
    assert.ok(final.gate.instructions.some((l: string) => l.includes('rollout restart daemonset rke2-canal')));
  });

  it('refuses a Pod CIDR move when Calico hands out the addresses: the rke2-calico chart owns the pool', async () => {
    const inv = await inventory(RKE2);
    inv.objects = inv.objects.filter((o) => !(o.kind === 'Pod' && o.metadata?.name?.startsWith('rke2-canal-')));
    inv.objects.push({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'default-ipv4-ippool', uid: 'b1c9e3a0-0000-4000-a000-000000000004' }, spec: { cidr: '10.52.0.0/16', blockSize: 26 } });
    const dir = mkdtempSync(join(tmpdir(), 'kr-rke2-calico-'));
    try {
      writeFileSync(join(dir, 'all.yaml'), dump({ apiVersion: 'v1', kind: 'List', items: inv.objects }, { lineWidth: -1 }));
      const r = await run(['plan', '-f', dir, '--pod-cidr', '10.60.0.0/16', '-o', 'yaml']);
      assert.equal(r.code, 2, r.err);
      assert.equal(r.out, '');
      assert.equal(r.err.trimEnd().split('\n').length, 1, r.err);
      assert.match(r.err, /^error: moving the Pod CIDR is refused on RKE2 with Calico IPAM: RKE2 deploys Calico from its rke2-calico HelmChart/);
      assert.match(r.err, /; instead: change the IP pool in a HelmChartConfig/);
      const svc = await run(['plan', '-f', dir, '--service-cidr', '10.96.0.0/16', '-o', 'yaml']);
      assert.equal(svc.code, 0, svc.err);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is tried before k3s: a node with signs of both is RKE2; k3s\'s own HelmCharts do not make a cluster RKE2', async () => {
    assert.ok(platforms().findIndex((p) => p.kind === 'rke2') < platforms().findIndex((p) => p.kind === 'k3s'));
    const both = await inventory(RKE2);
    node(both, 'rke2-agent-1').metadata!.labels!['node.kubernetes.io/instance-type'] = 'k3s';
    assert.equal(buildSnapshot(both).platform?.kind, 'rke2');
    const k = await inventory(K3S);
    k.objects.push({ apiVersion: 'helm.cattle.io/v1', kind: 'HelmChart', metadata: { name: 'traefik', namespace: 'kube-system', uid: 'b1c9e3a0-0000-4000-a000-000000000002' }, spec: { set: { 'global.systemDefaultRegistry': '' } } });
    assert.equal(buildSnapshot(k).platform?.kind, 'k3s');
  });
});

describe('secrets in node-args', () => {
  const SECRETS = [FIXTURE_TOKEN, 'second-token-value-91c2', 'datastore-pass-55d1', 'agent-token-value-3b7e'];
  /** The k3s fixture with more secrets in its server's node-args, in every form k3s may leave readable. */
  const leaky = (): string => fixtureCopy(K3S, (n) => {
    if (n.metadata?.name !== 'k3s-server-1') return;
    const args = JSON.parse(n.metadata.annotations!['k3s.io/node-args']!) as string[];
    args.push('--token=second-token-value-91c2', '--datastore-endpoint', 'postgres://k3s:datastore-pass-55d1@198.51.100.50:5432/k3s', '--agent-token', 'agent-token-value-3b7e');
    n.metadata.annotations!['k3s.io/node-args'] = JSON.stringify(args);
  });
  const noSecret = (what: string, text: string): void => {
    for (const s of SECRETS) assert.ok(!text.includes(s), `${what} shows a secret from node-args (${s})`);
    assert.ok(!text.includes('s3cret') && !text.includes('::server:'), what);
  };

  it('the fixture really holds the token (as k3s writes `-t TOKEN`), so the checks below can fail', () => {
    assert.ok(readFileSync(join(K3S, 'nodes.yaml'), 'utf8').includes(FIXTURE_TOKEN));
  });

  it('never appears in inspect (json, yaml, table), plan output or its error lines', async () => {
    const dir = leaky();
    try {
      assert.ok(readFileSync(join(dir, 'nodes.yaml'), 'utf8').includes('datastore-pass-55d1'));
      for (const o of ['json', 'yaml', 'wide']) {
        const r = await run(['inspect', '-f', dir, '-o', o]);
        assert.ok(r.code === 0 || r.code === 1, `inspect -o ${o}: ${r.err}`);
        noSecret(`inspect -o ${o}`, r.out + r.err);
      }
      for (const args of [['--pod-cidr', '10.43.0.0/16'], ['--service-cidr', '10.96.0.0/16', '-o', 'yaml'], ['--pod-cidr', '10.244.0.0/16', '--service-cidr', '10.96.0.0/16', '-o', 'yaml'], ['--pod-cidr', '10.244.0.0/16', '-o', 'markdown']]) {
        const r = await run(['plan', '-f', dir, ...args]);
        assert.ok(r.code <= 2, r.err);
        noSecret(`plan ${args.join(' ')}`, r.out + r.err);
      }
      const s = await snapshot(dir);
      noSecret('the snapshot', JSON.stringify(s));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never appears in the input error for two different copies of a node', async () => {
    const dir = leaky();
    try {
      // The same node in a second file with other node-args but the same resourceVersion: an InputError names the difference.
      const doc = load(readFileSync(join(dir, 'nodes.yaml'), 'utf8')) as { items: KubeObject[] };
      const copy = structuredClone(doc.items[0]!);
      copy.metadata!.annotations!['k3s.io/node-args'] = JSON.stringify(['server', '-t', FIXTURE_TOKEN, '--debug']);
      writeFileSync(join(dir, 'z-node-copy.yaml'), dump(copy));
      const r = await run(['inspect', '-f', dir]);
      assert.equal(r.code, 3, r.err);
      assert.match(r.err, /metadata\.annotations\["k3s\.io\/node-args"\]: \(value not shown: it may hold secrets\)/);
      noSecret('the input error', r.out + r.err);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the bundled examples keep their platform', () => {
  for (const [name, kind] of [['kops-tailscale', 'kops'], ['kops-legacy-pool', 'kops'], ['kubeadm-exhausted', 'kubespray']] as const) {
    it(`${name} is ${kind}`, async () => {
      const s = await snapshot(join(ROOT, 'examples', name));
      assert.equal(s.platform?.kind, kind);
      assert.ok(!s.ranges.some((r) => /k3s|RKE2/.test(r.source)), s.ranges.map((r) => r.source).join('\n'));
    });
  }

  it('both fixtures pass input validation (inspect exits 0 or 1)', async () => {
    for (const dir of [K3S, RKE2]) {
      const r = await run(['inspect', '-f', dir]);
      assert.ok(r.code === 0 || r.code === 1, `${dir}: ${r.code} ${r.err}`);
    }
  });
});
