// The adaptive window's decisions, fed scripted latencies and answers on a fake clock. What it does against an
// apiserver that answers 429 with Retry-After is shown by test/integration/limiter-faults.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdaptiveLimiter, requestKind } from '../../src/kube/limiter.ts';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => { t += ms; } };
}

/** Hold `n` slots (resolving at once: the window has room), returning their releases. */
async function hold(l: AdaptiveLimiter, n: number): Promise<Array<() => void>> {
  const out: Array<() => void> = [];
  for (let i = 0; i < n; i++) out.push(await l.acquire());
  return out;
}

/** Settle pending promise callbacks. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('AdaptiveLimiter', () => {
  it('grows by about one per window of fast answers while the window is used, up to max', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 4, max: 6, now: c.now });
    const held = await hold(l, 4);
    for (let i = 0; i < 5; i++) l.observe({ kind: 'get', latencyMs: 5, status: 200 });
    assert.equal(l.window, 5);
    held.push(await l.acquire());
    for (let i = 0; i < 200; i++) l.observe({ kind: 'get', latencyMs: 5, status: 200 });
    assert.equal(l.window, 6, 'never above max');
    for (const r of held) r();
  });

  it('does not grow while slots are idle: fast answers with one request in flight prove nothing', () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 8, now: c.now });
    for (let i = 0; i < 100; i++) l.observe({ kind: 'get', latencyMs: 2, status: 200 });
    assert.equal(l.window, 8);
  });

  it('shrinks when the smoothed latency rises above 3 × the unloaded one, once per round, never below min', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 16, min: 2, now: c.now });
    for (let i = 0; i < 10; i++) l.observe({ kind: 'list', latencyMs: 30, status: 200 });
    l.observe({ kind: 'list', latencyMs: 200, status: 200 });
    assert.equal(l.window, 16, 'one slow answer is not a trend (smoothed: 72.5 ms, 2.4 × 30 ms)');
    l.observe({ kind: 'list', latencyMs: 200, status: 200 });
    assert.equal(l.window, 12, 'the second makes it 104 ms, 3.5 × 30 ms: 16 × 0.75');
    l.observe({ kind: 'list', latencyMs: 200, status: 200 });
    assert.equal(l.window, 12, 'the same round (within one smoothed latency) shrinks once');
    c.advance(201);
    l.observe({ kind: 'list', latencyMs: 200, status: 200 });
    assert.equal(l.window, 9);
    for (let i = 0; i < 20; i++) { c.advance(201); l.observe({ kind: 'list', latencyMs: 200, status: 200 }); }
    assert.equal(l.window, 2, 'min');
    assert.ok(l.stats().latencyShrinks >= 3);
  });

  it('latency below the floor is never slow, and each kind has its own unloaded latency', () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 8, floorMs: 20, now: c.now });
    l.observe({ kind: 'get', latencyMs: 1, status: 200 });
    l.observe({ kind: 'get', latencyMs: 15, status: 200 });
    assert.equal(l.window, 8, 'smoothed 4.5 ms is 4.5 × the unloaded 1 ms, but below the floor');
    l.observe({ kind: 'list', latencyMs: 100, status: 200 });
    l.observe({ kind: 'list', latencyMs: 150, status: 200 });
    assert.equal(l.window, 8, 'a list at 1.1 × the unloaded list is not slow, though 100 × the unloaded get');
    l.observe({ kind: 'get', latencyMs: 80, status: 200 });
    assert.equal(l.window, 6, 'gets smoothed to 23 ms (above the floor, 23 × 1 ms) are');
  });

  it('a 429 or 5xx halves the window; a PodDisruptionBudget 429 and a 501 do not', () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 16, now: c.now });
    l.observe({ kind: 'write', latencyMs: 5, status: 429, budget: true });
    l.observe({ kind: 'write', latencyMs: 5, status: 501 });
    assert.equal(l.window, 16);
    l.observe({ kind: 'write', latencyMs: 5, status: 429, apf: true });
    assert.equal(l.window, 8);
    c.advance(150);
    l.observe({ kind: 'get', latencyMs: 5, status: 503 });
    assert.equal(l.window, 4);
    c.advance(150);
    l.observe({ kind: 'get', latencyMs: 30_000, status: 0, timedOut: true });
    assert.equal(l.window, 2);
    assert.equal(l.stats().overloadShrinks, 3);
    assert.equal(l.stats().minWindow, 2);
  });

  it('Retry-After holds every request that has not started until it has passed (capped at 60 s)', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 4, now: c.now });
    const first = await l.acquire();
    l.observe({ kind: 'get', latencyMs: 5, status: 429, retryAfterMs: 2_000, apf: true });
    first();
    assert.equal(l.heldUntil, c.now() + 2_000);
    let got = false;
    const waiting = l.acquire().then((r) => { got = true; return r; });
    await settle();
    assert.equal(got, false, 'held while the Retry-After runs');
    c.advance(1_999);
    l.observe({ kind: 'get', latencyMs: 5, status: 200 });
    await settle();
    assert.equal(got, false, 'still held 1 ms before the end');
    c.advance(1);
    l.observe({ kind: 'get', latencyMs: 5, status: 200 });
    await settle();
    assert.equal(got, true, 'let through once it has passed');
    (await waiting)();
    l.observe({ kind: 'get', latencyMs: 5, status: 503, retryAfterMs: 3_600_000 });
    assert.equal(l.heldUntil, c.now() + 60_000, 'capped');
    assert.equal(l.stats().pausedMs, 62_000);
  });

  it('queues beyond the window in arrival order and hands freed slots on', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 2, max: 2, now: c.now });
    const [a, b] = await hold(l, 2);
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) => l.acquire().then((r) => { order.push(n); return r; }));
    await settle();
    assert.deepEqual(order, []);
    assert.equal(l.stats().queued, 3);
    c.advance(40);
    a!();
    await settle();
    assert.deepEqual(order, [1]);
    b!();
    await settle();
    assert.deepEqual(order, [1, 2]);
    (await waits[0]!)();
    await settle();
    assert.deepEqual(order, [1, 2, 3]);
    assert.equal(l.stats().longestWaitMs, 40);
    (await waits[1]!)();
    (await waits[2]!)();
    assert.equal(l.stats().inFlight, 0);
  });

  it('a shrunk window lets no new request start until enough in flight have ended', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 4, now: c.now });
    const held = await hold(l, 4);
    l.observe({ kind: 'write', latencyMs: 5, status: 429 });
    assert.equal(l.window, 2);
    let got = false;
    const w = l.acquire().then((r) => { got = true; return r; });
    held[0]!(); held[1]!();
    await settle();
    assert.equal(got, false, '2 still in flight: the window of 2 is full');
    held[2]!();
    await settle();
    assert.equal(got, true);
    held[3]!();
    (await w)();
  });

  it('tasks (node hooks) take half the window, at least one, and no request slot', async () => {
    const c = clock();
    const l = new AdaptiveLimiter({ initial: 6, now: c.now });
    assert.equal(l.taskWindow, 3);
    let running = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const tasks = Array.from({ length: 7 }, () => l.task(async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => gates.push(r));
      running--;
    }));
    await settle();
    assert.equal(running, 3);
    const r = await l.acquire();
    assert.equal(l.stats().inFlight, 1, 'a request still gets a slot while tasks run');
    r();
    l.observe({ kind: 'get', latencyMs: 5, status: 429 });
    assert.equal(l.taskWindow, 1, 'window 3 → one task');
    while (gates.length > 0 || running > 0) { gates.shift()?.(); await settle(); }
    await Promise.all(tasks);
    assert.equal(most, 3);
  });
});

describe('requestKind: what a request is, for its unloaded latency', () => {
  it('names verb, resource, subresource and a list\'s scope, never an object\'s name', () => {
    const cases: Array<[string, string, Record<string, string | number | undefined> | undefined, string]> = [
      ['GET', '/api/v1/nodes/tb-node-7', undefined, 'get nodes'],
      ['GET', '/api/v1/namespaces/kube-system', undefined, 'get namespaces'],
      ['GET', '/api/v1/namespaces/a/pods/web-1', undefined, 'get pods'],
      ['GET', '/api/v1/namespaces/a/pods/web-1/log', undefined, 'get pods/log'],
      ['GET', '/api/v1/pods', { limit: 500 }, 'list pods all'],
      ['GET', '/api/v1/pods', { limit: 500, fieldSelector: 'spec.nodeName=n1' }, 'list pods selected'],
      ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', undefined, 'list pods selected'],
      ['GET', '/api/v1/namespaces/a/pods', { limit: 500 }, 'list pods ns'],
      ['GET', '/apis/policy/v1/namespaces/a/poddisruptionbudgets', { limit: 500, labelSelector: 'x=y' }, 'list poddisruptionbudgets selected'],
      ['GET', '/apis/networking.k8s.io/v1/servicecidrs', undefined, 'list servicecidrs all'],
      ['POST', '/api/v1/namespaces/a/pods/web-1/eviction', undefined, 'POST pods/eviction'],
      ['PATCH', '/api/v1/nodes/tb-node-7', undefined, 'PATCH nodes'],
      ['DELETE', '/api/v1/nodes/tb-node-7', undefined, 'DELETE nodes'],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-renumber', undefined, 'PUT leases'],
      ['GET', '/version', undefined, 'list version all'],
    ];
    for (const [m, p, q, want] of cases) assert.equal(requestKind(m, p, q), want, `${m} ${p} ${JSON.stringify(q ?? {})}`);
  });

  it('cluster-wide lists among many small ones: with a baseline per kind the window holds; with one for every list it collapses', () => {
    // What a 1,000-node wave sends: lists of one node's pods (~8 ms) and now and then a list of every pod (~900 ms),
    // at an apiserver whose latencies do not change (no load). Fed as one kind, the large lists look like load.
    const feed = (kindOf: (selected: boolean) => string) => {
      const c = clock();
      const l = new AdaptiveLimiter({ initial: 16, now: c.now });
      for (let round = 0; round < 60; round++) {
        for (let i = 0; i < 30; i++) { c.advance(10); l.observe({ kind: kindOf(true), latencyMs: 8, status: 200 }); }
        c.advance(900);
        l.observe({ kind: kindOf(false), latencyMs: 900, status: 200 });
      }
      return l;
    };
    const split = feed((sel) => requestKind('GET', '/api/v1/pods', { limit: 500, ...(sel ? { fieldSelector: 'spec.nodeName=n' } : {}) }));
    assert.equal(split.window, 16, JSON.stringify(split.stats()));
    assert.equal(split.stats().latencyShrinks, 0);
    const mixed = feed(() => 'list');
    assert.ok(mixed.window <= 2, `one baseline for every list: window ${mixed.window} (${JSON.stringify(mixed.stats())})`);
  });
});

describe('the run\'s closing window line, read back by the control-plane-load bench', () => {
  it('requestWindow() reads what describeWindow() writes for a window that shrank', async () => {
    const { AdaptiveLimiter: Limiter, describeWindow } = await import('../../src/kube/limiter.ts');
    const { requestWindow } = await import('../../bench/control-plane-load.ts');
    let t = 0;
    const l = new Limiter({ initial: 8, now: () => t });
    for (let i = 0; i < 50; i++) { t += 10; l.observe({ kind: 'get', latencyMs: 5, status: 200 }); }
    t += 1000;
    l.observe({ kind: 'get', latencyMs: 100, status: 429, apf: true });
    const line = describeWindow(l.stats());
    const w = requestWindow(`progress\n${line}\nmore`);
    assert.ok(w, line);
    assert.equal(w.overloadShrinks, 1);
    assert.equal(w.last, l.window);
    assert.ok(w.last < 8 && w.min === w.last && w.max === 8, line);
    assert.equal(requestWindow('no such line'), undefined);
  });
});
