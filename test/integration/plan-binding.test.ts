// A plan bound to its cluster, on the real control plane: another cluster's plan and a plan whose pre-flight
// check fails now are refused before anything is written (no state directory, no Lease, no object changed); a
// dry run leaves no state behind; an unlabelled Service squatting a cover's name stops the run and is left as it
// was; rollback then apply of the same plan moves every Service again, through to a passing verify.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { restartAllWorkloads, servicesByKey } from './helpers.ts';
import { backupFileName } from '../../src/engine/backup.ts';
import { planId } from '../../src/cli/commands/apply.ts';

install();

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

describe('plans bound to their cluster, ownership and re-runs on the real control plane', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 8 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-bound-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const live = () => ['--kubeconfig', tb.kubeconfigPath, '--timeout', '90s', '--propagation-delay', '0s'];
  const versions = async () => (await tb.kubectl(['get', 'services,servicecidrs', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\\n"}{end}'])).stdout;
  const leaseExists = async () => (await tb.kubectl(['get', 'lease', '-n', 'kube-system', 'kube-renumber'])).code === 0;
  const planLive = async (extra: string[] = []) => {
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--strategy', 'in-place', '--restart-workloads=manual',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', ...extra, '-o', 'yaml']);
    assert.equal(p.code, 0, p.err);
    return p.out;
  };
  let plan: any;

  test('plan records the live kube-system uid', async () => {
    writeFileSync(planPath, await planLive());
    plan = yaml.load(readFileSync(planPath, 'utf8'));
    const ns = JSON.parse((await tb.kubectl(['get', 'namespace', 'kube-system', '-o', 'json'])).stdout);
    assert.equal(plan.metadata.cluster.uid, ns.metadata.uid);
    assert.match(plan.metadata.cluster.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(plan.preflight[0].id, 'cluster-identity');
    assert.equal(plan.preflight[0].status, 'pass');
  });

  test('another cluster\'s plan is refused with exit 2, nothing written, before the Lease', async () => {
    const other = join(dir, 'other.yaml');
    writeFileSync(other, yaml.dump({ ...plan, metadata: { ...plan.metadata, cluster: { uid: '0b7e4d20-51aa-4f0e-8b1d-3e6c9a2f7d55', server: 'https://prod.example:6443' } } }));
    const before = await versions();
    const state = join(dir, 'other-state');
    for (const cmd of ['apply', 'resume', 'rollback', 'restore']) {
      const r = await run([cmd, other, ...(cmd === 'apply' ? ['--yes', '--accept-unbound-plan'] : []), '--state-dir', state, ...live()]);
      assert.equal(r.code, 2, `${cmd}: ${r.err}`);
      assert.match(r.err, /^error: the plan was written for another cluster: kube-system uid 0b7e4d20-51aa-4f0e-8b1d-3e6c9a2f7d55 \(https:\/\/prod\.example:6443\), and this cluster's is [0-9a-f-]+ \(https:\/\/127\.0\.0\.1:\d+\): plan again against this cluster \(nothing was changed\)\n$/);
      assert.equal(existsSync(state), false, `${cmd}: no state directory`);
    }
    assert.equal(await leaseExists(), false, 'no Lease taken');
    assert.equal(await versions(), before, 'no object written');
  });

  test('a plan whose pre-flight check fails now is refused before any write, whatever its file says', async () => {
    assert.equal((await tb.kubectl(['create', 'service', 'clusterip', 'keepme', '--tcp=80:80', '-n', 'default'])).code, 0);
    const kept = join(dir, 'kept.yaml');
    const text = await planLive(['--keep', 'default/keepme']);
    assert.equal(((yaml.load(text) as any).preflight as any[]).find((c) => c.id === 'keep').status, 'pass');
    assert.equal((await tb.kubectl(['delete', 'service', 'keepme', '-n', 'default'])).code, 0);
    // the file still says every check passed; apply decides from the cluster
    writeFileSync(kept, text);
    const before = await versions();
    const state = join(dir, 'kept-state');
    const r = await run(['apply', kept, '--yes', '--state-dir', state, ...live()]);
    assert.equal(r.code, 6, r.err);
    assert.match(r.err, /^error: pre-flight check keep fails against the live cluster: --keep names no Service: default\/keepme .*; nothing was changed\n$/);
    assert.equal(existsSync(state), false, 'no state directory');
    assert.equal(await leaseExists(), false, 'no Lease taken');
    assert.equal(await versions(), before, 'no object written');
  });

  test('a dry run writes nothing into the state directory, and status shows nothing started', async () => {
    const state = join(dir, 'dry-state');
    for (const mode of ['client', 'server']) {
      const r = await run(['apply', planPath, '--yes', `--dry-run=${mode}`, '--state-dir', state, ...live()]);
      assert.ok(r.code === 0 || r.code === 7, `${mode}: ${r.err}`);
      assert.equal(existsSync(state), false, `--dry-run=${mode}: no state directory (plan copy, journal, lock)`);
    }
    const st = await run(['status', planPath, '--state-dir', state, '-o', 'json']);
    assert.equal(st.code, 0, st.err);
    assert.ok(JSON.parse(st.out).steps.every((s: any) => s.state === 'pending'), st.out);
  });

  const firstBatch = () => plan.steps.find((s: any) => s.kind === 'move-services' && s.items.length > 0);
  const skipToBridges = () => plan.steps.filter((s: any) => s.kind !== 'create-servicecidrs' && s.kind !== 'move-services' && s.kind !== 'confirm' && s.kind !== 'remove-bridges')
    .map((s: any) => s.id).join(',');

  test('an unlabelled Service squatting a cover\'s name stops the run (exit 6) and is left untouched', async () => {
    const it0 = firstBatch().items[0];
    const squat = `${it0.name}-kr-cover`;
    assert.equal((await tb.kubectl(['create', 'service', 'clusterip', squat, '--tcp=81:81', '-n', it0.namespace])).code, 0);
    const was = JSON.parse((await tb.kubectl(['get', 'svc', squat, '-n', it0.namespace, '-o', 'json'])).stdout);
    const ips = async () => new Map([...(await servicesByKey(tb)).entries()].map(([k, v]: [string, any]) => [k, v.spec.clusterIP]));
    const before = await ips();
    const r = await run(['apply', planPath, '--yes', '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 6, r.err);
    assert.match(r.err, new RegExp(`error: .*Service ${it0.namespace}/${squat} has the name of a kube-renumber helper but is not one of this run's .*it was left untouched`));
    const now = JSON.parse((await tb.kubectl(['get', 'svc', squat, '-n', it0.namespace, '-o', 'json'])).stdout);
    assert.equal(now.metadata.uid, was.metadata.uid);
    assert.equal(now.metadata.resourceVersion, was.metadata.resourceVersion, 'not patched');
    const after = await ips();
    for (const it of firstBatch().items) assert.equal(after.get(`${it.namespace}/${it.name}`), before.get(`${it.namespace}/${it.name}`), `${it.namespace}/${it.name} not moved`);
    assert.equal((await tb.kubectl(['delete', 'svc', squat, '-n', it0.namespace])).code, 0);
  });

  test('rollback then apply of the same plan moves every Service again, and verify passes', { timeout: 20 * 60_000 }, async () => {
    const moved = plan.mapping.filter((m: any) => m.action === 'move' && !m.isKubernetes);
    const at = async () => { const by = await servicesByKey(tb); return moved.map((m: any) => (by.get(`${m.namespace}/${m.name}`) as any)?.spec.clusterIP); };
    // a run that reaches remove-bridges (everything else left out), then its rollback
    let r = await run(['apply', planPath, '--yes', '--skip', skipToBridges(), '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(await at(), moved.map((m: any) => m.to[0]), 'moved by the first run');
    r = await run(['rollback', planPath, '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 0, r.err + r.out);
    assert.deepEqual(await at(), moved.map((m: any) => m.from[0]), 'back at the old IPs');
    // the same plan again: every Service moves again (remove-bridges reached before the rollback supersedes nothing)
    r = await run(['apply', planPath, '--yes', '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /stopped at gate restart-apiservers/);
    assert.doesNotMatch(r.err, /move-\S+: already done/);
    assert.deepEqual(await at(), moved.map((m: any) => m.to[0]), 'moved again');
    await tb.restartApiserver({ serviceCIDR: NEW });
    r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /restart-workloads/);
    await restartAllWorkloads(tb);
    r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 0, r.err);
    const v = await run(['verify', planPath, '--state-dir', stateDir, ...live()]);
    assert.equal(v.code, 0, v.err);
  });

  test('restore re-creates only what this plan\'s run backed up from this cluster', async () => {
    const ns = JSON.parse((await tb.kubectl(['get', 'namespace', 'kube-system', '-o', 'json'])).stdout);
    const forged = (name: string, run: string, cluster?: string) => {
      const object = { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { type: 'ClusterIP', ports: [{ port: 80 }] } };
      writeFileSync(join(stateDir, 'backups', backupFileName({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name })),
        JSON.stringify({ takenAt: new Date().toISOString(), run, ...(cluster ? { cluster } : {}), object }), { mode: 0o600 });
    };
    forged('planted-by-other-run', 'fedcba987654', ns.metadata.uid);
    forged('planted-from-other-cluster', planId(readFileSync(planPath, 'utf8')), '0b7e4d20-51aa-4f0e-8b1d-3e6c9a2f7d55');
    const r = await run(['restore', planPath, '-o', 'json', '--state-dir', stateDir, ...live()]);
    assert.equal(r.code, 0, r.err);
    const rows = JSON.parse(r.out).objects;
    const row = (name: string) => rows.find((o: any) => o.name === name);
    assert.equal(row('planted-by-other-run').result, 'skipped');
    assert.match(row('planted-by-other-run').detail, /backed up by another run \(fedcba987654\)/);
    assert.equal(row('planted-from-other-cluster').result, 'skipped');
    assert.match(row('planted-from-other-cluster').detail, /backed up from another cluster/);
    assert.ok(!rows.some((o: any) => o.result === 'restored'), r.out);
    for (const name of ['planted-by-other-run', 'planted-from-other-cluster']) {
      assert.notEqual((await tb.kubectl(['get', 'svc', name, '-n', 'default'])).code, 0, `${name} not created`);
    }
  });
});
