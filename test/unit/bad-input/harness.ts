/**
 * The bad-input corpus: each case runs the real CLI in a child process, in a fresh directory with its own empty
 * HOME (no kubeconfig, no config, no state), and must end with
 *  - the documented exit code (never 70),
 *  - exactly one line on stderr, starting with "error: ", and nothing on stdout,
 *  - no stack trace (no "    at " line) without -v,
 *  - none of the case's secrets in stdout or stderr, with or without -v (cases with secrets run twice),
 *  - nothing written: the case directory (HOME included) is byte-for-byte as it was.
 *
 * Paths in args, env values and file contents may use $D for the case directory. Files are written before the
 * run (mode 0600 unless given); directories listed in `dirs` are created.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { compileCacheEnv } from '../../child-env.ts';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ENTRY = fileURLToPath(new URL('./entry.ts', import.meta.url));

export interface BadInputCase {
  /** Unique within its file; shown by the test runner. */
  name: string;
  /** Arguments after the program name; $D is the case directory. */
  args: string[];
  /** The documented exit code. */
  code: number;
  /** A pattern the error line must match (after "error: "). */
  message?: RegExp;
  /** Files to create, relative to the case directory (string or bytes; $D is substituted in strings). */
  files?: Record<string, string | Buffer | { content: string | Buffer; mode: number }>;
  /** Directories to create (relative), e.g. an empty HOME/.kube. */
  dirs?: string[];
  /** Extra environment (HOME is the case's own home unless set here); $D is substituted. */
  env?: Record<string, string>;
  /** Standard input. */
  stdin?: string | Buffer;
  /** Strings that must never appear in any output; the case also runs with -v. */
  secrets?: string[];
  /** Kill the run after this many ms (default 20000): a hang is a failure. */
  timeoutMs?: number;
}

export interface RunResult { code: number | null; out: string; err: string; signal: NodeJS.Signals | null; timedOut: boolean }

function sub(s: string, dir: string): string { return s.replaceAll('$D', dir); }

/** Every path under dir with its type, mode, size and content hash-free fingerprint (content itself for files). */
function tree(dir: string): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (p: string, rel: string): void => {
    let st;
    try { st = lstatSync(p); } catch { return; }
    if (st.isDirectory()) {
      m.set(rel || '.', `d ${st.mode.toString(8)}`);
      let names: string[] = [];
      try { names = readdirSync(p).sort(); } catch { return; }
      for (const n of names) walk(join(p, n), rel ? `${rel}/${n}` : n);
    } else if (st.isFile()) {
      let content = '';
      try { content = readFileSync(p).toString('base64'); } catch { content = '<unreadable>'; }
      m.set(rel, `f ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${content}`);
    } else {
      m.set(rel, `o ${st.mode.toString(8)}`);
    }
  };
  walk(dir, '');
  return m;
}

/** The CLI from its sources in a child process: at CPU priority `nice` when given (> 0), killed after `timeoutMs` when given. */
export function runCli(args: string[], opts: { cwd?: string; env: NodeJS.ProcessEnv; stdin?: string | Buffer; timeoutMs?: number; nice?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, ENTRY, ...args];
    const [cmd, ...rest] = opts.nice ? ['nice', '-n', String(opts.nice), ...argv] : argv;
    const child = spawn(cmd!, rest, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, opts.timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, out, err, signal, timedOut }); });
    child.stdin.on('error', () => { /* the CLI may exit before reading stdin */ });
    child.stdin.end(opts.stdin ?? '');
  });
}

function baseEnv(dir: string): NodeJS.ProcessEnv {
  return { HOME: join(dir, 'home'), PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...compileCacheEnv() };
}

