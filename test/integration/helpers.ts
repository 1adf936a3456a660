import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeClient } from '../../src/kube/client.ts';
import { compileCacheEnv } from '../child-env.ts';
import { seeded } from '../testbed/faults.ts';
import { run } from '../unit/run-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The built CLI (bin/kube-renumber.js) as a child process, so a test can SIGKILL it mid-run. */
export function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(ROOT, 'bin/kube-renumber.js'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

/**
 * The crash tests' kill points, one per run in turn: right after the run's first write was answered; with its first
 * write in flight (sent, its answer never read); between the first durable file's write and its fsync (a backup);
 * right after the first chunk of the run's state reached the cluster, before the write it protects.
 */
/** A named kill point: the environment that makes the CLI kill itself there. */
export interface KillPoint { name: string; env: NodeJS.ProcessEnv }

export const KILL_POINTS: readonly KillPoint[] = [
  { name: 'after a write', env: { KUBE_RENUMBER_TEST_KILL_AFTER_WRITES: '1' } },
  { name: 'write in flight', env: { KUBE_RENUMBER_TEST_KILL_IN_FLIGHT: '1' } },
  { name: 'after a write', env: { KUBE_RENUMBER_TEST_KILL_AFTER_WRITES: '1' } },
  { name: 'before a backup\'s fsync', env: { KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '1' } },
  { name: 'after a state chunk', env: { KUBE_RENUMBER_TEST_KILL_AT: 'POST:/namespaces/kube-renumber/secrets:1' } },
];

/**
 * How the crash tests sweep their kill points. `npm test` samples: run i takes kill point i (in turn); the first round
 * kills each point at its first matching write, as a full sweep does, so every point fires whatever the draw; after
 * it, each run dies at its Nth matching write, N drawn from 1..SAMPLE_STRIDE by a seeded generator, so the sweep kills
 * about once every 2.5 writes instead of at every one, and another seed kills at other writes. `npm run test:full`
 * (KUBE_RENUMBER_TEST_FULL=1) kills at every write (N = 1). KUBE_RENUMBER_TEST_SEED=S replays a sample: the seed is
 * printed at the start of every sweep and in every failure message.
 */
export const FULL_SWEEP = process.env.KUBE_RENUMBER_TEST_FULL === '1';
export const SAMPLE_STRIDE = 4;

/** A kill point's environment with its count set to `n`: every KILL_* variable's N (the Nth write, request or file). */
export function atNth(env: NodeJS.ProcessEnv, n: number): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (k === 'KUBE_RENUMBER_TEST_KILL_AT' || k === 'KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT') out[k] = v.replace(/^([A-Z]+:[^:]+:)\d+/, `$1${n}`);
    else if (k === 'KUBE_RENUMBER_TEST_KILL_AFTER_WRITES') out[k] = String(n);
    else if (k === 'KUBE_RENUMBER_TEST_KILL_IN_FLIGHT' || k === 'KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC' || k === 'KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC') out[k] = v.replace(/^\d+/, String(n));
    else out[k] = v;
  }
  return out;
}

/** One sweep's kill points, run after run: see FULL_SWEEP. */
export class KillSweep {
  readonly seed: number;
  readonly full: boolean;
  private readonly rng: () => number;
  /** What each run was given, for the failure messages. */
  readonly offsets: string[] = [];

  readonly what: string;
  readonly points: readonly KillPoint[];

  constructor(what: string, points: readonly KillPoint[] = KILL_POINTS, opts: { full?: boolean; seed?: number } = {}) {
    this.what = what;
    this.points = points;
    this.full = opts.full ?? FULL_SWEEP;
    const fromEnv = Number.parseInt(process.env.KUBE_RENUMBER_TEST_SEED ?? '', 10);
    this.seed = opts.seed ?? (Number.isFinite(fromEnv) ? fromEnv : Math.floor(Math.random() * 2 ** 31));
    this.rng = seeded(this.seed);
  }

  /**
   * The fewest kills a sweep that ran to the end must have made: `full` (a test's figure: its migration has at least that
   * many writes) for a full sweep; a sample guarantees only its first round, one kill per point.
   */
  minKills(full: number): number {
    return this.full ? full : Math.min(full, this.points.length);
  }

