// A real data plane for a running Testbed: Linux network namespaces for nodes and pods, the real
// kube-proxy (iptables mode) per node, the real CoreDNS serving cluster.local.
//
//   const dp = await Dataplane.start(tb);       // fabric + one netns per Node, kube-proxy in each
//   await deployCoreDNS(tb, { clusterIP });     // kube-dns Service + a coredns Pod (kwok gives it an IP)
//   await dp.syncPods();                        // one netns per Running pod with an IP: a dpnet HTTP
//                                               // server, or CoreDNS for k8s-app=kube-dns pods
//   await dp.get({ namespace, name }, 'http://10.96.0.42/');   // runs inside that pod's netns
//   await dp.resolve({ namespace, name }, 'web.ns.svc.cluster.local', '10.96.0.10');
//   await dp.stop();                            // processes stopped, every netns deleted
//
// Topology (all addresses exist only inside namespaces created here; nothing is added to the root
// namespace except a Unix socket file):
//
//   <p>fab     netns with bridge br0; one veth per node (n<i> in fab, eth0 in the node netns)
//   <p>n<i>    node i: eth0 = 172.31.255.<i+1>/24 (FABRIC_CIDR), ip_forward on, a route to every other
//              node's spec.podCIDR via that node's fabric address, a /32 route per local pod through
//              the pod's veth v<k>, 169.254.1.1/32 on lo. kube-proxy runs here (iptables rules of this
//              netns).
//   <p>p<k>    pod k: eth0 = status.podIP/32, default route via 169.254.1.1 (a local address of the node
//              netns, so the node answers the pod's ARP for it; routed veths as in Calico, no bridge):
//              every packet of a pod is routed through the node netns and passes its netfilter.
//
// The apiserver listens on the host's 127.0.0.1, which no netns can reach. A dpnet forwarder in the
// root netns listens on a Unix socket (<state>/apiserver.sock; socket paths are not per-netns) and
// connects to 127.0.0.1:<apiserver port>; inside every node netns and the CoreDNS pod netns another
// dpnet forwarder listens on 127.0.0.1:6443 and connects to that socket. kube-proxy and CoreDNS use a
// kubeconfig with server https://127.0.0.1:6443. No TCP/IP path between the root netns and the
// namespaces exists, and no namespace has a route out.
//
// Names: every netns is named krn<pid>x<n>-..., <pid> being the owning process; the state directory is
// $TMPDIR/krn<pid>x<n>-XXXXXX. `cleanupLeftovers()` (called by start) deletes both for dead owners, so a
// crash leaves nothing behind for long.
// All processes run under tbsup and die with the owning process.

import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from './build.ts';
import { Proc, type ExecResult, type Testbed } from './cluster.ts';
import { ensureDataplaneBuilt } from './dataplane-build.ts';
import { parseCIDR } from './ip.ts';
import type { KubeObject } from './kube.ts';

/** Link addresses between node namespaces (node i = .i+1). */
export const FABRIC_CIDR = '172.31.255.0/24';
/** The pods' default gateway (assigned to lo of every node netns). */
export const POD_GATEWAY = '169.254.1.1';
/** Port of the apiserver forwarder inside node and CoreDNS namespaces. */
export const NETNS_APISERVER_PORT = 6443;
/** Addresses of client namespaces (`addClient`): outside every pod and Service range, one /32 each. */
export const CLIENT_CIDR = '172.31.254.0/24';

const PREFIX_RE = /^krn(\d+)x(\d+)-/;
let counter = 0;

export interface PodRef {
  namespace: string;
  name: string;
}

export interface DataplaneOptions {
  /** kube-proxy --proxy-mode (only iptables for now). */
  proxyMode?: 'iptables';
  /** Progress messages (default: silent unless KUBE_RENUMBER_TESTBED_VERBOSE=1). */
  log?: (msg: string) => void;
  /** Timeout for kube-proxy's first sync per node, ms (default 60 s). */
  timeoutMs?: number;
}

