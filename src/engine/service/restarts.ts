/**
 * The restarts after a Service CIDR move: when the moves that change what a pod is given at start (default/kubernetes,
 * the DNS Service, the kubelets' DNS) were done, the pods started before them, gate workloads-restarted and step
 * restart-workloads (the Pod CIDR path's restart engine on those pods' workloads).
 */
import type { KubeObject } from '../../cluster/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { getObject, listAll, PODS } from '../../kube/resources.ts';
import type { PlanStep } from '../../plan/plan.ts';
import { DEPLOYMENTS, PODDISRUPTIONBUDGETS } from '../../kube/workloads.ts';
import { readJournal, sinceLastRollback } from '../journal.ts';
import type { Step, StepContext } from '../runner.ts';
import { missingBarePods, recreateMissing, restartInWaves } from '../restart-run.ts';
import { pdbsFor, resolveWorkloads, restoreScale, scaledReplicas, scaleUp, skipReason, type Workload } from '../restarts.ts';
import { poll, withRetry } from '../toolkit.ts';
import { MANAGED_BY } from './common.ts';
import { GateChecks } from './gates.ts';

export class RestartSteps extends GateChecks {
  /**
   * When default/kubernetes and the DNS Service moved and the kubelets took the new DNS (ms since the epoch): the
   * latest of those steps' first completion since the last rollback; undefined while one is not done.
   */
  movedAt(ctx: StepContext): number | undefined {
    // since the last rollback: a move undone and made again counts from when it was made again
    const entries = sinceLastRollback(readJournal(ctx.journal.path));
    // when each of these first completed (later runs journal a skip again: those times do not count)
    const moved: number[] = [];
    const dnsKey = this.plan.mapping.filter((m) => m.isDNS).map((m) => `${m.namespace}/${m.name}`);
    const movers = this.plan.steps.filter((s) => s.kind === 'move-kubernetes'
      || (s.kind === 'move-services' && (s.items ?? []).some((i) => dnsKey.includes(`${i.namespace}/${i.name}`)))
      || (s.kind === 'gate' && s.gate.condition === 'kubelet-cluster-dns'));
    for (const { id } of movers) {
      const first = entries.find((e) => e.step === id && (e.event === 'step-done' || e.event === 'step-skip'));
      if (!first) return undefined;
      moved.push(Date.parse(first.ts));
    }
    return moved.length > 0 ? Math.max(...moved) : undefined;
  }

  /**
   * The running pods that started before `since` and so still hold the old nameserver and Service variables:
   * hostNetwork pods (dnsPolicy ClusterFirstWithHostNet included: the node's resolver) and mirror pods (the kubelet
   * owns them) aside.
   */
  async stalePods(client: KubeClient, since: number): Promise<KubeObject[]> {
    const pods = await withRetry(() => listAll(client, PODS));
    return pods.filter((p) => { const why = skipReason(p); return (why === undefined || why === 'no-ip') && p.status?.phase === 'Running'
      && Date.parse(p.status?.startTime ?? p.metadata?.creationTimestamp ?? '') < since - 1000; });
  }

  /** No running pod (hostNetwork and mirror pods aside) started before default/kubernetes and the DNS moved. */
  async podsRestarted(ctx: StepContext): Promise<boolean> {
    const since = this.movedAt(ctx);
    if (since === undefined) return false;
    const stale = await this.stalePods(ctx.client, since);
    if (stale.length > 0) ctx.log(`${stale.length} pod(s) still started before the move, e.g. ${stale.slice(0, 3).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ')}`);
    return stale.length === 0;
  }

