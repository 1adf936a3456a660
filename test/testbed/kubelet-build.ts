// Builds (once per version) and locates the testbed's real kubelet and its CRI stand-in (fakecri).
//
//   ensureKubeletBuilt({ version }) -> bin directory holding kubelet and fakecri.
//
// Only the tests that need a real kubelet (kwok serves no configz) build them: nothing else calls this. They
// live in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/kubelet/<version>/bin with their own stamp
// (kubelet/<version>/stamp.json, which also records fakecri's source hash), so building them never invalidates
// the control-plane or data-plane caches. The control plane's Go module cache and build cache (testbed/go/, or
// KUBE_RENUMBER_GOCACHE when set) are shared and left in place. A lock file keeps concurrent builds from running twice.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, checkK8sVersion, DEFAULT_VERSION, mib, testbedRoot, withLock } from './build.ts';
import { duBytes } from './dataplane-build.ts';

export const KUBELET_BINARIES = ['kubelet', 'fakecri'] as const;

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'kubelet-build.sh');
const fakecriSource = join(here, 'fakecri', 'main.go');

export interface KubeletStamp {
  k8s: string;
  fakecriHash: string;
  builtAt: string;
  /** Wall-clock seconds of the build. */
  seconds: number;
  /** CPU seconds of the build, user + system, all its processes (GNU time). */
  cpuSeconds?: number;
  /** Max RSS of the largest single process of the build (GNU time), KiB. */
  maxRssKiB?: number;
  binBytes?: number;
}

export function kubeletRoot(): string {
  return join(cacheRoot(), 'kubelet');
}

export function kubeletVersionDir(version: string): string {
  return join(kubeletRoot(), version);
}

export function kubeletBinDir(version: string = DEFAULT_VERSION): string {
  return join(kubeletVersionDir(version), 'bin');
}

function fakecriHash(): string {
  return createHash('sha256').update(readFileSync(fakecriSource)).digest('hex').slice(0, 16);
}

const stampPath = (version: string) => join(kubeletVersionDir(version), 'stamp.json');

export function readKubeletStamp(version: string = DEFAULT_VERSION): KubeletStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as KubeletStamp;
  } catch {
    return undefined;
  }
}

export function isKubeletBuilt(version: string = DEFAULT_VERSION): boolean {
  const stamp = readKubeletStamp(version);
  return !!stamp && stamp.k8s === version && stamp.fakecriHash === fakecriHash()
    && KUBELET_BINARIES.every((b) => existsSync(join(kubeletBinDir(version), b)));
}

async function runBuildScript(version: string, log: (s: string) => void): Promise<{ seconds: number; cpuSeconds?: number; maxRssKiB?: number }> {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = kubeletVersionDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript] : [buildScript];
  const started = Date.now();
  log(`building kubelet ${version} and fakecri into ${kubeletBinDir(version)} (cold: several minutes on 2 cores)`);
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(timeBin ?? 'bash', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, KL_ROOT: kubeletRoot(), TB_ROOT: testbedRoot(), K8S_VERSION: version },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) throw new Error(`kubelet build failed (exit ${code}): bash ${buildScript} with KL_ROOT=${kubeletRoot()} TB_ROOT=${testbedRoot()} K8S_VERSION=${version}`);
  let maxRssKiB: number | undefined;
  let cpuSeconds: number | undefined;
  if (timeBin && existsSync(timeFile)) {
    const text = await readFile(timeFile, 'utf8');
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(text);
    if (m) maxRssKiB = Number(m[1]);
    const u = /User time \(seconds\): ([\d.]+)/.exec(text);
    const k = /System time \(seconds\): ([\d.]+)/.exec(text);
    if (u && k) cpuSeconds = Math.round(Number(u[1]) + Number(k[1]));
  }
  return { seconds, ...(cpuSeconds !== undefined ? { cpuSeconds } : {}), ...(maxRssKiB !== undefined ? { maxRssKiB } : {}) };
}

/** Makes sure kubelet and fakecri exist for `version`, building them if needed; returns the bin dir. */
export async function ensureKubeletBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? DEFAULT_VERSION;
  checkK8sVersion(version);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[kubelet] ${s}\n`));
  if (isKubeletBuilt(version)) return kubeletBinDir(version);
  await mkdir(kubeletVersionDir(version), { recursive: true });
  await withLock(
    join(kubeletVersionDir(version), '.build.lock'),
    async () => {
      if (isKubeletBuilt(version)) return;
      const figures = await runBuildScript(version, log);
      const stamp: KubeletStamp = {
        k8s: version,
        fakecriHash: fakecriHash(),
        builtAt: new Date().toISOString(),
        ...figures,
        binBytes: await duBytes(kubeletBinDir(version)),
      };
      log(`built in ${figures.seconds}s (CPU ${figures.cpuSeconds ?? '?'}s), peak RSS ${figures.maxRssKiB ?? '?'} KiB; bin ${mib(stamp.binBytes ?? 0)}`);
      await writeFile(stampPath(version), JSON.stringify(stamp, null, 2) + '\n');
    },
    log,
  );
  if (!isKubeletBuilt(version)) throw new Error(`kubelet build finished but binaries are missing in ${kubeletBinDir(version)}`);
  return kubeletBinDir(version);
}
