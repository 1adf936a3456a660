// Benchmark: reading one huge `kubectl get pods -A -o json` dump.
//
//   npm run bench -- large-list [--pods N] [--dir DIR] [--clean] [--breakdown]
//
//   Goals: inspect's wall time at most JSON.parse's (ratio <= 1.0), and its peak RSS under half the file's size.
//
//   1. Generates (once; reused while DIR holds it) DIR/pods-N.json: one List of N pods (default 150,000,
//      ~11.4 KiB each as kubectl prints them, ~1.7 GB) shaped like real ones (labels, annotations with JSON in
//      them, ownerReferences, managedFields, containers with env/probes/resources, volumes, tolerations,
//      conditions, containerStatuses), plus DIR/pieces-N/: the same items re-grouped into Lists of at most
//      256 MiB each, every one a valid JSON document that fits one string.
//   2. In a child process: `kube-renumber inspect -f DIR/pods-N.json -o json` through the CLI's own main()
//      (loader, snapshot, analysis, JSON rendering), timed from the call to its return; peak RSS.
//   3. In another child process, the baseline: JSON.parse over each piece's text (read before the clock
//      starts, parse time only, results dropped), summed; peak RSS.
//   With --breakdown a third child times readInventoryFiles, buildSnapshot and inspect() separately.
//   --clean deletes DIR's files after the run.
// Human-readable table on stdout, then one JSON line (last stdout line). Progress on stderr.

import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const MiB = 1024 * 1024;
const PIECE_MAX = 256 * MiB;
const RUN_TS = fileURLToPath(new URL('./run.ts', import.meta.url));

// ---------------------------------------------------------------- generation

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hex(r: () => number, n: number): string {
  let s = '';
  while (s.length < n) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, n);
}

