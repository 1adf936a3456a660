/**
 * `probe --deploy` without a cluster: the objects it creates (pure), the in-pod arguments, resolv.conf, report lines
 * in a pod's log, merging reports across pods and runs, the in-pod program itself (run from the sources against
 * servers on 127.0.0.1), and the run against a fake KubeClient (create, poll, end, clean up on every way out).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../../src/cluster/types.ts';
import { KubeApiError, UnreachableError, type KubeClient, type Method, type RequestOptions } from '../../src/kube/client.ts';
import {
  buildProbeObjects, DEFAULT_PROBE_IMAGE, mergeReports, parseReportLog, podArgs, PROGRAM_DIR_IN_POD, PROGRAM_FILES, runSelector,
  tailLinesFor, type PodProbeSettings,
} from '../../src/probe/deploy.ts';
import { ProbeCleanupError, ReportStore, runDeployedProbe } from '../../src/probe/deploy-run.ts';
import { Series, type ProbeReport, type ProbeResult } from '../../src/probe/index.ts';
import { parsePodArgs } from '../../src/probe/pod.ts';
import { parseResolvConf, resolvConfNameserver } from '../../src/probe/resolv.ts';
import { run } from './run-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LOOPBACK = '127.0.0.1';
const TMP = mkdtempSync(join(tmpdir(), 'kr-probe-deploy-'));
after(() => { rmSync(TMP, { recursive: true, force: true }); });

const SETTINGS: PodProbeSettings = {
  services: [{ namespace: 'shop', name: 'cart', port: 8080 }, { namespace: 'default', name: 'web', port: 80 }],
  kinds: ['dns', 'env', 'kubernetes', 'long'],
  clusterDomain: 'cluster.local',
  intervalMs: 50,
  timeoutMs: 1000,
  protocol: 'http',
  httpPath: '/healthz',
  connections: 2,
  family: 'any',
  reportEveryMs: 5000,
};

/** A report as a pod prints it: one result per (service, kind) from a real Series. */
function report(opts: {
  startedAt: number; durationMs: number; stoppedBy: ProbeReport['stoppedBy'];
  results: Array<{ service?: string; kind?: ProbeResult['kind']; ok: number[]; fail?: number; latency?: number }>;
}): ProbeReport {
  const results: ProbeResult[] = opts.results.map((r) => {
    const kind = r.kind ?? 'dns';
    const s = new Series({ longLived: kind === 'long' });
    for (const t of r.ok) s.success(t, r.latency ?? 2, '10.96.0.7');
    for (let i = 0; i < (r.fail ?? 0); i++) s.failure('connect-refused', '10.96.0.7');
    return { service: r.service ?? 'default/web', port: 80, kind, ...s.summary(opts.durationMs) };
  });
  const totals = { requests: 0, failures: 0, dnsFailures: 0, breaks: 0 };
  for (const r of results) { totals.requests += r.requests; totals.failures += r.failures; totals.dnsFailures += r.dnsFailures; totals.breaks += r.breaks ?? 0; }
  return {
    apiVersion: 'kube-renumber.io/v1', kind: 'ProbeReport',
    startedAt: new Date(opts.startedAt).toISOString(), endedAt: new Date(opts.startedAt + opts.durationMs).toISOString(),
    durationMs: opts.durationMs, stoppedBy: opts.stoppedBy,
    settings: { kinds: ['dns'], intervalMs: 20, timeoutMs: 1000, protocol: 'echo', clusterDomain: 'cluster.local', dnsServer: '10.96.0.10', connections: 1 },
    totals, results,
  };
}

