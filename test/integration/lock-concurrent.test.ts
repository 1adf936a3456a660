// Two operators start the same migration at the same moment against the real control plane: exactly one takes the
// Lease and writes; the other sees the Lease renewed while it watches, stops with exit 8, and leaves nothing behind.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';

describe('two applies at once', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 20 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-lock2-'));
  const planPath = join(dir, 'plan.yaml');

  test('exactly one writes; the other exits 8 without a state directory', async () => {
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', '10.100.0.0/16', '--apiserver-cert-san', '10.96.0.1',
      '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(p.code, 0, p.err);
    writeFileSync(planPath, p.out);
    // the propagation delay keeps the winner holding the Lease well past the loser's first renewal check
    const args = (state: string) => ['apply', planPath, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, state), '--propagation-delay', '20s'];
    const [a, b] = await Promise.all([run(args('a')), run(args('b'))]);
    const codes = [a.code, b.code].sort();
    assert.deepEqual(codes, [7, 8], `a: ${a.code} ${a.err.slice(-800)}\nb: ${b.code} ${b.err.slice(-800)}`);
    const [winner, loser, loserDir, winnerDir] = a.code === 7 ? [a, b, 'b', 'a'] : [b, a, 'a', 'b'];
    assert.match(winner.err, /stopped at gate restart-apiservers/);
    assert.match(loser.err, /^error: another kube-renumber run holds the lock: .*renewed while this run watched it/m);
    assert.equal(loser.err.trim().split('\n').filter((l) => l.startsWith('error:')).length, 1);
    assert.equal(existsSync(join(dir, loserDir)), false, 'the loser left no state directory');
    const journal = readFileSync(join(dir, winnerDir, 'journal.jsonl'), 'utf8');
    assert.match(journal, /"event":"step-done"/);
    const leases = JSON.parse((await tb.kubectl(['get', 'leases', '-n', 'kube-system', '-o', 'json'])).stdout).items;
    assert.equal(leases.filter((l: any) => l.metadata.name === 'kube-renumber').length, 0, 'the winner released the Lease');
  });
});
