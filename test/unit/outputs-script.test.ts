// scripts/outputs.ts: the before/after check of a refactor. Its comparison must see a change of exit code, stdout or
// stderr in any case, and skip an input one tree does not have; its cases cover every command it claims to.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cases, compare, inputs } from '../../scripts/outputs.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

function tree(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'kr-outputs-test-'));
  for (const [p, s] of Object.entries(files)) {
    mkdirSync(join(d, p, '..'), { recursive: true });
    writeFileSync(join(d, p), s);
  }
  return d;
}

describe('scripts/outputs.ts', () => {
  const cs = [{ name: 'inspect', args: ['inspect', '-f', '$D'] }, { name: 'plan', args: ['plan', '-f', '$D'] }];
  const same = { 'examples_a/inspect.code': '0', 'examples_a/inspect.out': 'x\ny\n', 'examples_a/inspect.err': '',
    'examples_a/plan.code': '1', 'examples_a/plan.out': '', 'examples_a/plan.err': 'error: no\n' };

  it('identical trees: every case the same', () => {
    const a = tree(same), b = tree(same);
    try { assert.deepEqual(compare(a, b, ['examples/a'], cs), { differ: [], same: 2, skipped: [] }); }
    finally { rmSync(a, { recursive: true }); rmSync(b, { recursive: true }); }
  });

  it('a changed line of stdout, a changed exit code, a stream only one tree wrote: each case named with its first difference', () => {
    const a = tree(same);
    const b = tree({ ...same, 'examples_a/inspect.out': 'x\nz\n', 'examples_a/plan.code': '0' });
    rmSync(join(b, 'examples_a/plan.err'));
    try {
      const r = compare(a, b, ['examples/a'], cs);
      assert.equal(r.same, 0);
      assert.deepEqual(r.differ, [
        'examples/a inspect: out line 2: "y" → "z"',
        'examples/a plan: code line 1: "1" → "0"; err only in first',
      ]);
    } finally { rmSync(a, { recursive: true }); rmSync(b, { recursive: true }); }
  });

  it('an input missing from one tree is skipped, not counted as the same', () => {
    const a = tree(same), b = tree({ 'examples_a/MISSING': '' });
    try { assert.deepEqual(compare(a, b, ['examples/a'], cs), { differ: [], same: 0, skipped: ['examples/a'] }); }
    finally { rmSync(a, { recursive: true }); rmSync(b, { recursive: true }); }
  });

  it('runs every example and platform fixture through inspect, suggest, plan in each output and rbac of each plan', () => {
    const ins = inputs(ROOT);
    assert.ok(ins.includes('examples/kops-tailscale') && ins.includes('test/fixtures/platforms/capi'), ins.join(' '));
    const names = cases().map((c) => c.name);
    for (const n of ['inspect', 'inspect.json', 'suggest-services', 'suggest-pods', 'plan-service-0.yaml', 'plan-pod-0.md', 'plan-both.rbac', 'plan-service-0.html']) {
      assert.ok(names.includes(n), n);
    }
    for (const c of cases().filter((x) => x.args.includes('$P'))) {
      assert.ok(cases().some((p) => p.plan === c.plan && p.args.includes('yaml')), `${c.name} reads a plan written as yaml`);
    }
  });
});
