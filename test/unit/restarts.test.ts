import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import {
  describePdb, groupPods, orderWorkloads, pdbsFor, podForRecreate, rolloutState, runWaves, scaledReplicas, selectorMatches,
  selectorString, skipReason, workloadKey, type RestartResult, type Workload,
} from '../../src/engine/restarts.ts';

function pod(ns: string, name: string, opts: { owner?: [string, string]; ip?: string | null; phase?: string; hostNetwork?: boolean;
  labels?: Record<string, string>; deleting?: boolean; mirror?: boolean; ownerNotController?: boolean } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: ns, uid: `uid-${name}`, labels: opts.labels,
      ...(opts.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: opts.owner[0], name: opts.owner[1], uid: `u-${opts.owner[1]}`, controller: !opts.ownerNotController }] } : {}),
      ...(opts.deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
      ...(opts.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'abc' } } : {}),
    },
    spec: { hostNetwork: opts.hostNetwork },
    status: { phase: opts.phase ?? 'Running', ...(opts.ip === null ? {} : { podIP: opts.ip ?? '10.244.1.5' }) },
  };
}

const rs = (ns: string, name: string, owner?: [string, string]): KubeObject => ({
  apiVersion: 'apps/v1', kind: 'ReplicaSet',
  metadata: { name, namespace: ns, ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner[0], name: owner[1], controller: true }] } : {}) },
});

describe('groupPods', () => {
  const replicaSets = new Map([
    ['a/web-7d9', rs('a', 'web-7d9', ['Deployment', 'web'])],
    ['a/web-5c1', rs('a', 'web-5c1', ['Deployment', 'web'])],
    ['a/lone', rs('a', 'lone')],
    ['a/roll-1', rs('a', 'roll-1', ['Rollout', 'roll'])],
  ]);
  const pods = [
    pod('a', 'web-7d9-x', { owner: ['ReplicaSet', 'web-7d9'] }),
    pod('a', 'web-5c1-y', { owner: ['ReplicaSet', 'web-5c1'] }),
    pod('a', 'db-0', { owner: ['StatefulSet', 'db'] }),
    pod('a', 'db-1', { owner: ['StatefulSet', 'db'] }),
    pod('a', 'agent-q', { owner: ['DaemonSet', 'agent'] }),
    pod('a', 'nightly-29-abc', { owner: ['Job', 'nightly-29'] }),
    pod('a', 'solo'),
    pod('a', 'weak-owner', { owner: ['ConfigMap', 'cm'], ownerNotController: true }),
    pod('a', 'lone-z', { owner: ['ReplicaSet', 'lone'] }),
    pod('a', 'gone-rs-z', { owner: ['ReplicaSet', 'vanished'] }),
    pod('a', 'roll-1-p', { owner: ['ReplicaSet', 'roll-1'] }),
    pod('a', 'custom-0', { owner: ['Widget', 'w1'] }),
    pod('b', 'web-9-z', { owner: ['ReplicaSet', 'web-9'] }),
    pod('a', 'hostnet', { owner: ['DaemonSet', 'proxy'], hostNetwork: true }),
    pod('a', 'pending', { owner: ['StatefulSet', 'db'], ip: null, phase: 'Pending' }),
    pod('a', 'done', { owner: ['Job', 'nightly-28'], phase: 'Succeeded' }),
    pod('a', 'failed', { phase: 'Failed' }),
    pod('a', 'leaving', { deleting: true }),
    pod('kube-system', 'etcd-n1', { owner: ['Node', 'n1'], mirror: true }),
  ];
  const g = groupPods(pods, replicaSets);
  const byKey = new Map(g.workloads.map((w) => [workloadKey(w), w]));

  it('resolves Deployments through their ReplicaSets, one workload for all revisions', () => {
    assert.deepEqual(byKey.get('Deployment/a/web'), { kind: 'Deployment', namespace: 'a', name: 'web', pods: ['web-5c1-y', 'web-7d9-x'] });
  });
  it('StatefulSets, DaemonSets, Jobs (also CronJob-made) by their controller', () => {
    assert.deepEqual(byKey.get('StatefulSet/a/db')?.pods, ['db-0', 'db-1']);
    assert.deepEqual(byKey.get('DaemonSet/a/agent')?.pods, ['agent-q']);
    assert.deepEqual(byKey.get('Job/a/nightly-29')?.pods, ['nightly-29-abc']);
  });
  it('a pod without a controller is its own workload (a non-controller owner does not count)', () => {
    assert.deepEqual(byKey.get('Pod/a/solo'), { kind: 'Pod', namespace: 'a', name: 'solo', pods: ['solo'] });
    assert.equal(byKey.get('Pod/a/weak-owner')?.kind, 'Pod');
  });
  it('other controllers: Other, and unknown kinds reported', () => {
    assert.deepEqual(byKey.get('ReplicaSet/a/lone'), { kind: 'Other', namespace: 'a', name: 'lone', pods: ['lone-z'], owner: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'lone' } });
    assert.equal(byKey.get('ReplicaSet/a/vanished')?.kind, 'Other');
    assert.equal(byKey.get('Rollout/a/roll')?.owner?.kind, 'Rollout');
    assert.equal(byKey.get('Widget/a/w1')?.kind, 'Other');
    assert.deepEqual(g.unknownOwners.map((u) => `${u.kind}/${u.name}:${u.pod}`).sort(), ['Rollout/roll:roll-1-p', 'Widget/w1:custom-0']);
  });
  it('a ReplicaSet not yet resolved (other namespace) is not mistaken for a Deployment', () => {
    assert.equal(byKey.get('ReplicaSet/b/web-9')?.kind, 'Other');
  });
  it('skips hostNetwork, IP-less, terminal, terminating and static pods', () => {
    assert.deepEqual(Object.fromEntries(g.skipped.map((s) => [s.name, s.reason])), {
      hostnet: 'host-network', pending: 'no-ip', done: 'terminal', failed: 'terminal', leaving: 'terminating', 'etcd-n1': 'static-pod',
    });
    assert.equal(skipReason(pod('a', 'ok')), undefined);
  });
  it('sorted by namespace, then kind, then name', () => {
    assert.deepEqual(g.workloads.filter((w) => w.namespace === 'a').map((w) => w.kind),
      ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'Other', 'Other', 'Other', 'Other', 'Pod', 'Pod']);
    assert.equal(g.workloads.at(-1)!.namespace, 'b');
  });
});

