// The Cilium agents' part in multi-pool IPAM, played in-process against the real cilium-operator, for a testbed
// started with { podIPAM: 'cilium' } (kwok's pod-ready Stage then waits for status.podIP, as in 'node' mode).
// What each agent does, per node (Cilium v1.15.19, module github.com/cilium/cilium):
//   - creates its CiliumNode, owned by its Node (pkg/nodediscovery/nodediscovery.go);
//   - asks for addresses in spec.ipam.pools.requested: the default pool (cilium-config ipam-default-ip-pool, else
//     "default": pkg/option/config.go:883, pkg/defaults/defaults.go:397-398) and every pool its pods use; keeps in
//     spec.ipam.pools.allocated only the pools it still requests, dropping the others (pkg/ipam/
//     multipool_manager.go, "allocated" written back without released CIDRs);
//   - gives a pod an address from the CIDRs the operator allocated to the node for the pod's pool: the pod's
//     ipam.cilium.io/ip-pool annotation, else its namespace's, else the default pool (pkg/ipam/metadata/
//     manager.go:117-160); without such a CIDR yet the pod waits. The address goes into the pod's status (as the
//     kubelet reports the CNI result).
// The agents read cilium-config at start only; here every pass reads it, as agents restarted at once would (the
// migration restarts them after each cilium-config change; the testbed has no agent DaemonSet to restart).

import { cidrContains, formatIP, parseCIDR } from './ip.ts';
import { ApiError, type KubeClient, type KubeObject } from './kube.ts';

const CN = '/apis/cilium.io/v2/ciliumnodes';
const POOL_KEYS = ['ipam.cilium.io/ip-pool', 'ipam.cilium.io/ipv4-pool'];

type Entry = { pool: string; cidrs?: string[] };

function poolAnnotation(o: KubeObject | undefined): string | undefined {
  for (const k of POOL_KEYS) { const v = o?.metadata?.annotations?.[k]; if (v) return v; }
  return undefined;
}

const inCidr = cidrContains;

export class CiliumAgents {
  readonly #client: KubeClient;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #stopped = false;
  readonly errors: string[] = [];
  /** Pods given an address, by uid: the address (a pod keeps it until deleted). */
  readonly #given = new Map<string, string>();

  constructor(client: KubeClient) {
    this.#client = client;
  }

  start(pollMs = 200): void {
    this.#timer = setInterval(() => { void this.#tick(); }, pollMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    while (this.#busy) await new Promise((r) => setTimeout(r, 20));
  }

  async #tick(): Promise<void> {
    if (this.#busy || this.#stopped) return;
    this.#busy = true;
    try {
      await this.pass();
    } catch (e) {
      const m = e instanceof Error ? e.message : String(e);
      if (!(e instanceof ApiError && (e.status === 409 || e.status === 404))) this.errors.push(m);
    } finally {
      this.#busy = false;
    }
  }

  /** One pass over every node: its CiliumNode's pools, then addresses for its waiting pods. */
  async pass(): Promise<void> {
    const c = this.#client;
    const cfg = (await c.getOrUndefined('/api/v1/namespaces/kube-system/configmaps/cilium-config'))?.data ?? {};
    const defaultPool: string = cfg['ipam-default-ip-pool'] || 'default';
    const [nodes, cns, pods, nss] = await Promise.all([
      c.list('/api/v1/nodes'), c.list(CN), c.list('/api/v1/pods'), c.list('/api/v1/namespaces'),
    ]);
    const nsByName = new Map(nss.items.map((n) => [n.metadata.name as string, n]));
    const cnByName = new Map(cns.items.map((n) => [n.metadata.name as string, n]));
    const live = pods.items.filter((p) => p.spec?.nodeName && !p.spec?.hostNetwork && !p.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase));
    for (const [uid] of this.#given) if (!live.some((p) => p.metadata.uid === uid)) this.#given.delete(uid);
    for (const node of nodes.items) {
      const name = node.metadata.name as string;
      let cn = cnByName.get(name);
      if (!cn) {
        cn = await c.post(CN, {
          apiVersion: 'cilium.io/v2', kind: 'CiliumNode',
          metadata: { name, labels: node.metadata.labels ?? {}, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata.uid }] },
          spec: { addresses: [{ type: 'InternalIP', ip: '127.0.0.1' }], ipam: { pools: { requested: [{ pool: defaultPool, needed: { 'ipv4-addrs': 16 } }] } } },
        });
      }
      const allocated: Entry[] = cn!.spec?.ipam?.pools?.allocated ?? [];
      const mine = live.filter((p) => p.spec.nodeName === name);
      const poolOf = (p: KubeObject) => poolAnnotation(p) ?? poolAnnotation(nsByName.get(p.metadata.namespace ?? "")) ?? defaultPool;
      // pools in use: by the pods holding an address (the pool whose allocated CIDR holds it), and by those waiting
      const used = new Set<string>([defaultPool]);
      for (const p of mine) {
        const ip = p.status?.podIP ?? this.#given.get(p.metadata.uid!);
        if (!ip) { used.add(poolOf(p)); continue; }
        const holder = allocated.find((e) => (e.cidrs ?? []).some((x) => inCidr(x, ip)));
        if (holder) used.add(holder.pool);
      }
      const requested = [...used].sort().map((pool) => ({ pool, needed: { 'ipv4-addrs': 16 } }));
      const keep = allocated.filter((e) => used.has(e.pool));
      const cur = cn!.spec?.ipam?.pools ?? {};
      if (JSON.stringify(cur.requested ?? []) !== JSON.stringify(requested) || JSON.stringify(cur.allocated ?? []) !== JSON.stringify(keep)) {
        cn!.spec.ipam = { ...(cn!.spec.ipam ?? {}), pools: { ...cur, requested, allocated: keep } };
        await c.put(`${CN}/${name}`, cn); // 409 with the operator's write: the next pass
      }
      // addresses for waiting pods, from the node's CIDRs of their pool
      const taken = new Set(mine.map((p) => p.status?.podIP ?? this.#given.get(p.metadata.uid!)).filter(Boolean));
      for (const p of mine.filter((x) => !x.status?.podIP && !this.#given.has(x.metadata.uid!))) {
        const cidrs = allocated.filter((e) => e.pool === poolOf(p)).flatMap((e) => e.cidrs ?? []);
        let ip: string | undefined;
        for (const cidr of cidrs) {
          const { base, prefix } = parseCIDR(cidr);
          const size = 1n << BigInt(32 - prefix);
          for (let i = 1n; i < size - 1n && !ip; i++) { const a = formatIP(4, base + i); if (!taken.has(a)) ip = a; }
          if (ip) break;
        }
        if (!ip) continue;
        taken.add(ip);
        this.#given.set(p.metadata.uid!, ip);
        try {
          await c.mergePatch(`/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}/status`, { metadata: { uid: p.metadata.uid }, status: { podIP: ip, podIPs: [{ ip }] } });
        } catch (e) {
          this.#given.delete(p.metadata.uid!);
          if (!(e instanceof ApiError && (e.status === 404 || e.status === 409))) throw e;
        }
      }
    }
  }
}