function uid(r: () => number): string {
  const h = hex(r, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const NAMESPACES = ['payments', 'checkout', 'search', 'catalog', 'identity', 'ledger', 'notifications', 'media', 'analytics', 'edge'];
const NODES = 3000;
const TS = '2025-02-11T08:14:22Z';

function nodeName(i: number): string {
  return `ip-10-20-${(i >> 8) & 255}-${i & 255}.eu-west-1.compute.internal`;
}

function podIP(i: number): string {
  // 100.96.0.0/11 (kOps default cluster CIDR): /24 per node
  const node = i % NODES;
  const host = 2 + Math.floor(i / NODES);
  return `100.${96 + (node >> 8)}.${node & 255}.${host}`;
}

function fieldsV1(containers: string[]): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  for (const name of containers) {
    c[`k:{"name":"${name}"}`] = {
      '.': {}, 'f:image': {}, 'f:ports': { 'k:{"containerPort":8080,"protocol":"TCP"}': {} },
    };
  }
  return {
    'f:metadata': { 'f:labels': { 'f:app.kubernetes.io/name': {} } },
    'f:spec': { 'f:containers': c, 'f:volumes': { '.': {}, 'k:{"name":"config"}': { '.': {}, 'f:name': {} } } },
  };
}

function container(r: () => number, name: string, app: string, ns: string): Record<string, unknown> {
  return {
    name,
    image: `123456789012.dkr.ecr.eu-west-1.amazonaws.com/${app}/${name}:v2.${Math.floor(r() * 40)}.${Math.floor(r() * 10)}@sha256:${hex(r, 64)}`,
    imagePullPolicy: 'IfNotPresent',
    args: ['--config=/etc/app/config.yaml', `--upstream=http://${app}-backend.${ns}.svc.cluster.local:8080`],
    env: [
      { name: 'JAVA_OPTS', value: '-Dfile.encoding=UTF-8 -Duser.timezone="UTC"' },
      { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
    ],
    ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
    livenessProbe: { httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP' }, periodSeconds: 10 },
    resources: { limits: { memory: '512Mi' }, requests: { cpu: '250m', memory: '256Mi' } },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    volumeMounts: [
      { mountPath: '/etc/app', name: 'config', readOnly: true },
      { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', name: `kube-api-access-${hex(r, 5)}`, readOnly: true },
    ],
  };
}

/** One application pod as `kubectl get pods -o json` shows it, ~10 KB printed. */
function appPod(i: number): Record<string, unknown> {
  const r = rng(i + 1);
  const ns = NAMESPACES[i % NAMESPACES.length];
  const app = `${ns}-svc-${Math.floor(i / 40) % 500}`;
  const hash = hex(r, 10);
  const name = `${app}-${hash}-${hex(r, 5)}`;
  const node = nodeName(i % NODES);
  const ip = podIP(i);
  const names = ['app'];
  const started = TS;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      annotations: {
        'cni.projectcalico.org/containerID': hex(r, 64),
        'cni.projectcalico.org/podIP': `${ip}/32`,
        'cni.projectcalico.org/podIPs': `${ip}/32`,
        'kubectl.kubernetes.io/restartedAt': '2025-02-10T17:03:11+01:00',
        'prometheus.io/scrape': 'true',
        'k8s.v1.cni.cncf.io/network-status': JSON.stringify([{ name: 'k8s-pod-network', ips: [ip], default: true, dns: {} }], null, 1),
        'example.com/notes': i % 100 === 0 ? 'braces } and ] and "quotes", a backslash \\ and unicode \u00e9\u4e2d in a string' : 'braces } and ] and "quotes" and a backslash \\ in a string',
      },
      creationTimestamp: TS,
      generateName: `${app}-${hash}-`,
      labels: { 'app.kubernetes.io/name': app, 'app.kubernetes.io/part-of': ns, 'app.kubernetes.io/version': 'v2', 'pod-template-hash': hash, 'security.istio.io/tlsMode': 'istio', team: ns },
      managedFields: [
        { apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: fieldsV1(names), manager: 'kube-controller-manager', operation: 'Update', time: TS },
        { apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { 'f:status': {} } }, 'f:phase': {}, 'f:podIPs': { [`k:{"ip":"${ip}"}`]: { 'f:ip': {} } } } }, manager: 'kubelet', operation: 'Update', subresource: 'status', time: TS },
      ],
      name,
      namespace: ns,
      ownerReferences: [{ apiVersion: 'apps/v1', blockOwnerDeletion: true, controller: true, kind: 'ReplicaSet', name: `${app}-${hash}`, uid: uid(r) }],
      resourceVersion: String(100000000 + i),
      uid: uid(r),
    },
    spec: {
      containers: names.map((c) => container(r, c, app, ns)),
      dnsPolicy: 'ClusterFirst',
      enableServiceLinks: true,
      nodeName: node,
      preemptionPolicy: 'PreemptLowerPriority',
      priority: 0,
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      securityContext: { fsGroup: 1000, runAsUser: 1000 },
      serviceAccount: app,
      serviceAccountName: app,
      terminationGracePeriodSeconds: 30,
      tolerations: [
        { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists', tolerationSeconds: 300 },
        { effect: 'NoExecute', key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 300 },
      ],
      volumes: [
        { configMap: { defaultMode: 420, name: `${app}-config` }, name: 'config' },
        { name: `kube-api-access-${hex(r, 5)}`, projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }] } },
      ],
    },
    status: {
      conditions: ['Initialized', 'Ready', 'PodScheduled'].map((type) => ({ lastProbeTime: null, lastTransitionTime: TS, status: 'True', type })),
      containerStatuses: names.map((c) => ({
        containerID: `containerd://${hex(r, 64)}`,
        image: `123456789012.dkr.ecr.eu-west-1.amazonaws.com/${app}/${c}:v2.1.0`,
        imageID: `123456789012.dkr.ecr.eu-west-1.amazonaws.com/${app}/${c}@sha256:${hex(r, 64)}`,
        lastState: {}, name: c, ready: true, restartCount: Math.floor(r() * 3), started: true,
        state: { running: { startedAt: started } },
      })),
      hostIP: `10.20.${((i % NODES) >> 8) & 255}.${i % NODES & 255}`,
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      qosClass: 'Burstable',
      startTime: TS,
    },
  };
}

