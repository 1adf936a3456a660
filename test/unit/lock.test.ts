/**
 * The run's locks. The Lease follows client-go's leader election: a unique identity per process, expiry judged on
 * this process's own monotonic clock since the Lease last changed (never by comparing another machine's clock), a
 * renew deadline after which nothing more is sent, takeover of a live Lease only with --force-unlock. The Lease
 * store below keeps resourceVersions like the apiserver (a write naming an old one gets 409), and a fake clock
 * drives time. The local lock's takeover of a stale file is raced by real processes.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { acquireLease, acquireLocalLock, guardedClient, holderIdentity, LockedError } from '../../src/engine/lock.ts';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';

/** One Lease, kept like the apiserver keeps it: resourceVersion bumped on every write, 409 on a stale write. */
class LeaseStore {
  lease: any;
  rv = 0;
  writes: string[] = [];
  failPuts = 0;
  client(): KubeClient {
    const store = this;
    return {
      server: 'https://127.0.0.1:1', context: 'test', requestCount: 0, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
      async request(method: string, path: string, opts: any = {}): Promise<any> {
        if (method === 'GET') {
          if (!store.lease) throw new KubeApiError(method, path, 404, 'NotFound', 'not found');
          return structuredClone(store.lease);
        }
        if (method === 'POST') {
          if (store.lease) throw new KubeApiError(method, path, 409, 'AlreadyExists', 'exists');
          return store.write(opts.body, method);
        }
        if (method === 'PUT') {
          if (store.failPuts > 0) { store.failPuts--; throw new KubeApiError(method, path, 503, 'ServiceUnavailable', 'busy', 'unreachable'); }
          if (!store.lease) throw new KubeApiError(method, path, 404, 'NotFound', 'not found');
          if (opts.body?.metadata?.resourceVersion !== store.lease.metadata.resourceVersion) throw new KubeApiError(method, path, 409, 'Conflict', 'changed');
          return store.write(opts.body, method);
        }
        if (method === 'DELETE') { store.lease = undefined; store.writes.push('DELETE'); return {}; }
        throw new Error(`unexpected ${method}`);
      },
      async* list() { /* not used */ },
    };
  }
  write(body: any, method: string): any {
    this.lease = structuredClone({ ...body, metadata: { ...(body.metadata ?? {}), name: 'kube-renumber', namespace: 'kube-system', resourceVersion: String(++this.rv) } });
    this.writes.push(`${method} ${this.lease.spec.holderIdentity}`);
    return structuredClone(this.lease);
  }
  /** Another run holding (or renewing) the Lease. */
  holdAs(holder: string, renewTime = '2026-11-25T10:00:00.000000Z', duration = 60): void {
    this.write({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime } }, 'PUT');
  }
}

/** A fake monotonic clock; sleep() advances it and runs `during` hooks. */
function fakeClock() {
  const c = { t: 1000, slept: 0, during: [] as Array<(t: number) => void> };
  return {
    c,
    monotonic: () => c.t,
    sleep: async (ms: number) => { c.t += ms; c.slept += ms; for (const f of c.during) f(c.t); },
  };
}

