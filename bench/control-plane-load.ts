// Benchmark: how hard a node-IPAM move in waves presses the apiserver, seen by another client of it.
//
//   npm run bench -- control-plane-load [--nodes 1000] [--max-unavailable 10%] [--zones 3] [--deployments 4]
//                                       [--idle-seconds 60] [--probe-interval-ms 100] [--kcm-qps 100] [--tool-nice 10]
//                                       [--control | --compare] [--pace N] [--idle-only]
//
//   A testbed with --nodes kwok nodes (as node-waves builds it: Deployments of one replica per node, each with a
//   PodDisruptionBudget, a DaemonSet, a bare pod, a Job), then a probe: another client of the same apiserver (its
//   own connection, no window) that alternates a GET of one object and a LIST of one page of pods every
//   --probe-interval-ms and records each latency. First --idle-seconds with nothing moving (the idle p99), then the
//   node move through the CLI at --max-unavailable (plan, apply to gate kcm-stop-allocating, kube-controller-manager
//   without allocation, resume through every wave: the probed part, to the end). While the waves run the probe
//   also reads the run's Lease and notes each renewTime: the longest gap between two renewals seen.
//
//   Figures: the probe's p50/p99 idle and during the waves, otherClientP99Ratio = p99 during ÷ p99 idle; whether
//   the run completed; Lease losses (the run stopped because it could not renew) and the longest renewal gap;
//   podsLost (Deployment replicas and DaemonSet pods not available at the end, the bare pod gone); PDB violations;
//   the load average. Human-readable table on stdout, then one JSON line (last stdout line). Progress on stderr.
//
//   The resumes (the probed part) run as their own process, as the tool runs on an operator's machine: in this
//   process its parsing of 1,000-node lists held the event loop the probe's timers and answers wait on, and the
//   probe counted that wait as the apiserver's latency. On the testbed that process still shares the 2 cores with
//   the apiserver, etcd and kwok, which a production apiserver does not; --tool-nice N runs it (and the node hooks it
//   starts) at that CPU priority (default 10; 0: the same as the control plane), so what the probe sees is the
//   apiserver's answer to our requests rather than our CPU.
//
//   --control: the same node replacement in waves of the same size without kube-renumber (bench/node-replace-control.ts:
//   cordon, evict, delete, the same hook at --tool-nice, podCIDR, wait for every replica), so the probe's ratio there is the control
//   plane's reaction to the churn itself: the floor under any tool's figure on this machine. The figures add each
//   component's CPU seconds during the probed part ("bench": this process and its children, the tool's process and
//   the hooks included), and how many of the machine's cores were busy idle and during the waves (`busyCores`, from
//   /proc/stat: every process of the machine, so the figure counts what the CPU had left for the probe's answers).
//
//   --pace N (nodes a minute): the tool's run with --node-interval 60/N s (its drains start one per interval, the
//   waves' size unchanged); the control's waves start once the nodes before them have taken their share of time.
//
//   --idle-only: nothing moves; the testbed and the probe as above, then two windows of --idle-seconds, quiet and with
//   the waves' once-a-minute progress LIST of every node (idleTail): how far the p99 of one idle minute, which the
//   ratio divides by, is from the p99 of a long window with nothing moving.
//
//   --compare: both, one fresh testbed each (the control first), then a verdict (compareVerdict): PASS when the tool's
//   run completed with no Lease loss, nothing lost and no budget violated, and the other client's p99 during the tool's
//   waves is at most COMPARE_MAX_P99 × its p99 during the control's (the control completed too). The last line is the
//   verdict's JSON (`control`, `tool`: each run's JSON; `toolOverControlP99`; `pass`); exit 0 on PASS, 1 on FAIL.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect, type KubeClient } from '../src/kube/client.ts';
import { parseCidr } from '../src/net/cidr.ts';
import { contains } from '../src/net/range.ts';
import { LEASE_NAME, LEASE_NAMESPACE } from '../src/engine/lock.ts';
import { parseMaxUnavailable, waveSize } from '../src/plan/node-waves.ts';
import { compileCacheEnv } from '../test/child-env.ts';
import { Testbed } from '../test/testbed/cluster.ts';
import type { KubeObject } from '../test/testbed/kube.ts';
import { watchPDBs } from '../test/testbed/pdb-watch.ts';
import { populateWorkloads } from '../test/testbed/workloads.ts';
import { runCli } from '../test/unit/bad-input/harness.ts';
import { replaceNodesWithoutTool, type ControlFigures } from './node-replace-control.ts';
import { cli, cpuNow, cpuSince, idleCpu, oldRange, settle, targets, writeHook } from './node-waves.ts';

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const MAX_NODES = 1024;

