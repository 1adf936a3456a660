// Builds (once per version) and locates Calico's own binaries, built from the Go module
// github.com/projectcalico/calico (the monorepo) with the projectcalico/api module in place of its ./api
// (see calico-build.sh, which also applies the one source patch listed in docs/testbed.md):
//   calico-ipam              the CNI IPAM plugin (cni-plugin/cmd/calico, run under that name)
//   calico-kube-controllers  kube-controllers/cmd/kube-controllers (IPAM garbage collection, node controller)
//   calicoctl                calicoctl/calicoctl (`ipam check`, pools and blocks as Calico reads them)
// and the CRDs of the same commit (libcalico-go/config/crd).
//
//   ensureCalicoBuilt({ version }) -> the directory holding bin/ and crds/.
//   calicoBuiltDir(version)        -> that directory when already built (stamp present), else undefined.
//
// It lives in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/calico/<version>/ with its own stamp
// (calico/<version>/stamp.json) and build cache (calico/go/build-cache, removed after the build). The Go
// module cache of the control plane (testbed/go/mod) is shared. A lock file keeps concurrent builds from
// running twice. `npm run testbed -- build-calico` builds it; npm test runs that step.
//
// Calico's own data plane, a separate build (`npm run testbed -- build-calico-dataplane`; `npm run test:full`'s
// background builds and the bench build it, `npm test` never does):
//   calico-node              node/cmd/calico-node: felix (`-felix`), the start-up routine (`-startup`) and the
//                            VXLAN tunnel address allocator (`-allocate-tunnel-addrs`), CGO_ENABLED=0
//   ensureCalicoDataplaneBuilt({ version }) -> calico/<version>/dataplane (bin/calico-node), own stamp
//                                             (dataplane/stamp.json), lock and build cache (calico/go/build-cache-dataplane).
//   calicoDataplaneBuiltDir(version)         -> that directory when built, else undefined.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, mib, takeTrimFigure, testbedRoot, withLock } from './build.ts';
import { duBytes } from './dataplane-build.ts';

/** The monorepo's newest module version on the Go proxy (a pseudo-version: it publishes no module tags). */
export const CALICO_VERSION = 'v1.11.0-cni-plugin.0.20250813170300-a0db560f0520';
/** github.com/projectcalico/api used in place of the monorepo's ./api (the older pseudo-versions are refused). */
export const CALICO_API_VERSION = 'v0.0.0-20250916150628-d4009e4d7c50';
export const CALICO_BINARIES = ['calico-ipam', 'calico-kube-controllers', 'calicoctl'] as const;
/** Bumped whenever calico-build.sh changes what it builds (its patches): a stamp of another revision is rebuilt. */
export const CALICO_BUILD_REVISION = 2;
/** The data-plane target's binaries (calico-build.sh dataplane). */
export const CALICO_DATAPLANE_BINARIES = ['calico-node'] as const;
/** Bumped whenever calico-build.sh changes what its dataplane target builds. */
export const CALICO_DATAPLANE_BUILD_REVISION = 1;

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'calico-build.sh');

export interface CalicoStamp {
  calico: string;
  api: string;
  revision: number;
  builtAt: string;
  /** Wall-clock seconds of the build. */
  seconds: number;
  /** 1-minute load average when the build started and ended (the machine may be shared). */
  loadavg: [number, number];
  /** Max RSS of the largest single process of the build (GNU time), KiB. */
  maxRssKiB?: number;
  /** User + system CPU seconds of the build (GNU time). */
  cpuSeconds?: number;
  sizes: { binBytes: number; goModCacheBytes: number; goModCacheBytesBefore: number; goBuildCacheBytesBeforeTrim?: number };
}

export function calicoRoot(): string {
  return join(cacheRoot(), 'calico');
}

const versionDir = (version: string) => join(calicoRoot(), version);
const binPath = (version: string, name: (typeof CALICO_BINARIES)[number]) => join(versionDir(version), 'bin', name);
const stampPath = (version: string) => join(versionDir(version), 'stamp.json');

export function readCalicoStamp(version: string = CALICO_VERSION): CalicoStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as CalicoStamp;
  } catch {
    return undefined;
  }
}

