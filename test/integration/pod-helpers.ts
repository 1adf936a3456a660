// Shared checks of the Pod CIDR migration tests: where every pod is, whether workloads are back.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contains, parseCidr, parseIP } from '../../src/net/index.ts';
import { recreateGrantCommands } from '../../src/plan/access.ts';
import { planFromYaml } from '../../src/plan/render.ts';
import { kubeconfigWithToken } from './helpers.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Kubectl {
  kubectl(args: string[], opts?: { timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }>;
  server: string;
}

export async function getJSON(tb: Kubectl, args: string[]): Promise<any> {
  const r = await tb.kubectl([...args, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

export function inRange(cidr: string, ip: string): boolean {
  return contains(parseCidr(cidr), parseIP(ip));
}

/** Pods on the pod network that are not finished or terminating. */
export async function activePodNetworkPods(tb: Kubectl): Promise<any[]> {
  const pods = (await getJSON(tb, ['get', 'pods', '-A'])).items;
  return pods.filter((p: any) => !p.spec.hostNetwork && !['Succeeded', 'Failed'].includes(p.status?.phase) && !p.metadata.deletionTimestamp);
}

/** Every pod-network pod has an IP in `range`, none in `old`. */
export async function assertAllPodsIn(tb: Kubectl, range: string, old: string): Promise<number> {
  const pods = await activePodNetworkPods(tb);
  const bad = pods.filter((p: any) => !p.status?.podIP || !inRange(range, p.status.podIP) || inRange(old, p.status.podIP));
  assert.equal(bad.length, 0, `pods outside ${range}: ${bad.slice(0, 10).map((p: any) => `${p.metadata.namespace}/${p.metadata.name} ${p.status?.podIP ?? 'none'}`).join(', ')}`);
  return pods.length;
}

/** Deployments, StatefulSets and DaemonSets at their desired replicas. */
export async function assertWorkloadsReady(tb: Kubectl): Promise<void> {
  const notReady: string[] = [];
  for (const d of (await getJSON(tb, ['get', 'deployments', '-A'])).items) {
    if ((d.status?.availableReplicas ?? 0) < d.spec.replicas) notReady.push(`deploy ${d.metadata.namespace}/${d.metadata.name} ${d.status?.availableReplicas ?? 0}/${d.spec.replicas}`);
  }
  for (const s of (await getJSON(tb, ['get', 'statefulsets', '-A'])).items) {
    if ((s.status?.readyReplicas ?? 0) < s.spec.replicas) notReady.push(`sts ${s.metadata.namespace}/${s.metadata.name} ${s.status?.readyReplicas ?? 0}/${s.spec.replicas}`);
  }
  for (const d of (await getJSON(tb, ['get', 'daemonsets', '-A'])).items) {
    if ((d.status?.numberAvailable ?? 0) < d.status?.desiredNumberScheduled) notReady.push(`ds ${d.metadata.namespace}/${d.metadata.name} ${d.status?.numberAvailable ?? 0}/${d.status?.desiredNumberScheduled}`);
  }
  assert.deepEqual(notReady, [], 'every workload at its desired replicas');
}

/**
 * What an operator does for a Pod plan run as kube-renumber-migrate: a Role kube-renumber-recreate-pods and its
 * RoleBinding in each namespace the plan lists under spec.podCIDR.barePodNamespaces, with the commands the plan's
 * confirm step prints.
 * Returns the namespaces.
 */
export async function grantRecreate(tb: Kubectl, planText: string): Promise<string[]> {
  const plan = planFromYaml(planText);
  const namespaces = plan.spec.podCIDR?.barePodNamespaces ?? [];
  for (const cmd of recreateGrantCommands(namespaces)) {
    const args = cmd.split(' ').slice(1);
    const r = await tb.kubectl(args);
    assert.ok(r.code === 0 || /already exists/.test(r.stderr), `${cmd}: ${r.stderr}`);
  }
  return namespaces;
}

/** A kubeconfig for the ServiceAccount kube-renumber-migrate with the shipped roles for a Pod CIDR migration. */
export async function migrateKubeconfig(tb: Kubectl): Promise<string> {
  const r = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate-pods.yaml')]);
  assert.equal(r.code, 0, r.stderr);
  const tok = await tb.kubectl(['create', 'token', 'kube-renumber-migrate', '-n', 'kube-system', '--duration', '2h']);
  assert.equal(tok.code, 0, tok.stderr);
  return kubeconfigWithToken(tb.server, tok.stdout.trim());
}

/**
 * Rollouts so far, by workload: a Deployment's revision (its deployment.kubernetes.io/revision annotation), a
 * StatefulSet's or DaemonSet's ControllerRevisions. Two readings give how often each workload was rolled out between.
 */
export async function rollouts(tb: Kubectl): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const d of (await getJSON(tb, ['get', 'deployments', '-A'])).items) {
    out.set(`Deployment/${d.metadata.namespace}/${d.metadata.name}`, Number(d.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0));
  }
  for (const cr of (await getJSON(tb, ['get', 'controllerrevisions', '-A'])).items) {
    const o = (cr.metadata.ownerReferences ?? []).find((x: any) => x.controller);
    if (o) out.set(`${o.kind}/${cr.metadata.namespace}/${o.name}`, (out.get(`${o.kind}/${cr.metadata.namespace}/${o.name}`) ?? 0) + 1);
  }
  return out;
}

/**
 * No workload of `before` rolled out twice for one reason since (a killed run's restart is not done again), none
 * gone. A reason is the tool's restart token on the pod template (kube-renumber.io/restart): one per restart step,
 * and on the node path one per drained node (a one-replica Deployment whose budget allows no eviction is rolled out
 * instead, and its new pod may land on a node drained later, which rolls it out again, as a drain would evict it
 * again). So a Deployment may gain one revision per distinct token among its ReplicaSets, at least one, never more;
 * a rollout without a token, or the same token rolled out again, is one too many.
 */
export async function assertNoWorkloadRestartedTwice(tb: Kubectl, before: Map<string, number>): Promise<void> {
  const now = await rollouts(tb);
  const tokens = new Map<string, Set<string>>();
  for (const rs of (await getJSON(tb, ['get', 'replicasets', '-A'])).items) {
    const o = (rs.metadata.ownerReferences ?? []).find((x: any) => x.controller && x.kind === 'Deployment');
    const token = rs.spec?.template?.metadata?.annotations?.['kube-renumber.io/restart'];
    if (!o || !token) continue;
    const key = `Deployment/${rs.metadata.namespace}/${o.name}`;
    tokens.set(key, (tokens.get(key) ?? new Set()).add(token));
  }
  const twice = [...before].filter(([k, n]) => (now.get(k) ?? 0) > n + Math.max(1, tokens.get(k)?.size ?? 0))
    .map(([k, n]) => `${k}: ${n} → ${now.get(k)} (restart tokens: ${[...(tokens.get(k) ?? [])].join(', ') || 'none'})`);
  assert.deepEqual(twice, [], 'no workload restarted twice');
  assert.deepEqual([...before.keys()].filter((k) => !now.has(k)), [], 'no workload gone');
}
