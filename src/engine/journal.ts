/**
 * The journal: an append-only JSON-lines log of every step's progress, fsynced line by line. It is a log,
 * not the source of truth: on resume each step asks the cluster whether it is done. The journal tells
 * `status` what happened and `rollback` which steps completed, in which order.
 *
 * Every line ends with "\n" when written. Reading: a last line without its "\n" that is not a whole entry is a
 * write torn by a crash and is skipped (with a warning); any other line that is not a journal entry makes the
 * journal unusable (InputError naming the file and the line). Before the first append after such a crash, the
 * torn bytes are moved to journal.jsonl.torn, so the next entry starts on a line of its own.
 */
import { appendFileSync, closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { InputError } from '../errors.ts';
import { appendLineDurable, decodeText, readRegularFile, statOrUndefined } from './files.ts';

export type JournalEvent =
  | 'run-start' | 'run-end'
  | 'step-start' | 'step-skip' | 'step-excluded' | 'backup' | 'applied' | 'verified' | 'step-done' | 'step-failed'
  | 'gate' | 'confirm' | 'rollback-start' | 'rolled-back' | 'rollback-failed' | 'rollback-end'
  /** Objects this run created (bridges, covers), as "<refKey>@<uid>": what moveBack and clean-ups may delete. */
  | 'created'
  /** Figures of a step (e.g. restart waves: JSON with totalSeconds, sumSeconds, maxInFlight, workloads). */
  | 'report';

export const JOURNAL_EVENTS: readonly JournalEvent[] = [
  'run-start', 'run-end', 'step-start', 'step-skip', 'step-excluded', 'backup', 'applied', 'verified', 'step-done', 'step-failed',
  'gate', 'confirm', 'rollback-start', 'rolled-back', 'rollback-failed', 'rollback-end', 'report', 'created',
];

/** The largest journal read (a run journals a few lines per object; this is far beyond any real cluster). */
export const MAX_JOURNAL_BYTES = 256 * 1024 * 1024;

export interface JournalEntry {
  ts: string;
  run: string;
  event: JournalEvent;
  step?: string;
  detail?: string;
  /** Objects touched (kind/ns/name) or backup files written. */
  objects?: string[];
}

export interface ReadJournalOptions {
  /** Told about a torn last line (skipped). */
  warn?: (message: string) => void;
}

export class Journal {
  readonly path: string;
  readonly run: string;
  private readonly warn?: (message: string) => void;
  private repaired = false;
  /** Told of every entry once it is durably appended (apply --events ndjson streams them). */
  onAppend?: (entry: JournalEntry) => void;
  /** Told of every entry once it is durably appended, to copy it to the cluster (cluster-state.ts). */
  mirror?: (entry: JournalEntry) => void;
  constructor(path: string, run: string, warn?: (message: string) => void) {
    this.path = path;
    this.run = run;
    this.warn = warn;
  }

  append(event: JournalEvent, fields: Omit<JournalEntry, 'ts' | 'run' | 'event'> = {}): JournalEntry {
    if (!this.repaired) {
      this.repairTail();
      this.repaired = true;
    }
    const entry: JournalEntry = { ts: new Date().toISOString(), run: this.run, event, ...fields };
    appendLineDurable(this.path, JSON.stringify(entry));
    this.mirror?.(entry);
    this.onAppend?.(entry);
    return entry;
  }

  /** All entries; a torn last line (a crash mid-write) is skipped. */
  entries(): JournalEntry[] {
    return readJournal(this.path);
  }

  /**
   * A journal whose last line has no "\n" (a crash mid-write): a whole entry gets its "\n"; a torn one is moved
   * to <journal>.torn and cut off, so the next entry is not glued to it.
   */
  private repairTail(): void {
    const scan = scanJournal(this.path);
    if (!scan || scan.tail === undefined) return;
    const fd = openSync(this.path, 'a'); // O_APPEND: the newline goes at the end; ftruncate works on it too
    try {
      if (scan.tail.whole) {
        appendFileSync(fd, '\n');
      } else {
        appendFileSync(`${this.path}.torn`, Buffer.concat([scan.tail.bytes, Buffer.from('\n')]), { mode: 0o600 });
        ftruncateSync(fd, scan.tail.offset);
        this.warn?.(`journal ${this.path}: line ${scan.tail.line} was torn by a crash mid-write; moved it to ${this.path}.torn`);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

interface Scan {
  entries: JournalEntry[];
  /** The last line when it has no "\n". */
  tail?: { line: number; offset: number; bytes: Buffer; whole: boolean };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)?.slice(0, 40) ?? String(v)}`;
}

/** Why `v` is not a journal entry, or undefined when it is one. */
export function journalEntryProblem(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return `${describe(v)}, not a journal entry (an object with ts, run and event)`;
  const o = v as Record<string, unknown>;
  for (const k of ['ts', 'run'] as const) if (typeof o[k] !== 'string') return `"${k}" is ${o[k] === undefined ? 'missing' : `${describe(o[k])}, not a string`}`;
  if (typeof o.event !== 'string' || !(JOURNAL_EVENTS as readonly string[]).includes(o.event)) {
    return `"event" is ${o.event === undefined ? 'missing' : describe(o.event)}, not one of ${JOURNAL_EVENTS.join(', ')}`;
  }
  for (const k of ['step', 'detail'] as const) if (o[k] !== undefined && typeof o[k] !== 'string') return `"${k}" is ${describe(o[k])}, not a string`;
  if (o.objects !== undefined && !(Array.isArray(o.objects) && o.objects.every((x) => typeof x === 'string'))) return '"objects" is not a list of strings';
  return undefined;
}

function scanJournal(path: string): Scan | undefined {
  if (!statOrUndefined(path, 'journal')) return undefined;
  const buf = readRegularFile(path, 'journal', MAX_JOURNAL_BYTES);
  const entries: JournalEntry[] = [];
  let tail: Scan['tail'];
  let start = 0;
  let line = 0;
  while (start < buf.length) {
    line++;
    const nl = buf.indexOf(0x0a, start);
    const end = nl < 0 ? buf.length : nl;
    const bytes = buf.subarray(start, end);
    const last = nl < 0;
    const text = decodeText(bytes);
    let problem: string | undefined;
    let value: unknown;
    if (text === undefined) {
      problem = 'not text (binary data)';
    } else if (text.trim() === '') {
      if (last) tail = { line, offset: start, bytes, whole: true };
      start = end + 1;
      continue;
    } else {
      try {
        value = JSON.parse(text);
        problem = journalEntryProblem(value);
      } catch {
        problem = 'not JSON';
      }
    }
    if (last) {
      // no "\n" after it: the last write may have been cut short by a crash
      if (problem === undefined) {
        entries.push(value as JournalEntry);
        tail = { line, offset: start, bytes, whole: true };
      } else {
        tail = { line, offset: start, bytes, whole: false };
      }
      break;
    }
    if (problem !== undefined) throw new InputError(`journal ${path}: line ${line}: ${problem}; the journal is damaged (fix or move it away; the cluster itself is the truth, resume re-checks every step)`);
    entries.push(value as JournalEntry);
    start = end + 1;
  }
  return { entries, tail };
}

/**
 * Every entry of the journal at `path` ([] when there is none). InputError when it is not a regular file, too
 * large, or has a line (other than a torn last one) that is not a journal entry.
 */
export function readJournal(path: string, opts: ReadJournalOptions = {}): JournalEntry[] {
  const scan = scanJournal(path);
  if (!scan) return [];
  if (scan.tail && !scan.tail.whole) opts.warn?.(`journal ${path}: line ${scan.tail.line} is incomplete (a crash mid-write?): skipped`);
  return scan.entries;
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

/**
 * Follows a journal another process appends to (status --watch): each read() returns the entries whose line has
 * been completed since the last read. A line still being written (or torn by a crash) is held back until its
 * "\n" arrives, and read again from its start each time: when the next run moves torn bytes away (cutting the
 * file at that line's start) and appends, the new line is read whole.
 * A whole line that is not a journal entry is InputError, as for readJournal.
 */
export class JournalTail {
  readonly path: string;
  /** Where the first line not yet returned starts: a line still being written is read again from here. */
  private offset = 0;
  private line = 0;
  constructor(path: string) {
    this.path = path;
  }

  read(): JournalEntry[] {
    if (!statOrUndefined(this.path, 'journal')) return [];
    const fd = openSync(this.path, 'r');
    let buf: Buffer;
    try {
      // a torn last line is cut off at its start by the next run, never before: offset stays within the file
      const size = fstatSync(fd).size;
      if (size < this.offset) this.offset = size;
      if (size - this.offset > MAX_JOURNAL_BYTES) throw new InputError(`journal ${this.path}: more than ${MAX_JOURNAL_BYTES} bytes appended at once`);
      buf = Buffer.alloc(size - this.offset);
      let got = 0;
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, this.offset + got);
        if (n === 0) break;
        got += n;
      }
      buf = buf.subarray(0, got);
    } finally {
      closeSync(fd);
    }
    const out: JournalEntry[] = [];
    let start = 0;
    for (let nl = buf.indexOf(0x0a, start); nl >= 0; nl = buf.indexOf(0x0a, start)) {
      this.line++;
      const text = decodeText(buf.subarray(start, nl));
      start = nl + 1;
      if (text !== undefined && text.trim() === '') continue;
      let problem: string | undefined;
      let value: unknown;
      if (text === undefined) problem = 'not text (binary data)';
      else {
        try { value = JSON.parse(text); problem = journalEntryProblem(value); } catch { problem = 'not JSON'; }
      }
      if (problem !== undefined) throw new InputError(`journal ${this.path}: line ${this.line}: ${problem}`);
      out.push(value as JournalEntry);
    }
    this.offset += start;
    return out;
  }
}

/**
 * The entries of the current attempt: those after the last `rollback-start` (all of them when there was no
 * rollback). A rollback undoes what came before, so progress journaled before it (steps reached, first completion
 * times) no longer describes the cluster; rollback entries themselves come after it and count.
 */
export function sinceLastRollback(entries: readonly JournalEntry[]): JournalEntry[] {
  const i = entries.findLastIndex((e) => e.event === 'rollback-start');
  return i < 0 ? [...entries] : entries.slice(i + 1);
}

/**
 * Steps a later step may supersede from: those started in the current attempt (since the last rollback). A step
 * reached before a rollback does not count: the rollback undid the steps before it, so they must run again.
 */
export function reachedSteps(entries: readonly JournalEntry[]): Set<string> {
  return new Set(sinceLastRollback(entries).filter((e) => e.event === 'step-start' && e.step).map((e) => e.step!));
}

/** "<refKey>@<uid>" of every object journaled as created by run `run` (see the `created` event). */
export function createdUids(entries: readonly JournalEntry[], run: string): Set<string> {
  const out = new Set<string>();
  for (const e of entries) if (e.event === 'created' && e.run === run) for (const o of e.objects ?? []) out.add(o);
  return out;
}

/**
 * Has this attempt (since the last rollback) started any of `actionSteps`? Before that, nothing of the plan was
 * written to the cluster, and apply re-runs the pre-flight checks live.
 */
export function attemptStarted(entries: readonly JournalEntry[], actionSteps: ReadonlySet<string>): boolean {
  return sinceLastRollback(entries).some((e) => e.event === 'step-start' && e.step !== undefined && actionSteps.has(e.step));
}
