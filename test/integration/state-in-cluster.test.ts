// The state directory lost mid-run: a run killed in the middle of moving Services, its state directory deleted,
// is finished (resume) or undone (rollback, restore) from a fresh, empty state directory, as on another machine,
// from the copy of the run's state the cluster holds (Secrets in namespace kube-renumber). Nothing is lost.
// Every run goes as the ServiceAccount of the shipped roles (deploy/rbac*.yaml); one without them is refused
// before its first write, the missing verbs named.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ClusterState, chunkSecrets, COMPACT_AFTER, readClusterCopy, STATE_NAMESPACE, STATE_RUN_LABEL, STATE_SEQ_LABEL } from '../../src/engine/cluster-state.ts';
import type { JournalEntry } from '../../src/engine/journal.ts';
import { connect } from '../../src/kube/client.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { cli, kubeconfigWithToken, servicesByKey, ServiceGates, specWithoutIPs, writeServicePlan } from './helpers.ts';
import { migrateKubeconfig } from './pod-helpers.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

describe('state directory deleted mid-run: resume, rollback and restore from an empty one', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 1, populate: { namespaces: 1, deployments: 1, replicas: 1, services: 3 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-state-lost-'));
  let kc = '';
  const common = (state: string) => ['--kubeconfig', kc, '--state-dir', state, '--timeout', '90s', '--propagation-delay', '0s', '--force-unlock'];

  const plan = (strategy: string) => writeServicePlan(tb.kubeconfigPath, dir, NEW, strategy);

  const services = async () => [...(await servicesByKey(tb)).values()].filter((s: any) => !s.metadata.labels?.['kube-renumber.io/managed']);

  test('NodePort Service to move in place; the shipped roles', async () => {
    const r = await tb.kubectl(['create', 'service', 'nodeport', 'np', '-n', 'default', '--tcp=80:8080', '--node-port=30080']);
    assert.equal(r.code, 0, r.stderr);
    kc = await migrateKubeconfig(tb);
  });

  test('with the read-only roles alone, apply is refused before its first write, naming what is missing (exit 5)', async () => {
    const planPath = await plan('in-place');
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber', '-n', 'kube-system', '--duration', '1h']);
    assert.equal(tok.code, 0, tok.stderr);
    const ro = kubeconfigWithToken(tb.server, tok.stdout.trim());
    const r = await run(['apply', planPath, '--yes', '--kubeconfig', ro, '--state-dir', join(dir, 'ro')]);
    assert.equal(r.code, 5, r.err);
    assert.match(r.err, /^error: not allowed for user "system:serviceaccount:kube-system:kube-renumber": create leases\.coordination\.k8s\.io -n kube-system .*patch services .*grant the permissions in deploy\/rbac-migrate\.yaml \(nothing was changed\)$/m);
    const lease = await tb.kubectl(['get', 'lease', '-n', 'kube-system', 'kube-renumber']);
    assert.notEqual(lease.code, 0, 'no Lease taken');
    const secrets = await tb.kubectl(['get', 'secrets', '-n', 'kube-renumber', '-o', 'name']);
    assert.equal(secrets.stdout.trim(), '', 'no state written');
  });

  test('recreate: killed after a Service was deleted, state directory gone; rollback and restore from an empty one bring it back', { timeout: 10 * 60_000 }, async () => {
    const before = await services();
    const planPath = await plan('recreate');
    const first = join(dir, 'recreate-1');
    // the Service is deleted, and the process dies before it is created again
    const k = await cli(['apply', planPath, '--yes', ...common(first)], { KUBE_RENUMBER_TEST_KILL_AT: 'DELETE:/services/:1' });
    assert.equal(k.signal, 'SIGKILL', k.err);
    const now = await services();
    const missing = before.filter((s: any) => !now.some((n: any) => n.metadata.uid === s.metadata.uid));
    // moves run a few at a time: others may have been deleted with it
    assert.ok(missing.length >= 1, 'a Service deleted when the run died');
    rmSync(first, { recursive: true, force: true });

    const second = join(dir, 'recreate-2');
    // rollback undoes the batch the kill left half done: the deleted Services come back at their old IPs from the
    // backups it read from the cluster; restore then finds them there
    const rb = await run(['rollback', planPath, ...common(second)]);
    assert.equal(rb.code, 0, `rollback: ${rb.err}`);
    assert.match(rb.err, /from the run's copy in the cluster/);
    const back = await servicesByKey(tb);
    for (const gone of missing) assert.ok(back.has(`${gone.metadata.namespace}/${gone.metadata.name}`), `${gone.metadata.name} brought back by rollback`);
    const rs = await run(['restore', planPath, ...common(second), '-o', 'json']);
    assert.equal(rs.code, 0, rs.err);
    const rows = JSON.parse(rs.out).objects;
    for (const gone of missing) assert.ok(rows.some((r: any) => r.name === gone.metadata.name && r.result === 'exists'), rs.out);
    assert.ok(!rows.some((r: any) => r.result === 'failed'), rs.out);
    const after = await servicesByKey(tb);
    for (const s of before) {
      const a = after.get(`${s.metadata.namespace}/${s.metadata.name}`);
      assert.ok(a, `${s.metadata.namespace}/${s.metadata.name} is there`);
      assert.deepEqual(a.spec.clusterIPs, s.spec.clusterIPs, `${s.metadata.name} at its IPs`);
      if (s.spec.type === 'NodePort') assert.deepEqual(a.spec.ports.map((x: any) => x.nodePort), s.spec.ports.map((x: any) => x.nodePort), 'nodePorts');
      assert.deepEqual(specWithoutIPs(a), specWithoutIPs(s), `${s.metadata.name} spec`);
    }
  });

  test('in place: killed after a Service became ExternalName, state directory gone; resume from an empty one finishes', { timeout: 15 * 60_000 }, async () => {
    const before = await services();
    const planPath = await plan('in-place');
    const first = join(dir, 'inplace-1');
    const k = await cli(['apply', planPath, '--yes', ...common(first)], { KUBE_RENUMBER_TEST_KILL_AT: 'PATCH:/services/:1:ExternalName' });
    assert.equal(k.signal, 'SIGKILL', k.err);
    const ext = (await services()).filter((s: any) => s.spec.type === 'ExternalName');
    assert.ok(ext.length >= 1, 'a Service is ExternalName when the run died');
    rmSync(first, { recursive: true, force: true });

    const gates = new ServiceGates(tb, NEW);
    let n = 0;
    for (let i = 0; i < 6; i++) {
      // a fresh, empty state directory each time: everything comes from the cluster
      const fresh = join(dir, `inplace-${i + 2}`);
      const r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', ...common(fresh)]);
      n++;
      if (r.code === 0) break;
      assert.equal(r.code, 7, r.err);
      await gates.pass(r.err);
    }
    assert.ok(gates.both, `${n} resumes`);
    const v = await run(['verify', planPath, '--kubeconfig', kc, '--state-dir', join(dir, 'inplace-verify')]);
    assert.equal(v.code, 0, v.err);
    const after = await servicesByKey(tb);
    for (const s of before) {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      const a = after.get(key);
      assert.ok(a, `${key} survived`);
      assert.equal(a.metadata.uid, s.metadata.uid, `${key} kept its uid`);
      assert.equal(a.spec.type, s.spec.type, `${key} type`);
      if (key === 'default/kubernetes' || s.spec.type === 'ExternalName' || s.spec.type === 'LoadBalancer' || s.spec.clusterIP === 'None') continue;
      assert.equal(a.spec.clusterIP, `10.100.${s.spec.clusterIP.split('.').slice(2).join('.')}`, `${key} at its mapped IP`);
      assert.deepEqual(specWithoutIPs(a), specWithoutIPs(s), `${key} spec (nodePorts too) unchanged but for the IPs`);
    }
    const st = await run(['status', planPath, '--kubeconfig', kc, '--state-dir', join(dir, 'inplace-status'), '-o', 'json']);
    assert.equal(st.code, 0, st.err);
    assert.ok(JSON.parse(st.out).steps.every((s: any) => s.state === 'done' || s.kind !== 'action'), st.out);
  });

  test('a compaction under the shipped roles: one DELETE of the collection leaves the base and what came after, older chunks of any form go', async () => {
    const client = connect({ kubeconfig: kc });
    const RUN = 'compaction0001';
    const entry = (step: string): JournalEntry => ({ ts: new Date().toISOString(), run: RUN, event: 'step-start', step });
    // a chunk as written before chunks carried their seq as a label
    const old = chunkSecrets(RUN, 0, { journal: [entry('old')], backups: [] })[0]!;
    delete old.metadata!.labels![STATE_SEQ_LABEL];
    await client.request('POST', `/api/v1/namespaces/${STATE_NAMESPACE}/secrets`, { body: old });
    // an unrelated run's chunk stays
    await client.request('POST', `/api/v1/namespaces/${STATE_NAMESPACE}/secrets`, { body: chunkSecrets('otherrun00001', 0, { journal: [], backups: [] })[0] });
    const state = new ClusterState(client, RUN);
    state.startFrom(await readClusterCopy(client, RUN));
    for (let i = 0; i < COMPACT_AFTER + 2; i++) {
      state.enqueueJournal(entry(`s${i}`));
      await state.flush();
    }
    const names = async (sel: string) => (await tb.kubectl(['get', 'secrets', '-n', STATE_NAMESPACE, '-l', sel, '-o', 'jsonpath={range .items[*]}{.metadata.labels.kube-renumber\\.io/state-seq}{"\\n"}{end}'])).stdout.trim().split('\n').filter(Boolean);
    const left = (await names(`${STATE_RUN_LABEL}=${RUN}`)).map(Number).sort((a, b) => a - b);
    assert.ok(left.length <= 3 && left.length >= 1, `chunks left: ${left.join(', ')}`);
    assert.ok(left.every((s) => s >= COMPACT_AFTER - 1), `only the base and what came after it: ${left.join(', ')}`);
    assert.deepEqual(await names(`${STATE_RUN_LABEL}=otherrun00001`), ['0'], 'another run\'s chunk is left alone');
    const copy = (await readClusterCopy(client, RUN))!;
    assert.deepEqual(copy.journal.map((e) => e.step).filter((s) => s !== 'old').slice(-3), [`s${COMPACT_AFTER - 1}`, `s${COMPACT_AFTER}`, `s${COMPACT_AFTER + 1}`]);
    assert.equal(copy.journal.filter((e) => e.step !== 'old').length, COMPACT_AFTER + 2, 'nothing lost by the compaction');
    await tb.kubectl(['delete', 'secrets', '-n', STATE_NAMESPACE, '-l', `${STATE_RUN_LABEL} in (${RUN},otherrun00001)`]);
  });
});
