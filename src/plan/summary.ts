/**
 * The plan in a few lines, first in every output of `plan` and printed by `apply` before its first change: what
 * moves, what restarts, what the operator does at which gate, how long the tool's own work should take, the last
 * step a rollback undoes whole, and the references that need action. Pure: a function of the plan and of the
 * pods the cluster runs (the plan does not list the workloads its restart steps will find).
 */
import type { Snapshot } from '../cluster/types.ts';
import { contains, parseIP, tryParseCidr, type Cidr } from '../net/index.ts';
import { mappingCounts, STEP_KINDS, type MigrationPlan, type PlanStep, type StepKindInfo } from './plan.ts';

/**
 * Measured rates the duration estimate uses, each a range from the runs in docs/benchmarks.md (the section named
 * with each). The estimate is the tool's own work at these rates; what the operator does at the gates, and how
 * long a real workload's rollout or a real node's registration takes beyond the test cluster's, come on top.
 */
export const MEASURED_RATES = {
  /**
   * Services moved a second (docs/benchmarks.md, "service-renumber": 9.8 to 10.11 on a quiet machine, bounded by
   * kube-controller-manager's default API rate; 4.0 to 6.3 measured on a loaded machine).
   */
  servicesPerSecond: { fast: 10, slow: 4 },
  /**
   * The waits of each batch of Services: apply's default --propagation-delay of 5 s, once after the batch's
   * covers are up and once before they come down (docs/benchmarks.md, "service-renumber", flag table).
   */
  batchWaitSeconds: 2 * 5,
  /**
   * One round of workload rollouts (as many as --parallel at once): docs/benchmarks.md, "pod-waves": 115.3 s for
   * 37 workloads 6 at a time (7 rounds, 16.5 s each); a 22-replica Deployment rolls in about 20 s.
   */
  rolloutRoundSeconds: { fast: 16.5, slow: 20 },
  /**
   * One wave of node moves (drain, delete, register again, podCIDR): docs/benchmarks.md, "node-waves": 1.31 s for
   * one node alone (200 nodes) to 12.2 s for a wave of 20 (121.6 s for 10 waves), with fake kubelets that register
   * at once; a real node's hook and registration add their own time.
   */
  nodeWaveSeconds: { fast: 1.31, slow: 12.2 },
} as const;

/** The workloads of one kind a restart finds: `pods` of them on the pod network. */
export interface WorkloadCount { kind: string; workloads: number; pods: number }

/** One restart the plan makes: a step the tool runs, or a gate where the operator restarts. */
export interface SummaryRestart {
  step: string;
  /** The step's number (1-based). */
  number: number;
  by: 'tool' | 'operator';
  /** What restarts, in words. */
  what: string;
  /** Workloads by kind (restarts of workloads), or the nodes (`kind: 'Node'`). */
  counts: WorkloadCount[];
}

/** Where the run stops for the operator. */
export interface SummaryStop {
  /** The first step of the group (gates of one condition in a row are one group: one gate a node). */
  step: string;
  number: number;
  kind: 'gate' | 'confirm';
  /** How many steps in a row stop for the same thing (1 but for one gate a node). */
  count: number;
  /** What the operator does there. */
  action: string;
}

export interface PlanSummary {
  /** Each range that moves, old → new. */
  moves: Array<{ range: 'Service CIDR' | 'Pod CIDR'; from: string[]; to: string[] }>;
  /** The Services of a Service CIDR move. */
  services?: { moved: number; kept: number; skipped: number };
  restarts: SummaryRestart[];
  stops: SummaryStop[];
  duration: {
    /** Always true: a range from measured rates, not a promise. */
    estimate: true;
    minSeconds: number;
    maxSeconds: number;
    parts: Array<{ what: string; minSeconds: number; maxSeconds: number }>;
    /** What the range leaves out. */
    excludes: string;
  };
  rollback: {
    /** The last step that changes the cluster and that `rollback` undoes whole (absent: the first change is already one-way). */
    lastUndoable?: { step: string; number: number };
    /** The first step whose change a rollback cannot put back as it was, and what it changes. */
    firstOneWay?: { step: string; number: number; rollback: string };
    /** The command that undoes the completed steps (the plan file as `plan -o yaml` wrote it). */
    command: string;
  };
  /** What names an old range outside the migrated objects: errors need a change before the run, warnings a review. */
  references: { total: number; needAction: number; toReview: number };
}

