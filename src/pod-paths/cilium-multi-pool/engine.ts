/**
 * The Cilium multi-pool pod path, engine side (plan side: plan.ts): the new
 * CiliumPodIPPool created; cilium-config changed (the default pool, the native-routing CIDR) and the agents
 * restarted to read it; the old pool deleted once no pod holds one of its addresses and no CiliumNode lists it; the
 * native-routing CIDR narrowed; gate cilium-pod-cidr-config; and the path's part of the end state. Each step derives
 * "done" from the cluster, so a crash is resumed by running again.
 */
import type { KubeObject } from '../../cluster/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { KubeApiError } from '../../kube/errors.ts';
import { CONFIGMAPS, createObject, deleteObject, forCreate, getObject, listAll, PODS, type KindResource } from '../../kube/resources.ts';
import { DAEMONSETS, patchWithPrecondition } from '../../kube/workloads.ts';
import { contains, parseCidr, tryParseCidr } from '../../net/index.ts';
import type { CiliumConfigChange, CiliumPoolData } from './kinds.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { RESTART_ANNOTATION, restartWorkload } from '../../engine/restarts.ts';
import { backUpLate, type Step, type StepContext } from '../../engine/runner.ts';
import { retryOnConflict, withRetry } from '../../engine/toolkit.ts';
import { active, inAny, ipsOf, MANAGED_LABEL, podRangeConfigDone, sameList } from '../../engine/pod-paths/common.ts';
import type { PodPathEngine, PodPathHost } from '../../engine/pod-paths/types.ts';

/** What the path uses of PodExecutor besides the shared host: its run token and rollout timeout (agent restarts). */
export interface CiliumHost extends PodPathHost {
  readonly opts: { readonly token: string; readonly rolloutTimeoutMs: number };
}

const CILIUM_NODES: KindResource = { group: 'cilium.io', version: 'v2', plural: 'ciliumnodes', namespaced: false, kind: 'CiliumNode' };
/** CiliumPodIPPools, at the version the plan names (v2alpha1 in Cilium 1.14-1.17, v2 from 1.18). */
const CILIUM_POD_IP_POOLS: KindResource = { group: 'cilium.io', version: 'v2alpha1', plural: 'ciliumpodippools', namespaced: false, kind: 'CiliumPodIPPool' };
/** The kinds the path's steps change and back up besides the core's (PodPathModule.kinds: `restore` puts them back). */
export const CILIUM_MULTI_POOL_KINDS: readonly KindResource[] = [CILIUM_POD_IP_POOLS, CILIUM_NODES];
/** The pool annotations a pod or namespace chooses its pool by (Cilium v1.15.19 pkg/annotation/k8s.go, pkg/ipam/metadata/manager.go:97-115). */
export const POOL_ANNOTATIONS = ['ipam.cilium.io/ip-pool', 'ipam.cilium.io/ipv4-pool', 'ipam.cilium.io/ipv6-pool'] as const;
const AGENTS = { namespace: 'kube-system', name: 'cilium' };
const CONFIG = { namespace: 'kube-system', name: 'cilium-config' };

function poolsType(apiVersion: string): KindResource {
  return { ...CILIUM_POD_IP_POOLS, version: apiVersion.split('/')[1] ?? CILIUM_POD_IP_POOLS.version };
}

function section(pe: PodPathHost) {
  const s = pe.spec['cilium-multi-pool'];
  if (!s) throw new Error('the plan has no spec.podCIDR.cilium-multi-pool section');
  return s;
}

function poolCidrs(p: CiliumPoolData): string[] {
  return [...(p.ipv4?.cidrs ?? []), ...(p.ipv6?.cidrs ?? [])];
}

function poolObject(apiVersion: string, p: CiliumPoolData): KubeObject {
  const spec: Record<string, unknown> = {};
  if (p.ipv4) spec.ipv4 = { cidrs: [...p.ipv4.cidrs], maskSize: p.ipv4.maskSize };
  if (p.ipv6) spec.ipv6 = { cidrs: [...p.ipv6.cidrs], maskSize: p.ipv6.maskSize };
  return { apiVersion, kind: CILIUM_POD_IP_POOLS.kind, metadata: { name: p.name, labels: { [MANAGED_LABEL]: 'true' } }, spec };
}

/** Whether a pool object has exactly the planned CIDRs. */
function samePool(cur: KubeObject | undefined, p: CiliumPoolData): boolean {
  if (!cur) return false;
  for (const f of ['ipv4', 'ipv6'] as const) {
    const want = p[f]?.cidrs ?? [];
    const have: string[] = cur.spec?.[f]?.cidrs ?? [];
    if (want.length === 0 ? have.length > 0 : !sameList(have, want)) return false;
  }
  return true;
}

