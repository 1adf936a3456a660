// The most nodes a cluster may reach, read live from a real apiserver under the shipped read-only RBAC
// (deploy/rbac.yaml): a Cluster API MachineDeployment's max-size annotation, a Karpenter NodePool's limits.nodes
// (both through their CRDs, minimal definitions served by the apiserver), cluster-autoscaler's --nodes flags on its
// pod and its status ConfigMap in kube-system. `suggest` then sizes the pod range for the largest.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { rangeSize } from '../../src/analyze/suggest.ts';
import { nodeReach } from '../../src/analyze/sizing.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { connect } from '../../src/kube/client.ts';
import { readLiveInventory } from '../../src/kube/discover.ts';
import { useTestbed } from '../testbed/harness.ts';
import { kubeconfigWithToken } from './helpers.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A CRD that stores any object of the kind (the schema is not what is tested here). */
function crd(group: string, version: string, plural: string, kind: string, scope: 'Namespaced' | 'Cluster'): object {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.${group}` },
    spec: {
      group, scope, names: { plural, kind, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

const CRDS = [
  crd('cluster.x-k8s.io', 'v1beta1', 'machinedeployments', 'MachineDeployment', 'Namespaced'),
  crd('karpenter.sh', 'v1', 'nodepools', 'NodePool', 'Cluster'),
];

const OBJECTS = [
  {
    apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'MachineDeployment',
    metadata: { name: 'md-0', namespace: 'default', annotations: { 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': '120' } },
    spec: { clusterName: 'c1', replicas: 1 },
  },
  { apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name: 'general' }, spec: { template: { spec: {} }, limits: { cpu: '1000', nodes: '300' } } },
  {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cluster-autoscaler-0', namespace: 'kube-system', labels: { app: 'cluster-autoscaler' } },
    spec: { containers: [{ name: 'cluster-autoscaler', image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0', command: ['./cluster-autoscaler', '--nodes=1:40:asg-a', '--nodes=0:60:asg-b'] }] },
  },
  {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-autoscaler-status', namespace: 'kube-system' },
    data: { status: 'autoscalerStatus: Running\nnodeGroups:\n- name: asg-a\n  health: {status: Healthy, minSize: 1, maxSize: 40}\n- name: asg-b\n  health: {status: Healthy, minSize: 0, maxSize: 60}\n' },
  },
];

describe('node maximums read live', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/16', nodes: 1 });

  test('every source is read under the shipped read-only RBAC, and the largest sizes the pod range', async () => {
    let r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: CRDS }) });
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/machinedeployments.cluster.x-k8s.io', 'crd/nodepools.karpenter.sh']);
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: OBJECTS }) });
    assert.equal(r.code, 0, r.stderr);
    r = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const inv = await readLiveInventory(connect({ kubeconfig: kubeconfigWithToken(tb.server, tok.stdout.trim()) }));
    assert.deepEqual(inv.gaps, [], 'nothing was out of reach');
    const snap = buildSnapshot(inv);
    const byWhat = Object.fromEntries((snap.nodeLimits?.sources ?? []).map((s) => [s.what, s.max]));
    assert.deepEqual(byWhat, {
      'cluster-autoscaler --nodes': 100,
      'cluster-autoscaler status maxSize': 100,
      'Cluster API cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': 120,
      'Karpenter NodePool limits.nodes': 300,
    });
    assert.deepEqual(nodeReach(snap), { count: 300, from: 'Karpenter NodePool limits.nodes', groups: 1 });
    const size = rangeSize(snap, { for: 'pods', family: 4 });
    assert.deepEqual(size.sizedFor, { what: 'nodes', count: 300, from: 'Karpenter NodePool limits.nodes (1 group)' });
    assert.equal(size.prefix, 24 - 9);
  });
});
