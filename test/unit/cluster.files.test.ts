import { install } from '../../src/install.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, parseInventoryText, readInventoryFiles } from '../../src/cluster/files.ts';
import { inferServerVersion } from '../../src/cluster/version.ts';

install();

const FIX = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const inv = (f: string): string => join(FIX, 'inventory', f);
const bad = (f: string): string => join(FIX, 'bad-input', f);

const kinds = (objs: Array<{ kind?: string; metadata?: { name?: string } }>): string[] => objs.map((o) => `${o.kind}/${o.metadata?.name}`);

test('single object', async () => {
  const r = await readInventoryFiles([inv('single.yaml')]);
  assert.deepEqual(kinds(r.objects), ['Service/web']);
  assert.deepEqual(r.configs, []);
  assert.deepEqual(r.gaps, []);
  assert.deepEqual(r.source, { kind: 'file', files: [inv('single.yaml')] });
  assert.equal(r.serverVersion, undefined);
  assert.equal(r.serviceCIDRApiVersions, undefined);
});

test('kind: List is flattened', async () => {
  const r = await readInventoryFiles([inv('list.yaml')]);
  assert.deepEqual(kinds(r.objects), ['Service/kubernetes', 'Node/cp-1']);
});

test('typed list: items get kind and apiVersion from the list', async () => {
  const r = await readInventoryFiles([inv('typed-list.yaml')]);
  assert.deepEqual(kinds(r.objects), ['IPPool/default-ipv4-ippool', 'IPPool/new-pool']);
  for (const o of r.objects) assert.equal(o.apiVersion, 'projectcalico.org/v3');
});

test('multi-document YAML, empty documents skipped', async () => {
  const r = await readInventoryFiles([inv('multi.yaml')]);
  assert.deepEqual(kinds(r.objects), ['ConfigMap/kube-proxy', 'Service/kube-dns']);
});

test('JSON list', async () => {
  const r = await readInventoryFiles([inv('pods.json')]);
  assert.deepEqual(kinds(r.objects), ['Pod/web-1', 'Pod/kube-proxy-abcde']);
});

test('directory: yaml/yml/json files in name order, other files ignored', async () => {
  const r = await readInventoryFiles([join(FIX, 'inventory', 'dir')]);
  assert.deepEqual(r.source, {
    kind: 'file',
    files: ['a-pools.yaml', 'b-service.yml', 'c-pods.json'].map((f) => join(FIX, 'inventory', 'dir', f)),
  });
  assert.deepEqual(kinds(r.objects), ['IPPool/default-ipv4-ippool', 'IPPool/new-pool', 'Service/web', 'Pod/web-1', 'Pod/kube-proxy-abcde']);
});

test('several paths are concatenated in order', async () => {
  const r = await readInventoryFiles([inv('single.yaml'), inv('list.yaml')]);
  assert.deepEqual(kinds(r.objects), ['Service/web', 'Service/kubernetes', 'Node/cp-1']);
});

test('kubeadm file: ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration to configs; InitConfiguration ignored', async () => {
  const r = await readInventoryFiles([inv('kubeadm-v1beta4.yaml')]);
  assert.deepEqual(r.objects, []);
  assert.deepEqual(r.configs.map((c) => c.kind), ['ClusterConfiguration', 'KubeletConfiguration', 'KubeProxyConfiguration']);
  assert.equal(r.serverVersion, 'v1.34.1');
});

test('kOps Cluster specs and InstanceGroups go to configs (kops.k8s.io and kops/ groups); other kOps kinds ignored', () => {
  const text = [
    'apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata: {name: a}\nspec: {kubernetesVersion: 1.29.3}',
    'apiVersion: kops/v1alpha2\nkind: Cluster\nmetadata: {name: b}\nspec: {}',
    'apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {role: Node}',
    'apiVersion: kops.k8s.io/v1alpha2\nkind: Keyset\nmetadata: {name: ca}\nspec: {}',
  ].join('\n---\n');
  const r = parseInventoryText(text, 'kops.yaml');
  assert.deepEqual(r.objects, []);
  // InstanceGroups: their maxSize is the most nodes the cluster may reach (src/cluster/node-limits.ts)
  assert.deepEqual(r.configs.map((c) => c.metadata?.name), ['a', 'b', 'nodes']);
});

test('offline serverVersion: apiserver image tag, else kubeadm, else kOps, else lowest kubelet', () => {
  const node = (v: string, n: string): string => `apiVersion: v1\nkind: Node\nmetadata: {name: ${n}}\nstatus: {nodeInfo: {kubeletVersion: ${v}}}`;
  const api = 'apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver-cp, namespace: kube-system, labels: {component: kube-apiserver}}\nspec: {containers: [{name: kube-apiserver, image: "registry.k8s.io/kube-apiserver:v1.29.3@sha256:abc"}]}';
  const kops = 'apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata: {name: c}\nspec: {kubernetesVersion: 1.30.1}';
  const kubeadm = 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.31.0';
  const check = (docs: string[], want: string | undefined): void => {
    const { objects, configs } = parseInventoryText(docs.join('\n---\n'), 'x.yaml');
    assert.equal(inferServerVersion(objects, configs), want);
  };
  check([node('v1.28.2', 'a'), node('v1.27.9', 'b'), node('v1.28.10', 'c')], 'v1.27.9');
  check([node('v1.28.2', 'a'), kops], 'v1.30.1');
  check([node('v1.28.2', 'a'), kops, kubeadm], 'v1.31.0');
  check([node('v1.28.2', 'a'), kops, kubeadm, api], 'v1.29.3');
});

