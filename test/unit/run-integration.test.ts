// test/run-integration.ts: the integration files' order and the scheduler that keeps the heavy ones apart.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HEAVY, LAST, orderedFiles, schedule } from '../run-integration.ts';

describe('integration runner', () => {
  test('the order: the heavy files first (longest first), every other file in name order, the build-waiting ones last', () => {
    const files = orderedFiles().map((f) => f.replace(/^test\/integration\//, '').replace(/\.test\.ts$/, ''));
    const heavy = HEAVY.filter((n) => files.includes(n));
    assert.ok(heavy.length >= 4, `heavy files found: ${heavy.join(', ')}`);
    assert.deepEqual(files.slice(0, heavy.length), heavy);
    assert.deepEqual(files.slice(-LAST.length), LAST);
    const rest = files.slice(heavy.length, -LAST.length);
    assert.deepEqual(rest, [...rest].sort());
    assert.equal(new Set(files).size, files.length, 'each file once');
  });

  test('schedule: never more than `concurrency` at once nor `maxHeavy` heavy ones; a waiting heavy file lets the next ones pass', async () => {
    const files = ['h1', 'h2', 'h3', 'a', 'b', 'c', 'd', 'last'];
    const heavy = (f: string) => f.startsWith('h');
    let running = 0;
    let heavyRunning = 0;
    let maxRunning = 0;
    let maxHeavy = 0;
    const started: string[] = [];
    await schedule(files, 3, 2, heavy, async (f) => {
      started.push(f);
      running++;
      if (heavy(f)) heavyRunning++;
      maxRunning = Math.max(maxRunning, running);
      maxHeavy = Math.max(maxHeavy, heavyRunning);
      await new Promise((r) => setTimeout(r, heavy(f) ? 40 : 10));
      running--;
      if (heavy(f)) heavyRunning--;
    });
    assert.equal(maxRunning, 3);
    assert.equal(maxHeavy, 2);
    assert.deepEqual(started.slice(0, 3), ['h1', 'h2', 'a'], 'the third slot takes a light file while two heavy ones run');
    assert.ok(['a', 'b', 'c', 'd'].every((f) => started.indexOf(f) < started.indexOf('last')), `the last file after every light one: ${started.join(' ')}`);
    assert.deepEqual([...started].sort(), [...files].sort(), 'every file ran once');
  });

  test('schedule: an empty list ends at once', async () => {
    let ran = 0;
    await schedule([], 3, 2, () => false, async () => { ran++; });
    assert.equal(ran, 0);
  });
});
