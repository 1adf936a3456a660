// plan --nodeport-cover (src/plan/nodeport-cover.ts) and the node-port cover Service (src/engine/covers.ts): the
// flag's values, the plan's check and text, the refusals, what the plan records and apply checks again, and the
// cover's shape. Its effect on a real data plane: test/integration/zero-downtime.test.ts.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { planCommand } from '../../src/cli/commands/plan.ts';
import { exitCodeOf, GLOBAL_OPTIONS, type Io } from '../../src/cli/main.ts';
import type { NodeInfo, Snapshot } from '../../src/cluster/types.ts';
import { COVER_CLASS, COVER_FOR_LABEL, nodePortCoverService, nodePortsOf, RUN_LABEL } from '../../src/engine/covers.ts';
import { batchDone, nodePortCoversIn, squatters } from '../../src/engine/service/decisions.ts';
import { kubeProxyModeFor, nodePortCoverCheck, parseNodePortCover } from '../../src/plan/nodeport-cover.ts';
import { buildServicePlan, nodePortCoverName, type StepItem } from '../../src/plan/plan.ts';
import { recheckPreflight } from '../../src/plan/recheck.ts';
import { planFromYaml, planToYaml, PlanFormatError } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const node = (name: string, internal: string[], external: string[] = []): NodeInfo => ({ name, podCIDRs: [], internalIPs: internal, externalIPs: external, labels: {}, unschedulable: false });

function snap(over: Partial<Snapshot> = {}): Snapshot {
  return kubeadmSnapshot([
    svc('default', 'kubernetes', '10.96.0.1', { ports: [{ port: 443 }] }),
    svc('kube-system', 'kube-dns', '10.96.0.10', { selector: { 'k8s-app': 'kube-dns' }, ports: [{ port: 53, protocol: 'UDP' }] }),
    svc('shop', 'web', '10.96.0.80', { type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080 }, { name: 'https', port: 443, nodePort: 30443 }] }),
    svc('shop', 'api', '10.96.0.81', { selector: { app: 'api' } }),
  ], { kubeProxy: { mode: 'nftables' }, nodes: [node('n1', ['192.0.2.11'], ['203.0.113.11']), node('n2', ['192.0.2.12'])], ...over });
}

const plan = (s: Snapshot, cover: 'nodes' | string[] | undefined, strategy: 'in-place' | 'recreate' = 'in-place') =>
  buildServicePlan(s, { target: '10.100.0.0/16', strategy, ...(cover !== undefined ? { nodePortCover: cover } : {}) });
const check = (p: ReturnType<typeof plan>) => p.preflight.find((c) => c.id === 'nodeport-cover');

describe('--nodeport-cover values', () => {
  test('off, nodes, and IP lists (normalised, de-duplicated)', () => {
    assert.equal(parseNodePortCover('off'), undefined);
    assert.equal(parseNodePortCover('nodes'), 'nodes');
    assert.deepEqual(parseNodePortCover('192.0.2.1, 192.0.2.2,192.0.2.1'), ['192.0.2.1', '192.0.2.2']);
    assert.deepEqual(parseNodePortCover('2001:DB8::0:1'), ['2001:db8::1']);
  });
  test('anything else is refused, naming the bad part', () => {
    assert.throws(() => parseNodePortCover('on'), /"on" is not an IP address/);
    assert.throws(() => parseNodePortCover('192.0.2.1,,192.0.2.2'), /off, nodes, or IP addresses/);
    assert.throws(() => parseNodePortCover('192.0.2.300'), /"192.0.2.300" is not an IP address/);
    assert.throws(() => parseNodePortCover('10.0.0.0/8'), /not an IP address/);
  });
});

