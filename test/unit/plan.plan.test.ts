import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { planCommand } from '../../src/cli/commands/plan.ts';
import { exitCodeOf, GLOBAL_OPTIONS, type Io } from '../../src/cli/main.ts';
import type { Snapshot } from '../../src/cluster/types.ts';
import { bridgeName, buildServicePlan, cidrSlug, compareTiers, type MigrationPlan } from '../../src/plan/plan.ts';
import { planFromYaml, planToMarkdown, planToYaml, PlanFormatError } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const tier = (t: string) => ({ labels: { 'kube-renumber.io/tier': t } });

const snapshot = kubeadmSnapshot;

const BASE = [
  svc('default', 'kubernetes', '10.96.0.1'),
  svc('kube-system', 'kube-dns', '10.96.0.10', tier('0')),
  svc('ingress', 'lb', '10.96.7.7', { type: 'LoadBalancer' }),
  svc('ingress', 'headless', '', { headless: true }),
];

/** 3 tiers: untiered (2), tier 1 (2), tier 2 (5 across two namespaces). */
const TIERED = [
  ...BASE,
  svc('b', 'plain', '10.96.1.1'),
  svc('a', 'plain', '10.96.1.2'),
  svc('z', 't1-x', '10.96.2.1', tier('1')),
  svc('y', 't1-y', '10.96.2.2', tier('1')),
  ...['e', 'd', 'c', 'b', 'a'].map((n, i) => svc(i < 2 ? 'ns2' : 'ns1', `t2-${n}`, `10.96.3.${i + 1}`, tier('2'))),
];

const ids = (p: MigrationPlan) => p.steps.map((s) => s.id);
const idx = (p: MigrationPlan, id: string) => {
  const i = ids(p).indexOf(id);
  assert.ok(i >= 0, `no step ${id} in ${ids(p).join(', ')}`);
  return i;
};

