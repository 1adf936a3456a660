/**
 * The one port to the Kubernetes API. Everything above this file sees only `KubeClient`: plain REST calls on
 * paths, paginated lists, and errors mapped onto our exit codes. The kubeconfig is resolved and checked in
 * src/kube/kubeconfig.ts (client-node's KubeConfig objects, our own checks and messages), requests go through
 * src/kube/transport.ts (Node's http/https, any port, plain http, exec plugins with timeouts), and every
 * message is redacted (src/kube/redact.ts) before it leaves this layer.
 */
import { StringDecoder } from 'node:string_decoder';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ErrorKind } from '../errors.ts';
import type { KubeObject } from '../cluster/types.ts';
import { resolveKubeConfig, type KubeConfigOptions } from './kubeconfig.ts';
import { KubeApiError, UnreachableError } from './errors.ts';
import { AdaptiveLimiter, requestKind } from './limiter.ts';
import { isRetryableRead, parseRetryAfter, withRetry } from './retry.ts';
import { type SendResult, type StreamSink, Transport } from './transport.ts';

export { KubeApiError, UnreachableError } from './errors.ts';
export { checkOverrides, resolveKubeConfig, type ConnectionOverrides, type ResolvedKubeConfig } from './kubeconfig.ts';

/** The kubeconfig to resolve (--kubeconfig, --context, the connection flags, the environment) and how to send. */
export interface ConnectOptions extends KubeConfigOptions {
  /** Called with one line per HTTP request (kubectl's -v=6 line: verb, URL, status, time); default none. */
  trace?: (line: string) => void;
  /** Per-request timeout (ms); default 30 s. */
  requestTimeoutMs?: number;
  /**
   * The adaptive window every request but watches goes through (src/kube/limiter.ts); `false` for none (the
   * Lease's own client). Default: the process's one window for this apiserver, shared by every client of it.
   */
  limiter?: AdaptiveLimiter | false;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** For PATCH: application/merge-patch+json (default), application/json-patch+json, application/apply-patch+yaml. */
  contentType?: string;
  /** 'text': return the body as a string (pods/log answers text/plain); default 'json'. */
  responseType?: 'json' | 'text';
  /** Per-request timeout (ms) instead of the client's. */
  timeoutMs?: number;
}

export interface KubeClient {
  /** The API server URL. */
  readonly server: string;
  /** The kubeconfig context in use ('' in-cluster). */
  readonly context: string;
  /** How many HTTP requests this client made (benchmarks divide by it). */
  readonly requestCount: number;
  /** The adaptive window this client's requests go through, when it has one (wrappers pass their inner client's on). */
  readonly limiter?: AdaptiveLimiter;
  /**
   * One request. A GET that meets 429, 5xx or a reset connection is sent again (the server's Retry-After, else
   * back-off; no wait beyond the request timeout); other methods are sent once: their callers decide.
   */
  request<T = any>(method: Method, path: string, opts?: RequestOptions): Promise<T>;
  /**
   * Every item of a collection, fetched page by page (limit/continue); never one GET per object. A page that
   * fails is retried from the same continue token; an expired token (410) restarts the list, skipping the
   * objects already handed out.
   */
  list(path: string, opts?: { labelSelector?: string; fieldSelector?: string; pageSize?: number }): AsyncGenerator<KubeObject>;
  /**
   * A watch of a collection (`?watch=1`): one request whose answer streams events, each handed to `onEvent`
   * as it arrives (ERROR events included: a 410 there means "list again"). Resolves when the server ends the
   * stream (after `timeoutSeconds`) or when `signal` aborts it; a refusal (4xx/5xx) is a KubeApiError as for
   * `request`, a broken connection an UnreachableError. Not retried. Required of every client, wrappers
   * included: a wrapper that dropped it would turn every wait that watches into LISTs in a loop, unseen.
   */
  watch(path: string, opts: WatchOptions, onEvent: (event: WatchEvent) => void): Promise<void>;
}

