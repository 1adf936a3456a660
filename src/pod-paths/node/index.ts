/**
 * The node IPAM pod path, whole: pods take addresses from their node's spec.podCIDR (flannel, kubenet,
 * host-local, Cilium's kubernetes IPAM), so kube-controller-manager stops allocating, every node is drained,
 * deleted, re-registered and given a podCIDR in NEW, and allocation from NEW resumes. Plan side: plan.ts;
 * executors: engine.ts, the node steps in executor.ts (NodeExecutor), the node hook in hook.ts; its kinds:
 * kinds.ts; its RBAC: rbac.ts. Listed once in src/pod-paths/registry.ts.
 */
import type { PodPathModule } from '../module.ts';
import { nodeEngine } from './engine.ts';
import { NODE_GATE_CONDITIONS, NODE_STEP_KINDS } from './kinds.ts';
import { nodePath } from './plan.ts';
import { NODE_RBAC } from './rbac.ts';

export const node: PodPathModule<'node'> = {
  plan: nodePath,
  engine: nodeEngine,
  stepKinds: NODE_STEP_KINDS,
  kinds: [], // Nodes and Pods: the core's kinds (src/kube/kinds.ts)
  rbac: NODE_RBAC,
  gateConditions: NODE_GATE_CONDITIONS,
};
