/**
 * Pod hostAliases (spec.hostAliases[].ip) of Deployments, StatefulSets, DaemonSets and bare pods: a name the pod's
 * /etc/hosts pins to an address; one in an old range keeps resolving to it after the move.
 */
import type { KubeObject, ReferenceSource } from '../types.ts';
import { podTemplateOf, sourceBase, strings, under, type ReferenceSourceModule } from './types.ts';

function read(o: KubeObject): ReferenceSource[] {
  const t = podTemplateOf(o);
  const list = t?.spec.hostAliases;
  if (!t || !Array.isArray(list)) return [];
  return list.flatMap((h: any, i: number) => (typeof h?.ip === 'string'
    ? [{ ...sourceBase(o), field: under(t.at, `spec.hostAliases[${i}].ip (${strings(h.hostnames).join(', ')})`), format: 'text' as const, use: 'address' as const, strict: true, values: [h.ip] }]
    : []));
}

/** Reads the workloads the workload source lists. */
export const hostAliases: ReferenceSourceModule = { lists: [], read };
