// The version matrix: `npm run matrix -- [--versions 1.29,1.31,...] [--paths service,node,calico]`.
//
// For each version (a minor, resolved through MATRIX_VERSIONS, or a full vX.Y.Z): builds the testbed of that version
// from the k8s.io/kubernetes module (test/testbed/build.ts; one Go build cache shared by every build of the run,
// removed at its end), then runs each path of test/matrix/paths.test.ts on it in its own process, and records the
// result, the time and, for a failure, the first failing test and its message (the apiserver's own words where it
// refused something). Results are merged into test/matrix/results.json (one entry per version and path, with the
// date and the machine's load); from it the runner writes docs/compatibility.md and src/plan/compatibility-data.ts,
// which the planner reads to refuse a version/path pair that failed.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuilt, isBuilt, readStamp, testbedRoot } from '../testbed/build.ts';
import { serviceCIDRApiOf } from '../testbed/cluster.ts';
import { failureReason, MATRIX_PATHS, MATRIX_VERSIONS, renderCompatibilityData, renderCompatibilityPage, withReadmeTable, type MatrixPath, type MatrixResult, type MatrixResults } from './results.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RESULTS = join(ROOT, 'test/matrix/results.json');

function resolveVersion(v: string): string {
  if (/^v?\d+\.\d+\.\d+(-[\w.]+)?$/.test(v)) return v.startsWith('v') ? v : `v${v}`;
  const full = MATRIX_VERSIONS[v.replace(/^v/, '')];
  if (!full) throw new Error(`unknown version ${v}: give a minor of ${Object.keys(MATRIX_VERSIONS).join(', ')} or a full vX.Y.Z`);
  return full;
}

/** Runs one path on one version; the junit report gives the first failing test. */
function runPath(version: string, path: MatrixPath): Promise<MatrixResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kr-matrix-'));
  const junit = join(dir, 'junit.xml');
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1',
      '--test-reporter=spec', '--test-reporter-destination=stderr', '--test-reporter=junit', `--test-reporter-destination=${junit}`,
      'test/matrix/paths.test.ts'], {
      cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, KUBE_RENUMBER_MATRIX_VERSION: version, KUBE_RENUMBER_MATRIX_PATHS: path },
    });
    child.on('exit', (code) => {
      const seconds = Math.round((Date.now() - t0) / 1000);
      const xml = existsSync(junit) ? readFileSync(junit, 'utf8') : '';
      rmSync(dir, { recursive: true, force: true });
      const tests = [...xml.matchAll(/<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)];
      const failed = tests.find((m) => /<failure/.test(m[3] ?? ''));
      const passed = tests.filter((m) => !/<failure|<skipped/.test(m[3] ?? '')).length;
      const base = { version, path, seconds, tests: tests.length, passed, date: new Date().toISOString().slice(0, 10), loadAverage: loadavg().slice(0, 2).map((x) => Math.round(x * 100) / 100) };
      if (code === 0 && !failed && tests.length > 0) return resolve({ ...base, result: 'pass' });
      const message = failed ? decode(/<failure[^>]*message="([^"]*)"/.exec(failed[3] ?? '')?.[1] ?? (failed[3] ?? '').replace(/<[^>]+>/g, ' ')) : `exit ${code}`;
      resolve({ ...base, result: 'fail', failedTest: failed ? decode(failed[1]!) : undefined, reason: failureReason(message) });
    });
  });
}

/** The modules the Go proxy refused in a failed build's `go get`, as its own words say. */
function refusedModules(version: string): string | undefined {
  const log = join(testbedRoot(), version, 'go-get-kubernetes.log');
  if (!existsSync(log)) return undefined;
  const text = readFileSync(log, 'utf8');
  const refused = [...new Set([...text.matchAll(/(k8s\.io\/[\w.-]+@v[\w.-]+): reading \S+ (\d{3} [\w ]+)/g)].map((m) => `${m[1]} (${m[2]!.trim()})`))];
  const toolchain = /go: (go\.mod requires go >= [\d.]+[^\n]*)/.exec(text)?.[1];
  if (refused.length > 0) return `the Go module proxy refuses ${refused.join(', ')}: "${/server response: ([^\n]+)/.exec(text)?.[1]?.trim() ?? ''}"`;
  return toolchain;
}

