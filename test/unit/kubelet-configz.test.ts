// Gate kubelet-cluster-dns with --read-kubelet-config against a fake API: which nodes are asked, what counts as
// "on the new DNS", what the gate says when it does not hold, and that only GETs of configz are sent. The same
// gate against a real kubelet: test/kubelet/kubelet-configz.test.ts.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { KubeApiError, type KubeClient, type Method } from '../../src/kube/client.ts';
import { clusterDNSOf, configzPath, kubeletsClusterDNS, namesNewDNS } from '../../src/kube/kubelet-configz.ts';
import { kubeletsServeNewDNS } from '../../src/engine/kubelet-dns-gate.ts';
import type { StepContext } from '../../src/engine/runner.ts';

install();

const node = (name: string, ready: boolean): KubeObject => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name }, status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'Unknown' }] },
});

/** Nodes and what each kubelet's configz answers (a list of clusterDNS, or an error to throw). */
function fake(nodes: KubeObject[], answers: Record<string, string[] | Error>) {
  const seen: Array<{ method: Method; path: string }> = [];
  const client: KubeClient = {
    server: 'https://127.0.0.1:1', context: 't', get requestCount() { return seen.length; },
    async watch(): Promise<void> { throw new Error('no watch'); },
    async request<T>(method: Method, path: string): Promise<T> {
      seen.push({ method, path });
      const m = /^\/api\/v1\/nodes\/([^/]+)\/proxy\/configz$/.exec(path);
      const a = m ? answers[decodeURIComponent(m[1]!)] : undefined;
      if (a === undefined) throw new KubeApiError(method, path, 404, 'NotFound', 'not found');
      if (a instanceof Error) throw a;
      return { kubeletconfig: { clusterDNS: a, clusterDomain: 'cluster.local' } } as T;
    },
    async *list(path: string) {
      seen.push({ method: 'GET', path });
      if (path === '/api/v1/nodes') yield* nodes;
    },
  };
  const lines: string[] = [];
  const ctx = { client, log: (m: string) => lines.push(m), warn: (m: string) => lines.push(`warn: ${m}`) } as unknown as StepContext;
  return { client, ctx, seen, lines };
}

const forbidden = (n: string) => new KubeApiError('GET', configzPath(n), 403, 'Forbidden',
  `nodes "${n}" is forbidden: User "system:serviceaccount:kube-system:kube-renumber-migrate" cannot get resource "nodes/proxy" in API group "" at the cluster scope`);

describe('kubelet configz: clusterDNS', () => {
  test('namesNewDNS: every new IP, no old one, whatever the IPv6 spelling', () => {
    assert.equal(namesNewDNS(['10.100.0.10'], ['10.96.0.10'], ['10.100.0.10']), true);
    assert.equal(namesNewDNS(['10.96.0.10'], ['10.96.0.10'], ['10.100.0.10']), false);
    assert.equal(namesNewDNS(['10.96.0.10', '10.100.0.10'], ['10.96.0.10'], ['10.100.0.10']), false, 'the old IP still listed');
    assert.equal(namesNewDNS([], ['10.96.0.10'], ['10.100.0.10']), false);
    assert.equal(namesNewDNS(['10.100.0.10', 'fd00:100::a'], ['10.96.0.10', 'fd00:96::a'], ['10.100.0.10', 'fd00:100:0:0::A']), true);
    assert.equal(namesNewDNS(['10.100.0.10'], ['10.96.0.10', 'fd00:96::a'], ['10.100.0.10', 'fd00:100::a']), false, 'dual-stack: both families');
  });

  test('clusterDNSOf refuses what is not a configz answer', () => {
    assert.deepEqual(clusterDNSOf({ kubeletconfig: { clusterDNS: ['10.0.0.10'] } }), ['10.0.0.10']);
    assert.deepEqual(clusterDNSOf({ kubeletconfig: {} }), []);
    assert.throws(() => clusterDNSOf({}), /kubeletconfig/);
    assert.throws(() => clusterDNSOf({ kubeletconfig: { clusterDNS: '10.0.0.10' } }), /list/);
  });

  test('only Ready nodes are asked, only GET .../proxy/configz is sent', async () => {
    const f = fake([node('a', true), node('b', true), node('c', false)], { a: ['10.100.0.10'], b: ['10.100.0.10'] });
    const r = await kubeletsClusterDNS(f.client, ['10.96.0.10'], ['10.100.0.10']);
    assert.equal(r.holds, true);
    assert.deepEqual(r.notReady, ['c']);
    assert.deepEqual(f.seen.map((s) => `${s.method} ${s.path}`).sort(),
      ['GET /api/v1/nodes', 'GET /api/v1/nodes/a/proxy/configz', 'GET /api/v1/nodes/b/proxy/configz']);
  });

  test('the gate waits while one kubelet runs with the old clusterDNS and names it', async () => {
    const f = fake([node('a', true), node('b', true)], { a: ['10.100.0.10'], b: ['10.96.0.10'] });
    assert.equal(await kubeletsServeNewDNS(f.ctx, ['10.96.0.10'], ['10.100.0.10']), false);
    assert.match(f.lines.join('\n'), /1 of 2 Ready node\(s\) still run without 10\.100\.0\.10: b has \[10\.96\.0\.10\]/);
  });

  test('the gate passes once every Ready kubelet names the new IP, and warns of the nodes it could not ask', async () => {
    const f = fake([node('a', true), node('b', true), node('c', false)], { a: ['10.100.0.10'], b: ['10.100.0.10'] });
    assert.equal(await kubeletsServeNewDNS(f.ctx, ['10.96.0.10'], ['10.100.0.10']), true);
    assert.match(f.lines.join('\n'), /warn: .*not Ready: c/);
  });

  test('forbidden (no get nodes/proxy): not passed, and the file that grants it and --ack-gate are named', async () => {
    const f = fake([node('a', true)], { a: forbidden('a') });
    assert.equal(await kubeletsServeNewDNS(f.ctx, ['10.96.0.10'], ['10.100.0.10']), false);
    assert.match(f.lines.join('\n'), /forbidden .*deploy\/rbac-kubelet-configz\.yaml.*--ack-gate kubelet-cluster-dns/);
  });

  test('a kubelet that does not answer holds the gate; no Ready node at all holds it too', async () => {
    const f = fake([node('a', true), node('b', true)], { a: ['10.100.0.10'], b: new KubeApiError('GET', configzPath('b'), 503, 'ServiceUnavailable', 'error trying to reach service: dial tcp 10.0.0.2:10250: connect: connection refused') });
    assert.equal(await kubeletsServeNewDNS(f.ctx, ['10.96.0.10'], ['10.100.0.10']), false);
    assert.match(f.lines.join('\n'), /1 Ready node\(s\) did not answer: b: error trying to reach/);
    const g = fake([node('a', false)], {});
    assert.equal(await kubeletsServeNewDNS(g.ctx, ['10.96.0.10'], ['10.100.0.10']), false);
    assert.match(g.lines.join('\n'), /no node is Ready/);
  });
});
