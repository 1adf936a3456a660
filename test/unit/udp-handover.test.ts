import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { groupPods } from '../../src/engine/restarts.ts';
import {
  HANDOVER_ANNOTATION, HANDOVER_LABEL, handoverState, handsOver, holdFor, listedIn, readyAddresses, releasePatch, replacePatch,
  SYNC_MS, udpServicesFor,
} from '../../src/engine/udp-handover.ts';

const svc = (name: string, selector: Record<string, string> | undefined, protocols: string[]): KubeObject => ({
  apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'kube-system' },
  spec: { ...(selector ? { selector } : {}), ports: protocols.map((protocol, i) => ({ port: 53 + i, protocol })) },
});
const KUBE_DNS = svc('kube-dns', { 'k8s-app': 'kube-dns' }, ['UDP', 'TCP']);
const METRICS = svc('coredns-metrics', { 'k8s-app': 'kube-dns', tier: 'metrics' }, ['TCP']);
const WEB = svc('web', { app: 'web' }, ['TCP']);

const deployment = (labels: Record<string, string>, o: { paused?: boolean; replicas?: number; updated?: number; observed?: number } = {}): KubeObject => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'coredns', namespace: 'kube-system', generation: 3 },
  spec: { replicas: 2, paused: o.paused, template: { metadata: { labels } } },
  status: { observedGeneration: o.observed ?? 3, replicas: o.replicas ?? 2, updatedReplicas: o.updated ?? 2 },
});

const pod = (labels: Record<string, string>, annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'coredns-7d9-x', namespace: 'kube-system', uid: 'u1', labels, ...(annotations ? { annotations } : {}),
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'coredns-7d9', uid: 'rs', controller: true }] },
  spec: {}, status: { phase: 'Running', podIP: '10.244.1.5' },
});

describe('udp-handover: which Deployments', () => {
  it('a Deployment whose pods a Service with a UDP port selects, at rest', () => {
    assert.deepEqual(udpServicesFor({ 'k8s-app': 'kube-dns', tier: 'x' }, [KUBE_DNS, METRICS, WEB]).map((s) => s.metadata?.name), ['kube-dns']);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }), [KUBE_DNS, WEB]), true);
  });
  it('not: TCP only, no selector, paused, a rollout in progress', () => {
    assert.equal(handsOver(deployment({ app: 'web' }), [KUBE_DNS, WEB]), false);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }), [svc('manual', undefined, ['UDP'])]), false);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }, { paused: true }), [KUBE_DNS]), false);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }, { updated: 1 }), [KUBE_DNS]), false);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }, { observed: 2 }), [KUBE_DNS]), false);
    assert.equal(handsOver(deployment({ 'k8s-app': 'kube-dns' }, { replicas: 3 }), [KUBE_DNS]), false);
  });
});

describe('udp-handover: how long an old pod stays', () => {
  it('grows with the clean-up kube-proxy does: linear (1.36+) < quadratic (1.32–1.35); unknown takes the quadratic bound', () => {
    const lin = holdFor({ kubeProxyMinor: 37, services: 60 }).ms;
    const quad = holdFor({ kubeProxyMinor: 35, services: 60 }).ms;
    assert.ok(lin > SYNC_MS && lin < quad, `${lin} ${quad}`);
    assert.equal(holdFor({ services: 60 }).ms, quad);
    assert.equal(holdFor({ kubeProxyMinor: 32, services: 60 }).ms, quad);
    assert.equal(holdFor({ kubeProxyMinor: 36, services: 60 }).ms, lin);
    assert.ok(holdFor({ kubeProxyMinor: 31, services: 60 }).ms < lin);
  });
  it('and with the cluster\'s Services (a longer sync)', () => {
    assert.ok(holdFor({ kubeProxyMinor: 37, services: 20_000 }).ms > holdFor({ kubeProxyMinor: 37, services: 100 }).ms);
    assert.match(holdFor({ kubeProxyMinor: 35, services: 100 }).why, /quadratic/);
  });
});

describe('udp-handover: the label patches', () => {
  const labels = { 'k8s-app': 'kube-dns', 'pod-template-hash': '7d9', keep: 'me' };
  it('step 1 takes off pod-template-hash only (the pod stays in its Services) and marks the pod held', () => {
    const p = replacePatch(pod(labels), 'run-1') as any;
    assert.deepEqual(p.metadata.labels, { 'pod-template-hash': null, [HANDOVER_LABEL]: 'held' });
    const state = JSON.parse(p.metadata.annotations[HANDOVER_ANNOTATION]);
    assert.deepEqual(state, { token: 'run-1', stage: 'replaced', removed: { 'pod-template-hash': '7d9' } });
    assert.equal(replacePatch(pod({ 'k8s-app': 'kube-dns' }), 'run-1'), undefined, 'no hash label: no hand-over');
  });
  it('step 2 takes off the labels of every Service selecting it, keeps what step 1 stashed', () => {
    const after1 = pod({ 'k8s-app': 'kube-dns', keep: 'me', [HANDOVER_LABEL]: 'held' },
      { [HANDOVER_ANNOTATION]: JSON.stringify({ token: 'run-1', stage: 'replaced', removed: { 'pod-template-hash': '7d9' } }) });
    const p = releasePatch(after1, [KUBE_DNS, METRICS, WEB], new Date('2026-01-01T00:00:00Z')) as any;
    assert.deepEqual(p.metadata.labels, { 'k8s-app': null });
    const state = JSON.parse(p.metadata.annotations[HANDOVER_ANNOTATION]);
    assert.deepEqual(state, { token: 'run-1', stage: 'released', removed: { 'pod-template-hash': '7d9', 'k8s-app': 'kube-dns' }, releasedAt: '2026-01-01T00:00:00.000Z' });
  });
  it('the state: none without the label; released when the annotation is unreadable', () => {
    assert.equal(handoverState(pod(labels)), undefined);
    assert.equal(handoverState(pod({ [HANDOVER_LABEL]: 'held' }, { [HANDOVER_ANNOTATION]: 'garbage' }))?.stage, 'released');
  });
});

describe('udp-handover: EndpointSlices', () => {
  const slice = (service: string, eps: Array<[string, boolean]>): KubeObject => ({
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `${service}-x`, labels: { 'kubernetes.io/service-name': service } },
    endpoints: eps.map(([a, ready]) => ({ addresses: [a], conditions: { ready } })),
  } as KubeObject);
  const slices = [slice('kube-dns', [['10.244.1.5', true], ['10.244.2.7', false]]), slice('other', [['10.244.3.3', true]])];
  it('ready addresses per Service; listed at all, ready or not', () => {
    assert.deepEqual([...readyAddresses(slices, 'kube-dns')], ['10.244.1.5']);
    assert.equal(listedIn(slices, '10.244.2.7'), true);
    assert.equal(listedIn(slices, '10.244.9.9'), false);
  });
});

describe('groupPods: a held pod is no workload', () => {
  it('skipped as handover, not a bare pod to create again', () => {
    const held = { ...pod({ [HANDOVER_LABEL]: 'held' }), metadata: { ...pod({ [HANDOVER_LABEL]: 'held' }).metadata, ownerReferences: [] } };
    const g = groupPods([held], new Map());
    assert.deepEqual(g.workloads, []);
    assert.deepEqual(g.skipped, [{ namespace: 'kube-system', name: 'coredns-7d9-x', reason: 'handover' }]);
  });
});
