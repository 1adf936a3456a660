/**
 * `npm run image`: the container image deploy/job-apply.yaml runs, built with no container engine, for linux/amd64
 * and linux/arm64, from the single-file executables of `npm run dist` (docs/image.md).
 *
 *  - two layers per platform, each a tar written here (owned by root, one mtime, sorted) and gzipped with a fixed
 *    header: the base (/etc/passwd and /etc/group naming the non-root user 65532, the CA bundle, the shared
 *    libraries the executable's ELF headers ask for and the dynamic loader) and the executable, /kubectl-renumber;
 *  - the libraries come from Debian packages: linux-amd64's from the build machine's installed packages, the other
 *    architecture's from the same packages at the same versions, downloaded by apt-get (signature-checked by apt)
 *    into the cache; the SBOM names each package, its version and each file's sha256;
 *  - config, manifests and the index as JSON; `org.opencontainers.image.*` labels and annotations;
 *  - written as an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/`) holding a multi-platform image
 *    index, plus one `docker load` archive per platform (manifest.json) and an SPDX 2.3 SBOM per platform.
 *
 * The same executables, CA bundle and packages give the same bytes, hence the same digest.
 *
 * Usage: node scripts/image.ts [--platform linux-amd64|linux-arm64]... [--out DIR] [--tag NAME:TAG]
 * stderr: progress. stdout: the JSON summary, then the image index's digest (`sha256:...`) as the last line.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { cachedDist, cacheRoot, DEFAULT_RELEASE_URL, NODE, ROOT, type Platform } from './dist.ts';

export type ImagePlatform = Extract<Platform, 'linux-amd64' | 'linux-arm64'>;
export const IMAGE_PLATFORMS: readonly ImagePlatform[] = ['linux-amd64', 'linux-arm64'];

/** The user the image runs as (distroless' `nonroot`), the one deploy/job-apply.yaml's securityContext names. */
export const IMAGE_UID = 65532;
export const IMAGE_GID = 65532;
export const ENTRYPOINT = '/kubectl-renumber';
export const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
export const SOURCE_URL = 'https://github.com/kube-renumber/kube-renumber';

const ARCH: Record<ImagePlatform, { oci: string; variant?: string; deb: string; triplet: string; machine: number }> = {
  'linux-amd64': { oci: 'amd64', deb: 'amd64', triplet: 'x86_64-linux-gnu', machine: 62 },
  'linux-arm64': { oci: 'arm64', variant: 'v8', deb: 'arm64', triplet: 'aarch64-linux-gnu', machine: 183 },
};

export const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

