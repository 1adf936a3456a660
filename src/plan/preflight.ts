/**
 * Pre-flight checks of a Service CIDR migration. Pure: every input (including the apiserver certificate's
 * SANs, which need a TLS read) is passed in. Each check says pass / warn / fail, what it saw, and the fix.
 * Checks marked `target: true` judge NEW itself: when one fails the target is refused (the CLI exits 2 and
 * prints no plan).
 */
import { addressPlan, nodePodCoverage, type RangeGroup } from '../analyze/addressing.ts';
import { CATALOG, type AvoidRange } from '../analyze/catalog.ts';
import { describeLive, liveIn, liveIndex, type LiveAddress } from '../analyze/live.ts';
import type { Family, Snapshot } from '../cluster/types.ts';
import { parseVersion } from '../cluster/version.ts';
import {
  cidrToRange, contains, familyName, formatCidr, formatIP, NetError, overlaps, parseCidr, parseIP, subtract, tryParseCidr,
  type Cidr,
} from '../net/index.ts';
import { firstAndMore } from '../text.ts';
import {
  assignableCount, currentServiceRanges, firstIP, isKubernetesService, mapServices, parseTarget, serviceKey, type ServiceMapping,
} from './service-mapping.ts';
import type { PreflightCheck } from './check.ts';
import { compatibilityCheck } from './compatibility.ts';
import { distributionPlanner } from './distributions/registry.ts';

import { serviceFloorCheck } from './growth.ts';
export type { CheckStatus, PreflightCheck } from './check.ts';
export { distributionOf } from './distributions/registry.ts';

export interface PreflightOptions {
  target: string | readonly string[];
  strategy?: 'in-place' | 'recreate';
  /** Multiplier on today's moved Service count NEW must hold (default 2). */
  headroom?: number;
  /** IP SANs of the apiserver serving certificate; undefined when not read (offline). */
  apiserverCertSANs?: readonly string[];
  avoid?: readonly AvoidRange[];
  keep?: readonly string[];
  /**
   * --cluster-dns: `none` (the cluster has no cluster DNS) or NS/NAME (the DNS Service the detection cannot find);
   * undefined: detected. `snap.dnsService` is then the operator's choice, `detectedDNS` what detection found.
   */
  clusterDNS?: string;
  detectedDNS?: Snapshot['dnsService'];
  /** The new Pod CIDR of the same plan, when it moves too: the pod range where the cluster ends. */
  podsAfter?: ReadonlyMap<Family, Cidr>;
}

/** The largest service range the apiserver flag accepts: IPv4 /12 (2^20 addresses), IPv6 /108. */
export const SERVICE_RANGE_MAX_SIZE: Readonly<Record<Family, number>> = { 4: 12, 6: 108 };

/** Minor version of a "v1.29.3"-style string. */
export function minorOf(version: string | undefined): number | undefined {
  if (!version) return undefined;
  const v = parseVersion(version);
  return v && v[0] === 1 ? v[1] : undefined;
}

/** Which ServiceCIDR API version a cluster of this minor serves once enabled. */
export function serviceCIDRVersionFor(minor: number): 'v1' | 'v1beta1' | 'v1alpha1' | undefined {
  if (minor >= 33) return 'v1';
  if (minor >= 31) return 'v1beta1';
  if (minor >= 29) return 'v1alpha1';
  return undefined;
}

/** How the plan gets the ServiceCIDR API: already served, enabled at a gate, or impossible. */
export interface ServiceCIDRApiState {
  /** 'served': use it; 'enable': the plan opens with a gate enabling it; 'unknown': offline, apply checks; 'unsupported': stop. */
  state: 'served' | 'enable' | 'unknown' | 'unsupported';
  /** networking.k8s.io/<version> to use. */
  version?: 'v1' | 'v1beta1' | 'v1alpha1';
  minor?: number;
}

