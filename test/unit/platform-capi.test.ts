/**
 * Cluster API (src/platforms/capi/) on its fixture (test/fixtures/platforms/capi: a kubeadm-bootstrapped workload
 * cluster, SOURCES.md): recognised before kubeadm from the annotations the Machine controller sets on each Node,
 * shown by inspect on one platform line, and both moves refused before any plan (exit 2, one error line, the
 * KubeadmControlPlane webhook's reason and the platform's own path).
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { capabilityOf } from '../../src/platform/registry.ts';
import { run } from './run-cli.ts';

install();

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'platforms', 'capi');

describe('Cluster API', () => {
  it('is recognised from the Node annotations, before the kubeadm signs the same cluster shows', async () => {
    const snap = buildSnapshot(await readInventoryFiles([FIXTURE]));
    assert.equal(snap.platform.kind, 'capi');
    assert.equal(snap.platform.title, 'Cluster API');
    assert.deepEqual(snap.platform.evidence, [
      '4 node(s) annotated cluster.x-k8s.io/cluster-name by the Cluster API Machine controller (e.g. cp-1: capi-demo)',
      '4 node(s) annotated cluster.x-k8s.io/machine by the Cluster API Machine controller (e.g. cp-1: capi-demo-control-plane-7xk2p)',
      'machines owned by KubeadmControlPlane, MachineSet (cluster.x-k8s.io/owner-kind)',
    ]);
    assert.ok(snap.kubeadm, 'the kubeadm ClusterConfiguration is still read');
    assert.deepEqual(snap.kubeadm.serviceSubnet, ['10.96.0.0/12']);
    for (const move of ['service', 'pod'] as const) assert.equal(capabilityOf('capi', move).supported, false, move);
  });

  it('inspect shows it on the one platform line, and in JSON as the platform', async () => {
    const text = await run(['inspect', '-f', FIXTURE]);
    assert.equal(text.code, 0, text.err);
    assert.match(text.out, /^platform {2,}Cluster API$/m);
    assert.doesNotMatch(text.out, /^distribution /m);
    const json = await run(['inspect', '-f', FIXTURE, '-o', 'json']);
    const report = JSON.parse(json.out);
    assert.equal(report.platform.kind, 'capi');
    assert.equal(report.distribution, undefined);
  });

  for (const [move, flag, target] of [['Service', '--service-cidr', '10.200.0.0/16'], ['Pod', '--pod-cidr', '10.128.0.0/14']] as const) {
    it(`plan ${flag} is refused before any plan: exit 2, one error line with the reason and the platform's own path`, async () => {
      const r = await run(['plan', flag, target, '-f', FIXTURE]);
      assert.equal(r.code, 2, r.err);
      assert.equal(r.out, '');
      const lines = r.err.trim().split('\n');
      assert.equal(lines.length, 1, r.err);
      assert.match(lines[0]!, new RegExp(`^error: moving the ${move} CIDR is refused on Cluster API: the management cluster rebuilds this cluster's machines`));
      assert.match(lines[0]!, /spec\.kubeadmConfigSpec\.clusterConfiguration\.networking/);
      assert.match(lines[0]!, /instead: .*Cluster spec\.clusterNetwork.*new workload cluster/);
      assert.match(lines[0]!, /cluster\.x-k8s\.io\/cluster-name/, 'the evidence is stated');
    });
  }

  it('without the Cluster API annotations the same cluster is planned as kubeadm', async () => {
    const inv = await readInventoryFiles([FIXTURE]);
    for (const o of inv.objects) {
      if (o.kind !== 'Node') continue;
      const ann: Record<string, string> = o.metadata?.annotations ?? {};
      for (const k of Object.keys(ann)) if (k.startsWith('cluster.x-k8s.io/')) delete ann[k];
    }
    assert.equal(buildSnapshot(inv).platform.kind, 'kubeadm');
  });
});
