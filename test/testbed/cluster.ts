// A real local Kubernetes control plane for tests, as plain child processes:
//   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok (fake kubelets).
//
//   const tb = await Testbed.start({ serviceCIDR: '10.96.0.0/16', podCIDR: '10.244.0.0/16', nodes: 3 });
//   await tb.kubectl(['get', 'nodes']);        // { stdout, stderr, code }
//   tb.client.get('/api/v1/nodes');            // REST client (bearer token, loopback TLS unverified)
//   await tb.restartApiserver({ serviceCIDR: '10.100.0.0/16' });
//   await tb.restartControllerManager({ clusterCIDR: '10.50.0.0/16', allocateNodeCIDRs: false });
//   await tb.reregisterNode('tb-node-1');      // after the Node object was deleted
//   await tb.stop();
//
// Pod IPs: podIPAM 'kwok' (default) lets kwok hand out IPs from the node's spec.podCIDR; 'calico' runs Calico's
// own calico-ipam plugin for every pod (calico-cni.ts, the binary from calico-build.ts) and
// calico-kube-controllers, with the CRDs of the same Calico commit, and kwok takes each pod's IP from it
// (calicoIPAM 'stand-in': the project's stand-in calico-ipam.ts and CRDs instead);
// 'node' runs the host-local stand-in (node-ipam.ts): one address per family of the node's spec.podCIDRs.
//
// Dual-stack: serviceCIDR and podCIDR take one CIDR per family, comma-separated (as the flags do); kcm then runs
// with --node-cidr-mask-size-ipv4/-ipv6 (nodeMask, nodeMaskIPv6) and gives every node one podCIDR per family.
// Dual-stack pods need podIPAM 'node' (kwok's own IPs come from spec.podCIDR, one family).
//
// Every child runs under `tbsup` (test/testbed/supervisor), which kills the child's process group as soon
// as its stdin pipe from this process closes: if this process dies, even by SIGKILL, nothing is left.

import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_VERSION, ensureBuilt, KWOK_VERSION, testbedRoot } from './build.ts';
import { calicoCRDsYaml } from './crds/calico.ts';
import { CALICO_VERSION, calicoBuiltDir } from './calico-build.ts';
import { cidrFamily } from './ip.ts';
import { ApiError, KubeClient, type KubeObject } from './kube.ts';
import {
  NODE_TEMPLATE_ENV,
  NODE_TEMPLATE_FILE,
  ZONE_LABEL,
  nodeFromTemplate,
  readNodeTemplate,
  reregisterNode,
  testbedNodeIP,
  type NodeTemplate,
  type NodeTemplateFile,
} from './reregister-node.ts';
import { kwokPodStages, type PodIPAM } from './stages.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface TestbedOptions {
  /** --service-cluster-ip-range (default 10.96.0.0/16); dual-stack: one per family, comma-separated. */
  serviceCIDR?: string;
  /** kube-controller-manager --cluster-cidr (default 10.244.0.0/16); dual-stack: one per family, comma-separated. */
  podCIDR?: string;
  /** --node-cidr-mask-size (default 24), the IPv4 one (-ipv4) with a dual-stack podCIDR, the IPv6 one (-ipv6) with an IPv6 podCIDR. */
  nodeMask?: number;
  /** With a dual-stack podCIDR: --node-cidr-mask-size-ipv6 (default 64). */
  nodeMaskIPv6?: number;
  /** Node objects to create (kwok makes them Ready). Default 2. */
  nodes?: number;
  /**
   * Zones: node tb-node-<i> carries label topology.kubernetes.io/zone=zone-<i mod zones> (kept when it
   * re-registers). Default: no zone label.
   */
  zones?: number;
  /** Kubernetes version of the binaries (default DEFAULT_VERSION). */
  version?: string;
  /** Directory for state and logs (default: a fresh temp dir, removed by stop()). */
  stateDir?: string;
  /** Install the Calico CRDs (default true). */
  calicoCRDs?: boolean;
  /** Progress messages (default: silent unless KUBE_RENUMBER_TESTBED_VERBOSE=1). */
  log?: (msg: string) => void;
  /** Startup timeout per component, ms (default 90 s). */
  timeoutMs?: number;
  /**
   * Who gives pods their IPs (default 'kwok'): 'kwok' = kwok, from the node's spec.podCIDR; 'calico' = the
   * Calico IPAM stand-in (test/testbed/calico-ipam.ts) from IPPools, through IPAMBlocks/BlockAffinities/
   * IPAMHandles. 'calico' needs calicoCRDs. Pods wait without an IP until an eligible IPPool exists.
   * With calicoIPAM 'calico' (the default) that is Calico's own code; see calicoIPAM.
   * 'node' = the host-local stand-in (test/testbed/node-ipam.ts): one address per family of the node's
   * spec.podCIDRs; pods on a node without podCIDRs wait, as their sandbox would.
   */
  podIPAM?: PodIPAM;
  /** In 'calico' mode: create IPPool default-ipv4-ippool (= podCIDR) at start when none exists, as
   *  calico-node does (default false: populate() and populateWorkloads() create the pool themselves). */
  calicoDefaultPool?: boolean;
  /**
   * In 'calico' mode, whose IPAM: 'calico' (default) = Calico's own calico-ipam plugin, run for every pod by
   * test/testbed/calico-cni.ts (CNI ADD and DEL, kubernetes datastore), and calico-kube-controllers (node
   * controller: IPAM garbage collection), with the CRDs of the same Calico commit (libcalico-go/config/crd),
   * all built by `node test/testbed/cli.ts build-calico`; 'stand-in' = the project's stand-in
   * (test/testbed/calico-ipam.ts) and CRDs (test/testbed/crds/). Default from KUBE_RENUMBER_CALICO_IPAM.
   */
  calicoIPAM?: 'calico' | 'stand-in';
  /**
   * With Calico's own IPAM: whether test/testbed/calico-cni.ts runs calico-ipam for every pod (default true). false:
   * nobody gives pods their addresses until Calico's data plane runs the full calico CNI plugin in the node network
   * namespaces (CalicoNodes.follow() in test/testbed/calico-node.ts), as a kubelet on a Calico node does.
   */
  calicoCniDriver?: boolean;
  /**
   * kube-controller-manager --kube-api-qps (burst = 2x). 0 (default) keeps kcm's default of 20, which
   * paces pod creation by ReplicaSets/StatefulSets/DaemonSets/Jobs at ~20 pods/s.
   */
  controllerManagerQPS?: number;
  /**
   * kube-apiserver --advertise-address (kept across restartApiserver): the address the `kubernetes`
   * Service's EndpointSlice names. Default: this machine's first non-loopback IPv4 address, else 127.0.0.1
   * with --endpoint-reconciler-type=none. The address need not exist on this machine; the data plane's
   * APISERVER_FABRIC_IP (dataplane.ts) makes it reachable from pod network namespaces.
   */
  advertiseAddress?: string;
  /**
   * Highly available control plane: one kube-apiserver per address, each advertising it (the `kubernetes`
   * EndpointSlice then names them all). Apiserver i listens on 127.0.0.<i+1> at the same port (tb.server is
   * the first), has its own serving certificate, and runs with --shutdown-delay-duration=3s, so that a
   * restart removes its endpoint and keeps serving while kube-proxy catches up, as a real HA control plane is
   * rolled. restartApiserver restarts them one at a time. Overrides advertiseAddress.
   */
  apiserverAdvertiseAddresses?: string[];
  /**
   * Pod logs through the apiserver (default false; used with test/testbed/pod-runner.ts, which runs the
   * containers): kwok serves the kubelet API for every node on 127.0.0.1:tb.kubeletPort (--server-address,
   * --node-port), container logs from the files kwok `Logs` objects name (CRD installed, --enable-crds=Logs);
   * nodes register InternalIP 127.0.0.1, so the apiserver's pods/log requests stay on this machine; and pods
   * annotated CONTAINER_RUNNER_ANNOTATION stay Terminating until deleted with grace 0 (stages.ts).
   */
  kubeletLogs?: boolean;
  /**
   * Room for real kubelets next to kwok's nodes (default false; test/testbed/kubelet.ts starts them): kwok manages
   * only the nodes labelled type=kwok (its own), not every node, and the apiservers reach kubelets at their
   * InternalIP (a real kubelet here has this machine's non-loopback IPv4 address; its node name resolves nowhere).
   */
  realKubelets?: boolean;
  /**
   * The ServiceCIDR API on versions that serve it only behind the MultiCIDRServiceAllocator feature gate (1.29–1.32,
   * serviceCIDRApiOf): 'on' starts every kube-apiserver with the gate and --runtime-config=networking.k8s.io/<its
   * version>=true and kube-controller-manager with the gate; 'off' (default) starts them as such a version does by
   * default, so a plan's `enable-servicecidr-api` gate can be played (enableServiceCIDRApi(), or restartApiserver and
   * restartControllerManager with the flags). Ignored from 1.33 on, where networking.k8s.io/v1 is on by default.
   */
  serviceCIDRApi?: 'on' | 'off';
}

