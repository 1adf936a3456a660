/**
 * The bridges of a Service CIDR move: a Service at the old IPs with the moved Service's selector and ports, so
 * clients of the old IP keep reaching it until they restart; created during a move (after the old IP is released),
 * and removed by step remove-bridges once nothing uses the old range. The bridge of default/kubernetes is created
 * here too (step move-kubernetes, recreate strategy).
 *
 * Both creates try again while the allocator of a draining ServiceCIDR is "not ready" (isAllocatorNotReady): the
 * one of a moved Service's bridge within its move's other retries (a taken IP is waited for, at most 3 attempts),
 * the one of default/kubernetes's bridge on its own; they stay two loops, since one would loosen the first's cap.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../../kube/client.ts';
import { createObject, deleteObject, ENDPOINTSLICES, getObject, listAll, SERVICES } from '../../kube/resources.ts';
import { resourceOfObject } from '../../kube/kinds.ts';
import { formatIP, parseIP } from '../../net/index.ts';
import { MANAGED_LABEL, type PlanStep, type StepItem } from '../../plan/plan.ts';
import { refOf } from '../backup.ts';
import { COVER_FOR_LABEL, ownedHelper, RUN_LABEL } from '../covers.ts';
import type { Step, StepContext } from '../runner.ts';
import { poll, sleep, withRetry } from '../toolkit.ts';
import { BRIDGE_FOR_LABEL, ipsOf, isIPTaken, recreated, sameIPs, svcRef } from './common.ts';
import { ServiceCIDRSteps } from './service-cidrs.ts';

/**
 * "failed to allocate IP …: allocator not ready": before 1.33 (measured on v1.30.14) an explicit IP is served by the
 * allocator of the largest ServiceCIDR containing it, which refuses while that ServiceCIDR is being deleted, even when
 * a smaller Ready one covers the IP too. It passes once the Terminating one is gone (kube-controller-manager removes
 * it seconds after its last address is released), so such a create is tried again until then.
 */
export function isAllocatorNotReady(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 422 && /allocator not ready/i.test(e.message);
}

/** A bridge: same selector and ports (no nodePorts), at the old IPs. Selectorless bridges get an EndpointSlice. */
export function bridgeService(orig: KubeObject, name: string, ips: string[], run?: string): KubeObject {
  const s = orig.spec ?? {};
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name, namespace: orig.metadata!.namespace, labels: { [MANAGED_LABEL]: 'true', [BRIDGE_FOR_LABEL]: orig.metadata!.name!, ...(run ? { [RUN_LABEL]: run } : {}) } },
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


