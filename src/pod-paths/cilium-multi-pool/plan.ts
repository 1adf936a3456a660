/**
 * The Cilium multi-pool pod path, plan side: pods take addresses from CiliumPodIPPools, through per-node CIDRs the
 * cilium-operator hands each CiliumNode (spec.ipam.pools.allocated). A pod's pool is its ipam.cilium.io/ip-pool
 * annotation, else its namespace's, else the agents' default pool (cilium-config `ipam-default-ip-pool`, default
 * "default"): Cilium v1.15.19 pkg/ipam/metadata/manager.go:117-160, pkg/option/config.go:883, pkg/defaults/
 * defaults.go:397-398. The path: a new pool in NEW with the old pool's mask size; cilium-config names it the
 * default pool (and widens the native-routing CIDR to hold both ranges) before any pod restarts; every workload
 * restarted; the old pool deleted only once no pod holds one of its addresses and no CiliumNode lists it (v1.15
 * drops the CIDRs of a deleted pool from the nodes, in use or not: docs/platforms.md, "Cilium"); the
 * native-routing CIDR narrowed to NEW last. Its executors: engine.ts; its types and kinds: kinds.ts.
 */
import type { Family, Snapshot } from '../../cluster/types.ts';
import type { CiliumPoolInfo } from '../../ipam/cilium-facts.ts';
import { clusterCIDRTooWide } from '../../analyze/references.ts';
import { contains, familyName, formatCidr, overlaps, parseCidr, tryParseCidr, type Cidr } from '../../net/index.ts';
import { need, POD_RBAC_FILE } from '../../plan/access-need.ts';
import { covering } from '../../plan/distributions/common.ts';
import { cidrAt, fail, inAny, int, list, obj, str, subdomain, type Obj } from '../../plan/plan-fields.ts';
import type { PodCIDRSpec } from '../../plan/pod-spec.ts';
import { splitList } from '../../text.ts';
import type { CiliumConfigChange, CiliumPoolData } from './kinds.ts';
import { patchesFor, podGateInstructions } from '../../plan/pod-step-lists.ts';
import type { PreflightCheck } from '../../plan/preflight.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { pass, POOL_PREFIX, slug } from '../../plan/pod-paths/common.ts';
import type { PodPath, PodStepInputs, PodStepLists } from '../../plan/pod-paths/types.ts';

/** The agents' default pool when cilium-config does not set ipam-default-ip-pool (pkg/defaults/defaults.go:397-398). */
export const CILIUM_DEFAULT_POOL = 'default';
const FAM_KEY = { 4: 'ipv4', 6: 'ipv6' } as const;
const MULTI_POOL_DOC = 'https://docs.cilium.io/en/stable/network/concepts/ipam/multi-pool/';

type Section = NonNullable<PodCIDRSpec['cilium-multi-pool']>;

function poolData(p: CiliumPoolInfo): CiliumPoolData {
  const out: CiliumPoolData = { name: p.name };
  if (p.ipv4) out.ipv4 = { cidrs: [...p.ipv4.cidrs], maskSize: p.ipv4.maskSize };
  if (p.ipv6) out.ipv6 = { cidrs: [...p.ipv6.cidrs], maskSize: p.ipv6.maskSize };
  return out;
}

/** Every CIDR of a pool. */
export function poolCidrs(p: CiliumPoolData): string[] {
  return [...(p.ipv4?.cidrs ?? []), ...(p.ipv6?.cidrs ?? [])];
}

/** The default pool's name as the agents read it (cilium-config ipam-default-ip-pool, else "default"). */
export function defaultPoolName(config: Readonly<Record<string, string>>): string {
  return config['ipam-default-ip-pool']?.trim() || CILIUM_DEFAULT_POOL;
}

/**
 * A `name=value,name=value` map option (ipam-multi-pool-pre-allocation: cilium's GetStringMapStringE reads this form
 * and JSON) with the entry `from` renamed `to`; undefined when the value is in another form (JSON) and names `from`.
 */
function renameMapKey(value: string, from: string, to: string): string | undefined {
  const entries = splitList(value);
  if (!entries.every((e) => /^[a-z0-9.-]+=[^=,]*$/i.test(e))) return value.includes(from) ? undefined : value;
  return entries.map((e) => { const [k, v] = e.split('='); return k === from ? `${to}=${v}` : e; }).join(',');
}

