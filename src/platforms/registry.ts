/**
 * Every platform kube-renumber knows, once, in the order they are tried (the first whose detection finds evidence
 * is the cluster's; the fallback, which matches any cluster, last): a Record over PlatformId (src/platform/types.ts),
 * so a platform's folder without its line here, or a line without its folder, does not compile. A new platform is
 * one folder under src/platforms/ (its detection and evidence, the ranges and DNS Service it reads, the ranges it
 * reserves, what it refuses and why, the configuration its planner patches and the commands at its gates; its id
 * merged into PlatformIds by `declare module`) and one line here.
 *
 * installPlatformModules() installs every platform into the layers below (the cluster model's detection, the
 * readiness facts of inspect and the planners' registry); src/install.ts calls it, for the CLI, the library, the
 * benchmarks and the tests. Importing this module does nothing else.
 */
import { installPlatformReadinessFact } from '../analyze/readiness.ts';
import { installPlanner } from '../plan/distributions/registry.ts';
import { installPlatforms } from '../platform/registry.ts';
import type { PlatformId } from '../platform/types.ts';
import { aks } from './aks/index.ts';
import { capi } from './capi/index.ts';
import { eks } from './eks/index.ts';
import { generic } from './generic/index.ts';
import { gke } from './gke/index.ts';
import { k3s } from './k3s/index.ts';
import { kops } from './kops/index.ts';
import { kubeadm, kubespray } from './kubeadm/index.ts';
import type { PlatformModule } from './module.ts';
import { openshift } from './openshift/index.ts';
import { rke2 } from './rke2/index.ts';

export type { PlatformModule } from './module.ts';

export const PLATFORM_MODULES: { readonly [I in PlatformId]: PlatformModule<I> } = {
  openshift,
  eks,
  gke,
  aks,
  rke2,
  k3s,
  capi,
  kops,
  kubespray,
  kubeadm,
  generic,
};

let installed = false;

/** Installs every platform into the layers below, once (a second call does nothing). */
export function installPlatformModules(): void {
  if (installed) return;
  installed = true;
  const modules = Object.values(PLATFORM_MODULES) as PlatformModule[];
  installPlatforms(modules.map((m) => m.platform));
  modules.forEach((m, i) => installPlanner(m.platform.kind, m.planner, i === modules.length - 1));
  for (const m of modules) if (m.readiness) installPlatformReadinessFact(m.platform.kind, m.readiness);
}
