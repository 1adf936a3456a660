/**
 * The k3s and RKE2 distribution planners (src/plan/distributions/k3s.ts, rke2.ts, k3s-family.ts): the cluster-cidr
 * held while nodes of both ranges exist, per family; the patches of a Pod CIDR move whose final gate leaves
 * allocation off (the Calico path); the restart order and the re-registration command each gives.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import { bridgeClusterCIDR } from '../../src/platforms/k3s-family/plan.ts';
import { plannerOfPlatform } from '../../src/plan/distributions/registry.ts';
import type { PodCIDRSpec } from '../../src/plan/pod-spec.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { Snapshot } from '../../src/cluster/types.ts';

install();

const snap = kubeadmSnapshot([svc('default', 'kubernetes', '10.43.0.1'), svc('kube-system', 'kube-dns', '10.43.0.10')], { platform: { kind: 'k3s', title: 'k3s', evidence: ['test'], reserved: [] }, kubeadm: undefined });

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
      const patches = plannerOfPlatform(id).podPatches({
        snap, spec: { ipam: 'calico', from: ['10.42.0.0/16'], to: ['10.60.0.0/16'] } as unknown as PodCIDRSpec,
        finalGate: 'pod-cidr-config', stopGate: undefined, allocAfter: false, oldCC: '10.42.0.0/16', to: '10.60.0.0/16', masks: { before: [], after: [] },
      });
      assert.deepEqual(patches.map((p) => [p.id, p.gate]), [[`${id}-pod-cidr`, 'pod-cidr-config']]);
      assert.deepEqual(yaml.load(patches[0]!.after), { 'cluster-cidr': '10.60.0.0/16', 'kube-controller-manager-arg': ['allocate-node-cidrs=false'] });
      assert.match(patches[0]!.target, new RegExp(`^/etc/rancher/${id}/config\\.yaml on every server`));
    }
  });

  it('node podCIDR sizes the plan changes go to kube-controller-manager-arg at the final gate', () => {
    const [, final] = plannerOfPlatform('k3s').podPatches({
      snap, spec: { ipam: 'node', from: ['10.42.0.0/16'], to: ['10.60.0.0/16'] } as unknown as PodCIDRSpec,
      finalGate: 'kcm-cluster-cidr', stopGate: 'kcm-stop-allocating', allocAfter: true, oldCC: '10.42.0.0/16', to: '10.60.0.0/16',
      masks: { before: ['# --node-cidr-mask-size not set: kube-controller-manager\'s default 24'], after: ['--node-cidr-mask-size=26'] },
    });
    assert.deepEqual(yaml.load(final!.after), { 'cluster-cidr': '10.60.0.0/16', 'kube-controller-manager-arg': ['node-cidr-mask-size=26'] });
  });

  it('each restarts its own units, the joined server first; k3s acknowledges the kcm gates, RKE2\'s mirror pods show the flags', () => {
    for (const [id, server, agent] of [['k3s', 'k3s', 'k3s-agent'], ['rke2', 'rke2-server', 'rke2-agent']] as const) {
      const d = plannerOfPlatform(id);
      for (const gate of ['kcm-stop-allocating', 'kcm-cluster-cidr'] as const) {
        const lines = d.podGateInstructions(gate, gate === 'kcm-stop-allocating' ? 'stop-allocating' : 'final');
        assert.match(lines[1]!, new RegExp(`^systemctl restart ${server} on each server in turn, first the one the others name in \`server:\``));
        assert.equal(lines.at(-1)!.startsWith(`kube-renumber resume --ack-gate ${gate}`), id === 'k3s', lines.at(-1));
      }
      assert.ok(d.podGateInstructions('kcm-cluster-cidr', 'final').some((l) => l.includes(`systemctl restart ${agent} on each agent`)));
      assert.match(d.reregister, new RegExp(`^systemctl restart ${agent} \\(${server} on a server\\)`));
    }
    assert.ok(plannerOfPlatform('rke2').podGateInstructions('kcm-cluster-cidr', 'final').some((l) => l.includes('rollout restart daemonset rke2-canal')));
    assert.equal(plannerOfPlatform('kubeadm').reregister, 'systemctl restart kubelet (it registers the Node again)');
  });
});

describe('k3s-family pod checks: the cluster-cidr held while nodes of both ranges exist', () => {
  let example: Snapshot;
  before(async () => { example = buildSnapshot(await readInventoryFiles(['examples/k3s'])); });
  const check = (to: string, allocAfter = true, from = '10.42.0.0/16') => plannerOfPlatform('k3s').podChecks!({
    snap: example, spec: { ipam: 'node', from: [from], to: [to] } as unknown as PodCIDRSpec,
    finalGate: 'kcm-cluster-cidr', stopGate: allocAfter ? 'kcm-stop-allocating' : undefined, allocAfter, oldCC: from, to, masks: { before: [], after: [] },
  });

  it('refuses NEW so far from the old range that the range holding both covers the node network or is wider than /8', () => {
    const [c] = check('172.16.0.0/16');
    assert.equal(c?.status, 'fail');
    assert.equal(c?.target, true);
    assert.match(c!.message, /0\.0\.0\.0\/0 is wider than \/8/);
    assert.match(c!.message, /holds the node network 198\.51\.100\.0\/24/);
  });

  it('names what else the wider range holds (here the Service range) as a warning', () => {
    const [c] = check('10.60.0.0/16');
    assert.equal(c?.status, 'warn');
    assert.match(c!.message, /10\.32\.0\.0\/11 holds 10\.43\.0\.0\/16 \(service\)/);
  });

  it('passes a NEW next to the old range whose common range holds nothing else, and says nothing when allocation stays off', () => {
    // on k3s's defaults every range holding 10.42.0.0/16 and another /16 holds the Service range 10.43.0.0/16 too
    assert.equal(check('10.41.0.0/16')[0]?.status, 'warn');
    const [c] = check('10.51.0.0/16', true, '10.50.0.0/16');
    assert.equal(c?.status, 'pass', c?.message);
    assert.deepEqual(check('10.60.0.0/16', false), []);
  });
});

describe('k3s-family pod checks in plan', () => {
  it('plan refuses a k3s pod move whose wider cluster-cidr would hold the node network (exit 2, one error line)', () => {
    const r = spawnSync(process.execPath, ['bin/kube-renumber.js', 'plan', '-f', 'examples/k3s', '--pod-cidr', '172.16.0.0/16'], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^error: --pod-cidr 172\.16\.0\.0\/16 refused: .*pod-k3s-bridge-range|^error: --pod-cidr 172\.16\.0\.0\/16 refused: the cluster-cidr while nodes of both ranges exist/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});