/** The CLI from the sources in a process of its own, at CPU priority `nice` (0: unchanged). */
async function cliProcess(argv: string[], nice: number): Promise<{ code: number; out: string; err: string }> {
  const r = await runCli(argv, { env: { HOME: '/nonexistent', PATH: process.env.PATH ?? '/usr/bin:/bin', ...compileCacheEnv() }, nice });
  return { code: r.code ?? 1, out: r.out, err: r.err };
}

/** The q-quantile (0..1) of `v`, nearest rank; 0 for none. */
export function quantile(v: readonly number[], q: number): number {
  if (v.length === 0) return 0;
  const w = [...v].sort((a, b) => a - b);
  return w[Math.min(w.length - 1, Math.max(0, Math.ceil(q * w.length) - 1))]!;
}

interface Probe {
  /** Latencies (ms) recorded since the last take(), and errors. */
  take(): { ms: number[]; errors: number };
  /** Start noting the run's Lease renewals. */
  watchLease(on: boolean): void;
  /** Renewal times (epoch ms) seen. */
  renewals(): number[];
  stop(): Promise<void>;
}

/** Another client: its own connection and no window; a GET and a LIST page in turn every `intervalMs`. */
function startProbe(client: KubeClient, intervalMs: number): Probe {
  let ms: number[] = [];
  let errors = 0;
  let stopped = false;
  let lease = false;
  const renewTimes = new Set<number>();
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const t0 = performance.now();
      try {
        if (i % 2 === 0) await client.request('GET', '/api/v1/namespaces/default/services/kubernetes', { timeoutMs: 30_000 });
        else await client.request('GET', '/api/v1/pods', { query: { limit: 500 }, timeoutMs: 30_000 });
        ms.push(performance.now() - t0);
      } catch { errors++; }
      if (lease) {
        try {
          const l: any = await client.request('GET', `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases/${LEASE_NAME}`, { timeoutMs: 30_000 });
          const t = Date.parse(l?.spec?.renewTime ?? '');
          if (!Number.isNaN(t)) renewTimes.add(t);
        } catch { /* not there (between commands) */ }
      }
      const left = intervalMs - (performance.now() - t0);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
    }
  })();
  return {
    take() { const out = { ms, errors }; ms = []; errors = 0; return out; },
    watchLease(on) { lease = on; },
    renewals: () => [...renewTimes].sort((a, b) => a - b),
    async stop() { stopped = true; await loop; },
  };
}

/**
 * --idle-only: nothing moves. Two windows of `seconds` each, the probe answering throughout: first quiet, then with
 * the waves' once-a-minute progress LIST of every node (`tick`) and nothing else. For each: its p99 over the whole
 * window, the p99 of each minute (lowest, median, highest), and how many answers were slower than 2 × the p99 of the
 * quiet window's first minute (what a 60 s idle window, as the waves' ratio divides by, would have set).
 */
