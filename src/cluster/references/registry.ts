/**
 * Every source of the references scan kept in this folder, once: a Record over ReferenceSourceId, so a source
 * without its line here does not compile. A new source is one file here and one line below. Nothing happens at
 * import: ReferenceCollector (../reference-sources.ts) asks each source of each object, and the live read
 * (src/kube/discover.ts) and the read role (src/plan/rbac-core.ts) take the lists from referenceLists().
 */
import { calicoBgp } from './calico-bgp.ts';
import { configMaps } from './config-maps.ts';
import { endpointSlices } from './endpoint-slices.ts';
import { gitops } from './gitops.ts';
import { helmReleases } from './helm.ts';
import { hostAliases } from './host-aliases.ts';
import { istio } from './istio.ts';
import { linkerd } from './linkerd.ts';
import type { ReferenceList, ReferenceOptIn, ReferenceSourceModule } from './types.ts';
import { webhooks } from './webhooks.ts';
import { workloads } from './workloads.ts';

export type ReferenceSourceId = 'calico-bgp' | 'istio' | 'linkerd' | 'workloads' | 'config-maps' | 'host-aliases' | 'endpoint-slices' | 'webhooks' | 'helm-releases' | 'gitops';

export const REFERENCE_SOURCES: { readonly [I in ReferenceSourceId]: ReferenceSourceModule } = {
  'calico-bgp': calicoBgp,
  istio,
  linkerd,
  workloads,
  'config-maps': configMaps,
  'host-aliases': hostAliases,
  'endpoint-slices': endpointSlices,
  webhooks,
  'helm-releases': helmReleases,
  gitops,
};

/** What the live read lists for the sources, each resource once; an opt-in list only when `optIn` names it. */
export function referenceLists(optIn: readonly ReferenceOptIn[] = []): ReferenceList[] {
  const seen = new Set<string>();
  return Object.values(REFERENCE_SOURCES).flatMap((s) => s.lists).filter((l) => {
    if (l.optIn !== undefined && !optIn.includes(l.optIn)) return false;
    const key = `${l.group}/${l.plural}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
