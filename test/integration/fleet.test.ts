// A fleet end to end on three real control planes built alike: the same Service range and overlapping Pod
// ranges (Calico), both inside ranges the fleet must avoid. One fleet plan gives each cluster ranges of its own;
// one fleet run (a canary, then a wave of two in parallel, under the shipped least-privilege roles) migrates all
// three through their gates; a failure in one cluster stops the other at a step boundary and the next run resumes
// both; each passes verify with every Service and workload still there.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { assertAllPodsIn, assertWorkloadsReady, getJSON, inRange, grantRecreate, migrateKubeconfig, ROOT } from './pod-helpers.ts';
import { formatIP, ipFrom, overlaps, parseCidr } from '../../src/net/index.ts';

install();

const SVC = '10.96.0.0/16';
const PODS = ['10.244.0.0/16', '10.244.0.0/16', '10.244.0.0/17'];
const NAMES = ['eu-1', 'us-1', 'ap-1'];
const populate = { namespaces: 1, deployments: 1, replicas: 1, services: 3 };

describe('fleet: three clusters built alike get ranges of their own and migrate in one run', () => {
  const tbs = PODS.map((podCIDR) => useTestbed({ serviceCIDR: SVC, podCIDR, nodes: 2, podIPAM: 'calico', populate }));
  const dir = mkdtempSync(join(tmpdir(), 'kr-fleet-'));
  const out = join(dir, 'plans');
  const kcs: string[] = [];
  const before: Array<Map<string, any>> = [];
  let index: any;
  const started = Date.now();

  const fleetFile = (extra: (i: number) => object = () => ({})) => {
    const doc = {
      apiVersion: 'kube-renumber.io/v1', kind: 'Fleet',
      avoid: [{ cidr: '10.96.0.0/12', reason: 'the mesh routes it to every cluster' }, { cidr: '10.244.0.0/14', reason: 'on-premises' }],
      canary: NAMES[0],
      clusters: NAMES.map((name, i) => ({ name, kubeconfig: kcs[i], ...extra(i) })),
    };
    const p = join(dir, `fleet-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(p, JSON.stringify(doc));
    return p;
  };
  const services = async (i: number) => new Map<string, any>((await getJSON(tbs[i]!, ['get', 'services', '-A'])).items.map((s: any) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));

  test('fleet plan: distinct ranges clear of the avoided ones; the live certificate check names what to fix', { timeout: 300_000 }, async () => {
    for (const [i, tb] of tbs.entries()) {
      kcs.push(await migrateKubeconfig(tb));
      before.push(await services(i));
    }
    const first = await run(['plan', '--fleet', fleetFile(), '--output-directory', join(dir, 'first')]);
    // read live, the serving certificates lack the new ranges' first IPs: plans written, exit 1
    assert.equal(first.code, 1, first.err);
    assert.match(first.err, /pre-flight check\(s\) failed in eu-1 \(apiserver-cert-san\)/);
    const firstIndex = JSON.parse(readFileSync(join(dir, 'first', 'summary.json'), 'utf8'));
    // the operator reissues the certificates with the new first IPs (asserted here, as with plan --apiserver-cert-san)
    const sans = (i: number) => ({ apiserverCertSANs: ['10.96.0.1', formatIP(ipFrom(4, parseCidr(firstIndex.clusters[i].service.to).network + 1n))] });
    const r = await run(['plan', '--fleet', fleetFile(sans), '--output-directory', out, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    index = JSON.parse(r.out);
    assert.deepEqual(index.clusters.map((c: any) => [c.service.to, c.pod.to]), firstIndex.clusters.map((c: any) => [c.service.to, c.pod.to]), 'the same assignment again');
    const ranges = index.clusters.flatMap((c: any) => [c.service.to, c.pod.to]);
    for (const [i, a] of ranges.entries()) {
      for (const b of ranges.slice(i + 1)) assert.ok(!overlaps(parseCidr(a), parseCidr(b)), `${a} / ${b}`);
      for (const avoided of ['10.96.0.0/12', '10.244.0.0/14', '100.64.0.0/10']) assert.ok(!overlaps(parseCidr(a), parseCidr(avoided)), `${a} clear of ${avoided}`);
    }
    for (const c of index.clusters) {
      assert.equal(c.plan, `${c.name}.yaml`);
      await grantRecreate(tbs[NAMES.indexOf(c.name)]!, readFileSync(join(out, c.plan), 'utf8'));
      assert.equal(c.service.moved && c.pod.moved, true, `${c.name} moves both`);
      const v = await run(['verify', join(out, c.plan), '--kubeconfig', kcs[NAMES.indexOf(c.name)]!, '--state-dir', join(dir, 'unused', c.name)]);
      assert.equal(v.code, 6, 'not in the end state before the run');
    }
    assert.equal(statSync(out).mode & 0o777, 0o700);
  });

  test('fleet run: the canary first, then the wave of two; resumed after each gate and after a failure that stopped the wave', { timeout: 1_200_000 }, async () => {
    const acks = ['--ack-gate', 'kubelet-cluster-dns', '--ack-gate', 'pod-cidr-config'];
    const common = ['--fleet', out, '--yes', '--parallel-clusters', '2', '--timeout', '120s', '--propagation-delay', '0s', ...acks];
    let r = await run(['apply', ...common]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /\[eu-1\] stopped at gate restart-apiservers/);
    assert.doesNotMatch(r.err, /\[us-1\]|\[ap-1\]/, 'no other cluster starts before the canary completes');
    let st = await run(['status', '--fleet', out, '-o', 'json']);
    assert.deepEqual(JSON.parse(st.out).clusters.map((c: any) => c.state), ['waiting at gate', 'not started', 'not started']);
    await tbs[0]!.restartApiserver({ serviceCIDR: index.clusters[0].service.to });
    r = await run(['apply', ...common]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /\[us-1\] stopped at gate restart-apiservers/);
    assert.match(r.err, /\[ap-1\] stopped at gate restart-apiservers/);
    st = await run(['status', '--fleet', out, '-o', 'json']);
    assert.deepEqual(JSON.parse(st.out).clusters.map((c: any) => c.state), ['completed', 'waiting at gate', 'waiting at gate']);
    await Promise.all([1, 2].map((i) => tbs[i]!.restartApiserver({ serviceCIDR: index.clusters[i].service.to })));
    // ap-1 loses its read rights: its run is refused before its first write (a read it needs is forbidden:
    // exit 5), and us-1 stops before its next step
    // (both ClusterRoles bound to the account read namespaces: the Pod one for the Cilium multi-pool path)
    const crb = await tbs[2]!.kubectl(['delete', 'clusterrolebinding', 'kube-renumber-migrate-read', 'kube-renumber-migrate-pods']);
    assert.equal(crb.code, 0, crb.stderr);
    r = await run(['resume', ...common]);
    assert.equal(r.code, 5, r.err);
    assert.match(r.err, /\[ap-1\] error: not allowed to \w+ \w+( as user "[^"]+")? \(403 Forbidden\)/);
    assert.match(r.err, /\[us-1\] stopped before [\w-]+: cluster ap-1 of the fleet failed \(exit 5\)/);
    st = await run(['status', '--fleet', out, '-o', 'json']);
    const us1 = JSON.parse(st.out).clusters[1];
    assert.equal(us1.state, 'stopped', st.out);
    assert.ok(us1.done < us1.steps, `us-1 stopped part way: ${us1.done}/${us1.steps}`);
    // put the rights back; the fleet run resumes both from their journals
    const back = await tbs[2]!.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac-migrate.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate-pods.yaml')]);
    assert.equal(back.code, 0, back.stderr);
    r = await run(['resume', ...common]);
    assert.equal(r.code, 0, r.err);
    st = await run(['status', '--fleet', out]);
    assert.equal(st.code, 0);
    assert.equal(st.out.match(/completed/g)?.length, 3, st.out);
    // each cluster kept its own state directory, 0700
    for (const n of NAMES) assert.equal(statSync(join(out, 'state', n)).mode & 0o777, 0o700);
  });

  test('each cluster passes verify; every Service and workload is still there, in its new ranges', { timeout: 300_000 }, async () => {
    for (const [i, c] of index.clusters.entries()) {
      const v = await run(['verify', join(out, c.plan), '--kubeconfig', kcs[i]!, '--state-dir', join(out, 'state', c.name)]);
      assert.equal(v.code, 0, `${c.name}: ${v.err}`);
      await assertAllPodsIn(tbs[i]!, c.pod.to, PODS[i]!);
      await assertWorkloadsReady(tbs[i]!);
      await assertCalicoIpamClean(tbs[i]!, [PODS[i]!]);
      const after = await services(i);
      assert.deepEqual([...after.keys()].filter((k) => !k.startsWith('kube-renumber')).sort(), [...before[i]!.keys()].sort(), `${c.name}: the same Services`);
      for (const [k, s] of after) {
        // LoadBalancer Services keep their ClusterIP (in a ServiceCIDR kept for them); the others moved
        if (s.spec.type === 'LoadBalancer') assert.equal(s.spec.clusterIP, before[i]!.get(k).spec.clusterIP, `${c.name} ${k} kept`);
        else if (s.spec.clusterIP && s.spec.clusterIP !== 'None') assert.ok(inRange(c.service.to, s.spec.clusterIP), `${c.name} ${k} ${s.spec.clusterIP}`);
      }
    }
    process.stderr.write(`fleet test: ${((Date.now() - started) / 1000).toFixed(1)} s, the three control planes started included\n`);
  });
});
