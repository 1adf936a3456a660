// Builds (once per version) and locates the testbed binaries.
//
//   ensureBuilt({ version }) -> bin directory holding tbsup, etcd, kube-apiserver,
//   kube-controller-manager, kube-scheduler, kubectl, kwok.
//
// Binaries live in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/testbed/<version>/bin, with the
// Go module cache and build cache in .../testbed/go (so the whole cost sits in one directory that CI
// can cache). A stamp file records a successful build; with it present `ensureBuilt` only stats files.
// A lock file (O_EXCL, holding the builder's pid) keeps concurrent builds from running twice.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The suite's Kubernetes version: the newest stable release served here (KUBE_RENUMBER_K8S_VERSION overrides it, e.g.
 *  to run the suite on another version of the matrix). */
export const DEFAULT_VERSION = process.env.KUBE_RENUMBER_K8S_VERSION || 'v1.37.2';
/** The oldest version of the matrix: 1.29, the version the original kOps migration (100.64.0.0/13 to 172.24.0.0/15)
 *  ran on, which serves ServiceCIDR only as networking.k8s.io/v1alpha1 behind the MultiCIDRServiceAllocator gate.
 *  `npm run test:full` builds it and runs test/integration/seed-000.test.ts on it, so the gated path and the v1alpha1
 *  client run as they ran there (`npm test` runs that file on DEFAULT_VERSION). 1.29 is built at v1.29.15: v1.29.6, the
 *  only 1.29 patch the Go proxy lists, does not build (the proxy refuses k8s.io/endpointslice,
 *  k8s.io/kube-controller-manager and k8s.io/legacy-cloud-providers at v0.29.6); v1.29.15 is served whole
 *  (docs/testbed.md, Other versions). */
export const OLDEST_VERSION = 'v1.29.15';
export const ETCD_VERSION = 'v3.6.16';
export const KWOK_VERSION = 'v0.7.0';
/** kwok as built here: its version and the two patches build.sh applies (pods deleted with their UID as
 *  precondition, as a kubelet deletes them; a node's Lease renewal queued once). A build stamped otherwise
 *  rebuilds kwok alone. */
export const KWOK_BUILD = `${KWOK_VERSION}-delete-uid-lease-once`;
export const BINARIES = [
  'tbsup',
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kwok',
] as const;

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'build.sh');
const supervisorSource = join(here, 'supervisor', 'main.go');

export interface BuildStamp {
  k8s: string;
  etcd: string;
  kwok: string;
  /** KWOK_BUILD of the kwok in bin/ (absent: built before the patch). */
  kwokBuild?: string;
  supervisorHash: string;
  builtAt: string;
  /** Wall-clock seconds of the last full build (absent when only the supervisor was rebuilt). */
  seconds?: number;
  /** Max RSS of the largest single process of the build, from /usr/bin/time -v, in KiB. */
  maxRssKiB?: number;
  /** Sizes after the build. goBuildCacheBytes is what is left (the cache is trimmed unless
   *  KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1); goBuildCacheBytesBeforeTrim what the build had made. */
  sizes?: { binBytes: number; goModCacheBytes: number; goBuildCacheBytes: number; goBuildCacheBytesBeforeTrim?: number };
}

/** Bytes the build cache held before a build script trimmed it (the scripts leave the figure in `dir`); the file is
 *  removed once read. */
export async function takeTrimFigure(dir: string): Promise<number | undefined> {
  const file = join(dir, 'gocache-bytes-before-trim');
  if (!existsSync(file)) return undefined;
  const bytes = Number((await readFile(file, 'utf8')).trim()) || undefined;
  await rm(file, { force: true });
  return bytes;
}

export const mib = (n: number): string => `${(n / 1048576).toFixed(0)} MiB`;

export function cacheRoot(): string {
  const env = process.env.KUBE_RENUMBER_CACHE;
  return env && env.length > 0 ? env : join(homedir(), '.cache', 'kube-renumber');
}

