/**
 * The ClusterIP allocator's dual write, per Kubernetes minor (docs/platforms.md, "Kubernetes versions: the ClusterIP allocator's dual write").
 *
 * With MultiCIDRServiceAllocator on, kube-apiserver 1.31–1.34 also mirrors every ClusterIP it allocates inside its
 * --service-cluster-ip-range into the legacy bitmap stored at /ranges/serviceips, unless feature gate
 * DisableAllocatorDualWrite is on (pkg/registry/core/rest/storage_core.go). That bitmap keeps the range it was
 * created with: nothing rewrites it while MultiCIDRServiceAllocator is on (the legacy repair loop, which would, runs
 * only with it off), so once an apiserver runs with a new --service-cluster-ip-range every explicit ClusterIP in it
 * is refused ("the provided range does not match the current range",
 * pkg/registry/core/service/allocator/bitmap.go Restore). The plan therefore turns dual write off at the
 * restart-apiservers gate where it is on by default or was set on:
 *
 *  - 1.30 and before: no such gate (an unknown gate stops kube-apiserver), and 1.30's allocator has no bitmap.
 *  - 1.31, 1.32: DisableAllocatorDualWrite alpha, default false; MultiCIDRServiceAllocator beta, default false, on
 *    here because the plan uses the ServiceCIDR API.
 *  - 1.33: DisableAllocatorDualWrite beta, default false; MultiCIDRServiceAllocator GA, default true.
 *  - 1.34: DisableAllocatorDualWrite GA, default true (not locked: an explicit false is still accepted).
 *  - 1.35–1.37: locked to true. 1.38: the gate is gone.
 *
 * Pure: the planner writes the flags from it, the restart-apiservers check reads the apiservers against it.
 */
import { splitList } from '../text.ts';
import { mergeFeatureGates } from './distributions/common.ts';

export const DUAL_WRITE_GATE = 'DisableAllocatorDualWrite';
export const MULTI_CIDR_GATE = 'MultiCIDRServiceAllocator';

/** "A=true,B=false" as a map (values other than true/false, and malformed entries, left out). */
export function parseFeatureGates(s: string | undefined): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const part of splitList(s)) {
    const [k, v] = part.split('=').map((x) => x.trim());
    if (!k || v === undefined) continue;
    if (/^true$/i.test(v)) out.set(k, true);
    else if (/^false$/i.test(v)) out.set(k, false);
  }
  return out;
}

/**
 * Whether a kube-apiserver of this minor, run with these --feature-gates, mirrors ClusterIP allocations into the
 * legacy bitmap. Undefined when the minor is unknown.
 */
export function allocatorDualWrite(minor: number | undefined, featureGates: string | undefined): boolean | undefined {
  if (minor === undefined) return undefined;
  if (minor < 31 || minor >= 35) return false;
  const g = parseFeatureGates(featureGates);
  const disable = g.get(DUAL_WRITE_GATE);
  if (minor === 34) return disable === false;
  if (disable === true) return false;
  return g.get(MULTI_CIDR_GATE) ?? minor >= 33;
}

/** What the restart-apiservers gate sets in --feature-gates, and why. */
export interface DualWriteFlags {
  /** --feature-gates until the gate (the current value, with the ServiceCIDR API's gate where the plan enables it; '' none). */
  before: string;
  /** --feature-gates from the gate on. */
  after: string;
  /** Why, for the plan text. */
  why: string;
}

/**
 * The --feature-gates the apiservers must run with from the restart-apiservers gate on, when it is not what they run
 * with: dual write turned off on a minor where it would be on. `current` is the apiservers' --feature-gates as read
 * (undefined: not read or not set); `serviceCIDRApi` whether the plan uses the ServiceCIDR API (it turns
 * MultiCIDRServiceAllocator on before 1.33). Undefined: nothing to add.
 */
export function dualWriteFlags(minor: number | undefined, current: string | undefined, serviceCIDRApi: boolean): DualWriteFlags | undefined {
  if (minor === undefined || minor < 31 || minor > 34) return undefined;
  const before = serviceCIDRApi && minor < 33 && parseFeatureGates(current).get(MULTI_CIDR_GATE) !== true
    ? mergeFeatureGates(current, MULTI_CIDR_GATE) : (current ?? '');
  if (!allocatorDualWrite(minor, before)) return undefined;
  const after = mergeFeatureGates(before, DUAL_WRITE_GATE);
  const why = `on 1.${minor} kube-apiserver mirrors every ClusterIP it allocates into the legacy bitmap at /ranges/serviceips (feature gate ${DUAL_WRITE_GATE} `
    + (minor === 34 ? 'is set to false here' : `is off by default before 1.34`)
    + '); that bitmap keeps the old range and nothing rewrites it while the ServiceCIDR allocator runs, so with the new range an apiserver would refuse every explicit ClusterIP in it '
    + '("the provided range does not match the current range"): set --feature-gates=' + after + ' on every kube-apiserver in the same restart, and keep it until 1.34 (where it is the default)';
  return { before, after, why };
}

/**
 * A feature gate's state in kube-apiserver's own metrics text (`kubernetes_feature_enabled{name="…",stage="…"} 0|1`,
 * k8s.io/component-base/metrics/prometheus/feature); undefined when the gate is not listed.
 */
export function featureEnabledInMetrics(metrics: string, gate: string): boolean | undefined {
  for (const line of metrics.split('\n')) {
    const m = /^kubernetes_feature_enabled\{([^}]*)\}\s+(\S+)/.exec(line);
    if (m && new RegExp(`(^|,)name="${gate}"(,|$)`).test(m[1]!)) return Number(m[2]) === 1;
  }
  return undefined;
}
