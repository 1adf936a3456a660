// A small stand-in for Calico IPAM (calico-ipam CNI plugin + calico-kube-controllers' IPAM GC), for the
// testbed's `podIPAM: 'calico'` mode with calicoIPAM 'stand-in' (the default runs Calico's own calico-ipam
// through calico-cni.ts; this stays for comparison and for machines without that build). It keeps Calico's crd.projectcalico.org/v1 objects (KDD mode) the way
// Calico does, so a tool that reads or cleans IPPools, BlockAffinities, IPAMBlocks and IPAMHandles sees
// what it would see in a real cluster; kwok then copies the IP into the pod's status (see stages.ts).
//
//   node test/testbed/calico-ipam.ts --kubeconfig K [--default-pool CIDR]
//
// It follows Calico's rules (docs/testbed.md, "The stand-in"):
//   - A pod needs an IP when bound (spec.nodeName), not hostNetwork, not being deleted, and without the
//     annotation cni.projectcalico.org/podIP.
//   - Eligible IPPools (IPv4): disabled not true; nodeSelector matches the node's labels (all(), empty,
//     !all(), k == 'v', k != 'v', has(k), !has(k), joined by &&; anything else matches nothing and is
//     logged); allowedUses absent or containing Workload; assignmentMode not Manual. Ordered by name.
//   - First the node's affine blocks (BlockAffinity spec.node == node, state confirmed, not deleted) inside
//     an eligible pool: the first ordinal of the IPAMBlock's `unallocated` list is taken (freed ordinals
//     are appended at the end, so an IP is not reused at once, as in Calico). Else the first block of
//     `blockSize` (default 26) in an eligible pool that has no IPAMBlock (and no BlockAffinity) is
//     claimed: BlockAffinity <node>-<cidr with . and / as -> (state pending), IPAMBlock <cidr with . and /
//     as -> (affinity host:<node>), then the affinity is confirmed. No borrowing from other nodes' blocks.
//     Nothing free: logged, the pod waits (retried every second).
//   - An allocation writes the IPAMBlock with its resourceVersion (409: read again, retry), with
//     attributes {handle_id: k8s-pod-network.<pod uid>, secondary: {namespace, node, pod, timestamp}},
//     then the IPAMHandle k8s-pod-network.<pod uid> (spec {handleID, block: {<cidr>: 1}}), then annotates
//     the pod: cni.projectcalico.org/podIP and podIPs = <ip>/32, testbed.kube-renumber.io/pod-ip = <ip>.
//   - A deleted pod's ordinals are freed in every block (by handle) and its IPAMHandle is deleted. Empty
//     blocks and their affinities stay, as in Calico. At start, allocations and handles of pods that no
//     longer exist are released (calico-kube-controllers' IPAM garbage collection).
//   - All changes go through one queue (serialized); a batch takes every pod waiting at that moment and
//     writes each touched block once.

import { readFileSync } from 'node:fs';
import { load as loadYaml } from 'js-yaml';
import { formatIP, parseCIDR } from './ip.ts';
import { ApiError, KubeClient, type KubeObject } from './kube.ts';
import { listWatch, type ListWatch } from './pdb-watch.ts';
import { POD_IP_ANNOTATION } from './stages.ts';

export const CALICO_PODIP_ANNOTATION = 'cni.projectcalico.org/podIP';
export const CALICO_PODIPS_ANNOTATION = 'cni.projectcalico.org/podIPs';
export const HANDLE_PREFIX = 'k8s-pod-network.';

const CALICO = '/apis/crd.projectcalico.org/v1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- selectors, names, pools

/**
 * Evaluates the subset of Calico's selector language the testbed supports against node labels.
 * Returns undefined for anything outside that subset (the caller treats it as "no match").
 */