/** "pod ns/name" or "namespace ns" for every object that chooses its pool by annotation. */
async function annotatedChoosers(client: KubeClient): Promise<string[]> {
  const has = (o: KubeObject) => POOL_ANNOTATIONS.some((a) => (o.metadata?.annotations?.[a] ?? '') !== '');
  const [pods, nss] = await Promise.all([
    withRetry(() => listAll(client, PODS)),
    withRetry(() => listAll(client, { group: '', version: 'v1', plural: 'namespaces', namespaced: false })),
  ]);
  return [
    ...nss.filter(has).map((n) => `namespace ${n.metadata?.name}`),
    ...pods.filter((p) => active(p) && has(p)).map((p) => `pod ${p.metadata?.namespace}/${p.metadata?.name}`),
  ];
}

/**
 * CiliumNodeConfigs that set the default pool or the pre-allocation for some nodes (Documentation/network/concepts/
 * ipam/multi-pool.rst "Per-Node Default Pool": they override cilium-config on the nodes they select), as
 * "namespace/name". cilium.io/v2alpha1 in Cilium 1.15, v2 later; a version not served has none.
 */
async function nodeConfigOverrides(client: KubeClient): Promise<string[]> {
  const out: string[] = [];
  for (const version of ['v2', 'v2alpha1']) {
    let items: KubeObject[];
    try {
      items = await withRetry(() => listAll(client, { group: 'cilium.io', version, plural: 'ciliumnodeconfigs', namespaced: true }));
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) continue;
      throw e;
    }
    for (const o of items) {
      const d = o.spec?.defaults ?? {};
      if (d['ipam-default-ip-pool'] !== undefined || d['ipam-multi-pool-pre-allocation'] !== undefined) out.push(`${o.metadata?.namespace}/${o.metadata?.name}`);
    }
  }
  return [...new Set(out)];
}

/** Pods holding an address of the pool's CIDRs, and CiliumNodes listing the pool (requested or allocated). */
async function poolUsers(client: KubeClient, p: CiliumPoolData): Promise<string[]> {
  const ranges = poolCidrs(p).map((c) => parseCidr(c));
  const [pods, nodes] = await Promise.all([withRetry(() => listAll(client, PODS)), withRetry(() => listAll(client, CILIUM_NODES))]);
  const users = pods.filter((x) => active(x) && ipsOf(x).some((a) => inAny(ranges, a))).map((x) => `pod ${x.metadata?.namespace}/${x.metadata?.name}`);
  for (const n of nodes) {
    const pools = n.spec?.ipam?.pools ?? {};
    const listed = [...(pools.requested ?? []), ...(pools.allocated ?? [])].some((e: { pool?: string }) => e?.pool === p.name);
    if (listed) users.push(`CiliumNode ${n.metadata?.name}`);
  }
  return users;
}

function createPoolStep(pe: CiliumHost, p: PlanStep): Step {
  const s = section(pe);
  const T = poolsType(s.apiVersion);
  const ready = async (client: KubeClient) => samePool(await getObject(client, T, s.newPool.name), s.newPool);
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => ready(ctx.client),
    backup: async () => [],
    apply: async (ctx) => {
      // the pool a pod takes its addresses from is its annotation's before the default pool's: such pods would not move
      const choosers = await annotatedChoosers(ctx.client);
      if (choosers.length > 0) {
        throw new Error(`${choosers.length} object(s) choose their CiliumPodIPPool by annotation (${POOL_ANNOTATIONS.join(', ')}), e.g. ${choosers.slice(0, 3).join(', ')}: kube-renumber moves only the default pool; nothing was changed`);
      }
      const overrides = await nodeConfigOverrides(ctx.client);
      if (overrides.length > 0) {
        throw new Error(`CiliumNodeConfig ${overrides.join(', ')} set${overrides.length === 1 ? 's' : ''} ipam-default-ip-pool or ipam-multi-pool-pre-allocation for some nodes, over cilium-config: kube-renumber changes only cilium-config; nothing was changed`);
      }
      const cur = await withRetry(() => getObject(ctx.client, T, s.newPool.name));
      if (cur) {
        if (!samePool(cur, s.newPool)) throw new Error(`CiliumPodIPPool ${s.newPool.name} exists with other CIDRs (${JSON.stringify(cur.spec)}): not ours to change`);
        return;
      }
      const wanted = poolCidrs(s.newPool).map((c) => parseCidr(c));
      const clash = (await withRetry(() => listAll(ctx.client, T))).find((x) => x.metadata?.name !== s.newPool.name
        && [...(x.spec?.ipv4?.cidrs ?? []), ...(x.spec?.ipv6?.cidrs ?? [])].some((c: string) => { const pc = tryParseCidr(c); return !!pc && wanted.some((w) => w.family === pc.family && (contains(w, pc) || contains(pc, w))); }));
      if (clash) throw new Error(`CiliumPodIPPool ${clash.metadata?.name} overlaps ${poolCidrs(s.newPool).join(',')}: re-plan with another range`);
      await withRetry(() => createObject(ctx.client, T, poolObject(s.apiVersion, s.newPool), { dryRun: ctx.dryRun === 'server' }));
    },
    verify: (ctx) => pe.until(`CiliumPodIPPool ${s.newPool.name} to exist`, () => ready(ctx.client)),
    rollback: async (ctx) => {
      const users = await poolUsers(ctx.client, s.newPool);
      if (users.length > 0) throw new Error(`${users.length} pod(s) or node(s) use pool ${s.newPool.name} (e.g. ${users.slice(0, 3).join(', ')}): move them back first`);
      await withRetry(() => deleteObject(ctx.client, T, s.newPool.name));
    },
  };
}