export function serviceCIDRApiState(snap: Snapshot): ServiceCIDRApiState {
  const minor = minorOf(snap.kubernetesVersion);
  const fromObjects = snap.serviceCIDRs[0]?.apiVersion?.split('/').pop();
  const served = snap.serviceCIDRApi ?? (fromObjects && ['v1', 'v1beta1', 'v1alpha1'].includes(fromObjects) ? fromObjects : undefined);
  if (served) return { state: 'served', version: served as 'v1', minor };
  const version = minor === undefined ? undefined : serviceCIDRVersionFor(minor);
  if (minor !== undefined && version === undefined) return { state: 'unsupported', minor };
  if (snap.serviceCIDRApi === null) return version ? { state: 'enable', version, minor } : { state: 'unknown', minor };
  // Unknown (offline without evidence).
  if (version === 'v1') return { state: 'unknown', version, minor };
  return version ? { state: 'enable', version, minor } : { state: 'unknown', minor };
}

interface Obstacle {
  cidr: Cidr;
  what: string;
}

/** A ServiceCIDR for NEW (or part of it) added by an earlier run is the target itself, not an obstacle. */
function ownServiceCIDR(g: RangeGroup, target: Map<Family, Cidr>): boolean {
  const t = target.get(g.parsed.family);
  return g.role === 'service' && !!t && contains(t, g.parsed) && g.sources.every((s) => s.startsWith('ServiceCIDR/'));
}

/**
 * Every range NEW must not overlap: the cluster's own ranges (the current service range included; the kOps
 * nonMasqueradeCIDR excepted, NEW belongs inside it), node podCIDRs, catalog entries of severity error or
 * warning, and --avoid ranges. Live addresses (node addresses among them) are checked by `liveHits`.
 */
export function targetObstacles(snap: Snapshot, avoid: readonly AvoidRange[], target: Map<Family, Cidr>): Obstacle[] {
  const out: Obstacle[] = [];
  const ROLE: Record<string, string> = { service: 'the current service range', pod: 'pod range', pool: 'Calico pool', node: 'node network' };
  for (const g of addressPlan(snap)) {
    if (g.role === 'masquerade') continue;
    if (ownServiceCIDR(g, target)) continue;
    out.push({ cidr: g.parsed, what: `${ROLE[g.role] ?? g.role} (${g.sources.join(', ')})` });
  }
  for (const c of nodePodCoverage(snap)) out.push({ cidr: c, what: 'node podCIDRs' });
  // Node addresses are live addresses: overlapHits finds them with every other one (liveHits).
  for (const k of CATALOG) {
    if (k.severity === 'info') continue;
    out.push({ cidr: parseCidr(k.cidr), what: `${k.name}: ${k.reason}` });
  }
  for (const a of avoid) {
    const c = tryParseCidr(a.cidr);
    if (c) out.push({ cidr: c, what: `avoided range (${a.from})${a.reason ? `: ${a.reason}` : ''}` });
  }
  // Ranges the platform keeps for itself (OpenShift's OVN-Kubernetes subnets, ...): no target may overlap them.
  for (const r of snap.platform?.reserved ?? []) {
    const c = tryParseCidr(r.cidr);
    if (c) out.push({ cidr: c, what: `reserved by ${snap.platform!.title}: ${r.reason}` });
  }
  return out;
}

/**
 * "NEW contains ADDRESS, the ClusterIP of ns/name (and N more live addresses)" for each range of NEW that holds a
 * live address (a ClusterIP, a pod IP, a node address: occupied means configured or live), found by binary search
 * in the snapshot's sorted addresses. The address named is the first one outside every range in `known` (the
 * obstacles NEW overlaps, reported beside it), else the first one. ClusterIPs inside a ServiceCIDR for NEW that an
 * earlier run added are NEW's own and do not count.
 */
export function liveHits(snap: Snapshot, target: Map<Family, Cidr>, known: readonly Cidr[] = []): string[] {
  const own = addressPlan(snap).filter((g) => ownServiceCIDR(g, target)).map((g) => g.parsed);
  const index = liveIndex(snap);
  const hits: string[] = [];
  for (const t of target.values()) {
    const mine = own.filter((c) => c.family === t.family);
    const opts = mine.length > 0 ? { skip: (a: LiveAddress) => a.kind === 'cluster-ip' && mine.some((c) => contains(c, a)) } : {};
    const { count, first } = liveIn(index, cidrToRange(t), opts);
    if (!first[0]) continue;
    let named = first[0];
    for (const r of subtract(t, known.filter((k) => k.family === t.family))) {
      const outside = liveIn(index, r, opts).first[0];
      if (outside) { named = outside; break; }
    }
    hits.push(`${formatCidr(t)} contains ${describeLive(named)}${count > 1 ? ` (and ${count - 1} more live address${count > 2 ? 'es' : ''})` : ''}`);
  }
  return hits;
}

