// inspect recommends the fix that fits a range that ran out: extend where nothing conflicts and the range can take a
// second one (a Service range), move where it conflicts or cannot (node IPAM); Calico IPAM: stop the node podCIDRs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { inspect, recommendations } from '../../src/analyze/inspect.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { install } from '../../src/install.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** n ClusterIP Services in 10.96.0.0/27 (30 usable addresses). */
function services(n: number) {
  return Array.from({ length: n }, (_, i) => svc('default', i === 0 ? 'kubernetes' : `s${i}`, `10.96.0.${i + 1}`));
}
const small = (n: number, over = {}) => kubeadmSnapshot(services(n), {
  ranges: [{ cidr: '10.96.0.0/27', role: 'service', source: 'kube-apiserver --service-cluster-ip-range', label: 'Service CIDR' }],
  serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/27'], apiVersion: 'networking.k8s.io/v1', deleting: false, ready: true }],
  apiservers: [{ pod: 'kube-apiserver-cp1', serviceClusterIPRange: ['10.96.0.0/27'] }],
  kubeadm: { serviceSubnet: ['10.96.0.0/27'] },
  ...over,
});

describe('inspect recommendations', () => {
  it('a Service range 90 % used with no conflict: extend it, one line', () => {
    const r = inspect(small(27));
    assert.deepEqual(r.recommendations, ['the Service range 10.96.0.0/27 is 90% used and conflicts with nothing: extend it (kube-renumber suggest --for services, then plan --extend-service-cidr ADD; nothing restarts) rather than move it']);
  });

  it('below 90 %: nothing to recommend', () => {
    assert.equal(inspect(small(26)).recommendations, undefined);
  });

  it('a full Service range that conflicts: move it', () => {
    const r = inspect(small(30), { avoid: [{ cidr: '10.96.0.0/24', reason: 'the office VPN', from: '--avoid' } as never] });
    assert.equal(r.recommendations?.length, 1);
    assert.match(r.recommendations![0]!, /is 100% used and conflicts with another range: move it/);
  });

  it('nodes waiting for a podCIDR: node IPAM can only move; Calico IPAM can stop handing podCIDRs out', () => {
    const cap = { serviceRanges: [], nodeIpam: [{ clusterCIDR: '10.233.64.0/18', nodesWaiting: 15 }] } as never;
    assert.match(recommendations(cap, [])[0]!, /^15 node\(s\) wait for a podCIDR from 10\.233\.64\.0\/18: .*one cluster CIDR per family, so it cannot be extended: move it/);
    assert.match(recommendations(cap, [], 'calico')[0]!, /Calico IPAM hands out the pod addresses here.*--allocate-node-cidrs=false/);
  });

  it('seed 004 (examples/kubeadm-exhausted, Calico IPAM, nodes without a podCIDR) gets the Calico line', async () => {
    const r = inspect(buildSnapshot(await readInventoryFiles([`${ROOT}examples/kubeadm-exhausted`])));
    assert.ok(r.recommendations?.some((l) => /wait for a podCIDR .* Calico IPAM hands out the pod addresses here/.test(l)), JSON.stringify(r.recommendations));
  });

  it('a Calico pool with no free block: extend it when nothing conflicts with it, move it when something does; room left: nothing', () => {
    const pool = { name: 'default-pool', cidr: '10.233.64.0/18', blockSize: 26, disabled: false, blocksTotal: 256, blocksUsed: 256, nodesWithBlocks: 79, maxBlocksOnANode: 4 };
    const cap = (p: object) => ({ serviceRanges: [], nodeIpam: [], pools: [p] }) as never;
    assert.deepEqual(recommendations(cap(pool), [], 'calico'), [
      'the Calico pool default-pool 10.233.64.0/18 has no free block (256 of 256 /26 blocks taken) and conflicts with nothing: extend it (kube-renumber suggest --for pods, then plan --extend-pod-cidr ADD: a second pool, nothing restarts) rather than move it',
    ]);
    const conflict = [{ severity: 'error', a: { cidr: '10.233.64.0/18' }, b: { cidr: '10.233.0.0/16' } }] as never;
    assert.match(recommendations(cap(pool), conflict, 'calico')[0]!, /has no free block .* conflicts with another range: move it .*plan --pod-cidr NEW/);
    assert.deepEqual(recommendations(cap({ ...pool, blocksUsed: 255 }), [], 'calico'), []);
    assert.deepEqual(recommendations(cap({ ...pool, disabled: true }), [], 'calico'), [], 'a disabled pool gives nothing anyway');
  });

  it('inspect on a snapshot whose only pool has every block taken recommends the extension', () => {
    const s = small(2, {
      pools: [{ name: 'p', cidr: '10.50.0.0/24', blockSize: 26, disabled: false }],
      blocks: ['10.50.0.0/26', '10.50.0.64/26', '10.50.0.128/26', '10.50.0.192/26'].map((cidr, i) => ({ cidr, node: `n${i}`, allocated: 60 })),
      nodes: [0, 1, 2, 3].map((i) => ({ name: `n${i}`, podCIDRs: [], internalIPs: [`192.168.1.${i + 1}`], externalIPs: [] })) as never,
    });
    const r = inspect(s);
    assert.ok(r.recommendations?.some((l) => /^the Calico pool p 10\.50\.0\.0\/24 has no free block \(4 of 4 \/26 blocks taken\).*plan --extend-pod-cidr ADD/.test(l)), JSON.stringify(r.recommendations));
  });
});
