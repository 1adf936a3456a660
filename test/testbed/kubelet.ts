// A real kubelet (k8s.io/kubernetes cmd/kubelet, built by kubelet-build.ts) registered in a testbed, with the
// CRI stand-in fakecri behind it: it registers its node, reports Ready and serves its API (configz) on this
// machine's non-loopback IPv4 address, its InternalIP, which the apiserver's node proxy reaches. No pod runs on it (the fake
// runtime runs nothing): it is there for what kwok does not serve, the kubelet's own configuration.
//
//   const tb = await Testbed.start({ nodes: 0, realKubelets: true });
//   const k = await startKubelet(tb, { name: 'tb-kubelet-0', clusterDNS: ['10.96.0.10'] });
//   await k.restart({ clusterDNS: ['10.100.0.10'] });   // as an operator does after changing its config file
//   await k.stop();
//
// Not 127.0.0.1: the apiserver's node proxy refuses an address that is not global unicast ("address not
// allowed", isProxyableHostname in k8s.io/kubernetes pkg/registry/core/node/strategy.go), so a kubelet on loopback
// could register but never answer GET nodes/NODE/proxy/configz. The node's InternalIP is set by startKubelet as a
// cloud controller would (--cloud-provider=external). Everything lives in the testbed's state directory; the
// kubelet is told to keep off the host: no iptables chains, no QoS cgroups, no node allocatable enforcement, no
// swap check. Authentication is anonymous and authorization AlwaysAllow (the testbed's apiserver has no kubelet
// client certificate): anyone who reaches that address and port while a test runs may call the kubelet's API,
// which has no pod to act on (the fake runtime runs nothing). Its healthz stays on 127.0.0.1. The kubelet
// bind-mounts its root directory onto itself (MakeRShared, pkg/kubelet/kubelet.go); stop() unmounts it.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts, Proc, type Testbed } from './cluster.ts';
import { ensureKubeletBuilt } from './kubelet-build.ts';

export interface KubeletOptions {
  name?: string;
  clusterDNS: string[];
  clusterDomain?: string;
  timeoutMs?: number;
}

export interface RealKubelet {
  readonly name: string;
  /** The node's InternalIP, where the kubelet API listens. */
  readonly address: string;
  /** The kubelet API's port on `address`. */
  readonly port: number;
  readonly dir: string;
  kubelet(): Proc;
  /** Stops the kubelet, writes its configuration with these clusterDNS, starts it again and waits for it to serve. */
  restart(opts: { clusterDNS: string[] }): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * This machine's first IPv4 address that the apiserver's node proxy accepts (global unicast: not loopback, not
 * link-local, not unspecified).
 */
export function kubeletAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.') && a.address !== '0.0.0.0') return a.address;
    }
  }
  throw new Error('a real kubelet needs a non-loopback IPv4 address on this machine: the apiserver\'s node proxy refuses loopback ones');
}

/** Unmounts every mount at or under `dir` (deepest first): the kubelet's bind mount of its root directory. */
export async function unmountUnder(dir: string): Promise<void> {
  const points = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => !!p && (p === dir || p.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const p of points) {
    try {
      await promisify(execFile)('umount', [p]);
    } catch {
      await promisify(execFile)('umount', ['-l', p]);
    }
  }
}

function configYaml(o: { address: string; port: number; healthzPort: number; clusterDNS: string[]; clusterDomain: string; cri: string; podLogsDir: string }): string {
  return [
    'apiVersion: kubelet.config.k8s.io/v1beta1',
    'kind: KubeletConfiguration',
    `address: ${o.address}`,
    `port: ${o.port}`,
    'readOnlyPort: 0',
    'healthzBindAddress: 127.0.0.1',
    `healthzPort: ${o.healthzPort}`,
    `clusterDNS: [${o.clusterDNS.map((d) => JSON.stringify(d)).join(', ')}]`,
    `clusterDomain: ${o.clusterDomain}`,
    'authentication:',
    '  anonymous: {enabled: true}',
    '  webhook: {enabled: false}',
    'authorization: {mode: AlwaysAllow}',
    `containerRuntimeEndpoint: ${o.cri}`,
    `imageServiceEndpoint: ${o.cri}`,
    'cgroupDriver: cgroupfs',
    'cgroupsPerQOS: false',
    'enforceNodeAllocatable: []',
    'failSwapOn: false',
    'failCgroupV1: false',
    'localStorageCapacityIsolation: false',
    'makeIPTablesUtilChains: false',
    `podLogsDir: ${o.podLogsDir}`,
    'registerNode: true',
    'nodeStatusUpdateFrequency: 5s',
    'evictionHard: {}',
    'imageGCHighThresholdPercent: 100',
    'imageGCLowThresholdPercent: 99',
    '',
  ].join('\n');
}

