// Runs the containers of kwok pods on this machine, as a kubelet with a container runtime would, for a testbed
// started with { kubeletLogs: true } (cluster.ts). kwok gives the pods their status; this gives them a process
// and a log that the apiserver serves as pods/log (through kwok's kubelet server).
//
//   const runner = PodRunner.start(tb, { namespace: 'probe', env: { WEB_SERVICE_HOST: '127.0.0.1' } });
//   ...                     // pods in that namespace that are Running get their container started
//   runner.runs             // what ran: pod, uid, the pod object at start, the ConfigMaps, log file, exit code
//   await runner.stop();    // kills what still runs, force-deletes the pods it ran
//
// For each new Running pod of the namespace (scheduled, not terminating):
//   1. annotate it CONTAINER_RUNNER_ANNOTATION (kwok then leaves it Terminating when it is deleted);
//   2. write the ConfigMaps its container mounts into a temp dir (the "volume");
//   3. create a kwok `Logs` object (same name and namespace as the pod) naming the log file;
//   4. run the container's command and args with this machine's Node (`node` → process.execPath, paths under a
//      mount → the temp dir), env = the container's `env` values (downward API fieldRefs status.hostIP,
//      status.podIP, spec.nodeName, metadata.name and metadata.namespace resolved from the pod) + opts.env,
//      stdout/stderr appended to the log file in the CRI format (`<RFC3339Nano> stdout F <line>`), which kwok's
//      server reads.
// When the pod gets a deletionTimestamp: SIGTERM; SIGKILL after terminationGracePeriodSeconds; once the process
// exited, the pod is deleted with grace 0 (as the kubelet does) and the Logs object removed. A pod that disappears
// while its process runs (force-deleted) gets its process SIGKILLed.
// Only the first container of a pod is run; no restarts, no probes, no resolv.conf: tests pass what they need
// (e.g. --dns-server 127.0.0.1:PORT) so that all traffic stays on 127.0.0.1.

import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Testbed } from './cluster.ts';
import type { KubeObject } from './kube.ts';
import { CONTAINER_RUNNER_ANNOTATION } from './stages.ts';

export interface PodRunnerOptions {
  namespace: string;
  /** only pods matching this label selector */
  labelSelector?: string;
  /** added to every container's environment (e.g. NAME_SERVICE_HOST as a kubelet sets it, mapped to loopback) */
  env?: Record<string, string>;
  /** how often pods are listed (default 100 ms) */
  pollMs?: number;
}

export interface ContainerRun {
  pod: string;
  uid: string;
  /** the pod as it was when its container started */
  podObject: KubeObject;
  /** ConfigMaps mounted, by volume name */
  configMaps: Record<string, KubeObject>;
  dir: string;
  logFile: string;
  child: ChildProcess;
  /** exit code (null while running; 128+n for a signal) */
  exitCode: number | null;
  exited: Promise<number>;
  terminating: boolean;
}

const LOGS_PATH = (ns: string, name?: string) => `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${ns}/logs${name ? `/${name}` : ''}`;

export class PodRunner {
  readonly runs: ContainerRun[] = [];
  readonly #tb: Testbed;
  readonly #opts: PodRunnerOptions;
  readonly #root: string;
  readonly #starting = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #stopped = false;
  /** errors met while running pods (a test may assert there were none) */
  readonly errors: string[] = [];

  private constructor(tb: Testbed, opts: PodRunnerOptions) {
    if (!tb.options.kubeletLogs) throw new Error('PodRunner needs a testbed started with { kubeletLogs: true }');
    this.#tb = tb;
    this.#opts = opts;
    this.#root = mkdtempSync(join(tmpdir(), 'kr-pods-'));
  }

  static start(tb: Testbed, opts: PodRunnerOptions): PodRunner {
    const r = new PodRunner(tb, opts);
    r.#timer = setInterval(() => { void r.#tick(); }, opts.pollMs ?? 100);
    return r;
  }

  /** The run of a pod by name, if its container was started. */
  run(pod: string): ContainerRun | undefined {
    return this.runs.find((r) => r.pod === pod);
  }

