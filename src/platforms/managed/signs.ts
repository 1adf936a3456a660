/**
 * What the managed control planes (EKS, GKE, AKS) have in common when they are recognised: signs that only the
 * provider's own control plane or node images leave (a label key only it sets, its kubelet build suffix, its
 * apiserver host name) decide; signs that a self-managed cluster on the same cloud also shows (the providerID
 * scheme, which kOps on AWS or GCE sets too, a cloud CNI's DaemonSet, a ConfigMap) are only reported alongside.
 */
import type { PlatformInput, PlatformNode } from '../../platform/types.ts';
import { firstAndMore } from '../../text.ts';

/** How one managed platform is recognised. */
export interface ManagedSigns {
  /** Node label keys only this platform sets, with the value they must have (undefined: any value). */
  labels: ReadonlyArray<{ key: string; value?: string }>;
  /** The platform's own kubelet build suffix, e.g. /-eks-[0-9a-f]{7}$/. */
  kubeletVersion?: RegExp;
  /** The apiserver host of a live read, e.g. /\.eks\.amazonaws\.com$/. */
  serverHost?: RegExp;
  /** The providerID scheme (supporting only: kOps and other installers on the same cloud set it too). */
  providerID?: string;
  /** "namespace/name" of DaemonSets the platform installs (supporting only). */
  daemonSets?: readonly string[];
  /** "namespace/name" of ConfigMaps the platform installs (supporting only). */
  configMaps?: readonly string[];
}

/** At most this many nodes are named per sign, so evidence stays one readable line each. */
const NAMED = 2;

function nodesList(nodes: readonly PlatformNode[]): string {
  return firstAndMore(nodes.map((n) => n.name), NAMED);
}

function hostOf(server: string): string | undefined {
  try {
    return new URL(server).hostname;
  } catch {
    return undefined;
  }
}

/**
 * The evidence for one managed platform: the deciding signs first, then the supporting ones; undefined when no
 * deciding sign is there (a providerID, DaemonSet or ConfigMap alone never decides).
 */
export function managedEvidence(input: PlatformInput, signs: ManagedSigns): string[] | undefined {
  const deciding: string[] = [];
  for (const l of signs.labels) {
    const with_ = input.nodes.filter((n) => l.key in n.labels && (l.value === undefined || n.labels[l.key] === l.value));
    if (with_.length === 0) continue;
    const first = with_[0]!;
    deciding.push(`node label ${l.key}=${first.labels[l.key]} on ${with_.length === input.nodes.length && input.nodes.length > 1 ? `all ${with_.length} nodes` : nodesList(with_)}`);
  }
  if (signs.kubeletVersion) {
    const re = signs.kubeletVersion;
    const with_ = input.nodes.filter((n) => n.kubeletVersion !== undefined && re.test(n.kubeletVersion));
    if (with_.length > 0) deciding.push(`kubelet ${with_[0]!.kubeletVersion} on ${nodesList(with_)}`);
  }
  if (signs.serverHost && input.server) {
    const host = hostOf(input.server);
    if (host && signs.serverHost.test(host)) deciding.push(`apiserver ${host}`);
  }
  if (deciding.length === 0) return undefined;
  const supporting: string[] = [];
  if (signs.providerID) {
    const with_ = input.nodes.filter((n) => n.providerID?.startsWith(signs.providerID!));
    if (with_.length > 0) supporting.push(`providerID ${with_[0]!.providerID}`);
  }
  const ds = (signs.daemonSets ?? []).filter((d) => input.daemonSets.has(d));
  if (ds.length > 0) supporting.push(`DaemonSet${ds.length > 1 ? 's' : ''} ${ds.join(', ')}`);
  const cms = (signs.configMaps ?? []).filter((c) => input.configMaps.has(c));
  if (cms.length > 0) supporting.push(`ConfigMap${cms.length > 1 ? 's' : ''} ${cms.join(', ')}`);
  return [...deciding, ...supporting];
}
