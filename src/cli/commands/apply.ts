/**
 * apply / resume / status / rollback / verify / restore: thin commands over the engine. They share one
 * session: the plan file, the state directory (journal, backups, local lock), the cluster Lease.
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { KubeObject, Snapshot } from '../../cluster/types.ts';
import { attemptStarted, completedSteps, JournalTail, type JournalEntry } from '../../engine/journal.ts';
import { errorLine } from '../../errors.ts';
import { readClusterUID } from '../../kube/discover.ts';
import { ACCEPT_UNBOUND_FLAG, bindingRefusal, serverWithoutCredentials } from '../../plan/identity.ts';
import { failedNow, recheckPreflight } from '../../plan/recheck.ts';
import { readServingCertSANs, summarySection } from './plan.ts';
import { planSummary } from '../../plan/summary.ts';
import { rollbackSteps, runSteps, type DryRun } from '../../engine/runner.ts';
import { podForRecreate } from '../../engine/restarts.ts';
import { connect, KubeApiError } from '../../kube/client.ts';
import { resourceOfObject } from '../../kube/kinds.ts';
import { createObject, forCreate, getObject } from '../../kube/resources.ts';
import { withRetry } from '../../kube/retry.ts';
import { checkAccess } from './access-check.ts';
import { MANAGED_LABEL } from '../../plan/plan.ts';
import type { MigrationPlan } from '../../plan/index.ts';
import { shellWord, withPlanPath } from '../../plan/render.ts';
import { connectOptions, durationFlag, loadSnapshot, str } from '../common.ts';
import { platformKindOf } from '../../cluster/types.ts';
import { movesOf, platformRefusal, podOwnerRefusal } from '../../plan/platform-gate.ts';
import { platformOf } from '../../platform/registry.ts';
import { ExitCode, UsageError, UserError } from '../errors.ts';
import type { Command, Io, Values } from '../command.ts';
import { colorFor, renderData, table } from '../output.ts';
import { ProgressView } from '../progress.ts';
import { openSession, parseDryRun, prepare, withClusterJournal, type Prepared } from '../session.ts';
import { applyFleet, fleetStatus, FLEET_RUN_FLAGS } from '../fleet.ts';
import { runStatus } from '../run-state.ts';

export { defaultStateDir, planId } from '../session.ts';

const SESSION_OPTIONS = {
  'state-dir': { type: 'string' },
  'cluster-domain': { type: 'string' },
  timeout: { type: 'string' },
  'rollout-timeout': { type: 'string' },
  'propagation-delay': { type: 'string' },
  'node-interval': { type: 'string' },
  'no-covers': { type: 'boolean' },
} as const;

/** The flags of the commands that take the lock (apply, resume, rollback, restore). */
const LOCK_OPTIONS = { ...SESSION_OPTIONS, 'force-unlock': { type: 'boolean' }, 'accept-unbound-plan': { type: 'boolean' } } as const;
const LOCK_HELP = `  --force-unlock           take over the Lease kube-system/kube-renumber at once, even while another run renews it
                           (only when that run is known to be gone); without it a Lease is taken over only after
                           it went unrenewed for its whole duration
  --accept-unbound-plan    run a plan that records no cluster identity (written offline with -f, or by an older
                           version) against whatever cluster the kubeconfig names; a plan bound to another
                           cluster is refused whatever the flags`;

const SESSION_HELP = `  --state-dir DIR          journal, backups and lock (default ~/.local/state/kube-renumber/<plan id>)
  --cluster-domain D       cluster DNS domain for ExternalName targets (default cluster.local)
  --timeout DUR            how long to wait for the cluster to show a step's effect (default 60s)
  --rollout-timeout DUR    how long one workload's restart or one eviction may take (default 5m)
  --propagation-delay DUR  how long a Service change needs to reach every node's kube-proxy and DNS caches
                           (default 5s); in-place moves wait it after putting up covers and before removing them
  --node-interval DUR      least time between two node drains starting, across waves (node IPAM moves; default 0:
                           a wave's nodes drain at once); each node's drain brings a burst of evictions, scheduling
                           and registration, and spreading them keeps other clients' answers fast
  --no-covers              in-place moves without cover Services (no LoadBalancer-typed helpers; each moved
                           Service's old and new IP may not answer for up to kube-proxy's sync period)`;

