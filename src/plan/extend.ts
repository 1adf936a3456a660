/**
 * The extension plan (`plan --extend-service-cidr NEW`): room added next to the Service range, nothing moved. A second
 * ServiceCIDR object gives the apiserver's allocator more addresses (Kubernetes' "Extend Service IP Ranges",
 * https://kubernetes.io/docs/tasks/network/extend-service-ip-ranges/: the apiserver keeps ServiceCIDR `kubernetes` on
 * its --service-cluster-ip-range and allocates from every Ready ServiceCIDR), so the flag, the Services, the cluster
 * DNS and the pods stay as they are. Pure: a function of (Snapshot, options).
 */
import type { AvoidRange } from '../analyze/catalog.ts';
import { scanReferences, type RangeMove, type Reference } from '../analyze/references.ts';
import type { Family, Snapshot } from '../cluster/types.ts';
import { bits, formatCidr, overlaps, type Cidr } from '../net/index.ts';
import { ipamOwnerFacts, podPathOf } from './platform-gate.ts';
import { compatibilityCheck } from './compatibility.ts';
import { distroPatches } from './distro-patches.ts';
import { identityCheck } from './identity.ts';
import { currentFlag, cidrSlug, OBJECT_PREFIX, PLAN_API_VERSION, PLAN_KIND, planMetadata, type MigrationPlan } from './plan.ts';
import { serviceCIDRApiState, targetChecks, type PreflightCheck } from './preflight.ts';
import { enableServiceCIDRApiGate } from './service-gates.ts';
import { currentServiceRanges } from './service-mapping.ts';
import type { PlanStep, ServiceCIDRSpec } from './steps.ts';
import type { ServiceExtensionSpec } from './extend-spec.ts';

export type { ServiceExtensionSpec } from './extend-spec.ts';

export interface ExtensionPlanOptions {
  /** NEW: one CIDR per family (array or comma-separated). */
  add: string | readonly string[];
  avoid?: readonly AvoidRange[];
  generator?: string;
}

/** The ServiceCIDR an extension plan creates for NEW: kube-renumber-extend-172-24-0-0-20. */
export function extensionName(add: readonly string[]): string {
  return `${OBJECT_PREFIX}-extend-${cidrSlug(add)}`;
}

/** The step ids of an extension plan (the engine and the tests name them). */
export const EXTEND_STEP = 'extend-service-range';
export const VERIFY_EXTENSION_STEP = 'verify-extension';

/** An extension plan before its planner fills it: metadata, the identity check, nothing else (Service and pod extensions). */
export function extensionPlanShell(snap: Snapshot, generator?: string): MigrationPlan {
  return {
    apiVersion: PLAN_API_VERSION, kind: PLAN_KIND,
    metadata: planMetadata(snap, generator),
    spec: {},
    preflight: [identityCheck(snap)],
    mapping: [],
    steps: [],
  };
}

/**
 * The plan that adds NEW to the Service range. Refusals (checks with `target: true` failing) are what the CLI exits 2
 * with: NEW does not parse, adds a family, overlaps the Service range, a pod or node range, a well-known network or
 * --avoid, holds a live address, is too small to serve an address, or the cluster has no ServiceCIDR API.
 */
