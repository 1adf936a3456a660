/**
 * The seam of the Pod CIDR planner: one PodPath per way kube-renumber moves pod addresses (src/ipam/types.ts
 * POD_PATH_IDS), each the plan.ts of its folder under src/pod-paths/, listed once in src/pod-paths/registry.ts and
 * installed into ./registry.ts. A path says what it leaves (OLD), sizes NEW, writes its section of spec.podCIDR and
 * its steps, validates that section when a plan is read back, and describes its end state; its executors are the
 * same folder's engine.ts (src/engine/pod-paths/types.ts PodPathEngine).
 */
import type { AvoidRange } from '../../analyze/catalog.ts';
import type { AccessNeed } from '../access-need.ts';
import type { Family, Snapshot } from '../../cluster/types.ts';
import type { PodPathId } from '../../ipam/types.ts';
import type { Cidr } from '../../net/index.ts';
import type { DistroPatch } from '../distro-patches.ts';
import type { Obj } from '../plan-fields.ts';
import type { PodCIDRSpec, PodIpam, PodPatchGate } from '../pod-spec.ts';
import type { Distribution } from '../distributions/types.ts';
import type { PreflightCheck } from '../preflight.ts';
import type { PlanStep } from '../steps.ts';

export type { Distribution } from '../distributions/types.ts';

export interface PodPlanOptions {
  /** NEW pod range: one CIDR per family (array or comma-separated). */
  target: string | readonly string[];
  avoid?: readonly AvoidRange[];
  /** Override the detected IPAM. */
  ipam?: PodIpam;
  /** Workload restarts in flight at once (default 4). */
  parallel?: number;
  /** Deployments (namespace/name) scaled up before the restarts, besides the cluster DNS. */
  critical?: readonly string[];
  /** Calico: block size of the new pool (default: the old pool's). */
  blockSize?: number;
  /** Calico: name of the new pool (default kube-renumber-<cidr>). */
  poolName?: string;
  /**
   * Node path: the node podCIDR size, one per family of NEW in NEW's order (a single number: for a single-stack
   * NEW). Default per family: kube-controller-manager's --node-cidr-mask-size-ipv4/-ipv6 (or
   * --node-cidr-mask-size), else the size of the nodes' podCIDRs of that family, else 24 (IPv4) / 64 (IPv6).
   */
  nodeMaskSize?: number | readonly number[];
  /** Node path: a command that re-registers a deleted node (env KUBE_RENUMBER_NODE); without it each node is a gate. */
  nodeHook?: string;
  /** Node path: nodes drained at once, a number or "P%" (default 1: one node at a time). */
  maxUnavailable?: number | string;
  /** Minimum free room in NEW: blocks or node podCIDRs for today's nodes times this (default 2). */
  headroom?: number;
  /** The new Service CIDR of the same plan (buildMigrationPlan sets it): platform values are computed from where the cluster ends. */
  serviceAfter?: ReadonlyMap<Family, Cidr>;
}

/** The steps before the restarts (pools or allocation, scale-up), the restarts, and the clean-up after them. */
export interface PodStepLists {
  prepare: PlanStep[];
  restart: PlanStep[];
  finish: PlanStep[];
}

/** What the pod step lists are written from: the finished spec, the distribution and its patches. */
export interface PodStepInputs {
  spec: PodCIDRSpec;
  distro: Distribution;
  patches: DistroPatch[];
}

/** What a path plans from: the snapshot, the options, and NEW (parsed, and as text). */
export interface PodPathInput {
  snap: Snapshot;
  opts: PodPlanOptions;
  target: Map<Family, Cidr>;
  newText: string[];
}

/** The path's own section of spec.podCIDR (spec.podCIDR.<id>). */
export type PodPathSection = Partial<Pick<PodCIDRSpec, PodPathId>>;

/** What a path leaves (OLD), and how it then sizes NEW. */
export interface PodPathOld {
  from: Cidr[];
  /** Sizes NEW: the path's section of spec.podCIDR and its checks (pod-target-size first). */
  size(headroom: number): { section: PodPathSection; checks: PreflightCheck[] };
}

export interface PodPath<Id extends PodPathId = PodPathId> {
  readonly id: Id;
  /** What `--ipam ID` moves, e.g. "Calico IPPools". */
  readonly moves: string;
  /** Which clusters take this path, for the hint when none is detected (e.g. "node podCIDRs: flannel, ..."). */
  readonly hint: string;
  /** The plan flags only this path reads (without the leading --). */
  readonly flags: readonly string[];
  /**
   * Whether --ipam may choose between this path and another: true where one IPAM may read what the other changes
   * (Calico pools and node podCIDRs); false where this path's IPAM reads only its own objects (Cilium multi-pool
   * reads neither node podCIDRs nor Calico pools): then --ipam cannot force another path where this one's owner hands
   * out the addresses, nor this path where another's does (plan/platform-gate.ts).
   */
  readonly mixes: boolean;
  /** Who would not read what another path changes where this path's owner hands out the addresses ("Cilium"; default "this IPAM"). */
  readonly reader?: string;
  /** Check pod-ipam's message when this path is planned. */
  readonly planned: string;
  /**
   * kube-controller-manager's allocation of node podCIDRs: the gate where it stops, when it allocates from NEW again
   * at the final gate; undefined when the final gate turns it off (the path does not use node podCIDRs).
   */
  readonly stopAllocatingGate?: PodPatchGate;
  /** The gate whose patches change the distribution's pod range. */
  readonly finalGate: PodPatchGate;
  /** OLD, or undefined with a failed check added to `checks` when there is nothing to move. */
  oldRanges(inp: PodPathInput, checks: PreflightCheck[]): PodPathOld | undefined;
  /** The path's steps: before the restarts, the restarts, the clean-up after them. */
  stepLists(inp: PodStepInputs): PodStepLists;
  /**
   * The plan options of this path that its section of a written plan records (e.g. Calico's block size and pool
   * name), so apply's re-check (plan/recheck.ts) plans again from the same options; {} when there are none.
   */
  recordedOptions(pc: PodCIDRSpec): Partial<PodPlanOptions>;
  /**
   * What this path's own steps delete that does not come back as it was (e.g. the nodes deleted and registered
   * again), listed in the confirm step confirm-pod-disruption after what every path deletes; [] when nothing.
   */
  consent(spec: PodCIDRSpec): string[];
  /** What verify-pods checks besides the pods and workloads (appended to its description). */
  endState(spec: PodCIDRSpec): string;
  /** Validates the path's section of a plan read back (spec.podCIDR at `P`); PlanFormatError names the field. */
  validate(pc: Obj, P: string, to: readonly Cidr[]): void;
  /**
   * What a run of this path asks of the API server besides what every pod move needs (plan/access.ts): its own
   * verbs on its own resources (need(), POD_RBAC_FILE). test/unit/rbac.test.ts checks deploy/ grants them.
   */
  access(pc: PodCIDRSpec): AccessNeed[];
  /** The "Pod IPAM" summary row, and the path's own rows after "Restarts". */
  summary(pc: PodCIDRSpec): string;
  summaryRows(pc: PodCIDRSpec): Array<[string, string]>;
  /** The path's own section of the Markdown plan (after the pre-flight checks), or ''. */
  markdown(pc: PodCIDRSpec, table: (headers: string[], rows: string[][]) => string): string;
}