/** The one positional of every command here. */
const PLAN_POSITIONAL = { min: 1, max: 1, name: 'PLAN' } as const;
/** apply, resume and status: one PLAN, or --fleet DIR instead. */
const PLAN_OR_FLEET = { ...PLAN_POSITIONAL, insteadFlag: 'fleet' } as const;
const fleetRun = (values: Values, io: Io) => applyFleet(values, io, (v, p, cio, stopBefore) => runPlan(v, p, cio, false, { stopBefore }));


async function ask(io: Io, question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const a = await rl.question(`${question}\nproceed? [y/N] `);
    return /^y(es)?$/i.test(a.trim());
  } finally {
    rl.close();
  }
}

/** The live cluster's identity: kube-system's uid (undefined when it cannot be read) and the apiserver URL. */
interface LiveIdentity { uid?: string; server?: string }

/**
 * The plan must be bound to the live cluster (same kube-system uid), or be unbound and accepted with
 * --accept-unbound-plan (said on stderr before anything runs). Exit 2 otherwise, before the Lease.
 */
function checkBinding(values: Values, io: Io, plan: MigrationPlan, live: LiveIdentity): void {
  const refused = bindingRefusal(plan.metadata.cluster, live, values['accept-unbound-plan'] === true);
  if (refused) throw new UsageError(refused);
  if (!plan.metadata.cluster) {
    io.err(`warning: the plan records no cluster identity; ${ACCEPT_UNBOUND_FLAG}: running it against ${serverWithoutCredentials(live.server) ?? 'the kubeconfig\'s cluster'}`
      + `${live.uid ? ` (kube-system uid ${live.uid})` : ''}\n`);
  }
}

/** Reads the live cluster's identity alone (rollback, restore): one GET of namespace kube-system. */
async function readLiveIdentity(values: Values, io: Io): Promise<LiveIdentity> {
  const client = connect(connectOptions(values, io));
  try {
    return { uid: await readClusterUID(client), server: client.server };
  } catch (e) {
    if (e instanceof KubeApiError && (e.status === 403 || e.status === 404)) return { server: client.server };
    throw e;
  }
}

/**
 * A plan's node hook (executable content run through /bin/sh) runs only with --allow-hook, and is shown on
 * stderr before anything runs; without the flag the plan is refused (exit 2) before the cluster is contacted.
 * A dry run never runs it: it is shown, and needs no flag.
 */
function checkHook(values: Values, io: Io, plan: MigrationPlan, dryRun: DryRun): void {
  const hook = plan.spec.podCIDR?.node?.hook;
  if (hook === undefined) return;
  const shown = JSON.stringify(hook);
  if (dryRun !== 'none') {
    io.err(`node hook (not run by --dry-run): ${shown}\n`);
    return;
  }
  if (values['allow-hook'] !== true) {
    throw new UsageError(`the plan runs a node hook through /bin/sh for each re-registered node: ${shown}; review it, then pass --allow-hook to run it (nothing was changed)`);
  }
  io.err(`node hook (--allow-hook), run through /bin/sh for each node with only PATH, HOME, KUBECONFIG and KUBE_RENUMBER_NODE in its environment: ${shown}\n`);
}

/**
 * Everything apply/resume check against the live cluster before the lock is taken or anything is written, from
 * one live read: the platform lets the plan's moves happen and is the one the plan was written for; the plan is
 * bound to this cluster; and, while this attempt has written nothing yet (no action step started since the last
 * rollback), the plan's pre-flight checks run again against the live snapshot: one that fails now stops the run
 * with exit 6 (the results written in the plan file are not used). Returns the live identity.
 */
