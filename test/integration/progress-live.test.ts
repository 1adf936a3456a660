// What apply shows while it runs, against the real control plane:
// - on a terminal (a tmux pane): one live status line per phase with the step n/m, the Services moved x/y and
//   what it waits for and for how long, redrawn in place;
// - without a terminal: one line per event; --events ndjson streams exactly the journal's entries to stdout;
//   `status PLAN --watch` in another process follows the same run until it ends, with the run's exit code;
//   at the gate, run as kubectl runs plugins, every hint names the plan file: `kubectl renumber resume PLAN`.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { cli } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

const onPath = (cmd: string) => (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, cmd)));

/** tmux on PATH: installed with apt-get (Debian's package) when missing and we are root; else why not. */
function ensureTmux(): string | undefined {
  if (onPath('tmux')) return undefined;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) return 'tmux is not installed and cannot be installed here (needs root and apt-get)';
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'tmux'], { env, stdio: 'ignore' });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update'], { env, stdio: 'ignore' });
    r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'tmux'], { env, stdio: 'ignore' });
  }
  return onPath('tmux') ? undefined : `apt-get install tmux failed (exit ${r.status}): the terminal test cannot run`;
}
const noTmux = ensureTmux();

const sh = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

describe('progress of a live apply', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 6 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-progress-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s', '--yes'];

  test('plan with two batches', async () => {
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--batch-size', '3',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(p.code, 0, p.err);
    writeFileSync(planPath, p.out);
    assert.match(p.out, /id: move-tier-1-batch-2/);
  });

  test('on a terminal (run as kubectl-renumber): a live status line drawn in place', { skip: noTmux, timeout: 300_000 }, async () => {
    const sock = `kr-progress-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync('tmux', ['-L', sock, ...args], { encoding: 'utf8' });
    const args = ['apply', planPath, ...common(), '--propagation-delay', '3s', '--only', 'create-*', '--only', 'move-tier-1-batch-1'];
    const cmd = `cd ${sh(dir)} && ${sh(process.execPath)} ${sh(join(ROOT, 'bin/kubectl-renumber'))} ${args.map(sh).join(' ')}; echo EXIT=$?; sleep 600`;
    const started = tmux('new-session', '-d', '-s', 'kr', '-x', '200', '-y', '50', cmd);
    assert.equal(started.status, 0, started.stderr);
    const frames: string[] = [];
    try {
      const deadline = Date.now() + 240_000;
      for (;;) {
        const pane = tmux('capture-pane', '-p', '-t', 'kr').stdout;
        frames.push(pane);
        if (/EXIT=\d+/.test(pane) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      tmux('kill-server');
    }
    const last = frames.at(-1)!;
    assert.match(last, /EXIT=0/, last);
    // the live line at some moment: the step, Services moved, and a wait with its elapsed time and limit
    const live = frames.flatMap((f) => f.split('\n')).filter((l) => /^\[\d+\/\d+\] move-tier-1-batch-1 · /.test(l));
    assert.ok(live.some((l) => /· Services moved \d\/3/.test(l)), live.join('\n'));
    assert.ok(live.some((l) => / · waiting for kube-proxy and DNS caches .*\(\ds of 3s\)$/.test(l)), live.join('\n'));
    // drawn in place: never two status lines of the step under each other in one frame
    for (const f of frames) assert.ok(f.split('\n').filter((l) => /^\[\d+\/\d+\] move-tier-1-batch-1 · /.test(l)).length <= 1, f);
    // what stays: one line per finished step, no status line left behind
    assert.match(last, /^\[\d+\/\d+\] move-tier-1-batch-1: done \(Services moved 3\/3\)$/m);
    assert.doesNotMatch(last, / · waiting for/);
  });

  test('without a terminal: one line per event, --events ndjson is the journal, status --watch follows the run', { timeout: 300_000 }, async () => {
    const journalPath = join(stateDir, 'journal.jsonl');
    const before = readFileSync(journalPath, 'utf8');
    // as kubectl runs a plugin: kubectl sets KUBECTL_PLUGINS_CALLER
    const applying = cli(['apply', planPath, ...common(), '--propagation-delay', '2s', '--events', 'ndjson'], { KUBECTL_PLUGINS_CALLER: '/usr/local/bin/kubectl' });
    // from another terminal, once this run has started (the journal's earlier run is over: watching then ends at once)
    while (!readFileSync(journalPath, 'utf8').slice(before.length).includes('"run-start"')) await new Promise((r) => setTimeout(r, 50));
    const watchOut: string[] = [];
    const watcher = spawn(process.execPath, [join(ROOT, 'bin/kube-renumber.js'), 'status', planPath, '--state-dir', stateDir, '--watch', '-o', 'json'],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    watcher.stdout.setEncoding('utf8').on('data', (d) => watchOut.push(d));
    const watched = new Promise<number | null>((r) => watcher.on('close', (code) => r(code)));
    const r = await applying;
    assert.equal(r.code, 7, r.err);
    // stderr: one line per event, no escape codes
    assert.doesNotMatch(r.err, /\x1b/);
    assert.match(r.err, /^\[\d+\/\d+\] move-tier-1-batch-2: started: /m);
    assert.match(r.err, /^\[\d+\/\d+\] move-tier-1-batch-2: Services moved 0\/3$/m);
    assert.match(r.err, /^\[\d+\/\d+\] move-tier-1-batch-2: waiting for kube-proxy and DNS caches to pick up the covers \(--propagation-delay\) \(up to 2s\)$/m);
    assert.match(r.err, /^\[\d+\/\d+\] move-tier-1-batch-2: kube-proxy and DNS caches to pick up the covers \(--propagation-delay\): done after 2\.\ds$/m);
    assert.match(r.err, /^\[\d+\/\d+\] move-tier-1-batch-1: already done$/m);
    assert.match(r.err, /^\[\d+\/\d+\] move-dns: done \(Services moved 1\/1\)$/m);
    // the gate: every hint names the plan file
    assert.match(r.err, /^stopped at gate restart-apiservers: /m);
    assert.match(r.err, new RegExp(`^then run: kubectl renumber resume ${planPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'));
    const hints = r.err.split('\n').filter((x) => /renumber resume/.test(x));
    assert.ok(hints.length >= 2, r.err);
    for (const l of hints) assert.ok(l.includes(`kubectl renumber resume ${planPath}`), l);
    assert.doesNotMatch(r.err, /kube-renumber resume/);
    // stdout: exactly the entries this run appended to the journal
    const journal = readFileSync(journalPath, 'utf8').slice(before.length);
    assert.equal(r.out, journal);
    const events = r.out.trim().split('\n').map((l) => JSON.parse(l).event);
    assert.equal(events[0], 'run-start');
    assert.equal(events.at(-1), 'run-end');
    // the watcher printed the whole journal (the earlier run's entries too) and ended with the run, exit 7
    assert.equal(await watched, 7);
    assert.equal(watchOut.join(''), readFileSync(journalPath, 'utf8'));
  });
});
