/**
 * The pod extension plan (`plan --extend-pod-cidr ADD` on Calico IPAM): room added next to the pod range, nothing
 * moved. calico-ipam hands out addresses from every enabled IPPool whose nodeSelector matches the node (Calico's
 * IPPool reference, https://docs.tigera.io/calico/latest/reference/resources/ippool), so a second pool with the old
 * pool's settings gives pods more addresses while the pods that run keep theirs; no pool is disabled. What names the
 * pod range must then name ADD too:
 *  - kube-proxy's clusterCIDR takes one CIDR per family (kube-proxy --cluster-cidr: "For dual-stack clusters, this can
 *    be a comma-separated dual-stack pair of CIDR ranges", https://kubernetes.io/docs/reference/command-line-tools-reference/kube-proxy/),
 *    so it becomes the envelope of the old and the added range, refused when that envelope holds anything but pod
 *    ranges; kube-proxy reads it when it starts, so a gate asks for its restart (a host-network DaemonSet: no workload
 *    restarts);
 *  - ip-masq-agent's nonMasqueradeCIDRs is a list, re-read from its ConfigMap every resyncInterval (60 s) without a
 *    restart (https://kubernetes.io/docs/tasks/administer-cluster/ip-masq-agent/): ADD is added to it;
 *  - the platform's own configuration is checked by its planner (DistributionPlanner.podExtensionChecks: on kOps
 *    ADD must lie inside nonMasqueradeCIDR, whose change is a rolling update of every node).
 * Pure: a function of (Snapshot, options).
 */
import type { AvoidRange } from '../analyze/catalog.ts';
import { clusterCIDRTooWide, scanReferences, type RangeMove, type Reference } from '../analyze/references.ts';
import type { CalicoPool, Family, Snapshot } from '../cluster/types.ts';
import { bits, contains, familyName, formatCidr, NetError, parseCidr, tryParseCidr, type Cidr } from '../net/index.ts';
import { compatibilityCheck } from './compatibility.ts';
import { covering } from './distributions/common.ts';
import { distributionPlanner } from './distributions/registry.ts';
import { withPoolSettings, type ExtensionPool, type PodExtensionSpec } from './extend-spec.ts';
import { extensionPlanShell } from './extend.ts';
import { cidrSlug, OBJECT_PREFIX, type MigrationPlan } from './plan.ts';
import { parsePodTarget } from './pod-plan.ts';
import { overlapHits, type PreflightCheck } from './preflight.ts';
import type { PlanStep } from './steps.ts';

export interface PodExtensionPlanOptions {
  /** ADD: one CIDR per family (array or comma-separated). */
  add: string | readonly string[];
  avoid?: readonly AvoidRange[];
  generator?: string;
}

/** The step ids of a pod extension plan (the engine and the tests name them). */
export const EXTEND_KUBE_PROXY_GATE = 'extend-kube-proxy';
export const EXTEND_MASQUERADE_STEP = 'extend-masquerade';
export const EXTEND_POOL_STEP = 'extend-pod-range';
export const VERIFY_POD_EXTENSION_STEP = 'verify-pod-extension';

/** The IPPool an extension plan creates for ADD: kube-renumber-extend-10-245-0-0-16. */
export function extensionPoolName(cidr: string): string {
  return `${OBJECT_PREFIX}-extend-${cidrSlug([cidr])}`;
}

const fail = (id: string, message: string, fix: string): PreflightCheck => ({ id, status: 'fail', target: true, message, fix });
const pass = (id: string, message: string): PreflightCheck => ({ id, status: 'pass', message, fix: '' });
const SUGGEST = 'kube-renumber suggest --for pods finds a free range';

/**
 * The pool whose settings the new pool of family `f` copies: the enabled pools of that family that serve pods
 * (allowedUses absent or holding Workload), the one that serves every node (nodeSelector all()) first, else the first
 * by name. Undefined when the family has none.
 */
