/**
 * The most nodes the cluster may reach, read where the cluster says it (pure: raw objects → NodeLimits):
 *  - kOps InstanceGroups (`spec.maxSize`, given with -f: they live in the kOps state store, like the Cluster spec);
 *  - cluster-autoscaler's `--nodes=MIN:MAX:NAME` flags (its pods or Deployment);
 *  - cluster-autoscaler's status ConfigMap kube-system/cluster-autoscaler-status (the structured YAML of
 *    cluster-autoscaler 1.30 and later, and the older text; GKE's and AKS's managed autoscalers publish it too);
 *  - Cluster API's `cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size` annotation on MachineDeployments,
 *    MachineSets and MachinePools;
 *  - Karpenter NodePools' `spec.limits.nodes` (a NodePool limited only in cpu or memory gives no node count: it is
 *    named in `notes`, never converted).
 * Each source's groups are summed; the sources describe the same nodes in different ways (the autoscaler's groups
 * are the InstanceGroups or the MachineDeployments), so they are never added to each other: sizing takes the
 * largest (src/analyze/sizing.ts). Where each platform documents these fields: docs/platforms.md.
 */
import type { KubeObject, NodeGroupLimit, NodeLimits, NodeLimitSource } from './types.ts';
import type { ApiResource } from '../vocabulary.ts';
import type { Builder } from './builder.ts';
import { platformNodeGroups } from '../platform/registry.ts';
import { parseEmbeddedYaml } from './kubeadm-config.ts';

/** The Cluster API annotation cluster-autoscaler reads a node group's maximum from. */
export const CAPI_MAX_SIZE_ANNOTATION = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size';
/** The ConfigMap (in kube-system) cluster-autoscaler writes its status to. */
export const AUTOSCALER_STATUS_CONFIGMAP = 'cluster-autoscaler-status';

const CAPI_KINDS = new Set(['MachineDeployment', 'MachineSet', 'MachinePool']);

/**
 * What a live read lists for the node maximums, when the server serves it (newest version first; deploy/rbac.yaml
 * grants get/list on each). cluster-autoscaler's pods and status ConfigMap are in kube-system, read anyway.
 */
