import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { formatCidr } from '../../src/net/index.ts';
import {
  certSanProblem, currentPodRanges, isDnsLabel, isDnsSubdomain, isQualifiedName, objectRefProblem, podTargetRefusals,
} from '../../src/plan/targets.ts';
import { kubeadmSnapshot } from './fixtures.ts';

install();

const ex = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
const kubeadm = buildSnapshot(await readInventoryFiles([ex('kubeadm-exhausted')]));
const kops = buildSnapshot(await readInventoryFiles([ex('kops-tailscale')]));

describe('names', () => {
  it('DNS-1123 labels', () => {
    for (const ok of ['a', 'kube-system', 'a1', '0', 'x'.repeat(63)]) assert.ok(isDnsLabel(ok), ok);
    for (const bad of ['', 'A', 'a_b', '-a', 'a-', 'a.b', 'x'.repeat(64), 'a b']) assert.ok(!isDnsLabel(bad), bad);
  });

  it('DNS-1123 subdomains', () => {
    // As Kubernetes checks them: only the whole name is limited (253), not each dot-separated part.
    for (const ok of ['pool', 'kube-renumber-10-0-0-0-14', 'a.b.c', `${'a'.repeat(64)}.b`, 'a'.repeat(253)]) assert.ok(isDnsSubdomain(ok), ok);
    for (const bad of ['', 'Bad Name/x', 'a..b', '.a', 'a.', 'UPPER', 'a/b', 'a_b', 'a'.repeat(254)]) assert.ok(!isDnsSubdomain(bad), bad);
  });

  it('label keys', () => {
    for (const ok of ['tier', 'example.com/tier', 'app.kubernetes.io/name', 'A_b.c-D', 'x'.repeat(63)]) assert.ok(isQualifiedName(ok), ok);
    for (const bad of ['', 'bad key', 'a/b/c', '/x', 'example.com/', 'Example_.com/x', '-x', 'x'.repeat(64)]) assert.ok(!isQualifiedName(bad), bad);
  });

  it('namespace/name references', () => {
    assert.equal(objectRefProblem('kube-system/coredns'), undefined);
    assert.equal(objectRefProblem('prod/web.v2'), undefined);
    assert.match(objectRefProblem('prod/web.v2', true)!, /not a valid Service name/);
    assert.match(objectRefProblem('web')!, /namespace\/name/);
    assert.match(objectRefProblem('a/b/c')!, /namespace\/name/);
    assert.match(objectRefProblem('Prod/web')!, /namespace "Prod"/);
    assert.match(objectRefProblem('prod/')!, /name ""/);
  });

  it('apiserver certificate SANs: IPs, dotted names, localhost and kubernetes*', () => {
    for (const ok of ['10.0.0.1', 'fd00::1', '::ffff:10.0.0.1', 'api.example.com', 'api.example.com.', '*.example.com', 'localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc.cluster.local']) {
      assert.equal(certSanProblem(ok), undefined, ok);
    }
    assert.match(certSanProblem('banana')!, /single-word name/);
    assert.match(certSanProblem('10.0.0.300')!, /not a valid IP address/);
    assert.match(certSanProblem('10.0.0')!, /not a valid IP address/);
    assert.match(certSanProblem('fd00:::1')!, /not a valid IP address/);
    assert.match(certSanProblem('api_server.example.com')!, /neither an IP address nor a DNS name/);
    assert.match(certSanProblem('-api.example.com')!, /neither/);
    assert.match(certSanProblem('a..b')!, /neither/);
    assert.match(certSanProblem(`${'a'.repeat(64)}.com`)!, /neither/);
  });
});

describe('podTargetRefusals', () => {
  it('finds the current pod ranges: cluster CIDR, pools and node podCIDRs, each once', () => {
    assert.deepEqual(currentPodRanges(kubeadm).map(formatCidr), ['10.233.64.0/18']);
    assert.deepEqual(currentPodRanges(kops).map(formatCidr), ['100.96.0.0/11']);
    const extra = kubeadmSnapshot([], { nodes: [{ name: 'n1', podCIDRs: ['10.244.1.0/24'], internalIPs: [], externalIPs: [], labels: {}, unschedulable: false }] });
    assert.deepEqual(currentPodRanges(extra).map(formatCidr), ['10.244.1.0/24']);
  });

  it('accepts a free range', () => {
    assert.deepEqual(podTargetRefusals(kubeadm, { target: '10.0.0.0/14' }), []);
    assert.deepEqual(podTargetRefusals(kops, { target: '10.0.0.0/11' }), []);
    assert.deepEqual(podTargetRefusals(kubeadm, { target: '10.0.0.0/14', serviceTarget: '10.8.0.0/16' }), []);
  });

  it('refuses the current range, a range containing it, and one inside it', () => {
    assert.deepEqual(podTargetRefusals(kubeadm, { target: '10.233.64.0/18' }), ['10.233.64.0/18 is the current pod range: nothing to move']);
    assert.match(podTargetRefusals(kubeadm, { target: '10.233.0.0/16' })[0]!, /contains the current pod range 10\.233\.64\.0\/18/);
    assert.match(podTargetRefusals(kubeadm, { target: '10.233.96.0/19' }).join('; '), /10\.233\.96\.0\/19 overlaps 10\.233\.64\.0\/18/);
  });

  it('refuses a family the cluster does not use', () => {
    const r = podTargetRefusals(kubeadm, { target: 'fd00:20::/48' });
    assert.deepEqual(r, ['fd00:20::/48 is IPv6, which the cluster\'s pod ranges do not use (10.233.64.0/18): give one CIDR per family the cluster uses']);
  });

  it('refuses the Service range, the new Service CIDR, the node network and --avoid ranges', () => {
    assert.match(podTargetRefusals(kubeadm, { target: '10.233.0.0/20' }).join('; '), /overlaps 10\.233\.0\.0\/18 \(the current service range/);
    assert.deepEqual(podTargetRefusals(kubeadm, { target: '10.0.0.0/14', serviceTarget: '10.1.0.0/16' }),
      ['10.0.0.0/14 overlaps the new Service CIDR 10.1.0.0/16 (--service-cidr): the two must be apart']);
    assert.match(podTargetRefusals(kubeadm, { target: '192.168.0.0/16' }).join('; '), /overlaps 192\.168\.10\.0\/24/);
    assert.match(podTargetRefusals(kubeadm, { target: '10.0.0.0/14', avoid: [{ cidr: '10.2.0.0/16', reason: 'vpn', from: '--avoid' }] }).join('; '), /overlaps 10\.2\.0\.0\/16 \(avoided range \(--avoid\): vpn\)/);
  });

  it('a bad --service-cidr is left to the Service checks; a bad --pod-cidr is the parse error', () => {
    assert.deepEqual(podTargetRefusals(kubeadm, { target: '10.0.0.0/14', serviceTarget: 'banana' }), []);
    assert.match(podTargetRefusals(kubeadm, { target: '10.0.0.1/14' })[0]!, /host bits are set/);
    assert.match(podTargetRefusals(kubeadm, { target: '10.0.0.0/14,10.8.0.0/14' })[0]!, /two IPv4 ranges/);
  });
});
