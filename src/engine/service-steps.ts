/**
 * Executes a Service CIDR MigrationPlan: turns each plan step into an engine Step with check / backup /
 * apply / verify / rollback against the live API. Every decision is re-derived from the cluster: a step is
 * done when the cluster shows its effect, so a crash or a kill at any point is resumed by running again.
 *
 * Moving one Service (measured on the real apiserver, see docs/testbed.md and docs/service-migration.md):
 *  in-place: merge-patch it to ExternalName (its ClusterIP is released, uid and EndpointSlices stay), create
 *            the bridge Service at the old IP with the same selector and ports, merge-patch the Service back
 *            to its type at the mapped IP with its nodePorts and family fields from the backup;
 *  recreate: delete it (uid precondition), create the bridge if the plan has one, create it again from the
 *            backup at the mapped IP.
 * All of it from the backup taken before the first change, so a resumed run rebuilds the original spec.
 */
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import {
  createObject, deleteObject, ENDPOINTSLICES, EVENTS, getObject, listAll, objectPath, PODS, SERVICES, serviceCIDRs,
  forCreate, ipAddresses, type ResourceType,
} from '../kube/resources.ts';
import { contains, formatIP, parseCidr, parseIP, tryParseCidr, type Cidr } from '../net/index.ts';
import { coverName, MANAGED_LABEL, type MigrationPlan, type PlanStep, type ServiceCIDRSpec, type StepItem } from '../plan/plan.ts';
import { refOf } from './backup.ts';
import { COVER_FOR_LABEL, coverCarries, coverService, coverStatus, pickSpares, readyAddresses } from './covers.ts';
import { readJournal } from './journal.ts';
import { sleep, waitFor, withRetry } from './retry.ts';
import type { Step, StepContext } from './runner.ts';

export interface ServiceExecOptions {
  /** Cluster DNS domain for ExternalName targets (default cluster.local). */
  clusterDomain?: string;
  /** Gates the operator asserts by hand when the cluster cannot show them (e.g. no kubelet configz). */
  acknowledgedGates?: readonly string[];
  /** How long to wait for the apiserver/controllers to show an effect (default 60 s). */
  timeoutMs?: number;
  /** Parallel Service moves inside one batch (default 8). */
  concurrency?: number;
  /**
   * in-place: put up cover Services (src/engine/covers.ts) so the old and the new IP answer throughout a move
   * (default true). false: the move leaves a window of up to kube-proxy's sync period per Service.
   */
  covers?: boolean;
  /**
   * How long a change needs to reach every node's kube-proxy rules and every DNS cache (default 5 s: kube-proxy's
   * 1 s minimum sync period with room for slow syncs, and CoreDNS's 5 s TTL for Service records). Waited once
   * after the covers of a batch are up and once before they come down.
   */
  propagationDelayMs?: number;
}

export const BRIDGE_FOR_LABEL = 'kube-renumber.io/bridge-for';
const MANAGED_BY = 'kube-renumber.io';

const svcRef = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: ns, name });
const itemKey = (it: { namespace: string; name: string }) => `${it.namespace}/${it.name}`;

function sameIPs(a: readonly string[] | undefined, b: readonly string[]): boolean {
  if (!a || a.length !== b.length) return false;
  return a.every((x, i) => formatIP(parseIP(x)) === formatIP(parseIP(b[i]!)));
}

function ipsOf(s: KubeObject | undefined): string[] {
  if (!s?.spec) return [];
  if (Array.isArray(s.spec.clusterIPs)) return s.spec.clusterIPs.filter((x: string) => x && x !== 'None');
  return s.spec.clusterIP && s.spec.clusterIP !== 'None' ? [s.spec.clusterIP] : [];
}

/** JSON with object keys sorted at every depth, so equal specs compare equal whatever their key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as any)[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

async function mapLimit<T>(items: readonly T[], limit: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try { await fn(item); } catch (e) { errors.push(e); }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}

/** Merge patch with a resourceVersion precondition: a concurrent edit gives 409 instead of being overwritten. */
async function patchService(client: KubeClient, cur: KubeObject, spec: Record<string, unknown>, dryRun: boolean): Promise<KubeObject> {
  return client.request<KubeObject>('PATCH', objectPath(SERVICES, cur.metadata!.name!, cur.metadata!.namespace), {
    body: { metadata: { resourceVersion: cur.metadata!.resourceVersion }, spec },
    contentType: 'application/merge-patch+json',
    query: { dryRun: dryRun ? 'All' : undefined, fieldManager: 'kube-renumber' },
  });
}

/** The Service as it must be re-created from its backup, at `ips`. */
function recreated(orig: KubeObject, ips: string[]): KubeObject {
  const o = forCreate(orig);
  return { ...o, apiVersion: 'v1', kind: 'Service', spec: { ...orig.spec, clusterIP: ips[0], clusterIPs: ips } };
}

/** The spec fields that return a Service from ExternalName to what it was, at `ips`. */
function backToType(orig: KubeObject, ips: string[]): Record<string, unknown> {
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

/** A bridge: same selector and ports (no nodePorts), at the old IPs. Selectorless bridges get an EndpointSlice. */
function bridgeService(orig: KubeObject, name: string, ips: string[]): KubeObject {
  const s = orig.spec ?? {};
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name, namespace: orig.metadata!.namespace, labels: { [MANAGED_LABEL]: 'true', [BRIDGE_FOR_LABEL]: orig.metadata!.name! } },
    spec: {
      type: 'ClusterIP', clusterIP: ips[0], clusterIPs: ips,
      ...(s.selector ? { selector: s.selector } : {}),
      ports: (s.ports ?? []).map((p: any) => { const { nodePort, ...rest } = p; void nodePort; return rest; }),
      ...(s.ipFamilies ? { ipFamilies: s.ipFamilies, ipFamilyPolicy: s.ipFamilyPolicy } : {}),
      ...(s.sessionAffinity ? { sessionAffinity: s.sessionAffinity } : {}),
      ...(s.publishNotReadyAddresses ? { publishNotReadyAddresses: true } : {}),
    },
  };
}

