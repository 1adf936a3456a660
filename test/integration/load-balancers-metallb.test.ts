// LoadBalancer Services moved into the new Service range (`plan --load-balancers move`) with MetalLB's controller,
// built from its Go module (go.universe.tf/metallb v0.16.2, test/testbed/metallb-build.ts), assigning the external
// addresses from an IPAddressPool. Each LoadBalancer Service is re-created at its new ClusterIP with
// metallb.io/loadBalancerIPs naming its current address: the external IP is the same before and after, the window in
// which it is unassigned (between the delete and MetalLB's new assignment) is measured from a client's view of the
// Service's status, rollback puts each one back at its old ClusterIP with the same external IP, and a run to the end
// leaves the old range empty: no kept ServiceCIDR, verify passes.
// No speaker runs (the testbed's nodes are kwok's): no packet goes to the pool's addresses (TEST-NET-1).
// Part of `npm test`: the controller is built by `build-all --background` (or here, when missing).

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { useTestbed } from '../testbed/harness.ts';
import { startMetalLB, type MetalLB } from '../testbed/metallb.ts';
import { ensureMetalLBBuilt, METALLB_VERSION } from '../testbed/metallb-build.ts';
import { run } from '../unit/run-cli.ts';
import { getJSON, inRange } from './pod-helpers.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const POOL = '192.0.2.0/28';
const NS = 'shop';
const LBS = ['api', 'front'];

// built here when missing; in `npm test`, build-all --background builds it and the runner starts this file once it is built
await ensureMetalLBBuilt({ version: METALLB_VERSION });