/**
 * Why NEW is in use: the live addresses it contains (liveHits, first), then "NEW overlaps X (what)" for every
 * obstacle NEW overlaps; an obstacle inside another one that is hit, or equal to an earlier one, is not repeated.
 */
export function overlapHits(snap: Snapshot, avoid: readonly AvoidRange[], target: Map<Family, Cidr>): string[] {
  const obstacles = targetObstacles(snap, avoid, target);
  const ranges: string[] = [];
  const known: Cidr[] = [];
  for (const t of target.values()) {
    const hit = obstacles.filter((o) => o.cidr.family === t.family && overlaps(t, o.cidr));
    const shown = hit.filter((o, i) => !hit.some((p, j) => j !== i && contains(p.cidr, o.cidr) && (p.cidr.prefix < o.cidr.prefix || j < i)));
    for (const o of shown) ranges.push(`${formatCidr(t)} overlaps ${formatCidr(o.cidr)} (${o.what})`);
    known.push(...shown.map((o) => o.cidr));
  }
  return [...liveHits(snap, target, known), ...ranges];
}

/** Checks that judge NEW alone (parse, family, overlaps). Returns the parsed target when it parses. */
export function targetChecks(snap: Snapshot, opts: PreflightOptions): { checks: PreflightCheck[]; target?: Map<Family, Cidr> } {
  const checks: PreflightCheck[] = [];
  let target: Map<Family, Cidr>;
  try {
    target = parseTarget(opts.target);
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
    checks.push({ id: 'target-parse', status: 'fail', target: true, message: e.message, fix: 'give NEW as address/prefix, e.g. --service-cidr 172.24.0.0/15 (one CIDR per family, comma-separated for dual-stack)' });
    return { checks };
  }
  const newText = [...target.values()].map(formatCidr).join(',');
  checks.push({ id: 'target-parse', status: 'pass', target: true, message: `new Service CIDR ${newText}`, fix: '' });

  checks.push(targetFamilyCheck(snap, target, newText));
  checks.push(targetConflictsCheck(snap, opts.avoid ?? [], target, newText));
  const defaults = targetDefaultsCheck(target, newText);
  if (defaults) checks.push(defaults);
  return { checks, target };
}

/** Check `target-family`: NEW may only name families the cluster's service ranges use. */
function targetFamilyCheck(snap: Snapshot, target: Map<Family, Cidr>, newText: string): PreflightCheck {
  const current = currentServiceRanges(snap, target);
  const families = new Set<Family>([...current.map((c) => c.family), ...snap.services.flatMap((s) => s.clusterIPs.map((a) => (a.includes(':') ? 6 : 4) as Family))]);
  const extra = [...target.keys()].filter((f) => families.size > 0 && !families.has(f));
  if (extra.length > 0) {
    return {
      id: 'target-family', status: 'fail', target: true,
      message: `${newText} adds ${extra.map(familyName).join(' and ')}, which the cluster's service range does not use (${current.map(formatCidr).join(', ') || 'none known'})`,
      fix: 'renumbering keeps the families the cluster has: give one CIDR per family the cluster uses (converting to dual-stack is a different change)',
    };
  }
  const kept = [...families].filter((f) => !target.has(f));
  return {
    id: 'target-family', status: 'pass', target: true,
    message: kept.length > 0
      ? `${newText} replaces the ${[...target.keys()].map(familyName).join('/')} range; the ${kept.map(familyName).join('/')} range and addresses stay as they are`
      : `${newText} matches the cluster's address families`,
    fix: '',
  };
}

/**
 * Check `target-conflicts`: NEW overlaps nothing the cluster uses or must reach (an obstacle inside another one
 * that is hit, e.g. a node address inside the node network, is not repeated).
 */
function targetConflictsCheck(snap: Snapshot, avoid: readonly AvoidRange[], target: Map<Family, Cidr>, newText: string): PreflightCheck {
  const hits = overlapHits(snap, avoid, target);
  return hits.length > 0
    ? {
      id: 'target-conflicts', status: 'fail', target: true,
      message: firstAndMore(hits, 4),
      fix: 'choose a range that overlaps nothing the cluster uses or must reach: `kube-renumber suggest --for services` finds one',
    }
    : {
      id: 'target-conflicts', status: 'pass', target: true,
      message: `${newText} overlaps no cluster range, well-known network or --avoid range and holds no live address (ClusterIP, pod IP, node address)`, fix: '',
    };
}

