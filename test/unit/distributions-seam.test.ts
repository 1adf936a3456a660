/**
 * The seam for the platforms' planners: every table is derived from the registry (src/platforms/registry.ts), so a
 * platform added with a planner but without its gate instructions or its configuration check fails here (and, for
 * the Record, in the compiler). Each planner is asked for every Service gate and every pod gate, and for its
 * patches with and without the configuration it reads, with and without the ServiceCIDR API to enable.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Snapshot } from '../../src/cluster/types.ts';
import { distributionOf, plannerOfPlatform } from '../../src/plan/distributions/registry.ts';
import type { DistroPatch, PatchContext, PodGateRole, PodPatchInputs, ServiceGate } from '../../src/plan/distributions/types.ts';
import { fallbackPlatform } from '../../src/platform/registry.ts';
import { PLATFORM_MODULES } from '../../src/platforms/registry.ts';
import { gateInstructions } from '../../src/plan/distro-patches.ts';
import { certFix, distroConfigCheck } from '../../src/plan/preflight.ts';
import { podGateInstructions } from '../../src/plan/pod-step-lists.ts';
import type { PodCIDRSpec, PodPatchGate } from '../../src/plan/pod-spec.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

/** Every Service gate and pod gate: Records, so a gate added to the unions without a line here does not compile. */
const SERVICE_GATES = Object.keys({ 'enable-servicecidr-api': 1, 'restart-apiservers': 1, 'kubelet-cluster-dns': 1 } satisfies Record<ServiceGate, 1>) as ServiceGate[];
/** Every pod patch gate, with what it asks of the planners. */
const POD_GATE_ROLES = { 'kcm-stop-allocating': 'stop-allocating', 'kcm-cluster-cidr': 'final', 'pod-cidr-config': 'final' } as const satisfies Record<PodPatchGate, PodGateRole>;
const POD_GATES = Object.keys(POD_GATE_ROLES) as PodPatchGate[];

/** What an empty value looks like in patch or instruction text (the rule plan-written-accepted applies to whole plans). */
const EMPTY = [/--[a-z0-9-]+=(\s|$|,|"|'|;|\))/m, /\bundefined\b|\bNaN\b|\bnull\b/, /^\s*[A-Za-z][\w.-]*:\s*(""|''|\[\])\s*(#.*)?$/m];

function emptyIn(text: string): RegExp | undefined {
  return text.trim() === '' ? /^$/ : EMPTY.find((re) => re.test(text));
}

const services = [svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10')];

/** Every platform kind, in the registry's order. */
const KINDS = Object.keys(PLATFORM_MODULES);
/** The platforms with a planner of their own, in the registry's order (the fallback's last). */
const PLANNED = KINDS.filter((k) => (PLATFORM_MODULES as Record<string, { planner?: unknown }>)[k]!.planner);
const FALLBACK = plannerOfPlatform(fallbackPlatform().kind);

/** A snapshot of platform `d`, with (`read`) or without the configuration source its planner reads. */
function snapshotOf(d: string, read: boolean): Snapshot {
  const base = kubeadmSnapshot(services, { platform: { kind: d, title: d, evidence: [`test: ${d}`], reserved: [] }, kubeadm: undefined });
  if ((d === 'kubeadm' || d === 'kubespray') && read) return { ...base, kubeadm: { serviceSubnet: ['10.96.0.0/16'], podSubnet: ['10.32.0.0/16'], kubeletClusterDNS: ['10.96.0.10'] } };
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
    snap, spec: POD_SPEC, finalGate, stopGate: allocAfter ? 'kcm-stop-allocating' : undefined, allocAfter, oldCC: '10.32.0.0/16', to: '10.250.0.0/16',
    masks: masks ? { before: ['# --node-cidr-mask-size not set: kube-controller-manager\'s default 24'], after: ['--node-cidr-mask-size=26'] } : { before: [], after: [] },
  };
}

/** Asserts a patch is complete and that the instructions of its gate name it. */
function checkPatch(d: string, where: string, p: DistroPatch, instructions: string[]): void {
  for (const k of ['id', 'target', 'description', 'before', 'after'] as const) {
    const bad = emptyIn(p[k]);
    assert.equal(bad, undefined, `${d} ${where} ${p.id}.${k}: empty value (${bad}) in ${JSON.stringify(p[k])}`);
  }
  assert.notEqual(p.before, p.after, `${d} ${where} ${p.id}: before and after are the same`);
  assert.ok([plannerOfPlatform(d).id, FALLBACK.id].includes(p.distribution), `${d} ${where} ${p.id}: distribution ${p.distribution}`);
  assert.ok(instructions.some((l) => l.includes(p.id)), `${d} ${where}: the ${p.gate} instructions do not name patch ${p.id}:\n${instructions.join('\n')}`);
}

describe('distributions seam', () => {
  it('every platform plans with its own planner or the fallback platform\'s, the fallback last', () => {
    assert.ok(PLANNED.length >= 5, PLANNED.join(', '));
    assert.equal(KINDS.at(-1), fallbackPlatform().kind);
    assert.equal(PLANNED.at(-1), fallbackPlatform().kind, 'the fallback platform has a planner');
    for (const k of KINDS) {
      const own = (PLATFORM_MODULES as Record<string, { planner?: unknown }>)[k]!.planner;
      assert.equal(plannerOfPlatform(k), own ?? FALLBACK, k);
    }
  });

  it('each platform\'s snapshot plans with its planner, and kubespray is kubeadm', () => {
    for (const k of KINDS) assert.equal(distributionOf(snapshotOf(k, false)), plannerOfPlatform(k).id, k);
    assert.equal(distributionOf(snapshotOf('kubespray', false)), 'kubeadm');
    assert.equal(distributionOf(snapshotOf('eks', false)), FALLBACK.id, 'a platform without a planner plans with the fallback\'s');
  });

  for (const d of PLANNED) {
    describe(d, () => {
      const planner = plannerOfPlatform(d);
      const id = planner.id;
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
            assert.equal(patches.some((p) => p.gate === 'kubelet-cluster-dns') || id === 'kops' || id === 'k3s' || id === 'rke2', !!ctx.newDNS || id === 'kops' || id === 'k3s' || id === 'rke2', `${d} ${name}: kubelet-cluster-dns patch only when the DNS IP moves`);
            for (const p of patches) checkPatch(d, `${label} ${name}`, p, gateInstructions(snap, p.gate as ServiceGate, ctx));
          }
        });

        it(`${label}: every pod gate has instructions ending in resume, and every pod patch is complete and named at its gate`, () => {
          for (const gate of POD_GATES) {
            const lines = planner.podGateInstructions(gate, POD_GATE_ROLES[gate]);
            assert.deepEqual(podGateInstructions(id, gate, POD_GATE_ROLES[gate]), lines);
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
                for (const p of patches) checkPatch(d, where, p, planner.podGateInstructions(p.gate as PodPatchGate, POD_GATE_ROLES[p.gate as PodPatchGate]));
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
          const reads = id === 'kops' || id === 'kubeadm';
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
