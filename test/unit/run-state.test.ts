// status PLAN and status --fleet DIR for a run whose journal has no run-end: running (a live process of this machine
// holds its lock) or interrupted (none does), told apart by the lock file; a lock of another host is not guessed at.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { planId } from '../../src/cli/session.ts';
import { localLockState } from '../../src/engine/lock.ts';
import { InputError } from '../../src/errors.ts';
import { planFromYaml } from '../../src/plan/render.ts';
import { SERVICE_PLAN } from './bad-input/plan-fixtures.ts';
import { run } from './run-cli.ts';

install();

const LOCK_MODULE = fileURLToPath(new URL('../../src/engine/lock.ts', import.meta.url));
const RUN = planId(SERVICE_PLAN);
const STEPS = planFromYaml(SERVICE_PLAN, 'plan.yaml').steps.map((s) => s.id);
const tmp = () => mkdtempSync(join(tmpdir(), 'kr-run-state-'));

/** Journal lines of this plan's run: [event, step?, detail?]. */
function journal(dir: string, lines: Array<[string, string?, string?]>): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'journal.jsonl'), lines.map(([event, step, detail], i) => `${JSON.stringify({
    ts: `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`, run: RUN, event, ...(step ? { step } : {}), ...(detail ? { detail } : {}),
  })}\n`).join(''), { mode: 0o600 });
}
/** A run that started and got part way: no run-end. */
const OPEN: Array<[string, string?, string?]> = [['run-start', undefined, 'apply'], ['step-start', STEPS[0]], ['step-done', STEPS[0]], ['step-start', STEPS[1]]];

