// The shipped roles (deploy/rbac*.yaml) against what a run needs (src/plan/access.ts), both ways: every verb a
// run of each kind of plan needs is granted to the ServiceAccount kube-renumber-migrate, and no migrate role
// grants a write that no plan needs. That each path runs under these roles is shown by the integration tests
// that run it as that ServiceAccount (service-migration, pod-helpers' migrateKubeconfig, state-in-cluster).
// `create pods` is never cluster-wide and deploy/ grants it nowhere: a plan lists its bare pods' namespaces, and the
// operator makes a Role kube-renumber-recreate-pods and its RoleBinding in each (recreateGrants; kube-renumber rbac PLAN).
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { accessNeeds, needKey, recreateGrantCommands, recreateGrants, type AccessNeed } from '../../src/plan/access.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FILES = ['deploy/rbac.yaml', 'deploy/rbac-migrate.yaml', 'deploy/rbac-migrate-pods.yaml'];
const SA = { kind: 'ServiceAccount', name: 'kube-renumber-migrate', namespace: 'kube-system' };

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
/** A rule the ServiceAccount holds, where (undefined: cluster-wide), and the file binding it. */
interface Held { rule: Rule; namespace?: string; file: string }

/** The opt-in file of --read-kubelet-config (get nodes/proxy): never among the default FILES. */
const CONFIGZ_FILE = 'deploy/rbac-kubelet-configz.yaml';

/** The rules the shipped files give the ServiceAccount, plus those of the per-namespace Roles and RoleBindings `extra`. */
function held(extra: Array<Record<string, unknown>> = [], files: readonly string[] = FILES): Held[] {
  const docs = [
    ...files.flatMap((f) => yaml.loadAll(readFileSync(join(ROOT, f), 'utf8')).filter(Boolean).map((d: any) => ({ ...d, file: f }))),
    ...extra.map((d) => ({ ...d, file: 'recreateGrants' })),
  ];
  const role = (kind: string, name: string, ns?: string) => docs.find((d: any) => d.kind === kind && d.metadata.name === name && (kind === 'ClusterRole' || d.metadata.namespace === ns));
  const out: Held[] = [];
  for (const b of docs.filter((d: any) => d.kind === 'ClusterRoleBinding' || d.kind === 'RoleBinding')) {
    if (!b.subjects.some((s: any) => s.kind === SA.kind && s.name === SA.name && s.namespace === SA.namespace)) continue;
    const r: any = role(b.roleRef.kind, b.roleRef.name, b.metadata.namespace);
    assert.ok(r, `${b.file}: ${b.kind} ${b.metadata.name} binds ${b.roleRef.kind} ${b.roleRef.name}, which no file defines`);
    for (const rule of r.rules) out.push({ rule, file: r.file, ...(b.kind === 'RoleBinding' ? { namespace: b.metadata.namespace } : {}) });
  }
  return out;
}

/** RBAC's own matching (no wildcards are shipped). */
function grants(h: Held, n: AccessNeed): boolean {
  const res = n.subresource ? `${n.resource}/${n.subresource}` : n.resource;
  if (h.namespace !== undefined && h.namespace !== n.namespace) return false;
  if (!h.rule.apiGroups.includes(n.group) || !h.rule.resources.includes(res) || !h.rule.verbs.includes(n.verb)) return false;
  return !h.rule.resourceNames || (n.name !== undefined && h.rule.resourceNames.includes(n.name));
}

const plan = (spec: Record<string, unknown>) => ({ spec } as unknown as MigrationPlan);
const PLANS: Record<string, MigrationPlan> = {
  'service in place': plan({ serviceCIDR: { from: 'a', to: 'b' }, strategy: 'in-place' }),
  'service recreate': plan({ serviceCIDR: { from: 'a', to: 'b' }, strategy: 'recreate' }),
  'service, restarts by the tool': plan({ serviceCIDR: { from: 'a', to: 'b', restarts: { parallel: 4, critical: [], barePodNamespaces: ['team-s'] } }, strategy: 'in-place' }),
  'pod, Calico (operator)': plan({ podCIDR: { ipam: 'calico', calico: { operatorManaged: true }, barePodNamespaces: ['tb-wl-0', 'team-a'] } }),
  'pod, Calico (manifest)': plan({ podCIDR: { ipam: 'calico', calico: { operatorManaged: false }, barePodNamespaces: [] } }),
  'pod, node IPAM': plan({ podCIDR: { ipam: 'node', barePodNamespaces: ['default'] } }),
  'pod, Cilium multi-pool': plan({ podCIDR: { ipam: 'cilium-multi-pool', barePodNamespaces: ['default'] } }),
};
const bareOf = (p: MigrationPlan) => p.spec.podCIDR?.barePodNamespaces ?? p.spec.serviceCIDR?.restarts?.barePodNamespaces ?? [];
/** The Roles and RoleBindings the operator adds for every plan above. */
const BINDINGS = recreateGrants([...new Set(Object.values(PLANS).flatMap(bareOf))]);

