/**
 * OpenShift (src/platform/openshift.ts) on its fixtures (test/fixtures/platforms/openshift: 4.16, OVN-Kubernetes;
 * openshift-sdn: 4.12, OpenShift SDN): recognised with its evidence, ranges read from Network.config.openshift.io,
 * openshift-dns/dns-default as the DNS Service, OVN-Kubernetes' internal subnets reported by inspect against
 * Tailscale's 100.64.0.0/10, and both moves refused by `plan` with OpenShift's reason and path.
 */
import { install } from '../../src/install.ts';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, RawInventory, Snapshot } from '../../src/cluster/types.ts';
import { findConflicts } from '../../src/analyze/conflicts.ts';
import { openshift } from '../../src/platforms/openshift/platform.ts';
import { platformResources } from '../../src/platform/registry.ts';
import type { PlatformInput } from '../../src/platform/types.ts';
import { run } from './run-cli.ts';

install();

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'platforms');
const OVN = join(FIXTURES, 'openshift');
const SDN = join(FIXTURES, 'openshift-sdn');

async function inventory(dir: string): Promise<RawInventory> {
  return readInventoryFiles([dir]);
}

/** The fixture's objects with `edit` applied to a deep copy, built into a snapshot. */
async function edited(dir: string, edit: (objects: KubeObject[]) => KubeObject[]): Promise<Snapshot> {
  const inv = await inventory(dir);
  return buildSnapshot({ ...inv, objects: edit(structuredClone(inv.objects)) });
}

const isOperatorNetwork = (o: KubeObject) => o.kind === 'Network' && o.apiVersion === 'operator.openshift.io/v1';

