// `probe --deploy` against the real control plane. kwok runs no containers, so the test plays the kubelet for the
// probe pods (test/testbed/pod-runner.ts): it reads each pod's spec and the ConfigMap it mounts from the API, runs
// the container's command with this machine's Node, and writes its stdout/stderr in the CRI log format to a file
// that kwok's kubelet server serves; the tool reads the reports through the apiserver's pods/log. All probe
// traffic goes to servers started here on 127.0.0.1 (--dns-server 127.0.0.1:PORT answering 127.0.0.1 for every
// name, the env client's WEB_SERVICE_HOST=127.0.0.1, --kubernetes-address = the testbed apiserver, the nodeport
// client's node address = status.hostIP = the nodes' InternalIP 127.0.0.1).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import * as net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ProbeReport } from '../../src/probe/probe.ts';
import { eventually, useTestbed } from '../testbed/harness.ts';
import { PodRunner, type ContainerRun } from '../testbed/pod-runner.ts';
import { run } from '../unit/run-cli.ts';
import { dnsServer, kubeconfigWithToken } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NS = 'kr-probe';
const LOOPBACK = '127.0.0.1';
const APP = 'app.kubernetes.io/name=kube-renumber-probe';


/** Report lines in a pod's log file (CRI format, as the runner wrote it). */
function reportLines(r: ContainerRun): ProbeReport[] {
  return readFileSync(r.logFile, 'utf8').split('\n').filter(Boolean)
    .map((l) => l.replace(/^\S+ (stdout|stderr) [FP] /, ''))
    .filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ProbeReport);
}

const lastReport = (r: ContainerRun) => reportLines(r).at(-1);
const runLabel = (r: ContainerRun) => r.podObject.metadata.labels?.['kube-renumber.io/probe-run'] as string;

/** The CLI built in dist/, as a child process (for signals). */
function cliChild(args: string[]) {
  const p = spawn(process.execPath, [join(ROOT, 'bin/kube-renumber.js'), ...args], { env: { PATH: process.env.PATH, HOME: '/nonexistent' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { err += d; });
  const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) => p.on('close', (code) => resolve({ code, out, err })));
  return { p, done, get err() { return err; } };
}

