/**
 * The Pod CIDR part of a migration plan: pre-flight checks, the pod path's section (new Calico pools, new node
 * podCIDRs), and the ordered steps with their gates. Pure: a function of (Snapshot, options). The same engine as
 * the Service plan executes it (src/engine/pod-steps.ts); docs/pod-migration.md explains the order.
 *
 * The path is chosen from the owner of the pod addresses (src/ipam/) or --ipam; each path is one folder under
 * src/pod-paths/ (calico/: a new IPPool, the old one disabled, every workload restarted; node/: every node
 * drained, re-registered and given a podCIDR in NEW), listed once in src/pod-paths/registry.ts, which installs its
 * planner (its plan.ts) into src/plan/pod-paths/registry.ts.
 */
import type { Family, Snapshot } from '../cluster/types.ts';
import {
  contains, familyName, formatCidr, NetError, parseCidr, tryParseCidr, type Cidr,
} from '../net/index.ts';
import { clusterCIDRTooWide } from '../analyze/references.ts';
import { firstAndMore, splitList } from '../text.ts';
import type { DistroPatch } from './distro-patches.ts';
import { covering } from './distributions/common.ts';
import { distributionOf, distributionPlanner } from './distributions/registry.ts';
import type { PodPatchInputs } from './distributions/types.ts';
import type { PlanStep } from './steps.ts';
import { compatibilityCheck } from './compatibility.ts';
import { distroConfigCheck, overlapHits, type PreflightCheck } from './preflight.ts';
import { maskKey, type PodCIDRSpec, type PodIpam, type PodPatchGate } from './pod-spec.ts';
import { podStepLists } from './pod-step-lists.ts';
import { podOwnerRefusal, podPathOf } from './platform-gate.ts';
import { famOf, KCM_DEFAULT_MASK, kcmMaskFlag, pass } from './pod-paths/common.ts';
import { orList, POD_PATH_NAMES, podPath } from './pod-paths/registry.ts';
import type { PodPath, PodPlanOptions } from './pod-paths/types.ts';
import { podGrowthCheck } from './growth.ts';

export type { NodeMaskSizes, PodCIDRSpec, PodIpam, PodPatchGate } from './pod-spec.ts';
export type { PodPlanOptions } from './pod-paths/types.ts';
export { maskKey } from './pod-spec.ts';
export { covering } from './distributions/common.ts';
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


/** NEW as a family → CIDR map; NetError names the first bad value. */
export function parsePodTarget(target: string | readonly string[]): Map<Family, Cidr> {
  const parts = (typeof target === 'string' ? [target] : [...target]).flatMap((t) => splitList(t));
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

/**
 * The namespaces of the pods the run deletes and creates again from their backup: pods on the pod network with
 * no controller (mirror pods have their Node as controller), not finished. Sorted, without repeats.
 */
export function barePodNamespaces(snap: Snapshot): string[] {
  const live = snap.pods.filter((p) => !p.hostNetwork && !p.owner && p.phase !== 'Succeeded' && p.phase !== 'Failed');
  return [...new Set(live.map((p) => p.namespace))].sort();
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
  const matrixPath = ipam === 'node' || ipam === 'calico' ? ipam : undefined;
  const version = matrixPath && compatibilityCheck(snap.kubernetesVersion, matrixPath);
  if (version) checks.push(version);
  if (version?.status === 'fail') return out;
  const path: PodPath = podPath(ipam);
  const old = path.oldRanges({ snap, opts, target, newText }, checks);
  if (!old) return out;
  checks.push(podConflictCheck(snap, opts, target, newText));

  const headroom = opts.headroom ?? 2;
  const dns = dnsDeployment(snap);
  const spec: PodCIDRSpec = {
    from: old.from.map(formatCidr), to: newText, ipam,
    restarts: { parallel: opts.parallel ?? DEFAULT_PARALLEL, critical: [...new Set([...(dns ? [dns] : []), ...(opts.critical ?? [])])] },
    barePodNamespaces: barePodNamespaces(snap),
  };
  out.spec = spec;
  const sized = old.size(headroom);
  Object.assign(spec, sized.section);
  checks.push(...sized.checks);
  checks.push(podGrowthCheck(snap, target, opts.nodeMaskSize));
  checks.push(...podEnvironmentChecks(snap, target, old.from, newText, path, dns));
  checks.push(...distroPodChecks(snap, spec, opts.serviceAfter));

  const lists = podStepLists(path, spec, distributionOf(snap), podPatches(snap, spec, opts.serviceAfter));
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
        : `give ${orList(POD_PATH_NAMES.map((id) => `--ipam ${id} (${podPath(id).hint})`))}`,
    });
    return undefined;
  }
  checks.push(pass('pod-ipam', `${podPath(ipam).planned}${opts.ipam && detected !== ipam ? ` (--ipam ${ipam})` : ''}`));
  return ipam;
}

