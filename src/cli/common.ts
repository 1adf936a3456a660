import type { AvoidRange } from '../analyze/catalog.ts';
import { buildSnapshot } from '../cluster/build.ts';
import { readInventoryFiles } from '../cluster/files.ts';
import type { Snapshot } from '../cluster/types.ts';
import { connect, type ConnectionOverrides, type ConnectOptions } from '../kube/client.ts';
import { readLiveInventory } from '../kube/discover.ts';
import { HELM_RELEASES_KUBECTL } from '../plan/references-gate.ts';
import { loadConfig, parseAvoid } from './config.ts';
import { UsageError } from './errors.ts';
import type { Io, Values } from './command.ts';

export function str(values: Values, key: string): string | undefined {
  const v = values[key];
  return typeof v === 'string' ? v : undefined;
}

export function list(values: Values, key: string): string[] {
  const v = values[key];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/** An integer flag within bounds, or a usage error naming the flag. */
export function intFlag(values: Values, key: string, min: number, max: number): number | undefined {
  const raw = str(values, key);
  if (raw === undefined) return undefined;
  const n = Number(raw.replace(/^\//, ''));
  if (!/^\/?\d+$/.test(raw.trim()) || !Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${key} ${raw} must be a whole number from ${min} to ${max}`);
  }
  return n;
}

/** A finite number flag within bounds (inclusive), or a usage error naming the flag. */
export function numberFlag(values: Values, key: string, min: number, max: number): number | undefined {
  const raw = str(values, key);
  if (raw === undefined) return undefined;
  const t = raw.trim();
  const n = /^[+]?(\d+(\.\d*)?|\.\d+)$/.test(t) ? Number(t) : Number.NaN;
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${key} ${raw} must be a number from ${min} to ${max}`);
  return n;
}

/** The longest duration any flag takes: 24h (a timer far beyond that would overflow, and no step needs it). */
export const MAX_DURATION_MS = 24 * 3_600_000;

const GO_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration as kubectl reads one: Go's time.ParseDuration (`1m30s`, `1h2m3.5s`, `500ms`, `250us`, `0`), or plain
 * seconds (`30`, as kubectl's --request-timeout takes them) → milliseconds; undefined when `raw` is not one.
 * Negative durations are refused by the callers, which name the flag.
 */
export function parseGoDuration(raw: string): number | undefined {
  const t = raw.trim();
  if (/^\+?(\d+(\.\d*)?|\.\d+)$/.test(t)) return Number(t.replace(/^\+/, '')) * 1000;
  if (!/^\+?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) ms += Number(m[1]) * GO_UNITS[m[2]!]!;
  return ms;
}

/** A duration flag (see parseGoDuration) → milliseconds, at most `maxMs` (default 24h), never negative. */
export function durationFlag(values: Values, key: string, maxMs: number = MAX_DURATION_MS): number | undefined {
  const raw = str(values, key);
  if (raw === undefined) return undefined;
  if (/^\s*-/.test(raw) && parseGoDuration(raw.trim().slice(1)) !== undefined) throw new UsageError(`--${key} ${raw} must not be negative`);
  const ms = parseGoDuration(raw);
  if (ms === undefined) throw new UsageError(`--${key} ${raw} is not a duration (e.g. 30s, 1m30s, 500ms)`);
  if (!Number.isFinite(ms) || ms > maxMs) throw new UsageError(`--${key} ${raw} is too long: at most ${formatDuration(maxMs)}`);
  return ms;
}

/** 86400000 → "24h", 90000 → "90s". */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The flags that pick the cluster and the user: kubectl's, laid over the kubeconfig's context. */
export const CLUSTER_FLAGS = ['context', 'cluster', 'user', 'server', 'token', 'certificate-authority', 'insecure-skip-tls-verify'] as const;
/** Every flag about the connection to the API server: those, the kubeconfig, who to act as, the request timeout. */
export const CONNECTION_FLAGS = ['kubeconfig', ...CLUSTER_FLAGS, 'as', 'as-group', 'as-uid', 'request-timeout'] as const;

/** -v=N (0 to 10; -v and --verbose alone are 1): 1 and more show progress and stack traces, 6 and more each API request. */
export function verbosity(values: Values): number {
  const v = str(values, 'v');
  if (v !== undefined && (!/^\d+$/.test(v) || Number(v) > 10)) throw new UsageError(`-v ${v}: the log level is a whole number from 0 to 10 (-v alone: 1)`);
  return v !== undefined ? Number(v) : values.verbose === true ? 1 : 0;
}

/** kubectl's connection flags as the kube layer takes them. */
export function connectionOverrides(values: Values): ConnectionOverrides {
  const groups = list(values, 'as-group');
  return {
    cluster: str(values, 'cluster'), user: str(values, 'user'), server: str(values, 'server'), token: str(values, 'token'),
    certificateAuthority: str(values, 'certificate-authority'), insecureSkipTlsVerify: values['insecure-skip-tls-verify'] === true,
    as: str(values, 'as'), ...(groups.length > 0 ? { asGroups: groups } : {}), asUid: str(values, 'as-uid'),
  };
}

/** How to reach the cluster the flags name: kubeconfig, context, kubectl's connection flags, timeout, -v=6 request lines. */
export function connectOptions(values: Values, io: Io): ConnectOptions {
  return {
    kubeconfig: str(values, 'kubeconfig'),
    context: str(values, 'context'),
    overrides: connectionOverrides(values),
    requestTimeoutMs: durationFlag(values, 'request-timeout'),
    env: io.env,
    ...(verbosity(values) >= 6 ? { trace: (line: string) => io.err(`${line}\n`) } : {}),
  };
}

/** --avoid flags plus the config file's list. */
export function avoidList(values: Values, io: Io): AvoidRange[] {
  const cfg = loadConfig(str(values, 'config'), io.env);
  return [...list(values, 'avoid').map((a) => parseAvoid(a)), ...cfg.avoid];
}

/** The flags that name a cluster to read: with -f, one of them makes the read live (see loadSnapshot). */
const LIVE_FLAGS = ['kubeconfig', 'context', 'cluster', 'server'] as const;

/**
 * Does the command read a live cluster? Yes without -f; with -f only when --kubeconfig, --context, --cluster or
 * --server is given too (then -f adds distribution configs to the live read: see loadSnapshot). Reading files
 * only, the flags about the connection (but --request-timeout) are refused: they would change nothing.
 */
export function readsLive(values: Values): boolean {
  if (list(values, 'from-file').length === 0 || LIVE_FLAGS.some((f) => values[f] !== undefined)) return true;
  // (--request-timeout stays accepted with -f, as it always was: a script may pass it to every command)
  const unused = CONNECTION_FLAGS.find((f) => f !== 'request-timeout' && values[f] !== undefined);
  if (unused) throw new UsageError(`--${unused} is about the connection to a cluster, and -f alone reads files: give --kubeconfig, --context or --server for a live read, or leave out --${unused}`);
  return false;
}

/**
 * The snapshot: offline from -f; live from the cluster; or live plus -f when --kubeconfig or --context names
 * the cluster explicitly. Then the files may hold only distribution configs (a kOps Cluster spec, which no
 * cluster API serves, or a kubeadm ClusterConfiguration): they are read and checked before the cluster is
 * contacted, and Kubernetes objects in them are refused rather than mixed with the live ones.
 */
export async function loadSnapshot(values: Values, io: Io): Promise<Snapshot> {
  const files = list(values, 'from-file');
  const verbose = values.verbose === true;
  const progress = (m: string) => { if (verbose) io.err(`${m}\n`); };
  const helmReleases = values['read-helm-releases'] === true;
  if (files.length > 0 && !readsLive(values)) {
    if (helmReleases) throw new UsageError(`--read-helm-releases lists the cluster's Helm releases, and -f alone reads files: leave it out and put the release Secrets among the files (${HELM_RELEASES_KUBECTL})`);
    const inv = await readInventoryFiles(files);
    progress(`read ${inv.objects.length} objects from ${files.length} path(s)`);
    return buildSnapshot(inv);
  }
  const extra = files.length > 0 ? await readInventoryFiles(files) : undefined;
  if (extra) {
    const live = `--${LIVE_FLAGS.find((f) => values[f] !== undefined)}`;
    if (extra.objects.length > 0) {
      const o = extra.objects[0]!;
      throw new UsageError(`with ${live}, -f adds distribution configs (a kOps Cluster spec, a kubeadm ClusterConfiguration) to the live read, `
        + `but ${files.join(', ')} hold${files.length === 1 ? 's' : ''} ${extra.objects.length} Kubernetes object(s) (e.g. ${o.kind ?? 'an object'}${o.metadata?.name ? `/${o.metadata.name}` : ''}): `
        + `leave out ${live} to read the files offline, or leave out those files to read the cluster live`);
    }
    if (extra.configs.length === 0) {
      throw new UsageError(`with ${live}, -f adds distribution configs to the live read, and ${files.join(', ')} hold${files.length === 1 ? 's' : ''} none `
        + '(a kOps Cluster spec or a kubeadm ClusterConfiguration)');
    }
    progress(`read ${extra.configs.length} distribution config(s) from ${files.length} path(s)`);
  }
  const client = connect(connectOptions(values, io));
  progress(`reading cluster ${client.server} (context "${client.context}")`);
  const inv = await readLiveInventory(client, { onProgress: progress, ...(helmReleases ? { helmReleases } : {}) });
  progress(`${client.requestCount} API requests`);
  if (extra) {
    inv.configs.push(...extra.configs);
    if (inv.source.kind === 'live') inv.source = { ...inv.source, files: extra.source.kind === 'file' ? extra.source.files : files };
  }
  return buildSnapshot(inv);
}
