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

  it('backoffLimitPerIndex with the pods at hand: each index\'s failures so far (job-index-failure-count) decide', () => {
    const pod = (ix: number, failures?: string) => ({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: `j-${ix}-x`, annotations: { 'batch.kubernetes.io/job-completion-index': String(ix), ...(failures !== undefined ? { 'batch.kubernetes.io/job-index-failure-count': failures } : {}) } },
    });
    const perIndex = (limit: number, more: Record<string, unknown> = {}, status: Record<string, unknown> = {}) => job({ backoffLimitPerIndex: limit, completionMode: 'Indexed', ...more }, status);
    // the controller fails an index when a counted failure meets count >= backoffLimitPerIndex
    assert.equal(jobEvictionRisk(perIndex(2), [pod(0, '0'), pod(1, '1')]), undefined, 'both indexes have a failure left');
    assert.equal(jobEvictionRisk(perIndex(2), [pod(0, '2')]),
      'backoffLimitPerIndex 2: index 0 has 2 failure(s), so evicting its pod fails the index: a failed index fails the Job once the others finish');
    assert.equal(jobEvictionRisk(perIndex(1), [pod(3)]), undefined, 'no annotation: 0 failures so far');
    assert.equal(jobEvictionRisk(perIndex(1), [pod(3, 'x'), pod(4, '-2'), pod(5, '99999999999')]), undefined, 'unparsable or out of range: 0, as the controller reads it');
    assert.match(jobEvictionRisk(perIndex(0), [pod(3)])!, /index 3 has 0 failure/);
    // maxFailedIndexes: the failed indexes so far (status.failedIndexes) and those the eviction fails
    assert.match(jobEvictionRisk(perIndex(1, { maxFailedIndexes: 2 }, { failedIndexes: '4,6' }), [pod(1, '1')])!,
      /3 failed index\(es\) pass maxFailedIndexes 2/);
    assert.match(jobEvictionRisk(perIndex(1, { maxFailedIndexes: 5 }, { failedIndexes: '4-6' }), [pod(1, '1')])!, /once the others finish/);
    // a podFailurePolicy that ignores DisruptionTarget still comes first
    assert.equal(jobEvictionRisk(perIndex(0, { podFailurePolicy: IGNORE }), [pod(0, '3')]), undefined);
    const m = jobEvictionRefusal(perIndex(1), jobEvictionRisk(perIndex(1), [pod(0, '1')])!, 'on node n1');
    assert.match(m, /raise its backoffLimitPerIndex \(kubectl patch job -n ns j --type=merge -p '\{"spec":\{"backoffLimitPerIndex":N\}\}'\)/);
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
