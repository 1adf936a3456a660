// A small stand-in for host-local IPAM over node podCIDRs (what flannel, kubenet and Cilium's kubernetes IPAM
// do on each node), for the testbed's `podIPAM: 'node'` mode: every family of the node's spec.podCIDRs gives
// the pod one address, so a dual-stack cluster gets dual-stack pods. kwok v0.7.0 cannot do that itself: its
// PodIPWith takes one address from spec.podCIDR only. The addresses go into the pod's status.podIP/podIPs (the
// status subresource, as a kubelet reports its CNI's result); kwok's pod-ready Stage for this mode then makes the
// pod Running without touching them (stages.ts). Not an annotation: a bare pod created again from its backup
// carries its annotations, and must still get new addresses.
//
//   node test/testbed/node-ipam.ts --kubeconfig K
//
// Rules (those of the host-local plugin with usePodCidr, per node):
//   - A pod needs addresses when bound (spec.nodeName), not hostNetwork, not being deleted, and without
//     status.podIP.
//   - Its node must have spec.podCIDRs (else spec.podCIDR); without one the pod waits, as its sandbox would fail
//     to start, and is retried when the node changes.
//   - In each podCIDR, in the node's order, the first address from network+2 (network+1 is the bridge's) that no
//     other live pod holds; nothing free: the pod waits. Addresses come back when their pod is deleted.
//   - One queue: a batch takes every pod waiting at that moment; annotations are written 16 at a time.

import { parseCIDR, formatIP } from './ip.ts';
import { ApiError, KubeClient, type KubeObject } from './kube.ts';
import { listWatch, type ListWatch } from './pdb-watch.ts';
import { readKubeconfig } from './calico-ipam.ts';

interface PodState {
  uid: string;
  namespace: string;
  name: string;
  node: string | undefined;
  hostNetwork: boolean;
  deleting: boolean;
  ips: string[];
}

function podState(p: KubeObject): PodState {
  const ips: string[] = (p.status?.podIPs ?? []).map((x: { ip?: string }) => x?.ip).filter(Boolean);
  if (ips.length === 0 && p.status?.podIP) ips.push(p.status.podIP);
  return {
    uid: p.metadata.uid!,
    namespace: p.metadata.namespace ?? 'default',
    name: p.metadata.name,
    node: p.spec?.nodeName || undefined,
    hostNetwork: p.spec?.hostNetwork === true,
    deleting: !!p.metadata.deletionTimestamp,
    ips,
  };
}

function nodeCIDRs(n: KubeObject): string[] {
  const list: string[] = n.spec?.podCIDRs ?? [];
  return list.length > 0 ? list : n.spec?.podCIDR ? [n.spec.podCIDR] : [];
}

export class NodeIpam {
  readonly #client: KubeClient;
  readonly #log: (msg: string) => void;
  #pods = new Map<string, PodState>();
  #nodes = new Map<string, string[]>();
  /** Addresses held by live pods (and by allocations being written). */
  #used = new Set<string>();
  #pending = new Set<string>();
  #running = false;
  #again = false;
  #watches: ListWatch[] = [];
  #idle: Promise<void> = Promise.resolve();
  stats = { allocated: 0, waiting: 0 };

  constructor(opts: { client: KubeClient; log?: (msg: string) => void }) {
    this.#client = opts.client;
    this.#log = opts.log ?? ((m) => process.stdout.write(`${new Date().toISOString()} ${m}\n`));
  }

  async start(): Promise<void> {
    const nodes = listWatch(this.#client, '/api/v1/nodes', {
      onList: (items) => {
        this.#nodes = new Map(items.map((n) => [n.metadata.name, nodeCIDRs(n)]));
        this.#requeueAll();
      },
      onEvent: (type, n) => {
        if (type === 'DELETED') this.#nodes.delete(n.metadata.name);
        else this.#nodes.set(n.metadata.name, nodeCIDRs(n));
        this.#requeueAll();
      },
      onError: (e) => this.#log(`node watch: ${e instanceof Error ? e.message : String(e)}`),
    });
    const pods = listWatch(this.#client, '/api/v1/pods', {
      onList: (items) => {
        const seen = new Set(items.map((p) => p.metadata.uid));
        for (const [uid, st] of [...this.#pods]) if (!seen.has(uid)) this.#forget(st);
        for (const p of items) this.#onPod(p);
      },
      onEvent: (type, p) => (type === 'DELETED' ? this.#forget(podState(p)) : this.#onPod(p)),
      onError: (e) => this.#log(`pod watch: ${e instanceof Error ? e.message : String(e)}`),
    });
    this.#watches = [nodes, pods];
    await Promise.all(this.#watches.map((w) => w.ready));
    this.#log(`node-ipam stand-in running: ${this.#pods.size} pods, ${this.#nodes.size} nodes, ${this.#used.size} addresses in use`);
    this.#kick();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#watches.map((w) => w.stop()));
    await this.#idle;
  }

  #onPod(p: KubeObject): void {
    const st = podState(p);
    if (!st.uid) return;
    const had = this.#pods.get(st.uid);
    // a pod keeps what it was given (our status write may not have come back through the watch yet)
    if (had && had.ips.length > 0 && st.ips.length === 0) st.ips = had.ips;
    this.#pods.set(st.uid, st);
    for (const ip of st.ips) this.#used.add(ip);
    if (st.deleting) return;
    if (this.#needs(st)) {
      this.#pending.add(st.uid);
      this.#kick();
    }
  }

  #forget(st: PodState): void {
    const had = this.#pods.get(st.uid);
    this.#pods.delete(st.uid);
    this.#pending.delete(st.uid);
    for (const ip of [...(had?.ips ?? []), ...st.ips]) this.#used.delete(ip);
  }

