// A real data plane for a running Testbed: Linux network namespaces for nodes and pods, the real
// kube-proxy (iptables or nftables mode) per node, the real CoreDNS serving cluster.local.
//
//   const dp = await Dataplane.start(tb);       // fabric + one netns per Node, kube-proxy in each
//   await deployCoreDNS(tb, { clusterIP });     // kube-dns Service + a coredns Pod (kwok gives it an IP)
//   await dp.syncPods();                        // one netns per Running pod with an IP: a dpnet HTTP
//                                               // server, or CoreDNS for k8s-app=kube-dns pods
//   dp.follow();                                // or: syncPods every 100 ms in the background
//   await dp.get({ namespace, name }, 'http://10.96.0.42/');   // runs inside that pod's netns
//   await dp.resolve({ namespace, name }, 'web.ns.svc.cluster.local', '10.96.0.10');
//   await dp.stop();                            // processes stopped, every netns deleted
//
// Like a kubelet with CNI:
//   - a pod with the readiness gate SERVING_GATE (stages.ts) is left Ready=False by kwok; once its netns is
//     wired and its process answers (dpnet serve accepts a connection, CoreDNS answers /ready), the data
//     plane sets that gate's condition and Ready to True (PATCH pods/NAME/status);
//   - a pod that gets a deletionTimestamp or disappears keeps its netns and process for terminationGraceMs
//     (default 5 s, a preStop sleep): kube-proxy drops the endpoint meanwhile, requests already DNATed to it
//     are still answered. If a node's kube-proxy still routes to it when that time is up (a loaded machine),
//     it stays until none does (at most 30 s more), and says so in events().
//
// Topology (all addresses exist only inside namespaces created here; nothing is added to the root
// namespace except a Unix socket file):
//
//   <p>fab     netns with bridge br0; one veth per node (n<i> in fab, eth0 in the node netns)
//   <p>n<i>    node i: eth0 = 172.31.255.<i+1>/24 (FABRIC_CIDR), ip_forward on, a /32 route per local pod
//              through the pod's veth v<k>, a /32 route per pod (and client) of every other node via that
//              node's fabric address (no dependence on spec.podCIDR: Calico-style IPAM and a Pod CIDR
//              migration work the same), 169.254.1.1/32 on lo. kube-proxy runs here (iptables or nftables
//              rules of this netns).
//   <p>p<k>    pod k: eth0 = status.podIP/32, default route via 169.254.1.1 (a local address of the node
//              netns, so the node answers the pod's ARP for it; routed veths as in Calico, no bridge):
//              every packet of a pod is routed through the node netns and passes its netfilter.
//   <p>cp      only when tb.advertiseAddress is APISERVER_FABRIC_IP: the apiserver's advertised address
//              172.31.255.254/24 on the fabric, a forwarder from <that>:<apiserver port> to the apiserver,
//              and a /32 route per pod; so the `kubernetes` Service (10.96.0.1:443, DNATed by kube-proxy to
//              the EndpointSlice address) reaches the real apiserver from pods.
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

import { FollowLoop } from './follow-loop.ts';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from './build.ts';
import { Proc, type ExecResult, type Testbed } from './cluster.ts';
import { ensureDataplaneBuilt } from './dataplane-build.ts';
import type { KubeObject } from './kube.ts';
import { SERVING_GATE } from './stages.ts';

export { SERVING_GATE };

/** Link addresses between node namespaces (node i = .i+1). */
export const FABRIC_CIDR = '172.31.255.0/24';
/**
 * Fabric address of the control-plane netns: give it to `Testbed.start({ advertiseAddress })` and the
 * `kubernetes` Service's endpoint is reachable from pods (Dataplane.start wires <prefix>cp with it).
 */
export const APISERVER_FABRIC_IP = '172.31.255.254';
/**
 * Fabric addresses for an HA control plane (TestbedOptions.apiserverAdvertiseAddresses): apiserver i is
 * advertised as APISERVER_FABRIC_IPS[i] and reached through the control-plane netns like the first.
 */
export const APISERVER_FABRIC_IPS = [APISERVER_FABRIC_IP, '172.31.255.253'] as const;
/** The pods' default gateway (assigned to lo of every node netns). */
export const POD_GATEWAY = '169.254.1.1';
/** Port of the apiserver forwarder inside node and CoreDNS namespaces. */
export const NETNS_APISERVER_PORT = 6443;
/** Addresses of client namespaces (`addClient`): outside every pod and Service range, one /32 each. */
export const CLIENT_CIDR = '172.31.254.0/24';
/** Default time a deleted pod's netns and process stay (ms). */
export const DEFAULT_TERMINATION_GRACE_MS = 5000;
/** A lingering pod still routed to after its grace period is checked again this often (ms) ... */
const LINGER_RECHECK_MS = 250;
/** ... for at most this long past its grace period (ms): 30 s, a pod's default terminationGracePeriodSeconds. */
const LINGER_MAX_EXTRA_MS = 30_000;
/** How many progress messages events() keeps. */
const EVENTS_KEPT = 2000;

const PREFIX_RE = /^krn(\d+)x(\d+)-/;
let counter = 0;

