// Benchmark: `kube-renumber inspect` of a live cluster against `kubectl get` of the same resources as JSON.
//
//   npm run bench -- inspect-live [--pods N] [--services N] [--nodes N] [--rounds N]
//
//   1. Testbed (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) with --nodes kwok nodes
//      (default 100), populated with --services ClusterIP Services (default 5,000, with selectors) and --pods
//      Pods (default 10,000, bound to the nodes, kwok runs them and gives them IPs) in 10 namespaces; waits
//      until kwok has given every pod an IP and kube-controller-manager every Service its EndpointSlice, so
//      neither is still writing while the clock runs.
//   2. --rounds rounds (default 3), each timing, one after the other as child processes, wall clock:
//      `kube-renumber inspect --kubeconfig K -o json` (bin/kube-renumber.js, i.e. dist/: build it first) and
//      `kubectl get nodes,services,pods,servicecidrs -A -o json` (the testbed's kubectl; pages of 500 as
//      kube-renumber reads them), the order alternating between rounds. The figure is the median of each.
// Human-readable table on stdout, then one JSON line (last stdout line). Progress on stderr.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Testbed } from '../test/testbed/cluster.ts';

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'kube-renumber.js');
const NAMESPACES = 10;

function intOpt(v: string | undefined, name: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min || n > max) throw new Error(`--${name} ${v}: a whole number from ${min} to ${max}`);
  return n;
}