/** The owner a pod's restart goes through: a Deployment for a ReplicaSet's pods, the pod itself when it has none. */
function workloadOf(p: Snapshot['pods'][number]): { kind: string; name: string } {
  if (!p.owner) return { kind: 'bare pod', name: `${p.namespace}/${p.name}` };
  if (p.owner.kind === 'ReplicaSet') {
    const hash = p.labels['pod-template-hash'];
    const rs = p.owner.name;
    return { kind: 'Deployment', name: `${p.namespace}/${hash && rs.endsWith(`-${hash}`) ? rs.slice(0, -hash.length - 1) : rs}` };
  }
  return { kind: p.owner.kind, name: `${p.namespace}/${p.owner.name}` };
}

const KIND_ORDER = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'bare pod'];

/**
 * The workloads a restart finds, by kind: every running pod on the pod network (not hostNetwork, not a mirror
 * pod, not finished), only those with an address in `inRanges` when given, grouped by the workload that owns it.
 */
export function workloadsToRestart(pods: Snapshot['pods'], inRanges?: readonly string[]): WorkloadCount[] {
  const ranges = (inRanges ?? []).map((r) => tryParseCidr(r)).filter((c): c is Cidr => c !== undefined);
  const inside = (ip: string) => {
    try { const a = parseIP(ip); return ranges.some((r) => r.family === a.family && contains(r, a)); } catch { return false; }
  };
  const byKind = new Map<string, { names: Set<string>; pods: number }>();
  for (const p of pods) {
    if (p.hostNetwork || p.owner?.kind === 'Node' || p.phase === 'Succeeded' || p.phase === 'Failed') continue;
    if (inRanges && !p.podIPs.some(inside)) continue;
    const w = workloadOf(p);
    const k = byKind.get(w.kind) ?? { names: new Set<string>(), pods: 0 };
    k.names.add(w.name);
    k.pods += 1;
    byKind.set(w.kind, k);
  }
  const rank = (k: string) => (KIND_ORDER.includes(k) ? KIND_ORDER.indexOf(k) : KIND_ORDER.length);
  return [...byKind.entries()].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([kind, v]) => ({ kind, workloads: v.names.size, pods: v.pods }));
}

const info = (s: PlanStep): StepKindInfo => STEP_KINDS[s.kind];
const changes = (s: PlanStep) => s.kind !== 'gate' && s.kind !== 'confirm' && s.kind !== 'verify' && s.kind !== 'verify-pods';
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** "3 Deployments (9 pods), 1 bare pod" */
export function countsText(counts: readonly WorkloadCount[]): string {
  if (counts.length === 0) return 'none running now';
  return counts.map((c) => {
    const noun = c.kind === 'bare pod' ? 'bare pod' : c.kind;
    const n = `${c.workloads} ${noun}${c.workloads === 1 ? '' : 's'}`;
    return c.kind === 'bare pod' || c.kind === 'Node' || c.pods === c.workloads ? n : `${n} (${c.pods} pods)`;
  }).join(', ');
}

/** A duration as people say it: "40 seconds", "3 minutes", "1.5 hours". */
function spoken(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} seconds`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} minutes`;
  return `${Math.round(seconds / 360) / 10} hours`;
}

/** "about 2 to 5 minutes", "about 40 seconds to 3 minutes" */
export function durationText(d: Pick<PlanSummary['duration'], 'minSeconds' | 'maxSeconds'>): string {
  const lo = spoken(d.minSeconds);
  const hi = spoken(d.maxSeconds);
  if (lo === hi) return `about ${lo}`;
  const unit = (x: string) => x.replace(/^[\d.]+ /, '');
  return unit(lo) === unit(hi) ? `about ${lo.replace(/ \w+$/, '')} to ${hi}` : `about ${lo} to ${hi}`;
}

/**
 * The plan's summary. `pods`: the cluster's pods (the snapshot the plan was written from, or apply's live read),
 * which the restart steps will find; without them the restarts are named without counts. `planPath`: the plan
 * file the rollback command names.
 */
