/**
 * The Calico pod path, engine side (plan side: plan.ts): the new IPPool created (or
 * added to Installation/default when the Tigera operator manages the pools), the old ones disabled and later
 * deleted, their leftover IPAMBlocks, BlockAffinities and IPAMHandles removed; gate pod-cidr-config; and the
 * pools' part of the end state. Each step derives "done" from the cluster, so a crash is resumed by running again.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { BLOCKAFFINITIES, INSTALLATIONS, IPAMBLOCKS, IPAMHANDLES, IPPOOLS } from '../../kube/calico.ts';
import type { KubeClient } from '../../kube/client.ts';
import { apiVersionOf, createObject, deleteObject, forCreate, getObject, listAll, PODS, replaceObject } from '../../kube/resources.ts';
import { patchWithPrecondition } from '../../kube/workloads.ts';
import { contains, parseCidr, parseIP } from '../../net/index.ts';
import type { PoolData } from './kinds.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { backUpLate, type Step, type StepContext } from '../../engine/runner.ts';
import { RUN_LABEL } from '../../engine/covers.ts';
import { retryOnConflict, withRetry } from '../../engine/toolkit.ts';
import { active, cidrIn, inAny, ipsOf, MANAGED_LABEL, podRangeConfigDone, sameList, withKind } from '../../engine/pod-paths/common.ts';
import type { PodPathEngine, PodPathHost } from '../../engine/pod-paths/types.ts';

/** A new pool as the run creates it: labelled kube-renumber.io/managed and with the run, so rollback deletes only it. */
export function poolObject(p: PoolData, run: string): KubeObject {
  const spec: Record<string, unknown> = {
    cidr: p.cidr, blockSize: p.blockSize, disabled: false,
    ipipMode: p.ipipMode ?? 'Never', vxlanMode: p.vxlanMode ?? 'Never', natOutgoing: p.natOutgoing ?? false,
    nodeSelector: p.nodeSelector ?? 'all()',
  };
  if (p.allowedUses) spec.allowedUses = p.allowedUses;
  return { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: p.name, labels: { [MANAGED_LABEL]: 'true', [RUN_LABEL]: run } }, spec };
}

async function installation(client: KubeClient): Promise<KubeObject | undefined> {
  return getObject(client, INSTALLATIONS, 'default');
}

/** Replace Installation/default's ipPools with `edit(pools)` (resourceVersion precondition, retried on 409). */
async function editInstallationPools(ctx: StepContext, edit: (pools: any[]) => any[] | undefined): Promise<void> {
  await retryOnConflict('Installation/default', async () => {
    const inst = await withRetry(() => installation(ctx.client));
    if (!inst) throw new Error('Installation/default (operator.tigera.io) not found, but the plan says the operator manages Calico');
    const pools = [...(inst.spec?.calicoNetwork?.ipPools ?? [])];
    const next = edit(pools);
    if (!next) return;
    const body = { ...inst, spec: { ...inst.spec, calicoNetwork: { ...inst.spec?.calicoNetwork, ipPools: next } } };
    await withRetry(() => replaceObject(ctx.client, INSTALLATIONS, body, { dryRun: ctx.dryRun === 'server' }));
  });
}

/** Installation/default, for the backup phase of the steps that edit its pools (absent: nothing to back up). */
async function installationBackup(pe: PodPathHost, client: KubeClient): Promise<KubeObject[]> {
  if (!pe.spec.calico?.operatorManaged) return [];
  const inst = await withRetry(() => installation(client));
  return inst ? [withKind(inst, INSTALLATIONS)] : [];
}

async function poolsReady(client: KubeClient, pools: readonly PoolData[]): Promise<boolean> {
  for (const p of pools) {
    const cur = await getObject(client, IPPOOLS, p.name);
    if (!cur || cur.spec?.disabled === true || !sameList([cur.spec?.cidr], [p.cidr])) return false;
  }
  return true;
}