/** Check `target-defaults` (tool defaults, catalog info): not refused, but other clusters built on defaults collide. */
function targetDefaultsCheck(target: Map<Family, Cidr>, newText: string): PreflightCheck | undefined {
  const defaults = [...target.values()].flatMap((t) => CATALOG.filter((k) => k.severity === 'info' && overlaps(t, parseCidr(k.cidr))).map((k) => `${k.cidr} (${k.name})`));
  if (defaults.length === 0) return undefined;
  return {
    id: 'target-defaults', status: 'warn', target: false,
    message: `${newText} overlaps a tool's default range: ${defaults.join(', ')}; other clusters built on defaults use it too`,
    fix: 'fine for an isolated cluster; pick another range if this cluster will be peered or joined by a VPN to others',
  };
}

/** The size check: NEW holds today's moved Services times headroom, and the apiserver accepts its size. */
export function sizeCheck(target: Map<Family, Cidr>, mapping: readonly ServiceMapping[], headroom: number): PreflightCheck {
  const problems: string[] = [];
  const fine: string[] = [];
  for (const [f, t] of target) {
    if (t.prefix < SERVICE_RANGE_MAX_SIZE[f]) {
      problems.push(`${formatCidr(t)} is larger than the apiserver accepts for --service-cluster-ip-range (/${SERVICE_RANGE_MAX_SIZE[f]} at most for ${familyName(f)})`);
      continue;
    }
    // Addresses that must live in NEW: every ClusterIP of this family except those kept by policy
    // (LoadBalancer, --keep): moved ones (default/kubernetes included), those already there, those NEW had no room for.
    let used = 0;
    for (const m of mapping) {
      if (m.action === 'skip' || m.keptBecause === 'load-balancer' || m.keptBecause === 'keep-flag') continue;
      for (const a of m.from) {
        try { if (parseIP(a).family === f) used++; } catch { /* not an address */ }
      }
    }
    const need = BigInt(Math.ceil(Math.max(used, 1) * headroom));
    const have = assignableCount(t) + 1n; // + the first IP, which default/kubernetes takes
    const line = `${formatCidr(t)}: ${have} usable addresses for ${used} Service IPs (x${headroom} headroom = ${need})`;
    if (have < need) problems.push(line); else fine.push(line);
  }
  return problems.length > 0
    ? { id: 'target-size', status: 'fail', target: true, message: problems.join('; '), fix: 'choose a larger range (`kube-renumber suggest --for services`), or lower --headroom (1 = no room to grow)' }
    : { id: 'target-size', status: 'pass', target: true, message: fine.join('; '), fix: '' };
}

/** The certificate fix, per distribution. */
export function certFix(snap: Snapshot, newFirst: string, oldFirst: string | undefined): string {
  const both = [newFirst, oldFirst].filter(Boolean).join(',');
  return distributionPlanner(snap).certFix(snap, both);
}

/**
 * Check `service-range`, only when the current service range of a family NEW moves is not read from the cluster's
 * configuration: warn when it was inferred from the ClusterIPs (the evidence is stated), fail when there is none
 * (nothing to move from: no ServiceCIDR to drain, no flag to change, nothing to roll back to).
 */
