/**
 * examples/k3s (SOURCES.md): inspect reads it as k3s with the ranges of its server's k3s.io/node-args, and the
 * plans of both moves patch /etc/rancher/k3s/config.yaml (Service: service-cidr, cluster-dns, tls-san; Pod:
 * cluster-cidr widened with kube-controller-manager's allocation off, then NEW), with k3s's restart commands.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { run } from './run-cli.ts';

const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'k3s');

describe('examples/k3s', () => {
  it('inspect: platform k3s, ranges from the server\'s node-args, flannel on node podCIDRs, kube-dns, no secret', async () => {
    const r = await run(['inspect', '-f', DIR, '-o', 'json']);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    const s = JSON.parse(r.out);
    assert.equal(s.platform.kind, 'k3s');
    assert.equal(s.platform.kind, 'k3s');
    assert.deepEqual(s.serviceCIDRs.map((x: any) => [x.cidr, x.sources]), [['10.43.0.0/16', ['k3s.io/node-args --service-cidr']]]);
    assert.deepEqual(s.podCIDRs.map((x: any) => [x.cidr, x.sources]), [['10.42.0.0/16', ['k3s.io/node-args --cluster-cidr', 'k3s embedded flannel Network (the cluster CIDR)']]]);
    assert.deepEqual([s.cni.plugin, s.cni.ipam], ['flannel', 'host-local']);
    assert.equal(s.dnsService.name, 'kube-dns');
    assert.deepEqual(s.dnsService.clusterIPs, ['10.43.0.10']);
    const table = await run(['inspect', '-f', DIR]);
    assert.match(table.out, /k3s/);
    assert.ok(!(r.out + table.out).includes('::server:'), 'no token');
  });

  it('plan --service-cidr: the restart-apiservers patch edits /etc/rancher/k3s/config.yaml with the new service-cidr, cluster-dns and both kubernetes IPs', async () => {
    const r = await run(['plan', '-f', DIR, '--service-cidr', '10.96.0.0/16', '-o', 'yaml']);
    assert.equal(r.code, 0, r.err);
    const plan = yaml.load(r.out) as any;
    assert.equal(plan.metadata.platform, 'k3s');
    const patches = plan.steps.flatMap((s: any) => s.gate?.patches ?? []);
    assert.deepEqual(patches.map((p: any) => p.id), ['k3s-enable-servicecidr-api', 'k3s-server-config'], 'v1.31 needs the ServiceCIDR API enabled first');
    assert.ok(patches.every((p: any) => p.target === '/etc/rancher/k3s/config.yaml on every server (k3s-server-1)'));
    // v1.31: the allocator's dual write into the old bitmap is turned off with the new range (src/plan/allocator-dual-write.ts)
    assert.deepEqual(yaml.load(patches[1].after), {
      'service-cidr': '10.96.0.0/16', 'cluster-dns': '10.96.0.10', 'tls-san': ['10.43.0.1', '10.96.0.1'],
      'kube-apiserver-arg': ['feature-gates=MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true'],
    });
    // the first patch's feature gate, which this one replaces with both gates
    assert.deepEqual(yaml.load(patches[1].before), {
      'service-cidr': '10.43.0.0/16', 'cluster-dns': '10.43.0.10', 'tls-san': null, 'kube-apiserver-arg': ['feature-gates=MultiCIDRServiceAllocator=true'],
    });
    const api = yaml.load(patches[0].after) as any;
    assert.deepEqual(api['kube-apiserver-arg'], ['feature-gates=MultiCIDRServiceAllocator=true', 'runtime-config=networking.k8s.io/v1beta1=true']);
    const gate = plan.steps.find((s: any) => s.id === 'restart-apiservers');
    assert.match(gate.gate.instructions.join('\n'), /systemctl restart k3s on each server in turn/);
    assert.doesNotMatch(r.out, /\/etc\/kubernetes|kubeadm-config|kube-proxy-cluster-cidr/);
  });

  it('plan --pod-cidr: node path, cluster-cidr 10.42.0.0/16 → wide range with allocation off → 10.60.0.0/16, k3s-agent re-registers nodes', async () => {
    const r = await run(['plan', '-f', DIR, '--pod-cidr', '10.60.0.0/16', '--max-unavailable', '2', '-o', 'yaml']);
    assert.equal(r.code, 0, r.err);
    const plan = yaml.load(r.out) as any;
    assert.deepEqual([plan.spec.podCIDR.ipam, plan.spec.podCIDR.from, plan.spec.podCIDR.node.nodes.map((n: any) => n.to[0])], ['node', ['10.42.0.0/16'], ['10.60.0.0/24', '10.60.1.0/24', '10.60.2.0/24']]);
    const byId = new Map(plan.steps.flatMap((s: any) => s.gate?.patches ?? []).map((p: any) => [p.id, p]));
    assert.deepEqual([...byId.keys()], ['k3s-kcm-stop-allocating', 'k3s-pod-cidr']);
    const stop = yaml.load((byId.get('k3s-kcm-stop-allocating') as any).after) as any;
    const final = yaml.load((byId.get('k3s-pod-cidr') as any).after) as any;
    assert.deepEqual(stop, { 'cluster-cidr': '10.32.0.0/11', 'kube-controller-manager-arg': ['allocate-node-cidrs=false'] });
    assert.deepEqual(final, { 'cluster-cidr': '10.60.0.0/16', 'kube-controller-manager-arg': null });
    const rereg = plan.steps.filter((s: any) => s.gate?.condition === 'node-reregistered');
    assert.equal(rereg.length, 2, 'two waves');
    assert.match(rereg[0].gate.instructions[0], /systemctl restart k3s-agent \(k3s on a server\)/);
  });
});
