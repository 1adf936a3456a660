/**
 * Executes a pod extension plan (plan --extend-pod-cidr on Calico IPAM, src/plan/extend-pod.ts): gate
 * extension-kube-proxy waits for kube-proxy's clusterCIDR to hold the added range, step extend-masquerade adds it to
 * ip-masq-agent's nonMasqueradeCIDRs, step extend-ippool creates the IPPool (labelled with the run, so rollback
 * deletes only its own), verify-pod-extension checks the end state. No pool is disabled and no pod restarted.
 *
 * Rollback of the pool is refused while a pod holds an address in it (naming the pods: the running pods with an
 * address there, and any allocation Calico's IPAM blocks record there); otherwise the pool is disabled first (no new
 * allocation can start), checked again, deleted, and the empty blocks and affinities Calico leaves behind in its range
 * are deleted too (a deleted pool's leftover blocks later overlap new pools: calico#10778).
 */
import * as yaml from 'js-yaml';
import type { KubeObject } from '../cluster/types.ts';
import { BLOCKAFFINITIES, IPAMBLOCKS, IPAMHANDLES, IPPOOLS } from '../kube/calico.ts';
import type { KubeClient } from '../kube/client.ts';
import { CONFIGMAPS, createObject, deleteObject, getObject, listAll, PODS } from '../kube/resources.ts';
import { patchWithPrecondition } from '../kube/workloads.ts';
import { contains, formatIP, ipFrom, parseCidr, parseIP, tryParseCidr, type Cidr } from '../net/index.ts';
import type { ExtensionPool, PodExtensionSpec } from '../plan/extend-spec.ts';
import type { ExtendPodActionKind, ExtendPodGateCondition, GateStep, MigrationPlan, PlanStep } from '../plan/plan.ts';
import { RUN_LABEL } from './covers.ts';
import { controlPlaneView, MANAGED_LABEL, active, cidrIn, ipsOf, withKind } from './pod-paths/common.ts';
import { withPlanSupersessions, type Step, type StepContext } from './runner.ts';
import { poll, retryOnConflict, withRetry } from './toolkit.ts';

export interface PodExtensionExecOptions {
  acknowledgedGates?: readonly string[];
  /** How long to wait for the cluster to show an effect (default 60 s). */
  timeoutMs?: number;
  /** The run (the plan id): the label on the pool the run creates. */
  token: string;
}

/** The IPPool object of a new pool: every field written, labelled kube-renumber.io/managed and with the run. */
export function extensionPoolObject(p: ExtensionPool, run: string): KubeObject {
  const spec: Record<string, unknown> = {
    cidr: p.cidr, blockSize: p.blockSize, disabled: false,
    ipipMode: p.ipipMode ?? 'Never', vxlanMode: p.vxlanMode ?? 'Never', natOutgoing: p.natOutgoing ?? false,
    nodeSelector: p.nodeSelector ?? 'all()',
  };
  if (p.allowedUses) spec.allowedUses = [...p.allowedUses];
  return { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: p.name, labels: { [MANAGED_LABEL]: 'true', [RUN_LABEL]: run } }, spec };
}

/** Does the live pool `cur` carry the planned settings of `p` (the fields the plan writes)? */
export function poolMatches(cur: KubeObject | undefined, p: ExtensionPool): string | undefined {
  if (!cur) return `IPPool ${p.name} does not exist`;
  const s = cur.spec ?? {};
  if (s.cidr !== p.cidr) return `IPPool ${p.name} has CIDR ${s.cidr}, not ${p.cidr}`;
  if (s.disabled === true) return `IPPool ${p.name} is disabled`;
  const want = extensionPoolObject(p, '').spec as Record<string, unknown>;
  for (const k of ['blockSize', 'ipipMode', 'vxlanMode', 'natOutgoing', 'nodeSelector'] as const) {
    const have = s[k] ?? (k === 'natOutgoing' ? false : k === 'nodeSelector' ? 'all()' : k === 'blockSize' ? undefined : 'Never');
    if (have !== want[k]) return `IPPool ${p.name} has ${k} ${String(have)}, not ${String(want[k])}`;
  }
  return undefined;
}