describe(`LoadBalancer Services moved with MetalLB ${METALLB_VERSION} (--load-balancers move)`, () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'kr-lb-'));
  let metallb: MetalLB | undefined;
  after(async () => { await metallb?.stop(); });
  const sans = ['--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1'];
  const common = (state: string) => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, state), '--timeout', '90s', '--propagation-delay', '0s'];
  const external = new Map<string, string>();
  const clusterIP = new Map<string, string>();
  const svc = async (name: string) => getJSON(tb, ['get', 'service', '-n', NS, name]);
  const ingressIP = (s: any): string | undefined => s.status?.loadBalancer?.ingress?.[0]?.ip;
  const apply = async (doc: unknown) => {
    const f = join(dir, `obj-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(f, JSON.stringify(doc));
    const r = await tb.kubectl(['apply', '-f', f]);
    assert.equal(r.code, 0, r.stderr);
  };
  const plan = async (file: string) => {
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--load-balancers', 'move', '--cluster-dns', 'none', ...sans, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err + r.out.slice(0, 2000));
    writeFileSync(file, r.out);
    return yaml.load(r.out) as any;
  };
  /**
   * Reads the LoadBalancer Services' status as often as it can while `f` runs and returns, per Service, the longest
   * time its first ingress IP was not the one it had before (unassigned, or the Service gone between delete and create).
   */
  const watched = async (f: () => Promise<void>): Promise<Map<string, number>> => {
    const gap = new Map<string, number>(LBS.map((n) => [n, 0]));
    const since = new Map<string, number>();
    let running = true;
    const loop = (async () => {
      while (running) {
        const items = (await getJSON(tb, ['get', 'services', '-n', NS])).items as any[];
        const now = Date.now();
        for (const n of LBS) {
          const s = items.find((x) => x.metadata.name === n);
          const ok = !!s && ingressIP(s) === external.get(n);
          if (!ok && !since.has(n)) since.set(n, now);
          if (ok && since.has(n)) { gap.set(n, Math.max(gap.get(n)!, now - since.get(n)!)); since.delete(n); }
        }
      }
    })();
    try { await f(); } finally { running = false; await loop; }
    for (const [n, t] of since) gap.set(n, Math.max(gap.get(n)!, Date.now() - t));
    return gap;
  };

  test('MetalLB (built from go.universe.tf/metallb v0.16.2) assigns the LoadBalancer Services addresses from its pool', async () => {
    metallb = await startMetalLB(tb, { addresses: [POOL] });
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'front', namespace: NS }, spec: { type: 'LoadBalancer', selector: { app: 'front' }, ports: [{ port: 80 }] } });
    await apply({
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: NS, annotations: { 'external-dns.alpha.kubernetes.io/hostname': 'api.example.test' } },
      spec: { type: 'LoadBalancer', selector: { app: 'api' }, ports: [{ port: 443 }] },
    });
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'plain', namespace: NS }, spec: { selector: { app: 'plain' }, ports: [{ port: 80 }] } });
    const deadline = Date.now() + 60_000;
    for (const n of LBS) {
      for (;;) {
        const s = await svc(n);
        if (ingressIP(s)) { external.set(n, ingressIP(s)!); clusterIP.set(n, s.spec.clusterIP); break; }
        assert.ok(Date.now() < deadline, `no address for ${n} in 60 s; MetalLB's log: ${readFileSync(metallb.log, 'utf8').slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(inRange(POOL, external.get(n)!), `${n}: ${external.get(n)}`);
      assert.ok(inRange(OLD, clusterIP.get(n)!), `${n}: ${clusterIP.get(n)}`);
      assert.equal((await svc(n)).metadata.annotations['metallb.io/ip-allocated-from-pool'], 'testbed-pool');
    }
  });

  test('plan --load-balancers move: no kept ServiceCIDR, each LoadBalancer re-created pinned by metallb.io/loadBalancerIPs, no address gate', async () => {
    const p = await plan(join(dir, 'plan-1.yaml'));
    assert.deepEqual(p.spec.serviceCIDR.kept, []);
    assert.equal(p.spec.options.loadBalancers, 'move');
    const moves = p.steps.filter((s: any) => s.kind === 'move-load-balancers');
    assert.deepEqual(moves.map((s: any) => s.items[0].name), LBS);
    for (const s of moves) {
      const it = s.items[0];
      assert.equal(it.loadBalancer.keeper, 'metallb');
      assert.deepEqual(it.loadBalancer.pin, { 'metallb.io/loadBalancerIPs': external.get(it.name) });
      assert.deepEqual(it.loadBalancer.changes, []);
      assert.ok(inRange(NEW, it.to[0]));
    }
    assert.deepEqual(moves.find((s: any) => s.items[0].name === 'api').items[0].loadBalancer.dnsNames, ['api.example.test']);
    assert.ok(!p.steps.some((s: any) => s.kind === 'gate' && s.gate.condition === 'load-balancer-address'), 'MetalLB keeps every address: no gate');
  });

  test('apply to the apiserver gate: each LoadBalancer at a new ClusterIP with the same external IP; the unassigned window measured', async (t) => {
    let r: Awaited<ReturnType<typeof run>> | undefined;
    const gaps = await watched(async () => { r = await run(['apply', join(dir, 'plan-1.yaml'), '--yes', '-v', ...common('state-1')]); });
    assert.equal(r!.code, 7, r!.err.slice(-3000));
    assert.match(r!.err, /stopped at gate restart-apiservers/);
    for (const n of LBS) {
      const s = await svc(n);
      assert.ok(inRange(NEW, s.spec.clusterIP), `${n} at ${s.spec.clusterIP}`);
      assert.equal(ingressIP(s), external.get(n), `${n} kept its external IP`);
      assert.equal(s.metadata.annotations['metallb.io/loadBalancerIPs'], external.get(n));
      const bridge = await svc(`${n}-kr-old`);
      assert.equal(bridge.spec.clusterIP, clusterIP.get(n), 'a bridge holds the old ClusterIP');
    }
    const logged = [...r!.err.matchAll(/LoadBalancer Service shop\/(\S+) at \S+: external (\S+) \(was (\S+)\), assigned again (\d+) ms after the delete began/g)];
    assert.deepEqual(logged.map((m) => m[1]).sort(), LBS);
    for (const m of logged) assert.equal(m[2], m[3]);
    const window = Math.max(...gaps.values());
    t.diagnostic(`external IP unassigned (seen by a client polling the Services' status): ${[...gaps].map(([n, ms]) => `${n} ${ms} ms`).join(', ')}; `
      + `the step's own measure (delete begun to address assigned): ${logged.map((m) => `${m[1]} ${m[4]} ms`).join(', ')}`);
    process.stderr.write(`[load-balancers] window: ${[...gaps].map(([n, ms]) => `${n} ${ms} ms`).join(', ')}; step: ${logged.map((m) => `${m[1]} ${m[4]} ms`).join(', ')}\n`);
    // a client polling through kubectl samples every few hundred ms: a shorter window may not be seen at all
    assert.ok(window < 30_000, `window ${window} ms`);
    for (const m of logged) assert.ok(Number(m[4]) < 30_000, `${m[1]}: ${m[4]} ms`);
  });

  test('rollback: each LoadBalancer back at its old ClusterIP with the same external IP, the pin annotation taken off', async () => {
    const r = await run(['rollback', join(dir, 'plan-1.yaml'), ...common('state-1')]);
    assert.equal(r.code, 0, r.err.slice(-3000));
    for (const n of LBS) {
      const s = await svc(n);
      assert.equal(s.spec.clusterIP, clusterIP.get(n), `${n} back at its old ClusterIP`);
      assert.equal(ingressIP(s), external.get(n), `${n} kept its external IP`);
      assert.equal(s.metadata.annotations['metallb.io/loadBalancerIPs'], undefined, 'pin taken off');
      assert.equal((await tb.kubectl(['get', 'service', '-n', NS, `${n}-kr-old`])).code, 1, 'bridge deleted');
    }
    // the target ServiceCIDR, deleted by the rollback, may stay Terminating a moment
    const deadline = Date.now() + 60_000;
    let scs: string[] = [];
    do {
      scs = (await getJSON(tb, ['get', 'servicecidrs'])).items.map((s: any) => s.metadata.name);
      if (scs.length === 1) break;
      await new Promise((r) => setTimeout(r, 500));
    } while (Date.now() < deadline);
    assert.deepEqual(scs, ['kubernetes']);
  });

  test('a run to the end: the old range ends empty (no kept ServiceCIDR), every external IP unchanged, verify passes', async () => {
    const planPath = join(dir, 'plan-2.yaml');
    await plan(planPath);
    let r = await run(['apply', planPath, '--yes', ...common('state-2')]);
    assert.equal(r.code, 7, r.err.slice(-3000));
    await tb.restartApiserver({ serviceCIDR: NEW });
    r = await run(['resume', planPath, '--yes', '-v', ...common('state-2')]);
    assert.equal(r.code, 0, r.err.slice(-3000));
    const v = await run(['verify', planPath, ...common('state-2')]);
    assert.equal(v.code, 0, v.err);
    for (const n of LBS) {
      const s = await svc(n);
      assert.ok(inRange(NEW, s.spec.clusterIP), `${n} at ${s.spec.clusterIP}`);
      assert.equal(ingressIP(s), external.get(n), `${n} kept its external IP`);
    }
    assert.ok(inRange(NEW, (await svc('plain')).spec.clusterIP));
    const scs = (await getJSON(tb, ['get', 'servicecidrs'])).items;
    assert.deepEqual(scs.map((s: any) => [s.metadata.name, s.spec.cidrs]), [['kubernetes', [NEW]]], 'no kept ServiceCIDR');
    const inOld = (await getJSON(tb, ['get', 'ipaddresses'])).items.map((a: any) => a.metadata.name).filter((ip: string) => inRange(OLD, ip));
    assert.deepEqual(inOld, [], 'the old range holds nothing');
  });
});
