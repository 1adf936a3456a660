// Zero-downtime measurement on the data-plane testbed (issue #6): a migration runs through the real CLI while
// `kube-renumber probe` runs inside pod network namespaces, and every failed request is counted.
//
// Shared by `npm run bench -- zero-downtime` (bench/zero-downtime.ts) and test/integration/zero-downtime.test.ts.
//
// One fresh testbed per scenario: real kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok;
// the data plane (dataplane.ts): real kube-proxy per node netns, real CoreDNS pods, every pod a netns that is
// Ready only once its server answers and that keeps serving for a grace period after deletion.
//   - kube-dns at 10.96.0.10 backed by a 2-replica CoreDNS Deployment;
//   - `services` Deployments zd/web-<i> (`replicas` pods each, the dpnet HTTP server on 8080) behind ClusterIP
//     Services web-<i>:80; the first `nodePorts` of them (default 3) are type NodePort instead, node port
//     NODE_PORT_BASE+i (externalTrafficPolicy Cluster), served by every node's kube-proxy on its fabric address;
//   - a 1-replica Deployment zd/prober. Its pods are the clients: for every prober pod the data plane has wired,
//     this file plays the kubelet and starts `kube-renumber probe` in the pod's netns with what a kubelet would
//     give the container at start: the cluster DNS server the kubelets hand out at that moment (`clusterDNS`,
//     changed when the harness acts on the kubelet-cluster-dns gate), `<NAME>_SERVICE_HOST` for every Service of
//     its namespace and KUBERNETES_SERVICE_HOST (the `kubernetes` client kind connects there, as client-go
//     does). The probe runs the dns, env, long and kubernetes clients against every Service, and the nodeport
//     client against each NodePort Service at the fabric address of the prober pod's own node (--node-address:
//     kwok's status.hostIP is not an address of the data plane); when its pod is deleted it gets SIGTERM and
//     writes its report. A migration's workload restarts restart the prober too, exactly as they restart every
//     other pod, so old-IP clients live exactly as long as a real pod would.
//
// The control plane has two kube-apiservers (advertised at APISERVER_FABRIC_IPS, restarted one at a time with
// --shutdown-delay-duration, as an HA control plane is rolled), so the `kubernetes` client measures the
// migration, not a single apiserver's restart.
//
// Scenarios (what the harness does at each gate is what a person or pipeline would do):
//   recreate, in-place  Service CIDR 10.96.0.0/16 → 10.100.0.0/16 with that strategy: apply → gate
//                       restart-apiservers → apiserver restarted with the new range → kubelets hand out the new
//                       DNS IP → resume --ack-gate kubelet-cluster-dns to the end: its step restart-workloads
//                       restarts every Deployment itself (CoreDNS scaled up and first, then 5 at a time).
//   pod                 Pod CIDR 10.244.0.0/16 → 10.50.0.0/16 on the Calico path (the testbed's Calico IPAM
//                       stand-in): apply (new pool, old disabled, every workload restarted by the tool) → gate
//                       pod-cidr-config → kube-controller-manager restarted with the new range → resume to the end.
//   combined            both in one plan (in-place): the tool's pod restarts also pick up the new DNS and Service
//                       variables.
//   control             no migration: a `kubectl rollout restart` of every Deployment, CoreDNS first, then 5 at a
//                       time (what the testbed's restarts cost).

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run as cli } from '../unit/run-cli.ts';
import type { ProbeReport } from '../../src/probe/probe.ts';
import { Testbed } from './cluster.ts';
import { DEFAULT_VERSION } from './build.ts';
import { APISERVER_FABRIC_IPS, Dataplane, SERVING_GATE } from './dataplane.ts';
import type { KubeObject } from './kube.ts';

export const SCENARIOS = ['recreate', 'in-place', 'pod', 'combined', 'control'] as const;
export type Scenario = (typeof SCENARIOS)[number];
export const KINDS = ['dns', 'env', 'long', 'kubernetes'] as const;
/** Node port of the NodePort Service web-<i>: NODE_PORT_BASE + i. */
export const NODE_PORT_BASE = 30100;
/** How many of the Services are type NodePort unless ZeroDowntimeOptions.nodePorts says otherwise. */
export const DEFAULT_NODE_PORTS = 3;