/** The version's directory (bin/, crds/) when it is built (stamp and files present); never builds. */
export function calicoBuiltDir(version: string = CALICO_VERSION): string | undefined {
  const stamp = readCalicoStamp(version);
  if (stamp?.calico !== version || stamp.api !== CALICO_API_VERSION || stamp.revision !== CALICO_BUILD_REVISION) return undefined;
  if (!CALICO_BINARIES.every((b) => existsSync(binPath(version, b)))) return undefined;
  return existsSync(join(versionDir(version), 'crds')) ? versionDir(version) : undefined;
}

/** Path of one of the built binaries (undefined when not built). */
export function calicoBinary(name: (typeof CALICO_BINARIES)[number], version: string = CALICO_VERSION): string | undefined {
  const dir = calicoBuiltDir(version);
  return dir ? join(dir, 'bin', name) : undefined;
}

async function runBuildScript(version: string, log: (s: string) => void, target: 'ipam' | 'dataplane' = 'ipam') {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = target === 'ipam' ? versionDir(version) : dataplaneDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript, target] : [buildScript, target];
  const started = Date.now();
  const what = target === 'ipam' ? CALICO_BINARIES : CALICO_DATAPLANE_BINARIES;
  log(`building ${what.join(', ')} ${version} into ${join(vdir, 'bin')} (cold: many minutes on 2 cores)`);
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(timeBin ?? 'bash', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, CALICO_ROOT: calicoRoot(), TB_ROOT: testbedRoot(), CALICO_VERSION: version, CALICO_API_VERSION },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) {
    throw new Error(`calico build failed (exit ${code}): bash ${buildScript} ${target} with CALICO_ROOT=${calicoRoot()} TB_ROOT=${testbedRoot()} CALICO_VERSION=${version} CALICO_API_VERSION=${CALICO_API_VERSION}`);
  }
  let maxRssKiB: number | undefined;
  let cpuSeconds: number | undefined;
  if (timeBin && existsSync(timeFile)) {
    const text = await readFile(timeFile, 'utf8');
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(text);
    if (m) maxRssKiB = Number(m[1]);
    const u = /User time \(seconds\): ([\d.]+)/.exec(text);
    const s = /System time \(seconds\): ([\d.]+)/.exec(text);
    if (u && s) cpuSeconds = Math.round(Number(u[1]) + Number(s[1]));
  }
  return { seconds, maxRssKiB, cpuSeconds };
}

