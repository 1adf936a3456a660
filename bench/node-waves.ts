// Benchmark: the node-IPAM Pod CIDR move in waves (--max-unavailable) on a real local control plane.
//
//   npm run bench -- node-waves [--nodes 50,100,200] [--max-unavailable 1,10%] [--zones 3] [--deployments 4]
//                               [--pdb-max-unavailable 10%] [--kcm-qps 100]
//
//   For each node count: a testbed (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, pod
//   IPs from node podCIDRs) with that many kwok nodes in --zones zones, Deployments with one replica per node
//   each and a PodDisruptionBudget each (maxUnavailable --pdb-max-unavailable), a DaemonSet, a bare pod and a
//   Job. Then, through the CLI as a user runs it, one node-path move per --max-unavailable value, each from the
//   range the previous one left (OLD → NEW1 → NEW2 ...): plan --ipam node --node-hook (the testbed's
//   re-registration), apply to gate kcm-stop-allocating, kube-controller-manager restarted with
//   --allocate-node-cidrs=false, resume through every node to gate kcm-cluster-cidr (timed: the node moves),
//   kube-controller-manager on the new range, resume to the end. A watcher follows every PodDisruptionBudget.
//
//   Figures per node count: each run's node-move time; one node's cycle (the --max-unavailable 1 run's time ÷
//   nodes); for the others, ratio = time ÷ (ceil(nodes ÷ wave size) × one node's cycle): 1.0 would be waves as
//   fast as single nodes. podsLost: Deployment replicas not available at the end plus bare pods gone.
// Human-readable table on stdout, then one JSON line (last stdout line). Progress on stderr.

import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { main, type Io } from '../src/cli/main.ts';
import { readJournal } from '../src/engine/journal.ts';
import { parseMaxUnavailable, waveSize } from '../src/plan/node-waves.ts';
import { Testbed } from '../test/testbed/cluster.ts';
import { watchPDBs } from '../test/testbed/pdb-watch.ts';
import { nodeFromTemplate, readNodeTemplate } from '../test/testbed/reregister-node.ts';
import { populateWorkloads } from '../test/testbed/workloads.ts';

/** The pod range the testbed starts with: a /16 (256 nodes' /24s) up to 256 nodes, a /14 above. */
export const oldRange = (nodes: number) => (nodes <= 256 ? '10.244.0.0/16' : '10.244.0.0/14');
/** Nodes the ranges hold: the tool asks a new range for twice the nodes' /24s, 2,048 in a /13 (targets above 512 nodes). */
const MAX_NODES = 1024;
/** One range per run, each large enough for 2 × 512 nodes of /24 (the plan's default headroom). */
const TARGETS = ['10.60.0.0/14', '10.64.0.0/14', '10.68.0.0/14', '10.72.0.0/14'];
/** The new ranges for a node count: /14s (1,024 /24s, twice 512 nodes) up to 512 nodes, /13s above. */
export const targets = (nodes: number) => (nodes <= 512 ? TARGETS : ['10.64.0.0/13', '10.72.0.0/13', '10.80.0.0/13', '10.88.0.0/13']);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

export async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent' } };
  const code = await main(argv, io);
  return { code, out, err };
}

interface RunFigures {
  maxUnavailable: string;
  waveSize: number;
  waves: number;
  /** The node moves: the first node step's start to the last one's end (journal). */
  seconds: number;
  /** The whole resume through the node moves (plan checks, lock, backups, scale-critical included). */
  resumeSeconds: number;
  /** The median and slowest node of the run, from the wave steps' journal reports (waves of more than one node). */
  nodeMedianSeconds?: number;
  nodeMaxSeconds?: number;
  /** Median seconds of each phase of a node's move inside its wave (journal reports): where a wave's time goes. */
  phaseMedianSeconds?: Record<string, number>;
  /** CPU seconds during the node moves, per component (kube-apiserver, etcd, ...; "cli": this process and its hooks), and per node moved. */
  cpuSeconds?: Record<string, number>;
  cpuSecondsPerNode?: Record<string, number>;
  /** The same less what the component burns idle over as long (kwok's node heartbeats, leases, controllers). */
  cpuSecondsPerNodeNet?: Record<string, number>;
  /** Pods the podCIDR sweep removed from nodes of the waves (bound there before the node had its podCIDR). */
  sweptPods?: number;
  pdbViolations: number;
  podsLost: number;
  loadAvg1m: number;
}

