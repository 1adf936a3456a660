/**
 * Step move-kubernetes: default/kubernetes to the first IP of the new range, with the bridge ServiceCIDR that lets
 * its bridge keep the old first IP. In place like any Service (covered, bridged); with the recreate strategy it is
 * deleted and the apiserver makes it again at the new first IP, then its bridge is created.
 */
import type { KubeClient } from '../../kube/client.ts';
import { deleteObject, ENDPOINTSLICES, getObject, SERVICES } from '../../kube/resources.ts';
import { coverName, type PlanStep } from '../../plan/plan.ts';
import type { Step } from '../runner.ts';
import { poll, withRetry } from '../toolkit.ts';
import { ipsOf, itemKey, sameIPs } from './common.ts';
import { coversIn, itemDone, notOursError, squatters } from './decisions.ts';
import { MappingSteps } from './mapping.ts';

export class KubernetesStep extends MappingSteps {
  protected moveKubernetesStep(p: PlanStep): Step {
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
        await poll('the bridge ServiceCIDR to be Ready', async () =>
          ((await Promise.all(specs.map((s) => this.scState(ctx.client, s)))).every((x) => x === 'ready') ? true : undefined), { timeoutMs: this.opts.timeoutMs });
        if (this.strategy === 'in-place' && ctx.dryRun === 'none') {
          // The apiserver only creates default/kubernetes when it is missing (it has not reconciled an existing
          // one since 1.17), so it can be moved like any Service: the name and both IPs keep answering.
          const view = await this.observe(ctx.client, [it]);
          const foreign = squatters(view, [it], this.opts.token);
          if (foreign.length > 0) throw notOursError(foreign, this.opts.token, (k) => view.get(k));
          const covers = new Map(coversIn(view, [it], this.opts.token).map((c) => [itemKey(it), c]));
          const covered = this.opts.covers && !itemDone(view, it) ? await this.raiseCovers(ctx, [it], view, covers) : new Set<string>();
          if (it.bridge) await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
          await this.moveItem(ctx, it, 'in-place', { svc: view.get(itemKey(it)), bridge: it.bridge ? view.get(`default/${it.bridge}`) : undefined },
            covered.size > 0 ? this.fqdn(coverName('kubernetes'), 'default') : undefined);
          await this.lowerCovers(ctx, [it], covers);
          return;
        }
        const k = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
        if (k && sameIPs(ipsOf(k), it.from)) {
          await withRetry(() => deleteObject(ctx.client, SERVICES, 'kubernetes', 'default', { uid: k.metadata?.uid }));
        }
        const back = await poll('the apiserver to recreate default/kubernetes at the new first IP', async () => {
          const n = await getObject(ctx.client, SERVICES, 'kubernetes', 'default');
          return n && !sameIPs(ipsOf(n), it.from) ? n : undefined;
        }, { timeoutMs: Math.max(this.opts.timeoutMs, 90_000), intervalMs: 500 });
        if (!sameIPs(ipsOf(back), it.to)) {
          throw new Error(`default/kubernetes came back at ${ipsOf(back).join(',')}, not ${it.to.join(',')}: is every apiserver on the new --service-cluster-ip-range?`);
        }
        if (!it.bridge) return;
        await this.ensureKubernetesBridge(ctx, it, it.bridge, back);
        await this.copySlices(ctx, 'default', 'kubernetes', it.bridge);
      },
      verify: async (ctx) => ((await done(ctx.client)) ? undefined : 'default/kubernetes or its bridge is not in place'),
    };
  }
}
