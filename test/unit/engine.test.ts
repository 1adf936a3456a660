import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BackupStore, backupFileName } from '../../src/engine/backup.ts';
import { completedSteps, Journal, readJournal } from '../../src/engine/journal.ts';
import { acquireLocalLock, localLockState, LockedError } from '../../src/engine/lock.ts';
import { isTransient, withRetry } from '../../src/engine/retry.ts';
import { NOTHING_TO_DO, rollbackSteps, runSteps, type Step, type StepContext } from '../../src/engine/runner.ts';
import { KubeApiError } from '../../src/kube/client.ts';

install();

const tmp = () => mkdtempSync(join(tmpdir(), 'kr-engine-'));
const mode = (p: string) => statSync(p).mode & 0o777;

function ctxIn(dir: string, run = 'r1'): StepContext {
  return {
    client: undefined as never,
    backups: new BackupStore(join(dir, 'backups'), run),
    journal: new Journal(join(dir, 'journal.jsonl'), run),
    dryRun: 'none',
    log: () => {},
  };
}

describe('journal and backups', () => {
  it('journal lines are durable JSON, 0600, and a torn last line is ignored', () => {
    const d = tmp();
    const j = new Journal(join(d, 'j.jsonl'), 'run-1');
    j.append('step-start', { step: 'a' });
    j.append('step-done', { step: 'a' });
    appendFileSync(join(d, 'j.jsonl'), '{"ts":"2026-');
    assert.equal(mode(join(d, 'j.jsonl')), 0o600);
    const e = readJournal(join(d, 'j.jsonl'));
    assert.deepEqual(e.map((x) => x.event), ['step-start', 'step-done']);
    assert.deepEqual(completedSteps(e), ['a']);
  });

  it('backups are one 0600 file per object in a 0700 directory, and the first backup wins', () => {
    const d = tmp();
    const b = new BackupStore(join(d, 'b'), 'run-1');
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { clusterIP: '10.0.0.5' } };
    const p = b.save(svc);
    b.save({ ...svc, spec: { clusterIP: '10.9.9.9' } });
    assert.equal(mode(join(d, 'b')), 0o700);
    assert.equal(mode(p), 0o600);
    assert.equal(readdirSync(join(d, 'b')).filter((f) => f.endsWith('.json')).length, 1);
    assert.equal(b.load({ apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'web' })?.spec.clusterIP, '10.0.0.5');
    assert.equal(b.all().length, 1);
    assert.equal(backupFileName({ apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', name: 'kubernetes' }), 'networking.k8s.io_ServiceCIDR__cluster_kubernetes.json');
  });
});

describe('local lock', () => {
  it('stops a second holder and is released', () => {
    const d = tmp();
    const l = acquireLocalLock(join(d, 'lock'), 'me');
    assert.equal(mode(join(d, 'lock')), 0o600);
    // a live other pid (our parent) holds it
    appendFileSync(join(d, 'lock2'), JSON.stringify({ pid: process.ppid, holder: 'other' }));
    assert.throws(() => acquireLocalLock(join(d, 'lock2'), 'me'), LockedError);
    l.release();
    const again = acquireLocalLock(join(d, 'lock'), 'me');
    again.release();
  });

  it('records when its process started, and takes a lock whose pid now belongs to another process (a pid used again) for stale', () => {
    const d = tmp();
    const l = acquireLocalLock(join(d, 'lock'), 'me');
    const rec = JSON.parse(readFileSync(join(d, 'lock'), 'utf8'));
    // read here from /proc, as the kernel gives it: "<boot id>:<starttime>" (field 22 of /proc/<pid>/stat)
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    assert.equal(rec.start, `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}:${ticks}`);
    l.release();
    // the parent is alive; a lock naming its pid with its own start is held, with another start it is stale
    const parent = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    const parentStart = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}:${parent.slice(parent.lastIndexOf(')') + 2).split(' ')[19]}`;
    writeFileSync(join(d, 'held'), JSON.stringify({ pid: process.ppid, holder: 'other', start: parentStart }));
    assert.equal(localLockState(join(d, 'held')).state, 'held');
    assert.throws(() => acquireLocalLock(join(d, 'held'), 'me'), LockedError);
    writeFileSync(join(d, 'reused'), JSON.stringify({ pid: process.ppid, holder: 'before a reboot', start: `00000000-0000-0000-0000-000000000000:${ticks}` }));
    assert.equal(localLockState(join(d, 'reused')).state, 'stale');
    const taken = acquireLocalLock(join(d, 'reused'), 'me');
    assert.equal(JSON.parse(readFileSync(join(d, 'reused'), 'utf8')).pid, process.pid);
    taken.release();
  });

  it('takes over a lock left by a dead process', () => {
    const d = tmp();
    appendFileSync(join(d, 'lock'), JSON.stringify({ pid: 2 ** 22 + 12345, holder: 'gone' }));
    const l = acquireLocalLock(join(d, 'lock'), 'me');
    l.release();
  });
});

describe('retry', () => {
  it('retries 429/5xx with growing delays, not 409 or 404', async () => {
    const delays: number[] = [];
    let n = 0;
    const v = await withRetry(async () => {
      if (++n < 4) throw new KubeApiError('PUT', '/x', n === 1 ? 429 : 503, undefined, 'busy');
      return 'ok';
    }, { sleep: async (ms) => { delays.push(ms); }, baseDelayMs: 100 });
    assert.equal(v, 'ok');
    assert.equal(delays.length, 3);
    assert.ok(delays[2]! > delays[0]!);
    assert.equal(isTransient(new KubeApiError('PUT', '/x', 409, 'Conflict', 'c')), false);
    await assert.rejects(withRetry(async () => { throw new KubeApiError('GET', '/x', 404, 'NotFound', 'gone'); }, { sleep: async () => {} }), /gone/);
    let tries = 0;
    await assert.rejects(withRetry(async () => { tries++; throw new KubeApiError('GET', '/x', 500, undefined, 'boom'); }, { attempts: 3, sleep: async () => {} }), /boom/);
    assert.equal(tries, 3);
  });
});

/**
 * A tiny world of named flags stands in for cluster state so the runner's control flow (skip, gate,
 * confirm, verify, crash and resume, rollback) can be checked at every point.
 */
function world() {
  const state = new Map<string, number>();
  const applies: string[] = [];
  const step = (id: string, extra: Partial<Step> = {}): Step => ({
    id, title: `set ${id}`, kind: 'action',
    check: async () => state.has(id),
    backup: async () => [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: id, namespace: 'w' }, data: { v: String(state.get(id) ?? 'none') } }],
    apply: async () => { applies.push(id); state.set(id, 1); },
    verify: async () => (state.get(id) === 1 ? undefined : `${id} not set`),
    rollback: async () => { state.delete(id); },
    ...extra,
  });
  return { state, applies, step };
}

describe('runner', () => {
  it('runs steps in order, skips what is done, journals every transition', async () => {
    const w = world();
    w.state.set('b', 1);
    const c = ctxIn(tmp());
    const r = await runSteps([w.step('a'), w.step('b'), w.step('c')], c);
    assert.deepEqual(r, { status: 'completed', applied: 2, skipped: 1 });
    assert.deepEqual(w.applies, ['a', 'c']);
    const events = c.journal.entries().map((e) => `${e.event}:${e.step ?? ''}`);
    assert.deepEqual(events.filter((e) => e.startsWith('step-skip')), ['step-skip:b']);
    assert.ok(events.indexOf('backup:a') < events.indexOf('applied:a'));
    assert.equal(c.backups.all().length, 2);
  });

  it('a skip says "nothing to do" for a step no run reached before, "already done" for one an earlier run started', async () => {
    const w = world();
    w.state.set('b', 1);
    const dir = tmp();
    const skips = async (c: StepContext, steps: Step[]) => {
      const seen: Record<string, string | undefined> = {};
      await runSteps(steps, { ...c, progress: (e) => { if (e.type === 'step' && e.state === 'skip') seen[e.step] = e.detail; } });
      return seen;
    };
    // b was never reached: its check holds the first time, nothing was done
    const first = await skips(ctxIn(dir), [w.step('a'), w.step('b'), w.step('c', { apply: async () => { throw new Error('stop'); } })]);
    assert.deepEqual(first, { b: NOTHING_TO_DO }, 'the first run skips b only, and fails at c');
    const journal = readJournal(join(dir, 'journal.jsonl'));
    assert.deepEqual(journal.filter((e) => e.event === 'step-skip').map((e) => `${e.step}: ${e.detail}`), [`b: ${NOTHING_TO_DO}`]);
    // resumed: a and b were reached before, so their skips say already done
    assert.deepEqual(await skips(ctxIn(dir, 'r2'), [w.step('a'), w.step('b'), w.step('c')]), { a: 'already done', b: 'already done' });
  });

  it('stops at a gate until its condition holds, and at a confirm step unless --yes', async () => {
    const w = world();
    const c = ctxIn(tmp());
    let restarted = false;
    const steps: Step[] = [
      w.step('a'),
      { id: 'gate', title: 'restart the apiservers', kind: 'gate', check: async () => restarted, instructions: ['do it'] },
      { id: 'ok', title: 'continue to tier 2?', kind: 'confirm', check: async () => false },
      w.step('b'),
    ];
    const r1 = await runSteps(steps, c);
    assert.equal(r1.status, 'gate');
    assert.deepEqual(w.applies, ['a']);
    restarted = true;
    const r2 = await runSteps(steps, c);
    assert.equal(r2.status, 'declined');
    const r3 = await runSteps(steps, c, { yes: true });
    assert.equal(r3.status, 'completed');
    assert.deepEqual(w.applies, ['a', 'b']);
  });

  it('stops at the first failed verification', async () => {
    const w = world();
    const c = ctxIn(tmp());
    const bad = w.step('b', { apply: async () => { w.state.set('b', 2); } });
    const r = await runSteps([w.step('a'), bad, w.step('c')], c);
    assert.equal(r.status, 'failed');
    assert.match((r as { message: string }).message, /b not set/);
    assert.equal(w.state.has('c'), false);
  });

  it('a crash after any transition, then resume, ends in the same state with each step applied once', async () => {
    const reference = world();
    await runSteps(['a', 'b', 'c'].map((id) => reference.step(id)), ctxIn(tmp()));
    for (const point of ['backup', 'applied', 'done', 'skip']) {
      for (const at of ['a', 'b', 'c']) {
        const w = world();
        if (point === 'skip') w.state.set(at, 1);
        const steps = ['a', 'b', 'c'].map((id) => w.step(id));
        const c = ctxIn(tmp());
        await assert.rejects(runSteps(steps, c, { afterEvent: (e, s) => { if (e === point && s === at) throw new Error('crash'); } }), /crash/);
        const r = await runSteps(steps, c);
        assert.equal(r.status, 'completed', `${point}@${at}`);
        assert.deepEqual([...w.state.entries()].sort(), [...reference.state.entries()].sort(), `${point}@${at}`);
        assert.equal(new Set(w.applies).size, w.applies.length, `no step applied twice (${point}@${at}): ${w.applies}`);
        // the original state survives in the backups
        assert.ok(c.backups.all().every((o) => o.data?.v === 'none' || point === 'skip'));
      }
    }
  });

  it('rolls back completed steps in reverse and reports what it cannot undo', async () => {
    const w = world();
    const c = ctxIn(tmp());
    const order: string[] = [];
    const steps = [
      w.step('a', { rollback: async () => { order.push('a'); w.state.delete('a'); } }),
      w.step('b', { rollback: undefined }),
      w.step('c', { rollback: async () => { order.push('c'); w.state.delete('c'); } }),
    ];
    await runSteps(steps, c);
    const r = await rollbackSteps(steps, c);
    assert.deepEqual(order, ['c', 'a']);
    assert.deepEqual(r.undone, ['c', 'a']);
    assert.deepEqual(r.notUndone.map((x) => x.step), ['b']);
    assert.deepEqual(completedSteps(c.journal.entries()), ['b']);
    // the rollback's end is journaled (status tells an ended rollback from a killed one by it)
    const last = c.journal.entries().at(-1)!;
    assert.deepEqual([last.event, last.detail], ['rollback-end', '2 undone, 1 not undone']);
  });

  it('rolls back a step that started and did not finish, first, only when its rollback undoes a part', async () => {
    const w = world();
    const c = ctxIn(tmp());
    const order: string[] = [];
    const steps = [
      w.step('a', { rollback: async () => { order.push('a'); } }),
      { ...w.step('b', { rollback: async () => { order.push('b'); } }), rollbackPartial: true },
      w.step('c', { rollback: async () => { order.push('c'); } }),
    ];
    // killed inside b: a done, b started
    await assert.rejects(runSteps(steps, c, { afterEvent: (e, s) => { if (e === 'backup' && s === 'b') throw new Error('crash'); } }), /crash/);
    const r = await rollbackSteps(steps, c);
    assert.deepEqual(order, ['b', 'a']);
    assert.deepEqual(r.undone, ['b', 'a']);
    // rolled back: neither is taken again by a second rollback
    order.length = 0;
    assert.deepEqual((await rollbackSteps(steps, c)).undone, []);
    // without rollbackPartial a started step is left alone (its rollback could undo what it never did)
    const c2 = ctxIn(tmp());
    const plain = steps.map((s) => ({ ...s, rollbackPartial: false }));
    await assert.rejects(runSteps(plain, c2, { afterEvent: (e, s) => { if (e === 'backup' && s === 'b') throw new Error('crash'); } }), /crash/);
    order.length = 0;
    assert.deepEqual((await rollbackSteps(plain, c2)).undone, ['a']);
  });
});

describe('runner: superseded steps', () => {
  it('a step whose effect a later step removed on purpose is not redone on resume', async () => {
    const w = world();
    const c = ctxIn(tmp());
    const removeA: Step = { id: 'remove-a', title: 'remove a', kind: 'action', check: async () => !w.state.has('a'),
      apply: async () => { w.state.delete('a'); } };
    const steps = [{ ...w.step('a'), supersededBy: ['remove-a'] }, removeA, w.step('b')];
    // crash right after remove-a was applied
    await assert.rejects(runSteps(steps, c, { afterEvent: (e, s) => { if (e === 'applied' && s === 'remove-a') throw new Error('crash'); } }), /crash/);
    const r = await runSteps(steps, c);
    assert.equal(r.status, 'completed');
    assert.equal(w.state.has('a'), false, 'a stays removed');
    assert.deepEqual(w.applies, ['a', 'b']);
    assert.ok(c.journal.entries().some((e) => e.event === 'step-skip' && e.step === 'a' && /superseded by remove-a/.test(e.detail ?? '')));
  });
});

/** The combined Service + Pod CIDR plan of examples/kops-tailscale. */
async function combinedExamplePlan() {
  const { buildMigrationPlan } = await import('../../src/plan/plan.ts');
  const { readInventoryFiles } = await import('../../src/cluster/files.ts');
  const { buildSnapshot } = await import('../../src/cluster/build.ts');
  const root = new URL('../../examples/kops-tailscale', import.meta.url).pathname;
  const snap = buildSnapshot(await readInventoryFiles([root]));
  return buildMigrationPlan(snap, { service: { target: '172.24.0.0/15' }, pod: { target: '10.32.0.0/13' } });
}

describe('pod executor: node hook and plan routing', () => {
  it('runs the node hook with KUBE_RENUMBER_NODE, reports its exit code and output tail', async () => {
    const { runHook } = await import('../../src/pod-paths/node/hook.ts');
    const d = tmp();
    const logs: string[] = [];
    await runHook(`echo "registered $KUBE_RENUMBER_NODE" > ${join(d, 'out')}; echo done`, 'node-7', 10_000, (m) => logs.push(m));
    const { readFileSync } = await import('node:fs');
    assert.equal(readFileSync(join(d, 'out'), 'utf8').trim(), 'registered node-7');
    assert.match(logs.join('\n'), /node hook \(node-7\): done/);
    await assert.rejects(runHook('echo nope >&2; exit 3', 'n1', 10_000, () => {}), /node hook for n1 exited 3: nope/);
    await assert.rejects(runHook('sleep 5', 'n2', 200, () => {}), /killed \(SIGKILL, timeout/);
  });

  it('routes every step of a combined plan to the executor that owns it', async () => {
    const { PlanExecutor } = await import('../../src/engine/plan-executor.ts');
    const plan = await combinedExamplePlan();
    const ex = new PlanExecutor(plan, { token: 't' });
    const steps = ex.steps();
    assert.deepEqual(steps.map((s) => s.id), plan.steps.map((s) => s.id));
    const podIds = plan.steps.filter((s) => ex.pod!.handles(s)).map((s) => s.id);
    assert.ok(podIds.includes('restart-pods') && podIds.includes('pod-cidr-config') && !podIds.includes('restart-apiservers'));
    assert.throws(() => new PlanExecutor({ ...plan, spec: { podCIDR: plan.spec.podCIDR } }, { token: 't' }).steps(), /has no spec.serviceCIDR/);
  });
});

describe('runner: --only / --skip', () => {
  it('--skip leaves a step out, journals it as excluded and never as done', async () => {
    const w = world();
    const c = ctxIn(tmp());
    const r = await runSteps(['a', 'b', 'c'].map((id) => w.step(id)), c, { select: { skip: new Set(['b']) } });
    assert.deepEqual(r, { status: 'completed', applied: 2, skipped: 0, excluded: 1 });
    assert.deepEqual(w.applies, ['a', 'c']);
    assert.ok(c.journal.entries().some((e) => e.event === 'step-excluded' && e.step === 'b' && /--skip/.test(e.detail ?? '')));
    assert.ok(!c.journal.entries().some((e) => e.step === 'b' && e.event === 'step-start'), 'an excluded step is never started');
    assert.deepEqual(completedSteps(c.journal.entries()), ['a', 'c']);
  });

  it('--only runs the named steps once the steps before them are done, and leaves the later ones alone', async () => {
    const w = world();
    w.state.set('a', 1);
    const c = ctxIn(tmp());
    const steps = [w.step('a'), { id: 'ok', title: 'go on?', kind: 'confirm' as const, check: async () => false }, w.step('b'), w.step('c')];
    const r = await runSteps(steps, c, { select: { only: new Set(['b']) } });
    assert.deepEqual(r, { status: 'completed', applied: 1, skipped: 0, excluded: 2 });
    assert.deepEqual(w.applies, ['b']);
    assert.equal(w.state.has('c'), false, 'the step after the selection is not run');
    assert.ok(!c.journal.entries().some((e) => e.step === 'c'), 'nor journaled');
  });

  it('--only stops, changing nothing, when a step before the selection is not done; --skip that step lets it run', async () => {
    const w = world();
    const c = ctxIn(tmp());
    let holds = false;
    const steps: Step[] = [w.step('a'), { id: 'gate', title: 'restart', kind: 'gate', check: async () => holds }, w.step('b')];
    const r1 = await runSteps(steps, c, { select: { only: new Set(['b']) } });
    assert.equal(r1.status, 'blocked');
    assert.match((r1 as { message: string }).message, /a comes before b and is not done/);
    assert.deepEqual(w.applies, []);
    w.state.set('a', 1);
    const r2 = await runSteps(steps, c, { select: { only: new Set(['b']) } });
    assert.equal(r2.status, 'blocked', 'a gate that does not hold blocks too');
    assert.equal((r2 as { step: string }).step, 'gate');
    holds = true;
    const r3 = await runSteps(steps, c, { select: { only: new Set(['b']) } });
    assert.equal(r3.status, 'completed');
    assert.deepEqual(w.applies, ['b']);
    const w2 = world();
    const r4 = await runSteps([w2.step('x'), w2.step('y')], ctxIn(tmp()), { select: { only: new Set(['y']), skip: new Set(['x']) } });
    assert.equal(r4.status, 'completed');
    assert.deepEqual(w2.applies, ['y']);
  });

  it('parseSelection expands ids, comma lists and * patterns, and refuses names that match nothing', async () => {
    const { parseSelection } = await import('../../src/engine/selection.ts');
    const ids = ['create-target-servicecidr', 'move-tier-1-batch-1', 'move-tier-1-batch-2', 'move-tier-2-batch-1', 'restart-apiservers', 'verify'];
    assert.equal(parseSelection([], [], ids), undefined);
    const s = parseSelection(['move-tier-1-*,verify'], ['move-tier-1-batch-2'], ids)!;
    assert.deepEqual([...s.only!], ['move-tier-1-batch-1', 'move-tier-1-batch-2', 'verify']);
    assert.deepEqual([...s.skip!], ['move-tier-1-batch-2']);
    assert.deepEqual([...parseSelection(['*'], [], ids)!.only!], ids);
    assert.throws(() => parseSelection(['move-tier-9-*'], [], ids), /--only "move-tier-9-\*" names no step of the plan \(its steps: create-target/);
    assert.throws(() => parseSelection([], ['verify,'], ids), /--skip needs a step id/);
    assert.throws(() => parseSelection([], ['a b'], ids), /is not a step id or pattern/);
    assert.throws(() => parseSelection(['verify'], ['verify'], ids), /leave no step to run/);
  });
});

describe('plan steps: typed gates and supersessions set by the planner', () => {
  it('every gate names its condition, each executor owns its conditions, and supersededBy names later steps', async () => {
    const { PlanExecutor } = await import('../../src/engine/plan-executor.ts');
    const { SERVICE_GATE_CONDITIONS, POD_GATE_CONDITIONS } = await import('../../src/plan/plan.ts');
    const plan = await combinedExamplePlan();
    const ex = new PlanExecutor(plan, { token: 't' });
    for (const s of plan.steps) {
      if (s.kind !== 'gate') continue;
      const pod = (POD_GATE_CONDITIONS as readonly string[]).includes(s.gate.condition);
      assert.ok(pod || (SERVICE_GATE_CONDITIONS as readonly string[]).includes(s.gate.condition), `${s.id}: ${s.gate.condition}`);
      assert.equal(ex.pod!.handles(s), pod, `${s.id} goes to the ${pod ? 'Pod' : 'Service'} executor`);
    }
    const ids = plan.steps.map((s) => s.id);
    const superseded = plan.steps.filter((s) => (s.supersededBy ?? []).length > 0);
    assert.ok(superseded.some((s) => s.kind === 'move-services') && superseded.some((s) => s.kind === 'scale-critical'));
    for (const s of superseded) for (const by of s.supersededBy!) assert.ok(ids.indexOf(by) > ids.indexOf(s.id), `${s.id} superseded by a later ${by}`);
    const steps = ex.steps();
    for (const [i, s] of steps.entries()) assert.deepEqual(s.supersededBy ?? [], plan.steps[i]!.supersededBy ?? [], s.id);
    // a gate renamed by hand keeps its condition: the executor never looks at the id
    const renamed = { ...plan, steps: plan.steps.map((s) => (s.kind === 'gate' && s.gate.condition === 'pod-cidr-config' ? { ...s, id: 'my-own-gate' } : s)) };
    assert.ok(new PlanExecutor(renamed, { token: 't' }).pod!.handles(renamed.steps.find((s) => s.id === 'my-own-gate')!));
  });
});
