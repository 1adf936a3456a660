/**
 * What apply/resume show on stderr while they run, from the engine's progress events (StepContext.progress):
 * - on a terminal, one live status line (step n/m, Services moved x/y, rollouts in flight, what it waits for
 *   and for how long), redrawn in place; finished steps, warnings and heartbeats scroll above it;
 * - elsewhere (a pipe, a CI log), one line per event, and a heartbeat every 30 s while a wait lasts.
 * Warnings are shown either way, without -v.
 */
import type { ProgressEvent } from '../engine/runner.ts';
import { formatDuration } from './common.ts';
import { paint } from './output.ts';

export interface ProgressOptions {
  /** stderr is a terminal: draw the live line. */
  tty: boolean;
  /** Colour (a terminal without NO_COLOR). */
  color?: boolean;
  /** Terminal width (default 120). */
  columns?: number;
  /** How often a wait is reported again while it lasts (default 30 s). */
  heartbeatMs?: number;
  /** How often the live line is redrawn (default 1 s). */
  redrawMs?: number;
  now?: () => number;
}

type StepState = Extract<ProgressEvent, { type: 'step' }>;

const CLEAR = '\r\x1b[2K';

/** 90500 → "1m30s", 4200 → "4s", 0 → "0s". */
export function shortDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  return `${Math.floor(m / 60)}h${m % 60 ? `${m % 60}m` : ''}`;
}

export class ProgressView {
  private step: StepState | undefined;
  private readonly counts = new Map<string, { done: number; total: number }>();
  private inflight: { what: string; names: string[] } | undefined;
  private readonly waits = new Map<string, { since: number; timeoutMs?: number; told: number }>();
  private drawn = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly heartbeatMs: number;

  private readonly write: (s: string) => void;
  private readonly opts: ProgressOptions;

  constructor(write: (s: string) => void, opts: ProgressOptions) {
    this.write = write;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.heartbeatMs = opts.heartbeatMs ?? 30_000;
  }

  private prefix(): string {
    return this.step ? `[${this.step.n}/${this.step.total}] ${this.step.step}` : '';
  }

  /** A line that stays (above the live line on a terminal). */
  private line(text: string): void {
    if (this.opts.tty && this.drawn) this.write(CLEAR);
    this.write(`${text}\n`);
    this.drawn = false;
    if (this.opts.tty) this.draw();
  }

  private say(text: string): void {
    const p = this.prefix();
    this.line(p ? `${p}: ${text}` : text);
  }

  /** The live status line: everything known about the current step, cut to the terminal's width. */
  status(): string {
    if (!this.step) return '';
    const parts = [`${this.prefix()}`];
    for (const [what, c] of this.counts) parts.push(`${what} ${c.done}/${c.total}`);
    if (this.inflight && this.inflight.names.length > 0) {
      const n = this.inflight.names;
      parts.push(`${this.inflight.what} in flight ${n.length} (${n.slice(0, 3).join(', ')}${n.length > 3 ? ', …' : ''})`);
    }
    for (const [what, w] of this.waits) {
      parts.push(`waiting for ${what} (${shortDuration(this.now() - w.since)}${w.timeoutMs ? ` of ${formatDuration(w.timeoutMs)}` : ''})`);
    }
    const text = parts.join(' · ');
    const width = Math.max(20, (this.opts.columns ?? 120) - 1);
    return text.length > width ? `${text.slice(0, width - 1)}…` : text;
  }

  private draw(): void {
    if (!this.opts.tty || !this.step) return;
    this.write(`${CLEAR}${this.status()}`);
    this.drawn = true;
  }

  private tick(): void {
    const t = this.now();
    if (this.opts.tty) this.draw();
    for (const [what, w] of this.waits) {
      if (t - w.told >= this.heartbeatMs) {
        w.told = t;
        this.say(`still waiting for ${what} (${shortDuration(t - w.since)}${w.timeoutMs ? ` of ${formatDuration(w.timeoutMs)}` : ''})`);
      }
    }
  }

  /** Start the clock: the live line's elapsed times and the heartbeats. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), Math.min(this.opts.redrawMs ?? 1000, this.heartbeatMs));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.opts.tty && this.drawn) this.write(CLEAR);
    this.drawn = false;
  }

  warn(message: string): void {
    this.line(`${paint('warning', 'warn', { color: this.opts.color === true, noHeaders: false })}: ${message}`);
  }

  event(e: ProgressEvent): void {
    switch (e.type) {
      case 'step': {
        if (e.state === 'start') {
          this.step = e;
          this.counts.clear();
          this.inflight = undefined;
          this.waits.clear();
          if (this.opts.tty) this.draw();
          else this.say(`started: ${e.title}`);
          return;
        }
        const text = e.state === 'done' ? 'done' : e.state === 'skip' ? (e.detail ?? 'already done') : e.state === 'excluded' ? 'left out (--only/--skip)'
          : e.state === 'gate' ? 'stopped at this gate' : e.state === 'confirm' ? 'waiting for confirmation' : 'failed';
        const counts = [...this.counts].map(([what, c]) => `${what} ${c.done}/${c.total}`).join(', ');
        // the step is over: no live line until the next one starts
        this.step = undefined;
        this.counts.clear();
        this.inflight = undefined;
        this.waits.clear();
        this.line(`[${e.n}/${e.total}] ${e.step}: ${text}${counts && e.state === 'done' ? ` (${counts})` : ''}`);
        return;
      }
      case 'count':
        this.counts.set(e.what, { done: e.done, total: e.total });
        if (this.opts.tty) this.draw();
        else this.say(`${e.what} ${e.done}/${e.total}`);
        return;
      case 'inflight': {
        const before = this.inflight?.names.join('\0');
        this.inflight = { what: e.what, names: e.names };
        if (this.opts.tty) this.draw();
        else if (before !== e.names.join('\0') && e.names.length > 0) this.say(`${e.what} in flight ${e.names.length}: ${e.names.join(', ')}`);
        return;
      }
      case 'wait': {
        const t = this.now();
        this.waits.set(e.what, { since: t, ...(e.timeoutMs !== undefined ? { timeoutMs: e.timeoutMs } : {}), told: t });
        if (this.opts.tty) this.draw();
        else this.say(`waiting for ${e.what}${e.timeoutMs ? ` (up to ${formatDuration(e.timeoutMs)})` : ''}`);
        return;
      }
      case 'waited':
        this.waits.delete(e.what);
        if (this.opts.tty) this.draw();
        else this.say(`${e.what}: ${e.ended === 'failed' ? 'failed' : e.ended === 'timed-out' ? 'timed out' : 'done'} after ${(e.ms / 1000).toFixed(1)}s`);
        return;
    }
  }
}