  async #tick(): Promise<void> {
    if (this.#busy || this.#stopped) return;
    this.#busy = true;
    try {
      const q = this.#opts.labelSelector ? `?labelSelector=${encodeURIComponent(this.#opts.labelSelector)}` : '';
      const pods = (await this.#tb.client.list(`/api/v1/namespaces/${this.#opts.namespace}/pods${q}`)).items;
      const present = new Set(pods.map((p) => p.metadata.uid as string));
      for (const p of pods) {
        const uid = p.metadata.uid as string;
        const run = this.runs.find((r) => r.uid === uid);
        if (!run) {
          if (!p.metadata.deletionTimestamp && p.spec?.nodeName && p.status?.phase === 'Running' && !this.#starting.has(uid)) {
            this.#starting.add(uid);
            this.#startContainer(p).catch((e: unknown) => { this.errors.push(`start ${p.metadata.name}: ${(e as Error).message}`); });
          }
        } else if (p.metadata.deletionTimestamp && !run.terminating) {
          run.terminating = true;
          this.#terminate(run, Number(p.spec?.terminationGracePeriodSeconds ?? 30));
        }
      }
      for (const run of this.runs) {
        if (!present.has(run.uid) && run.exitCode === null) run.child.kill('SIGKILL');
      }
    } catch (e) {
      if (!this.#stopped) this.errors.push(`list: ${(e as Error).message}`);
    } finally {
      this.#busy = false;
    }
  }

  async #startContainer(pod: KubeObject): Promise<void> {
    const client = this.#tb.client;
    const ns = pod.metadata.namespace as string;
    const name = pod.metadata.name as string;
    const uid = pod.metadata.uid as string;
    await client.mergePatch(`/api/v1/namespaces/${ns}/pods/${name}`, { metadata: { annotations: { [CONTAINER_RUNNER_ANNOTATION]: 'pod-runner' } } });
    const c = pod.spec.containers[0];
    const dir = join(this.#root, uid);
    mkdirSync(dir, { recursive: true });
    // volumes: ConfigMaps only
    const configMaps: Record<string, KubeObject> = {};
    const mounts: Array<{ from: string; to: string }> = [];
    for (const m of c.volumeMounts ?? []) {
      const vol = (pod.spec.volumes ?? []).find((v: any) => v.name === m.name);
      if (!vol?.configMap) continue;
      const cm = await client.get(`/api/v1/namespaces/${ns}/configmaps/${vol.configMap.name}`);
      configMaps[m.name] = cm;
      const vdir = join(dir, 'volumes', m.name);
      mkdirSync(vdir, { recursive: true });
      for (const [k, v] of Object.entries((cm.data ?? {}) as Record<string, string>)) writeFileSync(join(vdir, k), v);
      mounts.push({ from: m.mountPath.replace(/\/$/, ''), to: vdir });
    }
    const logFile = join(dir, `${c.name}.log`);
    writeFileSync(logFile, '');
    await client.post(LOGS_PATH(ns), {
      apiVersion: 'kwok.x-k8s.io/v1alpha1', kind: 'Logs', metadata: { name, namespace: ns },
      spec: { logs: [{ containers: [c.name], logsFile: logFile }] },
    });
    const mapPath = (a: string) => {
      for (const m of mounts) if (a === m.from || a.startsWith(`${m.from}/`)) return m.to + a.slice(m.from.length);
      return a;
    };
    const argv = [...(c.command ?? []), ...(c.args ?? [])].map(String).map(mapPath);
    if (argv[0] === 'node') argv[0] = process.execPath;
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    for (const e of c.env ?? []) {
      if (typeof e.value === 'string') env[e.name] = e.value;
      // the downward API, as the kubelet resolves it when it starts the container
      const field = e.valueFrom?.fieldRef?.fieldPath as string | undefined;
      const v = field === undefined ? undefined : ({
        'status.hostIP': pod.status?.hostIP, 'status.podIP': pod.status?.podIP, 'spec.nodeName': pod.spec?.nodeName,
        'metadata.name': name, 'metadata.namespace': ns,
      } as Record<string, string | undefined>)[field];
      if (v !== undefined) env[e.name] = v;
    }
    Object.assign(env, this.#opts.env ?? {});
    const child = spawn(argv[0]!, argv.slice(1), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const cri = (stream: 'stdout' | 'stderr') => {
      let buf = '';
      return {
        data: (d: Buffer) => {
          buf += d.toString('utf8');
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            appendFileSync(logFile, `${new Date().toISOString()} ${stream} F ${buf.slice(0, nl)}\n`);
            buf = buf.slice(nl + 1);
          }
        },
        end: () => { if (buf) appendFileSync(logFile, `${new Date().toISOString()} ${stream} F ${buf}\n`); buf = ''; },
      };
    };
    const out = cri('stdout');
    const err = cri('stderr');
    child.stdout!.on('data', out.data);
    child.stderr!.on('data', err.data);
    const run: ContainerRun = {
      pod: name, uid, podObject: pod, configMaps, dir, logFile, child, exitCode: null, terminating: false,
      exited: new Promise<number>((resolve) => {
        child.on('close', (code, sig) => {
          out.end();
          err.end();
          run.exitCode = code ?? (sig ? 128 + (sig === 'SIGKILL' ? 9 : 15) : 1);
          resolve(run.exitCode);
        });
      }),
    };
    this.runs.push(run);
  }

  #terminate(run: ContainerRun, graceSeconds: number): void {
    run.child.kill('SIGTERM');
    const killer = setTimeout(() => run.child.kill('SIGKILL'), graceSeconds * 1000);
    void run.exited.then(async () => {
      clearTimeout(killer);
      if (this.#stopped) return;
      const ns = this.#opts.namespace;
      await this.#tb.client.raw('DELETE', `/api/v1/namespaces/${ns}/pods/${run.pod}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: run.uid } });
      await this.#tb.client.raw('DELETE', LOGS_PATH(ns, run.pod));
    }).catch((e: unknown) => { this.errors.push(`terminate ${run.pod}: ${(e as Error).message}`); });
  }

  /** Kill a pod's process at once (no SIGTERM, no final words), as a node failure would. */
  kill(pod: string): void {
    this.run(pod)?.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const r of this.runs) if (r.exitCode === null) r.child.kill('SIGKILL');
    await Promise.all(this.runs.map((r) => r.exited));
    const ns = this.#opts.namespace;
    for (const r of this.runs) {
      await this.#tb.client.raw('DELETE', `/api/v1/namespaces/${ns}/pods/${r.pod}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 }).catch(() => {});
      await this.#tb.client.raw('DELETE', LOGS_PATH(ns, r.pod)).catch(() => {});
    }
    rmSync(this.#root, { recursive: true, force: true });
  }
}