interface NodeNet {
  name: string;
  index: number;
  netns: string;
  fabricIP: string;
  podCIDR: string | undefined;
}

interface PodNet {
  key: string;
  namespace: string;
  name: string;
  uid: string;
  ip: string;
  node: string;
  netns: string;
  hostVeth: string;
  role: 'server' | 'coredns';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


/** Runs a command; never throws for a non-zero exit. */
export function run(cmd: string, args: string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<ExecResult> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', (e) => {
      clearTimeout(timer);
      resolve({ stdout, stderr: stderr + String(e), code: 127 });
    });
    p.on('close', (c, sig) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code: c ?? (sig ? 128 : 1) });
    });
    p.stdin.on('error', () => {});
    p.stdin.end(opts.input ?? '');
  });
}

async function ip(args: string[]): Promise<string> {
  const r = await run('ip', args);
  if (r.code !== 0) throw new Error(`ip ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** Names of all network namespaces (`ip netns list`). */
export async function listNetns(): Promise<string[]> {
  const r = await run('ip', ['netns', 'list']);
  return r.stdout
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.length > 0);
}

async function deleteNetns(names: string[]): Promise<void> {
  for (const ns of names) {
    // processes left in it (normally none: tbsup kills them with their owner)
    const pids = (await run('ip', ['netns', 'pids', ns])).stdout.split(/\s+/).filter(Boolean).map(Number);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await run('ip', ['netns', 'del', ns]);
  }
}

function ownerDead(name: string): boolean {
  const m = PREFIX_RE.exec(name);
  return m !== null && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]));
}

/**
 * Deletes the namespaces (and state directories in the temp dir) of data planes whose owning process
 * is dead; returns the names of the namespaces.
 */
export async function cleanupLeftovers(): Promise<string[]> {
  const stale = (await listNetns()).filter(ownerDead);
  await deleteNetns(stale);
  for (const d of (await readdir(tmpdir())).filter(ownerDead)) await rm(join(tmpdir(), d), { recursive: true, force: true });
  return stale;
}

function ipv4ToInt(a: string): number {
  return a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function intToIPv4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

function fabricIP(i: number): string {
  const base = ipv4ToInt(FABRIC_CIDR.split('/')[0]!);
  if (i + 1 > 254) throw new Error('at most 254 nodes on the data-plane fabric');
  return intToIPv4(base + i + 1);
}

function apiserverPort(server: string): number {
  const port = Number(new URL(server).port);
  if (!port) throw new Error(`no port in ${server}`);
  return port;
}

export class Dataplane {
  readonly tb: Testbed;
  /** Prefix of every netns name of this data plane (krn<pid>x<n>-). */
  readonly prefix: string;
  readonly stateDir: string;
  readonly binDir: string;
  readonly proxyMode: 'iptables';
  readonly fabricNetns: string;
  #nodes = new Map<string, NodeNet>();
  #pods = new Map<string, PodNet>();
  #procs: Proc[] = [];
  #podCounter = 0;
  #clientCounter = 0;
  #log: (m: string) => void;
  #stopped = false;
  #timeoutMs: number;

  private constructor(tb: Testbed, binDir: string, prefix: string, stateDir: string, opts: DataplaneOptions) {
    this.tb = tb;
    this.binDir = binDir;
    this.stateDir = stateDir;
    this.proxyMode = opts.proxyMode ?? 'iptables';
    this.prefix = prefix;
    this.fabricNetns = `${this.prefix}fab`;
    const verbose = process.env.KUBE_RENUMBER_TESTBED_VERBOSE === '1';
    this.#log = opts.log ?? (verbose ? (m: string) => process.stderr.write(`[dataplane] ${m}\n`) : () => {});
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
  }

  /** Socket of the root-netns apiserver forwarder. */
  get apiserverSocket(): string {
    return join(this.stateDir, 'apiserver.sock');
  }

  /** Kubeconfig used inside the namespaces (server https://127.0.0.1:6443). */
  get netnsKubeconfig(): string {
    return join(this.stateDir, 'kubeconfig-netns');
  }

  /** Builds the binaries if needed, wires every current Node and starts kube-proxy in each. */
  static async start(tb: Testbed, opts: DataplaneOptions = {}): Promise<Dataplane> {
    if ((opts.proxyMode ?? 'iptables') !== 'iptables') throw new Error('only --proxy-mode=iptables is wired so far');
    const binDir = await ensureDataplaneBuilt({ version: tb.options.version, log: (m) => process.stderr.write(`[dataplane] ${m}\n`) });
    const stale = await cleanupLeftovers();
    const prefix = `krn${process.pid}x${++counter}-`;
    const stateDir = await mkdtemp(join(tmpdir(), prefix));
    const dp = new Dataplane(tb, binDir, prefix, stateDir, opts);
    if (stale.length > 0) dp.#log(`deleted ${stale.length} leftover namespaces of dead owners`);
    try {
      await dp.#boot();
      return dp;
    } catch (e) {
      await dp.stop();
      throw e;
    }
  }

  #spawn(name: string, netns: string | undefined, cmd: string, args: string[]): Proc {
    const full = netns ? ['netns', 'exec', netns, cmd, ...args] : args;
    const proc = new Proc(name, join(this.tb.binDir, 'tbsup'), netns ? 'ip' : cmd, full, join(this.stateDir, `${name}.log`), 3);
    this.#procs.push(proc);
    return proc;
  }

  /** Runs a command inside a netns. Never throws for a non-zero exit. */
  exec(netns: string, cmd: string, args: string[], timeoutMs = 15_000): Promise<ExecResult> {
    return run('ip', ['netns', 'exec', netns, cmd, ...args], { timeoutMs });
  }

  async #sysctl(netns: string, key: string, value: string): Promise<void> {
    const r = await this.exec(netns, 'sysctl', ['-qw', `${key}=${value}`]);
    if (r.code !== 0) throw new Error(`sysctl ${key}=${value} in ${netns}: ${r.stderr.trim()}`);
  }

  async #boot(): Promise<void> {
    const t0 = Date.now();
    const tb = this.tb;
    await writeFile(
      this.netnsKubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: testbed',
        '  cluster:',
        `    server: https://127.0.0.1:${NETNS_APISERVER_PORT}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: admin',
        '  user:',
        `    token: ${tb.token}`,
        'contexts:',
        '- name: testbed',
        '  context: {cluster: testbed, user: admin}',
        'current-context: testbed',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    this.#spawn('apiserver-fwd', undefined, join(this.binDir, 'dpnet'), [
      'fwd',
      '-listen',
      `unix:${this.apiserverSocket}`,
      '-to',
      `tcp:127.0.0.1:${apiserverPort(tb.server)}`,
    ]);

    const fab = this.fabricNetns;
    await ip(['netns', 'add', fab]);
    await ip(['-n', fab, 'link', 'set', 'lo', 'up']);
    await ip(['-n', fab, 'link', 'add', 'br0', 'type', 'bridge']);
    await ip(['-n', fab, 'link', 'set', 'br0', 'up']);

    const nodes = (await tb.client.list('/api/v1/nodes')).items as KubeObject[];
    nodes.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    for (const node of nodes) await this.#addNode(node);
    // routes between nodes (each node's podCIDR via its fabric address)
    for (const a of this.#nodes.values()) {
      for (const b of this.#nodes.values()) {
        if (a === b || !b.podCIDR) continue;
        await ip(['-n', a.netns, 'route', 'add', b.podCIDR, 'via', b.fabricIP, 'dev', 'eth0']);
      }
    }
    this.#log(`namespaces for ${this.#nodes.size} nodes (${Date.now() - t0} ms)`);
    for (const n of this.#nodes.values()) this.#startKubeProxy(n);
    await Promise.all([...this.#nodes.values()].map((n) => this.#waitProxyHealthy(n)));
    this.#log(`kube-proxy healthy on ${this.#nodes.size} nodes (${Date.now() - t0} ms)`);
  }

  async #addNode(node: KubeObject): Promise<void> {
    const index = this.#nodes.size;
    const n: NodeNet = {
      name: node.metadata.name,
      index,
      netns: `${this.prefix}n${index}`,
      fabricIP: fabricIP(index),
      podCIDR: (node.spec?.podCIDRs ?? [])[0] ?? node.spec?.podCIDR,
    };
    if (n.podCIDR) parseCIDR(n.podCIDR); // validates
    this.#nodes.set(n.name, n);
    await ip(['netns', 'add', n.netns]);
    await ip(['-n', n.netns, 'link', 'set', 'lo', 'up']);
    // the pods' gateway is a local address of the node netns: it answers their ARP on every veth
    await ip(['-n', n.netns, 'addr', 'add', `${POD_GATEWAY}/32`, 'dev', 'lo']);
    await ip(['-n', this.fabricNetns, 'link', 'add', `n${index}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', n.netns]);
    await ip(['-n', this.fabricNetns, 'link', 'set', `n${index}`, 'master', 'br0', 'up']);
    await ip(['-n', n.netns, 'addr', 'add', `${n.fabricIP}/${FABRIC_CIDR.split('/')[1]}`, 'dev', 'eth0']);
    await ip(['-n', n.netns, 'link', 'set', 'eth0', 'up']);
    await this.#sysctl(n.netns, 'net.ipv4.ip_forward', '1');
    this.#spawn(`fwd-${n.name}`, n.netns, join(this.binDir, 'dpnet'), [
      'fwd',
      '-listen',
      `tcp:127.0.0.1:${NETNS_APISERVER_PORT}`,
      '-to',
      `unix:${this.apiserverSocket}`,
    ]);
  }

  #startKubeProxy(n: NodeNet): void {
    this.#spawn(`kube-proxy-${n.name}`, n.netns, join(this.binDir, 'kube-proxy'), [
      `--kubeconfig=${this.netnsKubeconfig}`,
      `--hostname-override=${n.name}`,
      `--proxy-mode=${this.proxyMode}`,
      `--cluster-cidr=${this.tb.controllerManagerFlags.clusterCIDR}`,
      `--bind-address=${n.fabricIP}`,
      '--conntrack-max-per-core=0',
      '--conntrack-tcp-timeout-established=0s',
      '--conntrack-tcp-timeout-close-wait=0s',
      '--healthz-bind-address=127.0.0.1:10256',
      '--metrics-bind-address=127.0.0.1:10249',
      '--v=2',
    ]);
  }

  async #waitProxyHealthy(n: NodeNet): Promise<void> {
    const proc = this.#procs.find((p) => p.name === `kube-proxy-${n.name}`)!;
    const deadline = Date.now() + this.#timeoutMs;
    for (;;) {
      if (!proc.running()) throw new Error(`kube-proxy on ${n.name} exited (${proc.exitCode})\n${proc.logTail(40)}`);
      const r = await this.exec(n.netns, join(this.binDir, 'dpnet'), ['get', '-timeout', '1s', 'http://127.0.0.1:10256/healthz']);
      if (r.code === 0) return;
      if (Date.now() > deadline) throw new Error(`kube-proxy on ${n.name} not healthy after ${this.#timeoutMs} ms\n${proc.logTail(40)}`);
      await sleep(300);
    }
  }

  /** Node netns name of a Node. */
  nodeNetns(node: string): string {
    const n = this.#nodes.get(node);
    if (!n) throw new Error(`node ${node} is not part of the data plane`);
    return n.netns;
  }

  /** Netns name of a wired pod, or undefined. */
  podNetns(pod: PodRef): string | undefined {
    return this.#pods.get(`${pod.namespace}/${pod.name}`)?.netns;
  }

  /** The wired pods. */
  pods(): { namespace: string; name: string; ip: string; node: string; netns: string; role: string }[] {
    return [...this.#pods.values()].map(({ namespace, name, ip: podIP, node, netns, role }) => ({ namespace, name, ip: podIP, node, netns, role }));
  }

  /**
   * Gives every Running pod with an IP on a wired node its netns and its process (a dpnet HTTP server
   * on each containerPort, default 8080, answering "<namespace>/<name>"; CoreDNS for k8s-app=kube-dns
   * pods). Pods already wired are kept; pods gone (or with another uid/IP) are unwired.
   */
  async syncPods(): Promise<{ added: number; removed: number }> {
    const list = (await this.tb.client.list('/api/v1/pods')).items as KubeObject[];
    const want = new Map<string, KubeObject>();
    for (const p of list) {
      if (p.status?.phase !== 'Running' || !p.status?.podIP || !this.#nodes.has(p.spec?.nodeName)) continue;
      if (p.spec?.hostNetwork) continue;
      want.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    }
    let removed = 0;
    for (const [key, pn] of this.#pods) {
      const p = want.get(key);
      if (!p || p.metadata.uid !== pn.uid || p.status.podIP !== pn.ip) {
        await this.#removePod(pn);
        removed++;
      }
    }
    let added = 0;
    for (const [key, p] of want) {
      if (this.#pods.has(key)) continue;
      await this.#addPod(p);
      added++;
    }
    return { added, removed };
  }

  async #addPod(p: KubeObject): Promise<void> {
    const node = this.#nodes.get(p.spec.nodeName)!;
    const k = this.#podCounter++;
    const labels = p.metadata.labels ?? {};
    const pn: PodNet = {
      key: `${p.metadata.namespace}/${p.metadata.name}`,
      namespace: p.metadata.namespace ?? 'default',
      name: p.metadata.name,
      uid: p.metadata.uid ?? '',
      ip: p.status.podIP,
      node: node.name,
      netns: `${this.prefix}p${k}`,
      hostVeth: `v${k}`,
      role: labels['k8s-app'] === 'kube-dns' ? 'coredns' : 'server',
    };
    this.#pods.set(pn.key, pn);
    const N = node.netns;
    const P = pn.netns;
    await ip(['netns', 'add', P]);
    await ip(['-n', P, 'link', 'set', 'lo', 'up']);
    await ip(['-n', N, 'link', 'add', pn.hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', P]);
    await ip(['-n', N, 'link', 'set', pn.hostVeth, 'up']);
    await ip(['-n', N, 'route', 'add', `${pn.ip}/32`, 'dev', pn.hostVeth]);
    await ip(['-n', P, 'addr', 'add', `${pn.ip}/32`, 'dev', 'eth0']);
    await ip(['-n', P, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', P, 'route', 'add', POD_GATEWAY, 'dev', 'eth0', 'scope', 'link']);
    await ip(['-n', P, 'route', 'add', 'default', 'via', POD_GATEWAY, 'dev', 'eth0']);
    if (pn.role === 'coredns') {
      this.#spawn(`fwd-${pn.namespace}-${pn.name}`, P, join(this.binDir, 'dpnet'), [
        'fwd',
        '-listen',
        `tcp:127.0.0.1:${NETNS_APISERVER_PORT}`,
        '-to',
        `unix:${this.apiserverSocket}`,
      ]);
      const corefile = join(this.stateDir, `Corefile-${pn.name}`);
      await writeFile(
        corefile,
        [
          '.:53 {',
          '    errors',
          '    health 127.0.0.1:8080',
          '    ready 127.0.0.1:8181',
          `    kubernetes cluster.local in-addr.arpa ip6.arpa {`,
          `        kubeconfig ${this.netnsKubeconfig}`,
          '        pods insecure',
          '        fallthrough in-addr.arpa ip6.arpa',
          '        ttl 5',
          '    }',
          '    loadbalance',
          '}',
          '',
        ].join('\n'),
      );
      this.#spawn(`coredns-${pn.name}`, P, join(this.binDir, 'coredns'), ['-conf', corefile]);
    } else {
      const ports = new Set<number>();
      for (const c of p.spec.containers ?? []) for (const cp of c.ports ?? []) if ((cp.protocol ?? 'TCP') === 'TCP') ports.add(cp.containerPort);
      if (ports.size === 0) ports.add(8080);
      for (const port of ports) {
        this.#spawn(`pod-${pn.namespace}-${pn.name}-${port}`, P, join(this.binDir, 'dpnet'), [
          'serve',
          '-listen',
          `0.0.0.0:${port}`,
          '-name',
          pn.key,
        ]);
      }
    }
  }

  async #removePod(pn: PodNet): Promise<void> {
    this.#pods.delete(pn.key);
    const mine = this.#procs.filter(
      (p) => p.name.startsWith(`pod-${pn.namespace}-${pn.name}-`) || p.name === `coredns-${pn.name}` || p.name === `fwd-${pn.namespace}-${pn.name}`,
    );
    await Promise.all(mine.map((p) => p.stop()));
    this.#procs = this.#procs.filter((p) => !mine.includes(p));
    await run('ip', ['-n', this.#nodes.get(pn.node)!.netns, 'route', 'del', `${pn.ip}/32`]);
    await deleteNetns([pn.netns]); // deleting the netns deletes the veth pair
  }

  /**
   * A netns attached to a node the way a pod is (veth, default route via the node netns, so its packets pass
   * the node's kube-proxy rules) but not backed by any Pod object: a client that outlives every pod restart
   * of a migration. Address 172.31.254.<k>/32 (CLIENT_CIDR); every other node routes it via the node.
   * Deleted by stop().
   */
  async addClient(node: string): Promise<{ netns: string; ip: string }> {
    const n = this.#nodes.get(node);
    if (!n) throw new Error(`node ${node} is not part of the data plane`);
    const k = ++this.#clientCounter;
    if (k > 254) throw new Error('at most 254 client namespaces');
    const addr = intToIPv4(ipv4ToInt(CLIENT_CIDR.split('/')[0]!) + k);
    const P = `${this.prefix}c${k}`;
    const hostVeth = `c${k}`;
    await ip(['netns', 'add', P]);
    await ip(['-n', P, 'link', 'set', 'lo', 'up']);
    await ip(['-n', n.netns, 'link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', P]);
    await ip(['-n', n.netns, 'link', 'set', hostVeth, 'up']);
    await ip(['-n', n.netns, 'route', 'add', `${addr}/32`, 'dev', hostVeth]);
    await ip(['-n', P, 'addr', 'add', `${addr}/32`, 'dev', 'eth0']);
    await ip(['-n', P, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', P, 'route', 'add', POD_GATEWAY, 'dev', 'eth0', 'scope', 'link']);
    await ip(['-n', P, 'route', 'add', 'default', 'via', POD_GATEWAY, 'dev', 'eth0']);
    for (const other of this.#nodes.values()) {
      if (other !== n) await ip(['-n', other.netns, 'route', 'add', `${addr}/32`, 'via', n.fabricIP, 'dev', 'eth0']);
    }
    return { netns: P, ip: addr };
  }

  /** Waits until CoreDNS of every wired kube-dns pod reports ready (/ready on 127.0.0.1:8181 in its netns). */
  async waitCoreDNSReady(timeoutMs = 60_000): Promise<void> {
    const dns = [...this.#pods.values()].filter((p) => p.role === 'coredns');
    if (dns.length === 0) throw new Error('no kube-dns pod is wired (deployCoreDNS, then syncPods)');
    const deadline = Date.now() + timeoutMs;
    for (const pn of dns) {
      const proc = this.#procs.find((p) => p.name === `coredns-${pn.name}`)!;
      for (;;) {
        if (!proc.running()) throw new Error(`coredns ${pn.name} exited (${proc.exitCode})\n${proc.logTail(40)}`);
        const r = await this.exec(pn.netns, join(this.binDir, 'dpnet'), ['get', '-timeout', '1s', 'http://127.0.0.1:8181/ready']);
        if (r.code === 0) break;
        if (Date.now() > deadline) throw new Error(`coredns ${pn.name} not ready after ${timeoutMs} ms\n${proc.logTail(40)}`);
        await sleep(300);
      }
    }
  }

  #pod(pod: PodRef): PodNet {
    const pn = this.#pods.get(`${pod.namespace}/${pod.name}`);
    if (!pn) throw new Error(`pod ${pod.namespace}/${pod.name} is not wired (syncPods first)`);
    return pn;
  }

  /** One HTTP GET from inside a pod's netns. */
  get(from: PodRef, url: string, timeoutMs = 3000): Promise<ExecResult> {
    return this.exec(this.#pod(from).netns, join(this.binDir, 'dpnet'), ['get', '-timeout', `${timeoutMs}ms`, url], timeoutMs + 5000);
  }

  /** Resolves a name from inside a pod's netns through the DNS server at `server` (port 53). */
  resolve(from: PodRef, name: string, server: string, timeoutMs = 3000): Promise<ExecResult> {
    return this.exec(this.#pod(from).netns, join(this.binDir, 'dpnet'), ['resolve', '-server', `${server}:53`, '-timeout', `${timeoutMs}ms`, name], timeoutMs + 5000);
  }

  /** `iptables-save -t nat` of a node netns (the rules kube-proxy wrote). */
  async natRules(node: string): Promise<string> {
    return (await this.exec(this.nodeNetns(node), 'iptables-save', ['-t', 'nat'])).stdout;
  }

  /** Names of the namespaces of this data plane that exist now. */
  async namespaces(): Promise<string[]> {
    return (await listNetns()).filter((n) => n.startsWith(this.prefix));
  }

  /** Log tails of every process (for failure messages). */
  logTails(lines = 15): string {
    return this.#procs.map((p) => p.logTail(lines)).join('\n');
  }

  /** Stops every process and deletes every netns of this data plane. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.#procs.map((p) => p.stop()));
    this.#procs = [];
    await deleteNetns(await this.namespaces());
    if (process.env.KUBE_RENUMBER_TESTBED_KEEP !== '1') await rm(this.stateDir, { recursive: true, force: true });
  }
}

/**
 * Creates (in kube-system) the kube-dns Service at `clusterIP` (53/UDP, 53/TCP, selector
 * k8s-app=kube-dns) and a Pod `coredns` with that label, and waits until the pod is Running with an IP.
 * `Dataplane.syncPods()` then runs the real CoreDNS in that pod's netns, and the EndpointSlice
 * controller points the Service at it.
 */
export async function deployCoreDNS(tb: Testbed, opts: { clusterIP: string; node?: string; timeoutMs?: number }): Promise<KubeObject> {
  const c = tb.client;
  await c.create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
    spec: {
      selector: { 'k8s-app': 'kube-dns' },
      clusterIP: opts.clusterIP,
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
      ],
    },
  });
  await c.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
    spec: {
      ...(opts.node ? { nodeName: opts.node } : {}),
      containers: [
        {
          name: 'coredns',
          image: 'registry.k8s.io/coredns/coredns',
          ports: [
            { name: 'dns', containerPort: 53, protocol: 'UDP' },
            { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
          ],
        },
      ],
    },
  });
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const p = await c.get('/api/v1/namespaces/kube-system/pods/coredns');
    if (p.status?.phase === 'Running' && p.status?.podIP) return p;
    if (Date.now() > deadline) throw new Error(`coredns pod not Running with an IP: ${JSON.stringify(p.status)}`);
    await sleep(200);
  }
}
