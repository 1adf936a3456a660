// What the move-services step decides from what the cluster shows, without an apiserver. Pure functions of
// the observed objects; the moves themselves are proven in test/integration/service-*.test.ts.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { Journal } from '../../src/engine/journal.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import {
  batchDone, coversIn, decideMove, isAllocatorNotReady, isIPTaken, itemDone, itemProblem, nodePortHolders, ServiceExecutor, takenNodePorts, type ServiceView, writtenAt,
} from '../../src/engine/service-steps.ts';
import { KubeApiError, type KubeClient, type Method } from '../../src/kube/client.ts';
import type { MigrationPlan, StepItem } from '../../src/plan/plan.ts';

install();

const it1: StepItem = { namespace: 'ns', name: 'web', from: ['10.96.0.50'], to: ['10.100.0.50'], bridge: 'web-kr-old' };
const svc = (name: string, ips: string[], extra: Record<string, unknown> = {}, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '1', ...(labels ? { labels } : {}) },
  spec: { type: 'ClusterIP', clusterIP: ips[0], clusterIPs: ips, selector: { app: 'web' }, ports: [{ port: 80 }], ...extra },
});
const external = (name: string) => ({ ...svc(name, []), spec: { type: 'ExternalName', externalName: 'x.ns.svc.cluster.local', selector: { app: 'web' } } });
const cover = svc('web-kr-cover', ['10.100.255.254'], { type: 'LoadBalancer' }, { 'kube-renumber.io/managed': 'true', 'kube-renumber.io/cover-for': 'web' });
/** An in-place Service plan, 10.96.0.0/16 → 10.100.0.0/16, with these mapping entries and steps. */
const inPlacePlan = (mapping: unknown[], steps: unknown[] = []) => ({
  spec: { serviceCIDR: { apiVersion: 'networking.k8s.io/v1', from: ['10.96.0.0/16'], to: ['10.100.0.0/16'], target: ['10.100.0.0/16'], kept: [] }, strategy: 'in-place' },
  mapping, steps,
} as unknown as MigrationPlan);
const view = (...objs: KubeObject[]): ServiceView => {
  const v: ServiceView = new Map([['ns/web', undefined], ['ns/web-kr-old', undefined], ['ns/web-kr-cover', undefined]]);
  for (const o of objs) v.set(`ns/${o.metadata!.name}`, o);
  return v;
};

describe('decideMove: the next write of one Service', () => {
  it('at the old IP: in-place goes ExternalName first, recreate deletes', () => {
    assert.deepEqual(decideMove(it1, svc('web', ['10.96.0.50']), 'in-place'), { action: 'external-name' });
    assert.deepEqual(decideMove(it1, svc('web', ['10.96.0.50']), 'recreate'), { action: 'delete' });
  });
  it('ExternalName (an interrupted in-place move): back at the mapped IP after the bridge', () => {
    assert.deepEqual(decideMove(it1, external('web'), 'in-place'), { action: 'back' });
  });
  it('at the mapped IP: only the bridge may be missing', () => {
    assert.deepEqual(decideMove(it1, svc('web', ['10.100.0.50']), 'in-place'), { action: 'ensure-bridge' });
    assert.deepEqual(decideMove(it1, svc('web', ['10.100.0.50']), 'recreate'), { action: 'ensure-bridge' });
  });
  it('gone (an interrupted recreate, or deleted): created again at the mapped IP', () => {
    assert.deepEqual(decideMove(it1, undefined, 'in-place'), { action: 'create' });
    assert.deepEqual(decideMove(it1, undefined, 'recreate'), { action: 'create' });
  });
  it('elsewhere: changed since the plan, nothing is written', () => {
    const d = decideMove(it1, svc('web', ['10.96.7.7']), 'in-place');
    assert.equal(d.action, 'conflict');
    assert.match((d as { message: string }).message, /neither the planned 10\.96\.0\.50 nor 10\.100\.0\.50: changed since the plan; re-plan/);
  });
});