async function idleTail(probe: Probe, seconds: number, tick: () => Promise<void>) {
  const minutes = Math.max(1, Math.round(seconds / 60));
  const window = async (withTick: boolean) => {
    probe.take();
    const perMinute: number[][] = [];
    for (let m = 0; m < minutes; m++) {
      if (withTick) void tick().catch(() => { /* the next minute's tick tries again */ });
      await new Promise((r) => setTimeout(r, 60_000));
      perMinute.push(probe.take().ms);
      log(`idle-only ${withTick ? 'with the progress LIST' : 'quiet'}: minute ${m + 1} of ${minutes}, p99 ${round(quantile(perMinute.at(-1)!, 0.99), 1)} ms`);
    }
    return perMinute;
  };
  const quiet = await window(false);
  const ticked = await window(true);
  const firstMinuteP99 = quantile(quiet[0]!, 0.99);
  const summarize = (w: number[][]) => {
    const all = w.flat();
    const p99s = w.map((x) => quantile(x, 0.99));
    return {
      probes: all.length, p50Ms: round(quantile(all, 0.5), 1), p99Ms: round(quantile(all, 0.99), 1),
      minuteP99Ms: { min: round(quantile(p99s, 0), 1), median: round(quantile(p99s, 0.5), 1), max: round(quantile(p99s, 1), 1) },
      over2xFirstMinuteP99: all.filter((x) => x > 2 * firstMinuteP99).length,
    };
  };
  return { minutes, firstMinuteP99Ms: round(firstMinuteP99, 1), quiet: summarize(quiet), withProgressList: summarize(ticked) };
}

/** How many of the cluster's nodes have a podCIDR inside `to`, and how many in all: one LIST of every node through `client`. */
async function nodesOn(client: KubeClient, to: string): Promise<{ on: number; all: number }> {
  const range = parseCidr(to);
  let on = 0;
  let all = 0;
  for await (const x of client.list('/api/v1/nodes') as AsyncIterable<{ spec?: { podCIDR?: string } }>) {
    all++;
    if (x.spec?.podCIDR !== undefined && contains(range, parseCidr(x.spec.podCIDR))) on++;
  }
  return { on, all };
}

/** The run's closing "request window: MIN-MAX (now N), L shrink(s) for latency, O for ..." line (-v), as numbers; undefined without it. */
export function requestWindow(stderr: string): { min: number; max: number; last: number; latencyShrinks: number; overloadShrinks: number } | undefined {
  const m = /request window: (\d+)-(\d+) \(now (\d+)\), (\d+) shrink\(s\) for latency, (\d+) for/.exec(stderr);
  if (!m) return undefined;
  const [min, max, last, latencyShrinks, overloadShrinks] = m.slice(1).map(Number) as [number, number, number, number, number];
  return { min, max, last, latencyShrinks, overloadShrinks };
}

/** The node an unbound DaemonSet pod is for: the one its required node affinity names by metadata.name (undefined if none). */
export function daemonPodNode(pod: KubeObject): string | undefined {
  for (const term of pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) {
    for (const f of term.matchFields ?? []) {
      if (f.key === 'metadata.name' && f.operator === 'In' && f.values?.length === 1) return f.values[0];
    }
  }
  return undefined;
}

/**
 * What podsLost counted, object by object, for the log of a run that lost something: each Deployment short of its
 * replicas, and for each DaemonSet short of its pods, every node that has no available pod of it (with that node's
 * podCIDR, unschedulable flag and Ready condition, and the pod's phase, conditions and age where one exists).
 */
