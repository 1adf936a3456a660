/**
 * The platform seam: what kube-renumber knows about where a cluster runs (its installer or its managed control
 * plane). Each platform is one folder under src/platforms/<id>/ whose module (src/platforms/module.ts) gives a
 * `Platform` (this file) and, where the plan edits its configuration, a planner (src/plan/distributions/types.ts);
 * src/platforms/registry.ts installs them here and into the planners' registry. Everything a platform knows lives in
 * its folder: how it is recognised (with the evidence shown to the user), the ranges its own configuration names,
 * the ranges it reserves for itself, its DNS Service, and what kube-renumber may change on it (with the reason and
 * the platform's own path where it may not).
 *
 * Pure data and pure functions of a PlatformInput; imports only the shared vocabulary, so the cluster model can
 * call it while building a snapshot.
 */
import { objectKey, type ApiResource, type KubeObject, type RangeRole } from '../vocabulary.ts';

/** What a node shows a platform: labels, annotations, providerID, kubelet version, addresses. */
export interface PlatformNode {
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  /** spec.providerID, e.g. aws:///us-east-1a/i-0abc, gce://project/zone/name, azure:///subscriptions/... */
  providerID?: string;
  /** status.nodeInfo.kubeletVersion, e.g. v1.31.4-eks-aeac579, v1.30.6+k3s1, v1.30.6+rke2r1. */
  kubeletVersion?: string;
}

/** An API resource a platform wants listed live (when the server serves it) and kept for detection. */
export type PlatformResource = ApiResource;

/** Everything a platform's detection and readers may look at, gathered in the snapshot builder's one pass. */
export interface PlatformInput {
  nodes: readonly PlatformNode[];
  /** Objects of the kinds some platform declared in `reads`, by `objectKey(group, kind)`. */
  objects: ReadonlyMap<string, readonly KubeObject[]>;
  /** "namespace/name" of every DaemonSet seen, as an object or as the controlling owner of a pod. */
  daemonSets: ReadonlySet<string>;
  /** Every namespace an object was seen in. */
  namespaces: ReadonlySet<string>;
  /** ConfigMaps by "namespace/name" (a live read lists those of kube-system). */
  configMaps: ReadonlyMap<string, KubeObject>;
  /** The apiserver URL of a live read. */
  server?: string;
  /**
   * The installer signs the cluster model weighed in its one pass (src/distro/detect.ts): the installer they name,
   * with the evidence; a platform recognised by its installer's signs reads them here.
   */
  installer: { kind: string; evidence: readonly string[] };
}

export { objectKey };

/** The objects of one declared kind. */
export function objectsOf(input: PlatformInput, group: string, kind: string): readonly KubeObject[] {
  return input.objects.get(objectKey(group, kind)) ?? [];
}

/** A range the platform's own configuration names (OpenShift Network.config, k3s node-args, ...). */
export interface PlatformRange {
  cidr: string;
  role: RangeRole;
  /** Where it was read, e.g. "Network.config.openshift.io/cluster spec.serviceNetwork". */
  source: string;
  label: string;
}

/** A range the platform uses for itself: no cluster range or target may overlap it. */
export interface ReservedRange {
  cidr: string;
  /** Why, e.g. "OVN-Kubernetes join subnet (internalJoinSubnet default)". */
  reason: string;
}

/** The moves kube-renumber plans. */
export type Move = 'service' | 'pod';

/**
 * What kube-renumber may do on a platform for one move: `supported`, or `refused` with the platform's reason (with
 * its source) and what the platform offers instead.
 */
export type Capability =
  | { readonly supported: true }
  | { readonly supported: false; readonly reason: string; readonly instead: string };

/**
 * A well-known identity of a cluster DNS Service: its namespace, its name (any name when absent) and the labels its
 * selector carries. The generic ones (kube-dns, CoreDNS) are in src/cluster/dns-service.ts; a platform lists its own.
 */
export interface DnsServiceCandidate {
  namespace: string;
  name?: string;
  selector: Readonly<Record<string, string>>;
  /** Said before the selector in the snapshot's `foundBy`, e.g. "the platform's DNS Service". */
  origin?: string;
}

/**
 * Every platform id: a platform's folder adds its own by declaration merging (`declare module` of this file), so
 * the registry's Record (src/platforms/registry.ts) makes the compiler name a folder without its registry line and
 * a line without its folder.
 */
export interface PlatformIds {}
export type PlatformId = keyof PlatformIds & string;

export interface Platform<K extends string = string> {
  readonly kind: K;
  /** Human name, e.g. "Amazon EKS". */
  readonly title: string;
  /** Resources to list live and keep for detect/ranges (a dump's objects of these kinds are kept too). */
  readonly reads?: readonly PlatformResource[];
  /** The evidence that the cluster runs on this platform (non-empty), or undefined. */
  detect(input: PlatformInput): string[] | undefined;
  /** Ranges the platform's own configuration names. */
  ranges?(input: PlatformInput): PlatformRange[];
  /** Ranges the platform reserves for itself (defaults, internal subnets), given what was read. */
  reserved?(input: PlatformInput): ReservedRange[];
  /** The DNS Service(s) the platform's kubelets point at, checked before the generic kube-dns rules. */
  readonly dnsServices?: readonly DnsServiceCandidate[];
  /** What may be moved here. */
  readonly capabilities: Readonly<Record<Move, Capability>>;
  /**
   * What the platform says of a Pod CIDR move by the owner of the pod addresses (an IPAM owner kind of src/ipam/, e.g.
   * "calico-operator"), where the platform manages that owner's configuration itself; undefined: the owner decides.
   */
  ownerCapability?(owner: string): Capability | undefined;
  /** Where the facts above come from (URLs), cited in docs/platforms.md. */
  readonly sources: readonly string[];
  /**
   * Whether a plan's metadata.distribution names this platform (the installers it named before platforms and
   * distributions were one idea: kOps, kubeadm, kubespray, k3s); other platforms are written there as the fallback
   * platform's kind, so plans read the same as before.
   */
  readonly namedInPlans?: boolean;
}

/** The snapshot's record of the platform: which one, why, and what it reserves. */
export interface PlatformFacts {
  kind: string;
  title: string;
  evidence: string[];
  reserved: ReservedRange[];
}

/** A capability that is supported. */
export const SUPPORTED: Capability = { supported: true };
