// The crash tests' kill sweeps (test/integration/helpers.ts KillSweep): a full sweep kills every run at its first
// matching write; a sampled one at its 1st to SAMPLE_STRIDE-th, drawn from a seed that replays the same offsets.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { atNth, KILL_POINTS, KillSweep, SAMPLE_STRIDE } from '../integration/helpers.ts';
import { seeded } from '../testbed/faults.ts';

describe('kill sweeps', () => {
  test('atNth sets the count of every kind of kill point and leaves the rest of its value alone', () => {
    assert.deepEqual(atNth({ KUBE_RENUMBER_TEST_KILL_AFTER_WRITES: '1' }, 3), { KUBE_RENUMBER_TEST_KILL_AFTER_WRITES: '3' });
    assert.deepEqual(atNth({ KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '1:50' }, 2), { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '2:50' });
    assert.deepEqual(atNth({ KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '1:Node__cluster' }, 4), { KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '4:Node__cluster' });
    assert.deepEqual(atNth({ KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/kube-renumber/secrets:1' }, 2),
      { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/kube-renumber/secrets:2' });
    assert.deepEqual(atNth({ KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'PATCH:/nodes/n1:1:"unschedulable":false' }, 3),
      { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT: 'PATCH:/nodes/n1:3:"unschedulable":false' });
    assert.deepEqual(atNth({ OTHER: '1' }, 3), { OTHER: '1' });
  });

  test('a full sweep kills each run at its first write, every point in turn', () => {
    const s = new KillSweep('x', KILL_POINTS, { full: true, seed: 1 });
    for (let i = 0; i < 2 * KILL_POINTS.length; i++) {
      const n = s.next(i);
      assert.equal(n.nth, 1);
      assert.equal(n.point, KILL_POINTS[i % KILL_POINTS.length]);
      assert.deepEqual(n.env, n.point.env);
    }
    assert.match(s.describe(), /full kill sweep/);
  });

  test('a sample kills its first round at the first write, then draws 1..SAMPLE_STRIDE from its seed: the same seed, the same offsets', () => {
    const offsets = (seed: number) => { const s = new KillSweep('x', KILL_POINTS, { full: false, seed }); return Array.from({ length: 200 }, (_, i) => s.next(i).nth); };
    const all = offsets(42);
    assert.deepEqual(all.slice(0, KILL_POINTS.length), KILL_POINTS.map(() => 1), 'every point fires in the first round');
    const a = all.slice(KILL_POINTS.length);
    assert.deepEqual(offsets(42), all);
    assert.notDeepEqual(offsets(43), all);
    for (const n of a) assert.ok(n >= 1 && n <= SAMPLE_STRIDE, String(n));
    for (let n = 1; n <= SAMPLE_STRIDE; n++) assert.ok(a.includes(n), `offset ${n} drawn`);
    const mean = a.reduce((x, y) => x + y, 0) / a.length;
    assert.ok(mean > 2 && mean < 3, `mean offset ${mean}`);
    const s = new KillSweep('x', KILL_POINTS, { full: false, seed: 42 });
    assert.match(s.describe(), /KUBE_RENUMBER_TEST_SEED=42/);
    for (let i = 0; i < KILL_POINTS.length; i++) s.next(i);
    const later = Array.from({ length: 20 }, (_, i) => s.next(KILL_POINTS.length + i)).find((n) => n.env.KUBE_RENUMBER_TEST_KILL_AFTER_WRITES !== undefined && n.nth > 1)!;
    assert.equal(later.env.KUBE_RENUMBER_TEST_KILL_AFTER_WRITES, String(later.nth), 'the drawn offset is the one the CLI is given');
  });

  test('the fewest kills: the test\'s figure for a full sweep, one per point for a sample', () => {
    assert.equal(new KillSweep('x', KILL_POINTS, { full: true, seed: 1 }).minKills(20), 20);
    assert.equal(new KillSweep('x', KILL_POINTS, { full: false, seed: 1 }).minKills(20), KILL_POINTS.length);
    assert.equal(new KillSweep('x', KILL_POINTS, { full: false, seed: 1 }).minKills(3), 3);
  });

  test('the generator is uniform enough and in [0, 1)', () => {
    const r = seeded(7);
    const buckets = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) { const x = r(); assert.ok(x >= 0 && x < 1); buckets[Math.floor(x * 4)]!++; }
    for (const b of buckets) assert.ok(b > 850 && b < 1150, buckets.join(','));
  });
});
