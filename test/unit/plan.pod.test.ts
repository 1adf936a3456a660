import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeInfo, PodInfo, ServiceInfo, Snapshot } from '../../src/cluster/types.ts';
import { contains, formatCidr, overlaps, parseCidr } from '../../src/net/index.ts';
import { buildMigrationPlan, type MigrationPlan } from '../../src/plan/plan.ts';
import { buildPodSection, covering, dnsDeployment, podIpamOf, podPatches } from '../../src/plan/pod-plan.ts';
import { podOwnerRefusal } from '../../src/plan/platform-gate.ts';
import { refusals } from '../../src/plan/preflight.ts';
import { failedNow, recheckPreflight } from '../../src/plan/recheck.ts';
import { run } from './run-cli.ts';
import { planFromYaml, planToMarkdown, planToYaml } from '../../src/plan/render.ts';

install();

function node(name: string, podCIDR: string, ip: string): NodeInfo {
  return { name, podCIDRs: podCIDR ? [podCIDR] : [], internalIPs: [ip], externalIPs: [], labels: {}, ready: true, unschedulable: false };
}

function pod(ns: string, name: string, ip: string, over: Partial<PodInfo> = {}): PodInfo {
  return { namespace: ns, name, podIPs: [ip], hostNetwork: false, phase: 'Running', labels: {}, ...over };
}

function svc(ns: string, name: string, ip: string, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace: ns, name, type: 'ClusterIP', clusterIPs: [ip], headless: false, ports: [{ port: 53 }],
    loadBalancerIPs: [], loadBalancerSourceRanges: [], externalIPs: [], labels: {}, annotations: {}, ...over,
  };
}

const NODES = [node('n2', '10.244.1.0/24', '192.168.1.12'), node('n1', '10.244.0.0/24', '192.168.1.11'), node('n3', '10.244.2.0/24', '192.168.1.13')];

