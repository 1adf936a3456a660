// The run's adaptive window against an apiserver that says it is overloaded: a Service CIDR migration (in place)
// with the CLI talking to the real kube-apiserver through the fault proxy (test/testbed/faults.ts), which answers a
// share of the requests 429 TooManyRequests with Retry-After (as API Priority and Fairness does) without
// forwarding them. The run must honour each Retry-After for all of its requests, not only the one refused: no
// request of the run (the Lease's own connection aside, whose renewals go on) reaches the proxy while one is running; it must still
// complete and verify, and lose nothing (every Service keeps its uid, ports and selector; no helper left).
//
// It prints one JSON line `{"limiter":…}` with the figures (docs/reliability.md quotes one run).

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FaultProxy } from '../testbed/faults.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { kubeconfigWithToken, restartAllWorkloads } from './helpers.ts';
import { getJSON, inRange } from './pod-helpers.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const RATE = Number(process.env.KUBE_RENUMBER_FAULT_RATE ?? 0.1);
const SEED = Number(process.env.KUBE_RENUMBER_FAULT_SEED ?? 20261128);
const RETRY_AFTER_S = 2;
/** Requests already on their way when the 429 was answered arrive within this of it. */
const IN_FLIGHT_MS = 150;

const key = (o: any) => `${o.metadata.namespace}/${o.metadata.name}`;

describe('a Service CIDR migration honours 429 Retry-After with its whole window', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 12 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-limiter-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');

  test('slows down, holds every request for Retry-After, completes, loses nothing', { timeout: 1_200_000 }, async (t) => {
    const pki = join(tb.stateDir, 'pki', 'apiserver');
    const proxy = await FaultProxy.start({
      target: tb.server, cert: readFileSync(join(pki, 'apiserver.crt')), key: readFileSync(join(pki, 'apiserver.key')),
      rate: RATE, seed: SEED, weights: { 429: 1, 500: 0, 503: 0, reset: 0, slow: 0 }, retryAfterSeconds: RETRY_AFTER_S, timeline: true,
    });
    t.after(() => proxy.stop());
    const kc = kubeconfigWithToken(proxy.url, tb.token);
    const common = () => ['--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '120s', '--propagation-delay', '0s'];
    const servicesBefore = (await getJSON(tb, ['get', 'services', '-A'])).items;

    const p = await run(['plan', '--kubeconfig', kc, '--service-cidr', NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    writeFileSync(planPath, p.out);
    const t0 = Date.now();
    const applyFrom = proxy.timeline().length;
    let r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate restart-apiservers/);
    const applyLine = proxy.timeline().slice(applyFrom);
    const applyMs = Date.now() - t0;
    await tb.restartApiserver({ serviceCIDR: NEW });
    r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common()]);
    if (r.code === 7 && /restart-workloads/.test(r.err)) {
      await restartAllWorkloads(tb);
      r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common()]);
    }
    assert.equal(r.code, 0, r.err);
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);

    // nothing lost: every Service, with its uid, ports and selector; no bridge or cover left
    const after = (await getJSON(tb, ['get', 'services', '-A'])).items;
    const byKey = new Map<string, any>(after.map((s: any) => [key(s), s]));
    const lost: string[] = [];
    for (const s of servicesBefore) {
      const a = byKey.get(key(s));
      if (!a) { lost.push(`${key(s)} gone`); continue; }
      if (a.metadata.uid !== s.metadata.uid) lost.push(`${key(s)} uid ${s.metadata.uid} → ${a.metadata.uid}`);
      assert.deepEqual(a.spec.ports, s.spec.ports, `${key(s)} ports`);
      assert.deepEqual(a.spec.selector, s.spec.selector, `${key(s)} selector`);
    }
    assert.deepEqual(lost, [], 'no Service lost or re-created');
    assert.deepEqual(after.filter((s: any) => !servicesBefore.some((b: any) => key(b) === key(s))).map(key), [], 'no bridge or cover left');
    const moved = after.filter((s: any) => s.spec.type !== 'ExternalName' && s.spec.clusterIP !== 'None' && s.spec.type !== 'LoadBalancer');
    assert.deepEqual(moved.filter((s: any) => !inRange(NEW, s.spec.clusterIP)).map(key), [], 'every Service in the new range');

    // the faults happened, and each Retry-After held the whole run (apply's process: one window): after a 429 to a
    // request of the run, nothing of the run but the Lease's own connection arrives until it has passed
    const refused = applyLine.filter((e) => e.fault === '429' && !e.path.includes('/leases'));
    assert.ok(refused.length >= 3, `${refused.length} requests of apply answered 429`);
    const early: string[] = [];
    for (const f of refused) {
      const inside = applyLine.filter((e) => !e.path.includes('/leases') && e.at > f.at + IN_FLIGHT_MS && e.at < f.at + RETRY_AFTER_S * 1000 - 50);
      for (const e of inside) early.push(`${e.method} ${e.path} ${e.at - f.at} ms after the 429 at ${f.at - t0} ms`);
    }
    assert.deepEqual(early, [], 'requests sent while a Retry-After held the run');
    // the Lease renews on its own connection: its requests go on while the run is held
    const leaseInHolds = applyLine.filter((e) => e.path.includes('/leases') && refused.some((f) => e.at > f.at + IN_FLIGHT_MS && e.at < f.at + RETRY_AFTER_S * 1000));
    assert.ok(leaseInHolds.length > 0, 'no Lease request while a Retry-After held the run');
    // the run slowed down accordingly: apply's time holds at least the Retry-Afters that did not overlap
    let held = 0;
    let until = 0;
    for (const f of refused) {
      const end = f.at + RETRY_AFTER_S * 1000;
      held += Math.max(0, end - Math.max(f.at, until));
      until = Math.max(until, end);
    }
    assert.ok(applyMs >= held, `apply took ${applyMs} ms, the Retry-Afters ${held} ms`);
    const stats = proxy.stats();
    console.log(JSON.stringify({
      limiter: {
        seed: SEED, rate: Number(stats.rate.toFixed(4)), requests: stats.requests, answered429: stats.byKind['429'], applyRequests: applyLine.length,
        apply429: refused.length, applyMs, retryAfterHeldMs: held, earlyRequests: early.length, leaseRequestsInHolds: leaseInHolds.length, services: servicesBefore.length, servicesLost: lost.length,
      },
    }));
  });
});
