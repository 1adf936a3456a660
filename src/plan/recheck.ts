/**
 * The pre-flight checks of a plan, run again against a live snapshot. `apply` decides from these, never from
 * the results written in the plan file (which anyone can edit): the plan is rebuilt from the snapshot with the
 * options the plan records (targets, strategy, keep list, tier settings, headroom, Pod CIDR settings) and its
 * checks are returned. Pure.
 */
import type { Snapshot } from '../cluster/types.ts';
import { contains, parseCidr, parseIP, type IP } from '../net/index.ts';
import { buildMigrationPlan, type MigrationPlan } from './plan.ts';
import { buildExtensionPlan } from './extend.ts';
import { buildPodExtensionPlan } from './extend-pod.ts';
import { podPath } from './pod-paths/registry.ts';
import type { PreflightCheck } from './preflight.ts';

export interface RecheckOptions {
  /**
   * The apiserver serving certificate's SANs as read now (over TLS), when the plan does not record SANs the
   * operator gave; undefined: not known (the check then warns, as offline).
   */
  liveCertSANs?: readonly string[];
}

function tryParseIP(s: string): IP | undefined {
  try { return parseIP(s); } catch { return undefined; }
}

/** The plan's pre-flight checks as the live snapshot shows them now. */
export function recheckPreflight(snap: Snapshot, plan: MigrationPlan, opts: RecheckOptions = {}): PreflightCheck[] {
  // an extension plan: its range checked again (still clear of every range and live address, the API still there)
  if (plan.spec.serviceExtension) return buildExtensionPlan(snap, { add: plan.spec.serviceExtension.add }).preflight;
  // a pod extension plan: its range checked again, less the pools this plan made (planned again after apply)
  if (plan.spec.podExtension) {
    const own = new Set(plan.spec.podExtension.pools.map((p) => `IPPool/${p.name}`));
    const added = plan.spec.podExtension.add.map((a) => parseCidr(a));
    const inAdded = (ip: string) => { const a = tryParseIP(ip); return !!a && added.some((c) => contains(c, a)); };
    const before: Snapshot = {
      ...snap, pools: snap.pools.filter((p) => !own.has(`IPPool/${p.name}`)), ranges: snap.ranges.filter((r) => !own.has(r.source)),
      pods: snap.pods.filter((p) => !p.podIPs.some(inAdded)),
    };
    return buildPodExtensionPlan(before, { add: plan.spec.podExtension.add }).preflight;
  }
  const sc = plan.spec.serviceCIDR;
  const pc = plan.spec.podCIDR;
  const o = plan.spec.options;
  const sans = o?.apiserverCertSANs && o.apiserverCertSANs.length > 0 ? o.apiserverCertSANs : opts.liveCertSANs;
  const rebuilt = buildMigrationPlan(snap, {
    ...(sc ? {
      service: {
        target: sc.target,
        ...(plan.spec.strategy ? { strategy: plan.spec.strategy } : {}),
        ...(o ? { keep: o.keep, tierKey: o.tierKey, tierOrder: o.tierOrder, batchSize: o.batchSize, headroom: o.headroom } : {}),
        ...(sans ? { apiserverCertSANs: sans } : {}),
        ...(o?.clusterDNS !== undefined ? { clusterDNS: o.clusterDNS } : {}),
        ...(o?.nodePortCover !== undefined ? { nodePortCover: o.nodePortCover } : {}),
        ...(o?.restartWorkloads ? { restartWorkloads: o.restartWorkloads } : {}),
        ...(sc.restarts ? { parallel: sc.restarts.parallel, critical: sc.restarts.critical } : {}),
      },
    } : {}),
    ...(pc ? {
      pod: {
        target: pc.to,
        ipam: pc.ipam,
        parallel: pc.restarts.parallel,
        critical: pc.restarts.critical,
        // the path's own options, as its section recorded them
        ...podPath(pc.ipam).recordedOptions(pc),
        // a Pod-only plan records no headroom: the least one (NEW holds today's nodes) judges only what changed
        headroom: o?.headroom ?? 1,
      },
    } : {}),
  });
  return [
    ...rebuilt.preflight,
    ...barePodCheck(pc?.barePodNamespaces, rebuilt.spec.podCIDR?.barePodNamespaces, 'spec.podCIDR.barePodNamespaces'),
    ...barePodCheck(sc?.restarts?.barePodNamespaces, pc ? undefined : rebuilt.spec.serviceCIDR?.restarts?.barePodNamespaces, 'spec.serviceCIDR.restarts.barePodNamespaces'),
  ];
}

/**
 * Bare pods now in a namespace the plan does not list: the run could not create them again there (it asks, and
 * is granted, create pods only in the plan's namespaces), so apply stops before its first write.
 */
function barePodCheck(planned: readonly string[] | undefined, now: readonly string[] | undefined, field: string): PreflightCheck[] {
  if (planned === undefined || now === undefined) return [];
  const extra = now.filter((ns) => !planned.includes(ns));
  if (extra.length === 0) return [];
  return [{
    id: 'pod-bare-namespaces', status: 'fail',
    message: `bare pods (no controller) now run in namespace(s) ${extra.join(', ')}, which the plan does not list (${field}: ${planned.join(', ') || 'none'})`,
    fix: 'plan again (kube-renumber plan), then grant create pods in the namespaces the new plan lists (kube-renumber rbac PLAN | kubectl apply -f -); or give those pods a controller',
  }];
}

/** The checks that fail now: apply stops before its first write when there is any. */
export function failedNow(checks: readonly PreflightCheck[]): PreflightCheck[] {
  return checks.filter((c) => c.status === 'fail');
}
