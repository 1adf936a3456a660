// One combined plan moves the Service CIDR and the Pod CIDR (Calico) end to end: one restart of every pod
// picks up the new DNS IP, the new Service variables and an address in the new pod range together.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { assertAllPodsIn, assertWorkloadsReady, getJSON, inRange } from './pod-helpers.ts';

install();

const SVC_OLD = '10.96.0.0/16';
const SVC_NEW = '10.100.0.0/16';
const POD_OLD = '10.244.0.0/16';
const POD_NEW = '10.50.0.0/16';

describe('combined Service + Pod CIDR plan, end to end', () => {
  const tb = useTestbed({ serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodes: 4, podIPAM: 'calico', populate: { namespaces: 3, deployments: 1, replicas: 1, services: 20 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-combined-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s', '--propagation-delay', '0s'];

  test('plan, apply through every gate, verify', { timeout: 900_000 }, async () => {
    await populateWorkloads(tb, { namespaces: 2, deploymentsPerNs: 2, replicas: 3, statefulSets: 1, statefulSetReplicas: 2 });
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', SVC_NEW, '--pod-cidr', POD_NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    assert.match(p.out, /serviceCIDR:/);
    assert.match(p.out, /podCIDR:/);

    let r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate restart-apiservers/);
    await tb.restartApiserver({ serviceCIDR: SVC_NEW });
    const acks = ['--ack-gate', 'kubelet-cluster-dns', '--ack-gate', 'pod-cidr-config'];
    r = await run(['resume', planPath, '--yes', ...acks, ...common()]);
    // the pod restarts satisfy the Service plan's restart-workloads gate: no stop there
    assert.doesNotMatch(r.err, /stopped at gate restart-workloads/);
    assert.equal(r.code, 0, r.err);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);

    await assertAllPodsIn(tb, POD_NEW, POD_OLD);
    await assertWorkloadsReady(tb);
    await assertCalicoIpamClean(tb, [POD_OLD]);
    const svcs = (await getJSON(tb, ['get', 'services', '-A'])).items.filter((s: any) => s.spec.type !== 'ExternalName' && s.spec.clusterIP !== 'None' && s.spec.type !== 'LoadBalancer');
    const outside = svcs.filter((s: any) => !inRange(SVC_NEW, s.spec.clusterIP));
    assert.deepEqual(outside.map((s: any) => `${s.metadata.namespace}/${s.metadata.name} ${s.spec.clusterIP}`), []);
    const status = await run(['status', planPath, '--state-dir', stateDir, '-o', 'json']);
    assert.ok(JSON.parse(status.out).steps.every((s: any) => s.state === 'done'), status.out);
  });
});
