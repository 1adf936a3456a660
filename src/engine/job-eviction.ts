/**
 * Would evicting pods of a Job fail that Job?
 *
 * The Job controller counts a pod deleted before it finished as failed (kubernetes pkg/controller/job
 * job_controller.go `isPodFailed`: "Count deleted Pods as failures", unless the Job has a podFailurePolicy or
 * podReplacementPolicy Failed, which count a pod only once it is Failed), and a Job whose failures pass its
 * backoffLimit fails (BackoffLimitExceeded) and its other pods are deleted. An eviction is such a deletion. A
 * podFailurePolicy rule `action: Ignore` on the pod condition DisruptionTarget (which the Eviction API sets) is
 * what makes a Job survive evictions whatever its backoffLimit; without one, a Job survives as many evictions as
 * its backoffLimit has failures left.
 *
 * With backoffLimitPerIndex (an Indexed Job) failures are counted per index, not in the Job's status: each pod
 * carries its index's failures so far in the annotation batch.kubernetes.io/job-index-failure-count (0 when absent,
 * unparsable or out of range), and a failed pod whose count is already backoffLimitPerIndex fails its index
 * (kubernetes pkg/controller/job indexed_job_utils.go `isIndexFailed`: `isPodFailedCounted &&
 * getIndexFailureCount(logger, pod) >= *job.Spec.BackoffLimitPerIndex`; the replacement pod gets the count plus
 * one, `getNewIndexFailureCounts`). A failed index fails the Job: at once when the failed indexes pass
 * maxFailedIndexes, else when the other indexes have finished.
 *
 * Both paths that evict pods (a node's drain, the restart of a Job's pods) refuse an eviction that would fail
 * the Job, naming what the operator can do; `kubectl drain` evicts them anyway.
 */
import type { KubeObject } from '../cluster/types.ts';
import { firstAndMore } from '../text.ts';

export const INDEX_FAILURE_COUNT = 'batch.kubernetes.io/job-index-failure-count';
const COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';

/** A pod's index failures so far, read as the Job controller reads them (parseIndexFailureCountAnnotation). */
export function indexFailureCount(pod: KubeObject): number {
  const v = pod.metadata?.annotations?.[INDEX_FAILURE_COUNT];
  if (typeof v !== 'string' || !/^[+-]?\d+$/.test(v)) return 0;
  const n = Number(v);
  return n < 0 || n > 2 ** 31 - 1 ? 0 : n;
}

/** The comma-separated intervals of status.failedIndexes ("1,3-5"), counted. */
function countIndexes(s: unknown): number {
  if (typeof s !== 'string' || s === '') return 0;
  let n = 0;
  for (const part of s.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (Number.isInteger(a)) n += Number.isInteger(b) && b! >= a! ? b! - a! + 1 : 1;
  }
  return n;
}

/**
 * Why evicting pods of `job` would fail it, or undefined when the Job survives them. `evictions` is the pods to
 * evict (their index failure counts matter for backoffLimitPerIndex), or only how many when they are not at hand.
 */
export function jobEvictionRisk(job: KubeObject | undefined, evictions: number | readonly KubeObject[]): string | undefined {
  const pods = typeof evictions === 'number' ? undefined : evictions;
  const count = pods ? pods.length : evictions as number;
  if (!job || count <= 0) return undefined;
  const spec = job.spec ?? {};
  const status = job.status ?? {};
  // a Job that already ended has no running pod to evict
  if ((status.conditions ?? []).some((c: any) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) return undefined;
  // podFailurePolicy: the first rule that matches a failed pod decides (an evicted pod has DisruptionTarget, and
  // an exit code this cannot know: a rule on exit codes that fails the Job or the index may match it)
  for (const r of spec.podFailurePolicy?.rules ?? []) {
    const fails = r?.action === 'FailJob' || r?.action === 'FailIndex';
    if (r?.onExitCodes) {
      if (fails) return `its podFailurePolicy ${r.action === 'FailJob' ? 'fails the Job' : 'fails the index'} on exit codes an evicted container may end with`;
      continue;
    }
    if (!(r?.onPodConditions ?? []).some((c: any) => c?.type === 'DisruptionTarget' && (c.status ?? 'True') === 'True')) continue;
    if (r.action === 'Ignore') return undefined;
    if (fails) return `its podFailurePolicy ${r.action === 'FailJob' ? 'fails the Job' : 'fails the index'} on DisruptionTarget`;
    break; // Count: against the limits below
  }
  if (typeof spec.backoffLimitPerIndex === 'number') {
    const perIndex = spec.backoffLimitPerIndex;
    // per index: an evicted pod fails its index when the index has used all its failures already
    if (!pods) return perIndex < 1 ? `backoffLimitPerIndex ${perIndex}: an evicted pod's index fails` : undefined;
    const failing = new Map<string, number>();
    for (const p of pods) {
      const used = indexFailureCount(p);
      if (used < perIndex) continue;
      const ix = p.metadata?.annotations?.[COMPLETION_INDEX] ?? p.metadata?.labels?.[COMPLETION_INDEX] ?? p.metadata?.name ?? '?';
      failing.set(ix, Math.max(used, failing.get(ix) ?? 0));
    }
    if (failing.size === 0) return undefined;
    const shown = firstAndMore([...failing].map(([ix, used]) => `index ${ix} has ${used} failure(s)`), 3);
    const max = spec.maxFailedIndexes;
    const already = countIndexes(status.failedIndexes);
    const end = typeof max === 'number' && already + failing.size > max
      ? `, and ${already + failing.size} failed index(es) pass maxFailedIndexes ${max}`
      : ': a failed index fails the Job once the others finish';
    return `backoffLimitPerIndex ${perIndex}: ${shown}, so evicting its pod fails the index${end}`;
  }
  const limit = typeof spec.backoffLimit === 'number' ? spec.backoffLimit : 6;
  const failed = typeof status.failed === 'number' ? status.failed : 0;
  if (failed + count <= limit) return undefined;
  return `backoffLimit ${limit}, ${failed} failure(s) so far, ${count} pod(s) to evict`;
}

/** The error for a Job an eviction would fail: what it is and what the operator can do, then resume. */
export function jobEvictionRefusal(job: KubeObject, risk: string, where: string): string {
  const ns = job.metadata?.namespace ?? '';
  const name = job.metadata?.name ?? '';
  const field = typeof job.spec?.backoffLimitPerIndex === 'number' ? 'backoffLimitPerIndex' : 'backoffLimit';
  return `Job ${ns}/${name}: evicting its pod(s) ${where} would fail it (${risk}; no podFailurePolicy rule ignores DisruptionTarget first): `
    + `nothing of it was evicted; let it finish, delete it, or raise its ${field} `
    + `(kubectl patch job -n ${ns} ${name} --type=merge -p '{"spec":{"${field}":N}}'), then resume`;
}
