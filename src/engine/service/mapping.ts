/**
 * The mapping's moves: step move-services (each Service of a batch to its mapped IPs, in place through
 * ExternalName or by re-creating it, covered and bridged), its rollback (moveBack), and step sweep-services (the
 * Services the plan did not know that still hold an old-range IP, moved to an address the apiserver picks).
 */
import type { KubeObject } from '../../cluster/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { createObject, deleteObject, getObject, listAll, objectPath, SERVICES } from '../../kube/resources.ts';
import { contains, formatIP, parseCidr, parseIP } from '../../net/index.ts';
import { coverName, MANAGED_LABEL, nodePortCoverName, type PlanStep, type StepItem } from '../../plan/plan.ts';
import { UserError } from '../../errors.ts';
import { refOf } from '../backup.ts';
import { COVER_FOR_LABEL, ownedHelper } from '../covers.ts';
import type { Step, StepContext } from '../runner.ts';
import { mapLimit, poll, retryOnConflict, sleep, withRetry } from '../toolkit.ts';
import { BRIDGE_FOR_LABEL, ipsOf, itemKey, recreated, sameIPs, svcRef, type MoveEvidence, type ServiceView } from './common.ts';
import { CoverSteps } from './covers.ts';
import {
  batchDone, coversIn, decideMove, ipAddressProblem, IPADDRESS_REPAIR_WAIT_MS, itemDone, itemProblem, nodePortCoversIn, nodePortHolders, notOursError,
  onlyMissingIPAddresses, squatters, takenNodePorts, writtenAt,
} from './decisions.ts';

/** Merge patch with a resourceVersion precondition: a concurrent edit gives 409 instead of being overwritten. */
export async function patchService(client: KubeClient, cur: KubeObject, spec: Record<string, unknown>, dryRun: boolean): Promise<KubeObject> {
  return client.request<KubeObject>('PATCH', objectPath(SERVICES, cur.metadata!.name!, cur.metadata!.namespace), {
    body: { metadata: { resourceVersion: cur.metadata!.resourceVersion }, spec },
    contentType: 'application/merge-patch+json',
    query: { dryRun: dryRun ? 'All' : undefined, fieldManager: 'kube-renumber' },
  });
}

/** The spec fields that return a Service from ExternalName to what it was, at `ips`. */
export function backToType(orig: KubeObject, ips: string[]): Record<string, unknown> {
  const s = orig.spec ?? {};
  const out: Record<string, unknown> = {
    type: s.type ?? 'ClusterIP', externalName: null, clusterIP: ips[0], clusterIPs: ips, ports: s.ports,
  };
  for (const f of ['ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy', 'externalTrafficPolicy', 'sessionAffinity',
    'sessionAffinityConfig', 'healthCheckNodePort', 'allocateLoadBalancerNodePorts', 'trafficDistribution']) {
    if (s[f] !== undefined) out[f] = s[f];
  }
  return out;
}


export class MappingSteps extends CoverSteps {
  /**
   * What the cluster shows for these items: each Service, its bridge and its cover, by "namespace/name"
   * (undefined: looked for and absent). Per namespace one LIST of its Services, or, for a namespace much larger
   * than the batch, one GET per Service plus one LIST of our own (bridges, covers). Never a read per object
   * and phase: check, backup and apply of a step share one view.
   */
  async observe(client: KubeClient, items: readonly StepItem[]): Promise<ServiceView> {
    const view: ServiceView = new Map();
    const byNs = new Map<string, StepItem[]>();
    for (const it of items) {
      byNs.set(it.namespace, [...(byNs.get(it.namespace) ?? []), it]);
      for (const n of [it.name, it.bridge, coverName(it.name), nodePortCoverName(it.name)]) if (n) view.set(`${it.namespace}/${n}`, undefined);
    }
    await Promise.all([...byNs].map(async ([ns, list]) => {
      const keep = (s: KubeObject) => { const k = `${ns}/${s.metadata?.name}`; if (view.has(k)) view.set(k, s); };
      if (this.listWholeNamespace(ns, list.length)) {
        for (const s of await withRetry(() => listAll(client, SERVICES, { namespace: ns }))) keep(s);
        return;
      }
      for (const s of await withRetry(() => listAll(client, SERVICES, { namespace: ns, labelSelector: `${MANAGED_LABEL}=true` }))) keep(s);
      await mapLimit(list, this.opts.concurrency, async (it) => {
        view.set(itemKey(it), await withRetry(() => getObject(client, SERVICES, it.name, ns)));
      });
    }));
    return view;
  }