async function checkLive(values: Values, io: Io, pre: Prepared, dryRun: DryRun): Promise<LiveIdentity & { pods: Snapshot['pods'] }> {
  const plan = pre.read.plan;
  const snap = await loadSnapshot(values, io);
  checkLivePlatform(snap, plan);
  const live: LiveIdentity & { pods: Snapshot['pods'] } = { ...(snap.source.kind === 'live' ? { uid: snap.source.kubeSystemUID, server: snap.source.server } : {}), pods: snap.pods };
  checkBinding(values, io, plan, live);
  const actions = new Set(plan.steps.filter((s) => s.kind !== 'gate' && s.kind !== 'confirm').map((s) => s.id));
  if (attemptStarted(pre.entries, actions)) {
    if (values.verbose === true) io.err('pre-flight: not run again (this run has started writing; each step checks the cluster itself)\n');
    return live;
  }
  const sans = plan.spec.serviceCIDR && !plan.spec.options?.apiserverCertSANs?.length ? await readServingCertSANs(values, io) : undefined;
  const failed = failedNow(recheckPreflight(snap, plan, { liveCertSANs: sans }));
  if (failed.length > 0) {
    const f = failed[0]!;
    const msg = `pre-flight check ${failed.map((c) => c.id).join(', ')} fails against the live cluster: ${f.message}${f.fix ? ` (fix: ${f.fix})` : ''}`;
    if (dryRun !== 'none') io.err(`warning: ${msg}\n`);
    else throw new UserError(`${msg}; nothing was changed`, 'verify');
  }
  return live;
}

/**
 * The live cluster's platform must let the plan's moves happen, and must be the platform the plan was written for:
 * read before the lock is taken or anything is written, so a refused run leaves no trace.
 */
function checkLivePlatform(snap: Awaited<ReturnType<typeof loadSnapshot>>, plan: MigrationPlan): void {
  for (const move of movesOf(plan)) {
    const refused = platformRefusal(snap, move) ?? (move === 'pod' ? podOwnerRefusal(snap) : undefined);
    if (refused) throw new UsageError(`${refused} (nothing was changed)`);
  }
  const live = platformKindOf(snap);
  if (plan.metadata.platform !== undefined && plan.metadata.platform !== live) {
    throw new UsageError(`the plan was written for a ${platformOf(plan.metadata.platform)?.title ?? plan.metadata.platform} cluster, and this cluster runs on `
      + `${snap.platform?.title ?? live}: plan again against this cluster (nothing was changed)`);
  }
}

/** Thrown before a step when the caller asked the run to stop there (a fleet run after another cluster failed). */
class StopBefore extends Error {
  readonly step: string;
  constructor(step: string, why: string) { super(why); this.step = step; }
}

/** What a fleet run adds to one cluster's run: a reason to stop before the next step, checked at each step boundary. */
export interface RunHooks { stopBefore?: () => string | undefined }

