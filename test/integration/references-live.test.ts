// The references scan on a real apiserver: objects that name the old pod and Service ranges (a NetworkPolicy
// ipBlock, an Ingress allow-list annotation, a Service's loadBalancerSourceRanges, Calico policies, the
// ip-masq-agent and CoreDNS ConfigMaps) are listed live, built into a snapshot and each found with the right
// proposal, also under the shipped read-only RBAC (deploy/rbac.yaml). Then the gate: a cluster holding a Calico
// BGPConfiguration advertising the old Service range, a webhook called at a ClusterIP and a Service an Argo CD
// Application syncs with selfHeal gets a plan that starts with gate references; apply stops there (exit 7); once
// they are fixed, resume passes it (and stops at the next gate, restart-apiservers). A Helm release Secret (as
// Helm's secrets driver writes it) whose manifest pins a Service's clusterIP is among them only with
// --read-helm-releases: the read role cannot list Secrets (exit 5, the opt-in file named), the opt-in file
// deploy/rbac-helm-releases.yaml can, and the gate, checked by kube-renumber-migrate, reads the release again.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { scanReferences, type RangeMove, type Reference } from '../../src/analyze/references.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { connect } from '../../src/kube/client.ts';
import { readLiveInventory } from '../../src/kube/discover.ts';
import { useTestbed } from '../testbed/harness.ts';
import { kubeconfigWithToken } from './helpers.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { run } from '../unit/run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NS = 'refs';
const MOVES: RangeMove[] = [
  { role: 'pod', from: '10.244.0.0/16', to: '10.200.0.0/16' },
  { role: 'service', from: '10.96.0.0/16', to: '10.100.0.0/16' },
];

function objects(): unknown[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    {
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'from-pods', namespace: NS },
      spec: {
        podSelector: {}, policyTypes: ['Ingress', 'Egress'],
        ingress: [{ from: [{ ipBlock: { cidr: '10.244.0.0/16', except: ['10.244.5.0/24'] } }] }],
        egress: [{ to: [{ ipBlock: { cidr: '192.0.2.0/24' } }] }],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: {
        name: 'web', namespace: NS,
        annotations: { 'nginx.ingress.kubernetes.io/whitelist-source-range': '203.0.113.0/24,10.244.0.0/16' },
      },
      spec: { defaultBackend: { service: { name: 'lb', port: { number: 80 } } } },
    },
    {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'lb', namespace: NS },
      spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80 }], loadBalancerSourceRanges: ['198.51.100.0/24', '10.244.3.0/24'] },
    },
    {
      apiVersion: 'crd.projectcalico.org/v1', kind: 'GlobalNetworkPolicy', metadata: { name: 'allow-cluster' },
      spec: { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow', source: { nets: ['10.244.0.0/16', '10.96.0.0/16'] } }] },
    },
    {
      apiVersion: 'crd.projectcalico.org/v1', kind: 'NetworkPolicy', metadata: { name: 'no-dns-range', namespace: NS },
      spec: { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { notNets: ['10.96.0.0/24'] } }] },
    },
    {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ip-masq-agent', namespace: 'kube-system' },
      data: { config: 'nonMasqueradeCIDRs:\n  - 10.244.0.0/16\n  - 10.96.0.0/16\nmasqLinkLocal: false\nresyncInterval: 60s\n' },
    },
    {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'refs-dns', namespace: 'kube-system' },
      data: { Corefile: 'example.org:53 {\n    forward . 10.96.0.53\n}\n' },
    },
  ];
}

/** "role Kind ns/name field → proposed" for the references of the objects made here. */
function ours(refs: Reference[]): string[] {
  return refs
    .filter((r) => r.namespace === NS || (r.namespace === undefined && r.name === 'allow-cluster') || (r.namespace === 'kube-system' && (r.name === 'ip-masq-agent' || r.name === 'refs-dns')))
    .map((r) => `${r.severity} ${r.role} ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.field} → ${r.proposed ?? '-'}`)
    .sort();
}

