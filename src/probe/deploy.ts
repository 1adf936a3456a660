/**
 * `kube-renumber probe --deploy`, the pure parts: the ConfigMap and Deployment that run the probe in the cluster,
 * the in-pod arguments, reading report lines from a pod's log, and merging the reports of several pods (or of a
 * pod restarted by a migration) into one ProbeReport. The API calls are in deploy-run.ts. Not shipped to the pod.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../cluster/types.ts';
import { NODE_IP_ENV } from './pod.ts';
import { sumTotals, type ClientKind, type NodePortTarget, type ProbeReport, type ProbeResult, type ServiceTarget } from './probe.ts';
import { FAILURE_REASONS, type FailureReason, type Gap } from './stats.ts';
import type { Protocol } from './wire.ts';

export const PROBE_APP = 'kube-renumber-probe';
export const DEFAULT_PROBE_IMAGE = 'node:24-alpine';
export const RUN_LABEL = 'kube-renumber.io/probe-run';
export const CONTAINER = 'probe';
export const PROGRAM_DIR_IN_POD = '/opt/kube-renumber-probe';
/** The compiled probe files shipped in the ConfigMap (they import only each other and node built-ins). */
export const PROGRAM_FILES = ['pod.js', 'probe.js', 'stats.js', 'wire.js', 'resolv.js'] as const;
/** How long a pod keeps running after its final report (so the report can be read while it terminates). */
export const POD_LINGER_MS = 10_000;
export const TERMINATION_GRACE_SECONDS = 30;

const ENTRY = `// kube-renumber probe --deploy: the in-pod entry point (see pod.js)
import { main } from './pod.js';
await main();
`;

/** Where the compiled probe files are: next to this module when it runs from dist/, else the checkout's dist/probe. */
export function programDir(): string {
  const url = import.meta.url;
  return fileURLToPath(url.endsWith('.js') ? new URL('./', url) : new URL('../../dist/probe/', url));
}

/**
 * The compiled probe files, embedded by the single-file build (`npm run dist`, scripts/dist.ts) from dist/probe/:
 * the executable has no dist/ beside it.
 */
declare const KUBE_RENUMBER_PROBE_PROGRAM: string | undefined;

/** The embedded probe program (file name → text), or undefined when running from dist/ or the sources. */
function embeddedProgram(): Record<string, unknown> | undefined {
  return typeof KUBE_RENUMBER_PROBE_PROGRAM === 'string' ? JSON.parse(KUBE_RENUMBER_PROBE_PROGRAM) as Record<string, unknown> : undefined;
}

/** The ConfigMap's data: the compiled probe files, the entry point and a package.json marking them ES modules. */
export function readProgram(dir?: string): Record<string, string> {
  const data: Record<string, string> = {};
  const embedded = dir === undefined ? embeddedProgram() : undefined;
  if (embedded) {
    for (const f of PROGRAM_FILES) {
      const text = embedded[f];
      if (typeof text !== 'string') throw new Error(`the embedded probe program has no ${f}: rebuild with "npm run dist"`);
      data[f] = text;
    }
  } else {
    dir ??= programDir();
    for (const f of PROGRAM_FILES) {
      const p = `${dir.replace(/\/$/, '')}/${f}`;
      if (!existsSync(p)) throw new Error(`the compiled probe program is missing (${p}): run "npm run build"`);
      data[f] = readFileSync(p, 'utf8');
    }
  }
  data['main.mjs'] = ENTRY;
  data['package.json'] = '{"type":"module"}\n';
  return data;
}

/** What the in-pod probe is told: the probe flags as the user gave them (after parsing), without --duration. */
export interface PodProbeSettings {
  services: ServiceTarget[];
  kinds: ClientKind[];
  /** the nodeport client's targets */
  nodePorts?: NodePortTarget[];
  /** an IP every pod's nodeport client connects to; undefined: each pod's own node (status.hostIP) */
  nodeAddress?: string;
  /** an IP[:PORT], or undefined for `auto` (the pod's resolv.conf nameserver: the cluster DNS) */
  dnsServer?: string;
  clusterDomain: string;
  intervalMs: number;
  timeoutMs: number;
  protocol: Protocol;
  httpPath?: string;
  connections: number;
  family: 4 | 6 | 'any';
  kubernetesAddress?: string;
  reportEveryMs: number;
}