describe('label selectors and PodDisruptionBudgets', () => {
  const labels = { app: 'web', tier: 'front', env: 'prod' };
  it('matchLabels and every matchExpressions operator', () => {
    assert.equal(selectorMatches({ matchLabels: { app: 'web' } }, labels), true);
    assert.equal(selectorMatches({ matchLabels: { app: 'db' } }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'back'] }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['back'] }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'missing', operator: 'In', values: [''] }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, labels), true, 'NotIn matches an absent key');
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'app', operator: 'Exists' }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'canary', operator: 'DoesNotExist' }] }, labels), true);
    assert.equal(selectorMatches({ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['dev'] }] }, labels), false, 'all terms must hold');
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'app', operator: 'Bogus' }] }, labels), false);
  });
  it('an empty selector selects every pod, a missing one none', () => {
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches({}, undefined), true);
    assert.equal(selectorMatches(undefined, labels), false);
    assert.equal(selectorMatches(null, labels), false);
  });
  it('selectorString renders the query syntax', () => {
    assert.equal(selectorString({ matchLabels: { app: 'web' }, matchExpressions: [
      { key: 'tier', operator: 'In', values: ['a', 'b'] }, { key: 'env', operator: 'NotIn', values: ['dev'] },
      { key: 'x', operator: 'Exists' }, { key: 'y', operator: 'DoesNotExist' }] }), 'app=web,tier in (a,b),env notin (dev),x,!y');
  });
  it('pdbsFor picks the budgets of the pod\'s namespace that select it', () => {
    const p = pod('a', 'web-1', { labels });
    const pdb = (ns: string, name: string, selector: unknown): KubeObject => ({ metadata: { name, namespace: ns }, spec: { selector, maxUnavailable: 0 },
      status: { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 } });
    const all = [
      pdb('a', 'by-label', { matchLabels: { app: 'web' } }),
      pdb('a', 'by-expr', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] }),
      pdb('a', 'other-app', { matchLabels: { app: 'db' } }),
      pdb('b', 'other-ns', { matchLabels: { app: 'web' } }),
      pdb('a', 'everything', {}),
      pdb('a', 'nothing', undefined),
    ];
    assert.deepEqual(pdbsFor(p, all).map((b) => b.metadata!.name), ['by-label', 'by-expr', 'everything']);
    assert.equal(describePdb(all[0]!), 'PodDisruptionBudget a/by-label (maxUnavailable 0; disruptionsAllowed 0, currentHealthy 2, desiredHealthy 2, expectedPods 2)');
  });
});