const EXPECTED = [
  'error pod ConfigMap kube-system/ip-masq-agent data["config"].nonMasqueradeCIDRs → [10.244.0.0/16, 10.96.0.0/16, 10.200.0.0/16, 10.100.0.0/16]',
  'error pod GlobalNetworkPolicy allow-cluster spec.ingress[0].source.nets → [10.244.0.0/16, 10.96.0.0/16, 10.200.0.0/16, 10.100.0.0/16]',
  'error pod Ingress refs/web metadata.annotations["nginx.ingress.kubernetes.io/whitelist-source-range"] → 203.0.113.0/24,10.244.0.0/16,10.200.0.0/16',
  'error pod NetworkPolicy refs/from-pods spec.ingress[0].from[0].ipBlock.cidr → 10.200.0.0/16',
  'error pod NetworkPolicy refs/from-pods spec.ingress[0].from[0].ipBlock.except → [10.200.5.0/24]',
  'error pod Service refs/lb spec.loadBalancerSourceRanges → [198.51.100.0/24, 10.244.3.0/24, 10.200.3.0/24]',
  'error service ConfigMap kube-system/ip-masq-agent data["config"].nonMasqueradeCIDRs → [10.244.0.0/16, 10.96.0.0/16, 10.200.0.0/16, 10.100.0.0/16]',
  'error service ConfigMap kube-system/refs-dns data["Corefile"] → 10.100.0.53',
  'error service GlobalNetworkPolicy allow-cluster spec.ingress[0].source.nets → [10.244.0.0/16, 10.96.0.0/16, 10.200.0.0/16, 10.100.0.0/16]',
  'error service NetworkPolicy refs/no-dns-range spec.egress[0].destination.notNets → [10.96.0.0/24, 10.100.0.0/24]',
];

/**
 * A release Secret as Helm 3's secrets driver writes it (helm pkg/storage/driver: secrets.go newSecretsObject,
 * util.go encodeRelease): type helm.sh/release.v1, labels owner/name/status/version, data.release the base64 of
 * gzip of the release JSON (and the API's own base64 over it).
 */
function helmReleaseSecret(name: string, version: number, status: string, manifest: string): unknown {
  const release = { name, namespace: NS, version, info: { status }, config: { service: { type: 'ClusterIP' }, auth: { password: 'not-for-printing' } }, manifest };
  const stored = gzipSync(Buffer.from(JSON.stringify(release))).toString('base64');
  return {
    apiVersion: 'v1', kind: 'Secret', type: 'helm.sh/release.v1',
    metadata: { name: `sh.helm.release.v1.${name}.v${version}`, namespace: NS, labels: { owner: 'helm', name, status, version: String(version) } },
    data: { release: Buffer.from(stored).toString('base64') },
  };
}

/** The manifest of chart "cache": its Service, with the clusterIP pinned when `ip` is given. */
function cacheManifest(ip?: string): string {
  return `---\n# Source: cache/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: cache\nspec:\n${ip ? `  clusterIP: ${ip}\n` : ''}  selector:\n    app: cache\n  ports:\n  - port: 6379\n`;
}

