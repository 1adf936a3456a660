// Benchmark (issue #6): how many requests fail while a Service CIDR migration runs, measured with
// `kube-renumber probe` on the testbed's real data plane (kube-proxy iptables + CoreDNS in network namespaces).
//
//   npm run bench -- zero-downtime [--services N] [--replicas R] [--strategies recreate,in-place,control] [--interval MS]
//
// Per scenario (one fresh testbed each, one after the other; `control` runs no migration, only the workload
// and client restarts, to show what the testbed itself costs):
//   1. Testbed (2 nodes, Service CIDR 10.96.0.0/16) + Dataplane; kube-dns (10.96.0.10) backed by a 2-replica
//      CoreDNS Deployment; N Deployments zd/web-<i> (R replicas, dpnet HTTP on 8080) behind Services web-<i>:80.
//   2. A client netns on node 0 (Dataplane.addClient: routed like a pod, but no Pod object, so it survives the
//      workload restarts) runs `kube-renumber probe --kinds dns,env,long --protocol http -v -o json` against
//      every Service, asking the old DNS IP throughout (a pod started before the migration keeps its
//      resolv.conf). The env client learns each ClusterIP from its first DNS answer.
//   3. The migration through the CLI (in-process main()): plan --strategy S → apply (stops at
//      restart-apiservers) → apiserver restarted with 10.100.0.0/16 → resume --ack-gate kubelet-cluster-dns
//      (stops at restart-workloads) → kubectl rollout restart of every Deployment (CoreDNS too), pods wired
//      as they come → the client restarts as well, as the gate asks of every pod: SIGTERM to the prober (its
//      JSON report kept), a new one asking the new DNS IP (10.100.0.10) → resume to the end → a short tail →
//      SIGTERM, second report. The figures sum both reports; the client's own restart is not counted.
//   4. Figures per scenario: requests, failures, longest gap, per client kind with reasons, and the failures
//      by migration phase (from the probe's -v failure lines, timed against the phase marks).
// Human-readable tables on stdout, then one JSON line (last stdout line). Progress on stderr.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { main, type Io } from '../src/cli/main.ts';
import type { ProbeReport } from '../src/probe/probe.ts';
import { Testbed } from '../test/testbed/cluster.ts';
import { Dataplane } from '../test/testbed/dataplane.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const DNS_IP = '10.96.0.10';
const NS = 'zd';
/** `control`: no migration, only the workload restart and the client restart (the testbed's own floor). */
const STRATEGIES = ['recreate', 'in-place', 'control'] as const;
type Strategy = (typeof STRATEGIES)[number];
const KINDS = ['dns', 'env', 'long'] as const;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent' } };
  const code = await main(argv, io);
  return { code, out, err };
}

function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

async function until<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs = 120_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

interface KindFigures {
  requests: number;
  failures: number;
  longestGapMs: number;
  failuresByReason: Record<string, number>;
  breaks?: number;
}

interface ScenarioFigures {
  strategy: Strategy;
  services: number;
  replicas: number;
  requests: number;
  failures: number;
  dnsFailures: number;
  longestGapMs: number;
  byKind: Record<string, KindFigures>;
  /** failures per migration phase (from the probe's failure lines) */
  failuresByPhase: Record<string, number>;
  /** phase start, ms since the probe started */
  phases: Record<string, number>;
  migrationMs: number;
  exitCodes: number[];
}

/** The phases of one run, in order; a failure at time t belongs to the last phase started at or before t. */
const PHASES = ['baseline', 'apply', 'restart-apiserver', 'resume-to-workloads', 'restart-workloads', 'resume-to-end', 'tail'] as const;

function phaseOf(t: number, marks: Record<string, number>): string {
  let cur = 'baseline';
  for (const p of PHASES) if (marks[p] !== undefined && marks[p]! <= t) cur = p;
  return cur;
}

interface ProbeRun { report: ProbeReport; stderr: string }

/** The old-range address at the same offset in the new range (10.96.x.y → 10.100.x.y). */
function mapIP(ip: string): string {
  const [a, b] = NEW.split('/')[0]!.split('.');
  return [a, b, ...ip.split('.').slice(2)].join('.');
}