export function podArgs(s: PodProbeSettings): string[] {
  const args: string[] = [];
  for (const t of s.services) args.push('--service', `${t.namespace}/${t.name}:${t.port}`);
  for (const t of s.nodePorts ?? []) args.push('--nodeport', `${t.namespace}/${t.name}:${t.nodePort}`);
  args.push('--kinds', s.kinds.join(','));
  if (s.nodeAddress !== undefined) args.push('--node-address', s.nodeAddress);
  args.push('--dns-server', s.dnsServer ?? 'auto');
  args.push('--cluster-domain', s.clusterDomain);
  args.push('--interval', `${s.intervalMs}ms`, '--timeout', `${s.timeoutMs}ms`);
  args.push('--protocol', s.protocol);
  if (s.httpPath !== undefined) args.push('--http-path', s.httpPath);
  args.push('--connections', String(s.connections), '--family', String(s.family));
  if (s.kubernetesAddress !== undefined) args.push('--kubernetes-address', s.kubernetesAddress);
  args.push('--report-every', `${s.reportEveryMs}ms`, '--linger', `${POD_LINGER_MS}ms`);
  return args;
}

export interface ProbeDeploySpec {
  namespace: string;
  /** a short random id: names the objects and labels them */
  runId: string;
  image: string;
  replicas: number;
  settings: PodProbeSettings;
  /** the ConfigMap data (readProgram()) */
  program: Record<string, string>;
}

export function objectName(runId: string): string {
  return `${PROBE_APP}-${runId}`;
}

export function runLabels(runId: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': PROBE_APP,
    'app.kubernetes.io/managed-by': 'kube-renumber',
    [RUN_LABEL]: runId,
  };
}

export function runSelector(runId: string): string {
  return `app.kubernetes.io/name=${PROBE_APP},${RUN_LABEL}=${runId}`;
}

/** The ConfigMap holding the program and the Deployment running it. Pure. */
export function buildProbeObjects(spec: ProbeDeploySpec): { configMap: KubeObject; deployment: KubeObject } {
  const name = objectName(spec.runId);
  const labels = runLabels(spec.runId);
  const configMap: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: spec.namespace, labels },
    data: spec.program,
  };
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: spec.namespace, labels },
    spec: {
      replicas: spec.replicas,
      revisionHistoryLimit: 0,
      selector: { matchLabels: { 'app.kubernetes.io/name': PROBE_APP, [RUN_LABEL]: spec.runId } },
      template: {
        metadata: { labels },
        spec: {
          // the probe never talks to the API server
          automountServiceAccountToken: false,
          // NAME_SERVICE_HOST variables for the env client (Services in this namespace)
          enableServiceLinks: true,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65534,
            runAsGroup: 65534,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [{
            name: CONTAINER,
            image: spec.image,
            imagePullPolicy: 'IfNotPresent',
            command: ['node', `${PROGRAM_DIR_IN_POD}/main.mjs`],
            args: podArgs(spec.settings),
            // the nodeport client's default address: the pod's own node
            env: [{ name: NODE_IP_ENV, valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }],
            resources: { requests: { cpu: '20m', memory: '64Mi' }, limits: { memory: '256Mi' } },
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
              privileged: false,
              capabilities: { drop: ['ALL'] },
            },
            volumeMounts: [{ name: 'program', mountPath: PROGRAM_DIR_IN_POD, readOnly: true }],
          }],
          volumes: [{ name: 'program', configMap: { name, defaultMode: 0o444 } }],
        },
      },
    },
  };
  return { configMap, deployment };
}

/** Log lines to ask for: enough to hold a whole report line even when the runtime split it into 16 KiB entries. */
export function tailLinesFor(resultCount: number): number {
  const bytes = 600 + 800 * resultCount;
  return 3 * Math.ceil(bytes / 16_384) + 10;
}

