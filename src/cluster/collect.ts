/**
 * The single pass over the objects: each object is read into its snapshot record or kept for a later phase,
 * and noted as a distribution or CNI sign. Ranges and warnings are added in object order.
 */
import type {
  ApiserverFlags,
  BlockAffinityInfo,
  CalicoBlock,
  CalicoPool,
  ControllerManagerFlags,
  KubeObject,
  NodeInfo,
  PodInfo,
  ServiceCIDRInfo,
  ServiceInfo,
} from './types.ts';
import type { Builder } from './builder.ts';
import type { CniSignals } from '../cni/detect.ts';
import { isComponentPod } from './components.ts';
import { ReferenceCollector } from './reference-sources.ts';
import { keepNewestServiceCIDR, nsName, readNode, readPod, readService, readServiceCIDR } from './readers.ts';
import { readApiserver, readControllerManager, type ControlPlaneWords } from './control-plane.ts';
import { type KubeProxyFromPod, readKubeProxyPod } from './kube-proxy.ts';
import { collectPool, readBlockAffinity, readIPAMBlock } from './calico.ts';
import { noteDaemonSetCni, noteInstallation, noteNodeCni, notePodCni } from './cni-signals.ts';
import { isDistroConfig } from './distro-configs.ts';
import { objectKey, type CalicoClusterType, type PlatformNode, type SystemWorkload } from '../platform/types.ts';
import { platformResources } from '../platform/registry.ts';
import { ipamResources } from '../ipam/registry.ts';

/** What the pass over the objects collects. */
export interface Collected {
  services: ServiceInfo[];
  pods: PodInfo[];
  nodes: NodeInfo[];
  serviceCIDRs: Map<string, ServiceCIDRInfo>;
  pools: Map<string, CalicoPool>;
  blocks: Map<string, CalicoBlock>;
  affinities: Map<string, BlockAffinityInfo>;
  apiservers: ApiserverFlags[];
  controllerManagers: ControllerManagerFlags[];
  /** ConfigMaps by "namespace/name", except the kubelet-config and CNI ones. */
  configMaps: Map<string, KubeObject>;
  kubeletConfigMaps: KubeObject[];
  /** The distribution configs given, then those found among the objects. */
  configs: KubeObject[];
  references: ReferenceCollector;
  /** The first kube-proxy pod that sets --cluster-cidr or --proxy-mode. */
  kubeProxyFromPod?: KubeProxyFromPod;
  /**
   * What the platforms' detection looks at (src/platform/): nodes, declared kinds, DaemonSets, namespaces, what an
   * installer may leave (kube-system workloads, control-plane flags, Calico's cluster type). `objects` holds the kinds
   * the IPAM owners read too (src/ipam/), for their facts().
   */
  platform: {
    nodes: PlatformNode[]; objects: Map<string, KubeObject[]>; daemonSets: Set<string>; namespaces: Set<string>;
    systemWorkloads: SystemWorkload[]; controlPlaneFlags: ControlPlaneWords; calicoClusterTypes: CalicoClusterType[];
  };
}

/** "group/Kind" of the kinds some platform or IPAM owner reads (src/platform/registry.ts, src/ipam/registry.ts): read when first asked, once the platforms are installed. */
let keptKinds: ReadonlySet<string> | undefined;
function isKeptKind(key: string): boolean {
  keptKinds ??= new Set([...platformResources(), ...ipamResources()].map((r) => objectKey(r.group, r.kind)));
  return keptKinds.has(key);
}

function groupOfApiVersion(apiVersion: unknown): string {
  return typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
}

/** The state one pass works on. */
interface Pass {
  b: Builder;
  cni: CniSignals;
  c: Collected;
}

/** Reads every object, in order, into a Collected; notes CNI signs and what the platforms' detection looks at. */
export function collectObjects(objects: KubeObject[], configs: KubeObject[], b: Builder, cni: CniSignals): Collected {
  const c: Collected = {
    services: [],
    pods: [],
    nodes: [],
    serviceCIDRs: new Map(),
    pools: new Map(),
    blocks: new Map(),
    affinities: new Map(),
    apiservers: [],
    controllerManagers: [],
    configMaps: new Map(),
    kubeletConfigMaps: [],
    configs: [...configs],
    references: new ReferenceCollector(),
    platform: { nodes: [], objects: new Map(), daemonSets: new Set(), namespaces: new Set(), systemWorkloads: [], controlPlaneFlags: [], calicoClusterTypes: [] },
  };
  const pass: Pass = { b, cni, c };
  for (const o of objects) {
    if (!o || typeof o !== 'object') continue;
    c.references.add(o);
    const ns = o.metadata?.namespace;
    if (typeof ns === 'string' && ns !== '') c.platform.namespaces.add(ns);
    collectObject(pass, o);
  }
  return c;
}

/**
 * The kind to read o as. Pods, Services, Nodes and ConfigMaps are the core group's (apiVersion "v1"); a
 * Knative Service or another group's kind of the same name is something else (undefined).
 */
