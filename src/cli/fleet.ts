/**
 * Fleets: `plan --fleet FILE` gives every cluster of a fleet its own ranges and writes one plan per cluster that
 * moves; `apply --fleet DIR` runs those plans (a canary first, then waves), `status --fleet DIR` shows them.
 * The assignment itself is pure (plan/fleet.ts); this file reads the clusters and writes and runs the plans.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import * as yaml from 'js-yaml';
import type { Snapshot } from '../cluster/types.ts';
import { errorLine } from '../errors.ts';
import type { PodPathId } from '../ipam/types.ts';
import { addressPlan } from '../analyze/addressing.ts';
import { CATALOG, type AvoidRange } from '../analyze/catalog.ts';
import { inspect } from '../analyze/inspect.ts';
import { rangeSize } from '../analyze/suggest.ts';
import { readJournal, type JournalEntry } from '../engine/journal.ts';
import { decodeText, readRegularFile } from '../engine/files.ts';
import { NetError } from '../net/index.ts';
import { assignFleetRanges, FleetConflictError, type FleetAssignment, type FleetClusterNeeds, type FleetShared } from '../plan/fleet.ts';
import { buildMigrationPlan, DEFAULT_HEADROOM, type MigrationPlan } from '../plan/plan.ts';
import { isPodPathId, orList, POD_PATH_NAMES } from '../plan/pod-paths/registry.ts';
import { refusals } from '../plan/preflight.ts';
import { platformRefusal, podOwnerRefusal } from '../plan/platform-gate.ts';
import { planFromYaml, planToYaml, shellWord } from '../plan/render.ts';
import { certSanProblem, isDnsLabel, podTargetRefusals } from '../plan/targets.ts';
import { renderPlanHtml } from '../render/html.ts';
import { planSummary } from '../plan/summary.ts';
import type { Io, Values } from './command.ts';
import { avoidList, CLUSTER_FLAGS, intFlag, list, loadSnapshot, str } from './common.ts';
import { parseAvoid } from './config.ts';
import { EXIT_CODE_OF_KIND, ExitCode, InputError, UsageError, UserError } from './errors.ts';
import { redact } from '../kube/redact.ts';
import { parseOutput, renderData, table } from './output.ts';
import { runStatus, type RunState, type RunStatus } from './run-state.ts';
import { VERSION } from './version.ts';

export const FLEET_API_VERSION = 'kube-renumber.io/v1';
/** The fleet file (input of plan --fleet) and the index plan --fleet writes into its directory. */
export const FLEET_KIND = 'Fleet';
export const FLEET_PLAN_KIND = 'FleetPlan';
export const FLEET_INDEX = 'fleet.yaml';
const MAX_FLEET_BYTES = 16 * 1024 * 1024;

export interface FleetCluster {
  name: string;
  context?: string;
  kubeconfig?: string;
  /** Dumps to read instead of a live cluster (kubectl get -o yaml, kOps or kubeadm config): files or directories. */
  fromFile?: string[];
  ipam?: PodPathId;
  nodeHook?: string;
  /**
   * The apiserver serving certificate's SANs, asserted by the operator (as plan --apiserver-cert-san): when the
   * certificate was reissued with the new range's first IP, or is read elsewhere. Otherwise read live.
   */
  apiserverCertSANs?: string[];
}

/** The fleet file's floors: the longest prefix a new Service / pod range may have (default: src/analyze/sizing.ts). */
export interface FleetMinPrefix { service?: number; pod?: number }

export interface FleetFile { clusters: FleetCluster[]; avoid: AvoidRange[]; headroom: number; canary?: string; minPrefix?: FleetMinPrefix }

export interface FleetIndexEntry extends FleetCluster {
  /** The plan file in the directory, absent when the cluster keeps both its ranges. */
  plan?: string;
  service: FleetAssignment['service'];
  pod: FleetAssignment['pod'];
  /** Pre-flight checks of the plan that failed (fix them before the run). */
  failed?: string[];
}

export interface FleetIndex {
  apiVersion: string;
  kind: string;
  metadata: { generator: string; fleetFile: string };
  canary?: string;
  moves: { ranges: number; clusters: number; addresses: number };
  clusters: FleetIndexEntry[];
}

