/**
 * The seam for distributions: every table is derived from the registry (DISTRIBUTION_IDS, DISTRIBUTIONS), so a
 * distribution added without its module, its gate instructions or its configuration check fails here (and, for
 * the Record, in the compiler). Each planner is asked for every Service gate and every pod gate, and for its
 * patches with and without the configuration it reads, with and without the ServiceCIDR API to enable.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Snapshot } from '../../src/cluster/types.ts';
import { DISTRIBUTIONS, distributionOf } from '../../src/plan/distributions/registry.ts';
import {
  DISTRIBUTION_IDS, type Distribution, type DistroPatch, type PatchContext, type PodPatchInputs, type ServiceGate,
} from '../../src/plan/distributions/types.ts';
import { gateInstructions } from '../../src/plan/distro-patches.ts';
import { certFix, distroConfigCheck } from '../../src/plan/preflight.ts';
import { podGateInstructions } from '../../src/plan/pod-step-lists.ts';
import type { PodCIDRSpec, PodPatchGate } from '../../src/plan/pod-spec.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

/** Every Service gate and pod gate: Records, so a gate added to the unions without a line here does not compile. */
const SERVICE_GATES = Object.keys({ 'enable-servicecidr-api': 1, 'restart-apiservers': 1, 'kubelet-cluster-dns': 1 } satisfies Record<ServiceGate, 1>) as ServiceGate[];
const POD_GATES = Object.keys({ 'kcm-stop-allocating': 1, 'kcm-cluster-cidr': 1, 'pod-cidr-config': 1 } satisfies Record<PodPatchGate, 1>) as PodPatchGate[];

