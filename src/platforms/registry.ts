/**
 * Every platform kube-renumber knows, once, in the order they are tried (the first whose detection finds evidence
 * is the cluster's; the fallback, which matches any cluster, last): a Record over PlatformId (src/platform/types.ts),
 * so a platform's folder without its line here, or a line without its folder, does not compile. A new platform is
 * one folder under src/platforms/ (its detection and evidence, the ranges and DNS Service it reads, the ranges it
 * reserves, what it refuses and why, the configuration its planner patches and the commands at its gates; its id
 * merged into PlatformIds by `declare module`) and one line here.
 *
 * Importing this module installs every platform into the layers below (the cluster model's detection and the
 * planners' registry); src/pod-paths/registry.ts imports it, so the CLI, the benchmarks and the tests have them.
 */
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

const modules = Object.values(PLATFORM_MODULES) as PlatformModule[];
installPlatforms(modules.map((m) => m.platform));
modules.forEach((m, i) => installPlanner(m.platform.kind, m.planner, i === modules.length - 1));
