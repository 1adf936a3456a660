// The single-file executable (`npm run dist`) as a user runs it: the linux-amd64 binary copied alone into an
// empty directory (no node_modules, no dist/, no package.json), run with a PATH that holds no node. Offline
// commands agree with the CLI run from the sources; live, it reads the real control plane, runs `probe --deploy`
// (its program embedded in the binary; the test plays the kubelet, as in probe-deploy.test.ts) and applies a
// Service CIDR plan up to its first gate. The build is cached in ${KUBE_RENUMBER_CACHE:-~/.cache/kube-renumber}/dist/<hash
// of the inputs>/ (scripts/dist.ts --cached): only a change to an input rebuilds it.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import type { DistSummary } from '../../scripts/dist.ts';
import { readProgram } from '../../src/probe/deploy.ts';
import { binDir, cacheRoot, testbedRoot } from '../testbed/build.ts';
import { useTestbed } from '../testbed/harness.ts';
import { dnsServer } from './helpers.ts';
import { PodRunner } from '../testbed/pod-runner.ts';
import { run } from '../unit/run-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const EXAMPLE = join(ROOT, 'examples', 'kops-tailscale');
const LOOPBACK = '127.0.0.1';
const NS = 'kr-dist-probe';
const APP = 'app.kubernetes.io/name=kube-renumber-probe';

const onLinuxAmd64 = process.platform === 'linux' && process.arch === 'x64';

/** krew, the kubectl plugin manager, from its Go module (pinned), built once into ${cache}/krew/<version>/. */
const KREW_VERSION = 'v0.4.3';

