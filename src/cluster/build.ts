/**
 * buildSnapshot: RawInventory → Snapshot. Pure and deterministic (same input, same output), one pass over
 * the objects plus per-kind work that is linear in the input, so 5,000 nodes and 150,000 pods are cheap.
 *
 * The objects are checked first (validate.ts): an object that cannot be a real Kubernetes object, or two
 * different copies of one object, is an InputError; exact copies are kept once. Past that gate nothing here
 * throws on bad data: a value a real cluster can hold but that cannot be understood (free text in a ConfigMap,
 * a node address, an annotation) becomes a warning and is left out.
 */
import { type Cidr, contains, formatCidr, formatIP, parseCidr, parseIP } from '../net/index.ts';
import type { KopsNetworking, KubeadmNetworking, KubeObject, NodeInfo, RawInventory, Snapshot } from './types.ts';
import { Builder } from './builder.ts';
import { inferServerVersion } from './version.ts';
import { validateInventory } from './validate.ts';
import { collectObjects, type Collected } from './collect.ts';
import { addServiceCIDRRanges, newestServiceCIDRApi } from './readers.ts';
import { addPoolRanges } from './calico.ts';
import { detectCniWithRanges, newCniSignals } from './cni-signals.ts';
import { applyKops, readClusterDNS, readDistroConfigs, resolveKubeadm } from './distro-configs.ts';
import { readKubeProxy } from './kube-proxy.ts';
import { addPassDistroSigns, noteCalicoConfigClusterType } from './distro-signals.ts';
import { detectDistribution, newDistroSignals } from '../distro/detect.ts';
import type { CniResult, CniSignals } from '../cni/detect.ts';
import { detectPlatform, platformDnsServices } from '../platform/registry.ts';
import type { PlatformFacts } from '../platform/types.ts';
import { detectIpamOwner, ipamObjectFacts } from '../ipam/registry.ts';
import type { IpamSnapshotFacts } from '../ipam/types.ts';
import { DNS_SERVICE_CANDIDATES, findDnsService, type DnsServiceCandidate } from './dns-service.ts';
import { inferServiceRanges } from './service-range.ts';
import { AUTOSCALER_STATUS_CONFIGMAP, readNodeLimits } from './node-limits.ts';

export { DNS_SERVICE_CANDIDATES, type DnsServiceCandidate } from './dns-service.ts';

export { MAX_WARNINGS } from './builder.ts';

export interface BuildOptions {
  /** The well-known DNS Services to look for when the kubelets' clusterDNS is not known (default DNS_SERVICE_CANDIDATES). */
  dnsServiceCandidates?: readonly DnsServiceCandidate[];
}

/** What the phases after the pass over the objects found, to go into the snapshot. */
interface Findings {
  cni: CniResult;
  clusterDNS: string[];
  dnsService: Snapshot['dnsService'];
  serviceRangeInference: NonNullable<Snapshot['serviceRangeInference']>;
  kubeProxy: Snapshot['kubeProxy'];
  kops: KopsNetworking | undefined;
  kubeadm: KubeadmNetworking | undefined;
  platform: PlatformFacts;
  /** The IPAM owners' snapshot fields (src/ipam/, IpamOwner.facts). */
  ipam: IpamSnapshotFacts;
  nodeLimits: Snapshot['nodeLimits'];
}

/** The CNI's own ConfigMaps the CNI detection read, by name, for the IPAM owners' facts(). */
function cniConfigMaps(s: CniSignals): Map<string, KubeObject> {
  const out = new Map<string, KubeObject>();
  for (const o of [s.calicoConfig, s.ciliumConfig, s.flannelConfig]) if (o?.metadata?.name) out.set(o.metadata.name, o);
  return out;
}

/**
 * The snapshot of an inventory: validate it, read every object in one pass, then the phases that need all of
 * them (distribution configs, kube-proxy, Service/pool/CNI ranges, node ranges, distribution, DNS Service).
 */