describe('Lease lock', () => {
  test('holder identities are unique per process and per call, and name the run', () => {
    const a = holderIdentity('run1');
    const b = holderIdentity('run1');
    assert.notEqual(a, b);
    assert.match(a, /@.+\/run1\/\d+-[0-9a-f]{8}$/);
  });

  test('a free Lease is created and renewed; release deletes it', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, noTimer: true });
    assert.equal(store.lease.spec.holderIdentity, 'me');
    const rv = store.lease.metadata.resourceVersion;
    await l.renew();
    assert.notEqual(store.lease.metadata.resourceVersion, rv);
    l.assertHeld();
    await l.release();
    assert.equal(store.lease, undefined);
  });

  test('a Lease renewed while this run watches it is refused at once, without a write', async () => {
    const store = new LeaseStore();
    store.holdAs('alice@elsewhere/run/1-aa');
    const clock = fakeClock();
    clock.c.during.push(() => store.holdAs('alice@elsewhere/run/1-aa', '2026-11-25T10:00:05.000000Z'));
    const writes = store.writes.length;
    const waits: string[] = [];
    await assert.rejects(acquireLease(store.client(), 'me', { ...clock, onWait: (m) => waits.push(m), noTimer: true }),
      (e: unknown) => e instanceof LockedError && /held by alice@elsewhere\/run\/1-aa, renewed while this run watched it/.test(e.message));
    assert.equal(store.writes.length, writes + 1, 'only alice wrote');
    assert.equal(waits.length, 1);
    assert.match(waits[0]!, /waiting up to 60s/);
  });

  test('a Lease left unrenewed is taken over after its whole duration on our monotonic clock, whatever its renewTime says', async () => {
    const store = new LeaseStore();
    // the other machine's clock runs years ahead: comparing clocks would call this Lease live forever
    store.holdAs('bob@crashed/run/2-bb', '2099-01-01T00:00:00.000000Z', 30);
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, retryPeriodMs: 2000, noTimer: true });
    assert.equal(store.lease.spec.holderIdentity, 'me');
    assert.ok(clock.c.slept >= 30_000 && clock.c.slept < 32_000, `waited ${clock.c.slept} ms`);
    assert.equal(store.lease.spec.leaseTransitions, 1);
    await l.release();
  });

  test('and never sooner: a clock 60 s behind the holder still waits the full duration', async () => {
    const store = new LeaseStore();
    store.holdAs('bob@crashed/run/2-bb', '2000-01-01T00:00:00.000000Z', 20);
    const clock = fakeClock();
    await acquireLease(store.client(), 'me', { ...clock, retryPeriodMs: 1000, noTimer: true });
    assert.ok(clock.c.slept >= 20_000, `waited ${clock.c.slept} ms`);
  });

  test('--force-unlock takes over a live Lease at once', async () => {
    const store = new LeaseStore();
    store.holdAs('alice@elsewhere/run/1-aa');
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, forceUnlock: true, noTimer: true });
    assert.equal(clock.c.slept, 0);
    assert.equal(store.lease.spec.holderIdentity, 'me');
    await l.release();
  });

  test('two runs starting at once: exactly one holds the Lease, the other stops when the holder renews', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    // the winner's renewal timer: whoever holds the Lease renews it while the other waits
    clock.c.during.push(() => { if (store.lease) store.holdAs(store.lease.spec.holderIdentity, '2026-11-25T10:00:09.000000Z'); });
    const results = await Promise.allSettled([
      acquireLease(store.client(), 'run-a', { ...clock, noTimer: true }),
      acquireLease(store.client(), 'run-b', { ...clock, noTimer: true }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    assert.ok((lost[0] as PromiseRejectedResult).reason instanceof LockedError);
    assert.equal(store.lease.spec.holderIdentity, (won[0] as PromiseFulfilledResult<{ holder: string }>).value.holder);
  });

  test('renewals failing past the renew deadline lose the Lease: assertHeld throws, the signal aborts, the guarded client sends nothing', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, durationSeconds: 60, renewDeadlineSeconds: 40, noTimer: true });
    store.failPuts = 100;
    for (let i = 0; i < 3; i++) { clock.c.t += 10_000; await l.renew(); }
    l.assertHeld(); // 30 s without a renewal: still within the deadline
    clock.c.t += 11_000;
    await l.renew();
    assert.throws(() => l.assertHeld(), (e: unknown) => e instanceof LockedError && /could not renew .* within 40s/.test(e.message));
    assert.equal(l.signal.aborted, true);
    let sent = 0;
    const inner = store.client();
    const counting: KubeClient = { ...inner, request: async (...args: Parameters<KubeClient['request']>) => { sent++; return inner.request(...args); } };
    const guarded = guardedClient(counting, () => l.assertHeld());
    await assert.rejects(guarded.request('PATCH', '/api/v1/namespaces/x/services/y', { body: {} }), LockedError);
    assert.equal(sent, 0);
  });

  test('the guarded client hands watches through while the Lease is held, and opens none once it is lost', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, renewDeadlineSeconds: 40, noTimer: true });
    const watched: string[] = [];
    const guarded = guardedClient({ ...store.client(), watch: async (path) => { watched.push(path); } }, () => l.assertHeld());
    await guarded.watch('/apis/discovery.k8s.io/v1/endpointslices', {}, () => {});
    assert.deepEqual(watched, ['/apis/discovery.k8s.io/v1/endpointslices']);
    clock.c.t += 41_000;
    await assert.rejects(guarded.watch('/apis/discovery.k8s.io/v1/endpointslices', {}, () => {}), LockedError);
    assert.equal(watched.length, 1);
  });

  test('the deadline is also judged without a renewal tick (a stalled event loop)', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, renewDeadlineSeconds: 40, noTimer: true });
    clock.c.t += 41_000;
    assert.throws(() => l.assertHeld(), LockedError);
  });

  test('a Lease taken by another holder is lost at the next renewal', async () => {
    const store = new LeaseStore();
    const clock = fakeClock();
    const l = await acquireLease(store.client(), 'me', { ...clock, noTimer: true });
    store.holdAs('mallory@forced/run/3-cc');
    await l.renew();
    assert.throws(() => l.assertHeld(), (e: unknown) => e instanceof LockedError && /lost Lease .* to mallory@forced/.test(e.message));
    await l.release();
    assert.equal(store.lease.spec.holderIdentity, 'mallory@forced/run/3-cc', 'release leaves the new holder alone');
  });
});

