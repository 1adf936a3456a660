/**
 * The ServiceCIDRs of a Service CIDR move: gate enable-servicecidr-api (the API served, ServiceCIDR/kubernetes
 * Ready, every ClusterIP registered), steps create-servicecidrs (the new ones), drain-servicecidrs (the old ones
 * deleted, so nothing new is allocated there), finalize-servicecidrs (ServiceCIDR/kubernetes on the new range,
 * the temporary one gone) and retire-servicecidrs (the kept ones in the old range deleted: they keep their
 * addresses and give out no new ones).
 */
import type { KubeObject } from '../../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../../kube/client.ts';
import { createObject, deleteObject, getObject, listAll, SERVICES } from '../../kube/resources.ts';
import { cidrLast, contains, formatIP, parseIP, tryParseCidr, type Cidr, type IP } from '../../net/index.ts';
import { MANAGED_LABEL, type PlanStep, type ServiceCIDRSpec } from '../../plan/plan.ts';
import { firstAndMore } from '../../text.ts';
import { RUN_LABEL } from '../covers.ts';
import { readJournal, sinceLastRollback } from '../journal.ts';
import type { Step, StepContext } from '../runner.ts';
import { poll, sleep, withRetry } from '../toolkit.ts';
import { ServiceExecutorBase } from './base.ts';
import type { ServiceCIDRState } from './common.ts';

export class ServiceCIDRSteps extends ServiceExecutorBase {
  /**
   * Gate `enable-servicecidr-api`: the apiserver serves the plan's ServiceCIDR API version, its bootstrap controller
   * has made ServiceCIDR/kubernetes Ready, and every Service's ClusterIP is registered as an IPAddress object. The
   * last one matters on 1.29–1.32 (measured on v1.30.14): the apiserver's IP repair loop makes its first pass before
   * ServiceCIDR/kubernetes exists, skips every address it cannot place yet ("is not within any service CIDR") and
   * registers them only at its next resync, 3 minutes later (repairLoopInterval). Until then the allocator does not
   * know those addresses: a new Service could be given one of them, and a ServiceCIDR holding only unregistered
   * addresses finishes deleting at once. So once the API is served this check waits for the registration (up to
   * REGISTRATION_WAIT_MS), then says which addresses are still missing.
   */
  async serviceCIDRApiServed(ctx: StepContext): Promise<boolean> {
    let sc: KubeObject | undefined;
    try {
      sc = await getObject(ctx.client, this.SC, 'kubernetes');
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) {
        ctx.log(`networking.k8s.io/${this.scVersion} servicecidrs not served yet`);
        return false;
      }
      throw e;
    }
    // once passed, later steps of this run drain ServiceCIDR/kubernetes: the API being served is all that still counts
    const passed = sinceLastRollback(readJournal(ctx.journal.path))
      .some((e) => e.step === 'enable-servicecidr-api' && e.event === 'step-skip');
    if (passed) return true;
    const ready = (sc?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    if (ready?.status !== 'True') {
      ctx.log(`ServiceCIDR kubernetes ${sc ? 'not Ready yet' : 'not created yet'}`);
      return false;
    }
    const deadline = Date.now() + ServiceCIDRSteps.REGISTRATION_WAIT_MS;
    for (let first = true; ; first = false) {
      const missing = await this.unregisteredClusterIPs(ctx.client);
      if (missing.length === 0) return true;
      const shown = firstAndMore(missing, 3);
      if (Date.now() >= deadline || ctx.dryRun !== 'none') {
        ctx.log(`${missing.length} ClusterIP(s) not registered as IPAddress objects yet (${shown}): the apiserver's repair loop registers `
          + 'the addresses of Services made before the API was enabled at its next pass (every 3 minutes); resume once it has');
        return false;
      }
      if (first) ctx.log(`waiting for the apiserver to register ${missing.length} existing ClusterIP(s) as IPAddress objects (${shown}; up to ${Math.round(ServiceCIDRSteps.REGISTRATION_WAIT_MS / 1000)}s)`);
      await sleep(5000);
    }
  }