export function modelPool(pools: readonly CalicoPool[], f: Family): CalicoPool | undefined {
  // a pool whose allowedUses leaves out Workload gives pods nothing (Calico's IPPool reference: Workload, Tunnel)
  const forPods = (p: CalicoPool) => !p.allowedUses || p.allowedUses.includes('Workload');
  const mine = pools.filter((p) => !p.disabled && forPods(p) && tryParseCidr(p.cidr)?.family === f).sort((a, b) => a.name.localeCompare(b.name));
  return mine.find((p) => (p.nodeSelector ?? 'all()').trim() === 'all()') ?? mine[0];
}

/** The new pool for ADD `t`, modelled on `model`: its block size where it fits ADD, else ADD is one block. */
export function extensionPool(model: CalicoPool, t: Cidr): ExtensionPool {
  return withPoolSettings<ExtensionPool>({ name: extensionPoolName(formatCidr(t)), cidr: formatCidr(t), blockSize: Math.max(model.blockSize, t.prefix), model: model.name }, model);
}

/** The ip-masq-agent ConfigMap's nonMasqueradeCIDRs, when the cluster has one (read with the kube-system ConfigMaps). */
function ipMasqAgent(snap: Snapshot): { namespace: string; name: string; key: string; values: string[] } | undefined {
  const src = (snap.referenceSources ?? []).find((s) => s.kind === 'ConfigMap' && s.name === 'ip-masq-agent' && s.use === 'nomasq');
  const key = src ? /^data\["([^"]+)"\]\.nonMasqueradeCIDRs$/.exec(src.field)?.[1] : undefined;
  return src && key ? { namespace: src.namespace ?? 'kube-system', name: src.name, key, values: [...src.values] } : undefined;
}

/** Was kube-proxy's clusterCIDR read from ConfigMap kube-system/kube-proxy (the one place the plan can name for it)? */
function kubeProxyFromConfigMap(snap: Snapshot): boolean {
  return snap.ranges.some((r) => r.source === 'kube-proxy clusterCIDR' && r.label.includes('ConfigMap kube-system/kube-proxy'));
}

/**
 * kube-proxy's clusterCIDR once ADD is in the pod range: per family, the smallest CIDR holding today's value and ADD.
 * Undefined when today's covers ADD already (or kube-proxy has none); a problem when the envelope would hold more
 * than pod addresses (kube-proxy would take those for pods and stop masquerading them).
 */
export function kubeProxyEnvelope(snap: Snapshot, target: ReadonlyMap<Family, Cidr>): { to: string } | { problem: string } | undefined {
  const kp = snap.kubeProxy?.clusterCIDR;
  if (!kp) return undefined;
  const now = kp.split(',').map((s) => tryParseCidr(s.trim())).filter((c): c is Cidr => !!c);
  const out: string[] = [];
  let changed = false;
  for (const c of now) {
    const t = target.get(c.family);
    if (!t || contains(c, t)) { out.push(formatCidr(c)); continue; }
    const env = covering([c, t]);
    const why = clusterCIDRTooWide(env, snap);
    if (why) {
      return {
        problem: `kube-proxy clusterCIDR ${kp} does not hold ${formatCidr(t)}, and it takes one CIDR per family: the smallest one holding both, ${formatCidr(env)}, would also hold ${why}, `
          + 'which kube-proxy would then take for pod addresses',
      };
    }
    out.push(formatCidr(env));
    changed = true;
  }
  const missing = [...target.values()].filter((t) => !now.some((c) => c.family === t.family));
  if (missing.length > 0 && now.length > 0) {
    return { problem: `kube-proxy clusterCIDR ${kp} has no ${missing.map((m) => familyName(m.family)).join('/')} range for ${missing.map(formatCidr).join(',')}` };
  }
  return changed ? { to: out.join(',') } : undefined;
}

/**
 * The plan that adds ADD to the pod range of a Calico IPAM cluster. Refusals (checks with `target: true` failing)
 * are what the CLI exits 2 with: ADD does not parse, names a family without an enabled pool, overlaps anything the
 * cluster uses or must reach, holds no block; the Tigera operator manages the pools; kube-proxy's clusterCIDR cannot
 * hold both ranges and nothing else; the platform's own check refuses it (src/platforms/).
 */
