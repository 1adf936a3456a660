/**
 * kOps: the Cluster spec (kops edit cluster, or the manifest a pipeline applies with kops replace) holds the
 * service and pod ranges, the DNS IP, nonMasqueradeCIDR and the certificate SANs; the control plane rolls to
 * take them. The spec lives in the kOps state store, so a live read never has it: without it every field is
 * named for both layouts.
 */
import { addressPlan } from '../../analyze/addressing.ts';
import { clusterCIDRs } from '../../analyze/capacity.ts';
import { CATALOG } from '../../analyze/catalog.ts';
import type { Family, Snapshot } from '../../cluster/types.ts';
import { bits, contains, formatCidr, overlaps, parseCidr, supernet, tryParseCidr, type Cidr } from '../../net/index.ts';
import { currentServiceRanges } from '../../plan/service-mapping.ts';
import { at, covering, dump } from '../../plan/distributions/common.ts';
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
      description: `serve ${gv} (seed 001's snippet); merge into any featureGates/runtimeConfig already set`,
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
    netAfter.nonMasqueradeCIDR = ctx.nonMasqueradeCIDR || 'TODO: a range holding serviceClusterIPRange and podCIDR (see preflight kops-non-masquerade)';
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
  out.push({
    id: 'kops-service-range', distribution: 'kops', gate: 'restart-apiservers', target: edit,
    description: 'the new service range, the DNS Service IP (kOps validation requires it inside serviceClusterIPRange and kubelet.clusterDNS equal to it), '
      + 'and both default/kubernetes IPs as certificate SANs (the old one serves pods that still have it until they restart)',
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
  const parsed = tryParseCidr(newSvc);
  const nm = parsed ? proposeNonMasquerade(snap, parsed) : undefined;
  const b: string[] = ['spec:', '  networking:                # legacy layout: these fields directly under spec', `    serviceClusterIPRange: ${ctx.oldFlag.join(',')}`,
    '    nonMasqueradeCIDR: (not read; kOps default 100.64.0.0/10)'];
  const a: string[] = ['spec:', '  networking:', `    serviceClusterIPRange: ${newSvc}`,
    nm
      ? `    nonMasqueradeCIDR: ${nm}   # only if the current one does not contain ${newSvc} and the pod range`
      : `    nonMasqueradeCIDR: TODO if the current one does not contain ${newSvc}: no range clear of the node network and well-known ranges holds serviceClusterIPRange ${newSvc} and the pod range; move the Pod CIDR next to the new service range first or together`];
  if (ctx.newDNS) {
    b.push('  kubeDNS:', `    serverIP: ${ctx.oldDNS}      # when set (kOps derives it from the range otherwise)`, '  kubelet:', `    clusterDNS: ${ctx.oldDNS}    # when set`);
    a.push('  kubeDNS:', `    serverIP: ${ctx.newDNS}`, '  kubelet:', `    clusterDNS: ${ctx.newDNS}    # when set (other entries unchanged)`);
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((x): x is string => !!x);
  if (sans.length > 0) {
    b.push('  api:                       # legacy layout: spec.additionalSans', '    additionalSANs:', '      # ...existing entries');
    a.push('  api:', '    additionalSANs:', '      # ...existing entries', ...sans.map((x) => `      - ${x}`));
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
  const { snap, spec, finalGate, oldCC, allocAfter } = inp;
  const out: DistroPatch[] = [];
  const k = snap.kops;
  const to = spec.to.join(',');
  const edit = KOPS_EDIT;
  const header = k ? '' : KOPS_UNREAD_HEADER;
  const newCidrs = spec.to.map((t) => parseCidr(t));
  if (allocAfter) {
    out.push({
      id: 'kops-stop-allocating', distribution: 'kops', gate: 'kcm-stop-allocating', target: edit, description: 'kube-controller-manager stops allocating node podCIDRs',
      before: `${header}spec:\n  kubeControllerManager:\n    allocateNodeCIDRs: ${k?.allocateNodeCIDRs ?? true}${k?.allocateNodeCIDRs === undefined ? '   # unset: kOps turns it on' : ''}\n`,
      after: `${header}spec:\n  kubeControllerManager:\n    allocateNodeCIDRs: false\n`,
    });
  }
  const tail = allocAfter ? 'allocates from it again' : 'keeps allocateNodeCIDRs false so it starts while nodes keep old podCIDRs';
  if (k) {
    // nonMasqueradeCIDR must contain the pod (and service) range: the current one widened to hold NEW, if sensible.
    const nm = k.nonMasqueradeCIDR ? tryParseCidr(k.nonMasqueradeCIDR) : undefined;
    const outside = nm ? newCidrs.filter((c) => c.family === nm.family && !contains(nm, c)) : [];
    const widened = nm && outside.length > 0 ? sensibleNonMasquerade(snap, [nm, ...outside]) : undefined;
    const newNm = !nm || outside.length === 0 ? k.nonMasqueradeCIDR
      : widened ?? `TODO: no range of /8 or smaller clear of the node network holds podCIDR ${to} and serviceClusterIPRange ${k.serviceClusterIPRange ?? 'the service range'}; move the Service CIDR next to the new pod range first or together`;
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
      description: `pod range ${to}${newNm === k.nonMasqueradeCIDR ? '' : widened ? ` and nonMasqueradeCIDR ${widened} (must contain the pod and service ranges)` : ' and a nonMasqueradeCIDR that contains it and the service range (see after)'}; kube-controller-manager ${tail}`,
      before: ['spec:', ...netLines(k.podCIDR ?? oldCC, k.nonMasqueradeCIDR), ...kcmLines(k.podCIDR ?? oldCC, allocAfter ? false : k.allocateNodeCIDRs ?? true)].join('\n') + '\n',
      after: ['spec:', ...netLines(to, newNm), ...kcmLines(to, allocAfter)].join('\n') + '\n',
    });
    return out;
  }
  // Without the spec: nonMasqueradeCIDR must hold NEW and the service range, whatever it is today.
  const svc = currentServiceRanges(snap);
  const perFamily = newCidrs.map((c) => sensibleNonMasquerade(snap, [c, ...svc.filter((x) => x.family === c.family)]));
  const nm = perFamily.every((x): x is string => !!x) ? perFamily.join(',') : undefined;
  const svcText = svc.map(formatCidr).join(',') || 'the service range';
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
      nm
        ? `    nonMasqueradeCIDR: ${nm}   # only if the current one does not contain ${to} and ${svcText}`
        : `    nonMasqueradeCIDR: TODO if the current one does not contain ${to}: no range of /8 or smaller clear of the node network holds podCIDR ${to} and serviceClusterIPRange ${svcText}; move the Service CIDR next to the new pod range first or together`,
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

/**
 * A nonMasqueradeCIDR holding both `svc` and the kOps pod range (the spec's, else the cluster's): the
 * smallest common supernet, if it overlaps no node network and no error/warning catalog range.
 */
export function proposeNonMasquerade(snap: Snapshot, svc: Cidr): string | undefined {
  const pod = kopsPodRange(snap, svc.family);
  if (!pod) return undefined;
  let p = Math.min(pod.prefix, svc.prefix);
  while (p > 0 && !contains(supernet(svc, p), pod)) p--;
  const c = supernet(svc, p);
  if (p < 8 || bits(c.family) === 128 && p < 16) return undefined;
  const nodes = addressPlan(snap).filter((g) => g.role === 'node');
  if (nodes.some((n) => overlaps(n.parsed, c))) return undefined;
  if (CATALOG.some((k) => k.severity !== 'info' && overlaps(parseCidr(k.cidr), c))) return undefined;
  return formatCidr(c);
}

/** The first target outside nonMasqueradeCIDR, when the Cluster spec was read. */
function outsideNonMasquerade(snap: Snapshot, target: ReadonlyMap<Family, Cidr>): { nm: Cidr; out: Cidr } | undefined {
  if (!snap.kops?.nonMasqueradeCIDR) return undefined;
  const nm = tryParseCidr(snap.kops.nonMasqueradeCIDR);
  const out = [...target.values()].find((t) => nm && nm.family === t.family && !contains(nm, t));
  return nm && out ? { nm, out } : undefined;
}

/** kOps: serviceClusterIPRange must sit inside nonMasqueradeCIDR (kOps validation). */
function nonMasqueradeChecks(snap: Snapshot, target: ReadonlyMap<Family, Cidr>): PreflightCheck[] {
  const found = outsideNonMasquerade(snap, target);
  if (!found) return [];
  const { nm, out } = found;
  const proposal = proposeNonMasquerade(snap, out);
  return [{
    id: 'kops-non-masquerade', status: 'warn',
    message: `${formatCidr(out)} is outside kOps nonMasqueradeCIDR ${formatCidr(nm)}; kOps validation (the versions read) rejects a serviceClusterIPRange or podCIDR outside it; kops update cluster without --yes shows whether yours does`,
    fix: proposal
      ? `set nonMasqueradeCIDR to ${proposal} (holds the new service range and the pod range) in the same kops edit (see the restart-apiservers patch)`
      : 'no single nonMasqueradeCIDR holds both the new service range and today\'s pod range without overlapping the node network: '
        + 'move the Pod CIDR next to the new service range first or together (seed 000 ended with nonMasqueradeCIDR 172.16.0.0/12 holding services 172.24.0.0/15 and pods 172.16.0.0/13)',
  }];
}

export const kops: DistributionPlanner = {
  id: 'kops',
  servicePatches: kopsPatches,
  serviceContext(snap, target) {
    const found = outsideNonMasquerade(snap, target);
    return found ? { nonMasqueradeCIDR: proposeNonMasquerade(snap, found.out) ?? '' } : {};
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
  kubeProxyPatch: { always: false, distribution: 'kops' },
  podGateInstructions: (gate) => (gate === 'kcm-stop-allocating'
    ? ['kops edit cluster (patch kops-stop-allocating)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', 'kube-renumber resume --ack-gate kcm-stop-allocating (when kube-controller-manager has no mirror pod)']
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
