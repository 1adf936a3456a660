/**
 * Progress while apply/resume run: the engine's progress events (runner steps, poll waits, counts, rollouts in
 * flight), the CLI's view of them (a live line on a terminal, one line per event elsewhere, heartbeats), the
 * journal followed by status --watch, and --events ndjson.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ProgressView, shortDuration } from '../../src/cli/progress.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { Journal, JournalTail } from '../../src/engine/journal.ts';
import { runWaves, type RestartResult, type Workload } from '../../src/engine/restarts.ts';
import { runSteps, type ProgressEvent, type Step, type StepContext } from '../../src/engine/runner.ts';
import { poll, PollTimeout, waitFor, withProgress } from '../../src/engine/toolkit.ts';
import { run } from './run-cli.ts';

install();

const tmp = () => mkdtempSync(join(tmpdir(), 'kr-progress-'));

function ctxIn(dir: string, events: ProgressEvent[]): StepContext {
  return {
    client: undefined as never,
    backups: new BackupStore(join(dir, 'backups'), 'r'),
    journal: new Journal(join(dir, 'journal.jsonl'), 'r'),
    dryRun: 'none',
    log: () => {},
    progress: (e) => events.push(e),
  };
}

describe('progress events from the engine', () => {
  it('the runner tells each step\'s start and end with n/total, and the waits of poll and waitFor inside a step', async () => {
    const dir = tmp();
    const events: ProgressEvent[] = [];
    let tries = 0;
    const steps: Step[] = [
      { id: 'first', title: 'already there', kind: 'action', check: async () => true },
      {
        id: 'second', title: 'waits', kind: 'action', check: async () => false,
        apply: async () => {
          await poll('the thing to be ready', async () => (++tries >= 3 ? true : undefined), { intervalMs: 5, timeoutMs: 5000 });
          await waitFor('caches to catch up', 20);
        },
      },
      { id: 'third', title: 'a gate', kind: 'gate', check: async () => false, instructions: ['do it'] },
    ];
    const r = await runSteps(steps, ctxIn(dir, events));
    assert.equal(r.status, 'gate');
    const shown = events.map((e) => (e.type === 'step' ? `${e.n}/${e.total} ${e.step} ${e.state}` : e.type === 'wait' ? `wait ${e.what} ${e.timeoutMs}`
      : e.type === 'waited' ? `waited ${e.what}` : e.type));
    assert.deepEqual(shown, [
      '1/3 first start', '1/3 first skip',
      '2/3 second start', 'wait the thing to be ready 5000', 'waited the thing to be ready', 'wait caches to catch up 20', 'waited caches to catch up', '2/3 second done',
      '3/3 third start', '3/3 third gate',
    ]);
    const waited = events.find((e) => e.type === 'waited' && e.what === 'caches to catch up') as { ms: number };
    assert.ok(waited.ms >= 19, `waited ${waited.ms} ms`);
  });

  it('a poll that ends in an error or its deadline says so, never "done"', async () => {
    const events: ProgressEvent[] = [];
    let tries = 0;
    await assert.rejects(withProgress((e) => events.push(e), () => poll('a failing check', async () => {
      if (++tries >= 2) throw new Error('stuck');
      return undefined;
    }, { intervalMs: 1, timeoutMs: 5000 })), /stuck/);
    await assert.rejects(withProgress((e) => events.push(e), () => poll('a slow check', async () => undefined, { intervalMs: 1, timeoutMs: 10 })), PollTimeout);
    const ended = events.filter((e) => e.type === 'waited').map((e) => e.type === 'waited' && `${e.what} ${e.ended}`);
    assert.deepEqual(ended, ['a failing check failed', 'a slow check timed-out']);
    let out = '';
    const v = new ProgressView((s) => { out += s; }, { tty: false });
    for (const e of events) v.event(e);
    assert.match(out, /a failing check: failed after \d+\.\ds\n/);
    assert.match(out, /a slow check: timed out after \d+\.\ds\n/);
    assert.doesNotMatch(out, /done after/);
  });

  it('a poll that holds at once is no wait; outside a step nothing is told', async () => {
    const events: ProgressEvent[] = [];
    await withProgress((e) => events.push(e), () => poll('x', async () => true));
    assert.deepEqual(events, []);
    await poll('y', async () => true); // no channel: nothing to tell, nothing thrown
  });

  it('restart waves tell how many are done and which rollouts are in flight', async () => {
    const events: Array<{ type: string; done?: number; total?: number; names?: string[] }> = [];
    const w = (name: string): Workload => ({ kind: 'Deployment', namespace: 'ns', name } as Workload);
    let maxNames = 0;
    await runWaves([w('a'), w('b'), w('c')], { parallel: 2, progress: (e) => { events.push(e); if (e.type === 'inflight') maxNames = Math.max(maxNames, e.names.length); } },
      async (x) => { await new Promise((r) => setTimeout(r, 10)); return { workload: x, status: 'restarted', seconds: 0.01, warnings: [] } as RestartResult; });
    const counts = events.filter((e) => e.type === 'count').map((e) => `${e.done}/${e.total}`);
    assert.equal(counts[0], '0/3');
    assert.equal(counts.at(-1), '3/3');
    assert.equal(maxNames, 2, 'two rollouts in flight at most');
    assert.match(JSON.stringify(events.find((e) => e.type === 'inflight' && e.names!.length === 2)), /Deployment ns\/a.*Deployment ns\/b/);
    assert.deepEqual(events.at(-1), { type: 'inflight', what: 'rollouts', names: [] });
  });
});

describe('the progress view', () => {
  const step = (n: number, id: string, state: 'start' | 'done' | 'skip' | 'gate'): ProgressEvent => ({ type: 'step', step: id, n, total: 5, title: `title of ${id}`, state });

  it('without a terminal: one line per event, the [n/m] done lines as before, warnings without -v', () => {
    let out = '';
    const v = new ProgressView((s) => { out += s; }, { tty: false });
    v.event(step(1, 'create-target', 'start'));
    v.event(step(1, 'create-target', 'skip'));
    v.event(step(2, 'move-tier-1', 'start'));
    v.event({ type: 'count', what: 'Services moved', done: 0, total: 2 });
    v.event({ type: 'wait', what: 'kube-proxy', timeoutMs: 5000 });
    v.event({ type: 'waited', what: 'kube-proxy', ms: 5012 });
    v.warn('pod x/y has no controller');
    v.event({ type: 'count', what: 'Services moved', done: 2, total: 2 });
    v.event(step(2, 'move-tier-1', 'done'));
    assert.equal(out, [
      '[1/5] create-target: started: title of create-target',
      '[1/5] create-target: already done',
      '[2/5] move-tier-1: started: title of move-tier-1',
      '[2/5] move-tier-1: Services moved 0/2',
      '[2/5] move-tier-1: waiting for kube-proxy (up to 5s)',
      '[2/5] move-tier-1: kube-proxy: done after 5.0s',
      'warning: pod x/y has no controller',
      '[2/5] move-tier-1: Services moved 2/2',
      '[2/5] move-tier-1: done (Services moved 2/2)',
      '',
    ].join('\n'));
    assert.ok(!out.includes('\x1b'), 'no escape codes off a terminal');
  });

  it('a heartbeat every heartbeatMs while a wait lasts', async () => {
    let out = '';
    const v = new ProgressView((s) => { out += s; }, { tty: false, heartbeatMs: 40, redrawMs: 10 });
    v.start();
    v.event(step(3, 'restart', 'start'));
    v.event({ type: 'wait', what: 'rollout of Deployment a/b', timeoutMs: 300_000 });
    await new Promise((r) => setTimeout(r, 150));
    v.event({ type: 'waited', what: 'rollout of Deployment a/b', ms: 150 });
    const beats = out.split('\n').filter((l) => /^\[3\/5\] restart: still waiting for rollout of Deployment a\/b \(0s of 5m\)$/.test(l));
    await new Promise((r) => setTimeout(r, 100));
    v.stop();
    assert.ok(beats.length >= 2 && beats.length <= 4, out);
    assert.equal(out.split('\n').filter((l) => /still waiting/.test(l)).length, beats.length, 'no heartbeat after the wait ended');
  });

  it('on a terminal: one status line redrawn in place, with counts, rollouts in flight and the wait', () => {
    let out = '';
    let t = 1_000_000;
    const v = new ProgressView((s) => { out += s; }, { tty: true, columns: 200, now: () => t });
    v.event(step(4, 'restart-workloads', 'start'));
    v.event({ type: 'count', what: 'workloads restarted', done: 3, total: 10 });
    v.event({ type: 'inflight', what: 'rollouts', names: ['Deployment a/x', 'Deployment a/y', 'StatefulSet b/z', 'Deployment c/w'] });
    v.event({ type: 'wait', what: 'no pod left in 10.244.0.0/16', timeoutMs: 60_000 });
    t += 12_500;
    assert.equal(v.status(), '[4/5] restart-workloads · workloads restarted 3/10 · rollouts in flight 4 (Deployment a/x, Deployment a/y, StatefulSet b/z, …) · '
      + 'waiting for no pod left in 10.244.0.0/16 (12s of 1m)');
    // every draw starts by clearing the line, and no draw ends with a newline
    const draws = out.split('\r\x1b[2K').filter(Boolean);
    assert.ok(draws.length >= 4);
    for (const d of draws) assert.ok(!d.endsWith('\n'), JSON.stringify(d));
    v.warn('stuck eviction');
    assert.match(out, /\r\x1b\[2Kwarning: stuck eviction\n\r\x1b\[2K\[4\/5\] restart-workloads · /, 'a warning scrolls above, then the line comes back');
    v.event(step(4, 'restart-workloads', 'done'));
    assert.match(out, /\[4\/5\] restart-workloads: done \(workloads restarted 3\/10\)\n(\r\x1b\[2K)?$/);
    const narrow = new ProgressView(() => {}, { tty: true, columns: 40, now: () => t });
    narrow.event(step(4, 'restart-workloads', 'start'));
    narrow.event({ type: 'count', what: 'workloads restarted', done: 3, total: 10 });
    assert.equal(narrow.status().length, 39);
    assert.ok(narrow.status().endsWith('…'));
  });

  it('short durations', () => {
    assert.deepEqual([0, 4200, 60_000, 90_500, 3_600_000, 3_780_000].map(shortDuration), ['0s', '4s', '1m', '1m30s', '1h', '1h3m']);
  });
});

describe('following a journal (status --watch)', () => {
  it('returns each entry once its line is complete, holds a line being written, and reads on after a torn line is repaired', () => {
    const dir = tmp();
    const path = join(dir, 'journal.jsonl');
    const tail = new JournalTail(path);
    assert.deepEqual(tail.read(), [], 'no journal yet');
    const j = new Journal(path, 'r1');
    j.append('run-start');
    j.append('step-start', { step: 'a' });
    assert.deepEqual(tail.read().map((e) => e.event), ['run-start', 'step-start']);
    assert.deepEqual(tail.read(), []);
    // a line half written: held back until its newline
    const line = JSON.stringify({ ts: new Date().toISOString(), run: 'r1', event: 'step-done', step: 'a' });
    appendFileSync(path, line.slice(0, 20));
    assert.deepEqual(tail.read(), []);
    appendFileSync(path, `${line.slice(20)}\n`);
    assert.deepEqual(tail.read().map((e) => `${e.event} ${e.step}`), ['step-done a']);
    // a crash tears a line; the next run moves it away and appends
    appendFileSync(path, '{"ts":"2026-01-01T00:00:00Z","run":"r1","ev');
    assert.deepEqual(tail.read(), []);
    const j2 = new Journal(path, 'r2', () => {});
    j2.append('run-start');
    j2.append('run-end', { detail: 'completed' });
    assert.deepEqual(tail.read().map((e) => `${e.run} ${e.event}`), ['r2 run-start', 'r2 run-end']);
  });

  it('a line that is not an entry is an input error naming the file and line', () => {
    const dir = tmp();
    const path = join(dir, 'journal.jsonl');
    writeFileSync(path, '{"ts":"t","run":"r","event":"run-start"}\nnot json\n');
    const tail = new JournalTail(path);
    assert.throws(() => tail.read(), /journal .*journal\.jsonl: line 2: not JSON/);
    truncateSync(path, 0);
  });

  it('status --watch prints the entries and ends with the run: exit code from the run-end', async () => {
    const dir = tmp();
    const planPath = join(dir, 'plan.yaml');
    const p = await run(['plan', '--service-cidr', '100.32.0.0/15', '-f', join(process.cwd(), 'examples/kops-tailscale'), '-o', 'yaml']);
    writeFileSync(planPath, p.out);
    const state = join(dir, 'state');
    const j = new Journal(join(state, 'journal.jsonl'), 'r1');
    j.append('run-start', { detail: 'apply' });
    const watching = run(['status', planPath, '--state-dir', state, '--watch', '-o', 'json']);
    await new Promise((r) => setTimeout(r, 300));
    j.append('step-start', { step: 'create-target-servicecidr' });
    j.append('gate', { step: 'restart-apiservers', detail: 'restart' });
    j.append('run-end', { detail: 'gate' });
    const r = await watching;
    assert.equal(r.code, 7, r.err);
    assert.deepEqual(r.out.trim().split('\n').map((l) => JSON.parse(l).event), ['run-start', 'step-start', 'gate', 'run-end']);
    // table form, and a run already over: at once
    const again = await run(['status', planPath, '--state-dir', state, '-w']);
    assert.equal(again.code, 7);
    assert.match(again.out, /^\S+Z {2}restart-apiservers\s+gate\s+restart$/m);
    const yaml = await run(['status', planPath, '--state-dir', state, '-w', '-o', 'yaml']);
    assert.equal(yaml.code, 2);
  });
});

describe('apply --events', () => {
  it('only ndjson, and not with -o json|yaml (checked before anything is read)', async () => {
    const a = await run(['apply', 'plan.yaml', '--events', 'json']);
    assert.equal(a.code, 2);
    assert.match(a.err, /^error: --events json is not a known event format \(use ndjson\)/);
    const b = await run(['apply', 'plan.yaml', '--events', 'ndjson', '-o', 'json']);
    assert.equal(b.code, 2);
    assert.match(b.err, /cannot go with -o json/);
  });

  it('the journal tells every appended entry to its listener', () => {
    const dir = tmp();
    const j = new Journal(join(dir, 'j.jsonl'), 'r');
    const seen: string[] = [];
    j.onAppend = (e) => seen.push(`${e.event}${e.step ? ` ${e.step}` : ''}`);
    j.append('run-start');
    j.append('step-done', { step: 'x' });
    assert.deepEqual(seen, ['run-start', 'step-done x']);
    assert.deepEqual(j.entries().map((e) => e.event), ['run-start', 'step-done']);
  });
});
