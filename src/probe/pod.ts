/**
 * The probe as it runs in the pods of `kube-renumber probe --deploy` (see docs/probe.md). Shipped in a ConfigMap
 * together with probe.js, stats.js, wire.js and resolv.js, and run by any Node >= 22.19: node built-ins and those
 * files only, nothing from node_modules.
 *
 * stdout carries one line per report, each a complete ProbeReport as JSON: every `--report-every` a cumulative one
 * (`stoppedBy: "running"`), and the final one when the run ends (SIGTERM/SIGINT, or `--duration`). After the final
 * report the process stays for `--linger` (so the report can still be read from the pod's log while the pod is
 * terminating), then exits. Everything else (the start line, errors) goes to stderr.
 */
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CLIENT_KINDS, defaultKinds, probe, splitHostPort, type ClientKind, type NodePortTarget, type ProbeReport, type ServiceTarget } from './probe.ts';
import { RESOLV_CONF, resolvConfNameserver } from './resolv.ts';
import { PROTOCOLS, type Protocol } from './wire.ts';

class PodUsageError extends Error {}

/** "30s", "2m", "500ms", "0" or plain seconds → milliseconds. */
export function parsePodDuration(raw: string, flag: string): number {
  const m = raw.trim().match(/^(\d+(?:\.\d+)?)(ms|s|m|h)?$/);
  if (!m) throw new PodUsageError(`--${flag} ${raw} is not a duration (e.g. 30s, 2m)`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
}

const TARGET = /^(?:([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(?::(\d+))?$/;

function parseTarget(value: string): ServiceTarget {
  const m = value.trim().match(TARGET);
  const port = m?.[5] !== undefined ? Number(m[5]) : 80;
  if (!m || port < 1 || port > 65535) throw new PodUsageError(`--service ${value}: expected [NAMESPACE/]NAME[:PORT]`);
  return { namespace: m[1] ?? 'default', name: m[3]!, port };
}

function parseNodePort(value: string): NodePortTarget {
  const m = value.trim().match(TARGET);
  const nodePort = Number(m?.[5]);
  if (!m || m[5] === undefined || nodePort < 1 || nodePort > 65535) throw new PodUsageError(`--nodeport ${value}: expected [NAMESPACE/]NAME:NODEPORT`);
  return { namespace: m[1] ?? 'default', name: m[3]!, nodePort };
}

/** The environment variable the probe Deployment sets to the pod's node address (downward API status.hostIP). */
export const NODE_IP_ENV = 'KUBE_RENUMBER_NODE_IP';

export interface PodRunSettings {
  services: ServiceTarget[];
  kinds: ClientKind[];
  nodePorts: NodePortTarget[];
  /** where the nodeport client connects: --node-address, else $KUBE_RENUMBER_NODE_IP */
  nodeAddress: string | undefined;
  dnsServer: string | undefined;
  clusterDomain: string;
  intervalMs: number;
  timeoutMs: number;
  durationMs: number | undefined;
  protocol: Protocol;
  httpPath: string | undefined;
  connections: number;
  family: 4 | 6 | 'any';
  kubernetesAddress: string | undefined;
  reportEveryMs: number;
  lingerMs: number;
}

/** The flags of the probe's clients, shared by `kube-renumber probe` and the in-pod program (parseArgs form). */
export const PROBE_FLAGS = {
  service: { type: 'string', multiple: true },
  kinds: { type: 'string' },
  'dns-server': { type: 'string' },
  'cluster-domain': { type: 'string' },
  interval: { type: 'string' },
  timeout: { type: 'string' },
  duration: { type: 'string' },
  protocol: { type: 'string' },
  'http-path': { type: 'string' },
  connections: { type: 'string' },
  family: { type: 'string' },
  'kubernetes-address': { type: 'string' },
  nodeport: { type: 'string', multiple: true },
  'node-address': { type: 'string' },
} as const;

/** The in-pod flags (the probe flags plus --report-every and --linger) → settings; throws on a bad value. */
export function parsePodArgs(argv: string[], env: NodeJS.ProcessEnv): PodRunSettings {
  let values: Record<string, string | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        ...PROBE_FLAGS,
        'report-every': { type: 'string' },
        linger: { type: 'string' },
      },
    }) as { values: Record<string, string | string[] | undefined> });
  } catch (e) {
    throw new PodUsageError((e as Error).message.split('\n')[0]!);
  }
  const one = (k: string) => values[k] as string | undefined;
  const nodePorts = ((values.nodeport as string[] | undefined) ?? []).map(parseNodePort);
  const kinds = (one('kinds') ?? defaultKinds(nodePorts.length > 0).join(',')).split(',').map((k) => k.trim()).filter(Boolean);
  for (const k of kinds) if (!(CLIENT_KINDS as readonly string[]).includes(k)) throw new PodUsageError(`--kinds: "${k}" is not a client kind`);
  const services = ((values.service as string[] | undefined) ?? []).map(parseTarget);
  if (services.length === 0 && kinds.some((k) => k !== 'kubernetes' && k !== 'nodeport')) throw new PodUsageError('no Services to probe (--service NS/NAME:PORT)');
  const nodePortKind = kinds.includes('nodeport');
  if (nodePortKind && nodePorts.length === 0) throw new PodUsageError('no node ports to probe for the nodeport client (--nodeport NS/NAME:NODEPORT)');
  if (!nodePortKind && nodePorts.length > 0) throw new PodUsageError('--nodeport needs the nodeport client in --kinds');
  const flagAddress = one('node-address');
  if (flagAddress !== undefined && !isIP(flagAddress)) throw new PodUsageError(`--node-address ${flagAddress}: expected an IP address`);
  const nodeAddress = flagAddress ?? (env[NODE_IP_ENV] || undefined);
  if (nodePortKind) {
    if (nodeAddress === undefined) throw new PodUsageError(`the nodeport client needs the node's address (--node-address IP, or $${NODE_IP_ENV})`);
    if (!isIP(nodeAddress)) throw new PodUsageError(`$${NODE_IP_ENV} ${nodeAddress}: expected an IP address`);
  }
  const protocol = (one('protocol') ?? 'echo') as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new PodUsageError(`--protocol ${protocol} must be one of ${PROTOCOLS.join(', ')}`);
  const family = one('family') ?? 'any';
  if (!['4', '6', 'any'].includes(family)) throw new PodUsageError(`--family ${family} must be 4, 6 or any`);
  const connections = Number(one('connections') ?? 1);
  if (!Number.isInteger(connections) || connections < 1) throw new PodUsageError('--connections must be a whole number >= 1');
  const positive = (k: string, dflt: number) => {
    const raw = one(k);
    const v = raw === undefined ? dflt : parsePodDuration(raw, k);
    if (!(v > 0)) throw new PodUsageError(`--${k} must be more than 0`);
    return v;
  };
  let dnsServer = one('dns-server') ?? 'auto';
  if (dnsServer === 'auto') {
    try {
      dnsServer = resolvConfNameserver(env.KUBE_RENUMBER_RESOLV_CONF || RESOLV_CONF);
    } catch (e) {
      // only an error for the clients that need it
      if (kinds.some((k) => k === 'dns' || k === 'long' || (k === 'kubernetes' && !one('kubernetes-address')))) throw new PodUsageError((e as Error).message);
      dnsServer = '';
    }
  } else {
    try { splitHostPort(dnsServer, 53); } catch (e) { throw new PodUsageError(`--dns-server ${(e as Error).message}`); }
  }
  return {
    services,
    kinds: kinds as ClientKind[],
    nodePorts,
    nodeAddress: nodePortKind ? nodeAddress : undefined,
    dnsServer: dnsServer || undefined,
    clusterDomain: one('cluster-domain') ?? 'cluster.local',
    intervalMs: positive('interval', 20),
    timeoutMs: positive('timeout', 1000),
    durationMs: one('duration') === undefined ? undefined : positive('duration', 0),
    protocol,
    httpPath: one('http-path'),
    connections,
    family: family === 'any' ? 'any' : (Number(family) as 4 | 6),
    kubernetesAddress: one('kubernetes-address'),
    reportEveryMs: one('report-every') === undefined ? 5000 : parsePodDuration(one('report-every')!, 'report-every'),
    lingerMs: one('linger') === undefined ? 0 : parsePodDuration(one('linger')!, 'linger'),
  };
}

