// Calico's own node agent in the data plane's node network namespaces (issue 49): for every node of a running
// Dataplane, what the calico/node image does at start (node/filesystem/etc/rc.local of the Calico monorepo), with
// the binary calico-build.ts builds from the same module as calico-ipam (calico-node, CGO_ENABLED=0):
//
//   calico-node -startup                                         the node's IPv4Address (IP=<fabric address>/24),
//                                                                ClusterInformation, FelixConfiguration default
//   calico-node -allocate-tunnel-addrs -allocate-tunnel-addrs-run-once   the VXLAN tunnel address, from IPAM
//   calico-node -felix                                           felix (supervised), iptables data plane
//   calico-node -allocate-tunnel-addrs                           the allocator as a daemon (supervised)
//
// with the environment of Calico's calico-vxlan.yaml manifest (CALICO_NETWORKING_BACKEND=vxlan, so no BIRD and no
// confd; FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT, FELIX_IPV6SUPPORT=false, FELIX_HEALTHENABLED=true,
// CALICO_DISABLE_FILE_LOGGING=true) and the image's felix.cfg as FELIX_* variables (no log file, no syslog, no
// metadata address). The kubernetes datastore: DATASTORE_TYPE=kubernetes, KUBECONFIG = the data plane's netns
// kubeconfig (https://127.0.0.1:6443, a forwarder in the node netns to the apiserver, as kube-proxy reaches it).
// NO_DEFAULT_POOLS=true: the test creates the IPPool (vxlanMode Always). Felix's usage reporting is off (no traffic
// leaves the namespaces), its health server listens on 127.0.0.1:9099 of the node netns.
//
// Files: a calico/node container has the host's /var/lib/calico mounted (nodename, felix's mtu file). Here every
// node has <data plane state>/calico/<node>/var-lib, bind-mounted on /var/lib inside the mount namespace `ip netns
// exec` gives each of the node's processes (iproute2 makes / a slave there: the host's /var/lib is not touched).
//
// Pods (the kubelet's part, for a testbed started with calicoCniDriver: false): syncPods() / follow() give every pod
// bound to one of these nodes, not hostNetwork, not being deleted, a network namespace <prefix>w<k> and run Calico's
// CNI plugin (cni-plugin/cmd/calico, the calico-ipam binary run under the name `calico`) for it in the node netns, as
// the kubelet's CNI runtime does: CNI_COMMAND=ADD, CNI_NETNS=/var/run/netns/<pod netns>, the network configuration of
// calico-vxlan.yaml's cni_network_config (type calico, ipam calico-ipam, policy k8s, kubernetes datastore) on stdin.
// The plugin takes an address from Calico's IPAM, creates the veth cali<hash> (eth0 in the pod netns, /32, default
// route via 169.254.1.1), its /32 route in the node netns, and writes the WorkloadEndpoint, which on the kubernetes
// datastore is the pod's cni.projectcalico.org/podIP, podIPs and containerID annotations; felix programs the endpoint
// from them. Then the address goes onto the testbed's annotation kwok copies into status.podIP, and a dpnet HTTP
// server answers "<namespace>/<name>" on each TCP containerPort (default 8080) inside the pod netns. A pod that gets
// a deletionTimestamp or disappears: its servers stop, CNI DEL (the address back to IPAM, the veth gone), netns deleted.
//
//   const cn = await CalicoNodes.start(dp);     // needs an IPPool with vxlanMode Always for the tunnel address
//   cn.tunnelAddress('tb-node-0')               // from the Node's projectcalico.org/IPv4VXLANTunnelAddr
//   cn.follow();                                // pods through the calico CNI plugin, every 200 ms
//   await cn.get({ namespace, name }, url);     // one HTTP GET from inside a pod's netns
//   await cn.stop();                            // pods' CNI DEL, then felix and the allocators stopped