export class ServiceExecutor {
  readonly plan: MigrationPlan;
  readonly opts: Required<Omit<ServiceExecOptions, 'acknowledgedGates'>> & { acknowledgedGates: readonly string[] };
  readonly scVersion: string;
  readonly svc: NonNullable<MigrationPlan['spec']['serviceCIDR']>;
  readonly strategy: 'in-place' | 'recreate';
  constructor(plan: MigrationPlan, opts: ServiceExecOptions = {}) {
    this.plan = plan;
    if (!plan.spec.serviceCIDR) throw new Error('the plan does not move the Service CIDR');
    this.svc = plan.spec.serviceCIDR;
    this.strategy = plan.spec.strategy ?? 'recreate';
    this.opts = {
      clusterDomain: opts.clusterDomain ?? 'cluster.local',
      acknowledgedGates: opts.acknowledgedGates ?? [],
      timeoutMs: opts.timeoutMs ?? 60_000,
      concurrency: opts.concurrency ?? 8,
      covers: opts.covers ?? true,
      propagationDelayMs: opts.propagationDelayMs ?? 5_000,
    };
    this.scVersion = this.svc.apiVersion.split('/')[1] ?? 'v1';
  }

  get SC(): ResourceType { return serviceCIDRs(this.scVersion); }
  get IPADDR(): ResourceType { return ipAddresses(this.scVersion); }

  /** The ranges the migration leaves: every current range not inside the target. */
  oldRanges(): Cidr[] {
    const targets = this.svc.target.map((t) => parseCidr(t));
    return this.svc.from.map((f) => parseCidr(f)).filter((c) => !targets.some((t) => contains(t, c)));
  }

  /** Engine steps for the plan; `other` builds the steps this executor does not handle (the Pod CIDR ones). */
  steps(other?: (p: PlanStep) => Step | undefined): Step[] {
    const idsOf = (kind: string) => this.plan.steps.filter((s) => s.kind === kind).map((s) => s.id);
    const removeBridges = idsOf('remove-bridges');
    const finalize = idsOf('finalize-servicecidrs');
    return this.plan.steps.map((p) => {
      const delegated = other?.(p);
      if (delegated) return delegated;
      const step = this.step(p);
      // bridges go in remove-bridges; the temporary target ServiceCIDR goes in finalize-servicecidrs
      if (p.kind === 'move-services' || p.kind === 'move-kubernetes') step.supersededBy = removeBridges;
      if (p.kind === 'create-servicecidrs' && (p.serviceCIDRs ?? []).some((c) => c.purpose === 'target')) step.supersededBy = finalize;
      return step;
    });
  }

  step(p: PlanStep): Step {
    const base = { id: p.id, title: p.description };
    switch (p.kind) {
      case 'confirm':
        return { ...base, kind: 'confirm', check: async () => false };
      case 'gate':
        return { ...base, kind: 'gate', instructions: p.gate?.instructions ?? [], check: (ctx) => this.gateHolds(p, ctx) };
      case 'create-servicecidrs':
        return this.createServiceCIDRsStep(p);
      case 'move-services':
        return this.moveServicesStep(p);
      case 'drain-servicecidrs':
        return this.drainStep(p);
      case 'sweep-services':
        return this.sweepStep(p);
      case 'move-kubernetes':
        return this.moveKubernetesStep(p);
      case 'remove-bridges':
        return this.removeBridgesStep(p);
      case 'finalize-servicecidrs':
        return this.finalizeStep(p);
      case 'verify':
        return { ...base, kind: 'action', check: async () => false, apply: async () => {}, verify: (ctx) => this.verifyEndState(ctx.client, ctx.backups) };
      default:
        throw new Error(`plan step ${p.id}: unknown kind ${String(p.kind)}`);
    }
  }

  // ---- ServiceCIDRs -------------------------------------------------------------------------------

