/**
 * The k3s and RKE2 distribution planners (src/plan/distributions/k3s.ts, rke2.ts, k3s-family.ts): the cluster-cidr
 * held while nodes of both ranges exist, per family; the patches of a Pod CIDR move whose final gate leaves
 * allocation off (the Calico path); the restart order and the re-registration command each gives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import { bridgeClusterCIDR } from '../../src/plan/distributions/k3s-family.ts';
import { DISTRIBUTIONS } from '../../src/plan/distributions/registry.ts';
import type { PodCIDRSpec } from '../../src/plan/pod-spec.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

const snap = kubeadmSnapshot([svc('default', 'kubernetes', '10.43.0.1'), svc('kube-system', 'kube-dns', '10.43.0.10')], { distribution: { kind: 'k3s', evidence: ['test'] }, kubeadm: undefined });

describe('k3s-family distributions', () => {
  it('the cluster-cidr during the move is the smallest range per family holding the old ranges and NEW', () => {
    assert.deepEqual(bridgeClusterCIDR(['10.42.0.0/16'], ['10.60.0.0/16']), ['10.32.0.0/11']);
    assert.deepEqual(bridgeClusterCIDR(['10.42.0.0/16'], ['10.43.0.0/16']), ['10.42.0.0/15']);
    assert.deepEqual(bridgeClusterCIDR(['10.42.0.0/16', 'fd00:42::/56'], ['10.40.0.0/16', 'fd00:60::/56']), ['10.40.0.0/14', 'fd00:40::/26']);
    // an old range of another family does not widen NEW's
    assert.deepEqual(bridgeClusterCIDR(['fd00:42::/56'], ['10.60.0.0/16']), ['10.60.0.0/16']);
  });

  it('with allocation off after the move (Calico path): one patch, NEW and allocate-node-cidrs=false in the same edit', () => {
    for (const id of ['k3s', 'rke2'] as const) {
      const patches = DISTRIBUTIONS[id].podPatches({
        snap, spec: { ipam: 'calico', from: ['10.42.0.0/16'], to: ['10.60.0.0/16'] } as unknown as PodCIDRSpec,
        finalGate: 'pod-cidr-config', allocAfter: false, oldCC: '10.42.0.0/16', to: '10.60.0.0/16', masks: { before: [], after: [] },
      });
      assert.deepEqual(patches.map((p) => [p.id, p.gate]), [[`${id}-pod-cidr`, 'pod-cidr-config']]);
      assert.deepEqual(yaml.load(patches[0]!.after), { 'cluster-cidr': '10.60.0.0/16', 'kube-controller-manager-arg': ['allocate-node-cidrs=false'] });
      assert.match(patches[0]!.target, new RegExp(`^/etc/rancher/${id}/config\\.yaml on every server`));
    }
  });

  it('node podCIDR sizes the plan changes go to kube-controller-manager-arg at the final gate', () => {
    const [, final] = DISTRIBUTIONS.k3s.podPatches({
      snap, spec: { ipam: 'node', from: ['10.42.0.0/16'], to: ['10.60.0.0/16'] } as unknown as PodCIDRSpec,
      finalGate: 'kcm-cluster-cidr', allocAfter: true, oldCC: '10.42.0.0/16', to: '10.60.0.0/16',
      masks: { before: ['# --node-cidr-mask-size not set: kube-controller-manager\'s default 24'], after: ['--node-cidr-mask-size=26'] },
    });
    assert.deepEqual(yaml.load(final!.after), { 'cluster-cidr': '10.60.0.0/16', 'kube-controller-manager-arg': ['node-cidr-mask-size=26'] });
  });

  it('each restarts its own units, the joined server first; k3s acknowledges the kcm gates, RKE2\'s mirror pods show the flags', () => {
    for (const [id, server, agent] of [['k3s', 'k3s', 'k3s-agent'], ['rke2', 'rke2-server', 'rke2-agent']] as const) {
      const d = DISTRIBUTIONS[id];
      for (const gate of ['kcm-stop-allocating', 'kcm-cluster-cidr'] as const) {
        const lines = d.podGateInstructions(gate);
        assert.match(lines[1]!, new RegExp(`^systemctl restart ${server} on each server in turn, first the one the others name in \`server:\``));
        assert.equal(lines.at(-1)!.startsWith(`kube-renumber resume --ack-gate ${gate}`), id === 'k3s', lines.at(-1));
      }
      assert.ok(d.podGateInstructions('kcm-cluster-cidr').some((l) => l.includes(`systemctl restart ${agent} on each agent`)));
      assert.match(d.reregister, new RegExp(`^systemctl restart ${agent} \\(${server} on a server\\)`));
    }
    assert.ok(DISTRIBUTIONS.rke2.podGateInstructions('kcm-cluster-cidr').some((l) => l.includes('rollout restart daemonset rke2-canal')));
    assert.equal(DISTRIBUTIONS.kubeadm.reregister, 'systemctl restart kubelet (it registers the Node again)');
  });
});
