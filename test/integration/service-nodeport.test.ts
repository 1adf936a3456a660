// A NodePort Service moved in place gives its nodePort up for a moment: going ExternalName releases it, and
// the last write asks for it again. On the real apiserver: a Service that takes the port in between stops the
// move with an error naming it, nothing else is written, and once the port is free the move finishes with the
// nodePort kept. (A nodePort the apiserver leaked, held by no Service, cannot be made on demand: the waiting
// for it is covered by test/unit/engine.service-moves.test.ts, with this file proving the real 422's wording.)

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { Journal } from '../../src/engine/journal.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { ServiceExecutor } from '../../src/engine/service-steps.ts';
import { connect } from '../../src/kube/client.ts';
import type { MigrationPlan, StepItem } from '../../src/plan/plan.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const NS = 'np';
const SVC = `/api/v1/namespaces/${NS}/services`;
const MERGE = 'application/merge-patch+json';

describe('in-place move of a NodePort Service whose nodePort is taken mid-move', () => {
  const tb = useTestbed({ serviceCIDR: OLD, nodes: 1, calicoCRDs: false });
  const item: StepItem = { namespace: NS, name: 'web', from: ['10.96.0.60'], to: ['10.100.0.60'], bridge: 'web-kr-old' };
  const plan = {
    spec: { serviceCIDR: { apiVersion: 'networking.k8s.io/v1', from: [OLD], to: [NEW], target: [NEW], kept: [] }, strategy: 'in-place' },
    mapping: [{ namespace: NS, name: 'web', action: 'move', from: item.from, to: item.to }], steps: [],
  } as unknown as MigrationPlan;
  const dir = mkdtempSync(join(tmpdir(), 'kr-np-'));
  const warnings: string[] = [];
  let ctx: StepContext;
  let original: KubeObject;
  let port = 0;

  test('a Service that takes the port while the move is between its writes stops it, naming it; the Service stays ExternalName with its bridge at the old IP', async () => {
    const c = tb.client;
    await c.create({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: 'renumber-new' }, spec: { cidrs: [NEW] } });
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => c.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    original = await c.create({
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: NS },
      spec: { type: 'NodePort', clusterIP: item.from[0], selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    port = original.spec.ports[0].nodePort;
    assert.ok(port > 0, 'a nodePort was allocated');

    // what a run leaves when it dies right after the first write of this move: the backup, then ExternalName
    ctx = {
      client: connect({ kubeconfig: tb.kubeconfigPath }),
      backups: new BackupStore(join(dir, 'backups'), 'r'), journal: new Journal(join(dir, 'journal.jsonl'), 'r'),
      dryRun: 'none', log: () => {}, warn: (m) => warnings.push(m),
    };
    ctx.backups.save({ ...original, apiVersion: 'v1', kind: 'Service' });
    const ext = await c.raw('PATCH', `${SVC}/web`, { spec: { type: 'ExternalName', externalName: `web-kr-old.${NS}.svc.cluster.local` } }, MERGE);
    assert.equal(ext.status, 200, ext.text);
    // someone else's NodePort Service asks for the freed port
    await c.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'thief', namespace: NS },
      spec: { type: 'NodePort', selector: { app: 'other' }, ports: [{ port: 81, nodePort: port }] } });

    const exec = new ServiceExecutor(plan, { nodePortLeakWaitMs: 60_000 });
    const t0 = Date.now();
    await assert.rejects(exec.moveOne(ctx, item, 'in-place'),
      new RegExp(`^Error: nodePort ${port} of Service ${NS}/web was taken by Service ${NS}/thief while ${NS}/web was ExternalName .*free the port, then resume`));
    assert.ok(Date.now() - t0 < 30_000, 'no waiting when a Service holds the port');
    assert.deepEqual(warnings, []);
    const web = await c.get(`${SVC}/web`);
    assert.equal(web.spec.type, 'ExternalName', 'the Service stays as it was');
    const bridge = await c.get(`${SVC}/web-kr-old`);
    assert.deepEqual(bridge.spec.clusterIPs, item.from, 'the bridge holds the old IP meanwhile');
  });

  test('once the port is free, the move finishes: same uid, mapped IP, the nodePort kept', async () => {
    const c = tb.client;
    await c.request('DELETE', `${SVC}/thief`);
    const ev = await new ServiceExecutor(plan).moveOne(ctx, item, 'in-place');
    assert.equal(ev.wrote, true);
    const web = await c.get(`${SVC}/web`);
    assert.equal(web.metadata.uid, original.metadata?.uid);
    assert.equal(web.spec.type, 'NodePort');
    assert.deepEqual(web.spec.clusterIPs, item.to);
    assert.equal(web.spec.ports[0].nodePort, port);
    assert.deepEqual(warnings, []);
  });
});
