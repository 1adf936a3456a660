// Minimal Kubernetes REST client for the testbed: bearer token over HTTPS, TLS verification off only
// when the server is a loopback address (the testbed's self-signed apiserver). No global TLS settings.

import { Agent, request as httpsRequest } from 'node:https';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
    generateName?: string;
    creationTimestamp?: string;
    ownerReferences?: unknown[];
    [k: string]: unknown;
  };
  spec?: any;
  status?: any;
  data?: Record<string, string>;
  [k: string]: unknown;
}

export interface KubeList<T = KubeObject> {
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

export class ApiError extends Error {
  status: number;
  reason: string | undefined;
  body: any;
  constructor(method: string, path: string, status: number, body: any) {
    const msg = typeof body === 'object' && body && typeof body.message === 'string' ? body.message : String(body);
    super(`${method} ${path}: HTTP ${status}: ${msg}`);
    this.name = 'ApiError';
    this.status = status;
    this.reason = typeof body === 'object' && body ? body.reason : undefined;
    this.body = body;
  }
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

interface ResourceInfo {
  group: string; // '' for core
  version: string;
  plural: string;
  namespaced: boolean;
}

/** The kinds the testbed and its tests create. */
const KINDS: Record<string, ResourceInfo> = {
  'v1/Namespace': { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  'v1/Node': { group: '', version: 'v1', plural: 'nodes', namespaced: false },
  'v1/Service': { group: '', version: 'v1', plural: 'services', namespaced: true },
  'v1/ConfigMap': { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  'v1/Pod': { group: '', version: 'v1', plural: 'pods', namespaced: true },
  'v1/ServiceAccount': { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true },
  'apps/v1/Deployment': { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  'apps/v1/StatefulSet': { group: 'apps', version: 'v1', plural: 'statefulsets', namespaced: true },
  'apps/v1/DaemonSet': { group: 'apps', version: 'v1', plural: 'daemonsets', namespaced: true },
  'policy/v1/PodDisruptionBudget': { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', namespaced: true },
  'networking.k8s.io/v1/ServiceCIDR': { group: 'networking.k8s.io', version: 'v1', plural: 'servicecidrs', namespaced: false },
  'networking.k8s.io/v1/IPAddress': { group: 'networking.k8s.io', version: 'v1', plural: 'ipaddresses', namespaced: false },
  'discovery.k8s.io/v1/EndpointSlice': { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true },
  'crd.projectcalico.org/v1/IPPool': { group: 'crd.projectcalico.org', version: 'v1', plural: 'ippools', namespaced: false },
};

export function resourcePath(apiVersion: string, kind: string, namespace?: string, name?: string): string {
  const info = KINDS[`${apiVersion}/${kind}`];
  if (!info) throw new Error(`testbed client does not know ${apiVersion} ${kind}`);
  const prefix = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced ? `/namespaces/${encodeURIComponent(namespace ?? 'default')}` : '';
  return `${prefix}${ns}/${info.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

export class KubeClient {
  readonly server: string;
  readonly token: string;
  #agent: Agent;
  #host: string;
  #port: number;

  constructor(server: string, token: string) {
    this.server = server;
    this.token = token;
    const u = new URL(server);
    this.#host = u.hostname;
    this.#port = Number(u.port || 443);
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: 32,
      rejectUnauthorized: !(LOOPBACK.has(u.hostname) || u.hostname.startsWith('127.')),
    });
  }

  /** Raw request. Resolves for every HTTP status; rejects only on transport errors. */
  raw(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    timeoutMs = 30_000,
  ): Promise<{ status: number; body: any; text: string }> {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: this.#host.replace(/^\[|\]$/g, ''),
          port: this.#port,
          method,
          path,
          agent: this.#agent,
          headers: {
            Authorization: `Bearer ${this.token}`,
            Accept: 'application/json',
            ...(payload !== undefined
              ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) }
              : {}),
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any = text;
            try {
              parsed = text.length ? JSON.parse(text) : undefined;
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, text });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out after ${timeoutMs} ms`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** Like raw() but throws ApiError for non-2xx; retries 429 (e.g. "storage is (re)initializing"
   *  right after a CRD is established) up to 10 times honouring retryAfterSeconds, as client-go does. */
  async request<T = any>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    let r = await this.raw(method, path, body, contentType);
    for (let i = 0; i < 10 && r.status === 429; i++) {
      const after = Number(r.body?.details?.retryAfterSeconds) || 1;
      await new Promise((res) => setTimeout(res, Math.min(after, 5) * 1000));
      r = await this.raw(method, path, body, contentType);
    }
    if (r.status < 200 || r.status >= 300) throw new ApiError(method, path, r.status, r.body ?? r.text);
    return r.body as T;
  }

  get<T = KubeObject>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  /** GET that returns undefined on 404. */
  async getOrUndefined<T = KubeObject>(path: string): Promise<T | undefined> {
    const r = await this.raw('GET', path);
    if (r.status === 404) return undefined;
    if (r.status < 200 || r.status >= 300) throw new ApiError('GET', path, r.status, r.body ?? r.text);
    return r.body as T;
  }

  list<T = KubeObject>(path: string): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', path);
  }

  post<T = KubeObject>(path: string, obj: unknown): Promise<T> {
    return this.request<T>('POST', path, obj);
  }

  put<T = KubeObject>(path: string, obj: unknown): Promise<T> {
    return this.request<T>('PUT', path, obj);
  }

  mergePatch<T = KubeObject>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, patch, 'application/merge-patch+json');
  }

  delete<T = any>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('DELETE', path, body);
  }

  /** Creates an object from its apiVersion/kind/metadata. */
  create<T extends KubeObject = KubeObject>(obj: T): Promise<T> {
    if (!obj.apiVersion || !obj.kind) throw new Error('create: object needs apiVersion and kind');
    return this.post<T>(resourcePath(obj.apiVersion, obj.kind, obj.metadata.namespace), obj);
  }

  /** Creates many objects with bounded parallelism, in order of dependency groups given by the caller. */
  async createAll(objs: KubeObject[], concurrency = 16): Promise<KubeObject[]> {
    const out: KubeObject[] = new Array(objs.length);
    let next = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= objs.length) return;
        out[i] = await this.create(objs[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, objs.length) }, worker));
    return out;
  }

  close(): void {
    this.#agent.destroy();
  }
}