export function buildExtensionPlan(snap: Snapshot, opts: ExtensionPlanOptions): MigrationPlan {
  const api = serviceCIDRApiState(snap);
  const flag = currentFlag(snap);
  const plan = extensionPlanShell(snap, opts.generator);
  const tc = targetChecks(snap, { target: opts.add, avoid: opts.avoid });
  plan.preflight.push(...tc.checks.map(asExtensionCheck));
  const target = tc.target;
  if (!target || tc.checks.some((c) => c.status === 'fail' && c.target)) return plan;
  const add = [...target.values()].map(formatCidr);
  const name = extensionName(add);
  // every Service range, those inside ADD too (the move's obstacles pass a ServiceCIDR inside NEW as its own target),
  // but the ServiceCIDR this plan itself creates (planned again after apply)
  const own = (r: Snapshot['ranges'][number]) => r.source === `ServiceCIDR/${name}`;
  const from = currentServiceRanges({ ...snap, ranges: snap.ranges.filter((r) => !own(r)) });
  const hit = from.filter((f) => { const t = target.get(f.family); return !!t && overlaps(t, f); });
  if (hit.length > 0) {
    plan.preflight = plan.preflight.map((c) => (c.id === 'target-conflicts' ? {
      ...c, status: 'fail' as const,
      message: `${add.join(',')} overlaps the current service range ${hit.map(formatCidr).join(', ')}: an extension adds addresses next to it, never over it`,
      fix: 'choose a range that overlaps nothing the cluster uses: `kube-renumber suggest --for services` finds one',
    } : c));
    return plan;
  }
  if (from.length === 0 || flag.length === 0) {
    plan.preflight.push({
      id: 'service-current-range', status: 'fail', target: true,
      message: 'the current service range is not known: no kube-apiserver --service-cluster-ip-range, ServiceCIDR kubernetes, kubeadm serviceSubnet or kOps serviceClusterIPRange was read, so the plan could not check that the new range stays clear of it',
      fix: 'read the cluster live (kube-apiserver mirror pods, ServiceCIDRs), or add its kubeadm ClusterConfiguration or kOps Cluster spec with -f',
    });
    return plan;
  }
  const small = [...target.values()].filter((c) => bits(c.family) - c.prefix < 2);
  if (small.length > 0) {
    // measured on the real apiserver (kept-servicecidr.test.ts): a ServiceCIDR never serves its network and broadcast addresses
    plan.preflight.push({
      id: 'extend-size', status: 'fail', target: true,
      message: `${small.map(formatCidr).join(', ')} serves no Service address: a ServiceCIDR never hands out its first and last address, so a /${small[0]!.prefix} adds nothing`,
      fix: `give a larger range (at least /30 for IPv4, /126 for IPv6); kube-renumber suggest --for services finds one`,
    });
    return plan;
  }
  if (api.state === 'unsupported') {
    plan.preflight.push({
      id: 'servicecidr-api', status: 'fail', target: true,
      message: `Kubernetes ${snap.kubernetesVersion ?? ''} has no ServiceCIDR API (networking.k8s.io, 1.29 and later): its Service range cannot be extended, only moved by restarting the apiservers with a larger --service-cluster-ip-range`.replace('  ', ' '),
      fix: 'upgrade to 1.29 or later (1.33: the API is on by default), or keep the range and plan a move once upgraded',
    });
    return plan;
  }
  const version = compatibilityCheck(snap.kubernetesVersion, 'service');
  if (version) plan.preflight.push(version);
  const apiVersion = `networking.k8s.io/${api.version ?? 'v1'}`;
  plan.preflight.push(apiCheck(api, apiVersion));
  plan.preflight.push({
    id: 'extend-apiserver-flag', status: 'pass',
    message: `--service-cluster-ip-range stays ${flag.join(',')}: the apiserver keeps the default ServiceCIDR kubernetes on the flag's range, and allocates ClusterIPs from every Ready ServiceCIDR; `
      + `${add.join(', ')} is a second one (${name}), so no apiserver, Service or pod restarts`,
    fix: '',
  });
  plan.spec.serviceExtension = { from: from.map(formatCidr), add, name, apiVersion, flag };
  const refs = extensionReferences(snap, from, target);
  if (refs.length > 0) plan.references = refs;
  plan.steps = extensionSteps(snap, plan.spec.serviceExtension, api.state === 'enable' ? api : undefined);
  return plan;
}

/** The target checks, said of an extension (they were written for a move's NEW). */
function asExtensionCheck(c: PreflightCheck): PreflightCheck {
  if (c.id !== 'target-parse' || c.status !== 'pass') return c;
  return { ...c, message: c.message.replace('new Service CIDR', 'added Service range') };
}

/** Check `servicecidr-api`: served now, enabled at the plan's first gate, or not known offline (apply finds out). */
function apiCheck(api: ReturnType<typeof serviceCIDRApiState>, apiVersion: string): PreflightCheck {
  if (api.state === 'served') return { id: 'servicecidr-api', status: 'pass', message: `the apiserver serves ${apiVersion} ServiceCIDRs`, fix: '' };
  if (api.state === 'enable') {
    return {
      id: 'servicecidr-api', status: 'warn',
      message: `${apiVersion} is not served: gate enable-servicecidr-api stops the run until feature gate MultiCIDRServiceAllocator and --runtime-config=${apiVersion}=true are on every apiserver and controller manager`,
      fix: 'the gate shows the flags for this distribution; that restart is the only one the extension needs',
    };
  }
  return {
    id: 'servicecidr-api', status: 'warn',
    message: `not known offline whether ${apiVersion} ServiceCIDRs are served: apply creates the ServiceCIDR and stops if the API is not served`,
    fix: 'plan against the live cluster',
  };
}

/**
 * What names the Service range and must now name NEW too: range references (NetworkPolicy ipBlocks, mesh capture
 * ranges, BGP advertisements, allow-lists) of the move scan, as warnings: nothing breaks, but Services allocated in NEW
 * are outside them. References to single ClusterIPs stay right (nothing moves) and are left out.
 */
