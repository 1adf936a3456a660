/**
 * `npm run outputs -- REV [REV2]`: are the outputs of two trees byte-identical? The check a refactor owes: every
 * bundled example and platform fixture through inspect, suggest, plan (Service, Pod and both; yaml, markdown and
 * html) and rbac, run by each tree's own code (REV as a detached git worktree, REV2 likewise, or this checkout when
 * absent). Refusals count as outputs: the exit code, stdout and stderr of every case are compared.
 *
 * Prints one line per case that differs (with the first differing line of each stream) and a summary; exits 1 when
 * any case differs, 2 on bad usage. The outputs stay in the printed directory for `diff -r`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

/** One CLI run: its name (a file name), its arguments ($D the input, $P the case's plan file). */
export interface Case { name: string; args: string[]; plan?: string }

const SERVICE_TARGETS = ['172.24.0.0/16', '10.200.0.0/20'];
const POD_TARGETS = ['10.64.0.0/12', '172.28.0.0/14'];

/** The inputs: every bundled example and platform fixture that is a directory of dumps. */
export function inputs(root: string): string[] {
  const dirs = (d: string) => readdirSync(join(root, d), { withFileTypes: true })
    .filter((e) => e.isDirectory()).map((e) => `${d}/${e.name}`).sort();
  return [...dirs('examples'), ...dirs('test/fixtures/platforms')];
}

/** The cases run on each input. */
export function cases(): Case[] {
  const out: Case[] = [
    { name: 'inspect', args: ['inspect', '-f', '$D'] },
    { name: 'inspect.json', args: ['inspect', '-f', '$D', '-o', 'json'] },
    { name: 'suggest-services', args: ['suggest', '--for', 'services', '-f', '$D', '-o', 'json'] },
    { name: 'suggest-pods', args: ['suggest', '--for', 'pods', '-f', '$D', '-o', 'json'] },
  ];
  const plans: Array<[string, string[]]> = [
    ...SERVICE_TARGETS.map((t, i): [string, string[]] => [`plan-service-${i}`, ['--service-cidr', t]]),
    ...POD_TARGETS.map((t, i): [string, string[]] => [`plan-pod-${i}`, ['--pod-cidr', t]]),
    ['plan-both', ['--service-cidr', SERVICE_TARGETS[0]!, '--pod-cidr', POD_TARGETS[0]!]],
  ];
  for (const [name, flags] of plans) {
    out.push({ name: `${name}.yaml`, args: ['plan', '-f', '$D', ...flags, '-o', 'yaml'], plan: name });
    out.push({ name: `${name}.md`, args: ['plan', '-f', '$D', ...flags, '-o', 'markdown'] });
    out.push({ name: `${name}.rbac`, args: ['rbac', '$P'], plan: name });
  }
  out.push({ name: 'plan-service-0.html', args: ['plan', '-f', '$D', '--service-cidr', SERVICE_TARGETS[0]!, '-o', 'html'] });
  return out;
}

/**
 * The program run in a child for one tree: imports that tree's CLI, runs every case in order with a captured Io,
 * and writes `<case>.out`, `<case>.err`, `<case>.code` under the output directory (one folder per input).
 */
const RUNNER = `
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
const [tree, outDir, spec] = process.argv.slice(1);
// a tree with src/install.ts installs its registries by calling install(); an older one by importing them
if (existsSync(join(tree, 'src/install.ts'))) (await import(join(tree, 'src/install.ts'))).install();
else for (const r of ['src/platforms/registry.ts', 'src/pod-paths/registry.ts']) if (existsSync(join(tree, r))) await import(join(tree, r));
const { main } = await import(join(tree, 'src/cli/main.ts'));
const { inputs, cases } = JSON.parse(spec);
for (const input of inputs) {
  const dir = join(outDir, input.replaceAll('/', '_'));
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(tree, input))) { writeFileSync(join(dir, 'MISSING'), ''); continue; }
  const planFile = {};
  for (const c of cases) {
    if (c.args.includes('$P') && !planFile[c.plan]) continue;
    let out = '', err = '';
    const args = c.args.map((a) => a === '$D' ? join(tree, input) : a === '$P' ? planFile[c.plan] : a);
    const io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { ...process.env }, program: 'kube-renumber' };
    let code;
    try { code = await main(args, io); } catch (e) { code = 'threw'; err += String(e && e.stack || e); }
    const strip = (s) => s.replaceAll(outDir, '<out>').replaceAll(tree, '<tree>');
    writeFileSync(join(dir, c.name + '.out'), strip(out));
    writeFileSync(join(dir, c.name + '.err'), strip(err));
    writeFileSync(join(dir, c.name + '.code'), String(code));
    if (c.plan && !c.args.includes('$P') && code === 0) {
      planFile[c.plan] = join(dir, c.name + '.out');
    }
  }
}
`;

