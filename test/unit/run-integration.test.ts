// test/run-integration.ts: the integration files' order and the scheduler that keeps the heavy ones apart.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HEAVY, orderedFiles, schedule, WAITS_FOR } from '../run-integration.ts';
import { BACKGROUND_BUILDS, BACKGROUND_ORDER, backgroundBuilds } from '../testbed/background.ts';

describe('integration runner', () => {
  test('the order: the heavy files first (longest first), every other file in name order', () => {
    const files = orderedFiles().map((f) => f.replace(/^test\/integration\//, '').replace(/\.test\.ts$/, ''));
    const heavy = HEAVY.filter((n) => files.includes(n));
    assert.ok(heavy.length >= 4, `heavy files found: ${heavy.join(', ')}`);
    assert.deepEqual(files.slice(0, heavy.length), heavy);
    const rest = files.slice(heavy.length);
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

  test('schedule: a file that is not ready waits while the others run, and starts once it is (looked at again every pollMs)', async () => {
    let built = false;
    setTimeout(() => { built = true; }, 60);
    const started: string[] = [];
    const t0 = Date.now();
    let startedAt = -1;
    await schedule(['needs-build', 'a', 'b'], 3, 2, () => false, async (f) => {
      started.push(f);
      if (f === 'needs-build') startedAt = Date.now() - t0;
      await new Promise((r) => setTimeout(r, 5));
    }, (f) => f !== 'needs-build' || built, 10);
    assert.deepEqual(started, ['a', 'b', 'needs-build']);
    assert.ok(startedAt >= 60, `started at ${startedAt} ms, before its build was done`);
  });

  test('WAITS_FOR names every file that needs a background build, and only those (read off each file\'s source)', () => {
    const dir = join(import.meta.dirname, '..', 'integration');
    const markers: Record<keyof typeof BACKGROUND_BUILDS, RegExp> = {
      dataplane: /from '\.\.\/testbed\/(dataplane|zero-downtime)\.ts'/,
      cilium: /podIPAM: 'cilium'|from '\.\.\/testbed\/cilium-build\.ts'/,
      metallb: /metallb/i,
      oldest: /OLDEST_VERSION/,
      'calico-dataplane': /from '\.\.\/testbed\/calico-node\.ts'/,
    };
    const found: Record<string, string> = {};
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.test.ts'))) {
      const src = readFileSync(join(dir, f), 'utf8');
      for (const b of BACKGROUND_ORDER) if (markers[b].test(src)) found[f.slice(0, -'.test.ts'.length)] = b;
    }
    assert.deepEqual(Object.entries(found).sort(), Object.entries(WAITS_FOR).sort());
  });

  test('npm test leaves the data plane, cilium-operator and MetalLB to the background; only test:full adds the oldest control plane and calico-node', () => {
    assert.deepEqual(backgroundBuilds(false), ['dataplane', 'cilium', 'metallb']);
    assert.deepEqual(backgroundBuilds(true), ['dataplane', 'cilium', 'metallb', 'oldest', 'calico-dataplane']);
  });

  test('schedule: an empty list ends at once', async () => {
    let ran = 0;
    await schedule([], 3, 2, () => false, async () => { ran++; });
    assert.equal(ran, 0);
  });
});