/** apply/resume of one plan; exported for the fleet run, which runs it for each cluster with its own flags. */
export async function runPlan(values: Values, positionals: string[], io: Io, resume: boolean, hooks: RunHooks = {}): Promise<number> {
  const dryRunFlag = parseDryRun(values);
  const pre = prepare(values, positionals, io, { write: dryRunFlag === 'none', journal: true, backups: true });
  const { dryRun, output } = pre.flags;
  checkHook(values, io, pre.read.plan, dryRun);
  await withClusterJournal(values, io, pre);
  const live = await checkLive(values, io, pre, dryRun);
  // apply says what the run will do before it changes anything (resume continues a run whose summary was shown)
  if (!resume) io.err(summarySection(planSummary(pre.read.plan, live.pods, shellWord(pre.read.path))));
  if (dryRun === 'none') await checkAccess(values, io, pre.read.plan);
  // stderr: a live status line on a terminal, else one line per event (verbose logs go between them)
  const view = new ProgressView((t) => io.err(t), { tty: io.stderrTTY === true && values.verbose !== true, color: colorFor(io, io.stderrTTY), columns: process.stderr.columns });
  const s = await openSession(values, io, pre, { lock: true, dryRun, view, ...(live.uid ? { cluster: live.uid } : {}) });
  view.start();
  try {
    s.ctx.journal.append('run-start', { detail: `${resume ? 'resume' : 'apply'}${dryRun !== 'none' ? ` --dry-run=${dryRun}` : ''}` });
    const steps = s.executor.steps();
    const result = await runSteps(steps, s.ctx, {
      ...(pre.select ? { select: pre.select } : {}),
      yes: values.yes === true,
      confirm: (q) => ask(io, q),
      beforeStep: (id) => {
        s.assertLocked();
        const why = hooks.stopBefore?.();
        if (why) throw new StopBefore(id, why);
      },
    }).catch((e: unknown) => {
      if (e instanceof StopBefore) return { status: 'blocked' as const, step: e.step, before: e.step, message: e.message };
      throw e;
    });
    view.stop();
    s.ctx.journal.append('run-end', { detail: result.status });
    const planPath = pre.read.path;
    if (output === 'json' || output === 'yaml') io.out(renderData({ ...result, stateDir: s.realStateDir }, output));
    switch (result.status) {
      case 'completed':
        if (output === 'table' || output === 'wide') {
          const left = result.excluded ? `, ${result.excluded} left out by --only/--skip` : '';
          // with --events ndjson stdout carries only the events
          (pre.flags.events ? io.err : io.out)(`completed: ${result.applied} step(s) applied, ${result.skipped} already done${left} `
            + `(${dryRun === 'none' ? `state in ${s.realStateDir}` : `dry run: nothing written to ${s.realStateDir}`})\n`);
        }
        return ExitCode.ok;
      case 'blocked':
        io.err(`stopped before ${result.before}: ${withPlanPath(result.message, planPath)}\n`);
        return ExitCode.gate;
      case 'gate':
        io.err(`stopped at gate ${result.step}: ${result.title}\n${(result.seen ?? []).map((m) => `  not yet: ${m}\n`).join('')}${result.instructions.map((i) => `  - ${withPlanPath(i, planPath)}\n`).join('')}`
          + `then run: kube-renumber resume ${shellWord(planPath)}\n`);
        return ExitCode.gate;
      case 'declined':
        io.err(`stopped before ${result.step}: confirm it with kube-renumber resume ${shellWord(planPath)} --yes\n`);
        return ExitCode.gate;
      case 'failed':
        io.err(`error: ${withPlanPath(result.message, planPath)}\n(nothing further was changed; fix it and run kube-renumber resume ${shellWord(planPath)})\n`);
        return ExitCode.verifyFailed;
    }
  } finally {
    view.stop();
    await s.release();
  }
}

const RUN_OPTIONS = {
  ...LOCK_OPTIONS,
  yes: { type: 'boolean', short: 'y' },
  'dry-run': { type: 'string' },
  'allow-hook': { type: 'boolean' },
  'ack-gate': { type: 'string', multiple: true },
  'read-kubelet-config': { type: 'boolean' },
  only: { type: 'string', multiple: true },
  skip: { type: 'string', multiple: true },
  events: { type: 'string' },
  ...FLEET_RUN_FLAGS,
} as const;