/** How a Kubernetes version serves the ServiceCIDR API: its newest group version, and whether only behind the
 *  MultiCIDRServiceAllocator gate and --runtime-config (1.29–1.32). Undefined before 1.29 (the testbed's range). */
export function serviceCIDRApiOf(version: string): { version: 'v1' | 'v1beta1' | 'v1alpha1'; gated: boolean } | undefined {
  const minor = Number(/^v?1\.(\d+)\./.exec(version)?.[1] ?? NaN);
  if (!Number.isFinite(minor) || minor < 29) return undefined;
  if (minor >= 33) return { version: 'v1', gated: false };
  return { version: minor >= 31 ? 'v1beta1' : 'v1alpha1', gated: true };
}

/** The feature-gates / runtime-config flag values that enable the ServiceCIDR API on a gated version. */
export function serviceCIDRApiFlags(version: string): { featureGates: string; runtimeConfig: string } | undefined {
  const api = serviceCIDRApiOf(version);
  if (!api?.gated) return undefined;
  return { featureGates: 'MultiCIDRServiceAllocator=true', runtimeConfig: `networking.k8s.io/${api.version}=true` };
}

/** Seconds an HA apiserver keeps serving after SIGTERM while its endpoint is removed. */
export const APISERVER_SHUTDOWN_DELAY_SECONDS = 3;

/** kube-controller-manager flags that restartControllerManager can change. */
export interface ControllerManagerFlags {
  /** --cluster-cidr */
  clusterCIDR: string;
  /** --allocate-node-cidrs */
  allocateNodeCIDRs: boolean;
  /** --feature-gates ('' for none) */
  featureGates?: string;
}