export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Start after this resourceVersion (a LIST's), so no change between the LIST and the watch is missed. */
  resourceVersion?: string;
  /** The server ends the watch after this many seconds (default 60). */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export interface WatchEvent { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: KubeObject }

/**
 * Resolve the kubeconfig exactly as kubectl does: --kubeconfig names one file; else KUBECONFIG is a list of
 * files merged so that the first file to set a name (cluster, user, context) or current-context wins and
 * missing files are skipped; else ~/.kube/config; else the in-cluster service account. The result holds the
 * selected context, its cluster (server without userinfo) and user, all checked.
 */
export function loadKubeConfig(opts: ConnectOptions = {}): KubeConfig {
  return resolveKubeConfig(opts).kc;
}

/** One window per apiserver for the whole process: every client of a run (and of a command) waits in the same one. */
const limiters = new Map<string, AdaptiveLimiter>();
function sharedLimiter(server: string): AdaptiveLimiter {
  let l = limiters.get(server);
  if (!l) limiters.set(server, (l = new AdaptiveLimiter()));
  return l;
}

export function connect(opts: ConnectOptions = {}): KubeClient {
  const rk = resolveKubeConfig(opts);
  const env = opts.env ?? process.env;
  const transport = new Transport(rk, env, opts.trace);
  const server = rk.displayServer;
  const timeout = opts.requestTimeoutMs ?? 30_000;
  const limiter = opts.limiter === false ? undefined : opts.limiter ?? sharedLimiter(rk.server.href);
  let count = 0;
  // Fault injection for the crash tests only: SIGKILL this process right after the Nth successful write
  // (Lease writes excluded), i.e. after the apiserver applied it and before anything else happened.
  // The copy of the run's state kept in the cluster (namespace kube-renumber) is not counted either: each write of
  // the run is preceded by one, and a kill after that one is asked for by KUBE_RENUMBER_TEST_KILL_AT.
  const killAfter = Number(env.KUBE_RENUMBER_TEST_KILL_AFTER_WRITES ?? 0);
  let writes = 0;
  // KUBE_RENUMBER_TEST_KILL_AT=METHOD:PATH-PART:N[:BODY-PART]: SIGKILL right after the Nth successful request of
  // that method whose path (and body) contain the parts, e.g. DELETE:/services/:1 or PATCH:/services/:1:ExternalName.
  const killAt = /^([A-Z]+):([^:]+):(\d+)(?::(.+))?$/.exec(env.KUBE_RENUMBER_TEST_KILL_AT ?? '');
  let killAtCount = 0;
  // KUBE_RENUMBER_TEST_KILL_IN_FLIGHT=N[:MS]: SIGKILL MS ms (default: at once) after the Nth write is sent, before its
  // answer is read: the apiserver may or may not have applied it.
  const inFlight = /^(\d+)(?::(\d+))?$/.exec(env.KUBE_RENUMBER_TEST_KILL_IN_FLIGHT ?? '');
  let inFlightCount = 0;
  // KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT=METHOD:PATH-PART:N[:BODY-PART]: SIGKILL once the Nth request of that method
  // whose path (and body) contain the parts has been sent in full, before its answer is read: a kill mid-request at a
  // named write (e.g. PATCH:/nodes/n1:1:"unschedulable":false, an uncordon). The apiserver may or may not apply it.
  const inFlightAt = /^([A-Z]+):([^:]+):(\d+)(?::(.+))?$/.exec(env.KUBE_RENUMBER_TEST_KILL_IN_FLIGHT_AT ?? '');
  let inFlightAtCount = 0;
  const counted = (method: Method, path: string) => method !== 'GET' && !path.includes('/leases') && !path.includes('/namespaces/kube-renumber/')
    && !path.includes('/selfsubjectaccessreviews');

  async function request<T>(method: Method, path: string, ro: RequestOptions = {}): Promise<T> {
    if (method !== 'GET') return once<T>(method, path, ro);
    // Reads retry like writes (same policy), bounded by the request timeout: no wait ends after it.
    const deadline = Date.now() + (ro.timeoutMs ?? timeout);
    return withRetry(() => once<T>(method, path, ro), { attempts: 5, retryable: isRetryableRead, deadline });
  }

  async function once<T>(method: Method, path: string, ro: RequestOptions & { stream?: StreamSink } = {}): Promise<T> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(ro.query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v));
    const qs = params.toString();
    const full = qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
    const headers: Record<string, string> = { Accept: ro.responseType === 'text' ? 'text/plain, */*' : 'application/json' };
    let body: string | undefined;
    if (ro.body !== undefined) {
      headers['Content-Type'] = ro.contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
      body = typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body);
    }
    const timeoutMs = ro.timeoutMs ?? timeout;
    count++;
    if (inFlight && counted(method, path) && ++inFlightCount === Number(inFlight[1])) {
      const kill = () => process.kill(process.pid, 'SIGKILL');
      if (inFlight[2]) setTimeout(kill, Number(inFlight[2])); else setImmediate(kill);
    }
    const onSent = inFlightAt && method === inFlightAt[1] && path.includes(inFlightAt[2]!) && (!inFlightAt[4] || (body ?? '').includes(inFlightAt[4]))
      && ++inFlightAtCount === Number(inFlightAt[3]) ? () => process.kill(process.pid, 'SIGKILL') : undefined;
    // Every request but a watch waits for a slot of the run's window and tells it how the answer went.
    const send = async (): Promise<SendResult> => {
      if (!limiter || ro.stream) return transport.send(method, full, headers, body, timeoutMs, rk.context, ro.stream, onSent);
      const release = await limiter.acquire();
      const t0 = performance.now();
      const kind = requestKind(method, path, ro.query);
      try {
        const r = await transport.send(method, full, headers, body, timeoutMs, rk.context, undefined, onSent);
        if (r.priorityLevel) limiter.priorityLevel = r.priorityLevel;
        limiter.observe({
          kind, latencyMs: performance.now() - t0, status: r.status, apf: r.priorityLevel !== undefined,
          ...(r.status === 429 || r.status >= 500 ? { retryAfterMs: parseRetryAfter(r.retryAfter) } : {}),
          ...(r.status === 429 && path.endsWith('/eviction') && isBudgetRefusal(r.text) ? { budget: true } : {}),
        });
        return r;
      } catch (e) {
        limiter.observe({ kind, latencyMs: performance.now() - t0, status: 0, timedOut: /timed out/.test(String((e as Error)?.message)) });
        throw e;
      } finally {
        release();
      }
    };
    let res = await send();
    if (res.status === 401 && transport.refreshable) {
      // An exec plugin's token may have expired early: ask the plugin once more, like kubectl.
      transport.invalidate();
      count++;
      res = await send();
    }
    const text = res.text;
    if (res.status >= 200 && res.status < 300) {
      if (ro.stream) return undefined as T;
      if (killAfter > 0 && counted(method, path) && ++writes >= killAfter) process.kill(process.pid, 'SIGKILL');
      if (killAt && method === killAt[1] && path.includes(killAt[2]!) && (!killAt[4] || (body ?? '').includes(killAt[4]))
        && ++killAtCount >= Number(killAt[3])) process.kill(process.pid, 'SIGKILL');
      if (ro.responseType === 'text') return text as T;
      if (!text) return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new UnreachableError(`the server ${server} (context "${rk.context}") answered ${method} ${path} with something that is not JSON: is it a Kubernetes API server?`);
      }
    }
    let status: any;
    try { status = JSON.parse(text); } catch { status = undefined; }
    const isStatus = !!status && typeof status === 'object' && status.kind === 'Status';
    const reason: string | undefined = isStatus && typeof status.reason === 'string' ? status.reason : undefined;
    const msg: string = isStatus && typeof status.message === 'string' ? status.message : text.slice(0, 200);
    let message: string;
    let kind: ErrorKind | undefined;
    if (res.status === 401) {
      message = `the API server ${server} rejected our credentials (401 Unauthorized): check the kubeconfig user of context "${rk.context}"`;
    } else if (res.status === 403) {
      message = `not allowed: ${msg} (403 Forbidden); grant the permissions in deploy/rbac.yaml`;
    } else if (!isStatus) {
      // Not a Kubernetes Status: something else answers at this address (a web server, a proxy in trouble).
      message = `${method} ${path}: ${res.status} from ${server}, which did not answer like a Kubernetes API server: ${firstLine(msg).slice(0, 120)}`;
      kind = 'unreachable';
    } else {
      message = `${method} ${path}: ${res.status} ${reason ?? ''} ${msg}`.replace(/\s+/g, ' ').trim();
      if (res.status >= 500 || res.status === 429) kind = 'unreachable';
    }
    const retryAfterMs = res.status === 429 || res.status >= 500 ? parseRetryAfter(res.retryAfter) : undefined;
    throw new KubeApiError(method, path, res.status, reason, message, kind, retryAfterMs);
  }

  async function* list(path: string, lo: { labelSelector?: string; fieldSelector?: string; pageSize?: number } = {}): AsyncGenerator<KubeObject> {
    let cont: string | undefined;
    /** Objects handed out so far (uid, else namespace/name): a restarted list skips them. */
    const given = new Set<string>();
    let restarts = 0;
    for (;;) {
      let page: any;
      try {
        page = await request('GET', path, {
          query: { limit: lo.pageSize ?? 500, continue: cont, labelSelector: lo.labelSelector, fieldSelector: lo.fieldSelector },
        });
      } catch (e) {
        // The continue token expired (etcd compacted past it): list again from the start, like client-go's pager.
        if (cont !== undefined && e instanceof KubeApiError && e.status === 410 && restarts < 5) {
          restarts++;
          cont = undefined;
          continue;
        }
        throw e;
      }
      const itemKind = typeof page?.kind === 'string' && page.kind.endsWith('List') ? page.kind.slice(0, -4) : undefined;
      for (const item of page?.items ?? []) {
        const key = item?.metadata?.uid ?? `${item?.metadata?.namespace ?? ''}/${item?.metadata?.name ?? ''}`;
        if (given.has(key)) continue;
        given.add(key);
        if (!item.kind && itemKind) item.kind = itemKind;
        if (!item.apiVersion && page.apiVersion) item.apiVersion = page.apiVersion;
        yield item as KubeObject;
      }
      cont = page?.metadata?.continue || undefined;
      if (!cont) return;
    }
  }

  async function watch(path: string, wo: WatchOptions, onEvent: (event: WatchEvent) => void): Promise<void> {
    // The apiserver writes one JSON event per line.
    let pending = '';
    const decoder = new StringDecoder('utf8');
    let bad = false;
    const take = (text: string) => {
      pending += text;
      for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line === '' || bad) continue;
        let ev: WatchEvent;
        try { ev = JSON.parse(line) as WatchEvent; } catch { bad = true; continue; }
        onEvent(ev);
      }
    };
    await once('GET', path, {
      query: {
        watch: 1, labelSelector: wo.labelSelector, fieldSelector: wo.fieldSelector, resourceVersion: wo.resourceVersion,
        timeoutSeconds: wo.timeoutSeconds ?? 60, allowWatchBookmarks: true,
      },
      stream: { data: (d) => take(decoder.write(d)), ...(wo.signal ? { signal: wo.signal } : {}) },
    });
    if (!wo.signal?.aborted) take(`${decoder.end()}\n`);
    if (bad) throw new UnreachableError(`the server ${server} (context "${rk.context}") answered the watch GET ${path} with something that is not JSON: is it a Kubernetes API server?`);
  }

  return {
    server,
    context: rk.context,
    get requestCount() { return count; },
    ...(limiter ? { limiter } : {}),
    request,
    list,
    watch,
  };
}

/**
 * An eviction's 429 that is a PodDisruptionBudget saying no (Status details.causes type DisruptionBudget, the
 * apiserver's pod eviction REST handler), not the apiserver being overloaded.
 */
function isBudgetRefusal(text: string): boolean {
  try {
    const s = JSON.parse(text);
    return (s?.details?.causes ?? []).some((c: any) => c?.type === 'DisruptionBudget') || /disruption budget/i.test(String(s?.message ?? ''));
  } catch {
    return false;
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0]!;
}
