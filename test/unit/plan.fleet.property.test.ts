// Fleet range assignment: properties over generated fleets (up to 1,000 clusters), and the exact optimum
// against an exhaustive search on small fleets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { assignFleetRanges, FleetConflictError, FLEET_KINDS, type FleetClusterNeeds, type FleetResult, type FleetShared } from '../../src/plan/fleet.ts';
import { cidrLast, parseCidr } from '../../src/net/index.ts';

const span = (s: string) => { const c = parseCidr(s); return { start: c.network, end: cidrLast(c), prefix: c.prefix }; };
const hit = (a: string, b: string) => { const x = span(a); const y = span(b); return x.start <= y.end && y.start <= x.end; };

// Current ranges drawn from a small pool so that clusters collide often (same range, nested, overlapping).
const POOL = ['10.96.0.0/12', '10.96.0.0/16', '10.97.0.0/16', '10.244.0.0/16', '10.244.0.0/14', '10.0.0.0/16', '172.20.0.0/16',
  '100.64.0.0/13', '100.96.0.0/11', '10.233.0.0/18', '10.233.64.0/18', '192.168.0.0/20', '10.96.0.0/24', '10.42.0.0/16', '10.43.0.0/16'];
// floor: the longest prefix a new range may have (src/analyze/sizing.ts), drawn from the same sizes, often absent
const need = (prefixes: number[]) => fc.record({
  current: fc.option(fc.constantFrom(...POOL), { nil: undefined, freq: 8 }),
  prefix: fc.constantFrom(...prefixes),
  floor: fc.option(fc.constantFrom(...prefixes), { nil: undefined, freq: 2 }),
});
const cluster = (svc: number[], pod: number[]) => fc.record({
  service: need(svc),
  pod: need(pod),
  local: fc.array(fc.constantFrom('10.0.1.5/32', '192.168.1.0/24', '172.20.0.10/32', '10.250.0.0/24'), { maxLength: 2 }),
});
const sharedArb = fc.subarray<FleetShared>([
  { cidr: '100.64.0.0/10', reason: 'Tailscale' }, { cidr: '10.0.0.0/16', reason: 'VPC' }, { cidr: '172.20.0.0/16', reason: 'peer' },
  { cidr: '10.244.0.0/16', reason: 'on-premises' }, { cidr: '192.168.0.0/16', reason: 'office' }]);
// a small fleet has large needs (the space runs short); 1,000 clusters have needs that fit RFC 1918 together
const fleet = (min: number, max: number) => fc.array(max > 10 ? cluster([21, 22, 23, 24], [19, 20, 21, 22]) : cluster([16, 18, 20, 22, 24], [14, 16, 18, 20]),
  { minLength: min, maxLength: max })
  .map((cs) => cs.map((c, i): FleetClusterNeeds => ({ name: `c${i}`, ...c, service: strip(c.service), pod: strip(c.pod) })));
function strip(n: { current?: string; prefix: number; floor?: number }) {
  return { ...(n.current === undefined ? {} : { current: n.current }), prefix: n.prefix, ...(n.floor === undefined ? {} : { floor: n.floor }) };
}