/** Runs a command; wall seconds, exit code and the size of what it printed on stdout. */
function timed(cmd: string, args: string[]): Promise<{ seconds: number; code: number | null; outBytes: number; err: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let outBytes = 0;
    let err = '';
    p.stdout.on('data', (d: Buffer) => { outBytes += d.length; });
    p.stderr.on('data', (d: Buffer) => { if (err.length < 4000) err += d.toString(); });
    p.on('error', reject);
    p.on('close', (code) => resolve({ seconds: (performance.now() - t0) / 1000, code, outBytes, err }));
  });
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2; };

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { pods: { type: 'string' }, services: { type: 'string' }, nodes: { type: 'string' }, rounds: { type: 'string' } } });
  const pods = intOpt(values.pods, 'pods', 10_000, 1, 200_000);
  const services = intOpt(values.services, 'services', 5_000, 1, 60_000);
  const nodes = intOpt(values.nodes, 'nodes', 100, 1, 2_000);
  const rounds = intOpt(values.rounds, 'rounds', 3, 1, 20);
  if (!existsSync(join(ROOT, 'dist'))) {
    process.stderr.write('error: dist/ is missing: build first (./node_modules/.bin/tsc -p tsconfig.build.json)\n');
    return 2;
  }
  const loadStart = loadavg()[0]!;
  const tStart = performance.now();
  log(`starting the testbed (${nodes} kwok nodes)`);
  // kcm at 1000 QPS so the 5,000 Services' EndpointSlices are written before the clock runs
  const tb = await Testbed.start({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.64.0.0/12', nodeMask: 24, nodes, calicoCRDs: false, controllerManagerQPS: 1000 });
  const onSignal = () => { void tb.stop().finally(() => process.exit(130)); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const nodeNames = (await tb.client.list('/api/v1/nodes')).items.map((n) => n.metadata.name as string);
    const nss = Array.from({ length: NAMESPACES }, (_, i) => `bench-${i}`);
    await tb.client.createAll(nss.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })));
    const tPop = performance.now();
    log(`creating ${services} Services and ${pods} Pods in ${NAMESPACES} namespaces`);
    await tb.client.createAll(Array.from({ length: services }, (_, i) => ({
      apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}`, namespace: nss[i % NAMESPACES]!, labels: { app: `app-${i % 500}` } },
      spec: { selector: { app: `app-${i % 500}` }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    })), 32);
    await tb.client.createAll(Array.from({ length: pods }, (_, i) => ({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: `pod-${i}`, namespace: nss[i % NAMESPACES]!, labels: { app: `app-${i % 500}`, 'pod-template-hash': 'b7c9d' } },
      spec: {
        nodeName: nodeNames[i % nodeNames.length]!,
        containers: [{ name: 'app', image: 'registry.example/app:v1', ports: [{ containerPort: 8080 }], resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
        tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
      },
    })), 32);
    // remainingItemCount (no selector) counts a collection with a one-item page
    const count = async (path: string) => {
      const l = await tb.client.list(`${path}?limit=1`);
      return l.items.length + Number((l.metadata as { remainingItemCount?: number }).remainingItemCount ?? 0);
    };
    const runningPods = async () => (await tb.client.list('/api/v1/pods')).items.filter((p) => p.status?.phase === 'Running' && p.status?.podIP).length;
    const deadline = Date.now() + 600_000;
    for (;;) {
      const slices = await count('/apis/discovery.k8s.io/v1/endpointslices');
      const running = slices >= services ? await runningPods() : 0;
      if (running >= pods && slices >= services) break;
      if (Date.now() > deadline) throw new Error(`after 600 s: ${running}/${pods} pods running, ${slices}/${services} EndpointSlices`);
      log(`waiting: ${running}/${pods} pods running, ${slices}/${services} EndpointSlices`);
      await new Promise((r) => setTimeout(r, 10_000));
    }
    log(`populated in ${round((performance.now() - tPop) / 1000, 1)} s`);

    const kubectl = join(tb.binDir, 'kubectl');
    const ours: number[] = [];
    const theirs: number[] = [];
    let oursBytes = 0;
    let theirsBytes = 0;
    let summary: { pods?: number; services?: number } = {};
    const runOurs = async () => {
      const r = await timed(process.execPath, [BIN, 'inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
      if (r.code !== 0 && r.code !== 1) throw new Error(`inspect exited ${r.code}: ${r.err.trim()}`);
      ours.push(r.seconds);
      oursBytes = r.outBytes;
    };
    const runTheirs = async () => {
      const r = await timed(kubectl, [`--kubeconfig=${tb.kubeconfigPath}`, 'get', 'nodes,services,pods,servicecidrs', '-A', '-o', 'json', '--chunk-size=500']);
      if (r.code !== 0) throw new Error(`kubectl exited ${r.code}: ${r.err.trim()}`);
      theirs.push(r.seconds);
      theirsBytes = r.outBytes;
    };
    // warm-up of both (page cache, apiserver watch cache), not timed
    await runOurs();
    await runTheirs();
    ours.length = 0;
    theirs.length = 0;
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) { await runOurs(); await runTheirs(); } else { await runTheirs(); await runOurs(); }
      log(`round ${r + 1}: inspect ${round(ours[r]!)} s, kubectl get ${round(theirs[r]!)} s`);
    }
    // what inspect saw, as a check that it read the whole cluster
    {
      const r = await new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, [BIN, 'inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json'], { stdio: ['ignore', 'pipe', 'ignore'] });
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.on('error', reject);
        p.on('close', () => resolve(out));
      });
      const j = JSON.parse(r) as { capacity?: { pods?: { total?: number }; services?: { total?: number } } };
      summary = { pods: j.capacity?.pods?.total, services: j.capacity?.services?.total };
    }
    if ((summary.pods ?? 0) < pods || (summary.services ?? 0) < services) throw new Error(`inspect saw ${summary.pods} pods and ${summary.services} Services, expected at least ${pods} and ${services}`);
    const mo = median(ours);
    const mt = median(theirs);
    const ratio = mo / mt;
    const loadEnd = loadavg()[0]!;
    const rows: Array<[string, string]> = [
      ['cluster', `${nodes} kwok nodes, ${summary.pods} pods, ${summary.services} Services (as inspect counted them)`],
      ['kube-renumber inspect -o json', `median ${round(mo)} s of ${rounds} (${ours.map((x) => round(x)).join(', ')}), ${round(oursBytes / 1024, 0)} KiB printed`],
      ['kubectl get nodes,services,pods,servicecidrs -A -o json', `median ${round(mt)} s of ${rounds} (${theirs.map((x) => round(x)).join(', ')}), ${round(theirsBytes / 1024 / 1024, 1)} MiB printed`],
      ['ratio inspect / kubectl get', `${round(ratio)} (goal <= 1.0)`],
      ['load average (1 min)', `${round(loadStart, 1)} at start, ${round(loadEnd, 1)} at end, ${availableParallelism()} CPUs`],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(`inspect-live\n${rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n')}\n`);
    const pass = ratio <= 1.0;
    process.stdout.write(`goal: inspect / kubectl get ${round(ratio)} <= 1.0: ${pass ? 'PASS' : 'FAIL'}\n`);
    process.stdout.write(`${JSON.stringify({
      scenario: 'inspect-live', nodes, pods: summary.pods, services: summary.services, rounds,
      inspectSeconds: round(mo), kubectlGetSeconds: round(mt), ratio: round(ratio),
      inspectRuns: ours.map((x) => round(x)), kubectlRuns: theirs.map((x) => round(x)),
      loadAverage: [round(loadStart, 1), round(loadEnd, 1)], cpus: availableParallelism(),
      totalSeconds: round((performance.now() - tStart) / 1000, 0), goal: { ratio: round(ratio), max: 1.0, pass },
    })}\n`);
    return pass ? 0 : 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    log('stopping the testbed');
    await tb.stop();
  }
}
