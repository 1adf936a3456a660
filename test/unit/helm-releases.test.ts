// Helm releases in the references scan (src/cluster/references/helm.ts), read live only when asked
// (plan --read-helm-releases): what the live read lists and keeps of a release Secret, the pre-flight line a live
// plan without the flag carries, the gate that reads them again, the run's access need and the opt-in RBAC file.
// The release Secrets are written as Helm 3's secrets driver writes them (helm pkg/storage/driver secrets.go
// newSecretsObject, util.go encodeRelease): type helm.sh/release.v1, labels owner/name/status/version, data.release
// the base64 of gzip of the release JSON, under the API's own base64.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import * as yaml from 'js-yaml';
import { scanReferences, type Reference } from '../../src/analyze/references.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { slimRelease } from '../../src/cluster/references/helm.ts';
import { referenceLists } from '../../src/cluster/references/registry.ts';
import type { KubeObject, RawInventory } from '../../src/cluster/types.ts';
import { accessNeeds, HELM_RELEASES_RBAC_FILE, needKey } from '../../src/plan/access.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';
import { helmReleasesCheck, referencesGate } from '../../src/plan/references-gate.ts';
import { planFromYaml, planToYaml, validatePlan } from '../../src/plan/render.ts';
import { buildMigrationPlan } from '../../src/plan/plan.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { PlanExecutor } from '../../src/engine/plan-executor.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';
import type { GateStep } from '../../src/plan/steps.ts';
import { run } from './run-cli.ts';
import { install } from '../../src/install.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SVC = { role: 'service' as const, from: '10.96.0.0/16', to: '10.100.0.0/16' };

function releaseSecret(status: string, version: number, release: Record<string, unknown>): KubeObject {
  const stored = gzipSync(Buffer.from(JSON.stringify(release))).toString('base64');
  return {
    apiVersion: 'v1', kind: 'Secret', type: 'helm.sh/release.v1',
    metadata: {
      name: `sh.helm.release.v1.db.v${version}`, namespace: 'data', labels: { owner: 'helm', name: 'db', status, version: String(version), modifiedAt: '1700000000' },
      managedFields: [{ manager: 'helm' }],
    },
    data: { release: Buffer.from(stored).toString('base64') },
  };
}

const RELEASE = {
  name: 'db', namespace: 'data', version: 3, info: { status: 'deployed' },
  config: { primary: { service: { clusterIP: '10.96.40.4' } }, auth: { rootPassword: 's3cret-value' } },
  manifest: '---\n# Source: db/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  clusterIP: 10.96.40.4\n  ports:\n  - port: 5432\n',
};

function lines(refs: Reference[]): string[] {
  return refs.map((r) => `${r.severity} ${r.kind} ${r.namespace}/${r.name} ${r.field}: ${r.value} → ${r.proposed ?? '-'}`);
}

function scanLive(objects: KubeObject[], source: RawInventory['source'] = { kind: 'live' }): Reference[] {
  const snap = buildSnapshot({ source, objects, configs: [], gaps: [] });
  return scanReferences(snap, [SVC], { clusterIPs: new Map([['10.96.40.4', '10.100.40.4']]) });
}