async function whatIsMissing(tb: Testbed): Promise<string[]> {
  const out: string[] = [];
  for (const d of (await tb.client.list('/apis/apps/v1/deployments')).items) {
    const short = (d.spec?.replicas ?? 1) - (d.status?.availableReplicas ?? 0);
    if (short > 0) out.push(`Deployment ${d.metadata.namespace}/${d.metadata.name}: ${short} replica(s) not available`);
  }
  const nodes = (await tb.client.list('/api/v1/nodes')).items;
  for (const ds of (await tb.client.list('/apis/apps/v1/daemonsets')).items) {
    if ((ds.status?.numberAvailable ?? 0) >= (ds.status?.desiredNumberScheduled ?? 0)) continue;
    const pods = (await tb.client.list(`/api/v1/namespaces/${ds.metadata.namespace}/pods`)).items
      .filter((p: any) => (p.metadata.ownerReferences ?? []).some((o: any) => o.uid === ds.metadata.uid));
    const ready = (p: any) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
    for (const n of nodes) {
      // a DaemonSet's pod names its node by affinity before it is bound (spec.nodeName is set by the binding)
      const mine = pods.filter((p: any) => (p.spec?.nodeName ?? daemonPodNode(p)) === n.metadata.name);
      if (mine.some(ready)) continue;
      const nodeReady = (n.status?.conditions ?? []).find((c: any) => c.type === 'Ready')?.status;
      const podText = mine.map((p: any) => `pod ${p.metadata.name} ${p.status?.phase}${p.spec?.nodeName ? '' : ' (not bound)'} created ${p.metadata.creationTimestamp}${p.metadata.deletionTimestamp ? ' deleting' : ''}`
        + ` conditions ${(p.status?.conditions ?? []).map((c: any) => `${c.type}=${c.status}${c.status === 'False' && c.message ? ` (${c.message})` : ''}`).join(',')}`).join('; ') || 'no pod';
      const alloc = n.status?.allocatable;
      out.push(`DaemonSet ${ds.metadata.namespace}/${ds.metadata.name} on node ${n.metadata.name} (podCIDR ${n.spec?.podCIDR ?? 'none'}, `
        + `unschedulable ${n.spec?.unschedulable === true}, Ready ${nodeReady}, allocatable ${alloc ? `cpu ${alloc.cpu} pods ${alloc.pods}` : 'none'}, `
        + `created ${n.metadata.creationTimestamp}): ${podText}`);
    }
  }
  if (!(await tb.client.getOrUndefined('/api/v1/namespaces/tb-wl-0/pods/standalone'))) out.push('bare pod tb-wl-0/standalone gone');
  return out;
}

/** The machine's CPU time so far (/proc/stat's first line, in clock ticks): busy (user, nice, system, irq, softirq, steal) and all. */
export function machineTicks(stat = readFileSync('/proc/stat', 'utf8')): { busy: number; all: number } {
  const f = (stat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((x) => !Number.isFinite(x))) throw new Error('/proc/stat: no cpu line');
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [number, number, number, number, number, number, number, number];
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, all: busy + idle + iowait };
}

/** Cores busy on average between two machineTicks readings (of `cores`). */
export function busyCores(a: { busy: number; all: number }, b: { busy: number; all: number }, cores: number): number {
  const all = b.all - a.all;
  return all > 0 ? ((b.busy - a.busy) / all) * cores : 0;
}

/** Each component's CPU figure as printed: the bench's own process (`cli` in cpuNow) named `bench`, rounded to `digits`. */
function byComponent(x: Record<string, number>, digits: number): Record<string, number> {
  return Object.fromEntries(Object.entries(x).map(([k, v]) => [k === 'cli' ? 'bench' : k, round(v, digits)]));
}

/** The longest gap (s) between renewals seen one after another. */
function longestGap(times: readonly number[]): number {
  let gap = 0;
  for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
  return gap / 1000;
}

/**
 * How much worse the other client's p99 during the tool's waves may be than during the control's (--compare). The
 * tool ÷ control pairs measured: 1.00 (200 nodes: 195.8 and 195.7 ms), 0.96 (1,000 nodes: 450.3 and 469.9 ms), 0.87
 * (200 nodes: 233.7 and 268 ms). Two controls of 200 nodes on two days read 195.7 and 268 ms, so one pair can miss
 * by noise alone: repeat a FAIL before reading it as the tool's doing.
 */
export const COMPARE_MAX_P99 = 1.25;

/** A run's figures as --compare reads them (the JSON line). */
export interface RunLine {
  mode: string; completed: number; leaseLosses: number; podsLost: number; pdbViolations: number;
  during: { p99Ms: number }; idle: { p99Ms: number }; otherClientP99Ratio: number | null; resumeSeconds: number;
}

