// Service CIDR and Pod CIDR migrations end to end on the testbed labelled as a k3s cluster and as an RKE2 cluster:
// the nodes carry what k3s/RKE2 servers write on them (<program>.io/node-args naming the ranges, the
// instance-type label, k3s's flannel annotations), and a node registering again carries them too. The gates are
// played as the servers would restart: the test reads the config.yaml values the plan's patches give
// (service-cidr; cluster-cidr and kube-controller-manager-arg) and restarts the testbed's real kube-apiserver and
// kube-controller-manager with the flags a k3s/RKE2 server renders from them. Then: every Service and every pod in
// the new range, as many pods as before, verify passes. 4 nodes, moved in waves of 2 by the re-registration hook.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { restartAllWorkloads } from './helpers.ts';
import { activePodNetworkPods, assertAllPodsIn, assertWorkloadsReady, getJSON, inRange, ROOT } from './pod-helpers.ts';

install();

const SVC_OLD = '10.43.0.0/16';
const SVC_NEW = '10.100.0.0/16';
const POD_OLD = '10.42.0.0/16';
const POD_NEW = '10.60.0.0/16';
const SERVER_ARGS = ['--cluster-cidr', POD_OLD, '--service-cidr', SVC_OLD, '--cluster-dns', '10.43.0.10'];

/** What each platform's servers and agents write on their Node objects (sources: docs/platforms.md, the fixtures' SOURCES.md). */
const PLATFORMS = [
  {
    id: 'k3s', title: 'k3s', kubelet: 'v1.34.2+k3s1',
    labels: { 'node.kubernetes.io/instance-type': 'k3s' },
    annotations: (server: boolean) => ({
      'k3s.io/node-args': JSON.stringify(server ? ['server', ...SERVER_ARGS] : ['agent', '--node-label', 'pool=general']),
      'k3s.io/node-config-hash': 'TESTBEDNODECONFIGHASHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA====',
      // k3s's embedded flannel (kube subnet manager) annotates every node it runs on
      'flannel.alpha.coreos.com/backend-type': 'vxlan', 'flannel.alpha.coreos.com/kube-subnet-manager': 'true',
    }),
  },
  {
    id: 'rke2', title: 'RKE2', kubelet: 'v1.34.2+rke2r1',
    labels: { 'node.kubernetes.io/instance-type': 'rke2' },
    annotations: (server: boolean) => ({
      'rke2.io/node-args': JSON.stringify(server ? ['server', ...SERVER_ARGS] : ['agent', '--node-label', 'pool=general']),
      'rke2.io/node-config-hash': 'TESTBEDNODECONFIGHASHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA====',
    }),
  },
] as const;

/** The YAML of a plan patch's `after`, by patch id. */
function patchAfter(plan: any, id: string): Record<string, any> {
  const p = plan.steps.flatMap((s: any) => s.gate?.patches ?? []).find((x: any) => x.id === id);
  assert.ok(p, `patch ${id} in the plan`);
  return (yaml.load(p.after) ?? {}) as Record<string, any>;
}

/** kube-controller-manager-arg entries (comments are YAML comments, so only real entries remain). */
function kcmArgs(after: Record<string, any>): string[] {
  return (after['kube-controller-manager-arg'] ?? []) as string[];
}