describe('probe --deploy: the objects', () => {
  const program = { 'main.mjs': 'x', 'pod.js': 'y' };
  const { configMap, deployment } = buildProbeObjects({ namespace: 'probe', runId: 'ab12cd34', image: DEFAULT_PROBE_IMAGE, replicas: 2, settings: SETTINGS, program });
  const pod = deployment.spec.template.spec;
  const c = pod.containers[0];

  it('names, labels and the selector', () => {
    for (const o of [configMap, deployment]) {
      assert.equal(o.metadata!.name, 'kube-renumber-probe-ab12cd34');
      assert.equal(o.metadata!.namespace, 'probe');
      assert.deepEqual(o.metadata!.labels, {
        'app.kubernetes.io/name': 'kube-renumber-probe', 'app.kubernetes.io/managed-by': 'kube-renumber', 'kube-renumber.io/probe-run': 'ab12cd34',
      });
    }
    assert.equal(deployment.apiVersion, 'apps/v1');
    assert.equal(deployment.spec.replicas, 2);
    const sel = deployment.spec.selector.matchLabels;
    for (const [k, v] of Object.entries(sel)) assert.equal(deployment.spec.template.metadata.labels[k], v, `template carries selector label ${k}`);
    assert.equal(runSelector('ab12cd34'), 'app.kubernetes.io/name=kube-renumber-probe,kube-renumber.io/probe-run=ab12cd34');
    assert.deepEqual(configMap.data, program);
  });

  it('security: no token, non-root, read-only root filesystem, no privilege escalation, small requests', () => {
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.serviceAccountName, undefined);
    assert.equal(pod.hostNetwork, undefined);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.ok(pod.securityContext.runAsUser > 0);
    assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.runAsNonRoot, true);
    assert.equal(c.securityContext.privileged, false);
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
    assert.deepEqual(c.resources.requests, { cpu: '20m', memory: '64Mi' });
    assert.equal(c.resources.limits.cpu, undefined, 'no CPU limit: throttling would show up as latency');
    assert.ok(pod.terminationGracePeriodSeconds * 1000 > 10_000, 'grace period longer than the linger');
  });

  it('the program comes from the ConfigMap, mounted read-only; image default and flag', () => {
    assert.equal(c.image, 'node:24-alpine');
    assert.deepEqual(c.command, ['node', `${PROGRAM_DIR_IN_POD}/main.mjs`]);
    assert.deepEqual(c.volumeMounts, [{ name: 'program', mountPath: PROGRAM_DIR_IN_POD, readOnly: true }]);
    assert.deepEqual(pod.volumes, [{ name: 'program', configMap: { name: 'kube-renumber-probe-ab12cd34', defaultMode: 0o444 } }]);
    const other = buildProbeObjects({ namespace: 'x', runId: 'r', image: 'registry.example/tools/node:22.19', replicas: 1, settings: SETTINGS, program });
    assert.equal(other.deployment.spec.template.spec.containers[0].image, 'registry.example/tools/node:22.19');
  });

  it('args: every probe flag passes through, --dns-server auto by default, no --duration', () => {
    assert.deepEqual(c.args, podArgs(SETTINGS));
    assert.deepEqual(c.args, [
      '--service', 'shop/cart:8080', '--service', 'default/web:80', '--kinds', 'dns,env,kubernetes,long', '--dns-server', 'auto',
      '--cluster-domain', 'cluster.local', '--interval', '50ms', '--timeout', '1000ms', '--protocol', 'http', '--http-path', '/healthz',
      '--connections', '2', '--family', 'any', '--report-every', '5000ms', '--linger', '10000ms',
    ]);
    const given = podArgs({ ...SETTINGS, dnsServer: '10.96.0.10:53', kubernetesAddress: '10.96.0.1:443', family: 4 });
    assert.deepEqual(given.slice(given.indexOf('--dns-server'), given.indexOf('--dns-server') + 2), ['--dns-server', '10.96.0.10:53']);
    assert.ok(given.includes('--kubernetes-address') && given.includes('10.96.0.1:443'));
    assert.ok(!c.args.includes('--duration'));
    // and the in-pod parser reads them back as they were meant
    const back = parsePodArgs(given, {});
    assert.deepEqual(back.services, SETTINGS.services);
    assert.deepEqual(back.kinds, SETTINGS.kinds);
    assert.equal(back.dnsServer, '10.96.0.10:53');
    assert.equal(back.intervalMs, 50);
    assert.equal(back.protocol, 'http');
    assert.equal(back.httpPath, '/healthz');
    assert.equal(back.connections, 2);
    assert.equal(back.family, 4);
    assert.equal(back.kubernetesAddress, '10.96.0.1:443');
    assert.equal(back.reportEveryMs, 5000);
    assert.equal(back.lingerMs, 10_000);
    assert.equal(back.durationMs, undefined);
  });

  it('node ports: --nodeport per target and --node-address when given; each pod learns its node from status.hostIP', () => {
    assert.deepEqual(c.env, [{ name: 'KUBE_RENUMBER_NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }]);
    const np: PodProbeSettings = { ...SETTINGS, kinds: [...SETTINGS.kinds, 'nodeport'], nodePorts: [{ namespace: 'shop', name: 'cart', nodePort: 30080 }] };
    const args = podArgs(np);
    assert.deepEqual(args.slice(0, 8), ['--service', 'shop/cart:8080', '--service', 'default/web:80', '--nodeport', 'shop/cart:30080', '--kinds', 'dns,env,kubernetes,long,nodeport']);
    assert.ok(!args.includes('--node-address'), 'no flag: the pod uses its own node');
    const back = parsePodArgs(args, { KUBE_RENUMBER_NODE_IP: '192.0.2.7' });
    assert.deepEqual(back.nodePorts, np.nodePorts);
    assert.equal(back.nodeAddress, '192.0.2.7');
    const fixed = parsePodArgs(podArgs({ ...np, nodeAddress: '172.31.255.2' }), { KUBE_RENUMBER_NODE_IP: '192.0.2.7' });
    assert.equal(fixed.nodeAddress, '172.31.255.2', 'the flag wins over the downward API');
    // without node ports nothing changes: four kinds, no node address
    const plain = parsePodArgs(['--service', 'web', '--dns-server', '10.96.0.10'], { KUBE_RENUMBER_NODE_IP: '192.0.2.7' });
    assert.deepEqual(plain.kinds, ['dns', 'env', 'kubernetes', 'long']);
    assert.equal(plain.nodeAddress, undefined);
    assert.deepEqual(parsePodArgs(['--service', 'web', '--nodeport', 'web:30080', '--dns-server', '10.96.0.10'], { KUBE_RENUMBER_NODE_IP: '192.0.2.7' }).kinds,
      ['dns', 'env', 'kubernetes', 'long', 'nodeport']);
    for (const [argv, env, msg] of [
      [['--nodeport', 'web', '--kinds', 'nodeport'], {}, /--nodeport web: expected \[NAMESPACE\/\]NAME:NODEPORT/],
      [['--nodeport', 'web:30080', '--kinds', 'nodeport'], {}, /needs the node's address \(--node-address IP, or \$KUBE_RENUMBER_NODE_IP\)/],
      [['--nodeport', 'web:30080', '--kinds', 'nodeport'], { KUBE_RENUMBER_NODE_IP: 'x' }, /\$KUBE_RENUMBER_NODE_IP x: expected an IP address/],
      [['--nodeport', 'web:30080', '--kinds', 'nodeport', '--node-address', 'n1'], {}, /--node-address n1: expected an IP address/],
      [['--kinds', 'nodeport', '--node-address', '10.0.0.1'], {}, /no node ports to probe/],
      [['--service', 'web', '--nodeport', 'web:30080', '--kinds', 'env', '--node-address', '10.0.0.1'], {}, /--nodeport needs the nodeport client/],
    ] as const) {
      assert.throws(() => parsePodArgs([...argv], { ...env }), msg, argv.join(' '));
    }
  });

  it('the shipped files import only node built-ins and each other', () => {
    const shipped = new Set(PROGRAM_FILES.map((f) => f.replace(/\.js$/, '.ts')));
    for (const f of shipped) {
      const src = readFileSync(join(ROOT, 'src/probe', f), 'utf8');
      for (const m of src.matchAll(/^\s*import\s+(type\s+)?[^'"]*from\s+['"]([^'"]+)['"]/gm)) {
        if (m[1]) continue; // type-only: erased
        const spec = m[2]!;
        if (spec.startsWith('node:')) continue;
        assert.ok(spec.startsWith('./') && shipped.has(spec.slice(2)), `${f} imports ${spec}, which is not shipped`);
      }
      assert.doesNotMatch(src, /\bimport\(/, `${f}: no dynamic imports`);
    }
  });

  it('tail lines grow with the report size', () => {
    assert.equal(tailLinesFor(2), 13);
    assert.ok(tailLinesFor(200) > 30);
  });
});

describe('--dns-server auto: resolv.conf', () => {
  it('the first nameserver with an IP; comments and other lines ignored', () => {
    const text = '# generated by the kubelet\nsearch probe.svc.cluster.local svc.cluster.local cluster.local\n'
      + 'nameserver   10.96.0.10  # cluster DNS\nnameserver 10.96.0.11\noptions ndots:5\n';
    assert.deepEqual(parseResolvConf(text), { nameservers: ['10.96.0.10', '10.96.0.11'], search: ['probe.svc.cluster.local', 'svc.cluster.local', 'cluster.local'] });
    assert.equal(resolvConfNameserver('/x', () => text), '10.96.0.10');
    assert.equal(resolvConfNameserver('/x', () => ';x\nnameserver not-an-ip\nnameserver fd00::a\n'), 'fd00::a');
    assert.equal(resolvConfNameserver('/x', () => 'nameserver fe80::1%eth0\n'), 'fe80::1%eth0');
    assert.throws(() => resolvConfNameserver('/x', () => 'search a\n'), /no nameserver line with an IP address in \/x/);
    assert.throws(() => resolvConfNameserver('/nonexistent/resolv.conf'), /cannot read \/nonexistent\/resolv.conf/);
  });

  it('probe --dns-server auto uses it (the report shows the address)', async () => {
    const dir = mkdtempSync(join(TMP, 'resolv-'));
    writeFileSync(join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\n');
    const srv = net.createServer((s) => { s.on('error', () => {}); s.pipe(s); });
    await new Promise<void>((r) => srv.listen(0, LOOPBACK, () => r()));
    try {
      const port = (srv.address() as net.AddressInfo).port;
      const r = await run(['probe', '--service', `web:${port}`, '--kinds', 'env', '--dns-server', 'auto', '--duration', '100ms', '-o', 'json'],
        { WEB_SERVICE_HOST: LOOPBACK, KUBE_RENUMBER_RESOLV_CONF: join(dir, 'resolv.conf') });
      assert.equal(r.code, 0, r.err);
      assert.equal(JSON.parse(r.out).settings.dnsServer, '127.0.0.1');
      const none = await run(['probe', '--service', 'web', '--kinds', 'dns', '--dns-server', 'auto'], { KUBE_RENUMBER_RESOLV_CONF: join(dir, 'missing') });
      assert.equal(none.code, 2);
      assert.match(none.err, /^error: --dns-server auto: cannot read .*missing/);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });

  it('deploy-only flags need --deploy; a bad image is refused before any request', async () => {
    for (const argv of [['--image', 'node:22'], ['--replicas', '2'], ['--keep-deployment'], ['--report-every', '1s']]) {
      const r = await run(['probe', '--service', 'web', '--kinds', 'env', ...argv]);
      assert.equal(r.code, 2);
      assert.match(r.err, /needs --deploy/);
    }
    const bad = await run(['probe', '--deploy', '--service', 'web', '--image', 'node 24']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--image "node 24" is not an image reference/);
    const reps = await run(['probe', '--deploy', '--service', 'web', '--replicas', '0']);
    assert.equal(reps.code, 2);
  });

  it('--deploy against an unreachable cluster: exit 4, one error line', async () => {
    const dir = mkdtempSync(join(TMP, 'kc-'));
    const closed = await new Promise<number>((r) => { const s = net.createServer(); s.listen(0, LOOPBACK, () => { const p = (s.address() as net.AddressInfo).port; s.close(() => r(p)); }); });
    writeFileSync(join(dir, 'kc'), ['apiVersion: v1', 'kind: Config', 'current-context: c',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${closed}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: "secret-token-value"}}]', 'contexts: [{name: c, context: {cluster: c, user: u}}]', ''].join('\n'));
    const r = await run(['probe', '--deploy', '--kubeconfig', join(dir, 'kc'), '--service', 'web', '--duration', '1s']);
    assert.equal(r.code, 4, r.err);
    assert.equal(r.err.trim().split('\n').length, 1);
    assert.match(r.err, /^error: cannot reach the API server/);
    assert.doesNotMatch(r.err, /secret-token-value/);
    assert.equal(r.out, '');
  });
});

describe('report lines in a pod log', () => {
  const a = report({ startedAt: 1_000_000, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [10, 20] }] });
  const b = report({ startedAt: 1_000_000, durationMs: 2000, stoppedBy: 'running', results: [{ ok: [10, 20, 1500] }] });

  it('the last complete report wins; the start line, errors, other JSON and cut lines are skipped', () => {
    const text = `kube-renumber probe: 1 Service(s)\n${JSON.stringify(a)}\n{"kind":"Other"}\nerror: something\n${JSON.stringify(b)}\nnot json\n`;
    const r = parseReportLog(text);
    assert.equal(r.report?.durationMs, 2000);
    assert.deepEqual(r.errors, ['error: something']);
  });

  it('a partial last line (no newline yet) is ignored, even when it would parse', () => {
    assert.equal(parseReportLog(`${JSON.stringify(a)}\n${JSON.stringify(b)}`).report?.durationMs, 1000);
    assert.equal(parseReportLog(`${JSON.stringify(a)}\n${JSON.stringify(b).slice(0, 200)}`).report?.durationMs, 1000);
    // a line cut at the front (tailLines inside a long line split by the runtime) does not parse: the one before wins
    assert.equal(parseReportLog(`${JSON.stringify(a)}\n${JSON.stringify(b).slice(100)}\n`).report?.durationMs, 1000);
    assert.equal(parseReportLog('').report, undefined);
    assert.equal(parseReportLog('{"apiVersion":"kube-renumber.io/v1","kind":"ProbeReport"}\n').report, undefined, 'not a whole report');
  });
});

describe('merging reports', () => {
  const t0 = Date.parse('2026-01-01T00:00:00Z');

  it('one run: its report as it is, with the tool\'s stoppedBy and the source', () => {
    const r = report({ startedAt: t0, durationMs: 1000, stoppedBy: 'signal', results: [{ ok: [5, 25, 40], fail: 1 }] });
    const m = mergeReports([{ report: r, source: { pod: 'p', uid: 'u', final: true } }], 'duration');
    const { sources, ...rest } = m;
    assert.deepEqual(rest, { ...r, stoppedBy: 'duration' });
    assert.deepEqual(sources, [{ pod: 'p', uid: 'u', startedAt: r.startedAt, endedAt: r.endedAt, final: true, requests: 4 }]);
  });

  it('two pods (or a restarted one): counts add up, gaps in the common time base, the time between runs is no gap', () => {
    const a = report({ startedAt: t0, durationMs: 1000, stoppedBy: 'signal', results: [
      { ok: [100, 200, 700], fail: 2, latency: 2 }, { kind: 'long', ok: [100, 150] },
    ] });
    const b = report({ startedAt: t0 + 3000, durationMs: 2000, stoppedBy: 'running', results: [
      { ok: [300, 400, 500, 600, 700, 800], latency: 8 }, { kind: 'long', ok: [] , fail: 1 },
    ] });
    const m = mergeReports([{ report: b, source: { pod: 'b', uid: 'ub', final: false } }, { report: a, source: { pod: 'a', uid: 'ua', final: true } }], 'signal');
    assert.equal(m.startedAt, a.startedAt);
    assert.equal(m.endedAt, b.endedAt);
    assert.equal(m.durationMs, 5000);
    assert.equal(m.stoppedBy, 'signal');
    const dns = m.results.find((r) => r.kind === 'dns')!;
    assert.equal(dns.requests, 11);
    assert.equal(dns.successes, 9);
    assert.deepEqual(dns.failuresByReason, { 'connect-refused': 2 });
    assert.deepEqual(dns.addresses, { '10.96.0.7': 11 });
    assert.deepEqual(dns.longestGap, { ms: 500, fromMs: 200, toMs: 700 }, 'run a\'s 500 ms, not the 2.6 s between the runs');
    assert.deepEqual(dns.startGap, { ms: 100, fromMs: 0, toMs: 100 });
    assert.deepEqual(dns.endGap, { ms: 1200, fromMs: 3800, toMs: 5000 });
    assert.deepEqual(dns.latencyMs, { p50: 8, p99: 8, max: 8 }, 'p50: weighted by successes (6 vs 3); p99/max the largest');
    const long = m.results.find((r) => r.kind === 'long')!;
    assert.equal(long.requests, 3);
    assert.equal(long.breaks, 0);
    assert.equal(long.reconnects, 0);
    assert.deepEqual(m.totals, { requests: 14, failures: 3, dnsFailures: 0, breaks: 0 });
    assert.deepEqual(m.sources!.map((s) => [s.pod, s.final, s.requests]), [['a', true, 7], ['b', false, 7]]);
    // the same key order as a single report's results
    assert.deepEqual(Object.keys(dns), Object.keys(a.results[0]!));
  });

  it('the store keeps the latest report per pod uid and run; a final one is not replaced by an older periodic one', () => {
    const s = new ReportStore();
    const r1 = report({ startedAt: t0, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1] }] });
    const r2 = report({ startedAt: t0, durationMs: 2000, stoppedBy: 'running', results: [{ ok: [1, 2] }] });
    const fin = report({ startedAt: t0, durationMs: 2100, stoppedBy: 'signal', results: [{ ok: [1, 2, 3] }] });
    s.add('p', 'u1', r1);
    s.add('p', 'u1', r2);
    assert.equal(s.size, 1);
    assert.equal(s.hasFinal('u1'), false);
    s.add('p', 'u1', fin);
    s.add('p', 'u1', r2);
    assert.equal(s.hasFinal('u1'), true);
    // the same pod's container restarted: a new run, kept next to the first
    s.add('p', 'u1', report({ startedAt: t0 + 5000, durationMs: 500, stoppedBy: 'running', results: [{ ok: [1] }] }));
    s.add('q', 'u2', r1);
    assert.equal(s.size, 3);
    assert.equal(s.hasFinal('u1'), false, 'the latest run of u1 has no final report yet');
    assert.equal(s.merged('duration').totals.requests, 3 + 1 + 1);
  });
});