/** The rules every result must meet, whatever the input. */
function checkResult(cs: readonly FleetClusterNeeds[], shared: readonly FleetShared[], r: FleetResult): void {
  assert.equal(r.clusters.length, cs.length);
  const all: Array<{ who: string; cidr: string; moved?: boolean }> = [];
  r.clusters.forEach((a, i) => {
    const c = cs[i]!;
    assert.equal(a.name, c.name);
    for (const k of FLEET_KINDS) {
      const res = a[k];
      // large enough for the need
      assert.ok(span(res.to).prefix <= c[k].prefix, `${c.name} ${k} ${res.to} holds a /${c[k].prefix}`);
      // a new range holds the floor too; a kept one only the need
      if (res.moved && c[k].floor !== undefined) assert.ok(span(res.to).prefix <= c[k].floor!, `${c.name} ${k} ${res.to} holds the floor /${c[k].floor}`);
      if (!res.moved) assert.equal(res.to, c[k].current && parseCidr(c[k].current!, { normalize: true }) && res.from);
      for (const s of shared) assert.ok(!hit(res.to, s.cidr), `${c.name} ${k} ${res.to} clear of shared ${s.cidr}`);
      for (const l of c.local ?? []) assert.ok(!hit(res.to, l), `${c.name} ${k} ${res.to} clear of its own ${l}`);
      all.push({ who: `${c.name} ${k}`, cidr: res.to, moved: res.moved });
    }
  });
  // no two ranges of the fleet overlap
  const sorted = all.map((x) => ({ ...x, ...span(x.cidr) })).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i]!.start > sorted[i - 1]!.end, `${sorted[i - 1]!.who} ${sorted[i - 1]!.cidr} overlaps ${sorted[i]!.who} ${sorted[i]!.cidr}`);
  // a new range overlaps no current range of any cluster (they stay in use until their moves end)
  const currents = [...new Set(cs.flatMap((o) => FLEET_KINDS.map((k) => o[k].current).filter((x): x is string => x !== undefined)))].map(span);
  for (const n of sorted) {
    if (!n.moved) continue;
    for (const c of currents) assert.ok(!(n.start <= c.end && c.start <= n.end), `${n.who} ${n.cidr} overlaps a current range`);
  }
  // no needless move: a range that could have stayed (large enough, clear of shared and local ranges) moved only
  // because it overlaps a range that stays
  r.clusters.forEach((a, i) => {
    const c = cs[i]!;
    for (const k of FLEET_KINDS) {
      const cur = c[k].current;
      if (!a[k].moved || !cur || span(cur).prefix > c[k].prefix) continue;
      if (shared.some((s) => hit(cur, s.cidr)) || (c.local ?? []).some((l) => hit(cur, l))) continue;
      const stays = r.clusters.flatMap((b, j) => FLEET_KINDS.filter((kk) => !b[kk].moved && !(j === i && kk === k)).map((kk) => b[kk].to));
      assert.ok(stays.some((s) => hit(s, cur)), `${c.name} ${k} ${cur} moved though nothing that stays overlaps it`);
    }
  });
}

/** The best [kept ranges, kept addresses] by trying every subset of the keepable current ranges. */
function bruteBest(cs: readonly FleetClusterNeeds[], shared: readonly FleetShared[]): [number, bigint] {
  const cands: string[] = [];
  for (const c of cs) {
    for (const k of FLEET_KINDS) {
      const cur = c[k].current;
      if (!cur || span(cur).prefix > c[k].prefix) continue;
      if (shared.some((s) => hit(cur, s.cidr)) || (c.local ?? []).some((l) => hit(cur, l))) continue;
      cands.push(cur);
    }
  }
  let best: [number, bigint] = [0, 0n];
  for (let m = 0; m < 1 << cands.length; m++) {
    const pick = cands.filter((_, i) => m & (1 << i));
    if (pick.some((a, i) => pick.some((b, j) => j > i && hit(a, b)))) continue;
    const addr = pick.reduce((n, x) => n + (span(x).end - span(x).start + 1n), 0n);
    if (pick.length > best[0] || (pick.length === best[0] && addr > best[1])) best = [pick.length, addr];
  }
  return best;
}

