// Workload fixture for Pod CIDR renumbering: many pods of every kind a migration must restart, with PDBs.
//
//   const tb = await Testbed.start({ nodes: 20, podIPAM: 'calico' });
//   const wl = await populateWorkloads(tb);          // defaults: 533 pods on 20 nodes
//
// In namespaces tb-wl-0..N-1 (labelled kube-renumber.test/workloads=true):
//   - Deployments web-<j> (`replicas` each, RollingUpdate maxUnavailable 1 / maxSurge 1) with a ClusterIP
//     Service web-<j> and a PDB web-<j> (maxUnavailable 1): a rollout never breaks its PDB;
//   - StatefulSets db-<k> (`statefulSetReplicas` each, Parallel, with headless Service db-<k>) and PDB
//     db-<k> (maxUnavailable 1);
// and in tb-wl-0:
//   - DaemonSet agent (pod network, one pod per node);
//   - DaemonSet host-agent with hostNetwork: true (a tool must leave it alone; no PDB);
//   - bare Pod standalone (no controller: must be recreated by whoever moves it);
//   - Job batch (parallelism 2, completions 2) whose pods carry pod-complete.stage.kwok.x-k8s.io/delay
//     (default 1h), so they stay Running during a migration (see stages.ts).
// Every pod tolerates every taint, requests 10m CPU, has terminationGracePeriodSeconds 0 and the label
// kube-renumber.test/workload=<kind>.<name>. In 'calico' mode an IPPool default-ipv4-ippool (= the
// testbed's podCIDR, blockSize 26) is created first when no IPPool exists.
//
// It waits until every workload has its pods Running with a pod IP and every PDB's status is current and
// satisfied (so a PDB watcher can start from a clean state), and returns a summary.

import { defaultPoolObject } from './calico-ipam.ts';
import type { Testbed } from './cluster.ts';
import { resourcePath, type KubeClient, type KubeObject } from './kube.ts';
import { COMPLETE_DELAY_ANNOTATION } from './stages.ts';

export interface WorkloadOptions {
  /** Namespaces tb-wl-<i> (default 5). */
  namespaces?: number;
  /** Deployments per namespace (default 4). */
  deploymentsPerNs?: number;
  /** Replicas per Deployment (default 22). */
  replicas?: number;
  /** StatefulSets per namespace (default 2). */
  statefulSets?: number;
  /** Replicas per StatefulSet (default 5). */
  statefulSetReplicas?: number;
  /** DaemonSet `agent` on the pod network (default true). */
  daemonSet?: boolean;
  /** DaemonSet `host-agent` with hostNetwork (default true). */
  hostNetworkDaemonSet?: boolean;
  /** Bare Pod `standalone` (default true). */
  barePod?: boolean;
  /** Job `batch` with 2 long-running pods (default true). */
  job?: boolean;
  /** How long Job pods run before they complete (Go duration, default "1h"). */
  jobCompleteDelay?: string;
  /** PDBs for Deployments and StatefulSets (default true). */
  pdbs?: boolean;
  /** The PDBs' maxUnavailable: a number or a percentage such as "10%" (default 1). */
  pdbMaxUnavailable?: number | string;
  /** A ClusterIP Service per Deployment (default true). */
  services?: boolean;
  /** Wait until everything runs (default true). */
  wait?: boolean;
  /** Wait timeout (default 300 s). */
  timeoutMs?: number;
}

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Pod' | 'Job';

export interface WorkloadInfo {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  /** Pods expected once up (DaemonSets: one per node). */
  replicas: number;
  hostNetwork: boolean;
  /** "namespace/name" of its PDB. */
  pdb?: string;
}

export interface WorkloadSummary {
  namespaces: string[];
  workloads: WorkloadInfo[];
  /** "namespace/name" of every PDB. */
  pdbs: string[];
  /** "namespace/name" of every Service. */
  services: string[];
  totalPods: number;
  /** Pods on the pod network (the ones a Pod CIDR migration must move). */
  podNetworkPods: number;
  hostNetworkPods: number;
  /** Time from the first create to everything up (ms). */
  elapsedMs: number;
}

