/**
 * The step runner, shared by every migration. Steps run in order; each one
 *   1. checks the live state first (already done → skip: the cluster, not the journal, says what is done),
 *   2. stops at a gate whose condition does not hold yet (a person or pipeline must act; `resume` re-checks),
 *   3. asks for confirmation at a confirm step unless --yes,
 *   4. backs up every object it will change (durably, before touching it),
 *   5. applies (idempotently; transient API errors are retried with backoff inside the step),
 *   6. verifies, and stops the run at the first failed verification,
 * journaling each transition. A crash anywhere leaves a state from which `resume` continues: a step that
 * was applied but not journaled is seen as done by its check.
 */
import { type ErrorKind, errorLine, UserError } from '../errors.ts';
import type { KubeObject } from '../cluster/types.ts';
import type { KubeClient } from '../kube/client.ts';
import type { BackupStore } from './backup.ts';
import { refKey, refOf } from './backup.ts';
import { completedSteps, reachedSteps, type Journal } from './journal.ts';
import { withProgress } from './toolkit.ts';

export type DryRun = 'none' | 'client' | 'server';

/**
 * What a run is doing, as data (the CLI draws a status line on a terminal, or prints one line per event):
 * - step: the runner starts, finishes, skips or stops at step n of total;
 * - count: a step's items so far (Services moved 4 of 6, workloads restarted 12 of 40);
 * - inflight: what runs at once now (rollouts, with their names);
 * - wait / waited: a wait for the cluster (or a fixed delay) begins, with its limit, and ends (`ended`: it failed or
 *   timed out rather than saw its condition).
 */
export type ProgressEvent =
  | {
    type: 'step'; step: string; n: number; total: number; title: string; state: 'start' | 'done' | 'skip' | 'excluded' | 'gate' | 'confirm' | 'failed';
    /** With state 'skip': why (a step never reached before whose check holds has nothing to do; one reached before is already done). */
    detail?: string;
  }
  | { type: 'count'; what: string; done: number; total: number }
  | { type: 'inflight'; what: string; names: string[] }
  | { type: 'wait'; what: string; timeoutMs?: number }
  | { type: 'waited'; what: string; ms: number; ended?: 'failed' | 'timed-out' };

export interface StepContext {
  client: KubeClient;
  backups: BackupStore;
  journal: Journal;
  dryRun: DryRun;
  /** Progress detail (shown with -v). */
  log(msg: string): void;
  /** What the operator must see even without -v (lost pod state, blocked evictions). */
  warn?(msg: string): void;
  /** Progress as events (see ProgressEvent); waits inside a step reach it through the toolkit's poll too. */
  progress?(event: ProgressEvent): void;
}

export interface Step {
  id: string;
  title: string;
  kind: 'action' | 'gate' | 'confirm';
  /** Is this step's effect already in place (for a gate: does its condition hold)? Reads only. */
  check(ctx: StepContext): Promise<boolean>;
  /** The current objects this step will change or delete, to back up first. */
  backup?(ctx: StepContext): Promise<KubeObject[]>;
  apply?(ctx: StepContext): Promise<void>;
  /** undefined when the effect is verified; else what is wrong. */
  verify?(ctx: StepContext): Promise<string | undefined>;
  /** Undo the step where the API allows; throw with the reason where it does not. */
  rollback?(ctx: StepContext): Promise<void>;
  /**
   * The rollback also undoes a part of the step (it reads from the cluster what the step changed, each part on its
   * own: a wave of nodes of which some moved): a step that started but did not finish is rolled back too, first.
   */
  rollbackPartial?: boolean;
  /** For gates: what must be done before resume. */
  instructions?: string[];
  /**
   * Later steps that undo part of this step's effect on purpose (a bridge removed, a temporary ServiceCIDR
   * deleted). Once a run has reached one of them, every step before it was complete, and this step's check
   * must not bring back what the later step removed: it counts as done.
   */
  supersededBy?: string[];
}

/** `step` as built for plan step `p`, carrying the later steps the planner says supersede it. */
export function withPlanSupersessions(p: { supersededBy?: readonly string[] }, step: Step): Step {
  if (p.supersededBy && p.supersededBy.length > 0) step.supersededBy = [...p.supersededBy];
  return step;
}

export type RunResult =
  | { status: 'completed'; applied: number; skipped: number; excluded?: number }
  | { status: 'gate'; step: string; title: string; instructions: string[]; /** what the gate's check logged: why it does not hold yet */ seen?: string[] }
  | { status: 'blocked'; step: string; before: string; message: string }
  | { status: 'declined'; step: string }
  | { status: 'failed'; step: string; message: string };

export interface RunOptions {
  yes?: boolean;
  confirm?: (question: string) => Promise<boolean>;
  /** Called before each step; throwing stops the run (e.g. the cluster Lease was lost). */
  beforeStep?: (step: string) => void;
  /** Test hook: called after each journaled transition; throwing simulates a crash there. */
  afterEvent?: (event: string, step: string) => void;
  /** Which steps to run (--only / --skip); every step when absent. */
  select?: StepSelection;
}

