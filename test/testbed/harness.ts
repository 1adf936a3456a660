// Test helper: a fresh real control plane per test file (or per suite / per test).
//
// API
//   useTestbed(opts?): Testbed
//     Call at the top level of a test file or inside describe(). Registers node:test before()/after()
//     hooks in the current suite: the cluster starts before the first test and is stopped after the
//     last, whether tests pass or fail. Returns a stand-in that forwards every property to the running
//     Testbed, so `tb.kubectl([...])`, `tb.client.get(...)`, `tb.kubeconfigPath` work inside tests and
//     hooks (accessing it before the before() hook ran throws a clear error).
//
//   await startTestbed(t, opts?): Promise<Testbed>
//     For one test: starts a cluster and registers t.after(() => tb.stop()).
//
//   opts: TestbedOptions (serviceCIDR, podCIDR, nodeMask, nodes, version, podIPAM, ...) plus
//     populate?: FixtureOptions | true    - also load the standard fixture (see fixture.ts)
//     workloads?: WorkloadOptions | true  - also load the workload fixture (see workloads.ts);
//                                           its summary is tb.workloads
//
// Isolation: each Testbed picks free ports and its own temp dir, so test files can run in parallel
// (--test-concurrency=2). Every component runs under tbsup, which kills it when this process exits,
// even by SIGKILL. Set KUBE_RENUMBER_TESTBED_KEEP=1 to keep state dirs (logs) after stop,
// KUBE_RENUMBER_TESTBED_VERBOSE=1 for startup progress.
//
// Example
//   import { test } from 'node:test';
//   import { useTestbed } from '../testbed/harness.ts';
//   const tb = useTestbed({ serviceCIDR: '10.96.0.0/16', nodes: 2 });
//   test('nodes', async () => { const r = await tb.kubectl(['get', 'nodes']); ... });
//
//   // 20 nodes, Calico's own IPAM (calico-ipam), >= 500 pods of every kind with PDBs:
//   const tb = useTestbed({ nodes: 20, podIPAM: 'calico', controllerManagerQPS: 100, workloads: true });
//   test('...', async () => { tb.workloads!.totalPods; ... });

import { after, before, type TestContext } from 'node:test';
import { Testbed, type TestbedOptions } from './cluster.ts';
import { populate, type FixtureOptions, type FixtureResult } from './fixture.ts';
import { populateWorkloads, type WorkloadOptions, type WorkloadSummary } from './workloads.ts';

export interface HarnessOptions extends TestbedOptions {
  populate?: FixtureOptions | true;
  workloads?: WorkloadOptions | true;
}

export interface HarnessTestbed extends Testbed {
  /** Result of the fixture, when opts.populate was given. */
  readonly fixture: FixtureResult | undefined;
  /** Summary of the workload fixture, when opts.workloads was given. */
  readonly workloads: WorkloadSummary | undefined;
}

interface Started {
  tb: Testbed;
  fixture: FixtureResult | undefined;
  workloads: WorkloadSummary | undefined;
}

async function startWith(opts: HarnessOptions): Promise<Started> {
  const { populate: pop, workloads: wl, ...tbOpts } = opts;
  const tb = await Testbed.start(tbOpts);
  try {
    const fixture = pop ? await populate(tb, pop === true ? {} : pop) : undefined;
    const workloads = wl ? await populateWorkloads(tb, wl === true ? {} : wl) : undefined;
    return { tb, fixture, workloads };
  } catch (e) {
    await tb.stop();
    throw e;
  }
}

export function useTestbed(opts: HarnessOptions = {}): HarnessTestbed {
  let current: Testbed | undefined;
  let fixture: FixtureResult | undefined;
  let workloads: WorkloadSummary | undefined;
  before(
    async () => {
      const r = await startWith(opts);
      current = r.tb;
      fixture = r.fixture;
      workloads = r.workloads;
    },
    { timeout: 15 * 60_000 }, // may include a cold build when run outside `npm run test:integration`
  );
  after(async () => {
    await current?.stop();
  });
  return new Proxy({} as HarnessTestbed, {
    get(_target, prop) {
      if (prop === 'fixture') return fixture;
      if (prop === 'workloads') return workloads;
      if (!current) {
        throw new Error(`testbed not started: use it inside tests or hooks (accessed .${String(prop)})`);
      }
      const v = Reflect.get(current, prop, current);
      return typeof v === 'function' ? v.bind(current) : v;
    },
    set(_target, prop, value) {
      if (!current) throw new Error('testbed not started');
      return Reflect.set(current, prop, value, current);
    },
  });
}

export async function startTestbed(t: TestContext, opts: HarnessOptions = {}): Promise<HarnessTestbed> {
  const { tb, fixture, workloads } = await startWith(opts);
  t.after(() => tb.stop());
  return Object.assign(tb, { fixture, workloads }) as HarnessTestbed;
}

/** Polls `fn` until it returns a truthy value (returned) or the timeout passes (throws). */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