export function testbedRoot(): string {
  return join(cacheRoot(), 'testbed');
}

export function versionDir(version: string): string {
  return join(testbedRoot(), version);
}

export function binDir(version: string = DEFAULT_VERSION): string {
  return join(versionDir(version), 'bin');
}

function supervisorHash(): string {
  return createHash('sha256').update(readFileSync(supervisorSource)).digest('hex').slice(0, 16);
}

function stampPath(version: string): string {
  return join(versionDir(version), 'stamp.json');
}

export function readStamp(version: string = DEFAULT_VERSION): BuildStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as BuildStamp;
  } catch {
    return undefined;
  }
}

type Need = 'none' | 'sup' | 'kwok' | 'all';

function whatIsNeeded(version: string): Need {
  const stamp = readStamp(version);
  const bin = binDir(version);
  if (
    !stamp ||
    stamp.k8s !== version ||
    stamp.etcd !== ETCD_VERSION ||
    stamp.kwok !== KWOK_VERSION ||
    BINARIES.some((b) => b !== 'tbsup' && !existsSync(join(bin, b)))
  ) {
    return 'all';
  }
  if (stamp.supervisorHash !== supervisorHash() || !existsSync(join(bin, 'tbsup'))) return 'sup';
  if (stamp.kwokBuild !== KWOK_BUILD) return 'kwok';
  return 'none';
}

/** True when all binaries of `version` are built (no build is started). */
export function isBuilt(version: string = DEFAULT_VERSION): boolean {
  return whatIsNeeded(version) === 'none';
}

/** Whether process `pid` exists (EPERM: it exists but is not ours). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding an exclusive lock file (pid inside; a dead holder's lock is taken over). */
export async function withLock<T>(lockPath: string, fn: () => Promise<T>, log: (s: string) => void): Promise<T> {
  await mkdir(dirname(lockPath), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      const fh = await open(lockPath, 'wx');
      await fh.writeFile(String(process.pid));
      await fh.close();
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let holder = NaN;
      try {
        holder = Number((await readFile(lockPath, 'utf8')).trim());
      } catch {
        continue; // removed meanwhile
      }
      if (Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) {
        log(`removing stale build lock of dead pid ${holder}`);
        await rm(lockPath, { force: true });
        continue;
      }
      if (!announced) {
        log(`waiting for the build running in pid ${holder} (lock ${lockPath})`);
        announced = true;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lockPath, { force: true });
  }
}

async function duBytes(path: string): Promise<number> {
  if (!existsSync(path)) return 0;
  return await new Promise<number>((resolve) => {
    const p = spawn('du', ['-sb', path], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', () => resolve(Number(out.split(/\s/)[0]) || 0));
    p.on('error', () => resolve(0));
  });
}

async function runBuildScript(version: string, target: Exclude<Need, 'none'>, log: (s: string) => void) {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = versionDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript, target] : [buildScript, target];
  const cmd = timeBin ?? 'bash';
  const started = Date.now();
  const what = target === 'all' ? `kubernetes ${version}, etcd ${ETCD_VERSION}, kwok ${KWOK_BUILD}` : target === 'kwok' ? `kwok ${KWOK_BUILD}` : 'tbsup';
  log(`building ${what} into ${binDir(version)} (cold: tens of minutes on 2 cores)`);
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(cmd, args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        TB_ROOT: testbedRoot(),
        DP_ROOT: join(cacheRoot(), 'dataplane'),
        K8S_VERSION: version,
        ETCD_VERSION,
        KWOK_VERSION,
        KWOK_BUILD,
      },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) {
    throw new Error(`testbed build failed (exit ${code}): bash ${buildScript} ${target} with TB_ROOT=${testbedRoot()} K8S_VERSION=${version}`);
  }
  let maxRssKiB: number | undefined;
  if (timeBin && existsSync(timeFile)) {
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(await readFile(timeFile, 'utf8'));
    if (m) maxRssKiB = Number(m[1]);
  }
  return { seconds, maxRssKiB };
}