export function buildPodExtensionPlan(snap: Snapshot, opts: PodExtensionPlanOptions): MigrationPlan {
  const plan = extensionPlanShell(snap, opts.generator);
  const checks = plan.preflight;
  let target: Map<Family, Cidr>;
  try {
    target = parsePodTarget(opts.add);
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
    checks.push(fail('pod-extend-parse', e.message.replace(/--pod-cidr/g, '--extend-pod-cidr'), 'give ADD as address/prefix, e.g. --extend-pod-cidr 10.245.0.0/16 (one CIDR per family)'));
    return plan;
  }
  const add = [...target.values()].map(formatCidr);
  checks.push({ id: 'pod-extend-parse', status: 'pass', target: true, message: `added pod range ${add.join(',')}`, fix: '' });
  const refused = () => checks.some((c) => c.status === 'fail' && c.target);

  // the pools: one enabled pool per family of ADD to copy; the operator's pools are not written here
  const pools: ExtensionPool[] = [];
  const from: string[] = [];
  for (const [f, t] of target) {
    const model = modelPool(snap.pools, f);
    if (!model) {
      checks.push(fail('pod-extend-pool', `the cluster has no enabled ${familyName(f)} Calico IPPool to extend for ${formatCidr(t)} (pools: ${snap.pools.map((p) => `${p.name} ${p.cidr}${p.disabled ? ' disabled' : ''}`).join(', ') || 'none read'})`,
        'give ADD only for the families the pools have; the pools are read from crd.projectcalico.org/v1 ippools'));
      continue;
    }
    pools.push(extensionPool(model, t));
    from.push(...snap.pools.filter((p) => !p.disabled && tryParseCidr(p.cidr)?.family === f).map((p) => p.cidr));
  }
  if (refused()) return plan;
  checks.push(pass('pod-extend-pool', pools.map((p) => `${p.cidr} copies IPPool ${p.model} (${poolSettings(p)})`).join('; ')));
  if (snap.cni.operatorManaged) {
    checks.push(fail('pod-extend-operator', 'the Tigera operator manages the Calico pools (Installation/default spec.calicoNetwork.ipPools) and reverts IPPools it did not make: this version writes the extension only where the IPPools are edited directly',
      `add ${pools.map((p) => `{cidr: ${p.cidr}, blockSize: ${p.blockSize}}`).join(', ')} to Installation/default spec.calicoNetwork.ipPools with the old pool's encapsulation, natOutgoing and nodeSelector`));
    return plan;
  }
  // kube-proxy's clusterCIDR is a setting that must hold ADD (check pod-extend-kube-proxy), not a range ADD must avoid
  const holdsAdd = (r: Snapshot['ranges'][number]) => {
    const c = r.source === 'kube-proxy clusterCIDR' ? tryParseCidr(r.cidr) : undefined;
    const t = c ? target.get(c.family) : undefined;
    return !!c && !!t && contains(c, t);
  };
  const hits = overlapHits({ ...snap, ranges: snap.ranges.filter((r) => !holdsAdd(r)) }, opts.avoid ?? [], target);
  if (hits.length > 0) {
    checks.push(fail('pod-extend-conflicts', hits.slice(0, 4).join(', ') + (hits.length > 4 ? ` and ${hits.length - 4} more` : ''),
      `choose a range that overlaps nothing the cluster uses or must reach, the pools included: ${SUGGEST}`));
    return plan;
  }
  checks.push({ id: 'pod-extend-conflicts', status: 'pass', target: true, message: `${add.join(',')} overlaps no cluster range, well-known network or --avoid range and holds no live address`, fix: '' });
  checks.push(sizeCheck(pools));

  const spec: PodExtensionSpec = { ipam: 'calico', from, add, pools };
  // kube-proxy: one CIDR per family, the envelope of both
  const kp = kubeProxyEnvelope(snap, target);
  if (kp && 'problem' in kp) {
    checks.push(fail('pod-extend-kube-proxy', kp.problem,
      `choose ADD next to the pod range so that one CIDR holds both and nothing else (${SUGGEST}), or set kube-proxy's detectLocalMode to InterfaceNamePrefix (interfaceNamePrefix: cali) first, which does not use clusterCIDR`));
    return plan;
  }
  // the platform's own configuration (kOps: nonMasqueradeCIDR, kube-proxy's range from the Cluster spec)
  const own = distributionPlanner(snap).podExtensionChecks?.(snap, target, kp?.to) ?? [];
  checks.push(...own);
  if (own.some((c) => c.status === 'fail' && c.target)) return plan;
  if (kp) {
    spec.kubeProxy = { from: snap.kubeProxy!.clusterCIDR!, to: kp.to, configMap: kubeProxyFromConfigMap(snap) };
    checks.push({
      id: 'pod-extend-kube-proxy', status: 'warn',
      message: `kube-proxy clusterCIDR ${spec.kubeProxy.from} does not hold ${add.join(',')}: Service traffic from pods there would be masqueraded (source addresses lost to NetworkPolicies); gate ${EXTEND_KUBE_PROXY_GATE} sets it to ${kp.to}, which holds both and nothing else, before the pool exists`,
      fix: 'kube-proxy reads clusterCIDR when it starts: the gate asks for a restart of the kube-proxy DaemonSet (host network: no workload restarts, no pod address changes)',
    });
  } else if (snap.kubeProxy?.clusterCIDR) {
    checks.push(pass('pod-extend-kube-proxy', `kube-proxy clusterCIDR ${snap.kubeProxy.clusterCIDR} holds ${add.join(',')}`));
  }
  // ip-masq-agent: a list, ADD added
  const masq = ipMasqAgent(snap);
  if (masq) {
    const held = masq.values.map((v) => tryParseCidr(v)).filter((c): c is Cidr => !!c);
    const missing = [...target.values()].filter((t) => !held.some((c) => contains(c, t)));
    if (missing.length > 0) {
      spec.masquerade = { namespace: masq.namespace, name: masq.name, key: masq.key, from: masq.values, to: [...masq.values, ...missing.map(formatCidr)] };
      checks.push({ id: 'pod-extend-ip-masq-agent', status: 'warn', message: `ip-masq-agent nonMasqueradeCIDRs (ConfigMap ${masq.namespace}/${masq.name}) do not hold ${missing.map(formatCidr).join(',')}: step ${EXTEND_MASQUERADE_STEP} adds it to the list, which the agent reads again within its resyncInterval (60 s unless set) without a restart`, fix: '' });
    } else checks.push(pass('pod-extend-ip-masq-agent', `ip-masq-agent nonMasqueradeCIDRs hold ${add.join(',')}`));
  }
  const version = compatibilityCheck(snap.kubernetesVersion, 'calico');
  if (version) checks.push(version);
  plan.spec.podExtension = spec;
  const refs = podExtensionReferences(snap, spec, target);
  if (refs.length > 0) plan.references = refs;
  plan.steps = podExtensionSteps(spec);
  return plan;
}

