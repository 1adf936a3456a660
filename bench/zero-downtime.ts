// Benchmark (issue #6): how many requests fail while a migration runs, measured with `kube-renumber probe`
// inside pod network namespaces on the testbed's real data plane (kube-proxy + CoreDNS in network namespaces).
//
//   npm run bench -- zero-downtime [--services 50] [--replicas 2] [--scenarios recreate,in-place,pod,combined,control]
//                                  [--interval 50] [--timeout 1000] [--proxy-mode iptables|nftables] [--nodes 2]
//                                  [--k8s-version vX.Y.Z]   (default ZERO_DOWNTIME_VERSION, v1.36.4; built on first use)
//                                  [--nodeports 3]   (how many Services are type NodePort, probed on their node port; 0: none)
//
// What each scenario does is described in test/testbed/zero-downtime.ts (shared with
// test/integration/zero-downtime.test.ts). One fresh testbed per scenario, one after the other.
// Human-readable tables on stdout, then one JSON line (last stdout line) keyed by scenario (each with requests,
// failures, longestGapMs, byKind, failuresByPhase, nodePorts, ...) plus "settings". Progress on stderr.
// The nodeport client's figures are apart (the "nodeport:" rows, `nodePorts` in the JSON): kube-proxy's NodePort
// rules of a Service moved in place have a window the tool cannot cover (docs/service-migration.md).

