/**
 * Whether the platform a cluster runs on lets kube-renumber make a move (src/platform/): checked by `plan` before
 * anything is planned and by `apply`/`resume` against the live cluster before the first write, so no plan ever
 * starts a change its gates cannot finish there.
 */
import { platformKindOf, type Snapshot } from '../cluster/types.ts';
import { capabilityOf, platformOf } from '../platform/registry.ts';
import type { Move } from '../platform/types.ts';
import { ownerCapabilityOf } from '../ipam/registry.ts';
import type { PodPathId } from '../ipam/types.ts';
import { ipamOwnerFacts } from '../analyze/ipam-owner.ts';
import { podPath } from './pod-paths/registry.ts';

export { ipamOwnerFacts };

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

/** The pod path the owner of the pod addresses allows (one of POD_PATH_IDS); undefined when refused or unknown. */
export function podPathOf(snap: Snapshot): PodPathId | undefined {
  const owner = ipamOwnerFacts(snap);
  if (!owner) return undefined;
  const cap = ownerCapabilityOf(owner.kind);
  return cap.supported ? cap.path : undefined;
}

/**
 * Why the owner of the pod addresses refuses a Pod CIDR move (one line), or the platform refuses it for that owner
 * (Platform.ownerCapability), or undefined. `forced`: the --ipam the user
 * gave, which cannot change who hands out the addresses.
 */
export function podOwnerRefusal(snap: Snapshot, forced?: PodPathId): string | undefined {
  const owner = ipamOwnerFacts(snap);
  if (!owner) return undefined;
  const cap = ownerCapabilityOf(owner.kind);
  const forcedText = forced ? ` (--ipam ${forced} cannot change who hands out the addresses)` : '';
  if (!cap.supported) {
    return `moving the Pod CIDR is refused: ${owner.title} hands out pod addresses here: ${cap.reason}; instead: ${cap.instead}`
      + `${forcedText} (recognised by ${owner.evidence[0]})`;
  }
  // a path whose IPAM reads only its own objects (PodPath.mixes false) is neither forced elsewhere nor forced onto another's owner
  if (forced && forced !== cap.path && (!podPath(cap.path).mixes || !podPath(forced).mixes)) {
    return `moving the Pod CIDR with --ipam ${forced} is refused: ${owner.title} hands out pod addresses here, and only the ${cap.path} path moves them`
      + ` (--ipam ${forced} would change what ${podPath(cap.path).reader ?? 'this IPAM'} does not read; give --ipam ${cap.path} or no --ipam) (recognised by ${owner.evidence[0]})`;
  }
  const kind = platformKindOf(snap);
  const said = platformOf(kind)?.ownerCapability?.(owner.kind);
  if (!said || said.supported) return undefined;
  const title = snap.platform?.title ?? platformOf(kind)?.title ?? kind;
  return `moving the Pod CIDR is refused on ${title} with ${owner.title}: ${said.reason}; instead: ${said.instead}${forcedText} (recognised by ${owner.evidence[0]})`;
}