/** Whether cilium-config holds the values of `changes` (`to`; absent: the key removed). */
function configHolds(cm: KubeObject | undefined, changes: readonly CiliumConfigChange[]): boolean {
  return changes.every((c) => (cm?.data?.[c.key] ?? undefined) === c.to);
}

/** The Cilium agents' DaemonSet, when the cluster runs one under the usual name. */
async function agents(client: KubeClient): Promise<KubeObject | undefined> {
  return withRetry(() => getObject(client, DAEMONSETS, AGENTS.name, AGENTS.namespace));
}

function configStep(pe: CiliumHost, p: PlanStep, which: 'move' | 'final'): Step {
  const changes = () => section(pe).config[which];
  const token = `${pe.opts.token}-${p.id}`;
  const restarted = (ds: KubeObject | undefined) => !ds || ds.spec?.template?.metadata?.annotations?.[RESTART_ANNOTATION] === token;
  const read = (client: KubeClient) => withRetry(() => getObject(client, CONFIGMAPS, CONFIG.name, CONFIG.namespace));
  return {
    id: p.id, title: p.description, kind: 'action',
    check: async (ctx) => configHolds(await read(ctx.client), changes()) && restarted(await agents(ctx.client)),
    backup: async (ctx) => { const cm = await read(ctx.client); return cm ? [cm] : []; },
    apply: async (ctx) => {
      await retryOnConflict('ConfigMap kube-system/cilium-config', async () => {
        const cm = await read(ctx.client);
        if (!cm) throw new Error('ConfigMap kube-system/cilium-config not found');
        if (configHolds(cm, changes())) return;
        backUpLate(ctx, [cm], p.id);
        const data: Record<string, string | null> = {};
        for (const c of changes()) data[c.key] = c.to ?? null;
        await withRetry(() => patchWithPrecondition(ctx.client, CONFIGMAPS, cm, { data }, { dryRun: ctx.dryRun === 'server' }));
      });
      const ds = await agents(ctx.client);
      if (!ds) {
        ctx.warn?.(`no DaemonSet ${AGENTS.namespace}/${AGENTS.name}: restart the Cilium agents by hand so they read cilium-config (they read it only at start)`);
        return;
      }
      const pods = (await withRetry(() => listAll(ctx.client, PODS, { namespace: AGENTS.namespace }))).filter((x) => (x.metadata?.ownerReferences ?? []).some((r) => r.controller && r.kind === 'DaemonSet' && r.name === AGENTS.name));
      const r = await restartWorkload(ctx, { kind: 'DaemonSet', namespace: AGENTS.namespace, name: AGENTS.name, pods: pods.map((x) => x.metadata!.name!) }, { token, timeoutMs: pe.opts.rolloutTimeoutMs });
      if (r.status === 'failed' || r.status === 'stuck' || r.status === 'paused') throw r.error ?? new Error(`DaemonSet ${AGENTS.namespace}/${AGENTS.name}: ${r.status}${r.message ? ` (${r.message})` : ''}`);
    },
    verify: async (ctx) => (configHolds(await read(ctx.client), changes()) ? undefined : 'cilium-config does not hold the planned values'),
    rollback: async (ctx) => {
      const b = ctx.backups.load({ apiVersion: 'v1', kind: 'ConfigMap', namespace: CONFIG.namespace, name: CONFIG.name });
      if (!b) throw new Error('no backup of ConfigMap kube-system/cilium-config');
      await retryOnConflict('ConfigMap kube-system/cilium-config', async () => {
        const cm = await read(ctx.client);
        if (!cm) return;
        const data: Record<string, string | null> = {};
        for (const c of changes()) data[c.key] = b.data?.[c.key] ?? null;
        await withRetry(() => patchWithPrecondition(ctx.client, CONFIGMAPS, cm, { data }));
      });
      ctx.warn?.('cilium-config put back: restart the Cilium agents (kubectl -n kube-system rollout restart daemonset/cilium) so they read it');
    },
  };
}

