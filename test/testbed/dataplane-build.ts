// Builds (once per version) and locates the data-plane binaries: kube-proxy, CoreDNS and dpnet.
//
//   ensureDataplaneBuilt({ version }) -> bin directory holding kube-proxy, coredns, dpnet.
//
// Binaries live in ${KUBE_RENUMBER_CACHE:-$HOME/.cache/kube-renumber}/dataplane/<version>/bin with their
// own stamp (dataplane/<version>/stamp.json), so building them never invalidates the control-plane cache
// (testbed/<version>). The control plane's Go module cache (testbed/go/mod) and build cache
// (testbed/go/build-cache) are shared: kube-proxy's k8s.io packages are compiled once per version, and the
// build cache is removed by whichever of the two builds of a version runs last. A lock file keeps
// concurrent builds from running twice.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, checkK8sVersion, DEFAULT_VERSION, mib, takeTrimFigure, testbedRoot, withLock } from './build.ts';

export const COREDNS_VERSION = 'v1.15.0';
export const DATAPLANE_BINARIES = ['kube-proxy', 'coredns', 'dpnet'] as const;

const here = dirname(fileURLToPath(import.meta.url));
const buildScript = join(here, 'dataplane-build.sh');
const dpnetSource = join(here, 'dpnet', 'main.go');

export interface DataplaneStamp {
  k8s: string;
  coredns: string;
  dpnetHash: string;
  builtAt: string;
  /** Wall-clock seconds of the last full build (absent when only dpnet was rebuilt). */
  seconds?: number;
  /** Max RSS of the largest single process of the build (GNU time), KiB. */
  maxRssKiB?: number;
  sizes?: { binBytes: number; goModCacheBytes: number; goBuildCacheBytesBeforeTrim?: number };
}

export function dataplaneRoot(): string {
  return join(cacheRoot(), 'dataplane');
}

export function dataplaneVersionDir(version: string): string {
  return join(dataplaneRoot(), version);
}

export function dataplaneBinDir(version: string = DEFAULT_VERSION): string {
  return join(dataplaneVersionDir(version), 'bin');
}

function dpnetHash(): string {
  return createHash('sha256').update(readFileSync(dpnetSource)).digest('hex').slice(0, 16);
}

const stampPath = (version: string) => join(dataplaneVersionDir(version), 'stamp.json');

export function readDataplaneStamp(version: string = DEFAULT_VERSION): DataplaneStamp | undefined {
  try {
    return JSON.parse(readFileSync(stampPath(version), 'utf8')) as DataplaneStamp;
  } catch {
    return undefined;
  }
}

type Need = 'none' | 'dpnet' | 'all';

function whatIsNeeded(version: string): Need {
  const stamp = readDataplaneStamp(version);
  const bin = dataplaneBinDir(version);
  if (
    !stamp ||
    stamp.k8s !== version ||
    stamp.coredns !== COREDNS_VERSION ||
    DATAPLANE_BINARIES.some((b) => b !== 'dpnet' && !existsSync(join(bin, b)))
  ) {
    return 'all';
  }
  if (stamp.dpnetHash !== dpnetHash() || !existsSync(join(bin, 'dpnet'))) return 'dpnet';
  return 'none';
}

export function isDataplaneBuilt(version: string = DEFAULT_VERSION): boolean {
  return whatIsNeeded(version) === 'none';
}



export async function duBytes(path: string): Promise<number> {
  if (!existsSync(path)) return 0;
  return await new Promise<number>((resolve) => {
    const p = spawn('du', ['-sb', path], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', () => resolve(Number(out.split(/\s/)[0]) || 0));
    p.on('error', () => resolve(0));
  });
}

async function runBuildScript(version: string, target: 'all' | 'dpnet', log: (s: string) => void) {
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const vdir = dataplaneVersionDir(version);
  await mkdir(vdir, { recursive: true });
  const timeFile = join(vdir, 'build-time.txt');
  const args = timeBin ? ['-v', '-o', timeFile, 'bash', buildScript, target] : [buildScript, target];
  const started = Date.now();
  log(
    `building ${target === 'all' ? `kube-proxy ${version}, CoreDNS ${COREDNS_VERSION}, dpnet` : 'dpnet'} into ${dataplaneBinDir(version)}` +
      (target === 'all' ? ' (cold: several minutes on 2 cores)' : ''),
  );
  const code = await new Promise<number>((resolve, reject) => {
    const p = spawn(timeBin ?? 'bash', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DP_ROOT: dataplaneRoot(), TB_ROOT: testbedRoot(), K8S_VERSION: version, COREDNS_VERSION },
    });
    p.on('error', reject);
    p.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (code !== 0) {
    throw new Error(
      `data-plane build failed (exit ${code}): bash ${buildScript} ${target} with DP_ROOT=${dataplaneRoot()} TB_ROOT=${testbedRoot()} K8S_VERSION=${version} COREDNS_VERSION=${COREDNS_VERSION}`,
    );
  }
  let maxRssKiB: number | undefined;
  if (timeBin && existsSync(timeFile)) {
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(await readFile(timeFile, 'utf8'));
    if (m) maxRssKiB = Number(m[1]);
  }
  return { seconds, maxRssKiB };
}

/** Makes sure kube-proxy, coredns and dpnet exist for `version`, building them if needed; returns the bin dir. */
/**
 * Debian packages the data plane runs, each with the command that shows it is installed: kube-proxy's
 * iptables mode calls iptables-restore / iptables-save, its nftables mode calls nft.
 */
export const DATAPLANE_PACKAGES = [
  { pkg: 'iptables', cmd: 'iptables' },
  { pkg: 'nftables', cmd: 'nft' },
] as const;

function onPath(cmd: string): boolean {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'];
  return dirs.some((d) => d && existsSync(join(d, cmd)));
}

function runQuiet(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    p.on('error', () => resolve(127));
    p.on('close', (code) => resolve(code ?? 1));
  });
}