const decode = (s: string) => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#10;/g, ' ').replace(/&amp;/g, '&');

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { versions: { type: 'string' }, paths: { type: 'string' }, 'render-only': { type: 'boolean' } } });
  const results: MatrixResults = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : { entries: [] };
  if (!values['render-only']) {
    const versions = (values.versions ?? Object.keys(MATRIX_VERSIONS).join(',')).split(',').map((v) => resolveVersion(v.trim()));
    const paths = (values.paths ?? MATRIX_PATHS.join(',')).split(',').map((p) => p.trim()) as MatrixPath[];
    for (const p of paths) if (!MATRIX_PATHS.includes(p)) throw new Error(`unknown path ${p}: ${MATRIX_PATHS.join(', ')}`);
    // what is about to run again no longer counts: the planner would refuse a pair that failed before (its data is
    // made from these results), and a run of the pair must meet the planner as a user would without that verdict
    results.entries = results.entries.filter((e) => !(versions.includes(e.version) && paths.includes(e.path)));
    writeFileSync(join(ROOT, 'src/plan/compatibility-data.ts'), renderCompatibilityData(results));
    // every build of this run shares one Go build cache: kept until the last build, removed at the end
    process.env.KUBE_RENUMBER_TESTBED_KEEP_GOCACHE = '1';
    let built = false;
    try {
      for (const version of versions) {
        process.stderr.write(`[matrix] ${version}: build\n`);
        const t0 = Date.now();
        let buildError: string | undefined;
        try {
          built ||= !isBuilt(version);
          await ensureBuilt({ version, log: (m) => process.stderr.write(`[matrix] ${m}\n`) });
        } catch (e) {
          buildError = refusedModules(version) ?? (e instanceof Error ? e.message : String(e)).split('\n').filter(Boolean).slice(-6).join(' | ');
        }
        const buildSeconds = readStamp(version)?.seconds ?? Math.round((Date.now() - t0) / 1000);
        for (const path of paths) {
          const r: MatrixResult = buildError
            ? { version, path, result: 'not-built', seconds: 0, tests: 0, passed: 0, date: new Date().toISOString().slice(0, 10), loadAverage: loadavg().slice(0, 2), reason: buildError }
            : await runPath(version, path);
          r.buildSeconds = buildSeconds;
          r.serviceCIDRApi = serviceCIDRApiOf(version)?.version;
          process.stderr.write(`[matrix] ${version} ${path}: ${r.result} in ${r.seconds}s${r.reason ? ` (${r.reason.slice(0, 200)})` : ''}\n`);
          results.entries = results.entries.filter((e) => !(e.version === version && e.path === path));
          results.entries.push(r);
          writeFileSync(RESULTS, JSON.stringify(results, null, 2) + '\n');
        }
      }
    } finally {
      const gocache = join(testbedRoot(), 'go', 'build-cache');
      if (built && process.env.KUBE_RENUMBER_MATRIX_KEEP_GOCACHE !== '1') rmSync(gocache, { recursive: true, force: true });
    }
  }
  writeFileSync(join(ROOT, 'docs/compatibility.md'), renderCompatibilityPage(results));
  writeFileSync(join(ROOT, 'src/plan/compatibility-data.ts'), renderCompatibilityData(results));
  writeFileSync(join(ROOT, 'README.md'), withReadmeTable(readFileSync(join(ROOT, 'README.md'), 'utf8'), results));
  const failed = results.entries.filter((e) => e.result === 'fail');
  process.stdout.write(JSON.stringify({ entries: results.entries.length, failed: failed.map((e) => `${e.version}/${e.path}`) }) + '\n');
  return 0;
}

main().then((c) => process.exit(c), (e) => { process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`); process.exit(1); });
