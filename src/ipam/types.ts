/**
 * The pod IPAM seam: who hands pods their addresses (Calico IPPools, the nodes' podCIDRs, Cilium's own pools, the
 * cloud's VPC) decides whether and how kube-renumber can move the Pod CIDR. Each owner is one module under
 * src/ipam/ exporting one `IpamOwner`, listed once in registry.ts: how it is recognised (with evidence), and
 * whether a Pod CIDR move is possible, by which path, or refused with the owner's reason and its own way.
 *
 * An owner may also declare API resources it reads (`reads`, listed live like the platforms' and kept by the
 * snapshot builder) and turn them into its facts (`facts`): the snapshot's field of that owner and the ranges its
 * objects name.
 *
 * Pure; imports nothing of the cluster model, so the snapshot builder can record the owner.
 */
import type { ApiResource, KubeObject } from '../vocabulary.ts';
import type { CiliumFacts } from './cilium-facts.ts';

/** What the owners' detection looks at: the CNI detection's result and a few counts from the objects. */
export interface IpamInput {
  /** CNI plugin: calico, cilium, flannel, unknown (src/cni/detect.ts). */
  plugin: string;
  /** calico-ipam, host-local, cilium, unknown. */
  ipam: string;
  /** Raw IPAM detail: cilium-config ipam ("cluster-pool", "multi-pool", "kubernetes", ...), calico-ipam, host-local. */
  ipamMode?: string;
  /** Calico managed by the Tigera operator. */
  operatorManaged: boolean;
  /** The CNI detection's evidence. */
  evidence: readonly string[];
  /** "namespace/name" of every DaemonSet seen (as an object or as a pod's controlling owner). */
  daemonSets: ReadonlySet<string>;
  /** Calico IPPools seen. */
  pools: number;
  /** Nodes with a spec.podCIDR. */
  nodesWithPodCIDR: number;
}

/**
 * The ways kube-renumber moves pod addresses, by id: the paths in folders of their own under src/pod-paths/
 * (`node`: new node podCIDRs; `calico`: new Calico IPPools; `cilium-multi-pool`: a new CiliumPodIPPool). Each path
 * is one module object listed once in src/pod-paths/registry.ts, a Record over these ids; each path adds its id
 * here by declaration merging (`declare module`, its kinds.ts), so the
 * registry's Record makes the compiler ask for its module. The ids at run time: src/plan/pod-paths/registry.ts.
 */
export interface PodPathIds {}
export type PodPathId = keyof PodPathIds & string;

/** What an owner's description of a supported move reads: the CNI detection's result (a snapshot's `cni`). */
export type IpamCni = Pick<IpamInput, 'plugin' | 'ipam' | 'ipamMode' | 'operatorManaged'>;

/**
 * Whether a Pod CIDR move is possible and how (the path, and inspect's pod-ipam fact: where pods get their IPs and
 * how the range moves), or why not and what the owner offers instead.
 */
export type OwnerCapability =
  | { readonly supported: true; readonly path: PodPathId; describe(cni: IpamCni): string }
  | { readonly supported: false; readonly reason: string; readonly instead: string };

export interface IpamOwner<K extends string = string> {
  readonly kind: K;
  /** Human name, e.g. "Calico IPAM (Tigera operator)". */
  readonly title: string;
  /** The evidence that this owner hands out pod addresses, or undefined. */
  detect(input: IpamInput): string[] | undefined;
  readonly pod: OwnerCapability;
  /**
   * API resources this owner reads: listed live when served (of several versions of one resource, declared newest
   * first, the newest served) and kept from a dump, for facts(). Every owner's facts() runs, detected or not.
   */
  readonly reads?: readonly ApiResource[];
  /** Its snapshot fields and ranges from what was read; undefined when nothing of it was in the input. */
  facts?(input: IpamObjectsInput): IpamObjectFacts | undefined;
  /** Where the facts come from (URLs), cited in docs/platforms.md. */
  readonly sources: readonly string[];
}

/** What an owner's facts() reads: the kept objects of the kinds owners declared in `reads`, and the CNI's ConfigMaps. */
export interface IpamObjectsInput {
  /** Objects of the kinds some owner declared in `reads`, by objectKey(group, kind), in input order. */
  objects: ReadonlyMap<string, readonly KubeObject[]>;
  /** The CNI's own ConfigMaps the CNI detection read, by name (the first of each: calico-config, cilium-config, kube-flannel-cfg). */
  cniConfigMaps: ReadonlyMap<string, KubeObject>;
  /** The canonical form of a CIDR; undefined (and a warning naming `what`) when it is not one. */
  cidr(raw: unknown, what: string): string | undefined;
}

/** The snapshot's fields the owners' facts() fill, one per owner family (the Snapshot carries them as they are). */
export interface IpamSnapshotFacts {
  /** Cilium's configuration and pools, when a cilium-config or CiliumPodIPPool was in the input. */
  cilium?: CiliumFacts;
}

/** A pool range an owner's objects name (a range of role "pool" in the snapshot). */
export interface IpamRange {
  cidr: string;
  /** Where it was read, e.g. "CiliumPodIPPool/default". */
  source: string;
  label: string;
}

/** What an owner's facts() found: its snapshot fields and the ranges its objects name (in input order). */
export interface IpamObjectFacts {
  snapshot: IpamSnapshotFacts;
  ranges: IpamRange[];
}

/** The snapshot's record: which owner, and why. */
export interface IpamOwnerFacts {
  kind: string;
  title: string;
  evidence: string[];
}