/** A Node process that takes the lock of `stateDir` as a run does (acquireLocalLock) and holds it until killed. */
const children: ChildProcessWithoutNullStreams[] = [];
async function lockHolder(stateDir: string): Promise<ChildProcessWithoutNullStreams> {
  const script = `import { acquireLocalLock, holderIdentity } from ${JSON.stringify(LOCK_MODULE)};
    acquireLocalLock(${JSON.stringify(join(stateDir, 'lock'))}, holderIdentity('r'));
    process.stdout.write('locked');
    setInterval(() => {}, 1000);`;
  const p = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(p);
  let out = '';
  let err = '';
  p.stderr.on('data', (b) => { err += b; });
  await new Promise<void>((resolve, reject) => {
    p.stdout.on('data', (b) => { out += b; if (out === 'locked') resolve(); });
    p.on('exit', (code) => reject(new Error(`lock holder exited (${code}): ${err}`)));
  });
  return p;
}
async function kill(p: ChildProcessWithoutNullStreams): Promise<void> {
  const gone = new Promise((r) => p.on('exit', r));
  p.kill('SIGKILL');
  await gone;
}
after(() => { for (const p of children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });

describe('status --fleet: a run without its run-end', () => {
  const names = ['live', 'gone', 'elsewhere', 'done', 'failed', 'gate', 'fresh'];
  function fleetDir(): string {
    const dir = tmp();
    const index = {
      apiVersion: 'kube-renumber.io/v1', kind: 'FleetPlan', metadata: { generator: 't', fleetFile: 'f' }, moves: { ranges: 0, clusters: 0, addresses: 0 },
      clusters: [...names.map((name) => ({ name, plan: `${name}.yaml`, service: { to: '172.24.0.0/16', moved: true }, pod: { to: '10.1.0.0/16', moved: false } })),
        { name: 'keeps', service: { to: '10.2.0.0/24', moved: false }, pod: { to: '10.3.0.0/24', moved: false } }],
    };
    writeFileSync(join(dir, 'fleet.yaml'), yaml.dump(index));
    for (const n of names) writeFileSync(join(dir, `${n}.yaml`), SERVICE_PLAN);
    const state = (n: string) => join(dir, 'state', n);
    journal(state('live'), OPEN);
    journal(state('gone'), OPEN);
    journal(state('elsewhere'), OPEN);
    writeFileSync(join(state('elsewhere'), 'lock'), JSON.stringify({ pid: process.pid, holder: 'ops@not-this-host.example/r/1-ab', since: '2026-01-01T00:00:00.000Z' }));
    journal(state('done'), [['run-start'], ...STEPS.map((s): [string, string] => ['step-done', s]), ['run-end', undefined, 'completed']]);
    journal(state('failed'), [...OPEN, ['step-failed', STEPS[1], 'the new range did not answer'], ['run-end', undefined, 'failed']]);
    journal(state('gate'), [...OPEN, ['gate', STEPS[1]], ['run-end', undefined, 'gate']]);
    return dir;
  }
  const statusOf = async (dir: string) => {
    const r = await run(['status', '--fleet', dir, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    return new Map((JSON.parse(r.out).clusters as Array<{ name: string; state: string; detail?: string; lock?: { pid?: number; since?: string; host?: string } }>).map((c) => [c.name, c]));
  };

  it('a live lock holder is running (its pid and since); once it is killed, interrupted with what to do; other states unchanged', async () => {
    const dir = fleetDir();
    const holder = await lockHolder(join(dir, 'state', 'live'));
    let st = await statusOf(dir);
    assert.equal(st.get('live')!.state, 'running');
    assert.equal(st.get('live')!.lock!.pid, holder.pid);
    assert.match(st.get('live')!.lock!.since!, /^\d{4}-\d\d-\d\dT/);
    assert.match(st.get('live')!.detail!, new RegExp(`^pid ${holder.pid} of this machine holds its lock since `));
    // the journal has no run-end and no lock file at all: no process of this machine holds it
    assert.equal(st.get('gone')!.state, 'interrupted');
    assert.match(st.get('gone')!.detail!, /no process of this machine holds its lock: resume it: kube-renumber resume --fleet \S+ \(if a run goes on from another machine, it holds the Lease kube-system\/kube-renumber in the cluster and resume stops with exit 8\)$/);
    // a lock written on another host: not guessed at, even though its pid is alive here
    assert.equal(st.get('elsewhere')!.state, 'on another machine');
    assert.equal(st.get('elsewhere')!.lock!.host, 'not-this-host.example');
    assert.match(st.get('elsewhere')!.detail!, /cannot be seen from this machine; the Lease kube-system\/kube-renumber in the cluster shows the run that holds it/);
    const ended = { done: 'completed', failed: 'failed', gate: 'waiting at gate', fresh: 'not started', keeps: 'keeps its ranges' };
    for (const [n, s] of Object.entries(ended)) assert.equal(st.get(n)!.state, s, n);
    assert.equal(st.get('failed')!.detail, 'the new range did not answer');

    await kill(holder);
    st = await statusOf(dir);
    assert.equal(st.get('live')!.state, 'interrupted');
    assert.equal(st.get('live')!.lock!.pid, holder.pid, 'the gone holder is named');
    assert.match(st.get('live')!.detail!, new RegExp(`no process of this machine holds its lock \\(pid ${holder.pid} since \\S+ is gone\\): resume it: kube-renumber resume --fleet ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
    for (const [n, s] of Object.entries(ended)) assert.equal(st.get(n)!.state, s, n);

    const table = await run(['status', '--fleet', dir]);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^live\s+interrupted\s+1\/\d+\s/m);
    assert.match(table.out, /^elsewhere\s+on another machine\s/m);
  });
});

describe('status PLAN: a run without its run-end', () => {
  it('running while a live process holds the lock, interrupted once it is killed, with the resume command', async () => {
    const d = tmp();
    writeFileSync(join(d, 'plan.yaml'), SERVICE_PLAN);
    const state = join(d, 'state');
    journal(state, OPEN);
    const holder = await lockHolder(state);
    let r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    let doc = JSON.parse(r.out);
    assert.equal(doc.run.state, 'running');
    assert.equal(doc.run.lock.pid, holder.pid);
    assert.deepEqual([doc.run.done, doc.run.steps, doc.run.step], [1, STEPS.length, STEPS[1]]);
    assert.equal(doc.steps[1].state, 'started');
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state]);
    assert.match(r.out, new RegExp(`^run: running, 1/${STEPS.length} steps done, last step ${STEPS[1]} at \\S+: pid ${holder.pid} of this machine holds its lock since `, 'm'));

    await kill(holder);
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    doc = JSON.parse(r.out);
    assert.equal(doc.run.state, 'interrupted');
    assert.match(doc.run.detail, new RegExp(`\\(pid ${holder.pid} since \\S+ is gone\\): resume it: kube-renumber resume \\S+/plan\\.yaml --state-dir \\S+/state `));
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state]);
    assert.match(r.out, /^run: interrupted, 1\/\d+ steps done, .*: the journal has no run-end and no process of this machine holds its lock/m);

    // the same journal ended: the lock file the killed run left is not looked at
    journal(state, [...OPEN, ['gate', STEPS[1]], ['run-end', undefined, 'gate']]);
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    doc = JSON.parse(r.out);
    assert.equal(doc.run.state, 'waiting at gate');
    assert.equal(doc.run.lock, undefined);
  });
});

describe('status PLAN: a run that holds the lock and has journaled nothing yet (waiting for the Lease)', () => {
  it('running, no step started, with no journal or after an ended one; the same lock from before the end is not looked at', async () => {
    const d = tmp();
    writeFileSync(join(d, 'plan.yaml'), SERVICE_PLAN);
    const state = join(d, 'state');
    mkdirSync(state, { recursive: true, mode: 0o700 });
    let holder = await lockHolder(state);
    let r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    let doc = JSON.parse(r.out);
    assert.equal(doc.run.state, 'running');
    assert.equal(doc.run.lock.pid, holder.pid);
    assert.match(doc.run.detail, new RegExp(`^pid ${holder.pid} of this machine holds its lock since \\S+ and has started no step yet: it waits for the Lease kube-system/kube-renumber`));
    await kill(holder);
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    assert.equal(JSON.parse(r.out).run.state, 'not started');

    // a journal that ended at a gate (its timestamps are of 2026-01-01), and a resume that took the lock since
    journal(state, [...OPEN, ['gate', STEPS[1]], ['run-end', undefined, 'gate']]);
    holder = await lockHolder(state);
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    doc = JSON.parse(r.out);
    assert.equal(doc.run.state, 'running');
    assert.equal(doc.run.done, 1);
    assert.match(doc.run.detail, /has started no step yet/);
    // a lock older than the journal's end is that run's own, not a new one
    writeFileSync(join(state, 'journal.jsonl'), [...OPEN, ['gate', STEPS[1]], ['run-end', undefined, 'gate']].map(([event, step, detail]) => `${JSON.stringify({
      ts: '2999-01-01T00:00:00.000Z', run: RUN, event, ...(step ? { step } : {}), ...(detail ? { detail } : {}),
    })}\n`).join(''), { mode: 0o600 });
    r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
    assert.equal(JSON.parse(r.out).run.state, 'waiting at gate');
    await kill(holder);
  });
});

describe('status PLAN after a rollback', () => {
  it('rolled back once the rollback ended (with what it could not undo); without its end, interrupted with the rollback command, not resume', async () => {
    const d = tmp();
    writeFileSync(join(d, 'plan.yaml'), SERVICE_PLAN);
    const state = join(d, 'state');
    const status = async () => {
      const r = await run(['status', join(d, 'plan.yaml'), '--state-dir', state, '-o', 'json']);
      assert.equal(r.code, 0, r.err);
      return JSON.parse(r.out).run;
    };
    const stopped: Array<[string, string?, string?]> = [...OPEN, ['gate', STEPS[1]], ['run-end', undefined, 'gate']];
    // killed while rolling back: no rollback-end, no lock holder
    journal(state, [...stopped, ['rollback-start', undefined, '1 completed step(s)']]);
    let run1 = await status();
    assert.equal(run1.state, 'interrupted');
    assert.match(run1.detail, /the journal has no rollback-end .*: run the rollback again: kube-renumber rollback \S+\/plan\.yaml --state-dir \S+\/state \(if a run goes on from another machine, it holds the Lease \S+ in the cluster and rollback stops with exit 8\)$/);
    assert.doesNotMatch(run1.detail, /resume/);
    // ended, everything undone
    journal(state, [...stopped, ['rollback-start', undefined, '1 completed step(s)'], ['rolled-back', STEPS[0]], ['rollback-end', undefined, '1 undone, 0 not undone']]);
    run1 = await status();
    assert.equal(run1.state, 'rolled back');
    assert.equal(run1.detail, '1 undone, 0 not undone');
    assert.equal(run1.done, 0);
    // ended with a step it could not undo: named, with the command to run again
    journal(state, [...stopped, ['rollback-start'], ['rollback-failed', STEPS[0], 'the bridge is not ours'], ['rollback-end', undefined, '0 undone, 1 not undone']]);
    run1 = await status();
    assert.equal(run1.state, 'rolled back');
    assert.match(run1.detail, new RegExp(`^0 undone, 1 not undone: ${STEPS[0]} \\(the bridge is not ours\\); run the rollback again once they can be undone: kube-renumber rollback `));
    // a run started again after the rollback is that run's state, not the rollback's
    journal(state, [...stopped, ['rollback-start'], ['rollback-end', undefined, '1 undone, 0 not undone'], ['run-start', undefined, 'apply'], ['step-start', STEPS[0]]]);
    run1 = await status();
    assert.equal(run1.state, 'interrupted');
    assert.match(run1.detail, /resume it: kube-renumber resume /);
  });
});

describe('localLockState', () => {
  it('absent, stale (a pid that is gone, or a torn file), another host\'s; something else there is an input error', () => {
    const d = tmp();
    const p = join(d, 'lock');
    assert.deepEqual(localLockState(p), { state: 'absent' });
    writeFileSync(p, JSON.stringify({ pid: 2 ** 22 + 4321, holder: 'dead', since: 't' }));
    assert.deepEqual(localLockState(p), { state: 'stale', pid: 2 ** 22 + 4321, holder: 'dead', since: 't' });
    writeFileSync(p, '{"pid":');
    assert.deepEqual(localLockState(p), { state: 'stale' });
    writeFileSync(p, JSON.stringify({ pid: process.pid, holder: 'me' }));
    assert.deepEqual(localLockState(p), { state: 'held', pid: process.pid, holder: 'me' });
    writeFileSync(p, JSON.stringify({ pid: process.pid, holder: 'me@elsewhere.example/r/1-a' }));
    assert.equal(localLockState(p).state, 'elsewhere');
    const dirLock = join(d, 'dir-lock');
    mkdirSync(dirLock);
    assert.throws(() => localLockState(dirLock), (e: unknown) => e instanceof InputError && /is a directory/.test(e.message));
  });
});