function createPoolStep(pe: PodPathHost, p: PlanStep): Step {
  const pools = pe.spec.calico?.newPools ?? [];
  const operator = !!pe.spec.calico?.operatorManaged;
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => poolsReady(ctx.client, pools),
    // Installation/default when the operator manages the pools; a disabled pool of the new pool's name that apply enables
    backup: async (ctx) => [...await installationBackup(pe, ctx.client),
      ...(await Promise.all(pools.map((np) => withRetry(() => getObject(ctx.client, IPPOOLS, np.name)))))
        .filter((x): x is KubeObject => !!x && x.spec?.disabled === true).map((x) => withKind(x, IPPOOLS))],
    apply: async (ctx) => {
      for (const np of pools) {
        const cur = await getObject(ctx.client, IPPOOLS, np.name);
        if (cur && !sameList([cur.spec?.cidr], [np.cidr])) throw new Error(`IPPool ${np.name} exists with CIDR ${cur.spec?.cidr}, not ${np.cidr}: not ours to change; give --pool-name`);
        const clash = (await withRetry(() => listAll(ctx.client, IPPOOLS))).find((x) => x.metadata?.name !== np.name && cidrIn([parseCidr(np.cidr)], x.spec?.cidr));
        if (clash) throw new Error(`IPPool ${clash.metadata?.name} (${clash.spec?.cidr}) overlaps ${np.cidr}: re-plan with another range`);
        if (operator) {
          await editInstallationPools(ctx, (list) => (list.some((x) => x.name === np.name || x.cidr === np.cidr) ? undefined : [...list, {
            name: np.name, cidr: np.cidr, blockSize: np.blockSize,
            encapsulation: np.vxlanMode && np.vxlanMode !== 'Never' ? (np.vxlanMode === 'CrossSubnet' ? 'VXLANCrossSubnet' : 'VXLAN')
              : np.ipipMode && np.ipipMode !== 'Never' ? (np.ipipMode === 'CrossSubnet' ? 'IPIPCrossSubnet' : 'IPIP') : 'None',
            natOutgoing: np.natOutgoing === false ? 'Disabled' : 'Enabled', nodeSelector: np.nodeSelector ?? 'all()',
          }]));
        } else if (!cur) {
          await withRetry(() => createObject(ctx.client, IPPOOLS, poolObject(np, pe.run), { dryRun: ctx.dryRun === 'server' }));
        } else if (cur.spec?.disabled === true) {
          backUpLate(ctx, [withKind(cur, IPPOOLS)], p.id);
          // a 409 (our write whose answer was lost, or someone's edit) reads the pool again
          await retryOnConflict(`IPPool ${np.name}`, async (n) => {
            const now = n === 1 ? cur : await withRetry(() => getObject(ctx.client, IPPOOLS, np.name));
            if (now?.spec?.disabled !== true) return;
            await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, now, { spec: { disabled: false } }, { dryRun: ctx.dryRun === 'server' }));
          });
        }
      }
    },
    verify: (ctx) => pe.until('the new IPPool(s) to exist and be enabled', () => poolsReady(ctx.client, pools)),
    rollback: async (ctx) => {
      const target = pools.map((x) => parseCidr(x.cidr));
      const using = (await withRetry(() => listAll(ctx.client, PODS))).filter((x) => active(x) && ipsOf(x).some((a) => inAny(target, a)));
      if (using.length > 0) throw new Error(`${using.length} pod(s) hold addresses in the new pool (e.g. ${using[0]!.metadata?.namespace}/${using[0]!.metadata?.name}): move them back first`);
      if (operator) {
        // the operator writes the IPPool's metadata itself (only its managed-by label), so the pool cannot carry the
        // run label: what the run added is told by the Installation's backup, taken before the run changed it
        const before = ctx.backups.load({ apiVersion: apiVersionOf(INSTALLATIONS), kind: INSTALLATIONS.kind, name: 'default' });
        await editInstallationPools(ctx, (list) => {
          const ours = addedPools(list, pools, before);
          return ours.length > 0 ? list.filter((x) => !ours.includes(x)) : undefined;
        });
      } else for (const np of pools) await undoPool(ctx, np.name, pe.run);
    },
  };
}

/**
 * The entries of Installation ipPools `list` that this run added: one of the plan's new pools (by name) that the
 * Installation's backup (`before`, taken before the run's first change to it) did not hold by name or CIDR. With no
 * backup the run never got to change the Installation: none. Pure.
 */
export function addedPools(list: readonly any[], pools: readonly PoolData[], before: KubeObject | undefined): any[] {
  if (!before) return [];
  const had = (before.spec?.calicoNetwork?.ipPools ?? []) as any[];
  return list.filter((x) => pools.some((np) => np.name === x?.name) && !had.some((b) => b?.name === x?.name || b?.cidr === x?.cidr));
}

/**
 * Undo the new pool: delete it (uid precondition) only when it carries this run's labels; a pool of that name that
 * existed disabled before (its backup) is disabled again; any other is not ours, and the rollback stops at it.
 */
