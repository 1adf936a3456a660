// Re-registers a testbed Node that was deleted, as its kubelet would: same name, the labels and
// annotations kwok needs, no spec.podCIDR (kube-controller-manager allocates one if it runs with
// --allocate-node-cidrs=true). Exits 0 once the Node exists and kwok reports it Ready.
//
//   node test/testbed/reregister-node.ts [--kubeconfig K] [--template FILE] [--timeout SECONDS] [NODE]
//
//   NODE       default: $KUBE_RENUMBER_NODE (how a hook command receives it)
//   --kubeconfig  default: $KUBECONFIG
//   --template    default: $KUBE_RENUMBER_TESTBED_NODE_TEMPLATE, else node-template.json next to the
//                 kubeconfig (the testbed writes it into its state dir when it creates nodes)
//   --timeout     seconds to wait for Ready (default 30)
//   --unschedulable  register the Node cordoned (spec.unschedulable: true): the move must uncordon it
//
// If the Node still exists but is being deleted, it waits for it to go away first; if it exists and is
// not being deleted, nothing is created (exit 0 once Ready). Exit 1 on errors or timeout.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readKubeconfig } from './calico-ipam.ts';
import { ApiError, KubeClient, type KubeObject } from './kube.ts';

export const NODE_TEMPLATE_ENV = 'KUBE_RENUMBER_TESTBED_NODE_TEMPLATE';
export const NODE_TEMPLATE_FILE = 'node-template.json';
export const NODE_NAME_ENV = 'KUBE_RENUMBER_NODE';

/** A Node object in which every "${NODE}" stands for the node name. */
export type NodeTemplate = KubeObject;

/** The template file the testbed writes (node-template.json in its state dir). */
export interface NodeTemplateFile {
  node: NodeTemplate;
  /** InternalIP each node registers with (data only: never contacted). */
  internalIPs: Record<string, string>;
  /** Labels a node registers with besides the template's (its zone), per node name. */
  labels?: Record<string, Record<string, string>>;
}

/** The well-known zone label. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The InternalIP of testbed node tb-node-<i>: TEST-NET-1 192.0.2.1-254, then TEST-NET-2 198.51.100.1-254
 * (documentation ranges, RFC 5737), then 198.18.0.1 onwards (198.18.0.0/15, set aside for benchmarks, RFC 2544):
 * written into Node and Pod objects only, never contacted; none beyond 198.19.255.254.
 */
export function testbedNodeIP(i: number): string | undefined {
  if (!Number.isInteger(i) || i < 0) return undefined;
  if (i < 254) return `192.0.2.${i + 1}`;
  if (i < 508) return `198.51.100.${i - 253}`;
  const o = i - 508 + 1;
  if (o >= 2 ** 17 - 1) return undefined;
  return `198.${18 + (o >> 16)}.${(o >> 8) & 255}.${o & 255}`;
}

export function readNodeTemplate(path: string): NodeTemplateFile {
  const f = JSON.parse(readFileSync(path, 'utf8')) as NodeTemplateFile;
  if (!f.node?.metadata) throw new Error(`${path}: not a testbed node template`);
  f.internalIPs ??= {};
  return f;
}

/**
 * What a testbed node has to give: kwok's own defaults (its node-initialize Stage, kustomize/stage/node/fast), so a
 * Node registered with them ends as one kwok initialized itself.
 */
export const NODE_RESOURCES = { cpu: '1k', memory: '1Ti', pods: '1M' } as const;

/**
 * The Node object a kubelet for `name` registers: spec without podCIDR; status with its addresses, capacity and
 * allocatable. A kubelet creates its Node with the status its setters compute (pkg/kubelet/kubelet_node_status.go:
 * initialNode ends with setNodeStatus, whose MachineInfo setter sets capacity and allocatable), not an empty one.
 * The conditions are left to kwok, whose node-initialize Stage plays only while Ready is not True and keeps the
 * addresses, capacity and allocatable given. Registering them matters when a Node is deleted and registered again
 * under its name: kwok keys its node jobs by name, and a heartbeat it had queued for the old Node can land on the new
 * one first, setting Ready=True and nothing else. Without capacity the new Node then fits no pod, and kwok's
 * node-initialize no longer plays (1,000-node control-plane-load run, 2026-11-29: tb-node-367's DaemonSet pod stayed
 * Pending, "Insufficient cpu, Insufficient memory, Too many pods").
 */
