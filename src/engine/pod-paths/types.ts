/**
 * The seam of the Pod CIDR executor: one PodPathEngine per pod path (src/ipam/types.ts PodPathId), each part of
 * its path's module listed once in src/pod-paths/registry.ts (src/pod-paths/<id>/engine.ts). An engine has exactly
 * one executor for each step kind and each gate condition its path owns (STEP_KINDS / GATE_CONDITION_INFO in
 * src/plan/steps.ts: the types below are mapped over them, so a new kind of the path is a compile error here until
 * it has one), and the path's part of the end-state check. The steps every path shares (scale-critical,
 * restart-pods, restore-scale, verify-pods) stay with PodExecutor (src/engine/pod-steps.ts).
 */
import type { KubeObject } from '../../cluster/types.ts';
import type { PodPathId } from '../../ipam/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Cidr } from '../../net/index.ts';
import type { PodCIDRSpec } from '../../plan/pod-spec.ts';
import type { GateStep, PathGateCondition, PathStepKind, PlanStep } from '../../plan/steps.ts';
import type { Step, StepContext } from '../runner.ts';

/** What every path's executors use of the Pod CIDR executor (PodExecutor implements it). */
export interface PodPathHost {
  readonly spec: PodCIDRSpec;
  /** The run (the plan id): objects the path creates carry it as label kube-renumber.io/run, and only those are undone. */
  readonly run: string;
  /** spec.podCIDR.from and .to, parsed. */
  readonly old: Cidr[];
  readonly target: Cidr[];
  /** A step's verification: wait until `cond` holds; the timeout's message when it does not. */
  until(what: string, cond: () => Promise<boolean>): Promise<string | undefined>;
  /** The running, non-hostNetwork pods with an address in the old range. */
  podsInOld(client: KubeClient, fieldSelector?: string): Promise<KubeObject[]>;
}

/**
 * Everything PodExecutor gives the paths' executors: each path's engine declares the host it needs (PodPathHost
 * and more), and src/pod-paths/registry.ts accepts it only if this is one (a path that needs more is a compile
 * error there until PodExecutor offers it).
 */
export interface PodPathHosts extends PodPathHost {
  /**
   * The run's options: the token and the rollout timeout (restarts of a CNI's agents), the wait for an effect, and
   * the node hook's environment, permission and pacing (src/pod-paths/node/).
   */
  readonly opts: {
    readonly token: string;
    readonly timeoutMs: number;
    readonly rolloutTimeoutMs: number;
    readonly hookEnv: Readonly<Record<string, string>>;
    readonly hookAllowed: boolean;
    readonly nodeIntervalMs: number;
  };
  /** Bare pods this run backed up (to evict and create again) that do not exist now: a crash came between the two. */
  missingBarePods(ctx: StepContext): Promise<KubeObject[]>;
  /** Create again, from their backups, the bare pods a crash left deleted. */
  recreateMissing(ctx: StepContext): Promise<void>;
  /** A warning of the run (the log when the run has no warning channel). */
  warn(ctx: StepContext, msg: string): void;
}

/** Builds the engine step of one plan step of the path. */
export type PathStepExecutor<H> = (host: H, p: PlanStep) => Step;
/** Whether a gate of the path holds (--ack-gate is PodExecutor's, before this is asked). */
export type PathGateCheck<H> = (host: H, p: GateStep, ctx: StepContext) => Promise<boolean>;

export interface PodPathEngine<Id extends PodPathId, H extends PodPathHost = PodPathHost> {
  readonly id: Id;
  /** One executor per step kind of the path. */
  readonly steps: { readonly [K in PathStepKind<Id>]: PathStepExecutor<H> };
  /** One check per gate condition of the path. */
  readonly gates: { readonly [C in PathGateCondition<Id>]: PathGateCheck<H> };
  /** What is wrong with the path's end state (verify-pods, `verify`): one line each; none when it holds. */
  endState(host: H, client: KubeClient, ctx?: Pick<StepContext, 'backups'>): Promise<string[]>;
}