const RUN_HELP = `Flags:
  -y, --yes                skip confirmation steps (between tiers, before the DNS Service)
  --dry-run=MODE           none (default) | client (print what each step would do) | server (send with dryRun=All);
                           a dry run writes nothing into the state directory (it works on a temporary copy)
  --allow-hook             run the plan's node hook (spec.podCIDR.node.hook, through /bin/sh, with only PATH,
                           HOME, KUBECONFIG and KUBE_RENUMBER_NODE set); a plan with a hook is refused without it
  --ack-gate ID            assert by hand that gate ID holds where the cluster cannot show it (repeatable)
  --read-kubelet-config    gate kubelet-cluster-dns reads each Ready node's kubelet configuration (configz) through
                           the API server; needs get nodes/proxy, which also reaches the kubelet's exec API: grant it
                           only knowingly (deploy/rbac-kubelet-configz.yaml, docs/service-migration.md)
  --only STEP[,STEP]       run just these steps (ids or patterns with *); every step before them must be done
  --skip STEP[,STEP]       leave these steps out (journaled as excluded, never counted as done)
  --events ndjson          stream the journal's entries to stdout as they are appended (one JSON object a line;
                           the summary goes to stderr)
  --fleet DIR              run every plan plan --fleet wrote into DIR instead of one PLAN (docs/fleet.md): the
                           canary first, then waves; each cluster keeps its Lease and its state in DIR/state/NAME;
                           a failure stops every cluster at its next step boundary; run it again to resume
  --parallel-clusters N    with --fleet: clusters migrated at once after the canary (default 1)
${LOCK_HELP}
${SESSION_HELP}`;

export const applyCommand: Command = {
  name: 'apply',
  positionals: PLAN_OR_FLEET,
  summary: 'execute a plan step by step: check, back up, apply, verify, journal; stops at gates',
  usage: 'kube-renumber apply PLAN.yaml [--yes] [--dry-run=none|client|server] [--only STEP] [--skip STEP] | apply --fleet DIR [--parallel-clusters N]',
  options: RUN_OPTIONS,
  help: `${RUN_HELP}\n\nExit codes: 0 done; 2 the plan is for another cluster, unbound without --accept-unbound-plan, or has a hook without --allow-hook; `
    + `6 a pre-flight check fails against the live cluster, or a step's verification failed; 7 stopped at a gate or confirmation (resume after it); 8 locked by another run.`,
  run: ({ values, positionals, io }) => (values.fleet !== undefined ? fleetRun(values, io) : runPlan(values, positionals, io, false)),
};

export const resumeCommand: Command = {
  name: 'resume',
  positionals: PLAN_OR_FLEET,
  summary: 'continue a stopped or crashed run of a plan (each step re-checks the cluster first)',
  usage: 'kube-renumber resume PLAN.yaml [--yes] [--ack-gate ID] [--only STEP] [--skip STEP] | resume --fleet DIR',
  options: RUN_OPTIONS,
  help: RUN_HELP,
  run: ({ values, positionals, io }) => (values.fleet !== undefined ? fleetRun(values, io) : runPlan(values, positionals, io, true)),
};

