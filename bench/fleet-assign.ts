// Benchmark: fleet range assignment for many clusters (the pure part of `plan --fleet`).
//
//   npm run bench -- fleet-assign [--clusters N] [--runs R]
//
//   Builds a fleet of N clusters (default 1,000) made the way fleets are: most clusters share the same default
//   Service and Pod ranges (10.96.0.0/12 and 10.244.0.0/16, k3s's 10.43.0.0/16 and 10.42.0.0/16, kOps's
//   100.64.0.0/13 and 100.96.0.0/11), some already have their own, each with a need from /20 to /24 (services)
//   and /18 to /22 (pods) and a few node addresses; shared ranges: a VPC, a peer, 100.64.0.0/10, on-premises.
//   Times assignFleetRanges R times (default 20) after one warm-up; prints min/median/max and the moves.
// Human-readable table on stdout, then one JSON line (last stdout line).

import { parseArgs } from 'node:util';
import { assignFleetRanges, type FleetClusterNeeds, type FleetShared } from '../src/plan/fleet.ts';

const DEFAULTS: Array<[string, string]> = [['10.96.0.0/12', '10.244.0.0/16'], ['10.43.0.0/16', '10.42.0.0/16'], ['100.64.0.0/13', '100.96.0.0/11']];

export function syntheticFleet(n: number): FleetClusterNeeds[] {
  let seed = 42;
  const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2 ** 32; };
  return Array.from({ length: n }, (_, i) => {
    const own = rand() < 0.1;
    const [svc, pod] = own ? [`172.${16 + (i % 16)}.${(i * 16) % 256}.0/20`, `192.168.${(i * 4) % 256}.0/22`] : DEFAULTS[Math.floor(rand() * DEFAULTS.length)]!;
    return {
      name: `cluster-${i}`,
      service: { current: svc, prefix: 20 + Math.floor(rand() * 5) },
      pod: { current: pod, prefix: 18 + Math.floor(rand() * 5) },
      local: [`10.250.${i % 256}.${(i >> 8) + 1}/32`],
    };
  });
}

export const SHARED: FleetShared[] = [
  { cidr: '10.0.0.0/16', reason: 'VPC' }, { cidr: '10.1.0.0/16', reason: 'peered VPC' },
  { cidr: '100.64.0.0/10', reason: 'Tailscale' }, { cidr: '192.168.0.0/20', reason: 'on-premises' },
];

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { clusters: { type: 'string' }, runs: { type: 'string' } } });
  const n = Number(values.clusters ?? 1000);
  const runs = Number(values.runs ?? 20);
  const fleet = syntheticFleet(n);
  assignFleetRanges(fleet, SHARED);
  const ms: number[] = [];
  let last;
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    last = assignFleetRanges(fleet, SHARED);
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const fig = {
    clusters: n, runs, minMs: +ms[0]!.toFixed(2), medianMs: +ms[Math.floor(ms.length / 2)]!.toFixed(2), maxMs: +ms[ms.length - 1]!.toFixed(2),
    rangesMoved: last!.moves.ranges, clustersMoved: last!.moves.clusters,
  };
  process.stdout.write(`fleet-assign: ${n} clusters, ${runs} runs\n  min ${fig.minMs} ms  median ${fig.medianMs} ms  max ${fig.maxMs} ms\n`
    + `  ${fig.rangesMoved} of ${2 * n} ranges move, ${fig.clustersMoved} clusters\n${JSON.stringify(fig)}\n`);
  return 0;
}