export async function undoPool(ctx: StepContext, name: string, run: string): Promise<void> {
  const cur = await withRetry(() => getObject(ctx.client, IPPOOLS, name));
  if (!cur) return;
  const l = cur.metadata?.labels ?? {};
  if (l[MANAGED_LABEL] === 'true' && l[RUN_LABEL] === run) {
    await withRetry(() => deleteObject(ctx.client, IPPOOLS, name, undefined, { uid: cur.metadata?.uid }));
    return;
  }
  const before = ctx.backups.load({ apiVersion: cur.apiVersion ?? 'crd.projectcalico.org/v1', kind: 'IPPool', name });
  if (before?.spec?.disabled === true) {
    if (cur.spec?.disabled !== true) await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, cur, { spec: { disabled: true } }));
    return;
  }
  throw new Error(`IPPool ${name} is not this run's (labels ${MANAGED_LABEL}=true, ${RUN_LABEL}=${run}): left as it is; delete it by hand if this migration made it, then roll back again`);
}

/** The old pools that still exist, ready to back up. */
async function oldPoolObjects(pe: PodPathHost, client: KubeClient): Promise<KubeObject[]> {
  const found = await Promise.all((pe.spec.calico?.oldPools ?? []).map((o) => getObject(client, IPPOOLS, o.name)));
  return found.filter((x): x is KubeObject => !!x).map((x) => withKind(x, IPPOOLS));
}

async function oldPoolsDisabled(pe: PodPathHost, client: KubeClient): Promise<boolean> {
  for (const op of pe.spec.calico?.oldPools ?? []) {
    const cur = await getObject(client, IPPOOLS, op.name);
    if (cur && cur.spec?.disabled !== true) return false;
  }
  return true;
}

function disablePoolsStep(pe: PodPathHost, p: PlanStep): Step {
  const olds = pe.spec.calico?.oldPools ?? [];
  const operator = !!pe.spec.calico?.operatorManaged;
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => oldPoolsDisabled(pe, ctx.client),
    backup: async (ctx) => [...await oldPoolObjects(pe, ctx.client), ...await installationBackup(pe, ctx.client)],
    apply: async (ctx) => {
      if (operator) {
        await editInstallationPools(ctx, (list) => {
          const hit = list.filter((x) => olds.some((o) => o.name === x.name || o.cidr === x.cidr));
          if (hit.every((x) => x.disableNewAllocations === true)) return undefined;
          return list.map((x) => (hit.includes(x) ? { ...x, disableNewAllocations: true } : x));
        });
        return;
      }
      for (const o of olds) {
        await retryOnConflict(`IPPool ${o.name}`, async () => {
          const cur = await withRetry(() => getObject(ctx.client, IPPOOLS, o.name));
          if (!cur || cur.spec?.disabled === true) return;
          await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, cur, { spec: { disabled: true } }, { dryRun: ctx.dryRun === 'server' }));
        });
      }
    },
    verify: (ctx) => pe.until('the old IPPool(s) to be disabled', () => oldPoolsDisabled(pe, ctx.client)),
    rollback: async (ctx) => {
      if (operator) {
        await editInstallationPools(ctx, (list) => list.map((x) => (olds.some((o) => o.name === x.name) ? { ...x, disableNewAllocations: false } : x)));
        return;
      }
      for (const o of olds) {
        const was = ctx.backups.load({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', name: o.name })?.spec?.disabled === true;
        await retryOnConflict(`IPPool ${o.name}`, async () => {
          const cur = await withRetry(() => getObject(ctx.client, IPPOOLS, o.name));
          if (cur && cur.spec?.disabled === true && !was) await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, cur, { spec: { disabled: false } }));
        });
      }
    },
  };
}