/** `kube-renumber probe` (from src, in-process CLI entry) in a netns until stop() sends SIGTERM. */
async function startProbe(netns: string, dnsServer: string, names: string[], intervalMs: number): Promise<{ proc: ChildProcess; stop(): Promise<ProbeRun> }> {
  const code = `import { main } from ${JSON.stringify(join(ROOT, 'src/cli/main.ts'))}; process.exitCode = await main(process.argv.slice(1));`;
  const probeArgs = ['probe', '--dns-server', dnsServer, ...names.flatMap((n) => ['-s', `${NS}/${n}:80`]), '--kinds', KINDS.join(','),
    '--protocol', 'http', '--interval', `${intervalMs}ms`, '-v', '-o', 'json'];
  const p = spawn('ip', ['netns', 'exec', netns, process.execPath, '--input-type=module', '-e', code, ...probeArgs], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' },
  });
  let out = '';
  let err = '';
  p.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  p.stderr!.on('data', (b: Buffer) => { err += b.toString(); });
  const exited = new Promise<number>((r) => p.on('close', (c, sig) => r(c ?? (sig ? 128 : 1))));
  await until('the prober to start', async () => err.includes('probing ') || p.exitCode !== null, 30_000, 100);
  if (p.exitCode !== null) throw new Error(`probe exited ${p.exitCode}: ${err}`);
  return {
    proc: p,
    async stop() {
      p.kill('SIGTERM');
      const c = await exited;
      try {
        return { report: JSON.parse(out.trim()) as ProbeReport, stderr: err };
      } catch {
        throw new Error(`probe exited ${c} without a JSON report: ${err.slice(-2000)}`);
      }
    },
  };
}