export function serviceRangeCheck(snap: Snapshot, target: Map<Family, Cidr>): PreflightCheck | undefined {
  const current = currentServiceRanges(snap);
  const unknown = [...target.keys()].filter((f) => !current.some((c) => c.family === f));
  if (unknown.length > 0) {
    const why = unknown.map((f) => snap.serviceRangeInference?.find((i) => i.family === f && !i.cidr)?.evidence
      ?? `no ${familyName(f)} service range is configured where it can be read, and no Service has a ${familyName(f)} ClusterIP`);
    // A refusal (exit 2, no plan printed): a plan with no range to move from would be one apply cannot accept.
    return {
      id: 'service-range', status: 'fail', target: true,
      message: `the current service range is unknown: ${why.join('; ')}; nothing can be planned from it (no ServiceCIDR to drain, no --service-cluster-ip-range to change, no range to roll back to)`,
      fix: 'include what names it in the input: the kube-apiserver pods (--service-cluster-ip-range), ServiceCIDR objects (1.29+), the kubeadm-config ConfigMap or the kOps Cluster spec, '
        + 'and Service default/kubernetes with the DNS Service (the range is inferred from their ClusterIPs when nothing names it)',
    };
  }
  const inferred = (snap.serviceRangeInference ?? []).filter((i) => i.cidr && target.has(i.family));
  if (inferred.length === 0) return undefined;
  return {
    id: 'service-range', status: 'warn',
    message: inferred.map((i) => `the current service range ${i.cidr} is ${i.evidence}`).join('; ')
      + ': it is the smallest range holding them, the configured one may be larger',
    fix: 'check it against the cluster\'s own setting (k3s/RKE2 --service-cidr, the managed platform\'s service range, OpenShift serviceNetwork) before apply; '
      + 'give the apiserver flags, ServiceCIDR objects or the distribution config in the input to read it instead',
  };
}

/** Every check other than the target ones. */
export function clusterChecks(snap: Snapshot, target: Map<Family, Cidr>, mapping: readonly ServiceMapping[], opts: PreflightOptions): PreflightCheck[] {
  const checks: PreflightCheck[] = [];
  const range = serviceRangeCheck(snap, target);
  if (range) checks.push(range);
  checks.push(sizeCheck(target, mapping, opts.headroom ?? 2));
  checks.push(serviceFloorCheck(snap, target));
  checks.push(serviceCIDRApiCheck(snap));
  checks.push(apiserverCertCheck(snap, target, mapping, opts));
  checks.push(admissionCheck(snap, mapping, opts));
  checks.push(apiserversAgreeCheck(snap));
  const keep = keepCheck(snap, opts);
  if (keep) checks.push(keep);
  checks.push(clusterDNSCheck(snap, mapping, opts));
  // The distribution's own configuration, when it is not in the input.
  const unread = distroConfigCheck(snap);
  if (unread) checks.push(unread);
  // The platform's own checks of the target (kOps: nonMasqueradeCIDR).
  checks.push(...distributionPlanner(snap).serviceChecks?.(snap, target, opts.podsAfter) ?? []);
  const traces = inProgressCheck(snap);
  if (traces) checks.push(traces);
  return checks;
}

/** Check `servicecidr-api`: how the plan gets the ServiceCIDR API (served, enabled at a gate, unknown offline, or none). */
function serviceCIDRApiCheck(snap: Snapshot): PreflightCheck {
  const api = serviceCIDRApiState(snap);
  const v = snap.kubernetesVersion ?? 'unknown version';
  switch (api.state) {
    case 'served':
      return { id: 'servicecidr-api', status: 'pass', message: `ServiceCIDR API served (networking.k8s.io/${api.version}) on ${v}`, fix: '' };
    case 'enable':
      return {
        id: 'servicecidr-api', status: 'warn',
        message: `ServiceCIDR API not served on ${v}: the plan opens with a gate enabling networking.k8s.io/${api.version}`
          + (api.version === 'v1' ? '' : ' (feature gate MultiCIDRServiceAllocator and --runtime-config)'),
        fix: api.version === 'v1'
          ? 'enable it: --runtime-config=networking.k8s.io/v1=true on every kube-apiserver (it is on by default from 1.33)'
          : `enable feature gate MultiCIDRServiceAllocator=true on kube-apiserver and kube-controller-manager and --runtime-config=networking.k8s.io/${api.version}=true (see step enable-servicecidr-api)`,
      };
    case 'unknown':
      return {
        id: 'servicecidr-api', status: 'warn',
        message: api.version === 'v1'
          ? `ServiceCIDR API not checked (offline): expected, networking.k8s.io/v1 is on by default on ${v}`
          : 'ServiceCIDR API not checked (offline) and the Kubernetes version is unknown',
        fix: 'plan against the live cluster, or apply checks it before the first step',
      };
    case 'unsupported':
      return {
        id: 'servicecidr-api', status: 'fail',
        message: `Kubernetes ${v} has no ServiceCIDR API (it arrived as v1alpha1 in 1.29): the service range lives only in the apiserver flag, `
          + 'and the allocator keeps a bitmap in a RangeAllocation object in etcd that goes stale when the range changes ("range is full"); '
          + 'clusters moved that way have had to patch kube-proxy and the apiserver and delete that object with kube-controller-manager stopped',
        fix: 'upgrade to 1.29+ (1.33+ serves networking.k8s.io/v1 by default), then plan again; kube-renumber does not migrate without the ServiceCIDR API',
      };
  }
}