describe('references scan against the real apiserver', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/16', nodes: 1 });

  test('each object naming an old range is found live, with its proposal', async () => {
    const r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects() }) });
    assert.equal(r.code, 0, r.stderr);
    const inv = await readLiveInventory(connect({ kubeconfig: tb.kubeconfigPath }));
    assert.deepEqual(inv.gaps, []);
    const snap = buildSnapshot(inv);
    const refs = scanReferences(snap, MOVES);
    assert.deepEqual(ours(refs), EXPECTED);
    // the Service proposal keeps the offset; the policy note says what to do during and after the move
    const peer = refs.find((x) => x.field === 'spec.ingress[0].from[0].ipBlock.cidr')!;
    assert.match(peer.note, /add a second one with ipBlock\.cidr 10\.200\.0\.0\/16.*after it, only 10\.200\.0\.0\/16/);
    // the egress peer outside both ranges is not a reference
    assert.equal(refs.some((x) => x.field.startsWith('spec.egress[0].to')), false);
  });

  test('the shipped read-only RBAC can read every source', async () => {
    const apply = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml')]);
    assert.equal(apply.code, 0, apply.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const inv = await readLiveInventory(connect({ kubeconfig: kubeconfigWithToken(tb.server, tok.stdout.trim()) }));
    assert.deepEqual(inv.gaps, [], 'nothing was out of reach');
    assert.deepEqual(ours(scanReferences(buildSnapshot(inv), MOVES)), EXPECTED);
    const can = await tb.kubectl(['auth', 'can-i', 'update', 'networkpolicies.crd.projectcalico.org', '--as', 'system:serviceaccount:kube-system:kube-renumber']);
    assert.equal(can.stdout.trim(), 'no');
  });

  test('gate references: apply stops at it; fixed, resume passes it', { timeout: 600_000 }, async () => {
    // the objects of the tests above name the old ranges too: away with them, this test has its own
    const del = await tb.kubectl(['delete', '--ignore-not-found', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects().filter((o: any) => o.kind !== 'Namespace') }) });
    assert.equal(del.code, 0, del.stderr);
    // the testbed has neither Argo CD's nor Calico's BGP CRD: each as its project names it, schema left open
    const crd = (group: string, version: string, kind: string, plural: string, scope: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.${group}` },
      spec: { group, scope, names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
    });
    let r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      crd('argoproj.io', 'v1alpha1', 'Application', 'applications', 'Namespaced'),
      crd('crd.projectcalico.org', 'v1', 'BGPConfiguration', 'bgpconfigurations', 'Cluster'),
    ] }) });
    assert.equal(r.code, 0, r.stderr);
    for (const name of ['applications.argoproj.io', 'bgpconfigurations.crd.projectcalico.org']) {
      assert.equal((await tb.kubectl(['wait', '--for=condition=Established', `crd/${name}`, '--timeout=60s'])).code, 0);
    }
    const web = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: NS, annotations: { 'argocd.argoproj.io/tracking-id': 'shop:/Service:refs/web' } },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } };
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      web,
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } },
      { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'shop', namespace: 'argocd' }, spec: { syncPolicy: { automated: { selfHeal: true } } } },
      { apiVersion: 'crd.projectcalico.org/v1', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/16' }] } },
    ] }) });
    assert.equal(r.code, 0, r.stderr);
    const ip = JSON.parse((await tb.kubectl(['get', 'service', 'web', '-n', NS, '-o', 'json'])).stdout).spec.clusterIP as string;
    // failurePolicy Ignore and a selector no namespace matches: the webhook is never in the way
    const hook = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'refs-hook' },
      webhooks: [{ name: 'refs.example.com', clientConfig: { url: `https://${ip}:443/validate` }, failurePolicy: 'Ignore', sideEffects: 'None', admissionReviewVersions: ['v1'],
        namespaceSelector: { matchLabels: { 'refs-hook': 'never' } }, rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] }] };
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify(hook) });
    assert.equal(r.code, 0, r.stderr);
    // a Helm release pinning Service cache's clusterIP: its deployed revision, and an older one (superseded: not listed)
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'cache', namespace: NS, labels: { 'app.kubernetes.io/managed-by': 'Helm' } },
      spec: { selector: { app: 'cache' }, ports: [{ port: 6379 }] } }) });
    assert.equal(r.code, 0, r.stderr);
    const cacheIP = JSON.parse((await tb.kubectl(['get', 'service', 'cache', '-n', NS, '-o', 'json'])).stdout).spec.clusterIP as string;
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      helmReleaseSecret('cache', 1, 'superseded', cacheManifest('10.96.250.250')),
      helmReleaseSecret('cache', 2, 'deployed', cacheManifest(cacheIP)),
    ] }) });
    assert.equal(r.code, 0, r.stderr);
    const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const helmLine = new RegExp(`Secret refs/sh\\.helm\\.release\\.v1\\.cache\\.v2 release cache: manifest Service cache spec\\.clusterIP: ${esc(cacheIP)} → 10\\.100\\.`);

    const dir = mkdtempSync(join(tmpdir(), 'kr-refs-gate-'));
    const planPath = join(dir, 'plan.yaml');
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--timeout', '120s', '--propagation-delay', '0s'];
    const planArgs = ['--service-cidr', '10.100.0.0/16', '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '--cluster-dns', 'none'];
    // without the flag: the release is not read, and the plan says so in its pre-flight checks
    const table = await run(['plan', '--kubeconfig', tb.kubeconfigPath, ...planArgs, '-o', 'wide']);
    assert.match(table.out, /REFERENCES: 3 error\(s\)/);
    assert.match(table.out, /WARN +helm-releases +Helm releases were not read.*--read-helm-releases/);
    assert.doesNotMatch(table.out, /sh\.helm\.release/);

    // as the read ServiceAccount of deploy/rbac.yaml: --read-helm-releases is refused (exit 5) and names the opt-in file
    r = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    const token = async (sa: string) => {
      const t = await tb.kubectl(['create', 'token', sa, '-n', 'kube-system', '--duration', '1h']);
      assert.equal(t.code, 0, t.stderr);
      return kubeconfigWithToken(tb.server, t.stdout.trim());
    };
    const readKC = await token('kube-renumber');
    const refused = await run(['plan', '--kubeconfig', readKC, ...planArgs, '--read-helm-releases']);
    assert.equal(refused.code, 5, refused.err);
    assert.match(refused.err, /^error: .*not allowed to list secrets .*deploy\/rbac-helm-releases\.yaml/m);
    // with the opt-in file: the plan written as that ServiceAccount reads the deployed release (not the superseded one)
    r = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac-helm-releases.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    const p = await run(['plan', '--kubeconfig', readKC, ...planArgs, '--read-helm-releases', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    assert.match(p.out, /helmReleases: true/);
    assert.doesNotMatch(p.out, /not-for-printing|10\.96\.250\.250/);
    writeFileSync(planPath, p.out);
    const withHelm = await run(['plan', '--kubeconfig', readKC, ...planArgs, '--read-helm-releases']);
    assert.match(withHelm.out, /REFERENCES: 4 error\(s\)/);
    assert.match(withHelm.out, /PASS +helm-releases/);

    let a = await run(['apply', planPath, '--yes', ...common]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate references/);
    assert.match(a.err, /BGPConfiguration default spec\.serviceClusterIPs/);
    assert.match(a.err, new RegExp(`ValidatingWebhookConfiguration refs-hook webhooks\\[0\\]\\.clientConfig\\.url .*${ip.replace(/\./g, '\\.')}`));
    assert.match(a.err, /Service refs\/web spec\.clusterIPs/);
    assert.match(a.err, helmLine);
    assert.doesNotMatch(a.err, /not-for-printing/);
    // nothing changed yet: no ServiceCIDR for the new range
    assert.doesNotMatch((await tb.kubectl(['get', 'servicecidrs', '-o', 'name'])).stdout, /10-100/);

    // fixed: BGP advertises both ranges, the webhook is called through its Service, selfHeal is off
    r = await tb.kubectl(['patch', 'bgpconfigurations.crd.projectcalico.org', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/16' }, { cidr: '10.100.0.0/16' }] } })]);
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['patch', 'validatingwebhookconfiguration', 'refs-hook', '--type', 'json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/clientConfig', value: { service: { namespace: NS, name: 'web', port: 80, path: '/validate' } } }])]);
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['patch', 'applications.argoproj.io', 'shop', '-n', 'argocd', '--type', 'merge', '-p', JSON.stringify({ spec: { syncPolicy: { automated: { selfHeal: false } } } })]);
    assert.equal(r.code, 0, r.stderr);
    // the chart no longer pins the address: helm upgrade writes a new deployed revision, the old one superseded
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      helmReleaseSecret('cache', 2, 'superseded', cacheManifest(cacheIP)),
      helmReleaseSecret('cache', 3, 'deployed', cacheManifest()),
    ] }) });
    assert.equal(r.code, 0, r.stderr);

    // the gate is checked again as kube-renumber-migrate, with the shipped files, the opt-in one (which `rbac PLAN`
    // names) and the per-namespace Roles `rbac PLAN` writes
    const grants = await run(['rbac', planPath]);
    assert.equal(grants.code, 0, grants.err);
    assert.match(grants.out, /kubectl apply -f deploy\/rbac-helm-releases\.yaml/);
    if (/^kind:/m.test(grants.out)) {
      r = await tb.kubectl(['apply', '-f', '-'], { input: grants.out });
      assert.equal(r.code, 0, r.stderr);
    }
    const migrateKC = await token('kube-renumber-migrate');
    a = await run(['resume', planPath, '--yes', ...common.map((x) => (x === tb.kubeconfigPath ? migrateKC : x))]);
    assert.equal(a.code, 7, a.err);
    assert.doesNotMatch(a.err, /stopped at gate references/);
    assert.doesNotMatch(a.err, /sh\.helm\.release/);
    assert.match(a.err, /stopped at gate restart-apiservers/);
  });
});
