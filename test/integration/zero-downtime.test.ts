// Zero downtime, as a test (issue #6): a Service CIDR migration with the default strategy, run through the real
// CLI on the data-plane testbed (real kube-apiserver, kube-controller-manager, kube-proxy and CoreDNS; pods as
// network namespaces), while `kube-renumber probe` runs inside prober pods (dns, env, long-lived and kubernetes
// clients against every Service). Not one request may fail, over at least 50 Services and 100,000 requests.
// The scenario itself is test/testbed/zero-downtime.ts (shared with `npm run bench -- zero-downtime`).
// Needs root (ip netns).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_STRATEGY } from '../../src/plan/plan.ts';
import { runZeroDowntime } from '../testbed/zero-downtime.ts';

const isRoot = process.getuid?.() === 0;

describe('zero downtime on a real data plane', { skip: isRoot ? false : 'needs root for ip netns' }, () => {
  test(`Service CIDR migration with the default strategy (${DEFAULT_STRATEGY}): no failed request over 50 Services`, { timeout: 30 * 60_000 }, async () => {
    const f = await runZeroDowntime({
      scenario: DEFAULT_STRATEGY, services: 50, replicas: 2, intervalMs: 50,
      log: (m) => process.stderr.write(`# ${m}\n`),
    });
    const kinds = Object.entries(f.byKind).map(([k, v]) => `${k}: ${v.failures}/${v.requests} failed, longest gap ${v.longestGapMs} ms, ${JSON.stringify(v.failuresByReason)}`);
    process.stderr.write(`# ${f.requests} requests, ${f.failures} failed, longest gap ${f.longestGapMs} ms, migration ${Math.round(f.migrationMs / 1000)} s, ${f.probers} prober pod(s)\n# ${kinds.join('\n# ')}\n`);
    assert.ok(f.services >= 50);
    assert.ok(f.requests >= 100_000, `only ${f.requests} requests`);
    for (const k of ['dns', 'env', 'long', 'kubernetes']) assert.ok((f.byKind[k]?.requests ?? 0) > 0, `client kind ${k} ran`);
    assert.ok(f.probers >= 2, 'the prober pod was restarted with the workloads');
    assert.equal(f.failures, 0, `failed requests by kind:\n${kinds.join('\n')}\nby phase: ${JSON.stringify(f.failuresByPhase)}\nfirst failures:\n${f.sampleFailures.join('\n')}\n(reports in ${f.dir})`);
  });

  test(`the same with kube-proxy in nftables mode (10 Services)`, { timeout: 20 * 60_000 }, async () => {
    const f = await runZeroDowntime({
      scenario: DEFAULT_STRATEGY, services: 10, replicas: 2, intervalMs: 50, proxyMode: 'nftables',
      log: (m) => process.stderr.write(`# ${m}\n`),
    });
    const kinds = Object.entries(f.byKind).map(([k, v]) => `${k}: ${v.failures}/${v.requests} failed, longest gap ${v.longestGapMs} ms, ${JSON.stringify(v.failuresByReason)}`);
    process.stderr.write(`# nftables: ${f.requests} requests, ${f.failures} failed, longest gap ${f.longestGapMs} ms\n# ${kinds.join('\n# ')}\n`);
    assert.equal(f.proxyMode, 'nftables');
    assert.ok(f.requests >= 20_000, `only ${f.requests} requests`);
    for (const k of ['dns', 'env', 'long', 'kubernetes']) assert.ok((f.byKind[k]?.requests ?? 0) > 0, `client kind ${k} ran`);
    assert.equal(f.failures, 0, `failed requests by kind:\n${kinds.join('\n')}\nby phase: ${JSON.stringify(f.failuresByPhase)}\nfirst failures:\n${f.sampleFailures.join('\n')}\n(reports in ${f.dir})`);
  });
});
