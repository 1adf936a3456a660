// The migration paths, each end to end on the real control plane of one Kubernetes version, playing every gate the
// plan writes for that version. `npm run matrix` runs them on every version of the matrix (test/matrix/paths.test.ts);
// test/integration/seed-000.test.ts runs the Service path in `npm test` on the default version, and in `npm run test:full`
// on the oldest (OLDEST_VERSION, 1.29), which serves ServiceCIDR only as networking.k8s.io/v1alpha1 behind the
// MultiCIDRServiceAllocator gate.
//
// Each scenario is one describe() on its own testbed: plan, apply, the gates played as an operator would (the
// testbed restarts its apiserver and controller manager with the flags the gate names), verify; then a second run
// stopped at a gate and rolled back.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { serviceCIDRApiOf } from '../testbed/cluster.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { watchPDBs, type PDBWatcher } from '../testbed/pdb-watch.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { restartAllWorkloads, servicesByKey } from '../integration/helpers.ts';
import { assertAllPodsIn, assertWorkloadsReady, getJSON, grantRecreate, inRange, migrateKubeconfig, ROOT } from '../integration/pod-helpers.ts';

/** The offset of an IPv4 address inside an aligned range (its host part), as a number. */
function offsetIn(cidr: string, ip: string): number {
  const n = (a: string) => a.split('.').reduce((x, o) => x * 256 + Number(o), 0);
  return n(ip) - n(cidr.split('/')[0]!);
}

function nthIP(cidr: string, k: number): string {
  const base = cidr.split('/')[0]!.split('.').reduce((x, o) => x * 256 + Number(o), 0) + k;
  return [24, 16, 8, 0].map((s) => Math.floor(base / 2 ** s) % 256).join('.');
}

/** The --feature-gates value the plan's restart-apiservers gate writes in its patches (undefined: none). */
function gateFeatureGates(plan: any): string | undefined {
  const gate = (plan?.steps ?? []).find((x: any) => x.id === 'restart-apiservers');
  for (const p of gate?.gate?.patches ?? []) {
    const m = /--feature-gates=(\S+)/.exec(String(p.after ?? ''));
    if (m) return m[1];
  }
  return undefined;
}

export interface ServiceScenario {
  /** The range the cluster starts on, the one the first run moves to, and the one the second (rolled back) run aims at. */
  old: string;
  next: string;
  second: string;
  /** Fixture size */
  services?: number;
}

/**
 * The Service path in place: on 1.29–1.32 the testbed starts without the ServiceCIDR API, as such a cluster runs by
 * default, and the plan must open with the `enable-servicecidr-api` gate naming the gate and the runtime-config of
 * that version's API; the test plays it (apiservers, then kube-controller-manager, restarted with those flags) and
 * the run goes on by itself. Then the apiserver gate, the kubelet gate and the workload restarts; verify; a second
 * run to another range stopped at the apiserver gate and rolled back.
 */
