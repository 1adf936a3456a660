/**
 * The steps of a Pod CIDR migration, in three lists (before the restarts, the restarts, the clean-up after
 * them): the pod path's own (src/plan/pod-paths/) with the steps every path shares around them (the critical
 * Deployments scaled up and back, verify-pods last), and what the paths' gates share (their distribution patches
 * and instructions). buildPodSection (pod-plan.ts) builds the spec they are written from.
 */
import type { DistroPatch } from './distro-patches.ts';
import { plannerById } from './distributions/registry.ts';
import type { PodCIDRSpec, PodPatchGate } from './pod-spec.ts';
import type { Distribution, PodPath, PodStepInputs, PodStepLists } from './pod-paths/types.ts';
import type { PlanStep } from './steps.ts';
import { podConsentStep } from './pod-consent.ts';

export type { PodStepInputs, PodStepLists } from './pod-paths/types.ts';

/** The step lists of `spec`'s pod path, with the critical Deployments scaled around the restarts and verify-pods last. */
export function podStepLists(path: Pick<PodPath, 'stepLists' | 'endState' | 'consent'>, spec: PodCIDRSpec, distro: Distribution, patches: DistroPatch[]): PodStepLists {
  const inp: PodStepInputs = { spec, distro, patches };
  const scale = criticalScaleSteps(spec.restarts.critical);
  const own = path.stepLists(inp);
  return {
    prepare: [podConsentStep(spec, path.consent(spec)), ...own.prepare, scale.up],
    restart: own.restart,
    finish: [scale.down, ...own.finish, verifyPodsStep(spec, path.endState(spec))],
  };
}

/** Step `verify-pods`: the end state of the Pod CIDR migration (`endState`: what the path checks besides pods and workloads). */
function verifyPodsStep(spec: PodCIDRSpec, endState: string): PlanStep {
  return {
    id: 'verify-pods', kind: 'verify-pods',
    description: `check the end state: no non-hostNetwork pod has an address in ${spec.from.join(', ')}; every Deployment, StatefulSet and DaemonSet at its desired replicas${endState}`,
    rollback: 'nothing to undo',
  };
}

/** Steps `scale-critical` and `restore-scale` for the critical Deployments (namespace/name). */
function criticalScaleSteps(critical: readonly string[]): { up: PlanStep; down: PlanStep } {
  const critItems = critical.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name!, from: [], to: [] }; });
  return {
    up: {
      id: 'scale-critical', kind: 'scale-critical',
      description: `scale ${critical.join(', ') || 'no Deployment'} up by one replica (at least 2) before pods restart, so name resolution never rests on one pod`,
      items: critItems,
      rollback: 'put the replicas back from the backup',
    },
    down: {
      id: 'restore-scale', kind: 'restore-scale',
      description: `put ${critical.join(', ') || 'no Deployment'} back to the replicas they had before scale-critical`,
      items: critItems,
      rollback: 'nothing to undo',
    },
  };
}

/** The distribution patches a pod gate shows. */
export function patchesFor(inp: PodStepInputs, gate: PodPatchGate): DistroPatch[] {
  return inp.patches.filter((p) => p.gate === gate);
}

/** What a person (or pipeline) runs at a pod gate, per distribution. */
export function podGateInstructions(distro: Distribution, gate: PodPatchGate): string[] {
  return plannerById(distro).podGateInstructions(gate);
}