/**
 * The endpoint IPs (IPv4) a Service chain of kube-proxy's rules sends connections to: in iptables mode a
 * `-j KUBE-SEP-…` jump to a chain that DNATs to the IP; in nftables mode a `goto endpoint-…__IP/port` or an
 * element of a `numgen` DNAT map.
 * Endpoint chains nothing jumps to (a terminating endpoint's) do not count. With `serviceIP` (iptables mode
 * only), just the endpoints of the Service at that ClusterIP.
 */
export function routedEndpointIps(rules: string, mode: 'iptables' | 'nftables', serviceIP?: string): Set<string> {
  if (mode === 'nftables') {
    if (serviceIP !== undefined) throw new Error('routedEndpointIps: the Service filter reads iptables rules only');
    // v1.35: `numgen random mod N vmap { 0 : goto endpoint-…__IP/port, … }`; v1.36 (no affinity):
    // `dnat ip to numgen random mod N map { 0 : IP . port, … }`
    const viaChains = [...rules.matchAll(/goto endpoint-\S*?__(\d+\.\d+\.\d+\.\d+)\/\d+/g)].map((m) => m[1]!);
    const direct = rules
      .split('\n')
      .filter((l) => /dnat .*numgen random mod \d+ map/.test(l))
      .flatMap((l) => [...l.matchAll(/(\d+\.\d+\.\d+\.\d+) \. \d+/g)].map((m) => m[1]!));
    return new Set([...viaChains, ...direct]);
  }
  let jumps = [...rules.matchAll(/^-A (\S+) .*-j (KUBE-SEP-\S+)/gm)];
  if (serviceIP !== undefined) {
    const svc = new RegExp(`^-A KUBE-SERVICES -d ${serviceIP.replaceAll('.', '\\.')}/32 .*-j (KUBE-SVC-\\S+)`, 'gm');
    const chains = new Set([...rules.matchAll(svc)].map((m) => m[1]!));
    jumps = jumps.filter((m) => chains.has(m[1]!));
  }
  const jumped = new Set(jumps.map((m) => m[2]!));
  const ips = new Set<string>();
  for (const m of rules.matchAll(/^-A (KUBE-SEP-\S+) .*-j DNAT .*--to-destination (\d+\.\d+\.\d+\.\d+):\d+/gm)) if (jumped.has(m[1]!)) ips.add(m[2]!);
  return ips;
}

export interface PodRef {
  namespace: string;
  name: string;
}

export interface DataplaneOptions {
  /** kube-proxy --proxy-mode (default iptables). */
  proxyMode?: 'iptables' | 'nftables';
  /** Progress messages (default: silent unless KUBE_RENUMBER_TESTBED_VERBOSE=1). */
  log?: (msg: string) => void;
  /** Timeout for kube-proxy's first sync per node, ms (default 60 s). */
  timeoutMs?: number;
  /**
   * How long a wired pod's netns and process stay after the pod got a deletionTimestamp or disappeared
   * (ms, default 5000; like a container with a preStop sleep). 0 removes them at once.
   */
  terminationGraceMs?: number;
}

interface NodeNet {
  name: string;
  index: number;
  netns: string;
  fabricIP: string;
}

/** A wired pod as `pods()` / `lingering()` report it. */
export interface WiredPod {
  namespace: string;
  name: string;
  uid: string;
  ip: string;
  node: string;
  netns: string;
  role: 'server' | 'coredns';
  /** Unix ms when netns, routes and process were set up. */
  wiredAt: number;
  /** Unix ms when the data plane set Ready=True (pods with SERVING_GATE), if it did. */
  servingAt?: number;
  /** Unix ms since when the pod lingers after its deletion (lingering() only). */
  lingeringSince?: number;
}

interface PodNet extends WiredPod {
  key: string;
  hostVeth: string;
  ports: number[];
  procs: Proc[];
  /** Carries the SERVING_GATE readiness gate. */
  gated: boolean;
  timer?: NodeJS.Timeout;
  /** Nodes whose kube-proxy still routed to the pod when its grace period ended. */
  heldBy?: string[];
  removed: boolean;
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
  if (i + 1 > 252) throw new Error('at most 252 nodes on the data-plane fabric (.253 and .254 are APISERVER_FABRIC_IPS)');
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
  readonly proxyMode: 'iptables' | 'nftables';
  readonly fabricNetns: string;
  /** The control-plane netns (APISERVER_FABRIC_IP), when tb.advertiseAddress is that address. */
  readonly controlPlaneNetns: string | undefined;
  readonly terminationGraceMs: number;
  #nodes = new Map<string, NodeNet>();
  /** Active (not lingering) wired pods by namespace/name. */
  #pods = new Map<string, PodNet>();
  /** Pods kept after their deletion until their grace period ends. */
  #lingering = new Set<PodNet>();
  /** IPs of the pods the last sync found Running and not being deleted (wired or not). */
  #claimedIps = new Set<string>();
  /** Node-level processes (forwarders, kube-proxy); pod processes live in PodNet.procs. */
  #procs: Proc[] = [];
  #podCounter = 0;
  #clientCounter = 0;
  #log: (m: string) => void;
  /** The last EVENTS_KEPT progress messages with their times (for failure messages), whatever `log` does. */
  #events: { at: number; msg: string }[] = [];
  #stopped = false;
  #timeoutMs: number;
  /** Serialises syncPods, linger removals and stop. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Readiness checks of gated pods in flight. */
  #probes = new Set<Promise<void>>();
  #follow: FollowLoop | undefined;

