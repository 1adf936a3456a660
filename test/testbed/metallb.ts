// MetalLB's controller on the testbed: its CRDs (from the module, metallb-build.ts), an IPAddressPool, and the
// controller built from go.universe.tf/metallb run out of the cluster with the testbed's kubeconfig:
//   --webhook-mode=disabled (no webhook server, no certificates), --port=0 (no metrics listener), a free health port.
// It reads its own Pod at start (owner of its ConfigurationState), so a Pod object of that name is created in its
// namespace; nothing runs in it. No speaker: nothing announces the addresses, the tests read status.loadBalancer.
//
//   const lb = await startMetalLB(tb, { addresses: ['192.0.2.0/28'] });  ...  await lb.stop();

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensureMetalLBBuilt } from './metallb-build.ts';

export const METALLB_NAMESPACE = 'metallb-system';
export const METALLB_POOL = 'testbed-pool';

/** What startMetalLB needs of a testbed. */
export interface MetalLBHost {
  readonly kubeconfigPath: string;
  readonly stateDir: string;
  kubectl(args: string[], opts?: { timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }>;
}

export interface MetalLB {
  /** The controller's log file. */
  readonly log: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

async function must(tb: MetalLBHost, args: string[]): Promise<string> {
  const r = await tb.kubectl(args, { timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Installs the CRDs, the namespace, the controller's Pod object and the pool, then starts the controller. */
export async function startMetalLB(tb: MetalLBHost, opts: { addresses: string[] }): Promise<MetalLB> {
  const dir = await ensureMetalLBBuilt();
  const crds = join(dir, 'crds');
  for (const f of readdirSync(crds).filter((x) => x.endsWith('.yaml')).sort()) await must(tb, ['apply', '--server-side', '-f', join(crds, f)]);
  await must(tb, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/ipaddresspools.metallb.io', 'crd/configurationstates.metallb.io']);
  const objects = join(tb.stateDir, 'metallb-objects.json');
  writeFileSync(objects, JSON.stringify({
    apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: METALLB_NAMESPACE } },
      {
        apiVersion: 'v1', kind: 'Pod', metadata: { name: 'controller', namespace: METALLB_NAMESPACE, labels: { app: 'metallb', component: 'controller' } },
        spec: { containers: [{ name: 'controller', image: 'quay.io/metallb/controller:v0.16.2' }], nodeSelector: { 'kube-renumber.io/none': 'none' } },
      },
    ],
  }));
  await must(tb, ['apply', '-f', objects]);
  const pool = join(tb.stateDir, 'metallb-pool.json');
  writeFileSync(pool, JSON.stringify({
    apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: METALLB_POOL, namespace: METALLB_NAMESPACE },
    spec: { addresses: opts.addresses },
  }));
  await must(tb, ['apply', '-f', pool]);
  const log = join(tb.stateDir, 'metallb-controller.log');
  const out = createWriteStream(log);
  const health = await freePort();
  const p = spawn(join(dir, 'bin', 'metallb-controller'), [
    `--namespace=${METALLB_NAMESPACE}`, '--pod-name=controller', '--webhook-mode=disabled', '--port=0',
    `--health-probe-port=${health}`, '--log-level=info',
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: tb.kubeconfigPath } });
  p.stdout!.pipe(out);
  p.stderr!.pipe(out);
  let exited = false;
  p.on('exit', () => { exited = true; });
  // ready once it answers its health probe
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`metallb-controller exited at start; its log: ${log}`);
    try {
      const r = await fetch(`http://127.0.0.1:${health}/readyz`);
      if (r.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`metallb-controller not ready in 60 s; its log: ${log}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    log, process: p,
    stop: async () => {
      if (exited) return;
      const done = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(t);
      out.end();
    },
  };
}
