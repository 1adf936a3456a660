/**
 * Every pod IPAM owner kube-renumber knows, in the order they are tried: the first whose detect() finds evidence
 * owns the cluster's pod addresses. A new owner is one module under src/ipam/ and one line here.
 */
import { calicoManifest, calicoOperator } from './calico.ts';
import { ciliumClusterPool, ciliumMultiPool, ciliumOther } from './cilium.ts';
import { awsVpcCni, azureCni, gkeAliasRanges } from './cloud.ts';
import { nodePodCIDR } from './node-podcidr.ts';
import type { ApiResource } from '../vocabulary.ts';
import type { IpamInput, IpamObjectFacts, IpamObjectsInput, IpamOwner, IpamOwnerFacts, OwnerCapability } from './types.ts';

export const IPAM_OWNERS = [
  awsVpcCni,
  azureCni,
  gkeAliasRanges,
  ciliumClusterPool,
  ciliumMultiPool,
  ciliumOther,
  calicoOperator,
  calicoManifest,
  nodePodCIDR,
] as const satisfies readonly IpamOwner[];

export type IpamOwnerKind = (typeof IPAM_OWNERS)[number]['kind'];

/** The owner of this kind; undefined for one no longer known. */
export function ipamOwnerOf(kind: string): IpamOwner | undefined {
  return (IPAM_OWNERS as readonly IpamOwner[]).find((o) => o.kind === kind);
}

/** The first owner (in registry order) that finds evidence; undefined when none can tell. */
export function detectIpamOwner(input: IpamInput): IpamOwnerFacts | undefined {
  for (const o of IPAM_OWNERS as readonly IpamOwner[]) {
    const evidence = o.detect(input);
    if (evidence && evidence.length > 0) return { kind: o.kind, title: o.title, evidence };
  }
  return undefined;
}

/** What the owner of this kind allows; an unknown kind is refused. */
export function ownerCapabilityOf(kind: string): OwnerCapability {
  return ipamOwnerOf(kind)?.pod ?? { supported: false, reason: `pod IPAM owner "${kind}" is not one kube-renumber knows`, instead: 'plan again with this version of kube-renumber' };
}

/** The API resources the owners read (IpamOwner.reads), in registry order. */
export function ipamResources(): ApiResource[] {
  return (IPAM_OWNERS as readonly IpamOwner[]).flatMap((o) => o.reads ?? []);
}

/** Every owner's facts from what was read (detected or not): their snapshot fields and ranges, in registry order. */
export function ipamObjectFacts(input: IpamObjectsInput): IpamObjectFacts {
  const out: IpamObjectFacts = { snapshot: {}, ranges: [] };
  for (const o of IPAM_OWNERS as readonly IpamOwner[]) {
    const f = o.facts?.(input);
    if (!f) continue;
    Object.assign(out.snapshot, f.snapshot);
    out.ranges.push(...f.ranges);
  }
  return out;
}
