// Testbed command line.
//
//   npm run testbed -- build [--version V]
//   npm run testbed -- build-dataplane [--version V]   kube-proxy, CoreDNS and dpnet (see dataplane-build.ts)
//   npm run testbed -- build-all [--background]   what npm test needs, one shared Go build cache (see cmdBuildAll)
//   npm run testbed -- build-kubelet [--version V]     a real kubelet and its CRI stand-in fakecri (see kubelet-build.ts; not run by npm test)
//   npm run testbed -- build-cilium [--version V]      cilium-operator-generic (see cilium-build.ts; not run by npm test)
//   npm run testbed -- build-calico [--version V]      calico-ipam, calico-kube-controllers, calicoctl, CRDs (see calico-build.ts)
//   npm run testbed -- build-calico-dataplane [--version V]   calico-node: felix, startup, tunnel address allocator
//                                                      (calico-build.ts; test:full and the bench only, not npm test)
//   npm run testbed -- build-metallb [--version V]     MetalLB's controller and CRDs (see metallb-build.ts)
//   npm run testbed -- chromium              Debian's chromium for the HTML test, installed when missing (chromium.ts)
//   npm run testbed -- dataplane-cleanup     deletes network namespaces left by dead data planes (dataplane.ts)
//   npm run testbed -- up [--service-cidr CIDR] [--pod-cidr CIDR] [--node-mask N] [--nodes N] [--version V]
//                         [--pod-ipam kwok|calico] [--kcm-qps N] [--servicecidr-api on|off]
//        --servicecidr-api on: on 1.29–1.32, start with the MultiCIDRServiceAllocator gate and the runtime-config
//        of the version's ServiceCIDR API (default off, as such a version runs by default)
//        starts a cluster that outlives the command; prints the kubeconfig path as the LAST stdout line
//   npm run testbed -- populate [--services N] [--deployments N] [--namespaces N] [--replicas N] [--fixed-addresses]
//        (--fixed-addresses: ClusterIPs and nodePorts chosen by the fixture, the same on every run)
//   npm run testbed -- populate-workloads [--namespaces N] [--deployments N] [--replicas N] [--statefulsets N]
//   npm run testbed -- restart-apiserver [--service-cidr CIDR] [--feature-gates G] [--runtime-config R]
//   npm run testbed -- restart-controller-manager [--cluster-cidr CIDR] [--allocate-node-cidrs true|false] [--feature-gates G]
//   npm run testbed -- enable-servicecidr-api   plays a plan's enable-servicecidr-api gate on 1.29–1.32 (both restarts)
//   npm run testbed -- reregister-node NAME
//   npm run testbed -- status
//   npm run testbed -- down
//
// `up` starts a detached keeper process (this file with the hidden command __serve) that owns the
// components (through tbsup) and listens on a 127.0.0.1 control port for restart/down. State lives in
// ${XDG_RUNTIME_DIR:-/tmp}/kube-renumber-testbed/. If the keeper dies, so do the components.

import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm, writeFile, rename } from 'node:fs/promises';
import { createServer, type IncomingMessage, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_VERSION, ensureBuilt, isBuilt, readStamp, testbedRoot } from './build.ts';
import { BACKGROUND_BUILDS, backgroundBuilds, clearBackground, recordBackground, type BackgroundBuild } from './background.ts';
import { Testbed } from './cluster.ts';
import { ensureChromium } from './chromium.ts';
import { CILIUM_VERSION, ensureCiliumOperatorBuilt, readCiliumStamp } from './cilium-build.ts';
import { CALICO_VERSION, calicoBuiltDir, ensureCalicoBuilt, ensureCalicoDataplaneBuilt, readCalicoDataplaneStamp, readCalicoStamp } from './calico-build.ts';
import { ensureMetalLBBuilt, METALLB_VERSION, readMetalLBStamp } from './metallb-build.ts';
import { cleanupLeftovers } from './dataplane.ts';
import { COREDNS_VERSION, ensureDataplaneBuilt, readDataplaneStamp } from './dataplane-build.ts';
import { ensureKubeletBuilt, readKubeletStamp } from './kubelet-build.ts';
import { populate } from './fixture.ts';
import { KubeClient } from './kube.ts';
import { NODE_TEMPLATE_FILE, reregisterNode } from './reregister-node.ts';
import type { PodIPAM } from './stages.ts';
import { populateWorkloads } from './workloads.ts';