import { FollowLoop } from './follow-loop.ts';
import { pluginError } from './calico-cni.ts';
import { spawn } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { calicoBinary, ensureCalicoBuilt, ensureCalicoDataplaneBuilt } from './calico-build.ts';
import { NETWORK_NAME, resultIPv4 } from './calico-cni.ts';
import type { ExecResult, Proc } from './cluster.ts';
import { CALICO_DATAPLANE_PACKAGES, ensureHostPackages } from './dataplane-build.ts';
import type { Dataplane, PodRef } from './dataplane.ts';
import { ApiError, type KubeObject } from './kube.ts';
import { POD_IP_ANNOTATION } from './stages.ts';

/** Node annotations Calico's kubernetes datastore keeps a Calico Node's fields in (libcalico-go resources/node). */
export const IPV4_ADDRESS_ANNOTATION = 'projectcalico.org/IPv4Address';
export const VXLAN_TUNNEL_ADDR_ANNOTATION = 'projectcalico.org/IPv4VXLANTunnelAddr';
const CALICO = '/apis/crd.projectcalico.org/v1';
/** The commit of CALICO_VERSION as Calico's own build names it (node/Makefile's GIT_VERSION: git describe --tags). */
export const CALICO_RELEASE = 'v3.28.4-11-ga0db560f0520';
/** The interface felix creates for VXLAN (felix/dataplane/linux: VXLANIfaceNameV4 default). */
export const VXLAN_IFACE = 'vxlan.calico';
/** Felix's health port (FelixConfiguration healthPort default), on 127.0.0.1 of each node netns. */
export const FELIX_HEALTH_PORT = 9099;

export interface CalicoNodesOptions {
  /** Felix's iptables backend (FELIX_IPTABLESBACKEND; default nft, what Debian's iptables, and so kube-proxy, uses). */
  iptablesBackend?: 'nft' | 'legacy';
  /** Felix's log level on stdout (default info). */
  logSeverity?: 'debug' | 'info' | 'warning';
  /** Time for start-up, tunnel address and felix's readiness per node, ms (default 180 s). */
  timeoutMs?: number;
  log?: (msg: string) => void;
}

/** A pod whose network the calico CNI plugin set up. */
export interface CalicoPod {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  netns: string;
  ip: string;
  /** The host-side veth the plugin created (cali<hash>), from its result. */
  iface: string;
  /** Milliseconds the plugin's ADD took. */
  addMs: number;
}

interface PodEntry extends CalicoPod {
  key: string;
  procs: Proc[];
}