/** kube-system pods the snapshot reads flags from (kOps layout), a few per cluster. */
function systemPods(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (let m = 0; m < 3; m++) {
    const node = nodeName(m);
    out.push({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { labels: { 'k8s-app': 'kube-apiserver' }, name: `kube-apiserver-${node}`, namespace: 'kube-system', ownerReferences: [{ apiVersion: 'v1', controller: true, kind: 'Node', name: node, uid: uid(rng(m)) }] },
      spec: { containers: [{ name: 'kube-apiserver', image: 'registry.k8s.io/kube-apiserver:v1.33.4', command: ['/go-runner'], args: ['/usr/local/bin/kube-apiserver', '--service-cluster-ip-range=100.64.0.0/13', '--secure-port=443'] }], hostNetwork: true, nodeName: node },
      status: { phase: 'Running', podIP: `10.20.0.${m}`, podIPs: [{ ip: `10.20.0.${m}` }] },
    });
    out.push({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { labels: { 'k8s-app': 'kube-controller-manager' }, name: `kube-controller-manager-${node}`, namespace: 'kube-system', ownerReferences: [{ apiVersion: 'v1', controller: true, kind: 'Node', name: node, uid: uid(rng(m)) }] },
      spec: { containers: [{ name: 'kube-controller-manager', image: 'registry.k8s.io/kube-controller-manager:v1.33.4', command: ['/go-runner'], args: ['/usr/local/bin/kube-controller-manager', '--allocate-node-cidrs=true', '--cluster-cidr=100.96.0.0/11', '--node-cidr-mask-size=24'] }], hostNetwork: true, nodeName: node },
      status: { phase: 'Running', podIP: `10.20.0.${m}`, podIPs: [{ ip: `10.20.0.${m}` }] },
    });
  }
  out.push({
    apiVersion: 'v1', kind: 'Pod',
    metadata: { labels: { 'k8s-app': 'calico-node' }, name: 'calico-node-x7k2p', namespace: 'kube-system', ownerReferences: [{ apiVersion: 'apps/v1', controller: true, kind: 'DaemonSet', name: 'calico-node', uid: uid(rng(9)) }] },
    spec: { containers: [{ name: 'calico-node', image: 'docker.io/calico/node:v3.29.1', env: [{ name: 'CALICO_IPV4POOL_CIDR', value: '100.96.0.0/11' }] }], hostNetwork: true, nodeName: nodeName(0) },
    status: { phase: 'Running', podIP: '10.20.0.0', podIPs: [{ ip: '10.20.0.0' }] },
  });
  return out;
}

const INDENT = '        ';
const HEAD = '{\n    "apiVersion": "v1",\n    "items": [\n';
const TAIL = '\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n';

/** An item as kubectl prints it inside a List (4-space indentation, two levels deep). */
function printed(o: unknown): string {
  return INDENT + JSON.stringify(o, null, 4).replaceAll('\n', `\n${INDENT}`);
}

interface Files { file: string; pieces: string[]; bytes: number; pods: number }

function generate(dir: string, pods: number): Files {
  const file = join(dir, `pods-${pods}.json`);
  const piecesDir = join(dir, `pieces-${pods}`);
  const marker = join(dir, `pods-${pods}.done`);
  if (existsSync(marker) && existsSync(file) && existsSync(piecesDir)) {
    const pieces = readdirSync(piecesDir).filter((f) => f.endsWith('.json')).sort().map((f) => join(piecesDir, f));
    log(`reusing ${file} (${round(statSync(file).size / MiB, 0)} MiB) and ${pieces.length} pieces`);
    return { file, pieces, bytes: statSync(file).size, pods };
  }
  rmSync(piecesDir, { recursive: true, force: true });
  mkdirSync(piecesDir, { recursive: true });
  rmSync(marker, { force: true });
  const t0 = performance.now();
  const fd = openSync(file, 'w');
  writeSync(fd, HEAD);
  const pieces: string[] = [];
  let pfd = -1;
  let pbytes = 0;
  let pfirst = true;
  const closePiece = () => {
    if (pfd === -1) return;
    writeSync(pfd, TAIL);
    closeSync(pfd);
    pfd = -1;
  };
  let batch = '';
  let pbatch = '';
  const sys = systemPods();
  const total = pods;
  for (let i = 0; i < total; i++) {
    const item = printed(i < sys.length ? sys[i] : appPod(i));
    batch += (i === 0 ? '' : ',\n') + item;
    const need = Buffer.byteLength(item) + 2;
    if (pfd === -1 || pbytes + need + TAIL.length > PIECE_MAX) {
      if (pbatch) { writeSync(pfd, pbatch); pbatch = ''; }
      closePiece();
      const p = join(piecesDir, `piece-${String(pieces.length).padStart(3, '0')}.json`);
      pieces.push(p);
      pfd = openSync(p, 'w');
      writeSync(pfd, HEAD);
      pbytes = HEAD.length;
      pfirst = true;
    }
    pbatch += (pfirst ? '' : ',\n') + item;
    pfirst = false;
    pbytes += need;
    if (batch.length > 4 * MiB) { writeSync(fd, batch); batch = ''; }
    if (pbatch.length > 4 * MiB) { writeSync(pfd, pbatch); pbatch = ''; }
    if (i % 20000 === 0 && i > 0) log(`generated ${i} pods`);
  }
  writeSync(fd, batch + TAIL);
  closeSync(fd);
  if (pbatch) writeSync(pfd, pbatch);
  closePiece();
  writeFileSync(marker, '');
  const bytes = statSync(file).size;
  log(`generated ${file}: ${round(bytes / MiB, 0)} MiB, ${pods} pods (${round(bytes / pods / 1024, 1)} KiB each), ${pieces.length} pieces, in ${round((performance.now() - t0) / 1000, 1)} s`);
  return { file, pieces, bytes, pods };
}