/** Check `pod-target-conflicts`: NEW overlaps nothing the cluster uses or must reach. */
function podConflictCheck(snap: Snapshot, opts: PodPlanOptions, target: Map<Family, Cidr>, newText: string[]): PreflightCheck {
  const hits = overlapHits(snap, opts.avoid ?? [], target);
  return hits.length > 0
    ? { id: 'pod-target-conflicts', status: 'fail', target: true, message: firstAndMore(hits, 4), fix: 'choose a range that overlaps nothing the cluster uses or must reach (the node network included): `kube-renumber suggest --for pods` finds one' }
    : pass('pod-target-conflicts', `${newText.join(',')} overlaps no cluster range, well-known network or --avoid range and holds no live address (ClusterIP, pod IP, node address)`, true);
}

/** Checks of what else depends on the pod range: kube-proxy's clusterCIDR, unread configuration, the DNS Deployment (the platform's own: distroPodChecks). */
function podEnvironmentChecks(
  snap: Snapshot, target: Map<Family, Cidr>, from: Cidr[], newText: string[], path: PodPath, dns: string | undefined,
): PreflightCheck[] {
  const checks: PreflightCheck[] = [];
  const kubeProxy = kubeProxyCheck(snap, target, from, newText, path);
  if (kubeProxy) checks.push(kubeProxy);
  const unread = distroConfigCheck(snap);
  if (unread) checks.push(unread);
  checks.push(dns
    ? pass('pod-dns', `cluster DNS Deployment ${dns} is restarted first: handed over pod by pod when a Service with a UDP port selects it (each old pod held until kube-proxy dropped it), otherwise scaled up by one before the restarts and back afterwards`)
    : { id: 'pod-dns', status: 'warn', message: 'the cluster DNS Deployment was not found (by the DNS Service selector): it restarts with every other workload, not scaled up first', fix: 'name it with --critical NS/NAME' });
  return checks;
}

/** Check `pod-kube-proxy`: kube-proxy's clusterCIDR (when set) covers NEW, else traffic from NEW is masqueraded. */
function kubeProxyCheck(
  snap: Snapshot, target: Map<Family, Cidr>, from: Cidr[], newText: string[], path: PodPath,
): PreflightCheck | undefined {
  const kp = snap.kubeProxy?.clusterCIDR;
  if (!kp) return undefined;
  const kpc = splitList(kp).map((s) => tryParseCidr(s)).filter((c): c is Cidr => !!c);
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
  for (const c of splitList(current)) {
    const v = next.get(famOf(c)) ?? c;
    if (!out.includes(v)) out.push(v);
  }
  for (const t of to) if (!out.includes(t)) out.push(t);
  return out.join(',');
}

/** What a distribution's pod patches and pod checks are computed from. */
function podPatchInputs(snap: Snapshot, spec: PodCIDRSpec, serviceAfter?: ReadonlyMap<Family, Cidr>): PodPatchInputs {
  const path = podPath(spec.ipam);
  const kcm = snap.controllerManagers[0];
  const oldCC = kcm?.clusterCIDR?.join(',') ?? snap.kubeadm?.podSubnet?.join(',') ?? snap.kops?.podCIDR ?? spec.from.join(',');
  // kube-controller-manager stops allocating at a first gate and allocates from NEW again at the final one, or
  // allocation is turned off at the final gate (a path that does not use node podCIDRs)
  const stopGate = path.stopAllocatingGate;
  return { snap, spec, finalGate: path.finalGate, stopGate, allocAfter: stopGate !== undefined, oldCC, to: spec.to.join(','), masks: kcmMaskLines(snap, spec), ...(serviceAfter ? { serviceAfter } : {}) };
}

/** The distribution's own pre-flight checks of the values its pod patches give. */
export function distroPodChecks(snap: Snapshot, spec: PodCIDRSpec, serviceAfter?: ReadonlyMap<Family, Cidr>): PreflightCheck[] {
  return distributionPlanner(snap).podChecks?.(podPatchInputs(snap, spec, serviceAfter)) ?? [];
}

/** Distribution changes of a Pod CIDR migration, as before/after text. */
export function podPatches(snap: Snapshot, spec: PodCIDRSpec, serviceAfter?: ReadonlyMap<Family, Cidr>): DistroPatch[] {
  const out: DistroPatch[] = [];
  const distro = distributionPlanner(snap);
  const inp = podPatchInputs(snap, spec, serviceAfter);
  const { finalGate, oldCC } = inp;
  out.push(...distro.podPatches(inp));
  if (distro.kubeProxyPatch && (snap.kubeProxy?.clusterCIDR !== undefined || distro.kubeProxyPatch.always)) {
    out.push({
      id: 'kube-proxy-cluster-cidr', distribution: distro.kubeProxyPatch.distribution, gate: finalGate, target: 'ConfigMap kube-system/kube-proxy (config.conf), then restart the kube-proxy DaemonSet',
      description: 'kube-proxy tells pod traffic from outside traffic by this range (masquerade): the pod range(s), nothing wider', before: `clusterCIDR: ${snap.kubeProxy?.clusterCIDR ?? oldCC}\n`, after: `clusterCIDR: ${kubeProxyAfter(snap.kubeProxy?.clusterCIDR ?? oldCC, spec.to)}\n`,
    });
  }
  return out;
}