export function matchNodeSelector(selector: string | undefined, labels: Record<string, string>): boolean | undefined {
  const sel = (selector ?? '').trim();
  if (sel === '') return true;
  const terms = sel.split('&&').map((t) => t.trim());
  let result = true;
  for (const t of terms) {
    let m: RegExpMatchArray | null;
    let v: boolean;
    if (t === 'all()') v = true;
    else if (t === '!all()') v = false;
    else if ((m = t.match(/^(!?)\s*has\(\s*([A-Za-z0-9_./-]+)\s*\)$/))) v = (m[2]! in labels) !== (m[1] === '!');
    else if ((m = t.match(/^([A-Za-z0-9_./-]+)\s*(==|!=)\s*(['"])([^'"]*)\3$/))) {
      const eq = labels[m[1]!] === m[4];
      v = m[2] === '==' ? eq : !eq;
    } else return undefined;
    result = result && v;
  }
  return result;
}

/** Calico's names.CIDRToName: "10.1.2.0/26" -> "10-1-2-0-26". */
export function cidrToName(cidr: string): string {
  return cidr.replace(/[.:/]/g, '-');
}

export function blockAffinityName(node: string, cidr: string): string {
  return `${node}-${cidrToName(cidr)}`;
}

export function handleIDForPod(uid: string): string {
  return `${HANDLE_PREFIX}${uid}`;
}

/** The objects this stand-in writes (their schemas: test/testbed/crds/calico.ts). */
export function defaultPoolObject(cidr: string): KubeObject {
  return {
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPPool',
    metadata: { name: 'default-ipv4-ippool' },
    spec: { cidr, blockSize: 26, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' },
  };
}

/** A node's claim on a block, as first written (state pending; confirmed once the IPAMBlock exists). */
export function blockAffinityObject(node: string, cidr: string): KubeObject {
  return {
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'BlockAffinity',
    metadata: { name: blockAffinityName(node, cidr) },
    spec: { node, cidr, state: 'pending', deleted: 'false', type: 'host' },
  };
}

export function ipamBlockObject(cidr: string, node: string): KubeObject {
  return { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: { name: cidrToName(cidr) }, spec: newBlockSpec(cidr, node) };
}

export function ipamHandleObject(handle: string, cidr: string): KubeObject {
  return { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMHandle', metadata: { name: handle }, spec: { handleID: handle, block: { [cidr]: 1 }, deleted: false } };
}

interface PoolInfo {
  name: string;
  cidr: string;
  base: bigint;
  prefix: number;
  blockSize: number;
}

export interface PoolEligibility {
  eligible: boolean;
  /** Set when the node selector is outside the supported subset. */
  unsupportedSelector?: string;
}

export function poolEligibleFor(pool: KubeObject, nodeLabels: Record<string, string>): PoolEligibility {
  const s = pool.spec ?? {};
  if (typeof s.cidr !== 'string' || s.cidr.includes(':')) return { eligible: false };
  if (s.disabled === true) return { eligible: false };
  if (Array.isArray(s.allowedUses) && s.allowedUses.length > 0 && !s.allowedUses.includes('Workload')) return { eligible: false };
  if (s.assignmentMode === 'Manual') return { eligible: false };
  const m = matchNodeSelector(s.nodeSelector, nodeLabels);
  if (m === undefined) return { eligible: false, unsupportedSelector: String(s.nodeSelector) };
  return { eligible: m };
}

function poolInfo(pool: KubeObject): PoolInfo | undefined {
  try {
    const c = parseCIDR(pool.spec.cidr);
    if (c.family !== 4) return undefined;
    return { name: pool.metadata.name, cidr: pool.spec.cidr, base: c.base, prefix: c.prefix, blockSize: Number(pool.spec.blockSize ?? 26) };
  } catch {
    return undefined;
  }
}

function cidrInside(inner: string, pool: PoolInfo): boolean {
  const c = parseCIDR(inner);
  if (c.family !== 4 || c.prefix < pool.prefix) return false;
  const shift = BigInt(32 - pool.prefix);
  return c.base >> shift === pool.base >> shift;
}

// ---------------------------------------------------------------- block manipulation (pure)

export interface IPAMBlockSpec {
  cidr: string;
  affinity?: string;
  allocations: (number | null)[];
  unallocated: number[];
  attributes: { handle_id?: string; secondary?: Record<string, string> }[];
  deleted?: boolean;
  strictAffinity: boolean;
  sequenceNumber?: number;
  sequenceNumberForAllocation?: Record<string, number>;
}

export function newBlockSpec(cidr: string, node: string): IPAMBlockSpec {
  const c = parseCIDR(cidr);
  const n = 1 << (32 - c.prefix);
  return {
    cidr,
    affinity: `host:${node}`,
    allocations: Array<null>(n).fill(null),
    unallocated: Array.from({ length: n }, (_, i) => i),
    attributes: [],
    deleted: false,
    strictAffinity: false,
    sequenceNumber: 0,
    sequenceNumberForAllocation: {},
  };
}

/** Takes the first unallocated ordinal; returns the IP or undefined when the block is full. */
export function allocateFromBlock(b: IPAMBlockSpec, handleID: string, secondary: Record<string, string>): string | undefined {
  const ord = b.unallocated.shift();
  if (ord === undefined) return undefined;
  b.attributes.push({ handle_id: handleID, secondary });
  b.allocations[ord] = b.attributes.length - 1;
  const seq = b.sequenceNumber ?? 0;
  b.sequenceNumberForAllocation = { ...(b.sequenceNumberForAllocation ?? {}), [String(ord)]: seq };
  b.sequenceNumber = seq + 1;
  const c = parseCIDR(b.cidr);
  return formatIP(4, c.base + BigInt(ord));
}

/** Frees every ordinal of `handleID` (appended to `unallocated`), drops unused attributes. Returns the count. */
export function releaseFromBlock(b: IPAMBlockSpec, handleID: string): number {
  const attrIdx = new Set<number>();
  b.attributes.forEach((a, i) => {
    if (a.handle_id === handleID) attrIdx.add(i);
  });
  if (attrIdx.size === 0) return 0;
  let freed = 0;
  const seqs = { ...(b.sequenceNumberForAllocation ?? {}) };
  for (let o = 0; o < b.allocations.length; o++) {
    const a = b.allocations[o];
    if (a !== null && a !== undefined && attrIdx.has(a)) {
      b.allocations[o] = null;
      b.unallocated.push(o);
      delete seqs[String(o)];
      freed++;
    }
  }
  b.sequenceNumberForAllocation = seqs;
  // delete attributes no allocation refers to any more, renumbering the rest (Calico's deleteAttributes)
  const used = new Set(b.allocations.filter((a): a is number => a !== null && a !== undefined));
  const remap = new Map<number, number>();
  const kept: IPAMBlockSpec['attributes'] = [];
  b.attributes.forEach((a, i) => {
    if (used.has(i)) {
      remap.set(i, kept.length);
      kept.push(a);
    }
  });
  b.attributes = kept;
  b.allocations = b.allocations.map((a) => (a === null || a === undefined ? null : (remap.get(a) ?? null)));
  return freed;
}

// ---------------------------------------------------------------- the controller

interface PodState {
  uid: string;
  namespace: string;
  name: string;
  node: string | undefined;
  hostNetwork: boolean;
  deleting: boolean;
  annotated: boolean;
}

function podState(p: KubeObject): PodState {
  return {
    uid: p.metadata.uid!,
    namespace: p.metadata.namespace ?? 'default',
    name: p.metadata.name,
    node: p.spec?.nodeName || undefined,
    hostNetwork: p.spec?.hostNetwork === true,
    deleting: !!p.metadata.deletionTimestamp,
    annotated: !!p.metadata.annotations?.[CALICO_PODIP_ANNOTATION],
  };
}

export interface CalicoIpamOptions {
  client: KubeClient;
  log?: (msg: string) => void;
  /** Create IPPool default-ipv4-ippool with this CIDR when no IPPool exists at start (like calico-node). */
  defaultPoolCIDR?: string;
  /** Retry interval for pods that found no free address (ms, default 1000). */
  retryMs?: number;
}

export class CalicoIpam {
  readonly #client: KubeClient;
  readonly #log: (msg: string) => void;
  readonly #opts: CalicoIpamOptions;
  #pods = new Map<string, PodState>();
  /** uid -> IP for allocations recorded in blocks. */
  #assigned = new Map<string, string>();
  #allocQ = new Set<string>();
  #releaseQ = new Set<string>();
  #waiting = new Map<string, string>(); // uid -> reason last logged
  /** Pods being allocated by the running batch (not yet in #assigned). */
  #inflight = new Set<string>();
  #loaded = false;
  #running = false;
  #stopped = false;
  #watch: ListWatch | undefined;
  #timer: NodeJS.Timeout | undefined;
  #idle: Promise<void> = Promise.resolve();
  /** Counters for logs and tests. */
  stats = { allocated: 0, released: 0, conflicts: 0, batches: 0 };

  constructor(opts: CalicoIpamOptions) {
    this.#opts = opts;
    this.#client = opts.client;
    this.#log = opts.log ?? ((m) => process.stdout.write(`${new Date().toISOString()} ${m}\n`));
  }

  async start(): Promise<void> {
    if (this.#opts.defaultPoolCIDR) await this.#ensureDefaultPool(this.#opts.defaultPoolCIDR);
    this.#watch = listWatch(this.#client, '/api/v1/pods', {
      onList: (items) => this.#onList(items),
      onEvent: (type, obj) => (type === 'DELETED' ? this.#onDeleted(obj) : this.#onPod(obj)),
      onError: (e) => this.#log(`pod watch: ${e instanceof Error ? e.message : String(e)}`),
    });
    await this.#watch.ready;
    await this.#loadAndCollectGarbage();
    this.#loaded = true;
    this.#timer = setInterval(() => {
      if (this.#waiting.size === 0) return;
      for (const uid of this.#waiting.keys()) this.#allocQ.add(uid);
      this.#kick();
    }, this.#opts.retryMs ?? 1000);
    this.#log(`calico-ipam stand-in running: ${this.#pods.size} pods known, ${this.#assigned.size} allocations`);
    this.#kick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#watch?.stop();
    await this.#idle;
  }

  async #ensureDefaultPool(cidr: string): Promise<void> {
    for (;;) {
      try {
        const pools = await this.#client.list(`${CALICO}/ippools`);
        if (pools.items.length > 0) return;
        await this.#client.post(`${CALICO}/ippools`, defaultPoolObject(cidr));
        this.#log(`created IPPool default-ipv4-ippool ${cidr}`);
        return;
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) return;
        this.#log(`default pool: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(500);
      }
    }
  }

  #needsIP(uid: string): boolean {
    const p = this.#pods.get(uid);
    return !!p && !!p.node && !p.hostNetwork && !p.deleting && !p.annotated && !this.#assigned.has(uid);
  }

  #onPod(obj: KubeObject): void {
    const st = podState(obj);
    if (!st.uid) return;
    this.#pods.set(st.uid, st);
    if (this.#needsIP(st.uid)) {
      this.#allocQ.add(st.uid);
      this.#kick();
    }
  }

  #onDeleted(obj: KubeObject): void {
    const uid = obj.metadata.uid;
    if (!uid) return;
    const had = this.#pods.get(uid);
    this.#pods.delete(uid);
    this.#allocQ.delete(uid);
    this.#waiting.delete(uid);
    if (this.#assigned.has(uid) || this.#inflight.has(uid) || had?.annotated || obj.metadata.annotations?.[CALICO_PODIP_ANNOTATION]) {
      this.#releaseQ.add(uid);
      this.#kick();
    }
  }

  #onList(items: KubeObject[]): void {
    const seen = new Set<string>();
    for (const p of items) {
      if (p.metadata.uid) seen.add(p.metadata.uid);
    }
    for (const [uid, st] of [...this.#pods]) {
      if (!seen.has(uid)) this.#onDeleted({ metadata: { name: st.name, namespace: st.namespace, uid } });
    }
    for (const p of items) this.#onPod(p);
  }

  /** At start: learn existing allocations; release those (and handles) of pods that no longer exist. */
  async #loadAndCollectGarbage(): Promise<void> {
    for (;;) {
      try {
        const [blocks, handles] = await Promise.all([
          this.#client.list(`${CALICO}/ipamblocks`),
          this.#client.list(`${CALICO}/ipamhandles`),
        ]);
        for (const b of blocks.items) {
          const spec = b.spec as IPAMBlockSpec;
          const base = parseCIDR(spec.cidr).base;
          spec.allocations.forEach((a, ord) => {
            if (a === null || a === undefined) return;
            const h = spec.attributes[a]?.handle_id;
            if (!h?.startsWith(HANDLE_PREFIX)) return;
            const uid = h.slice(HANDLE_PREFIX.length);
            if (this.#pods.has(uid)) this.#assigned.set(uid, formatIP(4, base + BigInt(ord)));
            else this.#releaseQ.add(uid);
          });
        }
        for (const h of handles.items) {
          const id: string = h.spec?.handleID ?? h.metadata.name;
          if (!id.startsWith(HANDLE_PREFIX)) continue;
          const uid = id.slice(HANDLE_PREFIX.length);
          if (!this.#pods.has(uid)) this.#releaseQ.add(uid);
        }
        if (this.#releaseQ.size) this.#log(`garbage collection: releasing ${this.#releaseQ.size} handles of deleted pods`);
        return;
      } catch (e) {
        this.#log(`loading IPAM state: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(500);
      }
    }
  }

  #kick(): void {
    if (!this.#loaded || this.#running || this.#stopped) return;
    this.#running = true;
    this.#idle = (async () => {
      try {
        // let a burst of events gather into one batch
        await sleep(10);
        while (!this.#stopped && (this.#allocQ.size > 0 || this.#releaseQ.size > 0)) {
          const ok = await this.#batch();
          if (!ok) await sleep(100);
        }
      } catch (e) {
        this.#log(`batch failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      } finally {
        this.#running = false;
      }
      if (!this.#stopped && (this.#allocQ.size > 0 || this.#releaseQ.size > 0)) {
        await sleep(200);
        this.#kick();
      }
    })();
  }

  /** One serialized round. Returns false when something must be retried. */
  async #batch(): Promise<boolean> {
    this.stats.batches++;
    const releases = [...this.#releaseQ];
    this.#releaseQ.clear();
    const allocs = [...this.#allocQ].filter((uid) => {
      if (this.#needsIP(uid)) return true;
      this.#waiting.delete(uid); // annotated meanwhile, or no longer a candidate
      return false;
    });
    this.#allocQ.clear();
    if (releases.length === 0 && allocs.length === 0) return true;
    this.#inflight = new Set(allocs);
    try {
      return await this.#batchOf(releases, allocs);
    } finally {
      this.#inflight = new Set();
    }
  }

  async #batchOf(releases: string[], allocs: string[]): Promise<boolean> {
    const t0 = Date.now();
    const requeue = () => {
      releases.forEach((u) => this.#releaseQ.add(u));
      allocs.forEach((u) => this.#allocQ.add(u));
    };

    let pools: KubeObject[], affinities: KubeObject[], blockList: KubeObject[], nodes: KubeObject[];
    try {
      [pools, affinities, blockList, nodes] = await Promise.all([
        this.#client.list(`${CALICO}/ippools`).then((l) => l.items),
        this.#client.list(`${CALICO}/blockaffinities`).then((l) => l.items),
        this.#client.list(`${CALICO}/ipamblocks`).then((l) => l.items),
        allocs.length ? this.#client.list('/api/v1/nodes').then((l) => l.items) : Promise.resolve([] as KubeObject[]),
      ]);
    } catch (e) {
      this.#log(`listing IPAM state: ${e instanceof Error ? e.message : String(e)}`);
      requeue();
      return false;
    }
    const tList = Date.now();
    pools.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
    const blocks = new Map<string, KubeObject>(); // by cidr
    for (const b of blockList) blocks.set(b.spec.cidr, b);
    const dirty = new Set<string>(); // cidrs
    const byBlock = new Map<string, { releases: string[]; allocs: { uid: string; ip: string }[] }>();
    const touch = (cidr: string) => {
      let e = byBlock.get(cidr);
      if (!e) byBlock.set(cidr, (e = { releases: [], allocs: [] }));
      dirty.add(cidr);
      return e;
    };

    // --- releases
    const handlesToDelete: string[] = [];
    for (const uid of releases) {
      const handle = handleIDForPod(uid);
      let inBlock = false;
      for (const [cidr, b] of blocks) {
        if (releaseFromBlock(b.spec as IPAMBlockSpec, handle) > 0) {
          touch(cidr).releases.push(uid);
          inBlock = true;
        }
      }
      if (!inBlock) {
        // nothing allocated any more (or never): only the handle may be left
        this.#assigned.delete(uid);
        handlesToDelete.push(handle);
      }
    }

    // --- allocations, node by node
    const nodeLabels = new Map<string, Record<string, string>>();
    for (const n of nodes) nodeLabels.set(n.metadata.name, n.metadata.labels ?? {});
    const eligibleCache = new Map<string, PoolInfo[]>();
    const eligibleFor = (node: string): PoolInfo[] => {
      let e = eligibleCache.get(node);
      if (e) return e;
      e = [];
      const labels = nodeLabels.get(node);
      if (labels) {
        for (const p of pools) {
          const r = poolEligibleFor(p, labels);
          if (r.unsupportedSelector !== undefined) {
            this.#log(`IPPool ${p.metadata.name}: nodeSelector ${JSON.stringify(r.unsupportedSelector)} is not supported here; treated as no match`);
          }
          const info = r.eligible ? poolInfo(p) : undefined;
          if (info) e.push(info);
        }
      }
      eligibleCache.set(node, e);
      return e;
    };
    const affinityCidrs = new Set<string>(affinities.map((a) => a.spec?.cidr));
    const affineBlocks = (node: string, pool: PoolInfo): string[] =>
      affinities
        .filter(
          (a) =>
            a.spec?.node === node &&
            a.spec?.state === 'confirmed' &&
            a.spec?.deleted !== 'true' &&
            !a.metadata.deletionTimestamp &&
            blocks.has(a.spec.cidr) &&
            cidrInside(a.spec.cidr, pool),
        )
        .map((a) => a.spec.cidr as string)
        .sort((x, y) => (parseCIDR(x).base < parseCIDR(y).base ? -1 : 1));

    let retry = false;
    const wait = (uid: string, reason: string) => {
      const pod = this.#pods.get(uid)!;
      if (this.#waiting.get(uid) !== reason) this.#log(`pod ${pod.namespace}/${pod.name} on ${pod.node}: ${reason}; waiting`);
      this.#waiting.set(uid, reason);
    };
    // Rounds: allocate from the nodes' affine blocks; nodes that ran out claim one new block each (claims
    // of different nodes in parallel, as separate nodes' CNI plugins would), then go again.
    let pending = allocs;
    while (pending.length > 0) {
      const needBlock = new Map<string, string[]>();
      for (const uid of pending) {
        const pod = this.#pods.get(uid)!;
        const node = pod.node!;
        const handle = handleIDForPod(uid);
        const secondary = {
          namespace: pod.namespace,
          node,
          pod: pod.name,
          timestamp: new Date().toISOString().replace('T', ' ').replace('Z', ' +0000 UTC'),
        };
        let done = false;
        for (const pool of eligibleFor(node)) {
          for (const cidr of affineBlocks(node, pool)) {
            const ip = allocateFromBlock(blocks.get(cidr)!.spec as IPAMBlockSpec, handle, secondary);
            if (ip) {
              touch(cidr).allocs.push({ uid, ip });
              this.#waiting.delete(uid);
              done = true;
              break;
            }
          }
          if (done) break;
        }
        if (done) continue;
        if (eligibleFor(node).length === 0) {
          wait(uid, 'no eligible IPPool for its node');
          continue;
        }
        const list = needBlock.get(node) ?? [];
        list.push(uid);
        needBlock.set(node, list);
      }
      const claims: { node: string; cidr: string }[] = [];
      for (const [node, uids] of needBlock) {
        let cidr: string | undefined;
        for (const pool of eligibleFor(node)) {
          cidr = this.#freeBlock(pool, blocks, affinityCidrs);
          if (cidr) break;
        }
        if (!cidr) {
          uids.forEach((u) => wait(u, 'no free address in the eligible IPPools'));
          needBlock.delete(node);
          continue;
        }
        affinityCidrs.add(cidr);
        claims.push({ node, cidr });
      }
      const results = await Promise.all(claims.map((c) => this.#claimBlock(c.node, c.cidr)));
      pending = [];
      results.forEach((r, i) => {
        const { node, cidr } = claims[i]!;
        const uids = needBlock.get(node)!;
        if (r) {
          blocks.set(cidr, r.block);
          affinities.push(r.affinity);
          pending.push(...uids);
        } else {
          uids.forEach((u) => this.#allocQ.add(u));
          retry = true;
        }
      });
    }

    // --- write every touched block once
    const tAlloc = Date.now();
    const written = new Set<string>();
    await Promise.all(
      [...dirty].map(async (cidr) => {
        const b = blocks.get(cidr)!;
        try {
          const res = await this.#client.put(`${CALICO}/ipamblocks/${b.metadata.name}`, b);
          blocks.set(cidr, res);
          written.add(cidr);
        } catch (e) {
          const e2 = byBlock.get(cidr)!;
          if (e instanceof ApiError && e.status === 409) this.stats.conflicts++;
          else this.#log(`writing IPAMBlock ${b.metadata.name}: ${e instanceof Error ? e.message : String(e)}`);
          e2.releases.forEach((u) => this.#releaseQ.add(u));
          e2.allocs.forEach((a) => this.#allocQ.add(a.uid));
          retry = true;
        }
      }),
    );

    // --- handles and pod annotations for what was written
    const tasks: (() => Promise<void>)[] = [];
    const releasedOK = new Set<string>();
    for (const [cidr, e] of byBlock) {
      if (!written.has(cidr)) continue;
      for (const uid of e.releases) releasedOK.add(uid);
      for (const { uid, ip } of e.allocs) {
        this.#assigned.set(uid, ip);
        this.stats.allocated++;
        tasks.push(() => this.#recordAllocation(uid, ip, cidr));
      }
    }
    for (const uid of releasedOK) {
      // a handle may span blocks: only delete it when no block still holds it for this pod
      if (this.#releaseQ.has(uid)) continue;
      this.#assigned.delete(uid);
      this.stats.released++;
      handlesToDelete.push(handleIDForPod(uid));
      this.#log(`released ${handleIDForPod(uid)}`);
    }
    for (const h of handlesToDelete) {
      tasks.push(async () => {
        try {
          await this.#client.delete(`${CALICO}/ipamhandles/${h}`);
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 404)) this.#log(`deleting IPAMHandle ${h}: ${e instanceof Error ? e.message : String(e)}`);
        }
      });
    }
    const tWrite = Date.now();
    await runLimited(tasks, 32);
    this.#log(
      `batch: ${allocs.length} to allocate, ${releases.length} to release, ${written.size}/${dirty.size} blocks written; ` +
        `list ${tList - t0} ms, allocate ${tAlloc - tList} ms, write ${tWrite - tAlloc} ms, handles+pods ${Date.now() - tWrite} ms`,
    );
    return !retry;
  }

  #freeBlock(pool: PoolInfo, blocks: Map<string, KubeObject>, affinityCidrs: Set<string>): string | undefined {
    if (pool.blockSize < pool.prefix || pool.blockSize > 32) return undefined;
    const count = 1n << BigInt(pool.blockSize - pool.prefix);
    const step = 1n << BigInt(32 - pool.blockSize);
    for (let i = 0n; i < count; i++) {
      const cidr = `${formatIP(4, pool.base + i * step)}/${pool.blockSize}`;
      if (!blocks.has(cidr) && !affinityCidrs.has(cidr)) return cidr;
    }
    return undefined;
  }

  /** Calico's claim: affinity (pending) -> block -> affinity confirmed. */
  async #claimBlock(node: string, cidr: string): Promise<{ block: KubeObject; affinity: KubeObject } | undefined> {
    const affName = blockAffinityName(node, cidr);
    try {
      let aff = await this.#client.post(`${CALICO}/blockaffinities`, blockAffinityObject(node, cidr));
      const block = await this.#client.post(`${CALICO}/ipamblocks`, ipamBlockObject(cidr, node));
      aff = await this.#client.put(`${CALICO}/blockaffinities/${affName}`, { ...aff, spec: { ...aff.spec, state: 'confirmed' } });
      this.#log(`claimed block ${cidr} for node ${node}`);
      return { block, affinity: aff };
    } catch (e) {
      this.#log(`claiming block ${cidr} for ${node}: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
  }

  async #recordAllocation(uid: string, ip: string, cidr: string): Promise<void> {
    await Promise.all([this.#writeHandle(uid, cidr), this.#annotatePod(uid, ip, cidr)]);
  }

  async #writeHandle(uid: string, cidr: string): Promise<void> {
    const handle = handleIDForPod(uid);
    try {
      await this.#client.post(`${CALICO}/ipamhandles`, ipamHandleObject(handle, cidr));
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) {
        for (let i = 0; i < 5; i++) {
          try {
            const h = await this.#client.get(`${CALICO}/ipamhandles/${handle}`);
            h.spec.block = { ...(h.spec.block ?? {}), [cidr]: (h.spec.block?.[cidr] ?? 0) + 1 };
            await this.#client.put(`${CALICO}/ipamhandles/${handle}`, h);
            break;
          } catch (e2) {
            if (!(e2 instanceof ApiError && e2.status === 409)) {
              this.#log(`IPAMHandle ${handle}: ${e2 instanceof Error ? e2.message : String(e2)}`);
              break;
            }
          }
        }
      } else {
        this.#log(`IPAMHandle ${handle}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  async #annotatePod(uid: string, ip: string, cidr: string): Promise<void> {
    const pod = this.#pods.get(uid);
    if (!pod) {
      this.#releaseQ.add(uid);
      return;
    }
    try {
      // the uid is a precondition (409 otherwise): a pod of the same name created since must not get this address
      await this.#client.mergePatch(`/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`, {
        metadata: {
          uid,
          annotations: {
            [CALICO_PODIP_ANNOTATION]: `${ip}/32`,
            [CALICO_PODIPS_ANNOTATION]: `${ip}/32`,
            [POD_IP_ANNOTATION]: ip,
          },
        },
      });
      this.#log(`assigned ${ip} (block ${cidr}) to ${pod.namespace}/${pod.name} on ${pod.node}`);
    } catch (e) {
      this.#log(`annotating ${pod.namespace}/${pod.name}: ${e instanceof Error ? e.message : String(e)}`);
      if (e instanceof ApiError && (e.status === 404 || e.status === 409)) {
        // gone, or replaced by a pod of the same name, before we could annotate it: give the address back
        this.#releaseQ.add(uid);
        this.#kick();
      }
    }
  }
}

async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const t = tasks[next++]!;
      await t();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

/** Server and bearer token of a kubeconfig's current context. */
export function readKubeconfig(path: string): { server: string; token: string } {
  const kc = loadYaml(readFileSync(path, 'utf8')) as any;
  const ctxName = kc['current-context'];
  const ctx = (kc.contexts ?? []).find((c: any) => c.name === ctxName)?.context ?? kc.contexts?.[0]?.context;
  const cluster = (kc.clusters ?? []).find((c: any) => c.name === ctx?.cluster)?.cluster ?? kc.clusters?.[0]?.cluster;
  const user = (kc.users ?? []).find((u: any) => u.name === ctx?.user)?.user ?? kc.users?.[0]?.user;
  if (!cluster?.server || !user?.token) throw new Error(`${path}: need a server and a bearer token`);
  return { server: cluster.server, token: user.token };
}

async function main(argv: string[]): Promise<void> {
  let kubeconfig = process.env.KUBECONFIG;
  let defaultPool: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => {
      const eq = a.indexOf('=');
      if (eq >= 0) return a.slice(eq + 1);
      return argv[++i];
    };
    if (a === '--kubeconfig' || a.startsWith('--kubeconfig=')) kubeconfig = val();
    else if (a === '--default-pool' || a.startsWith('--default-pool=')) defaultPool = val();
    else throw new Error(`unknown argument ${a} (usage: calico-ipam.ts --kubeconfig K [--default-pool CIDR])`);
  }
  if (!kubeconfig) throw new Error('--kubeconfig is required');
  const { server, token } = readKubeconfig(kubeconfig);
  const client = new KubeClient(server, token);
  const ipam = new CalicoIpam({ client, defaultPoolCIDR: defaultPool });
  const shutdown = async () => {
    await ipam.stop();
    client.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  await ipam.start();
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`calico-ipam: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