  private async scState(client: KubeClient, spec: ServiceCIDRSpec): Promise<'absent' | 'ready' | 'pending' | 'deleting' | 'different'> {
    const sc = await getObject(client, this.SC, spec.name);
    if (!sc) return 'absent';
    if (sc.metadata?.deletionTimestamp) return 'deleting';
    const cidrs: string[] = sc.spec?.cidrs ?? [];
    if (cidrs.length !== spec.cidrs.length || !cidrs.every((c, i) => c === spec.cidrs[i])) return 'different';
    const ready = (sc.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    return ready?.status === 'True' ? 'ready' : 'pending';
  }

  private async ensureServiceCIDR(ctx: StepContext, spec: ServiceCIDRSpec): Promise<void> {
    const state = await this.scState(ctx.client, spec);
    if (state === 'ready' || state === 'pending') return;
    if (state === 'different') throw new Error(`ServiceCIDR ${spec.name} exists with other CIDRs: not ours to change`);
    if (state === 'deleting') {
      await waitFor(`ServiceCIDR ${spec.name} to finish deleting`, async () => ((await getObject(ctx.client, this.SC, spec.name)) ? undefined : true), { timeoutMs: this.opts.timeoutMs });
    }
    await withRetry(() => createObject(ctx.client, this.SC, {
      apiVersion: `networking.k8s.io/${this.scVersion}`, kind: 'ServiceCIDR',
      metadata: { name: spec.name, labels: { [MANAGED_LABEL]: 'true' } }, spec: { cidrs: spec.cidrs },
    }, { dryRun: ctx.dryRun === 'server' }));
  }

  private createServiceCIDRsStep(p: PlanStep): Step {
    const specs = p.serviceCIDRs ?? [];
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await Promise.all(specs.map((s) => this.scState(ctx.client, s)))).every((s) => s === 'ready'),
      apply: async (ctx) => { for (const s of specs) await this.ensureServiceCIDR(ctx, s); },
      verify: async (ctx) => {
        try {
          await waitFor('the new ServiceCIDRs to be Ready', async () =>
            ((await Promise.all(specs.map((s) => this.scState(ctx.client, s)))).every((s) => s === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      },
      rollback: async (ctx) => {
        for (const s of specs) await deleteObject(ctx.client, this.SC, s.name);
        // the service-cidr finalizer lets each go once no IP depends on it alone (10 s grace)
        await waitFor('the ServiceCIDRs to be deleted', async () =>
          ((await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined),
        { timeoutMs: Math.max(this.opts.timeoutMs, 60_000), intervalMs: 500 });
      },
    };
  }

  // ---- moving Services ----------------------------------------------------------------------------

  /** The original Service: from the backup when one exists (a resumed run), else live. */
  private async original(ctx: StepContext, it: StepItem): Promise<KubeObject | undefined> {
    return ctx.backups.load(svcRef(it.namespace, it.name)) ?? await getObject(ctx.client, SERVICES, it.name, it.namespace);
  }

  private async itemDone(client: KubeClient, it: StepItem): Promise<boolean> {
    const s = await getObject(client, SERVICES, it.name, it.namespace);
    if (!s || s.spec?.type === 'ExternalName' || !sameIPs(ipsOf(s), it.to)) return false;
    if (!it.bridge) return true;
    const b = await getObject(client, SERVICES, it.bridge, it.namespace);
    return !!b && sameIPs(ipsOf(b), it.from);
  }

  private async ensureBridge(ctx: StepContext, orig: KubeObject, it: StepItem): Promise<void> {
    if (!it.bridge) return;
    const cur = await getObject(ctx.client, SERVICES, it.bridge, it.namespace);
    if (cur) {
      if (!sameIPs(ipsOf(cur), it.from)) throw new Error(`bridge ${it.namespace}/${it.bridge} exists at ${ipsOf(cur).join(',')}, not ${it.from.join(',')}`);
      return;
    }
    await this.waitReleased(ctx, it.from, it.namespace, it.bridge);
    await withRetry(() => createObject(ctx.client, SERVICES, bridgeService(orig, it.bridge!, it.from), { dryRun: ctx.dryRun === 'server' }));
  }

  /**
   * The apiserver releases a Service's IPAddress objects asynchronously after the Service lets go of them
   * (measured: up to a few seconds); wait until each IP is free or already held by `holder`.
   */
  private async waitReleased(ctx: StepContext, ips: readonly string[], namespace: string, holder: string): Promise<void> {
    if (ctx.dryRun !== 'none') return;
    await waitFor(`IP ${ips.join(',')} to be released`, async () => {
      for (const ip of ips) {
        const a = await getObject(ctx.client, this.IPADDR, formatIP(parseIP(ip)));
        const ref = a?.spec?.parentRef;
        if (a && !(ref?.name === holder && ref?.namespace === namespace)) return undefined;
      }
      return true;
    }, { timeoutMs: this.opts.timeoutMs, intervalMs: 200 });
  }

  /** Move one Service to its mapped IPs; safe to call again at any point of a previous attempt. */
  async moveOne(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate', externalName?: string): Promise<void> {
    const dry = ctx.dryRun === 'server';
    for (let attempt = 0; attempt < 5; attempt++) {
      const orig = await this.original(ctx, it);
      if (!orig) throw new Error(`Service ${it.namespace}/${it.name} is gone and has no backup`);
      const cur = await getObject(ctx.client, SERVICES, it.name, it.namespace);
      try {
        if (cur && cur.spec?.type !== 'ExternalName' && sameIPs(ipsOf(cur), it.to)) {
          await this.ensureBridge(ctx, orig, it);
          return;
        }
        if (cur && cur.spec?.type !== 'ExternalName' && !sameIPs(ipsOf(cur), it.from)) {
          throw new Error(`Service ${it.namespace}/${it.name} has ClusterIPs ${ipsOf(cur).join(',') || 'none'}, neither the planned ${it.from.join(',')} nor ${it.to.join(',')}: changed since the plan; re-plan`);
        }
        if (strategy === 'recreate') {
          if (cur) {
            await withRetry(() => deleteObject(ctx.client, SERVICES, it.name, it.namespace, { uid: cur.metadata?.uid, dryRun: dry }));
            if (dry) return;
            await waitFor(`Service ${it.namespace}/${it.name} to be deleted`, async () => ((await getObject(ctx.client, SERVICES, it.name, it.namespace)) ? undefined : true), { timeoutMs: this.opts.timeoutMs });
          }
          await this.ensureBridge(ctx, orig, it);
          await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry }));
          return;
        }
        // in-place
        let now = cur;
        if (!now) {
          // a recreate was interrupted earlier, or someone deleted it: put it back at the new IP
          await this.ensureBridge(ctx, orig, it);
          await withRetry(() => createObject(ctx.client, SERVICES, recreated(orig, it.to), { dryRun: dry }));
          return;
        }
        if (now.spec?.type !== 'ExternalName') {
          const target = externalName ?? this.fqdn(it.bridge ?? it.name, it.namespace);
          now = await withRetry(() => patchService(ctx.client, now!, { type: 'ExternalName', externalName: target }, dry));
          if (dry) return;
        }
        await this.ensureBridge(ctx, orig, it);
        await withRetry(() => patchService(ctx.client, now!, backToType(orig, it.to), dry));
        return;
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 409 && e.reason !== 'AlreadyExists') continue; // someone changed it: look again
        throw e;
      }
    }
    throw new Error(`Service ${it.namespace}/${it.name} kept changing under us (409 Conflict five times)`);
  }

