// Nothing of a testbed survives its owner: neither after stop() nor when the owning process is SIGKILLed.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Testbed } from '../testbed/cluster.ts';

const clusterModule = pathToFileURL(join(import.meta.dirname, '..', 'testbed', 'cluster.ts')).href;

/** pids of processes whose command line mentions `needle` (pgrep -f), excluding pgrep itself. */
function pgrep(needle: string): number[] {
  const r = spawnSync('pgrep', ['-f', needle], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((p) => p !== r.pid);
}

async function waitGone(needle: string, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = pgrep(needle);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('stop() leaves no process behind', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kube-renumber-tb-stop-'));
  try {
    const tb = await Testbed.start({ stateDir: join(dir, 'state'), nodes: 1, calicoCRDs: false });
    const running = pgrep(dir);
    // tbsup + component for etcd, apiserver, kcm, scheduler, kwok
    assert.equal(running.length, 10, `expected 10 processes, got ${running.length}`);
    const t0 = Date.now();
    await tb.stop();
    process.stderr.write(`# stop() took ${Date.now() - t0} ms\n`);
    assert.deepEqual(await waitGone(dir, 2000), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('SIGKILL of the owning process takes the whole testbed down', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kube-renumber-tb-kill-'));
  const stateDir = join(dir, 'state');
  const script = `
    const { Testbed } = await import(${JSON.stringify(clusterModule)});
    const tb = await Testbed.start({ stateDir: ${JSON.stringify(stateDir)}, nodes: 1, calicoCRDs: false });
    process.stdout.write('READY ' + tb.kubeconfigPath + '\\n');
    setInterval(() => {}, 1 << 30);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`child testbed not ready in 120 s: ${err}`)), 120_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('READY ')) {
          clearTimeout(t);
          resolve();
        }
      });
      child.on('exit', (code) => {
        clearTimeout(t);
        reject(new Error(`child exited early (${code}): ${err}`));
      });
    });
    // the child's own command line (-e script) mentions stateDir too: leave it out
    const before = pgrep(stateDir).filter((p) => p !== child.pid);
    assert.equal(before.length, 10, `10 processes while up, got ${before.length}`);
    child.kill('SIGKILL');
    const t0 = Date.now();
    const left = await waitGone(stateDir, 20_000);
    process.stderr.write(`# after SIGKILL all components gone in ${Date.now() - t0} ms\n`);
    assert.deepEqual(left, [], `left running: ${left.join(' ')}`);
    assert.ok(existsSync(stateDir), 'state dir is the caller’s, left in place');
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});