export function nodeFromTemplate(file: NodeTemplateFile, name: string): KubeObject {
  const node = JSON.parse(JSON.stringify(file.node).replaceAll('${NODE}', name)) as KubeObject;
  const extra = file.labels?.[name];
  if (extra) node.metadata.labels = { ...node.metadata.labels, ...extra };
  const ip = file.internalIPs[name];
  node.status = {
    ...(ip ? { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: name }] } : {}),
    capacity: { ...NODE_RESOURCES },
    allocatable: { ...NODE_RESOURCES },
  };
  return node;
}

function isReady(n: KubeObject | undefined): boolean {
  return (n?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
}

export async function reregisterNode(opts: {
  client: KubeClient;
  name: string;
  templatePath: string;
  timeoutMs?: number;
  /** Register the Node cordoned (spec.unschedulable: true). */
  unschedulable?: boolean;
  log?: (msg: string) => void;
}): Promise<KubeObject> {
  const { client, name } = opts;
  const log = opts.log ?? (() => {});
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  const template = readNodeTemplate(opts.templatePath);
  const path = `/api/v1/nodes/${encodeURIComponent(name)}`;
  for (;;) {
    const cur = await client.getOrUndefined(path);
    if (cur && !cur.metadata.deletionTimestamp) {
      if (isReady(cur)) return cur;
      break;
    }
    if (!cur) {
      // a machine boots after its old Node is gone: wait (10 s at most, never past the deadline) for the garbage
      // collector to delete the old Node's Lease, so kwok starts the new Node with a Lease of its own
      const lease = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(name)}`;
      const leaseDeadline = Math.min(deadline, Date.now() + 10_000);
      while (Date.now() < leaseDeadline && await client.getOrUndefined(lease)) await sleep(200);
      try {
        const node = nodeFromTemplate(template, name);
        if (opts.unschedulable) node.spec = { ...node.spec, unschedulable: true };
        await client.post('/api/v1/nodes', node);
        log(`created Node ${name}${opts.unschedulable ? ' (cordoned)' : ''}`);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 409)) throw e;
      }
      break;
    }
    if (Date.now() > deadline) throw new Error(`Node ${name} is still being deleted`);
    await sleep(200);
  }
  for (;;) {
    const n = await client.getOrUndefined(path);
    if (isReady(n)) {
      log(`Node ${name} Ready`);
      return n!;
    }
    if (Date.now() > deadline) throw new Error(`Node ${name} not Ready within ${opts.timeoutMs ?? 30_000} ms`);
    await sleep(200);
  }
}

async function main(argv: string[]): Promise<void> {
  let kubeconfig = process.env.KUBECONFIG;
  let template = process.env[NODE_TEMPLATE_ENV];
  let timeoutSec = 30;
  let unschedulable = false;
  let name: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => {
      const eq = a.indexOf('=');
      if (eq >= 0) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--kubeconfig' || a.startsWith('--kubeconfig=')) kubeconfig = val();
    else if (a === '--template' || a.startsWith('--template=')) template = val();
    else if (a === '--timeout' || a.startsWith('--timeout=')) timeoutSec = Number(val());
    else if (a === '--unschedulable') unschedulable = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else if (name === undefined) name = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  name ??= process.env[NODE_NAME_ENV] || undefined;
  if (!name) throw new Error(`no node name (give it as an argument or in $${NODE_NAME_ENV})`);
  if (!kubeconfig) throw new Error('no kubeconfig (--kubeconfig or $KUBECONFIG)');
  if (!Number.isFinite(timeoutSec) || timeoutSec <= 0) throw new Error('--timeout wants a positive number of seconds');
  template ??= join(dirname(kubeconfig), NODE_TEMPLATE_FILE);
  const { server, token } = readKubeconfig(kubeconfig);
  const client = new KubeClient(server, token);
  try {
    await reregisterNode({
      client,
      name,
      templatePath: template,
      timeoutMs: timeoutSec * 1000,
      unschedulable,
      log: (m) => process.stderr.write(`reregister-node: ${m}\n`),
    });
  } finally {
    client.close();
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`reregister-node: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
