import { isIP } from 'node:net';
import { connect } from '../../kube/client.ts';
import { DEFAULT_PROBE_IMAGE, type MergedProbeReport } from '../../probe/deploy.ts';
import { ProbeCleanupError, runDeployedProbe } from '../../probe/deploy-run.ts';
import {
  CLIENT_KINDS, defaultKinds, probe, PROTOCOLS, readTargetsFile, parseNodePortTarget, parseServiceTarget, splitHostPort, TargetError, TargetFileError,
  type ClientKind, type NodePortTarget, type ProbeReport, type ProbeResult, type Protocol, type ServiceTarget,
} from '../../probe/index.ts';
import { RESOLV_CONF, resolvConfNameserver } from '../../probe/resolv.ts';
import { NODE_IP_ENV, PROBE_FLAGS } from '../../probe/pod.ts';
import { isDnsSubdomain } from '../../plan/targets.ts';
import { splitList } from '../../text.ts';
import { CONNECTION_FLAGS, connectOptions, durationFlag, intFlag, list, str } from '../common.ts';
import { ExitCode, UsageError, UserError } from '../errors.ts';
import type { Command } from '../command.ts';
import { parseOutput, renderData, section, table } from '../output.ts';

export const probeCommand: Command = {
  name: 'probe',
  summary: 'run continuous clients against Services and report failed requests and gaps (for use during a migration)',
  usage: 'kube-renumber probe --service [NS/]NAME[:PORT] ... | --targets FILE  --dns-server IP[:PORT]|auto [--nodeport [NS/]NAME:NODEPORT ... --node-address IP] [--duration D] [-o table|wide|json|yaml]\n'
    + '       kube-renumber probe --deploy [-n NS] [--image IMAGE] [--replicas N] --service ... [--duration D]   (runs in the cluster)',
  options: {
    deploy: { type: 'boolean' },
    image: { type: 'string' },
    replicas: { type: 'string' },
    'keep-deployment': { type: 'boolean' },
    'report-every': { type: 'string' },
    'start-timeout': { type: 'string' },
    ...PROBE_FLAGS,
    targets: { type: 'string' },
    port: { type: 'string' },
  },
  help: `Flags:
  --service [NS/]NAME[:PORT]  a Service to probe (repeatable; NS defaults to -n or "default", PORT to --port)
  --targets FILE           Services from a YAML/JSON list of "[NS/]NAME[:PORT]" or {namespace, name, port}
  --dns-server IP[:PORT]|auto  the cluster DNS Service address (needed by dns and long, and by kubernetes without
                           --kubernetes-address); auto: the first nameserver of /etc/resolv.conf (in a pod: the
                           cluster DNS). With --deploy the default is auto.
  --cluster-domain D       cluster domain (default cluster.local)
  --nodeport [NS/]NAME:NODEPORT  a Service's node port for the nodeport client (repeatable)
  --node-address IP        the node the nodeport client connects to (default $${NODE_IP_ENV}; with --deploy each
                           pod's own node, status.hostIP)
  --kinds LIST             clients to run, comma-separated: dns, env, kubernetes, long, nodeport (default dns, env,
                           kubernetes and long; nodeport too when --nodeport is given)
  --interval DUR           time between requests of one client (default 20ms)
  --timeout DUR            per-request timeout: DNS lookup, connect and answer together (default 1s)
  --duration DUR           stop after DUR, at most 168h (default: run until SIGINT or SIGTERM), then print the report; with
                           --deploy counted from when the first probe pod runs
  --protocol P             what the Services' servers speak: echo (a line echoed back) | http (default echo)
  --http-path PATH         path for --protocol http (default /)
  --connections N          long-lived connections per Service (default 1)
  --port N                 port for Services given without one (default 80)
  --family 4|6|any         DNS record type: A, AAAA, or A then AAAA (default any)
  --kubernetes-address HOST[:PORT]  handshake with this address instead of resolving kubernetes.default.svc

In the cluster (--deploy): creates in NS (-n, default "default") a ConfigMap holding the probe program and a
Deployment running it (labels app.kubernetes.io/name=kube-renumber-probe, kube-renumber.io/probe-run=ID; no
ServiceAccount token, non-root, read-only root filesystem), reads every probe pod's reports from its log through
the API server (a pod restarted meanwhile loses nothing it reported), and at the end of --duration or on
SIGINT/SIGTERM deletes the Deployment, reads the pods' final reports, deletes the ConfigMap and prints the merged
report. A second Ctrl-C skips the final reports but still deletes both. Permissions: deploy/rbac-probe.yaml.
  --deploy                 run the clients in the cluster (kubeconfig as for every command: --kubeconfig, --context)
  --image IMAGE            any image with Node.js >= 22.19 as "node" on PATH (default ${DEFAULT_PROBE_IMAGE})
  --replicas N             probe pods (default 1)
  --report-every DUR       how often each pod prints its cumulative report, and the log is read (default 5s)
  --start-timeout DUR      give up when no probe pod runs after DUR (default 2m; exit 1)
  --keep-deployment        leave the Deployment and ConfigMap in place (for debugging; prints how to delete them)

Client kinds: dns resolves the Service name on every request; env connects to the ClusterIP learned at start
(NAME_SERVICE_HOST, else one DNS lookup) and never re-resolves; kubernetes completes a TLS handshake with
kubernetes.default.svc; long holds connections and exchanges a message every interval, reconnecting on a break;
nodeport connects to the node address at each --nodeport, one exchange per request, like env.
Exit 0 when no request failed, 1 when some did; with --deploy also 4 when the cluster cannot be reached, 5 when
it refuses (RBAC). See docs/probe.md.`,
  async run({ values, io }) {
    const output = parseOutput(str(values, 'output'));
    const kindsRaw = str(values, 'kinds');
    const nodePortFlags = list(values, 'nodeport');
    const kinds = splitList(kindsRaw ?? defaultKinds(nodePortFlags.length > 0).join(','));
    for (const k of kinds) {
      if (!(CLIENT_KINDS as readonly string[]).includes(k)) throw new UsageError(`--kinds: "${k}" is not a client kind (use ${CLIENT_KINDS.join(', ')})`);
    }
    if (kinds.length === 0) throw new UsageError('--kinds is empty');
    const protocol = (str(values, 'protocol') ?? 'echo') as Protocol;
    if (!PROTOCOLS.includes(protocol)) throw new UsageError(`--protocol ${protocol} must be one of ${PROTOCOLS.join(', ')}`);
    const familyRaw = str(values, 'family') ?? 'any';
    if (!['4', '6', 'any'].includes(familyRaw)) throw new UsageError(`--family ${familyRaw} must be 4, 6 or any`);
    const family = familyRaw === 'any' ? 'any' : (Number(familyRaw) as 4 | 6);
    const port = intFlag(values, 'port', 1, 65535) ?? 80;
    const defaults = { namespace: str(values, 'namespace') ?? 'default', port };
    const intervalMs = positiveDuration(values, 'interval') ?? 20;
    const timeoutMs = positiveDuration(values, 'timeout') ?? 1000;
    const durationMs = positiveDuration(values, 'duration', MAX_PROBE_DURATION_MS);
    const connections = intFlag(values, 'connections', 1, 1000) ?? 1;
    const domain = str(values, 'cluster-domain') ?? 'cluster.local';
    if (!isDnsSubdomain(domain.toLowerCase().replace(/\.$/, ''))) throw new UsageError(`--cluster-domain ${domain} is not a domain name`);
    const httpPath = str(values, 'http-path');
    if (httpPath !== undefined) {
      if (protocol !== 'http') throw new UsageError('--http-path needs --protocol http');
      if (!/^\/[\x21-\x7e]*$/.test(httpPath)) throw new UsageError(`--http-path ${JSON.stringify(httpPath)} must start with "/" and hold only printable characters, no spaces (percent-encode them)`);
    }

    let services: ServiceTarget[];
    try {
      services = list(values, 'service').map((s) => parseServiceTarget(s, defaults, `--service ${s}`));
      const file = str(values, 'targets');
      if (file) services.push(...readTargetsFile(file, defaults));
    } catch (e) {
      if (e instanceof TargetError) throw new UsageError(e.message);
      if (e instanceof TargetFileError) throw new UserError(e.message, 'input');
      throw e;
    }
    const seen = new Set<string>();
    services = services.filter((s) => {
      const k = `${s.namespace}/${s.name}:${s.port}`;
      return seen.has(k) ? false : (seen.add(k), true);
    });
    let nodePorts: NodePortTarget[];
    try {
      nodePorts = nodePortFlags.map((v) => parseNodePortTarget(v, defaults, `--nodeport ${v}`));
    } catch (e) {
      if (e instanceof TargetError) throw new UsageError(e.message);
      throw e;
    }
    nodePorts = nodePorts.filter((t) => {
      const k = `nodeport ${t.namespace}/${t.name}:${t.nodePort}`;
      return seen.has(k) ? false : (seen.add(k), true);
    });
    const needServices = kinds.some((k) => k !== 'kubernetes' && k !== 'nodeport');
    if (needServices && services.length === 0) throw new UsageError('no Services to probe: give --service [NS/]NAME[:PORT] or --targets FILE (or --kinds kubernetes)');
    const nodePortKind = kinds.includes('nodeport');
    if (nodePortKind && nodePorts.length === 0) throw new UsageError('no node ports to probe: the nodeport client needs --nodeport [NS/]NAME:NODEPORT');
    if (!nodePortKind && nodePorts.length > 0) throw new UsageError('--nodeport needs the nodeport client in --kinds');

    const deploy = values.deploy === true;
    if (!deploy) {
      for (const f of ['image', 'replicas', 'keep-deployment', 'report-every', 'start-timeout']) {
        if (values[f] !== undefined) throw new UsageError(`--${f} needs --deploy`);
      }
      // -s was --service here until kubectl's meaning (--server) took it over: say so rather than ignore it
      const cluster = CONNECTION_FLAGS.find((f) => values[f] !== undefined);
      if (cluster) {
        throw new UsageError(`--${cluster}${cluster === 'server' ? ' (-s)' : ''} needs --deploy: without it probe reads no cluster`
          + `${cluster === 'server' ? ' (-s is --server, as in kubectl; a Service to probe is --service [NS/]NAME[:PORT])' : ''}`);
      }
    }
    const dnsRaw = str(values, 'dns-server');
    let dnsServer: string | undefined;
    if (dnsRaw === 'auto') {
      // --deploy: each pod reads its own resolv.conf (the cluster DNS)
      if (!deploy) {
        try {
          dnsServer = resolvConfNameserver(io.env.KUBE_RENUMBER_RESOLV_CONF || RESOLV_CONF);
        } catch (e) {
          throw new UsageError((e as Error).message);
        }
      }
    } else if (dnsRaw !== undefined) {
      checkAddress(dnsRaw, '--dns-server', 53, true);
      dnsServer = dnsRaw;
    }
    const kubernetesAddress = str(values, 'kubernetes-address');
    if (kubernetesAddress !== undefined) checkAddress(kubernetesAddress, '--kubernetes-address', 443, false);
    const nodeAddressFlag = str(values, 'node-address');
    if (nodeAddressFlag !== undefined && !isIP(nodeAddressFlag)) throw new UsageError(`--node-address ${nodeAddressFlag}: expected an IP address`);
    // --deploy: each pod's own node unless the flag names one; here: the flag, else $KUBE_RENUMBER_NODE_IP (set in a
    // pod through the downward API)
    let nodeAddress = nodeAddressFlag;
    if (nodePortKind && !deploy && nodeAddress === undefined) {
      const fromEnv = io.env[NODE_IP_ENV];
      if (!fromEnv) throw new UsageError(`--node-address IP is needed by the nodeport client (or $${NODE_IP_ENV})`);
      if (!isIP(fromEnv)) throw new UsageError(`$${NODE_IP_ENV} ${fromEnv}: expected an IP address`);
      nodeAddress = fromEnv;
    }
    if (!dnsServer && !deploy) {
      const needDns = kinds.filter((k) => k === 'dns' || k === 'long' || (k === 'kubernetes' && !kubernetesAddress));
      if (needDns.length) throw new UsageError(`--dns-server IP[:PORT] is needed by the ${needDns.join(', ')} client(s) (the cluster DNS Service ClusterIP, or auto)`);
    }

    if (deploy) {
      const image = str(values, 'image') ?? DEFAULT_PROBE_IMAGE;
      if (!isImageReference(image)) throw new UsageError(`--image ${JSON.stringify(image)} is not an image reference (e.g. docker.io/library/node:24-alpine)`);
      const replicas = intFlag(values, 'replicas', 1, 100) ?? 1;
      const reportEveryMs = positiveDuration(values, 'report-every') ?? 5000;
      const startTimeoutMs = positiveDuration(values, 'start-timeout') ?? 120_000;
      const client = connect(connectOptions(values, io));
      const stop = new AbortController();
      const hardStop = new AbortController();
      let signals = 0;
      const onSignal = () => {
        signals++;
        if (signals === 1) io.err('stopping: reading the final reports, then deleting the probe Deployment and ConfigMap (again to skip the final reports)\n');
        else if (signals === 2) io.err('not waiting for the final reports; deleting the probe Deployment and ConfigMap\n');
        else io.err('still deleting the probe Deployment and ConfigMap\n');
        if (signals >= 2) hardStop.abort();
        stop.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const verbose = values.verbose === true;
      let report: MergedProbeReport;
      try {
        report = await runDeployedProbe({
          client, namespace: defaults.namespace, image, replicas, durationMs, stop: stop.signal, hardStop: hardStop.signal,
          keep: values['keep-deployment'] === true, startTimeoutMs,
          settings: {
            services, kinds: kinds as ClientKind[], dnsServer, clusterDomain: domain, intervalMs, timeoutMs, protocol,
            httpPath: str(values, 'http-path'), connections, family, kubernetesAddress, reportEveryMs,
            ...(nodePortKind ? { nodePorts, ...(nodeAddress !== undefined ? { nodeAddress } : {}) } : {}),
          },
          progress: verbose ? (m) => { io.err(`${m}\n`); } : undefined,
          warn: (m) => { io.err(`warning: ${m}\n`); },
        });
      } catch (e) {
        if (e instanceof ProbeCleanupError && e.report) printReport(e.report, output, io);
        throw e;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      const notFinal = (report.sources ?? []).filter((s) => !s.final);
      if (verbose || notFinal.length > 0 || (report.sources?.length ?? 0) > replicas) {
        io.err(`merged ${report.sources?.length ?? 0} probe run(s): ${(report.sources ?? []).map((s) => `${s.pod} (${s.final ? 'final report' : 'last periodic report'})`).join(', ')}\n`);
      }
      return finish(report, output, io);
    }

    const stopper = new AbortController();
    const onSignal = () => {
      if (!stopper.signal.aborted) io.err('stopping; printing the report\n');
      stopper.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const verbose = values.verbose === true;
    if (verbose) io.err(`probing ${services.length} Service(s)${nodePortKind ? ` and ${nodePorts.length} node port(s) at ${nodeAddress}` : ''} with ${kinds.join(', ')}${durationMs ? ` for ${durationMs} ms` : ' until SIGINT/SIGTERM'}\n`);
    let report: ProbeReport;
    try {
      report = await probe({
        services, kinds: kinds as ClientKind[], nodePorts, nodeAddress, dnsServer, clusterDomain: domain, intervalMs, timeoutMs, protocol,
        httpPath: str(values, 'http-path'), connections, family, kubernetesAddress, env: io.env, durationMs,
        signal: stopper.signal,
        onFailure: verbose
          ? (f) => { io.err(`${(f.atMs / 1000).toFixed(3)}s ${f.kind} ${f.service}${f.address ? ` ${f.address}` : ''}: ${f.reason}${f.detail ? ` (${f.detail})` : ''}\n`); }
          : undefined,
      });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    return finish(report, output, io);
  },
};

type Output = ReturnType<typeof parseOutput>;

function printReport(report: ProbeReport, output: Output, io: Parameters<Command['run']>[0]['io']): void {
  if (output === 'json' || output === 'yaml') io.out(renderData(report, output));
  else io.out(renderProbe(report, output === 'wide'));
}

function finish(report: ProbeReport, output: Output, io: Parameters<Command['run']>[0]['io']): number {
  printReport(report, output, io);
  if (report.totals.failures > 0) {
    io.err(`${report.totals.failures} of ${report.totals.requests} request(s) failed\n`);
    return ExitCode.findings;
  }
  return ExitCode.ok;
}

/** The longest --duration: a week (timers overflow at 24.8 days). */
const MAX_PROBE_DURATION_MS = 7 * 24 * 3_600_000;

/** An OCI image reference: [HOST[:PORT]/]PATH[:TAG][@DIGEST], PATH lower-case components. */
export function isImageReference(s: string): boolean {
  if (s.length > 512) return false;
  const m = s.match(/^(?:([a-zA-Z0-9.-]+(?::\d+)?|\[[0-9a-fA-F:]+\](?::\d+)?)\/)?([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$/);
  return m !== null;
}

function positiveDuration(values: Parameters<Command['run']>[0]['values'], key: string, maxMs?: number): number | undefined {
  const ms = durationFlag(values, key, maxMs);
  if (ms !== undefined && ms <= 0) throw new UsageError(`--${key} must be more than 0`);
  return ms;
}

function checkAddress(value: string, flag: string, defaultPort: number, ipOnly: boolean): void {
  let host: string;
  try {
    ({ host } = splitHostPort(value, defaultPort));
  } catch (e) {
    throw new UsageError(`${flag} ${(e as Error).message}`);
  }
  if (ipOnly && !isIP(host)) throw new UsageError(`${flag} ${value}: expected an IP address, optionally with :PORT`);
}

export function ms(v: number | undefined): string {
  if (v === undefined) return '-';
  if (v < 1) return `${v.toFixed(1)}ms`;
  if (v < 1000) return `${Math.round(v)}ms`;
  return `${(v / 1000).toFixed(v < 10_000 ? 2 : 1)}s`;
}

function reasons(r: ProbeResult): string {
  return Object.entries(r.failuresByReason).map(([k, n]) => `${k}=${n}`).join(',') || '-';
}

export function renderProbe(report: ProbeReport, wide: boolean): string {
  const headers = wide
    ? ['service', 'kind', 'requests', 'failures', 'dns-fail', 'longest-gap', 'gap-at', 'start-gap', 'end-gap', 'p50', 'p99', 'max', 'breaks', 'reconnects', 'addresses', 'reasons']
    : ['service', 'kind', 'requests', 'failures', 'dns-fail', 'longest-gap', 'p50', 'p99', 'breaks', 'reasons'];
  const rows = report.results.map((r) => {
    const gap = r.longestGap;
    const breaks = r.kind === 'long' ? String(r.breaks ?? 0) : '-';
    if (!wide) {
      return [`${r.service}:${r.port}`, r.kind, r.requests, r.failures, r.dnsFailures, ms(gap?.ms), ms(r.latencyMs?.p50), ms(r.latencyMs?.p99), breaks, reasons(r)];
    }
    return [
      `${r.service}:${r.port}`, r.kind, r.requests, r.failures, r.dnsFailures, ms(gap?.ms),
      gap ? `${(gap.fromMs / 1000).toFixed(2)}s-${(gap.toMs / 1000).toFixed(2)}s` : '-',
      ms(r.startGap.ms), ms(r.endGap.ms), ms(r.latencyMs?.p50), ms(r.latencyMs?.p99), ms(r.latencyMs?.max),
      breaks, r.kind === 'long' ? String(r.reconnects ?? 0) : '-',
      Object.entries(r.addresses).map(([a, n]) => `${a}(${n})`).join(',') + (r.startAddress ? ` [start ${r.startAddress.from}]` : ''),
      reasons(r),
    ];
  });
  const t = report.totals;
  const summary = `${t.requests} requests, ${t.failures} failed (${t.dnsFailures} DNS), ${t.breaks} connection breaks in ${ms(report.durationMs)}`
    + ` (stopped by ${report.stoppedBy}; interval ${ms(report.settings.intervalMs)}, timeout ${ms(report.settings.timeoutMs)}, ${report.settings.protocol})\n`;
  return section('PROBE', table(headers, rows)) + summary;
}
