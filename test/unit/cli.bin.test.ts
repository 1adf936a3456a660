/**
 * The installed entry point: it refuses a Node.js older than 22.19 with one line (exit 2) before importing
 * anything, and an exception nothing caught ends as one "error: internal:" line (exit 70), not a Node stack.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/kube-renumber.js');
const PLUGIN = join(ROOT, 'bin/kubectl-renumber');

function versionOf(node: string): [number, number, string] | undefined {
  const r = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 30_000 });
  const v = r.status === 0 ? r.stdout.trim() : '';
  const m = v.match(/^(\d+)\.(\d+)\./);
  return m ? [Number(m[1]), Number(m[2]), v] : undefined;
}

/** A Node.js older than 22.19 on PATH or in the usual places, outside this project's node_modules. */
function oldNode(): { path: string; version: string } | undefined {
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'node')),
    '/usr/bin/node', '/usr/local/bin/node', '/bin/node',
  ];
  const seen = new Set<string>();
  for (const c of candidates) {
    if (!existsSync(c)) continue;
    let real: string;
    try { real = realpathSync(c); } catch { continue; }
    if (seen.has(real) || real.includes(`${join(ROOT, 'node_modules')}`)) continue;
    seen.add(real);
    const v = versionOf(real);
    if (v && (v[0] < 22 || (v[0] === 22 && v[1] < 19))) return { path: real, version: v[2] };
  }
  return undefined;
}

const old = oldNode();

describe('bin/kube-renumber.js', () => {
  it('refuses an old Node.js with one error line and exit 2', { skip: old ? false : 'no Node.js older than 22.19 found outside node_modules' }, () => {
    for (const bin of [BIN, PLUGIN]) {
      const r = spawnSync(old!.path, [bin, 'inspect', '-f', join(ROOT, 'examples/kops-tailscale')], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `error: kube-renumber needs Node.js >= 22.19 (this is v${old!.version}): install a newer Node.js and run it again\n`);
    }
  });

  it('a reader that goes away (inspect | head) ends the output, not with an internal error: exit as without it', async () => {
    const expected = spawnSync(process.execPath, [BIN, 'inspect', '-f', join(ROOT, 'examples/kops-tailscale')], { encoding: 'utf8', timeout: 60_000 });
    assert.ok(expected.stdout.length > 0);
    const p = spawn(process.execPath, [BIN, 'inspect', '-f', join(ROOT, 'examples/kops-tailscale')], { stdio: ['ignore', 'pipe', 'pipe'] });
    // the read end is closed before the program, still starting, writes anything: its first write meets EPIPE
    p.stdout.destroy();
    let err = '';
    p.stderr.on('data', (b) => { err += b; });
    const code = await new Promise<number | null>((resolve) => p.on('close', (c) => resolve(c)));
    assert.equal(err, expected.stderr);
    assert.equal(code, expected.status);
  });

  it('runs on this Node.js (the version check lets it through)', () => {
    const r = spawnSync(process.execPath, [BIN, 'version'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\d+\.\d+\.\d+\n$/);
  });
});

describe('installCrashHandlers', () => {
  const main = join(ROOT, 'src/cli/main.ts');
  const crash = (how: string, args: string[] = []) => spawnSync(process.execPath, ['--input-type=module', '-e', `
    const { installCrashHandlers } = await import(${JSON.stringify(main)});
    installCrashHandlers(undefined, ${JSON.stringify(args)});
    ${how}
  `], { encoding: 'utf8', timeout: 60_000 });

  it('turns an uncaught exception into one "error: internal:" line and exit 70', () => {
    const r = crash("setTimeout(() => { throw new TypeError('boom in a callback'); }, 1);");
    assert.equal(r.status, 70, r.stderr);
    assert.equal(r.stderr, 'error: internal: boom in a callback (run with -v for details)\n');
  });

  it('turns an unhandled rejection into one line and exit 70', () => {
    const r = crash("Promise.reject(new Error('rejected\\nsecond line'));");
    assert.equal(r.status, 70, r.stderr);
    assert.equal(r.stderr, 'error: internal: rejected (run with -v for details)\n');
  });

  it('prints the stack with -v', () => {
    const r = crash("setTimeout(() => { throw new Error('with stack'); }, 1);", ['inspect', '-v']);
    assert.equal(r.status, 70);
    assert.match(r.stderr, /^error: internal: with stack\n/);
    assert.match(r.stderr, /\n\s+at /);
  });

  it('keeps the exit code of a user error thrown out of band', () => {
    const r = crash("const { UsageError } = await import(" + JSON.stringify(join(ROOT, 'src/errors.ts')) + "); setTimeout(() => { throw new UsageError('late bad value'); }, 1);");
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, 'error: late bad value\n');
  });
});