/** The operator's pool spec (auto-create-cilium-pod-ip-pools value form, operator/watchers/cilium_podippool.go parsePoolSpec). */
function autoCreateSpec(p: CiliumPoolData): string {
  const parts: string[] = [];
  if (p.ipv4) parts.push(`ipv4-cidrs:${p.ipv4.cidrs.join(',')}`, `ipv4-mask-size:${p.ipv4.maskSize}`);
  if (p.ipv6) parts.push(`ipv6-cidrs:${p.ipv6.cidrs.join(',')}`, `ipv6-mask-size:${p.ipv6.maskSize}`);
  return parts.join(';');
}

/**
 * The cilium-config changes, with problems when one cannot be made safely. Before the restarts (`move`): the new
 * pool becomes the default pool; the pre-allocation entry of the old default pool follows it; an auto-create entry
 * of the old pool (the operator creates the pools it names at start, cilium_podippool.go:102-133, so a restart
 * after the deletion would bring the old pool back) becomes the new pool's; a native-routing CIDR that does not
 * hold NEW is widened to one range holding both (pods in NEW are routed natively, not masqueraded, from the first
 * restart on). After the old pool is gone (`final`): a native-routing CIDR that was the old pool's range becomes NEW.
 */
function configChanges(snap: Snapshot, old: CiliumPoolData, np: CiliumPoolData, target: Map<Family, Cidr>): { move: CiliumConfigChange[]; final: CiliumConfigChange[]; problems: string[]; notes: string[] } {
  const cfg = snap.cilium?.config ?? {};
  const move: CiliumConfigChange[] = [];
  const final: CiliumConfigChange[] = [];
  const problems: string[] = [];
  const notes: string[] = [];
  const change = (key: string, to: string | undefined): CiliumConfigChange => ({ key, ...(cfg[key] !== undefined ? { from: cfg[key] } : {}), ...(to !== undefined ? { to } : {}) });
  move.push(change('ipam-default-ip-pool', np.name));
  const pre = cfg['ipam-multi-pool-pre-allocation'];
  if (pre !== undefined && pre.trim() !== '') {
    const renamed = renameMapKey(pre, old.name, np.name);
    if (renamed === undefined) problems.push(`cilium-config ipam-multi-pool-pre-allocation (${pre}) is not in the name=value form kube-renumber rewrites`);
    else if (renamed !== pre) move.push(change('ipam-multi-pool-pre-allocation', renamed));
  }
  const auto = cfg['auto-create-cilium-pod-ip-pools'];
  if (auto !== undefined && auto.includes(old.name)) {
    if (new RegExp(`^\\s*${old.name.replace(/[.]/g, '\\.')}=[^=]*$`).test(auto)) move.push(change('auto-create-cilium-pod-ip-pools', `${np.name}=${autoCreateSpec(np)}`));
    else problems.push(`cilium-config auto-create-cilium-pod-ip-pools (${auto}) names pool ${old.name} among others: kube-renumber rewrites it only when it names that one pool`);
  }
  for (const [f, t] of target) {
    const key = `${FAM_KEY[f]}-native-routing-cidr`;
    const now = cfg[key]?.trim();
    if (!now) continue;
    const c = tryParseCidr(now);
    if (!c) { problems.push(`cilium-config ${key} (${now}) is not a CIDR`); continue; }
    if (contains(c, t)) { notes.push(`${key} ${now} already holds ${formatCidr(t)}`); continue; }
    const both = covering([c, t]);
    const why = clusterCIDRTooWide(both, snap);
    if (why) {
      problems.push(`cilium-config ${key} ${now} does not hold ${formatCidr(t)}, and the one range holding both (${formatCidr(both)}) would also hold ${why}: traffic to it would leave unmasqueraded during the move`);
      continue;
    }
    move.push(change(key, formatCidr(both)));
    const oldOfFam = (f === 4 ? old.ipv4 : old.ipv6)?.cidrs ?? [];
    if (oldOfFam.length === 1 && formatCidr(parseCidr(oldOfFam[0]!)) === formatCidr(c)) final.push({ key, from: formatCidr(both), to: formatCidr(t) });
    else notes.push(`${key} stays ${formatCidr(both)} after the move (it was ${now}, not the old pool's range)`);
  }
  if (cfg['enable-ip-masq-agent'] === 'true') notes.push('enable-ip-masq-agent is true: the ip-masq-agent ConfigMap\'s nonMasqueradeCIDRs are not changed (they default to the private ranges)');
  return { move, final, problems, notes };
}

