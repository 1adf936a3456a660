/**
 * The cluster model: everything kube-renumber knows about a cluster's addressing, built by one pure
 * function (`buildSnapshot`) from raw Kubernetes objects, whether those were listed live or read from
 * `kubectl get -o yaml` files. Nothing in here does I/O.
 */

import type { CniKind, IpamKind } from '../cni/detect.ts';
import type { KopsNetworking } from './kops-spec.ts';
import type { KubeadmNetworking } from './kubeadm-config.ts';
import type { KubeObject, RangeRole } from '../vocabulary.ts';
import type { PlatformFacts } from '../platform/types.ts';
import type { IpamOwnerFacts, IpamSnapshotFacts } from '../ipam/types.ts';

export type { CniKind, IpamKind, KopsNetworking, KubeadmNetworking, KubeObject, PlatformFacts, RangeRole };

/** The snapshot's platform kind. */
export function platformKindOf(snap: Pick<Snapshot, 'platform'>): string {
  return snap.platform.kind;
}

/**
 * What discovery gathered before interpretation. The live path and the file path both produce this,
 * so both build the very same snapshot.
 */
export interface RawInventory {
  /**
   * Where it came from: 'live' or the list of files read. A live read may carry `files` too: distribution
   * configs given with -f alongside a live read (`configs` below).
   */
  source: {
    kind: 'live'; context?: string; server?: string; files?: string[]; kubeSystemUID?: string;
    /** Helm's release Secrets were listed (plan --read-helm-releases). */
    helmReleases?: true;
  } | { kind: 'file'; files: string[] };
  /** Server version (gitVersion) when known, e.g. "v1.34.4". */
  serverVersion?: string;
  /**
   * The ServiceCIDR API versions the server serves (networking.k8s.io/v1, v1beta1, v1alpha1), if known.
   * `undefined` means "unknown" (offline without evidence); `[]` means "checked: not served".
   */
  serviceCIDRApiVersions?: string[];
  /** All objects, any kind. Lists are flattened into their items. */
  objects: KubeObject[];
  /** Distribution configs given alongside (kOps Cluster spec, kubeadm ClusterConfiguration), as parsed YAML. */
  configs: KubeObject[];
  /** Things that could not be read, with the reason (e.g. a resource the user may not list). */
  gaps: string[];
}

export type Family = 4 | 6;

/** Where a fact came from, so every number in `inspect` can be traced back to an object or flag. */
export interface Origin {
  /** e.g. "ServiceCIDR/kubernetes", "kube-apiserver --service-cluster-ip-range", "kubeadm-config podSubnet". */
  source: string;
}

/** One range the cluster uses, with where we learnt it. */
export interface ClusterRange extends Origin {
  cidr: string;
  role: RangeRole;
  /** Short human label, e.g. "Service CIDR", "Calico pool default-ipv4-ippool". */
  label: string;
}

export interface ServiceCIDRInfo {
  name: string;
  cidrs: string[];
  apiVersion: string;
  /** Has deletionTimestamp. */
  deleting: boolean;
  /** status.conditions Ready. undefined when there is no status. */
  ready?: boolean;
}

export interface ServiceInfo {
  namespace: string;
  name: string;
  type: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  /** spec.clusterIPs (or [spec.clusterIP]); 'None' is not included. */
  clusterIPs: string[];
  headless: boolean;
  externalName?: string;
  selector?: Record<string, string>;
  ports: Array<{ name?: string; port: number; protocol?: string; targetPort?: number | string; nodePort?: number }>;
  loadBalancerIPs: string[];
  loadBalancerSourceRanges: string[];
  externalIPs: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** spec.loadBalancerClass (absent when unset). */
  loadBalancerClass?: string;
  /** spec.loadBalancerIP as written (absent when unset): a platform's way to ask for an address. */
  loadBalancerIP?: string;
  /** status.loadBalancer.ingress[].hostname (absent when none): the load balancer's DNS names. */
  loadBalancerHostnames?: string[];
}

export interface PodInfo {
  namespace: string;
  name: string;
  nodeName?: string;
  podIPs: string[];
  hostNetwork: boolean;
  phase?: string;
  /** The controlling owner, e.g. { kind: 'ReplicaSet', name: 'web-5d8' }. */
  owner?: { kind: string; name: string };
  labels: Record<string, string>;
}

