// The retry policy (src/kube/retry.ts) and what it means for reads, writes and the Lease, against a small
// in-memory API server on 127.0.0.1 that answers 429/5xx with or without Retry-After, resets connections after
// applying a write (its answer lost), and expires continue tokens.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { BackupStore } from '../../src/engine/backup.ts';
import { Journal } from '../../src/engine/journal.ts';
import { acquireLease } from '../../src/engine/lock.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { ServiceExecutor } from '../../src/engine/service-steps.ts';
import { retryOnConflict, withRetry } from '../../src/engine/toolkit.ts';
import { connect, KubeApiError, type KubeClient, UnreachableError } from '../../src/kube/client.ts';
import { createObject, deleteObject, getObject, SERVICES } from '../../src/kube/resources.ts';
import { DEFAULT_RETRY_BUDGET_MS, MAX_RETRY_AFTER_MS, parseRetryAfter, retriesExhausted, retryDelay } from '../../src/kube/retry.ts';
import { patchWithPrecondition } from '../../src/kube/workloads.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';
import { kubeconfigFile } from './kube-servers.ts';

install();

const dir = mkdtempSync(join(tmpdir(), 'kr-retry-'));
const env = { HOME: join(dir, 'no-home'), PATH: process.env.PATH };

/** What the server does with the next request that `match`es (each fault is used once). */
interface Fault {
  match: (method: string, path: string) => boolean;
  /** An answer instead of the real one: status and Retry-After (seconds as text, or a date). */
  status?: number;
  retryAfter?: string;
  /** Apply the request, then close the connection without answering. */
  resetAfterApply?: boolean;
}

interface Seen { method: string; url: string }

/** A tiny API server keeping objects by path, with resourceVersions, label-less merge patches and Status errors. */
class Api {
  objects = new Map<string, any>();
  rv = 0;
  faults: Fault[] = [];
  seen: Seen[] = [];
  /** How the LIST of /api/v1/pods answers: pages of items and which continue tokens have expired. */
  pages: any[][] = [];
  expired = new Set<string>();
  onExpired = () => {};
  server!: http.Server;
  sockets = new Set<Socket>();
  client!: KubeClient;

