/**
 * The platforms kube-renumber knows, in the order they are tried: the first whose detect() finds evidence is the
 * cluster's platform, the last (the fallback) matches any cluster. They are installed by src/platforms/registry.ts
 * (one folder under src/platforms/ and one line there per platform); nothing here names one.
 */
import type { KubeObject } from '../vocabulary.ts';
import type { Capability, DnsServiceCandidate, Move, Platform, PlatformFacts, PlatformInput, PlatformNodeGroup, PlatformRange, PlatformResource, ReservedRange } from './types.ts';

const INSTALLED: Platform[] = [];

/** Installs the platforms, in detection order, the fallback last; once. */
export function installPlatforms(list: readonly Platform[]): void {
  if (INSTALLED.length > 0) throw new Error('the platforms are installed already');
  const kinds = new Set(list.map((p) => p.kind));
  if (kinds.size !== list.length) throw new Error('two platforms share a kind');
  INSTALLED.push(...list);
}

/** The installed platforms, in detection order. */
export function platforms(): readonly Platform[] {
  if (INSTALLED.length === 0) throw new Error('no platform installed: call install() (src/install.ts) first');
  return INSTALLED;
}

/** The platform that matches any cluster (the last one). */
export function fallbackPlatform(): Platform {
  return platforms().at(-1)!;
}

/** The platform of this kind; undefined for a kind no longer known (an old plan). */
export function platformOf(kind: string): Platform | undefined {
  return platforms().find((p) => p.kind === kind);
}

/** The resources any platform wants listed live. */
export function platformResources(): PlatformResource[] {
  return platforms().flatMap((p) => p.reads ?? []);
}

/** The first platform (in registry order) that finds evidence, with what it reads and reserves. */
export function detectPlatform(input: PlatformInput): { platform: Platform; facts: PlatformFacts; ranges: PlatformRange[] } {
  for (const p of platforms()) {
    const evidence = p.detect(input);
    if (!evidence || evidence.length === 0) continue;
    const reserved: ReservedRange[] = p.reserved?.(input) ?? [];
    return { platform: p, facts: { kind: p.kind, title: p.title, evidence, reserved, ...(p.envelopeSetting ? { envelopeSetting: p.envelopeSetting } : {}) }, ranges: p.ranges?.(input) ?? [] };
  }
  throw new Error('no platform matched: the fallback platform must be last and always match');
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

/** What a plan's metadata.distribution says of a platform: its kind where plans name it, else the fallback's. */
export function planDistributionOf(kind: string): string {
  return platformOf(kind)?.namedInPlans ? kind : fallbackPlatform().kind;
}

/** The configFiles of the platform whose API group this is (any of its spellings); undefined for other groups. */
export function platformConfigFiles(group: string): Platform['configFiles'] {
  return platforms().find((p) => p.configFiles?.groups.includes(group))?.configFiles;
}

/** The node groups each platform's configuration caps, per platform that reads some: `what` and the groups. */
export function platformNodeGroups(configs: readonly KubeObject[], warn: (message: string) => void): Array<{ what: string; groups: PlatformNodeGroup[] }> {
  return platforms().flatMap((p) => (p.nodeGroups ? [{ what: p.nodeGroups.what, groups: p.nodeGroups.read(configs, warn) }] : []));
}
