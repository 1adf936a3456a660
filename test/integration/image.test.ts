// The container image of `npm run image` (scripts/image.ts, docs/image.md), built twice for linux/amd64 with no
// container engine: the two builds are the same bytes (digest, every blob, the docker archive). Its layers are
// unpacked into a root file system and its entrypoint is run the way a container runtime runs it: in new mount
// and pid namespaces, the unpacked tree as its root (chroot), mounted read-only, /proc and a minimal /dev, the
// image config's user (non-root), environment and entrypoint, no Node anywhere on it. `version` prints the
// package version; then deploy/job-apply.yaml's container command line (its volumes bind-mounted where the Job
// mounts them, the kubeconfig as a mounted file) applies a Pod CIDR plan (Calico) on the real control plane and
// `verify` passes.

import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import * as yaml from 'js-yaml';
import { CA_BUNDLE, type ImageSummary } from '../../scripts/image.ts';
import { useTestbed } from '../testbed/harness.ts';
import { run } from '../unit/run-cli.ts';
import { assertAllPodsIn, assertWorkloadsReady, ROOT } from './pod-helpers.ts';

install();

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const onLinuxAmd64 = process.platform === 'linux' && process.arch === 'x64';
const isRoot = process.getuid?.() === 0;
const OLD = '10.244.0.0/16';
const NEW = '10.60.0.0/16';

function build(out: string): { summary: ImageSummary; digest: string; ms: number } {
  const t = Date.now();
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'image.ts'), '--platform', 'linux-amd64', '--out', out],
    { cwd: ROOT, encoding: 'utf8', timeout: 20 * 60_000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `npm run image failed: ${r.stderr.slice(-3000)}`);
  const lines = r.stdout.trim().split('\n');
  return { summary: JSON.parse(lines.at(-2)!) as ImageSummary, digest: lines.at(-1)!, ms: Date.now() - t };
}

const blobPath = (layout: string, digest: string) => join(layout, 'blobs', 'sha256', digest.replace(/^sha256:/, ''));
const readJSON = (layout: string, digest: string) => JSON.parse(readFileSync(blobPath(layout, digest), 'utf8'));

