// The decisions that bind a plan to its cluster and keep a run to what it owns: the identity check, the pre-flight
// checks run again live (never read from the file), supersession after a rollback, the node hook's environment,
// and which bridges and covers a run may touch.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { COVER_FOR_LABEL, ownedHelper, RUN_LABEL } from '../../src/engine/covers.ts';
import { attemptStarted, createdUids, Journal, reachedSteps } from '../../src/engine/journal.ts';
import { hookEnvironment } from '../../src/engine/pod-steps.ts';
import { runHook } from '../../src/pod-paths/node/hook.ts';
import { runSteps, type Step, type StepContext } from '../../src/engine/runner.ts';
import { BRIDGE_FOR_LABEL, ServiceExecutor, squatters, type ServiceView } from '../../src/engine/service-steps.ts';
import type { KubeClient, Method } from '../../src/kube/client.ts';
import type { UserError } from '../../src/errors.ts';
import { bindingRefusal, identityCheck, identityOf, serverWithoutCredentials } from '../../src/plan/identity.ts';
import { buildMigrationPlan, MANAGED_LABEL, type MigrationPlan } from '../../src/plan/plan.ts';
import { failedNow, recheckPreflight } from '../../src/plan/recheck.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { buildSnapshot } from '../../src/cluster/build.ts';

install();

const UID = '6f1c3a52-9d1e-4c1b-a3f5-0c2d7e9b4a11';
const tmp = () => mkdtempSync(join(tmpdir(), 'kr-bind-'));

/** The fixture cluster as a live read with a kube-system uid. */
function liveSnap(over: Parameters<typeof kubeadmSnapshot>[1] = {}) {
  return kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1'), svc('kube-system', 'kube-dns', '10.96.0.10'), svc('shop', 'web', '10.96.3.4')], {
    source: { kind: 'live', server: 'https://admin:s3cret@api.example:6443/?token=abc', kubeSystemUID: UID }, ...over,
  });
}
const plan = (snap = liveSnap()) => buildMigrationPlan(snap, { service: { target: '172.24.0.0/16', apiserverCertSANs: ['10.96.0.1', '172.24.0.1'], certSANsGiven: true } });