/** Check `apiserver-cert-san`: the apiserver serving certificate carries the new default/kubernetes IP. */
function apiserverCertCheck(snap: Snapshot, target: Map<Family, Cidr>, mapping: readonly ServiceMapping[], opts: PreflightOptions): PreflightCheck {
  const kube = mapping.find((m) => m.isKubernetes);
  const primary = kube?.to[0] ?? (() => {
    const t = [...target.values()][0]!;
    return formatIP(firstIP(t));
  })();
  const oldFirst = kube?.from[0];
  const newFirsts = [...target.values()].map((t) => formatIP(firstIP(t)));
  const wanted = kube ? kube.to.filter((a, i) => a !== kube.from[i]) : newFirsts.slice(0, 1);
  if (opts.apiserverCertSANs === undefined) {
    return {
      id: 'apiserver-cert-san', status: 'warn',
      message: `not checked (offline): the apiserver serving certificate must carry ${wanted.join(', ') || primary} (the new default/kubernetes IP) before pods use it`,
      fix: certFix(snap, wanted.join(',') || primary, oldFirst),
    };
  }
  const sans = new Set(opts.apiserverCertSANs.map((s) => { try { return formatIP(parseIP(s)); } catch { return s; } }));
  const missing = wanted.filter((a) => !sans.has(a));
  return missing.length === 0
    ? { id: 'apiserver-cert-san', status: 'pass', message: `the apiserver serving certificate carries ${wanted.join(', ') || primary}`, fix: '' }
    : {
      id: 'apiserver-cert-san', status: 'fail',
      message: `the apiserver serving certificate lacks ${missing.join(', ')}: pods reaching default/kubernetes at its new IP would fail TLS verification (x509)`,
      fix: certFix(snap, missing.join(','), oldFirst),
    };
}

/** Check `admission`: DenyServiceExternalIPs and the strategy. */
function admissionCheck(snap: Snapshot, mapping: readonly ServiceMapping[], opts: PreflightOptions): PreflightCheck {
  const plugins = new Set(snap.apiservers.flatMap((a) => a.admissionPlugins ?? []));
  const moved = new Set(mapping.filter((m) => m.action === 'move' && !m.isKubernetes).map(serviceKey));
  const withExternal = snap.services.filter((s) => moved.has(serviceKey(s)) && s.externalIPs.length > 0).map(serviceKey);
  if (!plugins.has('DenyServiceExternalIPs')) {
    return {
      id: 'admission', status: 'pass',
      message: `no admission plugin known to reject the changes (no strategy needs spec.externalIPs)${snap.apiservers.length === 0 ? '; apiserver flags not seen' : ''}; validating webhooks on Services are checked by apply --dry-run=server`,
      fix: '',
    };
  }
  if (opts.strategy === 'recreate' && withExternal.length > 0) {
    return {
      id: 'admission', status: 'fail',
      message: `DenyServiceExternalIPs is enabled and strategy recreate would create ${firstAndMore(withExternal, 3)} again with spec.externalIPs, which it rejects`,
      fix: 'use --strategy in-place (updates keep existing externalIPs), or --keep these Services',
    };
  }
  return {
    id: 'admission', status: 'pass',
    message: 'DenyServiceExternalIPs is enabled; no step sets spec.externalIPs (in-place keeps existing ones unchanged, bridges carry none)',
    fix: '',
  };
}