describe('buildServicePlan: order', () => {
  const plan = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', batchSize: 2 });

  it('is a MigrationPlan of kube-renumber.io/v1 with the ranges and options', () => {
    assert.equal(plan.apiVersion, 'kube-renumber.io/v1');
    assert.equal(plan.kind, 'MigrationPlan');
    assert.deepEqual(plan.spec.serviceCIDR.from, ['10.96.0.0/16']);
    assert.deepEqual(plan.spec.serviceCIDR.to, ['100.32.0.0/16']);
    assert.deepEqual(plan.spec.serviceCIDR.kept, ['10.96.7.0/28']);
    assert.equal(plan.spec.options.batchSize, 2);
    assert.equal(plan.metadata.kubernetesVersion, 'v1.33.4');
  });

  it('moves tiers lowest first (untiered, 1, 2), namespace then name, in batches, with a confirm between tiers', () => {
    const moves = plan.steps.filter((s) => s.id.startsWith('move-tier-'));
    assert.deepEqual(moves.map((s) => s.id), ['move-tier-1-batch-1', 'move-tier-2-batch-1', 'move-tier-3-batch-1', 'move-tier-3-batch-2', 'move-tier-3-batch-3']);
    assert.deepEqual(moves.map((s) => s.tier), [null, 1, 2, 2, 2]);
    assert.deepEqual(moves.flatMap((s) => s.items!.map((i) => `${i.namespace}/${i.name}`)), [
      'a/plain', 'b/plain', 'y/t1-y', 'z/t1-x', 'ns1/t2-a', 'ns1/t2-b', 'ns1/t2-c', 'ns2/t2-d', 'ns2/t2-e',
    ]);
    assert.ok(moves.every((s) => s.items!.length <= 2));
    assert.equal(plan.steps[idx(plan, 'move-tier-2-batch-1') - 1]!.kind, 'confirm');
    assert.equal(plan.steps[idx(plan, 'move-tier-3-batch-1') - 1]!.kind, 'confirm');
    assert.equal(plan.steps[idx(plan, 'move-tier-1-batch-1') - 1]!.kind, 'create-servicecidrs');
  });

  it('descending tier order for criticality labels', () => {
    const p = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', tierOrder: 'descending' });
    assert.deepEqual(p.steps.filter((s) => s.kind === 'move-services' && s.id !== 'move-dns').map((s) => s.tier), [null, 2, 1]);
    assert.ok(compareTiers(1, 'gold') < 0 && compareTiers(null, 0) < 0 && compareTiers(3, 1, 'descending') < 0);
  });

  it('creates the target and kept ServiceCIDRs first; never moves kept, skipped, DNS or kubernetes in tiers', () => {
    // the restarts' confirmation before the first write (the tool restarts the workloads: the default)
    assert.deepEqual(ids(plan).slice(0, 3), ['confirm-pod-disruption', 'create-target-servicecidr', 'create-kept-servicecidrs']);
    assert.deepEqual(plan.steps[1]!.serviceCIDRs, [{ name: 'kube-renumber-100-32-0-0-16', cidrs: ['100.32.0.0/16'], purpose: 'target' }]);
    assert.deepEqual(plan.steps[2]!.serviceCIDRs, [{ name: 'kube-renumber-keep-10-96-7-0-28', cidrs: ['10.96.7.0/28'], purpose: 'keep' }]);
    const moved = plan.steps.filter((s) => s.id.startsWith('move-tier-')).flatMap((s) => s.items!.map((i) => i.name));
    for (const n of ['lb', 'headless', 'kube-dns', 'kubernetes']) assert.ok(!moved.includes(n), n);
  });

  it('the DNS Service moves after every tier, behind a confirm, with a bridge keeping its old IP', () => {
    const d = idx(plan, 'move-dns');
    assert.ok(d > idx(plan, 'move-tier-3-batch-3'));
    assert.equal(plan.steps[d - 1]!.id, 'confirm-dns');
    assert.deepEqual(plan.steps[d]!.items, [{ namespace: 'kube-system', name: 'kube-dns', from: ['10.96.0.10'], to: ['100.32.0.10'], bridge: 'kube-dns-kr-old' }]);
  });

  it('then: apiservers restarted before the old range is drained, default/kubernetes moved, kubelets, workloads, bridges, finalize, verify', () => {
    const order = ['move-dns', 'restart-apiservers', 'drain-old-servicecidrs', 'sweep-stragglers', 'move-kubernetes', 'kubelet-cluster-dns',
      'restart-workloads', 'remove-bridges', 'finalize-servicecidrs', 'verify'];
    assert.deepEqual(order.map((id) => idx(plan, id)), [...order.map((id) => idx(plan, id))].sort((a, b) => a - b));
    assert.equal(ids(plan).at(-1), 'verify');
    for (const g of ['restart-apiservers', 'kubelet-cluster-dns']) {
      const s = plan.steps[idx(plan, g)]!;
      assert.equal(s.kind, 'gate');
      assert.ok(s.gate!.instructions.length > 0 && s.gate!.check.length > 0, g);
    }
    assert.equal(plan.steps[idx(plan, 'restart-workloads')]!.kind, 'restart-workloads');
    const k = plan.steps[idx(plan, 'move-kubernetes')]!;
    assert.deepEqual(k.items, [{ namespace: 'default', name: 'kubernetes', from: ['10.96.0.1'], to: ['100.32.0.1'], bridge: 'kubernetes-kr-old' }]);
    assert.deepEqual(k.serviceCIDRs, [{ name: 'kube-renumber-bridge-10-96-0-0-30', cidrs: ['10.96.0.0/30'], purpose: 'bridge' }]);
    const drain = plan.steps[idx(plan, 'drain-old-servicecidrs')]!;
    assert.deepEqual(drain.serviceCIDRs, [{ name: 'kubernetes', cidrs: ['10.96.0.0/16'], purpose: 'old' }]);
    const fin = plan.steps[idx(plan, 'finalize-servicecidrs')]!;
    assert.deepEqual(fin.serviceCIDRs!.map((s) => s.name), ['kube-renumber-100-32-0-0-16']);
    const rm = plan.steps[idx(plan, 'remove-bridges')]!;
    // in-place (the default): every moved Service has a bridge; the DNS and kubernetes bridges go last
    const moved = plan.steps.filter((s) => s.id.startsWith('move-tier-')).flatMap((s) => s.items!.map((i) => `${i.namespace}/${i.name}-kr-old`));
    assert.ok(moved.length > 0);
    assert.deepEqual(rm.items!.map((i) => `${i.namespace}/${i.name}`), [...moved, 'kube-system/kube-dns-kr-old', 'default/kubernetes-kr-old']);
    for (const s of plan.steps) assert.ok(s.rollback.length > 0, s.id);
  });

  it('recreate bridges only the DNS Service; in-place bridges every moved Service', () => {
    const recreate = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', strategy: 'recreate' });
    const inPlace = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', strategy: 'in-place' });
    const tierItems = (p: MigrationPlan) => p.steps.filter((s) => s.id.startsWith('move-tier-')).flatMap((s) => s.items!);
    assert.ok(tierItems(recreate).every((i) => i.bridge === undefined));
    assert.ok(tierItems(inPlace).every((i) => i.bridge === bridgeName(i.name)));
    assert.equal(inPlace.steps.find((s) => s.id === 'remove-bridges')!.items!.length, 9 + 2);
  });

  it('no DNS step when the DNS Service is not found; no kubelet gate either', () => {
    const p = buildServicePlan(snapshot(TIERED, { dnsService: undefined }), { target: '100.32.0.0/16' });
    assert.ok(!ids(p).includes('move-dns') && !ids(p).includes('kubelet-cluster-dns'));
    assert.ok(ids(p).includes('restart-workloads'));
  });

  it('a refused target yields preflight only', () => {
    const p = buildServicePlan(snapshot(TIERED), { target: 'nonsense' });
    assert.deepEqual(p.steps, []);
    assert.deepEqual(p.mapping, []);
    assert.equal(p.preflight[0]!.status, 'fail');
  });

  it('names: slugs and bridge names stay valid DNS labels', () => {
    assert.equal(cidrSlug(['fd00:10::/108']), 'fd00-10---108');
    const long = 'a'.repeat(63);
    assert.ok(bridgeName(long).length <= 63);
    assert.notEqual(bridgeName(long), bridgeName(`${'a'.repeat(62)}b`));
  });
});

