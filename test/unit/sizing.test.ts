// Ranges sized for the cluster's future: where the most nodes a cluster may reach is read (kOps InstanceGroups,
// cluster-autoscaler flags and status ConfigMap, Cluster API annotations, Karpenter NodePools), the floor every
// suggestion keeps to on every bundled example and platform fixture, --min-prefix, and the pre-flight warnings.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { rangeSize, suggest, suggestFamilies } from '../../src/analyze/suggest.ts';
import { floorPrefix, nodeReach, podNodeMask, POD_FLOOR_NODES, SERVICE_FLOOR_PREFIX } from '../../src/analyze/sizing.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, Snapshot } from '../../src/cluster/types.ts';
import { parseCidr } from '../../src/net/index.ts';
import { buildMigrationPlan } from '../../src/plan/plan.ts';
import { NODE_LIMIT_RESOURCES } from '../../src/cluster/node-limits.ts';
import * as yaml from 'js-yaml';
import { run } from './run-cli.ts';

install();

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const dirs = (p: string) => readdirSync(root(p), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `${p}/${d.name}`);
const CLUSTERS = [...dirs('examples'), ...dirs('test/fixtures/platforms')];
const load = async (p: string) => buildSnapshot(await readInventoryFiles([root(p)]));

function snapshotOf(objects: KubeObject[], configs: KubeObject[] = []): Snapshot {
  return buildSnapshot({ source: { kind: 'file', files: ['test'] }, objects, configs, gaps: [] });
}
const node = (name: string, podCIDR = `10.244.${Number(name.replace(/\D/g, '')) || 0}.0/24`): KubeObject => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: { podCIDR, podCIDRs: [podCIDR] }, status: { addresses: [] },
});
const nodes = (n: number) => Array.from({ length: n }, (_, i) => node(`n${i}`, `10.244.${i}.0/24`));
const ig = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'kops.k8s.io/v1alpha2', kind: 'InstanceGroup', metadata: { name }, spec });
const caPod = (args: string[], name = 'cluster-autoscaler-7d9f-abcde'): KubeObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'kube-system', labels: { app: 'cluster-autoscaler' } },
  spec: { containers: [{ name: 'cluster-autoscaler', image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0', command: ['./cluster-autoscaler', '--cloud-provider=aws', ...args] }] },
  status: { phase: 'Running' },
});
const statusCM = (status: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-autoscaler-status', namespace: 'kube-system' }, data: { status } });
const md = (name: string, max: string | undefined, kind = 'MachineDeployment', owner?: string): KubeObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta1', kind, metadata: {
    name, namespace: 'default', ...(max !== undefined ? { annotations: { 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': max } } : {}),
    ...(owner ? { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'MachineDeployment', name: owner, controller: true, uid: 'u1' }] } : {}),
  }, spec: { clusterName: 'c1', replicas: 1 },
});
const nodePool = (name: string, limits?: Record<string, unknown>): KubeObject => ({ apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name }, spec: { template: { spec: {} }, ...(limits ? { limits } : {}) } });

