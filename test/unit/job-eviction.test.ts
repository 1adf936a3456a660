// When evicting pods of a Job fails it: the Job controller counts a pod deleted before it finished as failed
// (unless a podFailurePolicy is set), and a Job whose failures pass backoffLimit fails.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobEvictionRefusal, jobEvictionRisk } from '../../src/engine/job-eviction.ts';

const job = (spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}) => ({
  apiVersion: 'batch/v1', kind: 'Job', metadata: { namespace: 'ns', name: 'j' }, spec, status,
});
const IGNORE = { rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] }] };

describe('jobEvictionRisk', () => {
  it('backoffLimit 0: one eviction fails the Job', () => {
    assert.equal(jobEvictionRisk(job({ backoffLimit: 0 }), 1), 'backoffLimit 0, 0 failure(s) so far, 1 pod(s) to evict');
  });

  it('counts the failures so far and the pods to evict against backoffLimit (6 when unset)', () => {
    assert.equal(jobEvictionRisk(job({ backoffLimit: 2 }, { failed: 1 }), 1), undefined);
    assert.match(jobEvictionRisk(job({ backoffLimit: 2 }, { failed: 1 }), 2)!, /backoffLimit 2, 1 failure\(s\) so far, 2 pod\(s\)/);
    assert.equal(jobEvictionRisk(job({}), 6), undefined);
    assert.match(jobEvictionRisk(job({}), 7)!, /backoffLimit 6/);
  });

  it('a podFailurePolicy rule that ignores DisruptionTarget (status True, the default) makes any eviction safe', () => {
    assert.equal(jobEvictionRisk(job({ backoffLimit: 0, podFailurePolicy: IGNORE }), 5), undefined);
    const falseStatus = { rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'False' }] }] };
    assert.ok(jobEvictionRisk(job({ backoffLimit: 0, podFailurePolicy: falseStatus }), 1));
    const count = { rules: [{ action: 'Count', onPodConditions: [{ type: 'DisruptionTarget' }] }, ...IGNORE.rules] };
    assert.ok(jobEvictionRisk(job({ backoffLimit: 0, podFailurePolicy: count }), 1), 'the first matching rule decides: Count');
    assert.equal(jobEvictionRisk(job({ backoffLimit: 1, podFailurePolicy: count }), 1), undefined);
  });

  it('a podFailurePolicy that fails the Job or the index on DisruptionTarget, or on exit codes first, fails it whatever the backoffLimit', () => {
    const failJob = { rules: [{ action: 'FailJob', onPodConditions: [{ type: 'DisruptionTarget' }] }] };
    assert.equal(jobEvictionRisk(job({ backoffLimit: 6, podFailurePolicy: failJob }), 1), 'its podFailurePolicy fails the Job on DisruptionTarget');
    const exitFirst = { rules: [{ action: 'FailJob', onExitCodes: { operator: 'NotIn', values: [0] } }, ...IGNORE.rules] };
    assert.match(jobEvictionRisk(job({ backoffLimit: 6, podFailurePolicy: exitFirst }), 1)!, /fails the Job on exit codes/);
    const ignoreExitFirst = { rules: [{ action: 'Ignore', onExitCodes: { operator: 'In', values: [42] } }, ...IGNORE.rules] };
    assert.equal(jobEvictionRisk(job({ backoffLimit: 0, podFailurePolicy: ignoreExitFirst }), 1), undefined);
  });

  it('backoffLimitPerIndex: 0 fails the evicted pod\'s index; more leaves a retry', () => {
    assert.match(jobEvictionRisk(job({ backoffLimitPerIndex: 0, completionMode: 'Indexed' }), 1)!, /backoffLimitPerIndex 0/);
    assert.equal(jobEvictionRisk(job({ backoffLimitPerIndex: 1, completionMode: 'Indexed' }), 3), undefined);
  });

  it('nothing to evict, no Job, or a Job that ended: no risk', () => {
    assert.equal(jobEvictionRisk(job({ backoffLimit: 0 }), 0), undefined);
    assert.equal(jobEvictionRisk(undefined, 1), undefined);
    assert.equal(jobEvictionRisk(job({ backoffLimit: 0 }, { conditions: [{ type: 'Complete', status: 'True' }] }), 1), undefined);
  });

  it('the refusal names the Job, why, and what to do', () => {
    const m = jobEvictionRefusal(job({ backoffLimit: 0 }), 'backoffLimit 0, 0 failure(s) so far, 1 pod(s) to evict', 'on node n1');
    assert.equal(m, 'Job ns/j: evicting its pod(s) on node n1 would fail it (backoffLimit 0, 0 failure(s) so far, 1 pod(s) to evict; no podFailurePolicy rule ignores DisruptionTarget first): '
      + 'nothing of it was evicted; let it finish, delete it, or raise its backoffLimit (kubectl patch job -n ns j --type=merge -p \'{"spec":{"backoffLimit":N}}\'), then resume');
  });
});
