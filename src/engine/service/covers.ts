/**
 * The covers of in-place moves (src/engine/covers.ts says what a cover is): raised for a batch before its
 * Services move, so the old and the new IP answer throughout, and lowered once the moved Services and their
 * bridges have the endpoints; and the reads of EndpointSlices they wait on (a watch, or LISTs per namespace or
 * across namespaces).
 */
import type { KubeObject } from '../../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../../kube/client.ts';
import { createObject, deleteObject, ENDPOINTSLICES, getObject, listAll, objectPath, SERVICES } from '../../kube/resources.ts';
import { formatIP, parseIP } from '../../net/index.ts';
import { coverName, MANAGED_LABEL, type StepItem } from '../../plan/plan.ts';
import { UserError } from '../../errors.ts';
import { COVER_FOR_LABEL, coverCarries, coverService, coverStatus, ownedHelper, pickSpares, readyAddresses, RUN_LABEL } from '../covers.ts';
import type { StepContext } from '../runner.ts';
import { SliceWatch } from '../slice-watch.ts';
import { mapLimit, poll, sleep, waitFor, withRetry } from '../toolkit.ts';
import { BridgeSteps } from './bridges.ts';
import { isIPTaken, itemKey, MANAGED_BY, type ServiceView } from './common.ts';

export class CoverSteps extends BridgeSteps {
  protected usesCovers(ctx: StepContext): boolean {
    return this.strategy === 'in-place' && this.opts.covers && ctx.dryRun === 'none';
  }

