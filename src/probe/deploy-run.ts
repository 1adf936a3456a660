/**
 * `kube-renumber probe --deploy`: create the ConfigMap and the Deployment (deploy.ts builds them), read every
 * probe pod's reports from its log while it runs, end the run (delete the Deployment: the pods get SIGTERM and print
 * their final reports, which are read while the pods terminate), delete the ConfigMap, merge the reports. The
 * objects are deleted on every way out: the end of --duration, a signal, a second signal, an error.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ErrorKind, errorLine, UsageError, UserError } from '../errors.ts';
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, UnreachableError, type KubeClient } from '../kube/client.ts';
import { collectionPath, CONFIGMAPS, listAll, objectPath, PODS, type ResourceType } from '../kube/resources.ts';
import { DEPLOYMENTS } from '../kube/workloads.ts';
import {
  buildProbeObjects, CONTAINER, mergeReports, objectName, parseReportLog, POD_LINGER_MS, readProgram, RUN_LABEL, runSelector,
  tailLinesFor, type MergedProbeReport, type PodProbeSettings,
} from './deploy.ts';
import type { ProbeReport } from './probe.ts';

export const RBAC_FILE = 'deploy/rbac-probe.yaml';

export interface DeployRunOptions {
  client: KubeClient;
  namespace: string;
  image: string;
  replicas: number;
  settings: PodProbeSettings;
  /** probe this long from the moment the first pod runs; undefined: until `stop` */
  durationMs?: number;
  /** the first SIGINT/SIGTERM: end the run (final reports, then clean up) */
  stop: AbortSignal;
  /** the second: stop waiting for final reports, clean up now */
  hardStop: AbortSignal;
  /** leave the Deployment and ConfigMap in place (for debugging) */
  keep?: boolean;
  /** give up when no pod runs after this long (default 120 s) */
  startTimeoutMs?: number;
  /** time between log reads while running (default: the report interval) */
  pollMs?: number;
  /** after the Deployment is deleted, wait this long at most for the pods' final reports (default linger + 5 s) */
  finalWaitMs?: number;
  /** how long to keep retrying the deletes while the API server is unreachable (default 60 s) */
  cleanupTimeoutMs?: number;
  /** the ConfigMap data (default: readProgram()) */
  program?: Record<string, string>;
  runId?: string;
  /** progress (-v) */
  progress?: (msg: string) => void;
  /** always shown (stderr) */
  warn?: (msg: string) => void;
  /** called once the objects exist (tests) */
  onCreated?: (names: { namespace: string; name: string; runId: string }) => void;
}

/** The run ended with a report, but the objects could not be deleted: print the report, then the error. */
export class ProbeCleanupError extends UserError {
  readonly report: MergedProbeReport | undefined;
  constructor(message: string, kind: ErrorKind, report: MergedProbeReport | undefined) {
    super(message, kind);
    this.name = 'ProbeCleanupError';
    this.report = report;
  }
}

interface Stored {
  pod: string;
  uid: string;
  report: ProbeReport;
}

/** The latest report of every probe run, keyed by pod uid and run start (a restarted container is a new run). */
export class ReportStore {
  readonly #runs = new Map<string, Stored>();

  add(pod: string, uid: string, report: ProbeReport): void {
    const key = `${uid}|${report.startedAt}`;
    const cur = this.#runs.get(key);
    if (cur && Date.parse(cur.report.endedAt) > Date.parse(report.endedAt)) return;
    if (cur && cur.report.stoppedBy !== 'running' && report.stoppedBy === 'running') return;
    this.#runs.set(key, { pod, uid, report });
  }

  /** The pod's latest run has its final report. */
  hasFinal(uid: string): boolean {
    let latest: Stored | undefined;
    for (const s of this.#runs.values()) {
      if (s.uid === uid && (!latest || Date.parse(s.report.startedAt) > Date.parse(latest.report.startedAt))) latest = s;
    }
    return !!latest && latest.report.stoppedBy !== 'running';
  }

