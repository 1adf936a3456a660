/**
 * The Pod CIDR part of a migration plan: pre-flight checks, the pod path's section (new Calico pools, new node
 * podCIDRs), and the ordered steps with their gates. Pure: a function of (Snapshot, options). The same engine as
 * the Service plan executes it (src/engine/pod-steps.ts); docs/pod-migration.md explains the order.
 *
 * The path is chosen from the owner of the pod addresses (src/ipam/) or --ipam; each path is one module under
 * src/plan/pod-paths/ (calico.ts: a new IPPool, the old one disabled, every workload restarted; node.ts: every
 * node drained, re-registered and given a podCIDR in NEW), listed in src/plan/pod-paths/registry.ts.
 */
import type { Family, Snapshot } from '../cluster/types.ts';
import {
  contains, familyName, formatCidr, NetError, overlaps, parseCidr, supernet, tryParseCidr, type Cidr,
} from '../net/index.ts';
import { addressPlan } from '../analyze/addressing.ts';
import { clusterCIDRTooWide } from '../analyze/references.ts';
import { KOPS_EDIT, KOPS_UNREAD_HEADER, type DistroPatch } from './distro-patches.ts';
import type { PlanStep } from './steps.ts';
import { distributionOf, distroConfigCheck, overlapHits, type PreflightCheck } from './preflight.ts';
import { currentServiceRanges } from './service-mapping.ts';
import { maskKey, type PodCIDRSpec, type PodIpam, type PodPatchGate } from './pod-spec.ts';
import { podStepLists } from './pod-step-lists.ts';
import { podOwnerRefusal, podPathOf } from './platform-gate.ts';
import { famOf, KCM_DEFAULT_MASK, kcmMaskFlag, pass } from './pod-paths/common.ts';
import { orList, POD_PATH_NAMES, POD_PATHS } from './pod-paths/registry.ts';
import type { PodPath, PodPlanOptions } from './pod-paths/types.ts';

export type { NodeMaskSizes, PodCIDRSpec, PodIpam, PodPatchGate, PoolData } from './pod-spec.ts';
export type { PodPlanOptions } from './pod-paths/types.ts';
export { maskKey } from './pod-spec.ts';
export { POOL_PREFIX, slug } from './pod-paths/common.ts';

/** Defaults: rollouts in flight at once; nodes re-registered one at a time. */
export const DEFAULT_PARALLEL = 4;

export interface PodStepItem {
  namespace: string;
  name: string;
  from: string[];
  to: string[];
}

export interface PodPlanSection {
  spec?: PodCIDRSpec;
  preflight: PreflightCheck[];
  /** Steps before the restarts (pools, scale-up), the restarts themselves, and the clean-up after them. */
  prepare: PlanStep[];
  restart: PlanStep[];
  finish: PlanStep[];
}


/** The smallest CIDR containing every one of `cs` (all of one family). */
export function covering(cs: readonly Cidr[]): Cidr {
  let c = cs[0]!;
  while (!cs.every((x) => contains(c, x)) && c.prefix > 0) c = supernet(c, c.prefix - 1);
  return c;
}

/** NEW as a family → CIDR map; NetError names the first bad value. */
export function parsePodTarget(target: string | readonly string[]): Map<Family, Cidr> {
  const parts = (typeof target === 'string' ? [target] : [...target]).flatMap((t) => t.split(',')).map((t) => t.trim()).filter(Boolean);
  if (parts.length === 0) throw new NetError('--pod-cidr is empty: give the new pod CIDR, e.g. 172.16.0.0/13');
  const out = new Map<Family, Cidr>();
  for (const p of parts) {
    const c = parseCidr(p);
    if (out.has(c.family)) throw new NetError(`--pod-cidr has two ${familyName(c.family)} ranges: give at most one per family`);
    out.set(c.family, c);
  }
  return out;
}

/** Which path moves the pods' addresses (src/ipam/: the owner of the addresses decides); undefined when none can. */
export function podIpamOf(snap: Snapshot): PodIpam | undefined {
  return podPathOf(snap);
}

