/**
 * Readers that turn one core Kubernetes object (Service, Node, Pod, ServiceCIDR) into its snapshot record.
 * Values that cannot be understood become warnings on the Builder and are left out.
 */
import type { KubeObject, NodeInfo, PodInfo, ServiceCIDRInfo, ServiceInfo } from './types.ts';
import type { Builder } from './builder.ts';

const SERVICE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);

const SERVICE_CIDR_VERSION_RANK: Record<string, number> = { v1: 3, v1beta1: 2, v1alpha1: 1 };

/** "namespace/name" of an object (empty parts when missing). */
export function nsName(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** A string map field, or {} when the value is not a plain object. */
function strMap(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return v as Record<string, string>;
}

/** Whether the status condition of this type is "True"; undefined when the object has no such condition. */
function condition(o: KubeObject, type: string): boolean | undefined {
  const conds = o.status?.conditions;
  if (!Array.isArray(conds)) return undefined;
  const c = conds.find((x: any) => x && x.type === type);
  if (!c) return undefined;
  return c.status === 'True';
}

/** Whether an object's (a pod's, a node's) Ready condition is True. */
export function isReady(o: KubeObject | undefined): boolean {
  return (o?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

/** The version part of an apiVersion ("networking.k8s.io/v1" → "v1"). */
function apiVersionOnly(av: string): string {
  return av.slice(av.lastIndexOf('/') + 1);
}

/** The newest ServiceCIDR API version served: 'v1' | 'v1beta1' | 'v1alpha1'; null if none; undefined if unknown. */
export function newestServiceCIDRApi(versions: string[] | undefined): string | null | undefined {
  if (versions === undefined) return undefined;
  let best: string | null = null;
  for (const v of versions) {
    const short = apiVersionOnly(v);
    if (SERVICE_CIDR_VERSION_RANK[short] !== undefined && (best === null || SERVICE_CIDR_VERSION_RANK[short] > SERVICE_CIDR_VERSION_RANK[best])) best = short;
  }
  return best;
}

/** A Pod's record: its pod IPs (status.podIPs, else status.podIP), node, phase, labels and controller. */
export function readPod(o: KubeObject, b: Builder): PodInfo {
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const ns = md.namespace ?? '';
  const spec = o.spec ?? {};
  const status = o.status ?? {};
  const what = `Pod ${ns}/${name}: podIP`;
  const podIPs: string[] = [];
  if (Array.isArray(status.podIPs) && status.podIPs.length > 0) {
    for (const p of status.podIPs) {
      const ip = b.ip(p?.ip, what);
      if (ip !== undefined) podIPs.push(ip);
    }
  } else if (status.podIP !== undefined && status.podIP !== null && status.podIP !== '') {
    const ip = b.ip(status.podIP, what);
    if (ip !== undefined) podIPs.push(ip);
  }
  const info: PodInfo = { namespace: ns, name, podIPs, hostNetwork: spec.hostNetwork === true, labels: md.labels ?? {} };
  if (typeof spec.nodeName === 'string') info.nodeName = spec.nodeName;
  if (typeof status.phase === 'string') info.phase = status.phase;
  const ref = md.ownerReferences?.find((r) => r && r.controller === true);
  if (ref && ref.kind && ref.name) info.owner = { kind: ref.kind, name: ref.name };
  return info;
}

/** A Service's record: type, cluster IPs, ports, load balancer and external IPs, labels, selector. */
export function readService(o: KubeObject, b: Builder): ServiceInfo {
  const md = o.metadata ?? {};
  const ns = md.namespace ?? '';
  const name = md.name ?? '';
  const spec = o.spec ?? {};
  const what = `Service ${ns}/${name}:`;
  let type: ServiceInfo['type'] = 'ClusterIP';
  if (typeof spec.type === 'string') {
    if (SERVICE_TYPES.has(spec.type)) type = spec.type as ServiceInfo['type'];
    else b.warn(`${what} unknown type "${spec.type}", read as ClusterIP`);
  }
  const raw: unknown[] = Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0 ? spec.clusterIPs : spec.clusterIP !== undefined && spec.clusterIP !== null ? [spec.clusterIP] : [];
  const headless = raw[0] === 'None' || spec.clusterIP === 'None';
  const clusterIPs: string[] = [];
  for (const r of raw) {
    if (r === 'None' || r === '') continue;
    const ip = b.ip(r, `${what} clusterIP`);
    if (ip !== undefined) clusterIPs.push(ip);
  }
  const ports = readServicePorts(spec.ports);
  const lb: string[] = [];
  const addLB = (v: unknown): void => {
    if (v === undefined || v === null || v === '') return;
    const ip = b.ip(v, `${what} load balancer IP`);
    if (ip !== undefined && !lb.includes(ip)) lb.push(ip);
  };
  const ingress = o.status?.loadBalancer?.ingress;
  if (Array.isArray(ingress)) for (const i of ingress) addLB(i?.ip);
  addLB(spec.loadBalancerIP);
  const externalIPs: string[] = [];
  if (Array.isArray(spec.externalIPs)) {
    for (const e of spec.externalIPs) {
      const ip = b.ip(e, `${what} externalIP`);
      if (ip !== undefined) externalIPs.push(ip);
    }
  }
  const info: ServiceInfo = {
    namespace: ns,
    name,
    type,
    clusterIPs,
    headless,
    ports,
    loadBalancerIPs: lb,
    loadBalancerSourceRanges: Array.isArray(spec.loadBalancerSourceRanges) ? spec.loadBalancerSourceRanges.filter((x: unknown) => typeof x === 'string') : [],
    externalIPs,
    labels: strMap(md.labels),
    annotations: strMap(md.annotations),
  };
  if (typeof spec.externalName === 'string') info.externalName = spec.externalName;
  if (typeof spec.loadBalancerClass === 'string' && spec.loadBalancerClass !== '') info.loadBalancerClass = spec.loadBalancerClass;
  if (typeof spec.loadBalancerIP === 'string' && spec.loadBalancerIP !== '') info.loadBalancerIP = spec.loadBalancerIP;
  const hostnames = Array.isArray(ingress) ? ingress.map((i: { hostname?: unknown }) => i?.hostname).filter((h: unknown): h is string => typeof h === 'string' && h !== '') : [];
  if (hostnames.length > 0) info.loadBalancerHostnames = [...new Set(hostnames)];
  if (spec.selector && typeof spec.selector === 'object' && !Array.isArray(spec.selector)) info.selector = spec.selector;
  return info;
}

/** A Service's spec.ports, entries that are not objects skipped. */
function readServicePorts(specPorts: unknown): ServiceInfo['ports'] {
  const ports: ServiceInfo['ports'] = [];
  if (Array.isArray(specPorts)) {
    for (const p of specPorts) {
      if (!p || typeof p !== 'object') continue;
      const port: ServiceInfo['ports'][number] = { port: Number(p.port) };
      if (typeof p.name === 'string' && p.name !== '') port.name = p.name;
      if (typeof p.protocol === 'string') port.protocol = p.protocol;
      if (typeof p.targetPort === 'number' || typeof p.targetPort === 'string') port.targetPort = p.targetPort;
      if (typeof p.nodePort === 'number') port.nodePort = p.nodePort;
      ports.push(port);
    }
  }
  return ports;
}

/** A Node's record: pod CIDRs, internal and external IPs, labels, readiness and kubelet version. */
export function readNode(o: KubeObject, b: Builder): NodeInfo {
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const spec = o.spec ?? {};
  const rawCidrs: unknown[] = Array.isArray(spec.podCIDRs) && spec.podCIDRs.length > 0 ? spec.podCIDRs : spec.podCIDR ? [spec.podCIDR] : [];
  const podCIDRs: string[] = [];
  for (const r of rawCidrs) {
    const c = b.cidr(r, `Node/${name} spec.podCIDR`);
    if (c) podCIDRs.push(c);
  }
  const internalIPs: string[] = [];
  const externalIPs: string[] = [];
  const addrs = o.status?.addresses;
  if (Array.isArray(addrs)) {
    for (const a of addrs) {
      if (!a || (a.type !== 'InternalIP' && a.type !== 'ExternalIP')) continue;
      const ip = b.ip(a.address, `Node/${name}: ${a.type}`);
      if (ip === undefined) continue;
      (a.type === 'InternalIP' ? internalIPs : externalIPs).push(ip);
    }
  }
  const node: NodeInfo = { name, podCIDRs, internalIPs, externalIPs, labels: strMap(md.labels), unschedulable: spec.unschedulable === true };
  const ready = condition(o, 'Ready');
  if (ready !== undefined) node.ready = ready;
  const kubelet = o.status?.nodeInfo?.kubeletVersion;
  if (typeof kubelet === 'string' && kubelet !== '') node.kubeletVersion = kubelet;
  return node;
}

/** A networking.k8s.io ServiceCIDR's record; undefined for another group's kind of that name. */
export function readServiceCIDR(o: KubeObject, b: Builder): ServiceCIDRInfo | undefined {
  if (!String(o.apiVersion ?? '').startsWith('networking.k8s.io/')) return undefined;
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const info: ServiceCIDRInfo = {
    name,
    cidrs: [],
    apiVersion: o.apiVersion ?? '',
    deleting: md.deletionTimestamp !== undefined && md.deletionTimestamp !== null,
  };
  const cidrs = o.spec?.cidrs;
  if (Array.isArray(cidrs)) {
    for (const c of cidrs) {
      const n = b.cidr(c, `ServiceCIDR/${name}`);
      if (n) info.cidrs.push(n);
    }
  }
  const ready = condition(o, 'Ready');
  if (ready !== undefined) info.ready = ready;
  return info;
}

/** Keeps one ServiceCIDR per name: the one read through the newest API version (the first among equals). */
export function keepNewestServiceCIDR(serviceCIDRs: Map<string, ServiceCIDRInfo>, info: ServiceCIDRInfo): void {
  const prev = serviceCIDRs.get(info.name);
  const rank = (x: ServiceCIDRInfo): number => SERVICE_CIDR_VERSION_RANK[apiVersionOnly(x.apiVersion)] ?? 0;
  if (!prev || rank(info) > rank(prev)) serviceCIDRs.set(info.name, info);
}

/** Adds each ServiceCIDR's CIDRs as Service ranges. */
export function addServiceCIDRRanges(b: Builder, serviceCIDRs: Iterable<ServiceCIDRInfo>): void {
  for (const sc of serviceCIDRs) {
    for (const c of sc.cidrs) b.addNormalizedRange(c, 'service', `ServiceCIDR/${sc.name}`, `ServiceCIDR ${sc.name}${sc.deleting ? ' (being deleted)' : ''}`);
  }
}