function run(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr || r.stdout).trim().split('\n').slice(-5).join('\n')}`);
  return r.stdout;
}

// ---------------------------------------------------------------------------------------------------------------
// tar

export interface TarEntry {
  /** path without a leading slash; directories end without a slash */
  path: string;
  type: 'file' | 'dir' | 'symlink';
  mode: number;
  data?: Buffer;
  linkname?: string;
  uid?: number;
  gid?: number;
}

function tarHeader(e: TarEntry, size: number, mtime: number): Buffer {
  const name = e.type === 'dir' ? `${e.path}/` : e.path;
  let prefix = '';
  let short = name;
  if (Buffer.byteLength(name) > 100) {
    // ustar: the name split at a slash into prefix (155) and name (100)
    const cut = name.lastIndexOf('/', name.length - 2);
    prefix = name.slice(0, cut);
    short = name.slice(cut + 1);
    if (cut < 0 || Buffer.byteLength(prefix) > 155 || Buffer.byteLength(short) > 100) throw new Error(`tar: name too long: ${name}`);
  }
  if (e.linkname && Buffer.byteLength(e.linkname) > 100) throw new Error(`tar: link target too long: ${e.linkname}`);
  const h = Buffer.alloc(512);
  const oct = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;
  h.write(short, 0, 100, 'utf8');
  h.write(oct(e.mode, 8), 100);
  h.write(oct(e.uid ?? 0, 8), 108);
  h.write(oct(e.gid ?? 0, 8), 116);
  h.write(oct(size, 12), 124);
  h.write(oct(mtime, 12), 136);
  h.write('        ', 148);
  h.write(e.type === 'file' ? '0' : e.type === 'dir' ? '5' : '2', 156);
  if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.write(e.uid ? String(e.uid) : 'root', 265);
  h.write(e.gid ? String(e.gid) : 'root', 297);
  h.write(oct(0, 8), 329);
  h.write(oct(0, 8), 337);
  if (prefix) h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return h;
}

/** A tar of the entries sorted by path, with one mtime: the same entries give the same bytes. */
export function tar(entries: readonly TarEntry[], mtime: number): Buffer {
  const parts: Buffer[] = [];
  for (const e of [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const data = e.type === 'file' ? e.data ?? Buffer.alloc(0) : Buffer.alloc(0);
    parts.push(tarHeader(e, data.length, mtime), data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** gzip with zlib's fixed header (mtime 0, no name): the same tar gives the same bytes with the same zlib. */
export function gzip(data: Buffer): Buffer {
  return gzipSync(data, { level: 9 });
}

/** The directories above each path, as entries (0755, root). */
function withParents(entries: TarEntry[]): TarEntry[] {
  const have = new Set(entries.map((e) => e.path));
  const out = [...entries];
  for (const e of entries) {
    for (let d = posix.dirname(e.path); d !== '.' && d !== '/'; d = posix.dirname(d)) {
      if (!have.has(d)) { have.add(d); out.push({ path: d, type: 'dir', mode: 0o755 }); }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// ELF: what the executable needs from the system

export interface ElfDeps { machine: number; interp?: string; needed: string[] }

/** The program interpreter and the DT_NEEDED names of a 64-bit little-endian ELF file. */
export function elfDeps(b: Buffer): ElfDeps {
  if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) throw new Error('not a 64-bit little-endian ELF file');
  const machine = b.readUInt16LE(18);
  const phoff = Number(b.readBigUInt64LE(32));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  const loads: Array<{ vaddr: number; offset: number; filesz: number }> = [];
  let dynamic: { offset: number; filesz: number } | undefined;
  let interp: string | undefined;
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    const type = b.readUInt32LE(o);
    const offset = Number(b.readBigUInt64LE(o + 8));
    const vaddr = Number(b.readBigUInt64LE(o + 16));
    const filesz = Number(b.readBigUInt64LE(o + 32));
    if (type === 1) loads.push({ vaddr, offset, filesz });
    if (type === 2) dynamic = { offset, filesz };
    if (type === 3) interp = b.toString('latin1', offset, offset + filesz).replace(/\0.*$/s, '');
  }
  if (!dynamic) return { machine, ...(interp ? { interp } : {}), needed: [] };
  const toOffset = (vaddr: number) => {
    const l = loads.find((s) => vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz);
    if (!l) throw new Error(`ELF: address ${vaddr.toString(16)} is in no loaded segment`);
    return vaddr - l.vaddr + l.offset;
  };
  const neededOffsets: number[] = [];
  let strtab = -1;
  for (let o = dynamic.offset; o + 16 <= dynamic.offset + dynamic.filesz; o += 16) {
    const tag = Number(b.readBigInt64LE(o));
    const val = Number(b.readBigUInt64LE(o + 8));
    if (tag === 0) break;
    if (tag === 1) neededOffsets.push(val);
    if (tag === 5) strtab = toOffset(val);
  }
  if (neededOffsets.length && strtab < 0) throw new Error('ELF: DT_NEEDED without DT_STRTAB');
  const needed = neededOffsets.map((n) => {
    const start = strtab + n;
    return b.toString('latin1', start, b.indexOf(0, start));
  });
  return { machine, ...(interp ? { interp } : {}), needed };
}

/** A shared library put in the image: its soname, where it goes, its bytes and the Debian package it came from. */
export interface SystemFile { path: string; data: Buffer; pkg: string; version: string; arch: string; sha256: string; source: string }

interface Sysroot {
  /** the directory the libraries are found under ('/' for the build machine) */
  root: string;
  /** the package (name, version) owning a file found under root */
  owner: (file: string) => { pkg: string; version: string };
}

/**
 * The libraries `exe` needs, found by soname under the sysroot's multiarch directories, recursively (libstdc++
 * needs libm, libc needs the loader), each placed at /lib/<triplet>/<soname> in the image.
 */
function resolveLibraries(exe: Buffer, p: ImagePlatform, sys: Sysroot): { files: SystemFile[]; interp: string } {
  const { triplet, deb } = ARCH[p];
  const top = elfDeps(exe);
  if (top.machine !== ARCH[p].machine) throw new Error(`${p}: the executable is for ELF machine ${top.machine}, not ${ARCH[p].machine}`);
  if (!top.interp) throw new Error(`${p}: the executable names no program interpreter (a static binary needs no libraries: not expected of Node)`);
  const dirs = [`lib/${triplet}`, `usr/lib/${triplet}`];
  const found = new Map<string, SystemFile>();
  const queue = [...top.needed, basename(top.interp)];
  while (queue.length) {
    const soname = queue.shift()!;
    if (found.has(soname)) continue;
    const hit = dirs.map((d) => join(sys.root, d, soname)).find((f) => existsSync(f));
    if (!hit) throw new Error(`${p}: ${soname} (needed by the executable) is not in ${dirs.map((d) => join(sys.root, d)).join(' or ')}`);
    const real = realpathSync(hit);
    const data = readFileSync(real);
    const owner = sys.owner(hit);
    found.set(soname, { path: `lib/${triplet}/${soname}`, data, pkg: owner.pkg, version: owner.version, arch: deb, sha256: sha256(data), source: hit });
    const d = elfDeps(data);
    queue.push(...d.needed);
  }
  return { files: [...found.values()].sort((a, b) => a.path.localeCompare(b.path)), interp: top.interp };
}

/** The build machine's installed packages (dpkg), for its own architecture. */
function hostSysroot(): Sysroot {
  return {
    root: '/',
    owner: (file) => {
      // dpkg knows files by the path the package installed (usrmerge: /lib/... for /usr/lib/... and back)
      const candidates = [file, realpathSync(file), file.replace(/^\/usr\/lib\//, '/lib/'), realpathSync(file).replace(/^\/usr\/lib\//, '/lib/')];
      for (const c of candidates) {
        const r = spawnSync('dpkg-query', ['-S', c], { encoding: 'utf8' });
        const m = r.status === 0 ? /^([^:\s]+)(?::[a-z0-9]+)?: /.exec(r.stdout) : null;
        if (m) {
          const pkg = m[1]!;
          const version = run('dpkg-query', ['-W', '-f=${Version}', `${pkg}:${ARCH['linux-amd64'].deb}`]).trim();
          return { pkg, version };
        }
      }
      throw new Error(`${file}: no Debian package owns it (dpkg-query -S); the image takes its libraries from Debian packages only`);
    },
  };
}

/** A package's .deb for another architecture, from the build machine's apt sources (apt checks the Release signatures), cached. */
function fetchDeb(pkg: string, version: string, arch: string, log: (s: string) => void): string {
  const dir = join(cacheRoot(), 'image', 'debs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${pkg}_${version.replace(/^\d+:/, '')}_${arch}.deb`);
  if (existsSync(file)) return file;
  const apt = join(cacheRoot(), 'image', `apt-${arch}`);
  for (const d of ['state/lists/partial', 'cache/archives/partial']) mkdirSync(join(apt, d), { recursive: true });
  if (!existsSync(join(apt, 'status'))) writeFileSync(join(apt, 'status'), '');
  // a private apt state: the machine's sources and keys, another architecture, nothing installed or configured
  const o = ['-o', `Dir::State=${join(apt, 'state')}`, '-o', `Dir::State::status=${join(apt, 'status')}`, '-o', `Dir::Cache=${join(apt, 'cache')}`,
    '-o', `APT::Architecture=${arch}`, '-o', `APT::Architectures::=${arch}`, '-o', 'Debug::NoLocking=1', '-o', 'APT::Sandbox::User=root', '-qq'];
  const tmp = mkdtempSync(join(dir, '.dl-'));
  try {
    const dl = () => spawnSync('apt-get', [...o, 'download', `${pkg}:${arch}=${version}`], { cwd: tmp, encoding: 'utf8' });
    let r = dl();
    if (r.status !== 0) {
      log(`apt-get update (${arch} package lists, into ${apt})`);
      run('apt-get', [...o, 'update']);
      r = dl();
    }
    if (r.error || r.status !== 0) throw new Error(`apt-get download ${pkg}:${arch}=${version} failed: ${(r.stderr || '').trim().split('\n').slice(-3).join(' ')} (the build machine's apt sources must carry this version; it is the version installed here for the build machine's own architecture)`);
    const got = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!got) throw new Error(`apt-get download ${pkg}:${arch}=${version}: no .deb written`);
    renameSync(join(tmp, got), file);
    return file;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The packages of `pkgs` (name → version) for `arch`, unpacked into one directory. */
