// The references scan on a real apiserver: objects that name the old pod and Service ranges (a NetworkPolicy
// ipBlock, an Ingress allow-list annotation, a Service's loadBalancerSourceRanges, Calico policies, the
// ip-masq-agent and CoreDNS ConfigMaps) are listed live, built into a snapshot and each found with the right
// proposal, also under the shipped read-only RBAC (deploy/rbac.yaml).

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
});