function fail(path: string, where: string, what: string): never {
  throw new InputError(`${path}: ${where}: ${what}`);
}

function readYamlDoc(path: string, what: string): Record<string, unknown> {
  const text = decodeText(readRegularFile(path, what, MAX_FLEET_BYTES));
  if (text === undefined) throw new InputError(`${path}: not text (binary data): not a ${what}`);
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    throw new InputError(`${path}: not YAML: ${errorLine(e)}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new InputError(`${path}: not a ${what} (a YAML mapping with apiVersion, kind and clusters)`);
  return doc as Record<string, unknown>;
}

const strField = (path: string, o: Record<string, unknown>, key: string, where: string): string | undefined => {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.trim() === '' || v.includes('\0')) fail(path, `${where}.${key}`, `must be a non-empty string, not ${JSON.stringify(v)}`);
  return v;
};

/**
 * The fleet file: apiVersion kube-renumber.io/v1, kind Fleet; clusters (each a name, a DNS label, and a
 * kubeconfig context, a kubeconfig file, or dumps to read); avoid (CIDR or {cidr, reason}); headroom; canary.
 * Relative paths are relative to the file. Anything else is exit 3, naming the field.
 */
export function readFleetFile(path: string): FleetFile {
  const doc = readYamlDoc(path, 'fleet file');
  if (doc.apiVersion !== FLEET_API_VERSION || doc.kind !== FLEET_KIND) {
    fail(path, 'apiVersion/kind', `expected ${FLEET_API_VERSION} ${FLEET_KIND}, got ${JSON.stringify(doc.apiVersion)} ${JSON.stringify(doc.kind)}`);
  }
  for (const k of Object.keys(doc)) if (!['apiVersion', 'kind', 'clusters', 'avoid', 'headroom', 'canary', 'minPrefix'].includes(k)) fail(path, k, 'unknown field (apiVersion, kind, clusters, avoid, headroom, canary, minPrefix)');
  const base = dirname(resolve(path));
  const rel = (p: string) => (isAbsolute(p) ? p : join(base, p));
  if (!Array.isArray(doc.clusters) || doc.clusters.length === 0) fail(path, 'clusters', 'must list at least one cluster');
  const names = new Set<string>();
  const clusters = (doc.clusters as unknown[]).map((raw, i): FleetCluster => {
    const where = `clusters[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) fail(path, where, 'must be a mapping (name, context, kubeconfig, fromFile, ipam, nodeHook)');
    const o = raw as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!['name', 'context', 'kubeconfig', 'fromFile', 'ipam', 'nodeHook', 'apiserverCertSANs'].includes(k)) {
      fail(path, `${where}.${k}`, 'unknown field (name, context, kubeconfig, fromFile, ipam, nodeHook, apiserverCertSANs)');
    }
    const name = strField(path, o, 'name', where);
    if (!name || !isDnsLabel(name)) fail(path, `${where}.name`, `${JSON.stringify(o.name)} must be a DNS label (lower-case letters, digits and "-"): it names the cluster's plan file`);
    if (names.has(name)) fail(path, `${where}.name`, `${name} is listed twice`);
    names.add(name);
    const context = strField(path, o, 'context', where);
    const kubeconfig = strField(path, o, 'kubeconfig', where);
    const ff = o.fromFile === undefined ? undefined : (Array.isArray(o.fromFile) ? o.fromFile : [o.fromFile]);
    if (ff && (ff.length === 0 || ff.some((x) => typeof x !== 'string' || x.trim() === ''))) fail(path, `${where}.fromFile`, 'must be a path or a list of paths');
    if (ff && (context || kubeconfig)) fail(path, where, 'give fromFile (dumps) or context/kubeconfig (a live cluster), not both');
    const ipam = strField(path, o, 'ipam', where);
    if (ipam !== undefined && !isPodPathId(ipam)) fail(path, `${where}.ipam`, `${ipam} must be ${orList(POD_PATH_NAMES)}`);
    const nodeHook = strField(path, o, 'nodeHook', where);
    const sans = o.apiserverCertSANs;
    if (sans !== undefined && (!Array.isArray(sans) || sans.length === 0 || sans.some((x) => typeof x !== 'string' || certSanProblem(x) !== undefined))) {
      fail(path, `${where}.apiserverCertSANs`, 'must be a list of IP addresses or DNS names (the serving certificate\'s SANs)');
    }
    return {
      ...(sans ? { apiserverCertSANs: sans as string[] } : {}),
      name, ...(context ? { context } : {}), ...(kubeconfig ? { kubeconfig: rel(kubeconfig) } : {}),
      ...(ff ? { fromFile: (ff as string[]).map(rel) } : {}), ...(ipam ? { ipam } : {}), ...(nodeHook ? { nodeHook } : {}),
    };
  });
  const avoid = (Array.isArray(doc.avoid) ? doc.avoid : doc.avoid === undefined ? [] : fail(path, 'avoid', 'must be a list')).map((a: unknown, i: number) => {
    try {
      if (typeof a === 'string') return parseAvoid(a, path);
      if (a && typeof a === 'object' && typeof (a as { cidr?: unknown }).cidr === 'string') {
        const { cidr, reason } = a as { cidr: string; reason?: unknown };
        return { ...parseAvoid(cidr, path), ...(typeof reason === 'string' ? { reason } : {}) };
      }
    } catch (e) {
      if (e instanceof NetError || e instanceof UsageError) fail(path, `avoid[${i}]`, e.message);
      throw e;
    }
    return fail(path, `avoid[${i}]`, 'must be a CIDR or {cidr, reason}');
  });
  const headroom = doc.headroom === undefined ? DEFAULT_HEADROOM : doc.headroom;
  if (typeof headroom !== 'number' || !(headroom >= 1 && headroom <= 1000)) fail(path, 'headroom', `must be a number from 1 to 1000, not ${JSON.stringify(doc.headroom)}`);
  const canary = doc.canary === undefined ? undefined : strField(path, doc, 'canary', '');
  if (canary !== undefined && !names.has(canary)) fail(path, 'canary', `${canary} is not one of the clusters`);
  let minPrefix: FleetMinPrefix | undefined;
  if (doc.minPrefix !== undefined) {
    const m = doc.minPrefix;
    if (!m || typeof m !== 'object' || Array.isArray(m)) fail(path, 'minPrefix', 'must be a mapping (service, pod: the longest prefix a new range may have)');
    minPrefix = {};
    for (const [k, v] of Object.entries(m as Record<string, unknown>)) {
      if (k !== 'service' && k !== 'pod') fail(path, `minPrefix.${k}`, 'unknown field (service, pod)');
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 32) fail(path, `minPrefix.${k}`, `must be an IPv4 prefix length from 1 to 32, not ${JSON.stringify(v)}`);
      minPrefix[k] = v;
    }
  }
  return { clusters, avoid, headroom, ...(canary ? { canary } : {}), ...(minPrefix ? { minPrefix } : {}) };
}

