/**
 * Live discovery: list (paginated, in parallel) everything the cluster model needs and hand it over as a
 * RawInventory, the same shape the offline file reader produces. No per-object GETs: a fixed number of
 * discovery calls, then one paginated LIST per resource.
 */
import type { KubeObject, RawInventory } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from './client.ts';
import { platformResources } from '../platform/registry.ts';
import { ipamResources } from '../ipam/registry.ts';
import { NODE_LIMIT_RESOURCES } from '../cluster/node-limits.ts';
import type { ApiResource } from '../vocabulary.ts';
import { slimReferenceConfig } from '../cluster/references/slim.ts';
import { referenceLists } from '../cluster/references/registry.ts';
import { slimWorkload } from '../cluster/references/types.ts';

/** ServiceCIDR API versions, newest first. */
export const SERVICE_CIDR_VERSIONS = ['v1', 'v1beta1', 'v1alpha1'] as const;

interface Source {
  path: string;
  what: string;
  required: boolean;
  slim?: (o: KubeObject) => KubeObject;
  fieldSelector?: string;
  labelSelector?: string;
  pageSize?: number;
  /** Asked for by the user: refused (403), the read fails with this message instead of leaving a gap. */
  refused?: string;
}

/** Keep only what the model reads of a pod; full specs only for kube-system (mirror pods carry flags). */
export function slimPod(p: KubeObject): KubeObject {
  const ns = p.metadata?.namespace;
  if (ns === 'kube-system') return p;
  const owners = (p.metadata?.ownerReferences ?? []).filter((o) => o.controller);
  // a bare pod is its own template: the references scan reads its containers and hostAliases
  const bare = owners.length === 0 ? slimWorkload(p).spec : {};
  return {
    apiVersion: p.apiVersion ?? 'v1',
    kind: 'Pod',
    metadata: {
      name: p.metadata?.name,
      namespace: ns,
      uid: p.metadata?.uid,
      labels: p.metadata?.labels,
      ownerReferences: owners.length ? owners : undefined,
    },
    spec: { ...bare, nodeName: p.spec?.nodeName, hostNetwork: p.spec?.hostNetwork },
    status: { phase: p.status?.phase, podIP: p.status?.podIP, podIPs: p.status?.podIPs, hostIP: p.status?.hostIP },
  };
}

/**
 * Objects read only for the addresses they name (policies, Ingress annotations): drop managedFields and
 * kubectl's last-applied copy, which repeat the object and can be most of its size.
 */
export const slimReferenceObject = slimReferenceConfig;

/** Calico resources read for the references scan, listed when the server has them. */
export const CALICO_REFERENCE_RESOURCES = ['networkpolicies', 'globalnetworkpolicies', 'networksets', 'globalnetworksets'] as const;

/** Which group versions the server serves, from /api and /apis discovery. */
async function servedGroups(client: KubeClient): Promise<Map<string, string[]>> {
  const groups = new Map<string, string[]>();
  const list: any = await client.request('GET', '/apis');
  for (const g of list?.groups ?? []) groups.set(g.name, (g.versions ?? []).map((v: any) => v.version));
  return groups;
}

async function servedResources(client: KubeClient, groupVersion: string): Promise<Set<string>> {
  try {
    const rl: any = await client.request('GET', `/apis/${groupVersion}`);
    return new Set((rl?.resources ?? []).map((r: any) => r.name));
  } catch (e) {
    if (e instanceof KubeApiError && (e.status === 404 || e.status === 403)) return new Set();
    throw e;
  }
}

async function servesResource(client: KubeClient, groupVersion: string, resource: string): Promise<boolean> {
  return (await servedResources(client, groupVersion)).has(resource);
}

/**
 * The lists of declared resources (platforms' and IPAM owners' `reads`) the server serves: of several versions of
 * one resource (group and plural), declared newest first, the first served. `served` caches each group version's
 * resources.
 */
