// A Service CIDR migration end to end against the real control plane: plan, apply until the apiserver gate,
// restart the apiserver with the new range (the harness does what a person or pipeline would), resume through
// the remaining gates, verify; every Service compared with its backup.

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { fileURLToPath } from 'node:url';
import { assertHandedOver, kubeconfigWithToken, servicesByKey, specWithoutIPs, udpServedDeployments } from './helpers.ts';

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';

describe('Service CIDR migration (in-place) on the real control plane', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 3, populate: { namespaces: 10, deployments: 1, replicas: 1, services: 200 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-svc-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir, '--timeout', '90s', '--propagation-delay', '0s'];
  let before: any[] = [];

  test('plan', async () => {
    before = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
    assert.ok(before.length >= 200, `${before.length} Services`);
    assert.ok(new Set(before.map((s: any) => s.metadata.namespace)).size >= 10, 'in at least 10 namespaces');
    for (const t of ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']) assert.ok(before.some((s: any) => s.spec.type === t), t);
    assert.ok(before.some((s: any) => s.spec.clusterIP === 'None'), 'headless');
    assert.ok(before.some((s: any) => s.spec.ports?.length > 1), 'multi-port');
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--service-cidr', NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(r.code, 0, r.err + r.out.slice(0, 2000));
    writeFileSync(planPath, r.out);
    assert.match(r.out, /kind: MigrationPlan/);
  });

  test('apply stops at the apiserver gate with exit 7 after moving every Service', async () => {
    const r = await run(['apply', planPath, '--yes', '-v', ...common()]);
    assert.equal(r.code, 7, r.err.slice(-3000));
    assert.match(r.err, /stopped at gate restart-apiservers/);
    // every in-place move went behind a cover (old and new IP as load-balancer status), and no cover is left
    const plan = yaml.load(readFileSync(planPath, 'utf8')) as any;
    const moved = plan.steps.filter((s: any) => s.kind === 'move-services').flatMap((s: any) => s.items);
    const covered = new Set([...r.err.matchAll(/cover (\S+)-kr-cover at \S+ for /g)].map((m) => m[1]));
    assert.equal(covered.size, moved.length, `${covered.size} of ${moved.length} moves covered`);
    const covers = JSON.parse((await tb.kubectl(['get', 'svc', '-A', '-l', 'kube-renumber.io/cover-for', '-o', 'json'])).stdout).items;
    assert.deepEqual(covers.map((c: any) => c.metadata.name), [], 'covers removed by their step');
    const dns = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
    assert.equal(dns.spec.clusterIP, '10.100.0.10');
    const bridge = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns-kr-old', '-o', 'json'])).stdout);
    assert.equal(bridge.spec.clusterIP, tb.fixture!.kubeDnsIP);
    // backups and journal are private
    assert.equal(statSync(join(stateDir, 'journal.jsonl')).mode & 0o777, 0o600);
    const files = readdirSync(join(stateDir, 'backups')).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 200);
    for (const f of files) assert.equal(statSync(join(stateDir, 'backups', f)).mode & 0o777, 0o600);
    // resume without doing what the gate says stops there again
    const again = await run(['resume', planPath, '--yes', ...common()]);
    assert.equal(again.code, 7, again.err);
  });

  test('after the apiserver restart, resume runs to the kubelet gate, then restarts the workloads itself and runs to the end', async () => {
    await tb.restartApiserver({ serviceCIDR: NEW });
    let r = await run(['resume', planPath, '--yes', ...common()]);
    assert.equal(r.code, 7, r.err);
    assert.match(r.err, /kubelet-cluster-dns/);
    const k = JSON.parse((await tb.kubectl(['get', 'svc', 'kubernetes', '-o', 'json'])).stdout);
    assert.equal(k.spec.clusterIP, '10.100.0.1');
    const deployments = async () => JSON.parse((await tb.kubectl(['get', 'deployments', '-A', '-o', 'json'])).stdout).items;
    const before = await deployments();
    const podUidsBefore = new Set<string>(JSON.parse((await tb.kubectl(['get', 'pods', '-A', '-o', 'json'])).stdout).items.map((p: any) => p.metadata.uid));
    r = await run(['resume', planPath, '--yes', '--ack-gate', 'kubelet-cluster-dns', '-v', ...common()]);
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.err, /stopped at gate restart-workloads/);
    // every Deployment restarted once by the run: rolled out (its pod template carries the run's token), or, serving
    // a UDP Service (CoreDNS), handed over pod by pod; each back at its replicas
    const after = await deployments();
    const handed = await udpServedDeployments(tb);
    assert.ok(handed.has('kube-system/coredns'), `CoreDNS is served by a UDP Service: ${[...handed].join(', ')}`);
    for (const d of after) {
      const key = `${d.metadata.namespace}/${d.metadata.name}`;
      const b = before.find((x: any) => x.metadata.namespace === d.metadata.namespace && x.metadata.name === d.metadata.name);
      const revision = Number(b.metadata.annotations['deployment.kubernetes.io/revision']);
      if (handed.has(key)) await assertHandedOver(tb, key, revision, podUidsBefore);
      else {
        assert.ok(d.spec.template.metadata.annotations?.['kube-renumber.io/restart'], `${key} restarted by the run`);
        assert.equal(Number(d.metadata.annotations['deployment.kubernetes.io/revision']), revision + 1, `${key} rolled out once`);
      }
      assert.equal(d.spec.replicas, b.spec.replicas, `${key} replicas as before`);
    }
    const journal = readFileSync(join(stateDir, 'journal.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const reported = new Set(journal.filter((e: any) => e.event === 'report' && e.step === 'restart-workloads' && e.objects).flatMap((e: any) => e.objects));
    for (const d of after) assert.ok(reported.has(`Deployment/${d.metadata.namespace}/${d.metadata.name}`), `Deployment ${d.metadata.namespace}/${d.metadata.name} journaled`);
  });

  test('verify: every Service where the plan puts it, specs unchanged but for the IPs', async () => {
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /^verified: every Service is where the plan puts it/);
    const vj = await run(['verify', planPath, '-o', 'json', ...common()]);
    assert.equal(vj.code, 0, vj.err);
    const vjo = JSON.parse(vj.out);
    assert.equal(vjo.verified, true);
    assert.equal(vjo.problem, undefined);
    assert.equal(vjo.checked.length, 1, 'a Service-only plan checks the Service end state');
    const byKey = await servicesByKey(tb);
    for (const s of before) {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      const a: any = byKey.get(key);
      assert.ok(a, `${key} exists`);
      if (key === 'default/kubernetes') continue;
      if (s.spec.type === 'ExternalName' || s.spec.clusterIP === 'None' || s.spec.type === 'LoadBalancer') {
        assert.deepEqual(a.spec, s.spec, `${key} untouched`);
        assert.equal(a.metadata.resourceVersion, s.metadata.resourceVersion, `${key} not even written`);
        continue;
      }
      assert.equal(a.metadata.uid, s.metadata.uid, `${key} kept its uid (in-place)`);
      const oldOffset = s.spec.clusterIP.split('.').slice(2).join('.');
      assert.equal(a.spec.clusterIP, `10.100.${oldOffset}`, `${key} keeps its offset`);
      assert.deepEqual(specWithoutIPs(a), specWithoutIPs(s), `${key} spec unchanged but for the IPs`);
      if (s.spec.type === 'NodePort') assert.deepEqual(a.spec.ports.map((p: any) => p.nodePort), s.spec.ports.map((p: any) => p.nodePort), `${key} nodePorts`);
    }
    const scs = JSON.parse((await tb.kubectl(['get', 'servicecidrs', '-o', 'json'])).stdout).items;
    const k = scs.find((x: any) => x.metadata.name === 'kubernetes');
    assert.deepEqual(k.spec.cidrs, [NEW]);
    assert.ok(!scs.some((x: any) => x.spec.cidrs.includes(OLD)), 'old range gone');
    const status = await run(['status', planPath, '--state-dir', stateDir, '-o', 'json']);
    assert.ok(JSON.parse(status.out).steps.every((s: any) => s.state === 'done'));
  });
});