function calicoSnap(over: Partial<Snapshot> = {}): Snapshot {
  return {
    source: { kind: 'file', files: ['test'] },
    kubernetesVersion: 'v1.33.4',
    serviceCIDRApi: 'v1',
    platform: { kind: 'kubeadm', title: 'kubeadm', evidence: [], reserved: [] },
    cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: false, evidence: [] },
    ranges: [
      { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
      { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
      { cidr: '10.244.0.0/16', role: 'pool', source: 'IPPool/default-ipv4-ippool', label: 'Calico pool' },
      { cidr: '192.168.1.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' },
    ],
    serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/16'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
    kubernetesServiceIPs: ['10.96.0.1'],
    dnsService: { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'], foundBy: 'selector' },
    clusterDNS: ['10.96.0.10'],
    apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16'] }],
    controllerManagers: [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16'], nodeCIDRMaskSize: 24, allocateNodeCIDRs: true }],
    kubeadm: { serviceSubnet: ['10.96.0.0/16'], podSubnet: ['10.244.0.0/16'] },
    nodes: NODES,
    services: [svc('kube-system', 'kube-dns', '10.96.0.10', { selector: { 'k8s-app': 'kube-dns' } })],
    pods: [
      pod('kube-system', 'coredns-7db6d8ff4d-abcde', '10.244.0.5', { owner: { kind: 'ReplicaSet', name: 'coredns-7db6d8ff4d' }, labels: { 'k8s-app': 'kube-dns', 'pod-template-hash': '7db6d8ff4d' } }),
      pod('web', 'web-1', '10.244.1.7'),
      pod('kube-system', 'kube-proxy-x', '192.168.1.11', { hostNetwork: true }),
    ],
    pools: [{ name: 'default-ipv4-ippool', cidr: '10.244.0.0/16', blockSize: 26, disabled: false, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' }],
    blocks: [], blockAffinities: [], warnings: [],
    kubeProxy: { clusterCIDR: '10.244.0.0/16' },
    ...over,
  };
}

function nodeSnap(over: Partial<Snapshot> = {}): Snapshot {
  return calicoSnap({ cni: { plugin: 'flannel', ipam: 'host-local', operatorManaged: false, evidence: [] }, pools: [], ...over });
}

const ids = (p: { steps: Array<{ id: string }> }) => p.steps.map((s) => s.id);

describe('pod plan: Calico path', () => {
  it('creates a pool copying the old one, disables, scales DNS, restarts, cleans up, gates, verifies — in that order', () => {
    const p = buildMigrationPlan(calicoSnap(), { pod: { target: '172.16.0.0/16' } });
    assert.deepEqual(ids(p), ['confirm-pod-disruption', 'create-ippool', 'disable-ippools', 'scale-critical', 'restart-pods', 'restore-scale', 'delete-ippools', 'remove-ipam-leftovers', 'pod-cidr-config', 'verify-pods']);
    const pc = p.spec.podCIDR!;
    assert.equal(pc.ipam, 'calico');
    assert.deepEqual(pc.from, ['10.244.0.0/16']);
    assert.deepEqual(pc.calico!.newPools, [{ name: 'kube-renumber-172-16-0-0-16', cidr: '172.16.0.0/16', blockSize: 26, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' }]);
    assert.deepEqual(pc.restarts.critical, ['kube-system/coredns']);
    assert.equal(p.spec.serviceCIDR, undefined);
    assert.ok(p.preflight.every((c) => c.status !== 'fail'), JSON.stringify(p.preflight.filter((c) => c.status === 'fail')));
  });

  it('--block-size, --pool-name and --critical are honoured; the gate carries kubeadm patches that keep kcm starting', () => {
    const p = buildMigrationPlan(calicoSnap(), { pod: { target: '172.16.0.0/16', blockSize: 28, poolName: 'new-pool', critical: ['web/api'] } });
    const pc = p.spec.podCIDR!;
    assert.equal(pc.calico!.newPools[0]!.blockSize, 28);
    assert.equal(pc.calico!.newPools[0]!.name, 'new-pool');
    assert.deepEqual(pc.restarts.critical, ['kube-system/coredns', 'web/api']);
    const gate = p.steps.find((s) => s.id === 'pod-cidr-config')!;
    const kcm = gate.gate!.patches!.find((x) => x.id === 'kubeadm-kcm-pod-cidr')!;
    // allocation off in the same edit that names NEW: kcm would exit at start otherwise
    assert.match(kcm.after, /--allocate-node-cidrs=false\n\s+- --cluster-cidr=172\.16\.0\.0\/16/);
    assert.ok(gate.gate!.patches!.some((x) => x.id === 'kube-proxy-cluster-cidr' && x.after.includes('172.16.0.0/16')));
  });

  it('apply\'s re-check plans again with the options the path\'s section recorded: same cluster, same checks', () => {
    const plans = [
      buildMigrationPlan(calicoSnap(), { pod: { target: '172.16.0.0/16', blockSize: 28, poolName: 'new-pool' } }),
      buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/16', nodeHook: 'reregister.sh', maxUnavailable: 2, nodeMaskSize: 25 } }),
    ];
    // (a Pod-only plan records no headroom: the re-check judges with the least one, x1)
    const shown = (cs: Array<{ id: string; status: string; message: string }>) => cs.map((c) => `${c.id} ${c.status} ${c.message.replace(/ \(x\d+ headroom\)/, '')}`);
    for (const p of plans) {
      const ipam = p.spec.podCIDR!.ipam;
      assert.deepEqual(shown(recheckPreflight(ipam === 'calico' ? calicoSnap() : nodeSnap(), p)), shown(p.preflight), ipam);
    }
    assert.ok(plans[0]!.preflight.some((c) => c.message.includes('/28')), 'the block size shows in a check');
    assert.ok(plans[1]!.preflight.some((c) => c.id === 'pod-node-hook' && c.status === 'pass'), 'the hook shows in a check');
  });

  it('operator-managed installs go through Installation (pre-flight says so)', () => {
    const p = buildMigrationPlan(calicoSnap({ cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: true, evidence: [] } }), { pod: { target: '172.16.0.0/16' } });
    assert.equal(p.spec.podCIDR!.calico!.operatorManaged, true);
    assert.equal(p.preflight.find((c) => c.id === 'pod-calico-install')!.status, 'warn');
    assert.match(p.steps.find((s) => s.id === 'create-ippool')!.description, /Installation\/default/);
  });

  it('refuses a target overlapping the node network, the service range or the old pool', () => {
    for (const [t, what] of [['192.168.0.0/16', /node/], ['10.96.0.0/12', /service range/], ['10.244.128.0/17', /pod range|Calico pool|podCIDR/]] as const) {
      const p = buildMigrationPlan(calicoSnap(), { pod: { target: t } });
      const c = p.preflight.find((x) => x.id === 'pod-target-conflicts')!;
      assert.equal(c.status, 'fail', t);
      assert.equal(c.target, true);
      assert.match(c.message, what);
      assert.equal(p.steps.length > 0, true); // the plan is still printed for review; the CLI refuses it
    }
  });

  it('size: blocks for every node and addresses for every pod, with headroom', () => {
    const big = calicoSnap({ nodes: Array.from({ length: 40 }, (_, i) => node(`n${i}`, '', `192.168.1.${i + 10}`)) });
    const p = buildMigrationPlan(big, { pod: { target: '172.16.0.0/24', blockSize: 28 } }); // 16 blocks for 40 nodes x2
    assert.equal(p.preflight.find((c) => c.id === 'pod-target-size')!.status, 'fail');
    const q = buildMigrationPlan(big, { pod: { target: '172.16.0.0/20', blockSize: 26 } }); // 64 blocks
    assert.equal(q.preflight.find((c) => c.id === 'pod-target-size')!.status, 'fail');
    const r = buildMigrationPlan(big, { pod: { target: '172.16.0.0/19', blockSize: 26 } }); // 128 blocks
    assert.equal(r.preflight.find((c) => c.id === 'pod-target-size')!.status, 'pass');
    const bad = buildMigrationPlan(big, { pod: { target: '172.16.0.0/19', blockSize: 18 } });
    assert.match(bad.preflight.find((c) => c.id === 'pod-target-size')!.message, /block size/);
  });

  it('warns when kube-proxy clusterCIDR does not cover NEW, proposing a covering range', () => {
    const p = buildMigrationPlan(calicoSnap(), { pod: { target: '10.245.0.0/16' } });
    const c = p.preflight.find((x) => x.id === 'pod-kube-proxy')!;
    assert.equal(c.status, 'warn');
    assert.match(c.fix, /10\.244\.0\.0\/15/);
  });

  it('kube-proxy clusterCIDR: never 0.0.0.0/0 or a range holding the node network; says none exists instead', () => {
    // 10.244.0.0/16 and 172.16.0.0/16 (the Calico-operator case: 192.168.0.0/16 to 10.x is the same) have only 0.0.0.0/0 in common
    const far = buildMigrationPlan(calicoSnap(), { pod: { target: '172.16.0.0/16' } }).preflight.find((x) => x.id === 'pod-kube-proxy')!;
    assert.equal(far.status, 'warn');
    assert.doesNotMatch(far.fix, /0\.0\.0\.0\/0|covering both/);
    assert.match(far.fix, /no single clusterCIDR holds the old and the new pod range.*detectLocalMode/);
    assert.match(far.fix, /afterwards clusterCIDR 172\.16\.0\.0\/16, the pod range/);
    // 10.192.0.0/10 would hold both, but also the node network 10.250.1.0/24
    const nodes = calicoSnap({ ranges: [...calicoSnap().ranges.filter((r) => r.role !== 'node'), { cidr: '10.250.1.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' }] });
    const near = buildMigrationPlan(nodes, { pod: { target: '10.200.0.0/16' } }).preflight.find((x) => x.id === 'pod-kube-proxy')!;
    assert.doesNotMatch(near.fix, /10\.192\.0\.0\/10/);
    assert.match(near.fix, /node network 10\.250\.1\.0\/24/);
    // without the node network in it, the covering range is proposed
    assert.match(buildMigrationPlan(calicoSnap(), { pod: { target: '10.200.0.0/16' } }).preflight.find((x) => x.id === 'pod-kube-proxy')!.fix, /covering both \(10\.192\.0\.0\/10/);
  });

  it('kube-proxy clusterCIDR on a Tigera-operator cluster (default pool 192.168.0.0/16) moved to 10.x: no 0.0.0.0/0 in any fix or patch', () => {
    const op = calicoSnap({
      cni: { plugin: 'calico', ipam: 'calico-ipam', operatorManaged: true, evidence: [] },
      ranges: [
        { cidr: '10.96.0.0/12', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
        { cidr: '192.168.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
        { cidr: '192.168.0.0/16', role: 'pool', source: 'IPPool/default-ipv4-ippool', label: 'Calico pool' },
        { cidr: '172.31.0.0/20', role: 'node', source: 'node InternalIPs', label: 'node network' },
      ],
      nodes: [node('n1', '', '172.31.1.11')],
      pools: [{ name: 'default-ipv4-ippool', cidr: '192.168.0.0/16', blockSize: 26, disabled: false, natOutgoing: true, nodeSelector: 'all()' }],
      controllerManagers: [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['192.168.0.0/16'], nodeCIDRMaskSize: 24, allocateNodeCIDRs: true }],
      kubeadm: { serviceSubnet: ['10.96.0.0/12'], podSubnet: ['192.168.0.0/16'] },
      kubeProxy: { clusterCIDR: '192.168.0.0/16' },
    });
    const p = buildMigrationPlan(op, { pod: { target: '10.32.0.0/16' } });
    const kp = p.preflight.find((x) => x.id === 'pod-kube-proxy')!;
    assert.equal(kp.status, 'warn');
    const texts = [...p.preflight.map((c) => `${c.message} ${c.fix}`), ...podPatches(op, p.spec.podCIDR!).map((x) => x.after)].join('\n');
    assert.doesNotMatch(texts, /0\.0\.0\.0\/0/);
    assert.match(kp.fix, /no single clusterCIDR/);
    assert.equal(podPatches(op, p.spec.podCIDR!).find((x) => x.id === 'kube-proxy-cluster-cidr')!.after, 'clusterCIDR: 10.32.0.0/16\n');
  });

  it('kube-proxy clusterCIDR patch: the new pod range for the moved family, the other family kept', () => {
    const dual = calicoSnap({ kubeProxy: { clusterCIDR: '10.244.0.0/16,fd00:10:244::/56' } });
    const patches = podPatches(dual, buildPodSection(dual, { target: '172.16.0.0/16' }).spec!);
    assert.equal(patches.find((x) => x.id === 'kube-proxy-cluster-cidr')!.after, 'clusterCIDR: 172.16.0.0/16,fd00:10:244::/56\n');
    const fix = buildMigrationPlan(dual, { pod: { target: '172.16.0.0/16' } }).preflight.find((x) => x.id === 'pod-kube-proxy')!.fix;
    assert.match(fix, /afterwards clusterCIDR 172\.16\.0\.0\/16,fd00:10:244::\/56/);
  });

  it('finds the DNS Deployment from the DNS Service selector and the pod template hash', () => {
    assert.equal(dnsDeployment(calicoSnap()), 'kube-system/coredns');
    assert.equal(dnsDeployment(calicoSnap({ dnsService: undefined })), undefined);
  });

  it('round-trips through YAML and renders Markdown', () => {
    const p = buildMigrationPlan(calicoSnap(), { pod: { target: '172.16.0.0/16' } });
    const back = planFromYaml(planToYaml(p));
    assert.deepEqual(back, JSON.parse(JSON.stringify(p)));
    const md = planToMarkdown(p);
    assert.match(md, /Pod CIDR 10\.244\.0\.0\/16 → 172\.16\.0\.0\/16/);
    assert.match(md, /`remove-ipam-leftovers`/);
  });
});

describe('pod plan: node IPAM path', () => {
  it('stops kcm allocating, then drains, re-registers and assigns each node in name order, then kcm on NEW', () => {
    const p = buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/16', nodeHook: 'reregister.sh' } });
    assert.deepEqual(ids(p), [
      'confirm-pod-disruption', 'kcm-stop-allocating', 'scale-critical',
      'drain-node-n1', 'reregister-node-n1', 'assign-podcidr-n1',
      'drain-node-n2', 'reregister-node-n2', 'assign-podcidr-n2',
      'drain-node-n3', 'reregister-node-n3', 'assign-podcidr-n3',
      'restore-scale', 'kcm-cluster-cidr', 'verify-pods',
    ]);
    const nodes = p.spec.podCIDR!.node!.nodes;
    assert.deepEqual(nodes.map((n) => [n.name, n.from[0], n.to[0]]), [
      ['n1', '10.244.0.0/24', '172.16.0.0/24'], ['n2', '10.244.1.0/24', '172.16.1.0/24'], ['n3', '10.244.2.0/24', '172.16.2.0/24'],
    ]);
    assert.equal(p.steps.find((s) => s.id === 'reregister-node-n1')!.kind, 'reregister-node');
    // consent first, as kubectl drain asks for --force and --delete-emptydir-data; the nodes and their labels named
    const consent = p.steps[0]!;
    assert.equal(consent.kind, 'confirm');
    assert.match(consent.description, /emptyDir/);
    assert.match(consent.description, /bare pods/);
    assert.match(consent.description, /node\(s\) n1, n2, n3 are deleted and registered again: labels and taints set through the API are put back/);
  });

  it('lists the bare pods\' namespaces (the only ones where the run creates pods) and names the RoleBindings; apply re-checks them live', () => {
    const bare = [
      pod('team-b', 'solo', '10.244.1.50'), pod('team-a', 'solo', '10.244.1.51'), pod('team-a', 'solo-2', '10.244.1.52'),
      pod('team-c', 'done', '10.244.1.53', { phase: 'Succeeded' }), pod('team-d', 'host', '192.168.1.11', { hostNetwork: true }),
      pod('team-e', 'web-1', '10.244.1.54', { owner: { kind: 'ReplicaSet', name: 'web-5d8' } }),
    ];
    const p = buildMigrationPlan(nodeSnap({ pods: bare }), { pod: { target: '172.16.0.0/16', nodeHook: 'reregister.sh' } });
    assert.deepEqual(p.spec.podCIDR!.barePodNamespaces, ['team-a', 'team-b']);
    const consent = p.steps[0]!;
    assert.match(consent.description, /they run in namespace\(s\) team-a, team-b/);
    assert.ok(consent.gate!.instructions.some((i) => i.includes('kubectl -n team-a create role kube-renumber-recreate-pods --verb=create --resource=pods') && i.includes('kubectl -n team-a create rolebinding kube-renumber-recreate-pods --role=kube-renumber-recreate-pods --serviceaccount=kube-system:kube-renumber-migrate')));
    // written and read back
    assert.deepEqual(planFromYaml(planToYaml(p)).spec.podCIDR!.barePodNamespaces, ['team-a', 'team-b']);
    assert.throws(() => planFromYaml(planToYaml(p).replace('- team-a', '- Team_A')), /barePodNamespaces\[0\]: "Team_A" is not a namespace name/);
    // at apply, a bare pod now in a namespace the plan does not list stops the run before its first write
    assert.deepEqual(failedNow(recheckPreflight(nodeSnap({ pods: bare }), p)), []);
    const later = failedNow(recheckPreflight(nodeSnap({ pods: [...bare, pod('team-f', 'new', '10.244.2.9')] }), p));
    assert.deepEqual(later.map((c) => c.id), ['pod-bare-namespaces']);
    assert.match(later[0]!.message, /team-f, which the plan does not list/);
  });

  it('waves: --max-unavailable groups the nodes, spread across zones; recorded in the plan; old plans load as waves of one', () => {
    const zoned = Array.from({ length: 6 }, (_, i) => ({ ...node(`z${i}`, `10.244.${i}.0/24`, `192.168.1.${20 + i}`), labels: { 'topology.kubernetes.io/zone': i < 3 ? 'a' : 'b' } }));
    const p = buildMigrationPlan(nodeSnap({ nodes: zoned }), { pod: { target: '172.16.0.0/16', nodeHook: 'reregister.sh', maxUnavailable: '50%' } });
    assert.equal(p.spec.podCIDR!.node!.maxUnavailable, '50%');
    assert.deepEqual(ids(p), ['confirm-pod-disruption', 'kcm-stop-allocating', 'scale-critical', 'move-nodes-wave-1', 'move-nodes-wave-2', 'restore-scale', 'kcm-cluster-cidr', 'verify-pods']);
    for (const id of ['move-nodes-wave-1', 'move-nodes-wave-2']) {
      const st = p.steps.find((s) => s.id === id)!;
      assert.equal(st.kind, 'move-nodes');
      const zones = st.items!.map((it) => zoned.find((n) => n.name === it.name)!.labels['topology.kubernetes.io/zone']).sort();
      assert.equal(st.items!.length, 3);
      assert.ok(zones.includes('a') && zones.includes('b'), `${id} spans both zones: ${zones}`);
    }
    assert.deepEqual(p.spec.podCIDR!.node!.nodes.map((n) => n.zone), ['a', 'a', 'a', 'b', 'b', 'b']);
    const back = planFromYaml(planToYaml(p));
    assert.deepEqual(back, JSON.parse(JSON.stringify(p)));
    assert.match(planToMarkdown(p), /max-unavailable 50%: 2 wave\(s\) of up to 3 nodes, each spread across 2 zones/);
    // without a hook: the wave's drains, one gate for the wave, the wave's podCIDRs
    const g = buildMigrationPlan(nodeSnap({ nodes: zoned }), { pod: { target: '172.16.0.0/16', maxUnavailable: 3 } });
    assert.deepEqual(ids(g).slice(3, 6), ['drain-nodes-wave-1', 'reregister-nodes-wave-1', 'assign-podcidr-wave-1']);
    assert.equal(g.steps[4]!.kind, 'gate');
    assert.equal(g.steps[4]!.items!.length, 3);
    // the default is one node at a time, and says so
    const one = buildMigrationPlan(nodeSnap({ nodes: zoned }), { pod: { target: '172.16.0.0/16', nodeHook: 'x' } });
    assert.equal(one.spec.podCIDR!.node!.maxUnavailable, 1);
    assert.ok(ids(one).includes('drain-node-z0'));
    // a plan written before waves (no maxUnavailable) still loads, its per-node steps as they were
    const old = JSON.parse(JSON.stringify(one));
    delete old.spec.podCIDR.node.maxUnavailable;
    for (const n of old.spec.podCIDR.node.nodes) delete n.zone;
    assert.deepEqual(planFromYaml(planToYaml(old)).steps.map((s) => s.id), ids(one));
    assert.match(planToMarkdown(old), /max-unavailable 1 \(default; the plan predates waves\): one node at a time/);
    // the validator refuses a bad maxUnavailable and a node named twice in one wave
    const bad = JSON.parse(JSON.stringify(p));
    bad.spec.podCIDR.node.maxUnavailable = '0%';
    assert.throws(() => planFromYaml(planToYaml(bad)), /spec\.podCIDR\.node\.maxUnavailable: "0%"/);
    const twice = JSON.parse(JSON.stringify(p));
    twice.steps.find((s: any) => s.id === 'move-nodes-wave-1').items[1].name = twice.steps.find((s: any) => s.id === 'move-nodes-wave-1').items[0].name;
    assert.throws(() => planFromYaml(planToYaml(twice)), /items\[1\]\.name: node "z\d" is named twice/);
  });

  it('without a hook each re-registration is a gate', () => {
    const p = buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/16' } });
    assert.equal(p.steps.find((s) => s.id === 'reregister-node-n2')!.kind, 'gate');
    assert.equal(p.preflight.find((c) => c.id === 'pod-node-hook')!.status, 'warn');
  });

  it('size: NEW must hold a podCIDR of the node mask per node with headroom; mask at most 16 bits longer', () => {
    assert.equal(buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/21' } }).preflight.find((c) => c.id === 'pod-target-size')!.status, 'pass'); // 8 for 3 x2
    assert.equal(buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/22' } }).preflight.find((c) => c.id === 'pod-target-size')!.status, 'fail'); // 4 for 3 x2
    assert.equal(buildMigrationPlan(nodeSnap(), { pod: { target: '172.0.0.0/7', nodeMaskSize: 24 } }).preflight.find((c) => c.id === 'pod-target-size')!.status, 'fail');
  });

  it('kcm gates: allocation off first (alone), then NEW with allocation on', () => {
    const p = buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/16' } });
    const first = p.steps.find((s) => s.id === 'kcm-stop-allocating')!.gate!.patches!;
    assert.deepEqual(first.map((x) => x.id), ['kubeadm-kcm-stop-allocating']);
    assert.equal(first[0]!.after.trim(), '- --allocate-node-cidrs=false');
    const last = p.steps.find((s) => s.id === 'kcm-cluster-cidr')!.gate!.patches!;
    assert.match(last.find((x) => x.id === 'kubeadm-kcm-pod-cidr')!.after, /allocate-node-cidrs=true\n\s+- --cluster-cidr=172\.16\.0\.0\/16/);
  });

  it('kOps patches: podCIDR and a nonMasqueradeCIDR that contains NEW', () => {
    const base = calicoSnap();
    // the cluster's service range is the spec's (nonMasqueradeCIDR must hold NEW and it: 100.0.0.0/8)
    const snap = calicoSnap({
      platform: { kind: 'kops', title: 'kops', evidence: [], reserved: [] }, kubeadm: undefined,
      kops: { layout: 'networking', nonMasqueradeCIDR: '100.64.0.0/10', podCIDR: '100.96.0.0/11', serviceClusterIPRange: '100.64.0.0/13' },
      ranges: base.ranges.map((r) => (r.role === 'service' ? { ...r, cidr: '100.64.0.0/13' } : r)),
    });
    const patches = podPatches(snap, buildPodSection(snap, { target: '100.128.0.0/11', avoid: [] }).spec!);
    const k = patches.find((x) => x.id === 'kops-pod-cidr')!;
    assert.match(k.after, /podCIDR: 100\.128\.0\.0\/11/);
    assert.match(k.after, /nonMasqueradeCIDR: 100\.0\.0\.0\/8/);
    assert.match(k.after, /allocateNodeCIDRs: false/);
  });
});

/** A dual-stack node-IPAM cluster: every node has an IPv4 and an IPv6 podCIDR (kcm --cluster-cidr v4,v6). */
function dualNodeSnap(over: Partial<Snapshot> = {}): Snapshot {
  const nodes = ['n2', 'n1', 'n3'].map((name, i) => ({
    ...node(name, `10.244.${i}.0/24`, `192.168.1.${11 + i}`), podCIDRs: [`10.244.${i}.0/24`, `fd00:10:244:${i}::/64`],
  }));
  return nodeSnap({
    nodes,
    ranges: [
      { cidr: '10.96.0.0/16', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
      { cidr: 'fd00:10:96::/112', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' },
      { cidr: '10.244.0.0/16', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
      { cidr: 'fd00:10:244::/56', role: 'pod', source: 'kube-controller-manager --cluster-cidr', label: 'cluster CIDR' },
      { cidr: '192.168.1.0/24', role: 'node', source: 'node InternalIPs', label: 'node network' },
    ],
    apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/16', 'fd00:10:96::/112'] }],
    controllerManagers: [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16', 'fd00:10:244::/56'], allocateNodeCIDRs: true }],
    kubeadm: { serviceSubnet: ['10.96.0.0/16', 'fd00:10:96::/112'], podSubnet: ['10.244.0.0/16', 'fd00:10:244::/56'] },
    kubeProxy: { clusterCIDR: '10.244.0.0/16,fd00:10:244::/56' },
    ...over,
  });
}

describe('pod plan: dual-stack node IPAM', () => {
  const NEW = '10.245.0.0/16,fd00:10:245::/56';

  it('one node podCIDR size per family (the nodes\' sizes when kcm shows none), one new podCIDR per family per node', () => {
    const p = buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW } });
    assert.deepEqual(p.preflight.filter((c) => c.status === 'fail'), []);
    const n = p.spec.podCIDR!.node!;
    assert.deepEqual(n.maskSizes, { ipv4: 24, ipv6: 64 });
    assert.deepEqual(n.nodes.map((x) => [x.name, x.to]), [
      ['n1', ['10.245.0.0/24', 'fd00:10:245::/64']], ['n2', ['10.245.1.0/24', 'fd00:10:245:1::/64']], ['n3', ['10.245.2.0/24', 'fd00:10:245:2::/64']],
    ]);
    assert.match(p.preflight.find((c) => c.id === 'pod-target-size')!.message, /10\.245\.0\.0\/16: 256 node podCIDRs of \/24 .*fd00:10:245::\/56: 256 node podCIDRs of \/64/);
    assert.deepEqual(planFromYaml(planToYaml(p)), JSON.parse(JSON.stringify(p)));
    assert.match(planToMarkdown(p), /3 node\(s\), \/24 \(IPv4\), \/64 \(IPv6\) each/);
    const gate = p.steps.find((s) => s.id === 'kcm-cluster-cidr')!;
    assert.ok(gate.gate!.patches!.some((x) => x.after.includes('--cluster-cidr=10.245.0.0/16,fd00:10:245::/56')), JSON.stringify(gate.gate!.patches));
  });

  it('kcm\'s --node-cidr-mask-size-ipv4/-ipv6 when it shows them; --node-mask-size one per family in the order of NEW', () => {
    const kcm = [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16', 'fd00:10:244::/56'], allocateNodeCIDRs: true, nodeCIDRMaskSizeIPv4: 25, nodeCIDRMaskSizeIPv6: 72 }];
    const p = buildMigrationPlan(dualNodeSnap({ controllerManagers: kcm }), { pod: { target: NEW } });
    assert.deepEqual(p.spec.podCIDR!.node!.maskSizes, { ipv4: 25, ipv6: 72 });
    assert.deepEqual(p.spec.podCIDR!.node!.nodes[0]!.to, ['10.245.0.0/25', 'fd00:10:245::/72']);
    const q = buildMigrationPlan(dualNodeSnap(), { pod: { target: 'fd00:10:245::/56,10.245.0.0/16', nodeMaskSize: [72, 26] } });
    assert.deepEqual(q.spec.podCIDR!.node!.maskSizes, { ipv6: 72, ipv4: 26 });
    assert.deepEqual(q.spec.podCIDR!.node!.nodes[0]!.to, ['fd00:10:245::/72', '10.245.0.0/26']);
    assert.deepEqual(planFromYaml(planToYaml(q)), JSON.parse(JSON.stringify(q)));
  });

  it('kcm-cluster-cidr sets kcm\'s node mask flags where the plan\'s sizes differ from what kcm uses now', () => {
    const patch = (p: MigrationPlan) => p.steps.find((s) => s.id === 'kcm-cluster-cidr')!.gate!.patches!.find((x) => x.id === 'kubeadm-kcm-pod-cidr')!;
    const same = patch(buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW } }));
    assert.doesNotMatch(same.after, /node-cidr-mask-size/);
    const other = patch(buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW, nodeMaskSize: [25, 64] } }));
    assert.equal(other.after, '    - --allocate-node-cidrs=true\n    - --cluster-cidr=10.245.0.0/16,fd00:10:245::/56\n    - --node-cidr-mask-size-ipv4=25\n');
    assert.equal(other.before, "    - --allocate-node-cidrs=false\n    - --cluster-cidr=10.244.0.0/16,fd00:10:244::/56\n    # --node-cidr-mask-size-ipv4 not set: kube-controller-manager's default 24\n");
    const kcm = [{ pod: 'kube-controller-manager-cp1', clusterCIDR: ['10.244.0.0/16', 'fd00:10:244::/56'], allocateNodeCIDRs: true, nodeCIDRMaskSizeIPv4: 25, nodeCIDRMaskSizeIPv6: 72 }];
    const set = patch(buildMigrationPlan(dualNodeSnap({ controllerManagers: kcm }), { pod: { target: NEW, nodeMaskSize: [25, 64] } }));
    assert.match(set.before, /- --node-cidr-mask-size-ipv6=72\n$/);
    assert.match(set.after, /- --node-cidr-mask-size-ipv6=64\n$/);
    assert.doesNotMatch(set.after, /ipv4/);
    const generic = buildMigrationPlan(dualNodeSnap({ platform: { kind: 'generic', title: 'generic', evidence: [], reserved: [] }, kubeadm: undefined }), { pod: { target: NEW, nodeMaskSize: [24, 72] } });
    const g = generic.steps.find((s) => s.id === 'kcm-cluster-cidr')!.gate!.patches!.find((x) => x.id === 'generic-kcm-pod-cidr')!;
    assert.equal(g.after, '--allocate-node-cidrs=true --cluster-cidr=10.245.0.0/16,fd00:10:245::/56 --node-cidr-mask-size-ipv6=72');
  });

  it('one family of a dual-stack node-IPAM cluster cannot move alone (a node gets its podCIDRs once): refused', () => {
    for (const t of ['10.245.0.0/16', 'fd00:10:245::/56']) {
      const p = buildMigrationPlan(dualNodeSnap(), { pod: { target: t } });
      const c = p.preflight.find((x) => x.id === 'pod-node-families')!;
      assert.equal(c.status, 'fail', t);
      assert.equal(c.target, true);
      assert.match(c.message, /the nodes' podCIDRs are IPv4 and IPv6, NEW names no IPv[46] range/);
      assert.match(c.fix, /10\.245\.0\.0\/16,fd00:10:245::\/56/);
    }
    assert.equal(buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW } }).preflight.some((x) => x.id === 'pod-node-families'), false);
    assert.equal(buildMigrationPlan(nodeSnap(), { pod: { target: '172.16.0.0/16' } }).preflight.some((x) => x.id === 'pod-node-families'), false);
  });

  it('a single size for two families, or a size that does not fit its family, fails pod-target-size (a refusal)', () => {
    const one = buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW, nodeMaskSize: 24 } });
    const c = one.preflight.find((x) => x.id === 'pod-target-size')!;
    assert.equal(c.status, 'fail');
    assert.equal(c.target, true);
    assert.match(c.message, /1 node podCIDR size\(s\) \(\/24\) for 2 families of NEW .*give one size per family/);
    const big = buildMigrationPlan(dualNodeSnap(), { pod: { target: NEW, nodeMaskSize: [24, 80] } });
    assert.match(big.preflight.find((x) => x.id === 'pod-target-size')!.message, /node podCIDR size \/80 does not fit fd00:10:245::\/56 .*at most 16 bits longer/);
    assert.doesNotMatch(big.preflight.find((x) => x.id === 'pod-target-size')!.message, /10\.245/);
  });
});

describe('pod plan: IPAM detection and combined plans', () => {
  it('detects calico-ipam, host-local, flannel, Cilium kubernetes IPAM; refuses Cilium cluster-pool', () => {
    assert.equal(podIpamOf(calicoSnap()), 'calico');
    assert.equal(podIpamOf(nodeSnap()), 'node');
    assert.equal(podIpamOf(calicoSnap({ cni: { plugin: 'cilium', ipam: 'cilium', operatorManaged: false, evidence: [], ipamMode: 'kubernetes' }, pools: [] })), 'node');
    const p = buildMigrationPlan(calicoSnap({ cni: { plugin: 'cilium', ipam: 'cilium', operatorManaged: false, evidence: [], ipamMode: 'cluster-pool' }, pools: [] }), { pod: { target: '172.16.0.0/16' } });
    assert.equal(p.preflight.find((c) => c.id === 'pod-ipam')!.status, 'fail');
    assert.equal(p.steps.length, 0);
  });

  const cilium = (ipamMode?: string): Partial<Snapshot> => ({
    cni: { plugin: 'cilium', ipam: ipamMode ? 'cilium' : 'unknown', operatorManaged: false, evidence: [], ...(ipamMode ? { ipamMode } : {}) }, pools: [],
  });

  it('Cilium cluster-pool: the move is refused with Cilium\'s own reason, whatever --ipam forces', () => {
    for (const ipam of [undefined, 'node', 'calico'] as const) {
      const p = buildMigrationPlan(calicoSnap(cilium('cluster-pool')), { pod: { target: '172.16.0.0/16', ...(ipam ? { ipam } : {}) } });
      const c = p.preflight.find((x) => x.id === 'pod-ipam')!;
      assert.equal(c.status, 'fail', `--ipam ${ipam}`);
      assert.deepEqual(refusals(p.preflight).map((x) => x.id), ['pod-ipam'], `--ipam ${ipam}: a refusal, not a failed check`);
      assert.match(c.message, /cluster-pool/);
      assert.match(c.message, /Don't change any existing elements of the clusterPoolIPv4PodCIDRList list/);
      assert.match(c.message, /docs\.cilium\.io\/en\/stable\/network\/concepts\/ipam\/cluster-pool/);
      assert.match(c.message, /multi-pool/);
      assert.doesNotMatch(c.message, /cannot tell/);
      assert.equal(p.steps.length, 0);
    }
  });

  it('Cilium multi-pool takes its own path; other Cilium modes are refused; Cilium kubernetes IPAM plans through the node path', () => {
    assert.equal(podOwnerRefusal(calicoSnap(cilium('multi-pool'))), undefined);
    const mp = buildMigrationPlan(calicoSnap(cilium('multi-pool')), { pod: { target: '172.16.0.0/16' } });
    assert.match(mp.preflight.find((x) => x.id === 'pod-ipam')!.message, /Cilium multi-pool IPAM/);
    assert.match(mp.preflight.find((x) => x.id === 'pod-old-pools')!.message, /no CiliumPodIPPool in the input/);
    assert.match(podOwnerRefusal(calicoSnap(cilium('eni')))!, /Cilium IPAM .*no path for it.*cilium-config ipam eni/);
    assert.equal(podOwnerRefusal(calicoSnap(cilium('kubernetes'))), undefined);
    assert.equal(podOwnerRefusal(calicoSnap()), undefined);
    const k = buildMigrationPlan(calicoSnap(cilium('kubernetes')), { pod: { target: '172.16.0.0/16' } });
    assert.equal(k.preflight.find((x) => x.id === 'pod-ipam')!.status, 'pass');
    assert.equal(k.spec.podCIDR?.ipam, 'node');
  });

  it('Cilium whose cilium-config was not read: says so instead of offering --ipam calico', () => {
    const p = buildMigrationPlan(calicoSnap(cilium()), { pod: { target: '172.16.0.0/16' } });
    const c = p.preflight.find((x) => x.id === 'pod-ipam')!;
    assert.equal(c.status, 'fail');
    assert.match(c.message, /cilium-config/);
    assert.doesNotMatch(c.fix, /--ipam calico/);
  });

  it('plan CLI: a Cilium cluster-pool cluster is exit 2 with one error line, before the target is judged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-cilium-'));
    try {
      const file = join(dir, 'cluster.json');
      const objects = (data: Record<string, string>) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.0.1.0/24', podCIDRs: ['10.0.1.0/24'] }, status: { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }] } },
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cilium-x2k9p', namespace: 'kube-system', labels: { 'k8s-app': 'cilium' } }, spec: { hostNetwork: true }, status: { podIP: '192.168.1.10' } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cilium-config', namespace: 'kube-system' }, data },
      ] });
      writeFileSync(file, objects({ 'cluster-pool-ipv4-cidr': '10.0.0.0/8' }));
      // 192.168.0.0/16 also overlaps the node network: the Cilium reason comes first all the same.
      for (const extra of [[], ['--ipam', 'node'], ['--ipam', 'calico']]) {
        const r = await run(['plan', '--pod-cidr', '192.168.0.0/16', ...extra, '-f', file]);
        assert.equal(r.code, 2, r.err);
        assert.equal(r.out, '');
        assert.match(r.err, /^error: moving the Pod CIDR is refused: Cilium cluster-pool IPAM [^\n]*\n$/);
      }
      writeFileSync(file, objects({ ipam: 'kubernetes' }));
      const k = await run(['plan', '--pod-cidr', '172.16.0.0/16', '-f', file]);
      assert.equal(k.code, 0, k.err);
      assert.match(k.out, /node podCIDRs/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('combined: pod restarts after the Services moved and before the Service restart gate; cleanups, then both verifications', () => {
    const p: MigrationPlan = buildMigrationPlan(calicoSnap({ services: [svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10', { selector: { 'k8s-app': 'kube-dns' } }), svc('web', 'web', '10.96.3.3')] }), {
      service: { target: '10.100.0.0/16' }, pod: { target: '172.16.0.0/16' },
    });
    const order = ids(p);
    const at = (id: string) => { const i = order.indexOf(id); assert.ok(i >= 0, `${id} in ${order.join(',')}`); return i; };
    assert.ok(at('move-kubernetes') < at('create-ippool'));
    assert.ok(at('kubelet-cluster-dns') < at('restart-pods'));
    assert.ok(at('restart-pods') < at('restart-workloads'));
    assert.ok(at('restart-workloads') < at('remove-bridges'));
    // one confirmation, the Pod part's (the Service part's restarts find every pod restarted by then)
    assert.equal(order.filter((id) => id === 'confirm-pod-disruption').length, 1);
    assert.equal(new Set(order).size, order.length, 'step ids are unique');
    assert.equal(p.steps[at('restart-workloads')]!.kind, 'restart-workloads');
    assert.ok(at('finalize-servicecidrs') < at('delete-ippools'));
    assert.ok(at('pod-cidr-config') < at('verify'));
    assert.equal(order[order.length - 1], 'verify-pods');
    assert.ok(p.spec.serviceCIDR && p.spec.podCIDR);
    assert.deepEqual(planFromYaml(planToYaml(p)), JSON.parse(JSON.stringify(p)));
  });

  it('combined: each target avoids the other', () => {
    const p = buildMigrationPlan(calicoSnap(), { service: { target: '172.16.0.0/16' }, pod: { target: '172.16.0.0/14' } });
    assert.equal(p.preflight.find((c) => c.id === 'pod-target-conflicts')!.status, 'fail');
    assert.equal(p.preflight.find((c) => c.id === 'target-conflicts')!.status, 'fail');
  });
});

describe('pod plan properties', () => {
  it('covering() contains every input and is the smallest such prefix', () => {
    const v4 = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 8, max: 32 }))
      .map(([a, p]) => parseCidr(`${(a >>> 24) & 255}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/${p}`, { normalize: true }));
    fc.assert(fc.property(fc.array(v4, { minLength: 1, maxLength: 5 }), (cs) => {
      const c = covering(cs);
      assert.ok(cs.every((x) => contains(c, x)));
      if (c.prefix < 32) {
        const tighter = parseCidr(`${formatCidr(c).split('/')[0]}/${c.prefix + 1}`);
        const other = parseCidr(formatCidr({ ...c, prefix: c.prefix + 1, network: c.network | (1n << BigInt(32 - c.prefix - 1)) }));
        assert.ok(!cs.every((x) => contains(tighter, x)) && !cs.every((x) => contains(other, x)));
      }
    }));
  });

  it('node podCIDRs are distinct, inside NEW, and of the node mask, for any node count that fits', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 20, max: 24 }), (n, mask) => {
      const nodes = Array.from({ length: n }, (_, i) => node(`node-${String(i).padStart(3, '0')}`, `10.244.${i}.0/24`, `192.168.1.${i + 2}`));
      const p = buildMigrationPlan(nodeSnap({ nodes }), { pod: { target: '172.16.0.0/12', nodeMaskSize: mask, headroom: 1 } });
      const assigned = p.spec.podCIDR!.node!.nodes.map((x) => parseCidr(x.to[0]!));
      assert.equal(assigned.length, n);
      const t = parseCidr('172.16.0.0/12');
      for (let i = 0; i < assigned.length; i++) {
        assert.ok(contains(t, assigned[i]!));
        assert.equal(assigned[i]!.prefix, mask);
        for (let j = i + 1; j < assigned.length; j++) assert.ok(!overlaps(assigned[i]!, assigned[j]!));
      }
    }), { numRuns: 40 });
  });
});
