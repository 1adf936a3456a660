/**
 * The seam of the per-platform planning facts: the planner of a platform whose configuration the plan edits (kOps
 * Cluster spec, kubeadm ConfigMaps and static pod manifests, k3s or RKE2 config.yaml, or plain flags: the fallback
 * platform's), in the platform's folder under src/platforms/ and installed by src/platforms/registry.ts into
 * registry.ts. A planner gives the configuration patches of a Service and a Pod CIDR move, the commands a person
 * runs at each gate, the certificate fix, and the pre-flight check that its configuration source was read.
 */
import type { Family, Snapshot } from '../../cluster/types.ts';
import type { Cidr } from '../../net/index.ts';
import type { PreflightCheck } from '../check.ts';
import type { PodCIDRSpec, PodPatchGate } from '../pod-spec.ts';
import type { DualWriteFlags } from '../allocator-dual-write.ts';

/**
 * A planner's id, written in plans as each patch's `distribution`: the kind of the platform whose folder holds the
 * planner (a platform may plan with another's planner of its folder, e.g. kubespray with kubeadm's).
 */
export type Distribution = string;

export type PatchGate = 'enable-servicecidr-api' | 'restart-apiservers' | 'kubelet-cluster-dns' | PodPatchGate;

/**
 * What a pod gate asks of a platform, whichever path's gate it is: `stop-allocating`, kube-controller-manager stops
 * allocating node podCIDRs (nothing else changes); `final`, the platform's pod range changes to NEW.
 */
export type PodGateRole = 'stop-allocating' | 'final';

export interface DistroPatch {
  id: string;
  distribution: Distribution;
  gate: PatchGate;
  /** What is edited, e.g. "kOps Cluster spec (kops edit cluster)". */
  target: string;
  description: string;
  before: string;
  after: string;
}

export interface PatchContext {
  /** --service-cluster-ip-range today and afterwards, in flag order (primary family first). */
  oldFlag: string[];
  newFlag: string[];
  /** The DNS Service's primary IP today and afterwards, when it moves. */
  oldDNS?: string;
  newDNS?: string;
  /** default/kubernetes today and afterwards. */
  oldKubernetesIP?: string;
  newKubernetesIP?: string;
  /** Set when the plan has to enable the ServiceCIDR API. */
  enableApi?: 'v1' | 'v1beta1' | 'v1alpha1';
  /** kOps: a new nonMasqueradeCIDR when NEW is outside the current one ('' when none fits: a failed pre-flight check says why). */
  nonMasqueradeCIDR?: string;
  /**
   * kube-apiserver --feature-gates before and from the restart-apiservers gate on, when that gate changes them: the
   * allocator's dual write turned off on 1.31–1.34 (../allocator-dual-write.ts).
   */
  apiserverFeatureGates?: DualWriteFlags;
}

/** The gates of a Service CIDR move that a distribution's configuration passes. */
export type ServiceGate = Exclude<PatchGate, PodPatchGate>;

/** What a distribution's pod patches are written from (pod-plan.ts podPatches computes them once). */
export interface PodPatchInputs {
  snap: Snapshot;
  spec: PodCIDRSpec;
  /** The gate at which NEW becomes the cluster CIDR (the pod path's finalGate). */
  finalGate: PodPatchGate;
  /** The gate at which kube-controller-manager stops allocating, when the path has one (its stopAllocatingGate). */
  stopGate: PodPatchGate | undefined;
  /** kube-controller-manager allocates node podCIDRs from NEW after the final gate (else allocation stays off): the path has a stopGate. */
  allocAfter: boolean;
  /** The cluster CIDR today, as the flag text. */
  oldCC: string;
  /** NEW, as the flag text. */
  to: string;
  /** The node podCIDR size flags that change, before and after (kcmMaskLines). */
  masks: { before: string[]; after: string[] };
  /** The new Service CIDR of the same plan, when it moves too: the service range where the cluster ends. */
  serviceAfter?: ReadonlyMap<Family, Cidr>;
}

export interface DistributionPlanner {
  readonly id: Distribution;
  /** The configuration patches of a Service CIDR move, in gate order. */
  servicePatches(snap: Snapshot, ctx: PatchContext): DistroPatch[];
  /** The commands run at a Service gate. */
  serviceGateInstructions(snap: Snapshot, gate: ServiceGate, ctx: PatchContext): string[];
  /** Lines added before "kube-renumber resume" at the restart-workloads gate. */
  restartWorkloadsNote: readonly string[];
  /**
   * How the distribution's own procedure already restarts every pod after a Service move whose DNS moves (kOps: the
   * node rolling update at gate kubelet-cluster-dns); the plan then leaves restart-workloads to the operator by
   * default. Undefined: the tool restarts the workloads (step restart-workloads).
   */
  restartsEveryPod?: string;
  /** Why the restart-apiservers gate is one, after "…recreates ServiceCIDR/kubernetes from the flag; ". */
  restartApiserversReason: string;
  /** How the apiserver serving certificate gets the IP SANs `both` (comma-separated). */
  certFix(snap: Snapshot, both: string): string;
  /** The distribution's own patches of a Pod CIDR move (kube-controller-manager and its configuration). */
  podPatches(inp: PodPatchInputs): DistroPatch[];
  /**
   * The kube-proxy clusterCIDR patch: written even when kube-proxy's clusterCIDR was not read, and its owner;
   * undefined where the distribution renders kube-proxy's flags from its own configuration (its pod patches say so).
   */
  kubeProxyPatch: { always: boolean; distribution: Distribution } | undefined;
  /** The commands run at a pod gate, by what the gate asks (the gate's name only to be shown). */
  podGateInstructions(gate: PodPatchGate, role: PodGateRole): string[];
  /** How a person makes a node whose Node object was deleted register again (the node path's gate). */
  reregister: string;
  /** A warning when the distribution is known but its configuration source was not in the input. */
  configCheck(snap: Snapshot): PreflightCheck | undefined;
  /** Pre-flight checks of the pod patches' own values (e.g. a range the distribution is given while the move runs). */
  podChecks?(inp: PodPatchInputs): PreflightCheck[];
  /** Values of the Service patch context the platform computes itself from the targets, and the new Pod CIDR when the same plan moves it (kOps: nonMasqueradeCIDR). */
  serviceContext?(snap: Snapshot, target: ReadonlyMap<Family, Cidr>, podsAfter?: ReadonlyMap<Family, Cidr>): Partial<PatchContext>;
  /**
   * Pre-flight checks of a pod extension (plan --extend-pod-cidr) against the platform's own configuration: `add` the
   * added ranges, `kubeProxyTo` kube-proxy's clusterCIDR the plan asks for when it must change (kOps: ADD inside
   * nonMasqueradeCIDR, and kube-proxy's range comes from the Cluster spec, so a change of it is refused).
   */
  podExtensionChecks?(snap: Snapshot, add: ReadonlyMap<Family, Cidr>, kubeProxyTo?: string): PreflightCheck[];
  /** Pre-flight checks of a Service CIDR target against the platform's own configuration (kOps: nonMasqueradeCIDR). */
  serviceChecks?(snap: Snapshot, target: ReadonlyMap<Family, Cidr>, podsAfter?: ReadonlyMap<Family, Cidr>): PreflightCheck[];
}
