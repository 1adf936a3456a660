// Runs the integration files (test/integration/**/*.test.ts) with node's test runner, four at a time, in an order
// that packs them: the longest first (so none of them starts last and runs alone), the files that wait for a build
// `build-all --oldest-in-background` is still doing last (MetalLB's controller, the oldest control plane), the rest
// in between in name order. Measured: two at a time, the suite used about a third of the two cores (it waits on
// the control plane more than it computes: 13 % user and 20 % system over ten minutes), so four at a time costs each
// file little and halves the wall time (docs/testbed.md, Time budget). A file missing from these lists still runs; one named here that no longer exists is skipped.
//
//   node test/run-integration.ts [--concurrency N] [FILE …]   FILEs: run only these, in this order

import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import fileTimes from './file-times.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIR = join(ROOT, 'test', 'integration');

/** The longest files, longest first (their times two at a time on 2 cores, docs/testbed.md Time budget). */
export const FIRST = [
  'pod-migration-calico', 'pod-migration-node', 'k3s-rke2-migration', 'zero-downtime', 'service-migration',
  'service-crash', 'limiter-faults', 'pod-node-waves-crash', 'pod-crash-node', 'pod-migration-node-dual', 'walkthrough',
  'fleet', 'faults', 'testbed-workloads', 'rollback-crash', 'service-restart-crash', 'lock-concurrent',
];
/** Files that wait for what `build-all --oldest-in-background` builds while the suite runs, in the order it builds it. */
export const LAST = ['load-balancers-metallb', 'seed-000'];

/** Every integration test file, relative to the repository, in the order above. */
export function orderedFiles(dir = DIR): string[] {
  const all = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => f.slice(0, -'.test.ts'.length)).sort();
  const named = new Set([...FIRST, ...LAST]);
  const pick = (names: readonly string[]) => names.filter((n) => all.includes(n));
  return [...pick(FIRST), ...all.filter((n) => !named.has(n)), ...pick(LAST)].map((n) => relative(ROOT, join(dir, `${n}.test.ts`)));
}

function main(argv: string[]): number | undefined {
  let concurrency = 4;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const m = /^--concurrency(?:=(.*))?$/.exec(a);
    if (m) {
      const v = m[1] ?? argv[++i];
      concurrency = Number(v);
      if (!Number.isInteger(concurrency) || concurrency < 1) { process.stderr.write(`error: --concurrency takes a whole number from 1, not ${v}\n`); return 2; }
    } else if (a.startsWith('-')) {
      process.stderr.write(`error: unknown flag ${a} (usage: node test/run-integration.ts [--concurrency N] [FILE …])\n`);
      return 2;
    } else {
      if (!existsSync(join(ROOT, a))) { process.stderr.write(`error: no such test file: ${a}\n`); return 2; }
      files.push(a);
    }
  }
  const list = files.length > 0 ? files : orderedFiles();
  const cache = process.env.KUBE_RENUMBER_CACHE || join(process.env.HOME ?? '/root', '.cache', 'kube-renumber');
  process.env.NODE_COMPILE_CACHE = join(cache, 'node-compile-cache');
  // run() keeps the files' order (`node --test FILE…` sorts them); each file in a process of its own, as node --test
  const stream = run({ files: list.map((f) => join(ROOT, f)), concurrency, cwd: ROOT, execArgv: ['--import', './src/pod-paths/registry.ts'] });
  stream.on('test:fail', (ev: { nesting?: number }) => { if (ev.nesting === 0) process.exitCode = 1; });
  // the events go to both reporters, as `node --test` with two --test-reporter flags (spec on stdout, times on stderr)
  const toSpec = new PassThrough({ objectMode: true });
  const toTimes = new PassThrough({ objectMode: true });
  stream.on('data', (ev) => { toSpec.write(ev); toTimes.write(ev); });
  stream.on('end', () => { toSpec.end(); toTimes.end(); });
  toSpec.compose(spec).pipe(process.stdout);
  (toTimes.compose(fileTimes as (s: AsyncIterable<never>) => AsyncGenerator<string>) as unknown as NodeJS.ReadableStream).pipe(process.stderr);
  return undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const code = main(process.argv.slice(2));
  if (code !== undefined) process.exitCode = code;
}
