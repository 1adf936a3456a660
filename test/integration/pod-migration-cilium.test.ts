// Pod CIDR migration on the Cilium multi-pool path end to end, against the real cilium-operator (v1.15.19, built
// from its Go module by `npm run testbed -- build-cilium`) and the testbed control plane. The test plays the Cilium
// agents (test/testbed/cilium-agents.ts): CiliumNodes asking for the default pool, pods given addresses from the
// CIDRs the operator allocated to their node. kube-renumber runs under the shipped least-privilege roles; a watcher
// follows every PodDisruptionBudget. Skipped (with the reason) only when the operator is not built.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CiliumAgents } from '../testbed/cilium-agents.ts';
import { CILIUM_VERSION, ciliumOperatorPath } from '../testbed/cilium-build.ts';
import { freePorts, Proc, type Testbed } from '../testbed/cluster.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { watchPDBs, type PDBWatcher } from '../testbed/pdb-watch.ts';
import { run } from '../unit/run-cli.ts';
import { activePodNetworkPods, assertAllPodsIn, assertWorkloadsReady, inRange, migrateKubeconfig } from './pod-helpers.ts';

install();

const operator = ciliumOperatorPath();
const OLD = '10.10.0.0/16';
const NEW = '10.20.0.0/16';
const NS = 'shop';
const POOLS = '/apis/cilium.io/v2alpha1/ciliumpodippools';
const CN = '/apis/cilium.io/v2/ciliumnodes';

async function startOperator(tb: Testbed): Promise<Proc> {
  const [api, gops] = await freePorts(2);
  return new Proc('cilium-operator', join(tb.binDir, 'tbsup'), operator!, [
    `--k8s-kubeconfig-path=${tb.kubeconfigPath}`, '--k8s-namespace=kube-system', '--cilium-pod-namespace=kube-system',
    '--identity-allocation-mode=crd', '--enable-ipv4=true', '--enable-ipv6=false',
    `--operator-api-serve-addr=127.0.0.1:${api}`, `--gops-port=${gops}`, '--enable-metrics=false',
    // no agents run: nothing may remove CiliumNodes, taint or restart pods behind the test's back
    '--nodes-gc-interval=0', '--unmanaged-pod-watcher-interval=0', '--remove-cilium-node-taints=false', '--set-cilium-is-up-condition=false',
    '--ipam=multi-pool',
  ], tb.logPath('cilium-operator'), 5);
}

function workloads(): unknown[] {
  const labels = (app: string) => ({ matchLabels: { app } });
  const tpl = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: NS }, spec: { replicas: 6, selector: labels('web'), template: tpl('web') } },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: NS }, spec: { minAvailable: 5, selector: labels('web') } },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: NS }, spec: { replicas: 2, serviceName: 'db', selector: labels('db'), template: tpl('db') } },
    { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'agent', namespace: NS }, spec: { selector: labels('agent'), template: tpl('agent') } },
  ];
}

