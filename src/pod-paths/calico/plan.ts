/**
 * The Calico pod path, plan side: pods take addresses from Calico IPPools (calico-ipam). A new pool modelled
 * on the old one, the old pool disabled, every workload restarted in waves, the old pool and its leftover
 * blocks removed, then the distribution settings (kube-controller-manager stops allocating node podCIDRs in the
 * same change that names NEW, so it keeps starting). Its executors: engine.ts; its types and kinds: kinds.ts.
 */
import { withPoolSettings } from '../../plan/extend-spec.ts';
import type { CalicoPool, Family, Snapshot } from '../../cluster/types.ts';
import { contains, familyName, formatCidr, parseCidr, type Cidr } from '../../net/index.ts';
import { need, POD_RBAC_FILE } from '../../plan/access-need.ts';
import { bool, cidrAt, fail, inAny, int, list, obj, oneOf, str, strList, subdomain } from '../../plan/plan-fields.ts';
import type { PodCIDRSpec } from '../../plan/pod-spec.ts';
import type { PoolData } from './kinds.ts';
import { patchesFor, podGateInstructions } from '../../plan/pod-step-lists.ts';
import type { PreflightCheck } from '../../plan/preflight.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { famOf, pass, POOL_PREFIX, slug } from '../../plan/pod-paths/common.ts';
import type { PodPath, PodPlanOptions, PodStepInputs, PodStepLists } from '../../plan/pod-paths/types.ts';

function poolData(p: CalicoPool): PoolData {
  return withPoolSettings<PoolData>({ name: p.name, cidr: p.cidr, blockSize: p.blockSize }, p);
}

/** One family's new pool, modelled on its old pool: a problem, or the pool and whether NEW holds enough blocks and addresses. */
type PoolSizing = { problem: string; pool?: undefined } | { pool: PoolData; line: string; fits: boolean };

/** Sizes the new pool for NEW's family `f` (CIDR `t`) on the old pool `model` of that family. */
function newPoolSizing(
  snap: Snapshot, opts: PodPlanOptions, f: Family, t: Cidr, model: CalicoPool | undefined, headroom: number, single: boolean,
): PoolSizing {
  if (!model) return { problem: `${formatCidr(t)}: the cluster has no ${familyName(f)} Calico pool to move; give NEW only for the families it has` };
  const nodes = snap.nodes.length;
  const blockSize = opts.blockSize ?? model.blockSize;
  const max = f === 4 ? 32 : 128;
  const min = f === 4 ? 20 : 116;
  if (blockSize < Math.max(min, t.prefix) || blockSize > max) {
    return { problem: `block size /${blockSize} must be between /${Math.max(min, t.prefix)} and /${max} for ${formatCidr(t)}` };
  }
  const blocks = 1n << BigInt(blockSize - t.prefix);
  const perBlock = 1n << BigInt(max - blockSize);
  const pods = snap.pods.filter((p) => !p.hostNetwork && p.podIPs.some((a) => famOf(a) === f)).length;
  const needBlocks = BigInt(Math.ceil(Math.max(nodes, 1) * headroom));
  const needAddrs = BigInt(Math.ceil(Math.max(pods, 1) * headroom));
  const line = `${formatCidr(t)}: ${blocks} blocks of /${blockSize} (${perBlock} addresses each) for ${nodes} node(s) and ${pods} pod(s) (x${headroom} headroom)`;
  const pool: PoolData = { ...poolData(model), name: opts.poolName && single ? opts.poolName : `${POOL_PREFIX}-${slug(formatCidr(t))}`, cidr: formatCidr(t), blockSize };
  return { pool, line, fits: !(blocks < needBlocks || blocks * perBlock < needAddrs) };
}

/** Calico path: the new pools, with checks `pod-target-size` and `pod-calico-install`. */
function calicoSizing(
  snap: Snapshot, opts: PodPlanOptions, target: Map<Family, Cidr>, oldPools: CalicoPool[], headroom: number,
): { calico: NonNullable<PodCIDRSpec['calico']>; checks: PreflightCheck[] } {
  const newPools: PoolData[] = [];
  const sizeProblems: string[] = [];
  const sizeFine: string[] = [];
  for (const [f, t] of target) {
    const sized = newPoolSizing(snap, opts, f, t, oldPools.find((p) => famOf(p.cidr) === f), headroom, target.size === 1);
    if (!sized.pool) {
      sizeProblems.push(sized.problem);
      continue;
    }
    if (sized.fits) sizeFine.push(sized.line); else sizeProblems.push(sized.line);
    newPools.push(sized.pool);
  }
  return {
    calico: { operatorManaged: snap.cni.operatorManaged, oldPools: oldPools.map(poolData), newPools },
    checks: [
      sizeProblems.length > 0
        ? { id: 'pod-target-size', status: 'fail', target: true, message: sizeProblems.join('; '), fix: 'choose a larger range or a smaller block size (--block-size), or lower --headroom' }
        : pass('pod-target-size', sizeFine.join('; '), true),
      snap.cni.operatorManaged
        ? { id: 'pod-calico-install', status: 'warn', message: 'the Tigera operator manages Calico: it reverts direct IPPool edits, so pools are changed through Installation.spec.calicoNetwork.ipPools', fix: '' }
        : pass('pod-calico-install', 'manifest install: IPPools are changed directly (crd.projectcalico.org/v1, every field written explicitly)'),
    ],
  };
}