describe('Helm releases read live on request', () => {
  test('listed only when asked: type and deployed-status selectors, small pages; never by the read role', () => {
    assert.equal(referenceLists().some((l) => l.plural === 'secrets'), false);
    const helm = referenceLists(['helm-releases']).filter((l) => l.plural === 'secrets');
    assert.equal(helm.length, 1);
    assert.deepEqual([helm[0]!.group, helm[0]!.version, helm[0]!.fieldSelector, helm[0]!.labelSelector], ['', 'v1', 'type=helm.sh/release.v1', 'owner=helm,status=deployed']);
    assert.ok(helm[0]!.pageSize !== undefined && helm[0]!.pageSize <= 50, 'release Secrets may be 1 MiB each: small pages');
    // the read role (deploy/rbac.yaml) grants no Secrets outside the state namespace
    const docs = (yaml.loadAll(readFileSync(join(ROOT, 'deploy/rbac.yaml'), 'utf8')) as any[]).filter(Boolean);
    const secretRules = docs.filter((d) => d.kind === 'ClusterRole').flatMap((d) => d.rules).filter((r: any) => r.resources.includes('secrets'));
    assert.deepEqual(secretRules, []);
  });

  test('the live read keeps of a release only its name, namespace, labels and pins: the values are gone, the finding is the same', () => {
    const full = releaseSecret('deployed', 3, RELEASE);
    const slim = slimRelease(full);
    const text = JSON.stringify(slim);
    assert.equal(text.includes('s3cret-value'), false);
    assert.equal(text.includes(full.data!.release!), false);
    assert.equal(slim.data, undefined);
    assert.equal(slim.metadata?.managedFields, undefined);
    assert.deepEqual(slim.metadata?.labels, { owner: 'helm', name: 'db', status: 'deployed', version: '3' });
    const expected = [
      'error Secret data/sh.helm.release.v1.db.v3 release db: manifest Service db spec.clusterIP: 10.96.40.4 → 10.100.40.4',
      'error Secret data/sh.helm.release.v1.db.v3 release db: values primary.service.clusterIP: 10.96.40.4 → 10.100.40.4',
    ];
    assert.deepEqual(lines(scanLive([full])), expected);
    assert.deepEqual(lines(scanLive([slim])), expected);
    assert.equal(JSON.stringify(scanLive([slim])).includes('s3cret-value'), false);
    // a release without a pin leaves nothing
    assert.deepEqual(scanLive([slimRelease(releaseSecret('deployed', 4, { ...RELEASE, config: {}, manifest: RELEASE.manifest.replace('  clusterIP: 10.96.40.4\n', '') }))]), []);
  });

  test('a release whose data is not Helm\'s format, or unzips beyond the bound, gives no finding and no failure', () => {
    const bad = releaseSecret('deployed', 5, RELEASE);
    bad.data = { release: Buffer.from('not base64 of gzip').toString('base64') };
    assert.deepEqual(scanLive([slimRelease(bad)]), []);
    const huge = releaseSecret('deployed', 6, RELEASE);
    // gzip members one after the other are one gzip stream: the release, then 70 MiB of blanks (valid JSON still),
    // which unzip beyond the 64 MiB bound; 60 MiB of them stay within it and are read
    const member = gzipSync(Buffer.alloc(1 << 20, 0x20));
    const padded = (mib: number) => Buffer.concat([gzipSync(Buffer.from(JSON.stringify(RELEASE))), ...Array.from({ length: mib }, () => member)]).toString('base64');
    const within = releaseSecret('deployed', 6, RELEASE);
    within.data = { release: Buffer.from(padded(60)).toString('base64') };
    assert.equal(scanLive([slimRelease(within)]).length, 2);
    const bomb = padded(70);
    huge.data = { release: Buffer.from(bomb).toString('base64') };
    assert.deepEqual(scanLive([slimRelease(huge)]), []);
  });

  test('pre-flight helm-releases: a live plan says whether they were read and how to read them; offline, none', () => {
    const not = helmReleasesCheck({ source: { kind: 'live' } });
    assert.equal(not?.status, 'warn');
    assert.match(not!.message, /Helm releases were not read/);
    assert.match(not!.fix, /--read-helm-releases .*deploy\/rbac-helm-releases\.yaml/);
    assert.match(not!.fix, /kubectl get secrets -A --field-selector type=helm\.sh\/release\.v1 -l owner=helm,status=deployed -o yaml/);
    assert.equal(helmReleasesCheck({ source: { kind: 'live', helmReleases: true } })?.status, 'pass');
    assert.equal(helmReleasesCheck({ source: { kind: 'file', files: ['dump.yaml'] } }), undefined);
  });

  test('the gate of a plan read with them reads them again, and the run needs list secrets from the opt-in file', () => {
    const refs = scanLive([releaseSecret('deployed', 3, RELEASE)]);
    const gate = referencesGate(refs, {}, true) as GateStep;
    assert.equal(gate.gate.helmReleases, true);
    assert.match(gate.gate.check, /Helm releases included/);
    assert.equal((referencesGate(refs, {}) as GateStep).gate.helmReleases, undefined);
    const plan = (g: GateStep) => ({ spec: { serviceCIDR: { from: ['10.96.0.0/16'], to: ['10.100.0.0/16'] }, strategy: 'in-place' }, steps: [g] } as unknown as MigrationPlan);
    const need = accessNeeds(plan(gate)).find((n) => needKey(n) === 'list secrets');
    assert.equal(need?.file, HELM_RELEASES_RBAC_FILE);
    assert.equal(accessNeeds(plan(referencesGate(refs, {}) as GateStep)).some((n) => needKey(n) === 'list secrets'), false);
  });

  test('a live plan read with them: its gate lists them again at apply, the plan file keeps it, no other gate may', async () => {
    const inv = await readInventoryFiles([join(ROOT, 'examples/kops-tailscale')]);
    const old = buildSnapshot(inv).services.find((x) => x.clusterIPs.length > 0 && x.type === 'ClusterIP')!;
    const pinned = releaseSecret('deployed', 3, { ...RELEASE, config: {}, manifest: RELEASE.manifest.replace('10.96.40.4', old.clusterIPs[0]!) });
    const planOf = (helmReleases: boolean) => buildMigrationPlan(buildSnapshot({
      ...inv, source: { kind: 'live', ...(helmReleases ? { helmReleases: true as const } : {}) }, objects: [...inv.objects, slimRelease(pinned)],
    }), { service: { target: '172.24.0.0/15' } });
    const held = planOf(true);
    assert.equal(held.preflight.find((c) => c.id === 'helm-releases')?.status, 'pass');
    const gate = held.steps[0] as GateStep;
    assert.equal(gate.id, 'references');
    assert.equal(gate.gate.helmReleases, true);
    assert.match(gate.gate.instructions[0]!, new RegExp(`^Secret data/sh\\.helm\\.release\\.v1\\.db\\.v3 release db: manifest Service db spec\\.clusterIP: ${old.clusterIPs[0]!.replace(/\./g, '\\.')} → 172\\.2[45]\\.`));
    assert.equal((planFromYaml(planToYaml(held)).steps[0] as GateStep).gate.helmReleases, true);
    // `kube-renumber rbac PLAN` names the opt-in file for such a plan, and only for it
    const dir = mkdtempSync(join(tmpdir(), 'kr-helm-'));
    writeFileSync(join(dir, 'held.yaml'), planToYaml(held));
    writeFileSync(join(dir, 'plain.yaml'), planToYaml(planOf(false)));
    assert.match((await run(['rbac', join(dir, 'held.yaml')])).out, /kubectl apply -f deploy\/rbac-helm-releases\.yaml/);
    assert.doesNotMatch((await run(['rbac', join(dir, 'plain.yaml')])).out, /rbac-helm-releases/);
    // read without the flag (an offline scan of the same objects would find it; the gate would not look again)
    assert.equal(planOf(false).preflight.find((c) => c.id === 'helm-releases')?.status, 'warn');
    const doc = yaml.load(planToYaml(held)) as any;
    const other = doc.steps.findIndex((x: any) => x.kind === 'gate' && x.gate.condition !== 'references');
    assert.ok(other > 0, 'the plan has another gate');
    doc.steps[other].gate.helmReleases = true;
    assert.throws(() => validatePlan(doc), /gate\.helmReleases.*only gate references/);

    // the engine's check lists Secrets only for such a gate, and holds once the release no longer pins the address
    const listed: string[] = [];
    const client = (secrets: KubeObject[]) => ({
      context: 'memory', server: 'https://memory',
      request: async (_m: string, path: string): Promise<any> => {
        if (path === '/version') return { gitVersion: 'v1.31.0' };
        if (path === '/apis') return { groups: [] };
        if (path === '/api/v1/namespaces/kube-system') return { metadata: { uid: 'uid-1' } };
        throw new KubeApiError('GET', path, 404, 'NotFound', 'not found');
      },
      async* list(path: string, lo: { labelSelector?: string; fieldSelector?: string } = {}) {
        listed.push(`${path} ${lo.fieldSelector ?? ''} ${lo.labelSelector ?? ''}`.trim());
        if (path === '/api/v1/secrets') yield* secrets;
      },
    }) as unknown as KubeClient;
    const ctx = (c: KubeClient, logs: string[]) => ({ client: c, log: (m: string) => logs.push(m), journal: { entries: () => [] } }) as unknown as StepContext;
    const step = (p: MigrationPlan) => new PlanExecutor(p, { token: 't' }).steps()[0]!;
    const logs: string[] = [];
    assert.equal(await step(held).check(ctx(client([pinned]), logs)), false);
    assert.match(logs.join('\n'), /Secret data\/sh\.helm\.release\.v1\.db\.v3 release db: manifest Service db .* still names the old Service range/);
    assert.ok(listed.includes('/api/v1/secrets type=helm.sh/release.v1 owner=helm,status=deployed'), listed.join('; '));
    const unpinned = releaseSecret('deployed', 4, { ...RELEASE, config: {}, manifest: RELEASE.manifest.replace('  clusterIP: 10.96.40.4\n', '') });
    assert.equal(await step(held).check(ctx(client([unpinned]), [])), true, 'fixed: the gate holds');
    // a gate written without them lists no Secrets at all
    listed.length = 0;
    const without = structuredClone(held);
    delete (without.steps[0] as GateStep).gate.helmReleases;
    await step(without).check(ctx(client([pinned]), []));
    assert.equal(listed.some((l) => l.includes('secrets')), false, listed.join('; '));
  });

  test('the CLI: offline with -f, or without --service-cidr, the flag is refused with one error line', async () => {
    const off = await run(['plan', '-f', join(ROOT, 'examples/kubeadm-exhausted'), '--service-cidr', '10.100.0.0/16', '--read-helm-releases']);
    assert.equal(off.code, 2);
    assert.match(off.err, /^error: --read-helm-releases lists the cluster's Helm releases, and -f alone reads files: .*kubectl get secrets -A/);
    assert.equal(off.err.trim().split('\n').length, 1);
    const pods = await run(['plan', '-f', join(ROOT, 'examples/kubeadm-exhausted'), '--pod-cidr', '10.200.0.0/16', '--read-helm-releases']);
    assert.equal(pods.code, 2);
    assert.match(pods.err, /^error: .*--read-helm-releases.*--service-cidr/);
    // an offline plan carries no helm-releases line: the files hold what they hold
    const plain = await run(['plan', '-f', join(ROOT, 'examples/kubeadm-exhausted'), '--service-cidr', '10.100.0.0/16', '--apiserver-cert-san', '10.96.0.1', '-o', 'yaml']);
    assert.doesNotMatch(plain.out, /helm-releases/);
  });

  test('the opt-in file grants list secrets only, to the two ServiceAccounts, and is not in the kustomize base', () => {
    const docs = (yaml.loadAll(readFileSync(join(ROOT, HELM_RELEASES_RBAC_FILE), 'utf8')) as any[]).filter(Boolean);
    assert.deepEqual(docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role').flatMap((d) => d.rules), [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }]);
    const bound = docs.filter((d) => d.kind === 'ClusterRoleBinding').flatMap((d) => d.subjects.map((s: any) => `${s.kind} ${s.namespace}/${s.name}`));
    assert.deepEqual(bound.sort(), ['ServiceAccount kube-system/kube-renumber', 'ServiceAccount kube-system/kube-renumber-migrate']);
    const k = yaml.load(readFileSync(join(ROOT, 'deploy/kustomization.yaml'), 'utf8')) as { resources: string[] };
    assert.ok(!k.resources.includes('rbac-helm-releases.yaml'));
  });
});