describe('local lock', () => {
  const here = fileURLToPath(new URL('.', import.meta.url));
  test('of eight processes taking over one stale lock file at once, exactly one gets it', async () => {
    const d = mkdtempSync(join(tmpdir(), 'kr-lock-'));
    const path = join(d, 'lock');
    writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 4321, holder: 'dead' }), { mode: 0o600 });
    const lockModule = join(here, '../../src/engine/lock.ts');
    const go = join(d, 'go');
    // each process loads, says "ready", waits for the go file, races for the lock, then holds it until stdin closes
    const script = `import { existsSync } from 'node:fs';
      import { acquireLocalLock } from ${JSON.stringify(lockModule)};
      process.stdout.write('ready;');
      while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 2));
      let l;
      try { l = acquireLocalLock(${JSON.stringify(path)}, 'p' + process.pid); process.stdout.write('got'); }
      catch (e) { process.stdout.write(e.name); }
      process.stdin.on('data', () => {}); process.stdin.on('end', () => l?.release());`;
    const kids = Array.from({ length: 8 }, () => spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const outs = kids.map(() => '');
    const answered = kids.map((p, i) => new Promise<void>((resolve) => {
      p.stdout.on('data', (b) => { outs[i] += b; if (/ready;(got|\w+Error)/.test(outs[i]!)) resolve(); });
    }));
    const ready = kids.map((_, i) => new Promise<void>((resolve) => { const t = setInterval(() => { if (outs[i]!.startsWith('ready;')) { clearInterval(t); resolve(); } }, 5); }));
    await Promise.all(ready);
    writeFileSync(go, '');
    await Promise.all(answered);
    const closed = kids.map((p) => new Promise((r) => p.on('close', r)));
    for (const p of kids) p.stdin.end();
    await Promise.all(closed);
    for (let i = 0; i < outs.length; i++) outs[i] = outs[i]!.replace('ready;', '');
    assert.equal(outs.filter((o) => o === 'got').length, 1, outs.join(','));
    assert.equal(outs.filter((o) => o === 'LockedError').length, 7, outs.join(','));
  });

  test('a takeover in progress stops a second taker; one left by a dead taker is cleared', () => {
    const d = mkdtempSync(join(tmpdir(), 'kr-lock-'));
    const path = join(d, 'lock');
    writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 4321, holder: 'dead' }), { mode: 0o600 });
    writeFileSync(`${path}.takeover`, '', { mode: 0o600 });
    assert.throws(() => acquireLocalLock(path, 'me'), (e: unknown) => e instanceof LockedError && /taking over the lock/.test(e.message));
    const old = new Date(Date.now() - 120_000);
    utimesSync(`${path}.takeover`, old, old);
    const l = acquireLocalLock(path, 'me');
    l.release();
  });
});