if (!operator) {
  test(`Pod CIDR migration, Cilium multi-pool (cilium-operator ${CILIUM_VERSION})`, { skip: `cilium-operator-generic ${CILIUM_VERSION} is not built; \`npm run testbed -- build-cilium\` builds it` }, () => {});
} else {
  describe(`Pod CIDR migration, Cilium multi-pool, real cilium-operator ${CILIUM_VERSION}, least privilege`, () => {
    const tb = useTestbed({ nodes: 3, calicoCRDs: false, podIPAM: 'cilium' });
    const dir = mkdtempSync(join(tmpdir(), 'kr-pod-cilium-'));
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');
    let op: Proc | undefined;
    let agents: CiliumAgents | undefined;
    let watcher: PDBWatcher | undefined;
    let kc = '';
    let before0: any[] = [];
    const common = () => ['--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s'];
    before(async () => {
      op = await startOperator(tb);
      await eventually('the operator\'s CRDs', async () => {
        for (const n of ['ciliumnodes.cilium.io', 'ciliumpodippools.cilium.io']) {
          const crd = await tb.client.getOrUndefined(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`);
          if (!(crd?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True')) {
            if (!op!.running()) throw new Error(`cilium-operator exited ${op!.exitCode}\n${op!.logTail(40)}`);
            return false;
          }
        }
        return true;
      }, 180_000, 500);
    }, { timeout: 240_000 });
    after(async () => { await watcher?.stop(); await agents?.stop(); await op?.stop(); });

    test('the cluster: multi-pool, pool default in OLD, every pod with an address from its node\'s CIDR', { timeout: 300_000 }, async () => {
      await tb.client.post('/api/v1/namespaces/kube-system/configmaps', {
        apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cilium-config', namespace: 'kube-system' },
        data: { ipam: 'multi-pool', 'routing-mode': 'native', 'ipv4-native-routing-cidr': OLD, 'enable-ipv4-masquerade': 'true', 'auto-create-cilium-pod-ip-pools': `default=ipv4-cidrs:${OLD};ipv4-mask-size:24` },
      });
      await tb.client.post(POOLS, { apiVersion: 'cilium.io/v2alpha1', kind: 'CiliumPodIPPool', metadata: { name: 'default' }, spec: { ipv4: { cidrs: [OLD], maskSize: 24 } } });
      agents = new CiliumAgents(tb.client);
      agents.start();
      for (const o of workloads()) await tb.client.create(o as never);
      before0 = await eventually('every pod-network pod Running with an address', async () => {
        const pods = await activePodNetworkPods(tb);
        return pods.length >= 11 && pods.every((p: any) => p.status?.phase === 'Running' && p.status?.podIP) ? pods : undefined;
      }, 180_000, 500);
      assert.ok(before0.every((p: any) => inRange(OLD, p.status.podIP)), 'every pod in OLD');
      const cns = (await tb.client.list(CN)).items;
      assert.equal(cns.length, 3);
      for (const cn of cns) assert.ok((cn.spec.ipam.pools.allocated ?? []).some((a: any) => a.pool === 'default' && a.cidrs?.length === 1), `${cn.metadata.name} has a CIDR of pool default`);
      kc = await migrateKubeconfig(tb);
    });

    test('plan --pod-cidr: the multi-pool path, valid YAML, the steps in order', async () => {
      const r = await run(['plan', '--kubeconfig', kc, '--pod-cidr', NEW, '-o', 'yaml']);
      assert.ok(r.code === 0 || r.code === 1, r.err);
      assert.doesNotMatch(r.err, /pod-target|pod-ipam|pod-old-pools|pod-cilium-config/, 'no failed pod pre-flight');
      writeFileSync(planPath, r.out);
      assert.match(r.out, /ipam: cilium-multi-pool/);
      const order = ['create-ciliumpodippool', 'cilium-config-move', 'restart-pods', 'delete-ciliumpodippool', 'cilium-config-final', 'pod-cidr-config', 'verify-pods'];
      const at = order.map((id) => r.out.indexOf(`id: ${id}\n`));
      assert.ok(at.every((x) => x > 0), `every step present: ${order.filter((_, i) => at[i]! < 0).join(', ')}`);
      assert.deepEqual([...at].sort((a, b) => a - b), at, 'steps in order');
    });

    test('apply stops before any change while a namespace chooses its pool by annotation', { timeout: 120_000 }, async () => {
      const cfg0 = (await tb.client.get('/api/v1/namespaces/kube-system/configmaps/cilium-config')).data;
      await tb.client.mergePatch(`/api/v1/namespaces/${NS}`, { metadata: { annotations: { 'ipam.cilium.io/ip-pool': 'default' } } });
      const r = await run(['apply', planPath, '--yes', '--kubeconfig', kc, '--state-dir', `${stateDir}-refused`, '--timeout', '120s']);
      assert.notEqual(r.code, 0);
      assert.match(r.err, /choose their CiliumPodIPPool by annotation .*namespace shop.*nothing was changed/);
      assert.deepEqual((await tb.client.list(POOLS)).items.map((p: any) => p.metadata.name), ['default'], 'no pool created');
      assert.deepEqual((await tb.client.get('/api/v1/namespaces/kube-system/configmaps/cilium-config')).data, cfg0, 'cilium-config unchanged');
      await tb.client.mergePatch(`/api/v1/namespaces/${NS}`, { metadata: { annotations: { 'ipam.cilium.io/ip-pool': null } } });
    });

    test('apply: every workload restarted into the new pool, no PDB violated, stops at the config gate', { timeout: 600_000 }, async (t) => {
      watcher = watchPDBs(tb);
      await watcher.ready;
      const r = await run(['apply', planPath, '--yes', ...common()]);
      t.diagnostic(r.err.split('\n').filter((l) => /step|restarted|warning|gate/.test(l)).slice(0, 40).join('\n'));
      assert.equal(r.code, 7, r.err);
      assert.match(r.err, /stopped at gate pod-cidr-config/);
      await assertAllPodsIn(tb, NEW, OLD);
      assert.equal(await tb.client.getOrUndefined(`${POOLS}/default`), undefined, 'the old pool is deleted');
    });

    test('resume finishes; verify passes; nothing lost', { timeout: 300_000 }, async (t) => {
      const r = await run(['resume', planPath, '--yes', '--ack-gate', 'pod-cidr-config', ...common()]);
      assert.equal(r.code, 0, r.err);
      const res = await watcher!.stop();
      watcher = undefined;
      assert.ok(res.observations >= 1, `watched ${res.observations} PDB states`);
      assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
      const n = await assertAllPodsIn(tb, NEW, OLD);
      assert.equal(n, before0.length, `${n} pods now, ${before0.length} before`);
      t.diagnostic(`${n} pod-network pods before and after`);
      await assertWorkloadsReady(tb);
      const pools = (await tb.client.list(POOLS)).items;
      assert.deepEqual(pools.map((p: any) => p.spec.ipv4.cidrs), [[NEW]], 'only the new pool is left');
      for (const cn of (await tb.client.list(CN)).items) {
        const alloc = cn.spec.ipam.pools.allocated ?? [];
        assert.ok(alloc.every((a: any) => a.pool !== 'default'), `${cn.metadata.name} lists no old pool`);
        assert.ok(alloc.flatMap((a: any) => a.cidrs ?? []).every((c: string) => inRange(NEW, c.split('/')[0]!)), `${cn.metadata.name}'s CIDRs in NEW`);
      }
      const cfg = (await tb.client.get('/api/v1/namespaces/kube-system/configmaps/cilium-config')).data ?? {};
      assert.equal(cfg['ipv4-native-routing-cidr'], NEW);
      assert.equal(cfg['ipam-default-ip-pool'], pools[0].metadata.name);
      assert.match(cfg['auto-create-cilium-pod-ip-pools'], new RegExp(`^${pools[0].metadata.name}=ipv4-cidrs:${NEW.replace(/[./]/g, '\\$&')};ipv4-mask-size:24$`));
      assert.deepEqual(agents!.errors, [], 'the agents met no error');
      assert.ok(op!.running(), 'the operator is still running');
    });

    test('rollback: cilium-config and the old pool come back from the backups; the new pool, still used, is kept with the reason', { timeout: 300_000 }, async (t) => {
      const r = await run(['rollback', planPath, ...common()]);
      t.diagnostic(`rollback exit ${r.code}: ${r.err.split('\n').filter((l) => /error|undone|fail/i.test(l)).slice(0, 6).join(' | ')}`);
      assert.notEqual(r.code, 0, 'the new pool cannot be deleted while pods use it');
      assert.match(r.err + r.out, /use pool kube-renumber-10-20-0-0-16 .*move them back first/);
      const old = await tb.client.getOrUndefined(`${POOLS}/default`);
      assert.deepEqual(old?.spec?.ipv4, { cidrs: [OLD], maskSize: 24 }, 'the old pool is back');
      const cfg = (await tb.client.get('/api/v1/namespaces/kube-system/configmaps/cilium-config')).data ?? {};
      assert.equal(cfg['ipv4-native-routing-cidr'], OLD);
      assert.equal(cfg['ipam-default-ip-pool'], undefined, 'the key set by the move is removed again');
      assert.equal(cfg['auto-create-cilium-pod-ip-pools'], `default=ipv4-cidrs:${OLD};ipv4-mask-size:24`);
      assert.ok(await tb.client.getOrUndefined(`${POOLS}/kube-renumber-10-20-0-0-16`), 'the new pool, still used, stays');
    });
  });
}
