/**
 * Whether the platform a cluster runs on lets kube-renumber make a move (src/platform/): checked by `plan` before
 * anything is planned and by `apply`/`resume` against the live cluster before the first write, so no plan ever
 * starts a change its gates cannot finish there.
 */
import { platformKindOf, type Snapshot } from '../cluster/types.ts';
import { capabilityOf, platformOf } from '../platform/registry.ts';
import type { Move } from '../platform/types.ts';

const WHAT: Record<Move, string> = { service: 'Service CIDR', pod: 'Pod CIDR' };

/** Why a move is refused on this snapshot's platform (one line: reason, what the platform offers, the evidence), or undefined. */
export function platformRefusal(snap: Snapshot, move: Move): string | undefined {
  const kind = platformKindOf(snap);
  const cap = capabilityOf(kind, move);
  if (cap.supported) return undefined;
  const title = snap.platform?.title ?? platformOf(kind)?.title ?? kind;
  const evidence = snap.platform?.evidence[0];
  return `moving the ${WHAT[move]} is refused on ${title}: ${cap.reason}; instead: ${cap.instead}${evidence ? ` (platform recognised by ${evidence})` : ''}`;
}

/** The moves a plan makes. */
export function movesOf(plan: { spec: { serviceCIDR?: unknown; podCIDR?: unknown } }): Move[] {
  return [...(plan.spec.serviceCIDR ? ['service' as const] : []), ...(plan.spec.podCIDR ? ['pod' as const] : [])];
}