export const SVC_OLD = '10.96.0.0/16';
export const SVC_NEW = '10.100.0.0/16';
export const POD_OLD = '10.244.0.0/16';
export const POD_NEW = '10.50.0.0/16';
const DNS_OLD = '10.96.0.10';
const DNS_NEW = '10.100.0.10';
const NS = 'zd';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ZeroDowntimeOptions {
  scenario: Scenario;
  services: number;
  replicas: number;
  /** Probe interval per client, ms. */
  intervalMs: number;
  /** Probe timeout per request, ms (default 1000). */
  timeoutMs?: number;
  nodes?: number;
  proxyMode?: 'iptables' | 'nftables';
  /** apply/resume --propagation-delay (default: the tool's default). */
  propagationDelay?: string;
  /**
   * How long a deleted pod keeps serving (the data plane's terminationGraceMs; default its 5 s, like CoreDNS's
   * lameduck): the EndpointSlice controller and kube-proxy must drop it within that time.
   */
  terminationGraceMs?: number;
  /** Seconds of probing before the migration and after it (default 3). */
  settleSeconds?: number;
  /**
   * control: seconds of probing before the restart (default 60), so that kube-proxy's conntrack table holds
   * what a migration's restart finds there (30 s of lookups: the UDP timeout).
   */
  controlWarmupSeconds?: number;
  /** Kubernetes version of the testbed and its data plane (default ZERO_DOWNTIME_VERSION). */
  version?: string;
  /**
   * How many of the Services (web-0 …) are type NodePort and probed on their node port by the nodeport client
   * (default DEFAULT_NODE_PORTS, at most `services`; 0: none, and no nodeport client).
   */
  nodePorts?: number;
  /**
   * in-place and combined: plan with `--nodeport-cover` naming every node's fabric address (kube-proxy's
   * --bind-address here, where it serves node ports: the testbed's Node objects do not show it), after publishing
   * the data plane's kube-proxy mode (its --proxy-mode) in ConfigMap kube-system/kube-proxy as kubeadm does, since
   * the tool refuses the cover where it cannot read the mode. Default false.
   */
  nodePortCover?: boolean;
  log?: (m: string) => void;
}

export interface KindFigures {
  requests: number;
  failures: number;
  longestGapMs: number;
  failuresByReason: Record<string, number>;
  breaks?: number;
}

/**
 * The nodeport clients' figures, apart from the other kinds: kube-proxy's NodePort rules of a Service moved in place
 * are gone from a node that syncs between the move's ExternalName write and its last write (docs/service-migration.md).
 */
export interface NodePortFigures {
  /** NodePort Services probed */
  services: number;
  requests: number;
  failures: number;
  failuresByReason: Record<string, number>;
  /** failures per phase (from the probes' failure lines) */
  failuresByPhase: Record<string, number>;
  /** the longest time without a success of one nodeport client (start and end windows included): the window */
  longestGapMs: number;
  /** the phase in which that gap began */
  longestGapPhase?: string;
  /** per Service (namespace/name): over all prober runs */
  byService: Record<string, { nodePort: number; requests: number; failures: number; longestGapMs: number; longestGapPhase?: string }>;
  /** the first failure lines */
  sampleFailures: string[];
}