/**
 * Like kubeadm's phases: `skip` steps are not run (journaled as excluded, never counted as done); with `only`,
 * just those steps run, every step before the last of them must already be done (a read-only check; confirm
 * steps pass, gates must hold) unless it is in `skip`, and the steps after the last of them are left alone.
 */
export interface StepSelection {
  skip?: ReadonlySet<string>;
  only?: ReadonlySet<string>;
}

/** Why the selection leaves a step out, or undefined when it runs. */
function exclusion(sel: StepSelection | undefined, id: string): string | undefined {
  if (sel?.skip?.has(id)) return 'excluded by --skip';
  if (sel?.only && !sel.only.has(id)) return 'not named by --only';
  return undefined;
}

/**
 * Back up objects found while applying (a workload that appeared after the backup phase, a bare pod of a
 * second round): saved durably unless a backup exists (the first one wins), and journaled like the backup
 * phase. Steps declare what they change in `backup`; this is the net for what no declaration could know.
 */
export function backUpLate(ctx: StepContext, objects: readonly KubeObject[], step?: string): void {
  if (ctx.dryRun === 'client') return;
  const fresh = objects.filter((o) => !ctx.backups.has(refOf(o)));
  for (const o of fresh) ctx.backups.save(o);
  if (fresh.length > 0) ctx.journal.append('backup', { ...(step ? { step } : {}), objects: fresh.map((o) => refKey(refOf(o))), detail: `${fresh.length} file(s), while applying` });
}

const FATAL_KINDS = new Set<ErrorKind>(['unreachable', 'forbidden', 'locked']);

/**
 * With --only, a step left out before a selected one must already be done (read-only: its check, or a later
 * step that supersedes it was reached; confirm steps pass). Returns the stop when it is not, else undefined.
 */
async function blockedBefore(steps: Step[], i: number, sel: StepSelection, ctx: StepContext, reached: ReadonlySet<string>): Promise<RunResult | undefined> {
  const step = steps[i]!;
  if (exclusion(sel, step.id) !== 'not named by --only' || step.kind === 'confirm') return undefined;
  if (step.supersededBy?.some((id) => reached.has(id)) || (await step.check(ctx))) return undefined;
  const before = steps.slice(i).find((s) => !exclusion(sel, s.id))!.id;
  return {
    status: 'blocked', step: step.id, before,
    message: `${step.id} comes before ${before} and is not done: run it first, or name it in --skip to leave it out on purpose`,
  };
}

/** What a step's skip says when no earlier run reached it and its check already holds. */
export const NOTHING_TO_DO = 'nothing to do, the cluster is already as this step leaves it';

