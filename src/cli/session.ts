/**
 * The run session of one plan: its flags, the plan file, the state directory (journal, backups, local lock), the
 * copy of the run's state kept in the cluster and the cluster Lease, assembled once for
 * apply/resume/status/verify/rollback/restore and for each cluster of a fleet run.
 */
import { createHash } from 'node:crypto';
import { existsSync, rmdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BackupStore } from '../engine/backup.ts';
import { mirroredClient, type ClusterState } from '../engine/cluster-state.ts';
import { checkStateDir, decodeText, readRegularFile, writeFileDurable } from '../engine/files.ts';
import { Journal, readJournal, type JournalEntry } from '../engine/journal.ts';
import { hookEnvironment } from '../engine/pod-steps.ts';
import { acquireLease, acquireLocalLock, guardedClient, holderIdentity, type LeaseLock } from '../engine/lock.ts';
import type { DryRun, StepContext, StepSelection } from '../engine/runner.ts';
import { parseSelection } from '../engine/selection.ts';
import { PlanExecutor, type PlanExecOptions } from '../engine/plan-executor.ts';
import { errorLine } from '../errors.ts';
import { connect, type KubeClient } from '../kube/client.ts';
import { describeWindow } from '../kube/limiter.ts';
import { planFromYaml, type MigrationPlan } from '../plan/index.ts';
import { MAX_PLAN_BYTES } from '../plan/render.ts';
import { clientFor } from './commands/access-check.ts';
import { attachClusterState, journalWithCopy, readOnlyStateDir, readStateCopy } from './commands/state-copy.ts';
import { connectOptions, durationFlag, list, str } from './common.ts';
import { InputError, UsageError } from './errors.ts';
import type { Io, Values } from './command.ts';
import { parseOutput, type OutputFormat } from './output.ts';
import type { ProgressView } from './progress.ts';

export interface Session {
  plan: MigrationPlan;
  planId: string;
  stateDir: string;
  client: KubeClient;
  executor: PlanExecutor;
  ctx: StepContext;
  /** The state directory as given (--state-dir or the default), even when a dry run works in a temporary one. */
  realStateDir: string;
  assertLocked(): void;
  release(): Promise<void>;
}

export interface ReadPlan { plan: MigrationPlan; text: string; path: string }

/**
 * The flags of apply/resume/status/verify/rollback/restore, all checked before the plan is read, the state
 * directory looked at or the cluster contacted: a bad value is exit 2 and nothing else happened.
 */
export interface Flags {
  output: OutputFormat;
  dryRun: DryRun;
  stateDir?: string;
  clusterDomain?: string;
  timeoutMs?: number;
  rolloutTimeoutMs?: number;
  propagationDelayMs?: number;
  /** --node-interval: least time between two node drains starting (0: a wave's nodes at once). */
  nodeIntervalMs?: number;
  ackGates: string[];
  only: string[];
  skip: string[];
  /** --events ndjson: the journal's entries on stdout as they are appended. */
  events: boolean;
}

/** --node-interval at most this: an hour between two drains is 42 days for 1,000 nodes. */
const MAX_NODE_INTERVAL_MS = 3_600_000;

/** A DNS domain such as cluster.local: labels of lowercase letters, digits and "-", at most 253 in all. */
const DOMAIN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

function positiveDuration(values: Values, key: string): number | undefined {
  const ms = durationFlag(values, key);
  if (ms !== undefined && ms <= 0) throw new UsageError(`--${key} ${str(values, key)} must be more than 0`);
  return ms;
}

