/**
 * The Calico pod path, whole: a new IPPool modelled on the old one, the old pool disabled, every workload
 * restarted in waves, the old pool and its leftover blocks removed. Plan side: plan.ts; executors: engine.ts; its
 * types and kinds: kinds.ts. Listed once in src/pod-paths/registry.ts.
 */
import { BLOCKAFFINITIES, INSTALLATIONS, IPAMBLOCKS, IPAMHANDLES, IPPOOLS } from '../../kube/calico.ts';
import type { PodPathModule } from '../module.ts';
import { calicoEngine } from './engine.ts';
import { CALICO_GATE_CONDITIONS, CALICO_STEP_KINDS } from './kinds.ts';
import { calicoPath } from './plan.ts';
import { CALICO_RBAC } from './rbac.ts';

export const calico: PodPathModule<'calico'> = {
  plan: calicoPath,
  engine: calicoEngine,
  stepKinds: CALICO_STEP_KINDS,
  kinds: [IPPOOLS, IPAMBLOCKS, BLOCKAFFINITIES, IPAMHANDLES, INSTALLATIONS],
  rbac: CALICO_RBAC,
  gateConditions: CALICO_GATE_CONDITIONS,
};
