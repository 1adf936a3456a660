/**
 * The state of a plan's run, for `status PLAN` and `status --fleet DIR`: from its journal (steps done, how its last
 * run ended) and, for a run whose journal has no end, from the lock file of its state directory: a process of this
 * machine still holding it is running; otherwise the run was interrupted. A run of another machine holds no lock
 * here: status says so rather than guess (the cluster's Lease is what tells, and status reads files only).
 */
import { join } from 'node:path';
import { completedSteps, type JournalEntry } from '../engine/journal.ts';
import { LEASE_NAME, LEASE_NAMESPACE, localLockState } from '../engine/lock.ts';
import type { MigrationPlan } from '../plan/index.ts';

export type RunState = 'not started' | 'running' | 'interrupted' | 'on another machine' | 'waiting at gate' | 'failed' | 'stopped' | 'completed' | 'rolled back';

export interface RunStatus {
  state: RunState;
  done: number;
  steps: number;
  /** The last step the journal names. */
  step?: string;
  /** The time of the journal's last entry. */
  since?: string;
  /** A failed step's message, why a run stopped, or (for a run without its end) who holds it and what to do. */
  detail?: string;
  /** The lock file's holder: the process of a running run, the gone one of an interrupted run, another host's. */
  lock?: { pid?: number; holder?: string; since?: string; host?: string };
}

const LEASE = `the Lease ${LEASE_NAMESPACE}/${LEASE_NAME} in the cluster`;

/**
 * `entries` is the run's journal; `journalHere` false when it is the cluster's copy (none in the state directory:
 * the run was on another machine). `resume` is the command that resumes this run.
 */
export function runStatus(plan: MigrationPlan, entries: readonly JournalEntry[], opts: { stateDir: string; resume: string; rollback: string; journalHere?: boolean }): RunStatus {
  const done = new Set(completedSteps([...entries]));
  const steps = plan.steps.length;
  const base = { done: plan.steps.filter((s) => done.has(s.id)).length, steps };
  const last = entries.at(-1);
  // A run of this machine that holds the lock but has journaled nothing yet (it waits for the cluster's Lease, or
  // reads the run's copy in the cluster): after an ended journal (or none) its lock is newer than the last entry.
  if (last === undefined || last.event === 'run-end' || last.event === 'rollback-end') {
    const lock = localLockState(join(opts.stateDir, 'lock'));
    if (lock.state === 'held' && (last === undefined || (lock.since !== undefined && lock.since > last.ts))) {
      const { state: _, ...about } = lock;
      return { ...base, ...(last ? { since: last.ts } : {}), state: 'running', lock: about,
        detail: `${lock.pid !== undefined ? `pid ${lock.pid}` : 'a process'} of this machine holds its lock${lock.since !== undefined ? ` since ${lock.since}` : ''} and has started no step yet: it waits for ${LEASE} or reads the run's state` };
    }
  }
  if (last === undefined) return { ...base, state: 'not started' };
  const lastStep = entries.findLast((e) => e.step !== undefined);
  const at = { ...(lastStep?.step ? { step: lastStep.step } : {}), since: last.ts };
  if (base.done === steps) return { ...base, ...at, state: 'completed' };
  // the last thing run was a rollback: ended (rollback-end), or not
  const rollbackStart = entries.findLastIndex((e) => e.event === 'rollback-start');
  const rollingBack = rollbackStart > entries.findLastIndex((e) => e.event === 'run-start');
  const rollbackEnd = entries.findLastIndex((e) => e.event === 'rollback-end');
  if (rollingBack && rollbackEnd > rollbackStart) {
    const end = entries[rollbackEnd]!;
    const failed = entries.slice(rollbackStart).filter((e) => e.event === 'rollback-failed');
    return { ...base, ...at, state: 'rolled back',
      detail: `${end.detail ?? 'ended'}${failed.length > 0 ? `: ${failed.map((e) => `${e.step ?? 'a step'} (${e.detail ?? 'not undone'})`).join('; ')}; run the rollback again once they can be undone: ${opts.rollback}` : ''}` };
  }
  const again = rollingBack ? `run the rollback again: ${opts.rollback}` : `resume it: ${opts.resume}`;
  if (last.event === 'run-end') {
    const failed = entries.findLast((e) => e.event === 'step-failed');
    if (last.detail === 'failed') return { ...base, ...at, state: 'failed', ...(failed?.detail ? { detail: failed.detail } : {}) };
    if (last.detail === 'gate') return { ...base, ...at, state: 'waiting at gate' };
    return { ...base, ...at, state: 'stopped', ...(last.detail ? { detail: last.detail } : {}) };
  }
  // no run-end after the last entry: a run going on, or one that ended without it (an error, a kill, a lost machine)
  const lock = localLockState(join(opts.stateDir, 'lock'));
  const holder = lock.state === 'absent' ? undefined : (({ state: _, ...about }) => about)(lock);
  const withLock = holder ? { lock: holder } : {};
  const pid = holder?.pid !== undefined ? `pid ${holder.pid}` : 'a process';
  const since = holder?.since !== undefined ? ` since ${holder.since}` : '';
  switch (lock.state) {
    case 'held':
      return { ...base, ...at, state: 'running', ...withLock, detail: `${rollingBack ? 'rolling back: ' : ''}${pid} of this machine holds its lock${since}` };
    case 'elsewhere':
      return { ...base, ...at, state: 'on another machine', ...withLock,
        detail: `its lock names ${pid} of host ${lock.host}${since}: whether that run goes on cannot be seen from this machine; ${LEASE} shows the run that holds it; `
          + `if none does, ${again}` };
    case 'stale':
    case 'absent':
      if (opts.journalHere === false) {
        return { ...base, ...at, state: 'on another machine', ...withLock,
          detail: `the journal is the cluster's copy (none in ${opts.stateDir}): whether that run goes on cannot be seen from this machine; ${LEASE} shows the run that holds it; `
            + `if none does, ${again}` };
      }
      return { ...base, ...at, state: 'interrupted', ...withLock,
        detail: `the journal has no ${rollingBack ? 'rollback-end' : 'run-end'} and no process of this machine holds its lock${holder?.pid !== undefined ? ` (pid ${holder.pid}${since} is gone)` : ''}: `
          + `${again} (if a run goes on from another machine, it holds ${LEASE} and ${rollingBack ? 'rollback' : 'resume'} stops with exit 8)` };
    default: {
      const never: never = lock;
      throw new Error(`unknown lock state ${JSON.stringify(never)}`);
    }
  }
}
