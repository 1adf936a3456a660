// plan --extend-pod-cidr end to end on the real control plane with Calico's own calico-ipam: a small pool (/27 of
// /29 blocks) filled to its last address, pods left waiting for one; the extension planned and applied (a second
// IPPool with the old pool's settings, kube-proxy's clusterCIDR at its gate, ip-masq-agent's list grown, no pool
// disabled); the waiting pods and new ones get addresses from the added range, the pods that ran keep theirs (uid,
// address and restart count counted before and after); verify passes, `calicoctl ipam check` is clean; rollback is
// refused while pods hold addresses in the new pool, naming them, and done once they are deleted.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { calicoIpamCheck } from '../testbed/calicoctl.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import type { KubeObject } from '../testbed/kube.ts';
import { run } from '../unit/run-cli.ts';
import { install } from '../../src/install.ts';

install();

const CALICO = '/apis/crd.projectcalico.org/v1';
const OLD = '10.244.0.0/27';
const ADD = '10.245.0.0/28';
const POOL = 'kube-renumber-extend-10-245-0-0-28';
const NS = 'grow';
const KUBE_PROXY = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: iptables\n';
const MASQ = 'nonMasqueradeCIDRs:\n  - 10.244.0.0/16\nmasqLinkLocal: false\nresyncInterval: 60s\n';

function deployment(name: string, replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: NS },
    spec: {
      replicas, selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'pause' }], terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }] } },
    },
  };
}

