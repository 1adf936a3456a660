/**
 * Step move-load-balancers and gate load-balancer-address (`plan --load-balancers move`; the plan side is
 * src/plan/load-balancers.ts). A LoadBalancer Service cannot change its ClusterIP in place, and the ExternalName
 * round trip of an in-place move would release its load balancer, so each one is re-created whatever the plan's
 * strategy, one per step:
 *   delete it (uid precondition), create the bridge at its old ClusterIP (in-cluster clients of the old IP keep
 *   answering until the bridges are removed), create it again from its backup at the mapped ClusterIP with the
 *   plan's pin annotations (MetalLB's `metallb.io/loadBalancerIPs` with its current addresses, the Tailscale
 *   operator's hostname), then wait until its status shows the addresses the plan says are kept.
 * The external address is unassigned between the delete and the new assignment: the step logs how long that took.
 * Everything is read back from the cluster (a crash anywhere is resumed by running again: ServiceExecutor.moveOne
 * decides from what it sees), and rollback re-creates the Service from its backup at its old ClusterIP with the same
 * pin, so its external address comes back too, then takes off the pin annotations the backup did not have.
 */
import type { KubeObject } from '../cluster/types.ts';
import { formatIP, parseIP } from '../net/index.ts';
import { getObject, objectPath, SERVICES } from '../kube/resources.ts';
import type { GateStep, LoadBalancerItem, PlanStep, StepItem } from '../plan/steps.ts';
import type { Step, StepContext } from './runner.ts';
import { poll, withRetry } from './toolkit.ts';

/**
 * What these steps use of the Service executor (src/engine/service-steps.ts, which dispatches to them): its
 * timeout, and its moves of one Service, which decide from what the cluster shows (the strategy field says how).
 */
export interface LoadBalancerExecutor {
  readonly opts: { readonly timeoutMs: number };
  readonly strategy: 'in-place' | 'recreate';
  moveOne(ctx: StepContext, it: StepItem, strategy: 'in-place' | 'recreate'): Promise<unknown>;
  moveBack(ctx: StepContext, it: StepItem): Promise<void>;
}
type ServiceExecutor = LoadBalancerExecutor;

const svcRef = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: ns, name });

function norm(a: string): string {
  try { return formatIP(parseIP(a)); } catch { return a.toLowerCase(); }
}

function clusterIPs(s: KubeObject | undefined): string[] {
  if (!s?.spec) return [];
  if (Array.isArray(s.spec.clusterIPs)) return s.spec.clusterIPs.filter((x: string) => x && x !== 'None');
  return s.spec.clusterIP && s.spec.clusterIP !== 'None' ? [s.spec.clusterIP] : [];
}

function sameIPs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => norm(x) === norm(b[i]!));
}

/** The external addresses a Service shows: its status.loadBalancer.ingress IPs and hostnames. */
export function externalAddresses(s: KubeObject | undefined): string[] {
  const ingress = (s?.status?.loadBalancer?.ingress ?? []) as Array<{ ip?: string; hostname?: string }>;
  return ingress.flatMap((i) => [i.ip, i.hostname]).filter((x): x is string => typeof x === 'string' && x !== '').map(norm);
}

/** The kept addresses the Service does not show (yet). */
export function missingAddresses(lb: LoadBalancerItem | undefined, s: KubeObject | undefined): string[] {
  const shown = new Set(externalAddresses(s));
  return (lb?.kept ?? []).map(norm).filter((a) => !shown.has(a));
}

/** The Service as it is created again: its backup with the plan's pin annotations added. */
export function pinned(orig: KubeObject, lb: LoadBalancerItem | undefined): KubeObject {
  if (!lb?.pin || Object.keys(lb.pin).length === 0) return orig;
  return { ...orig, metadata: { ...orig.metadata, annotations: { ...(orig.metadata?.annotations ?? {}), ...lb.pin } } };
}