describe('rolloutState', () => {
  const dep = (spec: any, status: any, generation = 2): KubeObject => ({ kind: 'Deployment', metadata: { generation }, spec, status });
  it('Deployment: generation observed, all updated and available, no old replicas', () => {
    assert.equal(rolloutState(dep({ replicas: 2 }, { observedGeneration: 1, updatedReplicas: 2, replicas: 2, availableReplicas: 2 })).done, false);
    assert.equal(rolloutState(dep({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 1, replicas: 2, availableReplicas: 2 })).done, false);
    assert.equal(rolloutState(dep({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 3, availableReplicas: 2 })).done, false, 'old replica left');
    assert.equal(rolloutState(dep({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 1 })).done, false);
    const ok = rolloutState(dep({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 2 }));
    assert.equal(ok.done, true);
    assert.match(ok.detail, /desired 2, updated 2, total 2, available 2/);
    const stuck = rolloutState(dep({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 1, replicas: 3, availableReplicas: 2,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "w-1" has timed out progressing.' }] }));
    assert.match(stuck.failed!, /progress deadline exceeded/);
    assert.equal(rolloutState(dep({ replicas: 0 }, { observedGeneration: 2 })).done, true);
  });
  it('StatefulSet: revisions equal and all ready; OnDelete by updated count; partition', () => {
    const sts = (spec: any, status: any): KubeObject => ({ kind: 'StatefulSet', metadata: { generation: 3 }, spec, status });
    const st = { observedGeneration: 3, readyReplicas: 3, updatedReplicas: 3, currentRevision: 'a', updateRevision: 'b' };
    assert.equal(rolloutState(sts({ replicas: 3 }, st)).done, false);
    assert.equal(rolloutState(sts({ replicas: 3 }, { ...st, currentRevision: 'b' })).done, true);
    assert.equal(rolloutState(sts({ replicas: 3 }, { ...st, currentRevision: 'b', readyReplicas: 2 })).done, false);
    assert.equal(rolloutState(sts({ replicas: 3, updateStrategy: { type: 'OnDelete' } }, st)).done, true);
    assert.equal(rolloutState(sts({ replicas: 3, updateStrategy: { type: 'OnDelete' } }, { ...st, updatedReplicas: 2 })).done, false);
    assert.equal(rolloutState(sts({ replicas: 3, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } }, { ...st, updatedReplicas: 1 })).done, true);
  });
  it('DaemonSet: updated and available on every node', () => {
    const ds = (status: any): KubeObject => ({ kind: 'DaemonSet', metadata: { generation: 2 }, spec: {}, status: { observedGeneration: 2, ...status } });
    assert.equal(rolloutState(ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 2, numberAvailable: 3 })).done, false);
    assert.equal(rolloutState(ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2 })).done, false);
    assert.equal(rolloutState(ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3 })).done, true);
  });
});

describe('podForRecreate', () => {
  it('drops server-set, node-bound and Calico fields, keeps the spec', () => {
    const backup: KubeObject = {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'solo', namespace: 'a', uid: 'u1', resourceVersion: '9', creationTimestamp: 't', managedFields: [], labels: { app: 's' },
        annotations: { 'cni.projectcalico.org/podIP': '10.244.1.5/32', 'cni.projectcalico.org/containerID': 'x', keep: 'me' } },
      spec: { nodeName: 'n1', priority: 0, containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'scratch', emptyDir: {} }] },
      status: { podIP: '10.244.1.5' },
    };
    assert.deepEqual(podForRecreate(backup), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'solo', namespace: 'a', labels: { app: 's' }, annotations: { keep: 'me' } },
      spec: { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'scratch', emptyDir: {} }] },
    });
    const onlyCalico = podForRecreate({ ...backup, metadata: { ...backup.metadata, annotations: { 'cni.projectcalico.org/podIPs': 'x' } } });
    assert.equal(onlyCalico.metadata!.annotations, undefined);
  });
});

describe('ordering and waves', () => {
  const w = (kind: Workload['kind'], ns: string, name: string): Workload => ({ kind, namespace: ns, name, pods: [] });
  const list = [w('Deployment', 'a', 'web'), w('Deployment', 'kube-system', 'coredns'), w('StatefulSet', 'a', 'db'), w('DaemonSet', 'kube-system', 'agent')];

  it('critical workloads first, in the order given, by Kind/ns/name or ns/name', () => {
    const { critical, rest } = orderWorkloads(list, ['kube-system/agent', 'Deployment/kube-system/coredns', 'Deployment/x/absent']);
    assert.deepEqual(critical.map((x) => x.name), ['agent', 'coredns']);
    assert.deepEqual(rest.map((x) => x.name), ['web', 'db']);
    assert.deepEqual(orderWorkloads(list).critical, []);
  });

  it('runWaves: at most `parallel` at once, critical ones done before the rest start, failures do not stop others', async () => {
    const events: string[] = [];
    let inFlight = 0;
    let peak = 0;
    const many = [...list, ...Array.from({ length: 6 }, (_, i) => w('Deployment', 'b', `d${i}`))];
    const report = await runWaves(many, { parallel: 3, order: ['kube-system/coredns'] }, async (x): Promise<RestartResult> => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      events.push(`start ${x.name}`);
      await new Promise((r) => setTimeout(r, 30));
      inFlight--;
      events.push(`end ${x.name}`);
      if (x.name === 'd1') throw new Error('boom');
      return { workload: x, status: 'restarted', seconds: 0.03, warnings: [] };
    });
    assert.equal(peak, 3);
    assert.equal(report.maxInFlight, 3);
    assert.deepEqual(events.slice(0, 2), ['start coredns', 'end coredns'], 'coredns alone and first');
    assert.equal(report.results.length, many.length);
    assert.equal(report.results[0]!.workload.name, 'coredns');
    const failed = report.results.filter((r) => r.status === 'failed');
    assert.deepEqual(failed.map((r) => [r.workload.name, r.message]), [['d1', 'boom']]);
    assert.equal(report.results.filter((r) => r.status === 'restarted').length, many.length - 1);
    assert.ok(report.totalSeconds < report.sumSeconds, `${report.totalSeconds} < ${report.sumSeconds}`);
  });

  it('scaledReplicas: one more, at least two', () => {
    assert.deepEqual([0, 1, 2, 5].map(scaledReplicas), [2, 2, 3, 6]);
  });
});