/** Sizes the new pool: per family of NEW, node CIDRs of the old pool's mask size for today's nodes times the headroom. */
function sizing(snap: Snapshot, old: CiliumPoolData, np: CiliumPoolData, target: Map<Family, Cidr>, headroom: number): PreflightCheck {
  const problems: string[] = [];
  const fine: string[] = [];
  const nodes = snap.nodes.length;
  for (const [f, t] of target) {
    const mask = (f === 4 ? old.ipv4 : old.ipv6)!.maskSize;
    if (mask < t.prefix || mask > (f === 4 ? 32 : 128)) { problems.push(`${formatCidr(t)}: the old pool's per-node mask /${mask} does not fit in it`); continue; }
    const have = 1n << BigInt(Math.min(mask - t.prefix, 62));
    const need = BigInt(Math.ceil(Math.max(nodes, 1) * headroom));
    const line = `${formatCidr(t)}: ${have} node CIDRs of /${mask} for ${nodes} node(s) (x${headroom} headroom)`;
    if (have < need) problems.push(line); else fine.push(line);
  }
  const clash = (snap.cilium?.pools ?? []).filter((p) => p.name !== old.name).find((p) => p.name === np.name || poolCidrs(p).some((c) => { const pc = tryParseCidr(c); return !!pc && [...target.values()].some((t) => overlaps(t, pc)); }));
  if (clash) problems.push(`CiliumPodIPPool ${clash.name} (${poolCidrs(clash).join(',')}) ${clash.name === np.name ? 'already has the new pool\'s name' : `overlaps ${[...target.values()].map(formatCidr).join(',')}`}`);
  return problems.length > 0
    ? { id: 'pod-target-size', status: 'fail', target: true, message: problems.join('; '), fix: 'choose a larger range that no other CiliumPodIPPool uses, or lower --headroom' }
    : pass('pod-target-size', fine.join('; '), true);
}

