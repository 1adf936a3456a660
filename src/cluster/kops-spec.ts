/**
 * kOps Cluster spec: the addressing fields, in both layouts.
 *
 *  - legacy (kops.k8s.io/v1alpha2): top-level spec.nonMasqueradeCIDR, spec.podCIDR (or
 *    spec.kubeControllerManager.clusterCIDR), spec.serviceClusterIPRange, spec.networkCIDR; the CNI is a
 *    key of spec.networking (spec.networking.calico: {}).
 *  - networking (kops.k8s.io/v1alpha3): the same fields under spec.networking, next to the CNI key.
 *
 * Both: spec.kubeDNS.serverIP, spec.kubelet.clusterDNS, spec.kubeControllerManager.allocateNodeCIDRs.
 * Pure; no I/O.
 */
import { splitList } from '../text.ts';
import type { KubeObject, RawRange } from '../vocabulary.ts';
import { normalizeVersion } from './kubeadm-config.ts';

export interface KopsNetworking {
  /** Which layout the spec used: 'legacy' (top-level fields) or 'networking' (spec.networking.*). */
  layout: 'legacy' | 'networking';
  kubernetesVersion?: string;
  nonMasqueradeCIDR?: string;
  podCIDR?: string;
  serviceClusterIPRange?: string;
  networkCIDR?: string;
  kubeDNSServerIP?: string;
  kubeletClusterDNS?: string;
  allocateNodeCIDRs?: boolean;
  networkingProvider?: string;
}

/** Keys of spec.networking that name a CNI provider (kOps NetworkingSpec JSON names). */
const PROVIDERS = [
  'calico', 'cilium', 'flannel', 'canal', 'weave', 'kuberouter', 'amazonvpc', 'kubenet', 'kopeio',
  'external', 'cni', 'gce', 'gcp', 'classic', 'lyftvpc', 'romana',
];

/** The default address kOps gives NodeLocal DNSCache when spec.kubeDNS.nodeLocalDNS.enabled. */
export const KOPS_NODE_LOCAL_DNS_IP = '169.254.20.10';

export function isKopsCluster(o: KubeObject): boolean {
  const av = o.apiVersion ?? '';
  return o.kind === 'Cluster' && (av.startsWith('kops.k8s.io/') || av.startsWith('kops/'));
}


export interface KopsParse {
  networking: KopsNetworking;
  ranges: RawRange[];
  /** What kubelets are configured to use as nameserver, when the spec says. */
  clusterDNS: string[];
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

export function parseKopsCluster(o: KubeObject): KopsParse {
  const spec = (o.spec ?? {}) as Record<string, any>;
  const net = (spec.networking && typeof spec.networking === 'object' ? spec.networking : {}) as Record<string, any>;
  const fields = ['nonMasqueradeCIDR', 'podCIDR', 'serviceClusterIPRange', 'networkCIDR'];
  const inNetworking = fields.some((f) => str(net[f]) !== undefined);
  const topLevel = fields.some((f) => str(spec[f]) !== undefined);
  const layout: KopsNetworking['layout'] = inNetworking || !topLevel ? 'networking' : 'legacy';
  // Prefer the layout's own place, fall back to the other (kOps accepts either during migrations).
  const pick = (f: string): string | undefined =>
    layout === 'networking' ? str(net[f]) ?? str(spec[f]) : str(spec[f]) ?? str(net[f]);

  const kn: KopsNetworking = { layout };
  if (str(spec.kubernetesVersion)) kn.kubernetesVersion = normalizeVersion(spec.kubernetesVersion);
  const nonMasq = pick('nonMasqueradeCIDR');
  const podFromField = pick('podCIDR');
  const podCIDR = podFromField ?? str(spec.kubeControllerManager?.clusterCIDR);
  const svc = pick('serviceClusterIPRange') ?? str(spec.kubeAPIServer?.serviceClusterIPRange);
  const networkCIDR = pick('networkCIDR');
  if (nonMasq) kn.nonMasqueradeCIDR = nonMasq;
  if (podCIDR) kn.podCIDR = podCIDR;
  if (svc) kn.serviceClusterIPRange = svc;
  if (networkCIDR) kn.networkCIDR = networkCIDR;
  const serverIP = str(spec.kubeDNS?.serverIP);
  if (serverIP) kn.kubeDNSServerIP = serverIP;
  const kubeletDNS = str(spec.kubelet?.clusterDNS);
  if (kubeletDNS) kn.kubeletClusterDNS = kubeletDNS;
  const alloc = spec.kubeControllerManager?.allocateNodeCIDRs;
  if (typeof alloc === 'boolean') kn.allocateNodeCIDRs = alloc;
  for (const k of Object.keys(net)) {
    if (PROVIDERS.includes(k.toLowerCase()) && net[k] !== null && net[k] !== undefined) {
      kn.networkingProvider = k;
      break;
    }
  }

  const where = layout === 'networking' ? 'spec.networking' : 'spec';
  const ranges: RawRange[] = [];
  if (nonMasq) ranges.push({ cidr: nonMasq, role: 'masquerade', source: 'kOps nonMasqueradeCIDR', label: `kOps nonMasqueradeCIDR (${where}.nonMasqueradeCIDR)` });
  if (svc) ranges.push({ cidr: svc, role: 'service', source: 'kOps serviceClusterIPRange', label: `kOps service range (${where}.serviceClusterIPRange)` });
  if (podCIDR) ranges.push({ cidr: podCIDR, role: 'pod', source: 'kOps podCIDR', label: `kOps pod range (${podFromField ? `${where}.podCIDR` : 'spec.kubeControllerManager.clusterCIDR'})` });
  if (networkCIDR) ranges.push({ cidr: networkCIDR, role: 'node', source: 'kOps networkCIDR', label: `kOps network (${where}.networkCIDR)` });
  const additional = net.additionalNetworkCIDRs ?? spec.additionalNetworkCIDRs;
  if (Array.isArray(additional)) {
    for (const c of additional) {
      if (str(c)) ranges.push({ cidr: String(c).trim(), role: 'node', source: 'kOps additionalNetworkCIDRs', label: 'kOps additional network' });
    }
  }

  // What the kubelets get: an explicit kubelet.clusterDNS wins; NodeLocal DNSCache puts its link-local
  // address there; otherwise kOps uses kubeDNS.serverIP.
  const clusterDNS: string[] = [];
  const nodeLocal = spec.kubeDNS?.nodeLocalDNS;
  if (kubeletDNS) clusterDNS.push(...splitList(kubeletDNS));
  else if (nodeLocal?.enabled === true) clusterDNS.push(str(nodeLocal.localIP) ?? KOPS_NODE_LOCAL_DNS_IP);
  else if (serverIP) clusterDNS.push(serverIP);
  return { networking: kn, ranges, clusterDNS };
}
