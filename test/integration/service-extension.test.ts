// plan --extend-service-cidr end to end on the real control plane: a small Service range filled to the last address,
// the extension planned and applied (a second ServiceCIDR, nothing restarted), new Services allocated in the added
// range, verify, rollback refused while they hold addresses there (naming them) and done once they are deleted.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { DEFAULT_VERSION } from '../testbed/build.ts';
import { serviceCIDRApiOf } from '../testbed/cluster.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { cidrContains } from '../testbed/ip.ts';
import { run } from '../unit/run-cli.ts';
import { install } from '../../src/install.ts';

install();

const OLD = '10.96.0.0/27';
const ADD = '10.100.0.0/24';
const NS = 'extend-tests';
const SVC = `/api/v1/namespaces/${NS}/services`;
// the suite's version (KUBE_RENUMBER_K8S_VERSION=v1.30.14 runs it on v1alpha1, the API turned on at start)
const API = serviceCIDRApiOf(DEFAULT_VERSION)!.version;
const SC = `/apis/networking.k8s.io/${API}/servicecidrs`;

describe(`Service range extension on the real control plane (${DEFAULT_VERSION}, networking.k8s.io/${API})`, () => {
  const tb = useTestbed({ serviceCIDR: OLD, nodes: 1, calicoCRDs: false, serviceCIDRApi: 'on' });
  const dir = mkdtempSync(join(tmpdir(), 'kr-extend-'));
  const planPath = join(dir, 'plan.yaml');
  const common = () => ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--timeout', '60s'];
  let filled = 0;
  let podsBefore = new Map<string, number>();
  let apiserverUid = '';
  const added: string[] = [];

  /** POSTs a ClusterIP Service; its clusterIP, or the apiserver's refusal. */
  async function createService(name: string): Promise<{ ip?: string; status: number; message?: string }> {
    const r = await tb.client.raw('POST', SVC, { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    return r.status === 201 ? { ip: r.body.spec.clusterIP, status: r.status } : { status: r.status, message: r.body?.message };
  }

  /** Every pod's uid → its containers' restart count. */
  async function pods(): Promise<Map<string, number>> {
    const items = JSON.parse((await tb.kubectl(['get', 'pods', '-A', '-o', 'json'])).stdout).items;
    return new Map(items.map((p: any) => [p.metadata.uid as string, (p.status?.containerStatuses ?? []).reduce((n: number, c: any) => n + (c.restartCount ?? 0), 0)]));
  }

  test('setup: a workload, and the old range filled to its last address', async () => {
    await tb.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await tb.client.create({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 3, selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }], terminationGracePeriodSeconds: 0, tolerations: [{ operator: 'Exists' }] } },
      },
    });
    await eventually('web pods Running', async () => {
      const items = JSON.parse((await tb.kubectl(['-n', NS, 'get', 'pods', '-o', 'json'])).stdout).items;
      return items.length === 3 && items.every((p: any) => p.status?.phase === 'Running') ? true : undefined;
    }, 60_000, 500);
    for (let i = 0; ; i++) {
      const r = await createService(`fill-${i}`);
      if (r.status !== 201) {
        assert.match(r.message ?? '', /range is full|no available|allocat/i, `refused because the range is full: ${r.message}`);
        break;
      }
      assert.ok(cidrContains(OLD, r.ip!), `${r.ip} in ${OLD}`);
      filled++;
      assert.ok(i < 40, 'a /27 fills before 40 Services');
    }
    assert.ok(filled >= 20, `${filled} Services filled ${OLD}`);
    podsBefore = await pods();
    const api = JSON.parse((await tb.kubectl(['get', 'svc', 'kubernetes', '-o', 'json'])).stdout);
    apiserverUid = api.metadata.uid;
  });

  test('plan: an overlapping range is refused with one error line; the extension plan is written', async () => {
    const bad = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--extend-service-cidr', '10.96.0.0/24', '-o', 'yaml']);
    assert.equal(bad.code, 2, bad.err);
    assert.equal(bad.out, '');
    assert.equal(bad.err.trim().split('\n').length, 1, bad.err);
    assert.match(bad.err, /^error: --extend-service-cidr 10\.96\.0\.0\/24 refused: .*10\.96\.0\.0\/27/);
    const r = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--extend-service-cidr', ADD, '-o', 'yaml']);
    assert.equal(r.code, 0, r.err + r.out.slice(0, 2000));
    writeFileSync(planPath, r.out);
    const plan = yaml.load(r.out) as any;
    assert.deepEqual(plan.spec.serviceExtension.add, [ADD]);
    assert.deepEqual(plan.spec.serviceExtension.flag, [OLD]);
    assert.equal(plan.spec.serviceExtension.apiVersion, `networking.k8s.io/${API}`);
    assert.deepEqual(plan.steps.map((s: any) => s.id), ['extend-service-range', 'verify-extension']);
  });

  test('apply: the ServiceCIDR Ready, verify passes, and new Services land in the added range', async () => {
    const r = await run(['apply', planPath, '--yes', ...common()]);
    assert.equal(r.code, 0, r.err);
    const sc = await tb.client.get(`${SC}/kube-renumber-extend-10-100-0-0-24`);
    assert.deepEqual(sc.spec.cidrs, [ADD]);
    assert.equal(sc.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True');
    assert.deepEqual((await tb.client.get(`${SC}/kubernetes`)).spec.cidrs, [OLD], 'the default ServiceCIDR keeps the flag\'s range');
    for (let i = 0; i < 5; i++) {
      const s = await createService(`more-${i}`);
      assert.equal(s.status, 201, s.message);
      assert.ok(cidrContains(ADD, s.ip!), `more-${i} at ${s.ip}, in ${ADD} (the old range is full)`);
      added.push(`${NS}/more-${i}`);
    }
    const v = await run(['verify', planPath, ...common()]);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /^verified: ServiceCIDR kube-renumber-extend-10-100-0-0-24 Ready with 10\.100\.0\.0\/24/);
  });

  test('nothing restarted: the same pods, no container restart, the apiserver\'s Service untouched', async () => {
    const after = await pods();
    for (const [uid, restarts] of podsBefore) {
      assert.ok(after.has(uid), `pod ${uid} still there`);
      assert.equal(after.get(uid), restarts, `pod ${uid} restarted no container`);
    }
    const restarted = [...podsBefore].filter(([uid, n]) => !after.has(uid) || after.get(uid) !== n).length;
    assert.equal(restarted, 0, 'pods restarted');
    const api = JSON.parse((await tb.kubectl(['get', 'svc', 'kubernetes', '-o', 'json'])).stdout);
    assert.equal(api.metadata.uid, apiserverUid);
  });

  test('rollback is refused while Services hold addresses in the added range, naming them', async () => {
    const r = await run(['rollback', planPath, ...common()]);
    assert.equal(r.code, 1, r.err + r.out);
    assert.match(r.out, /extend-service-range\s+NOT undone: ServiceCIDR kube-renumber-extend-10-100-0-0-24 \(10\.100\.0\.0\/24\) holds the ClusterIPs of 5 Service\(s\)/);
    for (const k of added) assert.ok(r.out.includes(k), `${k} named in ${r.out}`);
    const sc = await tb.client.get(`${SC}/kube-renumber-extend-10-100-0-0-24`);
    assert.equal(sc.metadata.deletionTimestamp, undefined, 'not deleted');
  });

  test('rollback deletes it once they are gone; the old range serves as before', async () => {
    for (const k of added) await tb.kubectl(['-n', NS, 'delete', 'svc', k.split('/')[1]!, '--wait=true']);
    const r = await run(['rollback', planPath, ...common()]);
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, /extend-service-range\s+undone/);
    const gone = await tb.client.raw('GET', `${SC}/kube-renumber-extend-10-100-0-0-24`);
    assert.equal(gone.status, 404);
    const full = await createService('after-rollback');
    assert.notEqual(full.status, 201, 'the old range is still full: no room was left behind');
  });
});