export function serviceScenario(version: string, s: ServiceScenario): void {
  const api = serviceCIDRApiOf(version);
  describe(`Service path, in place, on ${version} (ServiceCIDR ${api ? `networking.k8s.io/${api.version}${api.gated ? ' behind its gate' : ''}` : 'none'})`, () => {
    const tb = useTestbed({
      version, serviceCIDR: s.old, podCIDR: '10.244.0.0/20', nodes: 2, serviceCIDRApi: 'off', calicoCRDs: false,
      populate: { namespaces: 2, deployments: 1, replicas: 1, services: s.services ?? 20 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'kr-matrix-svc-'));
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');
    const common = (sd = stateDir) => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', sd, '--timeout', '90s', '--propagation-delay', '0s'];
    const sans = (from: string, to: string) => ['--apiserver-cert-san', nthIP(from, 1), '--apiserver-cert-san', nthIP(to, 1)];
    let before: any[] = [];

    test('plan: the gates this version needs', async () => {
      before = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
      const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', s.next, '--strategy', 'in-place', ...sans(s.old, s.next), '-o', 'yaml']);
      assert.ok(r.code === 0 || r.code === 1, r.err + r.out.slice(0, 2000));
      writeFileSync(planPath, r.out);
      const plan = yaml.load(r.out) as any;
      const ids = plan.steps.map((x: any) => x.id);
      assert.ok(api, `${version} serves a ServiceCIDR API`);
      if (api.gated) {
        assert.ok(ids.includes('enable-servicecidr-api'), `the plan opens the API: ${ids.join(',')}`);
        assert.equal(plan.spec.serviceCIDR.apiVersion, `networking.k8s.io/${api.version}`);
        assert.match(r.out, /MultiCIDRServiceAllocator/);
        assert.match(r.out, new RegExp(`networking\\.k8s\\.io/${api.version}=true`));
      } else {
        assert.ok(!ids.includes('enable-servicecidr-api'), `no API gate on ${version}`);
      }
      // 1.31–1.33 mirror ClusterIP allocations into the legacy bitmap unless DisableAllocatorDualWrite is on
      // (src/plan/allocator-dual-write.ts): the apiserver gate turns it on there, and nowhere else
      const minor = Number(version.split('.')[1]);
      const gates = gateFeatureGates(plan);
      if (minor >= 31 && minor <= 33) assert.match(gates ?? '', /(^|,)DisableAllocatorDualWrite=true(,|$)/, `restart-apiservers sets the gate on ${version}`);
      else assert.doesNotMatch(gates ?? '', /DisableAllocatorDualWrite/, `no DisableAllocatorDualWrite on ${version}`);
      if (minor >= 31 && minor <= 32) assert.match(gates ?? '', /(^|,)MultiCIDRServiceAllocator=true(,|$)/, 'the API gate kept');
    });

    if (api?.gated) {
      test('apply stops at enable-servicecidr-api; after the flags are set, resume goes on by itself', async () => {
        const a = await run(['apply', planPath, '--yes', ...common()]);
        assert.equal(a.code, 7, a.err);
        assert.match(a.err, /stopped at gate enable-servicecidr-api/);
        const untouched = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
        assert.deepEqual(untouched.map((x: any) => x.spec.clusterIP).sort(), before.map((x: any) => x.spec.clusterIP).sort(), 'nothing moved before the API is on');
        await tb.enableServiceCIDRApi();
        const sc = JSON.parse((await tb.kubectl(['get', `servicecidrs.${api.version}.networking.k8s.io`, 'kubernetes', '-o', 'json'])).stdout);
        assert.deepEqual(sc.spec.cidrs, [s.old]);
      });
    }

    test('apply moves every Service and stops at the apiserver gate', async () => {
      const r = await run([api?.gated ? 'resume' : 'apply', planPath, '--yes', ...common()]);
      assert.equal(r.code, 7, r.err.slice(-3000));
      assert.match(r.err, /stopped at gate restart-apiservers/);
      const dns = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
      assert.equal(dns.spec.clusterIP, nthIP(s.next, 10), 'kube-dns moved in place to the 10th address');
    });

    test('the apiserver on the new range, the kubelet gate, the workloads restarted: the run ends', async () => {
      // the flags the gate's patches name, as an operator sets them
      const featureGates = gateFeatureGates(yaml.load(readFileSync(planPath, 'utf8')));
      await tb.restartApiserver({ serviceCIDR: s.next, ...(featureGates !== undefined ? { featureGates } : {}) });
      let r = await run(['resume', planPath, '--yes', ...common()]);
      assert.equal(r.code, 7, r.err);
      const ack: string[] = [];
      if (/stopped at gate restart-apiservers/.test(r.err)) {
        // nothing in the API shows the flag before 1.33 (no apiserver pods here, no Inconsistent event): the operator acks
        assert.ok(api?.gated, `on ${version} the apiserver gate passes by itself once the apiserver runs with the new range:\n${r.err.slice(-2000)}`);
        assert.match(r.err, /resume with --ack-gate restart-apiservers/);
        ack.push('--ack-gate', 'restart-apiservers');
        r = await run(['resume', planPath, '--yes', ...ack, ...common()]);
        assert.equal(r.code, 7, r.err);
      }
      const k = JSON.parse((await tb.kubectl(['get', 'svc', 'kubernetes', '-o', 'json'])).stdout);
      assert.equal(k.spec.clusterIP, nthIP(s.next, 1), `default/kubernetes on the first new address:\n${r.err.slice(-4000)}`);
      r = await run(['resume', planPath, '--yes', ...ack, '--ack-gate', 'kubelet-cluster-dns', ...common()]);
      if (r.code === 7 && /restart-workloads/.test(r.err)) {
        await restartAllWorkloads(tb);
        r = await run(['resume', planPath, '--yes', ...ack, '--ack-gate', 'kubelet-cluster-dns', ...common()]);
      }
      assert.equal(r.code, 0, r.err);
    });

    test('verify: every Service where the plan puts it, the old range gone', async () => {
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
      const byKey = await servicesByKey(tb);
      for (const b of before) {
        const key = `${b.metadata.namespace}/${b.metadata.name}`;
        const a: any = byKey.get(key);
        assert.ok(a, `${key} exists`);
        if (key === 'default/kubernetes' || b.spec.type === 'ExternalName' || b.spec.clusterIP === 'None' || b.spec.type === 'LoadBalancer') continue;
        assert.equal(a.metadata.uid, b.metadata.uid, `${key} kept its uid`);
        assert.ok(offsetIn(s.next, a.spec.clusterIP) >= 0 && offsetIn(s.next, a.spec.clusterIP) < 2 ** (32 - Number(s.next.split('/')[1])), `${key} at ${a.spec.clusterIP}, in ${s.next}`);
        if (offsetIn(s.old, b.spec.clusterIP) < 2 ** (32 - Number(s.next.split('/')[1])) / 2) {
          assert.equal(offsetIn(s.next, a.spec.clusterIP), offsetIn(s.old, b.spec.clusterIP), `${key} keeps its offset`);
        }
      }
      const resource = api && api.version !== 'v1' ? `servicecidrs.${api.version}.networking.k8s.io` : 'servicecidrs';
      const scs = JSON.parse((await tb.kubectl(['get', resource, '-o', 'json'])).stdout).items;
      assert.deepEqual(scs.find((x: any) => x.metadata.name === 'kubernetes')?.spec.cidrs, [s.next]);
      assert.ok(!scs.some((x: any) => x.spec.cidrs.includes(s.old) && x.metadata.name !== 'kubernetes' && !/kept/.test(x.metadata.name)), 'old range drained');
    });

    test('the kept ranges give out nothing after the run: 200 new Services land in the new range; a kept Service deleted lets its range go', { timeout: 600_000 }, async () => {
      const plan = yaml.load(readFileSync(planPath, 'utf8')) as any;
      const retire = plan.steps.find((x: any) => x.id === 'retire-kept-servicecidrs');
      assert.ok(retire, 'the fixture\'s LoadBalancer Services are kept: the plan retires their ServiceCIDRs');
      const kept: Array<{ name: string; cidrs: string[] }> = retire.serviceCIDRs;
      const resource = api && api.version !== 'v1' ? `servicecidrs.${api.version}.networking.k8s.io` : 'servicecidrs';
      // each is being deleted and, once the controller has seen it, says so: Ready False, reason Terminating
      for (const k of kept) {
        const sc = await eventually(`ServiceCIDR ${k.name} Ready=False/Terminating`, async () => {
          const o = await getJSON(tb, ['get', resource, k.name]);
          const ready = (o.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
          return ready?.status === 'False' && ready?.reason === 'Terminating' ? o : undefined;
        }, 60_000, 500);
        assert.ok(sc.metadata.deletionTimestamp, `${k.name} is being deleted`);
        assert.deepEqual(sc.metadata.finalizers, ['networking.k8s.io/service-cidr-finalizer'], `${k.name} held by its finalizer`);
      }
      const inKept = (ip: string) => kept.some((k) => k.cidrs.some((c) => inRange(c, ip)));
      // the kept Services keep their addresses
      const keptServices = plan.mapping.filter((m: any) => m.action === 'keep' && m.from.some((a: string) => inKept(a)));
      assert.ok(keptServices.length > 0, 'some Service is kept in the old range');
      let byKey = await servicesByKey(tb);
      for (const m of keptServices) assert.deepEqual((byKey.get(`${m.namespace}/${m.name}`) as any)?.spec.clusterIPs, m.from, `${m.namespace}/${m.name} keeps its address`);
      // 200 Services with dynamic ClusterIPs: every one in the new range, none in a kept or old range
      const ns = 'after-the-run';
      const items = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
        ...Array.from({ length: 200 }, (_, i) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: `new-${i}`, namespace: ns }, spec: { ports: [{ port: 80 }] } }))];
      const f = join(dir, 'after-the-run.json');
      writeFileSync(f, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      const c = await tb.kubectl(['create', '-f', f], { timeoutMs: 300_000 });
      assert.equal(c.code, 0, c.stderr);
      const created = (await getJSON(tb, ['get', 'services', '-n', ns])).items;
      assert.equal(created.length, 200);
      const stray = created.filter((x: any) => !inRange(s.next, x.spec.clusterIP) || inRange(s.old, x.spec.clusterIP) || inKept(x.spec.clusterIP));
      assert.deepEqual(stray.map((x: any) => `${x.metadata.name} ${x.spec.clusterIP}`), [], `every new Service in ${s.next}`);
      // an explicit address inside a kept range is refused too
      const used = new Set([...byKey.values()].flatMap((x: any) => x.spec.clusterIPs ?? []));
      const free = kept.flatMap((k) => k.cidrs).flatMap((cidr) => {
        const size = 2 ** (32 - Number(cidr.split('/')[1]));
        return Array.from({ length: Math.max(0, size - 2) }, (_, i) => nthIP(cidr, i + 1)).filter((a) => !used.has(a));
      })[0];
      assert.ok(free, 'a free address inside a kept range');
      writeFileSync(f, JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'explicit', namespace: ns }, spec: { clusterIP: free, ports: [{ port: 80 }] } }));
      const e = await tb.kubectl(['create', '-f', f]);
      assert.notEqual(e.code, 0, `an explicit ClusterIP ${free} inside a kept range being deleted was accepted`);
      process.stderr.write(`# ${version}: explicit ClusterIP ${free} in a kept range refused: ${e.stderr.trim()}\n`);
      // gone before the second run reads the cluster
      assert.equal((await tb.kubectl(['delete', 'services', '--all', '-n', ns], { timeoutMs: 300_000 })).code, 0);
      assert.equal((await tb.kubectl(['delete', 'namespace', ns, '--wait=false'])).code, 0);
      // the kept Services of one kept range deleted: their addresses are released, and the range goes
      const k = kept[0]!;
      const holders = [...byKey.values()].filter((x: any) => (x.spec.clusterIPs ?? []).some((a: string) => a !== 'None' && k.cidrs.some((cidr) => inRange(cidr, a))));
      assert.ok(holders.length > 0, `a Service holds an address in ${k.name}`);
      for (const h of holders) assert.equal((await tb.kubectl(['delete', 'service', '-n', h.metadata.namespace, h.metadata.name])).code, 0);
      const t0 = Date.now();
      await eventually(`ServiceCIDR ${k.name} to finish deleting`, async () => (await tb.kubectl(['get', resource, k.name])).code !== 0, 90_000, 500);
      process.stderr.write(`# ${version}: ${holders.map((h: any) => `${h.metadata.namespace}/${h.metadata.name}`).join(', ')} deleted; ServiceCIDR ${k.name} gone ${Math.round((Date.now() - t0) / 1000)} s later\n`);
      byKey = await servicesByKey(tb);
      for (const m of keptServices.filter((x: any) => !holders.some((h: any) => h.metadata.namespace === x.namespace && h.metadata.name === x.name))) {
        assert.deepEqual((byKey.get(`${m.namespace}/${m.name}`) as any)?.spec.clusterIPs, m.from, `${m.namespace}/${m.name} still at its address`);
      }
    });

    test('a second run, stopped at the apiserver gate, rolls back: every Service at its address again', async () => {
      const planB = join(dir, 'plan-b.yaml');
      const stateB = join(dir, 'state-b');
      const mid = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
      const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', s.second, '--strategy', 'in-place', ...sans(s.next, s.second), '-o', 'yaml']);
      assert.ok(p.code === 0 || p.code === 1, p.err);
      writeFileSync(planB, p.out);
      const a = await run(['apply', planB, '--yes', ...common(stateB)]);
      assert.equal(a.code, 7, a.err);
      assert.match(a.err, /stopped at gate restart-apiservers/);
      const r = await run(['rollback', planB, ...common(stateB)]);
      assert.equal(r.code, 0, r.err + r.out);
      const byKey = await servicesByKey(tb);
      for (const m of mid) {
        const key = `${m.metadata.namespace}/${m.metadata.name}`;
        assert.deepEqual((byKey.get(key) as any)?.spec.clusterIPs, m.spec.clusterIPs, `${key} back at its addresses`);
      }
      assert.equal(byKey.size, mid.length, 'no bridge left');
      const v = await run(['verify', planB, ...common(stateB)]);
      assert.equal(v.code, 6, 'rolled back is not the second plan\'s end state');
    });
  });
}

