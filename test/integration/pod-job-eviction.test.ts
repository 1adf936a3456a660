// A Job that evictions would fail, on the node IPAM path against the real control plane: 2 kwok nodes moved in one
// wave (--max-unavailable 2), a Job with backoffLimit 1 and one pod on each node (the Job controller counts each
// evicted pod as a failure). The wave is refused before any of its nodes is touched, naming the Job; with the
// backoffLimit raised to 2 the same run goes on, and the Job lives.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { getJSON, ROOT } from './pod-helpers.ts';

install();

const OLD = '10.244.0.0/16';
const NEW = '10.62.0.0/16';

describe('node waves and Jobs: a wave whose evictions would fail a Job is refused as a whole', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 2, podIPAM: 'kwok', calicoCRDs: false });
  const dir = mkdtempSync(join(tmpdir(), 'kr-job-evict-'));
  const planPath = join(dir, 'plan.yaml');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--timeout', '120s'];

  test('refused with backoffLimit 1 (nothing cordoned or evicted); goes on once it is 2', { timeout: 600_000 }, async () => {
    const job = {
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'spread', namespace: 'default' },
      spec: { parallelism: 2, completions: 2, backoffLimit: 1, template: {
        metadata: { labels: { app: 'spread' }, annotations: { 'pod-complete.stage.kwok.x-k8s.io/delay': '1h' } },
        spec: {
          restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox' }],
          affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'spread' } }, topologyKey: 'kubernetes.io/hostname' }] } },
        } } },
    };
    assert.equal((await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify(job) })).code, 0);
    let pods: any[] = [];
    for (let i = 0; i < 120; i++) {
      pods = (await getJSON(tb, ['get', 'pods', '-n', 'default', '-l', 'app=spread'])).items.filter((p: any) => p.status?.podIP);
      if (pods.length === 2) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    assert.equal(pods.length, 2, 'both pods run');
    assert.equal(new Set(pods.map((p) => p.spec.nodeName)).size, 2, 'one on each node');

    const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '2', '-o', 'json']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    const waves = (JSON.parse(p.out).steps as any[]).filter((s) => s.kind === 'move-nodes');
    assert.equal(waves.length, 1, 'one wave of both nodes');
    const stop = await tb.restartControllerManager({ allocateNodeCIDRs: false });
    assert.equal(stop.running, true);

    const args = ['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', ...common()];
    const refused = await run(args);
    assert.notEqual(refused.code, 0, refused.err);
    assert.notEqual(refused.code, 7, refused.err);
    assert.match(refused.err, /Job default\/spread: evicting its pod\(s\) on nodes tb-node-\d, tb-node-\d \(one wave\) would fail it \(backoffLimit 1, 0 failure\(s\) so far, 2 pod\(s\) to evict/);
    const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
    assert.deepEqual(nodes.filter((n: any) => n.spec.unschedulable).map((n: any) => n.metadata.name), [], 'no node cordoned');
    const still = (await getJSON(tb, ['get', 'pods', '-n', 'default', '-l', 'app=spread'])).items;
    assert.deepEqual(still.map((x: any) => x.metadata.uid).sort(), pods.map((x: any) => x.metadata.uid).sort(), 'both pods untouched');

    assert.equal((await tb.kubectl(['patch', 'job', 'spread', '-n', 'default', '--type=merge', '-p', '{"spec":{"backoffLimit":2}}'])).code, 0);
    const r = await run(args);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
    const j = await getJSON(tb, ['get', 'job', 'spread', '-n', 'default']);
    assert.ok(!(j.status?.conditions ?? []).some((c: any) => c.type === 'Failed' && c.status === 'True'), 'the Job did not fail');
    for (const n of (await getJSON(tb, ['get', 'nodes'])).items) assert.match(n.spec.podCIDR ?? '', /^10\.62\./, `${n.metadata.name} in NEW`);
  });
});