/**
 * What Calico's felix runs besides iptables (felix/ipsets: `ipset restore`, `ipset list`; felix/conntrack: `conntrack -D`
 * for a workload address that goes): installed by the Calico data plane (calico-node.ts) only.
 */
export const CALICO_DATAPLANE_PACKAGES = [
  ...DATAPLANE_PACKAGES,
  { pkg: 'ipset', cmd: 'ipset' },
  { pkg: 'conntrack', cmd: 'conntrack' },
] as const;

/** Installs the Debian packages the data plane needs when they are missing (as root, through apt-get). */
export async function ensureHostPackages(
  log: (s: string) => void = (s) => process.stderr.write(`[dataplane] ${s}\n`),
  packages: readonly { pkg: string; cmd: string }[] = DATAPLANE_PACKAGES,
): Promise<void> {
  const missing = packages.filter((p) => !onPath(p.cmd)).map((p) => p.pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`the data plane needs ${missing.join(', ')} (Debian packages) and installing them needs root`);
  log(`installing ${missing.join(', ')} with apt-get`);
  let code = await runQuiet('apt-get', ['install', '-y', '--no-install-recommends', ...missing]);
  if (code !== 0) {
    await runQuiet('apt-get', ['update']);
    code = await runQuiet('apt-get', ['install', '-y', '--no-install-recommends', ...missing]);
  }
  if (code !== 0 || packages.some((p) => !onPath(p.cmd))) throw new Error(`apt-get install ${missing.join(' ')} failed (exit ${code})`);
}

export async function ensureDataplaneBuilt(opts: { version?: string; log?: (s: string) => void } = {}): Promise<string> {
  const version = opts.version ?? DEFAULT_VERSION;
  checkK8sVersion(version);
  const log = opts.log ?? ((s: string) => process.stderr.write(`[dataplane] ${s}\n`));
  if (process.getuid?.() === 0) await ensureHostPackages(log);
  if (whatIsNeeded(version) === 'none') return dataplaneBinDir(version);
  await withLock(
    join(dataplaneVersionDir(version), '.build.lock'),
    async () => {
      const need = whatIsNeeded(version);
      if (need === 'none') return;
      const previous = readDataplaneStamp(version);
      const figures = await runBuildScript(version, need, log);
      const stamp: DataplaneStamp = {
        ...(need === 'dpnet' && previous ? previous : {}),
        k8s: version,
        coredns: COREDNS_VERSION,
        dpnetHash: dpnetHash(),
        builtAt: new Date().toISOString(),
      };
      if (need === 'all') {
        stamp.seconds = figures.seconds;
        if (figures.maxRssKiB !== undefined) stamp.maxRssKiB = figures.maxRssKiB;
        stamp.sizes = {
          binBytes: await duBytes(dataplaneBinDir(version)),
          goModCacheBytes: await duBytes(join(testbedRoot(), 'go', 'mod')),
        };
        const trimmed = await takeTrimFigure(dataplaneVersionDir(version));
        if (trimmed !== undefined) stamp.sizes.goBuildCacheBytesBeforeTrim = trimmed;
        log(
          `built in ${figures.seconds}s, peak RSS ${figures.maxRssKiB ?? '?'} KiB; bin ${mib(stamp.sizes.binBytes)}, ` +
            `shared module cache ${mib(stamp.sizes.goModCacheBytes)}` +
            (stamp.sizes.goBuildCacheBytesBeforeTrim ? `, build cache ${mib(stamp.sizes.goBuildCacheBytesBeforeTrim)} before trimming` : ''),
        );
      }
      await writeFile(stampPath(version), JSON.stringify(stamp, null, 2) + '\n');
    },
    log,
  );
  if (whatIsNeeded(version) !== 'none') throw new Error(`data-plane build finished but binaries are missing in ${dataplaneBinDir(version)}`);
  return dataplaneBinDir(version);
}