  /** The line printed at the start and added to failure messages: how to replay this sweep. */
  describe(): string {
    return this.full ? `${this.what}: full kill sweep (every write)`
      : `${this.what}: sampled kill sweep, seed ${this.seed} (KUBE_RENUMBER_TEST_SEED=${this.seed} replays it; KUBE_RENUMBER_TEST_FULL=1 kills at every write)`;
  }

  /** Run i's kill point and the environment that makes the CLI kill itself there. */
  next(i: number): { point: KillPoint; env: NodeJS.ProcessEnv; nth: number } {
    const point = this.points[i % this.points.length]!;
    const nth = this.full || i < this.points.length ? 1 : 1 + Math.floor(this.rng() * SAMPLE_STRIDE);
    this.offsets.push(`${i}: ${point.name} #${nth}`);
    return { point, env: nth === 1 ? point.env : atNth(point.env, nth), nth };
  }
}

/**
 * Run a sweep's test body; when it fails, the sweep (its seed) and the whole history of its runs are printed to stderr
 * and added to the error, so a failure in CI says how to replay it and what each killed run last did.
 */
export async function withHistory(sweep: KillSweep, history: readonly string[], body: () => Promise<void>): Promise<void> {
  process.stderr.write(`# ${sweep.describe()}\n`);
  try {
    await body();
  } catch (e) {
    const tail = `\n--- ${sweep.describe()}\n--- history of the runs:\n${history.join('\n')}\n--- kill offsets:\n${sweep.offsets.join('\n')}`;
    process.stderr.write(`${tail}\n`);
    if (e instanceof Error) e.message += tail;
    throw e;
  }
}

/** Kills by kill point, for the tests' figures: "after a write: 20, write in flight: 7, ...". */
export function killFigures(kills: Map<string, number>): string {
  return [...kills.entries()].map(([k, n]) => `${k}: ${n}`).join(', ');
}

