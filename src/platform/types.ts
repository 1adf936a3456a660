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
   * What an installer may leave, as the cluster model's one pass read it (which installer it points to is each
   * platform's call, in its folder): the kube-system pods and DaemonSets, in the order read, with a pod's k8s-app label.
   */
  systemWorkloads: readonly SystemWorkload[];
  /** The words (command and args) of each control-plane static pod read, kube-apiserver and kube-controller-manager, in order. */
  controlPlaneFlags: readonly { readonly pod: string; readonly words: readonly string[] }[];
  /** Calico's cluster type where it is written: each ClusterInformation spec.clusterType, then ConfigMap calico-config data.cluster_type. */
  calicoClusterTypes: readonly CalicoClusterType[];
  /** The configuration documents given (-f) or found among the objects (kubeadm ClusterConfiguration, a platform's configFiles), in order. */
  configs: readonly KubeObject[];
}

/** A kube-system pod (with its k8s-app label) or DaemonSet. */
export type SystemWorkload =
  | { readonly kind: 'Pod'; readonly name: string; readonly app: unknown }
  | { readonly kind: 'DaemonSet'; readonly name: string };

/** A Calico cluster type as written, and where. */
export interface CalicoClusterType {
  readonly object: 'ClusterInformation' | 'ConfigMap';
  /** "namespace/name" of the ConfigMap; the ClusterInformation's is not shown. */
  readonly where: string;
  readonly value: string;
}

/** A group of nodes a platform's configuration caps (e.g. an InstanceGroup's maxSize). */
export interface PlatformNodeGroup {
  name: string;
  max: number;
  /** Where the cap was read, e.g. "<kind> nodes-a spec.maxSize". */
  source: string;
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
   * Documents of the platform's own API read only from files (its state lives outside the cluster API, -f): their
   * API groups (every spelling) and the kinds read; other kinds of those groups are ignored. `validated`: the kinds
   * checked as configuration when found among the objects (src/cluster/validate.ts).
   */
  readonly configFiles?: { readonly groups: readonly string[]; readonly kinds: readonly string[]; readonly validated: readonly string[] };
  /**
   * The most nodes the platform's configuration lets each node group reach (from `configs`), under the source name
   * `what`; `warn` reports what could not be counted.
   */
  readonly nodeGroups?: { readonly what: string; read(configs: readonly KubeObject[], warn: (message: string) => void): PlatformNodeGroup[] };
  /**
   * Whether a plan's metadata.distribution names this platform (the installers it named before platforms and
   * distributions were one idea: kOps, kubeadm, kubespray, k3s); other platforms are written there as the fallback
   * platform's kind, so plans read the same as before.
   */
  readonly namedInPlans?: boolean;
  /**
   * The setting of this platform that must be one range holding both the service and the pod range (kOps:
   * nonMasqueradeCIDR): `suggest --for services,pods` names its envelope so.
   */
  readonly envelopeSetting?: string;
}

/** The snapshot's record of the platform: which one, why, and what it reserves. */
export interface PlatformFacts {
  kind: string;
  title: string;
  evidence: string[];
  reserved: ReservedRange[];
  /** The platform's envelopeSetting, when it has one. */
  envelopeSetting?: string;
}

/** A capability that is supported. */
export const SUPPORTED: Capability = { supported: true };
