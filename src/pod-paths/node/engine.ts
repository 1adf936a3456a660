/**
 * The node IPAM pod path, engine side (plan side: plan.ts): each node drained and deleted,
 * re-registered (by the node hook, else at a gate), and given its podCIDR in NEW; gates kcm-stop-allocating,
 * kcm-cluster-cidr and node-reregistered; and the nodes' part of the end state. The node steps themselves are
 * methods of PodExecutor (src/engine/pod-steps.ts), which hands them over as NodeSteps.
 */
import { NODES } from '../../kube/calico.ts';
import { listAll } from '../../kube/resources.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { PlanStep } from '../../plan/steps.ts';
import type { Step } from '../../engine/runner.ts';
import { withRetry } from '../../engine/toolkit.ts';
import { cidrsWithin, controlPlaneView } from '../../engine/pod-paths/common.ts';
import type { NodeSteps, PodPathEngine, PodPathHost } from '../../engine/pod-paths/types.ts';

/** What the node path's executors use of PodExecutor. */
export interface NodePathHost extends PodPathHost {
  readonly node: NodeSteps;
}

export const nodeEngine: PodPathEngine<'node', NodePathHost> = {
  id: 'node',
  steps: {
    'drain-node': (pe, p) => pe.node.drainNodeStep(p),
    'reregister-node': (pe, p) => pe.node.reregisterStep(p),
    'assign-podcidr': (pe, p) => pe.node.assignStep(p),
    'move-nodes': (pe, p) => pe.node.moveNodesStep(p),
  },
  gates: {
    'kcm-stop-allocating': async (_pe, _p, ctx) => {
      const v = await controlPlaneView(ctx.client);
      return v.kcm.length > 0 && v.kcm.every((k) => k.allocateNodeCIDRs === false);
    },
    'kcm-cluster-cidr': async (pe, _p, ctx) => {
      const v = await controlPlaneView(ctx.client);
      return v.kcm.length > 0 && v.kcm.every((k) => k.allocateNodeCIDRs !== false && cidrsWithin(pe.target, k.clusterCIDR));
    },
    'node-reregistered': (pe, p, ctx) => pe.node.allRegistered(ctx.client, p),
  },
  async endState(pe, client, ctx) {
    const problems: string[] = [];
    const nodes = await withRetry(() => listAll(client, NODES));
    const bad = nodes.filter((n) => { const c: string[] = n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []); return c.length === 0 || !!pe.node.podCIDRProblem(c); });
    if (bad.length > 0) problems.push(`${bad.length} node(s) without a podCIDR in ${pe.spec.to.length > 1 ? 'each of ' : ''}${pe.spec.to.join(',')}: ${bad.slice(0, 5).map((n) => `${n.metadata?.name} ${(n.spec?.podCIDRs ?? []).join(',') || 'none'}`).join(', ')}`);
    const cordoned = nodes.filter((n) => n.spec?.unschedulable === true);
    if (cordoned.length > 0 && ctx) {
      const ours = cordoned.filter((n) => ctx.backups.load({ apiVersion: 'v1', kind: 'Node', name: n.metadata!.name! })?.spec?.unschedulable !== true);
      if (ours.length > 0) problems.push(`node(s) left cordoned: ${ours.map((n) => n.metadata?.name).join(', ')}`);
    }
    return problems;
  },
};