export async function runSteps(steps: Step[], ctx: StepContext, opts: RunOptions = {}): Promise<RunResult> {
  let applied = 0;
  let skipped = 0;
  const mark = (event: string, step: string) => opts.afterEvent?.(event, step);
  const total = steps.length;
  const tell = (i: number, step: Step, state: Extract<ProgressEvent, { type: 'step' }>['state'], detail?: string) =>
    ctx.progress?.({ type: 'step', step: step.id, n: i + 1, total, title: step.title, state, ...(detail ? { detail } : {}) });
  let excluded = 0;
  // steps reached since the last rollback: a step started before a rollback supersedes nothing any more
  const reached = reachedSteps(ctx.journal.entries());
  const sel = opts.select;
  const lastOnly = sel?.only ? steps.map((s) => s.id).findLastIndex((id) => sel.only!.has(id) && !sel.skip?.has(id)) : steps.length - 1;
  for (const [i, step] of steps.entries()) {
    if (i > lastOnly) break;
    opts.beforeStep?.(step.id);
    const why = exclusion(sel, step.id);
    if (why) {
      const blocked = await blockedBefore(steps, i, sel!, ctx, reached);
      if (blocked) return blocked;
      ctx.journal.append('step-excluded', { step: step.id, detail: why });
      excluded++;
      mark('excluded', step.id);
      tell(i, step, 'excluded');
      continue;
    }
    ctx.journal.append('step-start', { step: step.id, detail: step.title });
    tell(i, step, 'start');
    const by = step.supersededBy?.find((id) => reached.has(id));
    if (by) {
      ctx.journal.append('step-skip', { step: step.id, detail: `superseded by ${by}` });
      skipped++;
      mark('skip', step.id);
      tell(i, step, 'skip');
      continue;
    }
    // a gate's check says why it does not hold yet: its log lines go with the stop, verbose or not
    const seen: string[] = [];
    const checkCtx: StepContext = step.kind === 'gate' ? { ...ctx, log: (m: string) => { seen.push(m); ctx.log(m); } } : ctx;
    if (await withProgress(ctx.progress, () => step.check(checkCtx))) {
      // a step no earlier run reached, whose check holds the first time it is asked, was never done: the cluster is
      // already as the step would leave it (e.g. sweep-stragglers with no Service left in a drained range)
      const detail = step.kind === 'gate' ? 'condition holds' : reached.has(step.id) ? 'already done' : NOTHING_TO_DO;
      ctx.journal.append('step-skip', { step: step.id, detail });
      skipped++;
      mark('skip', step.id);
      tell(i, step, 'skip', detail);
      continue;
    }
    if (step.kind === 'gate') {
      ctx.journal.append('gate', { step: step.id, detail: step.title });
      tell(i, step, 'gate');
      return { status: 'gate', step: step.id, title: step.title, instructions: step.instructions ?? [], ...(seen.length > 0 ? { seen } : {}) };
    }
    if (step.kind === 'confirm') {
      const ok = opts.yes || (opts.confirm ? await opts.confirm(step.title) : false);
      if (!ok) {
        ctx.journal.append('confirm', { step: step.id, detail: 'declined or not confirmed (use --yes)' });
        tell(i, step, 'confirm');
        return { status: 'declined', step: step.id };
      }
      ctx.journal.append('step-done', { step: step.id, detail: 'confirmed' });
      tell(i, step, 'done');
      continue;
    }
    if (ctx.dryRun === 'client') {
      ctx.log(`would ${step.title}`);
      continue;
    }
    const objects = step.backup ? await withProgress(ctx.progress, () => step.backup!(ctx)) : [];
    if (objects.length > 0) {
      const files = objects.map((o) => ctx.backups.save(o));
      ctx.journal.append('backup', { step: step.id, objects: objects.map((o) => refKey(refOf(o))), detail: `${files.length} file(s)` });
      mark('backup', step.id);
    }
    try {
      if (step.apply) await withProgress(ctx.progress, () => step.apply!(ctx));
    } catch (e) {
      const message = errorLine(e);
      ctx.journal.append('step-failed', { step: step.id, detail: message });
      tell(i, step, 'failed');
      // Unreachable cluster, missing permissions, a lost lock: the run cannot go on; keep their exit codes.
      if (e instanceof UserError && FATAL_KINDS.has(e.kind)) throw e;
      return { status: 'failed', step: step.id, message: `${step.title}: ${message}` };
    }
    ctx.journal.append('applied', { step: step.id });
    mark('applied', step.id);
    if (ctx.dryRun === 'server') continue;
    const problem = step.verify ? await withProgress(ctx.progress, () => step.verify!(ctx)) : undefined;
    if (problem) {
      ctx.journal.append('step-failed', { step: step.id, detail: problem });
      tell(i, step, 'failed');
      return { status: 'failed', step: step.id, message: `${step.title}: ${problem}` };
    }
    ctx.journal.append('verified', { step: step.id });
    ctx.journal.append('step-done', { step: step.id });
    applied++;
    mark('done', step.id);
    tell(i, step, 'done');
  }
  return { status: 'completed', applied, skipped, ...(sel ? { excluded } : {}) };
}

export interface RollbackResult {
  undone: string[];
  notUndone: Array<{ step: string; reason: string }>;
}

/** Undo completed steps in reverse order of completion, where each step can. */
export async function rollbackSteps(steps: Step[], ctx: StepContext): Promise<RollbackResult> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const entries = ctx.journal.entries();
  const completed = completedSteps(entries);
  // steps that started and neither finished nor were rolled back since, whose rollback undoes a part
  const partial: string[] = [];
  for (const e of entries) {
    if (!e.step || !byId.get(e.step)?.rollbackPartial) continue;
    if (e.event === 'step-start' && !partial.includes(e.step)) partial.push(e.step);
    else if ((e.event === 'rolled-back' || e.event === 'step-done' || e.event === 'step-skip') && partial.includes(e.step)) partial.splice(partial.indexOf(e.step), 1);
  }
  const done = [...completed, ...partial.filter((id) => !completed.includes(id))].reverse();
  const result: RollbackResult = { undone: [], notUndone: [] };
  ctx.journal.append('rollback-start', { detail: `${done.length} completed step(s)` });
  for (const id of done) {
    const step = byId.get(id);
    if (!step || step.kind !== 'action') continue;
    if (!step.rollback) {
      result.notUndone.push({ step: id, reason: 'this step cannot be undone' });
      continue;
    }
    try {
      await step.rollback(ctx);
      ctx.journal.append('rolled-back', { step: id });
      result.undone.push(id);
    } catch (e) {
      const reason = errorLine(e);
      ctx.journal.append('rollback-failed', { step: id, detail: reason });
      result.notUndone.push({ step: id, reason });
    }
  }
  // the rollback ran to its end (a killed one has none: status tells it apart)
  ctx.journal.append('rollback-end', { detail: `${result.undone.length} undone, ${result.notUndone.length} not undone` });
  return result;
}