describe('probe --deploy on the real control plane (the test runs the probe containers)', () => {
  const tb = useTestbed({ nodes: 2, kubeletLogs: true, calicoCRDs: false });
  let runner: PodRunner;
  let runnerDefault: PodRunner;
  let echo: net.Server;
  let echoPort: number;
  let dns: Awaited<ReturnType<typeof dnsServer>>;
  let probeArgs: string[];

  before(async () => {
    // the program shipped is dist/probe: it must be built from the current sources
    for (const f of ['pod', 'probe', 'stats', 'wire', 'resolv', 'deploy', 'deploy-run']) {
      assert.ok(statSync(join(ROOT, `dist/probe/${f}.js`)).mtimeMs >= statSync(join(ROOT, `src/probe/${f}.ts`)).mtimeMs, `dist/probe/${f}.js is older than its source: run npm run build`);
    }
    assert.ok(statSync(join(ROOT, 'dist/cli/commands/probe.js')).mtimeMs >= statSync(join(ROOT, 'src/cli/commands/probe.ts')).mtimeMs, 'run npm run build');
    await tb.client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    echo = net.createServer((s) => { s.on('error', () => {}); s.pipe(s); });
    await new Promise<void>((r) => echo.listen(0, LOOPBACK, () => r()));
    echoPort = (echo.address() as net.AddressInfo).port;
    dns = await dnsServer();
    const env = { WEB_SERVICE_HOST: LOOPBACK };
    runner = PodRunner.start(tb, { namespace: NS, labelSelector: APP, env });
    runnerDefault = PodRunner.start(tb, { namespace: 'default', labelSelector: APP, env });
    probeArgs = ['--service', `web:${echoPort}`, '--kinds', 'dns,env,long,kubernetes', '--dns-server', dns.address,
      '--kubernetes-address', `${LOOPBACK}:${new URL(tb.server).port}`, '--interval', '50ms', '--timeout', '5s', '--report-every', '1s'];
  });

  after(async () => {
    await runner?.stop();
    await runnerDefault?.stop();
    dns?.close();
    if (echo) await new Promise((r) => echo.close(r));
  });

  async function leftovers(ns = NS): Promise<string[]> {
    const names: string[] = [];
    for (const [kind, path] of [['deployment', `/apis/apps/v1/namespaces/${ns}/deployments`], ['configmap', `/api/v1/namespaces/${ns}/configmaps`]]) {
      for (const o of (await tb.client.list(`${path}?labelSelector=${encodeURIComponent(APP)}`)).items) names.push(`${kind}/${o.metadata.name}`);
    }
    return names;
  }

  test('reports come back through pods/log; at --duration the final report is read and both objects are deleted', async () => {
    const before = runner.runs.length;
    const t0 = Date.now();
    const r = await run(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, ...probeArgs, '--duration', '5s', '-o', 'json']);
    const elapsed = Date.now() - t0;
    assert.equal(r.code, 0, r.err);
    assert.equal(runner.errors.length, 0, runner.errors.join('\n'));
    const mine = runner.runs.slice(before);
    assert.equal(mine.length, 1, 'one probe pod ran');
    const pod = mine[0]!;
    const report = JSON.parse(r.out);
    assert.equal(report.kind, 'ProbeReport');
    assert.equal(report.stoppedBy, 'duration');
    assert.deepEqual(report.results.map((x: any) => `${x.service}:${x.kind}`), [`${NS}/web:dns`, `${NS}/web:env`, `${NS}/web:long`, 'default/kubernetes:kubernetes']);
    for (const x of report.results) {
      assert.ok(x.requests > 10, `${x.kind}: ${x.requests} requests`);
      assert.equal(x.failures, 0, JSON.stringify(x.failuresByReason));
    }
    assert.equal(report.results[1].startAddress.from, 'env', 'the env client found WEB_SERVICE_HOST');
    // it is the pod's final report (printed on SIGTERM when the Deployment was deleted), read while the pod terminated
    const fin = lastReport(pod)!;
    assert.equal(fin.stoppedBy, 'signal');
    assert.deepEqual(report.results, fin.results);
    assert.deepEqual(report.sources, [{ pod: pod.pod, uid: pod.uid, startedAt: fin.startedAt, endedAt: fin.endedAt, final: true, requests: fin.totals.requests }]);
    assert.ok(fin.durationMs >= 2500 && fin.durationMs < 15_000, `probed ${fin.durationMs} ms`);
    // the pod ran what the tool built: the program from the ConfigMap, with the probe flags, locked down
    const spec = pod.podObject.spec;
    assert.equal(spec.automountServiceAccountToken, false);
    assert.equal(spec.securityContext.runAsNonRoot, true);
    const c = spec.containers[0];
    assert.equal(c.image, 'node:24-alpine');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.args.slice(0, 4), ['--service', `${NS}/web:${echoPort}`, '--kinds', 'dns,env,long,kubernetes']);
    const files = pod.configMaps.program!.data as Record<string, string>;
    assert.deepEqual(Object.keys(files).sort(), ['main.mjs', 'package.json', 'pod.js', 'probe.js', 'resolv.js', 'stats.js', 'wire.js']);
    const size = Object.values(files).reduce((n, v) => n + Buffer.byteLength(v), 0);
    assert.ok(size < 100_000, `ConfigMap data ${size} bytes`);
    process.stderr.write(`# probe --deploy: ConfigMap data ${size} bytes, run took ${elapsed} ms for --duration 5s\n`);
    assert.deepEqual(await leftovers(), []);
  });

  test('the nodeport client connects to its own node: status.hostIP through the downward API', async () => {
    // the nodes register InternalIP 127.0.0.1 (kubeletLogs), which kwok gives pods as status.hostIP: the node port
    // requests go to the echo server on 127.0.0.1 and nowhere else
    const nodes = (await tb.client.list('/api/v1/nodes')).items;
    assert.ok(nodes.every((n) => (n.status?.addresses ?? []).some((a: { type: string; address: string }) => a.type === 'InternalIP' && a.address === LOOPBACK)), 'nodes at 127.0.0.1');
    const before = runner.runs.length;
    const r = await run(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, '--kinds', 'nodeport', '--nodeport', `web:${echoPort}`,
      '--interval', '50ms', '--timeout', '5s', '--report-every', '1s', '--duration', '3s', '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const pod = runner.runs[before]!;
    const c = pod.podObject.spec.containers[0];
    // (the apiserver adds the fieldRef's apiVersion)
    assert.deepEqual(c.env, [{ name: 'KUBE_RENUMBER_NODE_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.hostIP' } } }]);
    assert.ok(!c.args.includes('--node-address'), 'no --node-address: each pod its own node');
    assert.equal(pod.podObject.status.hostIP, LOOPBACK);
    const report = JSON.parse(r.out);
    assert.deepEqual(report.settings.kinds, ['nodeport']);
    assert.equal(report.settings.nodeAddress, LOOPBACK);
    assert.deepEqual(report.results.map((x: any) => `${x.service}:${x.port}:${x.kind}`), [`${NS}/web:${echoPort}:nodeport`]);
    const x = report.results[0];
    assert.ok(x.requests > 10, `${x.requests} requests`);
    assert.equal(x.failures, 0, JSON.stringify(x.failuresByReason));
    assert.deepEqual(Object.keys(x.addresses), [LOOPBACK]);
    assert.deepEqual(await leftovers(), []);
  });

  test('a probe pod replaced mid-run loses nothing: evicted (final report), killed (last periodic report), replaced again', async () => {
    const before = runner.runs.length;
    const tool = run(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, ...probeArgs, '--duration', '14s', '-o', 'json']);
    const nth = (i: number) => eventually(`probe pod #${i + 1}`, async () => runner.runs[before + i], 30_000, 50);
    // pod A: deleted as an eviction or a rollout would, after it reported twice
    const a = await nth(0);
    await eventually('two reports from pod A', async () => (reportLines(a).length >= 2 ? true : undefined), 15_000, 50);
    await tb.client.delete(`/api/v1/namespaces/${NS}/pods/${a.pod}`);
    // pod B (the ReplicaSet's replacement): killed without a word after two reports, deleted after the tool had time to poll
    const b = await nth(1);
    await eventually('two reports from pod B', async () => (reportLines(b).length >= 2 ? true : undefined), 15_000, 50);
    runner.kill(b.pod);
    await b.exited;
    // the tool reads the log every second: give it a few rounds before the pod (and its log) goes away
    await new Promise((r) => setTimeout(r, 4000));
    await tb.client.delete(`/api/v1/namespaces/${NS}/pods/${b.pod}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 });
    const c = await nth(2);
    const r = await tool;
    // (a request may fail on a machine under heavy load: then exit 1; the merge is what this test is about)
    assert.ok(r.code === 0 || (r.code === 1 && /request\(s\) failed/.test(r.err)), r.err);
    assert.equal(runner.errors.length, 0, runner.errors.join('\n'));
    const report = JSON.parse(r.out);
    const why = `sources ${JSON.stringify(report.sources)}; B's lines ${reportLines(b).map((x) => `${x.stoppedBy}:${x.totals.requests}`).join(',')}; stderr ${r.err}`;
    const [fa, fc] = [lastReport(a)!, lastReport(c)!];
    assert.equal(fa.stoppedBy, 'signal');
    assert.equal(fc.stoppedBy, 'signal');
    assert.ok(reportLines(b).every((x) => x.stoppedBy === 'running'), 'B never printed a final report');
    // B's report is the last one the tool read before B went away: normally B's last line (the tool had 4 s, four
    // rounds, to read it); on a very slow machine an earlier one, never none
    const bLines = reportLines(b);
    const lb = bLines.find((x) => x.totals.requests === report.sources[1]?.requests);
    assert.ok(lb, why);
    if (bLines.indexOf(lb) !== bLines.length - 1) process.stderr.write(`# note: the tool read B's report line ${bLines.indexOf(lb) + 1} of ${bLines.length}\n`);
    assert.deepEqual(report.sources.map((s: any) => [s.pod, s.final, s.requests]), [
      [a.pod, true, fa.totals.requests], [b.pod, false, lb.totals.requests], [c.pod, true, fc.totals.requests],
    ], why);
    assert.equal(report.totals.requests, fa.totals.requests + lb.totals.requests + fc.totals.requests);
    assert.equal(report.totals.failures, fa.totals.failures + lb.totals.failures + fc.totals.failures);
    for (const kind of ['dns', 'env', 'long', 'kubernetes']) {
      const sum: number = [fa, lb, fc].reduce((n: number, x: ProbeReport) => n + x.results.find((y) => y.kind === kind)!.requests, 0);
      assert.equal(report.results.find((y: any) => y.kind === kind).requests, sum, kind);
    }
    assert.equal(report.startedAt, fa.startedAt);
    assert.equal(report.endedAt, fc.endedAt);
    assert.match(r.err, /merged 3 probe run\(s\): .*\(final report\), .*\(last periodic report\), .*\(final report\)/);
    assert.deepEqual(await leftovers(), []);
  });

  test('SIGTERM to the tool: final report, cleanup, exit 0; a second Ctrl-C skips the final reports but still cleans up', async () => {
    let before = runner.runs.length;
    const one = cliChild(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, ...probeArgs, '-o', 'json', '-v']);
    const pa = await eventually('the probe pod', async () => runner.runs[before], 30_000, 50);
    await eventually('the tool reading its reports', async () => /probe pod \S+ is reporting/.test(one.err), 30_000, 50);
    one.p.kill('SIGTERM');
    const r1 = await one.done;
    assert.equal(r1.code, 0, r1.err);
    const rep1 = JSON.parse(r1.out);
    assert.equal(rep1.stoppedBy, 'signal');
    assert.deepEqual(rep1.sources.map((s: any) => s.final), [true]);
    assert.deepEqual(rep1.results, lastReport(pa)!.results);
    assert.match(r1.err, /^stopping: reading the final reports/m);
    assert.match(r1.err, /deleted Deployment and ConfigMap kr-probe\/kube-renumber-probe-[0-9a-f]{8}/);
    assert.deepEqual(await leftovers(), []);

    before = runner.runs.length;
    const two = cliChild(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, ...probeArgs, '-o', 'json', '-v']);
    await eventually('the probe pod', async () => runner.runs[before], 30_000, 50);
    await eventually('the tool reading its reports', async () => /probe pod \S+ is reporting/.test(two.err), 30_000, 50);
    two.p.kill('SIGINT');
    await eventually('the first signal noticed', async () => /stopping:/.test(two.err), 5000, 10);
    two.p.kill('SIGINT');
    const r2 = await two.done;
    assert.equal(r2.code, 0, r2.err);
    assert.match(r2.err, /not waiting for the final reports/);
    assert.match(r2.err, /deleted Deployment and ConfigMap kr-probe\/kube-renumber-probe-[0-9a-f]{8}/);
    const rep2 = JSON.parse(r2.out);
    assert.equal(rep2.stoppedBy, 'signal');
    assert.ok(rep2.totals.requests > 0);
    assert.deepEqual(await leftovers(), []);
  });

  test('under deploy/rbac-probe.yaml with a token-only kubeconfig: works in its namespace, exit 5 elsewhere, and cleans up when refused mid-run', async () => {
    const apply = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac-probe.yaml')]);
    assert.equal(apply.code, 0, apply.stderr);
    const tok = await tb.kubectl(['create', 'token', 'kube-renumber-probe', '-n', 'kube-system']);
    assert.equal(tok.code, 0, tok.stderr);
    const token = tok.stdout.trim();
    const kc = kubeconfigWithToken(tb.server, token);
    const as = 'system:serviceaccount:kube-system:kube-renumber-probe';
    const can = async (verb: string, what: string, ns = 'default') => (await tb.kubectl(['auth', 'can-i', verb, what, '-n', ns, '--as', as])).stdout.trim();
    assert.equal(await can('get', 'pods/log'), 'yes');
    assert.equal(await can('create', 'deployments.apps'), 'yes');
    for (const [verb, what] of [['get', 'secrets'], ['delete', 'pods'], ['create', 'pods'], ['patch', 'deployments.apps'], ['get', 'configmaps'], ['create', 'pods/exec']]) {
      assert.equal(await can(verb!, what!), 'no', `${verb} ${what}`);
    }
    assert.equal(await can('create', 'configmaps', NS), 'no', 'nothing outside its namespace');

    // works in "default"
    const ok = await run(['probe', '--deploy', '--kubeconfig', kc, ...probeArgs, '--duration', '3s', '-o', 'json']);
    assert.equal(ok.code, 0, ok.err);
    const rep = JSON.parse(ok.out);
    assert.equal(rep.sources.length, 1);
    assert.equal(rep.sources[0].final, true);
    assert.ok(rep.totals.requests > 0);
    assert.deepEqual(await leftovers('default'), []);

    // refused in another namespace: one error line, exit 5, nothing created
    const no = await run(['probe', '--deploy', '--kubeconfig', kc, '-n', NS, ...probeArgs, '--duration', '3s']);
    assert.equal(no.code, 5, no.err);
    assert.equal(no.err.trim().split('\n').length, 1, no.err);
    assert.match(no.err, /^error: not allowed: POST \/api\/v1\/namespaces\/kr-probe\/configmaps \(403 Forbidden\); grant the permissions in deploy\/rbac-probe\.yaml$/m);
    assert.doesNotMatch(no.err, new RegExp(token.slice(-20)));
    assert.equal(no.out, '');
    assert.deepEqual(await leftovers(), []);

    // pods/log taken away mid-run: exit 5, and the Deployment and ConfigMap are still deleted
    const before = runnerDefault.runs.length;
    const mid = run(['probe', '--deploy', '--kubeconfig', kc, ...probeArgs, '--duration', '30s']);
    const p = await eventually('the probe pod', async () => runnerDefault.runs[before], 30_000, 50);
    await eventually('a report', async () => (reportLines(p).length >= 1 ? true : undefined), 15_000, 50);
    const role = await tb.client.get<any>('/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/kube-renumber-probe');
    role.rules = role.rules.filter((r: any) => !r.resources.includes('pods/log'));
    await tb.client.put('/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/kube-renumber-probe', role);
    const r = await mid;
    assert.equal(r.code, 5, r.err);
    assert.match(r.err, /^error: not allowed: GET \/api\/v1\/namespaces\/default\/pods\/kube-renumber-probe-[0-9a-f]+-[a-z0-9]+-[a-z0-9]+\/log \(403 Forbidden\); grant the permissions in deploy\/rbac-probe\.yaml$/m);
    assert.equal(r.err.trim().split('\n').length, 1, r.err);
    assert.deepEqual(await leftovers('default'), []);
    assert.equal(runLabel(p).length, 8);
    const restore = await tb.kubectl(['apply', '-f', join(ROOT, 'deploy/rbac-probe.yaml')]);
    assert.equal(restore.code, 0, restore.stderr);
  });

  test('--keep-deployment leaves both objects; a missing namespace is a usage error with nothing created', async () => {
    const r = await run(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', NS, ...probeArgs, '--duration', '2s', '--keep-deployment', '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const kept = await leftovers();
    assert.equal(kept.length, 2, kept.join());
    const id = kept[0]!.replace(/^.*kube-renumber-probe-/, '');
    assert.match(r.err, new RegExp(`--keep-deployment\\); delete them with: kubectl -n ${NS} delete deployment,configmap -l kube-renumber.io/probe-run=${id}`));
    assert.equal(JSON.parse(r.out).sources[0].final, false, 'nothing was stopped, so the last periodic report');
    const del = await tb.kubectl(['-n', NS, 'delete', 'deployment,configmap', '-l', `kube-renumber.io/probe-run=${id}`]);
    assert.equal(del.code, 0, del.stderr);
    assert.deepEqual(await leftovers(), []);

    const missing = await run(['probe', '--deploy', '--kubeconfig', tb.kubeconfigPath, '-n', 'no-such-ns', ...probeArgs, '--duration', '2s']);
    assert.equal(missing.code, 2, missing.err);
    assert.match(missing.err, /^error: namespace "no-such-ns" does not exist \(-n\)$/m);
  });
});