/** At `ips`, a LoadBalancer again (not the ExternalName of an interrupted in-place move). */
export function at(s: KubeObject | undefined, ips: readonly string[]): boolean {
  return !!s && s.spec?.type !== 'ExternalName' && sameIPs(clusterIPs(s), ips);
}

/** Moved: at the mapped ClusterIPs, its bridge at the old ones, and every kept external address shown again. */
export function loadBalancerMoved(it: StepItem, svc: KubeObject | undefined, bridge: KubeObject | undefined): boolean {
  if (!at(svc, it.to)) return false;
  if (it.bridge && !at(bridge, it.from)) return false;
  return missingAddresses(it.loadBalancer, svc).length === 0;
}

/** A context whose backup of this Service carries the pin annotations (what ServiceExecutor.moveOne creates from). */
function pinnedContext(ctx: StepContext, it: StepItem): StepContext {
  const backups = Object.create(ctx.backups) as StepContext['backups'];
  backups.load = (r) => {
    const o = ctx.backups.load(r);
    return o && r.kind === 'Service' && r.namespace === it.namespace && r.name === it.name ? pinned(o, it.loadBalancer) : o;
  };
  return { ...ctx, backups };
}

/** The executor as it re-creates (whatever the plan's strategy): moveOne and moveBack then delete and create. */
function recreating(x: ServiceExecutor): ServiceExecutor {
  return Object.create(x, { strategy: { value: 'recreate' } }) as ServiceExecutor;
}

/** Waits until the Service shows its kept external addresses; returns the Service. */
async function untilAddresses(x: ServiceExecutor, ctx: StepContext, it: StepItem, ips: readonly string[]): Promise<KubeObject> {
  return poll(`Service ${it.namespace}/${it.name} to show ${(it.loadBalancer?.kept ?? []).join(', ') || 'its ClusterIPs'}`, async (note) => {
    const s = await getObject(ctx.client, SERVICES, it.name, it.namespace);
    if (!at(s, ips)) { note('not re-created yet'); return undefined; }
    const missing = missingAddresses(it.loadBalancer, s);
    if (missing.length > 0) { note(`external address ${missing.join(', ')} not assigned yet (shows ${externalAddresses(s).join(', ') || 'none'})`); return undefined; }
    return s;
  }, { timeoutMs: x.opts.timeoutMs, intervalMs: 20, backoff: 1.5, maxIntervalMs: 250, tolerateTransient: true });
}

/** Takes the pin annotations the backup did not have off the Service (after a rollback put it back). */
async function unpin(ctx: StepContext, it: StepItem): Promise<void> {
  const orig = ctx.backups.load(svcRef(it.namespace, it.name));
  const added = Object.keys(it.loadBalancer?.pin ?? {}).filter((k) => orig?.metadata?.annotations?.[k] === undefined);
  if (added.length === 0 || ctx.dryRun !== 'none') return;
  const cur = await withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace));
  if (!cur || !added.some((k) => cur.metadata?.annotations?.[k] !== undefined)) return;
  await withRetry(() => ctx.client.request<KubeObject>('PATCH', objectPath(SERVICES, it.name, it.namespace), {
    body: { metadata: { resourceVersion: cur.metadata?.resourceVersion, annotations: Object.fromEntries(added.map((k) => [k, null])) } },
    contentType: 'application/merge-patch+json',
    query: { fieldManager: 'kube-renumber' },
  }));
}