/** The node-IPAM pod path: kcm stops allocating, nodes drained, deleted, re-registered into NEW in waves; verify. */
export function nodeIpamScenario(version: string): void {
  describe(`Pod path, node IPAM, on ${version}`, () => {
    const OLD = '10.244.0.0/16';
    const NEW = '10.60.0.0/16';
    const tb = useTestbed({ version, serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 6, zones: 2, podIPAM: 'kwok', calicoCRDs: false, serviceCIDRApi: 'on',
      populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
    const dir = mkdtempSync(join(tmpdir(), 'kr-matrix-node-'));
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');
    let watcher: PDBWatcher | undefined;
    after(async () => { await watcher?.stop(); });
    const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '120s'];

    test('plan in waves of 2; apply stops until kcm stops allocating', { timeout: 600_000 }, async () => {
      await populateWorkloads(tb, { namespaces: 1, deploymentsPerNs: 2, replicas: 6, statefulSets: 1, statefulSetReplicas: 3 });
      const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
      const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '2', '-o', 'yaml']);
      assert.ok(r.code === 0 || r.code === 1, r.err);
      writeFileSync(planPath, r.out);
      assert.match(r.out, /ipam: node/);
      const a = await run(['apply', planPath, '--yes', '--allow-hook', ...common()]);
      assert.equal(a.code, 7, a.err);
      assert.match(a.err, /stopped at gate kcm-stop-allocating/);
    });

    test('every node re-registers in NEW, no PDB violated; kcm on NEW; verify', { timeout: 900_000 }, async () => {
      assert.equal((await tb.restartControllerManager({ allocateNodeCIDRs: false })).running, true);
      watcher = watchPDBs(tb);
      await watcher.ready;
      const r = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', ...common()]);
      assert.equal(r.code, 7, r.err);
      assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
      const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
      assert.equal(nodes.length, 6);
      for (const n of nodes) assert.ok(inRange(NEW, n.spec.podCIDR.split('/')[0]), `${n.metadata.name} ${n.spec.podCIDR}`);
      assert.equal((await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: true })).running, true);
      const done = await run(['resume', planPath, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr', ...common()]);
      assert.equal(done.code, 0, done.err);
      const res = await watcher.stop();
      assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');
      await assertAllPodsIn(tb, NEW, OLD);
      await assertWorkloadsReady(tb);
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
    });
  });
}