function debSysroot(pkgs: ReadonlyMap<string, string>, arch: string, log: (s: string) => void): Sysroot & { debs: Array<{ pkg: string; version: string; file: string; sha256: string }>; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), `kr-image-${arch}-`));
  const owners = new Map<string, { pkg: string; version: string }>();
  const debs: Array<{ pkg: string; version: string; file: string; sha256: string }> = [];
  for (const [pkg, version] of pkgs) {
    const file = fetchDeb(pkg, version, arch, log);
    debs.push({ pkg, version, file: basename(file), sha256: sha256(readFileSync(file)) });
    const listed = run('dpkg-deb', ['-c', file]);
    run('dpkg-deb', ['-x', file, root]);
    for (const line of listed.split('\n')) {
      const m = /\s\.\/(\S+?)(?: -> .*)?$/.exec(line);
      if (m) owners.set(m[1]!.replace(/\/$/, ''), { pkg, version });
    }
  }
  return {
    root, debs,
    owner: (file) => {
      const rel = file.slice(root.length).replace(/^\/+/, '');
      const o = owners.get(rel) ?? owners.get(rel.replace(/^lib\//, 'usr/lib/')) ?? owners.get(rel.replace(/^usr\/lib\//, 'lib/'));
      if (!o) throw new Error(`${rel}: in none of the packages ${[...pkgs.keys()].join(', ')}`);
      return o;
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// the image

export interface ImageInfo {
  version: string;
  revision: string;
  created: string;
  mtime: number;
}

function imageInfo(): ImageInfo {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const env = process.env.SOURCE_DATE_EPOCH;
  const git = (args: string[]) => { const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }); return r.status === 0 ? r.stdout.trim() : ''; };
  const mtime = env && /^\d+$/.test(env) ? Number(env) : Number(git(['log', '-1', '--format=%ct']) || 0);
  return { version, revision: git(['rev-parse', 'HEAD']) || 'unknown', created: new Date(mtime * 1000).toISOString().replace(/\.000Z$/, 'Z'), mtime };
}

export interface Blob { digest: string; size: number; data: Buffer; mediaType: string }
const blob = (data: Buffer | string, mediaType: string): Blob => {
  const b = Buffer.isBuffer(data) ? data : Buffer.from(data);
  return { digest: `sha256:${sha256(b)}`, size: b.length, data: b, mediaType };
};
const descriptor = (b: Blob, extra: Record<string, unknown> = {}) => ({ mediaType: b.mediaType, digest: b.digest, size: b.size, ...extra });

export interface PlatformImage {
  platform: ImagePlatform;
  manifest: Blob;
  config: Blob;
  layers: Blob[];
  sbom: string;
  libraries: Array<Omit<SystemFile, 'data' | 'source'>>;
}

function labels(info: ImageInfo): Record<string, string> {
  return {
    'org.opencontainers.image.title': 'kube-renumber',
    'org.opencontainers.image.description': 'Renumber a live Kubernetes cluster: move the Service CIDR and the Pod CIDR to new ranges without downtime.',
    'org.opencontainers.image.version': info.version,
    'org.opencontainers.image.revision': info.revision,
    'org.opencontainers.image.created': info.created,
    'org.opencontainers.image.source': SOURCE_URL,
    'org.opencontainers.image.url': SOURCE_URL,
    'org.opencontainers.image.documentation': `${SOURCE_URL}/blob/main/docs/image.md`,
    'org.opencontainers.image.licenses': 'Apache-2.0',
    'org.opencontainers.image.vendor': 'kube-renumber',
  };
}

interface CaBundle { data: Buffer; sha256: string; pkg: string; version: string }

function caBundle(): CaBundle {
  if (!existsSync(CA_BUNDLE)) {
    throw new Error(`${CA_BUNDLE} is missing: the image's CA bundle is Debian's (apt-get install ca-certificates, on Debian or Ubuntu), the same on every build machine that is to give the same digest`);
  }
  const data = readFileSync(CA_BUNDLE);
  const r = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'ca-certificates'], { encoding: 'utf8' });
  return { data, sha256: sha256(data), pkg: 'ca-certificates', version: r.status === 0 ? r.stdout.trim() : 'unknown' };
}

