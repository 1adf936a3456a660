// Builds (once per version) and locates MetalLB's controller, built from its Go module go.universe.tf/metallb
// (see metallb-build.sh), and the CRDs of the same version (config/crd/bases). The controller assigns
// LoadBalancer addresses from IPAddressPools; it runs out of the cluster with a kubeconfig, webhooks disabled
// (`--webhook-mode=disabled`), no speaker (nothing announces the addresses: the tests read status.loadBalancer).
//
//   ensureMetalLBBuilt({ version }) -> the directory holding bin/ and crds/.
//   metallbBuiltDir(version)        -> that directory when already built (stamp present), else undefined.
//
// It lives in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/metallb/<version>/ with its own stamp
// (metallb/<version>/stamp.json). The Go module cache and the build cache of the control plane (testbed/go/mod,
// testbed/go/build-cache) are shared and never removed. A lock file keeps concurrent builds from running twice.
// `npm run testbed -- build-metallb` builds it (not part of build-all yet).

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, mib, testbedRoot, withLock } from './build.ts';
import { duBytes } from './dataplane-build.ts';

export const METALLB_VERSION = 'v0.16.2';
/** Bumped whenever metallb-build.sh changes what it builds: a stamp of another revision is rebuilt. */
export const METALLB_BUILD_REVISION = 2;
/** github.com/metallb/frr-k8s used in place of the v0.0.27 MetalLB requires, which the Go proxy does not serve. */
export const FRR_K8S_VERSION = 'v0.0.26';

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'metallb-build.sh');

export interface MetalLBStamp {
  metallb: string;
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
  sizes: { binBytes: number; goModCacheBytes: number; goModCacheBytesBefore: number };
}

export function metallbRoot(): string {
  return join(cacheRoot(), 'metallb');
}

const versionDir = (version: string) => join(metallbRoot(), version);
const stampPath = (version: string) => join(versionDir(version), 'stamp.json');

export function readMetalLBStamp(version: string = METALLB_VERSION): MetalLBStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as MetalLBStamp;
  } catch {
    return undefined;
  }
}

/** The version's directory (bin/, crds/) when it is built (stamp and files present); never builds. */
export function metallbBuiltDir(version: string = METALLB_VERSION): string | undefined {
  const stamp = readMetalLBStamp(version);
  if (stamp?.metallb !== version || stamp.revision !== METALLB_BUILD_REVISION) return undefined;
  if (!existsSync(join(versionDir(version), 'bin', 'metallb-controller'))) return undefined;
  return existsSync(join(versionDir(version), 'crds')) ? versionDir(version) : undefined;
}

async function runBuildScript(version: string, log: (s: string) => void) {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = versionDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript] : [buildScript];
  const started = Date.now();
  log(`building metallb-controller ${version} into ${join(vdir, 'bin')} (cold: minutes on 2 cores)`);
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(timeBin ?? 'bash', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, METALLB_ROOT: metallbRoot(), TB_ROOT: testbedRoot(), METALLB_VERSION: version, FRR_K8S_VERSION },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) throw new Error(`metallb build failed (exit ${code}): bash ${buildScript} with METALLB_ROOT=${metallbRoot()} TB_ROOT=${testbedRoot()} METALLB_VERSION=${version}`);
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

/** Makes sure the MetalLB controller and CRDs exist for `version`, building them if needed; returns their directory. */
export async function ensureMetalLBBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? METALLB_VERSION;
  if (!/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`bad metallb version ${version} (want a Go module version)`);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[metallb] ${s}\n`));
  const built = metallbBuiltDir(version);
  if (built) return built;
  await withLock(
    join(versionDir(version), '.build.lock'),
    async () => {
      if (metallbBuiltDir(version)) return;
      const modCache = join(testbedRoot(), 'go', 'mod');
      const goModCacheBytesBefore = await duBytes(modCache);
      const load0 = loadavg()[0];
      const figures = await runBuildScript(version, log);
      const stamp: MetalLBStamp = {
        metallb: version,
        revision: METALLB_BUILD_REVISION,
        builtAt: new Date().toISOString(),
        seconds: figures.seconds,
        loadavg: [Number(load0.toFixed(1)), Number(loadavg()[0].toFixed(1))],
        sizes: { binBytes: await duBytes(join(versionDir(version), 'bin')), goModCacheBytes: await duBytes(modCache), goModCacheBytesBefore },
      };
      if (figures.maxRssKiB !== undefined) stamp.maxRssKiB = figures.maxRssKiB;
      if (figures.cpuSeconds !== undefined) stamp.cpuSeconds = figures.cpuSeconds;
      log(
        `built in ${figures.seconds}s (load average ${stamp.loadavg.join(' → ')}), CPU ${figures.cpuSeconds ?? '?'} s, peak RSS ${figures.maxRssKiB ?? '?'} KiB; ` +
          `binary ${mib(stamp.sizes.binBytes)}, shared module cache ${mib(goModCacheBytesBefore)} → ${mib(stamp.sizes.goModCacheBytes)}`,
      );
      await writeFile(stampPath(version), JSON.stringify(stamp, null, 2) + '\n');
    },
    log,
  );
  const dir = metallbBuiltDir(version);
  if (!dir) throw new Error(`metallb build finished but ${join(versionDir(version), 'bin')} or crds/ is incomplete`);
  return dir;
}
