// The UDP hand-over (src/engine/udp-handover.ts) against the real control plane: a Deployment behind a Service with a
// UDP port is restarted by the restart engine (restartInWaves) pod by pod, each old pod taken out of its ReplicaSet,
// then out of its Services once its replacement serves, then evicted after the hold; no scale-up. The process is
// killed (SIGKILL) right after its 1st, 2nd, 3rd … write and run again: every old pod ends evicted, the Deployment
// ends with exactly its replicas, all new, and no pod is left held. (That the hold outlasts the nodes' conntrack
// entries is shown on the data-plane testbed: test/integration/zero-downtime.test.ts.)

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect, type KubeClient } from '../../src/kube/client.ts';
import { renewNodeLeases } from './helpers.ts';
import { listAll, PODS } from '../../src/kube/resources.ts';
import { HANDOVER_LABEL } from '../../src/engine/udp-handover.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NS = 'uh';
const LABELS = { 'k8s-app': 'dns' };

function objects(): unknown[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'dns', namespace: NS },
      spec: { replicas: 2, selector: { matchLabels: LABELS }, template: { metadata: { labels: LABELS },
        spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 53, protocol: 'UDP' }] }],
          terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }] } } } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'dns', namespace: NS },
      spec: { selector: LABELS, ports: [{ name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53, protocol: 'TCP' }] } },
  ];
}

describe('UDP hand-over', () => {
  const tb = useTestbed({ nodes: 2, calicoCRDs: false });
  let stopLeases = () => {};
  after(() => stopLeases());
  let client: KubeClient;
  const live = async () => (await listAll(client, PODS, { namespace: NS })).filter((p) => !p.metadata?.deletionTimestamp);
  const serving = async () => (await live()).filter((p) => p.metadata?.labels?.['k8s-app'] === 'dns'
    && (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));

  test('set up: a 2-replica Deployment behind a UDP Service', { timeout: 240_000 }, async () => {
    client = connect({ kubeconfig: tb.kubeconfigPath });
    const nodes = (await listAll(client, { group: '', version: 'v1', plural: 'nodes', namespaced: false })).map((n) => n.metadata!.name!);
    stopLeases = renewNodeLeases(client, nodes);
    const r = await tb.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects() }) });
    assert.equal(r.code, 0, r.stderr);
    await eventually('2 pods serving', async () => (await serving()).length === 2, 120_000, 500);
  });

  const state = mkdtempSync(join(tmpdir(), 'kr-udp-handover-'));
  const script = join(state, 'restart.ts');
  writeFileSync(script, [
    `import { BackupStore } from ${JSON.stringify(join(ROOT, 'src/engine/backup.ts'))};`,
    `import { Journal } from ${JSON.stringify(join(ROOT, 'src/engine/journal.ts'))};`,
    `import { restartInWaves } from ${JSON.stringify(join(ROOT, 'src/engine/restart-run.ts'))};`,
    `import { scaleUp } from ${JSON.stringify(join(ROOT, 'src/engine/restarts.ts'))};`,
    `import { connect } from ${JSON.stringify(join(ROOT, 'src/kube/client.ts'))};`,
    `import { install } from ${JSON.stringify(join(ROOT, 'src/install.ts'))};`,
    'install();',
    'const [kubeconfig, dir, pods] = process.argv.slice(2);',
    'const ctx = { client: connect({ kubeconfig }), backups: new BackupStore(dir + "/backups", "run-u"), journal: new Journal(dir + "/journal.jsonl", "run-u"), dryRun: "none", log: (m) => console.error(m) };',
    `const scaled = await scaleUp(ctx, { namespace: "${NS}", name: "dns" }, { timeoutMs: 60000 });`,
    `await restartInWaves(ctx, pods ? [{ kind: "Deployment", namespace: "${NS}", name: "dns", pods: pods.split(",") }] : [],`,
    '  { parallel: 2, critical: [], token: "run-u", rolloutTimeoutMs: 90000, step: "restart-pods", handoverHold: { ms: 2000, why: "test" } });',
    'console.log(JSON.stringify({ scaled }));',
  ].join('\n'));
  const run = (pods: string[], killAfter: number) => new Promise<{ signal: string | null; code: number | null; out: string; err: string }>((resolve) => {
    const p = spawn(process.execPath, [script, tb.kubeconfigPath, state, pods.join(',')],
      { env: { ...process.env, KUBE_RENUMBER_TEST_KILL_AFTER_WRITES: String(killAfter) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = ''; let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code, signal) => resolve({ signal, code, out, err }));
  });

  for (const killAfter of [0, 1, 2, 3, 5]) {
    test(killAfter === 0 ? 'handed over without a kill: no scale-up, every old pod out of its Service first and evicted after the hold'
      : `killed right after write ${killAfter}, run again: every old pod evicted once, the replicas all new, none held`, { timeout: 300_000 }, async () => {
      const old = (await serving()).map((p) => p.metadata!.name!).sort();
      const oldUids = new Set((await serving()).map((p) => p.metadata!.uid!));
      assert.equal(old.length, 2);
      let r = await run(old, killAfter);
      if (killAfter > 0) {
        assert.equal(r.signal, 'SIGKILL', `killed after write ${killAfter}: ${r.err.slice(-1500)}`);
        r = await run(old, 0);
      }
      assert.equal(r.code, 0, r.err.slice(-3000));
      // a resumed run too: right after a pod left its ReplicaSet the Deployment's status is not at rest, yet it is
      // being handed over (a scale-up now would end in a scale-down that deletes a serving pod at once)
      assert.match(r.out, /"scaledTo":2/, `not scaled up: ${r.err.slice(-1500)}`);
      assert.match(r.err, /serves a UDP Service: not scaled up/);
      const pods = await live();
      assert.deepEqual(pods.filter((p) => p.metadata?.labels?.[HANDOVER_LABEL] !== undefined).map((p) => p.metadata!.name), [], 'no pod left held');
      assert.deepEqual(pods.filter((p) => oldUids.has(p.metadata!.uid!)).map((p) => p.metadata!.name), [], 'every old pod evicted');
      await eventually('2 new pods serving, no more', async () => (await serving()).length === 2 && (await live()).length === 2, 60_000, 500);
      const journal = readFileSync(join(state, 'journal.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
      for (const name of old) {
        const lines = journal.filter((e) => e.objects?.includes(`Pod/${NS}/${name}`)).map((e) => e.detail as string);
        for (const stage of [/handover: out of its ReplicaSet/, /handover: out of its Services/, /handover: evicted \d+\.\d s after/]) {
          assert.ok(lines.some((l) => stage.test(l)), `${name}: ${stage} journaled: ${lines.join(' | ')}`);
        }
        const held = Number(/evicted (\d+\.\d) s/.exec(lines.find((l) => /evicted/.test(l)) ?? '')?.[1]);
        assert.ok(held >= 2, `${name} held ${held} s, the hold is 2 s`);
      }
    });
  }
});