function poolSettings(p: ExtensionPool): string {
  return [`blockSize ${p.blockSize}`, p.ipipMode ? `ipipMode ${p.ipipMode}` : '', p.vxlanMode ? `vxlanMode ${p.vxlanMode}` : '', `natOutgoing ${p.natOutgoing ?? false}`,
    `nodeSelector ${p.nodeSelector ?? 'all()'}`, p.allowedUses ? `allowedUses ${p.allowedUses.join(',')}` : ''].filter(Boolean).join(', ');
}

/** Check `pod-extend-size`: ADD holds at least one block of the new pool's size (a pool smaller than its block size is refused by Calico). */
function sizeCheck(pools: readonly ExtensionPool[]): PreflightCheck {
  const lines = pools.map((p) => {
    const c = parseCidr(p.cidr);
    const blocks = 1n << BigInt(p.blockSize - c.prefix);
    const per = 1n << BigInt(bits(c.family) - p.blockSize);
    return `${p.cidr}: ${blocks} more block(s) of /${p.blockSize} (${per} addresses each)`;
  });
  const odd = pools.filter((p) => p.blockSize === parseCidr(p.cidr).prefix);
  return odd.length > 0
    ? { id: 'pod-extend-size', status: 'warn', message: `${lines.join('; ')}: ${odd.map((p) => p.cidr).join(', ')} is smaller than a block of IPPool ${odd[0]!.model}, so the new pool is one block (a block goes to one node at a time)`, fix: 'give a range larger than one block of the old pool for room on several nodes' }
    : pass('pod-extend-size', lines.join('; '));
}