/** SPDX 2.3 (JSON) of one platform's image: the executable, the Node it carries, the Debian packages and their files. */
export function spdx(p: ImagePlatform, info: ImageInfo, exe: { sha256: string; bytes: number; node: string }, ca: CaBundle, libs: ReadonlyArray<Omit<SystemFile, 'data' | 'source'>>, debs: ReadonlyArray<{ pkg: string; version: string; sha256?: string }>): string {
  const { deb } = ARCH[p];
  const ref = (s: string) => `SPDXRef-${s.replace(/[^A-Za-z0-9.-]/g, '-')}`;
  const [nodePkg, nodeVersion] = exe.node.split('@') as [string, string];
  const pkgs = new Map<string, { name: string; version: string; sha256?: string }>();
  for (const l of libs) pkgs.set(l.pkg, { name: l.pkg, version: l.version, ...(debs.find((d) => d.pkg === l.pkg)?.sha256 ? { sha256: debs.find((d) => d.pkg === l.pkg)!.sha256 } : {}) });
  pkgs.set(ca.pkg, { name: ca.pkg, version: ca.version });
  const files = [
    { path: ENTRYPOINT, sha256: exe.sha256, pkg: 'kube-renumber' },
    { path: CA_BUNDLE, sha256: ca.sha256, pkg: ca.pkg },
    ...libs.map((l) => ({ path: `/${l.path}`, sha256: l.sha256, pkg: l.pkg })),
  ];
  const body = {
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: `kube-renumber-${info.version}-${p}`,
    documentNamespace: '',
    creationInfo: { created: info.created, creators: ['Tool: kube-renumber scripts/image.ts'] },
    documentDescribes: ['SPDXRef-image'],
    packages: [
      { SPDXID: 'SPDXRef-image', name: 'kube-renumber-image', versionInfo: info.version, primaryPackagePurpose: 'CONTAINER', downloadLocation: 'NOASSERTION', filesAnalyzed: false,
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: `pkg:oci/kube-renumber@${info.version}?arch=${ARCH[p].oci}` }] },
      { SPDXID: 'SPDXRef-kube-renumber', name: 'kube-renumber', versionInfo: info.version, primaryPackagePurpose: 'APPLICATION', downloadLocation: `git+${SOURCE_URL}@${info.revision}`,
        licenseConcluded: 'Apache-2.0', licenseDeclared: 'Apache-2.0', filesAnalyzed: false, checksums: [{ algorithm: 'SHA256', checksumValue: exe.sha256 }],
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: `pkg:npm/kube-renumber@${info.version}` }] },
      { SPDXID: ref(`npm-${nodePkg}`), name: 'node', versionInfo: nodeVersion, primaryPackagePurpose: 'APPLICATION', downloadLocation: `https://registry.npmjs.org/${nodePkg}/-/${nodePkg}-${nodeVersion}.tgz`,
        licenseDeclared: 'MIT', filesAnalyzed: false, comment: `the Node.js runtime inside ${ENTRYPOINT} (a single executable application), from the npm package ${exe.node}`,
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: `pkg:npm/${nodePkg}@${nodeVersion}` }] },
      ...[...pkgs.values()].map((d) => ({
        SPDXID: ref(`deb-${d.name}`), name: d.name, versionInfo: d.version, primaryPackagePurpose: 'LIBRARY', supplier: 'Organization: Debian', downloadLocation: 'NOASSERTION', filesAnalyzed: false,
        ...(d.sha256 ? { checksums: [{ algorithm: 'SHA256', checksumValue: d.sha256 }] } : {}),
        externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: `pkg:deb/debian/${d.name}@${encodeURIComponent(d.version)}?arch=${d.name === 'ca-certificates' ? 'all' : deb}&distro=debian-12` }],
      })),
    ],
    files: files.map((f) => ({ SPDXID: ref(`file${f.path}`), fileName: `.${f.path}`, checksums: [{ algorithm: 'SHA256', checksumValue: f.sha256 }] })),
    relationships: [
      { spdxElementId: 'SPDXRef-image', relationshipType: 'CONTAINS', relatedSpdxElement: 'SPDXRef-kube-renumber' },
      { spdxElementId: 'SPDXRef-kube-renumber', relationshipType: 'CONTAINS', relatedSpdxElement: ref(`npm-${nodePkg}`) },
      ...[...pkgs.values()].map((d) => ({ spdxElementId: 'SPDXRef-image', relationshipType: 'CONTAINS', relatedSpdxElement: ref(`deb-${d.name}`) })),
      ...files.map((f) => ({ spdxElementId: f.pkg === 'kube-renumber' ? 'SPDXRef-kube-renumber' : ref(`deb-${f.pkg}`), relationshipType: 'CONTAINS', relatedSpdxElement: ref(`file${f.path}`) })),
    ],
  };
  // the namespace names the content, so the same content gives the same document
  body.documentNamespace = `${SOURCE_URL}/spdx/${info.version}/${p}/${sha256(JSON.stringify(body))}`;
  return `${JSON.stringify(body, null, 2)}\n`;
}