export interface NodeInfo {
  name: string;
  podCIDRs: string[];
  internalIPs: string[];
  externalIPs: string[];
  labels: Record<string, string>;
  ready?: boolean;
  unschedulable: boolean;
  /** status.nodeInfo.kubeletVersion, e.g. v1.35.4 (kube-proxy usually runs the same version). */
  kubeletVersion?: string;
}

export interface CalicoPool {
  name: string;
  cidr: string;
  blockSize: number;
  disabled: boolean;
  nodeSelector?: string;
  ipipMode?: string;
  vxlanMode?: string;
  natOutgoing?: boolean;
  allowedUses?: string[];
}

export interface CalicoBlock {
  cidr: string;
  /** "host:<node>" in IPAMBlock.spec.affinity, reduced to the node name; undefined when unaffine. */
  node?: string;
  /** Addresses in use (allocations that are not null). */
  allocated: number;
}

export interface BlockAffinityInfo {
  name: string;
  node: string;
  cidr: string;
  state?: string;
}

/** kube-apiserver flags seen on its mirror pod(s). One entry per apiserver pod (HA clusters have several). */
export interface ApiserverFlags {
  pod: string;
  serviceClusterIPRange?: string[];
  featureGates?: string;
  runtimeConfig?: string;
  admissionPlugins?: string[];
  advertiseAddress?: string;
}

export interface ControllerManagerFlags {
  pod: string;
  clusterCIDR?: string[];
  nodeCIDRMaskSize?: number;
  nodeCIDRMaskSizeIPv4?: number;
  nodeCIDRMaskSizeIPv6?: number;
  allocateNodeCIDRs?: boolean;
  serviceClusterIPRange?: string[];
}

/**
 * A field outside the cluster's own range settings that names addresses: a policy peer, an allow-list, a
 * component's config text. Kept so the references scan (src/analyze/references.ts) can find what still names
 * an old range after a renumbering. Service allow-lists are read from ServiceInfo instead.
 */
export interface ReferenceSource {
  /** The object's kind: NetworkPolicy, GlobalNetworkPolicy, NetworkSet, GlobalNetworkSet, Ingress, ConfigMap. */
  kind: string;
  apiVersion: string;
  namespace?: string;
  name: string;
  /** A readable path, e.g. `spec.ingress[0].from[1].ipBlock.cidr`, `metadata.annotations["haproxy.org/allow-list"]`, `data["Corefile"]`. */
  field: string;
  /**
   * How the field is written: 'cidr' one CIDR; 'list' a list of CIDRs or addresses; 'csv' one string of them
   * separated by commas (values holds that string); 'text' free text (values holds the addresses, CIDRs and
   * reverse-DNS zone names found in it, each once, in order).
   */
  format: 'cidr' | 'list' | 'csv' | 'text';
  /**
   * What the addresses do: 'allow' let through (policy peers, allow-lists); 'deny' taken out of an allow
   * (ipBlock.except, notNets, deny-lists); 'cluster' the range a component treats as the cluster's own
   * (kube-proxy clusterCIDR); 'nomasq' destinations not masqueraded (ip-masq-agent); 'dns' a CoreDNS Corefile;
   * 'set' a Calico network set (used by policy selectors); 'text' any other config text; 'advertise' Service ranges
   * Calico advertises over BGP; 'capture' / 'nocapture' ranges a mesh's proxy captures or leaves alone (Istio,
   * Linkerd); 'address' container command, args and env, ConfigMaps outside kube-system, hostAliases, EndpointSlices
   * and webhook URLs.
   */
  use: 'allow' | 'deny' | 'cluster' | 'nomasq' | 'dns' | 'set' | 'text' | 'advertise' | 'capture' | 'nocapture' | 'address';
  values: string[];
  /**
   * For 'address' text: every address in it is used as it is (a hostAlias, an EndpointSlice address, a webhook URL),
   * so one in an old range breaks; without it only a Service's ClusterIP does (other values are to check).
   */
  strict?: boolean;
  /** The whole text the values came from, when the proposal rewrites it (a webhook URL). */
  whole?: string;
  /** Why a value there breaks, when the source knows better than its use says (a Helm release pinning it). */
  why?: string;
  /** Reported only for an address the plan's mapping moves (a GitOps-managed Service). */
  onlyMoved?: boolean;
  /** The Argo CD Application said to track it, until the GitOps source settles it (src/cluster/references/gitops.ts). */
  gitopsApp?: string;
  /** For an ipBlock.except list: the ipBlock's cidr (every except entry must lie inside it). */
  within?: string;
}