  async start(requestTimeoutMs?: number): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d) => chunks.push(d));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    const port = (this.server.address() as AddressInfo).port;
    this.client = connect({ kubeconfig: kubeconfigFile(dir, { server: `http://127.0.0.1:${port}` }), env, ...(requestTimeoutMs ? { requestTimeoutMs } : {}) });
    return this;
  }

  stop(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }

  status(res: http.ServerResponse, code: number, reason: string, message: string, headers: Record<string, string> = {}): void {
    res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }));
  }

  ok(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const method = req.method!;
    const u = new URL(req.url!, 'http://x');
    this.seen.push({ method, url: req.url! });
    const i = this.faults.findIndex((f) => f.match(method, u.pathname));
    const fault = i >= 0 ? this.faults.splice(i, 1)[0] : undefined;
    if (fault?.status) {
      return this.status(res, fault.status, fault.status === 429 ? 'TooManyRequests' : 'ServiceUnavailable', 'injected',
        fault.retryAfter !== undefined ? { 'Retry-After': fault.retryAfter } : {});
    }
    const answer = fault?.resetAfterApply ? (() => { req.socket.destroy(); }) : undefined;
    const send = (code: number, body: unknown) => (answer ? answer() : this.ok(res, code, body));
    const fail = (code: number, reason: string, message: string) => (answer ? answer() : this.status(res, code, reason, message));
    const body = text ? JSON.parse(text) : undefined;
    if (u.pathname === '/api/v1/pods' && method === 'GET') {
      const cont = u.searchParams.get('continue');
      if (cont && this.expired.delete(cont)) {
        this.onExpired();
        return fail(410, 'Expired', 'The provided continue parameter is too old');
      }
      const n = cont ? Number(cont.split('-')[1]) : 0;
      const next = n + 1 < this.pages.length ? `${this.rv}-${n + 1}` : undefined;
      return send(200, { kind: 'PodList', apiVersion: 'v1', metadata: next ? { continue: next } : {}, items: this.pages[n] ?? [] });
    }
    const path = u.pathname;
    if (method === 'POST') {
      const p = `${path}/${body.metadata.name}`;
      if (this.objects.has(p)) return fail(409, 'AlreadyExists', `"${body.metadata.name}" already exists`);
      const o = { ...body, metadata: { ...body.metadata, uid: `uid-${++this.rv}`, resourceVersion: String(this.rv) } };
      this.objects.set(p, o);
      return send(201, o);
    }
    const cur = this.objects.get(path);
    if (!cur) return fail(404, 'NotFound', 'not found');
    if (method === 'GET') return send(200, cur);
    if (method === 'DELETE') {
      this.objects.delete(path);
      return send(200, { kind: 'Status', status: 'Success' });
    }
    if (method === 'PUT' || method === 'PATCH') {
      const want = body.metadata?.resourceVersion;
      if (want && want !== cur.metadata.resourceVersion) return fail(409, 'Conflict', 'the object has been modified');
      const o = method === 'PUT' ? body : { ...cur, ...body, spec: { ...cur.spec, ...body.spec } };
      const stored = { ...o, metadata: { ...cur.metadata, ...o.metadata, resourceVersion: String(++this.rv) } };
      this.objects.set(path, stored);
      return send(200, stored);
    }
    fail(405, 'MethodNotAllowed', method);
  }

  count(method: string, prefix: string): number {
    return this.seen.filter((s) => s.method === method && s.url.startsWith(prefix)).length;
  }
}

const apis: Api[] = [];
after(() => { for (const a of apis) a.stop(); });
async function api(requestTimeoutMs?: number): Promise<Api> {
  const a = await new Api().start(requestTimeoutMs);
  apis.push(a);
  return a;
}

const is = (m: string, p: string) => (method: string, path: string) => method === m && path.startsWith(p);
const svc = (name: string, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) }, spec: { ports: [{ port: 80 }] } });
const SVC_PATH = '/api/v1/namespaces/default/services';