  #needs(st: PodState): boolean {
    return !!st.node && !st.hostNetwork && !st.deleting && st.ips.length === 0;
  }

  #requeueAll(): void {
    for (const st of this.#pods.values()) if (this.#needs(st)) this.#pending.add(st.uid);
    this.#kick();
  }

  #kick(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    this.#idle = (async () => {
      try {
        do {
          this.#again = false;
          await this.#batch();
        } while (this.#again);
      } finally {
        this.#running = false;
      }
    })();
  }

  #allocate(cidr: string): string | undefined {
    const c = parseCIDR(cidr);
    const size = 1n << BigInt(c.bits - c.prefix);
    const limit = size < 65536n ? size - (c.family === 4 ? 1n : 0n) : 65536n; // not the IPv4 broadcast
    for (let i = 2n; i < limit; i++) {
      const ip = formatIP(c.family, c.base + i);
      if (!this.#used.has(ip)) return ip;
    }
    return undefined;
  }

  async #batch(): Promise<void> {
    const uids = [...this.#pending];
    this.#pending.clear();
    const writes: Array<() => Promise<void>> = [];
    let waiting = 0;
    for (const uid of uids) {
      const st = this.#pods.get(uid);
      if (!st || !this.#needs(st)) continue;
      const cidrs = this.#nodes.get(st.node!) ?? [];
      if (cidrs.length === 0) { waiting++; continue; } // retried when the node gets its podCIDRs
      const ips = cidrs.map((c) => this.#allocate(c));
      if (ips.some((x) => x === undefined)) { waiting++; this.#log(`no free address for ${st.namespace}/${st.name} on ${st.node} (${cidrs.join(',')})`); continue; }
      const got = ips as string[];
      for (const ip of got) this.#used.add(ip);
      st.ips = got;
      writes.push(async () => {
        try {
          await this.#client.mergePatch(`/api/v1/namespaces/${st.namespace}/pods/${st.name}/status`, {
            metadata: { uid: st.uid }, status: { podIP: got[0], podIPs: got.map((ip) => ({ ip })) },
          });
          this.stats.allocated++;
        } catch (e) {
          // gone (404) or replaced by a pod of the same name (409 on the uid): give the addresses back
          if (e instanceof ApiError && (e.status === 404 || e.status === 409)) {
            const cur = this.#pods.get(st.uid);
            if (cur) cur.ips = [];
            for (const ip of got) this.#used.delete(ip);
          } else {
            this.#log(`annotating ${st.namespace}/${st.name}: ${e instanceof Error ? e.message : String(e)}`);
            const cur = this.#pods.get(st.uid);
            if (cur) { cur.ips = []; this.#pending.add(st.uid); this.#again = true; }
            for (const ip of got) this.#used.delete(ip);
          }
        }
      });
    }
    this.stats.waiting = waiting;
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(16, writes.length) }, async () => {
      while (next < writes.length) await writes[next++]!();
    }));
  }
}

async function main(argv: string[]): Promise<void> {
  let kubeconfig = process.env.KUBECONFIG;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--kubeconfig') kubeconfig = argv[++i];
    else if (a.startsWith('--kubeconfig=')) kubeconfig = a.slice('--kubeconfig='.length);
    else throw new Error(`unknown argument ${a} (usage: node-ipam.ts --kubeconfig K)`);
  }
  if (!kubeconfig) throw new Error('--kubeconfig is required');
  const { server, token } = readKubeconfig(kubeconfig);
  const client = new KubeClient(server, token);
  const ipam = new NodeIpam({ client });
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
    process.stderr.write(`node-ipam: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