export class BridgeSteps extends ServiceCIDRSteps {
  /**
   * Create the bridge at the old IPs unless it is there. The apiserver releases the IPAddress of a Service
   * that went ExternalName asynchronously (measured: usually at once, up to seconds): when the create is
   * refused because the old IP is still allocated, wait until it is released, then create again.
   */
  protected async ensureBridge(ctx: StepContext, orig: KubeObject, it: StepItem, seen: KubeObject | undefined): Promise<KubeObject | undefined> {
    if (!it.bridge) return undefined;
    if (seen) {
      this.adopt(ctx, seen, BRIDGE_FOR_LABEL, it.name);
      if (!sameIPs(ipsOf(seen), it.from)) throw new Error(`bridge ${it.namespace}/${it.bridge} exists at ${ipsOf(seen).join(',')}, not ${it.from.join(',')}`);
      return seen;
    }
    const body = bridgeService(orig, it.bridge, it.from, this.opts.token);
    const notReadyUntil = Date.now() + Math.max(this.opts.timeoutMs, 60_000);
    for (let attempt = 1; ; attempt++) {
      try {
        // createObject returns an object that already exists under the name: adopt() refuses it unless it is ours
        const b = this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, body, { dryRun: ctx.dryRun === 'server' })), BRIDGE_FOR_LABEL, it.name);
        if (!sameIPs(ipsOf(b), it.from) && ctx.dryRun === 'none') throw new Error(`bridge ${it.namespace}/${it.bridge} exists at ${ipsOf(b).join(',')}, not ${it.from.join(',')}`);
        return b;
      } catch (e) {
        if (isAllocatorNotReady(e) && ctx.dryRun === 'none' && Date.now() < notReadyUntil) {
          if (attempt === 1 || attempt % 10 === 0) ctx.log(`bridge ${it.namespace}/${it.bridge} at ${it.from.join(',')}: the allocator of the draining ServiceCIDR refuses it until that ServiceCIDR is gone; trying again`);
          await sleep(1000);
          continue;
        }
        if (!isIPTaken(e) || ctx.dryRun !== 'none') throw e;
        // A create whose answer was lost (the connection broke after the apiserver stored it) is refused on retry
        // because the bridge itself now holds the old IP: the bridge is there, ours, at the old IPs.
        // adopt() refuses a bridge that is not this run's, and journals its uid.
        const existing = await withRetry(() => getObject(ctx.client, SERVICES, it.bridge!, it.namespace));
        if (existing && sameIPs(ipsOf(existing), it.from)) return this.adopt(ctx, existing, BRIDGE_FOR_LABEL, it.name);
        if (attempt >= 3) throw e;
        await this.waitReleased(ctx, it.from, it.namespace, it.bridge);
      }
    }
  }

  /**
   * The bridge of default/kubernetes after the apiserver made it again at the new first IP (recreate strategy):
   * selectorless, at the old first IP, created once that IP is released (move-kubernetes copies its EndpointSlice).
   */
  protected async ensureKubernetesBridge(ctx: StepContext, it: StepItem, bridgeName: string, back: KubeObject): Promise<void> {
    const orig = ctx.backups.load(svcRef('default', 'kubernetes')) ?? back;
    const bridge = bridgeService({ ...orig, spec: { ...orig.spec, selector: undefined } }, bridgeName, it.from, this.opts.token);
    const there = await getObject(ctx.client, SERVICES, bridgeName, 'default');
    if (there) this.adopt(ctx, there, BRIDGE_FOR_LABEL, 'kubernetes');
    else {
      await this.waitReleased(ctx, it.from, 'default', bridgeName);
      const until = Date.now() + Math.max(this.opts.timeoutMs, 60_000);
      for (;;) {
        try {
          this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, bridge)), BRIDGE_FOR_LABEL, 'kubernetes');
          break;
        } catch (e) {
          if (!isAllocatorNotReady(e) || Date.now() >= until) throw e;
          await sleep(1000);
        }
      }
    }
  }

  /**
   * The apiserver releases a Service's IPAddress objects asynchronously after the Service lets go of them
   * (measured: up to a few seconds); wait until each IP is free or already held by `holder`.
   */
  protected async waitReleased(ctx: StepContext, ips: readonly string[], namespace: string, holder: string): Promise<void> {
    if (ctx.dryRun !== 'none') return;
    await poll(`IP ${ips.join(',')} to be released`, async (note) => {
      for (const ip of ips) {
        const a = await getObject(ctx.client, this.IPADDR, formatIP(parseIP(ip)));
        const ref = a?.spec?.parentRef;
        if (a && !(ref?.name === holder && ref?.namespace === namespace)) { note(`held by ${ref?.resource ?? 'object'} ${ref?.namespace ?? ''}/${ref?.name ?? ''}`); return undefined; }
      }
      return true;
    }, { timeoutMs: this.opts.timeoutMs, intervalMs: 50, backoff: 1.5, maxIntervalMs: 250, tolerateTransient: true });
  }

  protected removeBridgesStep(p: PlanStep): Step {
    const items = p.items ?? [];
    const specs = p.serviceCIDRs ?? [];
    const present = async (client: KubeClient) => {
      const svcs = await Promise.all(items.map((i) => getObject(client, SERVICES, i.name, i.namespace)));
      // bridges of this run only (a Service of a bridge's name that is not ours is left alone)
      const mine = svcs.filter((s) => !!s && ownedHelper(s, BRIDGE_FOR_LABEL, s.metadata?.labels?.[BRIDGE_FOR_LABEL] ?? '', this.opts.token)) as KubeObject[];
      // covers of interrupted in-place moves (normally removed by their move step)
      mine.push(...(await listAll(client, SERVICES, { labelSelector: COVER_FOR_LABEL }))
        .filter((s) => ownedHelper(s, COVER_FOR_LABEL, s.metadata?.labels?.[COVER_FOR_LABEL] ?? '', this.opts.token)));
      const scs = (await Promise.all(specs.map((s) => getObject(client, this.SC, s.name)))).filter((x) => x && !x.metadata?.deletionTimestamp) as KubeObject[];
      const slices = await listAll(client, ENDPOINTSLICES, { labelSelector: `${MANAGED_LABEL}=true${this.opts.token ? `,${RUN_LABEL}=${this.opts.token}` : ''}` });
      return [...mine, ...scs, ...slices];
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => (await present(ctx.client)).length === 0,
      backup: (ctx) => present(ctx.client),
      apply: async (ctx) => {
        for (const o of await present(ctx.client)) {
          const r = refOf(o);
          const t = resourceOfObject(o) ?? SERVICES;
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
          const forName = b?.metadata?.labels?.[BRIDGE_FOR_LABEL] ?? '';
          if (b) this.adopt(ctx, await withRetry(() => createObject(ctx.client, SERVICES, recreated(b, ipsOf(b)))), BRIDGE_FOR_LABEL, forName);
        }
      },
    };
  }

}
