/**
 * What the Pod CIDR executor and its pod paths share (src/engine/pod-steps.ts, src/engine/pod-paths/): pods and
 * their addresses, objects ready to back up, and the control plane's view of the pod range (kube-controller-
 * manager's flags, kube-proxy's clusterCIDR). A leaf of src/engine/pod-paths/.
 */
import { buildSnapshot } from '../../cluster/build.ts';
import type { KubeObject } from '../../cluster/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { CONFIGMAPS, listAll, PODS } from '../../kube/resources.ts';
import { contains, formatCidr, overlaps, parseCidr, parseIP, tryParseCidr, type Cidr } from '../../net/index.ts';
import { splitList } from '../../text.ts';
import { withRetry } from '../toolkit.ts';

export const MANAGED_LABEL = 'kube-renumber.io/managed';

export { withKind } from '../../kube/kinds.ts';

export function ipsOf(pod: KubeObject): string[] {
  const list: string[] = (pod.status?.podIPs ?? []).map((x: any) => x?.ip).filter(Boolean);
  if (list.length === 0 && pod.status?.podIP) list.push(pod.status.podIP);
  return list;
}

export function active(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !pod.spec?.hostNetwork && phase !== 'Succeeded' && phase !== 'Failed' && !pod.metadata?.deletionTimestamp;
}

export function inAny(ranges: readonly Cidr[], ip: string): boolean {
  try { const a = parseIP(ip); return ranges.some((r) => contains(r, a)); } catch { return false; }
}

export function cidrIn(ranges: readonly Cidr[], cidr: string | undefined): boolean {
  const c = cidr ? tryParseCidr(cidr) : undefined;
  return !!c && ranges.some((r) => overlaps(r, c));
}

export function sameList(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return !!a && a.length === b.length && a.every((x, i) => formatCidr(parseCidr(x)) === formatCidr(parseCidr(b[i]!)));
}

export function isDaemonSetPod(p: KubeObject): boolean {
  return (p.metadata?.ownerReferences ?? []).some((r) => r.controller && r.kind === 'DaemonSet');
}

export function isMirrorPod(p: KubeObject): boolean {
  return !!p.metadata?.annotations?.['kubernetes.io/config.mirror'];
}

/** Whether every one of `cs` (at least one) lies inside one of `target`. */
export function cidrsWithin(target: readonly Cidr[], cs: string[] | undefined): boolean {
  return !!cs && cs.length > 0 && cs.every((c) => cidrIn(target, c) && target.some((t) => contains(t, parseCidr(c))));
}

/** kube-controller-manager flags and kube-proxy config as the cluster shows them (mirror pods, ConfigMap). */
export async function controlPlaneView(client: KubeClient) {
  const [pods, cms] = await Promise.all([
    withRetry(() => listAll(client, PODS, { namespace: 'kube-system' })),
    withRetry(() => listAll(client, CONFIGMAPS, { namespace: 'kube-system' })),
  ]);
  const snap = buildSnapshot({
    source: { kind: 'live' },
    objects: [...pods.map((x) => ({ ...x, apiVersion: 'v1', kind: 'Pod' })), ...cms.map((x) => ({ ...x, apiVersion: 'v1', kind: 'ConfigMap' }))],
    configs: [], gaps: [],
  });
  return { kcm: snap.controllerManagers, kubeProxy: snap.kubeProxy };
}

/**
 * The final pod gate of a path kube-controller-manager does not allocate for (Calico, Cilium multi-pool): every
 * kube-controller-manager either allocates nothing or has --cluster-cidr within NEW, and kube-proxy's clusterCIDR
 * (when set) covers NEW. False when the cluster shows neither (the gate is then acknowledged by hand).
 */
export async function podRangeConfigDone(client: KubeClient, target: readonly Cidr[]): Promise<boolean> {
  const v = await controlPlaneView(client);
  if (v.kcm.length === 0 && !v.kubeProxy?.clusterCIDR) return false; // nothing visible: --ack-gate
  const kcmOk = v.kcm.every((k) => k.allocateNodeCIDRs === false || cidrsWithin(target, k.clusterCIDR));
  const kp = splitList(v.kubeProxy?.clusterCIDR).map((s) => tryParseCidr(s)).filter((c): c is Cidr => !!c);
  const kpOk = !kp || kp.length === 0 || target.every((t) => kp.some((c) => contains(c, t)));
  return kcmOk && kpOk;
}
