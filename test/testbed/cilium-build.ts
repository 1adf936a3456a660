// Builds (once per version) and locates cilium-operator-generic, built from the Go module
// github.com/cilium/cilium with the tags of Cilium's operator/Makefile (see cilium-build.sh).
//
//   ensureCiliumOperatorBuilt({ version }) -> path of the cilium-operator-generic binary.
//   ciliumOperatorPath(version)            -> that path when already built (stamp present), else undefined.
//
// The binary lives in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/cilium/<version>/bin with its own
// stamp (cilium/<version>/stamp.json) and build cache (cilium/go/build-cache, removed after the build).
// The Go module cache of the control plane (testbed/go/mod) is shared. A lock file keeps concurrent
// builds from running twice. Not part of `npm test`: `npm run testbed -- build-cilium` builds it.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, mib, takeTrimFigure, testbedRoot, withLock } from './build.ts';
import { duBytes } from './dataplane-build.ts';

export const CILIUM_VERSION = 'v1.15.19';
export const CILIUM_OPERATOR_BINARY = 'cilium-operator-generic';

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'cilium-build.sh');

export interface CiliumStamp {
  cilium: string;
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

export function ciliumRoot(): string {
  return join(cacheRoot(), 'cilium');
}

const versionDir = (version: string) => join(ciliumRoot(), version);
const binPath = (version: string) => join(versionDir(version), 'bin', CILIUM_OPERATOR_BINARY);
const stampPath = (version: string) => join(versionDir(version), 'stamp.json');

export function readCiliumStamp(version: string = CILIUM_VERSION): CiliumStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as CiliumStamp;
  } catch {
    return undefined;
  }
}

/** The operator binary when it is built for `version` (stamp and file present); never builds. */
export function ciliumOperatorPath(version: string = CILIUM_VERSION): string | undefined {
  const stamp = readCiliumStamp(version);
  return stamp?.cilium === version && existsSync(binPath(version)) ? binPath(version) : undefined;
}

async function runBuildScript(version: string, log: (s: string) => void) {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = versionDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript] : [buildScript];
  const started = Date.now();
  log(`building ${CILIUM_OPERATOR_BINARY} ${version} into ${dirname(binPath(version))} (cold: many minutes on 2 cores)`);
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(timeBin ?? 'bash', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, CILIUM_ROOT: ciliumRoot(), TB_ROOT: testbedRoot(), CILIUM_VERSION: version },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) {
    throw new Error(`cilium-operator build failed (exit ${code}): bash ${buildScript} with CILIUM_ROOT=${ciliumRoot()} TB_ROOT=${testbedRoot()} CILIUM_VERSION=${version}`);
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

/** Makes sure cilium-operator-generic exists for `version`, building it if needed; returns its path. */
export async function ensureCiliumOperatorBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? CILIUM_VERSION;
  if (!/^v\d+\.\d+\.\d+$/.test(version)) throw new Error(`bad cilium version ${version} (want vX.Y.Z)`);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[cilium] ${s}\n`));
  const built = ciliumOperatorPath(version);
  if (built) return built;
  await withLock(
    join(versionDir(version), '.build.lock'),
    async () => {
      if (ciliumOperatorPath(version)) return;
      const modCache = join(testbedRoot(), 'go', 'mod');
      const goModCacheBytesBefore = await duBytes(modCache);
      const load0 = loadavg()[0];
      const figures = await runBuildScript(version, log);
      const stamp: CiliumStamp = {
        cilium: version,
        builtAt: new Date().toISOString(),
        seconds: figures.seconds,
        loadavg: [Number(load0.toFixed(1)), Number(loadavg()[0].toFixed(1))],
        sizes: { binBytes: await duBytes(binPath(version)), goModCacheBytes: await duBytes(modCache), goModCacheBytesBefore },
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
  const path = ciliumOperatorPath(version);
  if (!path) throw new Error(`cilium-operator build finished but ${binPath(version)} is missing`);
  return path;
}