async function declaredSources(
  client: KubeClient, groups: Map<string, string[]>, served: Map<string, Promise<Set<string>>>, resources: readonly ApiResource[], slim?: (o: KubeObject) => KubeObject,
): Promise<Source[]> {
  const out: Source[] = [];
  const listed = new Set<string>();
  for (const r of resources) {
    const what = `${r.plural}.${r.group}`;
    if (r.group === '' || listed.has(what) || !groups.get(r.group)?.includes(r.version)) continue;
    const gv = `${r.group}/${r.version}`;
    if (!served.has(gv)) served.set(gv, servedResources(client, gv));
    if (!(await served.get(gv)!).has(r.plural)) continue;
    listed.add(what);
    out.push({ path: `/apis/${gv}/${r.plural}`, what, required: false, ...(slim ? { slim } : {}) });
  }
  return out;
}

export interface LiveReadOptions {
  onProgress?: (msg: string) => void;
  /**
   * List Helm's release Secrets for the references scan (plan --read-helm-releases): `list secrets` in every
   * namespace, granted by deploy/rbac-helm-releases.yaml only.
   */
  helmReleases?: boolean;
}

export async function readLiveInventory(client: KubeClient, opts: LiveReadOptions = {}): Promise<RawInventory> {
  const progress = opts.onProgress ?? (() => {});
  const version: any = await client.request('GET', '/version');
  const groups = await servedGroups(client);
  const netVersions = groups.get('networking.k8s.io') ?? [];
  const served: string[] = [];
  for (const v of SERVICE_CIDR_VERSIONS) {
    if (netVersions.includes(v) && await servesResource(client, `networking.k8s.io/${v}`, 'servicecidrs')) served.push(`networking.k8s.io/${v}`);
  }

  const sources: Source[] = [
    { path: '/api/v1/nodes', what: 'nodes', required: true },
    { path: '/api/v1/services', what: 'services', required: true },
    { path: '/api/v1/pods', what: 'pods', required: true, slim: slimPod },
    { path: '/api/v1/namespaces/kube-system/configmaps', what: 'configmaps in kube-system', required: false },
  ];
  if (served[0]) sources.push({ path: `/apis/${served[0]}/servicecidrs`, what: 'servicecidrs', required: false });
  // Read for the references scan (what still names an old range): policies and allow-list annotations.
  if (netVersions.includes('v1')) {
    for (const r of ['networkpolicies', 'ingresses']) {
      sources.push({ path: `/apis/networking.k8s.io/v1/${r}`, what: `${r}.networking.k8s.io`, required: false, slim: slimReferenceObject });
    }
  }
  if (groups.get('crd.projectcalico.org')?.includes('v1')) {
    for (const r of ['ippools', 'ipamblocks', 'blockaffinities']) {
      sources.push({ path: `/apis/crd.projectcalico.org/v1/${r}`, what: `${r}.crd.projectcalico.org`, required: false });
    }
    const calico = await servedResources(client, 'crd.projectcalico.org/v1');
    for (const r of CALICO_REFERENCE_RESOURCES) {
      if (calico.has(r)) sources.push({ path: `/apis/crd.projectcalico.org/v1/${r}`, what: `${r}.crd.projectcalico.org`, required: false, slim: slimReferenceObject });
    }
  }
  // The references scan's other sources (src/cluster/references/), when served: workloads, webhooks, BGP configuration, ...
  const servedGV = new Map<string, Promise<Set<string>>>();
  for (const l of referenceLists(opts.helmReleases ? ['helm-releases'] : [])) {
    const what = `${l.plural}${l.group ? `.${l.group}` : ''}`;
    const extra: Partial<Source> = {
      ...(l.slim ? { slim: l.slim } : {}), ...(l.fieldSelector ? { fieldSelector: l.fieldSelector } : {}),
      ...(l.labelSelector ? { labelSelector: l.labelSelector } : {}), ...(l.pageSize ? { pageSize: l.pageSize } : {}),
      ...(l.optIn === 'helm-releases' ? { refused: `--read-helm-releases lists Secrets of type ${l.fieldSelector?.replace(/^type=/, '') ?? ''} in every namespace: apply deploy/rbac-helm-releases.yaml, or leave out the flag` } : {}),
    };
    if (l.group === '') { sources.push({ path: `/api/${l.version}/${l.plural}`, what, required: false, ...extra }); continue; }
    const [found] = await declaredSources(client, groups, servedGV, [l]);
    if (found) sources.push({ ...found, ...extra });
  }
  // What the IPAM owners read (src/ipam/), when served: Cilium's CiliumPodIPPools, ...
  sources.push(...await declaredSources(client, groups, servedGV, ipamResources()));
  if (groups.get('operator.tigera.io')?.includes('v1')) {
    sources.push({ path: '/apis/operator.tigera.io/v1/installations', what: 'installations.operator.tigera.io', required: false });
  }
  // What the platforms' detection reads (src/platform/), when served: OpenShift's Network config, EKS ENIConfigs, ...
  sources.push(...await declaredSources(client, groups, servedGV, platformResources(), slimReferenceObject));
  // The most nodes the cluster may reach (src/cluster/node-limits.ts): Cluster API's machine groups, Karpenter's NodePools.
  sources.push(...await declaredSources(client, groups, servedGV, NODE_LIMIT_RESOURCES, slimReferenceObject));

  const gaps: string[] = [];
  // The cluster's identity: the uid of namespace kube-system (created once with the cluster, never recreated),
  // which plans record and apply/resume/rollback/restore compare with (src/plan/identity.ts).
  // (settled here, never rejected: a failure is rethrown below, after the lists, so no rejection goes unhandled)
  const identity = readClusterUID(client).then((uid) => ({ uid }), (error: unknown) => ({ error }));
  const lists = await Promise.all(sources.map(async (s) => {
    const items: KubeObject[] = [];
    try {
      const lo = { ...(s.fieldSelector ? { fieldSelector: s.fieldSelector } : {}), ...(s.labelSelector ? { labelSelector: s.labelSelector } : {}), ...(s.pageSize ? { pageSize: s.pageSize } : {}) };
      for await (const o of client.list(s.path, lo)) items.push(s.slim ? s.slim(o) : o);
    } catch (e) {
      if (s.refused !== undefined && e instanceof KubeApiError && e.status === 403) {
        const who = /\bUser "([^"]*)"/.exec(e.message)?.[1];
        throw new KubeApiError(e.method, e.path, e.status, e.reason, `not allowed to list ${s.what}${who !== undefined ? ` as user "${who}"` : ''} (403 Forbidden): ${s.refused}`);
      }
      if (!s.required && e instanceof KubeApiError && (e.status === 403 || e.status === 404)) {
        gaps.push(`could not list ${s.what} (${e.status === 403 ? 'forbidden' : 'not found'}): facts from them are missing`);
        return [];
      }
      if (s.required && e instanceof KubeApiError && e.status === 403) {
        // the apiserver's refusal names who asked (User "jane", or system:serviceaccount:…): so does ours
        const who = /\bUser "([^"]*)"/.exec(e.message)?.[1];
        throw new KubeApiError(e.method, e.path, e.status, e.reason,
          `not allowed to list ${s.what}${who !== undefined ? ` as user "${who}"` : ''} (403 Forbidden): kube-renumber needs the read permissions in deploy/rbac.yaml`);
      }
      throw e;
    }
    progress(`listed ${items.length} ${s.what}`);
    return items;
  }));

  const id = await identity;
  if ('error' in id) {
    const e = id.error;
    if (!(e instanceof KubeApiError && (e.status === 403 || e.status === 404))) throw e;
    gaps.push(`could not read namespace kube-system (${e.status === 403 ? 'forbidden' : 'not found'}): the cluster's identity is unknown, a plan is not bound to it`);
  }
  const kubeSystemUID = 'uid' in id ? id.uid : undefined;
  return {
    source: { kind: 'live', context: client.context, server: client.server, ...(kubeSystemUID ? { kubeSystemUID } : {}), ...(opts.helmReleases ? { helmReleases: true as const } : {}) },
    serverVersion: version?.gitVersion,
    serviceCIDRApiVersions: served,
    objects: lists.flat(),
    configs: [],
    gaps,
  };
}

/** The uid of namespace kube-system: the cluster's identity (one GET). KubeApiError when it cannot be read. */
export async function readClusterUID(client: KubeClient): Promise<string | undefined> {
  const ns: any = await client.request('GET', '/api/v1/namespaces/kube-system');
  return typeof ns?.metadata?.uid === 'string' && ns.metadata.uid !== '' ? ns.metadata.uid : undefined;
}
