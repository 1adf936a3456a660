/**
 * One source for what used to be written twice (issue 50): the kOps nonMasqueradeCIDR checks live in the kOps
 * platform's folder only; every kind a step can back up is restorable from one kind table; shell completion
 * offers what the registries and the flags' parsers hold.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? tsFiles(p) : n.endsWith('.ts') ? [p] : [];
  });
}

/** The code of a TypeScript file without its comments (good enough for identifiers: no comment markers in strings here). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('the kOps nonMasqueradeCIDR is checked in the kOps folder only', () => {
  const KOPS_DIR = join(ROOT, 'src', 'platforms', 'kops');
  /** A kOps Cluster spec's nonMasqueradeCIDR read from the snapshot, or the id of a check of it. */
  const NAMES_IT = /kops\??\.nonMasqueradeCIDR|'pod-kops-nonmasquerade'|'kops-pod-non-masquerade'/;

  it('no code outside src/platforms/kops/ reads the snapshot\'s nonMasqueradeCIDR or writes a check of it', () => {
    const hits = tsFiles(join(ROOT, 'src')).filter((f) => !f.startsWith(KOPS_DIR) && NAMES_IT.test(code(readFileSync(f, 'utf8')))).map((f) => relative(ROOT, f));
    assert.deepEqual(hits, []);
  });

  it('the check can fail: it sees the reads in code, not in a comment', () => {
    assert.match(code('const x = snap.kops?.nonMasqueradeCIDR; // y'), NAMES_IT);
    assert.match(code("return { id: 'pod-kops-nonmasquerade' };"), NAMES_IT);
    assert.doesNotMatch(code('/** snap.kops.nonMasqueradeCIDR */\nconst x = 1; // kops.nonMasqueradeCIDR'), NAMES_IT);
  });

  it('both Pod checks come from the kOps planner', () => {
    const text = code(readFileSync(join(KOPS_DIR, 'plan.ts'), 'utf8'));
    for (const id of ['pod-kops-nonmasquerade', 'kops-pod-non-masquerade']) assert.match(text, new RegExp(`'${id}'`));
  });
});