export const statusCommand: Command = {
  name: 'status',
  positionals: PLAN_OR_FLEET,
  summary: "show a plan's progress from its journal (--watch: follow a run until it ends)",
  usage: 'kube-renumber status PLAN.yaml [-o table|json|yaml] [--watch] | status --fleet DIR',
  options: { 'state-dir': { type: 'string' }, watch: { type: 'boolean', short: 'w' }, fleet: { type: 'string' } },
  help: `Flags:
  --state-dir DIR          the run's state directory (default ~/.local/state/kube-renumber/<plan id>); when it holds no
                           journal, the run's copy in the cluster is read (--kubeconfig, --context)
  -w, --watch              follow the run's journal (from another terminal, like kubectl get -w): print each entry
                           as it is appended, until the run ends; -o json prints one JSON object a line. Exit code
                           as the run's: 0 completed, 6 a step failed, 7 stopped at a gate or confirmation
  --fleet DIR              each cluster of a fleet run (plan --fleet's directory): its state, steps done, last step`,
  async run({ values, positionals, io }) {
    if (values.fleet !== undefined) {
      if (values.watch === true || values['state-dir'] !== undefined) throw new UsageError('status --fleet reads each cluster\'s state in DIR/state: it takes neither --watch nor --state-dir');
      return fleetStatus(values, io);
    }
    if (values.watch === true && str(values, 'output') === 'yaml') throw new UsageError('status --watch prints one entry a line: use -o json (one JSON object a line) or the table');
    const pre = prepare(values, positionals, io, { write: false, journal: values.watch !== true, backups: false });
    const { flags: { output }, read: { plan }, stateDir } = pre;
    if (values.watch === true) return watchJournal(join(stateDir, 'journal.jsonl'), output === 'json', io);
    // no journal here (another machine's run, a lost state directory): the cluster's copy of the run's state
    const journalHere = pre.entries.length > 0;
    if (!journalHere) await withClusterJournal(values, io, pre).catch((e: unknown) => {
      if (values.verbose === true) io.err(`could not read the run's state from the cluster: ${errorLine(e)}\n`);
    });
    const entries = pre.entries;
    const command = (verb: string) => `kube-renumber ${verb} ${shellWord(pre.read.path)}${pre.flags.stateDir !== undefined ? ` --state-dir ${shellWord(pre.flags.stateDir)}` : ''}`;
    const run = runStatus(plan, entries, { stateDir, resume: command('resume'), rollback: command('rollback'), journalHere });
    const done = new Set(completedSteps(entries));
    const rows = plan.steps.map((st) => {
      const last = [...entries].reverse().find((e) => e.step === st.id);
      const state = done.has(st.id) ? 'done' : last?.event === 'step-excluded' ? 'left out' : last?.event === 'gate' ? 'waiting at gate' : last?.event === 'step-failed' ? 'failed'
        : last?.event === 'confirm' ? 'waiting for confirmation' : last ? 'started' : 'pending';
      return { id: st.id, kind: st.kind, state, at: last?.ts, detail: last?.event === 'step-failed' ? last.detail : undefined };
    });
    if (output === 'json' || output === 'yaml') {
      io.out(renderData({ stateDir, run, steps: rows }, output));
    } else {
      io.out(table(['step', 'kind', 'state', 'since', 'detail'], rows.map((r) => [r.id, r.kind, r.state, r.at ?? '', r.detail ?? ''])));
      io.out(`run: ${run.state}, ${run.done}/${run.steps} steps done${run.step ? `, last step ${run.step}` : ''}${run.since ? ` at ${run.since}` : ''}`
        + `${run.detail && run.state !== 'failed' ? `: ${run.detail}` : ''}\n`);
    }
    return ExitCode.ok;
  },
};

/** How often status --watch looks at the journal again. */
const WATCH_POLL_MS = 200;

/** The exit code of a run, from its run-end entry's detail (the run's status). */
function runEndCode(detail: string | undefined): number {
  if (detail === 'completed') return ExitCode.ok;
  if (detail === 'failed') return ExitCode.verifyFailed;
  return ExitCode.gate;
}

/**
 * status --watch: every entry of the journal, then each one as another process appends it, until the run ends
 * (the run-end after the last run-start; at once when that is already there). Waits for the journal to appear.
 */
async function watchJournal(path: string, json: boolean, io: Io): Promise<number> {
  const tail = new JournalTail(path);
  const show = (e: JournalEntry) => io.out(json ? `${JSON.stringify(e)}\n`
    : `${e.ts}  ${(e.step ?? '-').padEnd(28)}  ${e.event.padEnd(13)}${e.detail ? `  ${e.detail}` : ''}\n`);
  let started = false;
  let ended: JournalEntry | undefined;
  for (;;) {
    for (const e of tail.read()) {
      show(e);
      if (e.event === 'run-start') { started = true; ended = undefined; }
      if (e.event === 'run-end') ended = e;
    }
    if (ended && started) return runEndCode(ended.detail);
    await new Promise((r) => setTimeout(r, WATCH_POLL_MS));
  }
}