/** The cluster DNS Deployment (namespace/name), from the DNS Service's selector and its pods' owners. */
export function dnsDeployment(snap: Snapshot): string | undefined {
  const d = snap.dnsService;
  if (!d) return undefined;
  const svc = snap.services.find((s) => s.namespace === d.namespace && s.name === d.name);
  const sel = svc?.selector;
  if (!sel || Object.keys(sel).length === 0) return undefined;
  const pod = snap.pods.find((p) => p.namespace === d.namespace && Object.entries(sel).every(([k, v]) => p.labels[k] === v) && p.owner?.kind === 'ReplicaSet');
  if (!pod?.owner) return undefined;
  const hash = pod.labels['pod-template-hash'];
  const rs = pod.owner.name;
  const name = hash && rs.endsWith(`-${hash}`) ? rs.slice(0, -hash.length - 1) : rs.replace(/-[a-z0-9]{5,10}$/, '');
  return `${d.namespace}/${name}`;
}

/**
 * Node path: the node mask flags kube-controller-manager needs at kcm-cluster-cidr so that nodes it gives
 * podCIDRs afterwards get the plan's sizes: for each family whose planned size differs from what kcm uses now
 * (its flag, else its default 24 / 64). As patch lines (`--flag=N`), before and after; empty when none differ.
 */
function kcmMaskLines(snap: Snapshot, spec: PodCIDRSpec): { before: string[]; after: string[] } {
  const before: string[] = [];
  const after: string[] = [];
  const dual = spec.to.length > 1;
  for (const t of spec.to) {
    const f = famOf(t);
    const planned = spec.node?.maskSizes[maskKey(f)];
    if (planned === undefined) continue;
    const set = kcmMaskFlag(snap, f);
    const now = set?.size ?? KCM_DEFAULT_MASK[f];
    if (planned === now) continue;
    // dual-stack kcm refuses --node-cidr-mask-size: one flag per family
    const flag = dual || f === 6 ? (f === 4 ? 'node-cidr-mask-size-ipv4' : 'node-cidr-mask-size-ipv6') : set?.flag ?? 'node-cidr-mask-size';
    before.push(set ? `--${set.flag}=${set.size}` : `# --${flag} not set: kube-controller-manager's default ${now}`);
    after.push(`--${flag}=${planned}`);
  }
  return { before, after };
}

/** Builds the Pod CIDR section. Never throws on cluster data. */
export function buildPodSection(snap: Snapshot, opts: PodPlanOptions): PodPlanSection {
  const out: PodPlanSection = { preflight: [], prepare: [], restart: [], finish: [] };
  const checks = out.preflight;
  // Each early return below leaves the section without a spec: its failed check is a refusal (target), so
  // `plan` prints no plan that moves nothing (validatePlan refuses a plan with neither spec part).
  const target = podTargetOf(opts, checks);
  if (!target) return out;
  const newText = [...target.values()].map(formatCidr);
  const ipam = podIpamChecked(snap, opts, checks);
  if (!ipam) return out;
  const path: PodPath = POD_PATHS[ipam];
  const old = path.oldRanges({ snap, opts, target, newText }, checks);
  if (!old) return out;
  checks.push(podConflictCheck(snap, opts, target, newText));

  const headroom = opts.headroom ?? 2;
  const dns = dnsDeployment(snap);
  const spec: PodCIDRSpec = {
    from: old.from.map(formatCidr), to: newText, ipam,
    restarts: { parallel: opts.parallel ?? DEFAULT_PARALLEL, critical: [...new Set([...(dns ? [dns] : []), ...(opts.critical ?? [])])] },
  };
  out.spec = spec;
  const sized = old.size(headroom);
  Object.assign(spec, sized.section);
  checks.push(...sized.checks);
  checks.push(...podEnvironmentChecks(snap, target, old.from, newText, path, dns));

  const lists = podStepLists(path, spec, distributionOf(snap), podPatches(snap, spec));
  out.prepare.push(...lists.prepare);
  out.restart.push(...lists.restart);
  out.finish.push(...lists.finish);
  return out;
}

/** NEW parsed, with check `pod-target-parse` added to `checks`; undefined when it does not parse. */
function podTargetOf(opts: PodPlanOptions, checks: PreflightCheck[]): Map<Family, Cidr> | undefined {
  let target: Map<Family, Cidr>;
  try {
    target = parsePodTarget(opts.target);
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
    checks.push({ id: 'pod-target-parse', status: 'fail', target: true, message: e.message, fix: 'give NEW as address/prefix, e.g. --pod-cidr 172.16.0.0/13' });
    return undefined;
  }
  checks.push(pass('pod-target-parse', `new pod CIDR ${[...target.values()].map(formatCidr).join(',')}`, true));
  return target;
}