describe('the most nodes a cluster may reach, read where the cluster says it', () => {
  it('kOps InstanceGroups: maxSize summed over the groups that register nodes (a Bastion does not); minSize when no maxSize', () => {
    const s = snapshotOf(nodes(3), [
      ig('control-plane-a', { role: 'ControlPlane', minSize: 1, maxSize: 1 }),
      ig('nodes-a', { role: 'Node', minSize: 2, maxSize: 40 }),
      ig('nodes-b', { role: 'Node', minSize: 3 }),
      ig('bastions', { role: 'Bastion', minSize: 1, maxSize: 5 }),
    ]);
    const src = s.nodeLimits!.sources.find((x) => x.what === 'kOps InstanceGroups maxSize')!;
    assert.equal(src.max, 1 + 40 + 3);
    assert.deepEqual(src.groups.map((g) => g.name), ['control-plane-a', 'nodes-a', 'nodes-b']);
    assert.match(src.groups[2]!.source, /spec\.minSize/);
    assert.deepEqual(nodeReach(s), { count: 44, from: 'kOps InstanceGroups maxSize', groups: 3 });
  });

  it('cluster-autoscaler --nodes flags, in either spelling, each group once across replicas and the Deployment', () => {
    const dep: KubeObject = {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cluster-autoscaler', namespace: 'kube-system' },
      spec: { template: { spec: { containers: [{ name: 'ca', image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0', command: ['./cluster-autoscaler'], args: ['--nodes=1:10:asg-a', '--nodes', '0:25:asg-b'] }] } } },
    };
    const s = snapshotOf([...nodes(2), caPod(['--nodes=1:10:asg-a', '--nodes', '0:25:asg-b']), caPod(['--nodes=1:10:asg-a'], 'cluster-autoscaler-7d9f-fghij'), dep]);
    const src = s.nodeLimits!.sources.find((x) => x.what === 'cluster-autoscaler --nodes')!;
    assert.equal(src.max, 35);
    assert.deepEqual(src.groups.map((g) => [g.name, g.max]), [['asg-a', 10], ['asg-b', 25]]);
  });

  it('a malformed --nodes value is a warning and not counted; a container that is not cluster-autoscaler is not read', () => {
    const other: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', namespace: 'kube-system' }, spec: { containers: [{ name: 'x', image: 'busybox', command: ['sh', '--nodes=1:99:zz'] }] } };
    const s = snapshotOf([...nodes(1), caPod(['--nodes=ten:twenty:asg']), other]);
    assert.equal(s.nodeLimits, undefined);
    assert.ok(s.warnings.some((w) => /--nodes=ten:twenty:asg is not MIN:MAX:NAME/.test(w)), s.warnings.join('\n'));
  });

  it('the status ConfigMap: structured YAML (cluster-autoscaler 1.30+) and the older text', () => {
    const yaml = [
      'autoscalerStatus: Running',
      'nodeGroups:',
      '- name: https://www.googleapis.com/compute/v1/projects/p/zones/us-east1-b/instanceGroups/gke-c-default-pool-1-grp',
      '  health: {status: Healthy, minSize: 5, maxSize: 11, cloudProviderTarget: 9}',
      '- name: gke-c-gpu-pool-2-grp',
      '  health: {status: Healthy, minSize: 0, maxSize: 4}',
      'time: 2026-07-18 22:01:49.110900936 +0000 UTC',
    ].join('\n');
    const a = snapshotOf([...nodes(3), statusCM(yaml)]);
    assert.deepEqual(nodeReach(a), { count: 15, from: 'cluster-autoscaler status maxSize', groups: 2 });
    const text = [
      'Cluster-autoscaler status at 2018-07-25 22:59:22.661669494 +0000 UTC:',
      'Cluster-wide:',
      '  Health:      Healthy (ready=1 unready=0 notStarted=0 longNotStarted=0 registered=1 longUnregistered=0)',
      'NodeGroups:',
      '  Name:        nodepool1',
      '  Health:      Healthy (ready=1 unready=0 notStarted=0 longNotStarted=0 registered=1 longUnregistered=0 cloudProviderTarget=1 (minSize=1, maxSize=5))',
      '  Name:        nodepool2',
      '  Health:      Healthy (ready=2 unready=0 cloudProviderTarget=2 (minSize=2, maxSize=30))',
    ].join('\n');
    const b = snapshotOf([...nodes(3), statusCM(text)]);
    assert.deepEqual(b.nodeLimits!.sources[0]!.groups.map((g) => [g.name, g.max]), [['nodepool1', 5], ['nodepool2', 30]]);
  });

  it('Cluster API: the max-size annotation; a MachineSet its annotated MachineDeployment owns is not counted twice', () => {
    const s = snapshotOf([...nodes(2), md('md-0', '20'), md('md-0-abc', '20', 'MachineSet', 'md-0'), md('ms-alone', '7', 'MachineSet'), md('md-1', undefined), md('mp-0', '3', 'MachinePool')]);
    const src = s.nodeLimits!.sources[0]!;
    assert.equal(src.max, 30);
    assert.deepEqual(src.groups.map((g) => g.name), ['default/md-0', 'default/ms-alone', 'default/mp-0']);
    const bad = snapshotOf([...nodes(1), md('md-x', 'lots')]);
    assert.equal(bad.nodeLimits, undefined);
    assert.ok(bad.warnings.some((w) => /md-x.*is not a whole number/.test(w)));
  });

  it('Karpenter: spec.limits.nodes counts; a NodePool limited in cpu only is named, never converted', () => {
    const s = snapshotOf([...nodes(2), nodePool('general', { cpu: '1000', nodes: '50' }), nodePool('gpu', { cpu: '64' })]);
    assert.equal(nodeReach(s)!.count, 50);
    assert.match(nodeReach(s)!.from, /some NodePools without one/);
    assert.deepEqual(s.nodeLimits!.notes, ['Karpenter NodePool gpu limits only cpu: no node count (not converted)']);
    const cpuOnly = snapshotOf([...nodes(2), nodePool('gpu', { cpu: '64' })]);
    assert.equal(nodeReach(cpuOnly), undefined);
    assert.equal(cpuOnly.nodeLimits!.notes.length, 1);
  });

  it('inspect shows them under CAPACITY and in -o json (capacity.nodeLimits)', async () => {
    const t = await run(['inspect', '-f', root('examples/kops-tailscale')]);
    assert.match(t.out, /^nodes may reach\s+451: kOps InstanceGroups maxSize \(control-plane-us-east-1a 1, nodes-us-east-1a 150, nodes-us-east-1b 150, nodes-us-east-1c 150\)$/m);
    const j = JSON.parse((await run(['inspect', '-f', root('examples/kops-tailscale'), '-o', 'json'])).out);
    assert.equal(j.capacity.nodeLimits.sources[0].max, 451);
    const none = JSON.parse((await run(['inspect', '-f', root('examples/kubeadm-exhausted'), '-o', 'json'])).out);
    assert.equal(none.capacity.nodeLimits, undefined);
  });

  it('sources are not added to each other: the largest decides', () => {
    const s = snapshotOf([...nodes(2), caPod(['--nodes=1:10:asg-a']), statusCM('nodeGroups:\n- name: asg-a\n  health: {maxSize: 12}\n')], [ig('nodes-a', { role: 'Node', maxSize: 12 })]);
    assert.equal(s.nodeLimits!.sources.length, 3);
    assert.equal(nodeReach(s)!.count, 12);
  });

  it('deploy/rbac.yaml grants get and list on every resource the live read lists for them', () => {
    const rules = (yaml.loadAll(readFileSync(root('deploy/rbac.yaml'), 'utf8')) as any[])
      .filter((d) => d?.kind === 'ClusterRole' && d.metadata.name === 'kube-renumber-read').flatMap((d) => d.rules);
    for (const r of NODE_LIMIT_RESOURCES) {
      const ok = rules.some((x: any) => x.apiGroups.includes(r.group) && x.resources.includes(r.plural) && ['get', 'list'].every((v) => x.verbs.includes(v)));
      assert.ok(ok, `${r.plural}.${r.group}`);
    }
  });

  it('an InstanceGroup with a maxSize that is not a whole number is a bad file (exit 3, one error line)', async () => {
    const r = await run(['suggest', '--for', 'pods', '-f', root('test/fixtures/sizing/bad-instancegroup.yaml')]);
    assert.equal(r.code, 3, r.err);
    assert.match(r.err, /^error: [^\n]*InstanceGroup nodes-a: spec\.maxSize is "lots", not a whole number from 0 to 1000000\n$/);
  });
});

describe('suggest: sized for the future, never below the floor', () => {
  for (const c of CLUSTERS) {
    it(`${c}: pods and Services at least the floor, each saying what it was sized for`, async () => {
      const snap = await load(c);
      for (const what of ['pods', 'services'] as const) {
        for (const s of suggestFamilies(snap, { for: what })) {
          assert.ok(s.cidr, `${c} ${what}: a suggestion`);
          const floor = what === 'services' ? SERVICE_FLOOR_PREFIX[s.family] : floorPrefix('pods', s.family, s.need.nodeMask!);
          assert.ok(parseCidr(s.cidr!).prefix <= floor, `${c} ${what} ${s.cidr} is at least the floor /${floor}`);
          assert.equal(s.sizedFor.what, what === 'pods' ? 'nodes' : 'services');
          assert.ok(s.sizedFor.count >= s.need.count, `${c} ${what}: sized for at least the need`);
          assert.ok(s.sizedFor.from.length > 0);
        }
      }
      const t = await run(['suggest', '--for', 'pods', '-f', root(c), '--no-headers']);
      assert.equal(t.code, 0, t.err);
      assert.match(t.out, /^pods\s+\S+\s+\d+ nodes of \/\d+: /m);
    });
  }

  it('kops-tailscale: pods sized from its InstanceGroups (1 + 3 x 150 = 451 nodes: a /15 of /24s), in the table and in -o json', async () => {
    const snap = await load('examples/kops-tailscale');
    const s = suggest(snap, { for: 'pods' });
    assert.deepEqual(s.sizedFor, { what: 'nodes', count: 451, from: 'kOps InstanceGroups maxSize (4 groups)' });
    assert.equal(s.prefix, 15);
    const j = JSON.parse((await run(['suggest', '--for', 'pods', '-f', root('examples/kops-tailscale'), '-o', 'json'])).out);
    assert.deepEqual(j.sizedFor, s.sizedFor);
    assert.deepEqual(j.families[0].sizedFor, s.sizedFor);
    const t = await run(['suggest', '--for', 'pods', '-f', root('examples/kops-tailscale')]);
    assert.match(t.out, /^FOR\s+CIDR\s+SIZED FOR\s+ALTERNATIVES$/m);
    assert.match(t.out, /451 nodes of \/24: kOps InstanceGroups maxSize \(4 groups\)/);
    // without the InstanceGroups (the dump alone): today's 6 nodes x 2, below the floor: the floor decides
    const dumpOnly = await readInventoryFiles([root('examples/kops-tailscale')]);
    dumpOnly.configs = dumpOnly.configs.filter((o) => o.kind !== 'InstanceGroup');
    const f = suggest(buildSnapshot(dumpOnly), { for: 'pods' });
    assert.equal(f.prefix, 16);
    assert.deepEqual(f.sizedFor, { what: 'nodes', count: POD_FLOOR_NODES, from: 'the floor (--min-prefix to change)', need: { count: 12, from: "today's 6 nodes x headroom 2", prefix: 20 } });
  });

  it('today x headroom wins over an autoscaler maximum below it, and says so', () => {
    const s = snapshotOf([...nodes(40), caPod(['--nodes=1:10:asg-a'])]);
    const r = rangeSize(s, { for: 'pods', minPrefix: 32 });
    assert.equal(r.sizedFor.count, 80);
    assert.match(r.sizedFor.from, /^today's 40 nodes x headroom 2; more than cluster-autoscaler --nodes's 10$/);
    const big = rangeSize(snapshotOf([...nodes(40), caPod(['--nodes=1:1000:asg-a'])]), { for: 'pods' });
    assert.equal(big.sizedFor.count, 1000);
    assert.equal(big.prefix, 24 - 10);
  });

  it('--min-prefix moves the floor; the family width turns it off (the old smallest fit); --nodes still sizes pods', () => {
    const s = snapshotOf(nodes(3));
    assert.equal(rangeSize(s, { for: 'services' }).prefix, 20);
    assert.equal(rangeSize(s, { for: 'services', minPrefix: 24 }).prefix, 24);
    // 1 Service (none: at least 1) x 2 + 2 = 4 addresses: a /30
    assert.equal(rangeSize(s, { for: 'services', minPrefix: 32 }).prefix, 30);
    assert.equal(rangeSize(s, { for: 'pods' }).prefix, 16);
    assert.equal(rangeSize(s, { for: 'pods', minPrefix: 32 }).prefix, 21);
    assert.equal(rangeSize(s, { for: 'pods', nodes: 1000, headroom: 1 }).prefix, 14);
    assert.deepEqual(rangeSize(s, { for: 'pods', nodes: 1000, headroom: 1 }).sizedFor, { what: 'nodes', count: 1000, from: '--nodes 1000 x headroom 1' });
    assert.equal(podNodeMask(s, 4), 24);
    assert.throws(() => rangeSize(s, { for: 'services', minPrefix: 8 }), /floor \/8 is larger than the largest service range/);
    assert.throws(() => rangeSize(s, { for: 'services', minPrefix: 33 }), /--min-prefix 33 is out of range for IPv4/);
  });

  it('CLI: --min-prefix, and its errors (exit 2, one line)', async () => {
    const kops = root('examples/kops-tailscale');
    const j = JSON.parse((await run(['suggest', '--for', 'services', '-f', kops, '--min-prefix', '24', '-o', 'json'])).out);
    assert.equal(j.prefix, 24);
    assert.equal(j.sizedFor.from, 'the floor --min-prefix 24');
    assert.deepEqual(j.sizedFor.need, { count: 18, from: '9 Services with a ClusterIP x headroom 2', prefix: 27 });
    for (const [v, msg] of [['0', /--min-prefix/], ['abc', /--min-prefix/], ['33', /--min-prefix 33 is out of range for IPv4/]] as const) {
      const r = await run(['suggest', '--for', 'services', '-f', kops, '--min-prefix', v]);
      assert.equal(r.code, 2, `${v}: ${r.err}`);
      assert.match(r.err, msg);
      assert.equal(r.err.split('\n').filter(Boolean).length, 1);
    }
  });
});

describe('plan pre-flight: a target below the floor or the most nodes the cluster may reach is a warning', () => {
  it('kops-tailscale: a /24 Service range and a /19 pod range warn, saying how long each lasts; the suggested sizes pass', async () => {
    const snap = await load('examples/kops-tailscale');
    const small = buildMigrationPlan(snap, { service: { target: '10.1.0.0/24' }, pod: { target: '10.2.0.0/19' } });
    const floor = small.preflight.find((c) => c.id === 'target-floor')!;
    assert.equal(floor.status, 'warn');
    assert.equal(floor.message, "10.1.0.0/24 is smaller than the floor for Service ranges (/20): room for 254 Service IPs, 28x today's 9");
    const growth = small.preflight.find((c) => c.id === 'pod-target-growth')!;
    assert.equal(growth.status, 'warn');
    assert.match(growth.message, /^10\.2\.0\.0\/19 holds 32 nodes of \/24 \(room for 32 nodes, 5\.3x today's 6\); the cluster may reach 451 nodes \(kOps InstanceGroups maxSize\): NEW runs out at 32; smaller than the floor for pod ranges \(256 nodes of \/24: a \/16\)$/);
    assert.ok(small.preflight.every((c) => c.status !== 'fail' || !['target-floor', 'pod-target-growth'].includes(c.id)));
    const svc = suggest(snap, { for: 'services' }).cidr!;
    const pods = suggest(snap, { for: 'pods', avoid: [{ cidr: svc, reason: 'the new Service range', from: '--avoid' }] }).cidr!;
    const fine = buildMigrationPlan(snap, { service: { target: svc }, pod: { target: pods } });
    assert.equal(fine.preflight.find((c) => c.id === 'target-floor')!.status, 'pass');
    assert.equal(fine.preflight.find((c) => c.id === 'pod-target-growth')!.status, 'pass', fine.preflight.find((c) => c.id === 'pod-target-growth')!.message);
  });

  it('a pod range above the floor but below the autoscaler maximum warns on the maximum alone', () => {
    const s = snapshotOf([...nodes(3), caPod(['--nodes=1:600:asg-a']), {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kube-controller-manager-m1', namespace: 'kube-system', labels: { component: 'kube-controller-manager', tier: 'control-plane' } },
      spec: { containers: [{ name: 'kube-controller-manager', command: ['kube-controller-manager', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=24', '--allocate-node-cidrs=true'] }] },
    }]);
    const p = buildMigrationPlan(s, { pod: { target: '172.16.0.0/16', ipam: 'node' } });
    const g = p.preflight.find((c) => c.id === 'pod-target-growth')!;
    assert.equal(g.status, 'warn', g.message);
    assert.match(g.message, /the cluster may reach 600 nodes \(cluster-autoscaler --nodes\): NEW runs out at 256$/);
    assert.doesNotMatch(g.message, /floor/);
    const ok = buildMigrationPlan(s, { pod: { target: '172.16.0.0/14', ipam: 'node' } });
    assert.equal(ok.preflight.find((c) => c.id === 'pod-target-growth')!.status, 'pass');
  });
});