export const verifyCommand: Command = {
  name: 'verify',
  positionals: PLAN_POSITIONAL,
  summary: "check the cluster is in the plan's end state; exit 6 if anything is off",
  usage: 'kube-renumber verify PLAN.yaml [-o table|json|yaml]',
  // it changes nothing, but its steps' checks wait (up to --timeout) for what a step's verify waits for, and it takes the
  // run's other flags so that the command that ran a plan can check it with the same flags
  options: SESSION_OPTIONS,
  help: `Flags:\n${SESSION_HELP}`,
  async run({ values, positionals, io }) {
    const pre = prepare(values, positionals, io, { write: false, journal: false, backups: true });
    const { output } = pre.flags;
    const s = await openSession(values, io, pre, { lock: false });
    // the temporary copy of the state (with the cluster's merged in) is removed at the end
    const problem = await s.executor.verifyEndState(s.client, s.ctx.backups).finally(() => s.release());
    const checked = [s.plan.spec.serviceCIDR ? 'every Service is where the plan puts it, ServiceCIDR/kubernetes holds the new range, no bridge left' : '',
      s.plan.spec.podCIDR ? `no pod left in ${s.plan.spec.podCIDR.from.join(', ')}, workloads at their desired replicas` : '',
      s.plan.spec.serviceExtension ? `ServiceCIDR ${s.plan.spec.serviceExtension.name} Ready with ${s.plan.spec.serviceExtension.add.join(',')}` : '',
      s.plan.spec.podExtension ? `IPPool ${s.plan.spec.podExtension.pools.map((p) => p.name).join(', ')} enabled with ${s.plan.spec.podExtension.add.join(',')} and the old pool's settings${s.plan.spec.podExtension.kubeProxy ? ', kube-proxy clusterCIDR holds it' : ''}${s.plan.spec.podExtension.masquerade ? ', ip-masq-agent holds it' : ''}` : ''].filter(Boolean);
    // -o json|yaml: the result on stdout whatever it is, for scripts; the error line on stderr as always
    if (output === 'json' || output === 'yaml') {
      io.out(renderData({ plan: pre.id, verified: !problem, ...(problem ? { problem } : {}), checked }, output));
    }
    if (problem) {
      io.err(`error: not in the end state: ${problem}\n`);
      return ExitCode.verifyFailed;
    }
    if (output === 'table' || output === 'wide') io.out(`verified: ${checked.join('; ')}\n`);
    return ExitCode.ok;
  },
};

export const rollbackCommand: Command = {
  name: 'rollback',
  positionals: PLAN_POSITIONAL,
  summary: 'undo completed steps in reverse where the API allows, and say what cannot be undone',
  usage: 'kube-renumber rollback PLAN.yaml [--allow-hook] [-o table|json|yaml]',
  options: { ...LOCK_OPTIONS, 'allow-hook': { type: 'boolean' } },
  help: `Flags:\n${LOCK_HELP}\n  --allow-hook             run the plan's node hook to move nodes back to their old podCIDRs (node IPAM path)\n${SESSION_HELP}`,
  async run({ values, positionals, io }) {
    const pre = prepare(values, positionals, io, { write: true, journal: true, backups: true });
    const { output } = pre.flags;
    const live = await readLiveIdentity(values, io);
    checkBinding(values, io, pre.read.plan, live);
    await checkAccess(values, io, pre.read.plan);
    const s = await openSession(values, io, pre, { lock: true, ...(live.uid ? { cluster: live.uid } : {}) });
    try {
      const r = await rollbackSteps(s.executor.steps(), s.ctx);
      if (output === 'json' || output === 'yaml') {
        io.out(renderData({ plan: pre.id, stateDir: s.stateDir, undone: r.undone, notUndone: r.notUndone }, output));
      } else {
        io.out(table(['step', 'result'], [
          ...r.undone.map((id) => [id, 'undone']),
          ...r.notUndone.map((x) => [x.step, `NOT undone: ${x.reason}`]),
        ]));
      }
      return r.notUndone.length === 0 ? ExitCode.ok : ExitCode.findings;
    } finally {
      await s.release();
    }
  },
};

