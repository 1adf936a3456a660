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
 * Both paths that evict pods (a node's drain, the restart of a Job's pods) refuse an eviction that would fail
 * the Job, naming what the operator can do; `kubectl drain` evicts them anyway.
 */
import type { KubeObject } from '../cluster/types.ts';

/** Why evicting `evictions` more pods of `job` would fail it, or undefined when the Job survives them. */
export function jobEvictionRisk(job: KubeObject | undefined, evictions: number): string | undefined {
  if (!job || evictions <= 0) return undefined;
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
    // per index: an index whose pod is evicted uses one of its own failures (those so far are not in the status)
    return spec.backoffLimitPerIndex < 1
      ? `backoffLimitPerIndex ${spec.backoffLimitPerIndex}: an evicted pod's index fails`
      : undefined;
  }
  const limit = typeof spec.backoffLimit === 'number' ? spec.backoffLimit : 6;
  const failed = typeof status.failed === 'number' ? status.failed : 0;
  if (failed + evictions <= limit) return undefined;
  return `backoffLimit ${limit}, ${failed} failure(s) so far, ${evictions} pod(s) to evict`;
}

/** The error for a Job an eviction would fail: what it is and what the operator can do, then resume. */
export function jobEvictionRefusal(job: KubeObject, risk: string, where: string): string {
  const ns = job.metadata?.namespace ?? '';
  const name = job.metadata?.name ?? '';
  return `Job ${ns}/${name}: evicting its pod(s) ${where} would fail it (${risk}; no podFailurePolicy rule ignores DisruptionTarget first): `
    + `nothing of it was evicted; let it finish, delete it, or raise its backoffLimit `
    + `(kubectl patch job -n ${ns} ${name} --type=merge -p '{"spec":{"backoffLimit":N}}'), then resume`;
}