/** The flags one cluster of the fleet is read and run with: the command's, with the cluster's source instead. */
export function clusterValues(values: Values, c: FleetCluster): Values {
  const v: Values = { ...values };
  for (const k of ['fleet', 'output-directory', 'parallel-clusters', 'output', 'from-file', 'context', 'state-dir']) delete v[k];
  if (c.fromFile) {
    delete v.kubeconfig;
    // a cluster read from files: its release Secrets are among the files or not read
    delete v['read-helm-releases'];
    v['from-file'] = c.fromFile;
  } else {
    if (c.context) v.context = c.context;
    if (c.kubeconfig) v.kubeconfig = c.kubeconfig;
  }
  return v;
}

/**
 * Today's ranges and needs of one cluster (IPv4 single-stack only), for the assignment: the need as `suggest`
 * sizes it (pods from the most nodes the cluster may reach), and the floor a new range must also meet.
 */
export function fleetNeeds(name: string, snap: Snapshot, headroom: number, minPrefix: FleetMinPrefix = {}): FleetClusterNeeds {
  const groups = addressPlan(snap);
  const v6 = groups.find((g) => ['service', 'pod', 'pool'].includes(g.role) && g.parsed.family === 6);
  if (v6) throw new UsageError(`cluster ${name}: its ${v6.role} range ${v6.cidr} is IPv6: fleet plans handle IPv4 single-stack clusters (plan this one with plan --service-cidr/--pod-cidr)`);
  const service = groups.find((g) => g.role === 'service');
  const pod = groups.find((g) => g.role === 'pod') ?? groups.find((g) => g.role === 'pool');
  const nodeIPs = snap.nodes.flatMap((n) => [...n.internalIPs, ...n.externalIPs]).filter((a) => !a.includes(':')).map((a) => `${a}/32`);
  const local = [...groups.filter((g) => g.role === 'node').map((g) => g.cidr), ...nodeIPs];
  try {
    return {
      name,
      service: { ...(service ? { current: service.cidr } : {}), ...sized(rangeSize(snap, { for: 'services', family: 4, headroom, ...(minPrefix.service !== undefined ? { minPrefix: minPrefix.service } : {}) })) },
      pod: { ...(pod ? { current: pod.cidr } : {}), ...sized(rangeSize(snap, { for: 'pods', family: 4, headroom, ...(minPrefix.pod !== undefined ? { minPrefix: minPrefix.pod } : {}) })) },
      local,
    };
  } catch (e) {
    if (e instanceof NetError) throw new UsageError(`cluster ${name}: ${e.message}`);
    throw e;
  }
}

