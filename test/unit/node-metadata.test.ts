// What is put back on a node that registered again (src/engine/node-metadata.ts): the labels and taints of its
// backup that it lacks, never a value its kubelet set again, never a taint the node controllers own.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { missingNodeMetadata } from '../../src/engine/node-metadata.ts';

describe('node metadata after re-registration', () => {
  const backup = {
    apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', team: 'blue', 'node-role.kubernetes.io/db': '' } },
    spec: { taints: [
      { key: 'dedicated', value: 'db', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
      { key: 'gpu', value: 'yes', effect: 'PreferNoSchedule' },
    ] },
  };
  test('labels absent now and taints absent now come back; the rest is left as the kubelet set it', () => {
    const now = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1-new', team: 'red' } }, spec: { taints: [{ key: 'gpu', value: 'no', effect: 'PreferNoSchedule' }] } };
    const m = missingNodeMetadata(backup, now);
    assert.deepEqual(m.labels, { 'node-role.kubernetes.io/db': '' });
    assert.deepEqual(m.taints, [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }]);
  });
  test('nothing to put back when everything is there', () => {
    const m = missingNodeMetadata(backup, backup);
    assert.deepEqual(m, { labels: {}, taints: [] });
  });
});