/** The nonMasqueradeCIDRs list of an ip-masq-agent config text (YAML or JSON); undefined when it is not readable. */
export function masqueradeList(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  try {
    const o = yaml.load(text) as Record<string, unknown> | null;
    const l = o?.nonMasqueradeCIDRs;
    return Array.isArray(l) ? l.map(String) : [];
  } catch { return undefined; }
}

/** The config text with nonMasqueradeCIDRs set to `cidrs`, every other field kept. */
export function withMasqueradeList(text: string, cidrs: readonly string[]): string {
  const o = (yaml.load(text) as Record<string, unknown> | null) ?? {};
  return yaml.dump({ ...o, nonMasqueradeCIDRs: [...cidrs] }, { lineWidth: -1 });
}

/** An allocation Calico's IPAM records in a block: the address and, when the attributes say, the pod's namespace/name. */
export interface BlockAllocation { ip: string; pod?: string }

/** Every allocation recorded in IPAMBlock `b` (spec.allocations non-null, spec.attributes[].secondary namespace/pod). */
export function blockAllocations(b: KubeObject): BlockAllocation[] {
  const c = tryParseCidr(b.spec?.cidr ?? '');
  if (!c) return [];
  const out: BlockAllocation[] = [];
  const allocs: Array<number | null> = b.spec?.allocations ?? [];
  allocs.forEach((a, i) => {
    if (a === null || a === undefined) return;
    const attr = b.spec?.attributes?.[a];
    const ns = attr?.secondary?.namespace;
    const pod = attr?.secondary?.pod;
    const ip = addOffset(c, i);
    out.push({ ip, ...(ns && pod ? { pod: `${ns}/${pod}` } : {}) });
  });
  return out;
}

function addOffset(c: Cidr, i: number): string {
  return formatIP(ipFrom(c.family, c.network + BigInt(i)));
}

export class PodExtensionExecutor {
  readonly plan: MigrationPlan;
  readonly spec: PodExtensionSpec;
  readonly opts: PodExtensionExecOptions;
  readonly added: Cidr[];

  constructor(plan: MigrationPlan, opts: PodExtensionExecOptions) {
    const spec = plan.spec.podExtension;
    if (!spec) throw new Error('the plan does not extend the pod range');
    this.plan = plan;
    this.spec = spec;
    this.opts = opts;
    this.added = spec.add.map((a) => parseCidr(a));
  }

  /** Does this executor run plan step `p` (a pod extension kind, or the gate of its condition)? */
  handles(p: PlanStep): boolean {
    if (p.kind === 'gate') return Object.hasOwn(PodExtensionExecutor.gates, p.gate.condition);
    return Object.hasOwn(PodExtensionExecutor.actions, p.kind);
  }

  step(p: PlanStep): Step {
    if (p.kind === 'gate') {
      const check = (PodExtensionExecutor.gates as Partial<Record<string, (x: PodExtensionExecutor, p: GateStep, ctx: StepContext) => Promise<boolean>>>)[p.gate.condition];
      if (!check) throw new Error(`gate ${p.id}: condition ${p.gate.condition} is not one of a pod extension plan`);
      return withPlanSupersessions(p, {
        id: p.id, title: p.description, kind: 'gate', instructions: p.gate.instructions,
        check: (ctx) => ((this.opts.acknowledgedGates ?? []).includes(p.id) ? Promise.resolve(true) : check(this, p, ctx)),
      });
    }
    const make = (PodExtensionExecutor.actions as Partial<Record<string, (x: PodExtensionExecutor, p: PlanStep) => Step>>)[p.kind];
    if (!make) throw new Error(`plan step ${p.id}: kind ${String(p.kind)} is not one of a pod extension plan`);
    return withPlanSupersessions(p, make(this, p));
  }

  /** One executor per pod extension step kind (STEP_KINDS in src/plan/steps.ts). */
  static readonly actions: { readonly [K in ExtendPodActionKind]: (x: PodExtensionExecutor, p: PlanStep) => Step } = {
    'extend-masquerade': (x, p) => x.masqueradeStep(p),
    'extend-ippool': (x, p) => x.poolStep(p),
    'verify-pod-extension': (x, p) => ({
      id: p.id, title: p.description, kind: 'action', check: async () => false, apply: async () => {}, verify: (ctx) => x.verifyEndState(ctx.client),
      // it wrote nothing: nothing to undo
      rollback: async () => {},
    }),
  };