/** The IPAM to plan for (--ipam, else detected), with check `pod-ipam` added to `checks`; undefined when none can be planned. */
function podIpamChecked(snap: Snapshot, opts: PodPlanOptions, checks: PreflightCheck[]): PodIpam | undefined {
  // The real reason first: the owner of the pod addresses (src/ipam/) refuses the move whatever --ipam says (the CLI
  // exits 2 on it).
  const refusal = podOwnerRefusal(snap, opts.ipam);
  if (refusal) {
    checks.push({ id: 'pod-ipam', status: 'fail', target: true, message: refusal, fix: 'see docs/platforms.md' });
    return undefined;
  }
  const detected = podIpamOf(snap);
  const ipam = opts.ipam ?? detected;
  if (!ipam) {
    const cilium = snap.cni.plugin === 'cilium';
    checks.push({
      id: 'pod-ipam', status: 'fail', target: true,
      message: cilium
        ? 'Cilium without its configuration in the input (ConfigMap kube-system/cilium-config): its ipam setting decides who owns pod addresses (unset means cluster-pool, which cannot be moved)'
        : `cannot tell how pods get their addresses (CNI ${snap.cni.plugin}, IPAM ${snap.cni.ipam}${snap.cni.ipamMode ? ` ${snap.cni.ipamMode}` : ''})`,
      fix: cilium
        ? 'add `kubectl -n kube-system get configmap cilium-config -o yaml` to the input (live: allow reading ConfigMaps in kube-system); give --ipam node only if it says ipam: kubernetes'
        : `give ${orList(POD_PATH_NAMES.map((id) => `--ipam ${id} (${POD_PATHS[id].hint})`))}`,
    });
    return undefined;
  }
  checks.push(pass('pod-ipam', `${POD_PATHS[ipam].planned}${opts.ipam && detected !== ipam ? ` (--ipam ${ipam})` : ''}`));
  return ipam;
}

/** Check `pod-target-conflicts`: NEW overlaps nothing the cluster uses or must reach. */
function podConflictCheck(snap: Snapshot, opts: PodPlanOptions, target: Map<Family, Cidr>, newText: string[]): PreflightCheck {
  const hits = overlapHits(snap, opts.avoid ?? [], target);
  return hits.length > 0
    ? { id: 'pod-target-conflicts', status: 'fail', target: true, message: hits.slice(0, 4).join(', ') + (hits.length > 4 ? ` and ${hits.length - 4} more` : ''), fix: 'choose a range that overlaps nothing the cluster uses or must reach (the node network included): `kube-renumber suggest --for pods` finds one' }
    : pass('pod-target-conflicts', `${newText.join(',')} overlaps no cluster range, well-known network or --avoid range and holds no live address (ClusterIP, pod IP, node address)`, true);
}

/** Checks of what else depends on the pod range: kube-proxy's clusterCIDR, kOps nonMasqueradeCIDR, unread configuration, the DNS Deployment. */
function podEnvironmentChecks(
  snap: Snapshot, target: Map<Family, Cidr>, from: Cidr[], newText: string[], path: PodPath, dns: string | undefined,
): PreflightCheck[] {
  const checks: PreflightCheck[] = [];
  const kubeProxy = kubeProxyCheck(snap, target, from, newText, path);
  if (kubeProxy) checks.push(kubeProxy);
  const nonMasquerade = kopsNonMasqueradeCheck(snap, target, newText);
  if (nonMasquerade) checks.push(nonMasquerade);
  const unread = distroConfigCheck(snap);
  if (unread) checks.push(unread);
  checks.push(dns
    ? pass('pod-dns', `cluster DNS Deployment ${dns} is scaled up by one before the restarts and back afterwards`)
    : { id: 'pod-dns', status: 'warn', message: 'the cluster DNS Deployment was not found (by the DNS Service selector): it restarts with every other workload, not scaled up first', fix: 'name it with --critical NS/NAME' });
  return checks;
}