function isReport(v: unknown): v is ProbeReport {
  const r = v as ProbeReport;
  return !!r && typeof r === 'object' && r.apiVersion === 'kube-renumber.io/v1' && r.kind === 'ProbeReport'
    && typeof r.startedAt === 'string' && Array.isArray(r.results) && typeof r.totals === 'object';
}

/**
 * The last complete report in a piece of a pod's log, and the `error:` lines seen. A line counts only when it
 * ends with a newline (the last, unterminated piece may still be being written) and parses as a ProbeReport;
 * anything else (the start line, errors, a line cut by tailLines) is skipped.
 */
export function parseReportLog(text: string): { report?: ProbeReport; errors: string[] } {
  const lines = text.split('\n');
  lines.pop(); // after the last newline: empty, or a partial line
  const errors = lines.filter((l) => /^error:/.test(l.trim())).map((l) => l.trim());
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!.trim();
    if (!l.startsWith('{') || !l.endsWith('}')) continue;
    try {
      const v: unknown = JSON.parse(l);
      if (isReport(v)) return { report: v, errors };
    } catch { /* not JSON: skip */ }
  }
  return { errors };
}

/** Where one merged report came from: one run of the probe in one pod. */
export interface ProbeSource {
  pod: string;
  uid: string;
  startedAt: string;
  endedAt: string;
  /** the pod's final report (printed on SIGTERM); false: its last periodic report (the pod went away first) */
  final: boolean;
  requests: number;
}

export interface MergedProbeReport extends ProbeReport {
  /** `probe --deploy` only: the pod runs whose reports were merged */
  sources?: ProbeSource[];
}

const r1 = (ms: number) => Math.round(ms * 10) / 10;

function shift(g: Gap, by: number): Gap {
  return { ms: g.ms, fromMs: r1(g.fromMs + by), toMs: r1(g.toMs + by) };
}

/** Weighted median of `values` with `weights`. */
function weightedMedian(pairs: Array<{ v: number; w: number }>): number {
  const sorted = [...pairs].sort((a, b) => a.v - b.v);
  const total = sorted.reduce((n, p) => n + p.w, 0);
  let acc = 0;
  for (const p of sorted) {
    acc += p.w;
    if (acc * 2 >= total) return p.v;
  }
  return sorted[sorted.length - 1]!.v;
}

/**
 * Merge the reports of several probe runs (pods, or one pod's successive runs) into one report over the time from
 * the earliest start to the latest end. Counts, reasons, addresses, breaks and reconnects add up; the longest gap is
 * the longest of any run (the time between two runs is no gap: nothing was measured then); the start window ends at
 * the first success of any run, the end window starts at the last; latency: with one run its own figures, with
 * several p50 is the median of the runs' p50 weighted by successes, p99 and max the largest of the runs' (upper
 * bounds). Pure; the input order does not matter.
 */
