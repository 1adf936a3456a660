/**
 * kOps: the Cluster spec (kops edit cluster, or the manifest a pipeline applies with kops replace) holds the
 * service and pod ranges, the DNS IP, nonMasqueradeCIDR and the certificate SANs; the control plane rolls to
 * take them. The spec lives in the kOps state store, so a live read never has it: without it every field is
 * named for both layouts.
 */
import { addressPlan } from '../../analyze/addressing.ts';
import { clusterCIDRs } from '../../analyze/capacity.ts';
import { suggestPair, type PairSuggestion } from '../../analyze/suggest.ts';
import type { Family, Snapshot } from '../../cluster/types.ts';
import { bits, contains, formatCidr, overlaps, parseCidr, supernet, tryParseCidr, type Cidr } from '../../net/index.ts';
import { currentServiceRanges } from '../../plan/service-mapping.ts';
import { at, covering, dump } from '../../plan/distributions/common.ts';
import { DUAL_WRITE_GATE, parseFeatureGates } from '../../plan/allocator-dual-write.ts';
import type { PreflightCheck } from '../../plan/check.ts';
import type { DistributionPlanner, DistroPatch, PatchContext, PodPatchInputs } from '../../plan/distributions/types.ts';

function kopsPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const k = snap.kops;
  const out: DistroPatch[] = [];
  const edit = KOPS_EDIT;
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    const gates = ctx.enableApi === 'v1' ? undefined : { MultiCIDRServiceAllocator: 'true' };
    const after: Record<string, unknown> = {
      kubeAPIServer: { ...(gates ? { featureGates: gates } : {}), runtimeConfig: { [gv]: 'true' } },
      ...(gates ? { kubeControllerManager: { featureGates: gates }, kubelet: { featureGates: gates } } : {}),
    };
    out.push({
      id: 'kops-enable-servicecidr-api', distribution: 'kops', gate: 'enable-servicecidr-api', target: edit,
      description: `serve ${gv} (the keys kOps passes to kube-apiserver, kube-controller-manager and kubelet); merge into any featureGates/runtimeConfig already set`,
      before: '# spec.kubeAPIServer.featureGates / runtimeConfig without these keys\n',
      after: dump({ spec: after }),
    });
  }
  if (!k) {
    out.push(kopsServiceRangeUnread(snap, ctx));
    return out;
  }
  const net = k.layout === 'legacy' ? 'spec' : 'spec.networking';
  const sansField = k.layout === 'legacy' ? 'additionalSans' : 'additionalSANs';
  const sansPath = k.layout === 'legacy' ? 'spec' : 'spec.api';
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  const netBefore: Record<string, unknown> = { serviceClusterIPRange: k.serviceClusterIPRange ?? ctx.oldFlag.join(',') };
  const netAfter: Record<string, unknown> = { serviceClusterIPRange: ctx.newFlag[0] };
  if (ctx.nonMasqueradeCIDR !== undefined && k.nonMasqueradeCIDR) {
    netBefore.nonMasqueradeCIDR = k.nonMasqueradeCIDR;
    // '' (none fits) is refused by the failed check kops-non-masquerade: the line is left out, never a placeholder
    if (ctx.nonMasqueradeCIDR) netAfter.nonMasqueradeCIDR = ctx.nonMasqueradeCIDR;
    else delete netBefore.nonMasqueradeCIDR;
  }
  Object.assign(before, at(net, netBefore));
  Object.assign(after, at(net, netAfter));
  const merge = (dst: Record<string, any>, src: Record<string, any>) => {
    for (const [key, v] of Object.entries(src)) {
      if (v && typeof v === 'object' && !Array.isArray(v) && dst[key] && typeof dst[key] === 'object') merge(dst[key], v);
      else dst[key] = v;
    }
  };
  if (ctx.newDNS) {
    merge(before.spec as any, { kubeDNS: { serverIP: k.kubeDNSServerIP ?? `${ctx.oldDNS} # (unset: kOps derives it from the range)` } });
    merge(after.spec as any, { kubeDNS: { serverIP: ctx.newDNS } });
    if (k.kubeletClusterDNS) {
      merge(before.spec as any, { kubelet: { clusterDNS: k.kubeletClusterDNS } });
      merge(after.spec as any, { kubelet: { clusterDNS: k.kubeletClusterDNS.split(',').map((s) => (s.trim() === ctx.oldDNS ? ctx.newDNS : s.trim())).join(',') } });
    }
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((s): s is string => !!s);
  if (sans.length > 0) {
    merge(before, at(sansPath, { [sansField]: ['# ...existing entries'] }));
    merge(after, at(sansPath, { [sansField]: ['# ...existing entries', ...sans] }));
  }
  const fg = ctx.apiserverFeatureGates;
  if (fg) {
    merge(before.spec as any, { kubeAPIServer: { featureGates: Object.fromEntries([...parseFeatureGates(fg.before)].map(([g, v]) => [g, String(v)])) } });
    merge(after.spec as any, { kubeAPIServer: { featureGates: Object.fromEntries([...parseFeatureGates(fg.after)].map(([g, v]) => [g, String(v)])) } });
  }
  out.push({
    id: 'kops-service-range', distribution: 'kops', gate: 'restart-apiservers', target: edit,
    description: 'the new service range, the DNS Service IP (kOps validation requires it inside serviceClusterIPRange and kubelet.clusterDNS equal to it), '
      + 'and both default/kubernetes IPs as certificate SANs (the old one serves pods that still have it until they restart)'
      + (fg ? `; kubeAPIServer.featureGates ${DUAL_WRITE_GATE}: "true" in the same edit (${fg.why})` : ''),
    before: dump(before).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
    after: dump(after).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
  });
  return out;
}