/** Check one run against the case. Returns the failures as text (empty: the run is right). */
export function judge(c: BadInputCase, r: RunResult, verbose: boolean): string[] {
  const bad: string[] = [];
  if (r.timedOut) bad.push(`hung: killed after ${c.timeoutMs ?? 20000} ms`);
  if (r.code === 70) bad.push('exit 70 (internal error)');
  if (r.code !== c.code) bad.push(`exit ${r.code} (signal ${r.signal ?? 'none'}), expected ${c.code}`);
  if (r.out !== '') bad.push(`stdout not empty: ${JSON.stringify(r.out.slice(0, 300))}`);
  const lines = r.err.split('\n').filter((l) => l !== '');
  if (!verbose) {
    if (lines.length !== 1) bad.push(`stderr has ${lines.length} lines, expected one: ${JSON.stringify(r.err.slice(0, 600))}`);
    if (/^\s+at /m.test(r.err)) bad.push('stack trace without -v');
  }
  const errorLines = lines.filter((l) => l.startsWith('error: '));
  if (errorLines.length !== 1) bad.push(`${errorLines.length} "error: " lines, expected one: ${JSON.stringify(r.err.slice(0, 600))}`);
  else if (c.message && !c.message.test(errorLines[0]!.slice('error: '.length))) bad.push(`error line ${JSON.stringify(errorLines[0])} does not match ${c.message}`);
  for (const s of c.secrets ?? []) {
    if (r.out.includes(s) || r.err.includes(s)) bad.push(`secret ${JSON.stringify(s)} printed${verbose ? ' (with -v)' : ''}`);
  }
  return bad;
}

/** Prepare a case directory, run the case (and again with -v when it has secrets), and return what went wrong. */
export async function runCase(c: BadInputCase): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kr-bad-'));
  try {
    mkdirSync(join(dir, 'home'), { recursive: true });
    for (const d of c.dirs ?? []) mkdirSync(join(dir, d), { recursive: true });
    for (const [rel, spec] of Object.entries(c.files ?? {})) {
      const p = join(dir, rel);
      mkdirSync(dirname(p), { recursive: true });
      const { content, mode } = typeof spec === 'string' || Buffer.isBuffer(spec) ? { content: spec, mode: 0o600 } : spec;
      writeFileSync(p, typeof content === 'string' ? sub(content, dir) : content);
      chmodSync(p, mode);
    }
    const env = { ...baseEnv(dir), ...Object.fromEntries(Object.entries(c.env ?? {}).map(([k, v]) => [k, sub(v, dir)])) };
    const args = c.args.map((a) => sub(a, dir));
    const before = tree(dir);
    const failures: string[] = [];
    const runs: boolean[] = c.secrets?.length ? [false, true] : [false];
    for (const verbose of runs) {
      const r = await runCli(verbose ? [...args, '-v'] : args, { cwd: dir, env, stdin: c.stdin, timeoutMs: c.timeoutMs ?? 20000 });
      failures.push(...judge(c, r, verbose));
      const after = tree(dir);
      const changed = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));
      if (changed.length) failures.push(`wrote to disk${verbose ? ' (with -v)' : ''}: ${changed.slice(0, 5).join(', ')}`);
    }
    return failures;
  } finally {
    try { rmSync(dir, { recursive: true, force: true }); } catch { /* chmod-ed dirs */ }
  }
}

/** Register one test per case, run `concurrency` at a time. */
export function corpus(title: string, cases: BadInputCase[], concurrency = 4): void {
  const names = new Set<string>();
  for (const c of cases) {
    assert.ok(!names.has(c.name), `duplicate case name ${c.name}`);
    names.add(c.name);
  }
  // Start every case up front through a small pool, so the tests below only await their result.
  const results = new Map<string, Promise<string[]>>();
  const waiters: Array<() => void> = [];
  let running = 0;
  const slot = async (): Promise<void> => {
    while (running >= concurrency) await new Promise<void>((r) => waiters.push(r));
    running++;
  };
  const release = (): void => { running--; waiters.shift()?.(); };
  for (const c of cases) {
    results.set(c.name, (async () => { await slot(); try { return await runCase(c); } finally { release(); } })());
  }
  describe(`bad input: ${title} (${cases.length} cases)`, () => {
    for (const c of cases) {
      it(c.name, async () => {
        const failures = await results.get(c.name)!;
        assert.deepEqual(failures, [], `${c.name}: kube-renumber ${c.args.join(' ')}\n  ${failures.join('\n  ')}`);
      });
    }
  });
}
