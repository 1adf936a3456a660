// plan --extend-pod-cidr on Calico IPAM: the pod extension plan (src/plan/extend-pod.ts) as data, as a file apply
// reads, through the CLI on the example clusters, and the executor's pure parts (src/engine/pod-extension.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { extensionText } from '../../src/cli/commands/suggest.ts';
import type { CalicoPool, ReferenceSource, Snapshot } from '../../src/cluster/types.ts';
import { blockAllocations, extensionPoolObject, masqueradeList, poolMatches, withMasqueradeList } from '../../src/engine/pod-extension.ts';
import {
  buildPodExtensionPlan, suggestPodExtension, EXTEND_KUBE_PROXY_GATE, EXTEND_MASQUERADE_STEP, EXTEND_POOL_STEP, extensionPoolName, kubeProxyEnvelope, modelPool, VERIFY_POD_EXTENSION_STEP,
} from '../../src/plan/extend-pod.ts';
import { accessNeeds, needKey } from '../../src/plan/access.ts';
import { parsePodTarget } from '../../src/plan/pod-plan.ts';
import { recheckPreflight } from '../../src/plan/recheck.ts';
import { planFromYaml, planToMarkdown, planToYaml, PlanFormatError } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { install } from '../../src/install.ts';
import { run } from './run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const POOL: CalicoPool = { name: 'default-ipv4-ippool', cidr: '10.244.0.0/16', blockSize: 26, disabled: false, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' };
const MASQ: ReferenceSource = {
  kind: 'ConfigMap', apiVersion: 'v1', namespace: 'kube-system', name: 'ip-masq-agent', field: 'data["config"].nonMasqueradeCIDRs', format: 'list', use: 'nomasq', values: ['10.244.0.0/16', '10.96.0.0/16'],
};
const SVCS = [svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10')];

/** A kubeadm cluster with Calico IPAM: pool 10.244.0.0/16, kube-proxy clusterCIDR the same (its ConfigMap), ip-masq-agent. */
const snap = (over: Partial<Snapshot> = {}) => kubeadmSnapshot(SVCS, {
  ranges: [
    { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
    { cidr: '10.244.0.0/16', role: 'pool', source: 'IPPool/default-ipv4-ippool', label: 'Calico pool default-ipv4-ippool' },
    { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-proxy clusterCIDR', label: 'kube-proxy clusterCIDR (ConfigMap kube-system/kube-proxy)' },
    { cidr: '192.168.10.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' },
  ],
  kubeProxy: { clusterCIDR: '10.244.0.0/16', mode: 'iptables' },
  nodes: [{ name: 'n1', podCIDRs: [], internalIPs: ['192.168.10.11'], externalIPs: [] } as never],
  pods: [{ namespace: 'web', name: 'a', podIPs: ['10.244.3.4'], hostNetwork: false } as never],
  pools: [POOL],
  referenceSources: [MASQ],
  ...over,
});

/** `kube-renumber plan ARGV` in this process (test/unit/run-cli.ts). */
const plan = (argv: string[]) => run(['plan', ...argv]);

const failed = (p: ReturnType<typeof buildPodExtensionPlan>) => p.preflight.filter((c) => c.status === 'fail');

describe('buildPodExtensionPlan', () => {
  it('adds a pool with the old pool\'s settings, disables none, widens kube-proxy to the envelope at a gate and grows ip-masq-agent\'s list', () => {
    const p = buildPodExtensionPlan(snap(), { add: '10.245.0.0/16' });
    assert.deepEqual(failed(p), []);
    const ext = p.spec.podExtension!;
    assert.deepEqual(ext.add, ['10.245.0.0/16']);
    assert.deepEqual(ext.from, ['10.244.0.0/16']);
    assert.deepEqual(ext.pools, [{
      name: 'kube-renumber-extend-10-245-0-0-16', cidr: '10.245.0.0/16', blockSize: 26, model: 'default-ipv4-ippool',
      ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()',
    }]);
    assert.deepEqual(ext.kubeProxy, { from: '10.244.0.0/16', to: '10.244.0.0/15', configMap: true });
    assert.deepEqual(ext.masquerade, { namespace: 'kube-system', name: 'ip-masq-agent', key: 'config', from: ['10.244.0.0/16', '10.96.0.0/16'], to: ['10.244.0.0/16', '10.96.0.0/16', '10.245.0.0/16'] });
    assert.equal(p.spec.podCIDR, undefined);
    // the settings that name the range first, the pool after: no pod gets an address in ADD before they hold it
    assert.deepEqual(p.steps.map((s) => s.id), [EXTEND_KUBE_PROXY_GATE, EXTEND_MASQUERADE_STEP, EXTEND_POOL_STEP, VERIFY_POD_EXTENSION_STEP]);
    assert.ok(!p.steps.some((s) => /disable/.test(s.kind)), 'no pool disabled');
    const gate = p.steps[0]!;
    assert.equal(gate.kind, 'gate');
    assert.match(gate.kind === 'gate' ? gate.gate.instructions.join('\n') : '', /clusterCIDR: 10\.244\.0\.0\/15 +\(was 10\.244\.0\.0\/16\)[\s\S]*rollout restart daemonset kube-proxy/);
    assert.match(p.steps[2]!.rollback, /refused, naming the pods/);
    const kp = p.preflight.find((c) => c.id === 'pod-extend-kube-proxy')!;
    assert.equal(kp.status, 'warn');
    assert.match(kp.message, /sets it to 10\.244\.0\.0\/15, which holds both and nothing else/);
  });

  it('nothing to change where kube-proxy and ip-masq-agent already hold ADD', () => {
    // kube-proxy's clusterCIDR is read as a pod range too: one that holds ADD is what the plan wants, not a conflict
    const s = snap({ kubeProxy: { clusterCIDR: '10.244.0.0/15' }, referenceSources: [{ ...MASQ, values: ['10.0.0.0/8'] }] });
    s.ranges = s.ranges.map((r) => (r.source === 'kube-proxy clusterCIDR' ? { ...r, cidr: '10.244.0.0/15' } : r));
    const p = buildPodExtensionPlan(s, { add: '10.245.0.0/16' });
    assert.deepEqual(failed(p), []);
    assert.equal(p.spec.podExtension!.kubeProxy, undefined);
    assert.equal(p.spec.podExtension!.masquerade, undefined);
    assert.deepEqual(p.steps.map((s) => s.id), [EXTEND_POOL_STEP, VERIFY_POD_EXTENSION_STEP]);
  });

  it('a block size where it fits ADD; a smaller ADD is one block, with a warning', () => {
    const small = buildPodExtensionPlan(snap(), { add: '10.245.0.0/28' });
    assert.equal(small.spec.podExtension!.pools[0]!.blockSize, 28);
    assert.equal(small.preflight.find((c) => c.id === 'pod-extend-size')!.status, 'warn');
    const big = buildPodExtensionPlan(snap(), { add: '10.245.0.0/20' });
    assert.equal(big.spec.podExtension!.pools[0]!.blockSize, 26);
    assert.match(big.preflight.find((c) => c.id === 'pod-extend-size')!.message, /10\.245\.0\.0\/20: 64 more block\(s\) of \/26 \(64 addresses each\)/);
  });

  it('copies the enabled pool that serves every node; a family without one is refused', () => {
    const pools: CalicoPool[] = [
      { name: 'a-gpu', cidr: '10.250.0.0/16', blockSize: 28, disabled: false, nodeSelector: 'gpu == "true"', vxlanMode: 'Always' },
      { name: 'b-old', cidr: '10.240.0.0/16', blockSize: 24, disabled: true },
      POOL,
    ];
    assert.equal(modelPool(pools, 4)!.name, 'default-ipv4-ippool');
    assert.equal(modelPool([pools[0]!, pools[1]!], 4)!.name, 'a-gpu');
    assert.equal(modelPool([pools[1]!], 4), undefined);
    const tunnel: CalicoPool = { ...POOL, name: 'a-tunnel', cidr: '10.251.0.0/24', allowedUses: ['Tunnel'] };
    assert.equal(modelPool([tunnel, pools[0]!], 4)!.name, 'a-gpu', 'a pool only for tunnel addresses gives pods nothing');
    assert.equal(modelPool([{ ...tunnel, allowedUses: ['Workload', 'Tunnel'] }], 4)!.name, 'a-tunnel');
    const p = buildPodExtensionPlan(snap({ pools: [pools[1]!] }), { add: '10.245.0.0/16' });
    assert.match(failed(p).map((c) => c.message).join(), /no enabled IPv4 Calico IPPool to extend for 10\.245\.0\.0\/16 \(pools: b-old 10\.240\.0\.0\/16 disabled\)/);
    assert.equal(p.spec.podExtension, undefined);
  });

  it('refuses ADD over the pool, the services, a live address or the node network, naming it', () => {
    for (const [add, what] of [['10.244.128.0/17', /10\.244\.0\.0\/16/], ['10.96.128.0/17', /10\.96\.0\.0\/16/], ['192.168.10.0/25', /192\.168\.10/]] as const) {
      const p = buildPodExtensionPlan(snap(), { add });
      const f = failed(p);
      assert.equal(f.length, 1, add);
      assert.equal(f[0]!.id, 'pod-extend-conflicts');
      assert.match(f[0]!.message, what);
      assert.equal(p.spec.podExtension, undefined);
    }
    assert.equal(failed(buildPodExtensionPlan(snap(), { add: '10.245.0.1/16' }))[0]!.id, 'pod-extend-parse');
  });

  it('refuses where kube-proxy\'s envelope would hold more than pod ranges, saying what to do instead', () => {
    // the pool right above the Service range: any CIDR holding it and an ADD outside it holds the services too
    const s = snap({
      kubeProxy: { clusterCIDR: '10.97.0.0/16' }, pools: [{ ...POOL, cidr: '10.97.0.0/16' }],
      ranges: [
        { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
        { cidr: '10.97.0.0/16', role: 'pool', source: 'IPPool/default-ipv4-ippool', label: 'Calico pool' },
      ],
    });
    const env = kubeProxyEnvelope(s, parsePodTarget('10.98.0.0/16'));
    assert.ok(env && 'problem' in env);
    assert.match(env.problem, /the smallest one holding both, 10\.96\.0\.0\/14, would also hold the Service range 10\.96\.0\.0\/16/);
    const p = buildPodExtensionPlan(s, { add: '10.98.0.0/16' });
    assert.equal(failed(p)[0]!.id, 'pod-extend-kube-proxy');
    assert.match(failed(p)[0]!.fix, /detectLocalMode to InterfaceNamePrefix/);
  });

  it('refuses an operator-managed Calico, and on kOps an ADD outside nonMasqueradeCIDR', () => {
    const op = buildPodExtensionPlan(snap({ cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: true, evidence: [] } }), { add: '10.245.0.0/16' });
    assert.equal(failed(op)[0]!.id, 'pod-extend-operator');
    assert.match(failed(op)[0]!.fix, /Installation\/default spec\.calicoNetwork\.ipPools/);
    const kops = snap({ platform: { kind: 'kops', title: 'kOps', evidence: [], reserved: [] }, kubeProxy: undefined, kops: { layout: 'networking', nonMasqueradeCIDR: '10.240.0.0/13' } });
    const out = buildPodExtensionPlan(kops, { add: '10.250.0.0/16' });
    assert.equal(failed(out)[0]!.id, 'pod-extend-non-masquerade');
    assert.match(failed(out)[0]!.message, /^kOps nonMasqueradeCIDR 10\.240\.0\.0\/13 does not hold 10\.250\.0\.0\/16/);
    const inside = buildPodExtensionPlan(kops, { add: '10.245.0.0/16' });
    assert.deepEqual(failed(inside), []);
    assert.equal(inside.preflight.find((c) => c.id === 'pod-extend-non-masquerade')!.status, 'pass');
    // kube-proxy's range comes from the Cluster spec there: a change of it is refused, not gated
    const kp = buildPodExtensionPlan({ ...kops, kubeProxy: { clusterCIDR: '10.244.0.0/16' } }, { add: '10.245.0.0/16' });
    assert.equal(failed(kp)[0]!.id, 'pod-extend-kube-proxy');
    assert.match(failed(kp)[0]!.message, /on kOps it comes from the Cluster spec/);
    assert.equal(kp.spec.podExtension, undefined);
  });

  it('lists references that name the pool as warnings with ADD added, leaving out what the plan changes itself', () => {
    const np: ReferenceSource = { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', namespace: 'web', name: 'from-pods', field: 'spec.ingress[0].from[0].ipBlock.cidr', format: 'cidr', use: 'allow', values: ['10.244.0.0/16'] };
    const p = buildPodExtensionPlan(snap({ referenceSources: [MASQ, np] }), { add: '10.245.0.0/16' });
    const refs = p.references ?? [];
    assert.ok(refs.some((r) => r.kind === 'NetworkPolicy' && r.severity === 'warning' && r.proposed === '10.244.0.0/16, 10.245.0.0/16'), JSON.stringify(refs));
    assert.ok(!refs.some((r) => r.kind === 'ConfigMap'), 'ip-masq-agent is the plan\'s own step');
  });
});

describe('the pod extension plan as a file', () => {
  it('round-trips through YAML and Markdown; a tampered pool or range is refused', () => {
    const p = buildPodExtensionPlan(snap(), { add: '10.245.0.0/16' });
    const text = planToYaml(p);
    assert.deepEqual(planFromYaml(text).spec.podExtension, p.spec.podExtension);
    const md = planToMarkdown(p);
    assert.match(md, /^# Extension: pod range 10\.244\.0\.0\/16 \+ 10\.245\.0\.0\/16/);
    assert.match(md, /IPPool `kube-renumber-extend-10-245-0-0-16` is deleted by rollback only while no pod holds an address in it/);
    const bad = text.replace('cidr: 10.245.0.0/16', 'cidr: 10.246.0.0/16');
    assert.throws(() => planFromYaml(bad), (e: unknown) => e instanceof PlanFormatError && /must be spec\.podExtension\.add\[0\]/.test((e as Error).message));
    const over = text.replace(/add:\n(\s+)- 10\.245\.0\.0\/16/, 'add:\n$1- 10.244.128.0/17').replace(/cidr: 10\.245\.0\.0\/16/, 'cidr: 10.244.128.0/17');
    assert.throws(() => planFromYaml(over), (e: unknown) => e instanceof PlanFormatError && /overlaps the pool 10\.244\.0\.0\/16/.test((e as Error).message));
    const moved = planFromYaml(text);
    (moved.spec as any).podCIDR = { from: ['10.244.0.0/16'] };
    assert.throws(() => planFromYaml(planToYaml(moved)), PlanFormatError);
  });

  it('asks for IPPool create and delete, the rollback\'s clean-up, and ip-masq-agent\'s ConfigMap in its namespace', () => {
    const keys = accessNeeds(buildPodExtensionPlan(snap(), { add: '10.245.0.0/16' })).map(needKey);
    for (const k of ['create ippools.crd.projectcalico.org', 'delete ippools.crd.projectcalico.org', 'patch ippools.crd.projectcalico.org', 'delete ipamblocks.crd.projectcalico.org', 'patch configmaps -n kube-system']) {
      assert.ok(keys.includes(k), `${k} in ${keys.join('; ')}`);
    }
  });

  it('checked again after apply: its own pool and the pods given addresses there are no conflict', () => {
    const p = buildPodExtensionPlan(snap(), { add: '10.245.0.0/16' });
    const after = snap({
      kubeProxy: { clusterCIDR: '10.244.0.0/15' },
      pools: [POOL, { ...POOL, name: extensionPoolName('10.245.0.0/16'), cidr: '10.245.0.0/16' }],
      pods: [{ namespace: 'web', name: 'a', podIPs: ['10.244.3.4'], hostNetwork: false } as never, { namespace: 'web', name: 'b', podIPs: ['10.245.0.7'], hostNetwork: false } as never],
    });
    after.ranges = after.ranges.map((r) => (r.source === 'kube-proxy clusterCIDR' ? { ...r, cidr: '10.244.0.0/15' } : r));
    after.ranges.push({ cidr: '10.245.0.0/16', role: 'pool', source: `IPPool/${extensionPoolName('10.245.0.0/16')}`, label: 'Calico pool' });
    assert.deepEqual(recheckPreflight(after, p).filter((c) => c.status === 'fail'), []);
    // a pod in ADD that no pool of the plan explains still is one
    const stranger = snap({ pods: [{ namespace: 'x', name: 'y', podIPs: ['10.246.0.1'], hostNetwork: false } as never] });
    assert.match(failed(buildPodExtensionPlan(stranger, { add: '10.246.0.0/16' }))[0]!.message, /10\.246\.0\.1/);
  });
});

describe('plan --extend-pod-cidr through the CLI', () => {
  it('the cluster that ran out: the adjacent range is refused because kube-proxy\'s one clusterCIDR would hold the Service range', async () => {
    const r = await plan(['--extend-pod-cidr', '10.233.128.0/18', '-f', `${ROOT}examples/kubeadm-exhausted`]);
    assert.equal(r.code, 2, r.err + r.out);
    assert.equal(r.out, '');
    assert.equal(r.err.trim().split('\n').length, 1);
    assert.match(r.err, /^error: --extend-pod-cidr 10\.233\.128\.0\/18 refused: kube-proxy clusterCIDR 10\.233\.64\.0\/18 does not hold 10\.233\.128\.0\/18, .* 10\.233\.0\.0\/16, would also hold the Service range 10\.233\.0\.0\/18/);
  });

  it('kOps far from its pod range: refused, the envelope named; a move flag does not go with it', async () => {
    const r = await plan(['--extend-pod-cidr', '10.244.0.0/16', '-f', `${ROOT}examples/kops-tailscale`]);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err.trim().split('\n').length, 1);
    assert.match(r.err, /^error: --extend-pod-cidr 10\.244\.0\.0\/16 refused: kube-proxy clusterCIDR 100\.96\.0\.0\/11 does not hold 10\.244\.0\.0\/16, .* 0\.0\.0\.0\/1, would also hold all of 0\.0\.0\.0\/1/);
    const mixed = await plan(['--extend-pod-cidr', '10.245.0.0/16', '--parallel', '4', '-f', `${ROOT}examples/kubeadm-exhausted`]);
    assert.equal(mixed.code, 2);
    assert.match(mixed.err, /--parallel does not go with --extend-pod-cidr/);
  });
});

describe('the pod extension executor\'s pure parts', () => {
  it('the IPPool object writes every field and the run\'s labels; poolMatches tells what differs', () => {
    const p = buildPodExtensionPlan(snap(), { add: '10.245.0.0/16' }).spec.podExtension!.pools[0]!;
    const o = extensionPoolObject(p, 'run-1');
    assert.deepEqual(o.spec, { cidr: '10.245.0.0/16', blockSize: 26, disabled: false, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' });
    assert.equal(o.metadata?.labels?.['kube-renumber.io/managed'], 'true');
    assert.equal(poolMatches(o, p), undefined);
    assert.match(poolMatches({ ...o, spec: { ...o.spec, disabled: true } }, p)!, /is disabled/);
    assert.match(poolMatches({ ...o, spec: { ...o.spec, ipipMode: 'Never' } }, p)!, /ipipMode Never, not Always/);
    assert.match(poolMatches(undefined, p)!, /does not exist/);
  });

  it('reads the allocations of an IPAM block with their pods', () => {
    const b = { spec: { cidr: '10.245.0.8/29', allocations: [null, 0, null, 1, null, null, null, null], attributes: [{ handle_id: 'h0', secondary: { namespace: 'web', pod: 'a-1', node: 'n1' } }, { handle_id: 'h1' }] } };
    assert.deepEqual(blockAllocations(b as never), [{ ip: '10.245.0.9', pod: 'web/a-1' }, { ip: '10.245.0.11' }]);
    assert.deepEqual(blockAllocations({ spec: { cidr: '10.245.0.0/29', allocations: [null, null] } } as never), []);
  });

  it('grows ip-masq-agent\'s list and keeps its other fields', () => {
    const text = 'nonMasqueradeCIDRs:\n  - 10.244.0.0/16\nmasqLinkLocal: true\nresyncInterval: 60s\n';
    assert.deepEqual(masqueradeList(text), ['10.244.0.0/16']);
    const next = withMasqueradeList(text, ['10.244.0.0/16', '10.245.0.0/16']);
    assert.deepEqual(masqueradeList(next), ['10.244.0.0/16', '10.245.0.0/16']);
    assert.match(next, /masqLinkLocal: true/);
    assert.match(next, /resyncInterval: 60s/);
    assert.equal(masqueradeList('{not: [yaml'), undefined);
    assert.deepEqual(masqueradeList('masqLinkLocal: true'), []);
  });
});

describe('suggest --for pods: the range next to a pool that ran out', () => {
  /** Pool 10.50.0.0/24 of /26 blocks, all four taken; kube-proxy's clusterCIDR the pool. */
  const full = (over: Partial<Snapshot> = {}) => snap({
    pools: [{ ...POOL, name: 'p', cidr: '10.50.0.0/24' }],
    kubeProxy: { clusterCIDR: '10.50.0.0/24' },
    ranges: [
      { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
      { cidr: '10.50.0.0/24', role: 'pool', source: 'IPPool/p', label: 'Calico pool p' },
    ],
    blocks: ['10.50.0.0/26', '10.50.0.64/26', '10.50.0.128/26', '10.50.0.192/26'].map((cidr, i) => ({ cidr, node: `n${i}`, allocated: 60 })),
    pods: [],
    ...over,
  });

  it('its sibling first, the envelope kube-proxy gets named; nothing for a pool with room', () => {
    const [e] = suggestPodExtension(full(), { exhausted: new Set(['p']) });
    assert.deepEqual(e, { pool: 'p', poolCidr: '10.50.0.0/24', cidr: '10.50.1.0/24', kubeProxy: '10.50.0.0/23' });
    assert.match(extensionText(e!), /^extend instead: the Calico pool p 10\.50\.0\.0\/24 has no free block and conflicts with nothing; 10\.50\.1\.0\/24 next to it .*clusterCIDR becomes 10\.50\.0\.0\/23\): kube-renumber plan --extend-pod-cidr 10\.50\.1\.0\/24$/);
    assert.deepEqual(suggestPodExtension(full(), { exhausted: new Set() }), []);
  });

  it('skips a neighbour in use for the next one the plan takes, and says why when none is', () => {
    const avoid = [{ cidr: '10.50.1.0/24', reason: 'lab', from: '--avoid' } as never];
    const [e] = suggestPodExtension(full(), { exhausted: new Set(['p']), avoid });
    assert.equal(e!.cidr, '10.49.255.0/24', 'the block right before it (10.50.1.0/24 avoided)');
    // the pool right above the Service range: every neighbour's envelope holds the services
    const tight = full({
      pools: [{ ...POOL, name: 'p', cidr: '10.97.0.0/16' }], kubeProxy: { clusterCIDR: '10.97.0.0/16' },
      ranges: [{ cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' }],
    });
    const [n] = suggestPodExtension(tight, { exhausted: new Set(['p']) });
    assert.equal(n!.cidr, undefined);
    assert.match(n!.refused!, /^10\.96\.0\.0\/16: /);
    assert.match(extensionText(n!), /but no range next to it can be added/);
  });
});