/** What a kOps patch edits. */
export const KOPS_EDIT = 'kOps Cluster spec (kops edit cluster, or the cluster manifest your pipeline applies with kops replace)';

/** The first lines of a kOps patch written without the Cluster spec: which layouts the fields may sit in. */
export const KOPS_UNREAD_HEADER = '# kOps Cluster spec not read (pre-flight kops-spec): change these fields where your spec has them.\n'
  + '# Networking layout (kops.k8s.io/v1alpha3): podCIDR, serviceClusterIPRange and nonMasqueradeCIDR under spec.networking, SANs in spec.api.additionalSANs;\n'
  + '# legacy layout (kops.k8s.io/v1alpha2): the same fields directly under spec, SANs in spec.additionalSans.\n';

/**
 * kops-service-range without the Cluster spec: every field by name, in the networking layout with the legacy
 * place beside it, and what is not known (whether kubeDNS.serverIP and kubelet.clusterDNS are set, the
 * current nonMasqueradeCIDR) said as such.
 */
function kopsServiceRangeUnread(snap: Snapshot, ctx: PatchContext): DistroPatch {
  const newSvc = ctx.newFlag[0]!;
  const nm = ctx.nonMasqueradeCIDR;
  const b: string[] = ['spec:', '  networking:                # legacy layout: these fields directly under spec', `    serviceClusterIPRange: ${ctx.oldFlag.join(',')}`,
    '    nonMasqueradeCIDR: (not read; kOps default 100.64.0.0/10)'];
  const a: string[] = ['spec:', '  networking:', `    serviceClusterIPRange: ${newSvc}`,
    // none fits: the failed check kops-non-masquerade refuses the plan, naming the spec or the pair it needs
    ...(nm ? [`    nonMasqueradeCIDR: ${nm}   # only if the current one does not contain ${newSvc} and the pod range`] : [])];
  if (ctx.newDNS) {
    b.push('  kubeDNS:', `    serverIP: ${ctx.oldDNS}      # when set (kOps derives it from the range otherwise)`, '  kubelet:', `    clusterDNS: ${ctx.oldDNS}    # when set`);
    a.push('  kubeDNS:', `    serverIP: ${ctx.newDNS}`, '  kubelet:', `    clusterDNS: ${ctx.newDNS}    # when set (other entries unchanged)`);
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((x): x is string => !!x);
  if (sans.length > 0) {
    b.push('  api:                       # legacy layout: spec.additionalSans', '    additionalSANs:', '      # ...existing entries');
    a.push('  api:', '    additionalSANs:', '      # ...existing entries', ...sans.map((x) => `      - ${x}`));
  }
  const fg = ctx.apiserverFeatureGates;
  if (fg) {
    b.push('  kubeAPIServer:', '    featureGates:', ...[...parseFeatureGates(fg.before)].map(([g, v]) => `      ${g}: "${v}"`), '      # ...existing entries');
    a.push('  kubeAPIServer:', '    featureGates:', ...[...parseFeatureGates(fg.after)].map(([g, v]) => `      ${g}: "${v}"`), '      # ...existing entries');
  }
  return {
    id: 'kops-service-range', distribution: 'kops', gate: 'restart-apiservers', target: KOPS_EDIT,
    description: 'the new service range (spec.networking.serviceClusterIPRange, legacy layout spec.serviceClusterIPRange), a nonMasqueradeCIDR that holds it, '
      + 'the DNS Service IP (kOps validation requires kubeDNS.serverIP inside serviceClusterIPRange and kubelet.clusterDNS equal to it), '
      + 'and both default/kubernetes IPs as certificate SANs; the Cluster spec was not read, so the fields are named for both layouts',
    before: KOPS_UNREAD_HEADER + b.join('\n') + '\n',
    after: KOPS_UNREAD_HEADER + a.join('\n') + '\n',
  };
}

/**
 * The kOps patches of a Pod CIDR migration. With the Cluster spec: its fields in its layout. Without it (the
 * spec lives in the kOps state store, so a live read never has it): every field by name in the networking
 * layout with the legacy place beside it, and what was not read said as such.
 */
function kopsPodPatches(inp: PodPatchInputs): DistroPatch[] {
  const { snap, spec, finalGate, stopGate, oldCC, allocAfter } = inp;
  const out: DistroPatch[] = [];
  const k = snap.kops;
  const to = spec.to.join(',');
  const edit = KOPS_EDIT;
  const header = k ? '' : KOPS_UNREAD_HEADER;
  const newCidrs = spec.to.map((t) => parseCidr(t));
  if (stopGate) {
    out.push({
      id: 'kops-stop-allocating', distribution: 'kops', gate: stopGate, target: edit, description: 'kube-controller-manager stops allocating node podCIDRs',
      before: `${header}spec:\n  kubeControllerManager:\n    allocateNodeCIDRs: ${k?.allocateNodeCIDRs ?? true}${k?.allocateNodeCIDRs === undefined ? '   # unset: kOps turns it on' : ''}\n`,
      after: `${header}spec:\n  kubeControllerManager:\n    allocateNodeCIDRs: false\n`,
    });
  }
  const tail = allocAfter ? 'allocates from it again' : 'keeps allocateNodeCIDRs false so it starts while nodes keep old podCIDRs';
  if (k) {
    // nonMasqueradeCIDR must contain the pod and service ranges where the plan ends (none fits: check kops-pod-non-masquerade fails)
    const { now: nmNow, after: newNm } = podNonMasquerade(inp);
    const widened = newNm !== nmNow ? newNm : undefined;
    const viaKcm = snap.ranges.some((r) => r.source === 'kOps podCIDR' && r.label.includes('kubeControllerManager.clusterCIDR'));
    const legacy = k.layout === 'legacy';
    const netLines = (pod: string, nmv: string | undefined): string[] => {
      const lines = [...(viaKcm ? [] : [`podCIDR: ${pod}`]), ...(nmv !== undefined ? [`nonMasqueradeCIDR: ${nmv}`] : [])];
      if (lines.length === 0) return [];
      return legacy ? lines.map((l) => `  ${l}`) : ['  networking:', ...lines.map((l) => `    ${l}`)];
    };
    const kcmLines = (pod: string, alloc: boolean | string) => ['  kubeControllerManager:', ...(viaKcm ? [`    clusterCIDR: ${pod}`] : []), `    allocateNodeCIDRs: ${alloc}`];
    out.push({
      id: 'kops-pod-cidr', distribution: 'kops', gate: finalGate, target: edit,
      description: `pod range ${to}${widened ? ` and nonMasqueradeCIDR ${widened} (must contain the pod and service ranges)` : ''}; kube-controller-manager ${tail}`,
      before: ['spec:', ...netLines(k.podCIDR ?? oldCC, newNm && nmNow), ...kcmLines(k.podCIDR ?? oldCC, allocAfter ? false : k.allocateNodeCIDRs ?? true)].join('\n') + '\n',
      after: ['spec:', ...netLines(to, newNm), ...kcmLines(to, allocAfter)].join('\n') + '\n',
    });
    return out;
  }
  // Without the spec: nonMasqueradeCIDR must hold NEW and the service range, whatever it is today.
  const svcText = newCidrs.flatMap((c) => serviceRangeAfter(snap, c.family, inp.serviceAfter)).map(formatCidr).join(',') || 'the service range';
  const nm = podNonMasquerade(inp).after;
  out.push({
    id: 'kops-pod-cidr', distribution: 'kops', gate: finalGate, target: edit,
    description: `pod range ${to} (spec.networking.podCIDR, legacy layout spec.podCIDR; and spec.kubeControllerManager.clusterCIDR where the spec sets it), `
      + `a nonMasqueradeCIDR that holds it and the service range; kube-controller-manager ${tail}; the Cluster spec was not read, so the fields are named for both layouts`,
    before: header + [
      'spec:',
      '  networking:                # legacy layout: podCIDR and nonMasqueradeCIDR directly under spec',
      `    podCIDR: ${oldCC}`,
      '    nonMasqueradeCIDR: (not read; kOps default 100.64.0.0/10)',
      '  kubeControllerManager:',
      `    clusterCIDR: ${oldCC}    # only where the spec sets it`,
      `    allocateNodeCIDRs: ${allocAfter ? false : 'true   # or unset: kOps turns it on'}`,
    ].join('\n') + '\n',
    after: header + [
      'spec:',
      '  networking:',
      `    podCIDR: ${to}`,
      ...(nm ? [`    nonMasqueradeCIDR: ${nm}   # only if the current one does not contain ${to} and ${svcText}`] : []),
      '  kubeControllerManager:',
      `    clusterCIDR: ${to}    # only where the spec sets it`,
      `    allocateNodeCIDRs: ${allocAfter}`,
    ].join('\n') + '\n',
  });
  return out;
}

/**
 * The smallest CIDR holding every one of `cs` (one family) as a kOps nonMasqueradeCIDR, or undefined when that
 * is not a sensible one: wider than /8 (IPv6 /16) or overlapping the node network.
 */
function sensibleNonMasquerade(snap: Snapshot, cs: readonly Cidr[]): string | undefined {
  if (cs.length === 0) return undefined;
  const c = covering(cs);
  if (c.prefix < (c.family === 4 ? 8 : 16)) return undefined;
  const nodes = addressPlan(snap).filter((g) => g.role === 'node' && g.parsed.family === c.family);
  if (nodes.some((n) => overlaps(n.parsed, c))) return undefined;
  return formatCidr(c);
}

/** The pod range a kOps nonMasqueradeCIDR must hold: the spec's podCIDR, else the cluster CIDR, else the Calico pools. */
function kopsPodRange(snap: Snapshot, family: Family): Cidr | undefined {
  const fromSpec = tryParseCidr(snap.kops?.podCIDR ?? '');
  if (fromSpec) return fromSpec.family === family ? fromSpec : undefined;
  const cc = clusterCIDRs(snap).map((c) => c.cidr).filter((c) => c.family === family);
  const pools = snap.pools.map((p) => tryParseCidr(p.cidr)).filter((c): c is Cidr => !!c && c.family === family);
  const all = cc.length > 0 ? cc : pools;
  return all.length === 0 ? undefined : covering(all);
}

/** The pod range where the plan ends in `family`: the new Pod CIDR of the same plan, else today's (kopsPodRange). */
function podRangeAfter(snap: Snapshot, family: Family, podsAfter?: ReadonlyMap<Family, Cidr>): Cidr[] {
  const c = podsAfter?.get(family) ?? kopsPodRange(snap, family);
  return c ? [c] : [];
}

/** The service range where the plan ends in `family`: the new Service CIDR of the same plan, else today's. */
function serviceRangeAfter(snap: Snapshot, family: Family, serviceAfter?: ReadonlyMap<Family, Cidr>): Cidr[] {
  const c = serviceAfter?.get(family);
  return c ? [c] : currentServiceRanges(snap).filter((x) => x.family === family);
}

/**
 * The nonMasqueradeCIDR where the plan ends: `nm` (today's, when read) if it holds every range of `ends`; else `nm`
 * widened to hold them, else the smallest range holding `ends` alone, whichever is sensible first (no wider than
 * /8, clear of the node network); undefined when neither is.
 */
function endNonMasquerade(snap: Snapshot, nm: Cidr | undefined, ends: readonly Cidr[]): string | undefined {
  if (nm && ends.every((c) => contains(nm, c))) return formatCidr(nm);
  return (nm ? sensibleNonMasquerade(snap, [nm, ...ends]) : undefined) ?? sensibleNonMasquerade(snap, ends);
}

/** How to get a nonMasqueradeCIDR when none fits: the pair `suggest --for services,pods` gives, moved in one plan. */
function pairAdvice(snap: Snapshot, family: Family): string {
  let pair: PairSuggestion | undefined;
  try { pair = suggestPair(snap, { family }); } catch { pair = undefined; /* sizing refused: name the command only */ }
  return pair?.envelope
    ? `move both ranges in one plan: --service-cidr ${pair.services.cidr} --pod-cidr ${pair.pods.cidr} (kube-renumber suggest --for services,pods: both inside nonMasqueradeCIDR ${pair.envelope}, clear of the node network)`
    : 'move both ranges in one plan, to a pair one range of /8 or smaller holds clear of the node network (kube-renumber suggest --for services,pods)';
}

/** The first target outside nonMasqueradeCIDR, when the Cluster spec was read. */
function outsideNonMasquerade(snap: Snapshot, target: ReadonlyMap<Family, Cidr>): { nm: Cidr; out: Cidr } | undefined {
  if (!snap.kops?.nonMasqueradeCIDR) return undefined;
  const nm = tryParseCidr(snap.kops.nonMasqueradeCIDR);
  const out = [...target.values()].find((t) => nm && nm.family === t.family && !contains(nm, t));
  return nm && out ? { nm, out } : undefined;
}

/**
 * The nonMasqueradeCIDR the Service part sets ('' when none fits), computed from where the plan ends: when the new
 * service range is outside today's (spec read), or always when the spec was not read; undefined: unchanged.
 */
function serviceNonMasquerade(snap: Snapshot, target: ReadonlyMap<Family, Cidr>, podsAfter?: ReadonlyMap<Family, Cidr>): { value: string; out: Cidr; nm?: Cidr } | undefined {
  if (snap.kops) {
    const found = outsideNonMasquerade(snap, target);
    if (!found) return undefined;
    return { value: endNonMasquerade(snap, found.nm, [found.out, ...podRangeAfter(snap, found.out.family, podsAfter)]) ?? '', out: found.out, nm: found.nm };
  }
  const out = [...target.values()][0];
  return out ? { value: endNonMasquerade(snap, undefined, [out, ...podRangeAfter(snap, out.family, podsAfter)]) ?? '', out } : undefined;
}

/** kOps: serviceClusterIPRange must sit inside nonMasqueradeCIDR (kOps validation). */
function nonMasqueradeChecks(snap: Snapshot, target: ReadonlyMap<Family, Cidr>, podsAfter?: ReadonlyMap<Family, Cidr>): PreflightCheck[] {
  const found = serviceNonMasquerade(snap, target, podsAfter);
  if (!found) return [];
  const { value, out, nm } = found;
  const pods = podRangeAfter(snap, out.family, podsAfter).map(formatCidr).join(',') || 'the pod range';
  const podsText = `${podsAfter ? 'the new pod range' : 'the pod range'} ${pods}`;
  if (!value) {
    return [{
      id: 'kops-non-masquerade', status: 'fail', target: true,
      message: `no kOps nonMasqueradeCIDR of /8 or smaller holds serviceClusterIPRange ${formatCidr(out)} and ${podsText} without overlapping the node network`
        + `${snap.kops ? '' : ' (the Cluster spec was not read: its nonMasqueradeCIDR may hold them already; give it with -f cluster.yaml)'}: ${pairAdvice(snap, out.family)}`,
      fix: 'plan the pair kube-renumber suggest --for services,pods gives, in one plan',
    }];
  }
  const interim = interimCheck(snap, value, out.family, podsAfter);
  if (!nm) return interim;
  return [...interim, {
    id: 'kops-non-masquerade', status: 'warn',
    message: `${formatCidr(out)} is outside kOps nonMasqueradeCIDR ${formatCidr(nm)}; kOps validation (the versions read) rejects a serviceClusterIPRange or podCIDR outside it; kops update cluster without --yes shows whether yours does`,
    fix: `set nonMasqueradeCIDR to ${value} (holds the new service range and ${podsText}) in the same kops edit (see the restart-apiservers patch)`,
  }];
}

/**
 * A combined plan edits the Cluster spec twice: serviceClusterIPRange and nonMasqueradeCIDR at gate restart-apiservers,
 * podCIDR at the pod range's final gate. When the new nonMasqueradeCIDR does not hold today's pod range, the spec between the
 * two gates has podCIDR outside it, which kOps validation rejects: say so before anything runs.
 */
function interimCheck(snap: Snapshot, value: string, family: Family, podsAfter?: ReadonlyMap<Family, Cidr>): PreflightCheck[] {
  if (!podsAfter) return [];
  const nm = tryParseCidr(value.split(',')[0] ?? '');
  const podsNow = kopsPodRange(snap, family);
  if (!nm || !podsNow || nm.family !== podsNow.family || contains(nm, podsNow)) return [];
  return [{
    id: 'kops-interim-spec', status: 'warn',
    message: `between gate restart-apiservers (serviceClusterIPRange and nonMasqueradeCIDR ${value}, patch kops-service-range) and the pod range's gate (podCIDR, patch kops-pod-cidr) the kOps Cluster spec has podCIDR ${formatCidr(podsNow)} outside nonMasqueradeCIDR ${value}; kOps validation (the versions read) rejects a podCIDR outside it, so kops update cluster may refuse the first edit`,
    fix: 'at gate restart-apiservers run kops update cluster without --yes first; if it refuses the spec, do not force it and do not resume: kube-renumber rollback undoes the steps so far',
  }];
}

/**
 * The Pod part's nonMasqueradeCIDR: where it is when the pods move (`now`: where the Service part of the same plan
 * left it, `bySvc`, else today's), and where the plan ends (`after`; undefined: none fits).
 */
function podNonMasquerade(inp: PodPatchInputs): { now?: string; bySvc?: true; after?: string; unset?: true } {
  const { snap, spec, serviceAfter } = inp;
  if (snap.kops && !snap.kops.nonMasqueradeCIDR) return { unset: true }; // the spec sets none: nothing to change
  const news = spec.to.map((t) => parseCidr(t));
  const pods = new Map(news.map((c) => [c.family, c]));
  const bySvc = serviceAfter ? serviceNonMasquerade(snap, serviceAfter, pods)?.value : undefined;
  const now = bySvc || snap.kops?.nonMasqueradeCIDR;
  const nm = now ? tryParseCidr(now) : undefined;
  const perFamily = news.map((c) => endNonMasquerade(snap, nm?.family === c.family ? nm : undefined, [c, ...serviceRangeAfter(snap, c.family, serviceAfter)]));
  const after = perFamily.every((x): x is string => !!x) ? [...new Set(perFamily)].join(',') : undefined;
  return { now, ...(bySvc ? { bySvc: true as const } : {}), after };
}

/**
 * Check `pod-kops-nonmasquerade` (when the Cluster spec was read): the nonMasqueradeCIDR when the pods move, today's or
 * the one the Service part of the same plan sets at gate restart-apiservers (patch kops-service-range), contains NEW.
 */
function podNonMasqueradeNowCheck(inp: PodPatchInputs, nm: { now?: string; bySvc?: true }): PreflightCheck[] {
  if (!inp.snap.kops?.nonMasqueradeCIDR || !nm.now) return [];
  const what = nm.bySvc ? `kOps nonMasqueradeCIDR ${nm.now} (set with the Service range at gate restart-apiservers, patch kops-service-range)` : `kOps nonMasqueradeCIDR ${nm.now}`;
  const cidr = tryParseCidr(nm.now);
  const outside = inp.spec.to.map((t) => parseCidr(t)).filter((t) => cidr && cidr.family === t.family && !contains(cidr, t));
  return [outside.length > 0
    ? { id: 'pod-kops-nonmasquerade', status: 'warn', message: `${what} does not contain ${outside.map(formatCidr).join(',')}: traffic from NEW would be masqueraded`, fix: 'the pod-cidr-config gate changes nonMasqueradeCIDR with podCIDR (patch kops-pod-cidr)' }
    : { id: 'pod-kops-nonmasquerade', status: 'pass', message: `${what} contains ${inp.spec.to.join(',')}`, fix: '' }];
}

/**
 * kOps' Pod checks: pod-kops-nonmasquerade (above), and a Pod CIDR move whose nonMasqueradeCIDR cannot be computed is
 * refused (exit 2, check kops-pod-non-masquerade), naming the pair that fits.
 */
function podNonMasqueradeChecks(inp: PodPatchInputs): PreflightCheck[] {
  const nm = podNonMasquerade(inp);
  const now = podNonMasqueradeNowCheck(inp, nm);
  if (nm.after || nm.unset) return now;
  const family = parseCidr(inp.spec.to[0]!).family;
  const svc = inp.spec.to.flatMap((t) => serviceRangeAfter(inp.snap, parseCidr(t).family, inp.serviceAfter)).map(formatCidr).join(',') || 'the service range';
  return [...now, {
    id: 'kops-pod-non-masquerade', status: 'fail', target: true,
    message: `no kOps nonMasqueradeCIDR of /8 or smaller holds podCIDR ${inp.to} and ${inp.serviceAfter ? 'the new' : 'the'} serviceClusterIPRange ${svc} without overlapping the node network: ${pairAdvice(inp.snap, family)}`,
    fix: 'plan the pair kube-renumber suggest --for services,pods gives, in one plan',
  }];
}

/**
 * A pod extension on kOps (plan --extend-pod-cidr): kOps' validation wants the pod range inside nonMasqueradeCIDR, and
 * kube-proxy's --cluster-cidr comes from the Cluster spec (kubeProxy.clusterCIDR, else podCIDR); changing either is
 * `kops update cluster` and a rolling update of every node, so ADD must need neither (refused, exit 2, otherwise).
 */
function podExtensionChecks(snap: Snapshot, add: ReadonlyMap<Family, Cidr>, kubeProxyTo?: string): PreflightCheck[] {
  const text = [...add.values()].map(formatCidr).join(',');
  const out: PreflightCheck[] = [];
  if (kubeProxyTo !== undefined) {
    const now = snap.kubeProxy?.clusterCIDR ?? snap.kops?.podCIDR ?? '?';
    return [{
      id: 'pod-extend-kube-proxy', status: 'fail', target: true,
      message: `kube-proxy clusterCIDR ${now} does not hold ${text}: on kOps it comes from the Cluster spec (kubeProxy.clusterCIDR, else podCIDR), and changing it is a kops update cluster and a rolling update of every node`,
      fix: `choose ADD inside ${now} (outside the pools), or move the range with plan --pod-cidr NEW`,
    }];
  }
  const nm = snap.kops?.nonMasqueradeCIDR ? tryParseCidr(snap.kops.nonMasqueradeCIDR) : undefined;
  if (!nm) {
    out.push({ id: 'pod-extend-kops-spec', status: 'warn', message: 'kOps cluster without its Cluster spec in the input: nonMasqueradeCIDR was not read, so the plan could not check that it holds ADD (traffic from pods outside it is masqueraded)', fix: '`kops get cluster -o yaml > cluster.yaml`, then plan again with -f cluster.yaml' });
    return out;
  }
  const outside = [...add.values()].filter((t) => t.family === nm.family && !contains(nm, t));
  out.push(outside.length > 0
    ? {
      id: 'pod-extend-non-masquerade', status: 'fail', target: true,
      message: `kOps nonMasqueradeCIDR ${formatCidr(nm)} does not hold ${outside.map(formatCidr).join(',')}: kOps validation wants the pod range inside it, and changing it is a kops update cluster and a rolling update of every node`,
      fix: `choose ADD inside ${formatCidr(nm)}, clear of the service and pod ranges, or move the range with plan --pod-cidr NEW`,
    }
    : { id: 'pod-extend-non-masquerade', status: 'pass', message: `kOps nonMasqueradeCIDR ${formatCidr(nm)} holds ${text}: the Cluster spec stays as it is`, fix: '' });
  return out;
}

export const kops: DistributionPlanner = {
  podExtensionChecks,
  id: 'kops',
  servicePatches: kopsPatches,
  serviceContext(snap, target, podsAfter) {
    const found = serviceNonMasquerade(snap, target, podsAfter);
    return found ? { nonMasqueradeCIDR: found.value } : {};
  },
  serviceChecks: nonMasqueradeChecks,
  serviceGateInstructions(_snap, gate) {
    switch (gate) {
      case 'enable-servicecidr-api':
        return ['kops edit cluster (apply patch kops-enable-servicecidr-api)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', 'kube-renumber resume'];
      case 'restart-apiservers':
        return [
          'kops edit cluster (apply patch kops-service-range)',
          'kops update cluster --yes',
          'kops rolling-update cluster --instance-group-roles=control-plane --yes   # control plane only: nodes roll at the kubelet-cluster-dns gate',
          'kube-renumber resume',
        ];
      case 'kubelet-cluster-dns':
        return ['kops rolling-update cluster --yes   # the remaining (node) instance groups: new kubelet clusterDNS, and every pod restarts on a new node', 'kube-renumber resume'];
      default:
        return gate satisfies never;
    }
  },
  restartWorkloadsNote: ['(kOps: a node rolling update after move-kubernetes already did this)'],
  restartsEveryPod: 'kOps replaces every node in the rolling update at gate kubelet-cluster-dns, so every pod starts again after the moves',
  restartApiserversReason: 'kOps changes the range, the DNS IP and the certificate in one spec edit and rolls the control plane',
  certFix: (snap, both) => `add ${both} to ${!snap.kops ? 'spec.api.additionalSANs (legacy field layout: spec.additionalSans)' : snap.kops.layout === 'legacy' ? 'spec.additionalSans' : 'spec.api.additionalSANs'} (kops edit cluster), then kops update cluster --yes and `
    + 'kops rolling-update cluster --instance-group-roles=control-plane --yes (kOps issues the serving certificate when the control plane rolls)',
  podPatches: kopsPodPatches,
  podChecks: podNonMasqueradeChecks,
  kubeProxyPatch: { always: false, distribution: 'kops' },
  podGateInstructions: (gate, role) => (role === 'stop-allocating'
    ? ['kops edit cluster (patch kops-stop-allocating)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', `kube-renumber resume --ack-gate ${gate} (when kube-controller-manager has no mirror pod)`]
    : ['kops edit cluster (patch kops-pod-cidr)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', `kube-renumber resume --ack-gate ${gate} (when kube-controller-manager has no mirror pod)`]),
  reregister: 'systemctl restart kubelet (it registers the Node again)',
  configCheck(snap) {
    if (snap.kops) return undefined;
    const why = snap.platform.evidence.slice(0, 2).join('; ');
    return {
      id: 'kops-spec', status: 'warn',
      message: `kOps cluster${why ? ` (${why})` : ''}, but no kOps Cluster spec in the input: it lives in the kOps state store, not in the API, `
        + 'so its podCIDR, serviceClusterIPRange, nonMasqueradeCIDR and field layout were not read and nonMasqueradeCIDR is not checked; '
        + 'the kOps patches name each field in both layouts (spec.networking.* or directly under spec)',
      fix: '`kops get cluster --name NAME -o yaml > cluster.yaml`, then plan again with `-f cluster.yaml` and --kubeconfig or --context (the spec joins the live read), '
        + 'or from files with `-f cluster.yaml` next to a `kubectl get ... -o yaml` dump of the cluster; or apply the kOps patches by field name',
    };
  },
};
