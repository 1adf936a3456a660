/**
 * The Cilium multi-pool pod path, whole: a new CiliumPodIPPool in NEW, cilium-config's default pool and
 * native-routing CIDR changed around the workload restarts, the old pool drained and deleted. Plan side: plan.ts;
 * executors: engine.ts; its types and kinds: kinds.ts. Listed once in src/pod-paths/registry.ts.
 */
import type { PodPathModule } from '../module.ts';
import { CILIUM_MULTI_POOL_KINDS, ciliumMultiPoolEngine } from './engine.ts';
import { CILIUM_GATE_CONDITIONS, CILIUM_STEP_KINDS } from './kinds.ts';
import { ciliumMultiPoolPath } from './plan.ts';
import { CILIUM_MULTI_POOL_RBAC } from './rbac.ts';

export const ciliumMultiPool: PodPathModule<'cilium-multi-pool'> = {
  plan: ciliumMultiPoolPath,
  engine: ciliumMultiPoolEngine,
  stepKinds: CILIUM_STEP_KINDS,
  kinds: CILIUM_MULTI_POOL_KINDS,
  rbac: CILIUM_MULTI_POOL_RBAC,
  gateConditions: CILIUM_GATE_CONDITIONS,
};