const sized = (r: { prefix: number; needPrefix: number }) => ({ prefix: r.needPrefix, floor: r.prefix });

/** Every cluster's current and assigned ranges, as ranges the plan of `name` must keep clear of. */
function othersAvoid(name: string, result: FleetAssignment[]): AvoidRange[] {
  const out: AvoidRange[] = [];
  for (const a of result) {
    if (a.name === name) continue;
    for (const k of ['service', 'pod'] as const) {
      for (const c of new Set([a[k].from, a[k].to].filter((x): x is string => !!x))) out.push({ cidr: c, reason: `${k} range of cluster ${a.name}`, from: 'fleet' });
    }
  }
  return out;
}

/** One cluster's plan for its assigned ranges, as `plan` writes it; refused targets are a usage error naming the cluster. */
function clusterPlan(name: string, snap: Snapshot, c: FleetCluster, a: FleetAssignment, avoid: AvoidRange[], headroom: number, sans: string[] | undefined): MigrationPlan {
  const moves = [...(a.service.moved ? ['service' as const] : []), ...(a.pod.moved ? ['pod' as const] : [])];
  for (const move of moves) {
    const refused = platformRefusal(snap, move) ?? (move === 'pod' ? podOwnerRefusal(snap, c.ipam) : undefined);
    if (refused) throw new UsageError(`cluster ${name}: ${refused}`);
  }
  if (a.pod.moved) {
    const refused = podTargetRefusals(snap, { target: a.pod.to, serviceTarget: a.service.moved ? a.service.to : undefined, avoid });
    if (refused.length > 0) throw new UsageError(`cluster ${name}: pod range ${a.pod.to} refused: ${refused.slice(0, 3).join('; ')}`);
  }
  const plan = buildMigrationPlan(snap, {
    generator: `kube-renumber ${VERSION}`,
    ...(a.pod.moved ? { pod: { target: a.pod.to, avoid, headroom, ...(c.ipam ? { ipam: c.ipam } : {}), ...(c.nodeHook ? { nodeHook: c.nodeHook } : {}) } } : {}),
    ...(a.service.moved ? { service: {
      target: a.service.to, avoid, headroom,
      ...(sans && sans.length > 0 ? { apiserverCertSANs: sans, certSANsGiven: c.apiserverCertSANs !== undefined } : {}),
    } } : {}),
  });
  const refused = refusals(plan.preflight);
  if (refused.length > 0) throw new UsageError(`cluster ${name}: ${refused.map((r) => r.message).join('; ')}`);
  return plan;
}

