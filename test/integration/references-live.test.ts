// The references scan on a real apiserver: objects that name the old pod and Service ranges (a NetworkPolicy
// ipBlock, an Ingress allow-list annotation, a Service's loadBalancerSourceRanges, Calico policies, the
// ip-masq-agent and CoreDNS ConfigMaps) are listed live, built into a snapshot and each found with the right
// proposal, also under the shipped read-only RBAC (deploy/rbac.yaml). Then the gate: a cluster holding a Calico
// BGPConfiguration advertising the old Service range, a webhook called at a ClusterIP and a Service an Argo CD
// Application syncs with selfHeal gets a plan that starts with gate references; apply stops there (exit 7); once
// they are fixed, resume passes it (and stops at the next gate, restart-apiservers).

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

    const dir = mkdtempSync(join(tmpdir(), 'kr-refs-gate-'));
    const planPath = join(dir, 'plan.yaml');
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--timeout', '120s', '--propagation-delay', '0s'];
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', '10.100.0.0/16', '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '--cluster-dns', 'none', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    const table = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', '10.100.0.0/16', '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '--cluster-dns', 'none']);
    assert.match(table.out, /REFERENCES: 3 error\(s\)/);

    let a = await run(['apply', planPath, '--yes', ...common]);
    assert.equal(a.code, 7, a.err);
    assert.match(a.err, /stopped at gate references/);
    assert.match(a.err, /BGPConfiguration default spec\.serviceClusterIPs/);
    assert.match(a.err, new RegExp(`ValidatingWebhookConfiguration refs-hook webhooks\\[0\\]\\.clientConfig\\.url .*${ip.replace(/\./g, '\\.')}`));
    assert.match(a.err, /Service refs\/web spec\.clusterIPs/);
    // nothing changed yet: no ServiceCIDR for the new range
    assert.doesNotMatch((await tb.kubectl(['get', 'servicecidrs', '-o', 'name'])).stdout, /10-100/);

    // fixed: BGP advertises both ranges, the webhook is called through its Service, selfHeal is off
    r = await tb.kubectl(['patch', 'bgpconfigurations.crd.projectcalico.org', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/16' }, { cidr: '10.100.0.0/16' }] } })]);
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['patch', 'validatingwebhookconfiguration', 'refs-hook', '--type', 'json', '-p', JSON.stringify([{ op: 'replace', path: '/webhooks/0/clientConfig', value: { service: { namespace: NS, name: 'web', port: 80, path: '/validate' } } }])]);
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['patch', 'applications.argoproj.io', 'shop', '-n', 'argocd', '--type', 'merge', '-p', JSON.stringify({ spec: { syncPolicy: { automated: { selfHeal: false } } } })]);
    assert.equal(r.code, 0, r.stderr);

    a = await run(['resume', planPath, '--yes', ...common]);
    assert.equal(a.code, 7, a.err);
    assert.doesNotMatch(a.err, /stopped at gate references/);
    assert.match(a.err, /stopped at gate restart-apiservers/);
  });
});