/** --compare's verdict on a control run and a tool run of the same size. */
export function compareVerdict(control: RunLine, tool: RunLine, maxP99 = COMPARE_MAX_P99): { pass: boolean; toolOverControlP99: number | null; failures: string[] } {
  const failures: string[] = [];
  if (control.mode !== 'control' || tool.mode !== 'tool') failures.push(`modes are ${control.mode} and ${tool.mode}, not control and tool`);
  if (control.completed !== 1) failures.push('the control did not complete: nothing to compare with');
  if (tool.completed !== 1) failures.push("the tool's run did not complete");
  if (tool.leaseLosses > 0) failures.push(`the tool's run lost its Lease ${tool.leaseLosses} time(s)`);
  if (tool.podsLost > 0 || control.podsLost > 0) failures.push(`pods lost: tool ${tool.podsLost}, control ${control.podsLost}`);
  if (tool.pdbViolations > 0) failures.push(`the tool's run violated a PodDisruptionBudget ${tool.pdbViolations} time(s)`);
  const ratio = control.during.p99Ms > 0 ? tool.during.p99Ms / control.during.p99Ms : null;
  if (ratio === null) failures.push('the control has no p99 during its waves');
  else if (ratio > maxP99) failures.push(`the other client's p99 during the tool's waves is ${round(ratio, 2)} × the control's (${tool.during.p99Ms} against ${control.during.p99Ms} ms), above ${maxP99}`);
  return { pass: failures.length === 0, toolOverControlP99: ratio === null ? null : round(ratio, 2), failures };
}

/** --compare: the control, then the tool, each on a fresh testbed, then the verdict. */
async function compare(args: string[]): Promise<number> {
  const rest = args.filter((a) => a !== '--compare' && a !== '--control');
  const lines: RunLine[] = [];
  for (const control of [true, false]) {
    let last = '';
    const code = await run(control ? [...rest, '--control'] : rest, (s) => { process.stdout.write(s); last = s; });
    if (code === 2) return 2;
    try { lines.push(JSON.parse(last.trim()) as RunLine); } catch { log(`the ${control ? 'control' : "tool's"} run printed no figures`); return 1; }
  }
  const [c, t] = lines as [RunLine, RunLine];
  const v = compareVerdict(c, t);
  process.stdout.write(`COMPARE: p99 during the waves, tool ${t.during.p99Ms} ms (${t.resumeSeconds} s) against control ${c.during.p99Ms} ms (${c.resumeSeconds} s): `
    + `${v.toolOverControlP99} × (at most ${COMPARE_MAX_P99}); ratio to idle: tool ${t.otherClientP99Ratio}, control ${c.otherClientP99Ratio}\n`
    + `${v.pass ? 'PASS' : `FAIL: ${v.failures.join('; ')}`}\n`);
  process.stdout.write(`${JSON.stringify({ scenario: 'control-plane-load', mode: 'compare', maxToolOverControlP99: COMPARE_MAX_P99, ...v, control: c, tool: t })}\n`);
  return v.pass ? 0 : 1;
}

