// The builds `build-all --background` leaves to a detached low-priority process, in the order that process builds
// them, and how the integration runner knows which of them are still to come.
//
// Why: on a cold machine the builds are a third of `npm test` (control plane, data plane, cilium-operator, Calico,
// MetalLB: about 15 minutes on 2 cores before any integration file could start), while the integration files leave
// the cores idle about half of the time (they wait on the control plane). So `build-all` builds in the foreground only
// what most files need (the control plane and Calico's IPAM), and the rest here, behind the tests; test/run-integration.ts
// holds back the files that need one of these (its WAITS_FOR) until that build is done, and runs the others meanwhile.
//
// One record per build (the compiler rejects an id without its line); the oldest control plane is built only for
// `npm run test:full` (KUBE_RENUMBER_TEST_FULL=1), where seed-000.test.ts runs on it; `npm test` runs that file on the
// default version and leaves the version matrix to `npm run matrix`. Calico's data plane (calico-node: felix) likewise
// only for test:full, where calico-felix.test.ts runs on it; `npm test` skips that file.

import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_VERSION, ensureBuilt, isBuilt, OLDEST_VERSION, pidAlive, testbedRoot } from './build.ts';
import { CALICO_VERSION, calicoDataplaneBuiltDir, ensureCalicoDataplaneBuilt } from './calico-build.ts';
import { CILIUM_VERSION, ensureCiliumOperatorBuilt, readCiliumStamp } from './cilium-build.ts';
import { ensureDataplaneBuilt, isDataplaneBuilt } from './dataplane-build.ts';
import { ensureMetalLBBuilt, METALLB_VERSION, metallbBuiltDir } from './metallb-build.ts';

export type BackgroundBuild = 'dataplane' | 'cilium' | 'metallb' | 'oldest' | 'calico-dataplane';

export interface BackgroundBuildSpec {
  /** What it builds, as the build log names it. */
  what: string;
  built: () => boolean;
  build: () => Promise<unknown>;
}

export const BACKGROUND_BUILDS: Record<BackgroundBuild, BackgroundBuildSpec> = {
  dataplane: {
    what: `data plane ${DEFAULT_VERSION}`,
    built: () => isDataplaneBuilt(DEFAULT_VERSION),
    build: () => ensureDataplaneBuilt({ version: DEFAULT_VERSION }),
  },
  cilium: {
    what: `cilium-operator ${CILIUM_VERSION}`,
    built: () => readCiliumStamp(CILIUM_VERSION) !== undefined,
    build: () => ensureCiliumOperatorBuilt({ version: CILIUM_VERSION }),
  },
  metallb: {
    what: `metallb-controller ${METALLB_VERSION}`,
    built: () => metallbBuiltDir(METALLB_VERSION) !== undefined,
    build: () => ensureMetalLBBuilt({ version: METALLB_VERSION }),
  },
  oldest: {
    what: `control plane ${OLDEST_VERSION}`,
    built: () => isBuilt(OLDEST_VERSION),
    build: () => ensureBuilt({ version: OLDEST_VERSION }),
  },
  'calico-dataplane': {
    what: `calico-node ${CALICO_VERSION} (felix)`,
    built: () => calicoDataplaneBuiltDir(CALICO_VERSION) !== undefined,
    build: () => ensureCalicoDataplaneBuilt({ version: CALICO_VERSION }),
  },
};

/** The order of the background process: the data plane first (zero-downtime.test.ts is one of the longest files). */
export const BACKGROUND_ORDER: readonly BackgroundBuild[] = ['dataplane', 'cilium', 'metallb', 'oldest', 'calico-dataplane'];
/** Built only for `npm run test:full`: the oldest control plane (seed-000) and Calico's data plane (calico-felix). */
export const FULL_ONLY: readonly BackgroundBuild[] = ['oldest', 'calico-dataplane'];

/** Whether this run is `npm run test:full`'s (every kill point at every write, the oldest version). */
export const fullRun = (): boolean => process.env.KUBE_RENUMBER_TEST_FULL === '1';

/** The builds `npm test` (or `npm run test:full`) leaves to the background, in order. */
export function backgroundBuilds(full = fullRun()): BackgroundBuild[] {
  return BACKGROUND_ORDER.filter((b) => !FULL_ONLY.includes(b) || full);
}

/** Where the background process records its pid and its list, for the runner. */
export function backgroundFile(): string {
  return join(testbedRoot(), 'background.json');
}

export async function recordBackground(pid: number, builds: readonly BackgroundBuild[]): Promise<void> {
  await mkdir(testbedRoot(), { recursive: true });
  await writeFile(backgroundFile(), `${JSON.stringify({ pid, builds })}\n`, { mode: 0o600 });
}

export async function clearBackground(pid: number): Promise<void> {
  try {
    if (JSON.parse(readFileSync(backgroundFile(), 'utf8')).pid !== pid) return;
  } catch {
    return;
  }
  await rm(backgroundFile(), { force: true });
}

/**
 * True while `build` is not built and a live background process still has it on its list: a file that needs it should
 * wait. False when it is built, or nobody is building it (a file run alone builds what it needs itself).
 */
export function pendingInBackground(build: BackgroundBuild): boolean {
  if (BACKGROUND_BUILDS[build].built()) return false;
  let rec: { pid?: unknown; builds?: unknown };
  try {
    rec = JSON.parse(readFileSync(backgroundFile(), 'utf8'));
  } catch {
    return false;
  }
  return typeof rec.pid === 'number' && pidAlive(rec.pid) && Array.isArray(rec.builds) && rec.builds.includes(build);
}
