// The testbed's fault-injecting proxy (test/testbed/faults.ts) in front of a small upstream on 127.0.0.1: the
// same seed gives the same faults, the share is what was asked, each kind does what it says (a reset reaches the
// upstream, a status does not), and the figures add up.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { decide, FAULT_KINDS, FaultProxy, seeded } from '../testbed/faults.ts';

const upstreamSeen: string[] = [];
const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    upstreamSeen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Success', path: req.url }));
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
const target = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
const proxies: FaultProxy[] = [];
after(async () => { for (const p of proxies) await p.stop(); upstream.close(); });

/** One request through the proxy on a fresh connection: its status, a reset, and how long it took. */
function send(url: string, method: string, path: string): Promise<{ outcome: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const body = method === 'GET' ? undefined : '{}';
    const req = http.request(`${url}${path}`, { method, agent: false, headers: body ? { 'Content-Length': String(body.length) } : {} }, (res) => {
      res.resume();
      res.on('end', () => resolve({ outcome: `${res.statusCode}${res.headers['retry-after'] ? ` retry-after ${res.headers['retry-after']}` : ''}`, ms: Date.now() - t0 }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ outcome: `error ${e.code}`, ms: Date.now() - t0 }));
    req.end(body);
  });
}

async function runThrough(seed: number, n: number): Promise<{ outcomes: string[]; proxy: FaultProxy }> {
  const proxy = await FaultProxy.start({ target, seed, rate: 0.3, slowMs: [50, 60] });
  proxies.push(proxy);
  const outcomes: string[] = [];
  for (let i = 0; i < n; i++) {
    const method = ['GET', 'POST', 'PATCH', 'DELETE'][i % 4]!;
    outcomes.push((await send(proxy.url, method, `/api/v1/namespaces/x/things/t${i}`)).outcome);
  }
  return { outcomes, proxy };
}

describe('fault proxy', () => {
  test('the decisions are a function of the seed: same seed, same faults; another seed, others', () => {
    const w = Object.fromEntries(FAULT_KINDS.map((k) => [k, 1])) as Record<(typeof FAULT_KINDS)[number], number>;
    const seq = (seed: number) => { const r = seeded(seed); return Array.from({ length: 500 }, () => decide(r, 0.2, w)); };
    assert.deepEqual(seq(42), seq(42));
    assert.notDeepEqual(seq(42), seq(43));
    const hits = seq(42).filter(Boolean).length;
    assert.ok(hits > 70 && hits < 130, `about 20 % of 500: ${hits}`);
    for (const k of FAULT_KINDS) assert.ok(seq(42).includes(k), k);
  });

  test('through a real connection: same seed, same outcomes; each kind does what it says; the figures add up', async () => {
    const n = 120;
    upstreamSeen.length = 0;
    const a = await runThrough(5, n);
    const forwardedA = upstreamSeen.length;
    upstreamSeen.length = 0;
    const b = await runThrough(5, n);
    assert.deepEqual(a.outcomes, b.outcomes, 'reproducible');
    assert.equal(upstreamSeen.length, forwardedA);

    const st = a.proxy.stats();
    assert.equal(st.requests, n);
    assert.equal(st.faulted, a.outcomes.filter((o) => o !== '200').length + st.byKind.slow, 'every fault but a slow one changes the answer');
    assert.equal(st.byKind['429'], a.outcomes.filter((o) => o === '429 retry-after 1').length, '429 always with Retry-After');
    assert.equal(st.byKind['500'], a.outcomes.filter((o) => o === '500').length);
    assert.equal(st.byKind['503'], a.outcomes.filter((o) => o.startsWith('503')).length);
    assert.equal(st.byKind.reset, a.outcomes.filter((o) => o === 'error ECONNRESET').length);
    // statuses are answered without forwarding; resets and slow answers were forwarded (applied) first
    assert.equal(forwardedA, n - st.byKind['429'] - st.byKind['500'] - st.byKind['503']);
    assert.equal(Object.values(st.byMethod).reduce((s, m) => s + m.requests, 0), n);
    assert.equal(st.byMethod.POST!.requests, n / 4);
    const perKind = Object.values(st.byMethod).reduce((s, m) => s + Object.values(m.faults).reduce((x, y) => x + (y ?? 0), 0), 0);
    assert.equal(perKind, st.faulted);
    assert.ok(Math.abs(st.rate - st.faulted / n) < 1e-9);
    assert.ok(st.rate > 0.15 && st.rate < 0.45, `asked 30 %: ${st.rate}`);
  });

  test('a Lease request is counted as one, and faulted like any other', async () => {
    const proxy = await FaultProxy.start({ target, seed: 1, rate: 1, weights: { '429': 1, '500': 0, '503': 0, reset: 0, slow: 0 } });
    proxies.push(proxy);
    const r = await send(proxy.url, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-renumber');
    assert.equal(r.outcome, '429 retry-after 1');
    assert.deepEqual(proxy.stats().leases, { requests: 1, faulted: 1 });
  });

  test('a slow answer is held back; watches pass untouched and uncounted', async () => {
    const proxy = await FaultProxy.start({ target, seed: 1, rate: 1, weights: { '429': 0, '500': 0, '503': 0, reset: 0, slow: 1 }, slowMs: [300, 300] });
    proxies.push(proxy);
    const r = await send(proxy.url, 'GET', '/api/v1/pods');
    assert.equal(r.outcome, '200');
    assert.ok(r.ms >= 290, `${r.ms} ms`);
    const w = await send(proxy.url, 'GET', '/api/v1/pods?watch=true');
    assert.equal(w.outcome, '200');
    assert.equal(proxy.stats().requests, 1);
  });
});