  private async verifyItem(client: KubeClient, it: StepItem): Promise<string | undefined> {
    const s = await getObject(client, SERVICES, it.name, it.namespace);
    if (!s) return `Service ${it.namespace}/${it.name} is missing`;
    if (!sameIPs(ipsOf(s), it.to)) return `Service ${it.namespace}/${it.name} has ${ipsOf(s).join(',')}, expected ${it.to.join(',')}`;
    for (const ip of it.to) {
      const a = await getObject(client, this.IPADDR, formatIP(parseIP(ip)));
      const ref = a?.spec?.parentRef;
      if (!a || ref?.name !== it.name || ref?.namespace !== it.namespace) return `IPAddress ${ip} does not point at Service ${it.namespace}/${it.name}`;
    }
    if (s.spec?.selector && Object.keys(s.spec.selector).length > 0) {
      const slices = await listAll(client, ENDPOINTSLICES, { namespace: it.namespace, labelSelector: `kubernetes.io/service-name=${it.name}` });
      if (slices.length === 0) return `Service ${it.namespace}/${it.name} has no EndpointSlice`;
    }
    if (it.bridge) {
      const b = await getObject(client, SERVICES, it.bridge, it.namespace);
      if (!b || !sameIPs(ipsOf(b), it.from)) return `bridge ${it.namespace}/${it.bridge} is not at ${it.from.join(',')}`;
    }
    return undefined;
  }