interface CalicoNode {
  name: string;
  netns: string;
  fabricIP: string;
  varLib: string;
  procs: Proc[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CalicoNodes {
  readonly dp: Dataplane;
  readonly binary: string;
  readonly #opts: CalicoNodesOptions;
  readonly #log: (m: string) => void;
  #nodes = new Map<string, CalicoNode>();
  /** Milliseconds from start() to each node's felix reporting ready. */
  readonly readyMs = new Map<string, number>();
  /** Pods with a network, by uid. */
  #pods = new Map<string, PodEntry>();
  #podCounter = 0;
  /** CNI_PATH: `calico` and `calico-ipam`, both Calico's cni-plugin/cmd/calico binary. */
  #cniDir = '';
  #queue: Promise<unknown> = Promise.resolve();
  #follow: FollowLoop | undefined;
  #lastAddError = '';
  #stopped = false;
  /** Plugin runs and their failures. */
  readonly stats = { adds: 0, dels: 0, failures: 0, addMs: 0 };

  private constructor(dp: Dataplane, binary: string, opts: CalicoNodesOptions) {
    this.dp = dp;
    this.binary = binary;
    this.#opts = opts;
    this.#log = opts.log ?? (process.env.KUBE_RENUMBER_TESTBED_VERBOSE === '1' ? (m) => process.stderr.write(`[calico-node] ${m}\n`) : () => {});
  }

  /** Builds calico-node if needed, installs ipset and conntrack if missing, and starts Calico on every node of `dp`. */
  static async start(dp: Dataplane, opts: CalicoNodesOptions = {}): Promise<CalicoNodes> {
    const log = (m: string) => process.stderr.write(`[calico-node] ${m}\n`);
    const dir = await ensureCalicoDataplaneBuilt({ log });
    if (process.getuid?.() === 0) await ensureHostPackages(log, CALICO_DATAPLANE_PACKAGES);
    const cn = new CalicoNodes(dp, join(dir, 'bin', 'calico-node'), opts);
    await ensureCalicoBuilt({ log });
    cn.#cniDir = join(dp.stateDir, 'calico', 'cni-bin');
    await mkdir(cn.#cniDir, { recursive: true });
    for (const name of ['calico', 'calico-ipam']) await symlink(calicoBinary('calico-ipam')!, join(cn.#cniDir, name));
    const t0 = Date.now();
    // start-ups one node at a time (see #startup), then the rest of every node at once
    const started: Promise<void>[] = [];
    for (const n of dp.nodes()) {
      const node = await cn.#startup(n);
      started.push(cn.#startNode(node, t0));
    }
    await Promise.all(started);
    return cn;
  }

  /** The environment of one node's calico-node processes (calico-vxlan.yaml's calico-node container, felix.cfg). */
  env(node: { name: string; fabricIP: string }): Record<string, string> {
    return {
      NODENAME: node.name,
      DATASTORE_TYPE: 'kubernetes',
      KUBECONFIG: this.dp.netnsKubeconfig,
      WAIT_FOR_DATASTORE: 'true',
      CALICO_NETWORKING_BACKEND: 'vxlan',
      CLUSTER_TYPE: 'k8s',
      IP: `${node.fabricIP}/24`,
      NO_DEFAULT_POOLS: 'true',
      CALICO_DISABLE_FILE_LOGGING: 'true',
      CALICO_STARTUP_LOGLEVEL: 'info',
      // felix/run of the image: felix does not read NODENAME / DATASTORE_TYPE
      FELIX_FELIXHOSTNAME: node.name,
      FELIX_DATASTORETYPE: 'kubernetes',
      FELIX_DEFAULTENDPOINTTOHOSTACTION: 'ACCEPT',
      FELIX_IPV6SUPPORT: 'false',
      FELIX_HEALTHENABLED: 'true',
      FELIX_HEALTHHOST: '127.0.0.1',
      FELIX_HEALTHPORT: String(FELIX_HEALTH_PORT),
      // the image's /etc/calico/felix.cfg
      FELIX_METADATAADDR: 'none',
      FELIX_LOGFILEPATH: 'none',
      FELIX_LOGSEVERITYFILE: 'none',
      FELIX_LOGSEVERITYSYS: 'none',
      FELIX_LOGSEVERITYSCREEN: this.#opts.logSeverity ?? 'info',
      FELIX_USAGEREPORTINGENABLED: 'false',
      FELIX_IPTABLESBACKEND: this.#opts.iptablesBackend ?? 'nft',
    };
  }

  /** Arguments for `ip netns exec <netns> …`: calico-node with the node's /var/lib bound on /var/lib. */
  #wrapped(varLib: string, args: string[]): string[] {
    return ['sh', '-c', 'mount --bind "$0" /var/lib && exec "$@"', varLib, this.binary, ...args];
  }

  async #oneShot(n: CalicoNode, what: string, args: string[], env: Record<string, string>, timeoutMs: number): Promise<void> {
    const [cmd, ...rest] = this.#wrapped(n.varLib, args);
    const p = this.dp.spawnIn(n.netns, `calico-${what}-${n.name}`, cmd!, rest, env);
    const t = Date.now();
    const code = await Promise.race([p.exited, sleep(timeoutMs).then(() => undefined)]);
    if (code === undefined) {
      await p.stop();
      throw new Error(`calico-node ${args.join(' ')} on ${n.name} did not finish in ${timeoutMs} ms\n${p.logTail(40)}`);
    }
    if (code !== 0) throw new Error(`calico-node ${args.join(' ')} on ${n.name} exited ${code}\n${p.logTail(40)}`);
    this.#log(`${n.name}: ${what} done in ${Date.now() - t} ms`);
  }

  /**
   * `calico-node -startup` on one node. Its first step (ensureKDDMigrated, libcalico-go/lib/upgrade/migrator) reads
   * ClusterInformation's calicoVersion as a semantic version and refuses any below v3 ("migration to v3 requires a
   * tagged release of Calico v2.6.5+"): the Go proxy's pseudo-version of the monorepo (v1.11.0-cni-plugin.0.…) that
   * the testbed writes there and calico-node itself writes back (its startup.VERSION, as calicoctl's) is one. So before
   * each start-up it holds CALICO_RELEASE, the `git describe` name of the same commit; the start-ups run one at a time.
   */
  async #startup(node: { name: string; netns: string; fabricIP: string }): Promise<CalicoNode> {
    const timeoutMs = this.#opts.timeoutMs ?? 180_000;
    const varLib = join(this.dp.stateDir, 'calico', node.name, 'var-lib');
    await mkdir(join(varLib, 'calico'), { recursive: true });
    const n: CalicoNode = { ...node, varLib, procs: [] };
    this.#nodes.set(n.name, n);
    const ci = `${CALICO}/clusterinformations/default`;
    await this.dp.tb.client.mergePatch(ci, { spec: { calicoVersion: CALICO_RELEASE } });
    // rc.local: start-up, then the tunnel addresses once, then the services
    await this.#oneShot(n, 'startup', ['-startup'], this.env(n), timeoutMs);
    return n;
  }

  async #startNode(n: CalicoNode, t0: number): Promise<void> {
    const timeoutMs = this.#opts.timeoutMs ?? 180_000;
    const varLib = n.varLib;
    const env = this.env(n);
    await this.#oneShot(n, 'tunnel-once', ['-allocate-tunnel-addrs', '-allocate-tunnel-addrs-run-once'], env, timeoutMs);
    for (const [what, args] of [['felix', ['-felix']], ['tunnel-addrs', ['-allocate-tunnel-addrs']]] as const) {
      const [cmd, ...rest] = this.#wrapped(varLib, [...args]);
      n.procs.push(this.dp.spawnIn(n.netns, `calico-${what}-${n.name}`, cmd!, rest, env));
    }
    const felix = n.procs[0]!;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!felix.running()) throw new Error(`felix on ${n.name} exited (${felix.exitCode})\n${felix.logTail(60)}`);
      const r = await this.dp.exec(n.netns, join(this.dp.binDir, 'dpnet'), ['get', '-timeout', '1s', `http://127.0.0.1:${FELIX_HEALTH_PORT}/readiness`]);
      if (r.code === 0) break;
      if (Date.now() > deadline) throw new Error(`felix on ${n.name} not ready after ${timeoutMs} ms: ${r.stderr.trim()}\n${felix.logTail(60)}`);
      await sleep(500);
    }
    this.readyMs.set(n.name, Date.now() - t0);
    this.#log(`${n.name}: felix ready ${Date.now() - t0} ms after start`);
  }

