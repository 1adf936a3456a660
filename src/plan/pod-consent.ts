/**
 * The confirmation a Pod CIDR migration asks before its first write, as `kubectl drain` refuses without --force
 * and --delete-emptydir-data: what cannot come back as it was. Every pod is created again (evicted, or restarted by
 * its owner), so emptyDir volumes start empty; bare pods (no controller) are deleted and created again from their
 * backup (same spec, new uid, their emptyDir lost); and what the path's own steps delete (PodPath.consent: on the
 * node IPAM path every node is deleted and registered again, and the labels and taints set on it through the API, not
 * by its kubelet, are put back from its backup once it has registered). `apply --yes` confirms it. Pure.
 */
import { recreateGrantText } from './recreate-grants.ts';
import type { PodCIDRSpec } from './pod-spec.ts';
import type { PlanStep } from './steps.ts';

export const POD_CONSENT_STEP = 'confirm-pod-disruption';

/** The confirm step; `pathLost`: what the pod path's own steps delete (PodPath.consent), after what every path deletes. */
export function podConsentStep(spec: PodCIDRSpec, pathLost: readonly string[]): PlanStep {
  const lost = [
    'every pod is created again in the new range: emptyDir volumes start empty (kubectl drain --delete-emptydir-data)',
    `bare pods (no controller) are deleted and created again from their backup: same spec, new uid (kubectl drain --force)${spec.barePodNamespaces ? (spec.barePodNamespaces.length > 0 ? `; they run in namespace(s) ${spec.barePodNamespaces.join(', ')}` : '; none runs now') : ''}`,
    ...pathLost,
  ];
  return {
    id: POD_CONSENT_STEP, kind: 'confirm',
    description: `confirm the disruptive Pod steps: ${lost.join('; ')}`,
    gate: {
      reason: 'what these steps delete does not come back as it was; like kubectl drain, they run only once confirmed',
      instructions: [
        'check the plan\'s pod and node list (kube-renumber plan -o markdown)',
        ...(spec.barePodNamespaces && spec.barePodNamespaces.length > 0
          ? [recreateGrantText(spec.barePodNamespaces)]
          : []),
        'kube-renumber resume --yes (apply --yes confirms it)',
      ],
      check: 'none: a person confirms',
    },
    rollback: 'nothing to undo',
  };
}
