// Calico's own view of a testbed in podIPAM 'calico' mode (Calico's IPAM, or the stand-in's objects): calicoctl
// (built by calico-build.ts) against the testbed's kubeconfig, kubernetes datastore.
//
//   await calicoctl(tb, ['get', 'ippools', '-o', 'json'])       // { stdout, stderr, code }
//   const r = await calicoIpamCheck(tb);                        // `calicoctl ipam check --show-problem-ips`
//   await assertCalicoIpamClean(tb, ['10.244.0.0/16']);         // after a migration: see below

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cidrContains } from './ip.ts';

interface CalicoTestbed {
  kubeconfigPath: string;
  calicoctlPath(): string | undefined;
  client: { list(path: string): Promise<{ items: any[] }> };
}

export interface CalicoctlResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function calicoctl(tb: CalicoTestbed, args: string[], timeoutMs = 120_000): Promise<CalicoctlResult> {
  const bin = tb.calicoctlPath();
  if (!bin) throw new Error("calicoctl runs against podIPAM 'calico' testbeds, once built (node test/testbed/cli.ts build-calico)");
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', DATASTORE_TYPE: 'kubernetes', KUBECONFIG: tb.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code, sig) => resolve({ stdout, stderr, code: code ?? (sig ? 128 : 1) }));
  });
}

export interface IpamCheckReport {
  output: string;
  problems: number;
  /** "Found N IPs that are allocated in IPAM but not actually in use." */
  leaked: number;
  /** In-use IPs outside active pools + in active pools without an allocation. */
  unallocated: number;
  blocks: number;
  allocations: number;
}

const num = (text: string, re: RegExp): number => {
  const m = re.exec(text);
  if (!m) throw new Error(`calicoctl ipam check: no line matching ${re}:\n${text}`);
  return Number(m[1]);
};

/** Runs `calicoctl ipam check --show-problem-ips` and reads its figures. */
export async function calicoIpamCheck(tb: CalicoTestbed): Promise<IpamCheckReport> {
  const r = await calicoctl(tb, ['ipam', 'check', '--show-problem-ips']);
  if (r.code !== 0) throw new Error(`calicoctl ipam check: exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  const o = r.stdout;
  return {
    output: o,
    problems: num(o, /^Check complete; found (\d+) problems\.$/m),
    leaked: num(o, /^Found (\d+) IPs that are allocated in IPAM but not actually in use\.$/m),
    unallocated:
      num(o, /^Found (\d+) in-use IPs that are not in active IP pools\.$/m) +
      num(o, /^Found (\d+) in-use IPs that are in active IP pools but have no corresponding IPAM allocation\.$/m),
    blocks: num(o, /^Found (\d+) IPAM blocks\.$/m),
    allocations: num(o, /^IPAM blocks record (\d+) allocations\.$/m),
  };
}

/**
 * After a Calico migration: `calicoctl ipam check` finds no problem and no leaked address; calicoctl shows no
 * IPPool, no block (`ipam show --show-blocks`) in `oldCIDRs`, and the API holds no IPAMBlock or BlockAffinity
 * there. A check with problems is run again every 2 s for up to `settleMs` first (DELs of the last pods
 * to go). Returns the check's report.
 */
export async function assertCalicoIpamClean(tb: CalicoTestbed, oldCIDRs: string[], settleMs = 60_000): Promise<IpamCheckReport> {
  const inOld = (cidr: string) => oldCIDRs.some((o) => cidrContains(o, cidr.split('/')[0]!));
  // the last pods' DELs may still be under way (the driver runs them when the pod goes): give them time
  let rep = await calicoIpamCheck(tb);
  for (const deadline = Date.now() + settleMs; rep.problems > 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 2000));
    rep = await calicoIpamCheck(tb);
  }
  assert.equal(rep.leaked, 0, `calicoctl ipam check: leaked addresses\n${rep.output}`);
  assert.equal(rep.problems, 0, `calicoctl ipam check: problems\n${rep.output}`);
  const pools = await calicoctl(tb, ['get', 'ippools', '-o', 'json']);
  assert.equal(pools.code, 0, pools.stderr);
  const poolCidrs: string[] = (JSON.parse(pools.stdout).items ?? []).map((p: any) => p.spec.cidr);
  assert.deepEqual(poolCidrs.filter(inOld), [], 'calicoctl get ippools: an old pool is left');
  const show = await calicoctl(tb, ['ipam', 'show', '--show-blocks']);
  assert.equal(show.code, 0, show.stderr);
  const shownBlocks = [...show.stdout.matchAll(/\|\s*Block\s*\|\s*([0-9.]+\/\d+)\s*\|/g)].map((m) => m[1]!);
  assert.deepEqual(shownBlocks.filter(inOld), [], `calicoctl ipam show --show-blocks: blocks of the old pool\n${show.stdout}`);
  for (const kind of ['ipamblocks', 'blockaffinities']) {
    const left = (await tb.client.list(`/apis/crd.projectcalico.org/v1/${kind}`)).items.filter((b) => inOld(b.spec.cidr));
    assert.deepEqual(left.map((b) => b.metadata.name), [], `${kind} of the old pool left`);
  }
  return rep;
}
