// A would-be plan, written on the plain testbed, applied to the same cluster once it shows the signs of a managed
// control plane (Amazon EKS, GKE, AKS: the node labels each provider sets on every node it runs): apply re-reads
// the live cluster, refuses with exit 2 and one error line naming the platform, and writes nothing: no Lease, no
// ServiceCIDR, no Service, IPPool or Node change, no state directory. Labelled as RKE2, only the Pod CIDR move is refused
// there (Calico's pool belongs to RKE2's rke2-calico chart).

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';

const SVC_OLD = '10.96.0.0/16';
const SVC_NEW = '10.100.0.0/16';
const POD_OLD = '10.244.0.0/16';
const POD_NEW = '10.50.0.0/16';

/** Each platform's labels as the provider sets them on its nodes (sources: docs/platforms.md). */
const PLATFORMS = [
  { kind: 'eks', title: 'Amazon EKS', labels: { 'eks.amazonaws.com/nodegroup': 'ng-general', 'eks.amazonaws.com/capacityType': 'ON_DEMAND' } },
  { kind: 'gke', title: 'Google Kubernetes Engine (GKE)', labels: { 'cloud.google.com/gke-nodepool': 'default-pool', 'cloud.google.com/gke-os-distribution': 'cos' } },
  { kind: 'aks', title: 'Azure Kubernetes Service (AKS)', labels: { 'kubernetes.azure.com/managedby': 'aks', 'kubernetes.azure.com/agentpool': 'nodepool1', 'kubernetes.azure.com/mode': 'system' } },
] as const;