function deletePoolsStep(pe: PodPathHost, p: PlanStep): Step {
  const olds = pe.spec.calico?.oldPools ?? [];
  const operator = !!pe.spec.calico?.operatorManaged;
  const gone = async (client: KubeClient) => (await Promise.all(olds.map((o) => getObject(client, IPPOOLS, o.name)))).every((x) => !x);
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => gone(ctx.client),
    backup: (ctx) => oldPoolObjects(pe, ctx.client),
    apply: async (ctx) => {
      const still = await pe.podsInOld(ctx.client);
      if (still.length > 0) {
        throw new Error(`${still.length} pod(s) still have addresses in ${pe.spec.from.join(', ')} (e.g. ${still.slice(0, 3).map((x) => `${x.metadata?.namespace}/${x.metadata?.name}`).join(', ')}): the old pool is not deleted`);
      }
      if (operator) {
        await editInstallationPools(ctx, (list) => (list.some((x) => olds.some((o) => o.name === x.name || o.cidr === x.cidr))
          ? list.filter((x) => !olds.some((o) => o.name === x.name || o.cidr === x.cidr)) : undefined));
        return;
      }
      for (const o of olds) await withRetry(() => deleteObject(ctx.client, IPPOOLS, o.name, undefined, { dryRun: ctx.dryRun === 'server' }));
    },
    verify: (ctx) => pe.until('the old IPPool(s) to be gone', () => gone(ctx.client)),
    rollback: async (ctx) => {
      for (const o of olds) {
        const b = ctx.backups.load({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', name: o.name });
        if (!b) throw new Error(`no backup of IPPool ${o.name}`);
        if (!(await getObject(ctx.client, IPPOOLS, o.name))) await withRetry(() => createObject(ctx.client, IPPOOLS, forCreate(b)));
      }
    },
  };
}

/** IPAM objects in the old range: blocks, affinities, and handles that point only at such blocks. */
async function leftovers(pe: PodPathHost, client: KubeClient): Promise<{ blocks: KubeObject[]; affinities: KubeObject[]; handles: KubeObject[] }> {
  const [blocks, affinities, handles] = await Promise.all([IPAMBLOCKS, BLOCKAFFINITIES, IPAMHANDLES].map((t) => withRetry(() => listAll(client, t))));
  const oldBlocks = blocks!.filter((b) => cidrIn(pe.old, b.spec?.cidr)).map((b) => withKind(b, IPAMBLOCKS));
  const oldAff = affinities!.filter((a) => cidrIn(pe.old, a.spec?.cidr)).map((a) => withKind(a, BLOCKAFFINITIES));
  const oldHandles = handles!.filter((h) => {
    const keys = Object.keys(h.spec?.block ?? {});
    return keys.length > 0 && keys.every((k) => cidrIn(pe.old, k));
  }).map((h) => withKind(h, IPAMHANDLES));
  return { blocks: oldBlocks, affinities: oldAff, handles: oldHandles };
}

function leftoversStep(pe: PodPathHost, p: PlanStep): Step {
  const none = async (client: KubeClient) => { const l = await leftovers(pe, client); return l.blocks.length + l.affinities.length + l.handles.length === 0; };
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => none(ctx.client),
    backup: async (ctx) => { const l = await leftovers(pe, ctx.client); return [...l.blocks, ...l.affinities, ...l.handles]; },
    apply: async (ctx) => {
      const l = await leftovers(pe, ctx.client);
      // A block whose allocation belongs to a pod that still exists with that address is in use: stop.
      const pods = await withRetry(() => listAll(ctx.client, PODS));
      const live = new Set(pods.filter(active).flatMap((x) => ipsOf(x)).filter((a) => inAny(pe.old, a)));
      for (const b of l.blocks) {
        const c = parseCidr(b.spec.cidr);
        const used = [...live].filter((a) => contains(c, parseIP(a)));
        if (used.length > 0) throw new Error(`IPAMBlock ${b.metadata?.name} still holds ${used.join(', ')} of running pods: restart them first`);
      }
      const dry = ctx.dryRun === 'server';
      for (const b of l.blocks) await withRetry(() => deleteObject(ctx.client, IPAMBLOCKS, b.metadata!.name!, undefined, { dryRun: dry }));
      for (const a of l.affinities) await withRetry(() => deleteObject(ctx.client, BLOCKAFFINITIES, a.metadata!.name!, undefined, { dryRun: dry }));
      for (const h of l.handles) await withRetry(() => deleteObject(ctx.client, IPAMHANDLES, h.metadata!.name!, undefined, { dryRun: dry }));
      ctx.log(`removed ${l.blocks.length} IPAMBlock(s), ${l.affinities.length} BlockAffinity(ies), ${l.handles.length} IPAMHandle(s) in ${pe.spec.from.join(', ')}`);
    },
    verify: async (ctx) => ((await none(ctx.client)) ? undefined : 'IPAM objects are left in the old range'),
    rollback: async () => { throw new Error('removed IPAM blocks are not put back: Calico creates blocks as pools need them (the backups hold them)'); },
  };
}

export const calicoEngine: PodPathEngine<'calico'> = {
  id: 'calico',
  steps: {
    'create-ippool': createPoolStep,
    'disable-ippools': disablePoolsStep,
    'delete-ippools': deletePoolsStep,
    'remove-ipam-leftovers': leftoversStep,
  },
  gates: {
    'pod-cidr-config': (pe, _p, ctx) => podRangeConfigDone(ctx.client, pe.target),
  },
  async endState(pe, client) {
    const problems: string[] = [];
    for (const o of pe.spec.calico?.oldPools ?? []) if (await getObject(client, IPPOOLS, o.name)) problems.push(`IPPool ${o.name} still exists`);
    if (!(await poolsReady(client, pe.spec.calico?.newPools ?? []))) problems.push('the new IPPool is missing or disabled');
    const l = await leftovers(pe, client);
    if (l.blocks.length + l.affinities.length + l.handles.length > 0) problems.push(`${l.blocks.length} IPAMBlock(s), ${l.affinities.length} BlockAffinity(ies) and ${l.handles.length} IPAMHandle(s) left in the old range`);
    return problems;
  },
};
