/**
 * The Pod CIDR part of a migration plan: pre-flight checks, the new Calico pool or the new node podCIDRs,
 * and the ordered steps with their gates. Pure: a function of (Snapshot, options). The same engine as the
 * Service plan executes it (src/engine/pod-steps.ts); docs/pod-migration.md explains the order.
 *
 * Two paths, chosen from the cluster's IPAM:
 *  calico: pods take addresses from Calico IPPools (calico-ipam): a new pool, the old one disabled, every
 *          workload restarted in waves, the old pool and its leftover blocks removed, then the distribution
 *          settings (kube-controller-manager stops allocating node podCIDRs in the same change that names
 *          NEW, so it keeps starting).
 *  node:   pods take addresses from their node's spec.podCIDR (flannel, kubenet, host-local, Cilium's
 *          kubernetes IPAM): podCIDR is immutable, so every node is drained, deleted and re-registered, and
 *          gets its podCIDR in NEW from this tool while kube-controller-manager does not allocate (it crashes
 *          at start while any node's podCIDR is outside --cluster-cidr; see docs/testbed.md).
 */
import { clusterCIDRs } from '../analyze/capacity.ts';
import type { AvoidRange } from '../analyze/catalog.ts';
import type { CalicoPool, Family, Snapshot } from '../cluster/types.ts';
import {
  contains, familyName, formatCidr, NetError, overlaps, parseCidr, split, supernet, tryParseCidr, type Cidr,
} from '../net/index.ts';
import { addressPlan } from '../analyze/addressing.ts';
import { KOPS_EDIT, KOPS_UNREAD_HEADER, type DistroPatch } from './distro-patches.ts';
import type { PlanStep } from './steps.ts';
import { distributionOf, distroConfigCheck, overlapHits, type PreflightCheck } from './preflight.ts';
import { currentServiceRanges } from './service-mapping.ts';

export type PodIpam = 'calico' | 'node';

/** Defaults: rollouts in flight at once; nodes re-registered one at a time. */
export const DEFAULT_PARALLEL = 4;
export const POOL_PREFIX = 'kube-renumber';

export interface PodPlanOptions {
  /** NEW pod range: one CIDR per family (array or comma-separated). */
  target: string | readonly string[];
  avoid?: readonly AvoidRange[];
  /** Override the detected IPAM. */
  ipam?: PodIpam;
  /** Workload restarts in flight at once (default 4). */
  parallel?: number;
  /** Deployments (namespace/name) scaled up before the restarts, besides the cluster DNS. */
  critical?: readonly string[];
  /** Calico: block size of the new pool (default: the old pool's). */
  blockSize?: number;
  /** Calico: name of the new pool (default kube-renumber-<cidr>). */
  poolName?: string;
  /** Node path: the node podCIDR size (default: kube-controller-manager's --node-cidr-mask-size, else 24/64). */
  nodeMaskSize?: number;
  /** Node path: a command that re-registers a deleted node (env KUBE_RENUMBER_NODE); without it each node is a gate. */
  nodeHook?: string;
  /** Minimum free room in NEW: blocks or node podCIDRs for today's nodes times this (default 2). */
  headroom?: number;
}

export interface PoolData {
  name: string;
  cidr: string;
  blockSize: number;
  ipipMode?: string;
  vxlanMode?: string;
  natOutgoing?: boolean;
  nodeSelector?: string;
  allowedUses?: string[];
}

export interface PodCIDRSpec {
  /** The pod ranges the migration leaves (pools or cluster CIDRs of NEW's families). */
  from: string[];
  /** NEW. */
  to: string[];
  ipam: PodIpam;
  calico?: { operatorManaged: boolean; oldPools: PoolData[]; newPools: PoolData[] };
  node?: { maskSize: number; hook?: string; nodes: Array<{ name: string; from: string[]; to: string[] }> };
  restarts: { parallel: number; critical: string[] };
}

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

