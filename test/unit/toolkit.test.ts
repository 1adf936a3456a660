// The toolkit's decisions (what is retried, how long to wait, when to give up), driven by scripted answers.
// These are not evidence that an eviction or a move works against a cluster: the integration tests are.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { KubeApiError, type KubeClient, type Method, type RequestOptions, UnreachableError } from '../../src/kube/client.ts';
import {
  ConflictError, EvictionBlocked, evictionVerdict, evictRespectingPdb, isConflict, mapLimit, Pacer, poll, pollDelays, PollTimeout, retryOnConflict,
} from '../../src/engine/toolkit.ts';

const api = (status: number, reason = '', message = `status ${status}`) => new KubeApiError('POST', '/x', status, reason, message);

/** A client that answers each request with the next scripted answer (an Error is thrown), recording the calls. */
function scripted(answers: Array<unknown>): KubeClient & { calls: Array<{ method: Method; path: string; body?: unknown }> } {
  const calls: Array<{ method: Method; path: string; body?: unknown }> = [];
  let i = 0;
  return {
    server: 'https://127.0.0.1:1', context: 'test', calls,
    get requestCount() { return calls.length; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
    async request<T>(method: Method, path: string, opts?: RequestOptions): Promise<T> {
      calls.push({ method, path, body: opts?.body });
      if (i >= answers.length) throw new Error(`unscripted request ${method} ${path}`);
      const a = answers[i++];
      if (a instanceof Error) throw a;
      return a as T;
    },
    // eslint-disable-next-line require-yield
    async *list(): AsyncGenerator<KubeObject> { throw new Error('not scripted'); },
  };
}

/** A fake clock: sleep advances it. */
function clock(start = 1_000_000) {
  let t = start;
  const sleeps: number[] = [];
  return { now: () => t, sleep: async (ms: number) => { sleeps.push(ms); t += ms; }, sleeps, advance: (ms: number) => { t += ms; } };
}

const pod: KubeObject = { metadata: { name: 'p', namespace: 'ns', uid: 'u1' } };

describe('retryOnConflict', () => {
  it('re-runs the attempt after a 409 Conflict and returns its value', async () => {
    let n = 0;
    const v = await retryOnConflict('thing', async (attempt) => { n = attempt; if (attempt < 3) throw api(409, 'Conflict'); return 'ok'; });
    assert.equal(v, 'ok');
    assert.equal(n, 3);
  });
  it('gives up after `attempts` with a message naming the object', async () => {
    await assert.rejects(retryOnConflict('Service a/b', async () => { throw api(409, 'Conflict'); }, { attempts: 4 }),
      (e: unknown) => e instanceof ConflictError && /Service a\/b kept changing under us \(409 Conflict 4 times\)/.test(e.message));
  });
  it('AlreadyExists and other errors are not conflicts: thrown at once', async () => {
    let calls = 0;
    await assert.rejects(retryOnConflict('x', async () => { calls++; throw api(409, 'AlreadyExists'); }));
    assert.equal(calls, 1);
    assert.equal(isConflict(api(409, 'AlreadyExists')), false);
    assert.equal(isConflict(api(409, 'Conflict')), true);
    assert.equal(isConflict(api(422)), false);
  });
});

describe('poll', () => {
  it('returns the first value, waiting between tries with back-off up to the cap', async () => {
    const c = clock();
    let n = 0;
    const v = await poll('x', async () => (++n >= 5 ? n : undefined), { intervalMs: 50, backoff: 2, maxIntervalMs: 300, sleep: c.sleep, now: c.now });
    assert.equal(v, 5);
    assert.deepEqual(c.sleeps, [50, 100, 200, 300]);
    assert.deepEqual(pollDelays({ intervalMs: 50, backoff: 2, maxIntervalMs: 300 }, 5), [50, 100, 200, 300, 300]);
    assert.deepEqual(pollDelays({ intervalMs: 250 }, 3), [250, 250, 250]);
  });
  it('times out naming what it waited for and the last detail; never sleeps past the deadline', async () => {
    const c = clock();
    await assert.rejects(poll('the thing', async (note) => { note('2 of 3 ready'); return undefined; }, { timeoutMs: 1000, intervalMs: 300, sleep: c.sleep, now: c.now }),
      (e: unknown) => e instanceof PollTimeout && /timed out after 1s waiting for the thing \(2 of 3 ready\)/.test(e.message));
    assert.deepEqual(c.sleeps, [300, 300, 300, 100]);
  });
  it('transient API errors count as "not yet" only when asked; others are thrown', async () => {
    const c = clock();
    let n = 0;
    const v = await poll('x', async () => { if (++n < 3) throw api(503, 'ServiceUnavailable'); return true; }, { tolerateTransient: true, sleep: c.sleep, now: c.now });
    assert.equal(v, true);
    await assert.rejects(poll('x', async () => { throw api(503); }, { sleep: c.sleep, now: c.now }), /status 503/);
    await assert.rejects(poll('x', async () => { throw api(403); }, { tolerateTransient: true, sleep: c.sleep, now: c.now }), /status 403/);
  });
});

describe('Pacer (--node-interval)', () => {
  /** A clock the test moves; each sleep recorded (and over at once: the turns are computed when they are asked for). */
  const clock = () => {
    const c = { t: 1_000, slept: [] as number[] };
    const pacer = (ms: number) => new Pacer(ms, () => c.t, async (d) => { c.slept.push(d); });
    return { c, pacer };
  };

  it('callers asking together start one interval apart, in the order they asked', async () => {
    const { c, pacer } = clock();
    const p = pacer(3_000);
    const order: number[] = [];
    // a wave of four nodes asks for its turns at the same moment
    const waits = await Promise.all([0, 1, 2, 3].map(async (i) => { const w = await p.turn(); order.push(i); return w; }));
    assert.deepEqual(waits, [0, 3_000, 6_000, 9_000]);
    assert.deepEqual(order, [0, 1, 2, 3]);
    assert.deepEqual(c.slept, [3_000, 6_000, 9_000]);
  });

  it('a turn asked for after the interval has passed starts at once; one asked for sooner waits the rest', async () => {
    const { c, pacer } = clock();
    const p = pacer(3_000);
    assert.equal(await p.turn(), 0);
    c.t += 5_000; // the next wave asks later than one interval after
    assert.equal(await p.turn(), 0);
    c.t += 1_000; // and its second node a second after its first
    assert.equal(await p.turn(), 2_000);
    assert.deepEqual(c.slept, [2_000]);
  });

  it('an interval of 0 never waits', async () => {
    const { c, pacer } = clock();
    const p = pacer(0);
    assert.deepEqual(await Promise.all([p.turn(), p.turn(), p.turn()]), [0, 0, 0]);
    assert.deepEqual(c.slept, []);
  });
});

describe('mapLimit', () => {
  it('at most `limit` in flight, results in input order', async () => {
    let inFlight = 0;
    let max = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (x) => {
      inFlight++; max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, x));
      inFlight--;
      return x * 10;
    });
    assert.deepEqual(out, [50, 10, 40, 20, 30, 0]);
    assert.equal(max, 2);
  });
  it('every item runs even when one fails; the first error is thrown at the end', async () => {
    const seen: number[] = [];
    await assert.rejects(mapLimit([1, 2, 3, 4], 2, async (x) => { seen.push(x); if (x === 2) throw new Error('two'); }), /two/);
    assert.deepEqual(seen.sort(), [1, 2, 3, 4]);
    assert.deepEqual(await mapLimit([], 8, async () => 1), []);
  });
});