  /** How long the enable-servicecidr-api gate waits for existing ClusterIPs to be registered: one repair pass and a margin. */
  static REGISTRATION_WAIT_MS = 200_000;

  /** "ns/name ip" of every ClusterIP that has no IPAddress object naming its Service. */
  protected async unregisteredClusterIPs(client: KubeClient): Promise<string[]> {
    const [services, addresses] = await Promise.all([withRetry(() => listAll(client, SERVICES)), withRetry(() => listAll(client, this.IPADDR))]);
    const owner = new Map(addresses.map((a) => [formatIP(parseIP(a.metadata!.name!)), `${a.spec?.parentRef?.namespace}/${a.spec?.parentRef?.name}`]));
    const out: string[] = [];
    for (const svc of services) {
      const key = `${svc.metadata?.namespace}/${svc.metadata?.name}`;
      for (const ip of (svc.spec?.clusterIPs ?? []) as string[]) {
        if (!ip || ip === 'None') continue;
        if (owner.get(formatIP(parseIP(ip))) !== key) out.push(`${key} ${ip}`);
      }
    }
    return out;
  }

  /** Each spec's state: one GET for one spec, one LIST of the (few) ServiceCIDRs for more. */
  protected async scStates(client: KubeClient, specs: readonly ServiceCIDRSpec[]): Promise<ServiceCIDRState[]> {
    if (specs.length <= 1) return Promise.all(specs.map((s) => this.scState(client, s)));
    const byName = new Map((await withRetry(() => listAll(client, this.SC))).map((sc) => [sc.metadata?.name, sc]));
    return specs.map((s) => ServiceCIDRSteps.judgeServiceCIDR(byName.get(s.name), s));
  }

  protected async scState(client: KubeClient, spec: ServiceCIDRSpec): Promise<ServiceCIDRState> {
    return ServiceCIDRSteps.judgeServiceCIDR(await getObject(client, this.SC, spec.name), spec);
  }