export interface PodIo {
  out(s: string): void;
  err(s: string): void;
  env: NodeJS.ProcessEnv;
}

/**
 * Run until `stop` aborts (or --duration), printing report lines; then the final report, then linger until
 * `hardStop` aborts or --linger passes. Returns the exit code: 0, 1 when a request failed (for runs by hand),
 * 2 for a bad flag.
 */
export async function runProbePod(argv: string[], io: PodIo, stop: AbortSignal, hardStop: AbortSignal): Promise<number> {
  let s: PodRunSettings;
  try {
    s = parsePodArgs(argv, io.env);
  } catch (e) {
    if (e instanceof PodUsageError) {
      io.err(`error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const line = (r: ProbeReport) => { io.out(`${JSON.stringify(r)}\n`); };
  io.err(`kube-renumber probe: ${s.services.length} Service(s), clients ${s.kinds.join(',')}, DNS server ${s.dnsServer ?? '-'}, `
    + `${s.nodeAddress ? `${s.nodePorts.length} node port(s) at ${s.nodeAddress}, ` : ''}a report every ${s.reportEveryMs} ms\n`);
  const report = await probe({
    services: s.services, kinds: s.kinds, nodePorts: s.nodePorts, nodeAddress: s.nodeAddress, dnsServer: s.dnsServer, clusterDomain: s.clusterDomain, intervalMs: s.intervalMs,
    timeoutMs: s.timeoutMs, protocol: s.protocol, httpPath: s.httpPath, connections: s.connections, family: s.family,
    kubernetesAddress: s.kubernetesAddress, env: io.env, durationMs: s.durationMs, signal: stop,
    reportEveryMs: s.reportEveryMs, onReport: line,
  });
  line(report);
  if (s.lingerMs > 0 && !hardStop.aborted) {
    try { await sleep(s.lingerMs, undefined, { signal: hardStop }); } catch { /* second signal */ }
  }
  return report.totals.failures > 0 ? 1 : 0;
}

/** The entry point of the shipped program: process arguments, stdout/stderr, SIGTERM/SIGINT. */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const stop = new AbortController();
  const hardStop = new AbortController();
  const onSignal = () => {
    if (stop.signal.aborted) hardStop.abort();
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    process.exitCode = await runProbePod(argv, {
      out: (t) => { process.stdout.write(t); },
      err: (t) => { process.stderr.write(t); },
      env: process.env,
    }, stop.signal, hardStop.signal);
  } catch (e) {
    process.stderr.write(`error: internal: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exitCode = 70;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