/** Check `pod-kube-proxy`: kube-proxy's clusterCIDR (when set) covers NEW, else traffic from NEW is masqueraded. */
function kubeProxyCheck(
  snap: Snapshot, target: Map<Family, Cidr>, from: Cidr[], newText: string[], path: PodPath,
): PreflightCheck | undefined {
  const kp = snap.kubeProxy?.clusterCIDR;
  if (!kp) return undefined;
  const kpc = kp.split(',').map((s) => tryParseCidr(s.trim())).filter((c): c is Cidr => !!c);
  const uncovered = [...target.values()].filter((t) => !kpc.some((c) => contains(c, t)));
  // A clusterCIDR holding old and new during the move, per family: only one that holds nothing but pod ranges
  // (never 0.0.0.0/0 or the node network: kube-proxy would count those addresses as pods).
  const both: string[] = [];
  const tooWide: string[] = [];
  for (const [f, t] of target) {
    const o = from.filter((c) => c.family === f);
    const c = o.length ? covering([t, ...o]) : t;
    const why = clusterCIDRTooWide(c, snap);
    if (why) tooWide.push(`for ${[...o, t].map(formatCidr).join(' and ')} it would also hold ${why}`); else both.push(formatCidr(c));
  }
  const gate = path.finalGate;
  const local = 'detectLocalMode to InterfaceNamePrefix (Calico: cali) or BridgeInterface (bridge CNIs such as flannel: cni0)';
  return uncovered.length > 0
    ? {
      id: 'pod-kube-proxy', status: 'warn',
      message: `kube-proxy clusterCIDR ${kp} does not cover ${uncovered.map(formatCidr).join(',')}: during the move it masquerades Service traffic from pods in NEW (source IPs lost to NetworkPolicies and logs)`,
      fix: (tooWide.length === 0
        ? `during the move set kube-proxy ${local}, or clusterCIDR to a range covering both (${both.join(',')}: it holds no node address or other cluster range)`
        : `no single clusterCIDR holds the old and the new pod range and nothing else (${tooWide.join('; ')}), and kube-proxy must count only pods in it: during the move set kube-proxy ${local}`)
        + `; afterwards clusterCIDR ${kubeProxyAfter(kp, newText)}, the pod range(s) (gate ${gate})`,
    }
    : pass('pod-kube-proxy', `kube-proxy clusterCIDR ${kp} covers ${newText.join(',')}`);
}

/** kube-proxy's clusterCIDR after the move: NEW for each family it moves, the pod range of any other family kept. */
export function kubeProxyAfter(current: string, to: readonly string[]): string {
  const next = new Map(to.map((t) => [famOf(t), t]));
  const out: string[] = [];
  for (const c of current.split(',').map((x) => x.trim()).filter(Boolean)) {
    const v = next.get(famOf(c)) ?? c;
    if (!out.includes(v)) out.push(v);
  }
  for (const t of to) if (!out.includes(t)) out.push(t);
  return out.join(',');
}

/** Check `pod-kops-nonmasquerade`: the kOps nonMasqueradeCIDR (when known) contains NEW. */
function kopsNonMasqueradeCheck(snap: Snapshot, target: Map<Family, Cidr>, newText: string[]): PreflightCheck | undefined {
  if (!snap.kops?.nonMasqueradeCIDR) return undefined;
  const nm = tryParseCidr(snap.kops.nonMasqueradeCIDR);
  const outside = [...target.values()].filter((t) => nm && nm.family === t.family && !contains(nm, t));
  return outside.length > 0
    ? { id: 'pod-kops-nonmasquerade', status: 'warn', message: `kOps nonMasqueradeCIDR ${snap.kops.nonMasqueradeCIDR} does not contain ${outside.map(formatCidr).join(',')}: traffic from NEW would be masqueraded`, fix: 'the pod-cidr-config gate changes nonMasqueradeCIDR with podCIDR (patch kops-pod-cidr)' }
    : pass('pod-kops-nonmasquerade', `kOps nonMasqueradeCIDR ${snap.kops.nonMasqueradeCIDR} contains ${newText.join(',')}`);
}

