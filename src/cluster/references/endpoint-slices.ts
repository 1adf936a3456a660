/**
 * EndpointSlices the EndpointSlice controller does not manage (label endpointslice.kubernetes.io/managed-by other
 * than endpointslice-controller.k8s.io, or none): written by hand, by another controller, or mirrored from a custom
 * Endpoints object (endpointslicemirroring-controller.k8s.io). Their addresses are not updated when pods move.
 */
import type { KubeObject, ReferenceSource } from '../types.ts';
import { slimReferenceConfig } from './slim.ts';
import { sourceBase, strings, type ReferenceSourceModule } from './types.ts';

export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
export const ENDPOINTSLICE_CONTROLLER = 'endpointslice-controller.k8s.io';

function read(o: KubeObject): ReferenceSource[] {
  if (o.kind !== 'EndpointSlice' || !String(o.apiVersion ?? '').startsWith('discovery.k8s.io/')) return [];
  if (o.metadata?.labels?.[MANAGED_BY_LABEL] === ENDPOINTSLICE_CONTROLLER) return [];
  const values = [...new Set((Array.isArray(o.endpoints) ? o.endpoints : []).flatMap((e: any) => strings(e?.addresses)))];
  return values.length > 0 ? [{ ...sourceBase(o), field: 'endpoints[].addresses', format: 'text', use: 'address', strict: true, values }] : [];
}

export const endpointSlices: ReferenceSourceModule = {
  lists: [{ group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', kind: 'EndpointSlice', namespaced: true, slim: slimReferenceConfig }],
  read,
};