function krewBinary(): string {
  const dir = join(cacheRoot(), 'krew', KREW_VERSION);
  const krew = join(dir, 'krew');
  if (existsSync(krew)) return krew;
  const gocache = mkdtempSync(join(tmpdir(), 'kr-krew-gocache-'));
  try {
    const r = spawnSync('go', ['install', `sigs.k8s.io/krew/cmd/krew@${KREW_VERSION}`], {
      encoding: 'utf8', timeout: 15 * 60_000,
      // the testbed's module cache: the Kubernetes modules krew needs are mostly there already
      env: { ...process.env, GOBIN: `${dir}.tmp`, GOMODCACHE: join(testbedRoot(), 'go', 'mod'), GOCACHE: gocache, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
    });
    assert.equal(r.status, 0, `go install krew: ${r.error?.message ?? ''}${r.stderr.slice(-2000)}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dirname(dir), { recursive: true });
    renameSync(`${dir}.tmp`, dir);
    return krew;
  } finally {
    rmSync(gocache, { recursive: true, force: true });
  }
}


describe('the linux-amd64 single-file executable, alone in an empty directory with no node on PATH', { skip: onLinuxAmd64 ? false : 'builds and runs the linux-amd64 binary only' }, () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/20', nodes: 2, kubeletLogs: true, calicoCRDs: false,
    populate: { namespaces: 2, deployments: 1, replicas: 1, services: 10 } });
  let summary: DistSummary;
  let work: string;
  let bin: string;
  let env: NodeJS.ProcessEnv;

  /** The binary, from `work`, with nothing but PATH (no node on it) and HOME. */
  function exe(args: string[], timeoutMs = 120_000): Promise<{ code: number | null; out: string; err: string }> {
    return new Promise((resolve) => {
      const p = spawn(bin, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { err += d; });
      p.on('close', (code) => resolve({ code, out, err }));
    });
  }

  before(async () => {
    // Build, or reuse the build of the same inputs. A cold build (tsc, esbuild, blob, injection, tar.gz) takes
    // about a minute here; the Node binary comes from node_modules (the `node` devDependency installed it).
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'dist.ts'), '--cached', '--platform', 'linux-amd64'],
      { cwd: ROOT, encoding: 'utf8', timeout: 15 * 60_000, maxBuffer: 64 << 20 });
    assert.equal(r.status, 0, `npm run dist failed: ${r.stderr.slice(-3000)}`);
    summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as DistSummary;
    const built = summary.platforms.find((p) => p.platform === 'linux-amd64')!;
    work = mkdtempSync(join(tmpdir(), 'kr-dist-run-'));
    bin = join(work, 'kubectl-renumber');
    copyFileSync(built.binary, bin);
    const emptyBin = join(work, 'bin');
    mkdirSync(emptyBin);
    env = { PATH: emptyBin, HOME: work };
  }, { timeout: 16 * 60_000 });

  after(() => { if (work) rmSync(work, { recursive: true, force: true }); });

  test('the directory holds the binary alone and PATH has no node', () => {
    assert.deepEqual(readdirSync(work).sort(), ['bin', 'kubectl-renumber']);
    assert.deepEqual(readdirSync(join(work, 'bin')), []);
    for (const d of env.PATH!.split(delimiter)) assert.ok(!existsSync(join(d, 'node')), `node in ${d}`);
  });

  test('the archive holds the binary and the README, and the krew manifest names its sha256', () => {
    const built = summary.platforms.find((p) => p.platform === 'linux-amd64')!;
    const data = readFileSync(built.archive);
    assert.ok(data.length < 50 * 1024 * 1024, `${data.length} bytes: the linux-amd64 archive must stay under 50 MB`);
    assert.equal(createHash('sha256').update(data).digest('hex'), built.sha256);
    const x = mkdtempSync(join(tmpdir(), 'kr-dist-x-'));
    try {
      const t = spawnSync('tar', ['-xzvf', built.archive, '-C', x], { encoding: 'utf8' });
      assert.equal(t.status, 0, t.stderr);
      assert.deepEqual(t.stdout.trim().split('\n').sort(), ['README.md', 'kubectl-renumber'].concat(existsSync(join(ROOT, 'LICENSE')) ? ['LICENSE'] : []).sort());
      assert.ok(readFileSync(join(x, 'kubectl-renumber')).equals(readFileSync(built.binary)), 'the archived binary is the built one');
    } finally {
      rmSync(x, { recursive: true, force: true });
    }
    const m = yaml.load(readFileSync(summary.manifest, 'utf8')) as any;
    assert.equal(m.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
    assert.equal(m.kind, 'Plugin');
    assert.equal(m.metadata.name, 'renumber');
    assert.equal(m.spec.version, `v${VERSION}`);
    const p = m.spec.platforms.find((q: any) => q.selector.matchLabels.os === 'linux' && q.selector.matchLabels.arch === 'amd64');
    assert.equal(p.sha256, built.sha256);
    assert.equal(p.bin, 'kubectl-renumber');
    assert.match(p.uri, new RegExp(`^https://\\S+/v${VERSION.replaceAll('.', '\\.')}/kubectl-renumber_v${VERSION.replaceAll('.', '\\.')}_linux_amd64\\.tar\\.gz$`));
  });

  test('krew installs it from the manifest and the archive as local files; kubectl runs it as `kubectl renumber`', { timeout: 16 * 60_000 }, () => {
    const built = summary.platforms.find((p) => p.platform === 'linux-amd64')!;
    const krew = krewBinary();
    const krewRoot = join(work, 'krew');
    const kubectlDir = binDir();
    assert.ok(!existsSync(join(kubectlDir, 'node')), `node in ${kubectlDir}`);
    const krewEnv = { KREW_ROOT: krewRoot, HOME: work, PATH: env.PATH };
    const i = spawnSync(krew, ['install', `--manifest=${summary.manifest}`, `--archive=${built.archive}`], { env: krewEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(i.status, 0, i.stderr + i.stdout);
    assert.match(i.stderr + i.stdout, /Installed plugin: renumber/);
    // kubectl finds the plugin on PATH (krew's bin/ holds a link to the installed binary) and runs it
    const path = [join(krewRoot, 'bin'), kubectlDir].join(delimiter);
    const list = spawnSync('kubectl', ['plugin', 'list', '--name-only'], { env: { PATH: path, HOME: work }, encoding: 'utf8' });
    assert.match(list.stdout, /^kubectl-renumber$/m, list.stderr);
    const v = spawnSync('kubectl', ['renumber', 'version'], { env: { PATH: path, HOME: work }, encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr);
    assert.equal(v.stdout.trim(), VERSION);
    // krew's record of the installation (uninstall and list need a git-cloned index, which is not here)
    const receipt = yaml.load(readFileSync(join(krewRoot, 'receipts', 'renumber.yaml'), 'utf8')) as any;
    assert.equal(receipt.metadata.name, 'renumber');
    assert.equal(receipt.spec.version, `v${VERSION}`);
  });

  test('version prints the package version', async () => {
    const r = await exe(['version']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out.trim(), VERSION);
  });

  test('inspect -f agrees with the CLI run from the sources', async () => {
    const r = await exe(['inspect', '-f', EXAMPLE, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const src = await run(['inspect', '-f', EXAMPLE, '-o', 'json']);
    assert.equal(src.code, 0, src.err);
    assert.deepEqual(JSON.parse(r.out), JSON.parse(src.out));
    const table = await exe(['inspect', '-f', EXAMPLE]);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /100\.64\.0\.0\/13/);
  });

  test('plan --service-cidr -f writes the plan the sources write', async () => {
    const args = ['plan', '--service-cidr', '100.32.0.0/16', '-f', EXAMPLE, '-o', 'json'];
    const r = await exe(args);
    const src = await run(args);
    assert.equal(r.code, src.code, r.err);
    assert.ok(r.code === 0 || r.code === 1, r.err);
    const a = JSON.parse(r.out);
    const b = JSON.parse(src.out);
    assert.equal(a.kind, 'MigrationPlan');
    assert.deepEqual(a.steps.map((s: any) => s.id), b.steps.map((s: any) => s.id));
    assert.deepEqual(a.spec, b.spec);
  });

  test('a bad flag is one error line with exit 2, no stack', async () => {
    const r = await exe(['inspect', '--bogus']);
    assert.equal(r.code, 2);
    assert.equal(r.err.trim().split('\n').length, 1, r.err);
    assert.match(r.err, /^error: /);
  });

  test('probe --deploy ships the embedded probe program and reads the report back', async () => {
    await tb.client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    const echo = net.createServer((s) => { s.on('error', () => {}); s.pipe(s); });
    await new Promise<void>((r) => echo.listen(0, LOOPBACK, () => r()));
    const echoPort = (echo.address() as net.AddressInfo).port;
    const dns = await dnsServer();
    const runner = PodRunner.start(tb, { namespace: NS, labelSelector: APP, env: { WEB_SERVICE_HOST: LOOPBACK } });
    try {
      const kc = join(work, 'kubeconfig');
      writeFileSync(kc, readFileSync(tb.kubeconfigPath));
      const r = await exe(['probe', '--deploy', '--kubeconfig', kc, '-n', NS, '--service', `web:${echoPort}`, '--kinds', 'env,dns',
        '--dns-server', dns.address, '--interval', '50ms', '--timeout', '5s', '--report-every', '1s', '--duration', '5s', '-o', 'json'], 180_000);
      assert.equal(r.code, 0, r.err.slice(-3000));
      const report = JSON.parse(r.out);
      assert.equal(report.kind, 'ProbeReport');
      assert.ok(report.totals.requests > 0 && report.totals.failures === 0, JSON.stringify(report.totals));
      // what ran in the pod is the program dist/probe holds (tsc's output of src/probe), byte for byte
      assert.equal(runner.errors.length, 0, runner.errors.join('\n'));
      assert.equal(runner.runs.length, 1, 'one probe pod ran');
      assert.deepEqual(runner.runs[0]!.configMaps.program?.data, readProgram(join(ROOT, 'dist', 'probe')));
    } finally {
      await runner.stop();
      dns.close();
      await new Promise((r) => echo.close(r));
    }
  });

  test('live plan, then apply up to the first gate (exit 7) on the real control plane', async () => {
    const kc = join(work, 'kubeconfig');
    writeFileSync(kc, readFileSync(tb.kubeconfigPath));
    const NEW = '10.100.0.0/16';
    const plan = await exe(['plan', '--kubeconfig', kc, '--service-cidr', NEW, '--apiserver-cert-san', '10.96.0.1',
      '--apiserver-cert-san', '10.100.0.1', '-o', 'yaml']);
    assert.equal(plan.code, 0, plan.err + plan.out.slice(0, 2000));
    const planPath = join(work, 'plan.yaml');
    writeFileSync(planPath, plan.out);
    assert.equal((yaml.load(plan.out) as any).kind, 'MigrationPlan');
    const r = await exe(['apply', planPath, '--yes', '--kubeconfig', kc, '--state-dir', join(work, 'state'), '--timeout', '90s',
      '--propagation-delay', '0s'], 300_000);
    assert.equal(r.code, 7, r.err.slice(-3000));
    assert.match(r.err, /stopped at gate restart-apiservers/);
    const dns = JSON.parse((await tb.kubectl(['get', 'svc', '-n', 'kube-system', 'kube-dns', '-o', 'json'])).stdout);
    assert.equal(dns.spec.clusterIP, '10.100.0.10', 'the DNS Service moved into the new range');
  });
});