  private moveServicesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const strategy = this.strategy;
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await Promise.all(items.map((it) => this.itemDone(ctx.client, it)))).every(Boolean)
        && (await this.coversOf(ctx.client, items)).length === 0,
      backup: async (ctx) => {
        const objs = await Promise.all(items.map((it) => getObject(ctx.client, SERVICES, it.name, it.namespace)));
        return objs.filter((o): o is KubeObject => !!o && o.spec?.type !== 'ExternalName' && sameIPs(ipsOf(o), this.fromOf(items, o)));
      },
      apply: async (ctx) => {
        if (!this.usesCovers(ctx)) {
          // moveOne returns at once for a Service already at its mapped IPs with its bridge in place
          await mapLimit(items, this.opts.concurrency, (it) => this.moveOne(ctx, it, strategy));
          return;
        }
        const pending = (await Promise.all(items.map(async (it) => ((await this.itemDone(ctx.client, it)) ? undefined : it))))
          .filter((x): x is StepItem => !!x);
        const covered = pending.length > 0 ? await this.raiseCovers(ctx, pending) : new Set<string>();
        await mapLimit(pending, this.opts.concurrency, (it) => this.moveOne(ctx, it, strategy,
          covered.has(itemKey(it)) ? this.fqdn(coverName(it.name), it.namespace) : undefined));
        await this.lowerCovers(ctx, items);
      },
      verify: async (ctx) => {
        const covers = await this.coversOf(ctx.client, items);
        if (covers.length > 0) return `${covers.length} cover Service(s) left, e.g. ${covers[0]!.metadata?.namespace}/${covers[0]!.metadata?.name}`;
        const problems: string[] = [];
        try {
          await waitFor('the moved Services to settle', async () => {
            problems.length = 0;
            await mapLimit(items, this.opts.concurrency, async (it) => {
              const p2 = await this.verifyItem(ctx.client, it);
              if (p2) problems.push(p2);
            });
            return problems.length === 0 ? true : undefined;
          }, { timeoutMs: this.opts.timeoutMs, intervalMs: 500 });
          return undefined;
        } catch {
          return problems.slice(0, 3).join('; ');
        }
      },
      rollback: async (ctx) => {
        for (const it of items) await this.moveBack(ctx, it);
      },
    };
  }

  private fromOf(items: StepItem[], o: KubeObject): string[] {
    return items.find((i) => i.name === o.metadata?.name && i.namespace === o.metadata?.namespace)?.from ?? [];
  }

  /** Undo one move: delete the bridge (freeing the old IP), then the same move towards the old IPs. */
  async moveBack(ctx: StepContext, it: StepItem): Promise<void> {
    const orig = ctx.backups.load(svcRef(it.namespace, it.name));
    if (!orig) throw new Error(`no backup of Service ${it.namespace}/${it.name}`);
    if (it.bridge) await deleteObject(ctx.client, SERVICES, it.bridge, it.namespace);
    await this.waitReleased(ctx, it.from, it.namespace, it.name);
    await this.moveOne(ctx, { namespace: it.namespace, name: it.name, from: it.to, to: it.from }, this.strategy);
  }

  // ---- gates --------------------------------------------------------------------------------------

  private async gateHolds(p: PlanStep, ctx: StepContext): Promise<boolean> {
    if (this.opts.acknowledgedGates.includes(p.id)) {
      ctx.log(`gate ${p.id}: acknowledged by --ack-gate`);
      return true;
    }
    if (p.id === 'restart-apiservers') return this.apiserversOnNewRange(ctx);
    if (p.id === 'restart-workloads') return this.podsRestarted(ctx);
    if (p.id === 'kubelet-cluster-dns') return this.kubeletsOnNewDNS(ctx);
    return false;
  }

  /**
   * Every apiserver runs with the new flag: from their mirror pods' flags when the cluster shows them, else
   * from the apiserver's own complaint that ServiceCIDR/kubernetes does not match its flag (event
   * KubernetesDefaultServiceCIDRInconsistent naming the new range), else from ServiceCIDR/kubernetes
   * already holding the new range.
   */
  async apiserversOnNewRange(ctx: StepContext): Promise<boolean> {
    const want = this.svc.to.join(',');
    const pods = await listAll(ctx.client, PODS, { namespace: 'kube-system', labelSelector: 'component=kube-apiserver' });
    const flags = pods.map((pod) => {
      const c = (pod.spec?.containers ?? []).find((x: any) => x.name === 'kube-apiserver') ?? pod.spec?.containers?.[0];
      const words: string[] = [...(c?.command ?? []), ...(c?.args ?? [])];
      const i = words.findIndex((w) => w.startsWith('--service-cluster-ip-range'));
      if (i < 0) return undefined;
      return words[i]!.includes('=') ? words[i]!.split('=')[1] : words[i + 1];
    });
    if (pods.length > 0) {
      const ok = flags.every((f) => f === want);
      if (!ok) ctx.log(`apiserver pods still on: ${[...new Set(flags)].join(' ')}`);
      return ok;
    }
    const sc = await getObject(ctx.client, this.SC, 'kubernetes');
    if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') === want) return true;
    const events = await listAll(ctx.client, EVENTS, { namespace: 'default', fieldSelector: 'reason=KubernetesDefaultServiceCIDRInconsistent' });
    const gateSeen = this.firstJournalTime(ctx, 'gate', 'restart-apiservers');
    return events.some((e) => {
      const when = Date.parse(String(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? ""));
      return String(e.message ?? '').includes(this.svc.to[0]!) && (!gateSeen || when >= gateSeen - 1000);
    });
  }

  private firstJournalTime(ctx: StepContext, event: string, step: string): number | undefined {
    const e = readJournal(ctx.journal.path).find((x) => x.event === event && x.step === step);
    return e ? Date.parse(e.ts) : undefined;
  }

  /** No running pod (hostNetwork pods aside) started before default/kubernetes and the DNS moved. */
  async podsRestarted(ctx: StepContext): Promise<boolean> {
    const entries = readJournal(ctx.journal.path);
    // when each of these first completed (later runs journal a skip again: those times do not count)
    const moved: number[] = [];
    for (const id of ['move-kubernetes', 'move-dns', 'kubelet-cluster-dns']) {
      const first = entries.find((e) => e.step === id && (e.event === 'step-done' || e.event === 'step-skip'));
      if (first) moved.push(Date.parse(first.ts));
    }
    if (moved.length === 0) return false;
    const since = Math.max(...moved);
    const pods = await listAll(ctx.client, PODS);
    const stale = pods.filter((p) => !p.spec?.hostNetwork && p.status?.phase === 'Running'
      && Date.parse(p.status?.startTime ?? p.metadata?.creationTimestamp ?? '') < since - 1000);
    if (stale.length > 0) ctx.log(`${stale.length} pod(s) still started before the move, e.g. ${stale.slice(0, 3).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ')}`);
    return stale.length === 0;
  }

  /** kubelets hand out the new DNS IP: kubeadm's kubelet-config ConfigMap says so (configz is not read yet). */
  async kubeletsOnNewDNS(ctx: StepContext): Promise<boolean> {
    const dns = this.plan.mapping.find((m) => m.isDNS);
    if (!dns) return true;
    const cms = await listAll(ctx.client, { group: '', version: 'v1', plural: 'configmaps', namespaced: true }, { namespace: 'kube-system' });
    const kc = cms.find((c) => /^kubelet-config(-\d+\.\d+)?$/.test(c.metadata?.name ?? ''));
    if (!kc) {
      ctx.log('kubelet clusterDNS cannot be read from the cluster: after changing it, resume with --ack-gate kubelet-cluster-dns');
      return false;
    }
    return dns.to.every((ip) => String(kc.data?.kubelet ?? '').includes(ip));
  }

  // ---- covers (src/engine/covers.ts) ----------------------------------------------------------------

  private usesCovers(ctx: StepContext): boolean {
    return this.strategy === 'in-place' && this.opts.covers && ctx.dryRun === 'none';
  }

  /** Cover Services of these items that exist now (one LIST of every cover in the cluster). */
  async coversOf(client: KubeClient, items: readonly StepItem[]): Promise<KubeObject[]> {
    const keys = new Set(items.map(itemKey));
    const all = await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL });
    return all.filter((s) => keys.has(`${s.metadata?.namespace}/${s.metadata?.labels?.[COVER_FOR_LABEL]}`)
      && s.metadata?.name === coverName(s.metadata?.labels?.[COVER_FOR_LABEL] ?? ''));
  }

  private async sliceReady(client: KubeClient, namespace: string, service: string): Promise<Set<string>> {
    return readyAddresses(await listAll(client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${service}` }));
  }

  /**
   * Copies a selectorless Service's EndpointSlices to `to` (a cover or a bridge), unless already there; the first
   * copy is named `to` (move-kubernetes checks the bridge's slice by that name).
   */
  private async copySlices(ctx: StepContext, namespace: string, from: string, to: string): Promise<void> {
    const mine = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${to}` });
    if (mine.length > 0) return;
    const src = await listAll(ctx.client, ENDPOINTSLICES, { namespace, labelSelector: `kubernetes.io/service-name=${from}` });
    for (const [i, sl] of src.entries()) {
      await withRetry(() => createObject(ctx.client, ENDPOINTSLICES, {
        apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
        metadata: { name: i === 0 ? to : `${to}-${i}`, namespace, labels: {
          'kubernetes.io/service-name': to, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY, [MANAGED_LABEL]: 'true' } },
        addressType: sl.addressType, endpoints: sl.endpoints ?? [], ports: sl.ports ?? [],
      })).catch((e) => { if (!(e instanceof KubeApiError && e.status === 409)) throw e; });
    }
  }

  /**
   * Puts up a cover for each item (old and new IPs answering through a LoadBalancer status), waits until each
   * has the Service's ready endpoints, then one propagation delay. Returns the keys of the covered items. A
   * cover already there (an interrupted run) is reused.
   */
  private async raiseCovers(ctx: StepContext, items: readonly StepItem[]): Promise<Set<string>> {
    const existing = new Map((await this.coversOf(ctx.client, items)).map((c) => [`${c.metadata?.namespace}/${c.metadata?.labels?.[COVER_FOR_LABEL]}`, c]));
    let used: Set<string> | undefined;
    const covered = new Set<string>();
    for (const it of items) {
      const orig = await this.original(ctx, it);
      if (!orig) continue; // moveOne reports it
      const name = coverName(it.name);
      let cover = existing.get(itemKey(it));
      if (!cover) {
        if (!used) {
          used = new Set((await listAll(ctx.client, this.IPADDR)).map((a) => formatIP(parseIP(a.metadata!.name!))));
          for (const m of this.plan.mapping) for (const ip of [...m.from, ...m.to]) used.add(formatIP(parseIP(ip)));
        }
        const families = it.from.map((ip) => parseIP(ip).family);
        const spare = pickSpares(this.svc.target, families, used, 1)[0];
        if (!spare) {
          ctx.warn?.(`no free address in ${this.svc.target.join(',')} for the cover of Service ${itemKey(it)}: it moves without one (old and new IP may not answer for up to kube-proxy's sync period)`);
          continue;
        }
        try {
          cover = await withRetry(() => createObject(ctx.client, SERVICES, coverService(orig, name, spare)));
        } catch (e) {
          if (e instanceof KubeApiError && e.status === 409) cover = await getObject(ctx.client, SERVICES, name, it.namespace);
          else throw new Error(`creating the cover Service ${it.namespace}/${name} (type LoadBalancer, loadBalancerClass kube-renumber.io/cover) failed: ${(e as Error).message}; `
            + 'allow it, or apply with --no-covers to move without covers (short blips per Service)');
        }
        ctx.log(`cover ${it.namespace}/${name} at ${spare.join(',')} for ${[...it.from, ...it.to].join(', ')}`);
      }
      if (!orig.spec?.selector || Object.keys(orig.spec.selector).length === 0) await this.copySlices(ctx, it.namespace, it.name, name);
      const want = [...it.from, ...it.to];
      if (!coverCarries(cover, want)) {
        await withRetry(() => ctx.client.request('PATCH', `${objectPath(SERVICES, name, it.namespace)}/status`, {
          body: { status: coverStatus(want) }, contentType: 'application/merge-patch+json', query: { fieldManager: 'kube-renumber' },
        }));
      }
      covered.add(itemKey(it));
    }
    if (covered.size === 0) return covered;
    const list = items.filter((it) => covered.has(itemKey(it)));
    await waitFor('the cover Services to have their Services\' ready endpoints', async () => {
      for (const it of list) {
        const want = await this.sliceReady(ctx.client, it.namespace, it.name);
        const have = await this.sliceReady(ctx.client, it.namespace, coverName(it.name));
        if ([...want].some((a) => !have.has(a))) return undefined;
      }
      return true;
    }, { timeoutMs: this.opts.timeoutMs, intervalMs: 200 });
    ctx.log(`${list.length} cover(s) up; waiting ${this.opts.propagationDelayMs} ms for kube-proxy and DNS`);
    await sleep(this.opts.propagationDelayMs);
    return covered;
  }

  /**
   * Takes down the covers of these items once each moved Service (new IP) and its bridge (old IP) have the
   * cover's ready endpoints, after one more propagation delay.
   */
  private async lowerCovers(ctx: StepContext, items: readonly StepItem[]): Promise<void> {
    const covers = await this.coversOf(ctx.client, items);
    if (covers.length === 0) return;
    const byKey = new Map(items.map((it) => [itemKey(it), it]));
    await waitFor('the moved Services and their bridges to have the covers\' ready endpoints', async () => {
      for (const c of covers) {
        const it = byKey.get(`${c.metadata?.namespace}/${c.metadata?.labels?.[COVER_FOR_LABEL]}`)!;
        const have = await this.sliceReady(ctx.client, it.namespace, coverName(it.name));
        if (have.size === 0) continue;
        const svc = await getObject(ctx.client, SERVICES, it.name, it.namespace);
        if (!svc || svc.spec?.type === 'ExternalName' || (await this.sliceReady(ctx.client, it.namespace, it.name)).size === 0) return undefined;
        if (it.bridge && (await this.sliceReady(ctx.client, it.namespace, it.bridge)).size === 0) return undefined;
      }
      return true;
    }, { timeoutMs: this.opts.timeoutMs, intervalMs: 200 });
    ctx.log(`waiting ${this.opts.propagationDelayMs} ms before removing ${covers.length} cover(s)`);
    await sleep(this.opts.propagationDelayMs);
    await mapLimit(covers, this.opts.concurrency, async (c) => {
      const ns = c.metadata!.namespace!;
      const name = c.metadata!.name!;
      await withRetry(() => deleteObject(ctx.client, SERVICES, name, ns, { uid: c.metadata?.uid }));
      for (const sl of await listAll(ctx.client, ENDPOINTSLICES, { namespace: ns, labelSelector: `kubernetes.io/service-name=${name},${MANAGED_LABEL}=true` })) {
        await withRetry(() => deleteObject(ctx.client, ENDPOINTSLICES, sl.metadata!.name!, ns, { uid: sl.metadata?.uid }));
      }
    });
  }

  // ---- drain, sweep, kubernetes, bridges, finalize --------------------------------------------------

  private drainStep(p: PlanStep): Step {
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

  /** Services holding a ClusterIP in a drained range that the plan neither keeps nor bridges. */
  async stragglers(client: KubeClient): Promise<KubeObject[]> {
    const old = this.oldRanges();
    const keptSCs = this.svc.kept.map((k) => parseCidr(k));
    const skip = new Set(this.plan.mapping.filter((m) => m.action !== 'move').map((m) => `${m.namespace}/${m.name}`));
    skip.add('default/kubernetes');
    const all = await listAll(client, SERVICES);
    return all.filter((s) => {
      const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
      if (skip.has(key) || s.metadata?.labels?.[MANAGED_LABEL] === 'true' || s.spec?.type === 'LoadBalancer') return false;
      // half-swept by an interrupted run: ExternalName now, pointing at itself
      if (s.spec?.type === 'ExternalName' && s.spec?.externalName === this.fqdn(s.metadata!.name!, s.metadata!.namespace!)) return true;
      return ipsOf(s).some((ip) => {
        const a = parseIP(ip);
        return old.some((c) => contains(c, a)) && !keptSCs.some((k) => contains(k, a));
      });
    });
  }

  /** A Service's DNS name, for ExternalName targets. */
  private fqdn(name: string, namespace: string): string {
    return `${name}.${namespace}.svc.${this.opts.clusterDomain}`;
  }

  private sweepStep(p: PlanStep): Step {
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await this.stragglers(ctx.client)).length === 0,
      backup: async (ctx) => this.stragglers(ctx.client),
      apply: async (ctx) => {
        for (const s of await this.stragglers(ctx.client)) {
          // No bridge (an explicit IP in a Terminating ServiceCIDR is refused) and no explicit address: the
          // apiserver allocates from the Ready ranges, the old one being drained. The backup (taken before
          // the first change) gives the type to return to when an earlier run was interrupted half-way.
          const cur = s;
          const orig = ctx.backups.load(refOf(s)) ?? s;
          const patched = cur.spec?.type === 'ExternalName' ? cur
            : await withRetry(() => patchService(ctx.client, cur, { type: 'ExternalName', externalName: this.fqdn(cur.metadata!.name!, cur.metadata!.namespace!) }, false));
          const back = backToType(orig, []);
          delete back.clusterIP;
          delete back.clusterIPs;
          await withRetry(() => patchService(ctx.client, patched, back, false));
          ctx.log(`swept Service ${cur.metadata?.namespace}/${cur.metadata?.name} out of the old range`);
        }
      },
      verify: async (ctx) => {
        const left = await this.stragglers(ctx.client);
        return left.length === 0 ? undefined : `${left.length} Service(s) still in the old range, e.g. ${left[0]!.metadata?.namespace}/${left[0]!.metadata?.name}`;
      },
    };
  }

  private moveKubernetesStep(p: PlanStep): Step {
    const it = p.items![0]!;
    const specs = p.serviceCIDRs ?? [];
    const bridgeSliceName = `${it.bridge}`;
    const done = async (client: KubeClient) => {
      const k = await getObject(client, SERVICES, 'kubernetes', 'default');
      if (!k || k.spec?.type === 'ExternalName' || !sameIPs(ipsOf(k), it.to)) return false;
      if (!it.bridge) return (await this.coversOf(client, [it])).length === 0;
      const b = await getObject(client, SERVICES, it.bridge, 'default');
      const slice = await getObject(client, ENDPOINTSLICES, bridgeSliceName, 'default');
      return !!b && sameIPs(ipsOf(b), it.from) && !!slice && (await this.coversOf(client, [it])).length === 0;
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => done(ctx.client),
      backup: async (ctx) => {
        const k = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
        return k && sameIPs(ipsOf(k), it.from) ? [k] : [];
      },
      apply: async (ctx) => {
        for (const s of specs) await this.ensureServiceCIDR(ctx, s);
        await waitFor('the bridge ServiceCIDR to be Ready', async () =>
          ((await Promise.all(specs.map((s) => this.scState(ctx.client, s)))).every((x) => x === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
        if (this.strategy === 'in-place' && ctx.dryRun === 'none') {
          // The apiserver only creates default/kubernetes when it is missing (it has not reconciled an existing
          // one since 1.17), so it can be moved like any Service: the name and both IPs keep answering.
          const covered = this.opts.covers ? await this.raiseCovers(ctx, [it]) : new Set<string>();
          if (it.bridge) await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
          await this.moveOne(ctx, it, 'in-place', covered.size > 0 ? this.fqdn(coverName('kubernetes'), 'default') : undefined);
          await this.lowerCovers(ctx, [it]);
          return;
        }
        const k = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
        if (k && sameIPs(ipsOf(k), it.from)) {
          await withRetry(() => deleteObject(ctx.client, SERVICES, 'kubernetes', 'default', { uid: k.metadata?.uid }));
        }
        const back = await waitFor('the apiserver to recreate default/kubernetes at the new first IP', async () => {
          const n = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
          return n && !sameIPs(ipsOf(n), it.from) ? n : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 90_000), intervalMs: 500 });
        if (!sameIPs(ipsOf(back), it.to)) {
          throw new Error(`default/kubernetes came back at ${ipsOf(back).join(',')}, not ${it.to.join(',')}: is every apiserver on the new --service-cluster-ip-range?`);
        }
        if (!it.bridge) return;
        const orig = ctx.backups.load(svcRef('default', 'kubernetes')) ?? back;
        const bridge = bridgeService({ ...orig, spec: { ...orig.spec, selector: undefined } }, it.bridge, it.from);
        if (!(await getObject(ctx.client, SERVICES, it.bridge, 'default'))) {
          await this.waitReleased(ctx, it.from, 'default', it.bridge);
          await withRetry(() => createObject(ctx.client, SERVICES, bridge));
        }
        await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'default/kubernetes or its bridge is not in place'),
    };
  }

  private removeBridgesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const specs = p.serviceCIDRs ?? [];
    const present = async (client: KubeClient) => {
      const svcs = await Promise.all(items.map((i) => getObject(client, SERVICES, i.name, i.namespace)));
      const mine = svcs.filter((s) => s?.metadata?.labels?.[MANAGED_LABEL] === 'true') as KubeObject[];
      // covers of interrupted in-place moves (normally removed by their move step)
      mine.push(...(await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL })).filter((s) => s.metadata?.labels?.[MANAGED_LABEL] === 'true'));
      const scs = (await Promise.all(specs.map((s) => getObject(client, this.SC, s.name)))).filter((x) => x && !x.metadata?.deletionTimestamp) as KubeObject[];
      const slices = await listAll(client, ENDPOINTSLICES, { labelSelector: `${MANAGED_LABEL}=true` });
      return [...mine, ...scs, ...slices];
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await present(ctx.client)).length === 0,
      backup: (ctx) => present(ctx.client),
      apply: async (ctx) => {
        for (const o of await present(ctx.client)) {
          const r = refOf(o);
          const t = o.kind === 'ServiceCIDR' ? this.SC : o.kind === 'EndpointSlice' ? ENDPOINTSLICES : SERVICES;
          await withRetry(() => deleteObject(ctx.client, t, r.name, r.namespace, { uid: o.metadata?.uid, dryRun: ctx.dryRun === 'server' }));
        }
      },
      verify: async (ctx) => {
        const left = await present(ctx.client);
        return left.length === 0 ? undefined : `${left.length} bridge object(s) left`;
      },
      rollback: async (ctx) => {
        for (const it of items) {
          const b = ctx.backups.load(svcRef(it.namespace, it.name));
          if (b) await createObject(ctx.client, SERVICES, recreated(b, ipsOf(b)));
        }
      },
    };
  }

  private finalizeStep(p: PlanStep): Step {
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
        await waitFor('ServiceCIDR/kubernetes to be recreated with the new range', async () => {
          const sc = await getObject(ctx.client, this.SC, 'kubernetes');
          if (sc && !sc.metadata?.deletionTimestamp && (sc.spec?.cidrs ?? []).join(',') !== want.join(',') && !(await this.anyIPIn(ctx.client, sc.spec?.cidrs ?? []))) {
            ctx.log('ServiceCIDR/kubernetes came back with the old range (an apiserver still on the old flag?): deleting it again');
            await deleteObject(ctx.client, this.SC, 'kubernetes', undefined, { uid: sc.metadata?.uid });
          }
          return (await kubernetesOnNew(ctx.client)) ? true : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 120_000), intervalMs: 1000 });
        for (const s of specs) await deleteObject(ctx.client, this.SC, s.name);
        await waitFor('the temporary ServiceCIDR to go', async () =>
          ((await Promise.all(specs.map((s) => getObject(ctx.client, this.SC, s.name)))).every((x) => !x) ? true : undefined), { timeoutMs: this.opts.timeoutMs });
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'ServiceCIDR/kubernetes does not hold the new range yet'),
    };
  }

  /** Does any IPAddress sit inside these CIDRs that no other Ready ServiceCIDR covers? */
  private async anyIPIn(client: KubeClient, cidrs: string[]): Promise<boolean> {
    const cs = cidrs.map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
    const others = (await listAll(client, this.SC)).filter((s) => s.metadata?.name !== 'kubernetes' && !s.metadata?.deletionTimestamp)
      .flatMap((s) => (s.spec?.cidrs ?? []).map((c: string) => tryParseCidr(c)).filter((c: Cidr | undefined): c is Cidr => !!c));
    const ips = await listAll(client, this.IPADDR);
    return ips.some((a) => {
      const ip = parseIP(a.metadata!.name!);
      return cs.some((c) => contains(c, ip)) && !others.some((o) => contains(o, ip));
    });
  }

  // ---- end state ----------------------------------------------------------------------------------

  /** The end state, from the cluster and the backups. undefined when all is well. */
  async verifyEndState(client: KubeClient, backups?: { load(r: { apiVersion: string; kind: string; namespace?: string; name: string }): KubeObject | undefined }): Promise<string | undefined> {
    const problems: string[] = [];
    const services = await listAll(client, SERVICES);
    const byKey = new Map(services.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
    for (const m of this.plan.mapping) {
      const s = byKey.get(`${m.namespace}/${m.name}`);
      if (!s) { problems.push(`Service ${m.namespace}/${m.name} is missing`); continue; }
      if (m.action === 'move' && !sameIPs(ipsOf(s), m.to)) problems.push(`Service ${m.namespace}/${m.name} is at ${ipsOf(s).join(',')}, expected ${m.to.join(',')}`);
      if (m.action !== 'move' && m.from.length > 0 && !sameIPs(ipsOf(s), m.from)) problems.push(`${m.action} Service ${m.namespace}/${m.name} changed its IPs`);
      const orig = backups?.load(svcRef(m.namespace, m.name));
      if (orig && m.action === 'move') {
        const strip = (o: KubeObject) => { const { clusterIP, clusterIPs, ...rest } = o.spec ?? {}; void clusterIP; void clusterIPs; return canonical(rest); };
        if (strip(orig) !== strip(s)) problems.push(`Service ${m.namespace}/${m.name}: spec differs from its backup beyond the IPs`);
      }
    }
    const sc = await getObject(client, this.SC, 'kubernetes');
    if (!sc || (sc.spec?.cidrs ?? []).join(',') !== this.svc.to.join(',')) problems.push('ServiceCIDR/kubernetes does not hold the new range');
    const bridges = services.filter((s) => s.metadata?.labels?.[BRIDGE_FOR_LABEL]);
    if (bridges.length > 0) problems.push(`${bridges.length} bridge Service(s) left`);
    const covers = services.filter((s) => s.metadata?.labels?.[COVER_FOR_LABEL]);
    if (covers.length > 0) problems.push(`${covers.length} cover Service(s) left`);
    return problems.length === 0 ? undefined : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`;
  }
}