/** Deployment replicas and DaemonSet pods not available, and bare pods gone, at the end of a run. */
export async function podsLost(tb: Testbed): Promise<number> {
  let lost = 0;
  for (const d of (await tb.client.list('/apis/apps/v1/deployments')).items) lost += Math.max(0, (d.spec?.replicas ?? 1) - (d.status?.availableReplicas ?? 0));
  for (const d of (await tb.client.list('/apis/apps/v1/daemonsets')).items) lost += Math.max(0, (d.status?.desiredNumberScheduled ?? 0) - (d.status?.numberAvailable ?? 0));
  if (!(await tb.client.getOrUndefined('/api/v1/namespaces/tb-wl-0/pods/standalone'))) lost++;
  return lost;
}

/** Waits (up to 2 min) until every Deployment is available again: pods still starting are not lost. */
export async function settle(tb: Testbed): Promise<number> {
  let lost = await podsLost(tb);
  for (let i = 0; i < 120 && lost > 0; i++) { await new Promise((r) => setTimeout(r, 1000)); lost = await podsLost(tb); }
  return lost;
}

/**
 * The node hook: what a kubelet does when it starts, with kubectl — create the Node (name, labels with its zone,
 * from the testbed's node template) and wait until it is Ready. Shell and kubectl rather than a Node.js script:
 * a wave starts one hook per node at once, and 20 Node.js start-ups would cost the 2-core machine seconds of CPU
 * that a real fleet spreads over its machines.
 */
export async function writeHook(tb: Testbed, dir: string): Promise<string> {
  const file = readNodeTemplate(tb.nodeTemplatePath);
  const nodesDir = join(dir, 'nodes');
  await mkdir(nodesDir, { recursive: true });
  for (const n of (await tb.client.list('/api/v1/nodes')).items) {
    // registered as a kubelet registers it: with addresses, capacity and allocatable (nodeFromTemplate)
    const obj = nodeFromTemplate(file, n.metadata.name);
    await writeFile(join(nodesDir, `${n.metadata.name}.json`), JSON.stringify(obj));
  }
  const kubectl = `${join(tb.binDir, 'kubectl')} --kubeconfig ${tb.kubeconfigPath}`;
  const path = join(dir, 'hook.sh');
  await writeFile(path, `#!/bin/sh
set -e
# a machine boots after its old Node is gone: wait (60s at most) until the garbage collector has deleted the
# old Node's Lease, so kwok starts the new Node with a Lease of its own rather than renewing the old one
${kubectl} wait --for=delete --timeout=60s -n kube-node-lease lease/"$KUBE_RENUMBER_NODE" >/dev/null 2>&1 || :
${kubectl} create -f ${nodesDir}/"$KUBE_RENUMBER_NODE".json >/dev/null
`
    + `exec ${kubectl} wait --for=condition=Ready --timeout=120s node/"$KUBE_RENUMBER_NODE" >/dev/null
`, { mode: 0o700 });
  return `/bin/sh ${path}`;
}

const TICKS = 100;

/** utime + stime (+ those of reaped children) of a process, in seconds; 0 when it is gone. */
function procCpu(pid: number, children: boolean): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const x = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number);
    // fields 14-17 of proc(5) are x[11..14] here (field 3, state, is x[0])
    return (x[11]! + x[12]! + (children ? x[13]! + x[14]! : 0)) / TICKS;
  } catch { return 0; }
}

/** Every process's parent, from /proc. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8');
      out.set(Number(d), Number(f.slice(f.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* gone */ }
  }
  return out;
}

/**
 * CPU seconds so far of each testbed component (the supervisor's descendants: the component itself) and of this
 * process with its reaped children (the CLI runs in-process; its node hooks are its children).
 */
export function cpuNow(tb: Testbed): Record<string, number> {
  const pp = parents();
  const out: Record<string, number> = {};
  for (const p of tb.processes()) {
    if (!p.pid) continue;
    const kids = [...pp.entries()].filter(([, parent]) => parent === p.pid).map(([pid]) => pid);
    out[p.name] = (out[p.name] ?? 0) + kids.reduce((a, pid) => a + procCpu(pid, true), 0);
  }
  out.cli = procCpu(process.pid, true);
  return out;
}