describe('evictRespectingPdb', () => {
  const deadline = (c: ReturnType<typeof clock>, ms = 60_000) => c.now() + ms;

  it('what each answer means', () => {
    assert.equal(evictionVerdict(undefined), 'evicted');
    assert.equal(evictionVerdict(api(404)), 'gone');
    assert.equal(evictionVerdict(api(409)), 'check-uid');
    assert.equal(evictionVerdict(api(429, 'TooManyRequests')), 'blocked');
    assert.equal(evictionVerdict(api(500, '', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.')), 'multi-pdb');
    assert.equal(evictionVerdict(api(503)), 'transient');
    assert.equal(evictionVerdict(api(500)), 'transient');
    assert.equal(evictionVerdict(new UnreachableError('request timed out')), 'transient');
    assert.equal(evictionVerdict(api(400)), 'fatal');
    assert.equal(evictionVerdict(api(403)), 'fatal');
  });

  it('one 503 does not fail the eviction: it is tried again', async () => {
    const c = clock();
    const client = scripted([api(503, 'ServiceUnavailable'), {}]);
    assert.equal(await evictRespectingPdb(client, pod, { deadline: deadline(c), sleep: c.sleep, now: c.now }), 'evicted');
    assert.equal(client.calls.length, 2);
    assert.equal(client.calls[0]!.path, '/api/v1/namespaces/ns/pods/p/eviction');
    assert.deepEqual((client.calls[0]!.body as any).deleteOptions.preconditions, { uid: 'u1' });
  });

  it('429: waits with growing delays, naming the budget, until the budget allows it', async () => {
    const c = clock();
    const client = scripted([api(429), api(429), api(429), {}]);
    const whys: Array<[string, boolean]> = [];
    const budget = { metadata: { name: 'web', namespace: 'ns' } };
    const r = await evictRespectingPdb(client, pod, {
      deadline: deadline(c), maxDelayMs: 1000, sleep: c.sleep, now: c.now,
      budgets: async () => [budget], describeBudget: (b) => `PDB ${b.metadata?.name}`,
      onRefused: (why, _ms, byBudget) => { whys.push([why, byBudget]); return false; },
    });
    assert.equal(r, 'evicted');
    assert.deepEqual(whys, [['blocked by PDB web', true], ['blocked by PDB web', true], ['blocked by PDB web', true]]);
    assert.equal(c.sleeps.length, 3);
    assert.ok(c.sleeps[0]! >= 400 && c.sleeps[0]! <= 600, `first wait ~500 ms, got ${c.sleeps[0]}`);
    assert.ok(c.sleeps[2]! <= 1200, 'capped at maxDelayMs (+jitter)');
  });

  it('gives up at the deadline with the reason', async () => {
    const c = clock();
    const client = scripted(Array.from({ length: 50 }, () => api(429)));
    await assert.rejects(evictRespectingPdb(client, pod, { deadline: deadline(c, 5000), maxDelayMs: 1000, sleep: c.sleep, now: c.now }),
      (e: unknown) => e instanceof EvictionBlocked && /not possible within 5s: refused \(429\)/.test(e.message));
  });

  it('404: already gone; 409 with another uid (or none) now: gone; 409 with our uid: tried again, until the deadline', async () => {
    const c = clock();
    assert.equal(await evictRespectingPdb(scripted([api(404)]), pod, { deadline: deadline(c), sleep: c.sleep, now: c.now }), 'gone');
    assert.equal(await evictRespectingPdb(scripted([api(409)]), pod, { deadline: deadline(c), sleep: c.sleep, now: c.now,
      current: async () => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u2' } }) }), 'gone');
    assert.equal(await evictRespectingPdb(scripted([api(409)]), pod, { deadline: deadline(c), sleep: c.sleep, now: c.now, current: async () => undefined }), 'gone');
    // the budget's status update lost a race with another eviction: the same pod is evicted on the next try
    const budgetConflict = () => api(409, 'Conflict', 'Operation cannot be fulfilled on poddisruptionbudgets.policy "web": the object has been modified; please apply your changes to the latest version and try again');
    const again = scripted([budgetConflict(), budgetConflict(), {}]);
    const sleeps = c.sleeps.length;
    assert.equal(await evictRespectingPdb(again, pod, { deadline: deadline(c), sleep: c.sleep, now: c.now, current: async () => pod }), 'evicted');
    assert.equal(again.calls.length, 3);
    assert.equal(c.sleeps.length - sleeps, 2);
    await assert.rejects(evictRespectingPdb(scripted(Array.from({ length: 50 }, budgetConflict)), pod, { deadline: deadline(c, 5000), maxDelayMs: 1000, sleep: c.sleep, now: c.now,
      current: async () => pod }), (e: unknown) => e instanceof EvictionBlocked && /not possible within 5s: refused: Operation cannot be fulfilled on poddisruptionbudgets/.test(e.message));
  });

  it('more than one budget: an error naming them, no waiting', async () => {
    const c = clock();
    const client = scripted([api(500, '', 'This pod has more than one PodDisruptionBudget')]);
    await assert.rejects(evictRespectingPdb(client, pod, { deadline: deadline(c), sleep: c.sleep, now: c.now,
      budgets: async () => [{ metadata: { name: 'a', namespace: 'ns' } }, { metadata: { name: 'b', namespace: 'ns' } }] }),
    /more than one PodDisruptionBudget \(ns\/a, ns\/b\)/);
    assert.deepEqual(c.sleeps, []);
  });

  it('a fallback that moved the pod stops the tries; a dry run reports a block at once', async () => {
    const c = clock();
    assert.equal(await evictRespectingPdb(scripted([api(429), api(429)]), pod, { deadline: deadline(c), sleep: c.sleep, now: c.now,
      onRefused: (_why, _ms, byBudget) => byBudget }), 'fallback');
    await assert.rejects(evictRespectingPdb(scripted([api(429)]), pod, { dryRun: true, deadline: deadline(c), sleep: c.sleep, now: c.now }),
      (e: unknown) => e instanceof EvictionBlocked && /would be refused \(429\)/.test(e.message));
  });

  it('other errors (400, 403) are thrown at once', async () => {
    const c = clock();
    await assert.rejects(evictRespectingPdb(scripted([api(403, 'Forbidden', 'forbidden')]), pod, { deadline: deadline(c), sleep: c.sleep, now: c.now }), /forbidden/);
    assert.deepEqual(c.sleeps, []);
  });
});