describe('buildServicePlan: the kept ranges retired at the end', () => {
  const plan = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16' });

  it('deletes the kept ServiceCIDRs after finalize-servicecidrs, before verify; creating them counts as done once it was reached', () => {
    const r = plan.steps[idx(plan, 'retire-kept-servicecidrs')]!;
    assert.equal(r.kind, 'retire-servicecidrs');
    assert.equal(idx(plan, 'retire-kept-servicecidrs'), idx(plan, 'finalize-servicecidrs') + 1);
    assert.equal(ids(plan).at(-1), 'verify');
    assert.deepEqual(r.serviceCIDRs, [{ name: 'kube-renumber-keep-10-96-7-0-28', cidrs: ['10.96.7.0/28'], purpose: 'keep' }]);
    assert.match(r.description, /gives out no new address/);
    assert.match(r.rollback, /temporary name/);
    assert.deepEqual(plan.steps[idx(plan, 'create-kept-servicecidrs')]!.supersededBy, ['retire-kept-servicecidrs']);
    assert.deepEqual(plan.steps[idx(plan, 'create-target-servicecidr')]!.supersededBy, ['finalize-servicecidrs']);
    assert.doesNotMatch(plan.steps[idx(plan, 'verify')]!.description, /Ready and kept/);
  });

  it('survives the YAML round trip, supersession included', () => {
    const back = planFromYaml(planToYaml(plan));
    assert.deepEqual(back.steps.map((s) => [s.id, s.kind, s.supersededBy]), plan.steps.map((s) => [s.id, s.kind, s.supersededBy]));
  });

  it('nothing kept in the old range: no such step', () => {
    const p = buildServicePlan(snapshot(TIERED.filter((x) => x.name !== 'lb')), { target: '100.32.0.0/16' });
    assert.ok(!ids(p).includes('retire-kept-servicecidrs') && !ids(p).includes('create-kept-servicecidrs'));
    const moved = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', loadBalancers: 'move' });
    assert.ok(!ids(moved).includes('retire-kept-servicecidrs'));
  });

  it('an existing ServiceCIDR holding a kept IP is retired with them, not drained before', () => {
    const snap = snapshot(TIERED, {
      serviceCIDRs: [
        { name: 'kubernetes', cidrs: ['10.96.0.0/16'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true },
        { name: 'extra', cidrs: ['10.96.7.0/24'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true },
      ],
    });
    const p = buildServicePlan(snap, { target: '100.32.0.0/16' });
    assert.ok(!ids(p).includes('create-kept-servicecidrs'), 'the existing one covers the kept IP');
    assert.deepEqual(p.steps[idx(p, 'drain-old-servicecidrs')]!.serviceCIDRs!.map((s) => s.name), ['kubernetes']);
    assert.deepEqual(p.steps[idx(p, 'retire-kept-servicecidrs')]!.serviceCIDRs, [{ name: 'extra', cidrs: ['10.96.7.0/24'], purpose: 'keep' }]);
  });

  it('a second run: the kept ServiceCIDR an earlier run retired still holds the IP, so none is created or retired for it', () => {
    // after a first run 10.96.0.0/16 → 100.32.0.0/16 that kept ingress/lb: ServiceCIDR/kubernetes holds 100.32.0.0/16,
    // and the kept one is being deleted, holding 10.96.7.7
    const after = TIERED.map((x) => (x.name === 'lb' ? x : { ...x, clusterIPs: x.clusterIPs.map((a) => a.replace(/^10\.96\./, '100.32.')) }));
    const snap = snapshot(after, {
      ranges: [
        { cidr: '100.32.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
        { cidr: '10.96.7.0/28', role: 'service', source: 'ServiceCIDR/kube-renumber-keep-10-96-7-0-28', label: 'ServiceCIDR kube-renumber-keep-10-96-7-0-28 (being deleted)' },
      ],
      serviceCIDRs: [
        { name: 'kubernetes', cidrs: ['100.32.0.0/16'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true },
        { name: 'kube-renumber-keep-10-96-7-0-28', cidrs: ['10.96.7.0/28'], apiVersion: 'networking.k8s.io/v1', deleting: true, ready: false },
      ],
      kubernetesServiceIPs: ['100.32.0.1'],
      dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['100.32.0.10'], foundBy: 'kubelet clusterDNS' },
      clusterDNS: ['100.32.0.10'],
      apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['100.32.0.0/16'] }],
      controllerManagers: [{ pod: 'kube-controller-manager-cp1', serviceClusterIPRange: ['100.32.0.0/16'] }],
      kubeadm: { serviceSubnet: ['100.32.0.0/16'], kubeletClusterDNS: ['100.32.0.10'] },
    });
    const p = buildServicePlan(snap, { target: '172.24.0.0/16' });
    assert.ok(p.steps.length > 0, p.preflight.filter((c) => c.status === 'fail').map((c) => c.message).join('; '));
    assert.ok(!ids(p).includes('create-kept-servicecidrs'), ids(p).join(', '));
    assert.ok(!ids(p).includes('retire-kept-servicecidrs'));
    assert.deepEqual(p.steps[idx(p, 'drain-old-servicecidrs')]!.serviceCIDRs!.map((s) => s.name), ['kubernetes']);
    assert.equal(p.mapping.find((m) => m.name === 'lb')!.action, 'keep');
  });
});


describe('distribution patches', () => {
  const kops: Partial<Snapshot> = {
    platform: { kind: 'kops', title: 'kops', evidence: [], reserved: [] }, kubeadm: undefined,
    kops: { layout: 'networking', serviceClusterIPRange: '10.96.0.0/16', kubeDNSServerIP: '10.96.0.10', nonMasqueradeCIDR: '10.0.0.0/8' },
  };
  it('kOps: serviceClusterIPRange, kubeDNS.serverIP and SANs in one spec edit at the apiserver gate', () => {
    const p = buildServicePlan(snapshot(BASE, kops), { target: '10.200.0.0/16' });
    const patch = p.steps.find((s) => s.id === 'restart-apiservers')!.gate!.patches!.find((x) => x.id === 'kops-service-range')!;
    const before = yaml.load(patch.before) as any;
    const after = yaml.load(patch.after) as any;
    assert.equal(before.spec.networking.serviceClusterIPRange, '10.96.0.0/16');
    assert.equal(after.spec.networking.serviceClusterIPRange, '10.200.0.0/16');
    assert.equal(before.spec.kubeDNS.serverIP, '10.96.0.10');
    assert.equal(after.spec.kubeDNS.serverIP, '10.200.0.10');
    assert.deepEqual(after.spec.api.additionalSANs, ['10.96.0.1', '10.200.0.1']);
    assert.equal(after.spec.networking.nonMasqueradeCIDR, undefined); // NEW inside 10.0.0.0/8
    assert.match(p.steps.find((s) => s.id === 'restart-apiservers')!.gate!.instructions.join('\n'), /kops rolling-update cluster --instance-group-roles=control-plane --yes/);
    assert.match(p.steps.find((s) => s.id === 'kubelet-cluster-dns')!.gate!.instructions.join('\n'), /kops rolling-update cluster --yes/);
  });
  it('kOps legacy layout and a nonMasqueradeCIDR change when NEW is outside it', () => {
    const legacy = { ...kops, kops: { ...kops.kops!, layout: 'legacy' as const, nonMasqueradeCIDR: '10.96.0.0/12', podCIDR: '10.100.0.0/16' } };
    const p = buildServicePlan(snapshot(BASE, legacy), { target: '10.112.0.0/16' });
    const patch = p.steps.find((s) => s.id === 'restart-apiservers')!.gate!.patches![0]!;
    const after = yaml.load(patch.after) as any;
    assert.equal(after.spec.serviceClusterIPRange, '10.112.0.0/16');
    assert.equal(after.spec.nonMasqueradeCIDR, '10.96.0.0/11');
    assert.deepEqual(after.spec.additionalSans, ['10.96.0.1', '10.112.0.1']);
  });
  it('kubeadm: kubeadm-config serviceSubnet and certSANs, both static pod manifests, kubelet-config clusterDNS', () => {
    const p = buildServicePlan(snapshot(BASE), { target: '100.32.0.0/16' });
    const api = p.steps.find((s) => s.id === 'restart-apiservers')!.gate!;
    const byId = Object.fromEntries(api.patches!.map((x) => [x.id, x]));
    assert.equal((yaml.load(byId['kubeadm-config-service-subnet']!.after) as any).networking.serviceSubnet, '100.32.0.0/16');
    assert.deepEqual((yaml.load(byId['kubeadm-config-service-subnet']!.after) as any).apiServer.certSANs, ['10.96.0.1', '100.32.0.1']);
    assert.match(byId['kubeadm-apiserver-manifest']!.before, /--service-cluster-ip-range=10\.96\.0\.0\/16/);
    assert.match(byId['kubeadm-apiserver-manifest']!.after, /--service-cluster-ip-range=100\.32\.0\.0\/16/);
    assert.ok(byId['kubeadm-controller-manager-manifest']);
    assert.match(api.instructions.join('\n'), /kubeadm init phase certs apiserver/);
    const kubelet = p.steps.find((s) => s.id === 'kubelet-cluster-dns')!.gate!.patches![0]!;
    assert.deepEqual(yaml.load(kubelet.before), { clusterDNS: ['10.96.0.10'] });
    assert.deepEqual(yaml.load(kubelet.after), { clusterDNS: ['100.32.0.10'] });
  });
});

describe('render', () => {
  const plan = buildServicePlan(snapshot(TIERED), { target: '100.32.0.0/16', batchSize: 3, keep: ['a/plain'] });

  it('YAML round trip', () => {
    const text = planToYaml(plan);
    assert.deepEqual(planFromYaml(text), JSON.parse(JSON.stringify(plan)));
    assert.deepEqual(planFromYaml(JSON.stringify(plan)), JSON.parse(JSON.stringify(plan)));
  });

  it('planFromYaml refuses what is not a plan, naming the field', () => {
    const doc = yaml.load(planToYaml(plan)) as any;
    const bad = (mut: (d: any) => void) => { const d = structuredClone(doc); mut(d); return yaml.dump(d); };
    const cases: Array<[string, RegExp]> = [
      ['', /empty/],
      ['a: [', /not YAML at line/],
      ['- 1', /plan: must be a mapping/],
      [bad((d) => { d.apiVersion = 'v1'; }), /apiVersion: is "v1", expected kube-renumber\.io\/v1/],
      [bad((d) => { d.kind = 'Plan'; }), /kind: is "Plan", expected MigrationPlan/],
      [bad((d) => { delete d.steps; }), /plan\.steps: missing/],
      [bad((d) => { d.steps[2].kind = 'explode'; }), /steps\[2\]\.kind: must be one of/],
      [bad((d) => { d.steps[3].id = d.steps[2].id; }), /steps\[3\]\.id: .* is used twice/],
      [bad((d) => { d.mapping[0].to = '1.2.3.4'; }), /mapping\[0\]\.to: must be a list/],
      [bad((d) => { d.spec.strategy = 'yolo'; }), /spec\.strategy: must be one of in-place, recreate/],
      [bad((d) => { d.preflight[0].status = 'ok'; }), /preflight\[0\]\.status/],
      [bad((d) => { delete d.steps.find((s: any) => s.kind === 'gate').gate; }), /\.gate: missing \(a gate step needs one\)/],
    ];
    for (const [text, re] of cases) {
      assert.throws(() => planFromYaml(text), (e: unknown) => e instanceof PlanFormatError && re.test((e as Error).message), String(re));
    }
    assert.equal(exitCodeOf(new PlanFormatError('x')), 3);
  });

  it('Markdown for a change request has the summary, pre-flight table, mapping, steps with gates, rollback notes', () => {
    const md = planToMarkdown(plan);
    for (const re of [
      /^# Migration: Service CIDR 10\.96\.0\.0\/16 → 100\.32\.0\.0\/16$/m,
      /^\| Services \| 10 moved, 2 kept, 1 skipped \|$/m,
      /^\| Cluster DNS \| kube-system\/kube-dns 10\.96\.0\.10 → 100\.32\.0\.10 \(move\) \|$/m,
      /^\| default\/kubernetes \| 10\.96\.0\.1 → 100\.32\.0\.1 \|$/m,
      /^\| Tier order \| untiered → 1 → 2 /m,
      /^## Pre-flight checks$/m,
      /^\| `target-conflicts` \| PASS \|/m,
      /^\| `apiserver-cert-san` \| WARN \| not checked \(offline\)/m,
      /^### Moved \(10\)$/m,
      /^### Kept \(2\)$/m,
      /^\| a \| plain \| ClusterIP \| - \| 10\.96\.1\.2 \| 10\.96\.1\.2 \| kept \(--keep\)/m,
      /^### Skipped \(1\)$/m,
      /^### \d+\. `restart-apiservers` \(gate\)$/m,
      /^\*\*Gate\*\*: /m,
      /^Resume checks \(apiservers-on-new-range\): every kube-apiserver pod runs with --service-cluster-ip-range=100\.32\.0\.0\/16/m,
      /^Counts as done once the run reaches `remove-bridges` \(which undoes part of it on purpose\)\.$/m,
      /^\*\*Patch `kubeadm-apiserver-manifest`\*\*/m,
      /^\*\*Confirm\*\* \(apply --yes skips it\)/m,
      /^## Rollback notes$/m,
    ]) assert.match(md, re);
  });
});

// ---- the command (registered in main.ts by the lead; driven here the way main does) -------------------

async function plan(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent' } };
  try {
    const p = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...planCommand.options }, allowPositionals: true, strict: true });
    const code = await planCommand.run({ values: p.values as any, positionals: p.positionals, io });
    return { code, out, err };
  } catch (e) {
    return { code: exitCodeOf(e), out, err: `${err}error: ${(e as Error).message}\n` };
  }
}