import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  DEFAULT_NODE_PORTS, KINDS, PHASES, POD_NEW, POD_OLD, runZeroDowntime, SCENARIOS, SVC_NEW, SVC_OLD, type Scenario, type ScenarioFigures, ZERO_DOWNTIME_VERSION,
} from '../test/testbed/zero-downtime.ts';

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: {
    services: { type: 'string' }, replicas: { type: 'string' }, scenarios: { type: 'string' }, strategies: { type: 'string' },
    interval: { type: 'string' }, timeout: { type: 'string' }, 'proxy-mode': { type: 'string' }, nodes: { type: 'string' },
    'k8s-version': { type: 'string' }, nodeports: { type: 'string' },
  } });
  const services = Number(values.services ?? 50);
  const replicas = Number(values.replicas ?? 2);
  const intervalMs = Number(values.interval ?? 50);
  const timeoutMs = Number(values.timeout ?? 1000);
  const nodes = Number(values.nodes ?? 2);
  const nodePorts = Number(values.nodeports ?? DEFAULT_NODE_PORTS);
  const proxyMode = values['proxy-mode'] ?? 'iptables';
  const scenarios = (values.scenarios ?? values.strategies ?? SCENARIOS.join(',')).split(',').filter(Boolean);
  if (![services, replicas, intervalMs, timeoutMs, nodes].every((n) => Number.isInteger(n) && n > 0)) {
    process.stderr.write('error: --services, --replicas, --interval, --timeout and --nodes must be positive whole numbers\n');
    return 2;
  }
  if (!Number.isInteger(nodePorts) || nodePorts < 0) {
    process.stderr.write('error: --nodeports must be a whole number >= 0\n');
    return 2;
  }
  const bad = scenarios.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (bad.length > 0 || scenarios.length === 0) {
    process.stderr.write(`error: --scenarios takes a comma-separated list of ${SCENARIOS.join(', ')}\n`);
    return 2;
  }
  if (proxyMode !== 'iptables' && proxyMode !== 'nftables') {
    process.stderr.write('error: --proxy-mode must be iptables or nftables\n');
    return 2;
  }
  const version = values['k8s-version'];
  if (version !== undefined && !/^v\d+\.\d+\.\d+$/.test(version)) {
    process.stderr.write('error: --k8s-version takes vX.Y.Z\n');
    return 2;
  }
  if (process.getuid?.() !== 0) {
    process.stderr.write('error: the data-plane testbed needs root (ip netns)\n');
    return 2;
  }
  const results: ScenarioFigures[] = [];
  for (const s of scenarios as Scenario[]) {
    results.push(await runZeroDowntime({ scenario: s, services, replicas, intervalMs, timeoutMs, nodes, proxyMode, nodePorts, log, ...(version ? { version } : {}) }));
  }

  const head = ['', ...results.map((r) => r.scenario)];
  const rows: (string | number)[][] = [
    ['requests', ...results.map((r) => r.requests)],
    ['failures', ...results.map((r) => r.failures)],
    ['dns failures', ...results.map((r) => r.dnsFailures)],
    ['longest gap (ms)', ...results.map((r) => r.longestGapMs)],
    ['migration (s)', ...results.map((r) => round(r.migrationMs / 1000))],
    ['prober pods', ...results.map((r) => r.probers)],
  ];
  for (const k of KINDS) {
    rows.push([`${k}: failures/requests`, ...results.map((r) => `${r.byKind[k]?.failures ?? 0}/${r.byKind[k]?.requests ?? 0}`)]);
    rows.push([`${k}: longest gap (ms)`, ...results.map((r) => r.byKind[k]?.longestGapMs ?? 0)]);
    rows.push([`${k}: reasons`, ...results.map((r) => Object.entries(r.byKind[k]?.failuresByReason ?? {}).map(([a, n]) => `${a}=${n}`).join(' ') || '-')]);
  }
  for (const ph of PHASES) rows.push([`failures in ${ph}`, ...results.map((r) => r.failuresByPhase[ph] ?? 0)]);
  // the nodeport clients, apart: the window of a node port whose Service is moved (not counted in the rows above)
  if (results.some((r) => r.nodePorts)) {
    const npf = (r: ScenarioFigures) => r.nodePorts;
    rows.push(['nodeport: failures/requests', ...results.map((r) => (npf(r) ? `${npf(r)!.failures}/${npf(r)!.requests}` : '-'))]);
    rows.push(['nodeport: longest gap (ms)', ...results.map((r) => (npf(r) ? `${npf(r)!.longestGapMs}${npf(r)!.longestGapPhase ? ` (${npf(r)!.longestGapPhase})` : ''}` : '-'))]);
    rows.push(['nodeport: reasons', ...results.map((r) => Object.entries(npf(r)?.failuresByReason ?? {}).map(([a, n]) => `${a}=${n}`).join(' ') || '-')]);
    rows.push(['nodeport: failures by phase', ...results.map((r) => Object.entries(npf(r)?.failuresByPhase ?? {}).map(([p, n]) => `${p}=${n}`).join(' ') || '-')]);
    rows.push(['nodeport: longest gap per Service (ms)', ...results.map((r) => Object.entries(npf(r)?.byService ?? {}).map(([svc, v]) => `${svc.split('/')[1]}:${v.longestGapMs}`).join(' ') || '-')]);
  }
  // pods the tool handed over: seconds after leaving their Services until no node's conntrack sent them anything,
  // and until the tool evicted them (the first must be the smaller)
  rows.push(['handed over: entries, datagrams after release, last datagram/evicted (s)', ...results.map((r) => r.handovers.map((h) => `${h.maxEntries}:${h.datagramsAfterRelease}:${h.drainedS ?? '?'}/${h.evictedS ?? '?'}`).join(' ') || '-')]);
  process.stdout.write(`zero-downtime: Service CIDR ${SVC_OLD} → ${SVC_NEW}, Pod CIDR ${POD_OLD} → ${POD_NEW}; ${services} Services × ${replicas} pods; `
    + `probe kinds ${KINDS.join(',')}${nodePorts > 0 ? `,nodeport (${Math.min(nodePorts, services)} NodePort Services)` : ''} every ${intervalMs} ms (timeout ${timeoutMs} ms, http) from prober pods; `
    + `kube-proxy ${proxyMode}; ${nodes} nodes; Kubernetes ${version ?? ZERO_DOWNTIME_VERSION}\n\n`);
  process.stdout.write(table(head, rows));
  for (const r of results) {
    if (r.sampleFailures.length > 0) process.stdout.write(`\n${r.scenario}: first failures\n${r.sampleFailures.slice(0, 10).map((l) => `  ${l}`).join('\n')}\n`);
    if (r.nodePorts?.sampleFailures.length) process.stdout.write(`\n${r.scenario}: first nodeport failures\n${r.nodePorts.sampleFailures.slice(0, 10).map((l) => `  ${l}`).join('\n')}\n`);
  }
  // keyed by scenario at the top level; the run's settings under "settings"
  const out: Record<string, unknown> = Object.fromEntries(results.map((r) => {
    const { sampleFailures, dir, ...rest } = r;
    void sampleFailures;
    void dir;
    return [r.scenario, rest];
  }));
  out.settings = {
    bench: 'zero-downtime', oldServiceCIDR: SVC_OLD, newServiceCIDR: SVC_NEW, oldPodCIDR: POD_OLD, newPodCIDR: POD_NEW,
    services, replicas, intervalMs, timeoutMs, nodes, proxyMode, kinds: nodePorts > 0 ? [...KINDS, 'nodeport'] : KINDS, nodePorts: Math.min(nodePorts, services), kubernetesVersion: version ?? ZERO_DOWNTIME_VERSION,
    cpus: availableParallelism(), loadavg1: round(loadavg()[0] ?? 0, 2),
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return 0;
}