/**
 * What names the pod range and should now name ADD too (NetworkPolicy ipBlocks, Calico network sets, allow-lists),
 * as warnings: nothing breaks for the pods that run, but pods given an address in ADD are outside them. kube-proxy
 * and ip-masq-agent are left out: the plan changes them itself.
 */
export function podExtensionReferences(snap: Snapshot, spec: PodExtensionSpec, target: ReadonlyMap<Family, Cidr>): Reference[] {
  const moves: RangeMove[] = [];
  for (const f of spec.from) {
    const t = target.get(parseCidr(f).family);
    if (t) moves.push({ role: 'pod', from: f, to: formatCidr(t) });
  }
  if (moves.length === 0) return [];
  let refs: Reference[];
  try { refs = scanReferences(snap, moves); } catch { return []; }
  const handled = (r: Reference) => r.kind === 'ConfigMap' && (r.name === 'kube-proxy' || r.name === 'ip-masq-agent');
  return refs.filter((r) => r.value.includes('/') && !handled(r)).map((r) => ({
    ...r, severity: 'warning' as const,
    proposed: r.value.startsWith('[') && r.value.endsWith(']') ? `${r.value.slice(0, -1)}, ${spec.add.join(', ')}]` : `${r.value}, ${spec.add.join(', ')}`,
    note: `the pod range grows by ${spec.add.join(', ')} and keeps ${r.value}: add the new range next to it, or pods given an address there are outside this ${r.kind}`,
  }));
}

/** The steps: kube-proxy's clusterCIDR widened (a gate), ip-masq-agent's list grown, the pool created, the extension verified. */
function podExtensionSteps(spec: PodExtensionSpec): PlanStep[] {
  const steps: PlanStep[] = [];
  const kp = spec.kubeProxy;
  if (kp) {
    steps.push({
      id: EXTEND_KUBE_PROXY_GATE, kind: 'gate',
      description: `kube-proxy clusterCIDR ${kp.from} → ${kp.to} (holds the pod range and ${spec.add.join(',')}), kube-proxy restarted, before any pod gets an address in ${spec.add.join(',')}`,
      gate: {
        condition: 'extension-kube-proxy',
        reason: 'kube-proxy takes one clusterCIDR per family and reads it when it starts; without the change Service traffic from pods in the added range is masqueraded',
        instructions: kp.configMap
          ? [`kubectl -n kube-system edit configmap kube-proxy   # config.conf: clusterCIDR: ${kp.to}   (was ${kp.from})`,
            'kubectl -n kube-system rollout restart daemonset kube-proxy && kubectl -n kube-system rollout status daemonset kube-proxy   # host network: no workload restarts',
            'kube-renumber resume']
          : [`set kube-proxy's --cluster-cidr (or clusterCIDR) to ${kp.to} where it is configured (was ${kp.from}), and restart kube-proxy on every node`,
            `kube-renumber resume --ack-gate ${EXTEND_KUBE_PROXY_GATE} (the plan cannot read where that is)`],
        check: `the kube-proxy ConfigMap's (or kube-proxy pods' flag) clusterCIDR holds ${spec.add.join(',')}`,
      },
      rollback: `put clusterCIDR ${kp.from} back and restart kube-proxy (only once no pod has an address in ${spec.add.join(',')})`,
    });
  }
  const m = spec.masquerade;
  if (m) {
    steps.push({
      id: EXTEND_MASQUERADE_STEP, kind: 'extend-masquerade',
      description: `add ${m.to.filter((x) => !m.from.includes(x)).join(', ')} to ip-masq-agent's nonMasqueradeCIDRs (ConfigMap ${m.namespace}/${m.name}, ${m.key}); the agent reads it again within its resyncInterval, no restart`,
      items: [{ namespace: m.namespace, name: m.name, from: m.from, to: m.to }],
      rollback: `take ${m.to.filter((x) => !m.from.includes(x)).join(', ')} out of the list again (the rest of the ConfigMap as it is then)`,
    });
  }
  steps.push({
    id: EXTEND_POOL_STEP, kind: 'extend-ippool',
    description: `create IPPool ${spec.pools.map((p) => `${p.name} ${p.cidr} (${poolSettings(p)}, copied from ${p.model})`).join(', ')} next to ${spec.from.join(', ')}; `
      + 'no pool is disabled: running pods keep their addresses, and calico-ipam gives new pods addresses from it when a node needs a new block',
    items: spec.pools.map((p) => ({ namespace: '', name: p.name, from: [], to: [p.cidr] })),
    rollback: 'delete the new pool and its empty blocks while no pod holds an address in it; refused, naming the pods, once one does (delete or restart those pods first)',
  });
  steps.push({
    id: VERIFY_POD_EXTENSION_STEP, kind: 'verify-pod-extension',
    description: `check that IPPool ${spec.pools.map((p) => p.name).join(', ')} is there, enabled, with the planned settings, and that kube-proxy and ip-masq-agent hold ${spec.add.join(',')}`,
    rollback: 'nothing to undo',
  });
  return steps;
}