  /** The node's felix process. */
  felix(node: string): Proc {
    const n = this.#nodes.get(node);
    if (!n) throw new Error(`calico-node does not run on ${node}`);
    return n.procs[0]!;
  }

  /** The VXLAN tunnel address the allocator gave `node` (its Node annotation), or undefined. */
  async tunnelAddress(node: string): Promise<string | undefined> {
    const k: KubeObject = await this.dp.tb.client.get(`/api/v1/nodes/${node}`);
    return k.metadata.annotations?.[VXLAN_TUNNEL_ADDR_ANNOTATION];
  }

  /** Log tails of every calico-node process (for failure messages). */
  logTails(lines = 30): string {
    return [...this.#nodes.values()].flatMap((n) => n.procs.map((p) => p.logTail(lines))).join('\n');
  }

  /** The network configuration of a node's kubelet (calico-vxlan.yaml's cni_network_config). */
  netConf(node: string): Record<string, unknown> {
    return {
      cniVersion: '0.3.1',
      name: NETWORK_NAME,
      type: 'calico',
      log_level: 'info',
      datastore_type: 'kubernetes',
      nodename: node,
      mtu: 0, // from felix's /var/lib/calico/mtu (the manifest's __CNI_MTU__ is veth_mtu "0")
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      kubernetes: { kubeconfig: this.dp.netnsKubeconfig },
    };
  }

  /** Runs the calico CNI plugin once in `node`'s netns (its /var/lib bound), as the kubelet's CNI runtime does. */
  runPlugin(command: 'ADD' | 'DEL', pod: { uid: string; namespace: string; name: string; node: string; netns: string }): Promise<ExecResult & { ms: number }> {
    const n = this.#nodes.get(pod.node);
    if (!n) throw new Error(`calico-node does not run on ${pod.node}`);
    const env = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: command,
      CNI_CONTAINERID: pod.uid,
      CNI_NETNS: `/var/run/netns/${pod.netns}`,
      CNI_IFNAME: 'eth0',
      CNI_PATH: this.#cniDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${pod.uid};K8S_POD_UID=${pod.uid}`,
    };
    const args = ['netns', 'exec', n.netns, 'sh', '-c', 'mount --bind "$0" /var/lib && exec "$@"', n.varLib, join(this.#cniDir, 'calico')];
    const t0 = Date.now();
    return new Promise((resolve) => {
      const p = spawn('ip', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      p.on('error', (e) => {
        clearTimeout(timer);
        resolve({ code: 127, stdout, stderr: stderr + String(e), ms: Date.now() - t0 });
      });
      p.on('close', (c, sig) => {
        clearTimeout(timer);
        resolve({ code: c ?? (sig ? 128 : 1), stdout, stderr, ms: Date.now() - t0 });
      });
      p.stdin.on('error', () => {});
      p.stdin.end(JSON.stringify(this.netConf(pod.node)));
    });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#queue.then(() => fn());
    this.#queue = p.catch(() => {});
    return p;
  }

  /** ADD for every pod that needs a network, DEL for every pod that went; serialised with follow()'s calls. */
  syncPods(): Promise<{ added: number; removed: number }> {
    return this.#serial(() => this.#sync());
  }

  async #sync(): Promise<{ added: number; removed: number }> {
    if (this.#stopped) return { added: 0, removed: 0 };
    const list = (await this.dp.tb.client.list('/api/v1/pods')).items as KubeObject[];
    const want = new Map<string, KubeObject>();
    for (const p of list) {
      if (!this.#nodes.has(p.spec?.nodeName) || p.spec?.hostNetwork || p.metadata.deletionTimestamp) continue;
      if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') continue;
      want.set(p.metadata.uid!, p);
    }
    let removed = 0;
    for (const [uid, pe] of this.#pods) {
      if (want.has(uid)) continue;
      await this.#removePod(pe);
      removed++;
    }
    let added = 0;
    for (const [uid, p] of want) {
      if (this.#pods.has(uid) || this.#stopped) continue;
      if (await this.#addPod(p)) added++;
    }
    return { added, removed };
  }

  async #addPod(p: KubeObject): Promise<boolean> {
    const k = this.#podCounter++;
    const pod = { uid: p.metadata.uid!, namespace: p.metadata.namespace ?? 'default', name: p.metadata.name, node: p.spec.nodeName as string, netns: `${this.dp.prefix}w${k}` };
    const key = `${pod.namespace}/${pod.name}`;
    const ipr = (args: string[]) => this.dp.exec(pod.netns, 'ip', args);
    const add = await new Promise<ExecResult>((resolve) => {
      const c = spawn('ip', ['netns', 'add', pod.netns], { stdio: 'ignore' });
      c.on('close', (code) => resolve({ code: code ?? 1, stdout: '', stderr: '' }));
    });
    if (add.code !== 0) throw new Error(`ip netns add ${pod.netns} failed`);
    await ipr(['link', 'set', 'lo', 'up']);
    const r = await this.runPlugin('ADD', pod);
    let ip: string | undefined;
    let iface = '';
    try {
      ip = r.code === 0 ? resultIPv4(r.stdout) : undefined;
      iface = (JSON.parse(r.stdout).interfaces ?? []).map((i: { name?: string }) => i.name ?? '').find((nm: string) => nm.startsWith('cali')) ?? '';
    } catch {
      ip = undefined;
    }
    if (!ip) {
      this.stats.failures++;
      const msg = pluginError(r);
      if (msg !== this.#lastAddError) process.stderr.write(`[calico-node] CNI ADD ${key} on ${pod.node}: ${msg} (trying again)\n`);
      this.#lastAddError = msg;
      // a failed ADD may have left an address or a veth: DEL is idempotent
      await this.runPlugin('DEL', pod);
      await this.#deleteNetns(pod.netns);
      return false;
    }
    this.stats.adds++;
    this.stats.addMs += r.ms;
    const pe: PodEntry = { ...pod, key, ip, iface, addMs: r.ms, procs: [] };
    this.#pods.set(pod.uid, pe);
    const ports = new Set<number>();
    for (const c of p.spec.containers ?? []) for (const cp of c.ports ?? []) if ((cp.protocol ?? 'TCP') === 'TCP') ports.add(cp.containerPort);
    if (ports.size === 0) ports.add(8080);
    for (const port of ports) {
      pe.procs.push(this.dp.spawnIn(pod.netns, `w${k}-pod-${pod.namespace}-${pod.name}-${port}`, join(this.dp.binDir, 'dpnet'), ['serve', '-listen', `0.0.0.0:${port}`, '-name', key]));
    }
    try {
      // the uid is a precondition: a newer pod of the same name does not get this address
      await this.dp.tb.client.mergePatch(`/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`, { metadata: { uid: pod.uid, annotations: { [POD_IP_ANNOTATION]: ip } } });
    } catch (e) {
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 409))) throw e;
    }
    this.#log(`${key} on ${pod.node}: ${ip} (${iface}), CNI ADD ${r.ms} ms`);
    return true;
  }

  async #removePod(pe: PodEntry): Promise<void> {
    await Promise.all(pe.procs.map((p) => p.stop()));
    const r = await this.runPlugin('DEL', pe);
    if (r.code !== 0) {
      this.stats.failures++;
      process.stderr.write(`[calico-node] CNI DEL ${pe.key} on ${pe.node}: ${pluginError(r)}\n`);
    } else {
      this.stats.dels++;
    }
    await this.#deleteNetns(pe.netns);
    this.#pods.delete(pe.uid);
    this.#log(`${pe.key} (${pe.ip}) removed, CNI DEL ${r.ms} ms`);
  }

  async #deleteNetns(netns: string): Promise<void> {
    await new Promise<void>((resolve) => {
      const c = spawn('ip', ['netns', 'del', netns], { stdio: 'ignore' });
      c.on('close', () => resolve());
      c.on('error', () => resolve());
    });
  }

  /** Runs syncPods every `intervalMs` until unfollow() or stop(). */
  follow(intervalMs = 200): void {
    if (this.#follow || this.#stopped) return;
    this.#follow = new FollowLoop(() => this.syncPods(), intervalMs, '[calico-node] follow: ');
  }

  async unfollow(): Promise<void> {
    const f = this.#follow;
    if (!f) return;
    this.#follow = undefined;
    await f.stop();
  }

  /** The pods with a network. */
  pods(): CalicoPod[] {
    return [...this.#pods.values()].map(({ namespace, name, uid, node, netns, ip, iface, addMs }) => ({ namespace, name, uid, node, netns, ip, iface, addMs }));
  }

  pod(ref: PodRef): CalicoPod | undefined {
    return this.pods().find((p) => p.namespace === ref.namespace && p.name === ref.name);
  }

  /** One HTTP GET from inside a pod's netns. */
  get(from: PodRef, url: string, timeoutMs = 3000): Promise<ExecResult> {
    const p = this.pod(from);
    if (!p) throw new Error(`pod ${from.namespace}/${from.name} has no Calico network (follow or syncPods first)`);
    return this.dp.exec(p.netns, join(this.dp.binDir, 'dpnet'), ['get', '-timeout', `${timeoutMs}ms`, url], timeoutMs + 5000);
  }

  /** Pods' CNI DEL (their addresses back to IPAM), then felix and the allocators stopped (dp.stop() stops them too). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.unfollow();
    await this.#serial(async () => {
      for (const pe of [...this.#pods.values()]) await this.#removePod(pe).catch(() => {});
    });
    this.#stopped = true;
    await Promise.all([...this.#nodes.values()].flatMap((n) => n.procs.map((p) => p.stop())));
  }
}