describe('the plan with --nodeport-cover', () => {
  test('off: no check, nothing recorded', () => {
    const p = plan(snap(), undefined);
    assert.equal(check(p), undefined);
    assert.equal(p.spec.options.nodePortCover, undefined);
  });

  test('nodes, nftables: passes; says what it does and its cost; recorded; the batch says so', () => {
    const p = plan(snap(), 'nodes');
    const c = check(p)!;
    assert.equal(c.status, 'pass', c.message);
    assert.match(c.message, /kube-proxy nftables/);
    assert.match(c.message, /each of the 1 moved NodePort Service\(s\) gets a second cover/);
    // 3 node addresses × 2 nodePorts
    assert.match(c.message, /one kube-proxy rule per address × nodePort .*\(3 × 2 = 6 /);
    assert.match(c.message, /192\.0\.2\.11, 203\.0\.113\.11, 192\.0\.2\.12/);
    assert.match(c.message, /healthCheckNodePort/);
    assert.equal(p.spec.options.nodePortCover, 'nodes');
    const batch = p.steps.find((s) => s.kind === 'move-services' && s.items?.some((i) => i.name === 'web'))!;
    assert.match(batch.description, /--nodeport-cover: the node ports of its 1 NodePort Service\(s\) answered meanwhile by a second cover at every Node's InternalIP and ExternalIP/);
  });

  test('an explicit list is recorded as given, and survives the plan file', () => {
    const p = plan(snap(), ['172.31.255.1', '172.31.255.2']);
    assert.equal(check(p)!.status, 'pass');
    assert.match(check(p)!.message, /172\.31\.255\.1, 172\.31\.255\.2 as given/);
    const back = planFromYaml(planToYaml(p));
    assert.deepEqual(back.spec.options!.nodePortCover, ['172.31.255.1', '172.31.255.2']);
  });

  test('a plan file whose nodePortCover is neither nodes nor IPs is refused', () => {
    const p = plan(snap(), ['172.31.255.1']);
    const bad = planToYaml(p).replace('- 172.31.255.1', '- not-an-ip');
    assert.throws(() => planFromYaml(bad), (e: unknown) => e instanceof PlanFormatError && /nodePortCover\[0\]/.test((e as Error).message));
  });

  test('an empty kube-proxy mode is iptables, its default on Linux', () => {
    const c = check(plan(snap({ kubeProxy: {} }), 'nodes'))!;
    assert.equal(c.status, 'pass');
    assert.match(c.message, /kube-proxy iptables, its default mode/);
  });

  const refusals: Array<[string, Partial<Snapshot>, RegExp]> = [
    ['IPVS', { kubeProxy: { mode: 'ipvs' } }, /IPVS mode, which binds every load-balancer IP to its dummy interface kube-ipvs0/],
    ['kube-proxy not seen (an eBPF data plane, or unreadable)', { kubeProxy: undefined }, /kube-proxy's mode is not known/],
    ['Cilium', { cni: { plugin: 'cilium', ipam: 'cilium', operatorManaged: false, evidence: [] } }, /Cilium, which may replace kube-proxy/],
    ['an unknown mode', { kubeProxy: { mode: 'kernelspace' } }, /mode is kernelspace/],
    ['no Node address', { nodes: [] }, /no Node shows an InternalIP or ExternalIP/],
  ];
  for (const [what, over, re] of refusals) {
    test(`refused: ${what}`, () => {
      const c = check(plan(snap(over), 'nodes'))!;
      assert.equal(c.status, 'fail');
      assert.equal(c.target, true, 'a refusal: exit 2, no plan');
      assert.match(c.message, re);
    });
  }

  test('refused with recreate', () => {
    const c = check(plan(snap(), 'nodes', 'recreate'))!;
    assert.equal(c.status, 'fail');
    assert.match(c.message, /recreate/);
  });

  test('no moved NodePort Service: a warning, nothing to cover', () => {
    const s = snap();
    s.services = s.services.filter((x) => x.name !== 'web');
    assert.equal(check(plan(s, 'nodes'))!.status, 'warn');
  });

  test('apply checks it again on the live read: kube-proxy switched to IPVS since the plan stops it', () => {
    const p = plan(snap(), 'nodes');
    assert.equal(recheckPreflight(snap(), p).find((c) => c.id === 'nodeport-cover')?.status, 'pass');
    assert.equal(recheckPreflight(snap({ kubeProxy: { mode: 'ipvs' } }), p).find((c) => c.id === 'nodeport-cover')?.status, 'fail');
  });

  test('kubeProxyModeFor reads the mode the snapshot records', () => {
    assert.deepEqual(kubeProxyModeFor(snap({ kubeProxy: { mode: 'IPTables' } })), { mode: 'iptables', defaulted: false });
    assert.ok('refused' in kubeProxyModeFor(snap({ kubeProxy: { mode: 'ipvs' } })));
  });

  test('nodePortCoverCheck counts only moved Services with node ports', () => {
    const s = snap();
    const p = plan(s, undefined);
    assert.match(nodePortCoverCheck(s, p.mapping, 'in-place', ['192.0.2.1']).message, /\(1 × 2 = 2 /);
  });
});

// ---- the command ----------------------------------------------------------------------------------------

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
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

describe('kube-renumber plan --nodeport-cover', () => {
  test('a bad value: one error line, exit 2, before the input is read', async () => {
    const r = await run(['--service-cidr', '10.100.0.0/16', '--nodeport-cover', 'yes', '-f', '/nonexistent']);
    assert.equal(r.code, 2);
    assert.equal(r.out, '');
    assert.equal(r.err.trim().split('\n').length, 1);
    assert.match(r.err, /^error: --nodeport-cover yes: "yes" is not an IP address/);
  });

  test('needs --service-cidr', async () => {
    const r = await run(['--pod-cidr', '10.50.0.0/16', '--nodeport-cover', 'nodes', '-f', '/nonexistent']);
    assert.equal(r.code, 2);
    assert.match(r.err, /--nodeport-cover needs --service-cidr/);
  });

  test('refused on a cluster whose kube-proxy runs IPVS (examples/kubeadm-exhausted): exit 2, one error line, no plan', async () => {
    const r = await run(['--service-cidr', '10.100.0.0/16', '--nodeport-cover', 'nodes', '-f', `${ROOT}examples/kubeadm-exhausted`, '-o', 'yaml']);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.out, '');
    assert.match(r.err, /^error: .*--nodeport-cover nodes refused: kube-proxy runs in IPVS mode/);
    assert.equal(r.err.trim().split('\n').length, 1);
  });
});

// ---- the engine's pure parts ------------------------------------------------------------------------------

describe('the node-port cover Service', () => {
  const orig = {
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', uid: 'u1', resourceVersion: '7' },
    spec: {
      type: 'NodePort', clusterIP: '10.96.0.80', clusterIPs: ['10.96.0.80'], selector: { app: 'web' }, externalTrafficPolicy: 'Local',
      ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack',
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080, protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 'dns', protocol: 'UDP', nodePort: 30053 }, { name: 'plain', port: 9000, protocol: 'TCP' }],
    },
  };

  test('LoadBalancer of our class, no node ports of its own, ports = the nodePorts → their targetPorts, the Service\'s traffic policy', () => {
    const c = nodePortCoverService(orig, nodePortCoverName('web'), ['10.100.255.253'], 'run-1');
    assert.equal(c.metadata!.name, 'web-kr-npcover');
    assert.equal(c.metadata!.namespace, 'shop');
    assert.equal(c.metadata!.labels![COVER_FOR_LABEL], 'web');
    assert.equal(c.metadata!.labels![RUN_LABEL], 'run-1');
    assert.equal(c.metadata!.uid, undefined);
    assert.equal(c.spec.type, 'LoadBalancer');
    assert.equal(c.spec.loadBalancerClass, COVER_CLASS);
    assert.equal(c.spec.allocateLoadBalancerNodePorts, false);
    assert.equal(c.spec.externalTrafficPolicy, 'Local');
    assert.deepEqual(c.spec.clusterIPs, ['10.100.255.253']);
    assert.deepEqual(c.spec.selector, { app: 'web' });
    assert.deepEqual(c.spec.ports, [
      { name: 'http', protocol: 'TCP', port: 30080, targetPort: 8080 },
      { name: 'dns', protocol: 'UDP', port: 30053, targetPort: 'dns' },
    ]);
    assert.equal(nodePortsOf(orig).length, 2);
  });

  test('externalTrafficPolicy Cluster (or unset) stays Cluster', () => {
    const c = nodePortCoverService({ ...orig, spec: { ...orig.spec, externalTrafficPolicy: undefined } }, 'x', ['10.100.255.253']);
    assert.equal(c.spec.externalTrafficPolicy, 'Cluster');
  });

  const item: StepItem = { namespace: 'shop', name: 'web', from: ['10.96.0.80'], to: ['10.100.0.80'], bridge: 'web-kr-old' };
  const moved = { metadata: { name: 'web', namespace: 'shop' }, spec: { type: 'NodePort', clusterIP: '10.100.0.80', clusterIPs: ['10.100.0.80'] } };
  const bridge = { metadata: { name: 'web-kr-old', namespace: 'shop' }, spec: { type: 'ClusterIP', clusterIP: '10.96.0.80', clusterIPs: ['10.96.0.80'] } };
  const npc = (labels: Record<string, string>) => ({ metadata: { name: 'web-kr-npcover', namespace: 'shop', labels } });
  const ours = { 'kube-renumber.io/managed': 'true', [COVER_FOR_LABEL]: 'web', [RUN_LABEL]: 'run-1' };

  test('a batch is not done while a node-port cover of its Services is up', () => {
    const view = new Map<string, any>([['shop/web', moved], ['shop/web-kr-old', bridge], ['shop/web-kr-cover', undefined], ['shop/web-kr-npcover', npc(ours)]]);
    assert.equal(batchDone(view, [item]), false);
    assert.equal(nodePortCoversIn(view, [item], 'run-1').length, 1);
    view.set('shop/web-kr-npcover', undefined);
    assert.equal(batchDone(view, [item]), true);
  });

  test('a Service of that name that is not this run\'s is a squatter (never patched or deleted)', () => {
    const view = new Map<string, any>([['shop/web', moved], ['shop/web-kr-npcover', npc({ ...ours, [RUN_LABEL]: 'other' })]]);
    assert.deepEqual(squatters(view, [item], 'run-1'), ['shop/web-kr-npcover']);
    assert.equal(nodePortCoversIn(view, [item], 'run-1').length, 0);
  });
});