/** `suggest --for pods` on a Calico pool with no free block: a range next to it that the extension plan takes, or why none. */
export interface PodExtensionSuggestion {
  pool: string;
  poolCidr: string;
  /** A range the extension plan accepts; absent when none next to the pool does. */
  cidr?: string;
  /** Why the first candidate next to the pool is refused (when none is accepted). */
  refused?: string;
  /** kube-proxy's clusterCIDR once it is added, when it changes. */
  kubeProxy?: string;
}

/**
 * For each enabled Calico pool whose blocks are all taken and that no conflict names (exhaustion, not a clash): the
 * first range next to it that buildPodExtensionPlan accepts without a refusal, tried in this order: its sibling (the
 * other half of the CIDR one bit shorter: kube-proxy's envelope is then that CIDR), the block of its size right after
 * it and right before it, then the same at each smaller size down to 1/16 of it (never below one block).
 */
export function suggestPodExtension(snap: Snapshot, opts: { avoid?: readonly AvoidRange[]; exhausted: ReadonlySet<string> }): PodExtensionSuggestion[] {
  const out: PodExtensionSuggestion[] = [];
  for (const p of snap.pools.filter((x) => !x.disabled && opts.exhausted.has(x.name))) {
    const c = tryParseCidr(p.cidr);
    if (!c || c.prefix === 0) continue;
    const size = 1n << BigInt(bits(c.family) - c.prefix);
    const max = (1n << BigInt(bits(c.family))) - 1n;
    const candidates: Cidr[] = [];
    for (let pre = c.prefix; pre <= Math.min(c.prefix + 4, p.blockSize); pre++) {
      const s = 1n << BigInt(bits(c.family) - pre);
      const sib = pre === c.prefix ? c.network ^ size : undefined;
      for (const n of [sib, c.network + size, c.network - s]) {
        if (n === undefined || n < 0n || n + s - 1n > max || n % s !== 0n) continue;
        const cand: Cidr = { family: c.family, network: n, prefix: pre };
        if (!candidates.some((x) => x.network === cand.network && x.prefix === cand.prefix)) candidates.push(cand);
      }
    }
    let refused: string | undefined;
    let found: PodExtensionSuggestion | undefined;
    for (const cand of candidates) {
      const plan = buildPodExtensionPlan(snap, { add: formatCidr(cand), avoid: opts.avoid });
      const no = plan.preflight.find((k) => k.status === 'fail' && k.target);
      if (no) { refused ??= `${formatCidr(cand)}: ${no.message}`; continue; }
      const kp = plan.spec.podExtension?.kubeProxy?.to;
      found = { pool: p.name, poolCidr: p.cidr, cidr: formatCidr(cand), ...(kp ? { kubeProxy: kp } : {}) };
      break;
    }
    out.push(found ?? { pool: p.name, poolCidr: p.cidr, ...(refused ? { refused } : {}) });
  }
  return out;
}
