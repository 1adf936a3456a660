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
    // one workload at a time, each rollout awaited, stopping at the first that does not finish: what the tool does
    // itself, less the parallelism and the PodDisruptionBudget-aware evictions (never every namespace at once)
    'restart every workload one at a time, waiting for each rollout and stopping at the first that does not finish: '
      + 'for ns in $(kubectl get ns -o jsonpath=\'{.items[*].metadata.name}\'); do for w in $(kubectl -n "$ns" get deployment,statefulset,daemonset -o name); do '
      + 'kubectl -n "$ns" rollout restart "$w" && kubectl -n "$ns" rollout status "$w" --timeout=10m || break 2; done; done',
    'delete (or let their owners recreate) bare pods and finished-Job pods that are still running',
    ...(slow ? [`kube-proxy ${slow} clears stale UDP conntrack entries slowly (kubernetes/kubernetes#135323): restart CoreDNS at a quiet hour, or lookups from busy nodes can fail for as long as that clean-up takes`] : []),
    ...d.restartWorkloadsNote,
    'kube-renumber resume',
  ];
}