function kindOf(o: KubeObject): string | undefined {
  const core = typeof o.apiVersion === 'string' && !o.apiVersion.includes('/');
  return core || (o.kind !== 'Pod' && o.kind !== 'Service' && o.kind !== 'Node' && o.kind !== 'ConfigMap') ? o.kind : undefined;
}

/** Reads one object according to its kind. */
function collectObject(p: Pass, o: KubeObject): void {
  const { b, c } = p;
  switch (kindOf(o)) {
    case 'Pod':
      collectPod(p, o);
      break;
    case 'Service':
      c.services.push(readService(o, b));
      break;
    case 'Node': {
      const node = readNode(o, b);
      c.nodes.push(node);
      c.platform.nodes.push(platformNode(node, o));
      noteNodeCni(p.cni, node.name, o.metadata?.annotations ?? {});
      break;
    }
    case 'ConfigMap':
      collectConfigMap(p, o);
      break;
    case 'DaemonSet':
      collectDaemonSet(p, o);
      break;
    case 'ServiceCIDR': {
      const info = readServiceCIDR(o, b);
      if (info) keepNewestServiceCIDR(c.serviceCIDRs, info);
      break;
    }
    case 'IPPool':
      collectPool(o, b, c.pools);
      break;
    case 'IPAMBlock': {
      const block = readIPAMBlock(o, b);
      if (block) c.blocks.set(block.cidr, block);
      break;
    }
    case 'BlockAffinity': {
      const a = readBlockAffinity(o, b);
      if (a) c.affinities.set(a.name, a);
      break;
    }
    case 'Installation':
      noteInstallation(p.cni, o);
      break;
    case 'ClusterInformation':
      if (typeof o.spec?.clusterType === 'string') c.platform.calicoClusterTypes.push({ object: 'ClusterInformation', where: nsName(o), value: o.spec.clusterType });
      break;
    default: {
      // Distribution configs passed among the objects are treated as configs; kinds a platform or IPAM owner reads are kept.
      if (isDistroConfig(o)) c.configs.push(o);
      const key = objectKey(groupOfApiVersion(o.apiVersion), String(o.kind ?? ''));
      if (isKeptKind(key)) {
        const list = c.platform.objects.get(key);
        if (list) list.push(o);
        else c.platform.objects.set(key, [o]);
      }
    }
  }
}

/** What a node shows the platforms: its labels, annotations, providerID and kubelet version. */
function platformNode(node: NodeInfo, o: KubeObject): PlatformNode {
  const ann = o.metadata?.annotations;
  const out: PlatformNode = { name: node.name, labels: node.labels, annotations: ann && typeof ann === 'object' ? ann : {} };
  if (typeof o.spec?.providerID === 'string') out.providerID = o.spec.providerID;
  if (node.kubeletVersion !== undefined) out.kubeletVersion = node.kubeletVersion;
  return out;
}

/** Reads a Pod; notes CNI agents and, in kube-system, the pod for the platforms and control-plane flags. */
function collectPod(p: Pass, o: KubeObject): void {
  const { b, c } = p;
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const ns = md.namespace ?? '';
  const pod = readPod(o, b);
  c.pods.push(pod);
  if (pod.owner?.kind === 'DaemonSet') c.platform.daemonSets.add(`${ns}/${pod.owner.name}`);
  const labels = md.labels ?? {};
  notePodCni(p.cni, ns, name, labels);
  if (ns !== 'kube-system') return;
  c.platform.systemWorkloads.push({ kind: 'Pod', name, app: labels['k8s-app'] });
  if (isComponentPod(o, 'kube-apiserver')) readApiserver(o, b, c.apiservers, c.platform.controlPlaneFlags);
  else if (isComponentPod(o, 'kube-controller-manager')) readControllerManager(o, b, c.controllerManagers, c.platform.controlPlaneFlags);
  else if (c.kubeProxyFromPod === undefined && isComponentPod(o, 'kube-proxy')) {
    const kp = readKubeProxyPod(o, name);
    if (kp) c.kubeProxyFromPod = kp;
  }
}

/** Sorts a ConfigMap: kubeadm's kubelet-config ones, the CNI configs (first of each), or the rest by name. */
function collectConfigMap(p: Pass, o: KubeObject): void {
  const { c, cni } = p;
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  if (md.namespace === 'kube-system' && (name === 'kubelet-config' || /^kubelet-config-1\.\d+$/.test(name))) c.kubeletConfigMaps.push(o);
  else if (name === 'calico-config') cni.calicoConfig ??= o;
  else if (name === 'cilium-config') cni.ciliumConfig ??= o;
  else if (name === 'kube-flannel-cfg') cni.flannelConfig ??= o;
  else c.configMaps.set(nsName(o), o);
}

/** Notes a DaemonSet that names a CNI plugin, or keeps one of kube-system for the platforms. */
function collectDaemonSet(p: Pass, o: KubeObject): void {
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const where = nsName(o);
  p.c.platform.daemonSets.add(where);
  if (noteDaemonSetCni(p.cni, name, where)) return;
  if (md.namespace === 'kube-system') p.c.platform.systemWorkloads.push({ kind: 'DaemonSet', name });
}