export interface ScenarioFigures {
  scenario: Scenario;
  services: number;
  replicas: number;
  proxyMode: string;
  requests: number;
  failures: number;
  dnsFailures: number;
  longestGapMs: number;
  byKind: Record<string, KindFigures>;
  /**
   * failures per phase of the run (from the probes' failure lines); like requests, failures, dnsFailures and
   * longestGapMs, of the dns, env, long and kubernetes clients: the nodeport client's are in `nodePorts`
   */
  failuresByPhase: Record<string, number>;
  /** the nodeport clients (undefined: no NodePort Services) */
  nodePorts?: NodePortFigures;
  /** phase start, ms since the first prober started */
  phases: Record<string, number>;
  migrationMs: number;
  exitCodes: number[];
  /** prober processes (one per prober pod incarnation) */
  probers: number;
  /**
   * Each pod the tool handed over (udp-handover.ts), read in its own netns and on the nodes' conntrack tables:
   * seconds after it left its Services when it received its last datagram (drained: no node sent it anything after),
   * and when the tool evicted it (evicted); drained ≤ evicted is the rule holding, evicted − drained how much longer
   * than needed it stayed.
   */
  handovers: HandoverFigures[];
  /** the first failure lines, for a report */
  sampleFailures: string[];
  dir: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface HandoverFigures {
  pod: string;
  ip: string;
  /** Most UDP conntrack entries DNATed to it seen at once, summed over the nodes (live or idle). */
  maxEntries: number;
  /** UDP datagrams it received after it left its Services (lookups still sent to it). */
  datagramsAfterRelease: number;
  /**
   * Seconds from leaving its Services to the last datagram it received (0: none after it left): from then on no
   * node sent it anything. Idle conntrack entries to it may live on (up to the 120 s UDP stream timeout): they
   * carry nothing, so they are not counted.
   */
  drainedS?: number;
  /** Seconds from leaving its Services until the tool evicted it (undefined: not seen). */
  evictedS?: number;
}

/**
 * Every 250 ms, the pods held by a hand-over (label kube-renumber.io/handover): the UDP datagrams each received
 * (its netns's /proc/net/snmp, Udp InDatagrams) and, on every node, the UDP conntrack entries whose reply comes
 * from its IP (port 53: DNATed to that pod).
 */
function trackHandovers(tb: Testbed, dp: Dataplane): { stop: () => Promise<HandoverFigures[]> } {
  let on = true;
  interface Track { pod: string; ns: string; name: string; ip: string; releasedAt?: number; evictedAt?: number; maxEntries: number; inAtRelease?: number; inLast?: number; lastInAt?: number }
  const seen = new Map<string, Track>();
  const udpIn = async (h: Track): Promise<number | undefined> => {
    const netns = dp.podNetns({ namespace: h.ns, name: h.name });
    if (!netns) return undefined;
    const r = await dp.exec(netns, 'cat', ['/proc/net/snmp']).catch(() => undefined);
    const udp = (r?.stdout ?? '').split('\n').filter((l) => l.startsWith('Udp:'));
    if (udp.length < 2) return undefined;
    const names = udp[0]!.split(/\s+/);
    const values = udp[1]!.split(/\s+/);
    const v = Number(values[names.indexOf('InDatagrams')]);
    return Number.isFinite(v) ? v : undefined;
  };
  const loop = (async () => {
    while (on) {
      try {
        const pods = (await tb.client.list('/api/v1/pods?labelSelector=kube-renumber.io%2Fhandover')).items as KubeObject[];
        const listed = new Set<string>();
        for (const p of pods) {
          const ip = p.status?.podIP as string | undefined;
          if (!ip) continue;
          const uid = p.metadata.uid ?? p.metadata.name;
          listed.add(uid);
          const h = seen.get(uid) ?? { pod: `${p.metadata.namespace}/${p.metadata.name}`, ns: p.metadata.namespace as string, name: p.metadata.name as string, ip, maxEntries: 0 };
          seen.set(uid, h);
          let state: { stage?: string; releasedAt?: string } = {};
          try { state = JSON.parse(p.metadata.annotations?.['kube-renumber.io/handover'] ?? '{}'); } catch { /* not yet */ }
          if (state.stage === 'released' && state.releasedAt && h.releasedAt === undefined) h.releasedAt = Date.parse(state.releasedAt);
          if (p.metadata.deletionTimestamp && h.evictedAt === undefined) h.evictedAt = Date.now();
        }
        // gone from the list between two rounds: evicted and deleted at once
        for (const [uid, h] of seen) if (!listed.has(uid) && h.evictedAt === undefined) h.evictedAt = Date.now();
        const watch = [...seen.values()].filter((h) => h.releasedAt !== undefined && h.evictedAt === undefined);
        if (watch.length > 0) {
          const nodes = (await tb.client.list('/api/v1/nodes')).items.map((n: KubeObject) => n.metadata.name as string);
          const tables = await Promise.all(nodes.map((n: string) => dp.exec(dp.nodeNetns(n), 'sh', ['-c', "grep ' udp ' /proc/net/nf_conntrack || true"]).then((r) => r.stdout, () => '')));
          for (const h of watch) {
            const re = new RegExp(` src=${h.ip.replaceAll('.', '\\.')} dst=\\S+ sport=53 `);
            const n = tables.reduce((a, t) => a + t.split('\n').filter((l) => re.test(l)).length, 0);
            h.maxEntries = Math.max(h.maxEntries, n);
            const count = await udpIn(h);
            if (count === undefined) continue;
            if (h.inAtRelease === undefined) h.inAtRelease = count;
            else if (count > (h.inLast ?? h.inAtRelease)) h.lastInAt = Date.now();
            h.inLast = count;
          }
        }
      } catch { /* the apiserver restarts meanwhile: next round */ }
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      const s = (t: number | undefined, from: number | undefined) => (t !== undefined && from !== undefined ? round((t - from) / 1000) : undefined);
      return [...seen.values()].map((h) => {
        const measured = h.inAtRelease !== undefined;
        const drainedS = !measured ? undefined : h.lastInAt === undefined ? 0 : s(h.lastInAt, h.releasedAt);
        const evictedS = s(h.evictedAt, h.releasedAt);
        return {
          pod: h.pod, ip: h.ip, maxEntries: h.maxEntries, datagramsAfterRelease: (h.inLast ?? 0) - (h.inAtRelease ?? 0),
          ...(drainedS !== undefined ? { drainedS } : {}),
          ...(evictedS !== undefined ? { evictedS } : {}),
        };
      });
    },
  };
}

/**
 * The Kubernetes version the zero-downtime scenarios run (control plane and data plane). 1.36 is the first
 * kube-proxy that deletes stale UDP conntrack entries in linear time (kubernetes/kubernetes#135323): on 1.32–1.35
 * a CoreDNS restart under load leaves lookups going to the gone pods for tens of seconds, migration or not.
 * The suite's DEFAULT_VERSION (1.37) is such a version, so both run on one build.
 */
export const ZERO_DOWNTIME_VERSION = DEFAULT_VERSION;

/**
 * Diagnostics (KUBE_RENUMBER_ZD_TRACE=1): every 200 ms, the kube-system pods and the EndpointSlices of the DNS
 * Services (kube-dns, its bridge and cover), written to `file` whenever they change, with seconds since t0.
 */
function traceKubeDNS(tb: Testbed, dp: Dataplane, t0: number, file: string): { stop: () => Promise<void> } {
  let on = true;
  const fd = openSync(file, 'a');
  let last = '';
  const loop = (async () => {
    while (on) {
      try {
        const [slices, pods] = await Promise.all([
          tb.client.list('/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices'),
          tb.client.list('/api/v1/namespaces/kube-system/pods'),
        ]);
        const nodes = (await tb.client.list('/api/v1/nodes')).items.map((n: KubeObject) => n.metadata.name as string);
        const perNode = await Promise.all(nodes.map(async (node: string) => {
          const r = await dp.exec(dp.nodeNetns(node), 'sh', ['-c', `grep 'udp' /proc/net/nf_conntrack | grep ' dport=53 ' | grep ' dst=${DNS_OLD} ' ; iptables-save -t nat 2>/dev/null | grep -E 'kube-dns-kr-old:dns" .*DNAT' ; nft list table ip kube-proxy 2>/dev/null | grep -A1 -E 'chain (endpoint|service)-.*kube-dns-kr-old/udp/dns' | grep dnat`]);
          const ct = new Map<string, number>();
          const rules: string[] = [];
          for (const l of r.stdout.split('\n')) {
            const m = /^ipv4 .* udp .* src=(\S+) dst=\S+ sport=(\d+) .*src=(\S+) dst=\S+ sport=53 /.exec(l);
            if (m) { const k = `${m[3]}${/UNREPLIED/.test(l) ? '?' : ''}`; ct.set(k, (ct.get(k) ?? 0) + 1); continue; }
            // iptables `--to-destination IP:PORT`; nftables up to 1.35 `dnat to IP:PORT`, from 1.36 `map { 0 : IP . PORT, … }`
            const d = /(?:--to-destination|dnat to) (\S+)/.exec(l);
            if (d) rules.push(d[1]!);
            else for (const e of l.matchAll(/\d+ : ([\d.]+) \. (\d+)/g)) rules.push(`${e[1]}:${e[2]}`);
          }
          return [`rules ${node} bridge→ ${rules.sort().join(' ')}`, `conntrack ${node} ${DNS_OLD}:53→ ${[...ct].sort().map(([k, v]) => `${k}×${v}`).join(' ')}`];
        }));
        const lines = [
          ...perNode.flat(),
          ...(pods.items as KubeObject[]).map((p) => `pod ${p.metadata.name} ${p.status?.podIP ?? '-'}${p.metadata.deletionTimestamp ? ' deleting' : ''} ready=${(p.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready')?.status ?? '-'}`),
          ...(slices.items as KubeObject[]).map((sl) => `slice ${sl.metadata.labels?.['kubernetes.io/service-name']} ${sl.metadata.name}: ${((sl.endpoints ?? []) as { addresses: string[]; conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean } }[])
            .map((e) => `${e.addresses[0]}${e.conditions?.ready ? 'R' : ''}${e.conditions?.serving ? 'S' : ''}${e.conditions?.terminating ? 'T' : ''}`).sort().join(' ')}`),
        ].sort().join('\n');
        if (lines !== last) {
          writeFileSync(fd, `--- ${((Date.now() - t0) / 1000).toFixed(2)} s\n${lines}\n`);
          last = lines;
        }
      } catch (e) {
        writeFileSync(fd, `--- ${((Date.now() - t0) / 1000).toFixed(2)} s error ${(e as Error).message}\n`);
      }
      await sleep(200);
    }
  })();
  return { stop: async () => { on = false; await loop; closeSync(fd); } };
}
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function until<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs = 180_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** `<NAME>_SERVICE_HOST` as the kubelet spells it. */
const envName = (svc: string) => `${svc.toUpperCase().replace(/-/g, '_')}_SERVICE_HOST`;

interface Prober { pod: string; uid: string; proc: ChildProcess; exited: Promise<number>; out: string; err: string; stopping: boolean; startedAt: number }

/**
 * Plays the kubelet for the prober pods: starts `kube-renumber probe` in each wired prober pod's netns with
 * the environment a container would get at start, and stops it (SIGTERM) when its pod is deleted.
 */
class ProberKubelet {
  clusterDNS = DNS_OLD;
  /** Give the probe --node-address (the fabric address of its pod's node) for its nodeport client. */
  nodeAddress = false;
  readonly probers: Prober[] = [];
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #n = 0;
  #lastError = 0;
  readonly tb: Testbed;
  readonly dp: Dataplane;
  readonly dir: string;
  readonly args: string[];
  readonly log: (m: string) => void;
  constructor(tb: Testbed, dp: Dataplane, dir: string, args: string[], log: (m: string) => void) {
    this.tb = tb;
    this.dp = dp;
    this.dir = dir;
    this.args = args;
    this.log = log;
  }

  start(): void {
    this.#timer = setInterval(() => { void this.tick(); }, 100);
  }

  running(): Prober[] { return this.probers.filter((p) => !p.stopping); }

  async tick(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const pods = (await this.tb.client.list(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dprober`)).items as KubeObject[];
      const live = new Map(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => [p.metadata.uid, p]));
      for (const pr of this.probers) {
        if (!pr.stopping && !live.has(pr.uid)) {
          pr.stopping = true;
          pr.proc.kill('SIGTERM');
        }
      }
      const wired = new Map(this.dp.pods().map((w) => [`${w.namespace}/${w.name}`, w]));
      for (const p of live.values()) {
        if (this.probers.some((x) => x.uid === p.metadata.uid)) continue;
        const w = wired.get(`${NS}/${p.metadata.name}`);
        if (!w || w.ip !== p.status?.podIP || p.status?.phase !== 'Running') continue;
        await this.#startProbe(p, w.netns);
      }
    } catch (e) {
      // the apiserver restarts during a migration: say so once in a while, not every 100 ms
      if (Date.now() - this.#lastError > 5000) this.log(`prober kubelet: ${e instanceof Error ? e.message : e} (retrying)`);
      this.#lastError = Date.now();
    } finally {
      this.#busy = false;
    }
  }

  async #startProbe(pod: KubeObject, netns: string): Promise<void> {
    // what the kubelet puts in a container's environment at start
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
    for (const s of (await this.tb.client.list(`/api/v1/namespaces/${NS}/services`)).items as KubeObject[]) {
      if (s.spec?.clusterIP && s.spec.clusterIP !== 'None') env[envName(s.metadata.name)] = s.spec.clusterIP;
    }
    const k = await this.tb.client.get('/api/v1/namespaces/default/services/kubernetes');
    env.KUBERNETES_SERVICE_HOST = k.spec.clusterIP;
    env.KUBERNETES_SERVICE_PORT = '443';
    const k8sAddr = `${k.spec.clusterIP}:443`;
    const n = ++this.#n;
    const out = join(this.dir, `probe-${n}.json`);
    const err = join(this.dir, `probe-${n}.stderr`);
    const code = `import { main } from ${JSON.stringify(join(ROOT, 'src/cli/main.ts'))}; process.exitCode = await main(process.argv.slice(1));`;
    const node = this.nodeAddress ? this.dp.nodeFabricIP(pod.spec.nodeName) : undefined;
    const argv = ['probe', '--dns-server', this.clusterDNS, '--kubernetes-address', k8sAddr, ...(node ? ['--node-address', node] : []), ...this.args];
    const fo = openSync(out, 'w');
    const fe = openSync(err, 'w');
    const proc = spawn('ip', ['netns', 'exec', netns, process.execPath, '--input-type=module', '-e', code, ...argv], { stdio: ['ignore', fo, fe], env });
    closeSync(fo);
    closeSync(fe);
    const exited = new Promise<number>((r) => proc.on('close', (c, sig) => r(c ?? (sig ? 128 : 1))));
    this.probers.push({ pod: pod.metadata.name, uid: pod.metadata.uid ?? "", proc, exited, out, err, stopping: false, startedAt: Date.now() });
    this.log(`prober ${n} started in pod ${NS}/${pod.metadata.name} (dns ${this.clusterDNS}, kubernetes ${k8sAddr}${node ? `, node ports at ${node} (${pod.spec.nodeName})` : ''})`);
  }

  /** Stops every prober and returns the reports with their failure lines. */
  async stop(): Promise<{ report: ProbeReport; stderr: string }[]> {
    if (this.#timer) clearInterval(this.#timer);
    while (this.#busy) await sleep(20);
    for (const p of this.probers) if (!p.stopping) { p.stopping = true; p.proc.kill('SIGTERM'); }
    const out: { report: ProbeReport; stderr: string }[] = [];
    for (const p of this.probers) {
      const c = await Promise.race([p.exited, sleep(20_000).then(() => -1)]);
      if (c === -1) p.proc.kill('SIGKILL');
      const text = existsSync(p.out) ? readFileSync(p.out, 'utf8').trim() : '';
      const stderr = existsSync(p.err) ? readFileSync(p.err, 'utf8') : '';
      try {
        out.push({ report: JSON.parse(text) as ProbeReport, stderr });
      } catch {
        throw new Error(`prober in pod ${p.pod} exited ${c} without a JSON report: ${stderr.slice(-1500)}`);
      }
    }
    return out;
  }
}

const spread = (app: Record<string, string>) => ({
  podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector: { matchLabels: app }, topologyKey: 'kubernetes.io/hostname' } }] },
});

function deployment(name: string, namespace: string, labels: Record<string, string>, replicas: number, ports: Record<string, unknown>[]): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace },
    spec: {
      replicas, selector: { matchLabels: labels },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels },
        spec: {
          affinity: spread(labels),
          readinessGates: [{ conditionType: SERVING_GATE }],
          containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', ports }],
        },
      },
    },
  } as KubeObject;
}

/** The phases of a run, in order; a failure at time t belongs to the last phase started at or before t. */
export const PHASES = ['baseline', 'apply', 'restart-apiserver', 'resume-to-workloads', 'restart-workloads', 'restart-controller-manager', 'resume-to-end', 'tail'] as const;

/**
 * Calls `started` when the run's journal shows `step` started, `done` when it shows it done (polled every 100 ms), each
 * once; a phase mark of the harness from the run's own journal.
 */
function followStep(journal: string, step: string, started: () => void, done: () => void): { stop(): void } {
  let seenStart = false;
  let seenDone = false;
  const tick = () => {
    if (!existsSync(journal)) return;
    for (const l of readFileSync(journal, 'utf8').split('\n')) {
      if (!l.includes(`"step":"${step}"`)) continue;
      if (!seenStart && l.includes('"event":"step-start"')) { seenStart = true; started(); }
      if (seenStart && !seenDone && l.includes('"event":"step-done"')) { seenDone = true; done(); }
    }
  };
  const t = setInterval(tick, 100);
  return { stop: () => { clearInterval(t); tick(); } };
}

function phaseOf(t: number, marks: Record<string, number>): string {
  let cur = 'baseline';
  let at = -Infinity;
  for (const [p, m] of Object.entries(marks)) if (m <= t && m >= at) { cur = p; at = m; }
  return cur;
}

export async function runZeroDowntime(o: ZeroDowntimeOptions): Promise<ScenarioFigures> {
  const log = o.log ?? (() => {});
  const scenario = o.scenario;
  const calico = scenario === 'pod' || scenario === 'combined';
  const nodes = o.nodes ?? 2;
  const dir = mkdtempSync(join(tmpdir(), `kr-zd-${scenario}-`));
  log(`[${scenario}] starting a ${nodes}-node testbed and its data plane (${o.proxyMode ?? 'iptables'})`);
  const tb = await Testbed.start({
    serviceCIDR: SVC_OLD, podCIDR: POD_OLD, nodes, calicoCRDs: calico, podIPAM: calico ? 'calico' : 'kwok', calicoDefaultPool: calico,
    // two apiservers, restarted one at a time, as a real control plane is rolled: the `kubernetes` Service keeps
    // an endpoint throughout (one apiserver restarting alone is an outage of the API, whatever the migration)
    apiserverAdvertiseAddresses: [...APISERVER_FABRIC_IPS],
    version: o.version ?? ZERO_DOWNTIME_VERSION,
  });
  let dp: Dataplane | undefined;
  let kubelet: ProberKubelet | undefined;
  // pollers stopped in `finally` too: a scenario that throws must not leave one looping (its timers kept the test
  // file's process alive after it failed, and the suite waited on it)
  let pollers: Array<{ stop(): Promise<unknown> }> = [];
  try {
    dp = await Dataplane.start(tb, { proxyMode: o.proxyMode ?? 'iptables', ...(o.terminationGraceMs !== undefined ? { terminationGraceMs: o.terminationGraceMs } : {}) });
    dp.follow();
    const c = tb.client;
    await c.create({
      apiVersion: 'v1', kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        selector: { 'k8s-app': 'kube-dns' }, clusterIP: DNS_OLD,
        ports: [{ name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 }, { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 }],
      },
    });
    await c.create(deployment('coredns', 'kube-system', { 'k8s-app': 'kube-dns' }, 2, [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' }]));
    await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await until('default ServiceAccount', () => c.getOrUndefined(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    const names = Array.from({ length: o.services }, (_, i) => `web-${i}`);
    const nodePortCount = Math.min(o.nodePorts ?? DEFAULT_NODE_PORTS, o.services);
    const nodePorts = names.slice(0, nodePortCount).map((name, i) => ({ name, nodePort: NODE_PORT_BASE + i }));
    for (const [i, name] of names.entries()) {
      await c.create(deployment(name, NS, { app: name }, o.replicas, [{ containerPort: 8080 }]));
      const np = nodePorts[i];
      await c.create({
        apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS },
        spec: np
          ? { type: 'NodePort', externalTrafficPolicy: 'Cluster', selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: np.nodePort }] }
          : { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
    }
    await c.create(deployment('prober', NS, { app: 'prober' }, 1, [{ containerPort: 8080 }]));
    // CoreDNS first (rolloutRestartAll relies on it)
    const deployments = [['kube-system', 'coredns'], ...names.map((n) => [NS, n]), [NS, 'prober']] as [string, string][];
    const available = async (which: [string, string][]) => {
      for (const [ns, name] of which) {
        const d = await c.get(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
        const want = d.spec.replicas;
        if (d.status?.observedGeneration !== d.metadata.generation || d.status?.updatedReplicas !== want || d.status?.availableReplicas !== want || (d.status?.replicas ?? 0) !== want) return false;
      }
      return true;
    };
    await until('every Deployment available (pods wired and serving)', () => available(deployments), 300_000, 500);
    // ready endpoints are not yet rules: the prober starts once every node's kube-proxy routes every Service
    const svcIPs = await Promise.all(names.map(async (n) => (await c.get(`/api/v1/namespaces/${NS}/services/${n}`)).spec.clusterIP as string));
    await dp.waitServicesProgrammed([
      ...svcIPs.map((ip) => ({ ip, port: 80 })),
      { ip: DNS_OLD, port: 53, protocol: 'udp' as const }, { ip: DNS_OLD, port: 53 },
    ], 120_000);
    if (nodePorts.length > 0) await dp.waitNodePortsProgrammed(nodePorts.map((np) => ({ port: np.nodePort })), 120_000);
    log(`[${scenario}] ${o.services} Services × ${o.replicas} pods serving${nodePorts.length ? ` (${nodePorts.length} NodePort: ${nodePorts.map((np) => np.nodePort).join(', ')})` : ''}`);

    const kinds = nodePorts.length > 0 ? [...KINDS, 'nodeport'] : [...KINDS];
    const probeArgs = [...names.flatMap((n) => ['--service', `${NS}/${n}:80`]), ...nodePorts.flatMap((np) => ['--nodeport', `${NS}/${np.name}:${np.nodePort}`]),
      '--kinds', kinds.join(','), '--protocol', 'http', '--interval', `${o.intervalMs}ms`, '--timeout', `${o.timeoutMs ?? 1000}ms`, '-v', '-o', 'json'];
    kubelet = new ProberKubelet(tb, dp, dir, probeArgs, log);
    kubelet.nodeAddress = nodePorts.length > 0;
    kubelet.start();
    await until('the prober to run', async () => kubelet!.running().length > 0, 60_000, 100);
    const t0 = kubelet.running()[0]!.startedAt;
    const marks: Record<string, number> = { baseline: 0 };
    const mark = (ph: string) => { marks[ph] = Date.now() - t0; log(`[${scenario}] ${ph} at ${round(marks[ph]! / 1000)} s`); };
    const trace = process.env.KUBE_RENUMBER_ZD_TRACE === '1' ? traceKubeDNS(tb, dp, t0, join(dir, 'trace.log')) : undefined;
    const handoverTrack = trackHandovers(tb, dp);
    pollers = [handoverTrack, ...(trace ? [trace] : [])];
    await sleep((o.settleSeconds ?? 3) * 1000);

    const planPath = join(dir, 'plan.yaml');
    const common = ['--kubeconfig', tb.kubeconfigPath, '--state-dir', join(dir, 'state'), '--yes', '--timeout', '180s',
      ...(o.propagationDelay ? ['--propagation-delay', o.propagationDelay] : [])];
    const exitCodes: number[] = [];
    const step = async (argv: string[]) => {
      const r = await cli(argv);
      exitCodes.push(r.code);
      writeFileSync(join(dir, `cli-${exitCodes.length}-${argv[0]}.stderr`), r.err);
      const last = r.err.trim().split('\n').slice(-2).join(' | ');
      log(`[${scenario}] ${argv[0]} → ${r.code}${last ? `: ${last.slice(0, 300)}` : ''}`);
      return r;
    };
    const resumeUntil = async (what: RegExp | 'end', acks: string[]) => {
      for (let i = 0; ; i++) {
        const r = await step(['resume', planPath, ...acks, ...common]);
        if (what === 'end' ? r.code === 0 : r.code === 7 && what.test(r.err)) return r;
        if (r.code !== 7 || i >= 3) throw new Error(`resume: expected ${what}, got ${r.code}: ${r.err.slice(-2000)}`);
        await sleep(1000);
      }
    };
    // The control scenario's restarts, as an operator would do them on a small cluster: CoreDNS first, then the rest
    // 5 Deployments at a time (all 50 at once would put ~100 pod starts on the testbed's 2 cores in the same second).
    // The Service scenarios' step restart-workloads does the same with --parallel 5.
    const rolloutRestartAll = async () => {
      for (let i = 0; i < deployments.length; i += i === 0 ? 1 : 5) {
        const wave = i === 0 ? deployments.slice(0, 1) : deployments.slice(i, i + 5);
        const ns = wave[0]![0];
        const rr = await tb.kubectl(['rollout', 'restart', '-n', ns, ...wave.map(([, name]) => `deployment/${name}`)]);
        if (rr.code !== 0) throw new Error(`rollout restart -n ${ns}: ${rr.stderr}`);
        await sleep(500);
        await until(`${wave.length} Deployment(s) rolled out`, () => available(wave), 600_000, 300);
      }
    };
    const tm = Date.now();
    if (scenario === 'control') {
      await sleep((o.controlWarmupSeconds ?? 60) * 1000);
      mark('restart-workloads');
      await rolloutRestartAll();
    } else {
      const planArgs = ['plan', '--kubeconfig', tb.kubeconfigPath, '-o', 'yaml'];
      if (scenario !== 'pod') planArgs.push('--service-cidr', SVC_NEW, '--apiserver-cert-san', '10.96.0.1', '--apiserver-cert-san', '10.100.0.1');
      if (scenario === 'recreate' || scenario === 'in-place') planArgs.push('--strategy', scenario, '--parallel', '5');
      if (scenario === 'combined') planArgs.push('--strategy', 'in-place');
      if (calico) planArgs.push('--pod-cidr', POD_NEW);
      if (o.nodePortCover && (scenario === 'in-place' || scenario === 'combined')) {
        // kube-proxy's configuration as kubeadm publishes it: the mode the data plane's kube-proxies run with
        await c.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-proxy', namespace: 'kube-system' },
          data: { 'config.conf': `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ${dp.proxyMode}\n` } });
        const fabric = ((await c.list('/api/v1/nodes')).items as Array<{ metadata: { name: string } }>).map((n) => dp!.nodeFabricIP(n.metadata.name));
        planArgs.push('--nodeport-cover', fabric.join(','));
        log(`[${scenario}] --nodeport-cover ${fabric.join(',')} (kube-proxy ${dp.proxyMode})`);
      }
      const pl = await cli(planArgs);
      if (pl.code !== 0 && pl.code !== 1) throw new Error(`plan exited ${pl.code}: ${pl.err}`);
      writeFileSync(planPath, pl.out);
      mark('apply');
      const podGate = async () => {
        mark('restart-controller-manager');
        const kcm = await tb.restartControllerManager({ clusterCIDR: POD_NEW, allocateNodeCIDRs: false });
        if (!kcm.running) throw new Error('kube-controller-manager did not start with the gate\'s flags');
        mark('resume-to-end');
      };
      if (scenario === 'pod') {
        const a = await step(['apply', planPath, ...common]);
        if (a.code !== 7 || !/pod-cidr-config/.test(a.err)) throw new Error(`apply: expected the pod-cidr-config gate, got ${a.code}: ${a.err.slice(-2000)}`);
        await podGate();
        await resumeUntil('end', ['--ack-gate', 'pod-cidr-config']);
      } else {
        const a = await step(['apply', planPath, ...common]);
        if (a.code !== 7 || !/restart-apiservers/.test(a.err)) throw new Error(`apply: expected the restart-apiservers gate, got ${a.code}: ${a.err.slice(-2000)}`);
        mark('restart-apiserver');
        await tb.restartApiserver({ serviceCIDR: SVC_NEW });
        // the kubelets now hand the new DNS IP to every pod they start (kubelet clusterDNS changed)
        kubelet.clusterDNS = DNS_NEW;
        mark('resume-to-workloads');
        if (scenario === 'combined') {
          await resumeUntil(/pod-cidr-config/, ['--ack-gate', 'kubelet-cluster-dns']);
          await podGate();
          await resumeUntil('end', ['--ack-gate', 'kubelet-cluster-dns', '--ack-gate', 'pod-cidr-config']);
        } else {
          // the run restarts the workloads itself (step restart-workloads): its phases from the run's journal
          const follow = followStep(join(dir, 'state', 'journal.jsonl'), 'restart-workloads', () => mark('restart-workloads'), () => mark('resume-to-end'));
          try {
            await resumeUntil('end', ['--ack-gate', 'kubelet-cluster-dns']);
          } finally {
            follow.stop();
          }
          if (marks['restart-workloads'] === undefined) throw new Error('the run did not restart the workloads (no step restart-workloads in its journal)');
        }
      }
    }
    const migrationMs = Date.now() - tm;
    mark('tail');
    await sleep((o.settleSeconds ?? 3) * 1000);
    const runs = await kubelet.stop();
    await trace?.stop();
    const handovers = await handoverTrack.stop();
    kubelet = undefined;
    pollers = [];
    log(`[${scenario}] ${runs.length} prober run(s); reports and failure lines in ${dir}`);

    const byKind: Record<string, KindFigures> = {};
    let longest = 0;
    const totals = { requests: 0, failures: 0, dnsFailures: 0 };
    const failuresByPhase: Record<string, number> = {};
    const sampleFailures: string[] = [];
    const np: NodePortFigures = { services: nodePorts.length, requests: 0, failures: 0, failuresByReason: {}, failuresByPhase: {}, longestGapMs: 0, byService: {}, sampleFailures: [] };
    for (const { report, stderr } of runs) {
      const base = Date.parse(report.startedAt) - t0;
      for (const res of report.results) {
        const k = (byKind[res.kind] ??= { requests: 0, failures: 0, longestGapMs: 0, failuresByReason: {} });
        k.requests += res.requests;
        k.failures += res.failures;
        // the windows before a client's first and after its last success count too: a client of an old IP that
        // fails from a move until its pod is restarted has its outage there (otherwise they are one interval)
        const gaps = [res.longestGap, res.startGap, res.endGap].filter((g) => g !== undefined);
        const widest = gaps.reduce((a, g) => (g.ms > a.ms ? g : a), gaps[0]!);
        const gap = widest.ms;
        k.longestGapMs = Math.max(k.longestGapMs, round(gap));
        for (const [reason, n] of Object.entries(res.failuresByReason)) k.failuresByReason[reason] = (k.failuresByReason[reason] ?? 0) + (n ?? 0);
        if (res.breaks !== undefined) k.breaks = (k.breaks ?? 0) + res.breaks;
        if (res.kind === 'nodeport') {
          np.requests += res.requests;
          np.failures += res.failures;
          for (const [reason, n] of Object.entries(res.failuresByReason)) np.failuresByReason[reason] = (np.failuresByReason[reason] ?? 0) + (n ?? 0);
          const phase = phaseOf(widest.fromMs + base, marks);
          const svc = (np.byService[res.service] ??= { nodePort: res.port, requests: 0, failures: 0, longestGapMs: 0 });
          svc.requests += res.requests;
          svc.failures += res.failures;
          if (gap > svc.longestGapMs) { svc.longestGapMs = round(gap); svc.longestGapPhase = phase; }
          if (gap > np.longestGapMs) { np.longestGapMs = round(gap); np.longestGapPhase = phase; }
          continue;
        }
        totals.requests += res.requests;
        totals.failures += res.failures;
        totals.dnsFailures += res.dnsFailures;
        longest = Math.max(longest, gap);
      }
      // failure lines "<s>s <kind> <ns/name>[ <addr>]: <reason>..." → phase, on this harness's clock
      for (const l of stderr.split('\n')) {
        const m = /^(\d+\.\d+)s (\w+) \S+/.exec(l);
        if (!m) continue;
        const ph = phaseOf(Number(m[1]) * 1000 + base, marks);
        const [byPhase, samples] = m[2] === 'nodeport' ? [np.failuresByPhase, np.sampleFailures] : [failuresByPhase, sampleFailures];
        byPhase[ph] = (byPhase[ph] ?? 0) + 1;
        if (samples.length < 20) samples.push(`[${ph}] ${l}`);
      }
    }
    return {
      scenario, services: o.services, replicas: o.replicas, proxyMode: o.proxyMode ?? 'iptables',
      requests: totals.requests, failures: totals.failures, dnsFailures: totals.dnsFailures,
      longestGapMs: round(longest), byKind, failuresByPhase, ...(nodePorts.length > 0 ? { nodePorts: np } : {}),
      phases: marks, migrationMs, exitCodes, probers: runs.length, handovers, sampleFailures, dir,
    };
  } finally {
    for (const p of pollers) await p.stop().catch(() => undefined);
    if (kubelet) await kubelet.stop().catch(() => []);
    if (dp) await dp.stop();
    await tb.stop();
  }
}
