/**
 * What a human or a pipeline changes outside the Kubernetes API, per distribution, as reviewable
 * before/after text: kOps Cluster spec fields, kubeadm ConfigMaps and static pod manifests, k3s config.
 * Pure; the plan attaches these to its gates. Each platform's patches and gate commands are its planner, in
 * its folder under src/platforms/, installed by src/platforms/registry.ts into distributions/registry.ts.
 */
import type { Snapshot } from '../cluster/types.ts';
import { slowUdpConntrackCleanup } from '../analyze/readiness.ts';
import { distributionPlanner } from './distributions/registry.ts';
import type { DistroPatch, PatchContext, ServiceGate } from './distributions/types.ts';

export type { DistroPatch, PatchContext, PatchGate, ServiceGate } from './distributions/types.ts';
export { mergeFeatureGates, mergeRuntimeConfig } from './distributions/common.ts';

/** Every distribution patch of the plan, in gate order. */
export function distroPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  return distributionPlanner(snap).servicePatches(snap, ctx);
}

/** The commands a human or pipeline runs at a gate, per distribution. */
export function gateInstructions(snap: Snapshot, gate: ServiceGate | 'restart-workloads', ctx: PatchContext): string[] {
  const d = distributionPlanner(snap);
  if (gate !== 'restart-workloads') return d.serviceGateInstructions(snap, gate, ctx);
  const slow = slowUdpConntrackCleanup(snap);
  return [
    'restart every workload: for ns in $(kubectl get ns -o jsonpath=\'{.items[*].metadata.name}\'); do kubectl -n "$ns" rollout restart deployment,statefulset,daemonset; done',
    'delete (or let their owners recreate) bare pods and finished-Job pods that are still running',
    ...(slow ? [`kube-proxy ${slow} clears stale UDP conntrack entries slowly (kubernetes/kubernetes#135323): restart CoreDNS at a quiet hour, or lookups from busy nodes can fail for as long as that clean-up takes`] : []),
    ...d.restartWorkloadsNote,
    'kube-renumber resume',
  ];
}