/** Step move-load-balancers: one LoadBalancer Service re-created at its mapped ClusterIP, its external address kept where the plan says. */
export function moveLoadBalancerStep(x: ServiceExecutor, p: PlanStep): Step {
  const it = p.items?.[0];
  if (!it) throw new Error(`plan step ${p.id}: a move-load-balancers step names its Service in its first item`);
  const read = async (ctx: StepContext) => Promise.all([
    withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace)),
    it.bridge ? withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace)) : undefined,
  ]);
  return {
    id: p.id, title: p.description, kind: 'action',
    check: async (ctx) => {
      const [svc, bridge] = await read(ctx);
      return loadBalancerMoved(it, svc, bridge);
    },
    backup: async (ctx) => {
      const [svc] = await read(ctx);
      return svc && at(svc, it.from) ? [{ ...svc, apiVersion: svc.apiVersion ?? 'v1', kind: svc.kind ?? 'Service' }] : [];
    },
    apply: async (ctx) => {
      const [svc] = await read(ctx);
      const before = externalAddresses(svc);
      const t0 = Date.now();
      await recreating(x).moveOne(pinnedContext(ctx, it), it, 'recreate');
      if (ctx.dryRun !== 'none') return;
      const s = await untilAddresses(x, ctx, it, it.to);
      const after = externalAddresses(s);
      ctx.log(`LoadBalancer Service ${it.namespace}/${it.name} at ${it.to.join(',')}: external ${after.join(', ') || 'none'} (was ${before.join(', ') || 'none'}), `
        + `assigned again ${Date.now() - t0} ms after the delete began`);
    },
    verify: async (ctx) => {
      const [svc, bridge] = await read(ctx);
      if (!at(svc, it.to)) return `Service ${it.namespace}/${it.name} is at ${clusterIPs(svc).join(',') || 'nothing'}, not ${it.to.join(',')}`;
      if (it.bridge && !at(bridge, it.from)) return `bridge ${it.namespace}/${it.bridge} is not at ${it.from.join(',')}`;
      const missing = missingAddresses(it.loadBalancer, svc);
      if (missing.length > 0) return `Service ${it.namespace}/${it.name} lost its external address ${missing.join(', ')} (shows ${externalAddresses(svc).join(', ') || 'none'})`;
      return undefined;
    },
    rollback: async (ctx) => {
      const pctx = pinnedContext(ctx, it);
      await recreating(x).moveBack(pctx, it);
      if (ctx.dryRun !== 'none') return;
      if (ctx.backups.load(svcRef(it.namespace, it.name))) {
        await untilAddresses(x, ctx, it, it.from);
        await unpin(ctx, it);
      }
    },
    // killed between the delete and the create: rollback creates it again at its old ClusterIP
    rollbackPartial: true,
  };
}

/**
 * Gate load-balancer-address: stops before a LoadBalancer Service whose external address changes. Holds once the
 * Service is at its mapped ClusterIPs (moved by an earlier run), else only by --ack-gate (ServiceExecutor checks that first).
 */
export async function loadBalancerAddressGate(_x: ServiceExecutor, p: GateStep, ctx: StepContext): Promise<boolean> {
  const it = p.items?.[0];
  if (!it) return false;
  const svc = await withRetry(() => getObject(ctx.client, SERVICES, it.name, it.namespace));
  if (at(svc, it.to)) return true;
  const lb = it.loadBalancer;
  ctx.log(`gate ${p.id}: ${it.namespace}/${it.name} will lose ${(lb?.changes ?? []).join(', ') || 'its external address'}`
    + `${lb?.dnsNames?.length ? ` (DNS: ${lb.dnsNames.join(', ')})` : ''}; acknowledge with --ack-gate ${p.id}`);
  return false;
}

/** For `verify`: each LoadBalancer Service the plan moved that does not show the external addresses the plan kept. */
export function loadBalancerEndProblems(steps: readonly PlanStep[], services: readonly KubeObject[]): string[] {
  const byKey = new Map(services.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
  return steps.filter((s) => s.kind === 'move-load-balancers').flatMap((s) => s.items ?? []).flatMap((it) => {
    const missing = missingAddresses(it.loadBalancer, byKey.get(`${it.namespace}/${it.name}`));
    return missing.length > 0 ? [`LoadBalancer Service ${it.namespace}/${it.name} does not show its external address ${missing.join(', ')}`] : [];
  });
}