  /** Move one Service to its mapped IPs, reading it first; safe to call again at any point of a previous attempt. */
  async moveOne(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate', externalName?: string): Promise<MoveEvidence> {
    const [svc, bridge] = await Promise.all([
      withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace)),
      it.bridge ? withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace)) : undefined,
    ]);
    return this.moveItem(ctx, it, strategy, { svc, bridge }, externalName);
  }

  /**
   * Move one Service from what was just seen of it and its bridge (the writes carry the seen resourceVersion
   * and uid as preconditions: a 409 re-reads both and decides again). Returns the objects the last writes
   * returned, which show the end state without another read.
   */
  async moveItem(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate', seen: { svc?: KubeObject; bridge?: KubeObject }, externalName?: string): Promise<MoveEvidence> {
    const dry = ctx.dryRun === 'server';
    let { svc: cur, bridge } = seen;
    return retryOnConflict(`Service ${it.namespace}/${it.name}`, async (attempt) => {
      if (attempt > 1) {
        [cur, bridge] = await Promise.all([
          withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace)),
          it.bridge ? withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace)) : undefined,
        ]);
      }
      const orig = this.original(ctx, it, cur);
      if (!orig) throw new Error(`Service ${it.namespace}/${it.name} is gone and has no backup`);
      const d = decideMove(it, cur, strategy);
      switch (d.action) {
        case 'conflict':
          throw new Error(d.message);
        case 'ensure-bridge':
          return { service: cur, bridge: await this.ensureBridge(ctx, orig, it, bridge), wrote: false };
        case 'delete': {
          await withRetry(() => deleteObject(ctx.client, SERVICES, it.name, it.namespace, { uid: cur!.metadata?.uid, dryRun: dry }));
          if (dry) return { wrote: true };
          await poll(`Service ${it.namespace}/${it.name} to be deleted`, async () => ((await getObject(ctx.client, SERVICES, it.name, it.namespace)) ? undefined : true),
            { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 2, maxIntervalMs: 500 });
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry })), bridge: b, wrote: true };
        }
        case 'create': {
          // a recreate was interrupted earlier, or someone deleted it: put it back at the new IP
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry })), bridge: b, wrote: true };
        }
        case 'external-name': {
          const target = externalName ?? this.fqdn(it.bridge ?? it.name, it.namespace);
          const now = await withRetry(() => patchService(ctx.client, cur!, { type: 'ExternalName', externalName: target }, dry));
          if (dry) return { wrote: true };
          cur = now;
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await this.patchBack(ctx, it, now, orig), bridge: b, wrote: true };
        }
        case 'back': {
          const b = await this.ensureBridge(ctx, orig, it, bridge);
          return { service: await this.patchBack(ctx, it, cur!, orig), bridge: b, wrote: true };
        }
      }
    });
  }

  /**
   * The last write of an in-place move: the Service back to its type at the mapped IPs, with its nodePorts. Going
   * ExternalName released those nodePorts, so the apiserver may refuse one as already allocated:
   * - another Service took it in between: stop, naming it (the Service stays ExternalName, reached through its
   *   cover and bridge, but not on its nodePort, until the port is freed and the run resumed);
   * - no Service holds it: the apiserver leaked it. It does when a write that releases the port is cut off
   *   mid-request (a crashed run, a dropped connection): the Service is stored, the release is rolled back. Its
   *   nodePort repair loop frees a leaked port on its third pass, 3 minutes apart (6–9 minutes): wait for that,
   *   asking again every 15 s, up to nodePortLeakWaitMs.
   */
  protected async patchBack(ctx: StepContext, it: StepItem, cur: KubeObject, orig: KubeObject): Promise<KubeObject> {
    const dry = ctx.dryRun === 'server';
    const t0 = Date.now();
    for (let warned = false; ;) {
      try {
        return await withRetry(() => patchService(ctx.client, cur, backToType(orig, it.to), dry));
      } catch (e) {
        const ports = takenNodePorts(e);
        if (ports.length === 0 || dry) throw e;
        const holders = nodePortHolders(await withRetry(() => listAll(ctx.client, SERVICES)), ports, it);
        const what = `nodePort ${ports.join(', ')} of Service ${itemKey(it)}`;
        if (holders.size > 0) {
          throw new Error(`${what} was taken by ${[...holders.keys()].map((h) => `Service ${h}`).join(', ')} while ${itemKey(it)} was ExternalName `
            + `(between the two writes of its move): free the port, then resume; until then ${itemKey(it)} answers on its ClusterIPs (through its bridge and cover) but not on that nodePort`);
        }
        const waited = Date.now() - t0;
        if (waited >= this.opts.nodePortLeakWaitMs) {
          throw new Error(`${what} is still refused as allocated after ${Math.round(waited / 1000)} s though no Service holds it (leaked by the apiserver): `
            + `resume once its nodePort repair loop has freed it (it runs every 3 minutes and frees a leaked port on its third pass)`);
        }
        if (!warned) {
          ctx.warn?.(`${what} is refused as allocated though no Service holds it: the apiserver leaked it when an earlier write of this Service was cut off; `
            + `waiting for its nodePort repair loop to free it (6–9 minutes), at most ${Math.round(this.opts.nodePortLeakWaitMs / 1000)} s`);
          warned = true;
        }
        // every 15 s at the default wait; shorter waits ask proportionally more often
        await sleep(Math.min(15_000, this.opts.nodePortLeakWaitMs / 8, Math.max(0, this.opts.nodePortLeakWaitMs - waited)));
      }
    }
  }

  /** Problems of a moved batch as the cluster shows it; IPAddress objects read only for moves this process did not write. */
  protected async batchProblems(client: KubeClient, items: readonly StepItem[], evidence: ReadonlyMap<string, MoveEvidence>): Promise<string[]> {
    const view = await this.observe(client, items);
    const covers = [...coversIn(view, items), ...nodePortCoversIn(view, items)];
    if (covers.length > 0) return [`${covers.length} cover Service(s) left, e.g. ${covers[0]!.metadata?.namespace}/${covers[0]!.metadata?.name}`];
    const problems: string[] = [];
    for (const it of items) {
      const p = itemProblem(it, view.get(itemKey(it)), it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined);
      if (p) problems.push(p);
    }
    if (problems.length > 0) return problems;
    // The apiserver allocates the IPAddress objects of a ClusterIP in the same request that sets it, so a write
    // of ours that returned the Service at its mapped IPs shows them; for the others, read them.
    await mapLimit(items.filter((it) => !writtenAt(evidence.get(itemKey(it)), it.to)), this.opts.concurrency, async (it) => {
      for (const ip of it.to) {
        const problem = ipAddressProblem(ip, it, await withRetry(() => getObject(client, this.IPADDR, formatIP(parseIP(ip)))));
        if (problem) problems.push(problem);
      }
    });
    const withSelector = items.filter((it) => { const s = view.get(itemKey(it)); return s?.spec?.selector && Object.keys(s.spec.selector).length > 0; });
    if (withSelector.length > 0) {
      const slices = await this.slicesByService(client, withSelector);
      for (const it of withSelector) if (!slices.get(itemKey(it))?.length) problems.push(`Service ${it.namespace}/${it.name} has no EndpointSlice`);
    }
    return problems;
  }

  protected moveServicesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const strategy = this.strategy;
    // check, backup and apply of one run of the step share what check read (writes carry preconditions)
    let fresh: { view: ServiceView; at: number } | undefined;
    const take = async (client: KubeClient, keep: boolean): Promise<ServiceView> => {
      const f = fresh && Date.now() - fresh.at < 60_000 ? fresh.view : await this.observe(client, items);
      fresh = keep ? { view: f, at: fresh?.at ?? Date.now() } : undefined;
      return f;
    };
    let evidence = new Map<string, MoveEvidence>();
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        const view = await this.observe(ctx.client, items);
        fresh = { view, at: Date.now() };
        return batchDone(view, items);
      },
      backup: async (ctx) => {
        const view = await take(ctx.client, true);
        return items.map((it) => view.get(itemKey(it)))
          .filter((o): o is KubeObject => !!o && o.spec?.type !== 'ExternalName' && sameIPs(ipsOf(o), this.fromOf(items, o)))
          .map((o) => ({ ...o, apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'Service' }));
      },
      apply: async (ctx) => {
        const view = await take(ctx.client, false);
        evidence = new Map();
        // a Service named like one of our bridges or covers that is not this run's stops the step before any write
        const foreign = squatters(view, items, this.opts.token);
        if (foreign.length > 0) throw notOursError(foreign, this.opts.token, (k) => view.get(k));
        const seen = (it: StepItem) => ({ svc: view.get(itemKey(it)), bridge: it.bridge ? view.get(`${it.namespace}/${it.bridge}`) : undefined });
        let moved = 0;
        const count = () => ctx.progress?.({ type: 'count', what: 'Services moved', done: moved, total: items.length });
        count();
        if (!this.usesCovers(ctx)) {
          // a Service already at its mapped IPs with its bridge in place costs nothing here
          await mapLimit(items, this.opts.concurrency, async (it) => { evidence.set(itemKey(it), await this.moveItem(ctx, it, strategy, seen(it))); moved++; count(); });
          return;
        }
        const pending = items.filter((it) => !itemDone(view, it));
        moved = items.length - pending.length;
        count();
        const byService = (cs: KubeObject[]) => new Map(cs.map((c) => [`${c.metadata?.namespace}/${c.metadata?.labels?.[COVER_FOR_LABEL]}`, c]));
        const covers = byService(coversIn(view, items, this.opts.token));
        const nodePortCovers = byService(nodePortCoversIn(view, items, this.opts.token));
        const covered = pending.length > 0 ? await this.raiseCovers(ctx, pending, view, covers, nodePortCovers) : new Set<string>();
        const tm = Date.now();
        await mapLimit(pending, this.opts.concurrency, async (it) => {
          evidence.set(itemKey(it), await this.moveItem(ctx, it, strategy, seen(it), covered.has(itemKey(it)) ? this.fqdn(coverName(it.name), it.namespace) : undefined));
          moved++;
          count();
        });
        if (pending.length > 0) ctx.log(`${pending.length} Service(s) moved in ${Date.now() - tm} ms`);
        await this.lowerCovers(ctx, items, covers, nodePortCovers);
      },
      verify: async (ctx) => {
        let problems: string[] = [];
        const settled = async () => {
          problems = await this.batchProblems(ctx.client, items, evidence);
          if (problems.length > 0 && /cover Service\(s\) left/.test(problems[0]!)) throw new Error(problems[0]);
          return problems.length === 0 ? true : undefined;
        };
        try {
          await poll('the moved Services to settle', settled, { timeoutMs: this.opts.timeoutMs, intervalMs: 100, backoff: 2, maxIntervalMs: 1000 });
          return undefined;
        } catch (e) {
          if (onlyMissingIPAddresses(problems)) {
            // the Services stand at their IPs and only the allocation records are missing: the apiserver's repair
            // re-creates them within its 3-minute pass (decisions.ts, MISSING_IPADDRESS)
            ctx.warn?.(`${problems.length} moved Service IP(s) have no IPAddress object (${problems[0]}): the apiserver undid an allocation of a create `
              + `whose client was cut off; waiting up to ${Math.round(IPADDRESS_REPAIR_WAIT_MS / 1000)} s for its IPAddress repair to re-create them`);
            try {
              await poll("the apiserver's IPAddress repair", settled, { timeoutMs: IPADDRESS_REPAIR_WAIT_MS, intervalMs: 2000 });
              return undefined;
            } catch { /* told below */ }
          }
          return problems.length > 0 ? problems.slice(0, 3).join('; ') : (e as Error).message;
        }
      },
      rollback: async (ctx) => {
        for (const it of items) await this.moveBack(ctx, it);
        // covers a killed run left up: this run's only (labels and a uid journaled as created)
        if (ctx.dryRun === 'none') await this.removeRunCovers(ctx, items);
      },
      // a batch killed half-way leaves some Services moved: rollback undoes those too (moveBack reads each one)
      rollbackPartial: true,
    };
  }

  protected fromOf(items: StepItem[], o: KubeObject): string[] {
    return items.find((i) => i.name === o.metadata?.name && i.namespace === o.metadata?.namespace)?.from ?? [];
  }

  /** Undo one move: delete the bridge (freeing the old IP), then the same move towards the old IPs. */
  async moveBack(ctx: StepContext, it: StepItem): Promise<void> {
    const orig = ctx.backups.load(svcRef(it.namespace, it.name));
    if (!orig) {
      // a batch that stopped before its backup held this Service never wrote it: nothing to undo when it is as planned
      const cur = await withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace));
      if (cur && cur.spec?.type !== 'ExternalName' && sameIPs(ipsOf(cur), it.from)) return;
      throw new Error(`no backup of Service ${it.namespace}/${it.name}`);
    }
    if (it.bridge) {
      // only the bridge this run created: its labels, and its uid journaled as created (deleted with that uid as precondition)
      const b = await withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace));
      if (b) {
        if (!ownedHelper(b, BRIDGE_FOR_LABEL, it.name, this.opts.token)) throw notOursError([`${it.namespace}/${it.bridge}`], this.opts.token, () => b);
        if (!this.createdByThisRun(ctx, b)) {
          throw new UserError(`bridge ${it.namespace}/${it.bridge} (uid ${b.metadata?.uid}) is not journaled as created by this run: left as it is; delete it by hand if it is this migration's, then roll back again`, 'verify');
        }
        await withRetry(() => deleteObject(ctx.client, SERVICES, it.bridge!, it.namespace, { uid: b.metadata?.uid }));
      }
    }
    await this.waitReleased(ctx, it.from, it.namespace, it.name);
    await this.moveOne(ctx, { namespace: it.namespace, name: it.name, from: it.to, to: it.from }, this.strategy);
  }

  /** Services holding a ClusterIP in a drained range that the plan neither keeps nor bridges. */
  async stragglers(client: KubeClient): Promise<KubeObject[]> {
    return (await listAll(client, SERVICES)).filter((s) => this.isStraggler(s));
  }

  protected stragglerRules: { old: ReturnType<MappingSteps['oldRanges']>; keptSCs: ReturnType<typeof parseCidr>[]; skip: Set<string> } | undefined;

  /** A Service the sweep moves: still at an old-range IP (not kept, not ours, not a LoadBalancer), or half-swept. */
  protected isStraggler(s: KubeObject): boolean {
    this.stragglerRules ??= (() => {
      const skip = new Set(this.plan.mapping.filter((m) => m.action !== 'move').map((m) => `${m.namespace}/${m.name}`));
      skip.add('default/kubernetes');
      return { old: this.oldRanges(), keptSCs: this.svc.kept.map((k) => parseCidr(k)), skip };
    })();
    const { old, keptSCs, skip } = this.stragglerRules;
    const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
    if (skip.has(key) || s.metadata?.labels?.[MANAGED_LABEL] === 'true' || s.spec?.type === 'LoadBalancer') return false;
    // half-swept by an interrupted run: ExternalName now, pointing at itself
    if (s.spec?.type === 'ExternalName' && s.spec?.externalName === this.fqdn(s.metadata!.name!, s.metadata!.namespace!)) return true;
    return ipsOf(s).some((ip) => {
      const a = parseIP(ip);
      return old.some((c) => contains(c, a)) && !keptSCs.some((k) => contains(k, a));
    });
  }

  protected sweepStep(p: PlanStep): Step {
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.stragglers(ctx.client)).length === 0,
      backup: async (ctx) => this.stragglers(ctx.client),
      apply: async (ctx) => {
        for (const s of await this.stragglers(ctx.client)) {
          // No bridge (an explicit IP in a Terminating ServiceCIDR is refused) and no explicit address: the
          // apiserver allocates from the Ready ranges, the old one being drained. The backup (taken before
          // the first change) gives the type to return to when an earlier run was interrupted half-way.
          const orig = ctx.backups.load(refOf(s)) ?? s;
          const [ns, name] = [s.metadata!.namespace!, s.metadata!.name!];
          // A 409 (someone's edit, or our own write whose answer was lost) reads the Service again and decides again.
          await retryOnConflict(`Service ${ns}/${name}`, async (attempt) => {
            const cur = attempt === 1 ? s : await withRetry(() => getObject(ctx.client, SERVICES, name, ns));
            if (!cur || !this.isStraggler(cur)) return;
            const patched = cur.spec?.type === 'ExternalName' ? cur
              : await withRetry(() => patchService(ctx.client, cur, { type: 'ExternalName', externalName: this.fqdn(name, ns) }, false));
            const back = backToType(orig, []);
            delete back.clusterIP;
            delete back.clusterIPs;
            await withRetry(() => patchService(ctx.client, patched, back, false));
          });
          ctx.log(`swept Service ${ns}/${name} out of the old range`);
        }
      },
      verify: async (ctx) => {
        const left = await this.stragglers(ctx.client);
        return left.length === 0 ? undefined : `${left.length} Service(s) still in the old range, e.g. ${left[0]!.metadata?.namespace}/${left[0]!.metadata?.name}`;
      },
    };
  }
}
