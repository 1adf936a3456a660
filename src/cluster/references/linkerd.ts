/**
 * Linkerd's clusterNetworks: the networks its proxies treat as the cluster's (service discovery, opaque ports), in
 * the chart values kept as YAML under key `values` of ConfigMap linkerd-config (docs/references.md). Its default
 * (all private blocks) holds any new range and is reported, as a wide value, as a warning at most.
 */
import { parseEmbeddedYaml } from '../kubeadm-config.ts';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { sourceBase, type ReferenceSourceModule } from './types.ts';

function read(o: KubeObject): ReferenceSource[] {
  if (o.kind !== 'ConfigMap' || o.metadata?.name !== 'linkerd-config' || typeof o.data?.values !== 'string') return [];
  const values = parseEmbeddedYaml(o.data.values);
  const v = typeof values === 'string' ? undefined : values.clusterNetworks;
  return typeof v === 'string' && v.trim() !== ''
    ? [{ ...sourceBase(o), field: 'data["values"].clusterNetworks', format: 'csv', use: 'capture', values: [v] }]
    : [];
}

/** Reads the ConfigMaps the ConfigMap source lists. */
export const linkerd: ReferenceSourceModule = { lists: [], read };