describe('Pod range extension on Calico IPAM (the real calico-ipam): a second pool, nothing restarted', () => {
  const tb = useTestbed({ nodes: 2, podIPAM: 'calico', podCIDR: '10.244.0.0/16' });
  const dir = mkdtempSync(join(tmpdir(), 'kr-extend-pod-'));
  const planPath = join(dir, 'plan.yaml');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--timeout', '60s'];
  /** uid → "ip restarts" of every pod that had an address before the extension. */
  let before = new Map<string, string>();

  const podsOf = async (app: string) => (await tb.client.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3D${app}`)).items.filter((p) => !p.metadata.deletionTimestamp);
  const state = (p: any) => `${p.status?.podIP} ${(p.status?.containerStatuses ?? []).reduce((n: number, c: any) => n + (c.restartCount ?? 0), 0)}`;
  const withIP = (ps: any[]) => ps.filter((p) => p.status?.phase === 'Running' && p.status.podIP);

  test('setup: the old pool filled to its last address, two pods waiting for one', async () => {
    await tb.client.create({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'default-ipv4-ippool' }, spec: { cidr: OLD, blockSize: 29, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' } });
    await tb.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-proxy', namespace: 'kube-system' }, data: { 'config.conf': KUBE_PROXY } });
    await tb.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ip-masq-agent', namespace: 'kube-system' }, data: { config: MASQ } });
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await eventually('default SA', () => tb.client.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    // a /27 of /29 blocks: 32 addresses in 4 blocks
    await tb.client.create(deployment('fill', 32));
    const filled = await eventually('32 fill pods Running with an address', async () => { const ps = withIP(await podsOf('fill')); return ps.length === 32 ? ps : undefined; }, 120_000, 500);
    for (const p of filled) assert.ok(cidrContains(OLD, p.status.podIP), `${p.metadata.name} ${p.status.podIP} in ${OLD}`);
    assert.equal(new Set(filled.map((p) => p.status.podIP)).size, 32, 'every address of the pool used once');
    await tb.client.create(deployment('more', 2));
    // Calico's ADD fails for them (no free address in any pool), and the driver tries again, as a kubelet does
    await eventually('the waiting pods bound and a failed ADD logged', async () => (await podsOf('more')).filter((p) => p.spec.nodeName).length === 2
      && /ADD grow\/more-.*exit \d+/.test(readFileSync(tb.logPath('calico-cni'), 'utf8')), 60_000, 500);
    for (const p of await podsOf('more')) assert.equal(p.status?.podIP, undefined, `${p.metadata.name} has no address: the pool is full`);
    before = new Map((await tb.client.list('/api/v1/pods')).items.filter((p) => p.status?.podIP).map((p) => [p.metadata.uid!, state(p)]));
    assert.ok(before.size >= 32);
  });

  test('plan: an overlapping range is refused in one line; the extension plan copies the pool', async () => {
    const bad = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--extend-pod-cidr', '10.244.0.16/28', '-o', 'yaml']);
    assert.equal(bad.code, 2, bad.err);
    assert.equal(bad.out, '');
    assert.equal(bad.err.trim().split('\n').length, 1, bad.err);
    // the live addresses first (a pod of the old pool), then the ranges it overlaps
    assert.match(bad.err, /^error: --extend-pod-cidr 10\.244\.0\.16\/28 refused: 10\.244\.0\.16\/28 contains 10\.244\.0\.\d+, the IP of pod grow\/fill-/);
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--extend-pod-cidr', ADD, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err + r.out.slice(0, 3000));
    writeFileSync(planPath, r.out);
    const plan = yaml.load(r.out) as any;
    assert.deepEqual(plan.spec.podExtension.from, [OLD]);
    assert.deepEqual(plan.spec.podExtension.pools, [{ name: POOL, cidr: ADD, blockSize: 29, model: 'default-ipv4-ippool', ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' }]);
    assert.deepEqual(plan.spec.podExtension.kubeProxy, { from: '10.244.0.0/16', to: '10.244.0.0/15', configMap: true });
    assert.deepEqual(plan.steps.map((s: any) => s.id), ['extend-kube-proxy', 'extend-masquerade', 'extend-pod-range', 'verify-pod-extension']);
  });

  test('apply: stops at kube-proxy\'s gate before any change; once clusterCIDR holds both, the pool is created and the waiting pods get addresses', async () => {
    const gate = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(gate.code, 7, gate.err);
    assert.match(gate.err, /stopped at gate extend-kube-proxy/);
    assert.equal(await tb.client.getOrUndefined(`${CALICO}/ippools/${POOL}`), undefined, 'no pool before kube-proxy holds the range');
    // the person's part: kube-proxy's ConfigMap (the testbed runs no kube-proxy to restart)
    await tb.client.mergePatch('/api/v1/namespaces/kube-system/configmaps/kube-proxy', { data: { 'config.conf': KUBE_PROXY.replace('10.244.0.0/16', '10.244.0.0/15') } });
    const r = await run(['resume', planPath, '--yes', ...common()]);
    assert.equal(r.code, 0, r.err);
    const pool = await tb.client.get(`${CALICO}/ippools/${POOL}`);
    assert.deepEqual({ cidr: pool.spec.cidr, blockSize: pool.spec.blockSize, ipip: pool.spec.ipipMode, nat: pool.spec.natOutgoing, disabled: pool.spec.disabled }, { cidr: ADD, blockSize: 29, ipip: 'Always', nat: true, disabled: false });
    assert.notEqual((await tb.client.get(`${CALICO}/ippools/default-ipv4-ippool`)).spec.disabled, true, 'the old pool stays enabled');
    const masq = yaml.load((await tb.client.get('/api/v1/namespaces/kube-system/configmaps/ip-masq-agent')).data?.config ?? '') as any;
    assert.deepEqual(masq.nonMasqueradeCIDRs, ['10.244.0.0/16', ADD]);
    assert.equal(masq.resyncInterval, '60s', 'the rest of the agent\'s config kept');
    const more = await eventually('the waiting pods Running with an address', async () => { const ps = withIP(await podsOf('more')); return ps.length === 2 ? ps : undefined; }, 90_000, 500);
    for (const p of more) assert.ok(cidrContains(ADD, p.status.podIP), `${p.metadata.name} ${p.status.podIP} in ${ADD}`);
    await tb.client.mergePatch(`/apis/apps/v1/namespaces/${NS}/deployments/more`, { spec: { replicas: 4 } });
    const four = await eventually('4 more pods with an address', async () => { const ps = withIP(await podsOf('more')); return ps.length === 4 ? ps : undefined; }, 90_000, 500);
    for (const p of four) assert.ok(cidrContains(ADD, p.status.podIP), `${p.metadata.name} ${p.status.podIP} in ${ADD} (the old pool is full)`);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /IPPool kube-renumber-extend-10-245-0-0-28 enabled with 10\.245\.0\.0\/28/);
  });

  test('nothing restarted: every pod that had an address has it still, same uid, no container restart; Calico\'s IPAM is clean', async () => {
    const now = new Map((await tb.client.list('/api/v1/pods')).items.map((p) => [p.metadata.uid!, state(p)]));
    const restarted = [...before].filter(([uid, s]) => now.get(uid) !== s);
    assert.deepEqual(restarted, [], 'pods restarted, gone or renumbered');
    assert.equal(restarted.length, 0);
    const check = await calicoIpamCheck(tb);
    assert.equal(check.problems, 0, check.output);
    assert.equal(check.leaked, 0, check.output);
    assert.ok(check.allocations >= 36, check.output);
  });

  test('rollback is refused while pods hold addresses in the new pool, naming them; done once they are gone', async () => {
    const names = (await podsOf('more')).map((p) => `${NS}/${p.metadata.name}`);
    const refused = await run(['rollback', planPath, ...common()]);
    assert.equal(refused.code, 1, refused.err + refused.out);
    assert.match(refused.out, /extend-pod-range\s+NOT undone: IPPool kube-renumber-extend-10-245-0-0-28 \(10\.245\.0\.0\/28\) holds the addresses of 4 pod\(s\)/);
    for (const n of names) assert.ok(refused.out.includes(n), `${n} named in ${refused.out}`);
    const still = await tb.client.get(`${CALICO}/ippools/${POOL}`);
    assert.notEqual(still.spec.disabled, true, 'left enabled');
    await tb.kubectl(['-n', NS, 'delete', 'deployment', 'more', '--wait=true']);
    await eventually('the new pool\'s addresses released', async () => (await tb.client.list(`${CALICO}/ipamblocks`)).items
      .filter((b) => cidrContains(ADD, b.spec.cidr.split('/')[0])).every((b) => b.spec.allocations.every((a: number | null) => a === null)), 60_000, 500);
    const r = await run(['rollback', planPath, ...common()]);
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, /extend-pod-range\s+undone/);
    assert.equal(await tb.client.getOrUndefined(`${CALICO}/ippools/${POOL}`), undefined, 'pool deleted');
    for (const kind of ['ipamblocks', 'blockaffinities']) {
      const left = (await tb.client.list(`${CALICO}/${kind}`)).items.filter((b) => cidrContains(ADD, b.spec.cidr.split('/')[0]));
      assert.deepEqual(left.map((b) => b.metadata.name), [], `${kind} left in ${ADD}`);
    }
    const masq = yaml.load((await tb.client.get('/api/v1/namespaces/kube-system/configmaps/ip-masq-agent')).data?.config ?? '') as any;
    assert.deepEqual(masq.nonMasqueradeCIDRs, ['10.244.0.0/16'], 'ip-masq-agent as before');
    const check = await calicoIpamCheck(tb);
    assert.equal(check.problems, 0, check.output);
    const fill = withIP(await podsOf('fill'));
    assert.equal(fill.length, 32, 'the old pool\'s pods still run');
  });
});
