// A Service plan written on a plain cluster is refused by `apply` once the live cluster shows it runs on OpenShift
// (src/platform/openshift.ts): the testbed is given OpenShift's cluster-scoped Network config (config.openshift.io/v1,
// named `cluster`, as the Cluster Version Operator creates it), and `apply` must exit 2 with one error line naming
// OpenShift before the lock or any write: no Lease, no ServiceCIDR, no Service changed, no state directory.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

// A structural stand-in for OpenShift's networks.config.openshift.io CRD (the real one, openshift/api
// config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_networks-Default.crd.yaml, has the same group,
// names and scope; its schema is not what detection reads).
const NETWORK_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: networks.config.openshift.io
spec:
  group: config.openshift.io
  names: { kind: Network, listKind: NetworkList, plural: networks, singular: network }
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    subresources: { status: {} }
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`;

const NETWORK_CLUSTER = `apiVersion: config.openshift.io/v1
kind: Network
metadata:
  name: cluster
spec:
  clusterNetwork:
  - cidr: 10.244.0.0/20
    hostPrefix: 24
  networkType: OVNKubernetes
  serviceNetwork:
  - ${OLD}
`;

describe('apply refuses a Service plan on a cluster that turned out to be OpenShift', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 6, calico: false } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-openshift-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');

  test('the plan is written on the plain testbed', async () => {
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(r.code, 0, r.err + r.out.slice(0, 2000));
    assert.match(r.out, /kind: MigrationPlan/);
    writeFileSync(planPath, r.out);
  });

  test('with OpenShift\'s Network config present, apply exits 2 naming OpenShift and writes nothing', async () => {
    let k = await tb.kubectl(['apply', '-f', '-'], { input: NETWORK_CRD });
    assert.equal(k.code, 0, k.stderr);
    k = await tb.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/networks.config.openshift.io']);
    assert.equal(k.code, 0, k.stderr);
    k = await tb.kubectl(['apply', '-f', '-'], { input: NETWORK_CLUSTER });
    assert.equal(k.code, 0, k.stderr);

    const services = async () => new Map((JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items as any[])
      .map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s.metadata.resourceVersion as string]));
    const serviceCIDRs = async () => (JSON.parse((await tb.kubectl(['get', 'servicecidrs', '-o', 'json'])).stdout).items as any[])
      .map((c) => `${c.metadata.name} ${c.metadata.resourceVersion}`).sort();
    const before = await services();
    const cidrsBefore = await serviceCIDRs();
    assert.ok(before.size >= 6, `${before.size} Services`);

    const r = await run(['apply', planPath, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '60s']);
    assert.equal(r.code, 2, r.err + r.out);
    const lines = r.err.trimEnd().split('\n');
    assert.equal(lines.length, 1, r.err);
    assert.match(lines[0]!, /^error: moving the Service CIDR is refused on OpenShift: .*serviceNetwork .*cannot be changed after installation/);
    assert.match(lines[0]!, /platform recognised by Network\.config\.openshift\.io\/cluster \(networkType OVNKubernetes\)/);
    assert.match(lines[0]!, /nothing was changed/);

    const lease = await tb.kubectl(['get', 'lease', '-n', 'kube-system', 'kube-renumber', '-o', 'name']);
    assert.notEqual(lease.code, 0, 'no Lease kube-system/kube-renumber');
    assert.match(lease.stderr, /NotFound/);
    assert.deepEqual(await serviceCIDRs(), cidrsBefore, 'no new ServiceCIDR');
    assert.deepEqual(await services(), before, 'every Service\'s resourceVersion unchanged');
    assert.equal(existsSync(stateDir), false, 'no state directory');
  });
});
