import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { run } from './run-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));


describe('calc', () => {
  it('reproduces seed 004 for the service range', async () => {
    const r = await run(['calc', '10.233.0.0/18', '-o', 'json']);
    assert.equal(r.code, 0);
    const j = JSON.parse(r.out);
    assert.equal(j.network, '10.233.0.0');
    assert.equal(j.firstUsable, '10.233.0.1');
    assert.equal(j.lastUsable, '10.233.63.254');
    assert.equal(j.usable, 16382);
    assert.equal(j.broadcast, '10.233.63.255');
    assert.equal(j.nodeBlocks, undefined);
  });

  it('reproduces seed 004 for the pod range: 64 nodes of /24', async () => {
    const r = await run(['calc', '10.233.64.0/18', '--node-mask', '24', '-o', 'yaml']);
    assert.equal(r.code, 0);
    assert.match(r.out, /nodeBlocks:\n\s+nodeMask: 24\n\s+count: 64\n\s+first: 10\.233\.64\.0\/24\n\s+last: 10\.233\.127\.0\/24/);
  });

  it('table output names every field', async () => {
    const r = await run(['calc', '10.233.64.0/18', '--node-mask', '24']);
    assert.equal(r.code, 0);
    assert.match(r.out, /^FIELD\s+VALUE$/m);
    assert.match(r.out, /^usable\s+16382$/m);
    assert.match(r.out, /^nodes \(\/24 each\)\s+64$/m);
    assert.match(r.out, /^first usable\s+10\.233\.64\.1$/m);
  });

  it('handles IPv6 with counts beyond 2^53 as strings', async () => {
    const r = await run(['calc', 'fd00::/48', '--node-mask', '64', '-o', 'json']);
    assert.equal(r.code, 0);
    const j = JSON.parse(r.out);
    assert.equal(j.usable, ((1n << 80n) - 1n).toString());
    assert.equal(j.broadcast, undefined);
    assert.equal(j.nodeBlocks.count, 65536);
    assert.equal(j.firstUsable, 'fd00::1');
  });
});

/** The bad-input corpus: each case exits with its documented code, prints one `error:` line, no stack. */
/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
const deadPort = await closedPort();
const tmp = mkdtempSync(join(tmpdir(), 'kr-cli-'));
writeFileSync(join(tmp, 'not-k8s.yaml'), 'hello: world\n');
writeFileSync(join(tmp, 'broken.yaml'), 'a: [1, 2\n');
writeFileSync(join(tmp, 'bad-config.yaml'), 'avoid:\n  - 10.0.0.1/8\n');
writeFileSync(join(tmp, 'kubeconfig-unreachable'), [
  'apiVersion: v1', 'kind: Config', 'current-context: c',
  `clusters: [{name: k, cluster: {server: "https://127.0.0.1:${deadPort}"}}]`,
  'users: [{name: u, user: {token: secret-token-value}}]',
  'contexts: [{name: c, context: {cluster: k, user: u}}]', '',
].join('\n'));