export function checkFlags(values: Values): Flags {
  const output = parseOutput(str(values, 'output'));
  const dryRun = parseDryRun(values);
  const stateDir = str(values, 'state-dir');
  if (stateDir !== undefined && (stateDir.trim() === '' || stateDir.includes('\0'))) throw new UsageError('--state-dir needs a directory path');
  const clusterDomain = str(values, 'cluster-domain');
  if (clusterDomain !== undefined && (clusterDomain.length > 253 || !DOMAIN.test(clusterDomain))) {
    throw new UsageError(`--cluster-domain ${JSON.stringify(clusterDomain)} is not a DNS domain (e.g. cluster.local: lowercase letters, digits, "-" and ".")`);
  }
  const timeoutMs = positiveDuration(values, 'timeout');
  const rolloutTimeoutMs = positiveDuration(values, 'rollout-timeout');
  const propagationDelayMs = durationFlag(values, 'propagation-delay');
  const nodeIntervalMs = durationFlag(values, 'node-interval', MAX_NODE_INTERVAL_MS);
  durationFlag(values, 'request-timeout');
  const ackGates = list(values, 'ack-gate');
  for (const g of ackGates) if (g.trim() === '') throw new UsageError('--ack-gate needs the id of a gate step of the plan');
  const events = str(values, 'events');
  if (events !== undefined && !(EVENT_FORMATS as readonly string[]).includes(events)) throw new UsageError(`--events ${events} is not a known event format (use ndjson)`);
  if (events !== undefined && output !== 'table') throw new UsageError(`--events ndjson writes the events to stdout: it cannot go with -o ${output}`);
  return {
    output, dryRun, stateDir, clusterDomain, timeoutMs, rolloutTimeoutMs, propagationDelayMs, nodeIntervalMs, ackGates, only: list(values, 'only'), skip: list(values, 'skip'),
    events: events !== undefined,
  };
}

/** The plan named by the one positional: a regular, non-empty text file holding a valid plan (else exit 3). */
export function readPlan(positionals: string[]): ReadPlan {
  if (positionals.length !== 1) throw new UsageError('give the plan file, e.g. kube-renumber apply plan.yaml (from kube-renumber plan -o yaml)');
  const path = positionals[0]!;
  if (path.trim() === '' || path.includes('\0')) throw new UsageError('give the plan file, e.g. kube-renumber apply plan.yaml (from kube-renumber plan -o yaml)');
  const bytes = readRegularFile(path, 'plan', MAX_PLAN_BYTES);
  const text = decodeText(bytes);
  if (text === undefined) throw new InputError(`${path}: not text (binary data): not a plan written by kube-renumber plan -o yaml`);
  if (text.trim() === '') throw new InputError(`${path}: the file is empty: not a plan written by kube-renumber plan -o yaml`);
  return { plan: planFromYaml(text, path), text, path };
}

/** Every --ack-gate names a gate step of the plan. */
export function checkAcks(flags: Flags, read: ReadPlan): void {
  const gates = read.plan.steps.filter((s) => s.kind === 'gate').map((s) => s.id);
  for (const g of flags.ackGates) {
    if (!gates.includes(g)) {
      throw new UsageError(`--ack-gate ${JSON.stringify(g)} is not a gate of ${read.path} (${gates.length > 0 ? `its gates: ${gates.join(', ')}` : 'it has no gates'})`);
    }
  }
}