  protected static judgeServiceCIDR(sc: KubeObject | undefined, spec: ServiceCIDRSpec): ServiceCIDRState {
    if (!sc) return 'absent';
    if (sc.metadata?.deletionTimestamp) return 'deleting';
    const cidrs: string[] = sc.spec?.cidrs ?? [];
    if (cidrs.length !== spec.cidrs.length || !cidrs.every((c, i) => c === spec.cidrs[i])) return 'different';
    const ready = (sc.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    return ready?.status === 'True' ? 'ready' : 'pending';
  }

  protected async ensureServiceCIDR(ctx: StepContext, spec: ServiceCIDRSpec, seen?: ServiceCIDRState): Promise<void> {
    const state = seen ?? await this.scState(ctx.client, spec);
    if (state === 'ready' || state === 'pending') return;
    if (state === 'different') throw new Error(`ServiceCIDR ${spec.name} exists with other CIDRs: not ours to change`);
    if (state === 'deleting') {
      await poll(`ServiceCIDR ${spec.name} to finish deleting`, async () => ((await getObject(ctx.client, this.SC, spec.name)) ? undefined : true), { timeoutMs: this.opts.timeoutMs });
    }
    // journaled before the create, so that a crash between the two still leaves it this run's to delete
    if (ctx.dryRun === 'none' && this.opts.token) {
      const set = this.createdSet(ctx);
      const key = ServiceCIDRSteps.scKey(spec.name);
      if (!set.has(key)) {
        set.add(key);
        ctx.journal.append('created', { objects: [key] });
      }
    }
    await withRetry(() => createObject(ctx.client, this.SC, {
      apiVersion: `networking.k8s.io/${this.scVersion}`, kind: 'ServiceCIDR',
      metadata: { name: spec.name, labels: { [MANAGED_LABEL]: 'true', ...(this.opts.token ? { [RUN_LABEL]: this.opts.token } : {}) } }, spec: { cidrs: spec.cidrs },
    }, { dryRun: ctx.dryRun === 'server' }));
  }

  /** The journal's name for a ServiceCIDR this run created (cluster-scoped: its name is its identity). */
  protected static scKey(name: string): string {
    return `networking.k8s.io/ServiceCIDR/${name}`;
  }

  protected createServiceCIDRsStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.scStates(ctx.client, specs)).every((s) => s === 'ready'),
      apply: async (ctx) => {
        const seen = await this.scStates(ctx.client, specs);
        for (const [i, s] of specs.entries()) await this.ensureServiceCIDR(ctx, s, seen[i]);
      },
      verify: async (ctx) => {
        try {
          await poll('the new ServiceCIDRs to be Ready', async () =>
            ((await this.scStates(ctx.client, specs)).every((s) => s === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      },
      rollback: async (ctx) => {
        // only those this run created: one that was there before (an earlier run's kept ServiceCIDR, holding the
        // IPs of the Services it kept) is not this run's to delete
        const mine = specs.filter((s) => !this.opts.token || this.createdSet(ctx).has(ServiceCIDRSteps.scKey(s.name)));
        for (const s of mine) await withRetry(() => deleteObject(ctx.client, this.SC, s.name));
        // the service-cidr finalizer lets each go once no IP depends on it alone (10 s grace)
        await poll('the ServiceCIDRs to be deleted', async () =>
          ((await Promise.all(mine.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined),
        { timeoutMs: Math.max(this.opts.timeoutMs, 60_000), intervalMs: 500 });
      },
    };
  }

  protected drainStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    const drained = async (client: KubeClient, s: ServiceCIDRSpec) => {
      const sc = await getObject(client, this.SC, s.name);
      return !sc || !!sc.metadata?.deletionTimestamp || (sc.spec?.cidrs ?? []).join(',') !== s.cidrs.join(',');
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await Promise.all(specs.map((s) => drained(ctx.client, s)))).every(Boolean),
      backup: async (ctx) => (await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).filter((x): x is KubeObject => !!x),
      apply: async (ctx) => {
        for (const s of specs) {
          const sc = await getObject(ctx.client, this.SC, s.name);
          if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === s.cidrs.join(',')) {
            await withRetry(() => deleteObject(ctx.client, this.SC, s.name, undefined, { uid: sc.metadata?.uid, dryRun: ctx.dryRun === 'server' }));
          }
        }
      },
      verify: async (ctx) => ((await Promise.all(specs.map((s) => drained(ctx.client, s)))).every(Boolean) ? undefined : 'old ServiceCIDR still active'),
    };
  }

  protected finalizeStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    const want = this.svc.to;
    const kubernetesOnNew = async (client: KubeClient) => {
      const sc = await getObject(client, this.SC, 'kubernetes');
      return !!sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === want.join(',');
    };
    const done = async (client: KubeClient) => (await kubernetesOnNew(client))
      && (await Promise.all(specs.map((s) => getObject(client, this.SC, s.name)))).every((x) => !x);
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => done(ctx.client),
      backup: async (ctx) => (await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).filter((x): x is KubeObject => !!x),
      apply: async (ctx) => {
        await poll('ServiceCIDR/kubernetes to be recreated with the new range', async () => {
          const sc = await getObject(ctx.client, this.SC, 'kubernetes');
          if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') !== want.join(',') && !(await this.anyIPIn(ctx.client, sc.spec?.cidrs ?? []))) {
            ctx.log('ServiceCIDR/kubernetes came back with the old range (an apiserver still on the old flag?): deleting it again');
            await withRetry(() => deleteObject(ctx.client, this.SC, 'kubernetes', undefined, { uid: sc.metadata?.uid }));
          }
          return (await kubernetesOnNew(ctx.client)) ? true : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 120_000), intervalMs: 1000 });
        for (const s of specs) await withRetry(() => deleteObject(ctx.client, this.SC, s.name));
        await poll('the temporary ServiceCIDR to go', async () =>
          ((await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined), { timeoutMs: this.opts.timeoutMs });
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'ServiceCIDR/kubernetes does not hold the new range yet'),
    };
  }

  /**
   * Step retire-servicecidrs: delete the ServiceCIDRs that keep kept IPs in the old range, once the run is
   * otherwise over. Kubernetes keeps a ServiceCIDR being deleted for as long as an IPAddress inside it is covered
   * by no other ServiceCIDR (kube-controller-manager's servicecidrs controller, finalizer
   * networking.k8s.io/service-cidr-finalizer; its Ready condition turns False, reason Terminating), and the
   * apiserver's allocator gives out no address from it, neither a dynamic one nor an explicit one: so the kept
   * Services keep their addresses and nothing new lands in the old range. When the last kept Service in it goes,
   * the ServiceCIDR goes too.
   *
   * The finalizer counts every ServiceCIDR containing an address, those being deleted included: two ServiceCIDRs
   * being deleted at once that share an address could each let the other go, and the address would be left in
   * none. So a ServiceCIDR sharing an address in use with another one being deleted is left as it is and named
   * (retireBlockers). Deletes carry the uid read just before. Done when each is gone, being deleted, holds other
   * CIDRs, or is left for that reason.
   */
  protected retireStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    const read = async (client: KubeClient) => {
      const [all, ips] = await Promise.all([withRetry(() => listAll(client, this.SC)), withRetry(() => listAll(client, this.IPADDR))]);
      return { all, ips: ips.map((a) => a.metadata!.name!) };
    };
    const pending = (all: readonly KubeObject[], ips: readonly string[]) => specs.flatMap((s) => {
      const sc = all.find((x) => x.metadata?.name === s.name);
      if (!sc || sc.metadata?.deletionTimestamp || (sc.spec?.cidrs ?? []).join(',') !== s.cidrs.join(',')) return [];
      const blockers = retireBlockers(sc, all, ips);
      return [{ spec: s, sc, blockers }];
    });
    const done = async (ctx: StepContext) => {
      const { all, ips } = await read(ctx.client);
      return pending(all, ips).every((x) => x.blockers.length > 0);
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: done,
      backup: async (ctx) => (await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).filter((x): x is KubeObject => !!x),
      apply: async (ctx) => {
        for (const s of specs) {
          // read again before each: the one deleted just before may now share an address with this one
          const { all, ips } = await read(ctx.client);
          const it = pending(all, ips).find((x) => x.spec.name === s.name);
          if (!it) continue;
          if (it.blockers.length > 0) {
            ctx.log(`ServiceCIDR ${s.name} left as it is: ${firstAndMore(it.blockers, 3, '; ')} `
              + '(two ServiceCIDRs being deleted at once could each let the other go, leaving the address in none); it still gives out addresses');
            continue;
          }
          await withRetry(() => deleteObject(ctx.client, this.SC, s.name, undefined, { uid: it.sc.metadata?.uid, dryRun: ctx.dryRun === 'server' }));
        }
      },
      verify: async (ctx) => ((await done(ctx)) ? undefined : 'a kept ServiceCIDR in the old range was not deleted'),
      rollback: (ctx) => this.restoreRetired(ctx, specs),
    };
  }

  /**
   * Rollback of retire-servicecidrs: each ServiceCIDR of the step that is being deleted or gone is made Ready again
   * under its own name. A ServiceCIDR being deleted cannot be taken back, so a temporary one with the same CIDRs
   * (`<name>-restore`) covers its addresses first; the finalizer then lets the one being deleted go (another
   * ServiceCIDR holds the same range), it is created again, and the temporary one is deleted (released at once:
   * the restored one covers it). Each part is read from the cluster, so a rollback killed midway runs again.
   */
  protected async restoreRetired(ctx: StepContext, specs: readonly ServiceCIDRSpec[]): Promise<void> {
    const wait = { timeoutMs: Math.max(this.opts.timeoutMs, 60_000), intervalMs: 500 };
    const create = (name: string, cidrs: string[], labels: Record<string, string>) => withRetry(() => createObject(ctx.client, this.SC, {
      apiVersion: `networking.k8s.io/${this.scVersion}`, kind: 'ServiceCIDR', metadata: { name, labels }, spec: { cidrs },
    }));
    for (const s of specs) {
      const temp = `${s.name}-restore`;
      const sc = await getObject(ctx.client, this.SC, s.name);
      const backup = ctx.backups.load({ apiVersion: sc?.apiVersion ?? `networking.k8s.io/${this.scVersion}`, kind: 'ServiceCIDR', name: s.name });
      const labels: Record<string, string> = { ...(backup?.metadata?.labels ?? {}) };
      if (sc && !sc.metadata?.deletionTimestamp) {
        if (await getObject(ctx.client, this.SC, temp)) await withRetry(() => deleteObject(ctx.client, this.SC, temp));
        continue;
      }
      if (sc) {
        if (!(await getObject(ctx.client, this.SC, temp))) await create(temp, s.cidrs, { [MANAGED_LABEL]: 'true', ...(this.opts.token ? { [RUN_LABEL]: this.opts.token } : {}) });
        await poll(`ServiceCIDR ${s.name} to go once ${temp} covers its addresses`, async () => ((await getObject(ctx.client, this.SC, s.name)) ? undefined : true), wait);
      }
      await create(s.name, s.cidrs, labels);
      await poll(`ServiceCIDR ${s.name} to be Ready`, async () => (ServiceCIDRSteps.judgeServiceCIDR(await getObject(ctx.client, this.SC, s.name), s) === 'ready' ? true : undefined), wait);
      if (await getObject(ctx.client, this.SC, temp)) await withRetry(() => deleteObject(ctx.client, this.SC, temp));
    }
  }

  /** Does any IPAddress sit inside these CIDRs that no other Ready ServiceCIDR covers? */
  protected async anyIPIn(client: KubeClient, cidrs: string[]): Promise<boolean> {
    const cs = cidrs.map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
    const others = (await listAll(client, this.SC)).filter((s) => s.metadata?.name !== 'kubernetes' && !s.metadata?.deletionTimestamp)
      .flatMap((s) => (s.spec?.cidrs ?? []).map((c: string) => tryParseCidr(c)).filter((c: Cidr | undefined): c is Cidr => !!c));
    const ips = await listAll(client, this.IPADDR);
    return ips.some((a) => {
      const ip = parseIP(a.metadata!.name!);
      return cs.some((c) => contains(c, ip)) && !others.some((o) => contains(o, ip));
    });
  }
}