  private constructor(tb: Testbed, binDir: string, prefix: string, stateDir: string, opts: DataplaneOptions) {
    this.tb = tb;
    this.binDir = binDir;
    this.stateDir = stateDir;
    this.proxyMode = opts.proxyMode ?? 'iptables';
    this.prefix = prefix;
    this.fabricNetns = `${this.prefix}fab`;
    this.controlPlaneNetns = tb.apiserverAdvertiseAddresses.some((a) => (APISERVER_FABRIC_IPS as readonly string[]).includes(a)) ? `${this.prefix}cp` : undefined;
    this.terminationGraceMs = opts.terminationGraceMs ?? DEFAULT_TERMINATION_GRACE_MS;
    const verbose = process.env.KUBE_RENUMBER_TESTBED_VERBOSE === '1';
    const out = opts.log ?? (verbose ? (m: string) => process.stderr.write(`[dataplane] ${m}\n`) : () => {});
    this.#log = (m: string) => {
      this.#events.push({ at: Date.now(), msg: m });
      if (this.#events.length > EVENTS_KEPT) this.#events.splice(0, this.#events.length - EVENTS_KEPT);
      out(m);
    };
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
    const mode = opts.proxyMode ?? 'iptables';
    if (mode !== 'iptables' && mode !== 'nftables') throw new Error(`proxyMode must be 'iptables' or 'nftables', got ${String(mode)}`);
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

  #spawn(name: string, netns: string | undefined, cmd: string, args: string[], into: Proc[] = this.#procs, env?: Record<string, string>): Proc {
    const full = netns ? ['netns', 'exec', netns, cmd, ...args] : args;
    const proc = new Proc(name, join(this.tb.binDir, 'tbsup'), netns ? 'ip' : cmd, full, join(this.stateDir, `${name}.log`), 3, env);
    into.push(proc);
    return proc;
  }

