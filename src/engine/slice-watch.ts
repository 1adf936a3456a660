/**
 * The EndpointSlices of some Services, kept current by a watch instead of LISTs in a loop.
 *
 * `SliceWatch.open` reads them with one LIST per 100 Service names (`kubernetes.io/service-name in (…)`; in the
 * namespace when all the names are in one, else across namespaces, keeping only the asked-for
 * "namespace/name" pairs). The first `next()` opens one watch per such LIST, from the LIST's resourceVersion,
 * so no change in between is missed; every event updates the view and wakes `next()`. A wait that already
 * holds after the LIST costs that LIST alone; one that waits costs one more request per 100 names, however
 * long kube-controller-manager takes.
 *
 * When a watch cannot be had (the client has none, the RBAC role lacks `watch`, the stream breaks or the
 * server answers an ERROR event such as 410 Gone that a LIST does not cure), the view falls back to what
 * the engine did before: `current()` LISTs again after each `next()`.
 */
import type { KubeObject } from '../cluster/types.ts';
import type { KubeClient, WatchEvent } from '../kube/client.ts';
import { collectionPath, ENDPOINTSLICES } from '../kube/resources.ts';
import { withRetry } from './toolkit.ts';

const SERVICE_NAME = 'kubernetes.io/service-name';
/** Names per label selector (one LIST and one watch each). */
const NAMES_PER_SELECTOR = 100;
/** The server ends a watch after this long; it is then opened again from the last resourceVersion seen. */
const WATCH_SECONDS = 300;

const sliceKey = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const serviceKey = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.labels?.[SERVICE_NAME] ?? ''}`;

interface Selection {
  selector: string;
  /** slice "namespace/name" → slice, for the Services this selection asks for */
  slices: Map<string, KubeObject>;
  resourceVersion: string;
}

export class SliceWatch {
  private readonly client: KubeClient;
  private readonly path: string;
  private readonly wanted: Set<string>;
  private readonly selections: Selection[];
  private readonly stop = new AbortController();
  private started = false;
  /** The watches could not be kept: poll with LISTs. */
  private polling = false;
  private stale = false;
  private readonly waiters = new Set<() => void>();
  /** Watch requests opened (tests and logs). */
  watches = 0;

  /** 'watch' while the watches hold (or are yet to open), 'poll' once they could not be had. */
  get mode(): 'watch' | 'poll' { return this.polling ? 'poll' : 'watch'; }

  private constructor(client: KubeClient, path: string, wanted: Set<string>, selectors: string[]) {
    this.client = client;
    this.path = path;
    this.wanted = wanted;
    this.selections = selectors.map((selector) => ({ selector, slices: new Map(), resourceVersion: '' }));
  }

  /** The slices of these Services as they are now (the LISTs). */
  static async open(client: KubeClient, services: ReadonlyArray<{ namespace: string; name: string }>): Promise<SliceWatch> {
    const wanted = new Set(services.map((s) => `${s.namespace}/${s.name}`));
    const namespaces = new Set(services.map((s) => s.namespace));
    const names = [...new Set(services.map((s) => s.name))].sort();
    const selectors: string[] = [];
    for (let i = 0; i < names.length; i += NAMES_PER_SELECTOR) selectors.push(`${SERVICE_NAME} in (${names.slice(i, i + NAMES_PER_SELECTOR).join(',')})`);
    const path = collectionPath(ENDPOINTSLICES, namespaces.size === 1 ? [...namespaces][0] : undefined);
    const w = new SliceWatch(client, path, wanted, selectors);
    await Promise.all(w.selections.map((s) => w.list(s)));
    return w;
  }

  /** One LIST of a selection, page by page; its resourceVersion is where the watch starts. */
  private async list(sel: Selection): Promise<void> {
    const slices = new Map<string, KubeObject>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await withRetry(() => this.client.request<{ items?: KubeObject[]; metadata?: { continue?: string; resourceVersion?: string } }>('GET', this.path, {
        query: { labelSelector: sel.selector, limit: 500, continue: cont },
      }));
      for (const o of page?.items ?? []) if (this.wanted.has(serviceKey(o))) slices.set(sliceKey(o), o);
      if (cont === undefined) rv = page?.metadata?.resourceVersion ?? '';
      cont = page?.metadata?.continue || undefined;
    } while (cont !== undefined);
    sel.slices = slices;
    sel.resourceVersion = rv;
  }

  /** "namespace/service" → its slices, for the asked-for Services (LISTed again first when polling). */
  async current(): Promise<Map<string, KubeObject[]>> {
    if (this.polling && this.stale) {
      this.stale = false;
      await Promise.all(this.selections.map((s) => this.list(s)));
    }
    const out = new Map<string, KubeObject[]>();
    for (const sel of this.selections) {
      for (const o of sel.slices.values()) {
        const k = serviceKey(o);
        const l = out.get(k);
        if (l) l.push(o); else out.set(k, [o]);
      }
    }
    return out;
  }

  /** Until the next change (or `ms`, whichever comes first); opens the watches on the first call. */
  async next(ms: number): Promise<void> {
    if (!this.started && !this.polling) {
      this.started = true;
      if (typeof this.client.watch !== 'function') this.polling = true;
      else for (const sel of this.selections) void this.keep(sel);
    }
    await new Promise<void>((resolve) => {
      const done = () => { clearTimeout(t); this.waiters.delete(done); resolve(); };
      const t = setTimeout(done, ms);
      this.waiters.add(done);
    });
    if (this.polling) this.stale = true;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** One selection's watch, opened again each time the server ends it, until close(); any failure: polling. */
  private async keep(sel: Selection): Promise<void> {
    const signal = this.stop.signal;
    while (!signal.aborted && !this.polling) {
      let failed = false;
      try {
        this.watches++;
        await this.client.watch(this.path, { labelSelector: sel.selector, resourceVersion: sel.resourceVersion, timeoutSeconds: WATCH_SECONDS, signal }, (ev: WatchEvent) => {
          if (failed || signal.aborted) return;
          if (ev.type === 'ERROR') { failed = true; return; }
          const rv = ev.object?.metadata?.resourceVersion;
          if (rv) sel.resourceVersion = rv;
          if (ev.type === 'BOOKMARK') return;
          if (!this.wanted.has(serviceKey(ev.object))) return;
          if (ev.type === 'DELETED') sel.slices.delete(sliceKey(ev.object));
          else sel.slices.set(sliceKey(ev.object), ev.object);
          this.notify();
        });
      } catch {
        failed = true;
      }
      if (failed && !signal.aborted) {
        this.polling = true;
        this.stale = true;
        this.notify();
      }
    }
  }

  /** Ends the watches. */
  close(): void {
    this.stop.abort();
    this.notify();
  }
}