export function extensionReferences(snap: Snapshot, from: readonly Cidr[], target: ReadonlyMap<Family, Cidr>): Reference[] {
  const moves: RangeMove[] = [];
  for (const f of from) {
    const t = target.get(f.family);
    if (t) moves.push({ role: 'service', from: formatCidr(f), to: formatCidr(t) });
  }
  if (moves.length === 0) return [];
  let refs: Reference[];
  try { refs = scanReferences(snap, moves); } catch { return []; }
  return refs.filter((r) => r.value.includes('/')).map((r) => {
    const same = [...target.values()].filter((t) => t.family === (r.value.includes(':') ? 6 : 4)).map(formatCidr);
    const added = same.length > 0 ? same : [...target.values()].map(formatCidr);
    return {
      ...r, severity: 'warning' as const,
      proposed: r.value.startsWith('[') && r.value.endsWith(']') ? `${r.value.slice(0, -1)}, ${added.join(', ')}]` : `${r.value}, ${added.join(', ')}`,
      note: `the Service range grows by ${[...target.values()].map(formatCidr).join(', ')} and keeps ${r.value}: add the new range next to it, or Services allocated there are outside this ${r.kind}`,
    };
  });
}

/** The steps: the API enabled where it is off, the ServiceCIDR created, the extension verified. */
function extensionSteps(snap: Snapshot, ext: ServiceExtensionSpec, enable?: ReturnType<typeof serviceCIDRApiState>): PlanStep[] {
  const sc: ServiceCIDRSpec = { name: ext.name, cidrs: ext.add, purpose: 'extend' };
  const steps: PlanStep[] = [];
  if (enable) {
    const ctx = { oldFlag: ext.flag, newFlag: ext.flag, enableApi: enable.version };
    const gate = enableServiceCIDRApiGate({ snap, ctx, patches: distroPatches(snap, ctx) }, enable);
    steps.push({ ...gate, gate: { ...gate.gate, condition: 'extension-servicecidr-api' } });
  }
  steps.push({
    id: EXTEND_STEP, kind: 'extend-servicecidr',
    description: `create ServiceCIDR ${ext.name} for ${ext.add.join(',')} next to ${ext.from.join(', ')}; the apiserver allocates new ClusterIPs there once the old range is full `
      + `(--service-cluster-ip-range stays ${ext.flag.join(',')}; nothing moves or restarts)`,
    serviceCIDRs: [sc],
    rollback: `delete ServiceCIDR ${ext.name} while no Service holds an address in it; refused, naming the Services, once one does (delete or move them first)`,
  });
  steps.push({
    id: VERIFY_EXTENSION_STEP, kind: 'verify-extension',
    description: `check that ServiceCIDR ${ext.name} is Ready with ${ext.add.join(',')}: the apiserver allocates ClusterIPs from every Ready ServiceCIDR`,
    serviceCIDRs: [sc],
    rollback: 'nothing to undo',
  });
  return steps;
}

/**
 * Why `--extend-pod-cidr ADD` is refused on this cluster (one line; the CLI exits 2 with it). Node IPAM cannot take a
 * second range: kube-controller-manager's --cluster-cidr holds one CIDR per family (validateCIDRs in kubernetes'
 * cmd/kube-controller-manager/app/core.go refuses two of one family), and a node's podCIDRs are set once. Calico IPAM
 * is extended by src/plan/extend-pod.ts (the CLI calls this only for the other owners); extending a Cilium multi-pool
 * pool list is not built yet: the line says what to do instead.
 */
export function podExtensionRefusal(snap: Snapshot, add: string): string {
  const owner = ipamOwnerFacts(snap);
  const path = podPathOf(snap);
  const range = snap.ranges.filter((r) => r.role === 'pod').map((r) => r.cidr);
  const today = range.length > 0 ? ` (${[...new Set(range)].join(', ')})` : '';
  const seen = owner ? ` (${owner.title}, recognised by ${owner.evidence[0] ?? 'the cluster'})` : '';
  if (path === 'node') {
    return `--extend-pod-cidr ${add} refused: pods get their addresses from the nodes' podCIDRs, which kube-controller-manager's node IPAM carves out of `
      + `--cluster-cidr${today}, and it takes one CIDR per family (a second range of a family is refused at start), so no range can be added next to it${seen}; `
      + `instead: move the range with plan --pod-cidr NEW, or, where Calico IPAM hands out the addresses and the nodes' podCIDRs go unused, `
      + 'set --allocate-node-cidrs=false on kube-controller-manager and add a Calico IPPool';
  }
  if (path === 'cilium-multi-pool') {
    return `--extend-pod-cidr ${add} refused: this version does not write the extension of Cilium multi-pool pod addresses yet${seen}; `
      + 'instead: add ADD to spec.ipv4.cidrs (or ipv6) of the CiliumPodIPPool the pods take addresses from (default, for pods and namespaces without an ipam.cilium.io/ip-pool annotation: a second pool serves only those that name it) '
      + 'by hand and widen kube-proxy\'s clusterCIDR and ip-masq-agent to hold both ranges, or move the range with plan --pod-cidr NEW';
  }
  return `--extend-pod-cidr ${add} refused: who hands out pod addresses here is not known or cannot take a second range${seen}; move the range with plan --pod-cidr NEW where that is allowed`;
}