/** Steps of the multi-pool path: pool and config before the restarts; old pool, config and the distribution after. */
function stepLists(inp: PodStepInputs): PodStepLists {
  const { spec } = inp;
  const cm = spec['cilium-multi-pool']!;
  const np = cm.newPool;
  const oldC = poolCidrs(cm.oldPool);
  const kv = (cs: readonly CiliumConfigChange[]) => cs.map((c) => `${c.key}: ${c.from ?? '(unset)'} → ${c.to ?? '(removed)'}`).join('; ');
  const agents = 'then restart the Cilium agents (DaemonSet kube-system/cilium, rolled out and awaited; they read cilium-config only at start)';
  const prepare: PlanStep[] = [{
    id: 'create-ciliumpodippool', kind: 'create-ciliumpodippool',
    description: `create CiliumPodIPPool ${np.name} ${poolCidrs(np).join(',')} (${cm.apiVersion}; per-node mask ${[np.ipv4 && `/${np.ipv4.maskSize}`, np.ipv6 && `/${np.ipv6.maskSize}`].filter(Boolean).join(', ')}, as pool ${cm.oldPool.name}); stops before any change when a pod or namespace chooses a pool by annotation (ipam.cilium.io/ip-pool, ipv4-pool, ipv6-pool) or a CiliumNodeConfig sets ipam-default-ip-pool for some nodes`,
    items: [{ namespace: '', name: np.name, from: [], to: poolCidrs(np) }],
    rollback: 'delete the new pool (only while no pod holds an address in it and no CiliumNode lists it)',
  }, {
    id: 'cilium-config-move', kind: 'cilium-config-move',
    description: `change ConfigMap kube-system/cilium-config so new pods take addresses from ${np.name} and both ranges are routed natively (${kv(cm.config.move)}), ${agents}; running pods keep their addresses`,
    rollback: 'put the keys back from the backup and restart the agents again',
  }];
  const restart: PlanStep[] = [{
    id: 'restart-pods', kind: 'restart-pods',
    description: `restart every workload with a pod in ${spec.from.join(', ')}, ${spec.restarts.parallel} rollout(s) at a time, the critical ones first: Deployments, StatefulSets and DaemonSets by the restartedAt annotation (awaited, paused ones reported, never forced); `
      + 'Job pods and bare pods by eviction through the Eviction API (PodDisruptionBudgets respected; bare pods created again from their backup); hostNetwork pods skipped',
    rollback: `nothing to undo: restarted pods keep running in NEW (point ipam-default-ip-pool at ${cm.oldPool.name} again first to move back)`,
  }];
  const finish: PlanStep[] = [{
    id: 'delete-ciliumpodippool', kind: 'delete-ciliumpodippool',
    description: `wait until no pod holds an address in ${oldC.join(', ')} and no CiliumNode lists pool ${cm.oldPool.name} in spec.ipam.pools (requested or allocated: the agents release a CIDR once its last pod is gone), then delete CiliumPodIPPool ${cm.oldPool.name} (Cilium 1.15 drops a deleted pool's CIDRs from the nodes still listing them)`,
    items: [{ namespace: '', name: cm.oldPool.name, from: oldC, to: [] }],
    rollback: 'create the pool again from its backup',
  }];
  if (cm.config.final.length > 0) {
    finish.push({
      id: 'cilium-config-final', kind: 'cilium-config-final',
      description: `change ConfigMap kube-system/cilium-config now that nothing uses ${oldC.join(', ')} (${kv(cm.config.final)}), ${agents}`,
      rollback: 'put the keys back from the backup and restart the agents again',
    });
  }
  finish.push({
    id: 'pod-cidr-config', kind: 'gate',
    description: `change the pod range in the distribution's configuration to ${spec.to.join(',')}, with kube-controller-manager --allocate-node-cidrs=false in the same change so it keeps starting (Cilium multi-pool does not use node podCIDRs)`,
    gate: {
      condition: 'cilium-pod-cidr-config',
      reason: 'kube-controller-manager\'s --cluster-cidr, kube-proxy\'s clusterCIDR and the distribution\'s pod range live outside the API; with --allocate-node-cidrs=true and --cluster-cidr=NEW it would exit at start while nodes keep old podCIDRs',
      instructions: podGateInstructions(inp.distro, 'pod-cidr-config', 'final'),
      check: `every kube-controller-manager pod runs with --allocate-node-cidrs=false or --cluster-cidr inside ${spec.to.join(',')}, and the kube-proxy ConfigMap's clusterCIDR (when set) covers ${spec.to.join(',')}; --ack-gate pod-cidr-config where neither is visible`,
      patches: patchesFor(inp, 'pod-cidr-config'),
    },
    rollback: 'put the old values back',
  });
  return { prepare, restart, finish };
}

function checkPool(v: unknown, pp: string, within: readonly Cidr[] | undefined): void {
  const po = obj(v, pp);
  subdomain(po, 'name', pp);
  let families = 0;
  for (const f of ['ipv4', 'ipv6'] as const) {
    if (po[f] === undefined) continue;
    families++;
    const fo = obj(po[f], `${pp}.${f}`);
    const cs = list(fo, 'cidrs', `${pp}.${f}`)!;
    if (cs.length === 0) fail(`${pp}.${f}.cidrs`, 'must name at least one CIDR');
    let widest = 128;
    cs.forEach((x, i) => {
      if (typeof x !== 'string') fail(`${pp}.${f}.cidrs[${i}]`, 'must be a CIDR');
      const c = cidrAt(x, `${pp}.${f}.cidrs[${i}]`);
      if (c.family !== (f === 'ipv4' ? 4 : 6)) fail(`${pp}.${f}.cidrs[${i}]`, `is not ${f === 'ipv4' ? 'IPv4' : 'IPv6'}`);
      if (within && !inAny(within, c)) fail(`${pp}.${f}.cidrs[${i}]`, `${formatCidr(c)} is not inside spec.podCIDR.to (${within.map(formatCidr).join(', ')})`);
      widest = Math.min(widest, c.prefix);
    });
    int(fo, 'maskSize', `${pp}.${f}`, widest, f === 'ipv4' ? 32 : 128);
  }
  if (families === 0) fail(pp, 'names neither ipv4 nor ipv6 CIDRs');
}