/** Distribution changes of a Pod CIDR migration, as before/after text. */
export function podPatches(snap: Snapshot, spec: PodCIDRSpec): DistroPatch[] {
  const out: DistroPatch[] = [];
  const distro = distributionOf(snap);
  const to = spec.to.join(',');
  const path = POD_PATHS[spec.ipam];
  const finalGate: PodPatchGate = path.finalGate;
  const kcm = snap.controllerManagers[0];
  const oldCC = kcm?.clusterCIDR?.join(',') ?? snap.kubeadm?.podSubnet?.join(',') ?? snap.kops?.podCIDR ?? spec.from.join(',');
  // kube-controller-manager stops allocating at a first gate and allocates from NEW again at the final one, or
  // allocation is turned off at the final gate (a path that does not use node podCIDRs)
  const allocAfter = path.kcmAllocatesAfter;
  if (distro === 'kops') {
    out.push(...kopsPodPatches(snap, spec, finalGate, oldCC));
  } else if (distro === 'kubeadm') {
    const manifest = '/etc/kubernetes/manifests/kube-controller-manager.yaml (every control-plane node)';
    if (allocAfter) {
      out.push({ id: 'kubeadm-kcm-stop-allocating', distribution: 'kubeadm', gate: 'kcm-stop-allocating', target: manifest, description: 'stop allocating node podCIDRs (nothing else changes)', before: '    - --allocate-node-cidrs=true\n', after: '    - --allocate-node-cidrs=false\n' });
    }
    out.push({
      id: 'kubeadm-config-pod-subnet', distribution: 'kubeadm', gate: finalGate, target: 'ConfigMap kube-system/kubeadm-config (ClusterConfiguration)',
      description: 'the pod subnet kubeadm renders for new control-plane nodes and upgrades', before: `networking:\n  podSubnet: ${snap.kubeadm?.podSubnet?.join(',') ?? oldCC}\n`, after: `networking:\n  podSubnet: ${to}\n`,
    });
    const masks = kcmMaskLines(snap, spec);
    const lines = (xs: string[]) => xs.map((x) => (x.startsWith('#') ? `    ${x}\n` : `    - ${x}\n`)).join('');
    out.push({
      id: 'kubeadm-kcm-pod-cidr', distribution: 'kubeadm', gate: finalGate, target: manifest,
      description: (allocAfter ? 'allocate node podCIDRs from NEW again' : 'NEW as cluster CIDR; allocation stays off in the same edit so it starts while nodes keep old podCIDRs')
        + (masks.after.length > 0 ? `, with the plan's node podCIDR sizes (${masks.after.join(' ')})` : ''),
      before: `    - --allocate-node-cidrs=${allocAfter ? 'false' : 'true'}\n    - --cluster-cidr=${oldCC}\n${lines(masks.before)}`,
      after: `    - --allocate-node-cidrs=${allocAfter}\n    - --cluster-cidr=${to}\n${lines(masks.after)}`,
    });
  } else {
    if (allocAfter) out.push({ id: 'generic-kcm-stop-allocating', distribution: 'generic', gate: 'kcm-stop-allocating', target: 'kube-controller-manager flags', description: 'stop allocating node podCIDRs', before: '--allocate-node-cidrs=true', after: '--allocate-node-cidrs=false' });
    const masks = kcmMaskLines(snap, spec);
    const flags = masks.before.filter((x) => !x.startsWith('#'));
    out.push({
      id: 'generic-kcm-pod-cidr', distribution: 'generic', gate: finalGate, target: 'kube-controller-manager flags',
      description: (allocAfter ? 'allocate from NEW again' : 'NEW as cluster CIDR with allocation off') + (masks.after.length > 0 ? `, with the plan's node podCIDR sizes (${masks.after.join(' ')})` : ''),
      before: [`--allocate-node-cidrs=${allocAfter ? 'false' : 'true'}`, `--cluster-cidr=${oldCC}`, ...flags].join(' '),
      after: [`--allocate-node-cidrs=${allocAfter}`, `--cluster-cidr=${to}`, ...masks.after].join(' '),
    });
  }
  if (snap.kubeProxy?.clusterCIDR !== undefined || distro === 'kubeadm') {
    out.push({
      id: 'kube-proxy-cluster-cidr', distribution: distro === 'k3s' ? 'generic' : distro, gate: finalGate, target: 'ConfigMap kube-system/kube-proxy (config.conf), then restart the kube-proxy DaemonSet',
      description: 'kube-proxy tells pod traffic from outside traffic by this range (masquerade): the pod range(s), nothing wider', before: `clusterCIDR: ${snap.kubeProxy?.clusterCIDR ?? oldCC}\n`, after: `clusterCIDR: ${kubeProxyAfter(snap.kubeProxy?.clusterCIDR ?? oldCC, spec.to)}\n`,
    });
  }
  return out;
}

/**
 * The kOps patches of a Pod CIDR migration. With the Cluster spec: its fields in its layout. Without it (the
 * spec lives in the kOps state store, so a live read never has it): every field by name in the networking
 * layout with the legacy place beside it, and what was not read said as such.
 */
function kopsPodPatches(snap: Snapshot, spec: PodCIDRSpec, finalGate: PodPatchGate, oldCC: string): DistroPatch[] {
  const out: DistroPatch[] = [];
  const k = snap.kops;
  const to = spec.to.join(',');
  const allocAfter = POD_PATHS[spec.ipam].kcmAllocatesAfter;
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