  /**
   * A StatefulSet whose pods a PodDisruptionBudget covers has its stale pods evicted one at a time through the
   * Eviction API (its controller creates each again from the same template), not rolled out: the StatefulSet
   * controller's rolling update does not consult budgets (measured on the testbed, v1.37: a Parallel StatefulSet of 2
   * behind maxUnavailable 1 had both pods unready during a rollout restart). A Service move needs its pods started
   * again, not a new template.
   */
  protected async budgetedStatefulSets(client: KubeClient, workloads: Workload[], pods: readonly KubeObject[]): Promise<Workload[]> {
    if (!workloads.some((w) => w.kind === 'StatefulSet')) return workloads;
    const pdbs = await withRetry(() => listAll(client, PODDISRUPTIONBUDGETS));
    return workloads.map((w): Workload => {
      if (w.kind !== 'StatefulSet') return w;
      const covered = pods.some((p) => p.metadata?.namespace === w.namespace && w.pods.includes(p.metadata?.name ?? '') && pdbsFor(p, pdbs).length > 0);
      return covered ? { kind: 'Other', namespace: w.namespace, name: w.name, pods: w.pods, owner: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: w.name } } : w;
    });
  }

  /**
   * Step restart-workloads: the restart engine of the Pod CIDR path (../restarts.ts, ../restart-run.ts) on every
   * workload with a pod started before the moves. The critical Deployments (the cluster DNS, --critical) are
   * scaled up by one and restarted first, then put back. Done, from the cluster: no such pod is left, no bare pod
   * this run deleted is missing, the critical Deployments are back at their replicas. A kill at any point is resumed
   * by running it again: a workload whose template carries this run's token is only awaited, a pod started after the
   * moves is never restarted, a scaled Deployment is not scaled twice (its original count is in its backup).
   */
  protected restartWorkloadsStep(p: PlanStep): Step {
    const spec = this.svc.restarts ?? { parallel: 4, critical: [], barePodNamespaces: [] };
    const crit = spec.critical.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name! }; });
    const run = { parallel: spec.parallel, critical: spec.critical, token: this.opts.token ?? MANAGED_BY, rolloutTimeoutMs: this.opts.rolloutTimeoutMs, step: p.id };
    const movedAt = (ctx: StepContext) => {
      const since = this.movedAt(ctx);
      if (since === undefined) throw new Error('move-kubernetes (and kubelet-cluster-dns, where the DNS moves) are not done in this run: the restarts come after them');
      return since;
    };
    const scaledBack = async (ctx: StepContext) => {
      for (const r of crit) {
        const b = ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name });
        const cur = b && await withRetry(() => getObject(ctx.client, DEPLOYMENTS, r.name, r.namespace));
        if (b && cur && (cur.spec?.replicas ?? 1) === scaledReplicas(b.spec?.replicas ?? 1) && (cur.spec?.replicas ?? 1) !== (b.spec?.replicas ?? 1)) return false;
      }
      return true;
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => {
        const since = this.movedAt(ctx);
        return since !== undefined && (await this.stalePods(ctx.client, since)).length === 0 && (await missingBarePods(ctx)).length === 0 && (await scaledBack(ctx));
      },
      // each workload is backed up right before its pod template is patched (or a bare pod before its eviction),
      // and each critical Deployment before it is scaled (backUpLate, journaled): a resumed run keeps the first copy
      apply: async (ctx) => {
        const since = movedAt(ctx);
        if (ctx.dryRun === 'none') await recreateMissing(ctx, run);
        for (const r of crit) {
          if (!(await scaleUp(ctx, r, { timeoutMs: this.opts.rolloutTimeoutMs }))) (ctx.warn ?? ctx.log)(`Deployment ${r.namespace}/${r.name} not found: not scaled up`);
        }
        // Rounds: a pod a slow controller created from an old template meanwhile is caught by the next one.
        for (let round = 1; round <= 3; round++) {
          const pods = await this.stalePods(ctx.client, since);
          if (pods.length === 0) break;
          const g = await resolveWorkloads(ctx.client, pods);
          for (const u of g.unknownOwners) (ctx.warn ?? ctx.log)(`pod ${u.namespace}/${u.pod} is owned by ${u.kind} ${u.name} (${u.apiVersion}), which this tool does not know: it is evicted and left to that controller`);
          await restartInWaves(ctx, await this.budgetedStatefulSets(ctx.client, g.workloads, pods), run);
          if (ctx.dryRun !== 'none') break;
        }
        for (const r of crit) {
          if (ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name })) await restoreScale(ctx, r);
        }
      },
      verify: async (ctx) => {
        const since = movedAt(ctx);
        try {
          await poll('no pod left that started before the moves', async () => ((await this.stalePods(ctx.client, since)).length === 0 ? true : undefined), { timeoutMs: this.opts.timeoutMs });
        } catch {
          const left = await this.stalePods(ctx.client, since);
          return `${left.length} pod(s) still started before the moves: ${left.slice(0, 5).map((x) => `${x.metadata?.namespace}/${x.metadata?.name}`).join(', ')}`;
        }
        return (await scaledBack(ctx)) ? undefined : `${crit.map((r) => `${r.namespace}/${r.name}`).join(', ')} not back at their replicas`;
      },
      // restarted pods cannot be un-restarted (nor need to be): only the replicas of the scaled Deployments go back
      rollback: async (ctx) => {
        for (const r of crit) {
          if (ctx.backups.load({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: r.namespace, name: r.name })) await restoreScale(ctx, r);
        }
      },
    };
  }
}