describe('a plan bound to its cluster', () => {
  it('records the kube-system uid and the apiserver URL without credentials; an offline plan records none and warns', () => {
    const p = plan();
    assert.deepEqual(p.metadata.cluster, { uid: UID, server: 'https://api.example:6443' });
    assert.doesNotMatch(planToYaml(p), /s3cret|admin|token=abc/);
    assert.equal(p.preflight[0]!.id, 'cluster-identity');
    assert.equal(p.preflight[0]!.status, 'pass');
    const offline = plan(kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1')]));
    assert.equal(offline.metadata.cluster, undefined);
    assert.equal(offline.preflight[0]!.status, 'warn');
    assert.match(offline.preflight[0]!.message, /not bound to a cluster: written offline/);
    assert.match(offline.preflight[0]!.fix, /--accept-unbound-plan/);
    // a live read that could not see kube-system: no identity either
    assert.equal(identityOf(liveSnap({ source: { kind: 'live', server: 'https://x' } })), undefined);
    assert.match(identityCheck(liveSnap({ source: { kind: 'live', server: 'https://x' } })).message, /namespace kube-system could not be read/);
  });

  it('serverWithoutCredentials keeps scheme, host, port and path only', () => {
    assert.equal(serverWithoutCredentials('https://u:p@10.0.0.1:6443/k8s/?a=b#c'), 'https://10.0.0.1:6443/k8s');
    assert.equal(serverWithoutCredentials('not a url'), undefined);
  });

  it('the identity round-trips through YAML; the validator still takes plans without it and refuses a forged one', () => {
    assert.deepEqual(planFromYaml(planToYaml(plan())).metadata.cluster, { uid: UID, server: 'https://api.example:6443' });
    const old = plan();
    delete old.metadata.cluster;
    assert.equal(planFromYaml(planToYaml(old)).metadata.cluster, undefined);
    assert.throws(() => planFromYaml(planToYaml({ ...old, metadata: { ...old.metadata, cluster: { uid: 'a b' } } } as MigrationPlan)), /metadata\.cluster\.uid: "a b" is not a uid/);
    assert.throws(() => planFromYaml(planToYaml({ ...old, metadata: { ...old.metadata, cluster: { uid: UID, token: 'x' } } } as never)), /metadata\.cluster\.token: unknown field/);
  });

  it('bindingRefusal: same cluster runs; another cluster, an unreadable one and an unaccepted unbound plan do not', () => {
    const rec = { uid: UID, server: 'https://api.example:6443' };
    assert.equal(bindingRefusal(rec, { uid: UID }, false), undefined);
    assert.equal(bindingRefusal(rec, { uid: UID }, true), undefined);
    assert.match(bindingRefusal(rec, { uid: 'other-uid', server: 'https://u:pw@b:6443' }, true)!,
      /^the plan was written for another cluster: kube-system uid 6f1c.* \(https:\/\/api\.example:6443\), and this cluster's is other-uid \(https:\/\/b:6443\)/);
    assert.doesNotMatch(bindingRefusal(rec, { uid: 'other-uid', server: 'https://u:pw@b:6443' }, true)!, /pw/);
    assert.match(bindingRefusal(rec, {}, true)!, /this cluster's identity cannot be read/);
    assert.match(bindingRefusal(undefined, { uid: UID }, false)!, /records no cluster identity.*--accept-unbound-plan/);
    assert.equal(bindingRefusal(undefined, { uid: UID }, true), undefined);
  });
});

describe('pre-flight checks run again against the live snapshot', () => {
  it('a check that fails now is found whatever the file says; one that passes stays passed', () => {
    const p = plan();
    assert.deepEqual(failedNow(recheckPreflight(liveSnap(), p)), []);
    // since the plan was written, a node took an address inside the target
    const now = liveSnap({ nodes: [{ name: 'n1', internalIPs: ['172.24.9.9'], externalIPs: [], podCIDRs: [], labels: {}, taints: [] } as never] });
    const edited: MigrationPlan = { ...p, preflight: p.preflight.map((c) => ({ ...c, status: 'pass' as const })) };
    const failed = failedNow(recheckPreflight(now, edited));
    assert.deepEqual(failed.map((c) => c.id), ['target-conflicts']);
    assert.match(failed[0]!.message, /172\.24\.0\.0\/16 contains 172\.24\.9\.9, the InternalIP of node n1/);
  });

  it('the apiserver certificate is judged with the SANs the operator gave at plan time, else with those read live', () => {
    const p = plan();
    assert.deepEqual(p.spec.options!.apiserverCertSANs, ['10.96.0.1', '172.24.0.1']);
    assert.equal(recheckPreflight(liveSnap(), p).find((c) => c.id === 'apiserver-cert-san')!.status, 'pass');
    const readLive = { ...p, spec: { ...p.spec, options: { ...p.spec.options!, apiserverCertSANs: undefined } } } as MigrationPlan;
    assert.equal(recheckPreflight(liveSnap(), readLive, { liveCertSANs: ['10.96.0.1'] }).find((c) => c.id === 'apiserver-cert-san')!.status, 'fail');
    assert.equal(recheckPreflight(liveSnap(), readLive).find((c) => c.id === 'apiserver-cert-san')!.status, 'warn');
  });

  it('the ServiceCIDR API gone since the plan: servicecidr-api fails', () => {
    const failed = failedNow(recheckPreflight(liveSnap({ kubernetesVersion: 'v1.20.7', serviceCIDRApi: null, serviceCIDRs: [] }), plan()));
    assert.ok(failed.some((c) => c.id === 'servicecidr-api'), failed.map((c) => c.id).join(','));
  });

  it('an unchanged cluster gives the plan\'s own results, for every bundled example and kind of plan', async () => {
    const root = fileURLToPath(new URL('../../examples', import.meta.url));
    let compared = 0;
    for (const ex of readdirSync(root).filter((x) => statSync(join(root, x)).isDirectory())) {
      const snap = buildSnapshot(await readInventoryFiles([join(root, ex)]));
      for (const opts of [{ service: { target: '172.24.0.0/16', headroom: 1.5 } }, { pod: { target: '10.128.0.0/14' } },
        { pod: { target: '10.128.0.0/14', ipam: 'node' as const, nodeHook: 'true', parallel: 3 } }, { service: { target: '172.24.0.0/16', keep: ['default/nope'] }, pod: { target: '10.128.0.0/14' } }]) {
        const p = buildMigrationPlan(snap, opts);
        // a Pod move the owner of the addresses refuses (Cilium cluster-pool) is no plan: nothing to check again
        if (opts.pod && !p.spec.podCIDR) {
          assert.ok(p.preflight.some((c) => c.id === 'pod-ipam' && c.status === 'fail'), `${ex}: a pod plan without its section is a refusal`);
          continue;
        }
        assert.deepEqual(recheckPreflight(snap, p).map((c) => `${c.id}:${c.status}`), p.preflight.map((c) => `${c.id}:${c.status}`), `${ex} ${JSON.stringify(opts)}`);
        compared++;
      }
    }
    assert.ok(compared >= 12, `${compared} plans compared`);
  });

  it('attemptStarted: no action step started since the last rollback means nothing was written yet', () => {
    const e = (event: string, step?: string) => ({ ts: 't', run: 'r', event, ...(step ? { step } : {}) }) as never;
    const actions = new Set(['create', 'move']);
    assert.equal(attemptStarted([], actions), false);
    assert.equal(attemptStarted([e('run-start'), e('step-start', 'gate-1'), e('gate', 'gate-1')], actions), false);
    assert.equal(attemptStarted([e('run-start'), e('step-start', 'create')], actions), true);
    assert.equal(attemptStarted([e('step-start', 'create'), e('step-done', 'create'), e('rollback-start'), e('rolled-back', 'create')], actions), false);
  });
});

describe('supersession after a rollback', () => {
  it('rollback then apply runs a superseded step again (it was skipped as superseded before the fix)', async () => {
    const d = tmp();
    const ctx: StepContext = { client: undefined as never, backups: new BackupStore(join(d, 'b'), 'r'), journal: new Journal(join(d, 'j'), 'r'), dryRun: 'none', log: () => {} };
    let moved = false;
    const applied: string[] = [];
    const steps: Step[] = [
      { id: 'move', title: 'move', kind: 'action', supersededBy: ['remove'], check: async () => moved, apply: async () => { moved = true; applied.push('move'); },
        rollback: async () => { moved = false; } },
      { id: 'remove', title: 'remove', kind: 'action', check: async () => false, apply: async () => { applied.push('remove'); } },
    ];
    // first run: both done; a crash-free rollback undoes the move
    assert.equal((await runSteps(steps, ctx)).status, 'completed');
    ctx.journal.append('rollback-start');
    ctx.journal.append('rolled-back', { step: 'move' });
    moved = false;
    assert.deepEqual([...reachedSteps(ctx.journal.entries())], []);
    const again = await runSteps(steps, ctx);
    assert.equal(again.status, 'completed');
    assert.deepEqual(applied, ['move', 'remove', 'move', 'remove'], 'the move ran again after the rollback');
    assert.equal(moved, true);
  });

  it('a resumed run still counts a step superseded once a later step was reached in this attempt', () => {
    const e = (event: string, step?: string) => ({ ts: 't', run: 'r', event, ...(step ? { step } : {}) }) as never;
    assert.deepEqual([...reachedSteps([e('step-start', 'a'), e('rollback-start'), e('step-start', 'b')])], ['b']);
  });
});

describe('the node hook', () => {
  it('gets PATH, HOME, KUBECONFIG (the run\'s) and KUBE_RENUMBER_NODE, nothing else', async () => {
    const env = { PATH: '/usr/bin:/bin', HOME: '/home/op', KUBECONFIG: '/env/kc', AWS_SECRET_ACCESS_KEY: 'nope', KUBE_TOKEN: 'nope' };
    assert.deepEqual(hookEnvironment(env), { PATH: '/usr/bin:/bin', HOME: '/home/op', KUBECONFIG: '/env/kc' });
    assert.deepEqual(hookEnvironment(env, '/flag/kc'), { PATH: '/usr/bin:/bin', HOME: '/home/op', KUBECONFIG: '/flag/kc' });
    assert.deepEqual(hookEnvironment({ HOME: '/h' }), { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/h' });
    const out: string[] = [];
    await runHook('env | sort', 'node-7', 30_000, (m) => out.push(m), hookEnvironment(env, '/flag/kc'));
    const seen = out.join('\n');
    assert.match(seen, /KUBE_RENUMBER_NODE=node-7/);
    assert.match(seen, /KUBECONFIG=\/flag\/kc/);
    assert.doesNotMatch(seen, /AWS_SECRET_ACCESS_KEY|KUBE_TOKEN/);
  });
});

describe('ownership of bridges and covers', () => {
  const RUN = 'a1b2c3d4e5f6';
  const it1 = { namespace: 'shop', name: 'web', from: ['10.96.3.4'], to: ['172.24.3.4'], bridge: 'web-kr-old' };
  const mine = (name: string, forLabel: string, run = RUN): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop', uid: `uid-${name}-${run}`,
    labels: { [MANAGED_LABEL]: 'true', [forLabel]: 'web', [RUN_LABEL]: run } }, spec: { clusterIP: '10.96.3.4', clusterIPs: ['10.96.3.4'] } });

  it('ownedHelper and squatters: only our labels with this run count as ours', () => {
    assert.equal(ownedHelper(mine('web-kr-cover', COVER_FOR_LABEL), COVER_FOR_LABEL, 'web', RUN), true);
    assert.equal(ownedHelper(mine('web-kr-cover', COVER_FOR_LABEL, 'otherrun0000'), COVER_FOR_LABEL, 'web', RUN), false);
    assert.equal(ownedHelper({ metadata: { name: 'web-kr-cover' } }, COVER_FOR_LABEL, 'web', RUN), false);
    const view: ServiceView = new Map([['shop/web', undefined], ['shop/web-kr-cover', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web-kr-cover', namespace: 'shop' } }],
      ['shop/web-kr-old', mine('web-kr-old', BRIDGE_FOR_LABEL)]]);
    assert.deepEqual(squatters(view, [it1], RUN), ['shop/web-kr-cover']);
    view.set('shop/web-kr-cover', mine('web-kr-cover', COVER_FOR_LABEL));
    view.set('shop/web-kr-old', mine('web-kr-old', BRIDGE_FOR_LABEL, 'otherrun0000'));
    assert.deepEqual(squatters(view, [it1], RUN), ['shop/web-kr-old']);
  });

  /** moveBack against a fake API that holds `bridge`; returns the requests it saw. */
  async function moveBackWith(bridge: KubeObject | undefined, journaled: boolean) {
    const seen: string[] = [];
    const client: KubeClient = {
      server: 'https://127.0.0.1:1', context: 't', get requestCount() { return seen.length; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
      async request<T>(method: Method, path: string): Promise<T> {
        seen.push(`${method} ${path}`);
        if (method === 'GET' && path.endsWith('/services/web-kr-old')) {
          if (bridge) return bridge as T;
          throw Object.assign(new Error('nf'), { status: 404 });
        }
        throw new Error(`stop after ${method} ${path}`);
      },
      async *list() { /* nothing */ },
    };
    const d = tmp();
    const ctx: StepContext = { client, backups: new BackupStore(join(d, 'b'), RUN), journal: new Journal(join(d, 'j'), RUN), dryRun: 'none', log: () => {} };
    ctx.backups.save({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { clusterIP: '10.96.3.4' } });
    if (journaled && bridge) ctx.journal.append('created', { objects: [`core/Service/shop/web-kr-old@${bridge.metadata!.uid}`] });
    const p = plan();
    const ex = new ServiceExecutor(p, { token: RUN, timeoutMs: 1000 });
    const err = await ex.moveBack(ctx, it1).then(() => undefined, (e: Error) => e);
    return { seen, err };
  }

  it('moveBack deletes only a bridge with this run\'s labels and a uid journaled as created, with that uid as precondition', async () => {
    const unlabelled = await moveBackWith({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web-kr-old', namespace: 'shop', uid: 'u-1' } }, true);
    assert.match(unlabelled.err!.message, /Service shop\/web-kr-old has the name of a kube-renumber helper but is not one of this run's/);
    assert.ok(!unlabelled.seen.some((s) => s.startsWith('DELETE')), unlabelled.seen.join(', '));
    assert.doesNotMatch(unlabelled.err!.message, /label them by hand/, 'an object without our labels is not offered a label');
    // a bridge made before run labels (our helper labels, no run label): the message names the command that labels it
    const old = mine('web-kr-old', BRIDGE_FOR_LABEL);
    delete old.metadata!.labels![RUN_LABEL];
    const noRun = await moveBackWith(old, true);
    assert.equal((noRun.err as UserError).kind, 'verify');
    assert.match(noRun.err!.message, new RegExp(`shop/web-kr-old carries the helper labels but no kube-renumber\\.io/run label .*label them by hand and resume: kubectl -n shop label service web-kr-old kube-renumber\\.io/run=${RUN}$`));
    assert.ok(!noRun.seen.some((s) => s.startsWith('DELETE')));
    // a helper of another plan's run: named with that run, and what to do
    const other = mine('web-kr-old', BRIDGE_FOR_LABEL);
    other.metadata!.labels![RUN_LABEL] = 'ffff00001111';
    const otherRun = await moveBackWith(other, true);
    assert.match(otherRun.err!.message, new RegExp(`shop/web-kr-old is a helper of the run of plan ffff00001111: finish or roll back that plan's run .*`
      + `kubectl -n shop label service web-kr-old kube-renumber\\.io/run=${RUN} --overwrite\\) and resume$`));
    assert.doesNotMatch(otherRun.err!.message, /no kube-renumber\.io\/run label/);
    assert.ok(!otherRun.seen.some((s) => s.startsWith('DELETE')));
    const notJournaled = await moveBackWith(mine('web-kr-old', BRIDGE_FOR_LABEL), false);
    assert.match(notJournaled.err!.message, /bridge shop\/web-kr-old \(uid uid-web-kr-old-a1b2c3d4e5f6\) is not journaled as created by this run/);
    assert.ok(!notJournaled.seen.some((s) => s.startsWith('DELETE')));
    const ours = await moveBackWith(mine('web-kr-old', BRIDGE_FOR_LABEL), true);
    assert.ok(ours.seen.some((s) => s.startsWith('DELETE') && s.endsWith('/services/web-kr-old')), ours.seen.join(', '));
  });

  it('createdUids reads only this run\'s created lines', () => {
    const e = (run: string, objects: string[]) => ({ ts: 't', run, event: 'created', objects }) as never;
    assert.deepEqual([...createdUids([e('r1', ['a@1']), e('r2', ['b@2'])], 'r1')], ['a@1']);
  });
});
