/**
 * The node IPAM pod path, engine side (plan side: plan.ts): each node drained and deleted,
 * re-registered (by the node hook, else at a gate), and given its podCIDR in NEW; gates kcm-stop-allocating,
 * kcm-cluster-cidr and node-reregistered; and the nodes' part of the end state. The node steps themselves are
 * NodeExecutor's (executor.ts), one per run: PodExecutor (src/engine/pod-steps.ts) is its host.
 */
import { NODES } from '../../kube/calico.ts';
import { listAll } from '../../kube/resources.ts';
import { withRetry } from '../../engine/toolkit.ts';
import { cidrsWithin, controlPlaneView } from '../../engine/pod-paths/common.ts';
import type { PodPathEngine } from '../../engine/pod-paths/types.ts';
import { NodeExecutor, type NodePathHost } from './executor.ts';

export type { NodePathHost } from './executor.ts';

/**
 * The node executor of a run, one per host (PodExecutor is one per run): the drains' pacing (--node-interval) and
 * the listings that cordon the nodes still to move span every step of the run, a rollback's included.
 */
const executors = new WeakMap<NodePathHost, NodeExecutor>();
export function nodeExecutor(pe: NodePathHost): NodeExecutor {
  let x = executors.get(pe);
  if (!x) {
    x = new NodeExecutor(pe);
    executors.set(pe, x);
  }
  return x;
}

export const nodeEngine: PodPathEngine<'node', NodePathHost> = {
  id: 'node',
  steps: {
    'drain-node': (pe, p) => nodeExecutor(pe).drainNodeStep(p),
    'reregister-node': (pe, p) => nodeExecutor(pe).reregisterStep(p),
    'assign-podcidr': (pe, p) => nodeExecutor(pe).assignStep(p),
    'move-nodes': (pe, p) => nodeExecutor(pe).moveNodesStep(p),
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
    'node-reregistered': (pe, p, ctx) => nodeExecutor(pe).allRegistered(ctx.client, p),
  },
  async endState(pe, client, ctx) {
    const problems: string[] = [];
    const nodes = await withRetry(() => listAll(client, NODES));
    const bad = nodes.filter((n) => { const c: string[] = n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []); return c.length === 0 || !!nodeExecutor(pe).podCIDRProblem(c); });
    if (bad.length > 0) problems.push(`${bad.length} node(s) without a podCIDR in ${pe.spec.to.length > 1 ? 'each of ' : ''}${pe.spec.to.join(',')}: ${bad.slice(0, 5).map((n) => `${n.metadata?.name} ${(n.spec?.podCIDRs ?? []).join(',') || 'none'}`).join(', ')}`);
    const cordoned = nodes.filter((n) => n.spec?.unschedulable === true);
    if (cordoned.length > 0 && ctx) {
      const ours = cordoned.filter((n) => ctx.backups.load({ apiVersion: 'v1', kind: 'Node', name: n.metadata!.name! })?.spec?.unschedulable !== true);
      if (ours.length > 0) problems.push(`node(s) left cordoned: ${ours.map((n) => n.metadata?.name).join(', ')}`);
    }
    return problems;
  },
};