export function buildSnapshot(raw: RawInventory, opts: BuildOptions = {}): Snapshot {
  const inv = validateInventory(raw);
  const b = new Builder();
  const distro = newDistroSignals();
  const cniSignals = newCniSignals();
  const c = collectObjects(inv.objects, inv.configs, b, distro, cniSignals);
  // the IPAM owners' facts from the objects they read; their pool ranges before Calico's, as read in the pass before
  const ipam = ipamObjectFacts({ objects: c.platform.objects, cniConfigMaps: cniConfigMaps(cniSignals), cidr: (raw, what) => b.cidr(raw, what) });
  for (const r of ipam.ranges) b.addNormalizedRange(r.cidr, 'pool', r.source, r.label);

  const files = readDistroConfigs(c.configs, b, distro);
  const kubeadm = resolveKubeadm(c.configMaps.get('kube-system/kubeadm-config'), files.kubeadm, b, distro);
  const clusterDNS = readClusterDNS(c.kubeletConfigMaps, files.kubeletDNS, kubeadm, b);
  const kops = applyKops(files.kops, clusterDNS, b);
  const kubeProxy = readKubeProxy(c.configMaps.get('kube-system/kube-proxy'), c.kubeProxyFromPod, files.kubeProxy, b);

  addServiceCIDRRanges(b, c.serviceCIDRs.values());
  addPoolRanges(b, c.pools.values());
  noteCalicoConfigClusterType(distro, cniSignals.calicoConfig);
  const cni = detectCniWithRanges(b, cniSignals, c.pools.size, c.blocks.size);

  addNodeRanges(b, c.nodes);
  addPassDistroSigns(distro, c.signs);
  const installer = detectDistribution(distro);
  const platform = detectPlatform({
    nodes: c.platform.nodes, objects: c.platform.objects, daemonSets: c.platform.daemonSets, namespaces: c.platform.namespaces,
    configMaps: c.configMaps, installer, ...(inv.source.kind === 'live' && inv.source.server ? { server: inv.source.server } : {}),
  });
  for (const r of platform.ranges) b.addRange(r.cidr, r.role, r.source, r.label);
  const dnsCandidates = opts.dnsServiceCandidates
    ?? [...platformDnsServices(platform.facts.kind).map((c) => ({ ...c, origin: "the platform's DNS Service" })), ...DNS_SERVICE_CANDIDATES];
  const dnsService = findDnsService(c.services, clusterDNS, kops, b, dnsCandidates);
  const serviceRangeInference = inferServiceRanges(c.services, dnsService, b);
  const owner = detectIpamOwner({
    plugin: cni.plugin, ipam: cni.ipam, operatorManaged: cni.operatorManaged, evidence: cni.evidence, daemonSets: c.platform.daemonSets,
    pools: c.pools.size, nodesWithPodCIDR: c.nodes.filter((n) => n.podCIDRs.length > 0).length, ...(cni.ipamMode !== undefined ? { ipamMode: cni.ipamMode } : {}),
  });
  if (owner) cni.owner = owner;
  const nodeLimits = readNodeLimits(inv.objects, c.configs, c.configMaps.get(`kube-system/${AUTOSCALER_STATUS_CONFIGMAP}`), b);
  return assembleSnapshot(inv, b, c, { cni, clusterDNS, dnsService, serviceRangeInference, kubeProxy, kops, kubeadm, platform: platform.facts, ipam: ipam.snapshot, nodeLimits });
}

// ---------------------------------------------------------------------------------------------------