/** A tree for a revision: a detached worktree sharing this checkout's node_modules. */
function treeOf(rev: string, scratch: string): string {
  const dir = join(scratch, `tree-${rev.replace(/[^\w.-]/g, '_')}`);
  const r = spawnSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', '--quiet', dir, rev], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git worktree add ${rev}: ${r.stderr.trim()}`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function runTree(tree: string, out: string, spec: string): void {
  const home = mkdtempSync(join(tmpdir(), 'kr-outputs-home-'));
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', RUNNER, tree, out, spec], {
    encoding: 'utf8', cwd: home, maxBuffer: 1 << 26,
    env: { PATH: process.env.PATH ?? '', HOME: home, LANG: 'C.UTF-8', NO_COLOR: '1', TZ: 'UTC' },
  });
  rmSync(home, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`outputs of ${tree}: exit ${r.status}: ${r.stderr.trim().split('\n').slice(-12).join(' | ')}`);
}

function firstDifference(a: string, b: string): string {
  const x = a.split('\n'), y = b.split('\n');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}: ${JSON.stringify((x[i] ?? '<end>').slice(0, 120))} → ${JSON.stringify((y[i] ?? '<end>').slice(0, 120))}`;
  }
  return 'same';
}

/** Compares two output directories case by case; returns the differing cases' lines and the counts. */
export function compare(a: string, b: string, ins: readonly string[], cs: readonly Case[]): { differ: string[]; same: number; skipped: string[] } {
  const differ: string[] = [], skipped: string[] = [];
  let same = 0;
  for (const input of ins) {
    const key = input.replaceAll('/', '_');
    if (existsSync(join(a, key, 'MISSING')) || existsSync(join(b, key, 'MISSING'))) { skipped.push(input); continue; }
    for (const c of cs) {
      const read = (d: string, ext: string) => { const p = join(d, key, `${c.name}.${ext}`); return existsSync(p) ? readFileSync(p, 'utf8') : null; };
      const diffs: string[] = [];
      for (const ext of ['code', 'out', 'err']) {
        const x = read(a, ext), y = read(b, ext);
        if (x !== y) diffs.push(`${ext} ${x === null || y === null ? (x === null ? 'only in second' : 'only in first') : firstDifference(x, y)}`);
      }
      if (diffs.length) differ.push(`${input} ${c.name}: ${diffs.join('; ')}`);
      else same++;
    }
  }
  return { differ, same, skipped };
}

function usage(msg: string): never {
  process.stderr.write(`error: ${msg} (usage: npm run outputs -- REV [REV2])\n`);
  process.exit(2);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const revs = process.argv.slice(2);
  if (revs.length < 1 || revs.length > 2 || revs.some((r) => r.startsWith('-'))) usage('one or two git revisions');
  const scratch = mkdtempSync(join(tmpdir(), 'kr-outputs-'));
  const ins = inputs(ROOT), cs = cases();
  const spec = JSON.stringify({ inputs: ins, cases: cs });
  const trees: string[] = [];
  try {
    const dirs = [revs[0]!, revs[1] ?? 'working tree'].map((rev, i) => {
      const tree = i === 1 && !revs[1] ? ROOT : treeOf(rev, scratch);
      if (tree !== ROOT) trees.push(tree);
      const out = join(scratch, `out-${i}`);
      mkdirSync(out);
      runTree(tree, out, spec);
      return out;
    });
    const { differ, same, skipped } = compare(dirs[0]!, dirs[1]!, ins, cs);
    for (const d of differ) process.stdout.write(`differ ${d}\n`);
    for (const s of skipped) process.stdout.write(`skipped ${s}: not in both trees\n`);
    process.stdout.write(`${revs[0]} → ${revs[1] ?? 'working tree'}: ${same} cases identical, ${differ.length} differ, ${skipped.length} inputs skipped; outputs in ${scratch}\n`);
    writeFileSync(join(scratch, 'summary.txt'), differ.join('\n'));
    process.exitCode = differ.length ? 1 : 0;
  } finally {
    for (const t of trees) spawnSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', t]);
  }
}
