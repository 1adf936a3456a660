/**
 * Every platform kube-renumber knows, in the order they are tried: the first whose detect() finds evidence is the
 * cluster's platform. A new platform is one module under src/platform/ and one line here.
 */
import { aks } from './aks.ts';
import { eks } from './eks.ts';
import { generic } from './generic.ts';
import { gke } from './gke.ts';
import { k3s } from './k3s.ts';
import { rke2 } from './rke2.ts';
import { kops, kubeadm, kubespray } from './self-managed.ts';
import { openshift } from './openshift.ts';
import type { Capability, DnsServiceCandidate, Move, Platform, PlatformFacts, PlatformInput, PlatformRange, PlatformResource, ReservedRange } from './types.ts';

export const PLATFORMS = [
  openshift,
  eks,
  gke,
  aks,
  rke2,
  k3s,
  kops,
  kubespray,
  kubeadm,
  generic,
] as const satisfies readonly Platform[];

export type PlatformKind = (typeof PLATFORMS)[number]['kind'];

/** The platform of this kind; undefined for a kind no longer known (an old plan). */
export function platformOf(kind: string): Platform | undefined {
  return (PLATFORMS as readonly Platform[]).find((p) => p.kind === kind);
}

/** The resources any platform wants listed live. */
export function platformResources(): PlatformResource[] {
  return (PLATFORMS as readonly Platform[]).flatMap((p) => p.reads ?? []);
}

/** The first platform (in registry order) that finds evidence, with what it reads and reserves. */
export function detectPlatform(input: PlatformInput): { platform: Platform; facts: PlatformFacts; ranges: PlatformRange[] } {
  for (const p of PLATFORMS as readonly Platform[]) {
    const evidence = p.detect(input);
    if (!evidence || evidence.length === 0) continue;
    const reserved: ReservedRange[] = p.reserved?.(input) ?? [];
    return { platform: p, facts: { kind: p.kind, title: p.title, evidence, reserved }, ranges: p.ranges?.(input) ?? [] };
  }
  throw new Error('no platform matched: the generic platform must be last and always match');
}

/** What the platform of this kind allows for a move; an unknown kind is refused. */
export function capabilityOf(kind: string, move: Move): Capability {
  const p = platformOf(kind);
  if (!p) return { supported: false, reason: `platform "${kind}" is not one kube-renumber knows`, instead: 'plan again with this version of kube-renumber' };
  return p.capabilities[move];
}

/** DNS Service candidates of the platform, before the generic kube-dns rules. */
export function platformDnsServices(kind: string): readonly DnsServiceCandidate[] {
  return platformOf(kind)?.dnsServices ?? [];
}
