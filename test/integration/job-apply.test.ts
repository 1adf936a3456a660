// deploy/job-apply.yaml runs a migration with in-cluster credentials: its container's command line (the volume
// mount paths mapped to directories of this test) runs in a pod-like mount namespace with the ServiceAccount's
// token and CA where a pod finds them, no kubeconfig, against the real apiserver, as the Job's ServiceAccount
// bound by the shipped roles. The plan (a Pod CIDR move, Calico) runs to its end and passes verify.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { assertCalicoIpamClean } from '../testbed/calicoctl.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { inPod } from './helpers.ts';
import { assertAllPodsIn, assertWorkloadsReady, grantRecreate, ROOT } from './pod-helpers.ts';

install();

const OLD = '10.244.0.0/16';
const NEW = '10.50.0.0/16';

describe('deploy/job-apply.yaml: apply in the cluster with the ServiceAccount\'s token', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 2, podIPAM: 'calico', populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const job = (yaml.loadAll(readFileSync(join(ROOT, 'deploy/job-apply.yaml'), 'utf8')) as any[]).find((d) => d?.kind === 'Job');
  const pod = job.spec.template.spec;
  const container = pod.containers[0];
  const root = mkdtempSync(join(tmpdir(), 'kr-job-'));
  // each volume mount of the container is a directory here
  const mounts = new Map<string, string>(container.volumeMounts.map((m: any) => [m.mountPath, join(root, m.name)]));
  // a path under a mount (also as --flag=PATH) moves to that mount's directory
  const mapPath = (s: string) => {
    const eq = s.startsWith('--') ? s.indexOf('=') + 1 : 0;
    const [flag, path] = [s.slice(0, eq), s.slice(eq)];
    for (const [from, to] of mounts) if (path === from || path.startsWith(`${from}/`)) return flag + to + path.slice(from.length);
    return s;
  };

  test('the Job\'s command line migrates the pods, then verify passes; the token is never printed', { timeout: 600_000 }, async () => {
    const rbac = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate.yaml'), '-f', join(ROOT, 'deploy/rbac-migrate-pods.yaml')]);
    assert.equal(rbac.code, 0, rbac.stderr);
    const tok = await tb.kubectl(['create', 'token', pod.serviceAccountName, '-n', job.metadata.namespace]);
    assert.equal(tok.code, 0, tok.stderr);
    const token = tok.stdout.trim();
    const secrets = mkdtempSync(join(tmpdir(), 'kr-job-sa-'));
    writeFileSync(join(secrets, 'token'), token, { mode: 0o600 });
    writeFileSync(join(secrets, 'ca.crt'), readFileSync(join(tb.stateDir, 'pki', 'apiserver', 'apiserver.crt')));
    writeFileSync(join(secrets, 'namespace'), job.metadata.namespace);
    for (const d of mounts.values()) mkdirSync(d, { recursive: true });

    // the plan, as the ConfigMap holds it
    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    await grantRecreate(tb, p.out);
    const item = pod.volumes.find((v: any) => v.configMap).configMap.items[0];
    const planMount = container.volumeMounts.find((m: any) => m.name === pod.volumes.find((v: any) => v.configMap).name).mountPath;
    writeFileSync(mapPath(join(planMount, item.path)), p.out);

    const env: NodeJS.ProcessEnv = {
      KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: new URL(tb.server).port,
      ...Object.fromEntries(container.env.map((e: any) => [e.name, mapPath(e.value)])),
    };
    // the gate of the pod range's configuration is acknowledged the way docs/fleet.md says: an --ack-gate in args
    const args = [...container.args.map(mapPath), '--ack-gate=pod-cidr-config'];
    const r = await inPod(args, secrets, env);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^completed: \d+ step\(s\) applied/m);
    assert.ok(!r.out.includes(token) && !r.err.includes(token), 'the token is never printed');
    const stateDir = mapPath(container.args.find((a: string) => a.startsWith('--state-dir=')).slice('--state-dir='.length));
    const v = await inPod(['verify', args[1]!, `--state-dir=${stateDir}`], secrets, env);
    assert.equal(v.code, 0, v.err);
    await assertAllPodsIn(tb, NEW, OLD);
    await assertWorkloadsReady(tb);
    await assertCalicoIpamClean(tb, [OLD]);
    // applied again (the Job re-created), the run resumes from the journal on the claim: the steps already done
    // are not run again, and the cluster stays in the end state
    const again = await inPod(args, secrets, env);
    assert.equal(again.code, 0, again.err);
    const done = /completed: (\d+) step\(s\) applied, (\d+) already done/.exec(again.out);
    assert.ok(done && Number(done[2]) > Number(done[1]), again.out);
    const v2 = await inPod(['verify', args[1]!, `--state-dir=${stateDir}`], secrets, env);
    assert.equal(v2.code, 0, v2.err);
  });
});
