// docs/walkthrough.md is what a new run of its commands prints: scripts/walkthrough.ts runs every command of the
// page on a testbed of its own (up, populate, inspect, suggest, plan, apply through each gate, verify, a second
// run rolled back) and the page must equal its output, stand-ins for ports, times and ids included. A page left
// behind by a change of the CLI's output fails here; `npm run walkthrough` writes it again.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './pod-helpers.ts';

install();

describe('docs/walkthrough.md', () => {
  test('equals the output of a new run of its commands', { timeout: 20 * 60_000 }, () => {
    const t = Date.now();
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'walkthrough.ts'), '--check'], { cwd: ROOT, encoding: 'utf8', timeout: 19 * 60_000 });
    assert.equal(r.status, 0, r.stderr.slice(-4000));
    assert.match(r.stderr, /docs\/walkthrough\.md is up to date/);
    process.stderr.write(`# walkthrough: ${Date.now() - t} ms\n`);
  });
});