export const WORKLOAD_LABEL = 'kube-renumber.test/workload';
export const WORKLOADS_NS_LABEL = 'kube-renumber.test/workloads';
const IMAGE = 'registry.k8s.io/pause:3.10';
const CALICO = '/apis/crd.projectcalico.org/v1';

type TestbedLike = Pick<Testbed, 'client'> & { options: Pick<Testbed['options'], 'podCIDR' | 'podIPAM'> };

function workloadKey(kind: WorkloadKind, name: string): string {
  return `${kind.toLowerCase()}.${name}`;
}

function podSpec(hostNetwork = false): Record<string, unknown> {
  return {
    containers: [{ name: 'main', image: IMAGE, resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
    terminationGracePeriodSeconds: 0,
    // kwok's own taint only: a blanket toleration would let pods onto cordoned nodes
    tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
    ...(hostNetwork ? { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' } : {}),
  };
}

function template(kind: WorkloadKind, name: string, extra: { annotations?: Record<string, string>; hostNetwork?: boolean; restartPolicy?: string } = {}) {
  return {
    metadata: { labels: { app: name, [WORKLOAD_LABEL]: workloadKey(kind, name) }, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: { ...podSpec(extra.hostNetwork), ...(extra.restartPolicy ? { restartPolicy: extra.restartPolicy } : {}) },
  };
}

function pathFor(obj: KubeObject): string {
  if (obj.apiVersion === 'batch/v1' && obj.kind === 'Job') return `/apis/batch/v1/namespaces/${obj.metadata.namespace}/jobs`;
  return resourcePath(obj.apiVersion!, obj.kind!, obj.metadata.namespace);
}

async function createAll(client: KubeClient, objs: KubeObject[], concurrency = 16): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < objs.length) {
      const o = objs[next++]!;
      await client.post(pathFor(o), o);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, objs.length) }, worker));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(what: string, check: () => Promise<string | true>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const r = await check();
      if (r === true) return;
      last = r;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${last}`);
    await sleep(500);
  }
}

/** Builds the objects (no API calls). `nodes` = number of nodes (DaemonSet pods). */
export function workloadObjects(opts: WorkloadOptions, nodes: number) {
  const nsCount = opts.namespaces ?? 5;
  const deps = opts.deploymentsPerNs ?? 4;
  const replicas = opts.replicas ?? 22;
  const stsCount = opts.statefulSets ?? 2;
  const stsReplicas = opts.statefulSetReplicas ?? 5;
  const pdbs = opts.pdbs ?? true;
  const services = opts.services ?? true;
  const namespaces = Array.from({ length: nsCount }, (_, i) => `tb-wl-${i}`);
  const nsObjs: KubeObject[] = namespaces.map((name) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { [WORKLOADS_NS_LABEL]: 'true' } },
  }));
  const objs: KubeObject[] = [];
  const workloads: WorkloadInfo[] = [];
  const pdbNames: string[] = [];
  const svcNames: string[] = [];
  const pdb = (ns: string, name: string, app: string): string => {
    objs.push({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: ns },
      spec: { maxUnavailable: opts.pdbMaxUnavailable ?? 1, selector: { matchLabels: { app } } },
    });
    pdbNames.push(`${ns}/${name}`);
    return `${ns}/${name}`;
  };

  for (const ns of namespaces) {
    for (let j = 0; j < deps; j++) {
      const name = `web-${j}`;
      objs.push({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace: ns, labels: { app: name } },
        spec: {
          replicas,
          selector: { matchLabels: { app: name } },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
          template: template('Deployment', name),
        },
      });
      if (services) {
        objs.push({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: ns, labels: { app: name } },
          spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
        });
        svcNames.push(`${ns}/${name}`);
      }
      workloads.push({ kind: 'Deployment', namespace: ns, name, replicas, hostNetwork: false, ...(pdbs ? { pdb: pdb(ns, name, name) } : {}) });
    }
    for (let k = 0; k < stsCount; k++) {
      const name = `db-${k}`;
      objs.push(
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: ns, labels: { app: name } },
          spec: { clusterIP: 'None', selector: { app: name }, ports: [{ name: 'pg', port: 5432, targetPort: 5432 }] },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          metadata: { name, namespace: ns, labels: { app: name } },
          spec: {
            serviceName: name,
            replicas: stsReplicas,
            podManagementPolicy: 'Parallel',
            selector: { matchLabels: { app: name } },
            template: template('StatefulSet', name),
          },
        },
      );
      svcNames.push(`${ns}/${name}`);
      workloads.push({ kind: 'StatefulSet', namespace: ns, name, replicas: stsReplicas, hostNetwork: false, ...(pdbs ? { pdb: pdb(ns, name, name) } : {}) });
    }
  }
  const ns0 = namespaces[0];
  if (ns0) {
    if (opts.daemonSet ?? true) {
      objs.push({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent', namespace: ns0, labels: { app: 'agent' } },
        spec: { selector: { matchLabels: { app: 'agent' } }, template: template('DaemonSet', 'agent') },
      });
      workloads.push({ kind: 'DaemonSet', namespace: ns0, name: 'agent', replicas: nodes, hostNetwork: false });
    }
    if (opts.hostNetworkDaemonSet ?? true) {
      objs.push({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'host-agent', namespace: ns0, labels: { app: 'host-agent' } },
        spec: { selector: { matchLabels: { app: 'host-agent' } }, template: template('DaemonSet', 'host-agent', { hostNetwork: true }) },
      });
      workloads.push({ kind: 'DaemonSet', namespace: ns0, name: 'host-agent', replicas: nodes, hostNetwork: true });
    }
    if (opts.barePod ?? true) {
      const t = template('Pod', 'standalone');
      objs.push({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'standalone', namespace: ns0, labels: t.metadata.labels }, spec: t.spec });
      workloads.push({ kind: 'Pod', namespace: ns0, name: 'standalone', replicas: 1, hostNetwork: false });
    }
    if (opts.job ?? true) {
      objs.push({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'batch', namespace: ns0, labels: { app: 'batch' } },
        spec: {
          parallelism: 2,
          completions: 2,
          backoffLimit: 0,
          // what a Job that must outlive drains has: an eviction (DisruptionTarget) is not a failure. Without it an
          // evicted pod counts against backoffLimit 0 and fails the Job, which kube-renumber refuses to do.
          podFailurePolicy: { rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] }] },
          template: template('Job', 'batch', {
            annotations: { [COMPLETE_DELAY_ANNOTATION]: opts.jobCompleteDelay ?? '1h' },
            restartPolicy: 'Never',
          }),
        },
      });
      workloads.push({ kind: 'Job', namespace: ns0, name: 'batch', replicas: 2, hostNetwork: false });
    }
  }
  const hostNetworkPods = workloads.filter((w) => w.hostNetwork).reduce((a, w) => a + w.replicas, 0);
  const totalPods = workloads.reduce((a, w) => a + w.replicas, 0);
  return { namespaces, nsObjs, objs, workloads, pdbs: pdbNames, services: svcNames, totalPods, hostNetworkPods };
}

/** In 'calico' mode, the IPPool the cluster's pods come from when none exists yet (as calico-node does). */
export async function ensureDefaultIPPool(tb: TestbedLike): Promise<void> {
  const pools = await tb.client.list(`${CALICO}/ippools`);
  if (pools.items.length > 0) return;
  try {
    await tb.client.post(`${CALICO}/ippools`, defaultPoolObject(tb.options.podCIDR));
  } catch (e) {
    if (!(e && typeof e === 'object' && 'status' in e && (e as { status: number }).status === 409)) throw e;
  }
}

export async function populateWorkloads(tb: TestbedLike, opts: WorkloadOptions = {}): Promise<WorkloadSummary> {
  const t0 = Date.now();
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const nodes = (await tb.client.list('/api/v1/nodes')).items.length;
  const built = workloadObjects(opts, nodes);
  if (tb.options.podIPAM === 'calico') await ensureDefaultIPPool(tb);
  await createAll(tb.client, built.nsObjs);
  await waitUntil(
    'default ServiceAccounts in the workload namespaces',
    async () => {
      for (const ns of built.namespaces) {
        if (!(await tb.client.getOrUndefined(`/api/v1/namespaces/${ns}/serviceaccounts/default`))) return `${ns} has none yet`;
      }
      return true;
    },
    60_000,
  );
  await createAll(tb.client, built.objs);
  if (opts.wait ?? true) await waitForWorkloads(tb, built.workloads, built.pdbs, timeoutMs);
  return {
    namespaces: built.namespaces,
    workloads: built.workloads,
    pdbs: built.pdbs,
    services: built.services,
    totalPods: built.totalPods,
    podNetworkPods: built.totalPods - built.hostNetworkPods,
    hostNetworkPods: built.hostNetworkPods,
    elapsedMs: Date.now() - t0,
  };
}

/**
 * Waits until each workload has at least `replicas` pods Running with a pod IP (and no more than that
 * for controllers that keep a count) and every PDB's status is current (observedGeneration) and
 * satisfied (currentHealthy >= desiredHealthy, expectedPods as intended).
 */
export async function waitForWorkloads(
  tb: Pick<Testbed, 'client'>,
  workloads: WorkloadInfo[],
  pdbs: string[],
  timeoutMs = 300_000,
): Promise<void> {
  const namespaces = [...new Set(workloads.map((w) => w.namespace))];
  await waitUntil(
    `${workloads.reduce((a, w) => a + w.replicas, 0)} workload pods Running with an IP`,
    async () => {
      const running = new Map<string, number>();
      for (const ns of namespaces) {
        const pods = await tb.client.list(`/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(WORKLOAD_LABEL)}`);
        for (const p of pods.items) {
          if (p.metadata.deletionTimestamp || p.status?.phase !== 'Running' || !p.status?.podIP) continue;
          const key = `${ns}/${p.metadata.labels?.[WORKLOAD_LABEL]}`;
          running.set(key, (running.get(key) ?? 0) + 1);
        }
      }
      const short = workloads
        .map((w) => ({ w, n: running.get(`${w.namespace}/${workloadKey(w.kind, w.name)}`) ?? 0 }))
        .filter(({ w, n }) => n < w.replicas);
      if (short.length) {
        return `${short.length} workloads short, e.g. ${short.slice(0, 3).map(({ w, n }) => `${w.kind} ${w.namespace}/${w.name} ${n}/${w.replicas}`).join(', ')}`;
      }
      return true;
    },
    timeoutMs,
  );
  const expected = new Map(workloads.filter((w) => w.pdb).map((w) => [w.pdb!, w.replicas]));
  await waitUntil(
    `${pdbs.length} PDBs current and satisfied`,
    async () => {
      for (const key of pdbs) {
        const [ns, name] = key.split('/') as [string, string];
        const p = await tb.client.get(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${name}`);
        const st = p.status ?? {};
        if (st.observedGeneration !== (p.metadata as { generation?: number }).generation) return `${key} status not observed yet`;
        if ((st.currentHealthy ?? 0) < (st.desiredHealthy ?? 0)) return `${key} currentHealthy ${st.currentHealthy} < desiredHealthy ${st.desiredHealthy}`;
        const want = expected.get(key);
        if (want !== undefined && st.expectedPods !== want) return `${key} expectedPods ${st.expectedPods} != ${want}`;
      }
      return true;
    },
    timeoutMs,
  );
}
