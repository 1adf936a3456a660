// deploy/job-apply.yaml stays consistent with the least-privilege roles (deploy/rbac*.yaml), the CLI's flags and
// the image (deploy/Containerfile): the ServiceAccount it runs as is the one the roles are bound to, the plan
// and the state directory are on the volumes it mounts, every flag is one apply takes.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { applyCommand } from '../../src/cli/commands/apply.ts';
import { GLOBAL_OPTIONS } from '../../src/cli/main.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const docs = (f: string) => yaml.loadAll(readFileSync(join(ROOT, 'deploy', f), 'utf8')).filter(Boolean) as any[];
const job = docs('job-apply.yaml');
const rbac = ['rbac.yaml', 'rbac-migrate.yaml', 'rbac-migrate-pods.yaml'].flatMap(docs);
const theJob = job.find((d) => d.kind === 'Job');
const pod = theJob.spec.template.spec;
const container = pod.containers[0];
const within = (path: string, dir: string) => path === dir || path.startsWith(`${dir.replace(/\/$/, '')}/`);

describe('deploy/job-apply.yaml', () => {
  it('runs as the ServiceAccount the migration roles are bound to, in its namespace, with its token mounted', () => {
    const ns = theJob.metadata.namespace;
    const sa = pod.serviceAccountName;
    assert.ok(rbac.some((d) => d.kind === 'ServiceAccount' && d.metadata.name === sa && d.metadata.namespace === ns), `ServiceAccount ${ns}/${sa} is defined`);
    const boundTo = (roleKind: string) => rbac.filter((d) => /Binding$/.test(d.kind) && d.roleRef.kind === roleKind
      && d.subjects.some((s: any) => s.kind === 'ServiceAccount' && s.name === sa && s.namespace === ns));
    const clusterRoles = boundTo('ClusterRole').map((b) => b.roleRef.name).sort();
    // read, migrate (Services), migrate-pods (Pod CIDR moves)
    assert.deepEqual(clusterRoles, ['kube-renumber-migrate', 'kube-renumber-migrate-pods', 'kube-renumber-read'].sort());
    for (const name of clusterRoles) assert.ok(rbac.some((d) => d.kind === 'ClusterRole' && d.metadata.name === name), `ClusterRole ${name} exists`);
    // the Lease kube-system/kube-renumber: the lock Role in kube-system, bound to the same account
    const lock = boundTo('Role').find((b) => b.roleRef.name === 'kube-renumber-lock');
    assert.equal(lock?.metadata.namespace, 'kube-system');
    const role = rbac.find((d) => d.kind === 'Role' && d.metadata.name === 'kube-renumber-lock');
    // create on any Lease (the object does not exist yet), the rest only on the run's Lease
    const leaseVerbs = (named: boolean) => role.rules.filter((r: any) => r.resources.includes('leases') && (r.resourceNames?.includes('kube-renumber') ?? false) === named).flatMap((r: any) => r.verbs);
    assert.ok(leaseVerbs(false).includes('create'));
    for (const v of ['get', 'update', 'delete']) assert.ok(leaseVerbs(true).includes(v), `${v} on the Lease kube-renumber`);
    // the run's state kept in the cluster: Secrets in the namespace kube-renumber, through a Role bound to the same account
    const state = boundTo('Role').find((b) => b.roleRef.name === 'kube-renumber-state');
    assert.equal(state?.metadata.namespace, 'kube-renumber');
    assert.notEqual(pod.automountServiceAccountToken, false);
    // no role grants exec, and none Secrets outside the namespace kube-renumber (the run's state), whatever the Job does
    for (const d of rbac.filter((x) => x.kind === 'ClusterRole' || x.kind === 'Role')) {
      const stateRole = d.kind === 'Role' && d.metadata.namespace === 'kube-renumber';
      for (const r of d.rules) assert.ok(!r.resources.some((x: string) => (x === 'secrets' && !stateRole) || x === 'pods/exec' || x === '*'), `${d.metadata.name}: ${r.resources}`);
    }
  });

  it('runs apply on the mounted plan with the in-cluster config, its state on the claim, every flag one apply takes', () => {
    const args: string[] = container.args;
    assert.equal(args[0], 'apply');
    const flags = args.filter((a) => a.startsWith('-'));
    const known = { ...GLOBAL_OPTIONS, ...applyCommand.options };
    for (const f of flags) {
      const name = f.replace(/^--?/, '').split('=')[0]!;
      assert.ok(Object.hasOwn(known, name) || Object.values(known).some((o: any) => o.short === name), `apply takes ${f}`);
    }
    assert.ok(!flags.some((f) => /^--(kubeconfig|context)\b/.test(f)), 'the in-cluster config, no kubeconfig');
    assert.ok(flags.includes('--yes'), 'no terminal to confirm at');
    const mount = (dir: string) => container.volumeMounts.find((m: any) => within(dir, m.mountPath));
    const volume = (m: any) => pod.volumes.find((v: any) => v.name === m.name);
    const plan = args[1]!;
    const pm = mount(plan);
    assert.ok(pm?.readOnly, `the plan ${plan} is on a read-only mount`);
    const pv = volume(pm);
    assert.ok(pv.configMap.items.some((i: any) => join(pm.mountPath, i.path) === plan), 'the ConfigMap item is the plan path');
    const stateDir = flags.find((f) => f.startsWith('--state-dir='))!.slice('--state-dir='.length);
    const sm = mount(stateDir);
    assert.ok(sm && !sm.readOnly, `the state directory ${stateDir} is on a writable mount`);
    assert.notEqual(stateDir, sm.mountPath, 'a directory the run creates itself (0700), not the volume root');
    const claim = volume(sm).persistentVolumeClaim.claimName;
    assert.ok(job.some((d) => d.kind === 'PersistentVolumeClaim' && d.metadata.name === claim && d.metadata.namespace === theJob.metadata.namespace), `claim ${claim} defined beside the Job`);
    const home = container.env.find((e: any) => e.name === 'HOME')?.value;
    assert.ok(home && mount(home) && !mount(home).readOnly, 'HOME is writable: the root file system is read-only');
  });

  it('least privilege in the pod too: non-root, no privilege escalation, no capabilities, read-only root, never retried blindly', () => {
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
    assert.equal(pod.restartPolicy, 'Never');
    assert.equal(theJob.spec.backoffLimit, 0);
    assert.equal(theJob.spec.parallelism, 1);
  });

  it('the image deploy/Containerfile builds holds the command the Job runs, as the user the Job runs as', () => {
    const cf = readFileSync(join(ROOT, 'deploy', 'Containerfile'), 'utf8');
    assert.match(cf, new RegExp(`^COPY kubectl-renumber ${container.command[0]}$`, 'm'));
    assert.match(cf, new RegExp(`^USER ${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}$`, 'm'));
  });
});