/** Calico path: new pool and old pools disabled; every workload restarted; old pools and IPAM leftovers removed. */
function calicoStepLists(inp: PodStepInputs): PodStepLists {
  const { spec } = inp;
  const cal = spec.calico!;
  const via = cal.operatorManaged ? ' through Installation/default spec.calicoNetwork.ipPools (the operator creates it)' : '';
  const prepare: PlanStep[] = [{
    id: 'create-ippool', kind: 'create-ippool',
    description: `create IPPool ${cal.newPools.map((p) => `${p.name} ${p.cidr} (blockSize ${p.blockSize}${p.ipipMode ? `, ipip ${p.ipipMode}` : ''}${p.vxlanMode ? `, vxlan ${p.vxlanMode}` : ''}, natOutgoing ${p.natOutgoing ?? false}, nodeSelector ${p.nodeSelector ?? 'all()'})`).join(', ')}${via}, copying the old pool's settings`,
    items: cal.newPools.map((p) => ({ namespace: '', name: p.name, from: [], to: [p.cidr] })),
    rollback: 'delete the new pool (only while no pod holds an address in it)',
  }, {
    id: 'disable-ippools', kind: 'disable-ippools',
    description: `disable IPPool ${cal.oldPools.map((p) => `${p.name} ${p.cidr}`).join(', ')}${cal.operatorManaged ? ' (Installation ipPools disableNewAllocations)' : ' (spec.disabled: true)'}: running pods keep their addresses, new pods take them from the new pool`,
    items: cal.oldPools.map((p) => ({ namespace: '', name: p.name, from: [p.cidr], to: [] })),
    rollback: 'enable the old pool(s) again',
  }];
  const restart: PlanStep[] = [{
    id: 'restart-pods', kind: 'restart-pods',
    description: `restart every workload with a pod in ${spec.from.join(', ')}, ${spec.restarts.parallel} rollout(s) at a time, the critical ones first: Deployments, StatefulSets and DaemonSets by the restartedAt annotation (awaited, paused ones reported, never forced); `
      + 'Job pods and bare pods by eviction through the Eviction API (PodDisruptionBudgets respected; bare pods created again from their backup); hostNetwork pods skipped',
    rollback: 'nothing to undo: restarted pods keep running in NEW (re-enable the old pool first to move back)',
  }];
  return { prepare, restart, finish: calicoCleanupSteps(inp) };
}

/** Calico clean-up: old pools deleted, their leftover blocks removed, then the pod range in the distribution's configuration. */
function calicoCleanupSteps(inp: PodStepInputs): PlanStep[] {
  const { spec } = inp;
  const cal = spec.calico!;
  const newText = spec.to;
  return [{
    id: 'delete-ippools', kind: 'delete-ippools',
    description: `delete IPPool ${cal.oldPools.map((p) => p.name).join(', ')}${cal.operatorManaged ? ' (removed from Installation ipPools)' : ''} once no pod holds an address in it`,
    items: cal.oldPools.map((p) => ({ namespace: '', name: p.name, from: [p.cidr], to: [] })),
    rollback: 'create the pool again from its backup',
  }, {
    id: 'remove-ipam-leftovers', kind: 'remove-ipam-leftovers',
    description: `delete the BlockAffinity and IPAMBlock objects (and IPAMHandles left pointing only at them) in ${spec.from.join(', ')}: Calico leaves them after a pool is deleted, and they later overlap new pools (calico#10778); a block still holding an address of an existing pod stops the step`,
    rollback: 'recreate them from the backups (only useful together with the old pool)',
  }, {
    id: 'pod-cidr-config', kind: 'gate',
    description: `change the pod range in the distribution's configuration to ${newText.join(',')}, with kube-controller-manager --allocate-node-cidrs=false in the same change so it keeps starting (node podCIDRs stay in the old range; Calico does not use them)`,
    gate: {
      condition: 'pod-cidr-config',
      reason: 'kube-controller-manager\'s --cluster-cidr, kube-proxy\'s clusterCIDR and the distribution\'s pod range live outside the API; with --allocate-node-cidrs=true and --cluster-cidr=NEW it would exit at start while nodes keep old podCIDRs',
      instructions: podGateInstructions(inp.distro, 'pod-cidr-config', 'final'),
      check: `every kube-controller-manager pod runs with --allocate-node-cidrs=false or --cluster-cidr inside ${newText.join(',')}, and the kube-proxy ConfigMap's clusterCIDR (when set) covers ${newText.join(',')}; --ack-gate pod-cidr-config where neither is visible`,
      patches: patchesFor(inp, 'pod-cidr-config'),
    },
    rollback: 'put the old values back',
  }];
}