/** The snapshot from the collected objects and the findings; the builder's ranges and warnings go in last. */
function assembleSnapshot(inv: RawInventory, b: Builder, c: Collected, f: Findings): Snapshot {
  const kubernetesSvc = c.services.find((s) => s.namespace === 'default' && s.name === 'kubernetes');
  const snapshot: Snapshot = {
    source: inv.source,
    platform: f.platform,
    cni: {
      plugin: f.cni.plugin,
      ipam: f.cni.ipam,
      operatorManaged: f.cni.operatorManaged,
      evidence: f.cni.evidence,
      ...(f.cni.ipamMode !== undefined ? { ipamMode: f.cni.ipamMode } : {}),
      ...(f.cni.owner ? { owner: f.cni.owner } : {}),
    },
    ranges: b.ranges(),
    serviceCIDRs: [...c.serviceCIDRs.values()],
    kubernetesServiceIPs: kubernetesSvc ? [...kubernetesSvc.clusterIPs] : [],
    clusterDNS: f.clusterDNS,
    apiservers: c.apiservers,
    controllerManagers: c.controllerManagers,
    nodes: c.nodes,
    services: c.services,
    pods: c.pods,
    pools: [...c.pools.values()],
    blocks: [...c.blocks.values()],
    blockAffinities: [...c.affinities.values()],
    ...f.ipam,
    referenceSources: c.references.sources(),
    warnings: [],
  };
  const version = inv.serverVersion ?? inferServerVersion(inv.objects, inv.configs);
  if (version !== undefined) snapshot.kubernetesVersion = version;
  const api = newestServiceCIDRApi(inv.serviceCIDRApiVersions);
  if (api !== undefined) snapshot.serviceCIDRApi = api;
  if (f.dnsService) snapshot.dnsService = f.dnsService;
  if (f.serviceRangeInference.length > 0) snapshot.serviceRangeInference = f.serviceRangeInference;
  if (f.kubeProxy) snapshot.kubeProxy = f.kubeProxy;
  if (f.kops) snapshot.kops = f.kops;
  if (f.kubeadm) snapshot.kubeadm = f.kubeadm;
  if (f.nodeLimits) snapshot.nodeLimits = f.nodeLimits;
  snapshot.warnings = b.finishWarnings(inv.gaps);
  return snapshot;
}

/** Adds each node's pod CIDRs as 'node-pod' ranges, then the node network (addNodeNetworkRanges). */
function addNodeRanges(b: Builder, nodes: NodeInfo[]): void {
  for (const n of nodes) {
    for (const c of n.podCIDRs) b.addNormalizedRange(c, 'node-pod', `Node/${n.name} spec.podCIDR`, `node ${n.name} podCIDR`);
  }
  addNodeNetworkRanges(b, nodes);
}

/**
 * The node network. A configured one (kOps networkCIDR / additionalNetworkCIDRs, already added) is
 * authoritative. Nodes whose InternalIP lies outside every configured node range contribute a heuristic
 * range: the /24 (IPv4) or /64 (IPv6) around the address, de-duplicated, source "node InternalIPs".
 * The real subnet may be larger or smaller; /24 and /64 are the common LAN/VPC subnet sizes and keep the
 * estimate tight enough not to flag unrelated ranges as overlapping.
 */
function addNodeNetworkRanges(b: Builder, nodes: NodeInfo[]): void {
  const configured: Cidr[] = [];
  for (const r of b.rangesOf('node')) {
    try {
      configured.push(parseCidr(r.cidr));
    } catch {
      // normalized already; cannot happen
    }
  }
  const seen = new Set<string>();
  for (const n of nodes) {
    for (const raw of n.internalIPs) {
      let ip;
      try {
        ip = parseIP(raw);
      } catch {
        continue;
      }
      if (configured.some((c) => contains(c, ip))) continue;
      const prefix = ip.family === 4 ? 24 : 64;
      const cidr = formatCidr(parseCidr(`${formatIP(ip)}/${prefix}`, { normalize: true }));
      if (seen.has(cidr)) continue;
      seen.add(cidr);
      b.addNormalizedRange(cidr, 'node', 'node InternalIPs', `node network around the nodes' InternalIPs (/${prefix} guess)`);
    }
  }
}
