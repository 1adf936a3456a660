// The kubelet's side of Calico's CNI for the testbed's `podIPAM: 'calico'` mode: for every pod the testbed
// places it runs Calico's own calico-ipam plugin (built by calico-build.ts from the projectcalico/calico
// module) as a CNI IPAM plugin, and for every pod that goes it runs the plugin's DEL. The addresses, blocks,
// affinities and handles are Calico's own doing; this file only plays the runtime and the calico CNI
// plugin's last step in KDD mode (the pod's cni.projectcalico.org/podIP, podIPs and containerID
// annotations), plus the testbed's annotation kwok copies into the pod status (stages.ts).
//
//   node test/testbed/calico-cni.ts --kubeconfig K --plugin BIN --state-dir DIR [--default-pool CIDR]
//
//   - A pod needs an address when bound (spec.nodeName), not hostNetwork, not being deleted, and without the
//     annotation cni.projectcalico.org/podIP. Its "sandbox" (CNI_CONTAINERID) is the pod's UID, so Calico's
//     handle is k8s-pod-network.<pod uid>.
//   - ADD: CNI_COMMAND=ADD, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME=eth0, CNI_PATH, CNI_ARGS with
//     K8S_POD_NAMESPACE/K8S_POD_NAME/K8S_POD_INFRA_CONTAINER_ID/K8S_POD_UID, the network config on stdin
//     (ipam.type calico-ipam, datastore_type kubernetes, nodename, kubernetes.kubeconfig, and one host-wide
//     IPAM lock file per node, as each real node has its own). A failed ADD is tried again (a kubelet
//     retries the sandbox), at most every 2 s per pod.
//   - DEL: when the pod is being deleted or is gone (whichever is seen first), once per ADD that succeeded
//     or may have; a DEL that fails is tried again.
//   - At start, pods that are gone but still own a Calico handle (k8s-pod-network.<uid>: the driver was
//     down when they went) get their DEL, as their kubelet would have run it.
//   - At most `--parallel` (default 4) plugin runs at once, any number of nodes.

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { readKubeconfig } from './calico-ipam.ts';
import { ApiError, KubeClient, type KubeObject } from './kube.ts';
import { listWatch, type ListWatch } from './pdb-watch.ts';
import { POD_IP_ANNOTATION } from './stages.ts';

export const CALICO_PODIP_ANNOTATION = 'cni.projectcalico.org/podIP';
export const CALICO_PODIPS_ANNOTATION = 'cni.projectcalico.org/podIPs';
export const CALICO_CONTAINERID_ANNOTATION = 'cni.projectcalico.org/containerID';
/** The CNI network name of Calico's manifests (calico-config's cni_network_config): handles are <name>.<containerID>. */
export const NETWORK_NAME = 'k8s-pod-network';

const CALICO = '/apis/crd.projectcalico.org/v1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CniResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface CalicoCniOptions {
  client: KubeClient;
  kubeconfig: string;
  /** The calico-ipam binary (Calico's cni-plugin/cmd/calico under that name). */
  plugin: string;
  /** Lock files and the plugin's log live here. */
  stateDir: string;
  parallel?: number;
  defaultPoolCIDR?: string;
  log?: (msg: string) => void;
}

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

/** The network configuration a node's kubelet hands the plugin (Calico's calico-config, IPAM part). */
export function netConf(node: string, kubeconfig: string, lockFile: string): Record<string, unknown> {
  return {
    cniVersion: '0.3.1',
    name: NETWORK_NAME,
    type: 'calico',
    log_level: 'warning',
    datastore_type: 'kubernetes',
    nodename: node,
    ipam_lock_file: lockFile,
    ipam: { type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'false' },
    kubernetes: { kubeconfig },
  };
}

/** The first IPv4 address of a CNI result (0.3.x / 1.0: ips[].address "a.b.c.d/n"). */
export function resultIPv4(stdout: string): string | undefined {
  const r = JSON.parse(stdout) as { ips?: { address?: string; version?: string }[] };
  for (const ip of r.ips ?? []) {
    const a = ip.address?.split('/')[0];
    if (a && /^\d+\.\d+\.\d+\.\d+$/.test(a)) return a;
  }
  return undefined;
}