  static readonly gates: { readonly [C in ExtendPodGateCondition]: (x: PodExtensionExecutor, p: GateStep, ctx: StepContext) => Promise<boolean> } = {
    'extension-kube-proxy': async (x, _p, ctx) => (await x.kubeProxyProblem(ctx.client)) === undefined,
  };

  private async until(what: string, cond: () => Promise<boolean>): Promise<string | undefined> {
    try {
      await poll(what, async () => ((await cond()) ? true : undefined), { timeoutMs: this.opts.timeoutMs });
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  }

  /** What keeps kube-proxy's clusterCIDR (ConfigMap, else the pods' flag) from holding the added range; undefined when it does or kube-proxy shows none. */
  async kubeProxyProblem(client: KubeClient): Promise<string | undefined> {
    if (!this.spec.kubeProxy) return undefined;
    const kp = (await controlPlaneView(client)).kubeProxy?.clusterCIDR;
    if (!kp) return 'kube-proxy\'s clusterCIDR is not visible (no ConfigMap kube-system/kube-proxy and no kube-proxy pod flag)';
    const cs = kp.split(',').map((s) => tryParseCidr(s.trim())).filter((c): c is Cidr => !!c);
    const out = this.added.filter((a) => !cs.some((c) => contains(c, a)));
    return out.length > 0 ? `kube-proxy clusterCIDR ${kp} does not hold ${this.spec.add.join(',')}` : undefined;
  }

  /** The ip-masq-agent ConfigMap's list as it is now, or why it cannot be read. */
  private async masqueradeNow(client: KubeClient): Promise<{ cm?: KubeObject; list?: string[] }> {
    const m = this.spec.masquerade!;
    const cm = await withRetry(() => getObject(client, CONFIGMAPS, m.name, m.namespace));
    return { cm, list: masqueradeList(cm?.data?.[m.key]) };
  }

  private masqueradeHolds(list: readonly string[] | undefined): boolean {
    const cs = (list ?? []).map((x) => tryParseCidr(x)).filter((c): c is Cidr => !!c);
    return this.added.every((a) => cs.some((c) => contains(c, a)));
  }

  /** Step extend-masquerade: ADD appended to nonMasqueradeCIDRs (resourceVersion precondition, retried on 409). */
  protected masqueradeStep(p: PlanStep): Step {
    const m = this.spec.masquerade;
    const mine = m ? m.to.filter((x) => !m.from.includes(x)) : [];
    return {
      id: p.id, title: p.description, kind: 'action',
      check: async (ctx) => this.masqueradeHolds((await this.masqueradeNow(ctx.client)).list),
      backup: async (ctx) => { const { cm } = await this.masqueradeNow(ctx.client); return cm ? [withKind(cm, CONFIGMAPS)] : []; },
      apply: async (ctx) => {
        if (!m) return;
        await retryOnConflict(`ConfigMap ${m.namespace}/${m.name}`, async () => {
          const { cm, list } = await this.masqueradeNow(ctx.client);
          if (!cm) throw new Error(`ConfigMap ${m.namespace}/${m.name} is gone: plan again`);
          if (list === undefined) throw new Error(`ConfigMap ${m.namespace}/${m.name} ${m.key} is not YAML: add ${mine.join(', ')} to its nonMasqueradeCIDRs by hand`);
          if (this.masqueradeHolds(list)) return;
          const next = [...list, ...mine.filter((x) => !list.includes(x))];
          await withRetry(() => patchWithPrecondition(ctx.client, CONFIGMAPS, cm, { data: { [m.key]: withMasqueradeList(cm.data?.[m.key] ?? '', next) } }, { dryRun: ctx.dryRun === 'server' }));
        });
      },
      verify: async (ctx) => (this.masqueradeHolds((await this.masqueradeNow(ctx.client)).list) ? undefined : `ip-masq-agent nonMasqueradeCIDRs do not hold ${this.spec.add.join(',')}`),
      rollback: async (ctx) => {
        if (!m) return;
        await retryOnConflict(`ConfigMap ${m.namespace}/${m.name}`, async () => {
          const { cm, list } = await this.masqueradeNow(ctx.client);
          if (!cm || !list || !mine.some((x) => list.includes(x))) return;
          const holders = await this.holders(ctx.client);
          if (holders.length > 0) throw new Error(`${holders.length} pod(s) hold addresses in ${this.spec.add.join(',')} (${shortList(holders)}): their traffic would be masqueraded; delete or restart them first`);
          await withRetry(() => patchWithPrecondition(ctx.client, CONFIGMAPS, cm, { data: { [m.key]: withMasqueradeList(cm.data?.[m.key] ?? '', list.filter((x) => !mine.includes(x))) } }));
        });
      },
    };
  }

  /** Step extend-ippool: the pool created with the old pool's settings (nothing else changes). */
  protected poolStep(p: PlanStep): Step {
    const pools = this.spec.pools;
    const ready = async (client: KubeClient) => {
      for (const np of pools) if (poolMatches(await withRetry(() => getObject(client, IPPOOLS, np.name)), np)) return false;
      return true;
    };
    return {
      id: p.id, title: p.description, kind: 'action',
      check: (ctx) => ready(ctx.client),
      // it creates, changes nothing that exists: nothing to back up
      backup: async () => [],
      apply: async (ctx) => {
        const all = await withRetry(() => listAll(ctx.client, IPPOOLS));
        for (const np of pools) {
          const cur = all.find((x) => x.metadata?.name === np.name);
          if (cur) {
            const wrong = poolMatches(cur, np);
            if (wrong) throw new Error(`${wrong}: not this plan's pool to change; delete it or plan again with another range`);
            continue;
          }
          const clash = all.find((x) => x.metadata?.name !== np.name && cidrIn([parseCidr(np.cidr)], x.spec?.cidr));
          if (clash) throw new Error(`IPPool ${clash.metadata?.name} (${clash.spec?.cidr}) overlaps ${np.cidr}: plan again with another range`);
          await withRetry(() => createObject(ctx.client, IPPOOLS, extensionPoolObject(np, this.opts.token), { dryRun: ctx.dryRun === 'server' }));
        }
      },
      verify: (ctx) => this.until('the new IPPool(s) to exist, enabled, with the planned settings', () => ready(ctx.client)),
      rollback: (ctx) => this.undoPools(ctx),
    };
  }

  /**
   * "ns/name ip" of every pod with an address in the added range: the running pods that show one, and every allocation
   * an IPAM block of the range records (a pod whose address is not in its status yet, or one Calico still holds).
   */
  async holders(client: KubeClient): Promise<string[]> {
    const [pods, blocks] = await Promise.all([withRetry(() => listAll(client, PODS)), withRetry(() => listAll(client, IPAMBLOCKS))]);
    const inAdded = (ip: string) => { try { const a = parseIP(ip); return this.added.some((c) => contains(c, a)); } catch { return false; } };
    const out = new Map<string, string>();
    for (const pod of pods.filter(active)) {
      for (const ip of ipsOf(pod)) if (inAdded(ip)) out.set(ip, `${pod.metadata?.namespace}/${pod.metadata?.name} ${ip}`);
    }
    for (const b of blocks.filter((x) => cidrIn(this.added, x.spec?.cidr))) {
      for (const a of blockAllocations(b)) if (!out.has(a.ip)) out.set(a.ip, `${a.pod ?? `block ${b.spec?.cidr} allocation`} ${a.ip}`);
    }
    return [...out.values()].sort();
  }

  /**
   * Rollback of extend-ippool: refused, naming the pods, while any holds an address in the added range; else each pool
   * this run made is disabled, checked again (an allocation that began before), deleted, and the empty blocks,
   * affinities and handles Calico left in its range deleted. A pool of the name this run did not make stops it.
   */
  async undoPools(ctx: StepContext): Promise<void> {
    const mine: KubeObject[] = [];
    for (const np of this.spec.pools) {
      const cur = await withRetry(() => getObject(ctx.client, IPPOOLS, np.name));
      if (!cur) continue;
      const l = cur.metadata?.labels ?? {};
      if (l[MANAGED_LABEL] !== 'true' || l[RUN_LABEL] !== this.opts.token) {
        throw new Error(`IPPool ${np.name} is not this run's (labels ${MANAGED_LABEL}=true, ${RUN_LABEL}=${this.opts.token}): left as it is`);
      }
      mine.push(cur);
    }
    const refuse = (holders: string[]) => new Error(`IPPool ${this.spec.pools.map((x) => x.name).join(', ')} (${this.spec.add.join(',')}) holds the addresses of ${holders.length} pod(s): `
      + `${shortList(holders)}; deleting it now would leave them on addresses no pool serves: delete or restart those pods (they get addresses from the old pool while it has room), then run rollback again`);
    let holders = await this.holders(ctx.client);
    if (holders.length > 0) throw refuse(holders);
    for (const cur of mine) {
      if (cur.spec?.disabled !== true) await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, cur, { spec: { disabled: true } }));
    }
    // an address handed out between the first look and the pool's disabling: enable it again and refuse
    holders = await this.holders(ctx.client);
    if (holders.length > 0) {
      for (const cur of mine) {
        const now = await withRetry(() => getObject(ctx.client, IPPOOLS, cur.metadata!.name!));
        if (now?.spec?.disabled === true) await withRetry(() => patchWithPrecondition(ctx.client, IPPOOLS, now, { spec: { disabled: false } }));
      }
      throw refuse(holders);
    }
    for (const cur of mine) await withRetry(() => deleteObject(ctx.client, IPPOOLS, cur.metadata!.name!, undefined, { uid: cur.metadata?.uid }));
    const [blocks, affinities, handles] = await Promise.all([IPAMBLOCKS, BLOCKAFFINITIES, IPAMHANDLES].map((t) => withRetry(() => listAll(ctx.client, t))));
    const empty = blocks!.filter((b) => cidrIn(this.added, b.spec?.cidr) && blockAllocations(b).length === 0);
    const affs = affinities!.filter((a) => cidrIn(this.added, a.spec?.cidr));
    const hs = handles!.filter((h) => { const ks = Object.keys(h.spec?.block ?? {}); return ks.length > 0 && ks.every((k) => cidrIn(this.added, k)); });
    for (const b of empty) await withRetry(() => deleteObject(ctx.client, IPAMBLOCKS, b.metadata!.name!));
    for (const a of affs) await withRetry(() => deleteObject(ctx.client, BLOCKAFFINITIES, a.metadata!.name!));
    for (const h of hs) await withRetry(() => deleteObject(ctx.client, IPAMHANDLES, h.metadata!.name!));
    ctx.log(`deleted IPPool ${mine.map((x) => x.metadata?.name).join(', ')}, ${empty.length} empty IPAMBlock(s), ${affs.length} BlockAffinity(ies), ${hs.length} IPAMHandle(s) in ${this.spec.add.join(',')}`);
  }

  /** The end state: each new pool there, enabled, as planned; kube-proxy and ip-masq-agent hold the added range. */
  async verifyEndState(client: KubeClient): Promise<string | undefined> {
    const problems: string[] = [];
    for (const np of this.spec.pools) {
      const wrong = poolMatches(await withRetry(() => getObject(client, IPPOOLS, np.name)), np);
      if (wrong) problems.push(wrong);
    }
    const kp = await this.kubeProxyProblem(client);
    if (kp && !(this.opts.acknowledgedGates ?? []).includes('extend-kube-proxy')) problems.push(kp);
    if (this.spec.masquerade && !this.masqueradeHolds((await this.masqueradeNow(client)).list)) problems.push(`ip-masq-agent nonMasqueradeCIDRs do not hold ${this.spec.add.join(',')}`);
    return problems.length > 0 ? problems.join('; ') : undefined;
  }
}

function shortList(xs: readonly string[]): string {
  return `${xs.slice(0, 10).join(', ')}${xs.length > 10 ? ` and ${xs.length - 10} more` : ''}`;
}