export function mergeReports(parts: Array<{ report: ProbeReport; source?: Omit<ProbeSource, 'startedAt' | 'endedAt' | 'requests' | 'final'> & { final: boolean } }>,
  stoppedBy: 'duration' | 'signal'): MergedProbeReport {
  if (parts.length === 0) throw new Error('no reports to merge');
  const sorted = [...parts].sort((a, b) => Date.parse(a.report.startedAt) - Date.parse(b.report.startedAt));
  const sources = (): ProbeSource[] | undefined => (sorted.some((p) => p.source)
    ? sorted.filter((p) => p.source).map(({ report, source }) => ({
      pod: source!.pod, uid: source!.uid, startedAt: report.startedAt, endedAt: report.endedAt, final: source!.final,
      requests: report.totals.requests,
    }))
    : undefined);
  if (sorted.length === 1) {
    // one run: its report as it is (the pod's own figures, exact)
    const only: MergedProbeReport = { ...sorted[0]!.report, stoppedBy };
    const s = sources();
    if (s) only.sources = s;
    return only;
  }
  const t0 = Date.parse(sorted[0]!.report.startedAt);
  const tEnd = Math.max(...sorted.map((p) => Date.parse(p.report.endedAt)));
  const endMs = tEnd - t0;

  interface Acc {
    head: Pick<ProbeResult, 'service' | 'port' | 'kind'>;
    startAddress?: ProbeResult['startAddress'];
    requests: number; successes: number; failures: number; dnsFailures: number;
    reasons: Partial<Record<FailureReason, number>>;
    addresses: Record<string, number>;
    longest?: Gap;
    first?: number; last?: number;
    lat: Array<{ p50: number; p99: number; max: number; w: number }>;
    long: boolean; breaks: number; reconnects: number;
  }
  const accs = new Map<string, Acc>();
  for (const { report } of sorted) {
    const off = Date.parse(report.startedAt) - t0;
    for (const r of report.results) {
      const key = `${r.service}|${r.port}|${r.kind}`;
      let a = accs.get(key);
      if (!a) {
        a = { head: { service: r.service, port: r.port, kind: r.kind }, requests: 0, successes: 0, failures: 0, dnsFailures: 0,
          reasons: {}, addresses: {}, lat: [], long: r.breaks !== undefined || r.kind === 'long', breaks: 0, reconnects: 0 };
        accs.set(key, a);
      }
      if (!a.startAddress && r.startAddress) a.startAddress = r.startAddress;
      a.requests += r.requests;
      a.successes += r.successes;
      a.failures += r.failures;
      a.dnsFailures += r.dnsFailures;
      for (const [k, n] of Object.entries(r.failuresByReason)) a.reasons[k as FailureReason] = (a.reasons[k as FailureReason] ?? 0) + (n ?? 0);
      for (const [addr, n] of Object.entries(r.addresses)) a.addresses[addr] = (a.addresses[addr] ?? 0) + n;
      if (r.longestGap && (!a.longest || r.longestGap.ms > a.longest.ms)) a.longest = shift(r.longestGap, off);
      if (r.successes > 0) {
        const first = r.startGap.toMs + off;
        const last = r.endGap.fromMs + off;
        if (a.first === undefined || first < a.first) a.first = first;
        if (a.last === undefined || last > a.last) a.last = last;
      }
      if (r.latencyMs) a.lat.push({ ...r.latencyMs, w: r.successes });
      a.breaks += r.breaks ?? 0;
      a.reconnects += r.reconnects ?? 0;
    }
  }

  const results: ProbeResult[] = [...accs.values()].map((a) => {
    const failuresByReason: Partial<Record<FailureReason, number>> = {};
    for (const k of FAILURE_REASONS) if (a.reasons[k]) failuresByReason[k] = a.reasons[k];
    const gap = (from: number, to: number): Gap => ({ ms: r1(to - from), fromMs: r1(from), toMs: r1(to) });
    const latencyMs = a.lat.length === 0 ? undefined : a.lat.length === 1 ? { p50: a.lat[0]!.p50, p99: a.lat[0]!.p99, max: a.lat[0]!.max } : {
      p50: weightedMedian(a.lat.map((l) => ({ v: l.p50, w: l.w }))),
      p99: Math.max(...a.lat.map((l) => l.p99)),
      max: Math.max(...a.lat.map((l) => l.max)),
    };
    const res: ProbeResult = {
      ...a.head,
      ...(a.startAddress ? { startAddress: a.startAddress } : {}),
      requests: a.requests,
      successes: a.successes,
      failures: a.failures,
      failuresByReason,
      dnsFailures: a.dnsFailures,
      longestGap: a.longest,
      startGap: gap(0, a.first ?? endMs),
      endGap: gap(a.last ?? 0, endMs),
      latencyMs,
      addresses: a.addresses,
    };
    if (a.long) {
      res.breaks = a.breaks;
      res.reconnects = a.reconnects;
    }
    return res;
  });
  const totals = sumTotals(results);
  const first = sorted[0]!.report;
  const merged: MergedProbeReport = {
    apiVersion: 'kube-renumber.io/v1',
    kind: 'ProbeReport',
    startedAt: new Date(t0).toISOString(),
    endedAt: new Date(tEnd).toISOString(),
    durationMs: Math.round(endMs),
    stoppedBy,
    settings: first.settings,
    totals,
    results,
  };
  const s = sources();
  if (s) merged.sources = s;
  return merged;
}