function deletePoolStep(pe: CiliumHost, p: PlanStep): Step {
  const s = section(pe);
  const T = poolsType(s.apiVersion);
  const gone = async (client: KubeClient) => !(await getObject(client, T, s.oldPool.name));
  return {
    id: p.id, title: p.description, kind: 'action',
    check: (ctx) => gone(ctx.client),
    backup: async (ctx) => { const o = await withRetry(() => getObject(ctx.client, T, s.oldPool.name)); return o ? [o] : []; },
    apply: async (ctx) => {
      let users: string[] = [];
      const late = await pe.until(`no pod and no CiliumNode to use pool ${s.oldPool.name}`, async () => (users = await poolUsers(ctx.client, s.oldPool)).length === 0);
      if (late) throw new Error(`${users.length} pod(s) or CiliumNode(s) still use pool ${s.oldPool.name} (e.g. ${users.slice(0, 3).join(', ')}): the pool is not deleted (Cilium 1.15 would drop the CIDRs of a deleted pool from nodes still using them)`);
      await withRetry(() => deleteObject(ctx.client, T, s.oldPool.name, undefined, { dryRun: ctx.dryRun === 'server' }));
    },
    verify: (ctx) => pe.until(`CiliumPodIPPool ${s.oldPool.name} to be gone`, () => gone(ctx.client)),
    rollback: async (ctx) => {
      const b = ctx.backups.load({ apiVersion: s.apiVersion, kind: 'CiliumPodIPPool', name: s.oldPool.name });
      if (!b) throw new Error(`no backup of CiliumPodIPPool ${s.oldPool.name}`);
      if (!(await getObject(ctx.client, T, s.oldPool.name))) await withRetry(() => createObject(ctx.client, T, forCreate(b)));
    },
  };
}

export const ciliumMultiPoolEngine: PodPathEngine<'cilium-multi-pool', CiliumHost> = {
  id: 'cilium-multi-pool',
  steps: {
    'create-ciliumpodippool': createPoolStep,
    'cilium-config-move': (pe, p) => configStep(pe, p, 'move'),
    'delete-ciliumpodippool': deletePoolStep,
    'cilium-config-final': (pe, p) => configStep(pe, p, 'final'),
  },
  gates: {
    'cilium-pod-cidr-config': (pe, _p, ctx) => podRangeConfigDone(ctx.client, pe.target),
  },
  async endState(pe, client) {
    const s = section(pe);
    const T = poolsType(s.apiVersion);
    const problems: string[] = [];
    if (await getObject(client, T, s.oldPool.name)) problems.push(`CiliumPodIPPool ${s.oldPool.name} still exists`);
    if (!samePool(await getObject(client, T, s.newPool.name), s.newPool)) problems.push(`CiliumPodIPPool ${s.newPool.name} is missing or has other CIDRs`);
    const listing = (await poolUsers(client, s.oldPool)).filter((u) => u.startsWith('CiliumNode'));
    if (listing.length > 0) problems.push(`${listing.join(', ')} still list pool ${s.oldPool.name}`);
    const cm = await getObject(client, CONFIGMAPS, CONFIG.name, CONFIG.namespace);
    const want = [...s.config.move.filter((c) => !s.config.final.some((f) => f.key === c.key)), ...s.config.final];
    const off = want.filter((c) => (cm?.data?.[c.key] ?? undefined) !== c.to);
    if (off.length > 0) problems.push(`cilium-config ${off.map((c) => `${c.key} is ${cm?.data?.[c.key] ?? '(unset)'}, not ${c.to ?? '(unset)'}`).join('; ')}`);
    return problems;
  },
};
