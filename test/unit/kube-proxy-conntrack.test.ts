// The readiness fact and gate line for kube-proxy 1.32–1.35's quadratic UDP conntrack clean-up
// (kubernetes/kubernetes#135323): which version is read, when the warning appears, where it is said.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeInfo, Snapshot } from '../../src/cluster/types.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { kubeProxyVersion, readiness, slowUdpConntrackCleanup } from '../../src/analyze/readiness.ts';
import { buildServicePlan } from '../../src/plan/plan.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

function node(name: string, kubeletVersion?: string): NodeInfo {
  return { name, podCIDRs: [], internalIPs: ['192.168.0.1'], externalIPs: [], labels: {}, ready: true, unschedulable: false, ...(kubeletVersion ? { kubeletVersion } : {}) };
}

function snap(over: Partial<Snapshot> = {}): Snapshot {
  return kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1', { ports: [{ port: 443 }] }),
    svc('kube-system', 'kube-dns', '10.96.0.10', { ports: [{ port: 53, protocol: 'UDP' }], selector: { 'k8s-app': 'kube-dns' } })],
  { kubernetesVersion: 'v1.36.5', ...over });
}

const fact = (s: Snapshot) => readiness(s).find((f) => f.id === 'kube-proxy-udp-conntrack');

describe('kube-proxy UDP conntrack clean-up (kubernetes/kubernetes#135323)', () => {
  it('reads the oldest kubelet, else the apiserver version', () => {
    assert.deepEqual(kubeProxyVersion(snap({ nodes: [node('a', 'v1.36.5'), node('b', 'v1.34.2')] })), { version: 'v1.34.2', minor: 34 });
    assert.deepEqual(kubeProxyVersion(snap({ nodes: [node('a')] })), { version: 'v1.36.5', minor: 36 });
    assert.equal(kubeProxyVersion(snap({ kubernetesVersion: undefined })), undefined);
    assert.equal(fact(snap({ kubernetesVersion: undefined })), undefined, 'no version, no fact');
  });

  it('warns for 1.32 to 1.35 only', () => {
    for (const [v, slow] of [['v1.31.14', false], ['v1.32.0', true], ['v1.35.4', true], ['v1.36.0', false], ['v1.37.2', false]] as const) {
      const s = snap({ nodes: [node('a', v)] });
      assert.equal(slowUdpConntrackCleanup(s), slow ? v : undefined, v);
      const f = fact(s)!;
      assert.equal(f.ok, slow ? null : true, v);
      assert.match(f.summary, new RegExp(v.replaceAll('.', '\\.')));
      if (slow) assert.match(f.summary, /#135323/);
    }
  });

  it('says nothing about kube-proxy for Cilium without a kube-proxy', () => {
    const s = snap({ cni: { plugin: 'cilium', ipam: 'cilium', operatorManaged: false, evidence: [] }, nodes: [node('a', 'v1.34.0')] });
    assert.equal(kubeProxyVersion(s), undefined);
    assert.equal(fact(s), undefined);
  });

  it('the restart-workloads gate says when to restart CoreDNS on a slow kube-proxy, the step how long it holds, and neither otherwise', () => {
    const gateText = (v: string) => {
      const p = buildServicePlan(snap({ nodes: [node('a', v)] }), { target: '172.24.0.0/16', restartWorkloads: 'manual' });
      const g = p.steps.find((st) => st.id === 'restart-workloads');
      assert.ok(g?.gate, 'the plan has the restart-workloads gate');
      return g.gate.instructions.join('\n');
    };
    assert.match(gateText('v1.35.4'), /kube-proxy v1\.35\.4 clears stale UDP conntrack entries slowly .*#135323.*CoreDNS at a quiet hour/);
    assert.doesNotMatch(gateText('v1.36.5'), /conntrack/);
    // the step the tool runs (the default) says it too
    const stepText = (v: string) => buildServicePlan(snap({ nodes: [node('a', v)] }), { target: '172.24.0.0/16' }).steps.find((st) => st.id === 'restart-workloads')!.description;
    assert.match(stepText('v1.35.4'), /kube-proxy v1\.35\.4 clears stale UDP conntrack entries slowly .*#135323.*held 48 s/);
    assert.doesNotMatch(stepText('v1.36.5'), /conntrack/);
  });

  it('a Node object\'s status.nodeInfo.kubeletVersion reaches the snapshot', () => {
    const s = buildSnapshot({ source: { kind: 'file', files: ['x'] }, objects: [{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {}, status: { nodeInfo: { kubeletVersion: 'v1.33.6' } } }], configs: [], gaps: [] });
    assert.equal(s.nodes[0]!.kubeletVersion, 'v1.33.6');
  });
});
