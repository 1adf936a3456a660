/**
 * A unified diff of two texts, line by line (longest common subsequence; the texts are the small before/after
 * snippets of a distribution patch): `--- a` / `+++ b` headers, then hunks with `context` unchanged lines around
 * each change, as `diff -u` prints them.
 */
type Op = { kind: ' ' | '-' | '+'; line: string; a: number; b: number };

function lines(text: string): string[] {
  if (text === '') return [];
  const l = text.split('\n');
  if (l.at(-1) === '') l.pop();
  return l;
}

/** The edit script turning `a` into `b`: kept, removed and added lines with their 0-based positions. */
export function lineEdits(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..]
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { ops.push({ kind: ' ', line: a[i]!, a: i, b: j }); i++; j++; }
    else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) { ops.push({ kind: '-', line: a[i]!, a: i, b: j }); i++; }
    else { ops.push({ kind: '+', line: b[j]!, a: i, b: j }); j++; }
  }
  // removals before additions within a run of changes, as diff -u shows them
  for (let s = 0; s < ops.length;) {
    if (ops[s]!.kind === ' ') { s++; continue; }
    let e = s;
    while (e < ops.length && ops[e]!.kind !== ' ') e++;
    const run = ops.slice(s, e);
    ops.splice(s, e - s, ...run.filter((o) => o.kind === '-'), ...run.filter((o) => o.kind === '+'));
    s = e;
  }
  return ops;
}

/** `diff -u` of `before` and `after`; "" when they are equal. */
export function unifiedDiff(before: string, after: string, opts: { from?: string; to?: string; context?: number } = {}): string {
  const a = lines(before);
  const b = lines(after);
  const ops = lineEdits(a, b);
  const ctx = opts.context ?? 3;
  const changed = ops.map((o, k) => (o.kind !== ' ' ? k : -1)).filter((k) => k >= 0);
  if (changed.length === 0) return '';
  let out = `--- ${opts.from ?? 'before'}\n+++ ${opts.to ?? 'after'}\n`;
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - ctx);
    let end = Math.min(ops.length, changed[k]! + ctx + 1);
    while (k + 1 < changed.length && changed[k + 1]! - ctx <= end) { k++; end = Math.min(ops.length, changed[k]! + ctx + 1); }
    k++;
    const hunk = ops.slice(start, end);
    const aLen = hunk.filter((o) => o.kind !== '+').length;
    const bLen = hunk.filter((o) => o.kind !== '-').length;
    // diff -u: the start line of an empty side is the line before it
    const aStart = aLen === 0 ? hunk[0]!.a : hunk[0]!.a + 1;
    const bStart = bLen === 0 ? hunk[0]!.b : hunk[0]!.b + 1;
    out += `@@ -${aStart}${aLen === 1 ? '' : `,${aLen}`} +${bStart}${bLen === 1 ? '' : `,${bLen}`} @@\n`;
    out += hunk.map((o) => `${o.kind}${o.line}`).join('\n') + '\n';
  }
  return out;
}