/** Check `apiservers-agree`: HA apiservers must agree on the range. */
function apiserversAgreeCheck(snap: Snapshot): PreflightCheck {
  const ranges = new Map<string, string[]>();
  for (const a of snap.apiservers) {
    const k = (a.serviceClusterIPRange ?? []).join(',') || '(unset)';
    ranges.set(k, [...(ranges.get(k) ?? []), a.pod]);
  }
  if (snap.apiservers.length === 0) {
    return {
      id: 'apiservers-agree', status: 'warn',
      message: 'no kube-apiserver pods seen (managed control plane, or not readable): the apiserver restart gate cannot be checked from their flags',
      fix: 'a managed control plane (EKS, GKE, AKS) cannot change its service range; elsewhere grant read access to kube-system pods',
    };
  }
  if (ranges.size > 1) {
    return {
      id: 'apiservers-agree', status: 'fail',
      message: `kube-apiservers disagree on --service-cluster-ip-range: ${[...ranges].map(([r, pods]) => `${r} (${firstAndMore(pods, 2)})`).join(' vs ')}`,
      fix: 'finish (or undo) the rollout that changed the flag so every apiserver has the same range, then plan again',
    };
  }
  return {
    id: 'apiservers-agree', status: 'pass',
    message: `${snap.apiservers.length} kube-apiserver(s), all with --service-cluster-ip-range=${[...ranges.keys()][0]}`, fix: '',
  };
}

/** Check `keep`: every --keep names a Service (none without --keep). */
function keepCheck(snap: Snapshot, opts: PreflightOptions): PreflightCheck | undefined {
  if ((opts.keep ?? []).length === 0) return undefined;
  const known = new Set(snap.services.map(serviceKey));
  const bad = (opts.keep ?? []).filter((k) => !/^[^/]+\/[^/]+$/.test(k) || !known.has(k));
  const kube2 = (opts.keep ?? []).filter((k) => isKubernetesService({ namespace: k.split('/')[0] ?? '', name: k.split('/')[1] ?? '' }));
  if (bad.length > 0) return { id: 'keep', status: 'fail', message: `--keep names no Service: ${bad.join(', ')}`, fix: 'give existing Services as namespace/name' };
  if (kube2.length > 0) return { id: 'keep', status: 'warn', message: '--keep default/kubernetes is ignored: its IP is always the first IP of the apiserver flag range', fix: 'remove it from --keep' };
  return { id: 'keep', status: 'pass', message: `${opts.keep!.length} Service(s) kept by --keep`, fix: '' };
}

/** Check `in-progress`: an earlier run left traces (none when it did not). */
function inProgressCheck(snap: Snapshot): PreflightCheck | undefined {
  const ours = snap.serviceCIDRs.filter((s) => s.name.startsWith('kube-renumber-'));
  const draining = snap.serviceCIDRs.filter((s) => s.name === 'kubernetes' && s.deleting);
  if (ours.length === 0 && draining.length === 0) return undefined;
  return {
    id: 'in-progress', status: 'warn',
    message: `a migration seems under way: ${[...ours.map((s) => `ServiceCIDR/${s.name}`), ...draining.map(() => 'ServiceCIDR/kubernetes is being deleted')].join(', ')}`,
    fix: 'continue it with `kube-renumber resume`; a new plan maps from the state the snapshot shows',
  };
}

/**
 * A warning when the cluster's distribution is known but its configuration is not in the input: a kOps
 * cluster (found by its node labels or kops-controller) without its Cluster spec, which lives in the kOps
 * state store and never in the API; a kubeadm cluster without its ClusterConfiguration. The plan still
 * names the fields to change (patches); this check says what was not read and how to provide it.
 */
export function distroConfigCheck(snap: Snapshot): PreflightCheck | undefined {
  return distributionPlanner(snap).configCheck(snap);
}

/**
 * All checks, target ones first. Without a parseable target of the cluster's families only the target
 * checks are returned. `mapping` defaults to mapServices(snap, {target, keep, tierKey}).
 */
export function runPreflight(snap: Snapshot, opts: PreflightOptions & { tierKey?: string }, mapping?: readonly ServiceMapping[]): PreflightCheck[] {
  const t = targetChecks(snap, opts);
  if (!t.target || t.checks.some((c) => c.status === 'fail' && (c.id === 'target-parse' || c.id === 'target-family'))) return t.checks;
  const range = serviceRangeCheck(snap, t.target);
  if (range?.status === 'fail') return [...t.checks, range];
  const version = compatibilityCheck(snap.kubernetesVersion, 'service');
  if (version?.status === 'fail') return [...t.checks, version];
  const m = mapping ?? mapServices(snap, { target: opts.target, keep: opts.keep, tierKey: opts.tierKey });
  return [...t.checks, ...(version ? [version] : []), ...clusterChecks(snap, t.target, m, opts)];
}