describe('a would-be plan applied on a cluster that shows EKS, GKE or AKS signs writes nothing', () => {
  const tb = useTestbed({ serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodes: 3, podIPAM: 'calico', populate: { namespaces: 2, deployments: 1, replicas: 1, services: 12 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-platform-refusal-'));
  const plans = { service: join(dir, 'service-plan.yaml'), pod: join(dir, 'pod-plan.yaml') };

  const json = async (args: string[]) => {
    const r = await tb.kubectl([...args, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };

  /** Everything a run could write, in a form that changes only when something wrote to it. */
  async function state() {
    const services = (await json(['get', 'services', '-A'])).items.map((s: any) => `${s.metadata.namespace}/${s.metadata.name} ${s.metadata.resourceVersion}`).sort();
    const serviceCIDRs = (await json(['get', 'servicecidrs.networking.k8s.io'])).items.map((c: any) => `${c.metadata.name} ${c.metadata.resourceVersion} ${c.spec.cidrs.join(',')}`).sort();
    const pools = (await json(['get', 'ippools.crd.projectcalico.org'])).items.map((p: any) => `${p.metadata.name} ${p.metadata.resourceVersion} ${p.spec.cidr} ${p.spec.disabled === true}`).sort();
    // a Node's status is rewritten by its (kwok) kubelet: what a run would change is its labels, annotations and spec
    const nodes = (await json(['get', 'nodes'])).items.map((n: any) => JSON.stringify([n.metadata.name, n.metadata.labels, n.metadata.annotations, n.spec])).sort();
    const lease = await tb.kubectl(['get', 'lease', '-n', 'kube-system', 'kube-renumber', '-o', 'name']);
    return { services, serviceCIDRs, pools, nodes, lease: lease.code === 0 ? lease.stdout.trim() : 'absent' };
  }

  test('on the plain testbed, plan --service-cidr and plan --pod-cidr write plans with steps', { timeout: 120_000 }, async () => {
    const svc = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', SVC_NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.ok(svc.code === 0 || svc.code === 1, svc.err);
    assert.match(svc.out, /kind: MigrationPlan/);
    assert.match(svc.out, /kind: create-service-cidr|kind: move-services/);
    writeFileSync(plans.service, svc.out);
    const pod = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', POD_NEW, '-o', 'yaml']);
    assert.ok(pod.code === 0 || pod.code === 1, pod.err);
    assert.match(pod.out, /kind: MigrationPlan/);
    assert.match(pod.out, /podCIDR:/);
    writeFileSync(plans.pod, pod.out);
    for (const text of [svc.out, pod.out]) assert.doesNotMatch(text, /platform: (eks|gke|aks)\b/);
  });

  for (const p of PLATFORMS) {
    test(`labelled as ${p.title}: apply of either plan exits 2 with one error line naming it, and nothing is written`, { timeout: 120_000 }, async () => {
      const set = Object.entries(p.labels).map(([k, v]) => `${k}=${v}`);
      const r = await tb.kubectl(['label', 'nodes', '--all', '--overwrite', ...set]);
      assert.equal(r.code, 0, r.stderr);
      try {
        const before = await state();
        assert.equal(before.lease, 'absent');
        assert.ok(before.pools.length > 0 && before.services.length >= 12 && before.serviceCIDRs.length > 0);
        for (const [move, plan] of Object.entries(plans)) {
          const stateDir = join(dir, `state-${p.kind}-${move}`);
          const a = await run(['apply', plan, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '60s']);
          assert.equal(a.code, 2, `${move}: ${a.err}`);
          assert.equal(a.out, '');
          const lines = a.err.split('\n').filter((l) => l !== '');
          assert.equal(lines.length, 1, a.err);
          assert.ok(lines[0]!.startsWith(`error: moving the ${move === 'service' ? 'Service' : 'Pod'} CIDR is refused on ${p.title}: `), lines[0]);
          assert.match(lines[0]!, /instead: /);
          assert.match(lines[0]!, /\(nothing was changed\)$/);
          assert.equal(existsSync(stateDir), false, `${stateDir} was created`);
          // resume checks the same way
          const again = await run(['resume', plan, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir]);
          assert.equal(again.code, 2, again.err);
          assert.match(again.err, new RegExp(`^error: moving the .* CIDR is refused on ${p.title.replace(/[()]/g, '\\$&')}: `));
          assert.equal(existsSync(stateDir), false);
        }
        assert.deepEqual(await state(), before);
      } finally {
        const unset = Object.keys(p.labels).map((k) => `${k}-`);
        const u = await tb.kubectl(['label', 'nodes', '--all', ...unset]);
        assert.equal(u.code, 0, u.stderr);
      }
    });
  }

  // k3s and RKE2 plan both moves now (test/integration/k3s-rke2-migration.test.ts); RKE2 still refuses a Pod CIDR move
  // when Calico hands out the addresses, because its rke2-calico chart owns the pool (src/platform/rke2.ts).
  test('labelled as RKE2 with Calico IPAM: apply of the pod plan exits 2 naming RKE2 and Calico, and nothing is written', { timeout: 120_000 }, async () => {
    const labels = { 'node.kubernetes.io/instance-type': 'rke2' };
    const r = await tb.kubectl(['label', 'nodes', '--all', '--overwrite', ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)]);
    assert.equal(r.code, 0, r.stderr);
    try {
      const before = await state();
      const stateDir = join(dir, 'state-rke2-pod');
      const a = await run(['apply', plans.pod, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '60s']);
      assert.equal(a.code, 2, a.err);
      assert.equal(a.out, '');
      const lines = a.err.split('\n').filter((l) => l !== '');
      assert.equal(lines.length, 1, a.err);
      assert.match(lines[0]!, /^error: moving the Pod CIDR is refused on RKE2 with Calico IPAM: RKE2 deploys Calico from its rke2-calico HelmChart/);
      assert.match(lines[0]!, /; instead: change the IP pool in a HelmChartConfig/);
      assert.equal(existsSync(stateDir), false, `${stateDir} was created`);
      assert.deepEqual(await state(), before);
    } finally {
      const u = await tb.kubectl(['label', 'nodes', '--all', ...Object.keys(labels).map((k) => `${k}-`)]);
      assert.equal(u.code, 0, u.stderr);
    }
  });
});