function checkPool(v: unknown, pp: string, within: readonly Cidr[] | undefined): void {
  const po = obj(v, pp);
  subdomain(po, 'name', pp);
  const c = cidrAt(str(po, 'cidr', pp)!, `${pp}.cidr`);
  const bits = c.family === 4 ? 32 : 128;
  int(po, 'blockSize', pp, c.prefix, bits);
  if (within && !inAny(within, c)) fail(`${pp}.cidr`, `${formatCidr(c)} is not inside spec.podCIDR.to (${within.map(formatCidr).join(', ')})`);
  for (const k of ['ipipMode', 'vxlanMode'] as const) oneOf(po, k, pp, ['Always', 'CrossSubnet', 'Never'] as const, true);
  bool(po, 'natOutgoing', pp, true);
  str(po, 'nodeSelector', pp, true);
  strList(po, 'allowedUses', pp, true);
}

export const calicoPath: PodPath<'calico'> = {
  id: 'calico',
  moves: 'Calico IPPools',
  hint: 'Calico IPPools',
  flags: ['pool-name', 'block-size'],
  mixes: true,
  planned: 'Calico IPAM (calico-ipam): pods take addresses from IPPools',
  finalGate: 'pod-cidr-config',
  oldRanges({ snap, opts, target, newText }, checks) {
    const insideNew = (c: Cidr) => { const t = target.get(c.family); return !!t && contains(t, c); };
    const oldPools = snap.pools.filter((p) => target.has(famOf(p.cidr)) && !insideNew(parseCidr(p.cidr)));
    if (oldPools.length === 0) {
      checks.push({ id: 'pod-old-pools', status: 'fail', target: true, message: `no Calico IPPool of ${[...target.keys()].map(familyName).join('/')} outside ${newText.join(',')}: nothing to move`, fix: 'check `kube-renumber inspect`: the pools are read from crd.projectcalico.org/v1 ippools' });
      return undefined;
    }
    return {
      from: oldPools.map((p) => parseCidr(p.cidr)),
      size: (headroom) => {
        const sized = calicoSizing(snap, opts, target, oldPools, headroom);
        return { section: { calico: sized.calico }, checks: sized.checks };
      },
    };
  },
  stepLists: calicoStepLists,
  recordedOptions: (pc) => (pc.calico?.newPools[0] ? { blockSize: pc.calico.newPools[0].blockSize, poolName: pc.calico.newPools[0].name } : {}),
  consent: () => [],
  endState: (spec) => `; the old pool(s) and every IPAMBlock / BlockAffinity in ${spec.from.join(', ')} gone; the new pool enabled`,
  validate(pc, P, to) {
    const c = obj(pc.calico, `${P}.calico`);
    bool(c, 'operatorManaged', `${P}.calico`);
    list(c, 'oldPools', `${P}.calico`)!.forEach((x, i) => checkPool(x, `${P}.calico.oldPools[${i}]`, undefined));
    const np = list(c, 'newPools', `${P}.calico`)!;
    if (np.length === 0) fail(`${P}.calico.newPools`, 'must name at least one pool');
    np.forEach((x, i) => checkPool(x, `${P}.calico.newPools[${i}]`, to));
  },
  access: (pc) => [
    need('create', 'crd.projectcalico.org', 'ippools', POD_RBAC_FILE, 'the new IPPool'),
    need('patch', 'crd.projectcalico.org', 'ippools', POD_RBAC_FILE, 'disable the old IPPool'),
    need('delete', 'crd.projectcalico.org', 'ippools', POD_RBAC_FILE, 'delete the old IPPool'),
    ...['ipamblocks', 'blockaffinities', 'ipamhandles'].map((r) => need('delete', 'crd.projectcalico.org', r, POD_RBAC_FILE, 'leftover IPAM objects of the old range')),
    ...(pc.calico?.operatorManaged ? [need('update', 'operator.tigera.io', 'installations', POD_RBAC_FILE, 'the Installation\'s ipPools')] : []),
  ],
  summary: (pc) => `Calico IPAM${pc.calico?.operatorManaged ? ' (operator-managed: through Installation)' : ''}`,
  summaryRows: (pc) => (pc.calico ? [['Pools', `${pc.calico.oldPools.map((p) => `${p.name} ${p.cidr}`).join(', ')} → ${pc.calico.newPools.map((p) => `${p.name} ${p.cidr} /${p.blockSize} blocks`).join(', ')}`]] : []),
  markdown: () => '',
};
