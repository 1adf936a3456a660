import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseMaxUnavailable, planWaves, waveSize, zoneShare, type WaveNode } from '../../src/plan/node-waves.ts';

describe('--max-unavailable', () => {
  test('a whole number or a percentage', () => {
    assert.equal(parseMaxUnavailable('1'), 1);
    assert.equal(parseMaxUnavailable('25'), 25);
    assert.equal(parseMaxUnavailable(3), 3);
    assert.equal(parseMaxUnavailable('10%'), '10%');
    assert.equal(parseMaxUnavailable('100%'), '100%');
    assert.equal(parseMaxUnavailable('2.5%'), '2.5%');
  });
  for (const bad of ['0', '-1', '0%', '101%', 'ten', '1.5', '', '%', '10 %x']) {
    test(`refuses ${JSON.stringify(bad)}`, () => assert.throws(() => parseMaxUnavailable(bad), /max-unavailable/));
  }
  test('refuses 0 and fractions as numbers', () => {
    assert.throws(() => parseMaxUnavailable(0), /at least 1/);
    assert.throws(() => parseMaxUnavailable(1.5), /whole number/);
  });
  test('wave size: percentages round down, never below one node, never above the node count', () => {
    assert.equal(waveSize(undefined, 200), 1);
    assert.equal(waveSize(1, 200), 1);
    assert.equal(waveSize('10%', 200), 20);
    assert.equal(waveSize('10%', 55), 5);
    assert.equal(waveSize('10%', 5), 1);
    assert.equal(waveSize(50, 20), 20);
    assert.equal(waveSize('100%', 7), 7);
  });
});

function nodes(spec: Record<string, number>): WaveNode[] {
  const out: WaveNode[] = [];
  for (const [zone, n] of Object.entries(spec)) for (let i = 0; i < n; i++) out.push({ name: `${zone || 'nz'}-${String(i).padStart(3, '0')}`, zone: zone || undefined });
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Every node once; no wave above size; no wave takes more than its share of a zone's remaining nodes. */
function assertWaves(all: WaveNode[], size: number): WaveNode[][] {
  const waves = planWaves(all, size);
  assert.deepEqual(waves.flat().map((n) => n.name).sort(), all.map((n) => n.name).sort(), 'every node exactly once');
  const left = new Map<string, number>();
  for (const n of all) left.set(n.zone ?? '', (left.get(n.zone ?? '') ?? 0) + 1);
  let remaining = all.length;
  for (const [i, w] of waves.entries()) {
    assert.ok(w.length >= 1 && w.length <= size, `wave ${i} has ${w.length} nodes`);
    assert.equal(w.length, Math.min(size, remaining), `wave ${i} is full`);
    for (const [z, r] of left) {
      const took = w.filter((n) => (n.zone ?? '') === z).length;
      assert.ok(took <= zoneShare(size, r, remaining), `wave ${i} takes ${took} of zone ${z} (${r} of ${remaining} left, size ${size})`);
    }
    for (const n of w) left.set(n.zone ?? '', left.get(n.zone ?? '')! - 1);
    remaining -= w.length;
  }
  return waves;
}

describe('planWaves', () => {
  test('size 1: one node a wave, in the given order', () => {
    const all = nodes({ a: 2, b: 2 });
    assert.deepEqual(planWaves(all, 1).map((w) => w.map((n) => n.name)), [['a-000'], ['b-000'], ['a-001'], ['b-001']]);
  });
  test('three even zones, waves of 3: one node of each zone per wave', () => {
    const waves = assertWaves(nodes({ a: 4, b: 4, c: 4 }), 3);
    assert.equal(waves.length, 4);
    for (const w of waves) assert.deepEqual(w.map((n) => n.zone).sort(), ['a', 'b', 'c']);
  });
  test('uneven zones stay spread; nodes without a zone count as one zone', () => {
    assertWaves(nodes({ a: 10, b: 3, c: 1, '': 4 }), 4);
    assertWaves(nodes({ a: 17, b: 2 }), 5);
    assertWaves(nodes({ a: 100, b: 100 }), 20);
    assertWaves(nodes({ a: 7, b: 6, c: 7 }), 2);
  });
  test('one zone: plain batches', () => {
    const waves = assertWaves(nodes({ '': 10 }), 4);
    assert.deepEqual(waves.map((w) => w.length), [4, 4, 2]);
  });
  test('property: random zones and sizes', () => {
    let seed = 7;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    for (let k = 0; k < 200; k++) {
      const spec: Record<string, number> = {};
      for (let z = 0, zs = 1 + rnd(5); z < zs; z++) spec[`z${z}`] = 1 + rnd(30);
      assertWaves(nodes(spec), 1 + rnd(25));
    }
  });
  test('refuses a wave size below one', () => assert.throws(() => planWaves([], 0), /wave size/));
});