interface Kubectl {
  kubectl(args: string[], opts?: { timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }>;
}

/**
 * What the hand-over of a namespace's pods looks like now, for a failure's message: each pod (phase, readiness, IP,
 * labels, owner), each ReplicaSet's counts, each Service with a UDP port, each EndpointSlice's addresses (udp-handover.ts
 * waits on these).
 */
export async function handoverPicture(tb: Kubectl, ns: string): Promise<string> {
  const get = async (kind: string) => {
    const r = await tb.kubectl(['get', kind, '-n', ns, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout).items as any[]) : [];
  };
  const [pods, rs, slices, services] = await Promise.all([get('pods'), get('replicasets'), get('endpointslices'), get('services')]);
  const ready = (p: any) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
  return [
    ...pods.map((p) => `pod ${p.metadata.name} ${p.status?.phase} ${ready(p) ? 'ready' : 'not-ready'} ${p.status?.podIP ?? 'no-ip'} node=${p.spec.nodeName ?? '-'}`
      + ` labels=${JSON.stringify(p.metadata.labels ?? {})} owner=${(p.metadata.ownerReferences ?? []).map((o: any) => `${o.kind}/${o.name}`).join(',') || '-'}`
      + `${p.metadata.deletionTimestamp ? ' terminating' : ''}`),
    ...rs.map((r) => `rs ${r.metadata.name} replicas ${r.spec.replicas}, status ${JSON.stringify({ replicas: r.status?.replicas, ready: r.status?.readyReplicas, observed: r.status?.observedGeneration, generation: r.metadata.generation })}`),
    ...services.filter((v) => (v.spec.ports ?? []).some((p: any) => p.protocol === 'UDP'))
      .map((v) => `UDP service ${v.metadata.name} ${v.spec.type} ${v.spec.clusterIP ?? '-'} selector=${JSON.stringify(v.spec.selector ?? null)}`),
    ...slices.map((s) => `slice ${s.metadata.name} of ${s.metadata.labels?.['kubernetes.io/service-name']}: `
      + `${(s.endpoints ?? []).map((e: any) => `${e.addresses?.join(',')}${e.conditions?.ready === false ? ' (not ready)' : ''} ${e.targetRef?.name ?? ''}`).join('; ')}`),
  ].join('\n');
}

/**
 * What a person does at the restart-workloads gate: `kubectl rollout restart` every Deployment, StatefulSet
 * and DaemonSet, delete bare pods, and wait for the rollouts.
 */
export async function restartAllWorkloads(tb: Kubectl): Promise<void> {
  const ns = (await tb.kubectl(['get', 'ns', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout.trim().split(/\s+/);
  const kinds = ['deployment', 'statefulset', 'daemonset'];
  for (const n of ns) {
    const names = (await tb.kubectl(['get', kinds.join(','), '-n', n, '-o', 'name'])).stdout.trim();
    if (names) await tb.kubectl(['rollout', 'restart', kinds.join(','), '-n', n]);
  }
  const pods = JSON.parse((await tb.kubectl(['get', 'pods', '-A', '-o', 'json'])).stdout).items;
  for (const p of pods) {
    if (!p.metadata.ownerReferences?.length) await tb.kubectl(['delete', 'pod', '-n', p.metadata.namespace, p.metadata.name, '--wait=false']);
  }
  const waits: Array<Promise<void>> = [];
  for (const n of ns) {
    const names = (await tb.kubectl(['get', kinds.join(','), '-n', n, '-o', 'name'])).stdout.trim().split('\n').filter(Boolean);
    for (const name of names) {
      waits.push(tb.kubectl(['rollout', 'status', name, '-n', n, '--timeout=300s'], { timeoutMs: 330_000 }).then(async (r) => {
        if (r.code === 0) return;
        const state = await tb.kubectl(['get', 'deploy,statefulset,daemonset,rs,pods', '-n', n, '-o', 'wide']);
        // why a pod is not scheduled or not ready: its conditions, and the namespace's latest events
        const pending = await tb.kubectl(['get', 'pods', '-n', n, '--field-selector=status.phase=Pending', '-o',
          'jsonpath={range .items[*]}{.metadata.name}: {.status.conditions}{"\\n"}{end}']);
        const events = await tb.kubectl(['get', 'events', '-n', n, '--sort-by=.lastTimestamp']);
        assert.fail(`rollout status ${n}/${name}: ${r.stderr}\n${state.stdout}\npending: ${pending.stdout}\n${events.stdout.split('\n').slice(-15).join('\n')}`);
      }));
    }
  }
  await Promise.all(waits);
}

/**
 * What a person does at the gates of a Service CIDR migration, once each: restart the apiservers with the new
 * range (restart-apiservers), and, for a plan written with --restart-workloads=manual, restart every workload
 * (gate restart-workloads; otherwise the run's own step restarts them). `stderr` is the stopped run's; a gate met
 * a second time, or any other stop, fails the test.
 */
export class ServiceGates {
  apiserverRestarted = false;
  workloadsRestarted = false;
  private readonly tb: Kubectl & { restartApiserver(o: { serviceCIDR: string }): Promise<unknown> };
  private readonly serviceCIDR: string;
  private readonly manualRestarts: boolean;
  constructor(tb: Kubectl & { restartApiserver(o: { serviceCIDR: string }): Promise<unknown> }, serviceCIDR: string, opts: { manualRestarts?: boolean } = {}) {
    this.tb = tb;
    this.serviceCIDR = serviceCIDR;
    this.manualRestarts = opts.manualRestarts ?? false;
  }
  async pass(stderr: string): Promise<void> {
    if (/gate restart-apiservers/.test(stderr) && !this.apiserverRestarted) {
      await this.tb.restartApiserver({ serviceCIDR: this.serviceCIDR });
      this.apiserverRestarted = true;
    } else if (/gate restart-workloads/.test(stderr) && this.manualRestarts && !this.workloadsRestarted) {
      await restartAllWorkloads(this.tb);
      this.workloadsRestarted = true;
    } else {
      assert.fail(`stuck at a gate: ${stderr}`);
    }
  }
  /** Every gate the plan has was passed (the workloads' only with --restart-workloads=manual). */
  get both(): boolean { return this.apiserverRestarted && (this.workloadsRestarted || !this.manualRestarts); }
}

/** A kubeconfig (0600) for `server` with a bearer token, e.g. a ServiceAccount's from `kubectl create token`. */
export function kubeconfigWithToken(server: string, token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kr-kc-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, [
    'apiVersion: v1', 'kind: Config', 'current-context: sa',
    `clusters: [{name: tb, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: sa, user: {token: "${token}"}}]`,
    'contexts: [{name: sa, context: {cluster: tb, user: sa}}]', '',
  ].join('\n'), { mode: 0o600 });
  return path;
}

/** Every Service of the cluster, keyed "namespace/name". */
export async function servicesByKey(tb: Kubectl): Promise<Map<string, any>> {
  const items = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
  return new Map(items.map((s: any) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
}

/** A Service's spec without its ClusterIPs: what a renumbering must leave unchanged. */
export function specWithoutIPs(s: any): Record<string, unknown> {
  const { clusterIP, clusterIPs, ...rest } = s.spec;
  void clusterIP; void clusterIPs;
  return rest;
}

/** A UDP DNS responder answering every A query with 127.0.0.1 (NODATA for other types). */
export async function dnsServer(): Promise<{ address: string; close(): void }> {
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    let at = 12;
    while (at < msg.length && msg[at] !== 0) at += msg[at]! + 1;
    const qtype = msg.readUInt16BE(at + 1);
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2);
    header.writeUInt16BE(1, 4);
    const answer = qtype === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
    header.writeUInt16BE(answer.length ? 1 : 0, 6);
    sock.send(Buffer.concat([header, msg.subarray(12, at + 5), answer]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return { address: `127.0.0.1:${sock.address().port}`, close: () => sock.close() };
}

/** Where a pod finds its ServiceAccount's token, CA and namespace. */
export const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The built CLI in a pod-like mount namespace: `secrets` (a directory) appears as SA_DIR, /run is a fresh tmpfs. */
export function inPod(args: string[], secrets: string | undefined, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  const script = [
    'set -e',
    'mount -t tmpfs kr-test /run',
    '[ "$(readlink -f /var/run)" = /run ] || mount -t tmpfs kr-test /var/run',
    ...(secrets ? [`mkdir -p ${SA_DIR}`, `cp "$KR_SECRETS"/* ${SA_DIR}/`] : []),
    'exec "$KR_NODE" "$KR_CLI" "$@"',
  ].join('\n');
  return new Promise((resolve) => {
    const p = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', ...args], {
      env: { PATH: process.env.PATH, ...compileCacheEnv(), KR_NODE: process.execPath, KR_CLI: join(ROOT, 'bin/kube-renumber.js'), KR_SECRETS: secrets ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

/**
 * `plan --service-cidr target --strategy strategy` of the cluster behind `kubeconfig` (the testbed's serving
 * certificate names 10.96.0.1 and 10.100.0.1), written to dir/plan-<strategy>.yaml; returns the path.
 */
export async function writeServicePlan(kubeconfig: string, dir: string, target: string, strategy: string): Promise<string> {
  const p = await run(['plan', '--kubeconfig', kubeconfig, '--service-cidr', target, '--strategy', strategy,
    '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
  assert.equal(p.code, 0, p.err);
  const path = join(dir, `plan-${strategy}.yaml`);
  writeFileSync(path, p.out);
  return path;
}

/**
 * Runs the Service plan at `planPath` uninterrupted up to step restart-workloads (left out with the steps after it):
 * apply stops at gate restart-apiservers, the testbed's apiserver restarts on `target`, resume runs to the end of the
 * part. `common` is the run's flags (kubeconfig, state directory, timeouts).
 */
export async function runUpToRestarts(tb: { restartApiserver(o: { serviceCIDR: string }): Promise<unknown> }, plan: { steps: Array<{ id: string }> },
  planPath: string, target: string, common: string[]): Promise<void> {
  const later = plan.steps.slice(plan.steps.findIndex((s) => s.id === 'restart-workloads')).map((s) => s.id).join(',');
  let r = await run(['apply', planPath, '--yes', '--skip', later, ...common]);
  assert.equal(r.code, 7, r.err.slice(-2000));
  assert.match(r.err, /stopped at gate restart-apiservers/);
  await tb.restartApiserver({ serviceCIDR: target });
  r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--skip', later, ...common]);
  assert.equal(r.code, 0, r.err.slice(-2000));
}

/**
 * Deployments (`ns/name`) whose pod template a Service with a UDP port selects: the run's restarts hand their pods
 * over one at a time (src/engine/udp-handover.ts) instead of rolling them out, so they get no new revision.
 */
export async function udpServedDeployments(tb: Kubectl): Promise<Set<string>> {
  const get = async (kind: string) => JSON.parse((await tb.kubectl(['get', kind, '-A', '-o', 'json'])).stdout).items as any[];
  const [deployments, services] = await Promise.all([get('deployments'), get('services')]);
  const out = new Set<string>();
  for (const d of deployments) {
    const labels: Record<string, string> = d.spec.template.metadata?.labels ?? {};
    const served = services.some((s) => s.metadata.namespace === d.metadata.namespace && s.spec.selector && Object.keys(s.spec.selector).length > 0
      && Object.entries(s.spec.selector).every(([k, v]) => labels[k] === v)
      && (s.spec.ports ?? []).some((p: any) => p.protocol === 'UDP'));
    if (served) out.add(`${d.metadata.namespace}/${d.metadata.name}`);
  }
  return out;
}

/**
 * A Deployment the run handed over: no rollout (revision `revisionBefore`, no restart annotation), none of
 * `podUidsBefore` left among its pods, no pod still held by a hand-over, and its replicas ready.
 */
export async function assertHandedOver(tb: Kubectl, key: string, revisionBefore: number, podUidsBefore: ReadonlySet<string>): Promise<void> {
  const [ns, name] = key.split('/');
  const d = JSON.parse((await tb.kubectl(['get', 'deployment', '-n', ns!, name!, '-o', 'json'])).stdout);
  assert.equal(Number(d.metadata.annotations['deployment.kubernetes.io/revision']), revisionBefore, `${key}: handed over, not rolled out`);
  assert.equal(d.spec.template.metadata.annotations?.['kube-renumber.io/restart'], undefined, `${key}: no rollout restart`);
  const pods = JSON.parse((await tb.kubectl(['get', 'pods', '-n', ns!, '-o', 'json'])).stdout).items as any[];
  const held = pods.filter((p) => p.metadata.labels?.['kube-renumber.io/handover'] !== undefined);
  assert.deepEqual(held.map((p) => p.metadata.name), [], `${key}: no pod still held by a hand-over`);
  const sel: Record<string, string> = d.spec.selector.matchLabels ?? {};
  const mine = pods.filter((p) => !p.metadata.deletionTimestamp && Object.entries(sel).every(([k, v]) => p.metadata.labels?.[k] === v));
  assert.deepEqual(mine.filter((p) => podUidsBefore.has(p.metadata.uid)).map((p) => p.metadata.name), [], `${key}: every pod from before replaced`);
  assert.equal(mine.length, d.spec.replicas, `${key}: ${mine.length} pods for ${d.spec.replicas} replicas`);
}

/**
 * Renews a Lease in kube-node-lease for every node every few seconds, as a kubelet does. The testbed's kwok
 * neither holds node Leases nor posts node status often enough: without this the node lifecycle controller
 * marks the nodes NotReady after its grace period and their pods NotReady for good (kwok does not make them
 * Ready again), and no rollout or budget would ever be satisfied after the first minute.
 */
export function renewNodeLeases(client: KubeClient, nodes: string[]): () => void {
  const base = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
  const microTime = () => new Date().toISOString().replace('Z', '000Z');
  const renew = async () => {
    for (const node of nodes) {
      try {
        await client.request('PATCH', `${base}/${node}`, { body: { spec: { renewTime: microTime() } } });
      } catch (e) {
        if ((e as { status?: number }).status !== 404) continue;
        await client.request('POST', base, { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: node, namespace: 'kube-node-lease' },
          spec: { holderIdentity: node, leaseDurationSeconds: 40, renewTime: microTime() } } }).catch(() => {});
      }
    }
  };
  void renew();
  const timer = setInterval(() => void renew(), 5000);
  return () => clearInterval(timer);
}