/**
 * A family whose service range no flag, ServiceCIDR or config names: `cidr` when it was inferred from the
 * ClusterIPs (`evidence` is the range's source: what it was inferred from), absent when it could not be (`evidence`
 * says why).
 */
export interface ServiceRangeInference {
  family: Family;
  cidr?: string;
  evidence: string;
}

/** One node group's maximum, with where it was read (src/cluster/node-limits.ts). */
export interface NodeGroupLimit {
  name: string;
  max: number;
  /** e.g. "kOps InstanceGroup nodes-a spec.maxSize". */
  source: string;
}

/** One kind of source of the most nodes the cluster may reach: its groups and their sum. */
export interface NodeLimitSource {
  /** e.g. "kOps InstanceGroups maxSize", "cluster-autoscaler --nodes". */
  what: string;
  max: number;
  groups: NodeGroupLimit[];
}

/** What the cluster says about the most nodes it may reach: one entry per kind of source; `notes`: what gave no count. */
export interface NodeLimits {
  sources: NodeLimitSource[];
  notes: string[];
}

/** The snapshot: a pure function of a RawInventory. The IPAM owners' own fields (IpamSnapshotFacts: `cilium`) come from their facts(). */
export interface Snapshot extends IpamSnapshotFacts {
  source: RawInventory['source'];
  kubernetesVersion?: string;
  /** 'v1' | 'v1beta1' | 'v1alpha1' when served (the newest), null when checked and not served, undefined when unknown. */
  serviceCIDRApi?: string | null;
  /**
   * Where the cluster runs and who installed it, one idea (src/platforms/): which platform, the evidence, the
   * ranges it reserves.
   */
  platform: PlatformFacts;
  cni: {
    plugin: CniKind;
    ipam: IpamKind;
    operatorManaged: boolean;
    evidence: string[];
    /**
     * Raw IPAM detail when known (added by the cluster model): "calico-ipam", "host-local usePodCidr",
     * Calico operator "Calico"/"HostLocal", Cilium's cilium-config ipam ("cluster-pool", "multi-pool",
     * "kubernetes" = pod IPs from node podCIDRs, ...).
     */
    ipamMode?: string;
    /** Who hands pods their addresses (src/ipam/), with the evidence; absent when nothing can tell. */
    owner?: IpamOwnerFacts;
  };

  /** Every range discovered, de-duplicated by (cidr, role, source). */
  ranges: ClusterRange[];

  serviceCIDRs: ServiceCIDRInfo[];
  /** default/kubernetes ClusterIPs. */
  kubernetesServiceIPs: string[];
  /** The cluster DNS Service (found by the kubelets' clusterDNS, else by a well-known identity: DNS_SERVICE_CANDIDATES). */
  dnsService?: { namespace: string; name: string; clusterIPs: string[]; foundBy: string };
  /**
   * Present when a family with ClusterIPs has no configured service range: the range inferred from the ClusterIPs
   * (also in `ranges`, role service, source "inferred from …"), or why none could be.
   */
  serviceRangeInference?: ServiceRangeInference[];
  /** clusterDNS as configured for kubelets (kubeadm kubelet-config, kOps spec), when known. */
  clusterDNS: string[];

  apiservers: ApiserverFlags[];
  controllerManagers: ControllerManagerFlags[];
  kubeProxy?: { clusterCIDR?: string; mode?: string };
  kops?: KopsNetworking;
  kubeadm?: KubeadmNetworking;

  nodes: NodeInfo[];
  services: ServiceInfo[];
  pods: PodInfo[];
  pools: CalicoPool[];
  blocks: CalicoBlock[];
  blockAffinities: BlockAffinityInfo[];
  /**
   * Fields naming addresses (NetworkPolicies, Calico policies and network sets, Ingress allow-list annotations,
   * kube-system ConfigMaps), for the references scan. Absent in snapshots made without them.
   */
  referenceSources?: ReferenceSource[];

  /**
   * The most nodes the cluster may reach, where it says so (kOps InstanceGroups, cluster-autoscaler, Cluster API,
   * Karpenter): absent when nothing in the input says it.
   */
  nodeLimits?: NodeLimits;

  /** Problems interpreting the input (unparseable CIDR in an object, etc.) and gaps in what could be read. */
  warnings: string[];
}