async function scenario(strategy: Strategy, services: number, replicas: number, intervalMs: number): Promise<ScenarioFigures> {
  const dir = await mkdtemp(join(tmpdir(), `kr-bench-zd-${strategy}-`));
  log(`[${strategy}] starting a 2-node testbed and its data plane`);
  const tb = await Testbed.start({ serviceCIDR: OLD, nodes: 2, calicoCRDs: false });
  let dp: Dataplane | undefined;
  let prober: ChildProcess | undefined;
  let syncing = false;
  let syncLoop: Promise<void> | undefined;
  try {
    dp = await Dataplane.start(tb);
    const d = dp;
    const c = tb.client;
    // kube-dns at the well-known IP, CoreDNS as a 2-replica Deployment (a rollout keeps one serving)
    await c.create({
      apiVersion: 'v1', kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        selector: { 'k8s-app': 'kube-dns' }, clusterIP: DNS_IP,
        ports: [{ name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 }, { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 }],
      },
    });
    const spread = (app: Record<string, string>) => ({
      podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector: { matchLabels: app }, topologyKey: 'kubernetes.io/hostname' } }] },
    });
    await c.create({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'coredns', namespace: 'kube-system' },
      spec: {
        replicas: 2, selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-dns' } },
          spec: {
            affinity: spread({ 'k8s-app': 'kube-dns' }),
            containers: [{ name: 'coredns', image: 'registry.k8s.io/coredns/coredns', ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' }] }],
          },
        },
      },
    });
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await until('default ServiceAccount', () => c.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    const names = Array.from({ length: services }, (_, i) => `web-${i}`);
    for (const name of names) {
      await c.create({
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: NS },
        spec: {
          replicas, selector: { matchLabels: { app: name } },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
          template: {
            metadata: { labels: { app: name } },
            spec: { affinity: spread({ app: name }), containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 8080 }] }] },
          },
        },
      });
      await c.create({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    }
    const wantPods = services * replicas + 2;
    await until(`${wantPods} pods Running with IPs`, async () => {
      const items = (await c.list('/api/v1/pods')).items;
      return items.filter((p) => p.status?.phase === 'Running' && p.status?.podIP).length >= wantPods;
    });
    await d.syncPods();
    await d.waitCoreDNSReady();
    const nodes = ((await c.list('/api/v1/nodes')).items as { metadata: { name: string } }[]).map((n) => n.metadata.name).sort();
    const client = await d.addClient(nodes[0]!);
    const dpnet = join(d.binDir, 'dpnet');
    // every Service answers through its ClusterIP and resolves through the DNS Service, from the client netns
    for (const name of names) {
      await until(`${name} through DNS and ClusterIP from the client netns`, async () => {
        const r = await d.exec(client.netns, dpnet, ['resolve', '-server', `${DNS_IP}:53`, '-timeout', '2s', `${name}.${NS}.svc.cluster.local`]);
        if (r.code !== 0) return false;
        const g = await d.exec(client.netns, dpnet, ['get', '-timeout', '2s', `http://${r.stdout.trim()}/`]);
        return g.code === 0;
      }, 60_000, 300);
    }
    log(`[${strategy}] ${services} Services × ${replicas} pods wired; client netns ${client.netns} (${client.ip}) reaches them`);

    // the prober, in the client netns
    const t0 = Date.now();
    const marks: Record<string, number> = { baseline: 0 };
    const mark = (ph: string) => { marks[ph] = Date.now() - t0; log(`[${strategy}] ${ph} at ${round(marks[ph]! / 1000)} s`); };
    const runs: ProbeRun[] = [];
    let current = await startProbe(client.netns, DNS_IP, names, intervalMs);
    prober = current.proc;
    await sleep(3000);

    // the migration (control: none, only the workload restart)
    const planPath = join(dir, 'plan.yaml');
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--yes', '--timeout', '120s'];
    const exitCodes: number[] = [];
    const step = async (argv: string[]) => {
      const r = await cli(argv);
      exitCodes.push(r.code);
      const last = r.err.trim().split('\n').slice(-2).join(' | ');
      log(`[${strategy}] ${argv[0]} → ${r.code}${last ? `: ${last.slice(0, 300)}` : ''}`);
      return r;
    };
    const tm = Date.now();
    let r = { code: 0, out: '', err: '' };
    if (strategy !== 'control') {
      const pl = await cli(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--strategy', strategy,
        '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
      if (pl.code !== 0 && pl.code !== 1) throw new Error(`plan exited ${pl.code}: ${pl.err}`);
      await writeFile(planPath, pl.out);
      mark('apply');
      r = await step(['apply', planPath, ...common]);
      if (r.code !== 7 || !/restart-apiservers/.test(r.err)) throw new Error(`apply: expected the restart-apiservers gate, got ${r.code}: ${r.err}`);
      mark('restart-apiserver');
      await tb.restartApiserver({ serviceCIDR: NEW });
      mark('resume-to-workloads');
      for (let i = 0; ; i++) {
        r = await step(['resume', planPath, '--ack-gate', 'kubelet-cluster-dns', ...common]);
        if (r.code === 7 && /restart-workloads/.test(r.err)) break;
        if (r.code === 0) throw new Error('the run ended without the restart-workloads gate');
        if (i >= 3) throw new Error(`resume: expected the restart-workloads gate, got ${r.code}: ${r.err}`);
      }
    }
    mark('restart-workloads');
    // pods are wired as they come up (kwok reports them Running at once; the data plane follows syncPods)
    syncing = true;
    syncLoop = (async () => {
      while (syncing) {
        try { await d.syncPods(); } catch (e) { log(`syncPods: ${e instanceof Error ? e.message : e}`); }
        await sleep(100);
      }
    })();
    for (const ns of ['kube-system', NS]) {
      const rr = await tb.kubectl(['rollout', 'restart', 'deployment', '-n', ns]);
      if (rr.code !== 0) throw new Error(`rollout restart -n ${ns}: ${rr.stderr}`);
    }
    for (const [ns, name] of [['kube-system', 'coredns'], ...names.map((n) => [NS, n])] as [string, string][]) {
      const rs = await tb.kubectl(['rollout', 'status', `deployment/${name}`, '-n', ns, '--timeout=300s'], { timeoutMs: 330_000 });
      if (rs.code !== 0) throw new Error(`rollout status ${ns}/${name}: ${rs.stderr}`);
    }
    // every Running pod wired, nothing left to remove
    await until('every new pod wired', async () => {
      const items = (await c.list('/api/v1/pods')).items.filter((x) => x.status?.phase === 'Running' && x.status?.podIP && !x.metadata.deletionTimestamp);
      const wired = new Set(d.pods().map((x) => `${x.namespace}/${x.name}`));
      return items.length === wantPods && items.every((x) => wired.has(`${x.metadata.namespace}/${x.metadata.name}`)) && d.pods().length === wantPods;
    }, 120_000, 200);
    await d.waitCoreDNSReady();
    syncing = false;
    await syncLoop;
    syncLoop = undefined;
    // the client restarts too, as the gate asks of every pod: a new prober with the new nameserver, learning
    // the new ClusterIPs (the time between the two probers is not counted)
    const newDNS = strategy === 'control' ? DNS_IP : mapIP(DNS_IP);
    runs.push(await current.stop());
    current = await startProbe(client.netns, newDNS, names, intervalMs);
    prober = current.proc;
    if (strategy !== 'control') {
      mark('resume-to-end');
      for (let i = 0; ; i++) {
        r = await step(['resume', planPath, '--ack-gate', 'kubelet-cluster-dns', ...common]);
        if (r.code === 0) break;
        if (i >= 3) throw new Error(`resume to the end: got ${r.code}: ${r.err}`);
        await sleep(1000);
      }
    }
    const migrationMs = Date.now() - tm;
    mark('tail');
    await sleep(3000);
    runs.push(await current.stop());
    prober = undefined;
    for (const [i, pr] of runs.entries()) {
      await writeFile(join(dir, `probe-${i + 1}.json`), JSON.stringify(pr.report));
      await writeFile(join(dir, `probe-${i + 1}.stderr`), pr.stderr);
    }
    log(`[${strategy}] probe reports and failure lines in ${dir}`);

    const byKind: Record<string, KindFigures> = {};
    let longest = 0;
    const totals = { requests: 0, failures: 0, dnsFailures: 0 };
    const failuresByPhase: Record<string, number> = {};
    for (const { report, stderr } of runs) {
      totals.requests += report.totals.requests;
      totals.failures += report.totals.failures;
      totals.dnsFailures += report.totals.dnsFailures;
      for (const res of report.results) {
        const k = (byKind[res.kind] ??= { requests: 0, failures: 0, longestGapMs: 0, failuresByReason: {} });
        k.requests += res.requests;
        k.failures += res.failures;
        const gap = Math.max(res.longestGap?.ms ?? 0, res.startGap.ms, res.endGap.ms);
        k.longestGapMs = Math.max(k.longestGapMs, round(gap));
        longest = Math.max(longest, gap);
        for (const [reason, n] of Object.entries(res.failuresByReason)) k.failuresByReason[reason] = (k.failuresByReason[reason] ?? 0) + (n ?? 0);
        if (res.breaks !== undefined) k.breaks = (k.breaks ?? 0) + res.breaks;
      }
      // failure lines "<s>s <kind> <ns/name>[ <addr>]: <reason>..." → phase, on the bench's clock
      const base = Date.parse(report.startedAt) - t0;
      for (const l of stderr.split('\n')) {
        const m = /^(\d+\.\d+)s (\w+) \S+/.exec(l);
        if (!m) continue;
        const ph = phaseOf(Number(m[1]) * 1000 + base, marks);
        failuresByPhase[ph] = (failuresByPhase[ph] ?? 0) + 1;
      }
    }
    return {
      strategy, services, replicas,
      requests: totals.requests, failures: totals.failures, dnsFailures: totals.dnsFailures,
      longestGapMs: round(longest), byKind, failuresByPhase, phases: marks, migrationMs, exitCodes,
    };
  } finally {
    syncing = false;
    if (syncLoop) await syncLoop.catch(() => {});
    if (prober && prober.exitCode === null && prober.signalCode === null) prober.kill('SIGKILL');
    if (dp) await dp.stop();
    await tb.stop();
  }
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: {
    services: { type: 'string' }, replicas: { type: 'string' }, strategies: { type: 'string' }, interval: { type: 'string' },
  } });
  const services = Number(values.services ?? 5);
  const replicas = Number(values.replicas ?? 2);
  const intervalMs = Number(values.interval ?? 50);
  const strategies = (values.strategies ?? STRATEGIES.join(',')).split(',').filter(Boolean);
  if (![services, replicas, intervalMs].every((n) => Number.isInteger(n) && n > 0)) {
    process.stderr.write('error: --services, --replicas and --interval must be positive whole numbers\n');
    return 2;
  }
  const bad = strategies.filter((s) => !(STRATEGIES as readonly string[]).includes(s));
  if (bad.length > 0 || strategies.length === 0) {
    process.stderr.write(`error: --strategies takes a comma-separated list of ${STRATEGIES.join(', ')}\n`);
    return 2;
  }
  if (process.getuid?.() !== 0) {
    process.stderr.write('error: the data-plane testbed needs root (ip netns)\n');
    return 2;
  }
  const results: ScenarioFigures[] = [];
  for (const s of strategies as Strategy[]) results.push(await scenario(s, services, replicas, intervalMs));

  const head = ['', ...results.map((r) => r.strategy)];
  const rows: (string | number)[][] = [
    ['requests', ...results.map((r) => r.requests)],
    ['failures', ...results.map((r) => r.failures)],
    ['dns failures', ...results.map((r) => r.dnsFailures)],
    ['longest gap (ms)', ...results.map((r) => r.longestGapMs)],
    ['migration (s)', ...results.map((r) => round(r.migrationMs / 1000))],
  ];
  for (const k of KINDS) {
    rows.push([`${k}: failures/requests`, ...results.map((r) => `${r.byKind[k]?.failures ?? 0}/${r.byKind[k]?.requests ?? 0}`)]);
    rows.push([`${k}: longest gap (ms)`, ...results.map((r) => r.byKind[k]?.longestGapMs ?? 0)]);
    rows.push([`${k}: reasons`, ...results.map((r) => Object.entries(r.byKind[k]?.failuresByReason ?? {}).map(([a, n]) => `${a}=${n}`).join(' ') || '-')]);
  }
  for (const ph of PHASES) rows.push([`failures in ${ph}`, ...results.map((r) => r.failuresByPhase[ph] ?? 0)]);
  process.stdout.write(`zero-downtime: Service CIDR ${OLD} → ${NEW}, ${services} Services × ${replicas} pods, probe kinds ${KINDS.join(',')} every ${intervalMs} ms (http)\n\n`);
  process.stdout.write(table(head, rows));
  const out = {
    bench: 'zero-downtime', oldServiceCIDR: OLD, newServiceCIDR: NEW, services, replicas, intervalMs, kinds: KINDS,
    cpus: availableParallelism(), loadavg1: round(loadavg()[0] ?? 0, 2),
    scenarios: Object.fromEntries(results.map((r) => [r.strategy, r])),
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return 0;
}