/** What an empty value looks like in patch or instruction text (the rule plan-written-accepted applies to whole plans). */
const EMPTY = [/--[a-z0-9-]+=(\s|$|,|"|'|;|\))/m, /\bundefined\b|\bNaN\b|\bnull\b/, /^\s*[A-Za-z][\w.-]*:\s*(""|''|\[\])\s*(#.*)?$/m];

function emptyIn(text: string): RegExp | undefined {
  return text.trim() === '' ? /^$/ : EMPTY.find((re) => re.test(text));
}

const services = [svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10')];

/** A snapshot of distribution `d`, with (`read`) or without the configuration source the distribution reads. */
function snapshotOf(d: Distribution, read: boolean): Snapshot {
  // RKE2 is told by its platform (its installer leaves no kubeadm, kOps or k3s signs)
  const base = d === 'rke2'
    ? kubeadmSnapshot(services, { distribution: { kind: 'generic', evidence: ['test: rke2'] }, platform: { kind: 'rke2', title: 'RKE2', evidence: ['test: rke2'], reserved: [] }, kubeadm: undefined })
    : kubeadmSnapshot(services, { distribution: { kind: d, evidence: [`test: ${d}`] }, kubeadm: undefined });
  if (d === 'kubeadm' && read) return { ...base, kubeadm: { serviceSubnet: ['10.96.0.0/16'], podSubnet: ['10.32.0.0/16'], kubeletClusterDNS: ['10.96.0.10'] } };
  if (d === 'kops' && read) {
    return { ...base, kops: { layout: 'networking', podCIDR: '100.96.0.0/11', serviceClusterIPRange: '10.96.0.0/16', nonMasqueradeCIDR: '100.64.0.0/10', kubeDNSServerIP: '10.96.0.10', kubeletClusterDNS: '10.96.0.10' } };
  }
  return base;
}

const CONTEXTS: Array<[string, PatchContext]> = [
  ['plain', { oldFlag: ['10.96.0.0/16'], newFlag: ['10.200.0.0/16'], oldDNS: '10.96.0.10', newDNS: '10.200.0.10', oldKubernetesIP: '10.96.0.1', newKubernetesIP: '10.200.0.1' }],
  ['enable v1beta1', { oldFlag: ['10.96.0.0/16'], newFlag: ['10.200.0.0/16'], oldDNS: '10.96.0.10', newDNS: '10.200.0.10', oldKubernetesIP: '10.96.0.1', newKubernetesIP: '10.200.0.1', enableApi: 'v1beta1', nonMasqueradeCIDR: '' }],
  ['enable v1, DNS kept', { oldFlag: ['10.96.0.0/16'], newFlag: ['10.200.0.0/16'], oldKubernetesIP: '10.96.0.1', newKubernetesIP: '10.200.0.1', enableApi: 'v1' }],
];

const POD_SPEC = { ipam: 'node', from: ['10.32.0.0/16'], to: ['10.250.0.0/16'] } as unknown as PodCIDRSpec;

function podInputs(snap: Snapshot, finalGate: PodPatchGate, allocAfter: boolean, masks: boolean): PodPatchInputs {
  return {
    snap, spec: POD_SPEC, finalGate, allocAfter, oldCC: '10.32.0.0/16', to: '10.250.0.0/16',
    masks: masks ? { before: ['# --node-cidr-mask-size not set: kube-controller-manager\'s default 24'], after: ['--node-cidr-mask-size=26'] } : { before: [], after: [] },
  };
}

/** Asserts a patch is complete and that the instructions of its gate name it. */
function checkPatch(d: Distribution, where: string, p: DistroPatch, instructions: string[]): void {
  for (const k of ['id', 'target', 'description', 'before', 'after'] as const) {
    const bad = emptyIn(p[k]);
    assert.equal(bad, undefined, `${d} ${where} ${p.id}.${k}: empty value (${bad}) in ${JSON.stringify(p[k])}`);
  }
  assert.notEqual(p.before, p.after, `${d} ${where} ${p.id}: before and after are the same`);
  assert.ok([d, 'generic'].includes(p.distribution), `${d} ${where} ${p.id}: distribution ${p.distribution}`);
  assert.ok(instructions.some((l) => l.includes(p.id)), `${d} ${where}: the ${p.gate} instructions do not name patch ${p.id}:\n${instructions.join('\n')}`);
}

describe('distributions seam', () => {
  it('every distribution has one planner module, registered under its own id, generic last', () => {
    assert.deepEqual(Object.keys(DISTRIBUTIONS).sort(), [...DISTRIBUTION_IDS].sort());
    for (const d of DISTRIBUTION_IDS) assert.equal(DISTRIBUTIONS[d].id, d);
    assert.equal(DISTRIBUTION_IDS.at(-1), 'generic');
    for (const d of DISTRIBUTION_IDS) assert.ok(DISTRIBUTIONS.generic.matches(snapshotOf(d, true)), 'generic matches any cluster');
  });

  it('each distribution is recognised from its kind, and kubespray is kubeadm', () => {
    for (const d of DISTRIBUTION_IDS) assert.equal(distributionOf(snapshotOf(d, false)), d);
    assert.equal(distributionOf(snapshotOf('kubespray' as Distribution, false)), 'kubeadm');
    // the configuration read decides when the kind does not
    assert.equal(distributionOf({ ...snapshotOf('generic', true), kops: { layout: 'legacy' } }), 'kops');
    assert.equal(distributionOf({ ...snapshotOf('generic', true), kubeadm: { serviceSubnet: ['10.96.0.0/16'] } }), 'kubeadm');
  });

  for (const d of DISTRIBUTION_IDS) {
    describe(d, () => {
      const planner = DISTRIBUTIONS[d];
      for (const read of [true, false]) {
        const snap = snapshotOf(d, read);
        const label = read ? 'configuration read' : 'configuration not read';

        it(`${label}: every Service gate has instructions ending in resume, and every patch is complete and named at its gate`, () => {
          for (const [name, ctx] of CONTEXTS) {
            for (const gate of [...SERVICE_GATES, 'restart-workloads' as const]) {
              const lines = gateInstructions(snap, gate, ctx);
              assert.ok(lines.length >= 2, `${d} ${name} ${gate}: ${lines.length} instructions`);
              for (const l of lines) assert.equal(emptyIn(l), undefined, `${d} ${name} ${gate}: empty value in ${JSON.stringify(l)}`);
              assert.match(lines.at(-1)!, /^kube-renumber resume/, `${d} ${name} ${gate}`);
            }
            const patches = planner.servicePatches(snap, ctx);
            assert.ok(patches.some((p) => p.gate === 'restart-apiservers'), `${d} ${name}: no restart-apiservers patch`);
            assert.equal(patches.some((p) => p.gate === 'enable-servicecidr-api'), !!ctx.enableApi, `${d} ${name}: enable-servicecidr-api patch only when the API is enabled`);
            assert.equal(patches.some((p) => p.gate === 'kubelet-cluster-dns') || d === 'kops' || d === 'k3s' || d === 'rke2', !!ctx.newDNS || d === 'kops' || d === 'k3s' || d === 'rke2', `${d} ${name}: kubelet-cluster-dns patch only when the DNS IP moves`);
            for (const p of patches) checkPatch(d, `${label} ${name}`, p, gateInstructions(snap, p.gate as ServiceGate, ctx));
          }
        });

        it(`${label}: every pod gate has instructions ending in resume, and every pod patch is complete and named at its gate`, () => {
          for (const gate of POD_GATES) {
            const lines = planner.podGateInstructions(gate);
            assert.deepEqual(podGateInstructions(d, gate), lines);
            assert.ok(lines.length >= 2, `${d} ${gate}: ${lines.length} instructions`);
            for (const l of lines) assert.equal(emptyIn(l), undefined, `${d} ${gate}: empty value in ${JSON.stringify(l)}`);
            assert.match(lines.at(-1)!, /^kube-renumber resume/, `${d} ${gate}`);
          }
          for (const finalGate of ['kcm-cluster-cidr', 'pod-cidr-config'] as const) {
            for (const allocAfter of [true, false]) {
              for (const masks of [true, false]) {
                const patches = planner.podPatches(podInputs(snap, finalGate, allocAfter, masks));
                const where = `${label} final ${finalGate} alloc ${allocAfter} masks ${masks}`;
                assert.equal(patches.some((p) => p.gate === 'kcm-stop-allocating'), allocAfter, `${d} ${where}: a stop-allocating patch only when allocation resumes later`);
                assert.ok(patches.some((p) => p.gate === finalGate && p.after.includes('10.250.0.0/16')), `${d} ${where}: no patch sets NEW at ${finalGate}`);
                for (const p of patches) checkPatch(d, where, p, planner.podGateInstructions(p.gate as PodPatchGate));
              }
            }
          }
        });

        it(`${label}: the certificate fix names both IPs, the restart-apiservers reason is given`, () => {
          const fix = certFix(snap, '10.200.0.1', '10.96.0.1');
          assert.match(fix, /10\.200\.0\.1,10\.96\.0\.1/);
          assert.equal(emptyIn(fix), undefined);
          assert.ok(planner.restartApiserversReason.length > 0);
        });

        it(`${label}: pre-flight says when the configuration source was not read`, () => {
          const check = distroConfigCheck(snap);
          assert.deepEqual(check, planner.configCheck(snap));
          const reads = d === 'kops' || d === 'kubeadm';
          if (!reads || read) assert.equal(check, undefined, `${d}: ${JSON.stringify(check)}`);
          else {
            assert.equal(check?.status, 'warn');
            assert.match(check!.message, new RegExp(`test: ${d}`), 'the evidence of the distribution is stated');
            assert.ok(check!.fix.length > 0);
          }
        });
      }
    });
  }
});
