// A full Service + Pod CIDR migration (one combined plan, Calico IPAM) with the CLI talking to the real
// kube-apiserver through the fault-injecting proxy (test/testbed/faults.ts): at least 10 % of its requests
// answered 429 with Retry-After, 500 or 503 without being forwarded, forwarded and then reset before the answer
// (applied, answer lost), or answered late. The run must still complete through its gates, verify must pass, and
// nothing may be lost: every Service keeps its uid, ports and selector, no bridge or cover is left, and the
// number of pods is the same before and after. The test's own kubectl talks to the apiserver directly.
//
// It prints one JSON line `{"faults":…}` with the figures (docs/reliability.md quotes one run).

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FAULT_KINDS, FaultProxy } from '../testbed/faults.ts';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { populateWorkloads } from '../testbed/workloads.ts';
import { run } from '../unit/run-cli.ts';
import { kubeconfigWithToken } from './helpers.ts';
import { activePodNetworkPods, assertAllPodsIn, assertWorkloadsReady, getJSON, inRange } from './pod-helpers.ts';

install();

const SVC_OLD = '10.96.0.0/16';
const SVC_NEW = '10.100.0.0/16';
const POD_OLD = '10.244.0.0/16';
const POD_NEW = '10.50.0.0/16';
const RATE = Number(process.env.KUBE_RENUMBER_FAULT_RATE ?? 0.15);
const SEED = Number(process.env.KUBE_RENUMBER_FAULT_SEED ?? 20261125);

const key = (o: any) => `${o.metadata.namespace}/${o.metadata.name}`;

describe('combined Service + Pod CIDR migration through a fault-injecting proxy', () => {
  const tb = useTestbed({ serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodes: 4, podIPAM: 'calico', populate: { namespaces: 3, deployments: 1, replicas: 1, services: 20 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-faults-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');

  test('completes, verifies, and loses nothing', { timeout: 1_500_000 }, async (t) => {
    await populateWorkloads(tb, { namespaces: 2, deploymentsPerNs: 2, replicas: 3, statefulSets: 1, statefulSetReplicas: 2 });
    const pki = join(tb.stateDir, 'pki', 'apiserver');
    const proxy = await FaultProxy.start({
      target: tb.server, cert: readFileSync(join(pki, 'apiserver.crt')), key: readFileSync(join(pki, 'apiserver.key')), rate: RATE, seed: SEED,
      // the run makes about 25 Lease requests: the draw alone misses all of them in about one run of 40
      leaseFault: { nth: 3, kind: '503' },
    });
    t.after(() => proxy.stop());
    const kc = kubeconfigWithToken(proxy.url, tb.token);
    const common = () => ['--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s', '--propagation-delay', '0s'];

    const servicesBefore = (await getJSON(tb, ['get', 'services', '-A'])).items;
    const podsBefore = (await activePodNetworkPods(tb)).length;

    const p = await run(['plan', '--kubeconfig', kc, '--service-cidr', SVC_NEW, '--pod-cidr', POD_NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    assert.match(p.out, /serviceCIDR:/);
    assert.match(p.out, /podCIDR:/);

    let r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate restart-apiservers/);
    await tb.restartApiserver({ serviceCIDR: SVC_NEW });
    const acks = ['--ack-gate', 'kubelet-cluster-dns', '--ack-gate', 'pod-cidr-config'];
    r = await run(['resume', planPath, '--yes', ...acks, ...common()]);
    assert.equal(r.code, 0, r.err);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);

    const stats = proxy.stats();
    // nothing lost: every Service, with its uid, ports and selector; nothing of ours left behind
    const after = (await getJSON(tb, ['get', 'services', '-A'])).items;
    const byKey = new Map<string, any>(after.map((s: any) => [key(s), s]));
    const lost: string[] = [];
    for (const s of servicesBefore) {
      const a = byKey.get(key(s));
      if (!a) { lost.push(`${key(s)} gone`); continue; }
      if (a.metadata.uid !== s.metadata.uid) lost.push(`${key(s)} uid ${s.metadata.uid} → ${a.metadata.uid}`);
      assert.deepEqual(a.spec.ports, s.spec.ports, `${key(s)} ports`);
      assert.deepEqual(a.spec.selector, s.spec.selector, `${key(s)} selector`);
      assert.equal(a.spec.type, s.spec.type, `${key(s)} type`);
    }
    const extra = after.filter((s: any) => !servicesBefore.some((b: any) => key(b) === key(s)));
    assert.deepEqual(extra.map(key), [], 'no bridge or cover Service left');
    assert.deepEqual(lost, [], 'no Service lost or re-created');
    const moved = after.filter((s: any) => s.spec.type !== 'ExternalName' && s.spec.clusterIP !== 'None' && s.spec.type !== 'LoadBalancer');
    assert.deepEqual(moved.filter((s: any) => !inRange(SVC_NEW, s.spec.clusterIP)).map(key), [], 'every Service in the new range');
    const podsAfter = await assertAllPodsIn(tb, POD_NEW, POD_OLD);
    await assertWorkloadsReady(tb);
    await assertCalicoIpamClean(tb, [POD_OLD]);
    assert.equal(podsAfter, podsBefore, 'as many pods after as before');
    const status = await run(['status', planPath, '--state-dir', stateDir, '-o', 'json']);
    assert.ok(JSON.parse(status.out).steps.every((s: any) => s.state === 'done'), status.out);

    // the faults really happened, at the share asked for, of every kind, on writes and on the Lease too
    assert.ok(stats.rate >= 0.1, `fault rate ${stats.rate}`);
    for (const k of FAULT_KINDS) assert.ok(stats.byKind[k] > 0, `no ${k} fault injected`);
    assert.ok(Object.entries(stats.byMethod).some(([m, s]) => m !== 'GET' && (s.faults.reset ?? 0) > 0), 'a write answered with a reset');
    assert.ok(stats.leases.faulted > 0, 'a Lease request faulted');
    console.log(JSON.stringify({
      faults: {
        seed: SEED, requests: stats.requests, faulted: stats.faulted, rate: Number(stats.rate.toFixed(4)), byKind: stats.byKind, byMethod: stats.byMethod,
        leases: stats.leases, services: servicesBefore.length, servicesLost: lost.length, podsBefore, podsAfter,
      },
    }));
  });
});
