/**
 * ConfigMaps outside kube-system (kube-system's are read by the core sources): addresses and CIDRs in their data,
 * such as a resolver or proxy configuration naming a ClusterIP, or trusted-proxy ranges naming the pod range.
 */
import { slimReferenceConfig } from './slim.ts';
import { addressTokens } from '../address-tokens.ts';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { sourceBase, type ReferenceSourceModule } from './types.ts';

function read(o: KubeObject): ReferenceSource[] {
  if (o.kind !== 'ConfigMap' || o.metadata?.namespace === 'kube-system' || !o.data || typeof o.data !== 'object') return [];
  const out: ReferenceSource[] = [];
  for (const [key, text] of Object.entries(o.data)) {
    if (typeof text !== 'string') continue;
    const values = addressTokens(text);
    if (values.length > 0) out.push({ ...sourceBase(o), field: `data["${key}"]`, format: 'text', use: 'address', values });
  }
  return out;
}

export const configMaps: ReferenceSourceModule = {
  lists: [{ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true, fieldSelector: 'metadata.namespace!=kube-system', slim: slimReferenceConfig }],
  read,
};