/** kube-apiserver flags that restartApiserver can change besides the range. */
export interface ApiserverGateFlags {
  /** --feature-gates ('' for none) */
  featureGates: string;
  /** --runtime-config ('' for none) */
  runtimeConfig: string;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

/**
 * Where the Calico CRDs come from: KUBE_RENUMBER_CALICO_CRDS (a directory of CRD YAML files) when set; else
 * `builtDir` (Calico's own CRDs of the built commit, when Calico's own IPAM runs); else the project's own
 * definitions (test/testbed/crds/calico.ts).
 */
export function calicoCRDSource(builtDir?: string): { kind: 'own' } | { kind: 'dir'; dir: string } {
  const env = process.env.KUBE_RENUMBER_CALICO_CRDS;
  if (env) return { kind: 'dir', dir: resolve(env) };
  return builtDir ? { kind: 'dir', dir: builtDir } : { kind: 'own' };
}

/** Free TCP ports on 127.0.0.1, all distinct (held open together, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((res, rej) => {
          const s = createServer();
          s.on('error', rej);
          s.listen(0, '127.0.0.1', () => res(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    if (!a || typeof a === 'string') throw new Error('no port');
    return a.port;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

function tailOf(path: string, lines = 25): string {
  try {
    const all = readFileSync(path, 'utf8').split('\n');
    return all.slice(-lines - 1).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `p`, or `undefined` after ms; the timer is cleared as soon as `p` settles (no idle wait at exit). */
function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<undefined>((r) => {
    timer = setTimeout(() => r(undefined), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** One supervised child process. */
export class Proc {
  readonly name: string;
  readonly logPath: string;
  readonly child: ChildProcess;
  exitCode: number | null = null;
  exited: Promise<number>;

  constructor(name: string, supervisor: string, cmd: string, args: string[], logPath: string, graceSeconds: number, env?: Record<string, string>) {
    this.name = name;
    this.logPath = logPath;
    const fd = openSync(logPath, 'a');
    try {
      this.child = spawn(supervisor, [`-grace=${graceSeconds}s`, '--', cmd, ...args], {
        stdio: ['pipe', fd, fd],
        detached: false,
        ...(env ? { env: { ...process.env, ...env } } : {}),
      });
    } finally {
      closeSync(fd);
    }
    this.exited = new Promise<number>((res) => {
      this.child.on('exit', (code, sig) => {
        this.exitCode = code ?? (sig ? 128 : 1);
        res(this.exitCode);
      });
      this.child.on('error', () => {
        this.exitCode = 127;
        res(127);
      });
    });
    // Never let the pipe keep the event loop alive, never crash on EPIPE.
    this.child.stdin?.on('error', () => {});
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.child.unref();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  running(): boolean {
    return this.exitCode === null;
  }

  /** Close the supervisor's stdin (SIGTERM to the group, SIGKILL after grace) and wait. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (!this.running()) return;
    this.child.stdin?.end();
    this.child.stdin?.destroy();
    const t = await within(this.exited, timeoutMs);
    if (t === undefined) {
      this.child.kill('SIGKILL'); // PDEATHSIG then kills the child
      await this.exited;
    }
  }

  logTail(lines = 25): string {
    return `--- last lines of ${this.name} log (${this.logPath}) ---\n${tailOf(this.logPath, lines)}`;
  }
}

/** Polls `check` until it returns a truthy value; fails early if `proc` exits. */
async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false | null>,
  opts: { timeoutMs: number; proc?: Proc; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastErr: unknown;
  for (;;) {
    if (opts.proc && !opts.proc.running()) {
      throw new Error(`${what}: ${opts.proc.name} exited with code ${opts.proc.exitCode}\n${opts.proc.logTail()}`);
    }
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      const le = lastErr instanceof Error ? ` (last error: ${lastErr.message})` : '';
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${le}${opts.proc ? '\n' + opts.proc.logTail() : ''}`);
    }
    await sleep(opts.intervalMs ?? 250);
  }
}

/** A non-loopback IPv4 address of this machine, if any (for --advertise-address). */
function hostAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return undefined;
}

interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  kcm: number;
  scheduler: number;
}

export class Testbed {
  readonly options: Required<Omit<TestbedOptions, 'log' | 'stateDir' | 'advertiseAddress' | 'apiserverAdvertiseAddresses'>>;
  /** The apiservers' current --feature-gates and --runtime-config (change with restartApiserver). */
  apiserverGateFlags: ApiserverGateFlags;
  readonly stateDir: string;
  readonly binDir: string;
  readonly kubeconfigPath: string;
  readonly token: string;
  readonly server: string;
  readonly client: KubeClient;
  /** The current --service-cluster-ip-range (changes with restartApiserver). */
  serviceCIDR: string;
  /** --advertise-address given to the apiserver (TestbedOptions.advertiseAddress, else this machine's
   *  address), or undefined with --endpoint-reconciler-type=none. */
  readonly advertiseAddress: string | undefined;
  /** One entry per kube-apiserver (TestbedOptions.apiserverAdvertiseAddresses; one apiserver by default). */
  readonly apiserverAdvertiseAddresses: string[];
  /** The current kube-controller-manager flags (change with restartControllerManager). */
  controllerManagerFlags: ControllerManagerFlags;
  /** Node template used by reregisterNode / reregister-node.ts (written by addNodes). */
  readonly nodeTemplatePath: string;
  /** With kubeletLogs: the port of kwok's kubelet server (on 127.0.0.1). */
  kubeletPort: number | undefined;

  #ports: Ports;
  #procs = new Map<string, Proc>();
  #log: (msg: string) => void;
  #ownsStateDir: boolean;
  #stopped = false;

  private constructor(args: {
    options: Required<Omit<TestbedOptions, 'log' | 'stateDir' | 'advertiseAddress' | 'apiserverAdvertiseAddresses'>>;
    advertiseAddress: string | undefined;
    apiserverAdvertiseAddresses?: string[];
    stateDir: string;
    ownsStateDir: boolean;
    binDir: string;
    ports: Ports;
    log: (msg: string) => void;
  }) {
    this.options = args.options;
    this.stateDir = args.stateDir;
    this.#ownsStateDir = args.ownsStateDir;
    this.binDir = args.binDir;
    this.#ports = args.ports;
    this.#log = args.log;
    this.serviceCIDR = args.options.serviceCIDR;
    this.kubeconfigPath = join(args.stateDir, 'kubeconfig');
    this.token = randomBytes(24).toString('hex');
    this.server = `https://127.0.0.1:${args.ports.apiserver}`;
    this.client = new KubeClient(this.server, this.token);
    const ha = args.apiserverAdvertiseAddresses ?? [];
    this.advertiseAddress = ha[0] ?? args.advertiseAddress ?? hostAddress();
    this.apiserverAdvertiseAddresses = ha.length > 0 ? [...ha] : [this.advertiseAddress ?? '127.0.0.1'];
    const gate = args.options.serviceCIDRApi === 'on' ? serviceCIDRApiFlags(args.options.version) : undefined;
    this.controllerManagerFlags = { clusterCIDR: args.options.podCIDR, allocateNodeCIDRs: true, ...(gate ? { featureGates: gate.featureGates } : {}) };
    this.apiserverGateFlags = { featureGates: gate?.featureGates ?? '', runtimeConfig: gate?.runtimeConfig ?? '' };
    this.nodeTemplatePath = join(args.stateDir, NODE_TEMPLATE_FILE);
  }

  /** Builds (if needed) and starts a cluster. On failure everything started is stopped again. */
  static async start(opts: TestbedOptions = {}): Promise<Testbed> {
    const options = {
      serviceCIDR: opts.serviceCIDR ?? '10.96.0.0/16',
      podCIDR: opts.podCIDR ?? '10.244.0.0/16',
      nodeMask: opts.nodeMask ?? 24,
      nodeMaskIPv6: opts.nodeMaskIPv6 ?? 64,
      nodes: opts.nodes ?? 2,
      version: opts.version ?? DEFAULT_VERSION,
      calicoCRDs: opts.calicoCRDs ?? true,
      timeoutMs: opts.timeoutMs ?? 90_000,
      podIPAM: opts.podIPAM ?? 'kwok',
      calicoDefaultPool: opts.calicoDefaultPool ?? false,
      calicoIPAM: opts.calicoIPAM ?? ((process.env.KUBE_RENUMBER_CALICO_IPAM as 'calico' | 'stand-in' | undefined) || 'calico'),
      calicoCniDriver: opts.calicoCniDriver ?? true,
      controllerManagerQPS: opts.controllerManagerQPS ?? 0,
      kubeletLogs: opts.kubeletLogs ?? false,
      realKubelets: opts.realKubelets ?? false,
      zones: opts.zones ?? 0,
      serviceCIDRApi: opts.serviceCIDRApi ?? 'off',
    };
    if (!['kwok', 'calico', 'node', 'cilium'].includes(options.podIPAM)) throw new Error(`podIPAM must be 'kwok', 'calico', 'node' or 'cilium', got ${String(options.podIPAM)}`);
    if (options.podIPAM === 'calico' && !options.calicoCRDs) throw new Error("podIPAM 'calico' needs the Calico CRDs (calicoCRDs: true)");
    if (!['calico', 'stand-in'].includes(options.calicoIPAM)) throw new Error(`calicoIPAM must be 'calico' or 'stand-in', got ${String(options.calicoIPAM)}`);
    if (options.podIPAM === 'calico' && options.calicoIPAM === 'calico' && !calicoBuiltDir()) {
      throw new Error("podIPAM 'calico' runs Calico's own IPAM, which is not built: run `node test/testbed/cli.ts build-calico` (or KUBE_RENUMBER_CALICO_IPAM=stand-in for the stand-in)");
    }
    const verbose = process.env.KUBE_RENUMBER_TESTBED_VERBOSE === '1';
    const log = opts.log ?? (verbose ? (m: string) => process.stderr.write(`[testbed] ${m}\n`) : () => {});
    const binDir = await ensureBuilt({ version: options.version, log: (m) => process.stderr.write(`[testbed] ${m}\n`) });
    let stateDir = opts.stateDir;
    const ownsStateDir = !stateDir;
    if (!stateDir) stateDir = await mkdtemp(join(tmpdir(), 'kube-renumber-tb-'));
    await mkdir(stateDir, { recursive: true });
    // Ports can be taken by another process between probing and binding: retry with fresh ones.
    for (let attempt = 1; ; attempt++) {
      const [etcdClient, etcdPeer, apiserver, kcm, scheduler] = await freePorts(5);
      const tb = new Testbed({
        options,
        advertiseAddress: opts.advertiseAddress,
        ...(opts.apiserverAdvertiseAddresses ? { apiserverAdvertiseAddresses: opts.apiserverAdvertiseAddresses } : {}),
        stateDir,
        ownsStateDir,
        binDir,
        ports: { etcdClient: etcdClient!, etcdPeer: etcdPeer!, apiserver: apiserver!, kcm: kcm!, scheduler: scheduler! },
        log,
      });
      try {
        await tb.#boot();
        return tb;
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        await tb.#stopProcs();
        tb.client.close();
        if (attempt < 3 && /address already in use/i.test(msg)) {
          log(`port collision, retrying (${msg.split('\n')[0]})`);
          await rm(join(stateDir, 'etcd-data'), { recursive: true, force: true });
          continue;
        }
        if (ownsStateDir && process.env.KUBE_RENUMBER_TESTBED_KEEP !== '1') {
          // keep logs of a failed start for inspection only on request
          await rm(stateDir, { recursive: true, force: true });
        }
        throw e;
      }
    }
  }

  #spawn(name: string, args: string[], graceSeconds = 5, cmd = join(this.binDir, name), env?: Record<string, string>): Proc {
    const old = this.#procs.get(name);
    if (old?.running()) throw new Error(`${name} already running`);
    const proc = new Proc(
      name,
      join(this.binDir, 'tbsup'),
      cmd,
      args,
      join(this.stateDir, 'logs', `${name}.log`),
      graceSeconds,
      env,
    );
    this.#procs.set(name, proc);
    return proc;
  }

  /** Names and pids of the supervised components (supervisor pids). */
  processes(): { name: string; pid: number | undefined; running: boolean; log: string }[] {
    return [...this.#procs.values()].map((p) => ({ name: p.name, pid: p.pid, running: p.running(), log: p.logPath }));
  }

  logPath(component: string): string {
    return join(this.stateDir, 'logs', `${component}.log`);
  }

  async #boot(): Promise<void> {
    const t0 = Date.now();
    const { stateDir } = this;
    const timeoutMs = this.options.timeoutMs;
    await mkdir(join(stateDir, 'logs'), { recursive: true });
    await mkdir(join(stateDir, 'pki'), { recursive: true });

    // --- etcd
    const p = this.#ports;
    const etcd = this.#spawn('etcd', [
      '--name=testbed',
      `--data-dir=${join(stateDir, 'etcd-data')}`,
      `--listen-client-urls=http://127.0.0.1:${p.etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${p.etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${p.etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${p.etcdPeer}`,
      `--initial-cluster=testbed=http://127.0.0.1:${p.etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
      '--quota-backend-bytes=2147483648',
    ]);
    await waitFor(
      'etcd /health',
      async () => {
        const r = await fetch(`http://127.0.0.1:${p.etcdClient}/health`);
        const j = (await r.json()) as { health?: string };
        return j.health === 'true';
      },
      { timeoutMs, proc: etcd },
    );
    this.#log(`etcd ready (${Date.now() - t0} ms)`);

    // --- credentials
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const saKey = join(stateDir, 'pki', 'sa.key');
    await writeFile(saKey, privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
    await writeFile(join(stateDir, 'pki', 'tokens.csv'), `${this.token},testbed-admin,testbed-admin,"system:masters"\n`, {
      mode: 0o600,
    });
    await this.#writeKubeconfig();

    // --- kube-apiserver(s)
    for (let i = 0; i < this.apiserverAdvertiseAddresses.length; i++) await this.#startApiserver(i);
    this.#log(`kube-apiserver ready (${Date.now() - t0} ms)`);

    // --- kube-controller-manager
    const kcm = this.#spawnControllerManager();
    // --- kube-scheduler
    const sched = this.#spawnScheduler();
    // --- kwok, with our pod Stages (see stages.ts)
    const stagesPath = join(stateDir, 'kwok-stages.yaml');
    await writeFile(stagesPath, kwokPodStages(this.options.podIPAM, { testRunsContainers: this.options.kubeletLogs }));
    const kubeletArgs = this.options.kubeletLogs ? await this.#kubeletLogsSetup() : [];
    const kwok = this.#spawn('kwok', [
      `--kubeconfig=${this.kubeconfigPath}`,
      `--config=${stagesPath}`,
      this.options.realKubelets ? '--manage-nodes-with-label-selector=type=kwok' : '--manage-all-nodes=true',
      // renew each node's Lease (kube-node-lease) like a kubelet: without it kwok only posts node status
      // about once a minute and the node lifecycle controller marks nodes, then their pods, NotReady
      '--node-lease-duration-seconds=40',
      // used only for pods on nodes without spec.podCIDR (kcm assigns one to every node here)
      '--cidr=100.127.0.0/16',
      ...kubeletArgs,
    ]);

    await Promise.all([
      waitFor('kube-controller-manager /healthz', () => this.#healthz(p.kcm), { timeoutMs, proc: kcm }),
      waitFor('kube-scheduler /healthz', () => this.#healthz(p.scheduler), { timeoutMs, proc: sched }),
    ]);
    this.#log(`controller-manager and scheduler ready (${Date.now() - t0} ms)`);

    if (this.options.calicoCRDs) await this.#installCalicoCRDs();
    if (this.options.podIPAM === 'node') {
      this.#spawn('node-ipam', [join(here, 'node-ipam.ts'), `--kubeconfig=${this.kubeconfigPath}`], 2, process.execPath);
      this.#log(`node IPAM stand-in started (${Date.now() - t0} ms)`);
    }
    if (this.options.podIPAM === 'calico') await this.#initCalicoDatastore(!!this.#realCalico());
    if (this.options.podIPAM === 'calico' && this.#realCalico()) {
      if (this.options.calicoCniDriver) this.#startCalicoCni();
      this.#startCalicoKubeControllers();
      this.#log(`calico CNI driver and calico-kube-controllers started (${Date.now() - t0} ms)`);
    } else if (this.options.podIPAM === 'calico') {
      this.#startCalicoIpam();
      this.#log(`calico IPAM stand-in started (${Date.now() - t0} ms)`);
    }

    // --- nodes
    await this.addNodes(this.options.nodes, kwok);
    this.#log(`cluster up with ${this.options.nodes} nodes (${Date.now() - t0} ms)`);
  }

  /** kubeletLogs: kwok's Logs CRD (from the kwok module in the Go module cache) and kwok's kubelet-server flags. */
  async #kubeletLogsSetup(): Promise<string[]> {
    const crd = join(testbedRoot(), 'go', 'mod', 'sigs.k8s.io', `kwok@${KWOK_VERSION}`, 'kustomize', 'crd', 'bases', 'kwok.x-k8s.io_logs.yaml');
    const r = await this.kubectl(['apply', '-f', crd]);
    if (r.code !== 0) throw new Error(`installing kwok's Logs CRD from ${crd} failed: ${r.stderr || r.stdout}`);
    const w = await this.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/logs.kwok.x-k8s.io']);
    if (w.code !== 0) throw new Error(`kwok's Logs CRD not Established: ${w.stderr || w.stdout}`);
    [this.kubeletPort] = await freePorts(1);
    return [`--server-address=127.0.0.1:${this.kubeletPort}`, `--node-port=${this.kubeletPort}`, '--enable-crds=Logs'];
  }

  #commonAuth(): string[] {
    return [
      `--kubeconfig=${this.kubeconfigPath}`,
      `--authentication-kubeconfig=${this.kubeconfigPath}`,
      `--authorization-kubeconfig=${this.kubeconfigPath}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
    ];
  }

  #spawnScheduler(): Proc {
    return this.#spawn('kube-scheduler', [...this.#commonAuth(), `--secure-port=${this.#ports.scheduler}`, '--v=1']);
  }

  #spawnControllerManager(): Proc {
    const f = this.controllerManagerFlags;
    return this.#spawn('kube-controller-manager', [
      ...this.#commonAuth(),
      `--secure-port=${this.#ports.kcm}`,
      `--cert-dir=${join(this.stateDir, 'pki', 'kcm')}`,
      '--controllers=*',
      `--allocate-node-cidrs=${f.allocateNodeCIDRs}`,
      `--cluster-cidr=${f.clusterCIDR}`,
      ...this.#nodeMaskFlags(f.clusterCIDR),
      `--service-cluster-ip-range=${this.serviceCIDR}`,
      `--service-account-private-key-file=${join(this.stateDir, 'pki', 'sa.key')}`,
      `--root-ca-file=${join(this.stateDir, 'pki', 'apiserver', 'apiserver.crt')}`,
      '--use-service-account-credentials=false',
      // kwok renews node leases from the same process that plays every pod's stages: with hundreds of pods
      // starting at once on 2 busy cores a renewal can come late, the node goes NotReady for a moment, and the
      // node lifecycle controller sets every pod on it NotReady for good (kwok never sets Ready again).
      // Real kubelets do not starve that way; give the fake ones room.
      '--node-monitor-grace-period=10m',
      ...(this.options.controllerManagerQPS > 0
        ? [`--kube-api-qps=${this.options.controllerManagerQPS}`, `--kube-api-burst=${2 * this.options.controllerManagerQPS}`]
        : []),
      ...(f.featureGates ? [`--feature-gates=${f.featureGates}`] : []),
      '--v=1',
    ]);
  }

  /** kcm's node mask flags for --cluster-cidr `cidrs`: dual-stack needs one per family (it refuses --node-cidr-mask-size). */
  #nodeMaskFlags(cidrs: string): string[] {
    const fams = cidrs.split(',').map((c) => cidrFamily(c.trim()));
    if (fams.length > 1) return [`--node-cidr-mask-size-ipv4=${this.options.nodeMask}`, `--node-cidr-mask-size-ipv6=${this.options.nodeMaskIPv6}`];
    return [`--node-cidr-mask-size${fams[0] === 6 ? '-ipv6' : ''}=${this.options.nodeMask}`];
  }

