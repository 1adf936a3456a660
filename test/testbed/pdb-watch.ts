// PodDisruptionBudget watcher for tests, and the list+watch loop it (and calico-ipam.ts) is built on.
//
//   const w = watchPDBs(tb);                  // starts at once; `await w.ready` for the initial list
//   ... disrupt the cluster ...
//   const { observations, violations } = await w.stop();
//   assert.deepEqual(violations, []);
//
// A violation is recorded for every observed PDB state (initial list, ADDED, MODIFIED) in which
// status.observedGeneration == metadata.generation and status.currentHealthy < status.desiredHealthy,
// i.e. the disruption controller itself says the budget is broken. The watch is a real stream
// (?watch=1 from the list's resourceVersion) that reconnects from the last resourceVersion it saw (also
// across apiserver restarts) and lists again after 410 Gone, so no status update is missed. Start it
// after the workloads are up: a PDB whose pods are still starting is (correctly) in violation.

import { request as httpsRequest, Agent } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { KubeClient, KubeObject } from './kube.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ListWatchHandlers<T> {
  /** Called with the full list at start and after every re-list (410 Gone). */
  onList(items: T[]): void;
  onEvent(type: WatchEventType, obj: T): void;
  /** Transport problems (reconnects follow automatically). */
  onError?(err: unknown): void;
}

export interface ListWatch {
  /** Resolves after the first list was delivered. */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * List `path` (a collection path without query), then watch it from the list's resourceVersion.
 * Handlers run synchronously and in order. Reconnects after stream ends and errors.
 */
export function listWatch<T extends KubeObject = KubeObject>(
  client: KubeClient,
  path: string,
  handlers: ListWatchHandlers<T>,
): ListWatch {
  const url = new URL(client.server);
  const agent = new Agent({ keepAlive: false, rejectUnauthorized: !LOOPBACK.has(url.hostname) });
  let stopped = false;
  let current: ReturnType<typeof httpsRequest> | undefined;
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));
  const sep = path.includes('?') ? '&' : '?';

  const watchOnce = (rv: string): Promise<{ rv: string; gone: boolean }> =>
    new Promise((resolve) => {
      let last = rv;
      let gone = false;
      let closing = false;
      let buf = '';
      const done = () => resolve({ rv: last, gone });
      const req = httpsRequest(
        {
          host: url.hostname.replace(/^\[|\]$/g, ''),
          port: Number(url.port || 443),
          method: 'GET',
          path: `${path}${sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion=${encodeURIComponent(rv)}`,
          agent,
          headers: { Authorization: `Bearer ${client.token}`, Accept: 'application/json' },
        },
        (res: IncomingMessage) => {
          if (res.statusCode === 410) {
            gone = true;
            res.resume();
            res.on('end', done);
            return;
          }
          if (res.statusCode !== 200) {
            handlers.onError?.(new Error(`watch ${path}: HTTP ${res.statusCode}`));
            res.resume();
            res.on('end', () => sleep(500).then(done));
            return;
          }
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              let ev: { type: string; object: any };
              try {
                ev = JSON.parse(line);
              } catch (e) {
                handlers.onError?.(e);
                continue;
              }
              if (ev.type === 'ERROR') {
                if (ev.object?.code === 410) gone = true;
                else handlers.onError?.(new Error(`watch ${path}: ${JSON.stringify(ev.object)}`));
                closing = true;
                req.destroy();
                continue;
              }
              const objRv = ev.object?.metadata?.resourceVersion;
              if (objRv) last = objRv;
              if (ev.type === 'BOOKMARK') continue;
              if (gone || stopped) continue;
              try {
                handlers.onEvent(ev.type as WatchEventType, ev.object as T);
              } catch (e) {
                handlers.onError?.(e);
              }
            }
          });
          res.on('end', done);
          res.on('error', done);
          res.on('aborted', done);
        },
      );
      current = req;
      req.on('error', (e) => {
        if (!stopped && !closing) handlers.onError?.(e);
        // apiserver down (restart) or connection reset: back off a little
        sleep(stopped ? 0 : 300).then(done);
      });
      req.end();
    });

  const loop = (async () => {
    let rv: string | undefined;
    while (!stopped) {
      if (rv === undefined) {
        try {
          const list = await client.list<T>(path);
          if (stopped) break;
          rv = list.metadata.resourceVersion ?? '0';
          handlers.onList(list.items);
          resolveReady();
        } catch (e) {
          handlers.onError?.(e);
          await sleep(300);
          continue;
        }
      }
      const r = await watchOnce(rv);
      rv = r.gone ? undefined : r.rv;
    }
  })();

  return {
    ready,
    async stop() {
      stopped = true;
      current?.destroy();
      await loop;
      agent.destroy();
      resolveReady();
    },
  };
}

export interface PDBViolation {
  /** "namespace/name" */
  pdb: string;
  /** ISO time the violating state was observed. */
  at: string;
  currentHealthy: number;
  desiredHealthy: number;
}

export interface PDBWatchResult {
  /** PDB states looked at (initial list items + ADDED/MODIFIED events). */
  observations: number;
  violations: PDBViolation[];
}

export interface PDBWatcher {
  /** Resolves once the initial list has been checked. */
  readonly ready: Promise<void>;
  /** Violations so far (live view). */
  readonly violations: readonly PDBViolation[];
  stop(): Promise<PDBWatchResult>;
}

/** Watches policy/v1 PodDisruptionBudgets in all namespaces; see the file comment. */
export function watchPDBs(tb: { client: KubeClient }): PDBWatcher {
  let observations = 0;
  const violations: PDBViolation[] = [];
  const check = (p: KubeObject) => {
    observations++;
    const st = p.status ?? {};
    const gen = (p.metadata as { generation?: number }).generation;
    if (st.observedGeneration === undefined || st.observedGeneration !== gen) return;
    const current = Number(st.currentHealthy ?? 0);
    const desired = Number(st.desiredHealthy ?? 0);
    if (current < desired) {
      violations.push({
        pdb: `${p.metadata.namespace}/${p.metadata.name}`,
        at: new Date().toISOString(),
        currentHealthy: current,
        desiredHealthy: desired,
      });
    }
  };
  const lw = listWatch(tb.client, '/apis/policy/v1/poddisruptionbudgets', {
    onList: (items) => items.forEach(check),
    onEvent: (type, obj) => {
      if (type !== 'DELETED') check(obj);
    },
  });
  return {
    ready: lw.ready,
    violations,
    async stop() {
      await lw.stop();
      return { observations, violations: [...violations] };
    },
  };
}