describe('kube-renumber plan (examples/kops-tailscale, the seed-000 cluster)', () => {
  const ex = `${ROOT}examples/kops-tailscale`;

  it('writes a plan: 100.64.0.10 → 100.32.0.10, kubernetes → 100.32.0.1, the LoadBalancer kept in a /28', async () => {
    const r = await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err);
    const p = planFromYaml(r.out);
    const m = (n: string) => p.mapping.find((x) => x.name === n)!;
    assert.deepEqual(m('kube-dns').to, ['100.32.0.10']);
    assert.deepEqual(m('kubernetes').to, ['100.32.0.1']);
    assert.equal(m('ingress-nginx-controller').action, 'keep');
    assert.equal(m('web-headless').action, 'skip');
    assert.deepEqual(p.spec.serviceCIDR!.kept, ['100.66.133.0/28']);
    assert.equal(p.metadata.distribution, 'kops');
  });

  it('-o markdown and the table summary', async () => {
    const md = await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '-o', 'markdown']);
    assert.equal(md.code, 0);
    assert.match(md.out, /^# Migration: Service CIDR 100\.64\.0\.0\/13 → 100\.32\.0\.0\/15$/m);
    const t = await plan(['--service-cidr', '100.32.0.0/15', '-f', ex]);
    assert.match(t.out, /^PRE-FLIGHT$/m);
    assert.match(t.out, /^move\s+kube-system\/kube-dns \(DNS\)\s+ClusterIP\s+-\s+100\.64\.0\.10\s+100\.32\.0\.10$/m);
  });

  it('a refused target exits 2 with one error line naming the conflict, and prints no plan', async () => {
    const r = await plan(['--service-cidr', '172.20.0.0/15', '-f', ex, '-o', 'yaml']);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    // The live address it holds first (a node's InternalIP), then the configured range it overlaps.
    assert.match(r.err, /^error: --service-cidr 172\.20\.0\.0\/15 refused: 172\.20\.0\.0\/15 contains 172\.20\.\d+\.\d+, the InternalIP of node i-\w+ \(and 5 more live addresses\), 172\.20\.0\.0\/15 overlaps 172\.20\.0\.0\/16 \(node network \(kOps networkCIDR\)\); no kOps nonMasqueradeCIDR of \/8 or smaller holds serviceClusterIPRange 172\.20\.0\.0\/15 and the pod range 100\.96\.0\.0\/11 without overlapping the node network: move both ranges in one plan: --service-cidr 10\.6\.0\.0\/20 --pod-cidr 10\.4\.0\.0\/15 \(kube-renumber suggest --for services,pods: both inside nonMasqueradeCIDR 10\.4\.0\.0\/14, clear of the node network\)\n$/);
    const tailscale = await plan(['--service-cidr', '100.100.0.0/16', '-f', ex]);
    assert.equal(tailscale.code, 2);
    assert.match(tailscale.err, /CGNAT \/ Tailscale/);
  });

  it('other pre-flight failures print the plan and exit 1', async () => {
    const r = await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '-o', 'yaml', '--apiserver-cert-san', '100.64.0.1']);
    assert.equal(r.code, 1);
    assert.match(r.err, /pre-flight check\(s\) failed \(apiserver-cert-san\)/);
    assert.equal(planFromYaml(r.out).preflight.find((c) => c.id === 'apiserver-cert-san')!.status, 'fail');
  });

  it('usage errors exit 2', async () => {
    assert.equal((await plan(['-f', ex])).code, 2);
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--strategy', 'yolo'])).code, 2);
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--keep', 'nonamespace'])).code, 2);
    assert.equal((await plan(['--service-cidr', '100.32.0.0/15', '-f', ex, '--batch-size', '0'])).code, 2);
  });
});