test('serviceCIDRApiVersions offline: from ServiceCIDR objects present', async () => {
  const { mkdtemp, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const d = await mkdtemp(join(tmpdir(), 'kr-'));
  const f = join(d, 'sc.yaml');
  await writeFile(f, 'apiVersion: networking.k8s.io/v1beta1\nkind: ServiceCIDR\nmetadata: {name: kubernetes}\nspec: {cidrs: [10.96.0.0/12]}\n');
  const r = await readInventoryFiles([f]);
  assert.deepEqual(r.serviceCIDRApiVersions, ['networking.k8s.io/v1beta1']);
});

test('BOM is tolerated', () => {
  const r = parseInventoryText('\ufeffapiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n', 'bom.yaml');
  assert.equal(r.objects.length, 1);
});

// ---------------------------------------------------------------- errors

async function rejects(paths: string[], pattern: RegExp): Promise<void> {
  await assert.rejects(readInventoryFiles(paths), (e: unknown) => {
    assert.ok(e instanceof InputError, `expected InputError, got ${String(e)}`);
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes('\n'), `one line: ${JSON.stringify(e.message)}`);
    return true;
  });
}

test('missing file', async () => {
  await rejects([bad('does-not-exist.yaml')], /^cannot read .*does-not-exist\.yaml: ENOENT: no such file or directory \(check the path\)$/);
});

test('not YAML: names the file and the line', async () => {
  await rejects([bad('not-yaml.yaml')], /not-yaml\.yaml: not valid YAML or JSON at line \d+: .+; expected `kubectl get/);
});

test('truncated JSON reports a YAML/JSON error with a line', async () => {
  await rejects([bad('truncated.json')], /truncated\.json: not valid YAML or JSON at line \d+/);
});

test('a document that is not a Kubernetes object', async () => {
  await rejects([bad('not-kubernetes.yaml')], /not-kubernetes\.yaml: document 2 is not a Kubernetes object \(no kind\)/);
});

test('no apiVersion', async () => {
  await rejects([bad('no-apiversion.yaml')], /no-apiversion\.yaml: the document is not a Kubernetes object \(no apiVersion\)/);
});

test('a scalar document', async () => {
  await rejects([bad('scalar.yaml')], /scalar\.yaml: the document is not a Kubernetes object \(a string, not a mapping\)/);
});

test('a List item without kind', async () => {
  await rejects([bad('list-item-no-kind.yaml')], /list-item-no-kind\.yaml: item 2 of the List is not a Kubernetes object \(no kind\)/);
});

test('empty file', async () => {
  await rejects([bad('empty.yaml')], /empty\.yaml: empty file; expected/);
});

test('only comments', async () => {
  await rejects([bad('comments-only.yaml')], /comments-only\.yaml: empty file \(only comments or empty documents\)/);
});

test('a directory without YAML/JSON files', async () => {
  await rejects([bad('no-yaml-dir')], /no-yaml-dir: the directory has no \.yaml, \.yml or \.json files/);
});

test('no paths', async () => {
  await rejects([], /^no input files given/);
});

test('errors carry no stack noise in the message', async () => {
  try {
    await readInventoryFiles([bad('not-yaml.yaml')]);
    assert.fail('should throw');
  } catch (e) {
    assert.ok(e instanceof InputError);
    assert.equal(e.name, 'InputError');
    assert.doesNotMatch(e.message, /\s{2}at /);
  }
});

test('a List item the snapshot refuses is named by its file, document and item number', async () => {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { buildSnapshot } = await import('../../src/cluster/build.ts');
  const dir = mkdtempSync(join(tmpdir(), 'kr-files-'));
  try {
    const pod = (name: string, podIP: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, status: { podIP } });
    const list = { apiVersion: 'v1', kind: 'List', items: [pod('a', '10.0.0.1'), pod('b', '10.0.0.300')] };
    const json = join(dir, 'pods.json');
    writeFileSync(json, JSON.stringify(list, null, 4));
    const yaml = join(dir, 'pods.yaml');
    writeFileSync(yaml, `apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n---\n${JSON.stringify(list)}\n`);
    for (const [file, where, opts] of [[json, `${json} item 2`, {}], [json, `${json} item 2`, { streamAbove: 0 }], [yaml, `${yaml} document 2, item 2`, {}]] as const) {
      const r = await readInventoryFiles([file], opts);
      assert.throws(() => buildSnapshot(r), (e: unknown) => e instanceof InputError && e.message.startsWith(`${where}: Pod default/b: status.podIP "10.0.0.300" is not an IP address`), `${file} ${JSON.stringify(opts)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