describe('shipped RBAC against what runs need', () => {
  const rules = held(BINDINGS);
  for (const [name, p] of Object.entries(PLANS)) {
    test(`${name}: every verb the run needs is granted (with the plan's own Roles of create pods)`, () => {
      const own = held(recreateGrants(bareOf(p)));
      const missing = accessNeeds(p).filter((n) => !own.some((h) => grants(h, n))).map(needKey);
      assert.deepEqual(missing, []);
    });
  }

  test('create pods: asked only in the plan\'s bare pods\' namespaces, granted nowhere cluster-wide', () => {
    const p = PLANS['pod, Calico (operator)']!;
    const creates = accessNeeds(p).filter((n) => n.verb === 'create' && n.resource === 'pods' && !n.subresource);
    assert.deepEqual(creates.map((n) => n.namespace), ['tb-wl-0', 'team-a']);
    assert.deepEqual(accessNeeds(PLANS['pod, Calico (manifest)']!).filter((n) => n.verb === 'create' && n.resource === 'pods' && !n.subresource), []);
    const shipped = held();
    const anywhere = (ns: string) => ({ verb: 'create', group: '', resource: 'pods', namespace: ns, file: '', why: '' });
    assert.ok(!shipped.some((h) => grants(h, anywhere('team-a'))), 'the shipped files alone grant no create pods');
    const own = held(recreateGrants(['team-a']));
    assert.ok(own.some((h) => grants(h, anywhere('team-a'))));
    assert.ok(!own.some((h) => grants(h, anywhere('team-b'))), 'a binding in team-a grants nothing in team-b');
    assert.ok(!own.some((h) => grants(h, anywhere('kube-system'))));
    // a plan written before the list: cluster-wide create pods, which the shipped roles no longer grant
    const old = accessNeeds(plan({ podCIDR: { ipam: 'node' } })).filter((n) => n.verb === 'create' && n.resource === 'pods' && !n.subresource);
    assert.deepEqual(old.map((n) => n.namespace), [undefined]);
    assert.ok(!own.some((h) => grants(h, old[0]!)));
  });

  test('the commands printed for the operator make the same Role and RoleBinding', () => {
    const [createRole, createBinding] = recreateGrantCommands(['team-a']);
    const [r, rb] = recreateGrants(['team-a']) as any[];
    assert.equal(createRole, `kubectl -n team-a create role ${r.metadata.name} --verb=create --resource=pods`);
    assert.deepEqual(r.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['create'] }]);
    assert.equal(r.kind, 'Role');
    assert.equal(createBinding, `kubectl -n team-a create rolebinding ${rb.metadata.name} --role=${rb.roleRef.name} --serviceaccount=${SA.namespace}:${SA.name}`);
    assert.deepEqual([rb.kind, rb.metadata.namespace, rb.roleRef.kind, rb.roleRef.name], ['RoleBinding', 'team-a', 'Role', r.metadata.name]);
  });

  test('deploy/ grants create pods nowhere: no ClusterRole or Role of any file creates pods', () => {
    const files = readdirSync(join(ROOT, 'deploy')).filter((f) => /\.ya?ml$/.test(f));
    const creates: string[] = [];
    for (const f of files) {
      for (const d of yaml.loadAll(readFileSync(join(ROOT, 'deploy', f), 'utf8')) as any[]) {
        if (d?.kind !== 'ClusterRole' && d?.kind !== 'Role') continue;
        for (const rule of d.rules ?? []) {
          const pods = (rule.apiGroups ?? []).some((g: string) => g === '' || g === '*') && (rule.resources ?? []).some((r: string) => r === 'pods' || r === '*');
          if (pods && (rule.verbs ?? []).some((v: string) => v === 'create' || v === '*')) creates.push(`${f}: ${d.kind} ${d.metadata?.name}`);
        }
      }
    }
    assert.deepEqual(creates, []);
  });

  test('a Service plan whose restarts the tool runs needs nothing of deploy/rbac-migrate-pods.yaml but the bare pods\' create pods', () => {
    const p = PLANS['service, restarts by the tool']!;
    const own = held(recreateGrants(bareOf(p))).filter((h) => h.file !== 'deploy/rbac-migrate-pods.yaml' || h.namespace !== undefined);
    assert.deepEqual(accessNeeds(p).filter((n) => !own.some((h) => grants(h, n))).map(needKey), []);
    const needs = accessNeeds(p).map(needKey);
    for (const k of ['create pods/eviction', 'patch deployments.apps', 'patch daemonsets.apps', 'patch statefulsets.apps', 'create pods -n team-s']) assert.ok(needs.includes(k), k);
    // without the tool's restarts (a gate), none of them
    const gate = accessNeeds(PLANS['service in place']!).map(needKey);
    assert.ok(!gate.some((k) => k.startsWith('create pods') || k.includes('.apps')), gate.join(', '));
  });

  test('no migrate role grants a write no plan needs', () => {
    const needs = Object.values(PLANS).flatMap((p) => accessNeeds(p));
    const excess: string[] = [];
    for (const h of rules.filter((x) => x.file !== 'deploy/rbac.yaml')) {
      for (const verb of h.rule.verbs.filter((v) => !['get', 'list', 'watch'].includes(v))) {
        for (const res of h.rule.resources) {
          for (const group of h.rule.apiGroups) {
            const [resource, subresource] = res.split('/');
            const used = needs.some((n) => n.verb === verb && n.group === group && n.resource === resource && n.subresource === subresource
              && (h.namespace === undefined || n.namespace === h.namespace));
            if (!used) excess.push(`${h.file}: ${verb} ${res}${group ? `.${group}` : ''}`);
          }
        }
      }
    }
    assert.deepEqual(excess, []);
  });

  test('the Lease rules name the run\'s Lease: no rewrite of the other leader Leases of kube-system', () => {
    const lease = rules.filter((h) => h.rule.resources.includes('leases'));
    assert.ok(lease.length > 0);
    for (const h of lease) {
      assert.equal(h.namespace, 'kube-system');
      if (h.rule.verbs.some((v) => v !== 'create')) assert.deepEqual(h.rule.resourceNames, ['kube-renumber']);
    }
    const other = { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', name: 'kube-controller-manager', file: '', why: '' };
    assert.ok(!rules.some((h) => grants(h, other)));
  });

  test('the EndpointSlice watch a Service batch waits with is granted (without it the run LISTs in a loop)', () => {
    const watch = { verb: 'watch', group: 'discovery.k8s.io', resource: 'endpointslices', namespace: 'default', file: '', why: '' };
    assert.ok(rules.some((h) => h.file === 'deploy/rbac-migrate.yaml' && grants(h, watch)));
  });

  test('Secrets only in the state namespace', () => {
    for (const h of rules.filter((x) => x.rule.resources.includes('secrets'))) assert.equal(h.namespace, 'kube-renumber');
  });

  describe('--read-kubelet-config: get nodes/proxy, only from its own file', () => {
    const withGate = plan({ serviceCIDR: { from: 'a', to: 'b' }, strategy: 'in-place' });
    (withGate as any).steps = [{ id: 'kubelet-cluster-dns', kind: 'gate', gate: { condition: 'kubelet-cluster-dns' } }];
    const proxyGet = { verb: 'get', group: '', resource: 'nodes', subresource: 'proxy', file: '', why: '' };

    test('asked only with the flag and only where the plan has gate kubelet-cluster-dns', () => {
      const key = 'get nodes/proxy';
      assert.ok(!accessNeeds(withGate).map(needKey).includes(key));
      assert.ok(accessNeeds(withGate, { readKubeletConfig: true }).map(needKey).includes(key));
      assert.equal(accessNeeds(withGate, { readKubeletConfig: true }).find((n) => needKey(n) === key)?.file, CONFIGZ_FILE);
      assert.ok(!accessNeeds(PLANS['service in place']!, { readKubeletConfig: true }).map(needKey).includes(key), 'no DNS gate, no need');
    });

    test('the default files grant no nodes/proxy at all, and the kustomize base does not include the opt-in file', () => {
      for (const f of [...FILES, 'deploy/rbac-probe.yaml']) {
        const rules = (yaml.loadAll(readFileSync(join(ROOT, f), 'utf8')) as any[]).filter((d) => d?.rules).flatMap((d) => d.rules as Rule[]);
        const wide = rules.filter((r) => r.resources.some((x) => ['nodes/proxy', 'nodes/*', '*'].includes(x)) || r.verbs.includes('*'));
        assert.deepEqual(wide, [], `${f} grants nodes/proxy or a wildcard`);
      }
      assert.ok(!held().some((h) => grants(h, proxyGet)));
      const k = yaml.load(readFileSync(join(ROOT, 'deploy/kustomization.yaml'), 'utf8')) as { resources: string[] };
      assert.ok(!k.resources.includes('rbac-kubelet-configz.yaml'));
    });

    test('the opt-in file grants exactly get nodes/proxy, to the migrate ServiceAccount, and with it every need of the run', () => {
      const docs = (yaml.loadAll(readFileSync(join(ROOT, CONFIGZ_FILE), 'utf8')) as any[]).filter(Boolean);
      const roles = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
      assert.deepEqual(roles.flatMap((r) => r.rules), [{ apiGroups: [''], resources: ['nodes/proxy'], verbs: ['get'] }]);
      const own = held([], [...FILES, CONFIGZ_FILE]);
      assert.ok(own.some((h) => h.file === CONFIGZ_FILE && grants(h, proxyGet)));
      assert.deepEqual(accessNeeds(withGate, { readKubeletConfig: true }).filter((n) => !own.some((h) => grants(h, n))).map(needKey), []);
      // the verbs that would make it worse are not there
      for (const verb of ['create', 'update', 'patch', 'delete', '*']) assert.ok(!own.some((h) => grants(h, { ...proxyGet, verb })), verb);
    });
  });
});
