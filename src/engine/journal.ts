/**
 * The journal: an append-only JSON-lines log of every step's progress, fsynced line by line. It is a log,
 * not the source of truth: on resume each step asks the cluster whether it is done. The journal tells
 * `status` what happened and `rollback` which steps completed, in which order.
 */
import { existsSync, readFileSync } from 'node:fs';
import { appendLineDurable } from './files.ts';

export type JournalEvent =
  | 'run-start' | 'run-end'
  | 'step-start' | 'step-skip' | 'backup' | 'applied' | 'verified' | 'step-done' | 'step-failed'
  | 'gate' | 'confirm' | 'rollback-start' | 'rolled-back' | 'rollback-failed'
  /** Figures of a step (e.g. restart waves: JSON with totalSeconds, sumSeconds, maxInFlight, workloads). */
  | 'report';

export interface JournalEntry {
  ts: string;
  run: string;
  event: JournalEvent;
  step?: string;
  detail?: string;
  /** Objects touched (kind/ns/name) or backup files written. */
  objects?: string[];
}

export class Journal {
  readonly path: string;
  readonly run: string;
  constructor(path: string, run: string) {
    this.path = path;
    this.run = run;
  }

  append(event: JournalEvent, fields: Omit<JournalEntry, 'ts' | 'run' | 'event'> = {}): JournalEntry {
    const entry: JournalEntry = { ts: new Date().toISOString(), run: this.run, event, ...fields };
    appendLineDurable(this.path, JSON.stringify(entry));
    return entry;
  }

  /** All entries; a torn last line (a crash mid-write) is ignored. */
  entries(): JournalEntry[] {
    return readJournal(this.path);
  }
}

export function readJournal(path: string): JournalEntry[] {
  if (!existsSync(path)) return [];
  const out: JournalEntry[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as JournalEntry);
    } catch {
      // a torn write at the very end after a crash
    }
  }
  return out;
}

/** Step ids whose last recorded state is done (done or skipped as already done), in completion order. */
export function completedSteps(entries: JournalEntry[]): string[] {
  const done: string[] = [];
  for (const e of entries) {
    if (!e.step) continue;
    if (e.event === 'step-done' || e.event === 'step-skip') {
      if (!done.includes(e.step)) done.push(e.step);
    } else if (e.event === 'rolled-back') {
      const i = done.indexOf(e.step);
      if (i >= 0) done.splice(i, 1);
    }
  }
  return done;
}