/** Node steps of a plan (per node, or per wave). */
const NODE_STEP = /^(drain-node-|reregister-node-|assign-podcidr-|move-nodes-wave-|drain-nodes-wave-|reregister-nodes-wave-|assign-podcidr-wave-)/;

/** The node moves in a run's journal: from the first node step's start to the last one's end, in seconds. */
function nodePhaseSeconds(journal: string): number {
  const e = readJournal(journal).filter((x) => x.step && NODE_STEP.test(x.step) && (x.event === 'step-start' || x.event === 'step-done'));
  const start = e.find((x) => x.event === 'step-start');
  const end = e.findLast((x) => x.event === 'step-done');
  if (!start || !end) throw new Error(`no node steps in ${journal}`);
  return (Date.parse(end.ts) - Date.parse(start.ts)) / 1000;
}

/** Each component's CPU seconds between two cpuNow readings (a component that started since counts from 0). */
export function cpuSince(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(b).map((k) => [k, b[k]! - (a[k] ?? 0)]));
}

/** CPU seconds per second of each component with nothing moving, over `ms`. */
export async function idleCpu(tb: Testbed, ms: number): Promise<Record<string, number>> {
  const a = cpuNow(tb);
  await new Promise((r) => setTimeout(r, ms));
  return Object.fromEntries(Object.entries(cpuSince(a, cpuNow(tb))).map(([k, v]) => [k, v / (ms / 1000)]));
}

