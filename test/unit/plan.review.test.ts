/**
 * Review output: distribution patches as unified diffs in `plan -o markdown` (a small line diff of our own), and
 * every resume hint naming the plan file.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { lineEdits, unifiedDiff } from '../../src/plan/diff.ts';
import { withPlanPath } from '../../src/plan/render.ts';
import { run } from './run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KOPS = join(ROOT, 'examples/kops-tailscale');
const KUBEADM = join(ROOT, 'examples/kubeadm-exhausted');

/** Apply a unified diff to `before` (hunks in order), as patch(1) would. */
function applyDiff(before: string, diff: string): string {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let pos = 0;
  const lines = diff.split('\n').slice(2);
  for (let k = 0; k < lines.length; k++) {
    const h = lines[k]!.match(/^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/);
    if (!h) continue;
    const len = h[2] === undefined ? 1 : Number(h[2]);
    const start = len === 0 ? Number(h[1]) : Number(h[1]) - 1;
    while (pos < start) out.push(a[pos++]!);
    for (k++; k < lines.length && /^[ +-]/.test(lines[k]!); k++) {
      const l = lines[k]!;
      if (l[0] === ' ') { assert.equal(a[pos], l.slice(1), 'context matches'); out.push(a[pos++]!); }
      else if (l[0] === '-') { assert.equal(a[pos], l.slice(1), 'removed line matches'); pos++; }
      else out.push(l.slice(1));
    }
    k--;
  }
  while (pos < a.length) out.push(a[pos++]!);
  return out.length ? `${out.join('\n')}\n` : '';
}

describe('unified diff', () => {
  it('matches diff -u on hand-picked cases', { skip: spawnSync('diff', ['--version']).status !== 0 && 'no diff(1)' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-diff-'));
    const cases: Array<[string, string]> = [
      ['a\nb\nc\n', 'a\nx\nc\n'],
      ['', 'x\ny\n'],
      ['x\ny\n', ''],
      [Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n') + '\n', Array.from({ length: 20 }, (_, i) => (i === 2 || i === 17 ? `L${i}` : `l${i}`)).join('\n') + '\n'],
      ['    - --service-cluster-ip-range=10.96.0.0/12\n    - --tls-cert-file=x\n', '    - --service-cluster-ip-range=10.96.0.0/12,10.100.0.0/16\n    - --tls-cert-file=x\n'],
      ['a\nb\n', 'b\na\n'],
    ];
    for (const [x, y] of cases) {
      writeFileSync(join(dir, 'a'), x);
      writeFileSync(join(dir, 'b'), y);
      const ref = spawnSync('diff', ['-u', '--label', 'before', '--label', 'after', join(dir, 'a'), join(dir, 'b')], { encoding: 'utf8' }).stdout;
      assert.equal(unifiedDiff(x, y), ref, JSON.stringify([x, y]));
    }
  });

  it('equal texts: no diff', () => {
    assert.equal(unifiedDiff('a\nb\n', 'a\nb\n'), '');
  });

  it('applying the diff to before gives after; kept lines are a common subsequence of the longest length', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'spec:', '  x: 1'), { maxLength: 30 }).map((l) => (l.length ? `${l.join('\n')}\n` : ''));
    fc.assert(fc.property(text, text, (x, y) => {
      assert.equal(applyDiff(x, unifiedDiff(x, y, { context: 1 })), y);
      assert.equal(applyDiff(x, unifiedDiff(x, y)), y);
      const a = x === '' ? [] : x.slice(0, -1).split('\n');
      const b = y === '' ? [] : y.slice(0, -1).split('\n');
      const kept = lineEdits(a, b).filter((o) => o.kind === ' ').length;
      // the LCS length by a plain DP
      const d = Array.from({ length: a.length + 1 }, () => Array<number>(b.length + 1).fill(0));
      for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) d[i]![j] = a[i - 1] === b[j - 1] ? d[i - 1]![j - 1]! + 1 : Math.max(d[i - 1]![j]!, d[i]![j - 1]!);
      assert.equal(kept, d[a.length]![b.length]!);
    }), { numRuns: 300 });
  });
});

describe('plan -o markdown', () => {
  it('shows each patch as a diff block, not as separate before/after YAML', async () => {
    for (const args of [['--service-cidr', '100.32.0.0/15', '-f', KOPS], ['--pod-cidr', '10.0.0.0/14', '--ipam', 'node', '-f', KUBEADM]]) {
      const r = await run(['plan', ...args, '-o', 'markdown']);
      assert.ok(r.code === 0 || r.code === 1, r.err);
      const patches = r.out.match(/^\*\*Patch `[^`]+`\*\*/gm) ?? [];
      assert.ok(patches.length > 0, `${args.join(' ')}: patches`);
      const diffs = r.out.match(/^```diff\n--- .*\(before\)\n\+\+\+ .*\(after\)\n@@ -\d+(,\d+)? \+\d+(,\d+)? @@\n/gm) ?? [];
      assert.equal(diffs.length, patches.length, `${args.join(' ')}: one diff per patch`);
      assert.doesNotMatch(r.out, /^Before:$/m);
      assert.doesNotMatch(r.out, /^```yaml$/m);
      assert.match(r.out, /^[-+] /m);
    }
  });

  it('every resume hint in a gate names the plan file', async () => {
    const r = await run(['plan', '--service-cidr', '100.32.0.0/15', '-f', KOPS, '-o', 'markdown']);
    const hints = r.out.match(/kube-renumber (resume|status)[^`\n]*/g) ?? [];
    assert.ok(hints.length > 0);
    for (const h of hints) assert.match(h, /^kube-renumber (resume|status) PLAN\.yaml\b/, h);
    assert.match(r.out, /`kube-renumber rollback PLAN\.yaml`/);
  });

  it('withPlanPath puts the path after each command, quoted for a shell where needed', () => {
    assert.equal(withPlanPath('kube-renumber resume', 'plan.yaml'), 'kube-renumber resume plan.yaml');
    assert.equal(withPlanPath('kube-renumber resume --ack-gate kcm-pod-cidr (when ...)', 'p/plan.yaml'), 'kube-renumber resume p/plan.yaml --ack-gate kcm-pod-cidr (when ...)');
    assert.equal(withPlanPath('fix them, then kube-renumber resume', 'my plan.yaml'), "fix them, then kube-renumber resume 'my plan.yaml'");
    assert.equal(withPlanPath('see kube-renumber status)', 'a.yaml'), 'see kube-renumber status a.yaml)');
    assert.equal(withPlanPath('Lease kube-system/kube-renumber resume', 'a.yaml'), 'Lease kube-system/kube-renumber resume');
  });
});