describe('OpenShift 4.16 with OVN-Kubernetes (fixture)', () => {
  test('is recognised as OpenShift, with the evidence it used', async () => {
    const s = buildSnapshot(await inventory(OVN));
    assert.equal(s.platform?.kind, 'openshift');
    assert.equal(s.platform?.title, 'OpenShift');
    const ev = s.platform!.evidence;
    assert.equal(ev[0], 'Network.config.openshift.io/cluster (networkType OVNKubernetes)');
    assert.equal(ev[1], 'ClusterVersion.config.openshift.io/version (4.16.8)');
    assert.ok(ev.includes('6 of 6 nodes labelled node.openshift.io/os_id (rhcos)'), ev.join('\n'));
    assert.ok(ev.some((e) => e.startsWith('OpenShift operator namespaces openshift-dns, ')), ev.join('\n'));
    assert.ok(ev.some((e) => e.startsWith('kubelet version v1.29.7+4510e9c')), ev.join('\n'));
  });

  test('the pod and service ranges are read from Network.config.openshift.io/cluster, spec and status, with their source', async () => {
    const s = buildSnapshot(await inventory(OVN));
    const got = s.ranges.filter((r) => r.role === 'service' || r.role === 'pod').map((r) => `${r.role} ${r.cidr} <${r.source}> ${r.label}`);
    assert.deepEqual(got, [
      'service 172.30.0.0/16 <Network.config.openshift.io/cluster spec.serviceNetwork> OpenShift serviceNetwork',
      'service 172.30.0.0/16 <Network.config.openshift.io/cluster status.serviceNetwork> OpenShift serviceNetwork',
      'pod 10.128.0.0/14 <Network.config.openshift.io/cluster spec.clusterNetwork> OpenShift clusterNetwork (hostPrefix 23)',
      'pod 10.128.0.0/14 <Network.config.openshift.io/cluster status.clusterNetwork> OpenShift clusterNetwork (hostPrefix 23)',
    ]);
  });

  test('the DNS Service is openshift-dns/dns-default, found by the DNS operator\'s selector', async () => {
    const s = buildSnapshot(await inventory(OVN));
    assert.deepEqual(s.dnsService, {
      namespace: 'openshift-dns', name: 'dns-default', clusterIPs: ['172.30.0.10'],
      foundBy: 'the platform\'s DNS Service (selector dns.operator.openshift.io/daemonset-dns=default)',
    });
  });

  test('a dns-default without the DNS operator\'s selector is not taken for the DNS Service', async () => {
    const s = await edited(OVN, (objs) => objs.map((o) => (o.kind === 'Service' && o.metadata?.name === 'dns-default'
      ? { ...o, spec: { ...o.spec, selector: { app: 'something-else' } } } : o)));
    assert.notEqual(s.dnsService?.name, 'dns-default');
  });

  test('OVN-Kubernetes\' join, transit and masquerade subnets are reserved: from the nodes\' annotations, else the documented defaults', async () => {
    const s = buildSnapshot(await inventory(OVN));
    assert.deepEqual(s.platform!.reserved.map((r) => `${r.cidr} ${r.reason}`), [
      '100.64.0.0/16 OVN-Kubernetes join subnet (internalJoinSubnet) (from node annotations)',
      'fd98::/64 OVN-Kubernetes join subnet (IPv6 internalJoinSubnet) (default fd98::/64)',
      '100.88.0.0/16 OVN-Kubernetes transit switch subnet (internalTransitSwitchSubnet) (from node annotations)',
      'fd97::/64 OVN-Kubernetes transit switch subnet (IPv6 internalTransitSwitchSubnet) (default fd97::/64)',
      // installed with 4.16 (status.history): the masquerade subnet of clusters installed before 4.17
      '169.254.169.0/29 OVN-Kubernetes masquerade subnet (internalMasqueradeSubnet) (default 169.254.169.0/29)',
      'fd69::/125 OVN-Kubernetes masquerade subnet (IPv6 internalMasqueradeSubnet) (default fd69::/125)',
    ]);
  });

  test('the operator config\'s internalJoinSubnet, internalTransitSwitchSubnet and internalMasqueradeSubnet override them', async () => {
    const s = await edited(OVN, (objs) => {
      const op = objs.find(isOperatorNetwork)!;
      const ovn = op.spec.defaultNetwork.ovnKubernetesConfig;
      ovn.ipv4 = { internalJoinSubnet: '100.99.0.0/16', internalTransitSwitchSubnet: '100.70.0.0/16' };
      ovn.gatewayConfig.ipv4 = { internalMasqueradeSubnet: '169.254.64.0/18' };
      return objs;
    });
    const byReason = (part: string) => s.platform!.reserved.find((r) => r.reason.includes(`(${part})`))!;
    assert.equal(byReason('internalJoinSubnet').cidr, '100.99.0.0/16');
    assert.match(byReason('internalJoinSubnet').reason, /from Network\.operator\.openshift\.io\/cluster/);
    assert.equal(byReason('internalTransitSwitchSubnet').cidr, '100.70.0.0/16');
    assert.equal(byReason('internalMasqueradeSubnet').cidr, '169.254.64.0/18');
  });

  test('without node annotations or ClusterVersion, the defaults of a cluster installed with 4.17 or later', async () => {
    const s = await edited(OVN, (objs) => objs
      .filter((o) => o.kind !== 'ClusterVersion')
      .map((o) => (o.kind === 'Node' ? { ...o, metadata: { ...o.metadata, annotations: {} } } : o)));
    assert.equal(s.platform?.kind, 'openshift');
    assert.deepEqual(s.platform!.reserved.filter((r) => !r.cidr.includes(':')).map((r) => `${r.cidr} ${r.reason}`), [
      '100.64.0.0/16 OVN-Kubernetes join subnet (internalJoinSubnet) (default 100.64.0.0/16)',
      '100.88.0.0/16 OVN-Kubernetes transit switch subnet (internalTransitSwitchSubnet) (default 100.88.0.0/16)',
      '169.254.0.0/17 OVN-Kubernetes masquerade subnet (internalMasqueradeSubnet) (default 169.254.0.0/17)',
    ]);
  });

  test('inspect -o json reports the join and transit subnets as conflicts with Tailscale\'s 100.64.0.0/10', async () => {
    const r = await run(['inspect', '-f', OVN, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const conflicts: any[] = JSON.parse(r.out).conflicts;
    const reserved = conflicts.filter((c) => c.kind === 'platform-reserved');
    assert.deepEqual(reserved.map((c) => `${c.severity} ${c.a.cidr} ${c.b.cidr} ${c.b.what}`), [
      'warning 100.64.0.0/16 100.64.0.0/10 CGNAT / Tailscale',
      'warning 100.88.0.0/16 100.64.0.0/10 CGNAT / Tailscale',
    ]);
    assert.match(reserved[0].a.what, /^reserved by OpenShift: OVN-Kubernetes join subnet/);
    assert.match(reserved[1].a.what, /^reserved by OpenShift: OVN-Kubernetes transit switch subnet/);
  });

  test('inspect --avoid reports a reserved subnet inside an avoided range', async () => {
    const r = await run(['inspect', '-f', OVN, '-o', 'json', '--avoid', '100.88.0.0/14=peered site']);
    assert.equal(r.code, 0, r.err);
    const hit = JSON.parse(r.out).conflicts.filter((c: any) => c.kind === 'platform-reserved' && c.b.cidr === '100.88.0.0/14');
    assert.equal(hit.length, 1);
    assert.equal(hit[0].a.cidr, '100.88.0.0/16');
    assert.equal(hit[0].reason, 'peered site');
  });

  test('a pod range on top of a reserved subnet is an error', async () => {
    const s = buildSnapshot(await inventory(OVN));
    const overlapping: Snapshot = { ...s, ranges: [...s.ranges, { cidr: '100.64.0.0/11', role: 'pod', source: 'test', label: 'test' }] };
    const c = findConflicts(overlapping).filter((x) => x.kind === 'platform-reserved' && x.severity === 'error');
    assert.deepEqual(c.map((x) => `${x.a.cidr} ${x.b.cidr}`), ['100.64.0.0/16 100.64.0.0/11', '100.88.0.0/16 100.64.0.0/11']);
  });

  test('plan --service-cidr exits 2 with one error line naming OpenShift, its reason and its path', async () => {
    const r = await run(['plan', '-f', OVN, '--service-cidr', '172.31.0.0/16']);
    assert.equal(r.code, 2, r.err + r.out);
    assert.equal(r.out, '');
    const lines = r.err.trimEnd().split('\n');
    assert.equal(lines.length, 1, r.err);
    assert.match(lines[0]!, /^error: moving the Service CIDR is refused on OpenShift: /);
    assert.match(lines[0]!, /serviceNetwork \(Network\.config\.openshift\.io\/cluster\) cannot be changed after installation/);
    assert.match(lines[0]!, /; instead: install a new cluster with the serviceNetwork you want/);
  });

  test('plan --pod-cidr exits 2 with one error line naming OpenShift, its reason and the documented expansion', async () => {
    const r = await run(['plan', '-f', OVN, '--pod-cidr', '10.200.0.0/14']);
    assert.equal(r.code, 2, r.err + r.out);
    assert.equal(r.out, '');
    const lines = r.err.trimEnd().split('\n');
    assert.equal(lines.length, 1, r.err);
    assert.match(lines[0]!, /^error: moving the Pod CIDR is refused on OpenShift: OpenShift documents only expanding the clusterNetwork range/);
    assert.match(lines[0]!, /instead: .*`oc patch Network\.config\.openshift\.io cluster --type=merge`/);
  });
});

describe('OpenShift 4.12 with OpenShift SDN (fixture)', () => {
  test('is recognised, reads its ranges, and reserves nothing of OVN-Kubernetes', async () => {
    const s = buildSnapshot(await inventory(SDN));
    assert.equal(s.platform?.kind, 'openshift');
    assert.equal(s.platform!.evidence[0], 'Network.config.openshift.io/cluster (networkType OpenShiftSDN)');
    assert.deepEqual(s.platform!.reserved, []);
    assert.deepEqual(s.ranges.filter((r) => r.role === 'pod').map((r) => r.cidr), ['10.128.0.0/14', '10.128.0.0/14']);
    assert.equal(s.dnsService?.name, 'dns-default');
    const r = await run(['inspect', '-f', SDN, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out).conflicts.filter((c: any) => c.kind === 'platform-reserved'), []);
  });

  test('plan --pod-cidr exits 2 (expansion is documented for OVN-Kubernetes only)', async () => {
    const r = await run(['plan', '-f', SDN, '--pod-cidr', '10.200.0.0/14']);
    assert.equal(r.code, 2, r.err + r.out);
    assert.equal(r.err.trimEnd().split('\n').length, 1, r.err);
    assert.match(r.err, /^error: moving the Pod CIDR is refused on OpenShift: .*OVN-Kubernetes only/);
  });
});

describe('OpenShift detection', () => {
  const input = (over: Partial<PlatformInput>): PlatformInput => ({
    nodes: [], objects: new Map(), daemonSets: new Set(), namespaces: new Set(), configMaps: new Map(),
    systemWorkloads: [], controlPlaneFlags: [], calicoClusterTypes: [], configs: [], ...over,
  });
  const node = (labels: Record<string, string>, kubeletVersion = 'v1.33.4') => ({ name: 'n1', labels, annotations: {}, kubeletVersion });

  test('one weak sign alone is not enough; two are', () => {
    assert.equal(openshift.detect(input({ namespaces: new Set(['openshift-dns']) })), undefined);
    assert.equal(openshift.detect(input({ nodes: [node({ 'node.openshift.io/os_id': 'rhcos' })] })), undefined);
    assert.equal(openshift.detect(input({ nodes: [node({}, 'v1.29.7+4510e9c')] })), undefined);
    assert.deepEqual(openshift.detect(input({ namespaces: new Set(['openshift-dns', 'shop']), nodes: [node({ 'node.openshift.io/os_id': 'rhcos' })] })), [
      '1 of 1 nodes labelled node.openshift.io/os_id (rhcos)',
      'OpenShift operator namespaces openshift-dns',
    ]);
  });

  test('a Network config named other than `cluster` is not evidence', () => {
    const objects = new Map([['config.openshift.io/Network', [{ apiVersion: 'config.openshift.io/v1', kind: 'Network', metadata: { name: 'other' } }]]]);
    assert.equal(openshift.detect(input({ objects })), undefined);
  });

  test('the kubeadm-built examples are not OpenShift', async () => {
    const s = buildSnapshot(await readInventoryFiles([join(FIXTURES, '..', '..', '..', 'examples', 'kops-tailscale')]));
    assert.notEqual(s.platform?.kind, 'openshift');
    assert.deepEqual(s.platform?.reserved, []);
  });

  test('the Network config, the operator config and ClusterVersion are read live (and kept from dumps)', () => {
    const reads = platformResources().map((r) => `${r.group}/${r.version} ${r.plural} ${r.kind} ${r.namespaced ? 'namespaced' : 'cluster'}`);
    for (const r of [
      'config.openshift.io/v1 networks Network cluster',
      'operator.openshift.io/v1 networks Network cluster',
      'config.openshift.io/v1 clusterversions ClusterVersion cluster',
    ]) assert.ok(reads.includes(r), r);
  });
});