  /**
   * Starts a supervised process inside `netns` (a node's: nodeNetns), its log in the state directory as
   * `<name>.log`, `env` added to this process's environment. stop() stops it with the node processes.
   */
  spawnIn(netns: string, name: string, cmd: string, args: string[], env?: Record<string, string>): Proc {
    if (this.#stopped) throw new Error('the data plane is stopped');
    return this.#spawn(name, netns, cmd, args, this.#procs, env);
  }

  /** The nodes of this data plane, in the order they were wired (node i has fabric address 172.31.255.<i+1>). */
  nodes(): { name: string; netns: string; fabricIP: string }[] {
    return [...this.#nodes.values()].map(({ name, netns, fabricIP }) => ({ name, netns, fabricIP }));
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
    // HA: one more socket per further apiserver (127.0.0.<i+1>), for the control-plane netns
    for (let i = 1; i < tb.apiserverAdvertiseAddresses.length; i++) {
      this.#spawn(`apiserver-fwd-${i}`, undefined, join(this.binDir, 'dpnet'), [
        'fwd', '-listen', `unix:${this.#apiserverSocketOf(i)}`, '-to', `tcp:127.0.0.${i + 1}:${apiserverPort(tb.server)}`,
      ]);
    }

    const fab = this.fabricNetns;
    await ip(['netns', 'add', fab]);
    await ip(['-n', fab, 'link', 'set', 'lo', 'up']);
    await ip(['-n', fab, 'link', 'add', 'br0', 'type', 'bridge']);
    await ip(['-n', fab, 'link', 'set', 'br0', 'up']);

    const nodes = (await tb.client.list('/api/v1/nodes')).items as KubeObject[];
    nodes.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    for (const node of nodes) await this.#addNode(node);
    if (this.controlPlaneNetns) await this.#addControlPlane(this.controlPlaneNetns);
    this.#log(`namespaces for ${this.#nodes.size} nodes (${Date.now() - t0} ms)`);
    for (const n of this.#nodes.values()) this.#startKubeProxy(n);
    await Promise.all([...this.#nodes.values()].map((n) => this.#waitProxyHealthy(n)));
    this.#log(`kube-proxy (${this.proxyMode}) healthy on ${this.#nodes.size} nodes (${Date.now() - t0} ms)`);
  }

  /** Attaches `netns` to the fabric with `addr` on its eth0 (veth `name` in the fabric netns). */
  async #attach(netns: string, name: string, addr: string): Promise<void> {
    await ip(['netns', 'add', netns]);
    await ip(['-n', netns, 'link', 'set', 'lo', 'up']);
    await ip(['-n', this.fabricNetns, 'link', 'add', name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    await ip(['-n', this.fabricNetns, 'link', 'set', name, 'master', 'br0', 'up']);
    await ip(['-n', netns, 'addr', 'add', `${addr}/${FABRIC_CIDR.split('/')[1]}`, 'dev', 'eth0']);
    await ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
  }

  async #addNode(node: KubeObject): Promise<void> {
    const index = this.#nodes.size;
    const n: NodeNet = { name: node.metadata.name, index, netns: `${this.prefix}n${index}`, fabricIP: fabricIP(index) };
    this.#nodes.set(n.name, n);
    await this.#attach(n.netns, `n${index}`, n.fabricIP);
    // the pods' gateway is a local address of the node netns: it answers their ARP on every veth
    await ip(['-n', n.netns, 'addr', 'add', `${POD_GATEWAY}/32`, 'dev', 'lo']);
    await this.#sysctl(n.netns, 'net.ipv4.ip_forward', '1');
    this.#spawn(`fwd-${n.name}`, n.netns, join(this.binDir, 'dpnet'), [
      'fwd',
      '-listen',
      `tcp:127.0.0.1:${NETNS_APISERVER_PORT}`,
      '-to',
      `unix:${this.apiserverSocket}`,
    ]);
  }

  /**
   * The control-plane netns: APISERVER_FABRIC_IP on the fabric, a forwarder from <it>:<apiserver port> (the
   * port the `kubernetes` EndpointSlice names) to the apiserver. Its routes to pods come from #routeEverywhere.
   */
  async #addControlPlane(netns: string): Promise<void> {
    const addrs = this.tb.apiserverAdvertiseAddresses;
    await this.#attach(netns, 'cp', addrs[0]!);
    for (const a of addrs.slice(1)) await ip(['-n', netns, 'addr', 'add', `${a}/${FABRIC_CIDR.split('/')[1]}`, 'dev', 'eth0']);
    for (const [i, a] of addrs.entries()) {
      const fwd = this.#spawn(i === 0 ? 'fwd-control-plane' : `fwd-control-plane-${i}`, netns, join(this.binDir, 'dpnet'), [
        'fwd',
        '-listen',
        `tcp:${a}:${apiserverPort(this.tb.server)}`,
        '-to',
        `unix:${this.#apiserverSocketOf(i)}`,
      ]);
      const r = await this.exec(netns, join(this.binDir, 'dpnet'), ['wait', '-timeout', '10s', `tcp:${a}:${apiserverPort(this.tb.server)}`]);
      if (r.code !== 0) throw new Error(`the control-plane forwarder for ${a} does not listen: ${r.stderr.trim()}\n${fwd.logTail(20)}`);
    }
  }

  #apiserverSocketOf(i: number): string {
    return i === 0 ? this.apiserverSocket : join(this.stateDir, `apiserver-${i}.sock`);
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
      `--v=${process.env.KUBE_RENUMBER_PROXY_VERBOSITY ?? '2'}`,
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

  /** Fabric address of a Node's netns (172.31.255.<i+1>): kube-proxy's --bind-address, where it serves NodePorts. */
  nodeFabricIP(node: string): string {
    const n = this.#nodes.get(node);
    if (!n) throw new Error(`node ${node} is not part of the data plane`);
    return n.fabricIP;
  }

  /** Netns name of a wired (not lingering) pod, or undefined. */
  podNetns(pod: PodRef): string | undefined {
    return this.#pods.get(`${pod.namespace}/${pod.name}`)?.netns;
  }

  static #report(pn: PodNet): WiredPod {
    const { namespace, name, uid, ip: podIP, node, netns, role, wiredAt, servingAt, lingeringSince } = pn;
    return { namespace, name, uid, ip: podIP, node, netns, role, wiredAt, servingAt, lingeringSince };
  }

  /** The wired pods (lingering ones not included). */
  pods(): WiredPod[] {
    // only pods whose wiring is complete: a pod being added is in #pods before its netns exists (a prober started in
    // it then failed with "setting the network namespace … failed: Invalid argument")
    return [...this.#pods.values()].filter((pn) => pn.wiredAt > 0).map(Dataplane.#report);
  }

  /** Pods deleted from the cluster whose netns and process stay until their grace period ends. */
  lingering(): WiredPod[] {
    return [...this.#lingering].map(Dataplane.#report);
  }

  /** Runs `fn` after every queued syncPods / removal; nothing runs once stopped. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#queue.then(() => fn());
    this.#queue = p.catch(() => {});
    return p;
  }

  /**
   * Gives every Running pod with an IP on a wired node, without deletionTimestamp, its netns and its process
   * (a dpnet HTTP server on each containerPort, default 8080, answering "<namespace>/<name>"; CoreDNS for
   * k8s-app=kube-dns pods). Pods already wired are kept. Pods gone, being deleted, or with another uid/IP
   * linger for terminationGraceMs (netns and process kept, then removed). For pods with the SERVING_GATE
   * readiness gate, a background check sets the gate and Ready to True once the process answers.
   * Serialised with follow()'s calls. `removed` counts pods that stopped being wired (now lingering or gone).
   */
  syncPods(): Promise<{ added: number; removed: number }> {
    return this.#serial(() => this.#sync());
  }

  async #sync(): Promise<{ added: number; removed: number }> {
    if (this.#stopped) return { added: 0, removed: 0 };
    const list = (await this.tb.client.list('/api/v1/pods')).items as KubeObject[];
    if (this.#stopped) return { added: 0, removed: 0 };
    const want = new Map<string, KubeObject>();
    for (const p of list) {
      if (p.status?.phase !== 'Running' || !p.status?.podIP || !this.#nodes.has(p.spec?.nodeName)) continue;
      if (p.spec?.hostNetwork || p.metadata.deletionTimestamp) continue;
      want.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    }
    this.#claimedIps = new Set([...want.values()].map((p) => p.status.podIP as string));
    let removed = 0;
    for (const [key, pn] of this.#pods) {
      const p = want.get(key);
      if (!p || p.metadata.uid !== pn.uid || p.status.podIP !== pn.ip) {
        await this.#unwire(pn);
        removed++;
      }
    }
    let added = 0;
    for (const [key, p] of want) {
      if (this.#pods.has(key)) continue;
      // kwok hands out the IP of a deleted pod again at once, while that pod still lingers (terminates). A real
      // CNI frees an address only when the old sandbox is torn down, so the new pod starts (and becomes Ready)
      // once the lingering one is gone: wired by the first sync after it.
      if ([...this.#lingering].some((l) => l.ip === p.status.podIP)) continue;
      await this.#addPod(p);
      added++;
    }
    return { added, removed };
  }

  /** A pod stopped being wanted: it lingers for the grace period (or goes at once with 0). */
  async #unwire(pn: PodNet): Promise<void> {
    if (this.#pods.get(pn.key) === pn) this.#pods.delete(pn.key);
    if (this.terminationGraceMs <= 0) {
      await this.#removePod(pn);
      return;
    }
    pn.lingeringSince = Date.now();
    this.#lingering.add(pn);
    this.#log(`${pn.key} (${pn.ip}) lingers for ${this.terminationGraceMs} ms`);
    pn.timer = setTimeout(() => this.#endLinger(pn), this.terminationGraceMs);
    pn.timer.unref();
  }

  /**
   * The grace period is over: the pod goes, unless a node's kube-proxy still DNATs to its IP (kube-proxy or
   * the EndpointSlice controller is slow, e.g. on a loaded machine). Then it stays, checked again every
   * LINGER_RECHECK_MS, up to LINGER_MAX_EXTRA_MS more: like a preStop hook that waits until the endpoint is
   * drained, within a pod's terminationGracePeriodSeconds (30 s by default).
   */
  #endLinger(pn: PodNet): void {
    this.#serial(async () => {
      if (pn.removed || this.#stopped) return;
      const extra = Date.now() - pn.lingeringSince! - this.terminationGraceMs;
      const capped = extra >= LINGER_MAX_EXTRA_MS;
      // an IP a newer pod holds (kwok hands freed IPs out again at once) is routed for that pod, not this one
      const routing = !capped && !this.#claimedIps.has(pn.ip) ? await this.#nodesRoutingTo(pn.ip) : [];
      if (routing.length > 0) {
        if (!pn.heldBy) this.#log(`${pn.key} (${pn.ip}) still routed to by kube-proxy on ${routing.join(', ')} after its grace period: kept until it is not`);
        pn.heldBy = routing;
        pn.timer = setTimeout(() => this.#endLinger(pn), LINGER_RECHECK_MS);
        pn.timer.unref();
        return;
      }
      if (pn.heldBy) {
        this.#log(capped
          ? `${pn.key} (${pn.ip}) removed ${extra} ms past its grace period, the most it is kept, though kube-proxy on ${pn.heldBy.join(', ')} last routed to it`
          : `${pn.key} (${pn.ip}) kept ${extra} ms past its grace period until kube-proxy on ${pn.heldBy.join(', ')} stopped routing to it`);
      }
      await this.#removePod(pn);
    }).catch((e) => this.#log(`removing ${pn.key}: ${e instanceof Error ? e.message : e}`));
  }

  /** Nodes whose kube-proxy sends some Service's new connections to `podIP` now. */
  async #nodesRoutingTo(podIP: string): Promise<string[]> {
    const nodes = [...this.#nodes.keys()];
    const rules = await Promise.all(nodes.map((n) => this.proxyRules(n).catch(() => '')));
    return nodes.filter((_, i) => routedEndpointIps(rules[i]!, this.proxyMode).has(podIP));
  }

  /** The other namespaces that route to pods by /32 via their node: every other node, the control plane. */
  #routers(exceptNode: string): string[] {
    const out = [...this.#nodes.values()].filter((n) => n.name !== exceptNode).map((n) => n.netns);
    if (this.controlPlaneNetns) out.push(this.controlPlaneNetns);
    return out;
  }

  /** `addr`/32 via `node`'s fabric address in every other node netns and the control-plane netns. */
  async #routeEverywhere(addr: string, node: NodeNet): Promise<void> {
    await Promise.all(this.#routers(node.name).map((ns) => ip(['-n', ns, 'route', 'replace', `${addr}/32`, 'via', node.fabricIP, 'dev', 'eth0'])));
  }

  /** Wires a pod; on failure what was set up is removed again, so the next syncPods tries anew. */
  async #addPod(p: KubeObject): Promise<void> {
    const k = this.#podCounter++;
    try {
      await this.#wirePod(p, k);
    } catch (e) {
      const pn = this.#pods.get(`${p.metadata.namespace}/${p.metadata.name}`);
      if (pn && pn.netns === `${this.prefix}p${k}`) await this.#removePod(pn).catch(() => {});
      throw e;
    }
  }

  async #wirePod(p: KubeObject, k: number): Promise<void> {
    const node = this.#nodes.get(p.spec.nodeName)!;
    const labels = p.metadata.labels ?? {};
    const role = labels['k8s-app'] === 'kube-dns' ? 'coredns' : 'server';
    const ports = new Set<number>();
    if (role === 'server') {
      for (const c of p.spec.containers ?? []) for (const cp of c.ports ?? []) if ((cp.protocol ?? 'TCP') === 'TCP') ports.add(cp.containerPort);
      if (ports.size === 0) ports.add(8080);
    }
    const pn: PodNet = {
      key: `${p.metadata.namespace}/${p.metadata.name}`,
      namespace: p.metadata.namespace ?? 'default',
      name: p.metadata.name,
      uid: p.metadata.uid ?? '',
      ip: p.status.podIP,
      node: node.name,
      netns: `${this.prefix}p${k}`,
      hostVeth: `v${k}`,
      role,
      ports: [...ports],
      procs: [],
      gated: (p.spec.readinessGates ?? []).some((g: { conditionType?: string }) => g.conditionType === SERVING_GATE),
      wiredAt: 0,
      removed: false,
    };
    this.#pods.set(pn.key, pn);
    const N = node.netns;
    const P = pn.netns;
    await ip(['netns', 'add', P]);
    await ip(['-n', P, 'link', 'set', 'lo', 'up']);
    await ip(['-n', N, 'link', 'add', pn.hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', P]);
    await ip(['-n', N, 'link', 'set', pn.hostVeth, 'up']);
    await ip(['-n', P, 'addr', 'add', `${pn.ip}/32`, 'dev', 'eth0']);
    await ip(['-n', P, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', P, 'route', 'add', POD_GATEWAY, 'dev', 'eth0', 'scope', 'link']);
    await ip(['-n', P, 'route', 'add', 'default', 'via', POD_GATEWAY, 'dev', 'eth0']);
    if (pn.role === 'coredns') {
      this.#spawn(
        `p${k}-fwd-${pn.namespace}-${pn.name}`,
        P,
        join(this.binDir, 'dpnet'),
        ['fwd', '-listen', `tcp:127.0.0.1:${NETNS_APISERVER_PORT}`, '-to', `unix:${this.apiserverSocket}`],
        pn.procs,
      );
      const corefile = join(this.stateDir, `Corefile-p${k}`);
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
      this.#spawn(`p${k}-coredns-${pn.name}`, P, join(this.binDir, 'coredns'), ['-conf', corefile], pn.procs);
    } else {
      for (const port of pn.ports) {
        this.#spawn(
          `p${k}-pod-${pn.namespace}-${pn.name}-${port}`,
          P,
          join(this.binDir, 'dpnet'),
          ['serve', '-listen', `0.0.0.0:${port}`, '-name', pn.key],
          pn.procs,
        );
      }
    }
    // routes last: the pod is reachable once its side is complete (#sync never wires a pod whose IP a
    // lingering pod still holds)
    await ip(['-n', N, 'route', 'replace', `${pn.ip}/32`, 'dev', pn.hostVeth]);
    await this.#routeEverywhere(pn.ip, node);
    pn.wiredAt = Date.now();
    if (pn.gated) this.#checkServing(pn, p);
  }

  /** Gated pod: waits until its process answers, then sets the gate's condition and Ready to True. */
  #checkServing(pn: PodNet, p: KubeObject): void {
    const conds: { type: string; status: string }[] = p.status?.conditions ?? [];
    const isTrue = (t: string) => conds.some((c) => c.type === t && c.status === 'True');
    const targets = pn.role === 'coredns' ? ['http://127.0.0.1:8181/ready'] : pn.ports.map((port) => `tcp:127.0.0.1:${port}`);
    const task = (async () => {
      const r = await this.exec(pn.netns, join(this.binDir, 'dpnet'), ['wait', '-timeout', '120s', ...targets], 130_000);
      if (pn.removed || this.#stopped) return;
      if (r.code !== 0) {
        process.stderr.write(`[dataplane] ${pn.key} does not answer, left not Ready: ${r.stderr.trim()}\n`);
        return;
      }
      pn.servingAt = Date.now();
      if (isTrue(SERVING_GATE) && isTrue('Ready')) return; // already set (e.g. by an earlier data plane)
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      // metadata.uid: a precondition, so a newer pod of the same name is not marked
      const res = await this.tb.client.raw(
        'PATCH',
        `/api/v1/namespaces/${pn.namespace}/pods/${pn.name}/status`,
        {
          metadata: { uid: pn.uid },
          status: {
            conditions: [
              { type: SERVING_GATE, status: 'True', lastTransitionTime: now },
              { type: 'Ready', status: 'True', lastTransitionTime: now },
            ],
          },
        },
        'application/strategic-merge-patch+json',
      );
      if (res.status === 200) this.#log(`${pn.key} serving: Ready after ${pn.servingAt - pn.wiredAt} ms`);
      // 404: gone; 422 "metadata.uid … immutable": a newer pod of that name (the precondition did its job)
      else if (res.status !== 404 && !(res.status === 422 && res.text.includes('metadata.uid')) && !pn.removed) {
        process.stderr.write(`[dataplane] setting ${pn.key} Ready failed: ${res.status} ${res.text.slice(0, 300)}\n`);
      }
    })().catch((e) => {
      if (!this.#stopped) process.stderr.write(`[dataplane] readiness of ${pn.key}: ${e instanceof Error ? e.message : e}\n`);
    });
    this.#probes.add(task);
    void task.finally(() => this.#probes.delete(task));
  }

  /** Stops a pod's processes and deletes its netns and routes. */
  async #removePod(pn: PodNet): Promise<void> {
    if (pn.removed) return;
    pn.removed = true;
    clearTimeout(pn.timer);
    this.#lingering.delete(pn);
    if (this.#pods.get(pn.key) === pn) this.#pods.delete(pn.key);
    await Promise.all(pn.procs.map((p) => p.stop()));
    const node = this.#nodes.get(pn.node)!;
    await run('ip', ['-n', node.netns, 'route', 'del', `${pn.ip}/32`, 'dev', pn.hostVeth]);
    // only the route via this pod's node: a pod with the same IP on another node keeps its own
    await Promise.all(this.#routers(node.name).map((ns) => run('ip', ['-n', ns, 'route', 'del', `${pn.ip}/32`, 'via', node.fabricIP, 'dev', 'eth0'])));
    await deleteNetns([pn.netns]); // deleting the netns deletes the veth pair
    this.#log(`${pn.key} (${pn.ip}) removed`);
  }

  /**
   * Runs syncPods every `intervalMs` in the background (one at a time, serialised with other syncPods
   * calls; errors are written to stderr, once per distinct message) until unfollow() or stop().
   */
  follow(intervalMs = 100): void {
    if (this.#stopped) throw new Error('the data plane is stopped');
    if (this.#follow) return;
    this.#follow = new FollowLoop(() => this.syncPods(), intervalMs, '[dataplane] follow: syncPods failed: ');
  }

  /** Stops the follow() loop and waits for its current syncPods to end. */
  async unfollow(): Promise<void> {
    const f = this.#follow;
    if (!f) return;
    this.#follow = undefined;
    await f.stop();
  }

  /** True while follow() runs. */
  get following(): boolean {
    return this.#follow !== undefined;
  }

  /**
   * A netns attached to a node the way a pod is (veth, default route via the node netns, so its packets pass
   * the node's kube-proxy rules) but not backed by any Pod object: a client that outlives every pod restart
   * of a migration. Address 172.31.254.<k>/32 (CLIENT_CIDR); every other node (and the control-plane netns)
   * routes it via the node. Deleted by stop().
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
    await this.#routeEverywhere(addr, n);
    return { netns: P, ip: addr };
  }

  /** Waits until CoreDNS of every wired kube-dns pod reports ready (/ready on 127.0.0.1:8181 in its netns). */
  async waitCoreDNSReady(timeoutMs = 60_000): Promise<void> {
    const dns = [...this.#pods.values()].filter((p) => p.role === 'coredns');
    if (dns.length === 0) throw new Error('no kube-dns pod is wired (deployCoreDNS, then syncPods)');
    const deadline = Date.now() + timeoutMs;
    for (const pn of dns) {
      const proc = pn.procs.find((p) => p.name.includes('-coredns-'))!;
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

  /** One HTTP GET from inside a pod's netns (`-k`: https without verifying the certificate). */
  get(from: PodRef, url: string, timeoutMs = 3000, opts: { insecure?: boolean } = {}): Promise<ExecResult> {
    const args = ['get', '-timeout', `${timeoutMs}ms`, ...(opts.insecure ? ['-k'] : []), url];
    return this.exec(this.#pod(from).netns, join(this.binDir, 'dpnet'), args, timeoutMs + 5000);
  }

  /**
   * One TLS handshake from inside a pod's netns to `hostPort` (certificate not verified); stdout has lines
   * version=…, subject=…, dns=…, ips=… of the server certificate.
   */
  tls(from: PodRef, hostPort: string, timeoutMs = 3000): Promise<ExecResult> {
    return this.exec(this.#pod(from).netns, join(this.binDir, 'dpnet'), ['tls', '-timeout', `${timeoutMs}ms`, hostPort], timeoutMs + 5000);
  }

  /** Resolves a name from inside a pod's netns through the DNS server at `server` (port 53). */
  resolve(from: PodRef, name: string, server: string, timeoutMs = 3000): Promise<ExecResult> {
    return this.exec(this.#pod(from).netns, join(this.binDir, 'dpnet'), ['resolve', '-server', `${server}:53`, '-timeout', `${timeoutMs}ms`, name], timeoutMs + 5000);
  }

  /** `iptables-save -t nat` of a node netns (the rules kube-proxy wrote in iptables mode). */
  async natRules(node: string): Promise<string> {
    return (await this.exec(this.nodeNetns(node), 'iptables-save', ['-t', 'nat'])).stdout;
  }

  /** `nft list table ip kube-proxy` of a node netns (the rules kube-proxy wrote in nftables mode). */
  async nftRules(node: string): Promise<string> {
    return (await this.exec(this.nodeNetns(node), 'nft', ['list', 'table', 'ip', 'kube-proxy'])).stdout;
  }

  /** The rules of this data plane's proxy mode: natRules or nftRules. */
  proxyRules(node: string): Promise<string> {
    return this.proxyMode === 'nftables' ? this.nftRules(node) : this.natRules(node);
  }

  /**
   * Waits until kube-proxy on every node routes each `ip:port/protocol` to endpoints: a `KUBE-SERVICES … -j KUBE-SVC-`
   * rule (iptables) or a `service-ips` map element (nftables). Ready endpoints alone do not say the rules are written;
   * a client started in between gets ENETUNREACH or a refusal.
   */
  async waitServicesProgrammed(targets: { ip: string; port: number; protocol?: 'tcp' | 'udp' }[], timeoutMs = 60_000): Promise<void> {
    const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const patterns = targets.map((t) => {
      const proto = t.protocol ?? 'tcp';
      return {
        t,
        re: this.proxyMode === 'nftables'
          ? new RegExp(`${esc(t.ip)} \\. ${proto} \\. ${t.port} : goto service-`)
          : new RegExp(`-A KUBE-SERVICES -d ${esc(t.ip)}/32 -p ${proto} .*--dport ${t.port} -j KUBE-SVC-`),
      };
    });
    const deadline = Date.now() + timeoutMs;
    let missing: string[] = [];
    for (;;) {
      missing = [];
      for (const node of this.#nodes.keys()) {
        const rules = await this.proxyRules(node);
        for (const { t, re } of patterns) if (!re.test(rules)) missing.push(`${node}: ${t.ip}:${t.port}/${t.protocol ?? 'tcp'}`);
      }
      if (missing.length === 0) return;
      if (Date.now() > deadline) throw new Error(`kube-proxy did not program ${missing.length} Service port(s) in ${timeoutMs} ms, e.g. ${missing.slice(0, 3).join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /**
   * Waits until kube-proxy on every node serves each node port: a `KUBE-NODEPORTS … --dport N -j KUBE-EXT-` rule
   * (iptables) or a `service-nodeports` map element (nftables).
   */
  async waitNodePortsProgrammed(ports: { port: number; protocol?: 'tcp' | 'udp' }[], timeoutMs = 60_000): Promise<void> {
    const patterns = ports.map((t) => {
      const proto = t.protocol ?? 'tcp';
      return {
        t,
        re: this.proxyMode === 'nftables'
          ? new RegExp(`\\b${proto} \\. ${t.port} : goto external-`)
          : new RegExp(`-A KUBE-NODEPORTS .*-p ${proto} .*--dport ${t.port} -j KUBE-EXT-`),
      };
    });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const missing: string[] = [];
      for (const node of this.#nodes.keys()) {
        const rules = await this.proxyRules(node);
        for (const { t, re } of patterns) if (!re.test(rules)) missing.push(`${node}: node port ${t.port}/${t.protocol ?? 'tcp'}`);
      }
      if (missing.length === 0) return;
      if (Date.now() > deadline) throw new Error(`kube-proxy did not program ${missing.length} node port(s) in ${timeoutMs} ms, e.g. ${missing.slice(0, 3).join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Names of the namespaces of this data plane that exist now. */
  async namespaces(): Promise<string[]> {
    return (await listNetns()).filter((n) => n.startsWith(this.prefix));
  }

  /** Progress messages since `since` (epoch ms), oldest first: pods serving, lingering, held, removed. */
  events(since = 0): { at: number; msg: string }[] {
    return this.#events.filter((e) => e.at >= since);
  }

  /** Log tails of every process (for failure messages). */
  logTails(lines = 15): string {
    const pods = [...this.#pods.values(), ...this.#lingering].flatMap((pn) => pn.procs);
    return [...this.#procs, ...pods].map((p) => p.logTail(lines)).join('\n');
  }

  /** Stops follow(), every process (lingering pods' too) and deletes every netns of this data plane. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.unfollow();
    this.#stopped = true;
    await this.#serial(async () => {}); // a syncPods or removal under way ends first
    const pods = [...this.#pods.values(), ...this.#lingering];
    for (const pn of pods) {
      pn.removed = true;
      clearTimeout(pn.timer);
    }
    this.#pods.clear();
    this.#lingering.clear();
    await Promise.all([...this.#procs, ...pods.flatMap((pn) => pn.procs)].map((p) => p.stop()));
    this.#procs = [];
    await deleteNetns(await this.namespaces()); // also kills readiness checks running in pod namespaces
    await Promise.all([...this.#probes]);
    if (process.env.KUBE_RENUMBER_TESTBED_KEEP !== '1') await rm(this.stateDir, { recursive: true, force: true });
  }
}

/**
 * Creates (in kube-system) the kube-dns Service at `clusterIP` (53/UDP, 53/TCP, selector
 * k8s-app=kube-dns) and a Pod `coredns` with that label, and waits until the pod is Running with an IP.
 * `Dataplane.syncPods()` then runs the real CoreDNS in that pod's netns, and the EndpointSlice
 * controller points the Service at it. `servingGate` (default true): the pod carries SERVING_GATE, so it is
 * Ready (and the kube-dns endpoint ready) only once CoreDNS answers /ready in its netns.
 */
export async function deployCoreDNS(
  tb: Testbed,
  opts: { clusterIP: string; node?: string; timeoutMs?: number; servingGate?: boolean },
): Promise<KubeObject> {
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
      ...(opts.servingGate === false ? {} : { readinessGates: [{ conditionType: SERVING_GATE }] }),
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
