/**
 * Calico BGPConfiguration: spec.serviceClusterIPs, serviceExternalIPs and serviceLoadBalancerIPs (each a list of
 * `{cidr}`) are the Service ranges Calico advertises over BGP. One naming the old Service range stops advertising
 * the new one until it is listed (docs/references.md).
 */
import type { KubeObject, ReferenceSource } from '../types.ts';
import { sourceBase, type ReferenceSourceModule } from './types.ts';

const FIELDS = ['serviceClusterIPs', 'serviceExternalIPs', 'serviceLoadBalancerIPs'] as const;

function read(o: KubeObject): ReferenceSource[] {
  const av = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  if (o.kind !== 'BGPConfiguration' || !(av.startsWith('crd.projectcalico.org/') || av.startsWith('projectcalico.org/'))) return [];
  const out: ReferenceSource[] = [];
  for (const f of FIELDS) {
    const list = o.spec?.[f];
    const values = Array.isArray(list) ? list.map((x: any) => x?.cidr).filter((c: unknown): c is string => typeof c === 'string') : [];
    if (values.length > 0) out.push({ ...sourceBase(o), field: `spec.${f}[].cidr`, format: 'list', use: 'advertise', values });
  }
  return out;
}

export const calicoBgp: ReferenceSourceModule = {
  lists: [{ group: 'crd.projectcalico.org', version: 'v1', plural: 'bgpconfigurations', kind: 'BGPConfiguration', namespaced: false }],
  read,
};