/** Starts fakecri and a kubelet registering node `name` in `tb`; resolves once the node is Ready and configz answers. */
export async function startKubelet(tb: Testbed, opts: KubeletOptions): Promise<RealKubelet> {
  if (!tb.options.realKubelets) throw new Error('start the testbed with realKubelets: true (kwok would manage this node too)');
  const name = opts.name ?? 'tb-kubelet-0';
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const bin = await ensureKubeletBuilt({ version: tb.options.version });
  const dir = join(tb.stateDir, `kubelet-${name}`);
  await mkdir(join(dir, 'root'), { recursive: true });
  const sock = join(dir, 'cri.sock');
  const cri = `unix://${sock}`;
  const address = kubeletAddress();
  const [port, healthzPort] = await freePorts(2);
  const supervisor = join(tb.binDir, 'tbsup');
  const fakecri = new Proc(`fakecri-${name}`, supervisor, join(bin, 'fakecri'), ['-listen', cri], join(dir, 'fakecri.log'), 2);
  for (let t = Date.now(); !existsSync(sock); await sleep(100)) {
    if (!fakecri.running() || Date.now() - t > 20_000) throw new Error(`fakecri did not listen on ${sock}\n${fakecri.logTail()}`);
  }
  const configPath = join(dir, 'config.yaml');
  const clusterDomain = opts.clusterDomain ?? 'cluster.local';
  let proc: Proc | undefined;
  const start = async (clusterDNS: string[]) => {
    await writeFile(configPath, configYaml({ address, port: port!, healthzPort: healthzPort!, clusterDNS, clusterDomain, cri, podLogsDir: join(dir, 'pod-logs') }));
    proc = new Proc(`kubelet-${name}`, supervisor, join(bin, 'kubelet'), [
      `--config=${configPath}`,
      `--kubeconfig=${tb.kubeconfigPath}`,
      `--root-dir=${join(dir, 'root')}`,
      `--cert-dir=${join(dir, 'pki')}`,
      `--hostname-override=${name}`,
      // a kubelet refuses a loopback --node-ip ("nodeIP can't be loopback address"); with an external cloud
      // provider it registers only its Hostname address and leaves the rest to the cloud controller, which
      // setInternalIP plays below
      '--cloud-provider=external',
      '--node-labels=type=real-kubelet',
      '--v=1',
    ], join(dir, 'kubelet.log'), 10);
    await waitReady(tb, name, address, clusterDNS, proc, timeoutMs);
  };
  await start(opts.clusterDNS).catch(async (e) => {
    await proc?.stop();
    await fakecri.stop();
    await unmountUnder(dir);
    throw e;
  });
  return {
    name,
    address,
    port: port!,
    dir,
    kubelet: () => proc!,
    restart: async (o) => {
      await proc?.stop();
      await start(o.clusterDNS);
    },
    stop: async () => {
      await proc?.stop();
      await fakecri.stop();
      await unmountUnder(dir);
    },
  };
}

/** Waits until node `name` is Ready and its configz (through the apiserver) names `clusterDNS`. */
async function waitReady(tb: Testbed, name: string, address: string, clusterDNS: string[], proc: Proc, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    if (!proc.running()) throw new Error(`kubelet ${name} exited with code ${proc.exitCode}\n${proc.logTail(40)}`);
    try {
      const node = await tb.client.get(`/api/v1/nodes/${name}`);
      if (!(node.status?.addresses ?? []).some((a: { type: string; address: string }) => a.type === 'InternalIP' && a.address === address)) {
        // what a cloud controller does for an external cloud provider: the node's addresses (kept by the kubelet
        // from then on, restarts included); the apiserver reaches the kubelet at the InternalIP
        await tb.client.mergePatch(`/api/v1/nodes/${name}/status`, { status: { addresses: [{ type: 'InternalIP', address }, { type: 'Hostname', address: name }] } });
        continue;
      }
      const ready = (node.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
      if (ready?.status === 'True') {
        const cz = await tb.client.get<any>(`/api/v1/nodes/${name}/proxy/configz`);
        const got: string[] = cz?.kubeletconfig?.clusterDNS ?? [];
        if (JSON.stringify(got) === JSON.stringify(clusterDNS)) return;
        last = `configz clusterDNS ${JSON.stringify(got)}`;
      } else {
        last = `Ready ${ready?.status ?? 'absent'}: ${ready?.message ?? ''}`;
      }
    } catch (e) {
      last = e instanceof Error ? e.message.split('\n')[0]! : String(e);
    }
    if (Date.now() > deadline) throw new Error(`kubelet ${name} not Ready with clusterDNS ${clusterDNS.join(',')} after ${timeoutMs} ms (${last})\n${proc.logTail(40)}`);
    await sleep(500);
  }
}