/** The failed target checks: non-empty means the target is refused. */
export function refusals(checks: readonly PreflightCheck[]): PreflightCheck[] {
  return checks.filter((c) => c.target && c.status === 'fail');
}

/**
 * Check `cluster-dns`: the cluster DNS Service as detected, or as --cluster-dns names it (`none`: the cluster has
 * none; NS/NAME: one the detection cannot find). `apply` runs it again on the live read, so a DNS Service that
 * appeared since a `none` plan, or a named one that is gone, stops the run before its first write.
 */
function clusterDNSCheck(snap: Snapshot, mapping: readonly ServiceMapping[], opts: PreflightOptions): PreflightCheck {
  const dns = mapping.find((m) => m.isDNS);
  const moves = mapping.filter((m) => m.action === 'move' && !m.isKubernetes).length;
  if (opts.clusterDNS === 'none') {
    const found = opts.detectedDNS;
    return found
      ? {
        id: 'cluster-dns', status: 'fail',
        message: `--cluster-dns none, but ${found.namespace}/${found.name} at ${found.clusterIPs.join(',')} is the cluster DNS (found by ${found.foundBy}): moved as any other Service, its clients would lose it with no kubelet clusterDNS gate`,
        fix: `plan again without --cluster-dns none (or with --cluster-dns ${found.namespace}/${found.name})`,
      }
      : { id: 'cluster-dns', status: 'pass', message: 'no cluster DNS (--cluster-dns none): no DNS step is planned, and no kubelet clusterDNS changes', fix: '' };
  }
  if (opts.clusterDNS !== undefined && !dns) {
    return {
      id: 'cluster-dns', status: 'fail',
      message: `--cluster-dns ${opts.clusterDNS} names no Service with a ClusterIP`,
      fix: 'name the cluster DNS Service as namespace/name (kubectl get svc -A), or --cluster-dns none when the cluster has none',
    };
  }
  if (!snap.dnsService || !dns) {
    return {
      id: 'cluster-dns', status: moves > 0 ? 'fail' : 'warn',
      message: 'cluster DNS Service not found (no Service at the kubelets\' clusterDNS, none of the well-known DNS Services such as kube-system/kube-dns or coredns selecting k8s-app=kube-dns)'
        + (moves > 0
          ? `: the plan moves ${moves} Service(s), and the DNS Service among them would be moved like any other, its bridge removed with no kubelet clusterDNS gate before it, and every pod's DNS lost`
          : ': no DNS step is planned'),
      fix: 'include the kubelet configuration (kubeadm kubelet-config ConfigMap, kOps spec: its clusterDNS names the DNS Service) and the DNS Service itself in the input; '
        + 'or name it with --cluster-dns NS/NAME, or say the cluster has none with --cluster-dns none',
    };
  }
  const local = snap.clusterDNS.length > 0 && !snap.clusterDNS.some((a) => dns.from.includes(a));
  return {
    id: 'cluster-dns', status: 'pass',
    message: `cluster DNS is ${serviceKey(dns)} at ${dns.from.join(',')} (found by ${snap.dnsService.foundBy})`
      + (dns.action === 'move' ? ` → ${dns.to.join(',')}` : ` (${dns.action}: ${dns.reason})`)
      + (local ? `; kubelets use ${snap.clusterDNS.join(',')} (a node-local cache forwarding to it)` : ''),
    fix: '',
  };
}

/**
 * The snapshot as --cluster-dns sees it: `none`, no DNS Service; NS/NAME, that Service (when it exists with a
 * ClusterIP; else none, and check cluster-dns fails); undefined, as detected. Pure.
 */
export function withClusterDNS(snap: Snapshot, clusterDNS: string | undefined): Snapshot {
  if (clusterDNS === undefined) return snap;
  if (clusterDNS === 'none') return { ...snap, dnsService: undefined };
  const [namespace, name] = clusterDNS.split('/');
  const s = snap.services.find((x) => x.namespace === namespace && x.name === name && !x.headless && x.clusterIPs.length > 0);
  return { ...snap, dnsService: s ? { namespace: s.namespace, name: s.name, clusterIPs: [...s.clusterIPs], foundBy: `--cluster-dns ${clusterDNS}` } : undefined };
}