export class CalicoCni {
  readonly #o: CalicoCniOptions;
  readonly #log: (msg: string) => void;
  readonly #parallel: number;
  #pods = new Map<string, PodState>();
  /** uid -> pod as last seen, for ADDs done or under way (DEL needs namespace/name/node). */
  #added = new Map<string, PodState>();
  #busy = new Set<string>();
  /** Pods whose DEL ran (their later events, while they are being deleted, owe nothing more). */
  #released = new Set<string>();
  #addQ = new Set<string>();
  #delQ = new Map<string, PodState>();
  #retryAt = new Map<string, number>();
  #lastError = new Map<string, string>();
  #running = 0;
  #stopped = false;
  #loaded = false;
  #watch: ListWatch | undefined;
  #timer: NodeJS.Timeout | undefined;
  stats = { adds: 0, dels: 0, failures: 0, addMs: 0 };

  constructor(o: CalicoCniOptions) {
    this.#o = o;
    this.#parallel = o.parallel ?? 4;
    this.#log = o.log ?? ((m) => process.stdout.write(`${new Date().toISOString()} ${m}\n`));
    mkdirSync(join(o.stateDir, 'locks'), { recursive: true });
  }

  async start(): Promise<void> {
    if (this.#o.defaultPoolCIDR) await this.#ensureDefaultPool(this.#o.defaultPoolCIDR);
    this.#watch = listWatch(this.#o.client, '/api/v1/pods', {
      onList: (items) => this.#onList(items),
      onEvent: (type, obj) => (type === 'DELETED' ? this.#onGone(obj) : this.#onPod(obj)),
      onError: (e) => this.#log(`pod watch: ${e instanceof Error ? e.message : String(e)}`),
    });
    await this.#watch.ready;
    await this.#delOrphans();
    this.#loaded = true;
    this.#timer = setInterval(() => this.#pump(), 500);
    this.#log(`calico CNI driver running (plugin ${this.#o.plugin}): ${this.#pods.size} pods known, ${this.#added.size} with an address`);
    this.#pump();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#watch?.stop();
    while (this.#running > 0) await sleep(50);
  }

  async #ensureDefaultPool(cidr: string): Promise<void> {
    for (;;) {
      try {
        const pools = await this.#o.client.list(`${CALICO}/ippools`);
        if (pools.items.length > 0) return;
        await this.#o.client.post(`${CALICO}/ippools`, {
          apiVersion: 'crd.projectcalico.org/v1',
          kind: 'IPPool',
          metadata: { name: 'default-ipv4-ippool' },
          spec: { cidr, blockSize: 26, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()' },
        });
        this.#log(`created IPPool default-ipv4-ippool ${cidr}`);
        return;
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) return;
        this.#log(`default pool: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(500);
      }
    }
  }

  #needsAdd(st: PodState): boolean {
    return !!st.node && !st.hostNetwork && !st.deleting && !st.annotated && !this.#added.has(st.uid);
  }

  #onPod(obj: KubeObject): void {
    const st = podState(obj);
    if (!st.uid) return;
    this.#pods.set(st.uid, st);
    // an address given before this driver (re)started: its DEL is owed when the pod goes
    if (st.annotated && st.node && !this.#added.has(st.uid) && !this.#released.has(st.uid)) this.#added.set(st.uid, st);
    if (st.deleting) {
      this.#queueDel(st.uid);
    } else if (this.#needsAdd(st)) {
      this.#addQ.add(st.uid);
    }
    this.#pump();
  }

  #onGone(obj: KubeObject): void {
    const uid = obj.metadata.uid;
    if (!uid) return;
    this.#pods.delete(uid);
    this.#addQ.delete(uid);
    if (this.#released.delete(uid)) return;
    this.#queueDel(uid);
    this.#pump();
  }

  #onList(items: KubeObject[]): void {
    const seen = new Set(items.map((p) => p.metadata.uid).filter((u): u is string => !!u));
    for (const uid of [...this.#pods.keys()]) if (!seen.has(uid)) this.#onGone({ metadata: { name: '', uid } });
    for (const p of items) this.#onPod(p);
  }

  #queueDel(uid: string): void {
    const st = this.#added.get(uid);
    if (st) this.#delQ.set(uid, st);
  }

  /** Handles of pods that no longer exist (gone while this driver was down): DEL them. */
  async #delOrphans(): Promise<void> {
    for (;;) {
      try {
        const handles = await this.#o.client.list(`${CALICO}/ipamhandles`);
        const blocks = await this.#o.client.list(`${CALICO}/ipamblocks`);
        const prefix = `${NETWORK_NAME}.`;
        const attrs = new Map<string, Record<string, string>>();
        for (const b of blocks.items) for (const a of b.spec?.attributes ?? []) if (a.handle_id) attrs.set(a.handle_id, a.secondary ?? {});
        for (const h of handles.items) {
          const id: string = h.spec?.handleID ?? '';
          if (!id.startsWith(prefix)) continue;
          const uid = id.slice(prefix.length);
          if (this.#pods.has(uid) || this.#added.has(uid)) continue;
          const sec = attrs.get(id) ?? {};
          this.#delQ.set(uid, { uid, namespace: sec.namespace ?? 'default', name: sec.pod ?? uid, node: sec.node, hostNetwork: false, deleting: true, annotated: true });
        }
        if (this.#delQ.size) this.#log(`at start: ${this.#delQ.size} handle(s) of pods that are gone, releasing them`);
        return;
      } catch (e) {
        this.#log(`reading IPAM handles: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(500);
      }
    }
  }

  #pump(): void {
    if (!this.#loaded || this.#stopped) return;
    const now = Date.now();
    while (this.#running < this.#parallel) {
      let picked: { uid: string; del: boolean } | undefined;
      // releases first: they free addresses the adds may need
      for (const uid of this.#delQ.keys()) {
        if (!this.#busy.has(uid) && (this.#retryAt.get(uid) ?? 0) <= now) {
          picked = { uid, del: true };
          break;
        }
      }
      if (!picked) {
        for (const uid of this.#addQ) {
          if (!this.#busy.has(uid) && (this.#retryAt.get(uid) ?? 0) <= now) {
            picked = { uid, del: false };
            break;
          }
        }
      }
      if (!picked) return;
      const { uid, del } = picked;
      this.#busy.add(uid);
      this.#running++;
      const job = del ? this.#del(uid) : this.#add(uid);
      void job
        .catch((e) => this.#log(`${del ? 'DEL' : 'ADD'} ${uid}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`))
        .finally(() => {
          this.#busy.delete(uid);
          this.#running--;
          this.#pump();
        });
    }
  }

  #fail(uid: string, what: string, msg: string): void {
    this.stats.failures++;
    this.#retryAt.set(uid, Date.now() + 2000);
    if (this.#lastError.get(uid) !== msg) this.#log(`${what}: ${msg} (trying again)`);
    this.#lastError.set(uid, msg);
  }

  async #add(uid: string): Promise<void> {
    this.#addQ.delete(uid);
    const st = this.#pods.get(uid);
    if (!st || !this.#needsAdd(st)) return;
    this.#added.set(uid, st); // from here on a DEL is owed when the pod goes, whatever the ADD's outcome
    const r = await this.runPlugin('ADD', st);
    const who = `ADD ${st.namespace}/${st.name} on ${st.node}`;
    if (r.code !== 0) {
      // the failed ADD may have left nothing, or an address: DEL it (idempotent), then try again
      this.#delQ.set(uid, st);
      this.#pendingReAdd.add(uid);
      this.#fail(uid, who, pluginError(r));
      return;
    }
    let ip: string | undefined;
    try {
      ip = resultIPv4(r.stdout);
    } catch {
      ip = undefined;
    }
    if (!ip) {
      this.#delQ.set(uid, st);
      this.#pendingReAdd.add(uid);
      this.#fail(uid, who, `no IPv4 address in the result: ${r.stdout.trim()}`);
      return;
    }
    this.stats.adds++;
    this.stats.addMs += r.ms;
    this.#lastError.delete(uid);
    try {
      // the uid is a precondition (409 otherwise): a pod of the same name created since (a StatefulSet's, a bare pod
      // created again) must not get this pod's address
      await this.#o.client.mergePatch(`/api/v1/namespaces/${st.namespace}/pods/${st.name}`, {
        metadata: {
          uid,
          annotations: {
            [CALICO_CONTAINERID_ANNOTATION]: uid,
            [CALICO_PODIP_ANNOTATION]: `${ip}/32`,
            [CALICO_PODIPS_ANNOTATION]: `${ip}/32`,
            [POD_IP_ANNOTATION]: ip,
          },
        },
      });
      this.#log(`assigned ${ip} to ${st.namespace}/${st.name} on ${st.node} (calico-ipam ADD ${r.ms} ms)`);
    } catch (e) {
      this.#log(`annotating ${st.namespace}/${st.name}: ${e instanceof Error ? e.message : String(e)}`);
      // its DEL gives the address back; then it is added again, unless it is gone (404) or replaced by a pod of the
      // same name (409 on the uid)
      this.#delQ.set(uid, st);
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 409))) this.#pendingReAdd.add(uid);
    }
    // gone or going while the ADD ran: its DEL
    const now = this.#pods.get(uid);
    if (!now || now.deleting) this.#delQ.set(uid, st);
  }

  /** Pods whose ADD failed: after their DEL they are added again. */
  #pendingReAdd = new Set<string>();

  async #del(uid: string): Promise<void> {
    const st = this.#delQ.get(uid);
    if (!st) return;
    const r = await this.runPlugin('DEL', st);
    if (r.code !== 0) {
      this.#fail(uid, `DEL ${st.namespace}/${st.name} on ${st.node}`, pluginError(r));
      return;
    }
    this.#delQ.delete(uid);
    this.#added.delete(uid);
    this.stats.dels++;
    if (this.#pendingReAdd.delete(uid)) {
      const now = this.#pods.get(uid);
      if (now && this.#needsAdd(now)) this.#addQ.add(uid);
    } else {
      if (this.#pods.has(uid)) this.#released.add(uid);
      this.#retryAt.delete(uid);
      this.#lastError.delete(uid);
      this.#log(`released ${NETWORK_NAME}.${uid} (${st.namespace}/${st.name}, calico-ipam DEL ${r.ms} ms)`);
    }
  }

  /** Runs calico-ipam once, as a kubelet's CNI runtime does. */
  runPlugin(command: 'ADD' | 'DEL', st: PodState): Promise<CniResult> {
    const node = st.node ?? 'unknown';
    const conf = netConf(node, this.#o.kubeconfig, join(this.#o.stateDir, 'locks', `${node}.lock`));
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      CNI_COMMAND: command,
      CNI_CONTAINERID: st.uid,
      CNI_NETNS: `/var/run/netns/cni-${st.uid}`,
      CNI_IFNAME: 'eth0',
      CNI_PATH: join(this.#o.plugin, '..'),
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${st.namespace};K8S_POD_NAME=${st.name};K8S_POD_INFRA_CONTAINER_ID=${st.uid};K8S_POD_UID=${st.uid}`,
    };
    const t0 = Date.now();
    return new Promise((resolve) => {
      const p = spawn(this.#o.plugin, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('error', (e) => resolve({ code: 127, stdout, stderr: stderr + String(e), ms: Date.now() - t0 }));
      p.on('close', (c, sig) => resolve({ code: c ?? (sig ? 128 : 1), stdout, stderr, ms: Date.now() - t0 }));
      p.stdin.on('error', () => {});
      p.stdin.end(JSON.stringify(conf));
    });
  }
}

/** A CNI plugin's failure in one line: its JSON error ({code, msg, details}) on stdout, else its last output lines. */
export function pluginError(r: Pick<CniResult, 'code' | 'stdout' | 'stderr'>): string {
  // CNI errors come as JSON on stdout ({code, msg, details}); the plugin's own log is on stderr
  try {
    const e = JSON.parse(r.stdout) as { msg?: string; details?: string };
    if (e.msg) return `exit ${r.code}: ${e.msg}${e.details ? ` (${e.details})` : ''}`;
  } catch {
    /* not JSON */
  }
  const lines = (r.stdout + r.stderr).trim().split('\n');
  return `exit ${r.code}: ${lines.slice(-3).join(' | ')}`;
}

async function main(argv: string[]): Promise<void> {
  let kubeconfig = process.env.KUBECONFIG;
  let plugin: string | undefined;
  let stateDir: string | undefined;
  let defaultPool: string | undefined;
  let parallel: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const key = eq >= 0 ? a.slice(0, eq) : a;
    const val = () => (eq >= 0 ? a.slice(eq + 1) : argv[++i]);
    if (key === '--kubeconfig') kubeconfig = val();
    else if (key === '--plugin') plugin = val();
    else if (key === '--state-dir') stateDir = val();
    else if (key === '--default-pool') defaultPool = val();
    else if (key === '--parallel') parallel = Number(val());
    else throw new Error(`unknown argument ${a} (usage: calico-cni.ts --kubeconfig K --plugin BIN --state-dir DIR [--default-pool CIDR] [--parallel N])`);
  }
  if (!kubeconfig || !plugin || !stateDir) throw new Error('--kubeconfig, --plugin and --state-dir are required');
  const { server, token } = readKubeconfig(kubeconfig);
  const client = new KubeClient(server, token);
  const cni = new CalicoCni({ client, kubeconfig, plugin, stateDir, defaultPoolCIDR: defaultPool, parallel });
  const shutdown = async () => {
    await cni.stop();
    client.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  await cni.start();
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`calico-cni: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