/** Makes sure the Calico binaries and CRDs exist for `version`, building them if needed; returns their directory. */
export async function ensureCalicoBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? CALICO_VERSION;
  if (!/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`bad calico version ${version} (want a Go module version)`);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[calico] ${s}\n`));
  const built = calicoBuiltDir(version);
  if (built) return built;
  await withLock(
    join(versionDir(version), '.build.lock'),
    async () => {
      if (calicoBuiltDir(version)) return;
      const modCache = join(testbedRoot(), 'go', 'mod');
      const goModCacheBytesBefore = await duBytes(modCache);
      const load0 = loadavg()[0];
      const figures = await runBuildScript(version, log);
      const stamp: CalicoStamp = {
        calico: version,
        api: CALICO_API_VERSION,
        revision: CALICO_BUILD_REVISION,
        builtAt: new Date().toISOString(),
        seconds: figures.seconds,
        loadavg: [Number(load0.toFixed(1)), Number(loadavg()[0].toFixed(1))],
        sizes: { binBytes: await duBytes(join(versionDir(version), 'bin')), goModCacheBytes: await duBytes(modCache), goModCacheBytesBefore },
      };
      if (figures.maxRssKiB !== undefined) stamp.maxRssKiB = figures.maxRssKiB;
      if (figures.cpuSeconds !== undefined) stamp.cpuSeconds = figures.cpuSeconds;
      const trimmed = await takeTrimFigure(versionDir(version));
      if (trimmed !== undefined) stamp.sizes.goBuildCacheBytesBeforeTrim = trimmed;
      log(
        `built in ${figures.seconds}s (load average ${stamp.loadavg.join(' → ')}), CPU ${figures.cpuSeconds ?? '?'} s, peak RSS ${figures.maxRssKiB ?? '?'} KiB; ` +
          `binary ${mib(stamp.sizes.binBytes)}, shared module cache ${mib(goModCacheBytesBefore)} → ${mib(stamp.sizes.goModCacheBytes)}` +
          (stamp.sizes.goBuildCacheBytesBeforeTrim ? `, build cache ${mib(stamp.sizes.goBuildCacheBytesBeforeTrim)} before trimming` : ''),
      );
      await writeFile(stampPath(version), JSON.stringify(stamp, null, 2) + '\n');
    },
    log,
  );
  const dir = calicoBuiltDir(version);
  if (!dir) throw new Error(`calico build finished but ${join(versionDir(version), 'bin')} or crds/ is incomplete`);
  return dir;
}


const dataplaneDir = (version: string) => join(versionDir(version), 'dataplane');
const dataplaneStampPath = (version: string) => join(dataplaneDir(version), 'stamp.json');

export function readCalicoDataplaneStamp(version: string = CALICO_VERSION): CalicoStamp | undefined {
  try {
    return JSON.parse(readFileSync(dataplaneStampPath(version), 'utf8')) as CalicoStamp;
  } catch {
    return undefined;
  }
}

/** calico/<version>/dataplane (bin/calico-node) when built (stamp of this revision and binary present); never builds. */
export function calicoDataplaneBuiltDir(version: string = CALICO_VERSION): string | undefined {
  const stamp = readCalicoDataplaneStamp(version);
  if (stamp?.calico !== version || stamp.api !== CALICO_API_VERSION || stamp.revision !== CALICO_DATAPLANE_BUILD_REVISION) return undefined;
  return CALICO_DATAPLANE_BINARIES.every((b) => existsSync(join(dataplaneDir(version), 'bin', b))) ? dataplaneDir(version) : undefined;
}

/** Makes sure calico-node (felix, startup, tunnel address allocator) exists for `version`; returns its directory. */
export async function ensureCalicoDataplaneBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? CALICO_VERSION;
  if (!/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`bad calico version ${version} (want a Go module version)`);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[calico dataplane] ${s}\n`));
  const built = calicoDataplaneBuiltDir(version);
  if (built) return built;
  await withLock(
    join(dataplaneDir(version), '.build.lock'),
    async () => {
      if (calicoDataplaneBuiltDir(version)) return;
      const modCache = join(testbedRoot(), 'go', 'mod');
      const goModCacheBytesBefore = await duBytes(modCache);
      const load0 = loadavg()[0];
      const figures = await runBuildScript(version, log, 'dataplane');
      const stamp: CalicoStamp = {
        calico: version,
        api: CALICO_API_VERSION,
        revision: CALICO_DATAPLANE_BUILD_REVISION,
        builtAt: new Date().toISOString(),
        seconds: figures.seconds,
        loadavg: [Number(load0.toFixed(1)), Number(loadavg()[0].toFixed(1))],
        sizes: { binBytes: await duBytes(join(dataplaneDir(version), 'bin')), goModCacheBytes: await duBytes(modCache), goModCacheBytesBefore },
      };
      if (figures.maxRssKiB !== undefined) stamp.maxRssKiB = figures.maxRssKiB;
      if (figures.cpuSeconds !== undefined) stamp.cpuSeconds = figures.cpuSeconds;
      const trimmed = await takeTrimFigure(dataplaneDir(version));
      if (trimmed !== undefined) stamp.sizes.goBuildCacheBytesBeforeTrim = trimmed;
      log(
        `built in ${figures.seconds}s (load average ${stamp.loadavg.join(' → ')}), CPU ${figures.cpuSeconds ?? '?'} s, peak RSS ${figures.maxRssKiB ?? '?'} KiB; ` +
          `binary ${mib(stamp.sizes.binBytes)}, shared module cache ${mib(goModCacheBytesBefore)} → ${mib(stamp.sizes.goModCacheBytes)}` +
          (stamp.sizes.goBuildCacheBytesBeforeTrim ? `, build cache ${mib(stamp.sizes.goBuildCacheBytesBeforeTrim)} before trimming` : ''),
      );
      await writeFile(dataplaneStampPath(version), JSON.stringify(stamp, null, 2) + '\n');
    },
    log,
  );
  const dir = calicoDataplaneBuiltDir(version);
  if (!dir) throw new Error(`calico dataplane build finished but ${join(dataplaneDir(version), 'bin')} is incomplete`);
  return dir;
}