function famOf(c: string): Family {
  return c.includes(':') ? 6 : 4;
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

/** Which IPAM gives pods their addresses. */
export function podIpamOf(snap: Snapshot): PodIpam | undefined {
  if (snap.cni.ipam === 'calico-ipam') return 'calico';
  if (snap.cni.ipam === 'host-local') return 'node';
  if (snap.cni.plugin === 'flannel') return 'node';
  if (snap.cni.plugin === 'cilium' && snap.cni.ipamMode === 'kubernetes') return 'node';
  if (snap.cni.plugin === 'calico' && snap.pools.length > 0) return 'calico';
  if (snap.cni.plugin === 'unknown' && snap.pools.length > 0) return 'calico';
  if (snap.cni.plugin === 'unknown' && snap.nodes.some((n) => n.podCIDRs.length > 0)) return 'node';
  return undefined;
}

/** The slug used in generated names: 172.16.0.0/13 → 172-16-0-0-13. */
export function slug(cidr: string): string {
  return cidr.toLowerCase().replace(/[:./]/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
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

function poolData(p: CalicoPool): PoolData {
  const out: PoolData = { name: p.name, cidr: p.cidr, blockSize: p.blockSize };
  if (p.ipipMode !== undefined) out.ipipMode = p.ipipMode;
  if (p.vxlanMode !== undefined) out.vxlanMode = p.vxlanMode;
  if (p.natOutgoing !== undefined) out.natOutgoing = p.natOutgoing;
  if (p.nodeSelector !== undefined) out.nodeSelector = p.nodeSelector;
  if (p.allowedUses !== undefined) out.allowedUses = [...p.allowedUses];
  return out;
}

function pass(id: string, message: string, target = false): PreflightCheck {
  return { id, status: 'pass', message, fix: '', ...(target ? { target: true } : {}) };
}

/** kube-controller-manager's node podCIDR size for a family, from its flags, kubeadm, else the default. */
function nodeMaskOf(snap: Snapshot, f: Family): number {
  for (const k of snap.controllerManagers) {
    const m = f === 4 ? k.nodeCIDRMaskSizeIPv4 ?? k.nodeCIDRMaskSize : k.nodeCIDRMaskSizeIPv6 ?? k.nodeCIDRMaskSize;
    if (m !== undefined) return m;
  }
  const ka = snap.kubeadm?.controllerManagerExtraArgs?.[f === 4 ? 'node-cidr-mask-size-ipv4' : 'node-cidr-mask-size-ipv6'] ?? snap.kubeadm?.controllerManagerExtraArgs?.['node-cidr-mask-size'];
  if (ka && /^\d+$/.test(ka)) return Number(ka);
  const fromNode = snap.nodes.flatMap((n) => n.podCIDRs).map((c) => tryParseCidr(c)).find((c) => c?.family === f);
  if (fromNode) return fromNode.prefix;
  return f === 4 ? 24 : 64;
}

/** Builds the Pod CIDR section. Never throws on cluster data. */
export function buildPodSection(snap: Snapshot, opts: PodPlanOptions): PodPlanSection {
  const out: PodPlanSection = { preflight: [], prepare: [], restart: [], finish: [] };
  const checks = out.preflight;
  let target: Map<Family, Cidr>;
  try {
    target = parsePodTarget(opts.target);
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
    checks.push({ id: 'pod-target-parse', status: 'fail', target: true, message: e.message, fix: 'give NEW as address/prefix, e.g. --pod-cidr 172.16.0.0/13' });
    return out;
  }
  const newText = [...target.values()].map(formatCidr);
  checks.push(pass('pod-target-parse', `new pod CIDR ${newText.join(',')}`, true));

  // ---- IPAM ----
  const detected = podIpamOf(snap);
  const ipam = opts.ipam ?? detected;
  if (!ipam) {
    checks.push({
      id: 'pod-ipam', status: 'fail', target: false,
      message: `cannot tell how pods get their addresses (CNI ${snap.cni.plugin}, IPAM ${snap.cni.ipam}${snap.cni.ipamMode ? ` ${snap.cni.ipamMode}` : ''})`,
      fix: 'give --ipam calico (Calico IPPools) or --ipam node (node podCIDRs: flannel, kubenet, host-local, Cilium kubernetes IPAM)',
    });
    return out;
  }
  if (snap.cni.plugin === 'cilium' && snap.cni.ipamMode && snap.cni.ipamMode !== 'kubernetes') {
    checks.push({
      id: 'pod-ipam', status: 'fail', target: false,
      message: `Cilium IPAM mode ${snap.cni.ipamMode}: pod addresses come from CiliumNode objects, not node podCIDRs or Calico pools`,
      fix: 'Cilium cluster-pool does not support changing its CIDRs; multi-pool has its own node-group-by-node-group procedure (docs/pod-migration.md)',
    });
    return out;
  }
  checks.push(pass('pod-ipam', ipam === 'calico'
    ? `Calico IPAM (calico-ipam): pods take addresses from IPPools${opts.ipam && detected !== 'calico' ? ' (--ipam calico)' : ''}`
    : `node IPAM: pods take addresses from their node's spec.podCIDR${opts.ipam && detected !== 'node' ? ' (--ipam node)' : ''}`));

  // ---- OLD ----
  const movedFamily = (c: string) => target.has(famOf(c));
  const insideNew = (c: Cidr) => { const t = target.get(c.family); return !!t && contains(t, c); };
  let oldPools: CalicoPool[] = [];
  let from: Cidr[] = [];
  if (ipam === 'calico') {
    oldPools = snap.pools.filter((p) => movedFamily(p.cidr) && !insideNew(parseCidr(p.cidr)));
    from = oldPools.map((p) => parseCidr(p.cidr));
    if (oldPools.length === 0) {
      checks.push({ id: 'pod-old-pools', status: 'fail', message: `no Calico IPPool of ${[...target.keys()].map(familyName).join('/')} outside ${newText.join(',')}: nothing to move`, fix: 'check `kube-renumber inspect`: the pools are read from crd.projectcalico.org/v1 ippools' });
      return out;
    }
  } else {
    const cc = clusterCIDRs(snap).map((c) => c.cidr).filter((c) => target.has(c.family) && !insideNew(c));
    const nodeCidrs = snap.nodes.flatMap((n) => n.podCIDRs).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c && target.has(c.family) && !insideNew(c));
    from = [...cc];
    for (const n of nodeCidrs) if (!from.some((c) => contains(c, n))) from.push(n);
    if (from.length === 0) {
      checks.push({ id: 'pod-old-range', status: 'fail', message: 'no node podCIDR or cluster CIDR outside NEW: nothing to move', fix: 'check `kube-renumber inspect`' });
      return out;
    }
  }
  const fromText = from.map(formatCidr);

  // ---- conflicts ----
  const hits = overlapHits(snap, opts.avoid ?? [], target);
  checks.push(hits.length > 0
    ? { id: 'pod-target-conflicts', status: 'fail', target: true, message: hits.slice(0, 4).join(', ') + (hits.length > 4 ? ` and ${hits.length - 4} more` : ''), fix: 'choose a range that overlaps nothing the cluster uses or must reach (the node network included): `kube-renumber suggest --for pods` finds one' }
    : pass('pod-target-conflicts', `${newText.join(',')} overlaps no cluster range, node address, well-known network or --avoid range`, true));

  const headroom = opts.headroom ?? 2;
  const nodes = snap.nodes.length;
  const parallel = opts.parallel ?? DEFAULT_PARALLEL;
  const dns = dnsDeployment(snap);
  const critical = [...new Set([...(dns ? [dns] : []), ...(opts.critical ?? [])])];
  const spec: PodCIDRSpec = { from: fromText, to: newText, ipam, restarts: { parallel, critical } };
  out.spec = spec;

  // ---- size ----
  if (ipam === 'calico') {
    const newPools: PoolData[] = [];
    const sizeProblems: string[] = [];
    const sizeFine: string[] = [];
    for (const [f, t] of target) {
      const model = oldPools.find((p) => famOf(p.cidr) === f);
      if (!model) {
        sizeProblems.push(`${formatCidr(t)}: the cluster has no ${familyName(f)} Calico pool to move; give NEW only for the families it has`);
        continue;
      }
      const blockSize = opts.blockSize ?? model.blockSize;
      const max = f === 4 ? 32 : 128;
      const min = f === 4 ? 20 : 116;
      if (blockSize < Math.max(min, t.prefix) || blockSize > max) {
        sizeProblems.push(`block size /${blockSize} must be between /${Math.max(min, t.prefix)} and /${max} for ${formatCidr(t)}`);
        continue;
      }
      const blocks = 1n << BigInt(blockSize - t.prefix);
      const perBlock = 1n << BigInt(max - blockSize);
      const pods = snap.pods.filter((p) => !p.hostNetwork && p.podIPs.some((a) => famOf(a) === f)).length;
      const needBlocks = BigInt(Math.ceil(Math.max(nodes, 1) * headroom));
      const needAddrs = BigInt(Math.ceil(Math.max(pods, 1) * headroom));
      const line = `${formatCidr(t)}: ${blocks} blocks of /${blockSize} (${perBlock} addresses each) for ${nodes} node(s) and ${pods} pod(s) (x${headroom} headroom)`;
      if (blocks < needBlocks || blocks * perBlock < needAddrs) sizeProblems.push(line); else sizeFine.push(line);
      const np: PoolData = { ...poolData(model), name: opts.poolName && target.size === 1 ? opts.poolName : `${POOL_PREFIX}-${slug(formatCidr(t))}`, cidr: formatCidr(t), blockSize };
      newPools.push(np);
    }
    checks.push(sizeProblems.length > 0
      ? { id: 'pod-target-size', status: 'fail', target: true, message: sizeProblems.join('; '), fix: 'choose a larger range or a smaller block size (--block-size), or lower --headroom' }
      : pass('pod-target-size', sizeFine.join('; '), true));
    spec.calico = { operatorManaged: snap.cni.operatorManaged, oldPools: oldPools.map(poolData), newPools };
    checks.push(snap.cni.operatorManaged
      ? { id: 'pod-calico-install', status: 'warn', message: 'the Tigera operator manages Calico: it reverts direct IPPool edits, so pools are changed through Installation.spec.calicoNetwork.ipPools', fix: '' }
      : pass('pod-calico-install', 'manifest install: IPPools are changed directly (crd.projectcalico.org/v1, every field written explicitly)'));
  } else {
    const nodeSteps: NonNullable<PodCIDRSpec['node']>['nodes'] = [];
    const masks = new Map<Family, number>();
    const problems: string[] = [];
    for (const [f, t] of target) {
      const mask = opts.nodeMaskSize ?? nodeMaskOf(snap, f);
      masks.set(f, mask);
      if (mask < t.prefix || mask > (f === 4 ? 32 : 128) || mask - t.prefix > 16) {
        problems.push(`node podCIDR size /${mask} does not fit ${formatCidr(t)} (kube-controller-manager needs the node mask at most 16 bits longer than the cluster CIDR)`);
        continue;
      }
      const have = 1n << BigInt(mask - t.prefix);
      const need = BigInt(Math.ceil(Math.max(nodes, 1) * headroom));
      if (have < need) problems.push(`${formatCidr(t)} holds ${have} node podCIDRs of /${mask}; ${nodes} node(s) x${headroom} headroom need ${need}`);
    }
    checks.push(problems.length > 0
      ? { id: 'pod-target-size', status: 'fail', target: true, message: problems.join('; '), fix: 'choose a larger range or a longer --node-mask-size, or lower --headroom' }
      : pass('pod-target-size', [...target].map(([f, t]) => `${formatCidr(t)}: ${1n << BigInt(masks.get(f)! - t.prefix)} node podCIDRs of /${masks.get(f)} for ${nodes} node(s)`).join('; '), true));
    if (problems.length === 0) {
      // Deterministic assignment: nodes in name order take the blocks of NEW in order.
      const blocks = new Map<Family, Cidr[]>();
      for (const [f, t] of target) blocks.set(f, split(t, masks.get(f)!, nodes));
      [...snap.nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).forEach((n, i) => {
        nodeSteps.push({ name: n.name, from: [...n.podCIDRs], to: [...target.keys()].map((f) => formatCidr(blocks.get(f)![i]!)) });
      });
    }
    spec.node = { maskSize: masks.get([...target.keys()][0]!) ?? 24, nodes: nodeSteps, ...(opts.nodeHook ? { hook: opts.nodeHook } : {}) };
    const kcmKnown = snap.controllerManagers.length > 0;
    checks.push(kcmKnown
      ? pass('pod-kcm-flags', `kube-controller-manager flags are visible (${snap.controllerManagers.map((k) => k.pod).join(', ')}): the gates check them`)
      : { id: 'pod-kcm-flags', status: 'warn', message: 'kube-controller-manager runs without a mirror pod: its flags cannot be read, so its two gates need --ack-gate', fix: '' });
    checks.push(opts.nodeHook
      ? pass('pod-node-hook', `nodes re-register through the hook: ${opts.nodeHook}`)
      : { id: 'pod-node-hook', status: 'warn', message: `no --node-hook: each of the ${nodes} node(s) stops at a gate after it is deleted, until its kubelet registers it again`, fix: 'give --node-hook CMD (run with KUBE_RENUMBER_NODE=<name>) to re-register nodes without stopping' });
    checks.push({ id: 'pod-autoscaler', status: 'warn', message: 'while kube-controller-manager does not allocate podCIDRs, nodes added by an autoscaler get none from it', fix: 'pause the cluster autoscaler for the migration; verify names any node left without a podCIDR in NEW' });
  }

  // ---- kube-proxy and masquerade ----
  const kp = snap.kubeProxy?.clusterCIDR;
  if (kp) {
    const kpc = kp.split(',').map((s) => tryParseCidr(s.trim())).filter((c): c is Cidr => !!c);
    const uncovered = [...target.values()].filter((t) => !kpc.some((c) => contains(c, t)));
    const both = [...target].map(([f, t]) => { const o = from.filter((c) => c.family === f); return o.length ? formatCidr(covering([t, ...o])) : formatCidr(t); });
    checks.push(uncovered.length > 0
      ? {
        id: 'pod-kube-proxy', status: 'warn',
        message: `kube-proxy clusterCIDR ${kp} does not cover ${uncovered.map(formatCidr).join(',')}: during the move it masquerades Service traffic from pods in NEW (source IPs lost to NetworkPolicies and logs)`,
        fix: `during the move set kube-proxy detectLocalMode to InterfaceNamePrefix (Calico: cali) or clusterCIDR to a range covering both (${both.join(',')}); afterwards ${newText.join(',')} (gate ${ipam === 'calico' ? 'pod-cidr-config' : 'kcm-cluster-cidr'})`,
      }
      : pass('pod-kube-proxy', `kube-proxy clusterCIDR ${kp} covers ${newText.join(',')}`));
  }
  if (snap.kops?.nonMasqueradeCIDR) {
    const nm = tryParseCidr(snap.kops.nonMasqueradeCIDR);
    const outside = [...target.values()].filter((t) => nm && nm.family === t.family && !contains(nm, t));
    checks.push(outside.length > 0
      ? { id: 'pod-kops-nonmasquerade', status: 'warn', message: `kOps nonMasqueradeCIDR ${snap.kops.nonMasqueradeCIDR} does not contain ${outside.map(formatCidr).join(',')}: traffic from NEW would be masqueraded`, fix: 'the pod-cidr-config gate changes nonMasqueradeCIDR with podCIDR (patch kops-pod-cidr)' }
      : pass('pod-kops-nonmasquerade', `kOps nonMasqueradeCIDR ${snap.kops.nonMasqueradeCIDR} contains ${newText.join(',')}`));
  }
  const unread = distroConfigCheck(snap);
  if (unread) checks.push(unread);
  checks.push(dns
    ? pass('pod-dns', `cluster DNS Deployment ${dns} is scaled up by one before the restarts and back afterwards`)
    : { id: 'pod-dns', status: 'warn', message: 'the cluster DNS Deployment was not found (by the DNS Service selector): it restarts with every other workload, not scaled up first', fix: 'name it with --critical NS/NAME' });

  // ---- steps ----
  const critItems = critical.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name!, from: [], to: [] }; });
  const scaleUp: PlanStep = {
    id: 'scale-critical', kind: 'scale-critical',
    description: `scale ${critical.join(', ') || 'no Deployment'} up by one replica (at least 2) before pods restart, so name resolution never rests on one pod`,
    items: critItems,
    rollback: 'put the replicas back from the backup',
  };
  const scaleDown: PlanStep = {
    id: 'restore-scale', kind: 'restore-scale',
    description: `put ${critical.join(', ') || 'no Deployment'} back to the replicas they had before scale-critical`,
    items: critItems,
    rollback: 'nothing to undo',
  };
  const verify: PlanStep = {
    id: 'verify-pods', kind: 'verify-pods',
    description: `check the end state: no non-hostNetwork pod has an address in ${fromText.join(', ')}; every Deployment, StatefulSet and DaemonSet at its desired replicas`
      + (ipam === 'calico' ? `; the old pool(s) and every IPAMBlock / BlockAffinity in ${fromText.join(', ')} gone; the new pool enabled` : `; every node's podCIDR in ${newText.join(',')}`),
    rollback: 'nothing to undo',
  };
  const distro = distributionOf(snap);
  const patches = podPatches(snap, spec);

  if (ipam === 'calico') {
    const cal = spec.calico!;
    const via = cal.operatorManaged ? ' through Installation/default spec.calicoNetwork.ipPools (the operator creates it)' : '';
    out.prepare.push({
      id: 'create-ippool', kind: 'create-ippool',
      description: `create IPPool ${cal.newPools.map((p) => `${p.name} ${p.cidr} (blockSize ${p.blockSize}${p.ipipMode ? `, ipip ${p.ipipMode}` : ''}${p.vxlanMode ? `, vxlan ${p.vxlanMode}` : ''}, natOutgoing ${p.natOutgoing ?? false}, nodeSelector ${p.nodeSelector ?? 'all()'})`).join(', ')}${via}, copying the old pool's settings`,
      items: cal.newPools.map((p) => ({ namespace: '', name: p.name, from: [], to: [p.cidr] })),
      rollback: 'delete the new pool (only while no pod holds an address in it)',
    });
    out.prepare.push({
      id: 'disable-ippools', kind: 'disable-ippools',
      description: `disable IPPool ${cal.oldPools.map((p) => `${p.name} ${p.cidr}`).join(', ')}${cal.operatorManaged ? ' (Installation ipPools disableNewAllocations)' : ' (spec.disabled: true)'}: running pods keep their addresses, new pods take them from the new pool`,
      items: cal.oldPools.map((p) => ({ namespace: '', name: p.name, from: [p.cidr], to: [] })),
      rollback: 'enable the old pool(s) again',
    });
    out.prepare.push(scaleUp);
  } else {
    out.prepare.push({
      id: 'kcm-stop-allocating', kind: 'gate',
      description: 'restart kube-controller-manager with --allocate-node-cidrs=false (nothing else changed): it then starts whatever podCIDRs the nodes have, and leaves new nodes\' podCIDRs to this tool',
      gate: {
        condition: 'kcm-stop-allocating',
        reason: 'kube-controller-manager refuses to start while a node\'s podCIDR lies outside --cluster-cidr (measured: it exits at start), and nodes of both ranges coexist during the move',
        instructions: podGateInstructions(distro, 'kcm-stop-allocating'),
        check: 'every kube-controller-manager pod runs with --allocate-node-cidrs=false (mirror pod flags; --ack-gate kcm-stop-allocating where there are none)',
        patches: patches.filter((p) => p.gate === 'kcm-stop-allocating'),
      },
      rollback: 'restart it with --allocate-node-cidrs=true again (only while every node still has its old podCIDR)',
    });
    out.prepare.push(scaleUp);
  }

  if (ipam === 'calico') {
    out.restart.push({
      id: 'restart-pods', kind: 'restart-pods',
      description: `restart every workload with a pod in ${fromText.join(', ')}, ${parallel} rollout(s) at a time, the critical ones first: Deployments, StatefulSets and DaemonSets by the restartedAt annotation (awaited, paused ones reported, never forced); `
        + 'Job pods and bare pods by eviction through the Eviction API (PodDisruptionBudgets respected; bare pods created again from their backup); hostNetwork pods skipped',
      rollback: 'nothing to undo: restarted pods keep running in NEW (re-enable the old pool first to move back)',
    });
  } else {
    for (const n of spec.node!.nodes) {
      out.restart.push({
        id: `drain-node-${n.name}`, kind: 'drain-node',
        description: `node ${n.name} (${n.from.join(',') || 'no podCIDR'}): cordon (once a node in NEW is Ready: every node still in the old range), evict its pods through the Eviction API (PodDisruptionBudgets respected; DaemonSet and mirror pods stay), delete the Node object and the pods left on it`,
        items: [{ namespace: '', name: n.name, from: n.from, to: n.to }],
        rollback: 'a deleted Node cannot be put back with its podCIDR: it re-registers and takes a podCIDR in NEW',
      });
      if (spec.node!.hook) {
        out.restart.push({
          id: `reregister-node-${n.name}`, kind: 'reregister-node',
          description: `run the node hook for ${n.name} (KUBE_RENUMBER_NODE=${n.name}) and wait until the node is registered again`,
          items: [{ namespace: '', name: n.name, from: n.from, to: n.to }],
          rollback: 'nothing to undo',
        });
      } else {
        out.restart.push({
          id: `reregister-node-${n.name}`, kind: 'gate',
          description: `re-register node ${n.name}: restart its kubelet (or replace the machine keeping the name) so it creates its Node object again`,
          items: [{ namespace: '', name: n.name, from: n.from, to: n.to }],
          gate: {
            condition: 'node-reregistered',
            reason: 'only the kubelet (or the machine\'s provisioning) registers a node',
            instructions: [`on ${n.name}: systemctl restart kubelet (it registers the Node again)`, 'kube-renumber resume'],
            check: `Node ${n.name} exists again`,
          },
          rollback: 'nothing to undo',
        });
      }
      out.restart.push({
        id: `assign-podcidr-${n.name}`, kind: 'assign-podcidr',
        description: `give node ${n.name} podCIDR ${n.to.join(',')}, wait until it is Ready, and delete any pod that started on it before it had the podCIDR (its owner recreates it)`,
        items: [{ namespace: '', name: n.name, from: n.from, to: n.to }],
        rollback: 'a node podCIDR cannot be changed: delete and re-register the node again',
      });
    }
  }

  out.finish.push(scaleDown);
  if (ipam === 'calico') {
    const cal = spec.calico!;
    out.finish.push({
      id: 'delete-ippools', kind: 'delete-ippools',
      description: `delete IPPool ${cal.oldPools.map((p) => p.name).join(', ')}${cal.operatorManaged ? ' (removed from Installation ipPools)' : ''} once no pod holds an address in it`,
      items: cal.oldPools.map((p) => ({ namespace: '', name: p.name, from: [p.cidr], to: [] })),
      rollback: 'create the pool again from its backup',
    });
    out.finish.push({
      id: 'remove-ipam-leftovers', kind: 'remove-ipam-leftovers',
      description: `delete the BlockAffinity and IPAMBlock objects (and IPAMHandles left pointing only at them) in ${fromText.join(', ')}: Calico leaves them after a pool is deleted, and they later overlap new pools (calico#10778); a block still holding an address of an existing pod stops the step`,
      rollback: 'recreate them from the backups (only useful together with the old pool)',
    });
    out.finish.push({
      id: 'pod-cidr-config', kind: 'gate',
      description: `change the pod range in the distribution's configuration to ${newText.join(',')}, with kube-controller-manager --allocate-node-cidrs=false in the same change so it keeps starting (node podCIDRs stay in the old range; Calico does not use them)`,
      gate: {
        condition: 'pod-cidr-config',
        reason: 'kube-controller-manager\'s --cluster-cidr, kube-proxy\'s clusterCIDR and the distribution\'s pod range live outside the API; with --allocate-node-cidrs=true and --cluster-cidr=NEW it would exit at start while nodes keep old podCIDRs',
        instructions: podGateInstructions(distro, 'pod-cidr-config'),
        check: `every kube-controller-manager pod runs with --allocate-node-cidrs=false or --cluster-cidr inside ${newText.join(',')}, and the kube-proxy ConfigMap's clusterCIDR (when set) covers ${newText.join(',')}; --ack-gate pod-cidr-config where neither is visible`,
        patches: patches.filter((p) => p.gate === 'pod-cidr-config'),
      },
      rollback: 'put the old values back',
    });
  } else {
    out.finish.push({
      id: 'kcm-cluster-cidr', kind: 'gate',
      description: `restart kube-controller-manager with --cluster-cidr=${newText.join(',')} and --allocate-node-cidrs=true (every node's podCIDR is in NEW now, so it starts), and change the distribution's pod range and kube-proxy clusterCIDR`,
      gate: {
        condition: 'kcm-cluster-cidr',
        reason: 'new nodes need podCIDRs from kube-controller-manager again; the flag lives outside the API',
        instructions: podGateInstructions(distro, 'kcm-cluster-cidr'),
        check: `every kube-controller-manager pod runs with --cluster-cidr=${newText.join(',')} and --allocate-node-cidrs=true (--ack-gate kcm-cluster-cidr where there is no mirror pod)`,
        patches: patches.filter((p) => p.gate === 'kcm-cluster-cidr'),
      },
      rollback: 'restart it with --allocate-node-cidrs=false (it will not start with the old --cluster-cidr any more)',
    });
  }
  out.finish.push(verify);
  return out;
}