export function planSummary(plan: MigrationPlan, pods: Snapshot['pods'] | undefined, planPath = 'plan.yaml'): PlanSummary {
  const sc = plan.spec.serviceCIDR;
  const pc = plan.spec.podCIDR;
  const steps = plan.steps;
  const num = (s: PlanStep) => steps.indexOf(s) + 1;
  const moves: PlanSummary['moves'] = [
    ...(sc ? [{ range: 'Service CIDR' as const, from: sc.from, to: sc.target }] : []),
    ...(pc ? [{ range: 'Pod CIDR' as const, from: pc.from, to: pc.to }] : []),
  ];
  const counts = mappingCounts(plan);

  // restarts: the tool's restart steps, the nodes moved, and the operator's restart gate
  const restarts: SummaryRestart[] = [];
  const restartSteps = steps.filter((s) => info(s).restarts === 'workloads');
  let restartedBefore: PlanStep | undefined;
  for (const s of restartSteps) {
    const inPodRange = s.kind === 'restart-pods' && pc ? pc.from : undefined;
    restarts.push({
      step: s.id, number: num(s), by: 'tool',
      what: restartedBefore
        ? `what step ${restartedBefore.id} did not restart already`
        : inPodRange ? `every workload with a pod in ${inPodRange.join(', ')}, ${pc!.restarts.parallel} at a time` : `every workload with a pod on the pod network, ${sc?.restarts?.parallel ?? 1} at a time`,
      counts: restartedBefore || !pods ? [] : workloadsToRestart(pods, inPodRange),
    });
    restartedBefore ??= s;
  }
  const nodeSteps = steps.filter((s) => info(s).restarts === 'nodes');
  if (nodeSteps.length > 0) {
    const nodes = sum(nodeSteps.map((s) => (s.items ?? []).length));
    restarts.push({
      step: nodeSteps[0]!.id, number: num(nodeSteps[0]!), by: 'tool',
      what: `${nodes} node${nodes === 1 ? '' : 's'} drained, deleted and registered again, in ${nodeSteps.length} wave${nodeSteps.length === 1 ? '' : 's'}; every pod on them is evicted and starts elsewhere`,
      counts: [{ kind: 'Node', workloads: nodes, pods: nodes }],
    });
  }
  for (const s of steps.filter((x) => x.kind === 'gate' && x.gate.condition === 'workloads-restarted')) {
    restarts.push({
      step: s.id, number: num(s), by: 'operator',
      what: restartedBefore ? `holds once step ${restartedBefore.id} has restarted the same pods` : 'every pod on the pod network',
      counts: restartedBefore || !pods ? [] : workloadsToRestart(pods),
    });
  }

  // where the run stops for the operator: the gates of one condition (one a node, one a LoadBalancer) are one line
  const stops: SummaryStop[] = [];
  const byCondition = new Map<string, SummaryStop>();
  for (const s of steps) {
    if (s.kind !== 'gate' && s.kind !== 'confirm') continue;
    const same = s.kind === 'gate' ? byCondition.get(s.gate.condition) : undefined;
    if (same) { same.count += 1; continue; }
    const stop: SummaryStop = {
      step: s.id, number: num(s), kind: s.kind, count: 1,
      action: s.kind === 'confirm' ? `confirm (apply --yes confirms it): ${s.description.replace(/^confirm /, '')}` : s.description,
    };
    stops.push(stop);
    if (s.kind === 'gate') byCondition.set(s.gate.condition, stop);
  }

  // duration: the tool's own work at the measured rates
  const R = MEASURED_RATES;
  const parts: PlanSummary['duration']['parts'] = [];
  const moved = sum(steps.filter((s) => s.kind === 'move-services' || s.kind === 'move-load-balancers' || s.kind === 'move-kubernetes' || s.kind === 'sweep-services')
    .map((s) => (s.items ?? []).length));
  const batches = steps.filter((s) => s.kind === 'move-services' || s.kind === 'move-load-balancers').length;
  if (moved > 0 || batches > 0) {
    const waits = batches * R.batchWaitSeconds;
    parts.push({ what: `${moved} Service move${moved === 1 ? '' : 's'} in ${batches} batch${batches === 1 ? '' : 'es'}`, minSeconds: moved / R.servicesPerSecond.fast + waits, maxSeconds: moved / R.servicesPerSecond.slow + waits });
  }
  for (const r of restarts.filter((x) => x.by === 'tool' && x.counts.length > 0 && x.counts[0]!.kind !== 'Node')) {
    const s = steps[r.number - 1]!;
    const parallel = s.kind === 'restart-pods' ? pc?.restarts.parallel ?? 1 : sc?.restarts?.parallel ?? 1;
    const rounds = Math.ceil(sum(r.counts.map((c) => c.workloads)) / Math.max(1, parallel));
    parts.push({ what: `${rounds} round${rounds === 1 ? '' : 's'} of workload restarts (step ${r.step})`, minSeconds: rounds * R.rolloutRoundSeconds.fast, maxSeconds: rounds * R.rolloutRoundSeconds.slow });
  }
  if (nodeSteps.length > 0) {
    parts.push({ what: `${nodeSteps.length} wave${nodeSteps.length === 1 ? '' : 's'} of node moves`, minSeconds: nodeSteps.length * R.nodeWaveSeconds.fast, maxSeconds: nodeSteps.length * R.nodeWaveSeconds.slow });
  }
  const duration: PlanSummary['duration'] = {
    estimate: true,
    minSeconds: Math.round(sum(parts.map((p) => p.minSeconds))),
    maxSeconds: Math.round(sum(parts.map((p) => p.maxSeconds))),
    parts: parts.map((p) => ({ ...p, minSeconds: Math.round(p.minSeconds), maxSeconds: Math.round(p.maxSeconds) })),
    excludes: `the time the run waits at gates for you${parts.length > 0 ? ', each workload\'s own rollout beyond the test cluster\'s' : ''}${nodeSteps.length > 0 ? ', a real node\'s registration' : ''}`,
  };

  // rollback: the last changing step before the first one-way step
  const oneWayAt = steps.findIndex((s) => info(s).oneWay === true);
  const before = (oneWayAt < 0 ? steps : steps.slice(0, oneWayAt)).filter(changes);
  const lastUndoable = before[before.length - 1];
  const oneWay = oneWayAt >= 0 ? steps[oneWayAt]! : undefined;
  const refs = plan.references ?? [];
  const needAction = refs.filter((r) => r.severity === 'error').length;
  return {
    moves,
    ...(sc ? { services: { moved: counts.move, kept: counts.keep, skipped: counts.skip } } : {}),
    restarts, stops, duration,
    rollback: {
      ...(lastUndoable ? { lastUndoable: { step: lastUndoable.id, number: num(lastUndoable) } } : {}),
      ...(oneWay ? { firstOneWay: { step: oneWay.id, number: oneWayAt + 1, rollback: oneWay.rollback } } : {}),
      command: `kube-renumber rollback ${planPath}`,
    },
    references: { total: refs.length, needAction, toReview: refs.length - needAction },
  };
}