describe('rollback after a partial run', () => {
  const tb = useTestbed({ serviceCIDR: OLD, podCIDR: '10.244.0.0/20', nodes: 2, populate: { namespaces: 2, deployments: 1, replicas: 1, services: 10 } });
  const dir = mkdtempSync(join(tmpdir(), 'kr-rb-'));
  const planPath = join(dir, 'plan.yaml');
  const stateDir = join(dir, 'state');

  test('restores every moved Service to its original IP and removes what the run created (under deploy/rbac-migrate.yaml)', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const rbac = await tb.kubectl(['apply', '-f', join(root, 'deploy/rbac.yaml'), '-f', join(root, 'deploy/rbac-migrate.yaml')]);
    assert.equal(rbac.code, 0, rbac.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber-migrate', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const kc = kubeconfigWithToken(tb.server, tok.stdout.trim());
    const can = await tb.kubectl(['auth', 'can-i', 'delete', 'nodes', '--as', 'system:serviceaccount:kube-system:kube-renumber-migrate']);
    assert.equal(can.stdout.trim(), 'no', 'least privilege: no access beyond what a migration needs');
    const before = JSON.parse((await tb.kubectl(['get', 'services', '-A', '-o', 'json'])).stdout).items;
    const p = await run(['plan', '--kubeconfig', kc, '--service-cidr', NEW, '--strategy', 'in-place',
      '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(p.code, 0, p.err);
    writeFileSync(planPath, p.out);
    const a = await run(['apply', planPath, '--yes', '--kubeconfig', kc, '--state-dir', stateDir]);
    assert.equal(a.code, 7, a.err);
    const moved = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
    assert.equal(moved.spec.clusterIP, '10.100.0.10');

    const r = await run(['rollback', planPath, '--kubeconfig', kc, '--state-dir', stateDir, '--timeout', '60s']);
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, /move-dns\s+undone/);
    // rolled back is not the plan's end state: verify says so, in JSON too, with exit 6
    const v = await run(['verify', planPath, '-o', 'json', '--kubeconfig', kc, '--state-dir', stateDir]);
    assert.equal(v.code, 6, v.err);
    const vo = JSON.parse(v.out);
    assert.equal(vo.verified, false);
    assert.match(vo.problem, /./);
    assert.equal(v.err, `error: not in the end state: ${vo.problem}\n`);
    const byKey = await servicesByKey(tb);
    for (const s of before) {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      const x: any = byKey.get(key);
      assert.ok(x, `${key} exists`);
      assert.deepEqual(x.spec.clusterIPs, s.spec.clusterIPs, `${key} back at its original IPs`);
      assert.equal(x.metadata.uid, s.metadata.uid, `${key} same object`);
    }
    assert.equal(byKey.size, before.length, 'no bridge left');
    const scs = JSON.parse((await tb.kubectl(['get', 'servicecidrs', '-o', 'json'])).stdout).items;
    assert.deepEqual(scs.map((x: any) => x.metadata.name), ['kubernetes'], 'only the original ServiceCIDR remains');
  });

  test('a Lease another run keeps renewing stops apply with exit 8 and changes nothing', async () => {
    const micro = () => new Date().toISOString().replace(/Z$/, '000Z');
    const dirL = mkdtempSync(join(tmpdir(), 'kr-lease-'));
    const writeLease = async () => {
      // alice's run renews its Lease every second, as a live run does; her clock is an hour behind ours
      const renewTime = new Date(Date.now() - 3_600_000).toISOString().replace(/Z$/, '000Z');
      const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'kube-renumber', namespace: 'kube-system' },
        spec: { holderIdentity: 'alice@elsewhere/other-run/41-0badc0de', leaseDurationSeconds: 120, renewTime, acquireTime: micro() } };
      writeFileSync(join(dirL, 'lease.json'), JSON.stringify(lease));
      return tb.kubectl(['apply', '-f', join(dirL, 'lease.json')]);
    };
    const c = await writeLease();
    assert.equal(c.code, 0, c.stderr);
    let renewing = true;
    const renewer = (async () => { while (renewing) { await new Promise((r) => setTimeout(r, 1000)); if (renewing) await writeLease(); } })();
    const before = (await tb.kubectl(['get', 'services', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\\n"}{end}'])).stdout;
    try {
      const r = await run(['apply', planPath, '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dirL, 'state')]);
      assert.equal(r.code, 8, r.err);
      assert.match(r.err, /held by alice@elsewhere\/other-run\/41-0badc0de: waiting up to 120s/);
      assert.match(r.err, /^error: another kube-renumber run holds the lock: Lease kube-system\/kube-renumber held by alice@elsewhere\/other-run\/41-0badc0de, renewed while this run watched it/m);
    } finally {
      renewing = false;
      await renewer;
    }
    const after = (await tb.kubectl(['get', 'services', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\\n"}{end}'])).stdout;
    assert.equal(after, before);
    const lease = JSON.parse((await tb.kubectl(['get', 'lease', '-n', 'kube-system', 'kube-renumber', '-o', 'json'])).stdout);
    assert.equal(lease.spec.holderIdentity, 'alice@elsewhere/other-run/41-0badc0de', 'the Lease was not taken');
    await tb.kubectl(['delete', 'lease', '-n', 'kube-system', 'kube-renumber']);
  });

  test('--dry-run=client and --dry-run=server change nothing; restore recreates a deleted Service from its backup', async () => {
    const snapshot = async () => (await tb.kubectl(['get', 'services,servicecidrs', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\\n"}{end}'])).stdout;
    const dirD = mkdtempSync(join(tmpdir(), 'kr-dry-'));
    const before = await snapshot();
    const c = await run(['apply', planPath, '--dry-run=client', '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dirD, 'c')]);
    assert.equal(c.code, 7, c.err);
    assert.match(c.err, /would move/);
    const sv = await run(['apply', planPath, '--dry-run=server', '--yes', '--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dirD, 's')]);
    assert.ok(sv.code === 0 || sv.code === 7, sv.err);
    assert.equal(await snapshot(), before, 'nothing written by either dry run');

    // restore: a Service the rollback run backed up is deleted by someone; restore brings it back
    const victim = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
    const del = await tb.kubectl(['delete', 'svc', '-n', 'kube-system', 'kube-dns']);
    assert.equal(del.code, 0, del.stderr);
    const r = await run(['restore', planPath, '-o', 'yaml', '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir]);
    assert.equal(r.code, 0, r.err);
    const objects: any[] = (yaml.load(r.out) as any).objects;
    assert.deepEqual(objects.filter((o) => o.result === 'restored'), [{ kind: 'Service', namespace: 'kube-system', name: 'kube-dns', result: 'restored' }]);
    // a second restore finds it there and leaves it (the table this time)
    const again = await run(['restore', planPath, '--kubeconfig', tb.kubeconfigPath, '--state-dir', stateDir]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /Service\/kube-system\/kube-dns\s+exists: left as it is/);
    assert.doesNotMatch(again.out, /\srestored$/m);
    const back = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
    assert.equal(back.spec.clusterIP, victim.spec.clusterIP, 'at the IP it had when backed up');
    assert.deepEqual(back.spec.selector, victim.spec.selector);
    assert.deepEqual(back.spec.ports, victim.spec.ports);
  });

  test('--only runs one batch once the steps before it are done, and stops naming the step that is not', async () => {
    const plan: any = yaml.load(readFileSync(planPath, 'utf8'));
    const ids: string[] = plan.steps.map((x: any) => x.id);
    const batch = plan.steps.find((x: any) => x.kind === 'move-services' && x.items.length > 0 && !x.items.some((i: any) => i.name === 'kube-dns'));
    assert.ok(batch, 'the plan has a batch of ordinary Services');
    // the first step that is not a confirmation (confirm-pod-disruption opens the plan; --yes passes it)
    const first = plan.steps.find((x: any) => x.kind !== 'confirm').id;
    const dirO = mkdtempSync(join(tmpdir(), 'kr-only-'));
    const state = join(dirO, 'state');
    const ipsNow = async () => new Map([...(await servicesByKey(tb)).entries()].map(([k, v]: [string, any]) => [k, v.spec.clusterIP]));
    const before = await ipsNow();

    // the batch comes after the target ServiceCIDR: --only the batch stops there, changing nothing
    const blocked = await run(['apply', planPath, '--yes', '--only', batch.id, '--kubeconfig', tb.kubeconfigPath, '--state-dir', state]);
    assert.equal(blocked.code, 7, blocked.err);
    assert.match(blocked.err, new RegExp(`stopped before ${batch.id}: ${first} comes before ${batch.id} and is not done`));
    assert.deepEqual(await ipsNow(), before, 'nothing moved');

    // every step before the batch, the batch itself: then only those Services moved
    const upTo = ids.slice(0, ids.indexOf(batch.id) + 1);
    const ran = await run(['apply', planPath, '--yes', '--only', upTo.join(','), '--kubeconfig', tb.kubeconfigPath, '--state-dir', state]);
    assert.equal(ran.code, 0, ran.err);
    assert.match(ran.out, /^completed: \d+ step\(s\) applied/);
    const after = await ipsNow();
    for (const it of batch.items) assert.equal(after.get(`${it.namespace}/${it.name}`), it.to[0], `${it.namespace}/${it.name} moved by the batch`);
    const moved = plan.mapping.filter((m: any) => m.action === 'move' && !batch.items.some((i: any) => i.namespace === m.namespace && i.name === m.name));
    for (const m of moved) assert.equal(after.get(`${m.namespace}/${m.name}`), m.from[0], `${m.namespace}/${m.name} (later step) untouched`);

    const st = await run(['status', planPath, '-o', 'json', '--state-dir', state]);
    assert.equal(st.code, 0, st.err);
    const rows = new Map(JSON.parse(st.out).steps.map((r: any) => [r.id, r.state]));
    assert.equal(rows.get(batch.id), 'done');
    assert.equal(rows.get(ids[ids.length - 1]), 'pending', 'the steps after the selection are left alone');

    // put the cluster back for anyone after us
    const rb = await run(['rollback', planPath, '-o', 'json', '--kubeconfig', tb.kubeconfigPath, '--state-dir', state, '--timeout', '60s']);
    assert.equal(rb.code, 0, rb.err + rb.out);
    const rbo = JSON.parse(rb.out);
    assert.ok(rbo.undone.includes(batch.id), `${batch.id} undone: ${rb.out}`);
    assert.deepEqual(rbo.notUndone, []);
    assert.deepEqual(await ipsNow(), before, 'rolled back');
  });
});