function checkChanges(v: unknown, pp: string): void {
  list(obj(v, pp) as Obj, 'move', pp)!.forEach((c, i) => { const o = obj(c, `${pp}.move[${i}]`); str(o, 'key', `${pp}.move[${i}]`); str(o, 'from', `${pp}.move[${i}]`, true); str(o, 'to', `${pp}.move[${i}]`, true); });
  list(obj(v, pp) as Obj, 'final', pp)!.forEach((c, i) => { const o = obj(c, `${pp}.final[${i}]`); str(o, 'key', `${pp}.final[${i}]`); str(o, 'from', `${pp}.final[${i}]`, true); str(o, 'to', `${pp}.final[${i}]`, true); });
}

export const ciliumMultiPoolPath: PodPath<'cilium-multi-pool'> = {
  id: 'cilium-multi-pool',
  moves: 'Cilium CiliumPodIPPools',
  hint: 'Cilium multi-pool CiliumPodIPPools',
  flags: [],
  mixes: false,
  reader: 'Cilium',
  planned: 'Cilium multi-pool IPAM: pods take addresses from CiliumPodIPPools (the default pool unless annotated)',
  finalGate: 'pod-cidr-config',
  oldRanges({ snap, target, newText }, checks) {
    const pools = snap.cilium?.pools;
    if (!pools || pools.length === 0) {
      checks.push({ id: 'pod-old-pools', status: 'fail', target: true, message: 'no CiliumPodIPPool in the input: the multi-pool path moves the default pool, and cannot tell its CIDRs', fix: 'add `kubectl get ciliumpodippools.cilium.io -o yaml` to the input (live: allow listing ciliumpodippools.cilium.io, deploy/rbac.yaml)' });
      return undefined;
    }
    const name = defaultPoolName(snap.cilium?.config ?? {});
    const found = pools.find((p) => p.name === name);
    if (!found) {
      checks.push({ id: 'pod-old-pools', status: 'fail', target: true, message: `the default pool ${name} (cilium-config ipam-default-ip-pool${snap.cilium?.config['ipam-default-ip-pool'] ? '' : ' unset: "default"'}) is not among the CiliumPodIPPools (${pools.map((p) => p.name).join(', ')})`, fix: `see ${MULTI_POOL_DOC}` });
      return undefined;
    }
    const old = poolData(found);
    const fams: Family[] = [...(old.ipv4 ? [4 as const] : []), ...(old.ipv6 ? [6 as const] : [])];
    const missing = fams.filter((f) => !target.has(f));
    const extra = [...target.keys()].filter((f) => !fams.includes(f));
    if (missing.length > 0 || extra.length > 0) {
      checks.push({
        id: 'pod-old-pools', status: 'fail', target: true,
        message: `the default pool ${old.name} has ${fams.map(familyName).join(' and ') || 'no'} CIDRs, NEW (${newText.join(',')}) ${missing.length > 0 ? `names no ${missing.map(familyName).join(' or ')} range` : `has ${extra.map(familyName).join(' and ')}, which it has not`}: pods take every family from the default pool, so the new pool needs exactly its families`,
        fix: `give --pod-cidr one range per family of pool ${old.name}`,
      });
      return undefined;
    }
    const from = poolCidrs(old).map((c) => parseCidr(c));
    if (from.every((c) => { const t = target.get(c.family); return !!t && contains(t, c); })) {
      checks.push({ id: 'pod-old-pools', status: 'fail', target: true, message: `the default pool ${old.name} (${poolCidrs(old).join(',')}) is already inside ${newText.join(',')}: nothing to move`, fix: 'check `kube-renumber inspect`' });
      return undefined;
    }
    return {
      from,
      size: (headroom) => {
        const np: CiliumPoolData = { name: `${POOL_PREFIX}-${slug(newText[0]!)}` };
        for (const [f, t] of target) np[FAM_KEY[f]] = { cidrs: [formatCidr(t)], maskSize: (f === 4 ? old.ipv4 : old.ipv6)!.maskSize };
        const cfg = configChanges(snap, old, np, target);
        const others = pools.filter((p) => p.name !== old.name);
        const section: Section = { apiVersion: found.apiVersion, oldPool: old, newPool: np, config: { move: cfg.move, final: cfg.final } };
        return {
          section: { 'cilium-multi-pool': section },
          checks: [
            sizing(snap, old, np, target, headroom),
            cfg.problems.length > 0
              ? { id: 'pod-cilium-config', status: 'fail', target: true, message: cfg.problems.join('; '), fix: 'change these cilium-config keys by hand first, or choose a NEW next to the old range' }
              : pass('pod-cilium-config', `cilium-config: ${cfg.move.map((c) => c.key).join(', ')} changed before the restarts${cfg.final.length ? `, ${cfg.final.map((c) => c.key).join(', ')} after the old pool is gone` : ''}${cfg.notes.length ? `; ${cfg.notes.join('; ')}` : ''}`),
            others.length > 0
              ? { id: 'pod-cilium-pools', status: 'warn', message: `CiliumPodIPPool ${others.map((p) => `${p.name} (${poolCidrs(p).join(',')})`).join(', ')} ${others.length === 1 ? 'is' : 'are'} left as they are: only pods whose (namespace's) ipam.cilium.io annotation names them use them, and create-ciliumpodippool stops when such an annotation exists`, fix: 'move those pools by hand (a new pool and the annotations changed) before or after' }
              : pass('pod-cilium-pools', `pool ${old.name} is the only CiliumPodIPPool`),
          ],
        };
      },
    };
  },
  stepLists,
  recordedOptions: () => ({}),
  consent: () => [],
  endState: (spec) => `; CiliumPodIPPool ${spec['cilium-multi-pool']?.oldPool.name ?? ''} gone and no CiliumNode listing it; ${spec['cilium-multi-pool']?.newPool.name ?? ''} present; cilium-config as planned`,
  validate(pc, P, to) {
    const c = obj(pc['cilium-multi-pool'], `${P}.cilium-multi-pool`);
    const p = `${P}.cilium-multi-pool`;
    const av = str(c, 'apiVersion', p)!;
    if (!/^cilium\.io\/v2(alpha1)?$/.test(av)) fail(`${p}.apiVersion`, `is ${av}, expected cilium.io/v2alpha1 or cilium.io/v2`);
    checkPool(c.oldPool, `${p}.oldPool`, undefined);
    checkPool(c.newPool, `${p}.newPool`, to);
    checkChanges(c.config, `${p}.config`);
  },
  access: () => [
    need('create', 'cilium.io', 'ciliumpodippools', POD_RBAC_FILE, 'the new CiliumPodIPPool'),
    need('delete', 'cilium.io', 'ciliumpodippools', POD_RBAC_FILE, 'delete the old CiliumPodIPPool'),
    need('patch', '', 'configmaps', POD_RBAC_FILE, 'cilium-config: the default pool and the native-routing CIDR', { namespace: 'kube-system', name: 'cilium-config' }),
    need('list', 'cilium.io', 'ciliumnodes', POD_RBAC_FILE, 'no node lists the old pool before it is deleted'),
    need('list', 'cilium.io', 'ciliumnodeconfigs', POD_RBAC_FILE, 'no CiliumNodeConfig sets the default pool for some nodes'),
    need('list', '', 'namespaces', POD_RBAC_FILE, 'no namespace chooses its pool by annotation'),
  ],
  summary: () => 'Cilium multi-pool IPAM (a new CiliumPodIPPool, the default pool switched)',
  summaryRows: (pc) => {
    const c = pc['cilium-multi-pool'];
    return c ? [['Pools', `${c.oldPool.name} ${poolCidrs(c.oldPool).join(',')} → ${c.newPool.name} ${poolCidrs(c.newPool).join(',')}`], ['cilium-config', [...new Set([...c.config.move, ...c.config.final].map((x) => x.key))].join(', ')]] : [];
  },
  markdown: () => '',
};