/** Does ServiceCIDR `cidr` serve `ip`: inside it, and neither its network address nor (IPv4) its broadcast address. */
export function servesIP(cidr: Cidr, ip: IP): boolean {
  if (!contains(cidr, ip) || ip.value === cidr.network) return false;
  return ip.family !== 4 || ip.value !== cidrLast(cidr);
}

/**
 * Why ServiceCIDR `sc` must not be deleted now: each address in use (IPAddress names `ips`) that it serves and
 * that another ServiceCIDR being deleted serves too, as "IP also in ServiceCIDR NAME, being deleted". Empty: it
 * may go. The servicecidrs controller lets a ServiceCIDR being deleted go once every address in it is served by
 * some other ServiceCIDR, counting those being deleted too (pkg/api/servicecidr ContainsAddress, used by
 * canDeleteCIDR in pkg/controller/servicecidrs): two being deleted that share an address may both go.
 */
export function retireBlockers(sc: KubeObject, all: readonly KubeObject[], ips: readonly string[]): string[] {
  const cidrsOf = (o: KubeObject) => ((o.spec?.cidrs ?? []) as string[]).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
  const mine = cidrsOf(sc);
  const others = all.filter((o) => o.metadata?.name !== sc.metadata?.name && !!o.metadata?.deletionTimestamp).map((o) => ({ name: o.metadata?.name, cidrs: cidrsOf(o) }));
  const out: string[] = [];
  for (const a of ips) {
    let ip: IP;
    try { ip = parseIP(a); } catch { continue; }
    if (!mine.some((c) => servesIP(c, ip))) continue;
    const other = others.find((o) => o.cidrs.some((c) => servesIP(c, ip)));
    if (other) out.push(`${formatIP(ip)} also in ServiceCIDR ${other.name}, being deleted`);
  }
  return out;
}