const self = fileURLToPath(import.meta.url);

function stateRoot(): string {
  const base = process.env.XDG_RUNTIME_DIR || '/tmp';
  return join(base, 'kube-renumber-testbed');
}

interface State {
  keeperPid: number;
  controlPort: number;
  kubeconfigPath: string;
  server: string;
  token: string;
  serviceCIDR: string;
  podCIDR: string;
  podIPAM?: PodIPAM;
  nodes: number;
  version: string;
  stateDir: string;
  startedAt: string;
}

const statePath = () => join(stateRoot(), 'state.json');

function readState(): State | undefined {
  try {
    return JSON.parse(readFileSync(statePath(), 'utf8')) as State;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function die(msg: string): never {
  process.stderr.write(`testbed: ${msg}\n`);
  process.exit(1);
}

function control(state: State, path: string, body: unknown, timeoutMs = 300_000): Promise<{ status: number; text: string }> {
  const payload = JSON.stringify(body ?? {});
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: state.controlPort,
        method: 'POST',
        path,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) },
        timeout: timeoutMs,
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`control request ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

const num = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) die(`--${name} wants a non-negative integer, got ${v}`);
  return n;
};

async function cmdBuild(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const t = Date.now();
  const dir = await ensureBuilt({ version: values.version ?? DEFAULT_VERSION });
  const stamp = readStamp(values.version ?? DEFAULT_VERSION);
  process.stderr.write(`[testbed] binaries in ${dir} (${Date.now() - t} ms${stamp?.seconds ? `; last full build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdBuildKubelet(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? DEFAULT_VERSION;
  const t = Date.now();
  const dir = await ensureKubeletBuilt({ version });
  const stamp = readKubeletStamp(version);
  process.stderr.write(`[kubelet] kubelet ${version} and fakecri in ${dir} (${Date.now() - t} ms${stamp?.seconds ? `; last full build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdBuildDataplane(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? DEFAULT_VERSION;
  const t = Date.now();
  const dir = await ensureDataplaneBuilt({ version });
  const stamp = readDataplaneStamp(version);
  process.stderr.write(
    `[dataplane] kube-proxy ${version}, CoreDNS ${COREDNS_VERSION}, dpnet in ${dir} (${Date.now() - t} ms` +
      `${stamp?.seconds ? `; last full build took ${stamp.seconds}s` : ''})\n`,
  );
}

/**
 * Everything `npm test` needs: the control plane (DEFAULT_VERSION) and Calico's IPAM plugin, kube-controllers and
 * calicoctl in the foreground, then the builds of test/testbed/background.ts (the data plane, cilium-operator, MetalLB's
 * controller; with KUBE_RENUMBER_TEST_FULL=1 also the oldest version's control plane), in the background with
 * `--background`, else in the foreground too. Every build of the run shares one Go build cache
 * (test/testbed/go/build-cache: a package compiled for one build is not compiled again by the next), removed at the
 * end when anything was built (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it). Each step prints its time.
 */
async function cmdBuildAll(args: string[] = []) {
  const { values } = parseArgs({ args, options: { background: { type: 'boolean' } } });
  const keep = process.env.KUBE_RENUMBER_TESTBED_KEEP_GOCACHE === '1';
  process.env.KUBE_RENUMBER_TESTBED_KEEP_GOCACHE = '1';
  process.env.KUBE_RENUMBER_GOCACHE = join(testbedRoot(), 'go', 'build-cache');
  const t0 = Date.now();
  let built = false;
  const step = async (what: string, done: () => boolean, f: () => Promise<unknown>) => { built = (await timedBuild(what, done, f)) || built; };
  // what most test files need: the control plane and Calico's IPAM (the testbed's default pod IPAM with Calico's CRDs)
  await step(`control plane ${DEFAULT_VERSION}`, () => isBuilt(DEFAULT_VERSION), () => ensureBuilt({ version: DEFAULT_VERSION }));
  await step('calico-ipam, calico-kube-controllers, calicoctl', () => calicoBuiltDir(CALICO_VERSION) !== undefined, () => ensureCalicoBuilt({ version: CALICO_VERSION }));
  const cache = process.env.KUBE_RENUMBER_GOCACHE;
  const rest = backgroundBuilds().filter((b) => !BACKGROUND_BUILDS[b].built());
  if (values.background && rest.length > 0) {
    // `npm test`: the rest builds at a lower priority while the integration files that do not need it run (their waits
    // leave the cores idle about half of the time); test/run-integration.ts holds back the files that need one of these
    // builds until it is done (test/testbed/background.ts). The child records its list before this returns, and takes
    // each build's lock as it reaches it: a file run meanwhile that needs one waits on that lock like any second builder.
    const log = join(testbedRoot(), 'build-background.log');
    await mkdir(testbedRoot(), { recursive: true });
    const fd = openSync(log, 'w');
    const child = spawn('nice', ['-n', '10', process.execPath, self, '__build-background', ...(keep ? [] : ['--remove-cache']), ...rest], {
      detached: true, stdio: ['ignore', fd, fd], env: { ...process.env },
    });
    closeSync(fd);
    child.unref();
    await recordBackground(child.pid!, rest);
    process.stderr.write(`[build-all] ${rest.map((b) => BACKGROUND_BUILDS[b].what).join(', ')}: building in the background (pid ${child.pid}, nice 10; log ${log})\n`);
  } else {
    for (const b of rest) await step(BACKGROUND_BUILDS[b].what, BACKGROUND_BUILDS[b].built, BACKGROUND_BUILDS[b].build);
    if (built && !keep) await removeSharedCache(cache);
  }
  process.stderr.write(`[build-all] done in ${Math.round((Date.now() - t0) / 1000)} s\n`);
}

/** The background half of `build-all --background`: the builds named, in order, then the shared cache's removal. */
async function cmdBuildBackground(args: string[]) {
  // Spawned detached, this build runs in a session of its own, and with the kernel's autogroups on (the default) its
  // `nice 10` then weighs only against itself: its session's group gets as much CPU as the whole test suite's. The
  // group's own nice (sched(7), /proc/PID/autogroup) puts it behind the tests: nice 10 gives it the cores the tests
  // leave idle and about a tenth of the rest (at 19 the v1.30.14 control plane took 2,033 s beside the suite and other
  // low-priority work). Without autogroups the process's nice applies.
  try { writeFileSync('/proc/self/autogroup', '10'); } catch { /* no autogroup file: the process's nice applies */ }
  await recordBackground(process.pid, args.filter((a): a is BackgroundBuild => a in BACKGROUND_BUILDS));
  try {
    for (const a of args) {
      if (!(a in BACKGROUND_BUILDS)) continue;
      const b = BACKGROUND_BUILDS[a as BackgroundBuild];
      await timedBuild(b.what, b.built, b.build, ' (background)');
    }
    if (args.includes('--remove-cache')) await removeSharedCache(process.env.KUBE_RENUMBER_GOCACHE);
  } finally {
    await clearBackground(process.pid);
  }
}

/** Runs one build of build-all, saying whether it was cached or how long it took; true when it built something. */
async function timedBuild(what: string, done: () => boolean, build: () => Promise<unknown>, suffix = ''): Promise<boolean> {
  const t = Date.now();
  const was = done();
  await build();
  process.stderr.write(`[build-all] ${what}: ${was ? 'cached' : `built in ${Math.round((Date.now() - t) / 1000)} s`}${suffix}\n`);
  return !was;
}

/** Removes build-all's shared Go build cache (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it). */
async function removeSharedCache(cache: string | undefined) {
  if (!cache || !existsSync(cache)) return;
  await rm(cache, { recursive: true, force: true });
  process.stderr.write(`[build-all] shared Go build cache removed (KUBE_RENUMBER_TESTBED_KEEP_GOCACHE=1 keeps it)\n`);
}

async function cmdBuildCilium(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? CILIUM_VERSION;
  const t = Date.now();
  const path = await ensureCiliumOperatorBuilt({ version });
  const stamp = readCiliumStamp(version);
  process.stderr.write(`[cilium] ${path} (${Date.now() - t} ms${stamp ? `; its build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdBuildCalico(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? CALICO_VERSION;
  const t = Date.now();
  const dir = await ensureCalicoBuilt({ version });
  const stamp = readCalicoStamp(version);
  process.stderr.write(`[calico] ${dir} (${Date.now() - t} ms${stamp ? `; its build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdBuildCalicoDataplane(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? CALICO_VERSION;
  const t = Date.now();
  const dir = await ensureCalicoDataplaneBuilt({ version });
  const stamp = readCalicoDataplaneStamp(version);
  process.stderr.write(`[calico dataplane] ${dir} (${Date.now() - t} ms${stamp ? `; its build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdBuildMetalLB(args: string[]) {
  const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
  const version = values.version ?? METALLB_VERSION;
  const t = Date.now();
  const dir = await ensureMetalLBBuilt({ version });
  const stamp = readMetalLBStamp(version);
  process.stderr.write(`[metallb] ${dir} (${Date.now() - t} ms${stamp ? `; its build took ${stamp.seconds}s` : ''})\n`);
}

async function cmdUp(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      'service-cidr': { type: 'string' },
      'pod-cidr': { type: 'string' },
      'node-mask': { type: 'string' },
      nodes: { type: 'string' },
      version: { type: 'string' },
      'pod-ipam': { type: 'string' },
      'kcm-qps': { type: 'string' },
      'servicecidr-api': { type: 'string' },
    },
  });
  const scApi = values['servicecidr-api'];
  if (scApi !== undefined && scApi !== 'on' && scApi !== 'off') die(`--servicecidr-api wants on or off, got ${scApi}`);
  const podIPAM = values['pod-ipam'];
  if (podIPAM !== undefined && podIPAM !== 'kwok' && podIPAM !== 'calico' && podIPAM !== 'node') die(`--pod-ipam wants kwok, calico or node, got ${podIPAM}`);
  const existing = readState();
  if (existing && alive(existing.keeperPid)) {
    process.stderr.write(`testbed already up (keeper pid ${existing.keeperPid}); \`npm run testbed -- down\` first to change it\n`);
    process.stdout.write(`${existing.kubeconfigPath}\n`);
    return;
  }
  await rm(stateRoot(), { recursive: true, force: true });
  await mkdir(stateRoot(), { recursive: true, mode: 0o700 });
  const opts = {
    serviceCIDR: values['service-cidr'],
    podCIDR: values['pod-cidr'],
    nodeMask: num(values['node-mask'], 'node-mask'),
    nodes: num(values.nodes, 'nodes'),
    version: values.version,
    podIPAM,
    controllerManagerQPS: num(values['kcm-qps'], 'kcm-qps'),
    serviceCIDRApi: scApi,
  };
  // build in the foreground so its progress is visible
  await ensureBuilt({ version: opts.version ?? DEFAULT_VERSION });
  const logPath = join(stateRoot(), 'keeper.log');
  const fd = openSync(logPath, 'a');
  const keeper = spawn(process.execPath, [self, '__serve', JSON.stringify(opts)], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, KUBE_RENUMBER_TESTBED_VERBOSE: '1' },
  });
  closeSync(fd);
  keeper.unref();
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    const st = readState();
    if (st && st.keeperPid === keeper.pid) {
      process.stderr.write(
        `testbed up: ${st.server}, service CIDR ${st.serviceCIDR}, pod CIDR ${st.podCIDR}, pod IPAM ${st.podIPAM ?? 'kwok'}, ${st.nodes} nodes\n`,
      );
      process.stdout.write(`${st.kubeconfigPath}\n`);
      return;
    }
    if (keeper.pid === undefined || !alive(keeper.pid) || Date.now() > deadline) {
      const log = existsSync(logPath) ? readFileSync(logPath, 'utf8').split('\n').slice(-40).join('\n') : '';
      if (keeper.pid !== undefined && alive(keeper.pid)) process.kill(keeper.pid, 'SIGKILL');
      die(`testbed did not come up. Keeper log (${logPath}):\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function readBody(req: IncomingMessage): Promise<any> {
  let text = '';
  for await (const c of req) text += (c as Buffer).toString();
  return text ? JSON.parse(text) : {};
}

/** Hidden: the keeper process started by `up`. */
async function cmdServe(args: string[]) {
  const opts = JSON.parse(args[0] ?? '{}');
  const clusterDir = join(stateRoot(), 'cluster');
  const tb = await Testbed.start({ ...opts, stateDir: clusterDir });
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await tb.stop({ keepState: true });
    server.close();
    process.exit(code);
  };
  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      if (req.url === '/restart-apiserver') {
        await tb.restartApiserver({ serviceCIDR: body.serviceCIDR, featureGates: body.featureGates, runtimeConfig: body.runtimeConfig });
        await writeState({ ...readState()!, serviceCIDR: tb.serviceCIDR });
        res.end(JSON.stringify({ ok: true, serviceCIDR: tb.serviceCIDR }));
      } else if (req.url === '/restart-controller-manager') {
        const r = await tb.restartControllerManager({ clusterCIDR: body.clusterCIDR, allocateNodeCIDRs: body.allocateNodeCIDRs, featureGates: body.featureGates });
        res.end(JSON.stringify({ ok: true, ...r, flags: tb.controllerManagerFlags }));
      } else if (req.url === '/enable-servicecidr-api') {
        await tb.enableServiceCIDRApi();
        res.end(JSON.stringify({ ok: true, apiserver: tb.apiserverGateFlags, controllerManagerFlags: tb.controllerManagerFlags }));
      } else if (req.url === '/status') {
        res.end(JSON.stringify({ processes: tb.processes(), controllerManagerFlags: tb.controllerManagerFlags, apiserverGateFlags: tb.apiserverGateFlags, serviceCIDR: tb.serviceCIDR }));
      } else if (req.url === '/down') {
        res.end(JSON.stringify({ ok: true }));
        setImmediate(() => void shutdown(0));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    } catch (e) {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: e instanceof Error ? e.message : String(e) }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no control port');
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => void shutdown(0));
  await writeState({
    keeperPid: process.pid,
    controlPort: addr.port,
    kubeconfigPath: tb.kubeconfigPath,
    server: tb.server,
    token: tb.token,
    serviceCIDR: tb.serviceCIDR,
    podCIDR: tb.options.podCIDR,
    podIPAM: tb.options.podIPAM,
    nodes: tb.options.nodes,
    version: tb.options.version,
    stateDir: tb.stateDir,
    startedAt: new Date().toISOString(),
  });
  process.stderr.write(`keeper ready on 127.0.0.1:${addr.port}\n`);
}

async function writeState(st: State) {
  const tmp = `${statePath()}.tmp`;
  await writeFile(tmp, JSON.stringify(st, null, 2) + '\n', { mode: 0o600 });
  await rename(tmp, statePath());
}

function requireUp(): State {
  const st = readState();
  if (!st || !alive(st.keeperPid)) die('no testbed is up (run `npm run testbed -- up`)');
  return st;
}

async function cmdPopulate(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      services: { type: 'string' },
      deployments: { type: 'string' },
      namespaces: { type: 'string' },
      replicas: { type: 'string' },
      'fixed-addresses': { type: 'boolean' },
    },
  });
  const st = requireUp();
  // populate() only needs the client, the ranges and the options; a light stand-in for the Testbed.
  const client = new KubeClient(st.server, st.token);
  const tbLike = {
    client,
    serviceCIDR: st.serviceCIDR,
    options: { podCIDR: st.podCIDR, calicoCRDs: true },
  } as unknown as Testbed;
  const t = Date.now();
  const fx = await populate(tbLike, {
    services: num(values.services, 'services'),
    deployments: num(values.deployments, 'deployments'),
    namespaces: num(values.namespaces, 'namespaces'),
    replicas: num(values.replicas, 'replicas'),
    fixedAddresses: values['fixed-addresses'] === true,
  });
  client.close();
  process.stderr.write(
    `populated in ${Date.now() - t} ms: namespaces ${fx.namespaces.join(',')}, ${fx.services.length} services, ` +
      `${fx.expectedPods} pods running, kube-dns ${fx.kubeDnsIP}\n`,
  );
}

async function cmdRestart(args: string[]) {
  const { values } = parseArgs({ args, options: { 'service-cidr': { type: 'string' }, 'feature-gates': { type: 'string' }, 'runtime-config': { type: 'string' } } });
  const st = requireUp();
  const r = await control(st, '/restart-apiserver', { serviceCIDR: values['service-cidr'], featureGates: values['feature-gates'], runtimeConfig: values['runtime-config'] });
  if (r.status !== 200) die(`restart-apiserver failed: ${r.text}`);
  process.stderr.write(`kube-apiserver restarted: ${r.text}\n`);
}

async function cmdEnableServiceCIDRApi() {
  const st = requireUp();
  const r = await control(st, '/enable-servicecidr-api', {});
  if (r.status !== 200) die(`enable-servicecidr-api failed: ${r.text}`);
  process.stderr.write(`ServiceCIDR API enabled: ${r.text}\n`);
}

async function cmdPopulateWorkloads(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      namespaces: { type: 'string' },
      deployments: { type: 'string' },
      replicas: { type: 'string' },
      statefulsets: { type: 'string' },
    },
  });
  const st = requireUp();
  const client = new KubeClient(st.server, st.token);
  const t = Date.now();
  try {
    const wl = await populateWorkloads(
      { client, options: { podCIDR: st.podCIDR, podIPAM: st.podIPAM ?? 'kwok' } },
      {
        namespaces: num(values.namespaces, 'namespaces'),
        deploymentsPerNs: num(values.deployments, 'deployments'),
        replicas: num(values.replicas, 'replicas'),
        statefulSets: num(values.statefulsets, 'statefulsets'),
      },
    );
    process.stderr.write(
      `workloads up in ${Date.now() - t} ms: ${wl.workloads.length} workloads in ${wl.namespaces.join(',')}, ` +
        `${wl.totalPods} pods (${wl.podNetworkPods} on the pod network), ${wl.pdbs.length} PDBs\n`,
    );
  } finally {
    client.close();
  }
}

async function cmdRestartControllerManager(args: string[]) {
  const { values } = parseArgs({ args, options: { 'cluster-cidr': { type: 'string' }, 'allocate-node-cidrs': { type: 'string' }, 'feature-gates': { type: 'string' } } });
  const alloc = values['allocate-node-cidrs'];
  if (alloc !== undefined && alloc !== 'true' && alloc !== 'false') die(`--allocate-node-cidrs wants true or false, got ${alloc}`);
  const st = requireUp();
  const r = await control(st, '/restart-controller-manager', {
    clusterCIDR: values['cluster-cidr'],
    allocateNodeCIDRs: alloc === undefined ? undefined : alloc === 'true',
    featureGates: values['feature-gates'],
  });
  if (r.status !== 200) die(`restart-controller-manager failed: ${r.text}`);
  const body = JSON.parse(r.text);
  process.stderr.write(`kube-controller-manager restarted: ${r.text}\n`);
  if (!body.running) process.exit(2); // it crashed at startup (e.g. node podCIDRs outside --cluster-cidr)
}

async function cmdReregisterNode(args: string[]) {
  const name = args[0] ?? process.env.KUBE_RENUMBER_NODE;
  if (!name) die('usage: reregister-node NAME');
  const st = requireUp();
  const client = new KubeClient(st.server, st.token);
  try {
    await reregisterNode({
      client,
      name,
      templatePath: join(st.stateDir, NODE_TEMPLATE_FILE),
      log: (m) => process.stderr.write(`${m}\n`),
    });
  } finally {
    client.close();
  }
}

async function cmdDown() {
  const st = readState();
  if (st && alive(st.keeperPid)) {
    try {
      await control(st, '/down', {}, 10_000);
    } catch {
      /* fall through to signals */
    }
    const deadline = Date.now() + 30_000;
    while (alive(st.keeperPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (alive(st.keeperPid)) process.kill(st.keeperPid, 'SIGKILL'); // tbsup children follow
  }
  await rm(stateRoot(), { recursive: true, force: true });
  process.stderr.write('testbed down\n');
}

async function cmdStatus() {
  const st = readState();
  if (!st || !alive(st.keeperPid)) {
    process.stdout.write('down\n');
    return;
  }
  let live: unknown;
  try {
    const r = await control(st, '/status', {}, 5000);
    if (r.status === 200) live = JSON.parse(r.text);
  } catch {
    /* keeper busy or gone: show the saved state only */
  }
  process.stdout.write(JSON.stringify({ ...st, token: '(in kubeconfig)', ...(live ? { live } : {}) }, null, 2) + '\n');
}

const [cmd, ...rest] = process.argv.slice(2);
try {
  switch (cmd) {
    case 'build':
      await cmdBuild(rest);
      break;
    case 'build-dataplane':
      await cmdBuildDataplane(rest);
      break;
    case 'build-kubelet':
      await cmdBuildKubelet(rest);
      break;
    case 'build-cilium':
      await cmdBuildCilium(rest);
      break;
    case 'build-calico':
      await cmdBuildCalico(rest);
      break;
    case 'build-calico-dataplane':
      await cmdBuildCalicoDataplane(rest);
      break;
    case 'build-metallb':
      await cmdBuildMetalLB(rest);
      break;
    case 'chromium':
      process.stdout.write(`${await ensureChromium()}\n`);
      break;
    case 'dataplane-cleanup': {
      const gone = await cleanupLeftovers();
      process.stderr.write(`[dataplane] deleted ${gone.length} leftover network namespaces${gone.length ? `: ${gone.join(' ')}` : ''}\n`);
      break;
    }
    case 'up':
      await cmdUp(rest);
      break;
    case '__serve':
      await cmdServe(rest);
      break;
    case 'populate':
      await cmdPopulate(rest);
      break;
    case 'populate-workloads':
      await cmdPopulateWorkloads(rest);
      break;
    case 'restart-apiserver':
      await cmdRestart(rest);
      break;
    case 'restart-controller-manager':
      await cmdRestartControllerManager(rest);
      break;
    case 'build-all':
      await cmdBuildAll(rest);
      break;
    case '__build-background':
      await cmdBuildBackground(rest);
      break;
    case 'enable-servicecidr-api':
      await cmdEnableServiceCIDRApi();
      break;
    case 'reregister-node':
      await cmdReregisterNode(rest);
      break;
    case 'down':
      await cmdDown();
      break;
    case 'status':
      await cmdStatus();
      break;
    default:
      die(
        'usage: testbed build [--version V] | build-dataplane [--version V] | build-cilium [--version V] | build-calico [--version V] | build-calico-dataplane [--version V] | build-metallb [--version V] | chromium | dataplane-cleanup | up [--service-cidr C] [--pod-cidr C] [--node-mask N] [--nodes N] [--version V]\n' +
          '                                        [--pod-ipam kwok|calico] [--kcm-qps N] [--servicecidr-api on|off]\n' +
          '       | populate [--services N] [--deployments N] [--namespaces N] [--replicas N]\n' +
          '       | populate-workloads [--namespaces N] [--deployments N] [--replicas N] [--statefulsets N]\n' +
          '       | restart-apiserver [--service-cidr C] [--feature-gates G] [--runtime-config R]\n' +
          '       | restart-controller-manager [--cluster-cidr C] [--allocate-node-cidrs true|false] [--feature-gates G]\n' +
          '       | enable-servicecidr-api\n' +
          '       | reregister-node NAME | status | down',
      );
  }
} catch (e) {
  die(e instanceof Error ? (e.stack ?? e.message) : String(e));
}
