// Benchmark entry point: `npm run bench -- <scenario> [flags]`.
//
// Each scenario module exports `run(args): Promise<number>` (the exit code). It prints a human-readable
// table to stdout and, as the last stdout line, one JSON object with its figures; progress goes to stderr.
// See docs/benchmarks.md.

// Every platform and pod path, installed before a scenario plans or runs (as the CLI does).
import { install } from '../src/install.ts';

install();

interface Scenario {
  summary: string;
  load(): Promise<{ run(args: string[]): Promise<number> }>;
}

const SCENARIOS: Record<string, Scenario> = {
  'service-renumber': {
    summary: 'Service CIDR move (in-place) on a real local control plane vs raw updates vs kubectl delete+apply',
    load: () => import('./service-renumber.ts'),
  },
  'pod-waves': {
    summary: 'Pod CIDR move (Calico) on a real local control plane: total time vs the sum of the individual rollouts',
    load: () => import('./pod-waves.ts'),
  },
  'node-waves': {
    summary: 'Pod CIDR move (node IPAM) on kwok nodes at 50/100/200: --max-unavailable 1 vs 10 %, ratio to one node\'s cycle',
    load: () => import('./node-waves.ts'),
  },
  'control-plane-load': {
    summary: 'node-IPAM move in waves (default 1,000 kwok nodes, 10 %) while another client probes the apiserver: its p99 idle and during, Lease gaps',
    load: () => import('./control-plane-load.ts'),
  },
  'zero-downtime': {
    summary: 'Service CIDR move (recreate, in-place) on the data-plane testbed with the prober: failed requests, longest gap',
    load: () => import('./zero-downtime.ts'),
  },
  'state-size': {
    summary: "the run's state kept in the cluster for N Services (default 20,000): JSON, gzip, Secrets, build and read times",
    load: () => import('./state-size.ts'),
  },
  'fleet-assign': {
    summary: 'fleet range assignment (plan --fleet) for 1,000 synthetic clusters: time per assignment',
    load: () => import('./fleet-assign.ts'),
  },
  'inspect-live': {
    summary: 'inspect of a live testbed with 10,000 pods and 5,000 Services vs kubectl get of the same resources as JSON',
    load: () => import('./inspect-live.ts'),
  },
  'live-index': {
    summary: 'the live-address index for 150,000 pods and a quarter of them: every live check and 1,000 target queries, 4x the pods costs under 10x / 3x',
    load: () => import('./live-index.ts'),
  },
  'large-list': {
    summary: 'one ~1.7 GB `kubectl get pods -A -o json` List (150k pods): inspect -f end to end vs JSON.parse of the same items, time and peak RSS',
    load: () => import('./large-list.ts'),
  },
};

function list(): string {
  return Object.entries(SCENARIOS).map(([name, s]) => `  ${name.padEnd(18)} ${s.summary}`).join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '-h' || name === '--help') {
    process.stderr.write(`usage: npm run bench -- <scenario> [flags]\n\nscenarios:\n${list()}\n`);
    return name ? 0 : 2;
  }
  const scenario = Object.hasOwn(SCENARIOS, name) ? SCENARIOS[name] : undefined;
  if (!scenario) {
    process.stderr.write(`unknown scenario "${name}"; scenarios:\n${list()}\n`);
    return 2;
  }
  const mod = await scenario.load();
  return mod.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