const PASSWD = `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${IMAGE_UID}:${IMAGE_GID}:nonroot:/home/nonroot:/sbin/nologin\n`;
const GROUP = `root:x:0:\nnonroot:x:${IMAGE_GID}:\n`;

/**
 * One platform's image. `hostExe`: the linux-amd64 executable, whose libraries (from this machine's packages) name
 * the packages and versions another architecture's are taken from.
 */
export function platformImage(p: ImagePlatform, exePath: string, hostExe: string, nodeSource: string, info: ImageInfo, ca: CaBundle, log: (s: string) => void): PlatformImage {
  const exe = readFileSync(exePath);
  let libs: SystemFile[];
  let interp: string;
  let debs: Array<{ pkg: string; version: string; sha256?: string }> = [];
  if (p === 'linux-amd64') {
    if (process.platform !== 'linux' || process.arch !== 'x64' || !existsSync('/var/lib/dpkg/status')) {
      throw new Error('the image is built on linux-amd64 Debian or Ubuntu (its libraries come from the installed Debian packages)');
    }
    ({ files: libs, interp } = resolveLibraries(exe, p, hostSysroot()));
    debs = [...new Map(libs.map((l) => [l.pkg, { pkg: l.pkg, version: l.version }])).values()];
  } else {
    // the same packages at the same versions as the build machine's own
    const host = resolveLibraries(readFileSync(hostExe), 'linux-amd64', hostSysroot()).files;
    const wanted = new Map(host.map((l) => [l.pkg, l.version]));
    const sys = debSysroot(wanted, ARCH[p].deb, log);
    try {
      ({ files: libs, interp } = resolveLibraries(exe, p, sys));
      debs = sys.debs;
    } finally {
      sys.cleanup();
    }
  }
  const { triplet } = ARCH[p];
  const interpPath = interp.replace(/^\//, '');
  const libPath = `lib/${triplet}/${basename(interp)}`;
  const baseEntries: TarEntry[] = [
    { path: 'etc/passwd', type: 'file', mode: 0o644, data: Buffer.from(PASSWD) },
    { path: 'etc/group', type: 'file', mode: 0o644, data: Buffer.from(GROUP) },
    { path: CA_BUNDLE.slice(1), type: 'file', mode: 0o644, data: ca.data },
    ...libs.map((l) => ({ path: l.path, type: 'file' as const, mode: 0o755, data: l.data })),
    // the loader where the executable's PT_INTERP names it (amd64: /lib64/..., a link to the multiarch copy)
    ...(interpPath !== libPath ? [{ path: interpPath, type: 'symlink' as const, mode: 0o777, linkname: `/${libPath}` }] : []),
    { path: 'home/nonroot', type: 'dir', mode: 0o700, uid: IMAGE_UID, gid: IMAGE_GID },
    { path: 'tmp', type: 'dir', mode: 0o1777 },
  ];
  log(`${p}: base layer (${libs.map((l) => basename(l.path)).join(', ')}, CA bundle)`);
  const baseTar = tar(withParents(baseEntries), info.mtime);
  log(`${p}: executable layer (${exe.length} B), gzip`);
  const exeTar = tar([{ path: ENTRYPOINT.slice(1), type: 'file', mode: 0o755, data: exe }], info.mtime);
  const layers = [blob(gzip(baseTar), MEDIA.layer), blob(gzip(exeTar), MEDIA.layer)];
  const { oci, variant } = ARCH[p];
  const l = labels(info);
  const config = {
    created: info.created,
    architecture: oci,
    ...(variant ? { variant } : {}),
    os: 'linux',
    config: {
      User: `${IMAGE_UID}:${IMAGE_GID}`,
      Entrypoint: [ENTRYPOINT],
      Cmd: ['--help'],
      Env: ['PATH=/', `SSL_CERT_FILE=${CA_BUNDLE}`, `NODE_EXTRA_CA_CERTS=${CA_BUNDLE}`, 'HOME=/home/nonroot'],
      WorkingDir: '/',
      Labels: l,
    },
    rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(baseTar)}`, `sha256:${sha256(exeTar)}`] },
    history: [
      { created: info.created, created_by: `scripts/image.ts: /etc/passwd, /etc/group, ${CA_BUNDLE} (ca-certificates ${ca.version}), ${libs.map((x) => `${x.pkg} ${x.version}`).filter((s, i, a) => a.indexOf(s) === i).join(', ')}` },
      { created: info.created, created_by: `scripts/image.ts: ${ENTRYPOINT} (npm run dist, ${nodeSource})` },
    ],
  };
  const configBlob = blob(JSON.stringify(config), MEDIA.config);
  const manifest = { schemaVersion: 2, mediaType: MEDIA.manifest, config: descriptor(configBlob), layers: layers.map((x) => descriptor(x)), annotations: l };
  const libraries = libs.map(({ data: _d, source: _s, ...rest }) => rest);
  return {
    platform: p,
    manifest: blob(JSON.stringify(manifest), MEDIA.manifest),
    config: configBlob,
    layers,
    sbom: spdx(p, info, { sha256: sha256(exe), bytes: exe.length, node: nodeSource }, ca, libraries, debs),
    libraries,
  };
}

export interface ImageSummary {
  version: string;
  outDir: string;
  layout: string;
  digest: string;
  tag: string;
  platforms: Array<{ platform: ImagePlatform; manifest: string; config: string; layers: Array<{ digest: string; size: number }>; dockerArchive: string; sbom: string; libraries: Array<{ path: string; pkg: string; version: string }> }>;
  ms: { dist: number; total: number };
}

function writeBlob(layout: string, b: Blob): void {
  const f = join(layout, 'blobs', 'sha256', b.digest.slice('sha256:'.length));
  if (!existsSync(f)) writeFileSync(f, b.data);
}

export async function buildImage(o: { platforms: readonly ImagePlatform[]; outDir: string; tag?: string; log: (s: string) => void }): Promise<ImageSummary> {
  const t0 = Date.now();
  const info = imageInfo();
  const ca = caBundle();
  // the executables, built (or found in the cache) by npm run dist; arm64's libraries are matched to amd64's packages
  const distPlatforms: Platform[] = o.platforms.includes('linux-arm64') ? ['linux-amd64', 'linux-arm64'] : ['linux-amd64'];
  const dist = await cachedDist({ platforms: distPlatforms, releaseUrl: process.env.KUBE_RENUMBER_RELEASE_URL || DEFAULT_RELEASE_URL, nodes: NODE, log: o.log });
  const distMs = Date.now() - t0;
  const tag = o.tag ?? `kube-renumber:${info.version}`;
  const layout = join(o.outDir, 'oci');
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  const images: PlatformImage[] = [];
  for (const p of o.platforms) {
    const d = dist.platforms.find((x) => x.platform === p)!;
    images.push(platformImage(p, d.binary, dist.platforms.find((x) => x.platform === 'linux-amd64')!.binary, d.node, info, ca, o.log));
  }
  const l = labels(info);
  const index = {
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: images.map((im) => descriptor(im.manifest, { platform: { architecture: ARCH[im.platform].oci, os: 'linux', ...(ARCH[im.platform].variant ? { variant: ARCH[im.platform].variant } : {}) } })),
    annotations: l,
  };
  const indexBlob = blob(JSON.stringify(index), MEDIA.index);
  for (const im of images) for (const b of [im.config, im.manifest, ...im.layers]) writeBlob(layout, b);
  writeBlob(layout, indexBlob);
  const refName = tag.includes(':') ? tag.slice(tag.lastIndexOf(':') + 1) : info.version;
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index,
    manifests: [descriptor(indexBlob, { annotations: { 'org.opencontainers.image.ref.name': refName, 'io.containerd.image.name': tag } })] }));

  const platforms: ImageSummary['platforms'] = [];
  for (const im of images) {
    const [, arch] = im.platform.split('-');
    // docker load: manifest.json (Config, RepoTags, Layers) over the blobs; an OCI layout of this platform beside it
    const dockerManifest = [{ Config: `blobs/sha256/${im.config.digest.slice(7)}`, RepoTags: [tag], Layers: im.layers.map((x) => `blobs/sha256/${x.digest.slice(7)}`) }];
    const entries: TarEntry[] = [
      { path: 'manifest.json', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify(dockerManifest)) },
      { path: 'oci-layout', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify({ imageLayoutVersion: '1.0.0' })) },
      { path: 'index.json', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index,
        manifests: [descriptor(im.manifest, { annotations: { 'org.opencontainers.image.ref.name': refName, 'io.containerd.image.name': tag } })] })) },
      ...[im.config, im.manifest, ...im.layers].map((b) => ({ path: `blobs/sha256/${b.digest.slice(7)}`, type: 'file' as const, mode: 0o644, data: b.data })),
    ];
    const dockerArchive = join(o.outDir, `kube-renumber_${info.version}_linux_${arch}.docker.tar`);
    writeFileSync(dockerArchive, tar(withParents(entries), info.mtime));
    const sbom = join(o.outDir, `kube-renumber_${info.version}_linux_${arch}.spdx.json`);
    writeFileSync(sbom, im.sbom);
    platforms.push({
      platform: im.platform, manifest: im.manifest.digest, config: im.config.digest, layers: im.layers.map((x) => ({ digest: x.digest, size: x.size })),
      dockerArchive, sbom, libraries: im.libraries.map((x) => ({ path: `/${x.path}`, pkg: x.pkg, version: x.version })),
    });
  }
  const summary: ImageSummary = { version: info.version, outDir: o.outDir, layout, digest: indexBlob.digest, tag, platforms, ms: { dist: distMs, total: Date.now() - t0 } };
  writeFileSync(join(o.outDir, 'image.json'), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

function usage(msg: string): never {
  process.stderr.write(`error: ${msg}\nusage: node scripts/image.ts [--platform linux-amd64|linux-arm64]... [--out DIR] [--tag NAME:TAG]\n`);
  process.exit(2);
}

async function cli(argv: string[]): Promise<void> {
  const platforms: ImagePlatform[] = [];
  let outDir = join(ROOT, 'release', 'image');
  let tag: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i] ?? usage(`${flag} needs a value`);
    if (flag === '--platform') {
      const p = value();
      if (!IMAGE_PLATFORMS.includes(p as ImagePlatform)) usage(`unknown platform ${p} (${IMAGE_PLATFORMS.join(', ')})`);
      if (!platforms.includes(p as ImagePlatform)) platforms.push(p as ImagePlatform);
    } else if (flag === '--out') outDir = value();
    else if (flag === '--tag') {
      tag = value();
      if (!/^[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/.test(tag) && !/^[a-z0-9.-]+(?::\d+)?\/[a-z0-9/._-]+(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/.test(tag)) usage(`--tag: not an image reference: ${tag}`);
    } else usage(`unknown argument ${a}`);
  }
  mkdirSync(outDir, { recursive: true });
  const s = await buildImage({ platforms: platforms.length ? platforms : IMAGE_PLATFORMS, outDir, ...(tag ? { tag } : {}), log: (m) => process.stderr.write(`image: ${m}\n`) });
  for (const p of s.platforms) process.stderr.write(`image: ${p.platform}: manifest ${p.manifest}, ${p.dockerArchive}, ${p.sbom}\n`);
  process.stderr.write(`image: ${s.layout} (OCI image layout), ${s.tag} ${s.digest}\n`);
  process.stdout.write(`${JSON.stringify(s)}\n${s.digest}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  cli(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`error: image: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