  has(uid: string): boolean {
    for (const s of this.#runs.values()) if (s.uid === uid) return true;
    return false;
  }

  get size(): number { return this.#runs.size; }

  merged(stoppedBy: 'duration' | 'signal'): MergedProbeReport {
    return mergeReports([...this.#runs.values()].map((s) => ({
      report: s.report,
      source: { pod: s.pod, uid: s.uid, final: s.report.stoppedBy !== 'running' },
    })), stoppedBy);
  }
}

function forbidden(e: unknown): UserError | undefined {
  if (e instanceof KubeApiError && (e.status === 401 || e.status === 403)) {
    if (e.status === 401) return e;
    const what = `${e.method} ${e.path.replace(/\?.*$/, '')}`;
    return new UserError(`not allowed: ${what} (403 Forbidden); grant the permissions in ${RBAC_FILE}`, 'forbidden');
  }
  return undefined;
}

/** Worth retrying: the API server is restarting or overloaded. */
function transient(e: unknown): boolean {
  return e instanceof UnreachableError || (e instanceof KubeApiError && (e.status >= 500 || e.status === 429));
}

const containerStatus = (pod: KubeObject): any => (pod as any).status?.containerStatuses?.find((c: any) => c.name === CONTAINER);

/** Why a pod does not run yet, in a few words. */
function podWaitReason(pod: KubeObject): string {
  const p = pod as any;
  const cs = containerStatus(pod);
  const waiting = cs?.state?.waiting;
  if (waiting?.reason) return `${waiting.reason}${waiting.message ? `: ${String(waiting.message).split('\n')[0]}` : ''}`;
  const sched = (p.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled' && c.status === 'False');
  if (sched) return `not scheduled: ${sched.message ?? sched.reason}`;
  return p.status?.phase ?? 'Pending';
}

const isRunning = (pod: KubeObject) => (pod as any).status?.phase === 'Running' && !!containerStatus(pod)?.state?.running;

/** Run the probe in the cluster and return the merged report. Throws UserError (forbidden 5, unreachable 4, ...). */
export async function runDeployedProbe(o: DeployRunOptions): Promise<MergedProbeReport> {
  const { client, namespace } = o;
  const progress = o.progress ?? (() => {});
  const warn = o.warn ?? (() => {});
  const runId = o.runId ?? randomBytes(4).toString('hex');
  const name = objectName(runId);
  const program = o.program ?? readProgram();
  const { configMap, deployment } = buildProbeObjects({ namespace, runId, image: o.image, replicas: o.replicas, settings: o.settings, program });
  const pollMs = o.pollMs ?? Math.max(500, Math.min(o.settings.reportEveryMs, 5000));
  const k = o.settings.kinds;
  const resultCount = o.settings.services.length * k.filter((x) => x !== 'kubernetes' && x !== 'nodeport').length + (k.includes('kubernetes') ? 1 : 0)
    + (k.includes('nodeport') ? (o.settings.nodePorts ?? []).length : 0);
  const tailLines = tailLinesFor(resultCount);
  const store = new ReportStore();
  const warned = new Set<string>();
  const warnOnce = (key: string, msg: string) => { if (!warned.has(key)) { warned.add(key); warn(msg); } };
  const manual = `kubectl -n ${namespace} delete deployment,configmap -l ${RUN_LABEL}=${runId}`;

  const created = { configMap: false, deployment: false };
  let deploymentDeleted = false;
  let stoppedBy: 'duration' | 'signal' = 'signal';
  let failure: unknown;

  async function create(t: ResourceType, obj: KubeObject): Promise<void> {
    try {
      await client.request('POST', collectionPath(t, namespace), { body: obj });
    } catch (e) {
      const f = forbidden(e);
      if (f) throw f;
      if (e instanceof KubeApiError && e.status === 404) throw new UsageError(`namespace "${namespace}" does not exist (-n)`);
      if (e instanceof KubeApiError && (e.status === 422 || e.status === 400)) throw new UsageError(`the API server refused the probe ${obj.kind}: ${errorLine(e)}`);
      throw e;
    }
  }

  /** One round: list the run's pods and read the last report from each started one's log. */
  async function poll(): Promise<KubeObject[] | undefined> {
    let pods: KubeObject[];
    try {
      pods = await listAll(client, PODS, { namespace, labelSelector: runSelector(runId) });
    } catch (e) {
      const f = forbidden(e);
      if (f) throw f;
      if (!transient(e) && !(e instanceof KubeApiError)) throw e;
      progress(`listing the probe pods failed (will retry): ${errorLine(e)}`);
      return undefined;
    }
    await Promise.all(pods.map(async (pod) => {
      const podName = pod.metadata?.name ?? '';
      const uid = pod.metadata?.uid ?? podName;
      const cs = containerStatus(pod);
      if (!pod.spec?.nodeName || !cs || (!cs.state?.running && !cs.state?.terminated)) return;
      if (cs.restartCount > 0 && cs.lastState?.terminated && cs.lastState.terminated.exitCode !== 0) {
        warnOnce(`${uid}/restart/${cs.restartCount}`, `probe pod ${podName}: its container exited with code ${cs.lastState.terminated.exitCode} and was restarted (${cs.restartCount})`);
      }
      let text: string;
      try {
        text = await client.request<string>('GET', `${objectPath(PODS, podName, namespace)}/log`, {
          query: { container: CONTAINER, tailLines }, responseType: 'text', timeoutMs: 20_000,
        });
      } catch (e) {
        const f = forbidden(e);
        if (f) throw f;
        progress(`reading the log of ${podName} failed (will retry): ${errorLine(e)}`);
        return;
      }
      const { report, errors } = parseReportLog(text);
      if (report) {
        if (!store.has(uid)) progress(`probe pod ${podName} is reporting`);
        store.add(podName, uid, report);
      }
      for (const err of errors) warnOnce(`${uid}/${err}`, `probe pod ${podName}: ${err}`);
    }));
    return pods;
  }

  /** Wait `ms`, or less when `signal` aborts. */
  const wait = async (ms: number, signal: AbortSignal) => {
    if (ms <= 0 || signal.aborted) return;
    try { await sleep(ms, undefined, { signal }); } catch { /* aborted */ }
  };

  async function runUntilEnd(): Promise<'duration' | 'signal'> {
    const t0 = Date.now();
    const startTimeout = o.startTimeoutMs ?? 120_000;
    let endAt: number | undefined;
    let lastPods: KubeObject[] = [];
    for (;;) {
      const round = Date.now();
      const pods = await poll();
      if (pods) lastPods = pods;
      if (endAt === undefined && (lastPods.some(isRunning) || store.size > 0)) {
        endAt = o.durationMs === undefined ? Infinity : Date.now() + o.durationMs;
        progress(`probe pod${lastPods.length === 1 ? '' : 's'} running: ${lastPods.filter(isRunning).map((p) => p.metadata?.name).join(', ')}`);
      }
      if (o.stop.aborted) return 'signal';
      if (endAt === undefined && Date.now() - t0 > startTimeout) {
        const why = lastPods.length ? lastPods.map((p) => `${p.metadata?.name}: ${podWaitReason(p)}`).join('; ') : 'no pod was created';
        throw new UserError(`no probe pod started within ${Math.round(startTimeout / 1000)} s (${why})`, 'findings');
      }
      if (endAt !== undefined && Date.now() >= endAt) return 'duration';
      const next = Math.min(round + pollMs, endAt ?? Infinity);
      await wait(next - Date.now(), o.stop);
      if (o.stop.aborted) return 'signal';
      if (endAt !== undefined && Date.now() >= endAt) return 'duration';
    }
  }

  async function deleteDeployment(): Promise<void> {
    await client.request('DELETE', objectPath(DEPLOYMENTS, name, namespace), {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background' },
    }).catch((e: unknown) => { if (!(e instanceof KubeApiError && e.status === 404)) throw e; });
  }

  async function deleteConfigMap(): Promise<void> {
    await client.request('DELETE', objectPath(CONFIGMAPS, name, namespace), { body: { apiVersion: 'v1', kind: 'DeleteOptions' } })
      .catch((e: unknown) => { if (!(e instanceof KubeApiError && e.status === 404)) throw e; });
  }

  /** After the Deployment is gone: read every pod's final report while it terminates. */
  async function collectFinals(): Promise<void> {
    const deadline = Date.now() + (o.finalWaitMs ?? POD_LINGER_MS + 5000);
    while (!o.hardStop.aborted && Date.now() < deadline) {
      const pods = await poll();
      if (pods) {
        const waiting = pods.filter((p) => {
          const uid = p.metadata?.uid ?? '';
          const cs = containerStatus(p);
          const mayReport = store.has(uid) || !!cs?.state?.running;
          return mayReport && !store.hasFinal(uid) && !cs?.state?.terminated;
        });
        if (waiting.length === 0) return;
        progress(`waiting for the final report of ${waiting.map((p) => p.metadata?.name).join(', ')}`);
      }
      await wait(500, o.hardStop);
    }
    if (o.hardStop.aborted) progress('not waiting for the final reports');
  }

  /** Retry while the API server is unreachable or answers 5xx/429, for up to cleanupTimeoutMs. */
  async function withRetry(what: string, fn: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + (o.cleanupTimeoutMs ?? 60_000);
    for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
      try {
        await fn();
        return;
      } catch (e) {
        if (!transient(e) || Date.now() + delay > deadline) throw e;
        progress(`${what} failed (retrying): ${errorLine(e)}`);
        await sleep(delay);
      }
    }
  }

  try {
    await create(CONFIGMAPS, configMap);
    created.configMap = true;
    await create(DEPLOYMENTS, deployment);
    created.deployment = true;
    progress(`created ConfigMap and Deployment ${namespace}/${name} (image ${o.image}, ${o.replicas} replica${o.replicas === 1 ? '' : 's'})`);
    o.onCreated?.({ namespace, name, runId });
    stoppedBy = await runUntilEnd();
    if (o.keep) {
      await poll();
    } else {
      progress(`${stoppedBy === 'duration' ? 'duration reached' : 'stopping'}: deleting Deployment ${namespace}/${name}, reading the final reports`);
      // one attempt here; when it fails the cleanup below retries (and reports) it
      try {
        await deleteDeployment();
        deploymentDeleted = true;
      } catch (e) {
        const f = forbidden(e);
        if (f) throw f;
        progress(`deleting the Deployment failed: ${errorLine(e)}`);
      }
      if (deploymentDeleted) await collectFinals();
    }
  } catch (e) {
    failure = e;
  }

  // Clean up on every way out (unless --keep-deployment after a run that got going).
  let cleanupError: unknown;
  if (o.keep) {
    if (created.configMap || created.deployment) warn(`left ${created.deployment ? 'Deployment and ' : ''}ConfigMap ${namespace}/${name} in place (--keep-deployment); delete them with: ${manual}`);
  } else {
    const leftover: string[] = [];
    if (created.deployment && !deploymentDeleted) {
      try { await withRetry('deleting the Deployment', deleteDeployment); } catch (e) { cleanupError ??= e; leftover.push(`Deployment ${namespace}/${name}`); }
    }
    if (created.configMap) {
      try { await withRetry('deleting the ConfigMap', deleteConfigMap); } catch (e) { cleanupError ??= e; leftover.push(`ConfigMap ${namespace}/${name}`); }
    }
    if (created.configMap || created.deployment) progress(leftover.length ? `could not delete ${leftover.join(', ')}` : `deleted Deployment and ConfigMap ${namespace}/${name}`);
    if (cleanupError !== undefined) {
      const cause = errorLine(forbidden(cleanupError) ?? cleanupError);
      const code: ErrorKind = cleanupError instanceof UserError ? (forbidden(cleanupError)?.kind ?? cleanupError.kind) : 'internal';
      const msg = `could not delete ${leftover.join(' and ')} (${cause}); delete them with: ${manual}`;
      if (failure !== undefined) {
        const f = failure instanceof UserError ? failure : new UserError(errorLine(failure), 'internal');
        throw new UserError(`${errorLine(f)}; also ${msg}`, f.kind);
      }
      const report = store.size > 0 ? store.merged(stoppedBy) : undefined;
      throw new ProbeCleanupError(msg, code, report);
    }
  }
  if (failure !== undefined) throw failure;
  if (store.size === 0) throw new UserError(`no probe pod printed a report before the run ended (--keep-deployment leaves the pods to look at: kubectl -n ${namespace} logs -l ${RUN_LABEL}=${runId})`, 'findings');
  return store.merged(stoppedBy);
}