/** The summary as label and text lines: the same sentences in every text format (table, markdown, html, stderr). */
export function summaryLines(s: PlanSummary): Array<[string, string]> {
  const lines: Array<[string, string]> = [];
  lines.push(['Moves', s.moves.length > 0 ? s.moves.map((m) => `${m.range} ${m.from.join(', ') || '?'} → ${m.to.join(', ')}`).join('; ') : 'nothing (see the failed pre-flight checks)']);
  if (s.services) lines.push(['Services', `${s.services.moved} moved to new addresses, ${s.services.kept} kept, ${s.services.skipped} without an address to move`]);
  if (s.restarts.length === 0) lines.push(['Restarts', 'none']);
  for (const r of s.restarts) {
    const who = r.by === 'tool' ? `step ${r.number} (${r.step})` : `you, at gate ${r.number} (${r.step})`;
    lines.push(['Restarts', `${who}: ${r.what}${r.counts.length > 0 && r.counts[0]!.kind !== 'Node' ? `: ${countsText(r.counts)}` : ''}`]);
  }
  if (s.stops.length === 0) lines.push(['You act', 'nowhere: the run needs no gate or confirmation']);
  for (const g of s.stops) {
    lines.push([g.kind === 'gate' ? 'Gate' : 'Confirm', `step ${g.number} (${g.step}${g.count > 1 ? ` and ${g.count - 1} more like it` : ''}): ${g.action}`]);
  }
  const d = s.duration;
  lines.push(['Duration', d.parts.length > 0
    ? `${durationText(d)} (an estimate from measured rates: ${d.parts.map((p) => p.what).join(', ')}), not counting ${d.excludes}`
    : 'no estimate: nothing the tool does has a measured rate']);
  const rb = s.rollback;
  lines.push(['Rollback', `${rb.lastUndoable ? `${rb.command} undoes every step up to step ${rb.lastUndoable.number} (${rb.lastUndoable.step}) whole` : `${rb.command} undoes the completed steps where the API allows`}`
    + `${rb.firstOneWay ? `; from step ${rb.firstOneWay.number} (${rb.firstOneWay.step}) on it cannot put everything back (${rb.firstOneWay.rollback})` : ''}`]);
  const r = s.references;
  lines.push(['References', r.total === 0 ? 'nothing else names an old range' : `${r.needAction} to change before the run, ${r.toReview} to review (of ${r.total} that name an old range)`]);
  return lines;
}