async function moveOnce(tb: Testbed, dir: string, from: string, to: string, max: string, nodes: number, i: number, idle: Record<string, number>): Promise<RunFigures> {
  const planPath = join(dir, `plan-${i}.yaml`);
  const stateDir = join(dir, `state-${i}`);
  const hook = await writeHook(tb, dir);
  const p = await cli(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', to, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', max, '-o', 'yaml']);
  if (p.code !== 0 && p.code !== 1) throw new Error(`plan exited ${p.code}: ${p.err}`);
  await writeFile(planPath, p.out);
  const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--yes', '--allow-hook', '--timeout', '300s'];
  const a = await cli(['apply', planPath, ...common]);
  if (a.code !== 7) throw new Error(`apply exited ${a.code}, expected gate kcm-stop-allocating: ${a.err.slice(-2000)}`);
  if (!(await tb.restartControllerManager({ clusterCIDR: from, allocateNodeCIDRs: false })).running) throw new Error('kube-controller-manager did not start with --allocate-node-cidrs=false');
  const watcher = watchPDBs(tb);
  await watcher.ready;
  log(`${nodes} nodes, --max-unavailable ${max}: moving ${from} → ${to}`);
  const t0 = performance.now();
  const cpu0 = cpuNow(tb);
  const r = await cli(['resume', planPath, ...common, '--ack-gate', 'kcm-stop-allocating']);
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = cpuNow(tb);
  const cpu = Object.fromEntries(Object.entries(cpuSince(cpu0, cpu1)).map(([k, v]) => [k, round(v, 1)]));
  const load = loadavg()[0]!;
  if (r.code !== 7 || !/stopped at gate kcm-cluster-cidr/.test(r.err)) throw new Error(`resume exited ${r.code}, expected gate kcm-cluster-cidr: ${r.err.slice(-2000)}`);
  const pdb = await watcher.stop();
  if (!(await tb.restartControllerManager({ clusterCIDR: to, allocateNodeCIDRs: true })).running) throw new Error('kube-controller-manager did not start on the new range');
  // the last wave's DaemonSet pods may still be starting on a loaded machine: verify-pods checks them once
  await settle(tb);
  const done = await cli(['resume', planPath, ...common, '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr']);
  if (done.code !== 0) throw new Error(`final resume exited ${done.code}: ${done.err.slice(-2000)}`);
  const size = waveSize(parseMaxUnavailable(max), nodes);
  const phase = nodePhaseSeconds(join(stateDir, 'journal.jsonl'));
  const reports = readJournal(join(stateDir, 'journal.jsonl')).filter((e) => e.event === 'report' && e.detail?.includes('"node"'))
    .map((e) => JSON.parse(e.detail!).node as { seconds: number; status: string; phases?: Record<string, number>; counts?: Record<string, number> }).filter((x) => x.status === 'done');
  const perNode = reports.map((x) => x.seconds).sort((x, y) => x - y);
  const phaseNames = [...new Set(reports.flatMap((x) => Object.keys(x.phases ?? {})))];
  const median = (v: number[]) => { const w = [...v].sort((x, y) => x - y); return w.length ? w[Math.floor(w.length / 2)]! : 0; };
  const phaseMedianSeconds = Object.fromEntries(phaseNames.map((k) => [k, round(median(reports.map((x) => x.phases?.[k] ?? 0)), 2)]));
  const lost = await settle(tb);
  const fig: RunFigures = {
    maxUnavailable: max, waveSize: size, waves: Math.ceil(nodes / size), seconds: round(phase, 1), resumeSeconds: round(seconds, 1),
    ...(perNode.length > 0 ? { nodeMedianSeconds: round(perNode[Math.floor(perNode.length / 2)]!, 1), nodeMaxSeconds: round(perNode.at(-1)!, 1) } : {}),
    ...(phaseNames.length > 0 ? { phaseMedianSeconds, sweptPods: reports.reduce((a, x) => a + (x.counts?.swept ?? 0), 0) } : {}),
    cpuSeconds: cpu, cpuSecondsPerNode: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v / nodes, 3)])),
    cpuSecondsPerNodeNet: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(Math.max(0, v - (idle[k] ?? 0) * seconds) / nodes, 3)])),
    pdbViolations: pdb.violations.length, podsLost: lost, loadAvg1m: round(load, 2),
  };
  log(`  CPU s during the moves: ${JSON.stringify(cpu)}${phaseNames.length > 0 ? `; median s per phase inside a wave: ${JSON.stringify(phaseMedianSeconds)}, ${reports.reduce((a, x) => a + (x.counts?.swept ?? 0), 0)} pod(s) swept` : ''}`);
  log(`  ${round(phase, 1)} s of node moves (resume ${round(seconds, 1)} s) (${fig.waves} wave(s) of up to ${size}), ${pdb.violations.length} PDB violation(s), ${lost} pod(s) lost, load ${fig.loadAvg1m}`);
  return fig;
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      nodes: { type: 'string' }, 'max-unavailable': { type: 'string' }, zones: { type: 'string' }, deployments: { type: 'string' },
      'pdb-max-unavailable': { type: 'string' }, 'kcm-qps': { type: 'string' },
    },
  });
  const counts = (values.nodes ?? '50,100,200').split(',').map(Number);
  const maxes = (values['max-unavailable'] ?? '1,10%').split(',').map((x) => x.trim());
  const zones = Number(values.zones ?? 3);
  const deployments = Number(values.deployments ?? 4);
  const pdbMax = values['pdb-max-unavailable'] ?? '10%';
  const kcmQPS = Number(values['kcm-qps'] ?? 100);
  if (![...counts, zones, deployments, kcmQPS].every((n) => Number.isInteger(n) && n > 0) || counts.some((n) => n > MAX_NODES)) {
    process.stderr.write(`error: --nodes (at most ${MAX_NODES}: the pod ranges hold that many nodes' /24s), --zones, --deployments and --kcm-qps must be positive whole numbers\n`);
    return 2;
  }
  try { maxes.forEach((m) => parseMaxUnavailable(m)); } catch (e) { process.stderr.write(`error: --${(e as Error).message}\n`); return 2; }
  if (maxes.length > TARGETS.length) { process.stderr.write(`error: at most ${TARGETS.length} --max-unavailable values\n`); return 2; }
  const results: Array<{ nodes: number; pods: number; cycleSeconds?: number; runs: Array<RunFigures & { ratio?: number; cpuFloorRatio?: number }> }> = [];
  for (const nodes of counts) {
    const dir = await mkdtemp(join(tmpdir(), 'kr-bench-nodes-'));
    log(`starting a ${nodes}-node testbed in ${zones} zone(s)`);
    const tb = await Testbed.start({ serviceCIDR: '10.96.0.0/16', podCIDR: oldRange(nodes), nodes, zones, podIPAM: 'kwok', calicoCRDs: false, controllerManagerQPS: kcmQPS, timeoutMs: 300_000 });
    try {
      const summary = await populateWorkloads(tb, {
        namespaces: 1, deploymentsPerNs: deployments, replicas: nodes, statefulSets: 0, pdbMaxUnavailable: /^\d+$/.test(pdbMax) ? Number(pdbMax) : pdbMax,
        timeoutMs: 600_000,
      });
      log(`${summary.totalPods} pods in ${summary.workloads.length} workloads (${summary.pdbs.length} PDBs, maxUnavailable ${pdbMax}), up in ${round(summary.elapsedMs / 1000)} s`);
      const runs: Array<RunFigures & { ratio?: number; cpuFloorRatio?: number }> = [];
      let from = oldRange(nodes);
      const idle = await idleCpu(tb, 20_000);
      log(`idle CPU s per s: ${JSON.stringify(Object.fromEntries(Object.entries(idle).map(([k, v]) => [k, round(v, 3)])))}`);
      for (const [i, max] of maxes.entries()) {
        runs.push(await moveOnce(tb, dir, from, targets(nodes)[i]!, max, nodes, i, idle));
        from = targets(nodes)[i]!;
      }
      const single = runs.find((r) => r.waveSize === 1);
      const cycle = single ? single.seconds / nodes : undefined;
      for (const r of runs) if (cycle && r.waveSize > 1) r.ratio = round(r.seconds / (r.waves * cycle), 2);
      // The floor the machine's cores set: a wave does waveSize nodes' work (CPU seconds per node, less what the components burn idle, of the
      // one-at-a-time run, every component and the hooks together) on `cores` cores, and takes no less than one
      // node's cycle. cpuFloorRatio = max(1, waveSize × CPU per node ÷ (cores × cycle)): the best ratio this machine allows.
      const cpuPerNode = single?.cpuSecondsPerNodeNet ? Object.values(single.cpuSecondsPerNodeNet).reduce((a, b) => a + b, 0) : undefined;
      for (const r of runs) if (cycle && cpuPerNode && r.waveSize > 1) r.cpuFloorRatio = round(Math.max(1, (r.waveSize * cpuPerNode) / (availableParallelism() * cycle)), 2);
      results.push({ nodes, pods: summary.totalPods, ...(cycle ? { cycleSeconds: round(cycle, 2) } : {}), runs });
    } finally {
      await tb.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const rows: string[] = [];
  for (const r of results) {
    for (const x of r.runs) {
      rows.push(`${String(r.nodes).padStart(5)}  ${String(r.pods).padStart(5)}  ${x.maxUnavailable.padStart(7)}  ${String(x.waves).padStart(5)}  ${String(x.seconds).padStart(8)}  ${String(r.cycleSeconds ?? '-').padStart(6)}  ${String(x.ratio ?? '-').padStart(5)}  ${String(x.nodeMedianSeconds ?? '-').padStart(6)}  ${String(x.pdbViolations).padStart(4)}  ${String(x.podsLost).padStart(4)}  ${x.loadAvg1m}`);
    }
  }
  process.stdout.write(`NODE-WAVES (${zones} zones, ${deployments} Deployments of one replica per node, PDB maxUnavailable ${pdbMax}, kcm QPS ${kcmQPS})\n`
    + `nodes   pods  max-unav  waves  total s  cycle s  ratio  node s  pdbV  lost  load1m\n${rows.join('\n')}\n`);
  const last = results.at(-1)!;
  const tenth = last.runs.find((x) => x.waveSize > 1);
  process.stdout.write(`${JSON.stringify({
    scenario: 'node-waves', zones, deployments, pdbMaxUnavailable: pdbMax, kcmQPS,
    nodes: last.nodes, maxUnavailable: tenth?.maxUnavailable, ratio: tenth?.ratio,
    totalSeconds: tenth?.seconds, cycleSeconds: last.cycleSeconds, cpuFloorRatio: tenth?.cpuFloorRatio,
    podsLost: results.reduce((a, r) => a + r.runs.reduce((b, x) => b + x.podsLost, 0), 0),
    pdbViolations: results.reduce((a, r) => a + r.runs.reduce((b, x) => b + x.pdbViolations, 0), 0),
    results, cores: availableParallelism(), loadAvg1m: round(loadavg()[0]!, 2),
  })}\n`);
  return 0;
}