  /** Cover Services of these items that exist now (one LIST of every cover in the cluster). */
  async coversOf(client: KubeClient, items: readonly StepItem[]): Promise<KubeObject[]> {
    const keys = new Set(items.map(itemKey));
    const all = await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL });
    return all.filter((s) => keys.has(`${s.metadata?.namespace}/${s.metadata?.labels?.[COVER_FOR_LABEL]}`)
      && s.metadata?.name === coverName(s.metadata?.labels?.[COVER_FOR_LABEL] ?? '')
      && ownedHelper(s, COVER_FOR_LABEL, s.metadata?.labels?.[COVER_FOR_LABEL] ?? '', this.opts.token));
  }

  /**
   * Copies a selectorless Service's EndpointSlices to `to` (a cover or a bridge), unless already there; the first
   * copy is named `to` (move-kubernetes checks the bridge's slice by that name).
   */
  protected async copySlices(ctx: StepContext, namespace: string, from: string, to: string): Promise<void> {
    const mine = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${to}` });
    if (mine.length > 0) return;
    const src = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${from}` });
    for (const [i, sl] of src.entries()) {
      await withRetry(() => createObject(ctx.client, ENDPOINTSLICES, {
        apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
        metadata: { name: i === 0 ? to : `${to}-${i}`, namespace, labels: {
          'kubernetes.io/service-name': to, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY, [MANAGED_LABEL]: 'true',
          ...(this.opts.token ? { [RUN_LABEL]: this.opts.token } : {}) } },
        addressType: sl.addressType, endpoints: sl.endpoints ?? [], ports: sl.ports ?? [],
      })).catch((e) => { if (!(e instanceof KubeApiError && e.status === 409)) throw e; });
    }
  }

  /**
   * Puts up a cover for each item (old and new IPs answering through a LoadBalancer status), `concurrency` at
   * a time, waits until each has the Service's ready endpoints, then one propagation delay. Returns the keys of
   * the covered items; `covers` gets every cover object ("namespace/service" → cover). A cover already there
   * (an interrupted run) is reused.
   */
  protected async raiseCovers(ctx: StepContext, items: readonly StepItem[], view: ServiceView, covers: Map<string, KubeObject>): Promise<Set<string>> {
    const t0 = Date.now();
    let used: Set<string> | undefined;
    if (items.some((it) => !covers.has(itemKey(it)))) {
      used = new Set((await withRetry(() => listAll(ctx.client, this.IPADDR))).map((a) => formatIP(parseIP(a.metadata!.name!))));
      for (const m of this.plan.mapping) for (const ip of [...m.from, ...m.to]) used.add(formatIP(parseIP(ip)));
    }
    const covered = new Set<string>();
    await mapLimit(items, this.opts.concurrency, async (it) => {
      const orig = this.original(ctx, it, view.get(itemKey(it)));
      if (!orig) return; // moveItem reports it
      const name = coverName(it.name);
      let cover = covers.get(itemKey(it));
      for (let attempt = 1; !cover; attempt++) {
        const families = it.from.map((ip) => parseIP(ip).family);
        const spare = pickSpares(this.svc.target, families, used!, 1)[0];
        if (!spare) {
          ctx.warn?.(`no free address in ${this.svc.target.join(',')} for the cover of Service ${itemKey(it)}: it moves without one (old and new IP may not answer for up to kube-proxy's sync period)`);
          return;
        }
        try {
          // an existing Service of that name comes back from createObject: adopt() refuses it unless it is ours
          cover = this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, coverService(orig, name, spare, this.opts.token))), COVER_FOR_LABEL, it.name);
          ctx.log(`cover ${it.namespace}/${name} at ${spare.join(',')} for ${[...it.from, ...it.to].join(', ')}`);
        } catch (e) {
          if (e instanceof UserError && !(e instanceof KubeApiError)) throw e; // adopt() refused a cover not ours
          if (isIPTaken(e) && attempt < 5) {
            // A create whose answer was lost (the apiserver stored it): the cover itself holds the address. Adopt it
            // (refused unless it is this run's); else someone took the address since the IPAddress list: the next one.
            const existing = await withRetry(() => getObject(ctx.client, SERVICES, name, it.namespace));
            if (existing) cover = this.adopt(ctx, existing, COVER_FOR_LABEL, it.name);
            else for (const ip of spare) used!.add(formatIP(parseIP(ip)));
            continue;
          }
          throw new Error(`creating the cover Service ${it.namespace}/${name} (type LoadBalancer, loadBalancerClass kube-renumber.io/cover) failed: ${(e as Error).message}; `
            + 'allow it, or apply with --no-covers to move without covers (short blips per Service)');
        }
      }
      covers.set(itemKey(it), cover);
      if (!orig.spec?.selector || Object.keys(orig.spec.selector).length === 0) await this.copySlices(ctx, it.namespace, it.name, name);
      const want = [...it.from, ...it.to];
      if (!coverCarries(cover, want)) {
        const withStatus = await withRetry(() => ctx.client.request<KubeObject>('PATCH', `${objectPath(SERVICES, name, it.namespace)}/status`, {
          body: { status: coverStatus(want) }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kube-renumber' },
        }));
        if (withStatus?.metadata) covers.set(itemKey(it), withStatus);
      }
      covered.add(itemKey(it));
    });
    if (covered.size === 0) return covered;
    const list = items.filter((it) => covered.has(itemKey(it)));
    const t1 = Date.now();
    await this.untilSlices(ctx, 'the cover Services to have their Services\' ready endpoints', list.flatMap((it) => [it, { namespace: it.namespace, name: coverName(it.name) }]), (slices, note) => {
      const ready = (ns: string, name: string) => readyAddresses(slices.get(`${ns}/${name}`) ?? []);
      const behind = list.filter((it) => { const have = ready(it.namespace, coverName(it.name)); return [...ready(it.namespace, it.name)].some((a) => !have.has(a)); });
      if (behind.length > 0) note(`${behind.length} cover(s) behind, e.g. ${itemKey(behind[0]!)}`);
      return behind.length === 0;
    });
    ctx.log(`${list.length} cover(s) up (written in ${t1 - t0} ms, endpoints after ${Date.now() - t1} ms more); waiting ${this.opts.propagationDelayMs} ms for kube-proxy and DNS`);
    await waitFor('kube-proxy and DNS caches to pick up the covers (--propagation-delay)', this.opts.propagationDelayMs);
    return covered;
  }

  /**
   * Waits until `ready` holds for the EndpointSlices of these Services, read once and then followed by a watch
   * (./slice-watch.ts; LISTs in a loop where no watch can be had). Returns the slices it last saw.
   */
  protected async untilSlices(ctx: StepContext, what: string, services: ReadonlyArray<{ namespace: string; name: string }>,
    ready: (slices: ReadonlyMap<string, KubeObject[]>, note: (detail: string) => void) => boolean): Promise<Map<string, KubeObject[]>> {
    let view: SliceWatch | undefined;
    let last = new Map<string, KubeObject[]>();
    try {
      await poll(what, async (note) => {
        if (this.opts.watch) view ??= await SliceWatch.open(ctx.client, services);
        last = view ? await view.current() : await this.slicesByService(ctx.client, services);
        return ready(last, note) ? true : undefined;
      }, { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 1.5, maxIntervalMs: 250, tolerateTransient: true,
        sleep: (ms: number) => (view ? view.next(ms) : sleep(ms)) });
    } finally {
      view?.close();
    }
    return last;
  }

  /**
   * Takes down the covers of these items once each moved Service (new IP) and its bridge (old IP) have the
   * cover's ready endpoints, after one more propagation delay. `covers`: "namespace/service" → cover, as
   * raiseCovers left it or as the step saw them.
   */
  protected async lowerCovers(ctx: StepContext, items: readonly StepItem[], covers: ReadonlyMap<string, KubeObject>): Promise<void> {
    const list = items.filter((it) => covers.has(itemKey(it)));
    if (list.length === 0) return;
    const t0 = Date.now();
    const slices = await this.untilSlices(ctx, 'the moved Services and their bridges to have the covers\' ready endpoints', list.flatMap((it) => [it, { namespace: it.namespace, name: coverName(it.name) },
      ...(it.bridge ? [{ namespace: it.namespace, name: it.bridge }] : [])]), (sl, note) => {
      const size = (ns: string, name: string) => readyAddresses(sl.get(`${ns}/${name}`) ?? []).size;
      const behind = list.filter((it) => size(it.namespace, coverName(it.name)) > 0
        && (size(it.namespace, it.name) === 0 || (it.bridge !== undefined && size(it.namespace, it.bridge) === 0)));
      if (behind.length > 0) note(`${behind.length} behind, e.g. ${itemKey(behind[0]!)}`);
      return behind.length === 0;
    });
    ctx.log(`moved Services and bridges have their endpoints (after ${Date.now() - t0} ms); waiting ${this.opts.propagationDelayMs} ms before removing ${list.length} cover(s)`);
    await waitFor('kube-proxy and DNS caches to pick up the moved Services before the covers go (--propagation-delay)', this.opts.propagationDelayMs);
    await mapLimit(list, this.opts.concurrency, async (it) => {
      const c = covers.get(itemKey(it))!;
      const ns = c.metadata!.namespace!;
      const name = c.metadata!.name!;
      await withRetry(() => deleteObject(ctx.client, SERVICES, name, ns, { uid: c.metadata?.uid }));
      // our copies of a selectorless Service's slices; the EndpointSlice controller removes its own (which carry
      // the cover's labels, ours included, but not our managed-by)
      for (const sl of (slices.get(`${ns}/${name}`) ?? []).filter((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === MANAGED_BY)) {
        await withRetry(() => deleteObject(ctx.client, ENDPOINTSLICES, sl.metadata!.name!, ns, { uid: sl.metadata?.uid }));
      }
    });
  }

  /**
   * EndpointSlices of these Service names, by label selector (at most 100 names per request), in one namespace
   * or, with `namespace` undefined, in every namespace.
   */
  protected async slicesOf(client: KubeClient, namespace: string | undefined, names: readonly string[]): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    const uniq = [...new Set(names)];
    for (let i = 0; i < uniq.length; i += 100) {
      const sel = `kubernetes.io/service-name in (${uniq.slice(i, i + 100).join(',')})`;
      out.push(...await withRetry(() => listAll(client, ENDPOINTSLICES, { ...(namespace !== undefined ? { namespace } : {}), labelSelector: sel })));
    }
    return out;
  }

  /**
   * Read these namespaces' EndpointSlices with one LIST across all namespaces instead of one per namespace?
   * Only when they hold at least half of the Services the plan knows: the apiserver filters every slice of the
   * cluster for a cross-namespace LIST and only the namespace's for a namespaced one, so the one request then
   * costs it at most twice the work of the several.
   */
  clusterWideRead(namespaces: readonly string[]): boolean {
    if (namespaces.length < 2) return false;
    let inBatch = 0;
    let all = 0;
    for (const [ns, n] of this.namespaceSizes()) { all += n; if (namespaces.includes(ns)) inBatch += n; }
    return all > 0 && inBatch * 2 >= all;
  }

  /**
   * The EndpointSlices of these Service names, grouped by "namespace/service": one LIST per namespace, or one
   * across all namespaces when these namespaces hold most of the Services (clusterWideRead).
   */
  protected async slicesByService(client: KubeClient, names: ReadonlyArray<{ namespace: string; name: string }>): Promise<Map<string, KubeObject[]>> {
    const byNs = new Map<string, string[]>();
    for (const n of names) byNs.set(n.namespace, [...(byNs.get(n.namespace) ?? []), n.name]);
    const out = new Map<string, KubeObject[]>();
    const add = (ns: string | undefined, sl: KubeObject) => {
      const k = `${ns}/${sl.metadata?.labels?.['kubernetes.io/service-name']}`;
      out.set(k, [...(out.get(k) ?? []), sl]);
    };
    if (this.clusterWideRead([...byNs.keys()])) {
      const wanted = new Set(names.map(itemKey));
      // the same name in another namespace comes along; only the asked-for "namespace/name" pairs are kept
      for (const sl of await this.slicesOf(client, undefined, names.map((n) => n.name))) {
        if (wanted.has(`${sl.metadata?.namespace}/${sl.metadata?.labels?.['kubernetes.io/service-name']}`)) add(sl.metadata?.namespace, sl);
      }
      return out;
    }
    await Promise.all([...byNs].map(async ([ns, list]) => {
      for (const sl of await this.slicesOf(client, ns, list)) add(ns, sl);
    }));
    return out;
  }
}