describe('done, derived from what the cluster shows', () => {
  it('moved, with its bridge at the old IP, and no cover left', () => {
    const moved = view(svc('web', ['10.100.0.50']), svc('web-kr-old', ['10.96.0.50']));
    assert.equal(itemDone(moved, it1), true);
    assert.equal(batchDone(moved, [it1]), true);
  });
  it('a cover left makes the step not done (it must come down), though the Service is moved', () => {
    const v = view(svc('web', ['10.100.0.50']), svc('web-kr-old', ['10.96.0.50']), cover);
    assert.equal(itemDone(v, it1), true);
    assert.equal(coversIn(v, [it1]).length, 1);
    assert.equal(batchDone(v, [it1]), false);
  });
  it('a Service named like a cover but not ours is not a cover', () => {
    const foreign = svc('web-kr-cover', ['10.100.0.9']);
    assert.equal(coversIn(view(foreign), [it1]).length, 0);
  });
  it('not done: bridge missing, bridge elsewhere, still ExternalName, still at the old IP', () => {
    assert.equal(itemDone(view(svc('web', ['10.100.0.50'])), it1), false);
    assert.equal(itemDone(view(svc('web', ['10.100.0.50']), svc('web-kr-old', ['10.96.0.51'])), it1), false);
    assert.equal(itemDone(view(external('web'), svc('web-kr-old', ['10.96.0.50'])), it1), false);
    assert.equal(itemDone(view(svc('web', ['10.96.0.50'])), it1), false);
    assert.equal(itemDone(view(svc('web', ['10.100.0.50'])), { ...it1, bridge: undefined }), true);
  });
  it('what verify reports', () => {
    assert.equal(itemProblem(it1, svc('web', ['10.100.0.50']), svc('web-kr-old', ['10.96.0.50'])), undefined);
    assert.match(itemProblem(it1, undefined, undefined)!, /is missing/);
    assert.match(itemProblem(it1, external('web'), undefined)!, /has no ClusterIP, expected 10\.100\.0\.50/);
    assert.match(itemProblem(it1, svc('web', ['10.100.0.50']), undefined)!, /bridge ns\/web-kr-old is not at 10\.96\.0\.50/);
  });
  it('a write of this process that returned the Service at its mapped IPs stands for the IPAddress check', () => {
    assert.equal(writtenAt({ wrote: true, service: svc('web', ['10.100.0.50']) }, it1.to), true);
    assert.equal(writtenAt({ wrote: false, service: svc('web', ['10.100.0.50']) }, it1.to), false);
    assert.equal(writtenAt({ wrote: true, service: external('web') }, it1.to), false);
    assert.equal(writtenAt(undefined, it1.to), false);
  });
  it('an explicit IP still allocated is recognised (the bridge waits for its release)', () => {
    assert.equal(isIPTaken(new KubeApiError('POST', '/x', 422, 'Invalid', 'Service "web-kr-old" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: provided IP is already allocated')), true);
    assert.equal(isIPTaken(new KubeApiError('POST', '/x', 422, 'Invalid', 'spec.ports: Required value')), false);
    // v1.30.14's answer for an explicit IP inside a draining ServiceCIDR: tried again, not taken
    const notReady = new KubeApiError('POST', '/x', 422, 'Invalid', 'Service "kubernetes-kr-old" is invalid: spec.clusterIPs: Invalid value: []string{"100.64.0.1"}: failed to allocate IP 100.64.0.1: allocator not ready');
    assert.equal(isAllocatorNotReady(notReady), true);
    assert.equal(isIPTaken(notReady), false);
    assert.equal(isAllocatorNotReady(new KubeApiError('POST', '/x', 409, 'Conflict', 'allocator not ready')), false);
  });
});