const CORPUS: Array<{ argv: string[]; code: number; msg: RegExp; env?: NodeJS.ProcessEnv }> = [
  { argv: ['calc', '10.0.0.1/8'], code: 2, msg: /host bits are set \(did you mean 10\.0\.0\.0\/8\?\)/ },
  { argv: ['calc', '10.0.0.0/33'], code: 2, msg: /10\.0\.0\.0\/33/ },
  { argv: ['calc', '300.1.1.1/32'], code: 2, msg: /300\.1\.1\.1/ },
  { argv: ['calc', '10.0.0.0'], code: 2, msg: /10\.0\.0\.0/ },
  { argv: ['calc', 'fd00::/129'], code: 2, msg: /fd00::\/129/ },
  { argv: ['calc', 'banana'], code: 2, msg: /banana/ },
  { argv: ['calc'], code: 2, msg: /exactly one CIDR/ },
  { argv: ['calc', '10.0.0.0/16', '--node-mask', '8'], code: 2, msg: /node-mask 8/ },
  { argv: ['calc', '10.0.0.0/16', '--node-mask', 'x'], code: 2, msg: /--node-mask x/ },
  { argv: ['calc', '10.0.0.0/16', '-o', 'xml'], code: 2, msg: /-o xml/ },
  { argv: ['calc', '10.0.0.0/16', '--bogus'], code: 2, msg: /bogus/ },
  { argv: ['frobnicate'], code: 2, msg: /unknown command "frobnicate"/ },
  { argv: ['inspect', '-f', join(tmp, 'missing.yaml')], code: 3, msg: /missing\.yaml/ },
  { argv: ['inspect', '-f', join(tmp, 'not-k8s.yaml')], code: 3, msg: /not-k8s\.yaml/ },
  { argv: ['inspect', '-f', join(tmp, 'broken.yaml')], code: 3, msg: /broken\.yaml/ },
  { argv: ['inspect', '--avoid', '10.0.0.1/8', '-f', join(tmp, 'not-k8s.yaml')], code: 2, msg: /--avoid: .*host bits/ },
  { argv: ['inspect', '--config', join(tmp, 'bad-config.yaml'), '-f', join(tmp, 'not-k8s.yaml')], code: 3, msg: /bad-config\.yaml avoid\[0\]/ },
  { argv: ['inspect', '--fail-on', 'fatal', '-f', join(tmp, 'not-k8s.yaml')], code: 2, msg: /--fail-on fatal/ },
  { argv: ['suggest', '--for', 'lunch'], code: 2, msg: /--for must be/ },
  { argv: ['suggest', '--for', 'pods', '--headroom', '0.5'], code: 2, msg: /--headroom 0\.5/ },
  { argv: ['inspect'], code: 4, msg: /no kubeconfig found/ },
  { argv: ['inspect', '--kubeconfig', join(tmp, 'nope')], code: 3, msg: /kubeconfig .*nope .*does not exist/ },
  { argv: ['inspect', '--kubeconfig', join(tmp, 'kubeconfig-unreachable'), '--context', 'other'], code: 2, msg: /context "other" is not in the kubeconfig \(contexts: c\)/ },
  { argv: ['inspect', '--kubeconfig', join(tmp, 'kubeconfig-unreachable'), '--request-timeout', '5s'], code: 4, msg: new RegExp(`cannot reach the API server https://127\\.0\\.0\\.1:${deadPort} .*ECONNREFUSED`) },
  { argv: ['inspect', '--request-timeout', 'soon'], code: 2, msg: /--request-timeout soon/ },
];

describe('bad input corpus', () => {
  for (const c of CORPUS) {
    it(`${c.argv.join(' ')} → exit ${c.code}`, async () => {
      const r = await run(c.argv, c.env);
      assert.equal(r.code, c.code, `stderr: ${r.err}`);
      assert.equal(r.out, '', 'nothing on stdout');
      const lines = r.err.trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line, got: ${r.err}`);
      assert.match(lines[0]!, /^error: /);
      assert.match(lines[0]!, c.msg);
      assert.doesNotMatch(r.err, /secret-token-value/, 'credentials never printed');
      assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
    });
  }

  it('-v adds the stack trace', async () => {
    const r = await run(['calc', '10.0.0.1/8', '-v']);
    assert.equal(r.code, 2);
    assert.match(r.err, /^error: invalid CIDR/);
    assert.match(r.err, /\n\s+at /);
  });
});

describe('the installed binary', () => {
  const node = process.execPath;
  it('runs from bin/ with the built dist and maps errors to exit codes', () => {
    const ok = spawnSync(node, [join(ROOT, 'bin/kube-renumber.js'), 'calc', '10.233.0.0/18', '-o', 'json'], { encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).usable, 16382);
    const bad = spawnSync(node, [join(ROOT, 'bin/kube-renumber.js'), 'calc', '10.0.0.1/8'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^error: invalid CIDR "10\.0\.0\.1\/8": host bits are set/);
    assert.equal(bad.stderr.trimEnd().split('\n').length, 1);
  });

  it('runs as a kubectl plugin: bin/kubectl-renumber', () => {
    const r = spawnSync(node, [join(ROOT, 'bin/kubectl-renumber'), 'calc', '10.233.64.0/18', '--node-mask', '24', '-o', 'json'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).nodeBlocks.count, 64);
  });

  it('prints help and version', async () => {
    const h = await run(['--help']);
    assert.equal(h.code, 0);
    for (const cmd of ['inspect', 'calc', 'suggest']) assert.match(h.out, new RegExp(`^  ${cmd} `, 'm'));
    const v = await run(['version']);
    assert.match(v.out, /^\d+\.\d+\.\d+\n$/);
    const none = await run([]);
    assert.equal(none.code, 2);
  });
});