/** The Calico pod path under the shipped roles: new pool, old disabled, workloads restarted, old pool and blocks gone. */
export function calicoScenario(version: string): void {
  describe(`Pod path, Calico IPAM, on ${version}`, () => {
    const OLD = '10.244.0.0/16';
    const NEW = '10.50.0.0/16';
    const tb = useTestbed({ version, serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 6, podIPAM: 'calico', serviceCIDRApi: 'on',
      populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
    const dir = mkdtempSync(join(tmpdir(), 'kr-matrix-calico-'));
    const planPath = join(dir, 'plan.yaml');
    const stateDir = join(dir, 'state');
    let kc = '';
    let watcher: PDBWatcher | undefined;
    after(async () => { await watcher?.stop(); });
    const common = () => ['--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s'];

    test('plan and apply to the config gate, no PDB violated', { timeout: 900_000 }, async () => {
      await populateWorkloads(tb, { namespaces: 1, deploymentsPerNs: 2, replicas: 6, statefulSets: 1, statefulSetReplicas: 3 });
      kc = await migrateKubeconfig(tb);
      const r = await run(['plan', '--kubeconfig', kc, '--pod-cidr', NEW, '--parallel', '4', '-o', 'yaml']);
      assert.ok(r.code === 0 || r.code === 1, r.err);
      writeFileSync(planPath, r.out);
      assert.match(r.out, /ipam: calico/);
      await grantRecreate(tb, r.out);
      watcher = watchPDBs(tb);
      await watcher.ready;
      const a = await run(['apply', planPath, '--yes', ...common()]);
      assert.equal(a.code, 7, a.err);
      assert.match(a.err, /stopped at gate pod-cidr-config/);
      await assertAllPodsIn(tb, NEW, OLD);
    });

    test('kcm on NEW; resume ends; verify; old pool and its blocks gone', { timeout: 300_000 }, async () => {
      assert.equal((await tb.restartControllerManager({ clusterCIDR: NEW, allocateNodeCIDRs: false })).running, true);
      const r = await run(['resume', planPath, '--yes', '--ack-gate', 'pod-cidr-config', ...common()]);
      assert.equal(r.code, 0, r.err);
      const res = await watcher!.stop();
      assert.deepEqual(res.violations, [], 'no PodDisruptionBudget was ever violated');
      const v = await run(['verify', planPath, ...common()]);
      assert.equal(v.code, 0, v.err);
      await assertWorkloadsReady(tb);
      const pools = (await getJSON(tb, ['get', 'ippools.crd.projectcalico.org'])).items;
      assert.deepEqual(pools.map((p: any) => p.spec.cidr), [NEW]);
      for (const kind of ['ipamblocks', 'blockaffinities']) {
        const left = (await getJSON(tb, ['get', `${kind}.crd.projectcalico.org`])).items.filter((b: any) => inRange(OLD, b.spec.cidr.split('/')[0]));
        assert.equal(left.length, 0, `${kind} left in ${OLD}`);
      }
    });
  });
}