describe('the container image, built with no container engine and run the way a runtime runs it', { skip: !onLinuxAmd64 ? 'builds and runs the linux/amd64 image only' : !isRoot ? 'needs root (namespaces, chroot)' : false }, () => {
  const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', podCIDR: OLD, nodes: 2, podIPAM: 'calico', populate: { namespaces: 1, deployments: 1, replicas: 1, services: 2 } });
  const work = mkdtempSync(join(tmpdir(), 'kr-image-'));
  const rootfs = join(work, 'rootfs');
  let first: ReturnType<typeof build>;
  let second: ReturnType<typeof build>;
  let config: any;

  before(() => {
    first = build(join(work, 'a'));
    second = build(join(work, 'b'));
    // the amd64 image's layers, unpacked in order into one tree, as a runtime's snapshotter does
    const layout = first.summary.layout;
    const index = readJSON(layout, (JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as any).manifests[0].digest);
    const m = readJSON(layout, index.manifests.find((d: any) => d.platform.architecture === 'amd64' && d.platform.os === 'linux').digest);
    config = readJSON(layout, m.config.digest);
    mkdirSync(rootfs);
    for (const l of m.layers) {
      const x = spawnSync('tar', ['-xzf', blobPath(layout, l.digest), '-C', rootfs, '--numeric-owner', '--same-owner', '-p'], { encoding: 'utf8' });
      assert.equal(x.status, 0, x.stderr);
    }
  }, { timeout: 30 * 60_000 });

  after(() => rmSync(work, { recursive: true, force: true }));

  test('two builds give the same digest and the same bytes', () => {
    assert.match(first.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(second.digest, first.digest);
    const files = (d: string) => readdirSync(d, { recursive: true }).map(String).filter((f) => statSync(join(d, f)).isFile()).sort();
    const [a, b] = [first.summary.outDir, second.summary.outDir];
    assert.deepEqual(files(b), files(a));
    // image.json, the build's report, holds its timings and output directory: everything else is the same bytes
    for (const f of files(a).filter((x) => x !== 'image.json')) assert.ok(readFileSync(join(a, f)).equals(readFileSync(join(b, f))), `${f} differs between the two builds`);
    process.stderr.write(`# image builds: ${first.ms} ms, ${second.ms} ms\n`);
  });

  test('the OCI layout: every blob is its digest; the index, manifest and config say what the image is', () => {
    const layout = first.summary.layout;
    assert.deepEqual(JSON.parse(readFileSync(join(layout, 'oci-layout'), 'utf8')), { imageLayoutVersion: '1.0.0' });
    for (const f of readdirSync(join(layout, 'blobs', 'sha256'))) assert.equal(sha256(readFileSync(join(layout, 'blobs', 'sha256', f))), f);
    const top = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8'));
    assert.equal(top.manifests[0].digest, first.digest);
    assert.equal(top.manifests[0].annotations['org.opencontainers.image.ref.name'], VERSION);
    const index = readJSON(layout, first.digest);
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json');
    const desc = index.manifests.find((d: any) => d.platform.architecture === 'amd64');
    const m = readJSON(layout, desc.digest);
    assert.equal(m.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.equal(statSync(blobPath(layout, desc.digest)).size, desc.size);
    // diff_ids: the uncompressed layers' digests
    assert.deepEqual(config.rootfs.diff_ids, m.layers.map((l: any) => `sha256:${sha256(gunzipSync(readFileSync(blobPath(layout, l.digest))))}`));
    assert.equal(config.os, 'linux');
    assert.equal(config.architecture, 'amd64');
    const labels = config.config.Labels;
    assert.equal(labels['org.opencontainers.image.version'], VERSION);
    assert.equal(labels['org.opencontainers.image.revision'], spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim());
    assert.equal(labels['org.opencontainers.image.licenses'], 'Apache-2.0');
    assert.deepEqual(m.annotations, labels);
    // the user and the command deploy/job-apply.yaml runs
    const job = (yaml.loadAll(readFileSync(join(ROOT, 'deploy/job-apply.yaml'), 'utf8')) as any[]).find((d) => d?.kind === 'Job');
    const pod = job.spec.template.spec;
    assert.equal(config.config.User, `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`);
    assert.deepEqual(config.config.Entrypoint, pod.containers[0].command);
  });

  test('the root file system holds the executable, the CA bundle and the libraries it needs, nothing else; no node', () => {
    const all = readdirSync(rootfs, { recursive: true }).map(String).filter((f) => !lstatSync(join(rootfs, f)).isDirectory()).sort();
    const libs = first.summary.platforms[0]!.libraries.map((l) => l.path.slice(1));
    assert.deepEqual(all, ['etc/group', 'etc/passwd', CA_BUNDLE.slice(1), 'kubectl-renumber', 'lib64/ld-linux-x86-64.so.2', ...libs].sort());
    assert.ok(!all.some((f) => /(^|\/)node$/.test(f)), 'no node in the image');
    assert.ok(readFileSync(join(rootfs, CA_BUNDLE)).equals(readFileSync(CA_BUNDLE)), 'the build machine\'s CA bundle');
    // each library is its Debian package's file, at the version the SBOM names
    const sbom = JSON.parse(readFileSync(first.summary.platforms[0]!.sbom, 'utf8'));
    assert.equal(sbom.spdxVersion, 'SPDX-2.3');
    for (const l of first.summary.platforms[0]!.libraries) {
      const installed = spawnSync('dpkg-query', ['-W', '-f=${Version}', `${l.pkg}:amd64`], { encoding: 'utf8' }).stdout.trim();
      assert.equal(l.version, installed, `${l.pkg}`);
      assert.ok(sbom.packages.some((p: any) => p.name === l.pkg && p.versionInfo === l.version), `the SBOM names ${l.pkg} ${l.version}`);
      const f = sbom.files.find((x: any) => x.fileName === `.${l.path}`);
      assert.equal(f?.checksums[0].checksumValue, sha256(readFileSync(join(rootfs, l.path))), `the SBOM's sha256 of ${l.path}`);
    }
    const ca = sbom.files.find((x: any) => x.fileName === `.${CA_BUNDLE}`);
    assert.equal(ca.checksums[0].checksumValue, sha256(readFileSync(CA_BUNDLE)));
    assert.equal(sbom.files.find((x: any) => x.fileName === './kubectl-renumber').checksums[0].checksumValue, sha256(readFileSync(join(rootfs, 'kubectl-renumber'))));
    // owned by root, the executable not writable by the user it runs as
    const st = statSync(join(rootfs, 'kubectl-renumber'));
    assert.equal(st.uid, 0);
    assert.equal(st.mode & 0o777, 0o755);
  });

  test('the docker load archive: manifest.json names the config and the layers it holds', () => {
    const p = first.summary.platforms[0]!;
    const x = join(work, 'docker');
    mkdirSync(x);
    const t = spawnSync('tar', ['-xf', p.dockerArchive, '-C', x], { encoding: 'utf8' });
    assert.equal(t.status, 0, t.stderr);
    const [entry] = JSON.parse(readFileSync(join(x, 'manifest.json'), 'utf8'));
    assert.deepEqual(entry.RepoTags, [`kube-renumber:${VERSION}`]);
    assert.equal(`sha256:${sha256(readFileSync(join(x, entry.Config)))}`, p.config);
    assert.deepEqual(entry.Layers.map((l: string) => `sha256:${sha256(readFileSync(join(x, l)))}`), p.layers.map((l) => l.digest));
  });

  const skopeo = spawnSync('sh', ['-c', 'command -v skopeo'], { encoding: 'utf8' }).stdout.trim();
  test('skopeo (containers/image, what podman and CRI-O use) reads the OCI layout and the docker archive', { skip: skopeo ? false : 'skopeo is not installed (apt-get install skopeo)' }, () => {
    const r = spawnSync(skopeo, ['inspect', '--override-os', 'linux', '--override-arch', 'amd64', `oci:${first.summary.layout}:${VERSION}`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const i = JSON.parse(r.stdout);
    assert.equal(i.Digest, first.digest);
    assert.equal(i.Architecture, 'amd64');
    assert.equal(i.Labels['org.opencontainers.image.version'], VERSION);
    const d = spawnSync(skopeo, ['inspect', `docker-archive:${first.summary.platforms[0]!.dockerArchive}`], { encoding: 'utf8' });
    assert.equal(d.status, 0, d.stderr);
    assert.deepEqual(JSON.parse(d.stdout).Layers.length, 2);
  });

  /**
   * The entrypoint with `args`, as a runtime starts it: new mount and pid namespaces, the rootfs bind-mounted
   * read-only as /, the mounts bound where they go, /proc, a /dev of the usual device nodes; the image config's
   * user, environment (plus `env`) and working directory.
   */
  function runInImage(args: string[], mounts: Array<{ host: string; path: string; readOnly?: boolean }>, env: Record<string, string> = {}, timeoutMs = 600_000): Promise<{ code: number | null; out: string; err: string }> {
    // the runtime makes the mount points in the container's root before it goes read-only
    for (const m of mounts) mkdirSync(join(rootfs, m.path), { recursive: true });
    for (const d of ['proc', 'dev']) mkdirSync(join(rootfs, d), { recursive: true });
    const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    const script = [
      'set -e',
      `R=${q(rootfs)}`,
      'CHROOT=$(command -v chroot)',
      'mount --bind "$R" "$R"',
      ...mounts.flatMap((m) => [`mount --bind ${q(m.host)} "$R"${q(m.path)}`, ...(m.readOnly ? [`mount -o remount,bind,ro "$R"${q(m.path)}`] : [])]),
      'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
      'mount -t tmpfs -o nosuid,mode=755 kr-dev "$R/dev"',
      'for d in null zero full random urandom; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done',
      'mount -o remount,bind,ro "$R"',
      // read-only even for root
      'if touch "$R/.kr-rw-check" 2>/dev/null; then rm -f "$R/.kr-rw-check"; echo "the root is writable" >&2; exit 99; fi',
      `cd "$R" && exec env -i ${[...config.config.Env, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)].map(q).join(' ')} "$CHROOT" --userspec=${q(config.config.User)} --groups= "$R" ${config.config.Entrypoint.map(q).join(' ')} "$@"`,
    ].join('\n');
    return new Promise((resolve) => {
      const p = spawn('unshare', ['--mount', '--pid', '--fork', '--propagation', 'private', 'sh', '-c', script, 'sh', ...args], {
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs,
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { err += d; });
      p.on('close', (code) => resolve({ code, out, err }));
    });
  }

  test('version, as the image\'s non-root user on a read-only root', async () => {
    const r = await runInImage(['version'], []);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out.trim(), VERSION);
    assert.equal(config.config.Env.find((e: string) => e.startsWith('PATH=')), 'PATH=/', 'PATH holds the root alone: no node on it');
  });

  test('deploy/job-apply.yaml\'s command line in the image: apply of a Pod CIDR plan to its end, then verify', { timeout: 900_000 }, async () => {
    const job = (yaml.loadAll(readFileSync(join(ROOT, 'deploy/job-apply.yaml'), 'utf8')) as any[]).find((d) => d?.kind === 'Job');
    const container = job.spec.template.spec.containers[0];
    const [uid, gid] = (config.config.User as string).split(':').map(Number) as [number, number];
    // the Job's volumes: the plan (a ConfigMap, read-only), the state claim (writable by the pod's fsGroup), /tmp (an emptyDir)
    const mounts = container.volumeMounts.map((m: any) => ({ host: join(work, 'vol', m.name), path: m.mountPath, readOnly: m.readOnly === true }));
    for (const m of mounts) {
      mkdirSync(m.host, { recursive: true });
      chownSync(m.host, uid, gid);
    }
    // the kubeconfig, a file mounted read-only (never in the image)
    const kube = join(work, 'vol', 'kubeconfig');
    mkdirSync(kube);
    writeFileSync(join(kube, 'config'), readFileSync(tb.kubeconfigPath), { mode: 0o400 });
    chownSync(join(kube, 'config'), uid, gid);
    chmodSync(kube, 0o500);
    chownSync(kube, uid, gid);
    mounts.push({ host: kube, path: '/var/run/kube', readOnly: true });

    const p = await run(['plan', '--kubeconfig', tb.kubeconfigPath, '--pod-cidr', NEW, '-o', 'yaml']);
    assert.ok(p.code === 0 || p.code === 1, p.err);
    const planPath: string = container.args[1];
    const planMount = mounts.find((m: any) => planPath.startsWith(`${m.path}/`))!;
    writeFileSync(join(planMount.host, planPath.slice(planMount.path.length + 1)), p.out);

    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value])) as Record<string, string>;
    const args = [...container.args, '--kubeconfig=/var/run/kube/config', '--ack-gate=pod-cidr-config'];
    const t = Date.now();
    const r = await runInImage(args, mounts, env);
    assert.equal(r.code, 0, r.err.slice(-3000));
    assert.match(r.out, /^completed: \d+ step\(s\) applied/m);
    const stateDir = container.args.find((a: string) => a.startsWith('--state-dir=')).slice('--state-dir='.length) as string;
    const v = await runInImage(['verify', planPath, `--state-dir=${stateDir}`, '--kubeconfig=/var/run/kube/config'], mounts, env);
    assert.equal(v.code, 0, v.err.slice(-3000));
    process.stderr.write(`# apply + verify in the image: ${Date.now() - t} ms\n`);
    await assertAllPodsIn(tb, NEW, OLD);
    await assertWorkloadsReady(tb);
    // the journal and backups were written by the image's user on the mounted claim
    const stateMount = mounts.find((m: any) => stateDir.startsWith(`${m.path}/`))!;
    const hostState = join(stateMount.host, stateDir.slice(stateMount.path.length + 1));
    assert.ok(existsSync(hostState));
    const st = statSync(hostState);
    assert.equal(st.uid, uid, 'the state directory belongs to the image\'s user');
    assert.notEqual(st.uid, 0);
  });
});