export type PodPatchGate = 'kcm-stop-allocating' | 'kcm-cluster-cidr' | 'pod-cidr-config';

function podGateInstructions(distro: ReturnType<typeof distributionOf>, gate: PodPatchGate): string[] {
  if (distro === 'kops') {
    return gate === 'kcm-stop-allocating'
      ? ['kops edit cluster (patch kops-stop-allocating)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', 'kube-renumber resume --ack-gate kcm-stop-allocating (when kube-controller-manager has no mirror pod)']
      : ['kops edit cluster (patch kops-pod-cidr)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', `kube-renumber resume --ack-gate ${gate} (when kube-controller-manager has no mirror pod)`];
  }
  if (distro === 'kubeadm') {
    if (gate === 'kcm-stop-allocating') return ['on each control-plane node: edit /etc/kubernetes/manifests/kube-controller-manager.yaml (patch kubeadm-kcm-stop-allocating)', 'kube-renumber resume'];
    return [
      'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-config-pod-subnet)',
      'on each control-plane node: edit /etc/kubernetes/manifests/kube-controller-manager.yaml (patch kubeadm-kcm-pod-cidr)',
      'kubectl -n kube-system edit cm kube-proxy (patch kube-proxy-cluster-cidr), then kubectl -n kube-system rollout restart daemonset kube-proxy',
      'kube-renumber resume',
    ];
  }
  return gate === 'kcm-stop-allocating'
    ? ['restart every kube-controller-manager with --allocate-node-cidrs=false (patch generic-kcm-stop-allocating)', `kube-renumber resume --ack-gate ${gate}`]
    : ['restart every kube-controller-manager with the flags of patch generic-kcm-pod-cidr', 'set kube-proxy clusterCIDR (patch kube-proxy-cluster-cidr) and restart kube-proxy', `kube-renumber resume --ack-gate ${gate}`];
}

