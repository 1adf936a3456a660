/** What the live read keeps of objects read only for the addresses they name: no managedFields, no kubectl copy. */
import type { KubeObject } from '../types.ts';

export function slimReferenceConfig(o: KubeObject): KubeObject {
  const md = o.metadata;
  if (!md) return o;
  const { managedFields, ...rest } = md;
  void managedFields;
  if (rest.annotations && 'kubectl.kubernetes.io/last-applied-configuration' in rest.annotations) {
    const { 'kubectl.kubernetes.io/last-applied-configuration': last, ...keep } = rest.annotations;
    void last;
    rest.annotations = keep;
  }
  return { ...o, metadata: rest };
}