describe('Retry-After', () => {
  test('read as seconds or as an HTTP date; nonsense is no Retry-After', () => {
    const now = Date.parse('2026-11-25T12:00:00Z');
    assert.equal(parseRetryAfter('3', now), 3000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 12:00:07 GMT', now), 7000);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 11:59:00 GMT', now), 0, 'a date in the past: at once');
    assert.equal(parseRetryAfter(['2', '9'], now), 2000);
    for (const bad of [undefined, '', '-1', '1.5', 'soon', '12abc']) assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
  });

  test('the wait is the server\'s Retry-After, capped at 60 s; without one, back-off', () => {
    const e = (ms?: number) => new KubeApiError('GET', '/x', 429, 'TooManyRequests', 'm', 'unreachable', ms);
    assert.equal(retryDelay(e(3000), 1), 3000);
    assert.equal(retryDelay(e(3000), 5), 3000, 'not doubled');
    assert.equal(retryDelay(e(3_600_000), 1), MAX_RETRY_AFTER_MS);
    assert.equal(MAX_RETRY_AFTER_MS, 60_000);
    assert.equal(retryDelay(e(), 1, { random: () => 0.5 }), 200);
    assert.equal(retryDelay(e(), 3, { random: () => 0.5 }), 800);
  });

  test('no wait ends after the deadline: the error is thrown at once instead, marked as retried', async () => {
    const waits: number[] = [];
    let now = 0;
    const err = new KubeApiError('POST', '/x', 503, 'ServiceUnavailable', 'm', 'unreachable', 30_000);
    let calls = 0;
    await assert.rejects(withRetry(async () => { calls++; throw err; }, { deadline: 10_000, now: () => now, sleep: async (ms) => { waits.push(ms); now += ms; } }),
      (e: unknown) => e === err && retriesExhausted(e));
    assert.equal(calls, 1);
    assert.deepEqual(waits, []);
    // an outer loop does not retry what an inner one gave up on
    calls = 0;
    await assert.rejects(withRetry(async () => { calls++; throw err; }, { sleep: async () => {} }));
    assert.equal(calls, 1);
  });

  test('without a deadline, retries end after DEFAULT_RETRY_BUDGET_MS in all (not five Retry-After waits of 60 s)', async () => {
    const waits: number[] = [];
    let now = 0;
    const err = new KubeApiError('PATCH', '/x', 429, 'TooManyRequests', 'm', 'unreachable', 60_000);
    let calls = 0;
    await assert.rejects(withRetry(async () => { calls++; throw err; }, { now: () => now, sleep: async (ms) => { waits.push(ms); now += ms; } }),
      (e: unknown) => e === err && retriesExhausted(e));
    assert.deepEqual(waits, [60_000, 60_000]);
    assert.equal(calls, 3);
    assert.ok(now <= DEFAULT_RETRY_BUDGET_MS);
  });

  test('a GET answered 429 with Retry-After: 1 is sent again after about a second', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/a`, svc('a'));
    a.faults.push({ match: is('GET', SVC_PATH), status: 429, retryAfter: '1' });
    const t0 = Date.now();
    const s = await getObject(a.client, SERVICES, 'a', 'default');
    const took = Date.now() - t0;
    assert.equal(s?.metadata?.name, 'a');
    assert.equal(a.count('GET', SVC_PATH), 2);
    assert.ok(took >= 950 && took < 3000, `waited ${took} ms`);
  });

  test('Retry-After as an HTTP date is honoured too', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/a`, svc('a'));
    const at = new Date(Math.ceil((Date.now() + 2000) / 1000) * 1000);
    a.faults.push({ match: is('GET', SVC_PATH), status: 503, retryAfter: at.toUTCString() });
    await getObject(a.client, SERVICES, 'a', 'default');
    assert.ok(Date.now() >= at.getTime() - 50, 'not before the date');
    assert.equal(a.count('GET', SVC_PATH), 2);
  });

  test('a Retry-After beyond the request timeout is not waited for: the 429 is the answer', async () => {
    const a = await api(1500);
    a.objects.set(`${SVC_PATH}/a`, svc('a'));
    a.faults.push({ match: is('GET', SVC_PATH), status: 429, retryAfter: '30' });
    const t0 = Date.now();
    await assert.rejects(getObject(a.client, SERVICES, 'a', 'default'), (e: any) => e instanceof KubeApiError && e.status === 429 && e.retryAfterMs === 30_000);
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(a.count('GET', SVC_PATH), 1);
  });

  test('a write answered 429 with Retry-After waits that long in the engine\'s withRetry', async () => {
    const a = await api();
    a.faults.push({ match: is('POST', SVC_PATH), status: 429, retryAfter: '1' });
    const t0 = Date.now();
    const waits: number[] = [];
    const o = await withRetry(() => createObject(a.client, SERVICES, svc('b')), { onRetry: (_e, _n, ms) => waits.push(ms) });
    assert.equal(o.metadata?.name, 'b');
    assert.deepEqual(waits, [1000]);
    assert.ok(Date.now() - t0 >= 950);
  });
});

