/**
 * What kOps leaves in what the cluster model read (PlatformInput), as evidence lines, strongest first:
 *  - a kOps Cluster spec given (-f), the first one (its name, apiVersion and layout);
 *  - kops-controller pods in kube-system (k8s-app=kops-controller; up to 8 named);
 *  - nodes labelled kops.k8s.io/instancegroup (counted, one named).
 */
import { isKopsCluster, parseKopsCluster } from '../../cluster/kops-spec.ts';
import type { PlatformInput } from '../../platform/types.ts';

export function kopsSigns(input: PlatformInput): string[] {
  const out: string[] = [];
  const spec = input.configs.find((c) => c && typeof c === 'object' && isKopsCluster(c));
  if (spec) out.push(`kOps Cluster spec ${spec.metadata?.name ?? ''} (${spec.apiVersion}, ${parseKopsCluster(spec).networking.layout} layout)`);
  let pods = 0;
  for (const w of input.systemWorkloads) {
    if (w.kind !== 'Pod' || w.app !== 'kops-controller' || pods >= 8) continue;
    out.push(`pod kube-system/${w.name} (kops-controller)`);
    pods++;
  }
  const labelled = input.nodes.filter((n) => n.labels['kops.k8s.io/instancegroup'] !== undefined);
  if (labelled.length > 0) {
    const first = labelled[0]!;
    out.push(`${labelled.length} node(s) labelled kops.k8s.io/instancegroup (e.g. ${first.name}: ${first.labels['kops.k8s.io/instancegroup']})`);
  }
  return out;
}
