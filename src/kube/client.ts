/**
 * The one port to the Kubernetes API. @kubernetes/client-node does kubeconfig parsing, authentication
 * (tokens, client certificates, exec plugins, OIDC) and TLS; everything above this file sees only
 * `KubeClient`: plain REST calls on paths, paginated lists, and errors mapped onto our exit codes.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  HttpMethod, IsomorphicFetchHttpLibrary, KubeConfig, RequestContext, type Cluster, type Context, type User,
} from '@kubernetes/client-node';
import { UsageError, UserError } from '../errors.ts';
import type { KubeObject } from '../cluster/types.ts';

export interface ConnectOptions {
  /** --kubeconfig: use exactly this file. */
  kubeconfig?: string;
  /** --context */
  context?: string;
  /** Per-request timeout (ms); default 30 s. */
  requestTimeoutMs?: number;
  /** Environment to resolve KUBECONFIG and in-cluster config from (tests pass their own). */
  env?: NodeJS.ProcessEnv;
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

/** A non-2xx answer from the API server. */
export class KubeApiError extends UserError {
  readonly status: number;
  readonly reason?: string;
  readonly method: string;
  readonly path: string;
  constructor(method: string, path: string, status: number, reason: string | undefined, message: string) {
    super(message, status === 401 || status === 403 ? 'forbidden' : 'internal');
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.method = method;
    this.path = path;
  }
}

export class UnreachableError extends UserError {
  constructor(message: string) {
    super(message, 'unreachable');
    this.name = 'UnreachableError';
  }
}

export interface KubeClient {
  /** The API server URL. */
  readonly server: string;
  /** The kubeconfig context in use ('' in-cluster). */
  readonly context: string;
  /** How many HTTP requests this client made (benchmarks divide by it). */
  readonly requestCount: number;
  request<T = any>(method: Method, path: string, opts?: RequestOptions): Promise<T>;
  /** Every item of a collection, fetched page by page (limit/continue); never one GET per object. */
  list(path: string, opts?: { labelSelector?: string; fieldSelector?: string; pageSize?: number }): AsyncGenerator<KubeObject>;
}

/**
 * Resolve the kubeconfig exactly as kubectl does: --kubeconfig names one file; else KUBECONFIG is a list of
 * files merged so that the first file to set a name (cluster, user, context) or current-context wins and
 * missing files are skipped; else ~/.kube/config; else the in-cluster service account.
 */
export function loadKubeConfig(opts: ConnectOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  const kc = new KubeConfig();
  const readOne = (file: string): KubeConfig => {
    const one = new KubeConfig();
    try {
      one.loadFromFile(file);
    } catch (e) {
      throw new UsageError(`cannot load kubeconfig ${file}: ${firstLine(e)}`);
    }
    return one;
  };
  if (opts.kubeconfig) {
    if (!existsSync(opts.kubeconfig)) throw new UsageError(`kubeconfig ${opts.kubeconfig} does not exist (check --kubeconfig)`);
    const one = readOne(opts.kubeconfig);
    kc.loadFromOptions({ clusters: one.clusters, users: one.users, contexts: one.contexts, currentContext: one.currentContext });
  } else if (env.KUBECONFIG && env.KUBECONFIG.length > 0) {
    const files = env.KUBECONFIG.split(delimiter).filter((f) => f && existsSync(f));
    if (files.length === 0) throw new UnreachableError(`none of the KUBECONFIG files exist (${env.KUBECONFIG}); set KUBECONFIG or use --kubeconfig or --from-file`);
    const clusters = new Map<string, Cluster>();
    const users = new Map<string, User>();
    const contexts = new Map<string, Context>();
    let current = '';
    for (const f of files) {
      const one = readOne(f);
      for (const c of one.clusters ?? []) if (!clusters.has(c.name)) clusters.set(c.name, c);
      for (const u of one.users ?? []) if (!users.has(u.name)) users.set(u.name, u);
      for (const c of one.contexts ?? []) if (!contexts.has(c.name)) contexts.set(c.name, c);
      if (!current && one.currentContext) current = one.currentContext;
    }
    kc.loadFromOptions({ clusters: [...clusters.values()], users: [...users.values()], contexts: [...contexts.values()], currentContext: current });
  } else {
    const home = env.HOME ?? homedir();
    const file = join(home, '.kube', 'config');
    if (existsSync(file)) {
      const one = readOne(file);
      kc.loadFromOptions({ clusters: one.clusters, users: one.users, contexts: one.contexts, currentContext: one.currentContext });
    } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
      kc.loadFromCluster();
    } else {
      throw new UnreachableError('no kubeconfig found (~/.kube/config, KUBECONFIG) and not running in a cluster: use --kubeconfig, or --from-file for offline input');
    }
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) {
      const names = kc.getContexts().map((c) => c.name).join(', ') || 'none';
      throw new UsageError(`context "${opts.context}" is not in the kubeconfig (contexts: ${names})`);
    }
    kc.setCurrentContext(opts.context);
  }
  if (!kc.getCurrentCluster()) {
    throw new UsageError(kc.currentContext
      ? `kubeconfig context "${kc.currentContext}" names no known cluster`
      : 'the kubeconfig has no current-context: pass --context');
  }
  return kc;
}

