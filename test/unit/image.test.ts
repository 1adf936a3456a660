// scripts/image.ts's parts without building an image: the tar writer read back by GNU tar, the ELF reader against
// ldd on this machine's Node, gzip's fixed header, and the image's user and entrypoint against deploy/job-apply.yaml
// and the kustomize base.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as yaml from 'js-yaml';
import { elfDeps, ENTRYPOINT, gzip, IMAGE_GID, IMAGE_UID, tar } from '../../scripts/image.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const onLinux = process.platform === 'linux';

describe('scripts/image.ts', () => {
  it('tar: GNU tar reads back files, directories, links, owners, modes and the one mtime; the same entries give the same bytes', () => {
    const long = `usr/share/${'d'.repeat(60)}/${'e'.repeat(60)}/file.txt`;
    const entries = [
      { path: 'etc/passwd', type: 'file' as const, mode: 0o644, data: Buffer.from('root:x:0:0::/:/sbin/nologin\n') },
      { path: 'etc', type: 'dir' as const, mode: 0o755 },
      { path: 'home/nonroot', type: 'dir' as const, mode: 0o700, uid: 65532, gid: 65532 },
      { path: 'lib64/ld.so', type: 'symlink' as const, mode: 0o777, linkname: '/lib/x/ld.so' },
      { path: long, type: 'file' as const, mode: 0o600, data: Buffer.alloc(513, 7) },
    ];
    const a = tar(entries, 1_700_000_000);
    assert.ok(a.equals(tar([...entries].reverse(), 1_700_000_000)), 'sorted by path: the order given does not matter');
    assert.equal(a.length % 512, 0);
    const dir = mkdtempSync(join(tmpdir(), 'kr-tar-'));
    try {
      const f = join(dir, 'a.tar');
      writeFileSync(f, a);
      const list = spawnSync('tar', ['-tvf', f, '--numeric-owner', '--full-time'], { encoding: 'utf8', env: { TZ: 'UTC', PATH: process.env.PATH } });
      assert.equal(list.status, 0, list.stderr);
      assert.equal(list.stderr, '', 'no warnings');
      const lines = list.stdout.trim().split('\n');
      assert.equal(lines.length, 5);
      assert.ok(lines.every((l) => l.includes('2023-11-14 22:13:20')), list.stdout);
      assert.match(list.stdout, /^drwx------ 65532\/65532 +0 \S+ \S+ home\/nonroot\/$/m);
      assert.match(list.stdout, /^lrwxrwxrwx 0\/0 +0 \S+ \S+ lib64\/ld\.so -> \/lib\/x\/ld\.so$/m);
      const x = join(dir, 'x');
      spawnSync('mkdir', [x]);
      const ex = spawnSync('tar', ['-xf', f, '-C', x, '--numeric-owner', '--same-owner', '-p'], { encoding: 'utf8' });
      assert.equal(ex.status, 0, ex.stderr);
      assert.deepEqual(readFileSync(join(x, long)), Buffer.alloc(513, 7), 'a name over 100 bytes goes through the ustar prefix');
      assert.equal(statSync(join(x, long)).mode & 0o777, 0o600);
      assert.equal(readlinkSync(join(x, 'lib64/ld.so')), '/lib/x/ld.so');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gzip: no name and no time in the header; the same input gives the same bytes', () => {
    const data = Buffer.from('x'.repeat(10_000));
    const g = gzip(data);
    assert.equal(g.readUInt32LE(4), 0, 'MTIME 0');
    assert.equal(g[3]! & 0x08, 0, 'no FNAME');
    assert.ok(g.equals(gzip(data)));
    assert.ok(gunzipSync(g).equals(data));
  });

  it('elfDeps: the libraries and loader ldd names for this machine\'s node', { skip: onLinux ? false : 'ELF and ldd: Linux only' }, () => {
    const d = elfDeps(readFileSync(process.execPath));
    assert.equal(d.machine, process.arch === 'x64' ? 62 : process.arch === 'arm64' ? 183 : d.machine);
    const ldd = spawnSync('ldd', [process.execPath], { encoding: 'utf8' });
    assert.equal(ldd.status, 0, ldd.stderr);
    // `NAME => PATH (ADDR)` for each library, `PATH (ADDR)` for the loader
    const named = [...ldd.stdout.matchAll(/^\s*(\S+\.so[.\d]*)(?: =>| \()/gm)].map((m) => basename(m[1]!));
    // ldd lists the direct and the indirect needs; the direct ones are all among them
    for (const n of d.needed) assert.ok(named.includes(n), `${n} in ldd's list`);
    assert.ok(d.needed.includes('libc.so.6'));
    const interp = /^\s*(\/\S+ld-linux\S+)/m.exec(ldd.stdout)?.[1];
    assert.equal(d.interp, interp);
    assert.throws(() => elfDeps(Buffer.from('#!/bin/sh\n')), /not a 64-bit little-endian ELF/);
    assert.ok(basename(d.interp!).startsWith('ld-linux'));
  });

  it('the image runs what the Job runs, as the Job\'s user; the kustomize base generates the plan the Job mounts and sets its image', () => {
    const job = (yaml.loadAll(readFileSync(join(ROOT, 'deploy/job-apply.yaml'), 'utf8')) as any[]).find((d) => d?.kind === 'Job');
    const pod = job.spec.template.spec;
    assert.deepEqual(pod.containers[0].command, [ENTRYPOINT]);
    assert.equal(pod.securityContext.runAsUser, IMAGE_UID);
    assert.equal(pod.securityContext.runAsGroup, IMAGE_GID);
    const k = yaml.load(readFileSync(join(ROOT, 'deploy/kustomization.yaml'), 'utf8')) as any;
    // every manifest of deploy/ the migration Job needs is in the base (rbac-probe.yaml is `probe --deploy`'s, run from a
    // workstation; rbac-kubelet-configz.yaml is opt-in: --read-kubelet-config, get nodes/proxy, docs/service-migration.md;
    // rbac-helm-releases.yaml too: --read-helm-releases, list secrets, docs/references.md)
    const optIn = new Set(['rbac-probe.yaml', 'rbac-kubelet-configz.yaml', 'rbac-helm-releases.yaml']);
    const files = spawnSync('ls', [join(ROOT, 'deploy')], { encoding: 'utf8' }).stdout.split('\n').filter((f) => /^(rbac.*|job-apply)\.yaml$/.test(f) && !optIn.has(f)).sort();
    assert.deepEqual([...k.resources].sort(), files);
    const vol = pod.volumes.find((v: any) => v.configMap);
    const gen = k.configMapGenerator.find((g: any) => g.name === vol.configMap.name);
    assert.ok(gen, `a generator for ${vol.configMap.name}`);
    assert.equal(gen.namespace, job.metadata.namespace);
    assert.ok(gen.files.some((f: string) => (f.includes('=') ? f.split('=')[0] : basename(f)) === vol.configMap.items[0].key), 'the generated key is the one the Job mounts');
    const image = pod.containers[0].image.split(':')[0];
    assert.ok(k.images.some((i: any) => i.name === image), `images: names ${image}`);
    // the overlay replaces the plan and pins the image by digest
    const o = yaml.load(readFileSync(join(ROOT, 'overlays/eu-1/kustomization.yaml'), 'utf8')) as any;
    assert.deepEqual(o.resources, ['../../deploy']);
    assert.equal(o.configMapGenerator[0].name, vol.configMap.name);
    assert.equal(o.configMapGenerator[0].behavior, 'replace');
    assert.match(o.images[0].digest, /^sha256:[0-9a-f]{64}$/);
  });
});
