// Runs the integration files (test/integration/**/*.test.ts) with node's test runner: three at a time, but at most two
// of the HEAVY ones at once, and a file that needs a build `build-all --background` is still doing (WAITS_FOR: the data
// plane, cilium-operator, MetalLB's controller, the oldest control plane) only once that build is done: the others run
// meanwhile. Measured on 2 cores: two at a time, the suite used about a third of the cores on average (13 % user, 20 %
// system over ten minutes: it waits on the control plane more than it computes), but a file that populates hundreds of
// pods saturates them while it does; four at a time with the four heaviest started together, the 533-pod Calico populate
// of pod-migration-calico.test.ts timed out (300 s) and so did k3s-rke2-migration.test.ts. Two heavy files at once is what
// the suite always passed with. Each file runs in a process of its own (node's run(), one call per file), its events go
// to the spec reporter (stdout) and the per-file times (stderr), and the last line counts the tests: "integration: N
// passed, N failed, N skipped". A file missing from these lists runs in name order; one named here that no longer exists
// is skipped.
//
//   node test/run-integration.ts [--concurrency N] [FILE …]   FILEs: run only these, in this order

import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import fileTimes from './file-times.ts';
import { cacheRoot } from './testbed/build.ts';
import { BACKGROUND_BUILDS, pendingInBackground, type BackgroundBuild } from './testbed/background.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIR = join(ROOT, 'test', 'integration');

/** The files that load the cores most (20-node testbeds with hundreds of pods, several clusters, a data plane), longest first. */
export const HEAVY = [
  'pod-migration-calico', 'pod-migration-node', 'k3s-rke2-migration', 'zero-downtime', 'service-migration',
  'pod-migration-node-dual', 'fleet', 'testbed-workloads',
];
/**
 * Files that need a build `build-all --background` may still be doing when the suite starts (test/testbed/background.ts):
 * each starts once that build is done, or at once when nobody is building it (the file then builds it itself).
 */
export const WAITS_FOR: Readonly<Record<string, BackgroundBuild>> = {
  'zero-downtime': 'dataplane',
  dataplane: 'dataplane',
  'cilium-operator': 'cilium',
  'pod-migration-cilium': 'cilium',
  'load-balancers-metallb': 'metallb',
  'seed-000': 'oldest',
  'calico-felix': 'calico-dataplane',
};
/** Heavy files at once, whatever the concurrency. */
export const MAX_HEAVY = 2;

/** Every integration test file, relative to the repository: the heavy ones first (longest first), then the rest. */
export function orderedFiles(dir = DIR): string[] {
  const all = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => f.slice(0, -'.test.ts'.length)).sort();
  const heavy = HEAVY.filter((n) => all.includes(n));
  const rest = all.filter((n) => !HEAVY.includes(n));
  return [...heavy, ...rest].map((n) => relative(ROOT, join(dir, `${n}.test.ts`)));
}

const baseName = (file: string) => file.replace(/^.*\//, '').replace(/\.test\.ts$/, '');
const isHeavy = (file: string) => HEAVY.includes(baseName(file));
/** A file may start: it needs no build still running in the background. */
const isReady = (file: string) => {
  const b = WAITS_FOR[baseName(file)];
  return b === undefined || !pendingInBackground(b);
};

/**
 * Start `files` in order, `concurrency` at a time and at most `maxHeavy` heavy ones at once: a free slot takes the first
 * file that may start now (a heavy one waits while `maxHeavy` run, a file that is not `ready` waits for its build; the
 * files behind them go first). While a slot is free and only files that are not ready are left, it looks again every
 * `pollMs`.
 */
export async function schedule(files: readonly string[], concurrency: number, maxHeavy: number, heavy: (f: string) => boolean,
  runOne: (f: string) => Promise<void>, ready: (f: string) => boolean = () => true, pollMs = 2000): Promise<void> {
  const queue = [...files];
  let running = 0;
  let heavyRunning = 0;
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    const pump = () => {
      if (timer) { clearTimeout(timer); timer = undefined; }
      while (running < concurrency) {
        const i = queue.findIndex((f) => (!heavy(f) || heavyRunning < maxHeavy) && ready(f));
        if (i < 0) {
          if (queue.some((f) => !ready(f))) timer = setTimeout(pump, pollMs);
          break;
        }
        const f = queue.splice(i, 1)[0]!;
        const h = heavy(f);
        running++;
        if (h) heavyRunning++;
        void runOne(f).finally(() => {
          running--;
          if (h) heavyRunning--;
          pump();
        });
      }
      if (queue.length === 0 && running === 0) resolve();
    };
    pump();
  });
}

function main(argv: string[]): number | undefined {
  let concurrency = 3;
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
  process.env.NODE_COMPILE_CACHE = join(cacheRoot(), 'node-compile-cache');
  // the events of every file go to both reporters, as `node --test` with two --test-reporter flags (spec on stdout,
  // times on stderr); each run()'s own summary is left out: the counts below are the whole run's
  const toSpec = new PassThrough({ objectMode: true });
  const toTimes = new PassThrough({ objectMode: true });
  toSpec.compose(spec).pipe(process.stdout);
  (toTimes.compose(fileTimes as (s: AsyncIterable<never>) => AsyncGenerator<string>) as unknown as NodeJS.ReadableStream).pipe(process.stderr);
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const t0 = Date.now();
  const held = new Set<string>();
  void schedule(list, concurrency, MAX_HEAVY, isHeavy, (f) => new Promise<void>((resolve) => {
    // forceExit: a file whose tests are over ends even if something of it still holds the event loop (a poller a
    // failed scenario did not stop once kept a file's process alive for 15 minutes, and the suite with it); its
    // after() hooks have run by then, and the testbed's processes go with their owner (tbsup)
    const stream = run({ files: [join(ROOT, f)], concurrency: 1, cwd: ROOT, forceExit: true });
    stream.on('data', (ev: { type: string; data?: { nesting?: number; skip?: unknown; details?: { type?: string } } }) => {
      if (ev.type === 'test:summary') return;
      if ((ev.type === 'test:pass' || ev.type === 'test:fail') && ev.data?.details?.type !== 'suite') {
        if (ev.type === 'test:fail') counts.failed++; else if (ev.data?.skip !== undefined) counts.skipped++; else counts.passed++;
      }
      toSpec.write(ev);
      toTimes.write(ev);
    });
    stream.on('end', () => resolve());
  }), (f) => {
    const ok = isReady(f);
    if (!ok && !held.has(f)) {
      held.add(f);
      process.stderr.write(`[integration] ${f} waits for the background build of ${BACKGROUND_BUILDS[WAITS_FOR[baseName(f)]!].what}\n`);
    }
    return ok;
  }).then(() => {
    toSpec.end();
    toTimes.end();
    toTimes.once('end', () => {
      process.stdout.write(`\n# integration: ${list.length} files in ${Math.round((Date.now() - t0) / 1000)} s, ${concurrency} at a time (at most ${MAX_HEAVY} heavy)\n`);
      process.stdout.write(`integration: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
      if (counts.failed > 0) process.exitCode = 1;
    });
  });
  return undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const code = main(process.argv.slice(2));
  if (code !== undefined) process.exitCode = code;
}
