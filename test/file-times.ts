// A node:test reporter that prints, once the run ends, each test file's time (the sum of its top-level tests' and
// suites' durations, which run one after another in a file; its process start and imports not counted) and its
// result, slowest first, then the run's wall time: where a suite's minutes go, at the end of its output where a CI
// log's tail shows it. A test declared by a helper module counts under that module's name. Used next to the spec
// reporter by `npm run test:unit` and `npm run test:integration` (package.json).

import { relative } from 'node:path';

interface Row { file: string; ms: number; pass: number; fail: number }

interface Event { type: string; data?: { file?: string; nesting?: number; details?: { duration_ms?: number } } }

export default async function* fileTimes(source: AsyncIterable<Event>): AsyncGenerator<string> {
  const rows = new Map<string, Row>();
  const t0 = Date.now();
  const row = (file: string): Row => {
    let r = rows.get(file);
    if (!r) rows.set(file, r = { file, ms: 0, pass: 0, fail: 0 });
    return r;
  };
  for await (const ev of source) {
    const file = ev.data?.file;
    if (!file) continue;
    if ((ev.type === 'test:pass' || ev.type === 'test:fail') && ev.data?.nesting === 0) {
      const r = row(file);
      r.ms += ev.data?.details?.duration_ms ?? 0;
      if (ev.type === 'test:pass') r.pass++; else r.fail++;
    }
  }
  const list = [...rows.values()].sort((a, b) => b.ms - a.ms);
  const secs = (ms: number) => `${(ms / 1000).toFixed(0)} s`.padStart(7);
  let out = `\n# time per test file (${list.length} files; the run's wall time ${secs(Date.now() - t0).trim()})\n`;
  for (const r of list) out += `# ${secs(r.ms)}  ${r.fail ? 'FAIL' : 'ok  '}  ${relative(process.cwd(), r.file)}\n`;
  yield out;
}