describe('fleet range assignment', () => {
  it('1,000 clusters: distinct, clear of shared and own ranges, large enough, no needless move', () => {
    fc.assert(fc.property(fleet(1000, 1000), sharedArb, (cs, shared) => {
      const r = assignFleetRanges(cs, shared);
      checkResult(cs, shared, r);
    }), { numRuns: 8 });
  });

  it('small fleets: the rules hold and the kept set is the optimum (most ranges, then most addresses)', () => {
    fc.assert(fc.property(fleet(1, 5), sharedArb, (cs, shared) => {
      const r = assignFleetRanges(cs, shared);
      checkResult(cs, shared, r);
      const kept = r.clusters.flatMap((a) => FLEET_KINDS.filter((k) => !a[k].moved).map((k) => a[k].to));
      const addr = kept.reduce((n, x) => n + (span(x).end - span(x).start + 1n), 0n);
      assert.deepEqual([kept.length, addr], bruteBest(cs, shared));
    }), { numRuns: 400 });
  });

  it('three clusters built alike: one keeps its ranges, the two others move to distinct ones', () => {
    const c = (name: string): FleetClusterNeeds => ({ name, service: { current: '10.96.0.0/16', prefix: 24 }, pod: { current: '10.244.0.0/16', prefix: 20 } });
    const r = assignFleetRanges([c('a'), c('b'), c('c')], [{ cidr: '100.64.0.0/10', reason: 'Tailscale' }]);
    assert.deepEqual(r.clusters[0], { name: 'a', service: { from: '10.96.0.0/16', to: '10.96.0.0/16', moved: false }, pod: { from: '10.244.0.0/16', to: '10.244.0.0/16', moved: false } });
    for (const x of r.clusters.slice(1)) {
      assert.equal(x.service.moved, true);
      assert.match(x.service.why!, /overlaps a service 10\.96\.0\.0\/16, which stays/);
    }
    assert.deepEqual(r.moves, { ranges: 4, clusters: 2, addresses: 4 * 65536 });
  });

  it('the floor: a new range gets it, a current range that holds the need stays below it', () => {
    const r = assignFleetRanges([
      { name: 'small', service: { current: '10.96.0.0/24', prefix: 27, floor: 20 }, pod: { current: '10.244.0.0/20', prefix: 21, floor: 16 } },
      { name: 'new', service: { prefix: 27, floor: 20 }, pod: { prefix: 21, floor: 16 } },
    ], []);
    assert.deepEqual(r.clusters[0], { name: 'small', service: { from: '10.96.0.0/24', to: '10.96.0.0/24', moved: false }, pod: { from: '10.244.0.0/20', to: '10.244.0.0/20', moved: false } });
    assert.equal(span(r.clusters[1]!.service.to).prefix, 20);
    assert.equal(span(r.clusters[1]!.pod.to).prefix, 16);
    assert.throws(() => assignFleetRanges([{ name: 'x', service: { prefix: 27, floor: 40 }, pod: { prefix: 16 } }], []), /service floor \/40 is not an IPv4 prefix/);
  });

  it('a range inside a shared one moves; a pod range holding its own service range: the larger stays when it keeps more', () => {
    const r = assignFleetRanges([
      { name: 'kops', service: { current: '100.64.0.0/13', prefix: 20 }, pod: { current: '100.96.0.0/11', prefix: 16 } },
      { name: 'old', service: { current: '10.1.0.0/24', prefix: 24 }, pod: { current: '10.0.0.0/8', prefix: 16 } },
    ], [{ cidr: '100.64.0.0/10', reason: 'Tailscale' }]);
    assert.equal(r.clusters[0]!.service.moved, true);
    assert.match(r.clusters[0]!.service.why!, /overlaps 100\.64\.0\.0\/10 \(Tailscale\)/);
    // one of the two must move; keeping 10.0.0.0/8 keeps more addresses
    assert.equal(r.clusters[1]!.pod.moved, false);
    assert.equal(r.clusters[1]!.service.moved, true);
  });

  it('unsatisfiable: the error names the cluster, the range and the search space', () => {
    const cs: FleetClusterNeeds[] = [1, 2, 3].map((i) => ({ name: `big${i}`, service: { prefix: 16 }, pod: { prefix: 9 } }));
    assert.throws(() => assignFleetRanges(cs, []), (e: unknown) => e instanceof FleetConflictError
      && /cluster big3: no free \/9 for its pod range in 10\.0\.0\.0\/8, 172\.16\.0\.0\/12, 192\.168\.0\.0\/16/.test(e.message));
    assert.throws(() => assignFleetRanges([{ name: 'x', service: { prefix: 16 }, pod: { prefix: 16 } }, { name: 'x', service: { prefix: 16 }, pod: { prefix: 16 } }], []),
      /two clusters are named x/);
    assert.throws(() => assignFleetRanges([{ name: 'v6', service: { current: 'fd00::/108', prefix: 16 }, pod: { prefix: 16 } }], []), /IPv4 ranges only/);
  });
});