/** Distribution changes of a Pod CIDR migration, as before/after text. */
export function podPatches(snap: Snapshot, spec: PodCIDRSpec): DistroPatch[] {
  const out: DistroPatch[] = [];
  const distro = distributionOf(snap);
  const to = spec.to.join(',');
  const finalGate: PodPatchGate = spec.ipam === 'calico' ? 'pod-cidr-config' : 'kcm-cluster-cidr';
  const kcm = snap.controllerManagers[0];
  const oldCC = kcm?.clusterCIDR?.join(',') ?? snap.kubeadm?.podSubnet?.join(',') ?? snap.kops?.podCIDR ?? spec.from.join(',');
  const allocAfter = spec.ipam === 'node';
  if (distro === 'kops') {
    out.push(...kopsPodPatches(snap, spec, finalGate, oldCC));
  } else if (distro === 'kubeadm') {
    const manifest = '/etc/kubernetes/manifests/kube-controller-manager.yaml (every control-plane node)';
    if (spec.ipam === 'node') {
      out.push({ id: 'kubeadm-kcm-stop-allocating', distribution: 'kubeadm', gate: 'kcm-stop-allocating', target: manifest, description: 'stop allocating node podCIDRs (nothing else changes)', before: '    - --allocate-node-cidrs=true\n', after: '    - --allocate-node-cidrs=false\n' });
    }
    out.push({
      id: 'kubeadm-config-pod-subnet', distribution: 'kubeadm', gate: finalGate, target: 'ConfigMap kube-system/kubeadm-config (ClusterConfiguration)',
      description: 'the pod subnet kubeadm renders for new control-plane nodes and upgrades', before: `networking:\n  podSubnet: ${snap.kubeadm?.podSubnet?.join(',') ?? oldCC}\n`, after: `networking:\n  podSubnet: ${to}\n`,
    });
    out.push({
      id: 'kubeadm-kcm-pod-cidr', distribution: 'kubeadm', gate: finalGate, target: manifest,
      description: allocAfter ? 'allocate node podCIDRs from NEW again' : 'NEW as cluster CIDR; allocation stays off in the same edit so it starts while nodes keep old podCIDRs',
      before: `    - --allocate-node-cidrs=${allocAfter ? 'false' : 'true'}\n    - --cluster-cidr=${oldCC}\n`, after: `    - --allocate-node-cidrs=${allocAfter}\n    - --cluster-cidr=${to}\n`,
    });
  } else {
    if (spec.ipam === 'node') out.push({ id: 'generic-kcm-stop-allocating', distribution: 'generic', gate: 'kcm-stop-allocating', target: 'kube-controller-manager flags', description: 'stop allocating node podCIDRs', before: '--allocate-node-cidrs=true', after: '--allocate-node-cidrs=false' });
    out.push({ id: 'generic-kcm-pod-cidr', distribution: 'generic', gate: finalGate, target: 'kube-controller-manager flags', description: allocAfter ? 'allocate from NEW again' : 'NEW as cluster CIDR with allocation off', before: `--allocate-node-cidrs=${allocAfter ? 'false' : 'true'} --cluster-cidr=${oldCC}`, after: `--allocate-node-cidrs=${allocAfter} --cluster-cidr=${to}` });
  }
  if (snap.kubeProxy?.clusterCIDR !== undefined || distro === 'kubeadm') {
    out.push({
      id: 'kube-proxy-cluster-cidr', distribution: distro === 'k3s' ? 'generic' : distro, gate: finalGate, target: 'ConfigMap kube-system/kube-proxy (config.conf), then restart the kube-proxy DaemonSet',
      description: 'kube-proxy tells pod traffic from outside traffic by this range (masquerade)', before: `clusterCIDR: ${snap.kubeProxy?.clusterCIDR ?? oldCC}\n`, after: `clusterCIDR: ${to}\n`,
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
  const allocAfter = spec.ipam === 'node';
  const edit = KOPS_EDIT;
  const header = k ? '' : KOPS_UNREAD_HEADER;
  const newCidrs = spec.to.map((t) => parseCidr(t));
  if (spec.ipam === 'node') {
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