/** Runs the build script for what `need` names and writes the version's stamp (a part keeps the rest of the stamp). */
async function buildPart(version: string, need: Exclude<Need, 'none'>, log: (s: string) => void): Promise<void> {
  const previous = readStamp(version);
  const figures = await runBuildScript(version, need, log);
  const stamp: BuildStamp = {
    ...(need !== 'all' && previous ? previous : {}),
    k8s: version,
    etcd: ETCD_VERSION,
    kwok: KWOK_VERSION,
    supervisorHash: need === 'kwok' && previous ? previous.supervisorHash : supervisorHash(),
    kwokBuild: need === 'sup' && previous ? previous.kwokBuild : KWOK_BUILD,
    builtAt: new Date().toISOString(),
  };
  if (need === 'all') {
    stamp.seconds = figures.seconds;
    if (figures.maxRssKiB !== undefined) stamp.maxRssKiB = figures.maxRssKiB;
    const root = testbedRoot();
    stamp.sizes = {
      binBytes: await duBytes(binDir(version)),
      goModCacheBytes: await duBytes(join(root, 'go', 'mod')),
      goBuildCacheBytes: await duBytes(join(root, 'go', 'build-cache')),
    };
    const trimmed = await takeTrimFigure(versionDir(version));
    if (trimmed !== undefined) stamp.sizes.goBuildCacheBytesBeforeTrim = trimmed;
    log(
      `built in ${figures.seconds}s, peak RSS ${figures.maxRssKiB ?? '?'} KiB; bin ${mib(stamp.sizes.binBytes)}, ` +
        `module cache ${mib(stamp.sizes.goModCacheBytes)}, build cache ${mib(stamp.sizes.goBuildCacheBytes)}` +
        (stamp.sizes.goBuildCacheBytesBeforeTrim ? ` (${mib(stamp.sizes.goBuildCacheBytesBeforeTrim)} before trimming)` : ''),
    );
  }
  await writeFile(stampPath(version), JSON.stringify(stamp, null, 2) + '\n');
}

/** A Kubernetes release as the module proxy names it: vX.Y.Z, or a pre-release such as v1.38.0-beta.0. */
export const K8S_VERSION_PATTERN = /^v\d+\.\d+\.\d+(-(alpha|beta|rc)\.\d+)?$/;

/** Throws unless `version` is a release as K8S_VERSION_PATTERN names it (every build checks its version so). */
export function checkK8sVersion(version: string): void {
  if (!K8S_VERSION_PATTERN.test(version)) throw new Error(`bad kubernetes version ${version} (want vX.Y.Z or vX.Y.Z-beta.N)`);
}

/**
 * Makes sure the binaries for `version` exist, building them if needed; returns the bin directory.
 * Returns in milliseconds when the stamp says they are built.
 */
export async function ensureBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? DEFAULT_VERSION;
  checkK8sVersion(version);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[testbed] ${s}\n`));
  if (whatIsNeeded(version) === 'none') return binDir(version);
  await withLock(join(versionDir(version), '.build.lock'), async () => {
    // another process may have built meanwhile; tbsup and kwok may both be due alone (a full build does both)
    for (let need = whatIsNeeded(version), round = 0; need !== 'none' && round < 2; need = whatIsNeeded(version), round++) {
      await buildPart(version, need, log);
    }
  }, log);
  const left = whatIsNeeded(version);
  if (left !== 'none') throw new Error(`testbed build finished but binaries are missing in ${binDir(version)}`);
  return binDir(version);
}

/** Path of one binary; throws a clear error when it is not built. */
export async function binary(name: (typeof BINARIES)[number], version: string = DEFAULT_VERSION): Promise<string> {
  const p = join(binDir(version), name);
  try {
    await stat(p);
  } catch {
    throw new Error(`${p} is missing: run \`npm run testbed -- build --version ${version}\``);
  }
  return p;
}
