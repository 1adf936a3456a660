// The Calico path's new IPPool carries the run's labels, and undoing it touches only that pool: deleted with its uid
// as precondition when it is this run's; a pool of the name that was there disabled before is disabled again; any
// other pool of the name stops the rollback, untouched.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { RUN_LABEL } from '../../src/engine/covers.ts';
import { Journal } from '../../src/engine/journal.ts';
import { addedPools, poolObject, undoPool } from '../../src/pod-paths/calico/engine.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import type { KubeClient, Method } from '../../src/kube/client.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import { MANAGED_LABEL } from '../../src/plan/plan.ts';

install();

const RUN = 'a1b2c3d4e5f6';
const POOL = { name: 'new-pool', cidr: '10.50.0.0/16', blockSize: 26 };

/** A fake API holding one IPPool (or none); records every request with its body. */
function ctxWith(pool: KubeObject | undefined, backup?: KubeObject) {
  const seen: Array<{ method: string; path: string; body?: any }> = [];
  const client: KubeClient = {
    server: 'https://127.0.0.1:1', context: 't', get requestCount() { return seen.length; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
    async request<T>(method: Method, path: string, o: { body?: unknown } = {}): Promise<T> {
      seen.push({ method, path, body: o.body });
      if (method === 'GET' && path.endsWith('/ippools/new-pool')) {
        if (pool) return pool as T;
        throw new KubeApiError('GET', path, 404, 'NotFound', 'not found');
      }
      return {} as T;
    },
    async *list() { /* nothing */ },
  };
  const d = mkdtempSync(join(tmpdir(), 'kr-calico-undo-'));
  const ctx: StepContext = { client, backups: new BackupStore(join(d, 'b'), RUN), journal: new Journal(join(d, 'j'), RUN), dryRun: 'none', log: () => {} };
  if (backup) ctx.backups.save(backup);
  return { ctx, seen };
}

const live = (labels: Record<string, string>, disabled = false): KubeObject => ({
  apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'new-pool', uid: 'u-pool', resourceVersion: '7', labels }, spec: { cidr: POOL.cidr, disabled },
});

describe('Calico: the run\'s own IPPool', () => {
  it('is created with the managed label and the run label', () => {
    assert.deepEqual(poolObject(POOL, RUN).metadata!.labels, { [MANAGED_LABEL]: 'true', [RUN_LABEL]: RUN });
  });

  it('rollback deletes it with its uid as precondition', async () => {
    const { ctx, seen } = ctxWith(live({ [MANAGED_LABEL]: 'true', [RUN_LABEL]: RUN }));
    await undoPool(ctx, 'new-pool', RUN);
    const del = seen.find((s) => s.method === 'DELETE');
    assert.ok(del, seen.map((s) => s.method).join(','));
    assert.equal(del.body.preconditions.uid, 'u-pool');
  });

  it('another run\'s pool, or one without our labels, is left untouched and named', async () => {
    const variants: Array<Record<string, string>> = [{ [MANAGED_LABEL]: 'true', [RUN_LABEL]: 'otherrun0000' }, { [MANAGED_LABEL]: 'true' }, {}];
    for (const labels of variants) {
      const { ctx, seen } = ctxWith(live(labels));
      await assert.rejects(undoPool(ctx, 'new-pool', RUN), /IPPool new-pool is not this run's \(labels kube-renumber\.io\/managed=true, kube-renumber\.io\/run=a1b2c3d4e5f6\): left as it is/);
      assert.deepEqual(seen.filter((s) => s.method !== 'GET'), []);
    }
  });

  it('a pool that was there disabled before the run (its backup) is disabled again, not deleted', async () => {
    const { ctx, seen } = ctxWith(live({}), live({}, true));
    await undoPool(ctx, 'new-pool', RUN);
    assert.deepEqual(seen.filter((s) => s.method !== 'GET').map((s) => s.method), ['PATCH']);
    assert.equal(seen.find((s) => s.method === 'PATCH')!.body.spec.disabled, true);
  });

  it('a pool already gone: nothing to do', async () => {
    const { ctx, seen } = ctxWith(undefined);
    await undoPool(ctx, 'new-pool', RUN);
    assert.deepEqual(seen.filter((s) => s.method !== 'GET'), []);
  });
});

describe('addedPools (operator-managed: the Installation entries a rollback removes)', () => {
  const inst = (ipPools: unknown[]) => ({ apiVersion: 'operator.tigera.io/v1', kind: 'Installation', metadata: { name: 'default' }, spec: { calicoNetwork: { ipPools } } });
  const old = { name: 'default-ipv4-ippool', cidr: '192.168.0.0/16' };
  const ours = { name: 'new-pool', cidr: '10.50.0.0/16' };

  it('only an entry of the plan\'s new pools that the Installation\'s backup did not hold', () => {
    assert.deepEqual(addedPools([old, ours], [POOL], inst([old])), [ours]);
  });

  it('an entry of that name or CIDR that was there before the run is not the run\'s: kept', () => {
    assert.deepEqual(addedPools([old, ours], [POOL], inst([old, ours])), []);
    assert.deepEqual(addedPools([old, ours], [POOL], inst([old, { name: 'theirs', cidr: '10.50.0.0/16' }])), []);
  });

  it('no backup of the Installation: the run never changed it, nothing is removed', () => {
    assert.deepEqual(addedPools([old, ours], [POOL], undefined), []);
  });
});