describe('move-services step: check, backup and apply share one read', () => {
  /** Records requests; answers the namespace LIST with the given Services. */
  function recorder(items: KubeObject[]): KubeClient & { seen: string[] } {
    const seen: string[] = [];
    return {
      server: 'https://127.0.0.1:1', context: 't', seen,
      get requestCount() { return seen.length; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
      async request<T>(method: Method, path: string): Promise<T> { seen.push(`${method} ${path}`); throw new Error(`unexpected ${method} ${path}`); },
      async *list(path: string, opts?: { labelSelector?: string }) {
        seen.push(`LIST ${path}${opts?.labelSelector ? `?${opts.labelSelector}` : ''}`);
        // items of a LIST carry neither apiVersion nor kind
        for (const o of items) { const { apiVersion, kind, ...rest } = o; void apiVersion; void kind; yield rest as KubeObject; }
      },
    };
  }
  const plan = inPlacePlan([{ namespace: 'ns', name: 'web', action: 'move', from: it1.from, to: it1.to }],
    [{ id: 'move-1', kind: 'move-services', description: 'move', items: [it1], rollback: '' }]);

  it('one LIST of the namespace serves check and backup; the backup is the Service as read, typed', async () => {
    const client = recorder([svc('web', ['10.96.0.50']), svc('other', ['10.96.0.60'])]);
    const dir = mkdtempSync(join(tmpdir(), 'kr-moves-'));
    const ctx: StepContext = { client, backups: new BackupStore(join(dir, 'b'), 'r'), journal: new Journal(join(dir, 'j'), 'r'), dryRun: 'none', log: () => {} };
    const step = new ServiceExecutor(plan).steps()[0]!;
    assert.equal(await step.check(ctx), false);
    const objs = await step.backup!(ctx);
    assert.deepEqual(client.seen, ['LIST /api/v1/namespaces/ns/services']);
    assert.equal(objs.length, 1);
    assert.equal(objs[0]!.kind, 'Service');
    assert.equal(objs[0]!.apiVersion, 'v1');
    assert.equal(objs[0]!.metadata?.uid, 'uid-web');
  });

  it('a moved batch is skipped on that one LIST', async () => {
    const client = recorder([svc('web', ['10.100.0.50']), svc('web-kr-old', ['10.96.0.50'], {}, { 'kube-renumber.io/managed': 'true' })]);
    const dir = mkdtempSync(join(tmpdir(), 'kr-moves-'));
    const ctx: StepContext = { client, backups: new BackupStore(join(dir, 'b'), 'r'), journal: new Journal(join(dir, 'j'), 'r'), dryRun: 'none', log: () => {} };
    assert.equal(await new ServiceExecutor(plan).steps()[0]!.check(ctx), true);
    assert.equal(client.seen.length, 1);
  });
});

describe('the last write of an in-place move when a nodePort is refused as taken', () => {
  const np = (name: string, ips: string[], port: number, extra: Record<string, unknown> = {}) =>
    svc(name, ips, { type: 'NodePort', ports: [{ port: 80, nodePort: port }], ...extra });
  const taken = (port: number) => new KubeApiError('PATCH', '/api/v1/namespaces/ns/services/web', 422, 'Invalid',
    `Service "web" is invalid: spec.ports[0].nodePort: Invalid value: ${port}: provided port is already allocated`);

  it('takenNodePorts reads the ports of the 422, and nothing from other errors', () => {
    assert.deepEqual(takenNodePorts(taken(31479)), [31479]);
    assert.deepEqual(takenNodePorts(new KubeApiError('POST', '/x', 422, 'Invalid', 'spec.clusterIPs: Invalid value: ["10.96.0.5"]: failed to allocate IP 10.96.0.5: provided IP is already allocated')), []);
    assert.deepEqual(takenNodePorts(new KubeApiError('PATCH', '/x', 409, 'Conflict', 'spec.ports[0].nodePort: Invalid value: 1: provided port is already allocated')), []);
    assert.deepEqual(takenNodePorts(new Error('spec.ports[0].nodePort: Invalid value: 31479: provided port is already allocated')), []);
  });

  it('nodePortHolders: other Services holding the port as nodePort or healthCheckNodePort, never the Service itself', () => {
    const all = [np('web', ['10.100.0.50'], 31479), np('thief', ['10.96.0.9'], 31479), svc('hc', ['10.96.0.10'], { type: 'LoadBalancer', healthCheckNodePort: 31479 }), np('other', ['10.96.0.11'], 30000)];
    assert.deepEqual([...nodePortHolders(all, [31479], { namespace: 'ns', name: 'web' })], [['ns/thief', [31479]], ['ns/hc', [31479]]]);
    assert.equal(nodePortHolders(all, [32000], { namespace: 'ns', name: 'web' }).size, 0);
  });

  /** An apiserver script: the Service is ExternalName mid-move, its bridge is up; PATCH answers in turn from `patches`. */
  function midMove(patches: Array<Error | 'ok'>, services: KubeObject[]) {
    const seen: string[] = [];
    const client: KubeClient = {
      server: 'https://127.0.0.1:1', context: 't', get requestCount() { return seen.length; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
      async request<T>(method: Method, path: string): Promise<T> {
        seen.push(`${method} ${path}`);
        if (method === 'GET' && path.endsWith('/services/web')) return { ...external('web'), metadata: { ...external('web').metadata, resourceVersion: '7' } } as T;
        if (method === 'GET' && path.endsWith('/services/web-kr-old')) return svc('web-kr-old', ['10.96.0.50'], {}, { 'kube-renumber.io/managed': 'true', 'kube-renumber.io/bridge-for': 'web' }) as T;
        if (method === 'PATCH' && path.endsWith('/services/web')) {
          const next = patches.shift();
          if (next === undefined || next === 'ok') return np('web', ['10.100.0.50'], 31479) as T;
          throw next;
        }
        throw new Error(`unexpected ${method} ${path}`);
      },
      async *list(path: string) { seen.push(`LIST ${path}`); for (const o of services) yield o; },
    };
    const dir = mkdtempSync(join(tmpdir(), 'kr-np-'));
    const warnings: string[] = [];
    const ctx: StepContext = { client, backups: new BackupStore(join(dir, 'b'), 'r'), journal: new Journal(join(dir, 'j'), 'r'), dryRun: 'none', log: () => {}, warn: (m) => warnings.push(m) };
    ctx.backups.save({ ...np('web', ['10.96.0.50'], 31479), apiVersion: 'v1', kind: 'Service' } as KubeObject);
    return { ctx, seen, warnings };
  }
  const plan = inPlacePlan([]);

  it('leaked (no Service holds it): warns once, asks again until the apiserver frees it, with the nodePort kept', async () => {
    const { ctx, seen, warnings } = midMove([taken(31479), taken(31479), 'ok'], [external('web'), svc('web-kr-old', ['10.96.0.50'])]);
    const ev = await new ServiceExecutor(plan, { nodePortLeakWaitMs: 5_000 }).moveOne(ctx, it1, 'in-place');
    assert.equal(ev.wrote, true);
    assert.equal(ev.service?.spec?.ports?.[0]?.nodePort, 31479);
    assert.equal(seen.filter((r) => r.startsWith('PATCH')).length, 3, seen.join('\n'));
    assert.equal(seen.filter((r) => r === 'LIST /api/v1/services').length, 2, 'who holds it is asked before each wait');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /nodePort 31479 of Service ns\/web is refused as allocated though no Service holds it: the apiserver leaked it/);
  });

  it('leaked for longer than the wait: stops, saying so and what frees it', async () => {
    const { ctx } = midMove([taken(31479), taken(31479), taken(31479), taken(31479)], []);
    await assert.rejects(new ServiceExecutor(plan, { nodePortLeakWaitMs: 1 }).moveOne(ctx, it1, 'in-place'),
      /nodePort 31479 of Service ns\/web is still refused as allocated after \d+ s though no Service holds it \(leaked by the apiserver\): resume once its nodePort repair loop has freed it/);
  });

  it('taken by another Service: stops at once, naming it, without waiting', async () => {
    const { ctx, seen } = midMove([taken(31479), 'ok'], [np('thief', ['10.96.0.9'], 31479)]);
    await assert.rejects(new ServiceExecutor(plan, { nodePortLeakWaitMs: 60_000 }).moveOne(ctx, it1, 'in-place'),
      /nodePort 31479 of Service ns\/web was taken by Service ns\/thief while ns\/web was ExternalName .*free the port, then resume/);
    assert.equal(seen.filter((r) => r.startsWith('PATCH')).length, 1);
  });

  it('any other refusal is not waited for', async () => {
    const { ctx, seen } = midMove([new KubeApiError('PATCH', '/x', 422, 'Invalid', 'spec.ports[0].port: Invalid value: 0'), 'ok'], []);
    await assert.rejects(new ServiceExecutor(plan).moveOne(ctx, it1, 'in-place'), /Invalid value: 0/);
    assert.equal(seen.filter((r) => r.startsWith('LIST')).length, 0);
  });
});

describe('EndpointSlice reads: one LIST across namespaces only when it costs the apiserver no more', () => {
  const planOf = (counts: Record<string, number>) =>
    inPlacePlan(Object.entries(counts).flatMap(([ns, n]) => Array.from({ length: n }, (_, i) => ({ namespace: ns, name: `s${i}`, action: 'move', from: [], to: [] }))));
  it('namespaces holding at least half of the plan\'s Services: across namespaces', () => {
    const ex = new ServiceExecutor(planOf({ a: 10, b: 10, c: 10, d: 10 }));
    assert.equal(ex.clusterWideRead(['a', 'b']), true);
    assert.equal(ex.clusterWideRead(['a', 'b', 'c', 'd']), true);
  });
  it('fewer: one LIST per namespace; and never across namespaces for one namespace', () => {
    const ex = new ServiceExecutor(planOf({ a: 10, b: 10, c: 10, big: 1000 }));
    assert.equal(ex.clusterWideRead(['a', 'b', 'c']), false);
    assert.equal(ex.clusterWideRead(['big']), false);
    assert.equal(new ServiceExecutor(planOf({ a: 1, b: 1 })).clusterWideRead(['a', 'b']), true);
    assert.equal(new ServiceExecutor(planOf({ a: 1, b: 1 })).clusterWideRead(['x', 'y']), false);
  });
});
