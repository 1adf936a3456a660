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
import { coverName, MANAGED_LABEL, nodePortCoverName, type StepItem } from '../../plan/plan.ts';
import type { NodePortCover } from '../../plan/nodeport-cover.ts';
import { NODES } from '../../kube/calico.ts';
import { UserError } from '../../errors.ts';
import {
  COVER_FOR_LABEL, coverCarries, coverIngress, coverService, coverStatus, nodePortCoverService, nodePortsOf, ownedHelper, pickSpares, readyAddresses, RUN_LABEL,
} from '../covers.ts';
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

  /** plan --nodeport-cover as recorded (undefined: off): `nodes`, or the addresses node-port covers list. */
  protected get nodePortCover(): NodePortCover | undefined {
    return this.plan.spec.options?.nodePortCover;
  }

  /**
   * The addresses a node-port cover lists: the plan's, or with `nodes` every Node's InternalIP and ExternalIP as
   * the apiserver shows them now (one LIST).
   */
  protected async nodePortCoverAddresses(ctx: StepContext): Promise<string[]> {
    const c = this.nodePortCover;
    if (c === undefined) return [];
    if (c !== 'nodes') return [...c];
    const out = new Set<string>();
    for (const n of await withRetry(() => listAll(ctx.client, NODES))) {
      for (const a of (n.status?.addresses ?? []) as { type?: string; address?: string }[]) {
        if ((a.type === 'InternalIP' || a.type === 'ExternalIP') && a.address) {
          try { out.add(formatIP(parseIP(a.address))); } catch { /* not an IP: skipped */ }
        }
      }
    }
    return [...out];
  }

  /**
   * Creates a cover-like Service named `name` for item `it` at spare ClusterIPs from the top of the new range
   * (`used`: addresses not to take; the one taken is added), adopting one of this run's already there. undefined
   * when the range has no spare left (warned).
   */
  private async createAtSpare(ctx: StepContext, it: StepItem, name: string, what: string, used: Set<string>,
    build: (spare: string[]) => KubeObject): Promise<KubeObject | undefined> {
    for (let attempt = 1; ; attempt++) {
      const families = it.from.map((ip) => parseIP(ip).family);
      const spare = pickSpares(this.svc.target, families, used, 1)[0];
      if (!spare) {
        ctx.warn?.(`no free address in ${this.svc.target.join(',')} for the ${what} of Service ${itemKey(it)}: it moves without one `
          + (what === 'cover' ? '(old and new IP may not answer for up to kube-proxy\'s sync period)' : '(its node ports may be refused for about a second on some nodes)'));
        return undefined;
      }
      try {
        // an existing Service of that name comes back from createObject: adopt() refuses it unless it is ours
        const o = this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, build(spare))), COVER_FOR_LABEL, it.name);
        ctx.log(`${what} ${it.namespace}/${name} at ${spare.join(',')} for ${what === 'cover' ? [...it.from, ...it.to].join(', ') : `the node ports of ${it.name}`}`);
        return o;
      } catch (e) {
        if (e instanceof UserError && !(e instanceof KubeApiError)) throw e; // adopt() refused a cover not ours
        if (isIPTaken(e) && attempt < 5) {
          // A create whose answer was lost (the apiserver stored it): the cover itself holds the address. Adopt it
          // (refused unless it is this run's); else someone took the address since the IPAddress list: the next one.
          const existing = await withRetry(() => getObject(ctx.client, SERVICES, name, it.namespace));
          if (existing) return this.adopt(ctx, existing, COVER_FOR_LABEL, it.name);
          for (const ip of spare) used.add(formatIP(parseIP(ip)));
          continue;
        }
        throw new Error(`creating the ${what} Service ${it.namespace}/${name} (type LoadBalancer, loadBalancerClass kube-renumber.io/cover) failed: ${(e as Error).message}; `
          + (what === 'cover' ? 'allow it, or apply with --no-covers to move without covers (short blips per Service)'
            : 'allow it, or plan again without --nodeport-cover (a node port may then be refused for about a second on some nodes)'));
      }
    }
  }

  /** Sets a cover's load-balancer status to `ips` unless it carries them; returns the cover as the write left it. */
  private async coverWithStatus(ctx: StepContext, cover: KubeObject, ips: readonly string[]): Promise<KubeObject> {
    if (coverCarries(cover, ips) && coverIngress(cover).length === new Set(ips.map((ip) => formatIP(parseIP(ip)))).size) return cover;
    const withStatus = await withRetry(() => ctx.client.request<KubeObject>('PATCH', `${objectPath(SERVICES, cover.metadata!.name!, cover.metadata!.namespace)}/status`, {
      body: { status: coverStatus(ips) }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kube-renumber' },
    }));
    return withStatus?.metadata ? withStatus : cover;
  }

  /**
   * Puts up a cover for each item (old and new IPs answering through a LoadBalancer status), `concurrency` at
   * a time, and with plan --nodeport-cover a node-port cover for each item with nodePorts (the node addresses
   * answering on its nodePorts); waits until each has the Service's ready endpoints, then one propagation delay.
   * Returns the keys of the covered items; `covers` / `nodePortCovers` get every cover object ("namespace/service"
   * → cover). A cover already there (an interrupted run) is reused.
   */
  protected async raiseCovers(ctx: StepContext, items: readonly StepItem[], view: ServiceView, covers: Map<string, KubeObject>,
    nodePortCovers: Map<string, KubeObject> = new Map()): Promise<Set<string>> {
    const t0 = Date.now();
    const origs = new Map(items.map((it) => [itemKey(it), this.original(ctx, it, view.get(itemKey(it)))]));
    const npItems = this.nodePortCover === undefined ? [] : items.filter((it) => nodePortsOf(origs.get(itemKey(it))).length > 0);
    const npAddresses = npItems.length > 0 ? await this.nodePortCoverAddresses(ctx) : [];
    if (npItems.length > 0 && npAddresses.length === 0) {
      throw new UserError(`--nodeport-cover ${this.nodePortCover === 'nodes' ? 'nodes' : ''}: no Node shows an InternalIP or ExternalIP address now; `
        + 'plan again with the addresses kube-proxy serves node ports on (--nodeport-cover IP[,IP...]) or without --nodeport-cover', 'verify');
    }
    let used: Set<string> | undefined;
    if (items.some((it) => !covers.has(itemKey(it))) || npItems.some((it) => !nodePortCovers.has(itemKey(it)))) {
      used = new Set((await withRetry(() => listAll(ctx.client, this.IPADDR))).map((a) => formatIP(parseIP(a.metadata!.name!))));
      for (const m of this.plan.mapping) for (const ip of [...m.from, ...m.to]) used.add(formatIP(parseIP(ip)));
    }
    const covered = new Set<string>();
    const npCovered = new Set<string>();
    await mapLimit(items, this.opts.concurrency, async (it) => {
      const orig = origs.get(itemKey(it));
      if (!orig) return; // moveItem reports it
      const selectorless = !orig.spec?.selector || Object.keys(orig.spec.selector).length === 0;
      const name = coverName(it.name);
      // one found up (a killed run) is journaled as this run's if it was not yet, so rollback may delete it
      const found = covers.get(itemKey(it));
      const cover = found ? this.adopt(ctx, found, COVER_FOR_LABEL, it.name) : await this.createAtSpare(ctx, it, name, 'cover', used!, (spare) => coverService(orig, name, spare, this.opts.token));
      if (cover) {
        covers.set(itemKey(it), cover);
        if (selectorless) await this.copySlices(ctx, it.namespace, it.name, name);
        covers.set(itemKey(it), await this.coverWithStatus(ctx, cover, [...it.from, ...it.to]));
        covered.add(itemKey(it));
      }
      if (!npItems.includes(it)) return;
      // the node-port cover: its families' node addresses (kube-proxy of one family ignores the other's)
      const families = new Set(it.from.map((ip) => parseIP(ip).family));
      const addrs = npAddresses.filter((a) => families.has(parseIP(a).family));
      if (addrs.length === 0) {
        ctx.warn?.(`--nodeport-cover: no address of Service ${itemKey(it)}'s famil${families.size > 1 ? 'ies' : 'y'} among ${npAddresses.join(', ')}: its node ports are not covered`);
        return;
      }
      const npName = nodePortCoverName(it.name);
      const npFound = nodePortCovers.get(itemKey(it));
      const np = npFound ? this.adopt(ctx, npFound, COVER_FOR_LABEL, it.name) : await this.createAtSpare(ctx, it, npName, 'node-port cover', used!, (spare) => nodePortCoverService(orig, npName, spare, this.opts.token));
      if (!np) return;
      nodePortCovers.set(itemKey(it), np);
      if (selectorless) await this.copySlices(ctx, it.namespace, it.name, npName);
      nodePortCovers.set(itemKey(it), await this.coverWithStatus(ctx, np, addrs));
      npCovered.add(itemKey(it));
    });
    if (covered.size === 0 && npCovered.size === 0) return covered;
    const list = items.filter((it) => covered.has(itemKey(it)));
    const npList = items.filter((it) => npCovered.has(itemKey(it)));
    const helpers = [...list.map((it) => ({ it, name: coverName(it.name) })), ...npList.map((it) => ({ it, name: nodePortCoverName(it.name) }))];
    const t1 = Date.now();
    await this.untilSlices(ctx, 'the cover Services to have their Services\' ready endpoints', [...new Map([...items.filter((it) => covered.has(itemKey(it)) || npCovered.has(itemKey(it))).map((it) => [itemKey(it), { namespace: it.namespace, name: it.name }] as const),
      ...helpers.map((h) => [`${h.it.namespace}/${h.name}`, { namespace: h.it.namespace, name: h.name }] as const)]).values()], (slices, note) => {
      const ready = (ns: string, name: string) => readyAddresses(slices.get(`${ns}/${name}`) ?? []);
      const behind = helpers.filter((h) => { const have = ready(h.it.namespace, h.name); return [...ready(h.it.namespace, h.it.name)].some((a) => !have.has(a)); });
      if (behind.length > 0) note(`${behind.length} cover(s) behind, e.g. ${behind[0]!.it.namespace}/${behind[0]!.name}`);
      return behind.length === 0;
    });
    ctx.log(`${list.length} cover(s)${npList.length > 0 ? ` and ${npList.length} node-port cover(s) (${npAddresses.length} address(es))` : ''} up `
      + `(written in ${t1 - t0} ms, endpoints after ${Date.now() - t1} ms more); waiting ${this.opts.propagationDelayMs} ms for kube-proxy and DNS`);
    await waitFor('kube-proxy and DNS caches to pick up the covers (--propagation-delay)', this.opts.propagationDelayMs);
    return covered;
  }

  /**
   * Waits until `ready` holds for the EndpointSlices of these Services, read once and then followed by a watch
   * (../slice-watch.ts; LISTs in a loop where no watch can be had). Returns the slices it last saw.
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
   * Takes down the covers (and node-port covers) of these items once each moved Service (new IP) and its bridge
   * (old IP) have the cover's ready endpoints, after one more propagation delay: by then every kube-proxy has had
   * its min-sync-period (1 s by default) and more to program the moved Service, its nodePorts included, so the
   * node-port cover goes only once the Service's own NodePort rules answer. `covers`, `nodePortCovers`:
   * "namespace/service" → cover, as raiseCovers left them or as the step saw them.
   */
  protected async lowerCovers(ctx: StepContext, items: readonly StepItem[], covers: ReadonlyMap<string, KubeObject>,
    nodePortCovers: ReadonlyMap<string, KubeObject> = new Map()): Promise<void> {
    const list = items.filter((it) => covers.has(itemKey(it)) || nodePortCovers.has(itemKey(it)));
    if (list.length === 0) return;
    const t0 = Date.now();
    const helpersOf = (it: StepItem) => [...(covers.has(itemKey(it)) ? [coverName(it.name)] : []), ...(nodePortCovers.has(itemKey(it)) ? [nodePortCoverName(it.name)] : [])];
    const slices = await this.untilSlices(ctx, 'the moved Services and their bridges to have the covers\' ready endpoints', list.flatMap((it) => [it,
      ...helpersOf(it).map((name) => ({ namespace: it.namespace, name })),
      ...(it.bridge ? [{ namespace: it.namespace, name: it.bridge }] : [])]), (sl, note) => {
      const size = (ns: string, name: string) => readyAddresses(sl.get(`${ns}/${name}`) ?? []).size;
      const behind = list.filter((it) => helpersOf(it).some((h) => size(it.namespace, h) > 0)
        && (size(it.namespace, it.name) === 0 || (it.bridge !== undefined && size(it.namespace, it.bridge) === 0)));
      if (behind.length > 0) note(`${behind.length} behind, e.g. ${itemKey(behind[0]!)}`);
      return behind.length === 0;
    });
    const what = [[list.filter((it) => covers.has(itemKey(it))).length, 'cover(s)'], [list.filter((it) => nodePortCovers.has(itemKey(it))).length, 'node-port cover(s)']]
      .filter(([n]) => n !== 0).map(([n, w]) => `${n} ${w}`).join(' and ');
    ctx.log(`moved Services and bridges have their endpoints (after ${Date.now() - t0} ms); waiting ${this.opts.propagationDelayMs} ms before removing ${what}`);
    await waitFor('kube-proxy and DNS caches to pick up the moved Services before the covers go (--propagation-delay)', this.opts.propagationDelayMs);
    await mapLimit(list.flatMap((it) => [covers.get(itemKey(it)), nodePortCovers.get(itemKey(it))].filter((c): c is KubeObject => !!c)), this.opts.concurrency, async (c) => {
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
   * Rollback's clean-up: deletes the covers and node-port covers of these items that this run created (its labels
   * and a uid journaled as created; uid precondition), with our copies of their slices. Any other object of those
   * names is left as it is.
   */
  protected async removeRunCovers(ctx: StepContext, items: readonly StepItem[]): Promise<void> {
    for (const it of items) {
      for (const name of [coverName(it.name), nodePortCoverName(it.name)]) {
        const c = await withRetry(() => getObject(ctx.client, SERVICES, name, it.namespace));
        if (!c || !ownedHelper(c, COVER_FOR_LABEL, it.name, this.opts.token) || !this.createdByThisRun(ctx, c)) continue;
        await withRetry(() => deleteObject(ctx.client, SERVICES, name, it.namespace, { uid: c.metadata?.uid }));
        for (const sl of await withRetry(() => listAll(ctx.client, ENDPOINTSLICES, { namespace: it.namespace, labelSelector: `kubernetes.io/service-name=${name}` }))) {
          if (sl.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] !== MANAGED_BY) continue;
          await withRetry(() => deleteObject(ctx.client, ENDPOINTSLICES, sl.metadata!.name!, it.namespace, { uid: sl.metadata?.uid }));
        }
        ctx.log(`rollback: removed ${name === coverName(it.name) ? 'cover' : 'node-port cover'} ${it.namespace}/${name}`);
      }
    }
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