export const NODE_LIMIT_RESOURCES: readonly ApiResource[] = [
  ...['v1beta2', 'v1beta1'].flatMap((version) => [
    { group: 'cluster.x-k8s.io', version, plural: 'machinedeployments', kind: 'MachineDeployment', namespaced: true },
    { group: 'cluster.x-k8s.io', version, plural: 'machinesets', kind: 'MachineSet', namespaced: true },
    { group: 'cluster.x-k8s.io', version, plural: 'machinepools', kind: 'MachinePool', namespaced: true },
  ]),
  { group: 'karpenter.sh', version: 'v1', plural: 'nodepools', kind: 'NodePool', namespaced: false },
  { group: 'karpenter.sh', version: 'v1beta1', plural: 'nodepools', kind: 'NodePool', namespaced: false },
];
const groupOf = (apiVersion: unknown): string => (typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');

/** A whole number of nodes >= 0 from a number or a decimal string; undefined otherwise. */
export function count(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

const name = (o: KubeObject) => `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name ?? '?'}`;

/** The `--nodes` values of a container's command and args (`--nodes=1:10:name` or `--nodes 1:10:name`). */
function nodesFlags(argv: readonly unknown[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (typeof a !== 'string') continue;
    if (a.startsWith('--nodes=')) out.push(a.slice('--nodes='.length));
    else if (a === '--nodes' && typeof argv[i + 1] === 'string') out.push(argv[++i] as string);
  }
  return out;
}

/** The pod spec of a Pod, or of a Deployment's template. */
function podSpecOf(o: KubeObject): any {
  if (o.kind === 'Pod') return o.spec;
  if (o.kind === 'Deployment' && groupOf(o.apiVersion) === 'apps') return o.spec?.template?.spec;
  return undefined;
}

/** cluster-autoscaler's `--nodes=MIN:MAX:NAME` flags, each group once (its replicas and its Deployment name the same groups). */
function autoscalerFlagGroups(objects: readonly KubeObject[], b: Builder): NodeGroupLimit[] {
  const byName = new Map<string, NodeGroupLimit>();
  for (const o of objects) {
    const spec = podSpecOf(o);
    if (!spec || !Array.isArray(spec.containers)) continue;
    for (const c of spec.containers) {
      if (!c || typeof c !== 'object') continue;
      const argv = [...(Array.isArray(c.command) ? c.command : []), ...(Array.isArray(c.args) ? c.args : [])];
      if (!argv.some((a: unknown) => typeof a === 'string' && a.includes('cluster-autoscaler')) && !String(c.image ?? '').includes('cluster-autoscaler')) continue;
      for (const v of nodesFlags(argv)) {
        const m = /^(\d+):(\d+):(.+)$/.exec(v.trim());
        const max = m ? count(m[2]) : undefined;
        if (!m || max === undefined) {
          b.warn(`${o.kind} ${name(o)}: cluster-autoscaler --nodes=${v} is not MIN:MAX:NAME; ignored`);
          continue;
        }
        if (!byName.has(m[3]!)) byName.set(m[3]!, { name: m[3]!, max, source: `cluster-autoscaler --nodes=${v.trim()} (${o.kind} ${name(o)})` });
      }
    }
  }
  return [...byName.values()];
}

/**
 * cluster-autoscaler's status ConfigMap: `data.status` as structured YAML (nodeGroups[].name and
 * nodeGroups[].health.maxSize, cluster-autoscaler 1.30+) or as the older text (a `Name:` line per group and
 * `maxSize=N` in its Health line).
 */
export function autoscalerStatusGroups(cm: KubeObject | undefined, b: Builder): NodeGroupLimit[] {
  const text = cm?.data?.status;
  if (typeof text !== 'string' || text.trim() === '') return [];
  const where = `ConfigMap kube-system/${AUTOSCALER_STATUS_CONFIGMAP}`;
  const out: NodeGroupLimit[] = [];
  const doc = /^\s*Cluster-autoscaler status at/m.test(text) ? undefined : parseEmbeddedYaml(text);
  if (doc && typeof doc === 'object' && Array.isArray(doc.nodeGroups)) {
    for (const g of doc.nodeGroups) {
      const max = count(g?.health?.maxSize ?? g?.maxSize);
      const n = typeof g?.name === 'string' ? g.name : undefined;
      if (n === undefined || max === undefined) continue;
      out.push({ name: n, max, source: `${where} nodeGroups[${n}].health.maxSize` });
    }
    return out;
  }
  // The text format: "NodeGroups:\n  Name: <group>\n  Health: Healthy (... (minSize=1, maxSize=5))"
  let current: string | undefined;
  const part = text.split(/^\s*NodeGroups:\s*$/m)[1] ?? '';
  for (const line of part.split('\n')) {
    const nm = /^\s*Name:\s*(\S+)\s*$/.exec(line);
    if (nm) { current = nm[1]; continue; }
    const mx = /maxSize=(\d+)/.exec(line);
    if (mx && current !== undefined && /^\s*Health:/.test(line)) {
      out.push({ name: current, max: Number(mx[1]), source: `${where} (NodeGroups ${current} Health maxSize)` });
      current = undefined;
    }
  }
  if (out.length === 0 && doc === undefined) b.warn(`${where}: no node group with a maxSize in its status text; not read`);
  return out;
}

/** Cluster API: the max-size annotation; a MachineSet its annotated MachineDeployment owns is not counted twice. */
function capiGroups(objects: readonly KubeObject[], b: Builder): NodeGroupLimit[] {
  const out: NodeGroupLimit[] = [];
  const annotatedMDs = new Set<string>();
  const capi = objects.filter((o) => CAPI_KINDS.has(String(o.kind)) && groupOf(o.apiVersion) === 'cluster.x-k8s.io');
  for (const o of capi) if (o.kind === 'MachineDeployment' && o.metadata?.annotations?.[CAPI_MAX_SIZE_ANNOTATION] !== undefined) annotatedMDs.add(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
  for (const o of capi) {
    const raw = o.metadata?.annotations?.[CAPI_MAX_SIZE_ANNOTATION];
    if (raw === undefined) continue;
    const owner = (o.metadata?.ownerReferences ?? []).find((r) => r.kind === 'MachineDeployment');
    if (o.kind === 'MachineSet' && owner && annotatedMDs.has(`${o.metadata?.namespace ?? ''}/${owner.name ?? ''}`)) continue;
    const max = count(raw);
    if (max === undefined) {
      b.warn(`${o.kind} ${name(o)}: annotation ${CAPI_MAX_SIZE_ANNOTATION} ${JSON.stringify(raw)} is not a whole number; ignored`);
      continue;
    }
    out.push({ name: name(o), max, source: `${o.kind} ${name(o)} annotation ${CAPI_MAX_SIZE_ANNOTATION}` });
  }
  return out;
}

/** Karpenter NodePools' spec.limits.nodes; the names of those limited otherwise (cpu, memory) or not at all. */
function karpenterGroups(objects: readonly KubeObject[], b: Builder): { groups: NodeGroupLimit[]; unlimited: string[] } {
  const groups: NodeGroupLimit[] = [];
  const unlimited: string[] = [];
  for (const o of objects) {
    if (o.kind !== 'NodePool' || groupOf(o.apiVersion) !== 'karpenter.sh') continue;
    const limits = o.spec?.limits;
    const raw = limits && typeof limits === 'object' ? limits.nodes : undefined;
    const max = count(raw);
    if (raw !== undefined && max === undefined) b.warn(`Karpenter NodePool ${name(o)}: spec.limits.nodes ${JSON.stringify(raw)} is not a whole number; ignored`);
    if (max === undefined) {
      const kinds = limits && typeof limits === 'object' ? Object.keys(limits).filter((k) => k !== 'nodes') : [];
      unlimited.push(`Karpenter NodePool ${name(o)} ${kinds.length > 0 ? `limits only ${kinds.join(', ')}` : 'has no limits'}: no node count (not converted)`);
      continue;
    }
    groups.push({ name: name(o), max, source: `Karpenter NodePool ${name(o)} spec.limits.nodes` });
  }
  return { groups, unlimited };
}

/**
 * Every source of the most nodes the cluster may reach, each with its groups and their sum; `notes` names what
 * could not be counted. Undefined when nothing in the input says it.
 */
export function readNodeLimits(objects: readonly KubeObject[], configs: readonly KubeObject[], statusConfigMap: KubeObject | undefined, b: Builder): NodeLimits | undefined {
  const sources: NodeLimitSource[] = [];
  const add = (what: string, groups: NodeGroupLimit[]) => {
    if (groups.length > 0) sources.push({ what, max: groups.reduce((s, g) => s + g.max, 0), groups });
  };
  // the platforms' own node groups (kOps InstanceGroups), from their configuration files
  for (const p of platformNodeGroups(configs, (m) => b.warn(m))) add(p.what, p.groups);
  add('cluster-autoscaler --nodes', autoscalerFlagGroups(objects, b));
  add('cluster-autoscaler status maxSize', autoscalerStatusGroups(statusConfigMap, b));
  add(`Cluster API ${CAPI_MAX_SIZE_ANNOTATION}`, capiGroups(objects, b));
  const k = karpenterGroups(objects, b);
  // A NodePool without a node limit means the Karpenter total is not known: its known part is still a floor.
  add(k.unlimited.length > 0 ? 'Karpenter NodePool limits.nodes (some NodePools without one)' : 'Karpenter NodePool limits.nodes', k.groups);
  if (sources.length === 0 && k.unlimited.length === 0) return undefined;
  return { sources, notes: k.unlimited };
}