/** The ranges the whole fleet avoids: the fleet file's, --avoid/config's, and the catalog's addresses that are never free. */
function sharedRanges(file: FleetFile, extra: AvoidRange[]): FleetShared[] {
  return [
    ...file.avoid.map((a) => ({ cidr: a.cidr, reason: a.reason || 'fleet file' })),
    ...extra.map((a) => ({ cidr: a.cidr, reason: a.reason || a.from })),
    ...CATALOG.filter((k) => k.severity !== 'info' && !k.cidr.includes(':')).map((k) => ({ cidr: k.cidr, reason: k.name })),
  ];
}

export interface FleetPlanDeps { readCertSANs?: (values: Values, io: Io) => Promise<string[] | undefined> }

/** plan --fleet FILE --output-directory DIR. */
export async function planFleet(values: Values, io: Io, deps: FleetPlanDeps = {}): Promise<number> {
  const path = str(values, 'fleet')!;
  const dir = str(values, 'output-directory');
  if (!dir || dir.trim() === '') throw new UsageError('plan --fleet writes one plan per cluster: give the directory with --output-directory DIR');
  const output = parseOutput(str(values, 'output'));
  for (const f of ['service-cidr', 'pod-cidr', 'from-file', ...CLUSTER_FLAGS]) {
    if (values[f] !== undefined) throw new UsageError(`--${f} cannot go with --fleet: the fleet file names each cluster, and the assignment picks the ranges`);
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new UsageError(`--output-directory ${dir} is not empty: give a new or empty directory (nothing was written)`);
  const file = readFleetFile(path);
  const extraAvoid = avoidList(values, io);
  const snaps = new Map<string, Snapshot>();
  const needs: FleetClusterNeeds[] = [];
  for (const c of file.clusters) {
    if (values.verbose === true) io.err(`reading cluster ${c.name}\n`);
    const snap = await loadSnapshot(clusterValues(values, c), io);
    snaps.set(c.name, snap);
    needs.push(fleetNeeds(c.name, snap, file.headroom, file.minPrefix));
  }
  const shared = sharedRanges(file, extraAvoid);
  let result;
  try {
    result = assignFleetRanges(needs, shared);
  } catch (e) {
    if (e instanceof FleetConflictError) throw new UsageError(`the fleet's ranges cannot all be met: ${e.message} (nothing was written)`);
    throw e;
  }
  const fleetAvoid: AvoidRange[] = shared.map((s) => ({ cidr: s.cidr, reason: s.reason, from: 'fleet' }));
  const entries: FleetIndexEntry[] = [];
  const files: Array<[string, string]> = [];
  for (const [i, c] of file.clusters.entries()) {
    const a = result.clusters[i]!;
    const entry: FleetIndexEntry = { ...c, service: a.service, pod: a.pod };
    if (a.service.moved || a.pod.moved) {
      const snap = snaps.get(c.name)!;
      const avoid = [...fleetAvoid, ...othersAvoid(c.name, result.clusters)];
      const cv = clusterValues(values, c);
      const sans = c.apiserverCertSANs ?? (a.service.moved && !c.fromFile ? await (deps.readCertSANs?.(cv, io) ?? Promise.resolve(undefined)) : undefined);
      const plan = clusterPlan(c.name, snap, c, a, avoid, file.headroom, sans);
      entry.plan = `${c.name}.yaml`;
      const failed = plan.preflight.filter((p) => p.status === 'fail').map((p) => p.id);
      if (failed.length > 0) entry.failed = failed;
      const summary = planSummary(plan, snap.pods, entry.plan);
      const text = planToYaml(plan, summary);
      planFromYaml(text, entry.plan); // every plan written passes the validator apply runs
      files.push([entry.plan, text]);
      files.push([`${c.name}.html`, renderPlanHtml(plan, inspect(snap, { avoid }), { avoid, generator: `kube-renumber ${VERSION}`, summary })]);
    }
    entries.push(entry);
  }
  const moving = entries.filter((e) => e.plan);
  const canary = file.canary && moving.some((e) => e.name === file.canary) ? file.canary : moving[0]?.name;
  const index: FleetIndex = {
    apiVersion: FLEET_API_VERSION, kind: FLEET_PLAN_KIND,
    metadata: { generator: `kube-renumber ${VERSION}`, fleetFile: resolve(path) },
    ...(canary ? { canary } : {}),
    moves: result.moves,
    clusters: entries,
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  for (const [name, text] of files) writeFileSync(join(dir, name), text, { mode: 0o600 });
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(index, null, 2)}\n`, { mode: 0o600 });
  writeFileSync(join(dir, FLEET_INDEX), yaml.dump(index, { noRefs: true, lineWidth: -1 }), { mode: 0o600 });
  if (output === 'json' || output === 'yaml') io.out(renderData(index, output));
  else io.out(fleetPlanTable(index));
  io.err(`${moving.length} of ${entries.length} cluster(s) move (${result.moves.ranges} range(s)); plans in ${dir}`
    + `${canary ? `; canary ${canary}` : ''}; run them with: kube-renumber apply --fleet ${dir}\n`);
  const failed = entries.filter((e) => e.failed);
  if (failed.length > 0) {
    io.err(`pre-flight check(s) failed in ${failed.map((e) => `${e.name} (${e.failed!.join(', ')})`).join(', ')}: fix them before apply\n`);
    return ExitCode.findings;
  }
  return ExitCode.ok;
}

function fleetPlanTable(index: FleetIndex): string {
  const r = (x: FleetAssignment['service']) => (x.moved ? `${x.from ?? '?'} -> ${x.to}` : `${x.to} (kept)`);
  return table(['cluster', 'service range', 'pod range', 'plan', 'why'], index.clusters.map((c) => [
    `${c.name}${c.name === index.canary ? ' (canary)' : ''}`, r(c.service), r(c.pod), c.plan ?? '-',
    [c.service.why ? `service: ${c.service.why}` : '', c.pod.why ? `pod: ${c.pod.why}` : ''].filter(Boolean).join('; ') || '-',
  ]));
}

/** The index plan --fleet wrote into DIR (exit 3 when it is not one). */
export function readFleetIndex(dir: string): FleetIndex {
  const path = join(dir, FLEET_INDEX);
  if (!existsSync(path)) throw new InputError(`${dir}: no ${FLEET_INDEX}: not a directory written by kube-renumber plan --fleet`);
  const doc = readYamlDoc(path, 'fleet plan index');
  if (doc.apiVersion !== FLEET_API_VERSION || doc.kind !== FLEET_PLAN_KIND || !Array.isArray(doc.clusters)) {
    throw new InputError(`${path}: not a fleet plan index (apiVersion ${FLEET_API_VERSION}, kind ${FLEET_PLAN_KIND}, written by kube-renumber plan --fleet)`);
  }
  for (const [i, c] of (doc.clusters as FleetIndexEntry[]).entries()) {
    if (!c || typeof c.name !== 'string' || !isDnsLabel(c.name)) throw new InputError(`${path}: clusters[${i}].name: not a cluster name`);
    if (c.plan !== undefined && c.plan !== `${c.name}.yaml`) throw new InputError(`${path}: clusters[${i}].plan: expected ${c.name}.yaml`);
  }
  return doc as unknown as FleetIndex;
}

/** Where one cluster's run keeps its journal, backups and lock. */
export function fleetStateDir(dir: string, name: string): string {
  return join(dir, 'state', name);
}

export type ClusterRunState = 'keeps its ranges' | RunState;

export interface ClusterStatus extends Omit<RunStatus, 'state'> { name: string; state: ClusterRunState }

/**
 * One cluster's state from its journal: steps done, the last step reached and how its last run ended; for a run
 * without its end, from the lock file of its state directory (running here, or interrupted).
 */
export function clusterStatus(dir: string, c: FleetIndexEntry): ClusterStatus {
  if (!c.plan) return { name: c.name, state: 'keeps its ranges', done: 0, steps: 0 };
  const plan = planFromYaml(decodeText(readRegularFile(join(dir, c.plan), 'plan', MAX_FLEET_BYTES)) ?? '', join(dir, c.plan));
  const stateDir = fleetStateDir(dir, c.name);
  const journal = join(stateDir, 'journal.jsonl');
  const entries: JournalEntry[] = existsSync(journal) ? readJournal(journal) : [];
  return { name: c.name, ...runStatus(plan, entries, {
    stateDir, resume: `kube-renumber resume --fleet ${shellWord(dir)}`,
    rollback: `kube-renumber rollback ${shellWord(join(dir, c.plan))} --state-dir ${shellWord(stateDir)}`,
  }) };
}

/** status --fleet DIR. */
export function fleetStatus(values: Values, io: Io): number {
  const dir = str(values, 'fleet')!;
  const output = parseOutput(str(values, 'output'));
  const index = readFleetIndex(dir);
  const rows = index.clusters.map((c) => clusterStatus(dir, c));
  if (output === 'json' || output === 'yaml') io.out(renderData({ fleet: dir, canary: index.canary, clusters: rows }, output));
  else {
    io.out(table(['cluster', 'state', 'steps done', 'step', 'since', 'detail'], rows.map((r) => [
      `${r.name}${r.name === index.canary ? ' (canary)' : ''}`, r.state, r.steps ? `${r.done}/${r.steps}` : '-', r.step ?? '-', r.since ?? '-', r.detail ?? '',
    ])));
  }
  return ExitCode.ok;
}

/** One cluster's run: its plan with its own flags, stopping before the next step once `stopBefore` says why. */
export type RunCluster = (c: FleetIndexEntry, values: Values, io: Io, stopBefore: () => string | undefined) => Promise<number>;

export interface FleetRunResult { name: string; code: number; wave: number }

/**
 * The order of a fleet run: the canary (the first cluster that moves unless named) alone, then waves of `parallel` clusters in the index's order. A wave
 * starts only when every cluster of the one before completed; when a cluster fails, the others of its wave stop
 * before their next step (a step boundary), and no later wave starts. Clusters already completed are skipped.
 */
export async function runFleet(index: FleetIndex, opts: { parallel: number; run: RunCluster; values: Values; io: Io; completed: (c: FleetIndexEntry) => boolean }): Promise<FleetRunResult[]> {
  const moving = index.clusters.filter((c) => c.plan);
  const canary = moving.find((c) => c.name === index.canary) ?? moving[0];
  const rest = moving.filter((c) => c !== canary);
  const waves: FleetIndexEntry[][] = [...(canary ? [[canary]] : [])];
  for (let i = 0; i < rest.length; i += opts.parallel) waves.push(rest.slice(i, i + opts.parallel));
  const results: FleetRunResult[] = [];
  let stop: string | undefined;
  for (const [w, wave] of waves.entries()) {
    if (stop) break;
    const codes = await Promise.all(wave.map(async (c) => {
      if (opts.completed(c)) return { name: c.name, code: ExitCode.ok, wave: w };
      const io = prefixedIo(opts.io, c.name);
      let code: number;
      try {
        code = await opts.run(c, opts.values, io, () => stop);
      } catch (e) {
        io.err(`error: ${redact(errorLine(e))}\n`);
        code = e instanceof UserError ? EXIT_CODE_OF_KIND[e.kind] : e instanceof NetError ? ExitCode.usage : ExitCode.internal;
      }
      // a failure (not a gate or a stop) stops every other cluster at its next step boundary
      if (code !== ExitCode.ok && code !== ExitCode.gate && !stop) stop = `cluster ${c.name} of the fleet failed (exit ${code}): stopped here, at a step boundary; fix it, then run apply --fleet again`;
      return { name: c.name, code, wave: w };
    }));
    results.push(...codes);
    if (codes.some((r) => r.code !== ExitCode.ok)) break;
  }
  return results;
}

/** Every line a cluster's run writes, on stderr, behind its name. */
function prefixedIo(io: Io, name: string): Io {
  const buf = { out: '', err: '' };
  const put = (k: 'out' | 'err') => (s: string) => {
    buf[k] += s;
    const lines = buf[k].split('\n');
    buf[k] = lines.pop()!;
    for (const l of lines) io.err(`[${name}] ${l}\n`);
  };
  return { ...io, out: put('out'), err: put('err'), stdoutTTY: false, stderrTTY: false };
}

/** The flags of apply --fleet that are the fleet's, not one cluster's. */
export const FLEET_RUN_FLAGS = { fleet: { type: 'string' }, 'parallel-clusters': { type: 'string' } } as const;

/** apply --fleet DIR (resume --fleet DIR): the fleet run; `runOne` is apply's run of one plan. */
export async function applyFleet(values: Values, io: Io, runOne: (values: Values, positionals: string[], io: Io, stopBefore: () => string | undefined) => Promise<number>): Promise<number> {
  const dir = str(values, 'fleet')!;
  for (const f of ['state-dir', 'only', 'skip', 'events', ...CLUSTER_FLAGS, 'from-file']) {
    if (values[f] !== undefined) throw new UsageError(`--${f} cannot go with --fleet (each cluster of the fleet runs its whole plan, with its state in ${join(dir, 'state')})`);
  }
  const parallel = intFlag(values, 'parallel-clusters', 1, 100) ?? 1;
  const output = parseOutput(str(values, 'output'));
  const index = readFleetIndex(dir);
  const acks = list(values, 'ack-gate');
  const plans = new Map(index.clusters.filter((c) => c.plan).map((c) => [c.name, planFromYaml(decodeText(readRegularFile(join(dir, c.plan!), 'plan', MAX_FLEET_BYTES)) ?? '', join(dir, c.plan!))]));
  const gates = new Set([...plans.values()].flatMap((p) => p.steps.filter((s) => s.kind === 'gate').map((s) => s.id)));
  for (const g of acks) if (!gates.has(g)) throw new UsageError(`--ack-gate ${JSON.stringify(g)} is not a gate of any plan of the fleet (${gates.size > 0 ? `gates: ${[...gates].join(', ')}` : 'they have no gates'})`);
  const results = await runFleet(index, {
    parallel, values, io,
    completed: (c) => clusterStatus(dir, c).state === 'completed',
    run: (c, v, cio, stopBefore) => {
      const cv = clusterValues(v, c);
      cv['state-dir'] = fleetStateDir(dir, c.name);
      // each plan acknowledges only the gates it has
      const own = plans.get(c.name)!.steps.filter((s) => s.kind === 'gate').map((s) => s.id);
      cv['ack-gate'] = acks.filter((g) => own.includes(g));
      mkdirSync(join(dir, 'state'), { recursive: true, mode: 0o700 });
      return runOne(cv, [join(dir, c.plan!)], cio, stopBefore);
    },
  });
  const byName = new Map(results.map((r) => [r.name, r]));
  const rows = index.clusters.map((c) => {
    const r = byName.get(c.name);
    const st = clusterStatus(dir, c);
    return { name: c.name, wave: r?.wave, exit: r?.code, state: st.state, done: st.done, steps: st.steps, ...(st.step ? { step: st.step } : {}) };
  });
  if (output === 'json' || output === 'yaml') io.out(renderData({ fleet: dir, clusters: rows }, output));
  else io.out(table(['cluster', 'wave', 'exit', 'state', 'steps done', 'step'], rows.map((r) => [
    `${r.name}${r.name === index.canary ? ' (canary)' : ''}`, r.wave === undefined ? '-' : r.wave, r.exit ?? '-', r.state, r.steps ? `${r.done}/${r.steps}` : '-', r.step ?? '-'])));
  const codes = results.map((r) => r.code).filter((c) => c !== ExitCode.ok);
  if (codes.length === 0) {
    const notRun = rows.filter((r) => r.steps > 0 && r.state !== 'completed');
    if (notRun.length === 0) return ExitCode.ok;
    return ExitCode.gate;
  }
  // a failure outranks a gate: the run needs a fix before it needs a person at a gate
  const failure = codes.find((c) => c !== ExitCode.gate);
  if (failure !== undefined) {
    io.err(`error: the fleet run stopped: ${results.filter((r) => r.code !== ExitCode.ok && r.code !== ExitCode.gate).map((r) => `${r.name} (exit ${r.code})`).join(', ')} failed; `
      + `the other clusters stopped at a step boundary; fix it and run kube-renumber apply --fleet ${dir} again\n`);
    return failure;
  }
  io.err(`the fleet run stopped at a gate in ${results.filter((r) => r.code === ExitCode.gate).map((r) => r.name).join(', ')}: do what it says, then run kube-renumber apply --fleet ${dir} again (with --ack-gate ID where the cluster cannot show it)\n`);
  return ExitCode.gate;
}
