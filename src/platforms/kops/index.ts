/**
 * The kops platform: recognised by what kOps leaves (platform.ts, signs.ts), its InstanceGroups read from files
 * (instance-groups.ts); its planner edits the kOps Cluster spec (plan.ts); inspect says when that spec was not given.
 */
import type { PlatformReadinessFact } from '../../analyze/readiness.ts';
import type { PlatformModule } from '../module.ts';
import { kops as kopsPlatform } from './platform.ts';
import { kops as planner } from './plan.ts';

declare module '../../platform/types.ts' {
  interface PlatformIds {
    kops: true;
  }
}

/** The Cluster spec lives in the kOps state store, not in the API: a live read alone never has it. */
const readiness: PlatformReadinessFact = (snap) => (snap.kops ? undefined : {
  id: 'kops-spec', ok: null,
  summary: 'kOps cluster without its Cluster spec in the input (it lives in the kOps state store, not in the API): podCIDR, serviceClusterIPRange and '
    + 'nonMasqueradeCIDR not read; to add them: `kops get cluster -o yaml > cluster.yaml`, then -f cluster.yaml with --kubeconfig or --context (joins the live read), or next to a dump of the cluster',
});

export const kops: PlatformModule<'kops'> = { platform: kopsPlatform, planner, readiness };