  /** Calico's own IPAM (calicoIPAM 'calico'): its binaries and CRDs, or undefined for the stand-in. */
  #realCalico(): string | undefined {
    return this.options.podIPAM === 'calico' && this.options.calicoIPAM === 'calico' ? calicoBuiltDir() : undefined;
  }

  /**
   * Path of Calico's calicoctl (see calico-build.ts) in 'calico' mode when it is built, else undefined. With the
   * stand-in too: Calico's own `ipam check` then judges what the stand-in wrote.
   */
  calicoctlPath(): string | undefined {
    const dir = this.options.podIPAM === 'calico' ? calicoBuiltDir() : undefined;
    return dir ? join(dir, 'bin', 'calicoctl') : undefined;
  }

  /**
   * What calico-node does to a Kubernetes datastore at start (ClusterInformation default, datastoreReady; with
   * the stand-in too, so calicoctl can judge its objects) and, for Calico's own IPAM, the
   * KubeControllersConfiguration default calico-kube-controllers would create, with its Prometheus port off
   * (several testbeds run at once on this machine) and IPAM garbage collection's own defaults.
   */
  async #initCalicoDatastore(kubeControllers: boolean): Promise<void> {
    const ci = {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { clusterGUID: randomBytes(16).toString('hex'), clusterType: 'k8s,kdd', calicoVersion: CALICO_VERSION, datastoreReady: true },
    };
    const kcc = {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'KubeControllersConfiguration',
      metadata: { name: 'default' },
      spec: {
        logSeverityScreen: 'Info',
        healthChecks: 'Enabled',
        etcdV3CompactionPeriod: '10m',
        prometheusMetricsPort: 0,
        controllers: { node: { reconcilerPeriod: '5m', syncLabels: 'Enabled', leakGracePeriod: '15m0s' } },
      },
    };
    const objs = kubeControllers ? ([['clusterinformations', ci], ['kubecontrollersconfigurations', kcc]] as const) : ([['clusterinformations', ci]] as const);
    for (const [plural, obj] of objs) {
      try {
        await this.client.post(`/apis/crd.projectcalico.org/v1/${plural}`, obj);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 409)) throw e;
      }
    }
  }

  #startCalicoCni(): Proc {
    const dir = this.#realCalico()!;
    const args = [
      join(here, 'calico-cni.ts'),
      `--kubeconfig=${this.kubeconfigPath}`,
      `--plugin=${join(dir, 'bin', 'calico-ipam')}`,
      `--state-dir=${join(this.stateDir, 'calico-cni')}`,
    ];
    if (this.options.calicoDefaultPool) args.push(`--default-pool=${this.options.podCIDR}`);
    return this.#spawn('calico-cni', args, 5, process.execPath);
  }

  #startCalicoKubeControllers(): Proc {
    const dir = this.#realCalico()!;
    return this.#spawn(
      'calico-kube-controllers',
      [`-status-file=${join(this.stateDir, 'calico-kube-controllers-status.json')}`],
      5,
      join(dir, 'bin', 'calico-kube-controllers'),
      { DATASTORE_TYPE: 'kubernetes', KUBECONFIG: this.kubeconfigPath, ENABLED_CONTROLLERS: 'node', LOG_LEVEL: 'info' },
    );
  }

  #startCalicoIpam(): Proc {
    const args = [join(here, 'calico-ipam.ts'), `--kubeconfig=${this.kubeconfigPath}`];
    if (this.options.calicoDefaultPool) args.push(`--default-pool=${this.options.podCIDR}`);
    // process.execPath: the Node that runs the tests (24+, runs .ts directly)
    return this.#spawn('calico-ipam', args, 2, process.execPath);
  }

  async #healthz(port: number): Promise<boolean> {
    const r = await new KubeClient(`https://127.0.0.1:${port}`, this.token).raw('GET', '/healthz', undefined, undefined, 2000);
    return r.status === 200;
  }

  async #writeKubeconfig(): Promise<void> {
    const kc = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: testbed',
      '  cluster:',
      `    server: ${this.server}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: testbed-admin',
      '  user:',
      `    token: ${this.token}`,
      'contexts:',
      '- name: testbed',
      '  context:',
      '    cluster: testbed',
      '    user: testbed-admin',
      'current-context: testbed',
      '',
    ].join('\n');
    await writeFile(this.kubeconfigPath, kc, { mode: 0o600 });
    await chmod(this.kubeconfigPath, 0o600);
  }

  /** The ServiceCIDR collection's path as the apiservers serve it now (undefined while the API is off). */
  serviceCIDRPath(): string | undefined {
    const api = serviceCIDRApiOf(this.options.version);
    if (!api) return undefined;
    if (api.gated && !this.apiserverGateFlags.runtimeConfig.includes(`networking.k8s.io/${api.version}=true`)) return undefined;
    return `/apis/networking.k8s.io/${api.version}/servicecidrs`;
  }

  /** Name of apiserver i's process ('kube-apiserver' for the first). */
  static apiserverName(i: number): string {
    return i === 0 ? 'kube-apiserver' : `kube-apiserver-${i}`;
  }

  /** Where apiserver i listens: 127.0.0.<i+1>, all on the same port. */
  apiserverURL(i: number): string {
    return `https://127.0.0.${i + 1}:${this.#ports.apiserver}`;
  }

  async #startApiserver(i = 0): Promise<void> {
    const p = this.#ports;
    const pki = join(this.stateDir, 'pki');
    const ha = this.apiserverAdvertiseAddresses.length > 1;
    const args = [
      `--etcd-servers=http://127.0.0.1:${p.etcdClient}`,
      `--secure-port=${p.apiserver}`,
      `--bind-address=127.0.0.${i + 1}`,
      `--cert-dir=${join(pki, i === 0 ? 'apiserver' : `apiserver-${i}`)}`,
      `--token-auth-file=${join(pki, 'tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      `--service-account-key-file=${join(pki, 'sa.key')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-cluster-ip-range=${this.serviceCIDR}`,
      '--allow-privileged=true',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--v=1',
      ...(this.apiserverGateFlags.featureGates ? [`--feature-gates=${this.apiserverGateFlags.featureGates}`] : []),
      ...(this.apiserverGateFlags.runtimeConfig ? [`--runtime-config=${this.apiserverGateFlags.runtimeConfig}`] : []),
    ];
    // A loopback advertise address is rejected for the `kubernetes` Endpoints (see docs/testbed.md):
    // advertise this machine's address when it has one, else run without the endpoint reconciler.
    if (ha) args.push(`--advertise-address=${this.apiserverAdvertiseAddresses[i]}`, `--shutdown-delay-duration=${APISERVER_SHUTDOWN_DELAY_SECONDS}s`);
    else if (this.advertiseAddress) args.push(`--advertise-address=${this.advertiseAddress}`);
    else args.push('--advertise-address=127.0.0.1', '--endpoint-reconciler-type=none');
    // kubeletLogs: reach kwok's kubelet server at the nodes' InternalIP 127.0.0.1, never by looking up a Hostname
    if (this.options.kubeletLogs || this.options.realKubelets) args.push('--kubelet-preferred-address-types=InternalIP');
    // After "HTTPServerStoppedListening" a SIGTERMed kube-apiserver hangs until killed (measured: it sat
    // there the whole 10 s grace); everything it owns is in etcd already, so give it 2 s (HA: after the
    // shutdown delay during which it keeps serving).
    const api = this.#spawn(Testbed.apiserverName(i), args, ha ? APISERVER_SHUTDOWN_DELAY_SECONDS + 2 : 2, join(this.binDir, 'kube-apiserver'));
    const client = i === 0 ? this.client : new KubeClient(this.apiserverURL(i), this.token);
    try {
      await waitFor(
        `${Testbed.apiserverName(i)} /readyz`,
        async () => (await client.raw('GET', '/readyz', undefined, undefined, 3000)).status === 200,
        { timeoutMs: this.options.timeoutMs, proc: api },
      );
      // the `kubernetes` ServiceCIDR exists and is Ready once the apiserver's bootstrap controller ran (where the
      // version serves the API at all: 1.29–1.32 only with the gate)
      const scPath = this.serviceCIDRPath();
      await waitFor(
        scPath ? 'the `kubernetes` ServiceCIDR and default/kubernetes Service' : 'the default/kubernetes Service',
        async () => {
          const sc = scPath ? await client.getOrUndefined(`${scPath}/kubernetes`) : {};
          const svc = await client.getOrUndefined('/api/v1/namespaces/default/services/kubernetes');
          return sc !== undefined && svc !== undefined;
        },
        { timeoutMs: this.options.timeoutMs, proc: api },
      );
    } finally {
      if (client !== this.client) client.close();
    }
  }

  async #installCalicoCRDs(): Promise<void> {
    const real = this.#realCalico();
    const source = calicoCRDSource(real ? join(real, 'crds') : undefined);
    let target: string;
    if (source.kind === 'dir') {
      target = source.dir;
      if (!existsSync(target)) throw new Error(`Calico CRDs not found at ${target} (KUBE_RENUMBER_CALICO_CRDS)`);
      const files = (await readdir(target)).filter((f) => /\.ya?ml$/.test(f));
      if (files.length === 0) throw new Error(`no Calico CRD YAML files in ${target}`);
    } else {
      target = join(this.stateDir, 'calico-crds.yaml');
      await writeFile(target, calicoCRDsYaml());
    }
    const r = await this.kubectl(['apply', '--server-side', '--force-conflicts', '-f', target]);
    if (r.code !== 0) throw new Error(`installing Calico CRDs from ${target} failed: ${r.stderr || r.stdout}`);
    const w = await this.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    if (w.code !== 0) throw new Error(`Calico CRDs not Established: ${w.stderr || w.stdout}`);
    // Established is not enough: lists answer 429 "storage is (re)initializing" until the watch cache
    // of each new resource is ready. Wait for every Calico resource to list.
    const crds = await this.client.list('/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
    const calico = crds.items.filter((c) => c.spec?.group === 'crd.projectcalico.org');
    await Promise.all(
      calico.map((c) =>
        waitFor(
          `${c.metadata.name} listable`,
          async () => {
            const v = c.spec.versions.find((x: { storage: boolean }) => x.storage).name;
            const r = await this.client.raw('GET', `/apis/${c.spec.group}/${v}/${c.spec.names.plural}?limit=1`);
            return r.status === 200;
          },
          { timeoutMs: this.options.timeoutMs, proc: this.#procs.get('kube-apiserver') },
        ),
      ),
    );
  }

  /** What a (kwok) kubelet registers: the Node object ("${NODE}" = its name), without spec.podCIDR. */
  static nodeTemplate(): NodeTemplate {
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: '${NODE}',
        labels: {
          'kubernetes.io/hostname': '${NODE}',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          type: 'kwok',
        },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
      },
      spec: {},
    };
  }

  /**
   * Creates `count` more Node objects (names tb-node-<i>) and waits until they are Ready, with a podCIDR
   * while kube-controller-manager allocates node CIDRs. Also writes the node template used by
   * reregisterNode (nodeTemplatePath).
   */
  async addNodes(count: number, kwokProc?: Proc): Promise<KubeObject[]> {
    const file: NodeTemplateFile = existsSync(this.nodeTemplatePath)
      ? readNodeTemplate(this.nodeTemplatePath)
      : { node: Testbed.nodeTemplate(), internalIPs: {} };
    const existing = await this.client.list('/api/v1/nodes');
    const taken = new Set(existing.items.map((n) => n.metadata.name));
    const nodes: KubeObject[] = [];
    for (let i = 0; nodes.length < count; i++) {
      const name = `tb-node-${i}`;
      if (taken.has(name)) continue;
      const ip = this.options.kubeletLogs ? '127.0.0.1' : testbedNodeIP(i);
      if (ip) file.internalIPs[name] = ip;
      if (this.options.zones) (file.labels ??= {})[name] = { [ZONE_LABEL]: `zone-${i % this.options.zones}` };
      nodes.push(nodeFromTemplate(file, name));
    }
    await writeFile(this.nodeTemplatePath, JSON.stringify(file, null, 2) + '\n');
    await this.client.createAll(nodes);
    const needCIDR = this.controllerManagerFlags.allocateNodeCIDRs;
    const kwok = kwokProc ?? this.#procs.get('kwok');
    const want = new Set(nodes.map((n) => n.metadata.name));
    return await waitFor(
      `${count} nodes Ready with spec.podCIDR`,
      async () => {
        const list = await this.client.list('/api/v1/nodes');
        const ours = list.items.filter((n) => want.has(n.metadata.name));
        const ok = ours.filter(
          (n) =>
            (n.spec?.podCIDR || !needCIDR) &&
            (n.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'),
        );
        return ok.length === want.size ? ok : undefined;
      },
      { timeoutMs: this.options.timeoutMs, proc: kwok },
    );
  }

  /** Runs the built kubectl against this cluster. Never throws for a non-zero exit. */
  kubectl(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
    return new Promise((resolvePromise, reject) => {
      const p = spawn(join(this.binDir, 'kubectl'), [`--kubeconfig=${this.kubeconfigPath}`, ...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
      p.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      p.on('close', (code, sig) => {
        clearTimeout(timer);
        resolvePromise({ stdout, stderr, code: code ?? (sig ? 128 : 1) });
      });
      p.stdin.on('error', () => {});
      p.stdin.end(opts.input ?? '');
    });
  }

  /** Environment for running test/testbed/reregister-node.ts against this cluster (KUBECONFIG + template). */
  nodeHookEnv(): Record<string, string> {
    return { KUBECONFIG: this.kubeconfigPath, [NODE_TEMPLATE_ENV]: this.nodeTemplatePath };
  }

  /**
   * Re-creates the Node object `name` (after it was deleted) from the node template, without podCIDR, as
   * a kubelet re-registering would, and waits until kwok reports it Ready. Same code as
   * `node test/testbed/reregister-node.ts --kubeconfig K NAME`.
   */
  async reregisterNode(name: string, opts: { timeoutMs?: number } = {}): Promise<KubeObject> {
    return reregisterNode({ client: this.client, name, templatePath: this.nodeTemplatePath, timeoutMs: opts.timeoutMs });
  }

  /** True while kube-controller-manager runs (false after it crashed or was stopped). */
  controllerManagerAlive(): boolean {
    return this.#procs.get('kube-controller-manager')?.running() ?? false;
  }

  /** Waits up to timeoutMs for kube-controller-manager to exit; its exit code, or undefined if still running. */
  async controllerManagerExit(timeoutMs: number): Promise<number | undefined> {
    const kcm = this.#procs.get('kube-controller-manager');
    if (!kcm) return undefined;
    return await within(kcm.exited, timeoutMs);
  }

  /**
   * Restarts kube-controller-manager with changed flags (others unchanged), waits until its /healthz
   * answers, then `settleMs` more (default 3 s) for an early exit. Never throws for a crash: the result
   * says whether it is still running (see also controllerManagerAlive() / controllerManagerExit()).
   * kcm answers /healthz ~170 ms after the start and, when a node's podCIDR lies outside --cluster-cidr
   * with --allocate-node-cidrs=true, exits with code 1 ~40 ms later (measured; docs/testbed.md).
   */
  async restartControllerManager(
    opts: Partial<ControllerManagerFlags> & { settleMs?: number } = {},
  ): Promise<{ running: boolean; exitCode?: number }> {
    await this.#procs.get('kube-controller-manager')?.stop();
    this.controllerManagerFlags = {
      clusterCIDR: opts.clusterCIDR ?? this.controllerManagerFlags.clusterCIDR,
      allocateNodeCIDRs: opts.allocateNodeCIDRs ?? this.controllerManagerFlags.allocateNodeCIDRs,
    };
    const gates = opts.featureGates ?? this.controllerManagerFlags.featureGates;
    if (gates) this.controllerManagerFlags.featureGates = gates;
    const kcm = this.#spawnControllerManager();
    const deadline = Date.now() + this.options.timeoutMs;
    while (Date.now() < deadline) {
      if (!kcm.running()) return { running: false, exitCode: kcm.exitCode ?? undefined };
      try {
        if (await this.#healthz(this.#ports.kcm)) {
          const code = await within(kcm.exited, opts.settleMs ?? 3000);
          return code === undefined ? { running: true } : { running: false, exitCode: code };
        }
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    throw new Error(`kube-controller-manager neither healthy nor exited after ${this.options.timeoutMs} ms\n${kcm.logTail()}`);
  }

  /**
   * Plays a plan's `enable-servicecidr-api` gate on a version that serves ServiceCIDR only behind the feature gate
   * (serviceCIDRApiOf): every kube-apiserver restarted with the gate and runtime-config, then kube-controller-manager
   * with the gate, as the gate's instructions say. A no-op on 1.33+.
   */
  async enableServiceCIDRApi(): Promise<void> {
    const flags = serviceCIDRApiFlags(this.options.version);
    if (!flags) return;
    await this.restartApiserver({ featureGates: flags.featureGates, runtimeConfig: flags.runtimeConfig });
    const r = await this.restartControllerManager({ featureGates: flags.featureGates });
    if (!r.running) throw new Error(`kube-controller-manager exited (${r.exitCode}) after enabling the ServiceCIDR API`);
  }

  /** Restarts kube-apiserver with a new --service-cluster-ip-range (and --feature-gates / --runtime-config when
   *  given; '' removes them), same etcd, and waits until healthy. */
  async restartApiserver(opts: { serviceCIDR?: string; featureGates?: string; runtimeConfig?: string } = {}): Promise<void> {
    if (opts.serviceCIDR) this.serviceCIDR = opts.serviceCIDR;
    if (opts.featureGates !== undefined) this.apiserverGateFlags.featureGates = opts.featureGates;
    if (opts.runtimeConfig !== undefined) this.apiserverGateFlags.runtimeConfig = opts.runtimeConfig;
    // one at a time, as an HA control plane is rolled
    const ha = this.apiserverAdvertiseAddresses.length > 1;
    for (let i = 0; i < this.apiserverAdvertiseAddresses.length; i++) {
      const api = this.#procs.get(Testbed.apiserverName(i));
      if (api) await api.stop();
      await this.#startApiserver(i);
      if (!ha) continue;
      // before the next one goes: this one's endpoint is back in the `kubernetes` EndpointSlice (the lease
      // reconciler adds it up to ~10 s after start) and kube-proxy has had time to program it; stopping the
      // next apiserver earlier leaves the Service without endpoints for a moment
      const addr = this.apiserverAdvertiseAddresses[i]!;
      const client = new KubeClient(this.apiserverURL(i), this.token);
      try {
        await waitFor(`apiserver ${i}'s endpoint ${addr} in the kubernetes EndpointSlice`, async () => {
          const es = await client.getOrUndefined('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes');
          return ((es?.endpoints ?? []) as { addresses?: string[] }[]).some((e) => e.addresses?.includes(addr));
        }, { timeoutMs: this.options.timeoutMs });
      } finally {
        client.close();
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    // A control-plane roll restarts the scheduler with its apiserver. Here it also rules out a scheduler that
    // stopped binding pods after losing its apiserver (seen once in CI: a surge pod Pending for 5 minutes).
    await this.#procs.get('kube-scheduler')?.stop();
    const sched = this.#spawnScheduler();
    await waitFor('kube-scheduler /healthz', () => this.#healthz(this.#ports.scheduler), { timeoutMs: this.options.timeoutMs, proc: sched });
  }

  async #stopProcs(): Promise<void> {
    const order: string[][] = [['calico-ipam', 'calico-cni', 'calico-kube-controllers', 'node-ipam', 'kwok', 'kube-scheduler', 'kube-controller-manager'],
      this.apiserverAdvertiseAddresses.map((_, i) => Testbed.apiserverName(i)), ['etcd']];
    for (const group of order) {
      await Promise.all(group.map((n) => this.#procs.get(n)?.stop()));
    }
  }

  /** Stops every component; removes the state dir it created unless KUBE_RENUMBER_TESTBED_KEEP=1. */
  async stop(opts: { keepState?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#stopProcs();
    this.client.close();
    const keep = opts.keepState ?? process.env.KUBE_RENUMBER_TESTBED_KEEP === '1';
    if (this.#ownsStateDir && !keep) await rm(this.stateDir, { recursive: true, force: true });
  }
}
