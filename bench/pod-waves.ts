// Benchmark: a Pod CIDR move (Calico path) on a real local control plane, restarts in parallel waves.
//
//   npm run bench -- pod-waves [--nodes N] [--parallel P] [--replicas R]
//
//   1. Testbed (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, the Calico IPAM
//      stand-in) with N nodes (default 20) and the workload fixture (Deployments with PDBs, StatefulSets,
//      DaemonSets, a bare pod, a Job: 500+ pods by default).
//   2. kube-renumber plan --pod-cidr, then apply --parallel P (default 6) through the CLI, as a user runs it,
//      until the distribution gate; then the gate's kube-controller-manager restart and resume to the end.
//   3. Figures from the run's journal: the restart phase's wall-clock time and the sum of every workload's
//      own restart (rollout or evictions) — what one at a time would have taken — and the most in flight.
// Human-readable table on stdout, then one JSON line (last stdout line). Progress on stderr.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { main, type Io } from '../src/cli/main.ts';
import { readJournal } from '../src/engine/journal.ts';
import { Testbed } from '../test/testbed/cluster.ts';
import { populate } from '../test/testbed/fixture.ts';
import { populateWorkloads } from '../test/testbed/workloads.ts';

const OLD = '10.244.0.0/16';
const NEW = '10.50.0.0/16';
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; process.stderr.write(s); }, env: { HOME: '/nonexistent' } };
  const code = await main(argv, io);
  return { code, out, err };
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { nodes: { type: 'string' }, parallel: { type: 'string' }, replicas: { type: 'string' } } });
  const nodes = Number(values.nodes ?? 20);
  const parallel = Number(values.parallel ?? 6);
  const replicas = Number(values.replicas ?? 22);
  if (![nodes, parallel, replicas].every((n) => Number.isInteger(n) && n > 0)) {
    process.stderr.write('error: --nodes, --parallel and --replicas must be positive whole numbers\n');
    return 2;
  }
  const dir = await mkdtemp(join(tmpdir(), 'kr-bench-pods-'));
  log(`starting a ${nodes}-node testbed (Calico IPAM stand-in)`);
  const tb = await Testbed.start({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes, podIPAM: 'calico' });
  try {
    await populate(tb, { namespaces: 1, deployments: 1, replicas: 1, services: 2 });
    const summary = await populateWorkloads(tb, { replicas });
    log(`${summary.totalPods} pods (${summary.podNetworkPods} on the pod network) in ${summary.workloads.length} workloads, up in ${round(summary.elapsedMs / 1000)} s`);
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');
    const p = await cli(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--parallel', String(parallel), '-o', 'yaml']);
    if (p.code !== 0 && p.code !== 1) throw new Error(`plan exited ${p.code}`);
    await writeFile(planPath, p.out);
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--yes', '--timeout', '120s'];
    const t0 = performance.now();
    const a = await cli(['apply', planPath, ...common]);
    if (a.code !== 7) throw new Error(`apply exited ${a.code}, expected the pod-cidr-config gate`);
    const tGate = performance.now();
    const kcm = await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: false });
    if (!kcm.running) throw new Error('kube-controller-manager did not start with the gate\'s flags');
    const t1 = performance.now();
    const r = await cli(['resume', planPath, ...common, '--ack-gate', 'pod-cidr-config']);
    if (r.code !== 0) throw new Error(`resume exited ${r.code}`);
    const t2 = performance.now();
    const reports = readJournal(join(stateDir, 'journal.jsonl')).filter((e) => e.event === 'report' && e.detail)
      .map((e) => JSON.parse(e.detail!).restarts).filter(Boolean) as Array<{ totalSeconds: number; sumSeconds: number; maxInFlight: number; workloads: number }>;
    if (reports.length === 0) throw new Error('no restart figures in the journal');
    const restartSeconds = reports.reduce((x, y) => x + y.totalSeconds, 0);
    const sumOfRollouts = reports.reduce((x, y) => x + y.sumSeconds, 0);
    const result = {
      scenario: 'pod-waves',
      nodes, pods: summary.totalPods, podNetworkPods: summary.podNetworkPods, workloads: reports.reduce((x, y) => x + y.workloads, 0), parallel,
      totalSeconds: round(((tGate - t0) + (t2 - t1)) / 1000, 2),
      restartSeconds: round(restartSeconds, 2),
      sumOfRolloutsSeconds: round(sumOfRollouts, 2),
      speedup: round(sumOfRollouts / restartSeconds, 2),
      maxInFlight: Math.max(...reports.map((x) => x.maxInFlight)),
      restartRounds: reports.length,
      cores: availableParallelism(),
      loadAvg1m: round(loadavg()[0]!, 2),
    };
    const rows: Array<[string, string]> = [
      ['cluster', `${nodes} nodes, ${summary.totalPods} pods (${summary.podNetworkPods} on the pod network), ${result.workloads} workloads restarted`],
      ['migration (apply + resume, without the gate)', `${result.totalSeconds} s`],
      ['restart phase, wall clock', `${result.restartSeconds} s with up to ${result.maxInFlight} in flight (--parallel ${parallel})`],
      ['sum of the individual restarts', `${result.sumOfRolloutsSeconds} s (one at a time would take this long)`],
      ['speed-up of the waves', `x${result.speedup}`],
    ];
    const w = Math.max(...rows.map((x) => x[0].length));
    process.stdout.write(`POD-WAVES\n${rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n')}\n`);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await tb.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