/** A UDP DNS responder answering every A query with 127.0.0.1. */
async function dnsServer(): Promise<{ address: string; close(): void }> {
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    let at = 12;
    while (at < msg.length && msg[at] !== 0) at += msg[at]! + 1;
    const qEnd = at + 5;
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(1, 6);
    const answer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 127, 0, 0, 1]);
    sock.send(Buffer.concat([header, msg.subarray(12, qEnd), answer]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, LOOPBACK, () => r()));
  return { address: `${LOOPBACK}:${sock.address().port}`, close: () => sock.close() };
}

/** An entry point like the ConfigMap's main.mjs, for the sources. */
function podEntry(): string {
  const dir = mkdtempSync(join(TMP, 'pod-'));
  writeFileSync(join(dir, 'main.mjs'), `import { main } from ${JSON.stringify(join(ROOT, 'src/probe/pod.ts'))};\nawait main();\n`);
  return join(dir, 'main.mjs');
}

describe('the in-pod program (src/probe/pod.ts, run by node)', () => {
  it('periodic reports, the final one on SIGTERM, then it lingers until a second SIGTERM', async () => {
    const srv = net.createServer((s) => { s.on('error', () => {}); s.pipe(s); });
    await new Promise<void>((r) => srv.listen(0, LOOPBACK, () => r()));
    const dns = await dnsServer();
    const port = (srv.address() as net.AddressInfo).port;
    const child = spawn(process.execPath, [podEntry(), '--service', `web:${port}`, '--kinds', 'dns,env,long',
      '--dns-server', dns.address, '--interval', '10ms', '--report-every', '150ms', '--linger', '30s'],
    { env: { PATH: process.env.PATH, WEB_SERVICE_HOST: LOOPBACK }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const exited = new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    try {
      const t = Date.now();
      while ((out.match(/\n/g) ?? []).length < 3 && Date.now() - t < 10_000) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGTERM');
      const t2 = Date.now();
      while (!/"stoppedBy":"signal"/.test(out) && Date.now() - t2 < 5000) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(child.exitCode, null, 'still running (lingering) after the final report');
      child.kill('SIGTERM');
      assert.equal(await exited, 0, err);
      const lines = out.trim().split('\n').map((l) => JSON.parse(l) as ProbeReport);
      assert.ok(lines.length >= 4, out);
      assert.deepEqual(lines.slice(0, -1).map((l) => l.stoppedBy), lines.slice(0, -1).map(() => 'running'));
      const fin = lines[lines.length - 1]!;
      assert.equal(fin.stoppedBy, 'signal');
      assert.ok(fin.totals.requests >= lines[lines.length - 2]!.totals.requests, 'cumulative');
      assert.ok(fin.totals.requests > 10);
      assert.equal(fin.totals.failures, 0);
      assert.match(err, /^kube-renumber probe: 1 Service\(s\), clients dns,env,long/);
    } finally {
      child.kill('SIGKILL');
      dns.close();
      await new Promise((r) => srv.close(r));
    }
  });

  it('a bad flag: exit 2 with one error line', async () => {
    const child = spawn(process.execPath, [podEntry(), '--service', 'web', '--kinds', 'ping'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    assert.equal(code, 2);
    assert.equal(err, 'error: --kinds: "ping" is not a client kind\n');
  });
});

// ---- the run against a fake API server ------------------------------------------------------------------------

interface FakePod { name: string; uid: string; log: string; running: boolean; terminating?: boolean }

/** Just enough of the API: ConfigMap/Deployment create and delete, pod lists, pod logs. Records every call. */
class FakeKube implements KubeClient {
  readonly server = 'https://127.0.0.1:1';
  readonly context = 'fake';
  requestCount = 0;
  calls: string[] = [];
  objects = new Map<string, KubeObject>();
  pods: FakePod[] = [];
  /** throw this for a call matching `METHOD path-fragment` */
  fail: Array<{ match: RegExp; error: () => Error; times?: number }> = [];
  /** called when the Deployment is deleted (the pods get SIGTERM) */
  onDeploymentDeleted: () => void = () => {};

  async watch(): Promise<void> { throw new Error('this fake client has no watch'); }

  async request<T>(method: Method, path: string, opts: RequestOptions = {}): Promise<T> {
    this.requestCount++;
    const call = `${method} ${path}`;
    this.calls.push(call);
    const f = this.fail.find((x) => x.match.test(call) && (x.times === undefined || x.times > 0));
    if (f) {
      if (f.times !== undefined) f.times--;
      throw f.error();
    }
    if (method === 'POST') {
      const o = opts.body as KubeObject;
      this.objects.set(`${path}/${o.metadata!.name}`, o);
      return o as T;
    }
    if (method === 'DELETE') {
      if (!this.objects.delete(path)) throw new KubeApiError(method, path, 404, 'NotFound', 'not found');
      if (path.includes('/deployments/')) this.onDeploymentDeleted();
      return {} as T;
    }
    const m = path.match(/\/pods\/([^/]+)\/log$/);
    if (method === 'GET' && m) {
      assert.equal(opts.responseType, 'text');
      assert.equal(opts.query?.container, 'probe');
      const p = this.pods.find((x) => x.name === m[1]);
      if (!p) throw new KubeApiError(method, path, 404, 'NotFound', 'pod not found');
      return p.log as T;
    }
    throw new Error(`unexpected ${call}`);
  }

  async *list(path: string, opts: { labelSelector?: string } = {}): AsyncGenerator<KubeObject> {
    this.requestCount++;
    this.calls.push(`LIST ${path} ${opts.labelSelector}`);
    const f = this.fail.find((x) => x.match.test(`LIST ${path}`) && (x.times === undefined || x.times > 0));
    if (f) {
      if (f.times !== undefined) f.times--;
      throw f.error();
    }
    for (const p of this.pods) {
      yield {
        metadata: { name: p.name, uid: p.uid, ...(p.terminating ? { deletionTimestamp: new Date().toISOString() } : {}) },
        spec: { nodeName: 'n1' },
        status: { phase: 'Running', containerStatuses: [{ name: 'probe', restartCount: 0, state: p.running ? { running: {} } : { waiting: { reason: 'ContainerCreating' } } }] },
      };
    }
  }
}

const line = (r: ProbeReport) => `${JSON.stringify(r)}\n`;

function baseOpts(kube: FakeKube, extra: Partial<Parameters<typeof runDeployedProbe>[0]> = {}) {
  const stop = new AbortController();
  const hardStop = new AbortController();
  const warnings: string[] = [];
  return {
    stop, hardStop, warnings,
    opts: {
      client: kube, namespace: 'probe', image: 'node:24-alpine', replicas: 1, runId: 'run1', program: { 'main.mjs': '' },
      settings: { ...SETTINGS, services: [SETTINGS.services[0]!], kinds: ['dns'] as PodProbeSettings['kinds'] },
      stop: stop.signal, hardStop: hardStop.signal, pollMs: 20, finalWaitMs: 2000, cleanupTimeoutMs: 300,
      warn: (m: string) => { warnings.push(m); },
      ...extra,
    },
  };
}

describe('probe --deploy run (fake API server)', () => {
  const T = Date.parse('2026-01-01T00:00:00Z');

  it('duration: reports from the log, the Deployment deleted, the final report read, then the ConfigMap deleted', async () => {
    const kube = new FakeKube();
    const pod: FakePod = { name: 'p1', uid: 'u1', log: 'kube-renumber probe: start\n', running: true };
    kube.pods = [pod];
    const iv = setInterval(() => { pod.log += line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1, 2] }] })); }, 30);
    kube.onDeploymentDeleted = () => {
      clearInterval(iv);
      pod.terminating = true;
      setTimeout(() => { pod.log += line(report({ startedAt: T, durationMs: 1100, stoppedBy: 'signal', results: [{ ok: [1, 2, 3] }] })); }, 100);
    };
    const { opts } = baseOpts(kube, { durationMs: 200 });
    const r = await runDeployedProbe(opts);
    assert.equal(r.stoppedBy, 'duration');
    assert.equal(r.totals.requests, 3, 'the final report, not the last periodic one');
    assert.deepEqual(r.sources!.map((s) => [s.pod, s.uid, s.final]), [['p1', 'u1', true]]);
    const writes = kube.calls.filter((c) => !c.startsWith('GET') && !c.startsWith('LIST'));
    assert.deepEqual(writes, [
      'POST /api/v1/namespaces/probe/configmaps', 'POST /apis/apps/v1/namespaces/probe/deployments',
      'DELETE /apis/apps/v1/namespaces/probe/deployments/kube-renumber-probe-run1', 'DELETE /api/v1/namespaces/probe/configmaps/kube-renumber-probe-run1',
    ]);
    assert.equal(kube.objects.size, 0);
    assert.ok(kube.calls.some((c) => c === 'LIST /api/v1/namespaces/probe/pods app.kubernetes.io/name=kube-renumber-probe,kube-renumber.io/probe-run=run1'));
  });

  it('a pod replaced mid-run: both pods\' reports are merged (nothing reported is lost)', async () => {
    const kube = new FakeKube();
    const a: FakePod = { name: 'pa', uid: 'ua', log: line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1, 2, 3, 4] }] })), running: true };
    kube.pods = [a];
    const b: FakePod = { name: 'pb', uid: 'ub', log: '', running: true };
    setTimeout(() => {
      kube.pods = [b];
      b.log = line(report({ startedAt: T + 2000, durationMs: 500, stoppedBy: 'running', results: [{ ok: [1] }] }));
    }, 100);
    kube.onDeploymentDeleted = () => { b.log += line(report({ startedAt: T + 2000, durationMs: 600, stoppedBy: 'signal', results: [{ ok: [1, 2] }] })); };
    const { opts, warnings } = baseOpts(kube, { durationMs: 300 });
    const r = await runDeployedProbe(opts);
    assert.equal(r.totals.requests, 4 + 2);
    assert.deepEqual(r.sources!.map((s) => [s.pod, s.final, s.requests]), [['pa', false, 4], ['pb', true, 2]]);
    assert.deepEqual(warnings, []);
  });

  it('signal, then a second one: no waiting for final reports, still cleaned up', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1] }] })), running: true }];
    const { opts, stop, hardStop } = baseOpts(kube, { finalWaitMs: 60_000 });
    kube.onDeploymentDeleted = () => { setTimeout(() => hardStop.abort(), 50); };
    setTimeout(() => stop.abort(), 100);
    const t = Date.now();
    const r = await runDeployedProbe(opts);
    assert.ok(Date.now() - t < 5000, 'did not wait for the final report');
    assert.equal(r.stoppedBy, 'signal');
    assert.deepEqual(r.sources!.map((s) => s.final), [false]);
    assert.equal(kube.objects.size, 0, 'Deployment and ConfigMap deleted');
  });

  it('forbidden to create the Deployment: exit 5 naming rbac-probe.yaml, the ConfigMap deleted again', async () => {
    const kube = new FakeKube();
    kube.fail.push({ match: /^POST .*deployments/, error: () => new KubeApiError('POST', '/apis/apps/v1/namespaces/probe/deployments', 403, 'Forbidden', 'forbidden') });
    const { opts } = baseOpts(kube, { durationMs: 100 });
    await assert.rejects(runDeployedProbe(opts), (e: any) => e.kind === 'forbidden' && /POST \/apis\/apps\/v1\/namespaces\/probe\/deployments \(403 Forbidden\); grant the permissions in deploy\/rbac-probe\.yaml/.test(e.message));
    assert.ok(kube.calls.includes('DELETE /api/v1/namespaces/probe/configmaps/kube-renumber-probe-run1'));
    assert.equal(kube.objects.size, 0);
  });

  it('forbidden to read logs mid-run: exit 5, both objects deleted', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: '', running: true }];
    kube.fail.push({ match: /\/log$/, error: () => new KubeApiError('GET', '/api/v1/namespaces/probe/pods/p/log', 403, 'Forbidden', 'x') });
    const { opts } = baseOpts(kube, { durationMs: 10_000 });
    await assert.rejects(runDeployedProbe(opts), (e: any) => e.kind === 'forbidden' && /pods\/p\/log/.test(e.message));
    assert.equal(kube.objects.size, 0);
  });

  it('the API server away for a while (migration restarts it): polls and deletes are retried', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1] }] })), running: true }];
    kube.fail.push({ match: /^LIST/, error: () => new UnreachableError('cannot reach the API server: ECONNREFUSED'), times: 3 });
    kube.fail.push({ match: /^DELETE/, error: () => new UnreachableError('cannot reach the API server: ECONNREFUSED'), times: 1 });
    const { opts } = baseOpts(kube, { durationMs: 150, finalWaitMs: 100, cleanupTimeoutMs: 5000 });
    const r = await runDeployedProbe(opts);
    assert.equal(r.totals.requests, 1);
    assert.equal(kube.objects.size, 0);
  });

  it('cleanup impossible: the report is kept, the error says how to delete by label (exit 4)', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1] }] })), running: true }];
    kube.fail.push({ match: /^DELETE/, error: () => new UnreachableError('cannot reach the API server: ECONNREFUSED') });
    const { opts } = baseOpts(kube, { durationMs: 100, cleanupTimeoutMs: 200 });
    await assert.rejects(runDeployedProbe(opts), (e: any) => e instanceof ProbeCleanupError && e.kind === 'unreachable' && e.report?.totals.requests === 1
      && /could not delete Deployment probe\/kube-renumber-probe-run1 and ConfigMap probe\/kube-renumber-probe-run1 .*kubectl -n probe delete deployment,configmap -l kube-renumber.io\/probe-run=run1/.test(e.message));
  });

  it('no pod starts: exit 1 with the pods\' reason, cleaned up', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: '', running: false }];
    const { opts } = baseOpts(kube, { durationMs: 100, startTimeoutMs: 150 });
    await assert.rejects(runDeployedProbe(opts), (e: any) => e.kind === 'findings' && /no probe pod started within 0 s \(p: ContainerCreating\)/.test(e.message));
    assert.equal(kube.objects.size, 0);
  });

  it('--keep-deployment: nothing deleted, the warning says how', async () => {
    const kube = new FakeKube();
    kube.pods = [{ name: 'p', uid: 'u', log: line(report({ startedAt: T, durationMs: 1000, stoppedBy: 'running', results: [{ ok: [1] }] })), running: true }];
    const { opts, warnings } = baseOpts(kube, { durationMs: 100, keep: true });
    const r = await runDeployedProbe(opts);
    assert.equal(r.totals.requests, 1);
    assert.equal(kube.objects.size, 2);
    assert.match(warnings.join('\n'), /--keep.*kubectl -n probe delete deployment,configmap -l kube-renumber.io\/probe-run=run1/);
  });
});
