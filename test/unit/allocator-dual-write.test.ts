import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Snapshot } from '../../src/cluster/types.ts';
import { allocatorDualWrite, dualWriteFlags, featureEnabledInMetrics, parseFeatureGates } from '../../src/plan/allocator-dual-write.ts';
import { buildServicePlan } from '../../src/plan/plan.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

const SERVICES = [svc('default', 'kubernetes', '10.96.0.1', { ports: [{ port: 443 }] }),
  svc('kube-system', 'kube-dns', '10.96.0.10', { ports: [{ port: 53, protocol: 'UDP' }], selector: { 'k8s-app': 'kube-dns' } }),
  svc('app', 'web', '10.96.4.7', { ports: [{ port: 80 }] })];

/** A kubeadm cluster of `version`; before 1.33 without the ServiceCIDR API unless `served` (then v1beta1 behind its gate). */
function snapshotOn(version: string, over: Partial<Snapshot> = {}, served = false): Snapshot {
  const minor = Number(version.split('.')[1]);
  const gated = minor < 33;
  const api = minor >= 31 ? 'v1beta1' : 'v1alpha1';
  return kubeadmSnapshot(SERVICES, {
    kubernetesVersion: version,
    ...(gated ? (served
      ? { serviceCIDRApi: api, serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/16'], apiVersion: `networking.k8s.io/${api}`, deleting: false, ready: true }] }
      : { serviceCIDRApi: null, serviceCIDRs: [] }) : {}),
    ...over,
  });
}

function restartGate(snap: Snapshot) {
  const plan = buildServicePlan(snap, { target: '172.25.0.0/16' });
  const step = plan.steps.find((x) => x.id === 'restart-apiservers');
  assert.ok(step && step.kind === 'gate', `a restart-apiservers gate: ${plan.steps.map((x) => x.id).join(',')}`);
  return { plan, gate: step };
}

/** The --feature-gates values the gate's patches set (kube-apiserver manifest lines). */
function manifestGates(snap: Snapshot): string[] {
  const { gate } = restartGate(snap);
  return (gate.gate.patches ?? []).flatMap((p) => [...p.after.matchAll(/--feature-gates=(\S+)/g)].map((m) => m[1]!));
}

describe('the allocator\'s dual write per minor', () => {
  test('on where upstream has it on: 1.31/1.32 with the ServiceCIDR allocator on, 1.33 by default, 1.34 only when set off', () => {
    assert.equal(allocatorDualWrite(30, 'MultiCIDRServiceAllocator=true'), false);
    assert.equal(allocatorDualWrite(31, undefined), false, '1.31: MultiCIDRServiceAllocator beta, off by default: the legacy allocator');
    assert.equal(allocatorDualWrite(31, 'MultiCIDRServiceAllocator=true'), true);
    assert.equal(allocatorDualWrite(32, 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true'), false);
    assert.equal(allocatorDualWrite(33, undefined), true);
    assert.equal(allocatorDualWrite(33, 'DisableAllocatorDualWrite=true'), false);
    assert.equal(allocatorDualWrite(33, 'MultiCIDRServiceAllocator=false'), false);
    assert.equal(allocatorDualWrite(34, undefined), false);
    assert.equal(allocatorDualWrite(34, 'DisableAllocatorDualWrite=false'), true);
    assert.equal(allocatorDualWrite(35, 'DisableAllocatorDualWrite=false'), false, 'locked to true from 1.35');
    assert.equal(allocatorDualWrite(undefined, undefined), undefined);
  });
  test('feature-gates text: spaces and case tolerated, odd entries left out', () => {
    assert.deepEqual([...parseFeatureGates(' A=true, B=False,C,D=1')], [['A', true], ['B', false]]);
  });
  test('the apiserver\'s own metrics: the gate\'s line, 0 or 1; absent gates undefined', () => {
    const text = ['# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.',
      '# TYPE kubernetes_feature_enabled gauge',
      'kubernetes_feature_enabled{name="DisableAllocatorDualWrite",stage="BETA"} 0',
      'kubernetes_feature_enabled{name="DisableAllocatorDualWriteX",stage="ALPHA"} 1',
      'kubernetes_feature_enabled{name="MultiCIDRServiceAllocator",stage=""} 1'].join('\n');
    assert.equal(featureEnabledInMetrics(text, 'DisableAllocatorDualWrite'), false);
    assert.equal(featureEnabledInMetrics(text, 'MultiCIDRServiceAllocator'), true);
    assert.equal(featureEnabledInMetrics(text.replace('"BETA"} 0', '"BETA"} 1'), 'DisableAllocatorDualWrite'), true);
    assert.equal(featureEnabledInMetrics(text, 'NoSuchGate'), undefined);
  });
  test('flags: existing gates kept, the ServiceCIDR gate added before 1.33 where the plan uses the API', () => {
    assert.deepEqual(dualWriteFlags(33, 'Foo=true', true), { before: 'Foo=true', after: 'Foo=true,DisableAllocatorDualWrite=true', why: dualWriteFlags(33, 'Foo=true', true)!.why });
    assert.equal(dualWriteFlags(31, undefined, true)?.after, 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true');
    assert.equal(dualWriteFlags(31, undefined, true)?.before, 'MultiCIDRServiceAllocator=true');
    assert.equal(dualWriteFlags(33, 'DisableAllocatorDualWrite=true', true), undefined, 'already off');
    assert.equal(dualWriteFlags(30, undefined, true), undefined);
    assert.equal(dualWriteFlags(34, 'DisableAllocatorDualWrite=false', true)?.after, 'DisableAllocatorDualWrite=true');
  });
});

describe('the restart-apiservers gate turns the dual write off where it is on', () => {
  for (const [version, served] of [['v1.31.14', false], ['v1.31.14', true], ['v1.32.13', false], ['v1.33.13', false]] as const) {
    test(`${version}${served ? ' (API already served)' : ''}: DisableAllocatorDualWrite=true with the range, and why`, () => {
      const snap = snapshotOn(version, served ? { apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16'], featureGates: 'MultiCIDRServiceAllocator=true' }] } : {}, served);
      const { plan, gate } = restartGate(snap);
      const minor = Number(version.split('.')[1]);
      assert.equal(plan.steps.some((x) => x.id === 'enable-servicecidr-api'), minor < 33 && !served);
      const gates = manifestGates(snap);
      const want = minor < 33 ? 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true' : 'DisableAllocatorDualWrite=true';
      assert.deepEqual(gates, [want], JSON.stringify(gate.gate.patches, null, 1));
      assert.match(gate.description, new RegExp(`--feature-gates=${want}`));
      assert.match(gate.gate.reason, /legacy bitmap at \/ranges\/serviceips/);
      assert.match(gate.gate.reason, /the provided range does not match the current range/);
      assert.match(gate.gate.check, /DisableAllocatorDualWrite=true in --feature-gates/);
      const config = gate.gate.patches!.find((p) => p.id === 'kubeadm-config-service-subnet')!;
      assert.match(config.after, new RegExp(`feature-gates: ${want}`), 'kubeadm upgrade keeps it');
      assert.match(gate.gate.instructions.join('\n'), /feature-gates/);
    });
  }
  for (const version of ['v1.30.14', 'v1.34.4', 'v1.35.4', 'v1.37.2']) {
    test(`${version}: no DisableAllocatorDualWrite anywhere in the plan`, () => {
      const { plan } = restartGate(snapshotOn(version));
      assert.doesNotMatch(JSON.stringify(plan), /DisableAllocatorDualWrite/);
    });
  }
  test('v1.34 with the gate set off on the apiservers: turned on at the gate', () => {
    const snap = snapshotOn('v1.34.4', { apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16'], featureGates: 'Foo=true,DisableAllocatorDualWrite=false' }] });
    assert.deepEqual(manifestGates(snap), ['Foo=true,DisableAllocatorDualWrite=true']);
    assert.match(restartGate(snap).gate.gate.reason, /is set to false here/);
  });
  test('the generic, kOps and k3s patches carry it too', () => {
    for (const kind of ['generic', 'kops', 'k3s'] as const) {
      const snap = snapshotOn('v1.33.13', { platform: { kind, title: kind, evidence: [], reserved: [] }, kubeadm: undefined });
      const { gate } = restartGate(snap);
      const text = (gate.gate.patches ?? []).map((p) => p.after).join('\n');
      assert.match(text, kind === 'kops' ? /DisableAllocatorDualWrite: 'true'|DisableAllocatorDualWrite: "true"/ : /feature-gates=DisableAllocatorDualWrite=true/, `${kind}: ${text}`);
    }
  });
});