describe('reads retry like writes', () => {
  test('GET: 500, 503 without Retry-After and a reset connection are retried with back-off', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/a`, svc('a'));
    a.faults.push({ match: is('GET', SVC_PATH), status: 500 }, { match: is('GET', SVC_PATH), status: 503 }, { match: is('GET', SVC_PATH), resetAfterApply: true });
    assert.equal((await getObject(a.client, SERVICES, 'a', 'default'))?.metadata?.name, 'a');
    assert.equal(a.count('GET', SVC_PATH), 4);
  });

  test('writes are sent once by the client: the caller decides (an eviction\'s 429 is a budget, not a fault)', async () => {
    const a = await api();
    a.faults.push({ match: is('POST', SVC_PATH), status: 503 });
    await assert.rejects(a.client.request('POST', SVC_PATH, { body: svc('c') }), (e: any) => e instanceof KubeApiError && e.status === 503);
    assert.equal(a.count('POST', SVC_PATH), 1);
  });

  test('a LIST page that fails is asked again with the same continue token', async () => {
    const a = await api();
    a.pages = [[{ metadata: { name: 'p1', uid: 'u1' } }], [{ metadata: { name: 'p2', uid: 'u2' } }], [{ metadata: { name: 'p3', uid: 'u3' } }]];
    let n = 0;
    a.faults.push({ match: (m, p) => m === 'GET' && p === '/api/v1/pods' && ++n === 2, status: 500 });
    const names: string[] = [];
    for await (const p of a.client.list('/api/v1/pods')) names.push(p.metadata!.name!);
    assert.deepEqual(names, ['p1', 'p2', 'p3']);
    const conts = a.seen.filter((s) => s.url.startsWith('/api/v1/pods')).map((s) => new URL(s.url, 'http://x').searchParams.get('continue'));
    assert.deepEqual(conts, [null, '0-1', '0-1', '0-2']);
  });

  test('an expired continue token (410) restarts the list; objects already handed out are not repeated', async () => {
    const a = await api();
    a.pages = [[{ metadata: { name: 'p1', uid: 'u1' } }, { metadata: { name: 'p2', uid: 'u2' } }], [{ metadata: { name: 'p3', uid: 'u3' } }]];
    a.expired.add('0-1');
    a.onExpired = () => { a.pages[0]!.push({ metadata: { name: 'p1b', uid: 'u4' } }); }; // created while the list was read
    const names: string[] = [];
    for await (const p of a.client.list('/api/v1/pods')) names.push(p.metadata!.name!);
    assert.deepEqual(names, ['p1', 'p2', 'p1b', 'p3']);
    const conts = a.seen.filter((s) => s.url.startsWith('/api/v1/pods')).map((s) => new URL(s.url, 'http://x').searchParams.get('continue'));
    assert.deepEqual(conts, [null, '0-1', null, '0-1'], 'restarted without a continue token');
  });
});

describe('a write whose answer was lost (applied, then the connection reset)', () => {
  test('POST: sent again, AlreadyExists of our own object counts as created', async () => {
    const a = await api();
    a.faults.push({ match: is('POST', SVC_PATH), resetAfterApply: true });
    const o = await withRetry(() => createObject(a.client, SERVICES, svc('bridge', { 'kube-renumber.io/managed': 'true' })), { sleep: async () => {} });
    assert.equal(o.metadata?.uid, a.objects.get(`${SVC_PATH}/bridge`).metadata.uid);
    assert.equal(a.count('POST', SVC_PATH), 2);
    assert.equal(a.objects.size, 1);
  });

  test('POST: an object of that name without our labels is someone else\'s: refused, not taken over', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/x-kr-cover`, { ...svc('x-kr-cover'), metadata: { ...svc('x-kr-cover').metadata, uid: 'theirs', resourceVersion: '1' } });
    await assert.rejects(createObject(a.client, SERVICES, svc('x-kr-cover', { 'kube-renumber.io/managed': 'true' })),
      (e: any) => e instanceof KubeApiError && e.status === 409 && /already exists and is not ours \(it lacks label kube-renumber.io\/managed\)/.test(e.message));
  });

  test('PATCH with a resourceVersion: the repeat gets 409, the re-read shows it done', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/s`, { ...svc('s'), metadata: { ...svc('s').metadata, uid: 'u', resourceVersion: '5' } });
    a.rv = 5;
    a.faults.push({ match: is('PATCH', SVC_PATH), resetAfterApply: true });
    let patches = 0;
    const done = await retryOnConflict('Service default/s', async () => {
      const cur = await withRetry(() => getObject(a.client, SERVICES, 's', 'default'));
      if (cur?.spec?.type === 'ExternalName') return cur;
      patches++;
      return withRetry(() => patchWithPrecondition(a.client, SERVICES, cur!, { spec: { type: 'ExternalName' } }), { sleep: async () => {} });
    });
    assert.equal(done.spec.type, 'ExternalName');
    assert.equal(patches, 1, 'decided from the re-read, not patched twice');
    assert.equal(a.count('PATCH', SVC_PATH), 2, 'the lost one, and the repeat answered 409');
  });

  test('DELETE: the repeat gets 404, which counts as deleted', async () => {
    const a = await api();
    a.objects.set(`${SVC_PATH}/d`, { ...svc('d'), metadata: { ...svc('d').metadata, uid: 'u', resourceVersion: '1' } });
    a.faults.push({ match: is('DELETE', SVC_PATH), resetAfterApply: true });
    assert.equal(await withRetry(() => deleteObject(a.client, SERVICES, 'd', 'default', { uid: 'u' }), { sleep: async () => {} }), false);
    assert.equal(a.objects.size, 0);
    assert.equal(a.count('DELETE', SVC_PATH), 2);
  });

  test('the Lease: a create and a takeover whose answers were lost, 5xx on every verb, and the lock is still taken and released', async () => {
    const a = await api();
    const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
    a.faults.push(
      { match: is('GET', LEASES), status: 503 },
      { match: is('POST', LEASES), resetAfterApply: true },
      { match: is('PUT', LEASES), status: 500 },
      { match: is('PUT', LEASES), resetAfterApply: true },
      { match: is('DELETE', LEASES), status: 429, retryAfter: '0' },
    );
    const lock = await acquireLease(a.client, 'me@here/run/1-abc', { noTimer: true, sleep: async () => {} });
    assert.equal(a.objects.get(`${LEASES}/kube-renumber`).spec.holderIdentity, 'me@here/run/1-abc');
    lock.assertHeld();
    await lock.renew();
    await lock.renew();
    lock.assertHeld();
    await lock.release();
    assert.equal(a.objects.size, 0, 'released: the Lease is deleted');
    assert.equal(a.faults.length, 0, 'every scripted fault was met');
    assert.equal(a.count('POST', LEASES), 1, 'not sent twice: the Lease read again is ours');
    assert.ok(a.count('DELETE', LEASES) >= 2);
  });
});

describe('the sweep of stragglers when its writes\' answers are lost', () => {
  /** Services in memory; every write is applied, and its answer replaced by a reset while `lose` says so. */
  function store(items: any[], lose: (method: string, n: number) => boolean) {
    const byName = new Map<string, any>(items.map((s) => [s.metadata.name, s]));
    let rv = 10;
    let writes = 0;
    const applied: string[] = [];
    const client: KubeClient = {
      server: 'https://127.0.0.1:1', context: 't', requestCount: 0, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
      async request<T>(method: string, path: string, opts: any = {}): Promise<T> {
        const name = decodeURIComponent(path.split('/').pop()!);
        const cur = byName.get(name);
        if (method === 'GET') {
          if (!cur) throw new KubeApiError(method, path, 404, 'NotFound', 'not found');
          return structuredClone(cur);
        }
        if (method !== 'PATCH') throw new Error(`unexpected ${method}`);
        if (opts.body.metadata?.resourceVersion !== cur.metadata.resourceVersion) throw new KubeApiError(method, path, 409, 'Conflict', 'the object has been modified');
        const spec = { ...cur.spec, ...opts.body.spec };
        for (const [k, v] of Object.entries(opts.body.spec)) if (v === null) delete spec[k];
        if (spec.type !== 'ExternalName') { delete spec.externalName; if (!spec.clusterIP) { spec.clusterIP = '10.100.0.77'; spec.clusterIPs = ['10.100.0.77']; } }
        else { delete spec.clusterIP; delete spec.clusterIPs; }
        const next = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(++rv) }, spec };
        byName.set(name, next);
        applied.push(spec.type);
        if (lose(method, ++writes)) throw new UnreachableError(`cannot reach the API server: ECONNRESET: socket hang up`);
        return structuredClone(next);
      },
      async* list() { for (const s of byName.values()) yield structuredClone(s); },
    };
    return { client, byName, applied };
  }
  const plan = {
    spec: { serviceCIDR: { apiVersion: 'networking.k8s.io/v1', from: ['10.96.0.0/16'], to: ['10.100.0.0/16'], target: ['10.100.0.0/16'], kept: [] }, strategy: 'in-place' },
    mapping: [], steps: [{ id: 'sweep-stragglers', kind: 'sweep-services', description: 'sweep', rollback: '' }],
  } as unknown as MigrationPlan;
  const late = () => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'late', namespace: 'ns', uid: 'u-late', resourceVersion: '3' },
    spec: { type: 'ClusterIP', clusterIP: '10.96.9.9', clusterIPs: ['10.96.9.9'], selector: { app: 'late' }, ports: [{ port: 80 }] } });

  for (const [what, lose] of [['the first (to ExternalName)', (_m: string, n: number) => n === 1], ['the second (back to ClusterIP)', (_m: string, n: number) => n === 2]] as const) {
    test(`${what} write lost: read again, moved once, not twice`, async () => {
      const s = store([late()], lose);
      const d = mkdtempSync(join(tmpdir(), 'kr-sweep-'));
      const ctx: StepContext = { client: s.client, backups: new BackupStore(join(d, 'b'), 'r'), journal: new Journal(join(d, 'j'), 'r'), dryRun: 'none', log: () => {} };
      const step = new ServiceExecutor(plan).steps().find((x) => x.id === 'sweep-stragglers')!;
      await step.apply!(ctx);
      assert.equal(s.byName.get('late').spec.clusterIP, '10.100.0.77');
      assert.equal(s.byName.get('late').metadata.uid, 'u-late');
      assert.deepEqual(s.applied, ['ExternalName', 'ClusterIP'], 'two writes applied, no third');
      assert.equal(await step.check(ctx), true);
    });
  }
});

describe('KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: a kill mid-request at a named write', () => {
  test('the process dies once the matching request was sent in full, before its answer; earlier ones are answered', async () => {
    const got: string[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d) => chunks.push(d));
      req.on('end', () => {
        got.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString('utf8')}`);
        // the uncordon is never answered: only the kill ends its exchange
        if (Buffer.concat(chunks).toString('utf8').includes('"unschedulable":false')) return;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const kc = kubeconfigFile(dir, { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const src = `import { connect } from ${JSON.stringify(new URL('../../src/kube/client.ts', import.meta.url).href)};
        const c = connect({ kubeconfig: ${JSON.stringify(kc)}, env: process.env });
        const patch = (u) => c.request('PATCH', '/api/v1/nodes/n1', { body: { spec: { unschedulable: u } } });
        await patch(true); await patch(false); process.stdout.write('answered');`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', src], {
        env: { ...env, KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'PATCH:/nodes/n1:1:"unschedulable":false' }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      const signal = await new Promise((r) => child.on('close', (_c, s) => r(s)));
      assert.equal(signal, 'SIGKILL', out);
      // what the dead process had written still reaches the server
      for (let i = 0; i < 40 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(got, ['PATCH /api/v1/nodes/n1 {"spec":{"unschedulable":true}}', 'PATCH /api/v1/nodes/n1 {"spec":{"unschedulable":false}}'], 'the uncordon reached the server in full');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