export const restoreCommand: Command = {
  name: 'restore',
  positionals: PLAN_POSITIONAL,
  summary: "put back objects from a run's backups (those that no longer exist)",
  usage: 'kube-renumber restore PLAN.yaml [-o table|json|yaml]',
  options: LOCK_OPTIONS,
  help: `Flags:\n${LOCK_HELP}\n${SESSION_HELP}`,
  async run({ values, positionals, io }) {
    const pre = prepare(values, positionals, io, { write: true, journal: false, backups: true });
    const { output } = pre.flags;
    const live = await readLiveIdentity(values, io);
    checkBinding(values, io, pre.read.plan, live);
    await checkAccess(values, io, pre.read.plan);
    const s = await openSession(values, io, pre, { lock: true, ...(live.uid ? { cluster: live.uid } : {}) });
    try {
      const rows: { kind: string; namespace?: string; name: string; result: 'restored' | 'exists' | 'skipped' | 'failed'; detail?: string }[] = [];
      for (const rec of s.ctx.backups.records()) {
        const o = rec.object;
        // the kind table: the core's kinds and every pod path's (src/kube/kinds.ts), at the version it was read at
        const t = resourceOfObject(o);
        const row = { kind: String(o.kind), ...(o.metadata?.namespace ? { namespace: o.metadata.namespace } : {}), name: String(o.metadata?.name) };
        // only what this plan's run backed up, from this cluster
        if (rec.run !== pre.id) { rows.push({ ...row, result: 'skipped', detail: `backed up by another run (${rec.run}), not this plan's (${pre.id})` }); continue; }
        if (rec.cluster !== undefined && rec.cluster !== live.uid) { rows.push({ ...row, result: 'skipped', detail: `backed up from another cluster (kube-system uid ${rec.cluster})` }); continue; }
        if (!t) { rows.push({ ...row, result: 'skipped', detail: 'unknown kind' }); continue; }
        // what the migration created itself (bridges, covers, their EndpointSlices, temporary ServiceCIDRs) is removed
        // on purpose by its steps: never brought back
        if (o.metadata?.labels?.[MANAGED_LABEL] === 'true') { rows.push({ ...row, result: 'skipped', detail: `created by the migration (${MANAGED_LABEL}), removed on purpose` }); continue; }
        if (await getObject(s.client, t, o.metadata!.name!, o.metadata?.namespace)) { rows.push({ ...row, result: 'exists', detail: 'left as it is' }); continue; }
        try {
          await withRetry(() => createObject(s.client, t, o.kind === 'Pod' ? podForRecreate(o) : forCreate(o)));
        } catch (e) {
          // a create of ours whose answer was lost (a reset, a kill in flight) made it, or someone did: the retry is
          // refused (AlreadyExists, or 422 for its ClusterIP or nodePort already allocated) and the object is there
          if (e instanceof KubeApiError && (e.status === 409 || e.status === 422) && await withRetry(() => getObject(s.client, t, o.metadata!.name!, o.metadata?.namespace))) {
            rows.push({ ...row, result: 'exists', detail: 'created meanwhile (a create whose answer was lost, or by someone else): left as it is' });
            continue;
          }
          // the apiserver refuses this object now (e.g. its IP is outside every range): say so, go on with the others
          if (!(e instanceof KubeApiError) || e.status < 400 || e.status >= 500 || e.status === 401 || e.status === 403) throw e;
          rows.push({ ...row, result: 'failed', detail: errorLine(e) });
          continue;
        }
        rows.push({ ...row, result: 'restored' });
      }
      if (output === 'json' || output === 'yaml') io.out(renderData({ plan: pre.id, stateDir: s.stateDir, objects: rows }, output));
      else {
        io.out(table(['object', 'result'], rows.map((r) => [`${r.kind}/${r.namespace ? `${r.namespace}/` : ''}${r.name}`,
          r.detail ? `${r.result}: ${r.detail}` : r.result])));
      }
      return rows.some((r) => r.result === 'failed') ? ExitCode.findings : ExitCode.ok;
    } finally {
      await s.release();
    }
  },
};
