// The way to the real apiserver: `inspect` through `kubectl proxy` (plain http://, no credentials), through a
// TCP forwarder on a port fetch refuses (the WHATWG "bad ports": 6665-6669, 6000, 10080, ...), and a bad token
// ends in exit 5 without the token printed anywhere.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SliceWatch } from '../../src/engine/slice-watch.ts';
import { connect } from '../../src/kube/client.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { kubeconfigFile } from '../unit/kube-servers.ts';

const dir = mkdtempSync(join(tmpdir(), 'kr-transport-it-'));
/** A kubeconfig file with one context; returns its path. */
const kubeconfig = (cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string => kubeconfigFile(dir, cluster, user);

/** What inspect reports about the cluster itself, the same whichever way it was reached. */
function facts(out: string) {
  const r = JSON.parse(out);
  return { serviceCIDRs: r.serviceCIDRs.map((s: any) => s.cidr), nodes: r.capacity.nodes.total, services: r.capacity.services.total, version: r.kubernetesVersion };
}

const children: ChildProcess[] = [];
const servers: net.Server[] = [];
after(() => {
  for (const c of children) c.kill('SIGTERM');
  for (const s of servers) s.close();
});

describe('reaching the real apiserver', () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/20', nodeMask: 24, nodes: 2, calicoCRDs: false });
  let direct: ReturnType<typeof facts>;

  test('direct, as the baseline', async () => {
    const r = await run(['inspect', '--kubeconfig', tb.kubeconfigPath, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    direct = facts(r.out);
    assert.deepEqual(direct.serviceCIDRs, ['10.96.0.0/16']);
    assert.equal(direct.nodes, 2);
  });

  test('through kubectl proxy: plain http://, no credentials in the kubeconfig', async () => {
    const proxy = spawn(join(tb.binDir, 'kubectl'), [`--kubeconfig=${tb.kubeconfigPath}`, 'proxy', '--address=127.0.0.1', '--port=0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(proxy);
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`kubectl proxy did not start: ${out}`)), 30_000);
      proxy.stdout!.on('data', (d) => {
        out += d;
        const m = out.match(/Starting to serve on 127\.0\.0\.1:(\d+)/);
        if (m) { clearTimeout(timer); resolve(Number(m[1])); }
      });
      proxy.on('exit', (code) => { clearTimeout(timer); reject(new Error(`kubectl proxy exited ${code}: ${out}`)); });
    });
    const kc = kubeconfig({ server: `http://127.0.0.1:${port}` });
    const r = await run(['inspect', '--kubeconfig', kc, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(facts(r.out), direct);
    assert.equal(JSON.parse(r.out).source.server, `http://127.0.0.1:${port}`);
    proxy.kill('SIGTERM');
  });

  test('through a forwarder on a port fetch refuses', async (t) => {
    const api = new URL(tb.server);
    let connections = 0;
    const forwarder = net.createServer((client) => {
      connections++;
      const up = net.connect(Number(api.port), api.hostname, () => { client.pipe(up); up.pipe(client); });
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    let port: number | undefined;
    for (const p of [6666, 6667, 6668, 6669, 6665, 6000, 10080]) {
      const ok = await new Promise<boolean>((resolve) => {
        forwarder.once('error', () => resolve(false));
        forwarder.listen(p, '127.0.0.1', () => resolve(true));
      });
      if (ok) { port = p; break; }
    }
    if (port === undefined) return t.skip('every fetch-blocked port tried is taken');
    servers.push(forwarder);
    t.diagnostic(`forwarder on 127.0.0.1:${port}`);
    await assert.rejects(fetch(`https://127.0.0.1:${port}/version`), (e: any) => /bad port/.test(String(e?.cause?.message)), 'fetch refuses this port');
    const kc = kubeconfig({ server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true }, { token: tb.token });
    const r = await run(['inspect', '--kubeconfig', kc, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(facts(r.out), direct);
    assert.ok(connections >= 1, 'the requests went through the forwarder');
    // kubectl agrees
    const k = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(join(tb.binDir, 'kubectl'), [`--kubeconfig=${kc}`, 'get', '--raw', '/version'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      p.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(k.code, 0);
    assert.equal(JSON.parse(k.out).gitVersion, direct.version);
  });

  test('a bad token: exit 5, the token never printed (with -v too)', async () => {
    const bad = 'kr-integration-bad-token-0d15ea5e';
    const kc = kubeconfig({ server: tb.server, 'insecure-skip-tls-verify': true }, { token: bad });
    for (const args of [['inspect', '--kubeconfig', kc], ['inspect', '--kubeconfig', kc, '-v']]) {
      const r = await run(args);
      assert.equal(r.code, 5, r.err);
      assert.match(r.err, /^error: the API server https:\/\/127\.0\.0\.1:\d+ rejected our credentials \(401 Unauthorized\)/m);
      assert.ok(!r.err.includes(bad) && !r.out.includes(bad), r.err);
    }
  });

  test('a watch streams events from a LIST\'s resourceVersion; SliceWatch follows EndpointSlices with one watch', async () => {
    const client = connect({ kubeconfig: tb.kubeconfigPath });
    const ns = 'default';
    const list = await client.request<{ metadata: { resourceVersion: string } }>('GET', `/api/v1/namespaces/${ns}/configmaps`, { query: { labelSelector: 'kr-watch-test=1' } });
    const seen: string[] = [];
    const ac = new AbortController();
    const before = client.requestCount;
    const watching = client.watch(`/api/v1/namespaces/${ns}/configmaps`, { labelSelector: 'kr-watch-test=1', resourceVersion: list.metadata.resourceVersion, signal: ac.signal }, (ev) => {
      seen.push(`${ev.type} ${ev.object.metadata?.name}`);
      if (seen.length === 3) ac.abort();
    });
    // created after the LIST, before or after the watch opened: either way the watch shows them
    for (const name of ['kr-watch-a', 'kr-watch-b']) {
      await client.request('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name, labels: { 'kr-watch-test': '1' } }, data: { k: 'v' } } });
    }
    await client.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/kr-watch-a`);
    await watching;
    assert.deepEqual(seen, ['ADDED kr-watch-a', 'ADDED kr-watch-b', 'DELETED kr-watch-a']);
    assert.equal(client.requestCount - before, 4, 'one watch request and the three writes');

    // SliceWatch: a Service's slice made after the LIST wakes next() long before its timeout
    const sw = await SliceWatch.open(client, [{ namespace: ns, name: 'kr-watch-svc' }]);
    assert.equal((await sw.current()).size, 0);
    const t0 = Date.now();
    const woke = sw.next(20_000);
    await client.request('POST', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, { body: {
      metadata: { name: 'kr-watch-svc-1', labels: { 'kubernetes.io/service-name': 'kr-watch-svc' } }, addressType: 'IPv4',
      endpoints: [{ addresses: ['10.244.0.9'], conditions: { ready: true } }], ports: [{ port: 80, protocol: 'TCP' }],
    } });
    for (let i = 0; i < 5 && !(await sw.current()).has(`${ns}/kr-watch-svc`); i++) await sw.next(20_000);
    await woke;
    const got = await sw.current();
    sw.close();
    assert.ok(Date.now() - t0 < 15_000, 'woken by the event, not by the timeout');
    assert.deepEqual(got.get(`${ns}/kr-watch-svc`)?.map((s) => s.metadata?.name), ['kr-watch-svc-1']);
    assert.equal(sw.mode, 'watch');
    assert.equal(sw.watches, 1);
    await client.request('DELETE', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/kr-watch-svc-1`);
    await client.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/kr-watch-b`);
  });
});