export async function run(args: string[], out: (s: string) => void = (s) => { process.stdout.write(s); }): Promise<number> {
  if (args.includes('--compare')) {
    if (args.includes('--control')) { process.stderr.write('error: --compare runs the control itself; leave out --control\n'); return 2; }
    return compare(args);
  }
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        nodes: { type: 'string' }, 'max-unavailable': { type: 'string' }, zones: { type: 'string' }, deployments: { type: 'string' },
        'idle-seconds': { type: 'string' }, 'probe-interval-ms': { type: 'string' }, 'kcm-qps': { type: 'string' },
        'tool-nice': { type: 'string' }, control: { type: 'boolean' }, pace: { type: 'string' }, 'idle-only': { type: 'boolean' },
      },
    });
  } catch (e) {
    // an unknown flag, a value missing: one line, as any bad input
    process.stderr.write(`error: ${(e as Error).message.split('\n')[0]}\n`);
    return 2;
  }
  const { values } = parsed;
  const nodes = Number(values.nodes ?? 1000);
  const max = values['max-unavailable'] ?? '10%';
  const zones = Number(values.zones ?? 3);
  const deployments = Number(values.deployments ?? 4);
  const idleSeconds = Number(values['idle-seconds'] ?? 60);
  const intervalMs = Number(values['probe-interval-ms'] ?? 100);
  const kcmQPS = Number(values['kcm-qps'] ?? 100);
  const toolNice = Number(values['tool-nice'] ?? 10);
  const control = values.control === true;
  const idleOnly = values['idle-only'] === true;
  const pace = values.pace === undefined ? undefined : Number(values.pace);
  if (pace !== undefined && !(pace > 0 && Number.isFinite(pace))) {
    process.stderr.write(`error: --pace ${values.pace} must be a number of nodes a minute, more than 0\n`);
    return 2;
  }
  if (!Number.isInteger(toolNice) || toolNice < 0 || toolNice > 19) {
    process.stderr.write('error: --tool-nice must be a whole number from 0 to 19\n');
    return 2;
  }
  if (![nodes, zones, deployments, idleSeconds, intervalMs, kcmQPS].every((n) => Number.isInteger(n) && n > 0) || nodes > MAX_NODES) {
    process.stderr.write(`error: --nodes (at most ${MAX_NODES}), --zones, --deployments, --idle-seconds, --probe-interval-ms and --kcm-qps must be positive whole numbers\n`);
    return 2;
  }
  try { parseMaxUnavailable(max); } catch (e) { process.stderr.write(`error: --${(e as Error).message}\n`); return 2; }

  const dir = await mkdtemp(join(tmpdir(), 'kr-bench-cpload-'));
  let keep = true; // removed only after a run that completed
  log(`starting a ${nodes}-node testbed in ${zones} zone(s)`);
  const from = oldRange(nodes);
  const to = targets(nodes)[0]!;
  const tb = await Testbed.start({ serviceCIDR: '10.96.0.0/16', podCIDR: from, nodes, zones, podIPAM: 'kwok', calicoCRDs: false, controllerManagerQPS: kcmQPS, timeoutMs: 300_000 });
  let probe: Probe | undefined;
  try {
    const summary = await populateWorkloads(tb, {
      namespaces: 1, deploymentsPerNs: deployments, replicas: nodes, statefulSets: 0, pdbMaxUnavailable: '10%', timeoutMs: 600_000,
    });
    log(`${summary.totalPods} pods in ${summary.workloads.length} workloads, up in ${round(summary.elapsedMs / 1000)} s`);
    // the probe: our kube layer, but its own connection and no window (it stands for another tool on the cluster)
    const other = connect({ kubeconfig: tb.kubeconfigPath, limiter: false, env: { HOME: '/nonexistent' } });
    probe = startProbe(other, intervalMs);
    if (idleOnly) {
      const fig = await idleTail(probe, idleSeconds, async () => { await nodesOn(other, to); });
      out(`${JSON.stringify({ scenario: 'control-plane-load', mode: 'idle-only', nodes, pods: summary.totalPods, cores: availableParallelism(), ...fig })}\n`);
      keep = false;
      return 0;
    }
    const idleTicks0 = machineTicks();
    const cpuPerSecondIdle = byComponent(await idleCpu(tb, idleSeconds * 1000), 2); // the idle window itself
    const idle = probe.take();
    const idleTicks1 = machineTicks();
    const idleLoad = loadavg()[0]!;
    log(`idle: ${idle.ms.length} probes, p99 ${round(quantile(idle.ms, 0.99), 1)} ms, load ${round(idleLoad, 2)}`);

    const hook = await writeHook(tb, dir);
    const size = waveSize(parseMaxUnavailable(max), nodes);
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--yes', '--allow-hook', '--timeout', '300s'];
    const planPath = join(dir, 'plan.yaml');
    if (!control) {
      const p = await cli(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', to, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', max, '-o', 'yaml']);
      if (p.code !== 0 && p.code !== 1) throw new Error(`plan exited ${p.code}: ${p.err}`);
      await writeFile(planPath, p.out);
      const a = await cli(['apply', planPath, ...common]);
      if (a.code !== 7) throw new Error(`apply exited ${a.code}, expected gate kcm-stop-allocating: ${a.err.slice(-2000)}`);
    }
    if (!(await tb.restartControllerManager({ clusterCIDR: from, allocateNodeCIDRs: false })).running) throw new Error('kube-controller-manager did not start with --allocate-node-cidrs=false');
    const watcher = watchPDBs(tb);
    await watcher.ready;
    log(`${nodes} nodes, --max-unavailable ${max}: moving ${from} → ${to} with the probe running${control ? ', without kube-renumber (--control)' : ''}`);
    probe.take();
    probe.watchLease(!control);
    const t0 = performance.now();
    const cpu0 = cpuNow(tb);
    const ticks0 = machineTicks();
    // progress on stderr once a minute: nodes on the new range (a LIST of nodes through the probe's own client, outside
    // its latency figures), so a run that crawls is seen crawling, with its rate and the time it would still need
    const moved: { s: number; nodes: number }[] = [];
    const ticker = setInterval(() => {
      void (async () => {
        try {
          const n = (await nodesOn(other, to)).on;
          const s = (performance.now() - t0) / 1000;
          moved.push({ s, nodes: n });
          const rate = n / (s / 60);
          log(`${round(s / 60)} min: ${n} of ${nodes} nodes on ${to} (${round(rate)} a minute${rate > 0 && n < nodes ? `, ~${round((nodes - n) / rate)} min to go` : ''}), load ${round(loadavg()[0]!, 2)}`);
        } catch { /* the next tick tries again */ }
      })();
    }, 60_000);
    let stderr = '';
    let completed = false;
    let controlFigures: ControlFigures | undefined;
    try {
      if (control) {
        const c = connect({ kubeconfig: tb.kubeconfigPath, limiter: false, env: { HOME: '/nonexistent' } });
        controlFigures = await replaceNodesWithoutTool(c, { to, size, hook, nice: toolNice, pace, log });
      } else {
        // -v: the run's closing figures (its request window) are written only in verbose mode
        // --pace N: one node's drain every 60/N s (--node-interval), the waves' size unchanged
        const paced = pace ? ['--node-interval', `${Math.round(60_000 / pace)}ms`] : [];
        const r = await cliProcess(['resume', planPath, ...common, ...paced, '--ack-gate', 'kcm-stop-allocating', '-v'], toolNice);
        stderr = r.err;
        completed = r.code === 7 && /stopped at gate kcm-cluster-cidr/.test(stderr);
        if (!completed) log(`resume exited ${r.code}: ${stderr.slice(-2000)}`);
      }
    } finally { clearInterval(ticker); }
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = cpuNow(tb);
    const ticks1 = machineTicks();
    const cpuSeconds = byComponent(cpuSince(cpu0, cpu1), 1);
    probe.watchLease(false);
    const during = probe.take();
    const duringLoad = loadavg()[0]!;
    const pdb = await watcher.stop();
    if (control) {
      if (!(await tb.restartControllerManager({ clusterCIDR: to, allocateNodeCIDRs: true })).running) throw new Error('kube-controller-manager did not start on the new range');
      const { on, all } = await nodesOn(other, to);
      const off = all - on;
      completed = off === 0;
      if (!completed) log(`${off} node(s) not on ${to} after the control's waves`);
    } else if (completed) {
      if (!(await tb.restartControllerManager({ clusterCIDR: to, allocateNodeCIDRs: true })).running) throw new Error('kube-controller-manager did not start on the new range');
      await settle(tb);
      const done = await cliProcess(['resume', planPath, ...common, '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr'], toolNice);
      completed = done.code === 0;
      if (!completed) log(`final resume exited ${done.code}: ${done.err.slice(-1000)}`);
    }
    const leaseLosses = (stderr.match(/could not renew Lease|lost Lease|Lease \S+ was deleted/g) ?? []).length;
    const lost = await settle(tb);
    if (lost > 0) for (const line of await whatIsMissing(tb)) log(`missing: ${line}`);
    const idleP99 = quantile(idle.ms, 0.99);
    const duringP99 = quantile(during.ms, 0.99);
    const cores = availableParallelism();
    const fig = {
      scenario: 'control-plane-load', mode: control ? 'control' : 'tool', nodes, pods: summary.totalPods, maxUnavailable: max, waveSize: size, waves: Math.ceil(nodes / size),
      idle: { probes: idle.ms.length, errors: idle.errors, p50Ms: round(quantile(idle.ms, 0.5), 1), p99Ms: round(idleP99, 1), loadAvg1m: round(idleLoad, 2) },
      during: { probes: during.ms.length, errors: during.errors, p50Ms: round(quantile(during.ms, 0.5), 1), p99Ms: round(duringP99, 1), loadAvg1m: round(duringLoad, 2),
        // answers slower than 2 × the idle p99: the ratio is ≤ 2 when these are at most 1 % of them (nearest rank)
        over2xIdleP99: during.ms.filter((x) => x > 2 * idleP99).length },
      otherClientP99Ratio: idleP99 > 0 ? round(duringP99 / idleP99, 2) : null,
      completed: completed ? 1 : 0, resumeSeconds: round(seconds, 1),
      leaseLosses, leaseRenewals: probe.renewals().length, longestLeaseRenewalGapSeconds: round(longestGap(probe.renewals()), 1),
      podsLost: lost, pdbViolations: pdb.violations.length, cores, toolNice,
      limiter: requestWindow(stderr), nodesMovedByMinute: moved.map((m) => [round(m.s / 60, 1), m.nodes]),
      ...(pace ? { pace } : {}), cpuSeconds, cpuPerSecondIdle,
      busyCores: { idle: round(busyCores(idleTicks0, idleTicks1, cores), 2), during: round(busyCores(ticks0, ticks1, cores), 2) },
      ...(controlFigures ? { control: controlFigures } : {}),
    };
    out(`CONTROL-PLANE-LOAD (${nodes} nodes, ${summary.totalPods} pods, --max-unavailable ${max}: ${fig.waves} wave(s) of up to ${size}; ${control ? 'without kube-renumber (--control)' : `the tool's process at nice ${toolNice}`})\n`
      + `probe (GET + LIST page every ${intervalMs} ms)   probes  errors  p50 ms  p99 ms  load1m\n`
      + `idle                                      ${String(fig.idle.probes).padStart(6)}  ${String(fig.idle.errors).padStart(6)}  ${String(fig.idle.p50Ms).padStart(6)}  ${String(fig.idle.p99Ms).padStart(6)}  ${fig.idle.loadAvg1m}\n`
      + `during the waves                          ${String(fig.during.probes).padStart(6)}  ${String(fig.during.errors).padStart(6)}  ${String(fig.during.p50Ms).padStart(6)}  ${String(fig.during.p99Ms).padStart(6)}  ${fig.during.loadAvg1m}; ${fig.during.over2xIdleP99} answer(s) slower than 2 × idle p99\n`
      + `p99 ratio ${fig.otherClientP99Ratio}; completed ${fig.completed} (waves ${fig.resumeSeconds} s); Lease losses ${leaseLosses}, longest renewal gap ${fig.longestLeaseRenewalGapSeconds} s; `
      + `pods lost ${lost}; PDB violations ${fig.pdbViolations}\n`
      + `CPU seconds during the waves: ${Object.entries(cpuSeconds).map(([k, v]) => `${k} ${v}`).join(', ')}\n`
      + `busy cores of ${fig.cores}: idle ${fig.busyCores.idle}, during the waves ${fig.busyCores.during}; CPU seconds a second idle: ${Object.entries(cpuPerSecondIdle).map(([k, v]) => `${k} ${v}`).join(', ')}\n`);
    out(`${JSON.stringify(fig)}\n`);
    keep = !completed;
    return completed ? 0 : 1;
  } finally {
    await probe?.stop();
    await tb.stop();
    if (keep) log(`kept for a look: ${dir} (plan, state, journal)`);
    else await rm(dir, { recursive: true, force: true });
  }
}