for (const pf of PLATFORMS) {
  describe(`${pf.title}: Service and Pod CIDR migrations with the servers' restarts played on the testbed`, () => {
    const tb = useTestbed({ serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodes: 4, podIPAM: 'kwok', calicoCRDs: false, timeoutMs: 180_000, populate: { namespaces: 2, deployments: 1, replicas: 2, services: 6 } });
    const dir = mkdtempSync(join(tmpdir(), `kr-${pf.id}-`));
    const plans = { service: join(dir, 'service.json'), pod: join(dir, 'pod.json') };
    const common = (state: string) => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, state), '--timeout', '120s', '--propagation-delay', '0s'];
    let podCount = 0;

    test(`the testbed shows ${pf.title}'s signs, and a node registering again carries them`, { timeout: 120_000 }, async () => {
      const nodes = (await getJSON(tb, ['get', 'nodes'])).items.map((n: any) => n.metadata.name).sort();
      assert.equal(nodes.length, 4);
      for (const [i, name] of nodes.entries()) {
        const server = i === 0;
        const ann = Object.entries(pf.annotations(server)).map(([k, v]) => `${k}=${v}`);
        const lab = Object.entries({ ...pf.labels, ...(server ? { 'node-role.kubernetes.io/control-plane': 'true' } : {}) }).map(([k, v]) => `${k}=${v}`);
        assert.equal((await tb.kubectl(['annotate', 'node', name, '--overwrite', ...ann])).code, 0);
        assert.equal((await tb.kubectl(['label', 'node', name, '--overwrite', ...lab])).code, 0);
        // the kubelet version suffix the distribution's build carries (kwok keeps nodeInfo once the node is initialized)
        const st = await tb.kubectl(['patch', 'node', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeInfo: { kubeletVersion: pf.kubelet } } })]);
        assert.equal(st.code, 0, st.stderr);
      }
      // the hook registers nodes from this template: as the k3s-agent / rke2-agent would, with the agent's annotations
      const t = JSON.parse(readFileSync(tb.nodeTemplatePath, 'utf8'));
      t.node.metadata.annotations = { ...t.node.metadata.annotations, ...pf.annotations(false) };
      t.node.metadata.labels = { ...t.node.metadata.labels, ...pf.labels };
      writeFileSync(tb.nodeTemplatePath, JSON.stringify(t, null, 2));
      const inspect = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
      assert.ok(inspect.code === 0 || inspect.code === 1, inspect.err);
      const snap = JSON.parse(inspect.out);
      assert.equal(snap.platform.kind, pf.id);
      assert.ok(snap.platform.evidence.some((e: string) => e.includes(`: ${pf.kubelet})`)), snap.platform.evidence.join('\n'));
      const read = (list: any[]) => list.filter((r: any) => r.sources.some((x: string) => x.startsWith(`${pf.id}.io/node-args`))).map((r: any) => r.cidr);
      assert.deepEqual([read(snap.serviceCIDRs), read(snap.podCIDRs)], [[SVC_OLD], [POD_OLD]], 'the ranges read from the server\'s node-args');
      podCount = (await activePodNetworkPods(tb)).length;
      assert.ok(podCount >= 8, `${podCount} pods`);
    });

    test('Service CIDR: patches to config.yaml; the apiserver restarted with its service-cidr; every Service moved, verify passes', { timeout: 600_000 }, async () => {
      const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', SVC_NEW, '--strategy', 'in-place', '--restart-workloads=manual',
        '--apiserver-cert-san', '10.43.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'json']);
      assert.equal(p.code, 0, p.err);
      writeFileSync(plans.service, p.out);
      const plan = JSON.parse(p.out);
      assert.equal(plan.metadata.platform, pf.id);
      const gate = plan.steps.find((s: any) => s.id === 'restart-apiservers');
      assert.deepEqual(gate.gate.patches.map((x: any) => x.target.split(' ')[0]), [`/etc/rancher/${pf.id}/config.yaml`]);
      const after = patchAfter(plan, `${pf.id}-server-config`);
      assert.equal(after['service-cidr'], SVC_NEW);
      assert.equal(after['cluster-dns'], '10.100.0.10');
      assert.deepEqual(after['tls-san'], ['10.43.0.1', '10.100.0.1']);

      const a = await run(['apply', plans.service, '--yes', ...common('svc')]);
      assert.equal(a.code, 7, a.err.slice(-2000));
      assert.match(a.err, /stopped at gate restart-apiservers/);
      // the servers restart with config.yaml's service-cidr: k3s/rke2 render --service-cluster-ip-range from it
      await tb.restartApiserver({ serviceCIDR: after['service-cidr'] });
      let r = await run(['resume', plans.service, '--yes', ...common('svc')]);
      assert.equal(r.code, 7, r.err.slice(-2000));
      assert.match(r.err, /kubelet-cluster-dns/);
      // the agents restart and take clusterDNS from the servers (kwok's kubelets show no configz: acknowledged)
      r = await run(['resume', plans.service, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common('svc')]);
      assert.equal(r.code, 7, r.err.slice(-2000));
      assert.match(r.err, /restart-workloads/);
      await restartAllWorkloads(tb);
      r = await run(['resume', plans.service, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common('svc')]);
      assert.equal(r.code, 0, r.err.slice(-2000));
      const v = await run(['verify', plans.service, ...common('svc')]);
      assert.equal(v.code, 0, v.err);
      // LoadBalancer Services keep their ClusterIP in a kept ServiceCIDR (docs/plan.md); every other one moved
      const svcs = (await getJSON(tb, ['get', 'services', '-A'])).items.filter((s: any) => s.spec.clusterIP && s.spec.clusterIP !== 'None' && s.spec.type !== 'LoadBalancer');
      assert.ok(svcs.length >= 12, `${svcs.length} Services`);
      assert.deepEqual(svcs.filter((s: any) => !inRange(SVC_NEW, s.spec.clusterIP)).map((s: any) => `${s.metadata.namespace}/${s.metadata.name} ${s.spec.clusterIP}`), []);
      await assertWorkloadsReady(tb);
      assert.equal((await activePodNetworkPods(tb)).length, podCount, 'no pod lost');
    });

    test('Pod CIDR: kcm stops allocating with the widened cluster-cidr, nodes re-registered in waves of 2, then cluster-cidr NEW; verify passes', { timeout: 900_000 }, async () => {
      const hook = `${process.execPath} ${join(ROOT, 'test/testbed/reregister-node.ts')} --kubeconfig ${tb.kubeconfigPath}`;
      const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', POD_NEW, '--ipam', 'node', '--node-hook', hook, '--max-unavailable', '2', '-o', 'json']);
      assert.ok(p.code === 0 || p.code === 1, p.err);
      writeFileSync(plans.pod, p.out);
      const plan = JSON.parse(p.out);
      assert.deepEqual(plan.spec.podCIDR.from, [POD_OLD], 'the old range read from the server\'s node-args');
      assert.equal(plan.steps.filter((s: any) => s.kind === 'move-nodes').length, 2, 'two waves of 2');
      const stop = patchAfter(plan, `${pf.id}-kcm-stop-allocating`);
      const final = patchAfter(plan, `${pf.id}-pod-cidr`);
      assert.deepEqual(kcmArgs(stop), ['allocate-node-cidrs=false']);
      assert.equal(stop['cluster-cidr'], '10.32.0.0/11', 'holds both ranges');
      assert.equal(final['cluster-cidr'], POD_NEW);
      assert.ok(!kcmArgs(final).includes('allocate-node-cidrs=false'));

      const a = await run(['apply', plans.pod, '--yes', '--allow-hook', ...common('pod')]);
      assert.equal(a.code, 7, a.err.slice(-2000));
      assert.match(a.err, /stopped at gate kcm-stop-allocating/);
      // the servers restart: kube-controller-manager runs with config.yaml's cluster-cidr, kube-controller-manager-arg after the defaults
      const up1 = await tb.restartControllerManager({ clusterCIDR: stop['cluster-cidr'], allocateNodeCIDRs: !kcmArgs(stop).includes('allocate-node-cidrs=false') });
      assert.equal(up1.running, true);
      let r = await run(['resume', plans.pod, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', ...common('pod')]);
      assert.equal(r.code, 7, r.err.slice(-2000));
      assert.match(r.err, /stopped at gate kcm-cluster-cidr/);
      assert.equal(tb.controllerManagerAlive(), true, 'kube-controller-manager kept running while nodes of both ranges existed');
      const nodes = (await getJSON(tb, ['get', 'nodes'])).items;
      assert.equal(nodes.length, 4);
      for (const n of nodes) {
        assert.ok(inRange(POD_NEW, n.spec.podCIDR.split('/')[0]), `${n.metadata.name} ${n.spec.podCIDR}`);
        assert.ok(n.metadata.annotations[`${pf.id}.io/node-args`], `${n.metadata.name} registered again as ${pf.title} writes it`);
      }
      const up2 = await tb.restartControllerManager({ clusterCIDR: final['cluster-cidr'], allocateNodeCIDRs: !kcmArgs(final).includes('allocate-node-cidrs=false') });
      assert.equal(up2.running, true, 'kube-controller-manager starts with cluster-cidr NEW once every node is in NEW');
      r = await run(['resume', plans.pod, '--yes', '--allow-hook', '--ack-gate', 'kcm-stop-allocating', '--ack-gate', 'kcm-cluster-cidr', ...common('pod')]);
      assert.equal(r.code, 0, r.err.slice(-2000));
      const v = await run(['verify', plans.pod, ...common('pod')]);
      assert.equal(v.code, 0, v.err);
      await assertWorkloadsReady(tb);
      const n = await assertAllPodsIn(tb, POD_NEW, POD_OLD);
      assert.equal(n, podCount, 'no pod lost');
    });
  });
}