export function planId(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

export function defaultStateDir(id: string, env: NodeJS.ProcessEnv): string {
  const base = env.XDG_STATE_HOME || join(env.HOME ?? homedir(), '.local', 'state');
  return join(base, 'kube-renumber', id);
}

export interface Prepared { flags: Flags; read: ReadPlan; id: string; stateDir: string; entries: JournalEntry[]; select?: StepSelection }

/**
 * Everything a command checks before it contacts the cluster, takes a lock or writes: the flags, the plan, the
 * state directory (a directory we can write 0600 files in, not on a pseudo file system), the journal (every
 * line an entry) and the backups (every file a backup record). Reads only.
 */
export function prepare(values: Values, positionals: string[], io: Io,
  opts: { write: boolean; journal: boolean; backups: boolean }): Prepared {
  const flags = checkFlags(values);
  const read = readPlan(positionals);
  checkAcks(flags, read);
  const select = parseSelection(flags.only, flags.skip, read.plan.steps.map((s) => s.id));
  const id = planId(read.text);
  const stateDir = flags.stateDir ?? defaultStateDir(id, io.env);
  checkStateDir(stateDir, { writable: opts.write });
  // A torn last line is reported here by read-only commands; a run that writes reports it when it repairs it.
  const entries = opts.journal ? readJournal(join(stateDir, 'journal.jsonl'), { warn: opts.write ? undefined : (m) => io.err(`warning: ${m}\n`) }) : [];
  if (opts.journal) checkJournalBelongs(entries, join(stateDir, 'journal.jsonl'), id, read.plan);
  if (opts.backups) new BackupStore(join(stateDir, 'backups'), id).check();
  return { flags, read, id, stateDir, entries, ...(select ? { select } : {}) };
}

/**
 * A state directory holds the run of one plan: every journal entry carries this plan's id as its run, and every
 * step it names is a step of the plan. A line from another plan's run (a shared --state-dir, a copied or forged
 * journal) would make status, supersession and rollback act on steps this run never took: exit 3.
 */
export function checkJournalBelongs(entries: readonly JournalEntry[], path: string, id: string, plan: MigrationPlan): void {
  const steps = new Set(plan.steps.map((s) => s.id));
  entries.forEach((e, i) => {
    if (e.run !== id) {
      throw new InputError(`journal ${path}: entry ${i + 1} was written by the run of another plan (${JSON.stringify(e.run).slice(0, 80)}), not this plan's (${id}): `
        + 'give this plan its own --state-dir');
    }
    if (e.step !== undefined && !steps.has(e.step)) {
      throw new InputError(`journal ${path}: entry ${i + 1} names step ${JSON.stringify(e.step).slice(0, 80)}, which is not a step of this plan: the journal is not this plan's`);
    }
  });
}

/** How a session is opened: with the local lock and the Lease or not, as a dry run, for which cluster of a fleet. */
export interface SessionOptions {
  lock: boolean;
  dryRun?: DryRun;
  cluster?: string;
  view?: ProgressView;
  /** The client to use instead of one connected from --kubeconfig/--context (a library caller's, e.g. one that counts requests). */
  client?: KubeClient;
  /**
   * The Lease's client, with a connection of its own and no limiter, so a renewal never waits behind the run's
   * requests (default: one connected from --kubeconfig/--context; with `client` and no `leaseClient`, `client`).
   */
  leaseClient?: KubeClient;
  /** Executor options a library caller sets beyond the flags (e.g. the benchmarks' `watch: false`). */
  executor?: Pick<PlanExecOptions, 'watch'>;
}

export async function openSession(values: Values, io: Io, pre: Prepared, opts: SessionOptions): Promise<Session> {
  const { flags, read: { plan, text }, id } = pre;
  const dry = opts.dryRun !== undefined && opts.dryRun !== 'none';
  const verbose = values.verbose === true;
  const connection = (limiter?: false) => connect({ ...connectOptions(values, io), ...(limiter === false ? { limiter } : {}) });
  // every request of the run goes through this client's one adaptive window (src/kube/limiter.ts)
  const client = opts.client ?? connection();
  // the Lease renews on a connection of its own (own keep-alive agent, no window): the run's queue never delays it
  const leaseClient = opts.leaseClient ?? (opts.client ? opts.client : connection(false));
  const warn = opts.view ? (m: string) => opts.view!.warn(m) : (m: string) => io.err(`warning: ${m}\n`);
  // A dry run, and a command that only reads, work on a temporary copy of the state directory with the cluster's
  // copy of the run's state merged in: they see what the run did and write nothing into the state directory.
  const readOnly = dry || !opts.lock;
  const stateDir = readOnly ? readOnlyStateDir(pre.stateDir, id, await readStateCopy(client, id, { required: false, warn })) : pre.stateDir;
  const dropDry = () => { if (readOnly) rmSync(stateDir, { recursive: true, force: true }); };
  let state: ClusterState | undefined;
  const run = `${id}`;
  const holder = holderIdentity(run);
  let releaseLocal = () => {};
  let lease: LeaseLock | undefined;
  if (opts.lock) {
    const fresh = !existsSync(stateDir);
    releaseLocal = acquireLocalLock(join(stateDir, 'lock'), holder).release;
    try {
      if (opts.dryRun !== 'client') {
        lease = await acquireLease(leaseClient, holder, {
          forceUnlock: values['force-unlock'] === true,
          onWait: (m) => io.err(`${m}\n`),
        });
      }
      if (!existsSync(join(stateDir, 'plan.yaml'))) writeFileDurable(join(stateDir, 'plan.yaml'), text);
      if (!readOnly) state = await attachClusterState(client, run, stateDir, { ...(opts.cluster ? { cluster: opts.cluster } : {}), check: () => lease?.assertHeld(), warn });
    } catch (e) {
      await lease?.release();
      releaseLocal();
      // a run that never got going leaves no empty state directory behind (rmdir removes only an empty one)
      if (fresh) try { rmdirSync(stateDir); } catch { /* not empty, or already gone */ }
      dropDry();
      throw e;
    }
  }
  const executor = new PlanExecutor(plan, {
    clusterDomain: flags.clusterDomain,
    acknowledgedGates: flags.ackGates,
    readKubeletConfig: values['read-kubelet-config'] === true,
    timeoutMs: flags.timeoutMs,
    rolloutTimeoutMs: flags.rolloutTimeoutMs,
    propagationDelayMs: flags.propagationDelayMs,
    nodeIntervalMs: flags.nodeIntervalMs,
    covers: values['no-covers'] === true ? false : undefined,
    token: id,
    // the node hook gets PATH, HOME and the kubeconfig this run uses, nothing else of our environment
    hookEnv: hookEnvironment(io.env, str(values, 'kubeconfig')),
    // apply and resume refuse a plan with a hook without --allow-hook before this; rollback's node steps refuse it here
    hookAllowed: values['allow-hook'] === true,
    ...opts.executor,
  });
  const ctx: StepContext = {
    // every request of the steps first checks the Lease: once it is lost, nothing more is sent; every write first
    // waits until the cluster copy of the run's state holds what was journaled and backed up before it
    client: guardedClient(state ? mirroredClient(client, state) : client, () => lease?.assertHeld()),
    backups: new BackupStore(join(stateDir, 'backups'), run, opts.cluster),
    journal: new Journal(join(stateDir, 'journal.jsonl'), run, warn),
    dryRun: opts.dryRun ?? 'none',
    log: (m) => { if (verbose || opts.dryRun === 'client') io.err(`${m}\n`); },
    warn,
    ...(opts.view ? { progress: (e) => opts.view!.event(e) } : {}),
  };
  if (flags.events) ctx.journal.onAppend = (e) => io.out(`${JSON.stringify(e)}\n`);
  if (state) {
    ctx.journal.mirror = (e) => state.enqueueJournal(e);
    ctx.backups.mirror = (r) => state.enqueueBackup(r);
  }
  return {
    plan, planId: id, stateDir, realStateDir: pre.stateDir, client, executor, ctx,
    assertLocked: () => lease?.assertHeld(),
    async release() {
      const w = client.limiter?.stats();
      if (w) ctx.log(describeWindow(w));
      // the last entries (run-end) reach the cluster copy too, while the Lease is still ours
      try { await state?.flush(); } catch (e) { warn(`the last journal entries did not reach the run's copy in the cluster: ${errorLine(e)}`); }
      await lease?.release();
      releaseLocal();
      dropDry();
    },
  };
}

/**
 * The journal the live checks go by: the state directory's, or the cluster copy's when that one is further on
 * (the state directory was lost, or the run went on from another machine).
 */
export async function withClusterJournal(values: Values, io: Io, pre: Prepared): Promise<void> {
  const copy = await readStateCopy(clientFor(values, io), pre.id, { required: false, warn: (m) => io.err(`warning: ${m}\n`) });
  pre.entries = journalWithCopy(pre.entries, copy);
  checkJournalBelongs(pre.entries, `${join(pre.stateDir, 'journal.jsonl')} (with the cluster's copy)`, pre.id, pre.read.plan);
}

/** What --dry-run takes, and --events. */
export const DRY_RUNS = ['none', 'client', 'server'] as const satisfies readonly DryRun[];
export const EVENT_FORMATS = ['ndjson'] as const;

export function parseDryRun(values: Values): DryRun {
  const v = str(values, 'dry-run') ?? 'none';
  if (!(DRY_RUNS as readonly string[]).includes(v)) throw new UsageError(`--dry-run=${v} must be none, client or server`);
  return v as DryRun;
}