// ---------------------------------------------------------------- children (one measurement each)

const maxRssMiB = () => round(process.resourceUsage().maxRSS / 1024, 0);

async function childInspect(file: string): Promise<Record<string, unknown>> {
  const { main } = await import('../src/cli/main.ts');
  let outBytes = 0;
  let err = '';
  const io = { out: (s: string) => { outBytes += s.length; }, err: (s: string) => { err += s; }, env: { HOME: '/nonexistent' } };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const code = await main(['inspect', '-f', file, '-o', 'json'], io);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  if (code !== 0 && code !== 1) throw new Error(`inspect exited ${code}: ${err.trim()}`);
  return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, code, outBytes, maxRssMiB: maxRssMiB() };
}

function childBaseline(pieces: string[]): Record<string, unknown> {
  let seconds = 0;
  let cpuSeconds = 0;
  let items = 0;
  for (const p of pieces) {
    const text = readFileSync(p, 'utf8');
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const v = JSON.parse(text) as { items: unknown[] };
    seconds += (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(c0);
    cpuSeconds += (cpu.user + cpu.system) / 1e6;
    items += v.items.length;
  }
  return { seconds, cpuSeconds, items, maxRssMiB: maxRssMiB() };
}

async function childBreakdown(file: string): Promise<Record<string, unknown>> {
  const { readInventoryFiles } = await import('../src/cluster/files.ts');
  const { buildSnapshot } = await import('../src/cluster/build.ts');
  const { inspect } = await import('../src/analyze/inspect.ts');
  const t0 = performance.now();
  const inv = await readInventoryFiles([file]);
  const t1 = performance.now();
  const snap = buildSnapshot(inv);
  const t2 = performance.now();
  const report = inspect(snap, { avoid: [] });
  const t3 = performance.now();
  return { readSeconds: (t1 - t0) / 1000, snapshotSeconds: (t2 - t1) / 1000, inspectSeconds: (t3 - t2) / 1000, objects: inv.objects.length, pods: report.capacity.pods.total, maxRssMiB: maxRssMiB() };
}

function child(kind: string, args: string[], nodeFlags: string[]): Record<string, unknown> {
  log(`child: ${kind}`);
  const r = spawnSync(process.execPath, [...nodeFlags, RUN_TS, 'large-list', '--child', kind, ...args], { stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * MiB });
  if (r.status !== 0) throw new Error(`child ${kind} exited ${r.status ?? r.signal}`);
  const lines = r.stdout.toString().trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
}

// ---------------------------------------------------------------- entry

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true,
    options: { pods: { type: 'string' }, dir: { type: 'string' }, clean: { type: 'boolean' }, breakdown: { type: 'boolean' }, child: { type: 'string' }, 'node-flag': { type: 'string', multiple: true } },
  });
  if (values.child) {
    const r = values.child === 'inspect' ? await childInspect(positionals[0])
      : values.child === 'baseline' ? childBaseline(positionals)
        : await childBreakdown(positionals[0]);
    process.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  }
  const pods = Number(values.pods ?? 150_000);
  if (!Number.isInteger(pods) || pods < 10) {
    process.stderr.write('error: --pods must be a whole number of at least 10\n');
    return 2;
  }
  const dir = values.dir ?? '/tmp/kube-renumber-large-list';
  mkdirSync(dir, { recursive: true });
  const nodeFlags = values['node-flag'] ?? [];
  try {
    const f = generate(dir, pods);
    const base = child('baseline', f.pieces, nodeFlags);
    const insp = child('inspect', [f.file], nodeFlags);
    const brk = values.breakdown ? child('breakdown', [f.file], nodeFlags) : undefined;
    if (base.items !== pods) throw new Error(`the pieces hold ${String(base.items)} items, expected ${pods}`);
    const ratio = (insp.seconds as number) / (base.seconds as number);
    const cpuRatio = (insp.cpuSeconds as number) / (base.cpuSeconds as number);
    const rssRatio = (insp.maxRssMiB as number) * MiB / f.bytes;
    const rows: Array<[string, string]> = [
      ['file', `${f.file} (${round(f.bytes / MiB, 0)} MiB, ${pods} pods)`],
      ['inspect -f FILE -o json (in-process main())', `${round(insp.seconds as number)} s (CPU ${round(insp.cpuSeconds as number)} s), peak RSS ${String(insp.maxRssMiB)} MiB`],
      [`JSON.parse of ${f.pieces.length} pieces <= 256 MiB (parse only)`, `${round(base.seconds as number)} s (CPU ${round(base.cpuSeconds as number)} s), peak RSS ${String(base.maxRssMiB)} MiB`],
      ['ratio inspect / JSON.parse', `${round(ratio)} wall, ${round(cpuRatio)} CPU (goal <= 1.0)`],
      ['inspect peak RSS / file size', `${round(rssRatio, 3)} (goal < 0.5)`],
      ['load average (1 min) at the end', String(round(loadavg()[0], 1))],
    ];
    if (brk) rows.push(['breakdown', `read+parse ${round(brk.readSeconds as number)} s, snapshot ${round(brk.snapshotSeconds as number)} s, inspect() ${round(brk.inspectSeconds as number)} s, peak RSS ${String(brk.maxRssMiB)} MiB`]);
    const w = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(`large-list\n${rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n')}\n`);
    const result: Record<string, unknown> = {
      scenario: 'large-list', pods, fileMiB: round(f.bytes / MiB, 0), pieces: f.pieces.length,
      inspectSeconds: round(insp.seconds as number), jsonParseSeconds: round(base.seconds as number), ratio: round(ratio),
      inspectCpuSeconds: round(insp.cpuSeconds as number), jsonParseCpuSeconds: round(base.cpuSeconds as number), cpuRatio: round(cpuRatio), loadAverage: round(loadavg()[0], 1),
      inspectPeakRssMiB: insp.maxRssMiB, jsonParsePeakRssMiB: base.maxRssMiB, peakRssOverFileSize: round(rssRatio, 3), nodeFlags,
    };
    if (brk) result.breakdown = { readSeconds: round(brk.readSeconds as number), snapshotSeconds: round(brk.snapshotSeconds as number), inspectSeconds: round(brk.inspectSeconds as number), peakRssMiB: brk.maxRssMiB };
    const pass = ratio <= 1.0 && rssRatio < 0.5;
    result.goal = { ratio: round(ratio), maxRatio: 1.0, peakRssOverFileSize: round(rssRatio, 3), maxPeakRssOverFileSize: 0.5, pass };
    process.stdout.write(`goal: inspect / JSON.parse ${round(ratio)} <= 1.0 (wall): ${ratio <= 1.0 ? 'PASS' : 'FAIL'}; peak RSS / file size ${round(rssRatio, 3)} < 0.5: ${rssRatio < 0.5 ? 'PASS' : 'FAIL'}\n`);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    // a missed goal is a failed run (exit 1)
    return pass ? 0 : 1;
  } finally {
    if (values.clean) {
      rmSync(join(dir, `pods-${pods}.json`), { force: true });
      rmSync(join(dir, `pods-${pods}.done`), { force: true });
      rmSync(join(dir, `pieces-${pods}`), { recursive: true, force: true });
      try { if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true }); } catch { /* already gone */ }
      log(`removed the generated files under ${dir}`);
    }
  }
}
