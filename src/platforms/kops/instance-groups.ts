/**
 * kOps InstanceGroups (`kops get instancegroups -o yaml`, given with -f: they live in the kOps state store, like the
 * Cluster spec): spec.maxSize (else spec.minSize, kOps' maximum when none is set) of every group that registers
 * nodes is the most nodes it may reach (https://kops.sigs.k8s.io/instance_groups/).
 */
import { count } from '../../cluster/node-limits.ts';
import type { PlatformNodeGroup } from '../../platform/types.ts';
import type { KubeObject } from '../../vocabulary.ts';

/** The API group of kOps' documents, in both spellings the kOps CLI accepts. */
export const KOPS_GROUPS = ['kops.k8s.io', 'kops'] as const;

/** kOps InstanceGroup roles that register nodes (a Bastion does not). */
const KOPS_NODE_ROLES = new Set(['Node', 'Master', 'ControlPlane', 'APIServer']);

const groupOf = (apiVersion: unknown): string => (typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');

const name = (o: KubeObject) => `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name ?? '?'}`;

/** kOps InstanceGroups: spec.maxSize (else spec.minSize) of every group that registers nodes. */
export function kopsNodeGroups(configs: readonly KubeObject[], warn: (message: string) => void): PlatformNodeGroup[] {
  const out: PlatformNodeGroup[] = [];
  for (const o of configs) {
    if (o.kind !== 'InstanceGroup' || !(KOPS_GROUPS as readonly string[]).includes(groupOf(o.apiVersion))) continue;
    const role = typeof o.spec?.role === 'string' ? o.spec.role : 'Node';
    if (!KOPS_NODE_ROLES.has(role)) continue;
    const max = count(o.spec?.maxSize);
    const min = count(o.spec?.minSize);
    if (o.spec?.maxSize !== undefined && max === undefined) warn(`kOps InstanceGroup ${name(o)}: spec.maxSize ${JSON.stringify(o.spec.maxSize)} is not a whole number; ignored`);
    const n = max ?? min;
    if (n === undefined) {
      warn(`kOps InstanceGroup ${name(o)}: no spec.maxSize or spec.minSize; its nodes are not counted in the most nodes the cluster may reach`);
      continue;
    }
    out.push({ name: o.metadata?.name ?? '?', max: n, source: `kOps InstanceGroup ${o.metadata?.name ?? '?'} spec.${max !== undefined ? 'maxSize' : 'minSize'}` });
  }
  return out;
}
