// The references gate: a plan whose scan found errors stops before its first change; the check at the gate scans
// the cluster again (here a client serving lists from memory) and holds once the errors are gone, or by --ack-gate.
import { install } from '../../src/install.ts';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject } from '../../src/cluster/types.ts';
import { buildMigrationPlan } from '../../src/plan/plan.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import { renderPlanTable } from '../../src/cli/commands/plan.ts';
import { PlanExecutor } from '../../src/engine/plan-executor.ts';
import { gateErrors } from '../../src/plan/references-gate.ts';
import type { Reference } from '../../src/analyze/references.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';

install();

const ROOT = new URL('../../examples/kops-tailscale', import.meta.url).pathname;

async function planWith(extra: KubeObject[]) {
  const inv = await readInventoryFiles([ROOT]);
  const snap = buildSnapshot({ ...inv, objects: [...inv.objects, ...extra] });
  return { snap, plan: buildMigrationPlan(snap, { service: { target: '172.24.0.0/15' } }) };
}

function webhookAt(ip: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'policy' },
    webhooks: [{ name: 'a.example.com', clientConfig: { url: `https://${ip}:8443/validate` } }],
  };
}

/** A client answering discovery and LISTs from `objects` (what readLiveInventory asks). */
function memoryClient(objects: KubeObject[]): KubeClient {
  const groups = ['networking.k8s.io', 'admissionregistration.k8s.io', 'apps', 'discovery.k8s.io'];
  const plural = (o: KubeObject) => `${String(o.kind).toLowerCase()}s`;
  const request = async (_m: string, path: string): Promise<any> => {
    if (path === '/version') return { gitVersion: 'v1.31.0' };
    if (path === '/apis') return { groups: groups.map((name) => ({ name, versions: [{ version: 'v1' }] })) };
    if (path === '/api/v1/namespaces/kube-system') return { metadata: { uid: 'uid-1' } };
    const gv = /^\/apis\/(.+\/v1)$/.exec(path)?.[1];
    if (gv) return { resources: [...new Set(objects.filter((o) => o.apiVersion === gv).map(plural))].map((name) => ({ name })) };
    throw new KubeApiError('GET', path, 404, 'NotFound', 'not found');
  };
  async function* list(path: string): AsyncGenerator<KubeObject> {
    for (const o of objects) {
      const base = String(o.apiVersion).includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
      if (path === `${base}/${plural(o)}`) yield o;
    }
  }
  return { request, list, context: 'memory', server: 'https://memory' } as unknown as KubeClient;
}

function ctxOf(client: KubeClient, logs: string[]): StepContext {
  return { client, log: (m: string) => logs.push(m), journal: { entries: () => [] } } as unknown as StepContext;
}

describe('references gate', () => {
  test('an error-severity reference puts gate references before the first change; none, no gate', async () => {
    const { snap, plan } = await planWith([webhookAt('192.0.2.10')]);
    const old = snap.services.find((s) => s.clusterIPs.length > 0)!;
    assert.ok(plan.steps.length > 1);
    assert.equal(plan.steps.some((s) => s.id === 'references'), false, 'an address outside the old range is nothing');
    const { plan: held } = await planWith([webhookAt(old.clusterIPs[0]!)]);
    assert.equal(held.steps[0]!.id, 'references');
    assert.equal(held.steps[0]!.kind, 'gate');
    const g = held.steps[0]!.gate!;
    assert.match(g.instructions[0]!, /ValidatingWebhookConfiguration policy webhooks\[0\]\.clientConfig\.url/);
    assert.match(g.instructions.at(-1)!, /--ack-gate references/);
    // the plan file round-trips with the gate
    assert.equal(planFromYaml(planToYaml(held)).steps[0]!.id, 'references');
    // the default table shows the counts and each error
    const text = renderPlanTable(held, false);
    assert.match(text, /REFERENCES: 1 error\(s\)/);
    assert.match(text, /ValidatingWebhookConfiguration policy/);
  });

  test('kube-proxy clusterCIDR in a Pod CIDR plan is the plan\'s own (pod-kube-proxy, pod-cidr-config): no gate for it', () => {
    const kp: Reference = { kind: 'ConfigMap', namespace: 'kube-system', name: 'kube-proxy', field: 'data["config.conf"].clusterCIDR', value: '10.244.0.0/16', role: 'pod', severity: 'error', note: '' };
    const np: Reference = { ...kp, kind: 'NetworkPolicy', namespace: 'app', name: 'np', field: 'spec.ingress[0].from[0].ipBlock.cidr' };
    assert.deepEqual(gateErrors([kp, np], { podCIDR: {} }), [np]);
    assert.deepEqual(gateErrors([kp, np], {}), [kp, np]);
  });

  test('the check scans the cluster again: it holds once the error is gone, or by --ack-gate', async () => {
    const { snap } = await planWith([]);
    const old = snap.services.find((s) => s.clusterIPs.length > 0)!;
    const { plan: held } = await planWith([webhookAt(old.clusterIPs[0]!)]);
    const step = () => new PlanExecutor(held, { token: 't' }).steps()[0]!;
    assert.equal(step().id, 'references');
    const logs: string[] = [];
    assert.equal(await step().check(ctxOf(memoryClient([webhookAt(old.clusterIPs[0]!)]), logs)), false);
    assert.match(logs.join('\n'), /ValidatingWebhookConfiguration policy .* still names the old Service range/);
    assert.equal(await step().check(ctxOf(memoryClient([webhookAt('192.0.2.1')]), [])), true, 'fixed: the gate holds');
    const acked = new PlanExecutor(held, { token: 't', acknowledgedGates: ['references'] }).steps()[0]!;
    assert.equal(await acked.check(ctxOf(memoryClient([webhookAt(old.clusterIPs[0]!)]), [])), true);
  });
});