function firstLine(e: unknown): string {
  return String(e instanceof Error ? e.message : e).split('\n')[0]!;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'ERR_TLS_CERT_ALTNAME_INVALID']);

/** The most telling part of a network failure: a known error code, a timeout, else the innermost message. */
function networkCause(e: unknown): string {
  let cur: any = e;
  let innermost = firstLine(e);
  for (let i = 0; i < 6 && cur; i++) {
    if (cur.code && CONNECT_CODES.has(cur.code)) return `${cur.code}${cur.message ? `: ${firstLine(cur)}` : ''}`;
    if (cur.name === 'TimeoutError' || cur.name === 'AbortError') return 'request timed out';
    if (cur.message) innermost = firstLine(cur);
    cur = cur.cause;
  }
  return innermost;
}

export function connect(opts: ConnectOptions = {}): KubeClient {
  const kc = loadKubeConfig(opts);
  const cluster = kc.getCurrentCluster()!;
  const server = cluster.server.replace(/\/+$/, '');
  const http = new IsomorphicFetchHttpLibrary();
  const timeout = opts.requestTimeoutMs ?? 30_000;
  let count = 0;
  let dispatcher: ReturnType<RequestContext['getDispatcher']>;
  // Fault injection for the crash tests only: SIGKILL this process right after the Nth successful write
  // (Lease writes excluded), i.e. after the apiserver applied it and before anything else happened.
  const killAfter = Number((opts.env ?? process.env).KUBE_RENUMBER_TEST_KILL_AFTER_WRITES ?? 0);
  let writes = 0;

  async function request<T>(method: Method, path: string, ro: RequestOptions = {}): Promise<T> {
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(ro.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const ctx = new RequestContext(url.toString(), HttpMethod[method]);
    ctx.setHeaderParam('Accept', ro.responseType === 'text' ? 'text/plain, */*' : 'application/json');
    if (ro.body !== undefined) {
      ctx.setHeaderParam('Content-Type', ro.contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json'));
      ctx.setBody(typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body));
    }
    ctx.setSignal(AbortSignal.timeout(ro.timeoutMs ?? timeout));
    count++;
    let res;
    try {
      // Headers (tokens, exec plugins) are applied per request; the connection pool is kept: client-node
      // builds a new dispatcher on every call, which would open a new TLS connection per request.
      await kc.applySecurityAuthentication(ctx);
      if (dispatcher) ctx.setDispatcher(dispatcher);
      else dispatcher = ctx.getDispatcher();
      res = await http.send(ctx).toPromise();
    } catch (e) {
      const cause = networkCause(e);
      throw new UnreachableError(`cannot reach the API server ${server} (context "${kc.currentContext}"): ${cause}`);
    }
    const text = await res.body.text();
    if (res.httpStatusCode >= 200 && res.httpStatusCode < 300) {
      if (killAfter > 0 && method !== 'GET' && !path.includes('/leases') && ++writes >= killAfter) process.kill(process.pid, 'SIGKILL');
      if (ro.responseType === 'text') return text as T;
      return (text ? JSON.parse(text) : undefined) as T;
    }
    let status: any;
    try { status = JSON.parse(text); } catch { status = undefined; }
    const reason: string | undefined = status?.reason;
    const msg: string = status?.message ?? text.slice(0, 200);
    let message: string;
    if (res.httpStatusCode === 401) {
      message = `the API server ${server} rejected our credentials (401 Unauthorized): check the kubeconfig user of context "${kc.currentContext}"`;
    } else if (res.httpStatusCode === 403) {
      message = `not allowed: ${msg} (403 Forbidden); grant the permissions in deploy/rbac.yaml`;
    } else {
      message = `${method} ${path}: ${res.httpStatusCode} ${reason ?? ''} ${msg}`.replace(/\s+/g, ' ').trim();
    }
    throw new KubeApiError(method, path, res.httpStatusCode, reason, message);
  }

  async function* list(path: string, lo: { labelSelector?: string; fieldSelector?: string; pageSize?: number } = {}): AsyncGenerator<KubeObject> {
    let cont: string | undefined;
    do {
      const page: any = await request('GET', path, {
        query: { limit: lo.pageSize ?? 500, continue: cont, labelSelector: lo.labelSelector, fieldSelector: lo.fieldSelector },
      });
      const itemKind = typeof page?.kind === 'string' && page.kind.endsWith('List') ? page.kind.slice(0, -4) : undefined;
      for (const item of page?.items ?? []) {
        if (!item.kind && itemKind) item.kind = itemKind;
        if (!item.apiVersion && page.apiVersion) item.apiVersion = page.apiVersion;
        yield item as KubeObject;
      }
      cont = page?.metadata?.continue || undefined;
    } while (cont);
  }

  return {
    server,
    context: kc.currentContext ?? '',
    get requestCount() { return count; },
    request,
    list,
  };
}
