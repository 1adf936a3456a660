/**
 * Which Service is the cluster DNS: the one the kubelets hand to pods as nameserver. Pure.
 */
import type { Builder } from './builder.ts';
import type { KopsNetworking, ServiceInfo, Snapshot } from './types.ts';
import type { DnsServiceCandidate } from '../platform/types.ts';

export type { DnsServiceCandidate };

/**
 * The well-known DNS Services, in the order they are tried when the kubelets' clusterDNS is not known: kube-dns
 * and CoreDNS as kubeadm, kOps, kubespray, k3s, RKE2, EKS, GKE and AKS deploy them (kube-system, selecting
 * k8s-app=kube-dns), by name first, then any name. A platform with its own DNS Service lists it (src/platform/,
 * `dnsServices`, e.g. OpenShift's openshift-dns/dns-default); buildSnapshot tries those first.
 */
export const DNS_SERVICE_CANDIDATES: readonly DnsServiceCandidate[] = [
  { namespace: 'kube-system', name: 'kube-dns', selector: { 'k8s-app': 'kube-dns' } },
  { namespace: 'kube-system', name: 'coredns', selector: { 'k8s-app': 'kube-dns' } },
  { namespace: 'kube-system', selector: { 'k8s-app': 'kube-dns' } },
];

function matches(s: ServiceInfo, c: DnsServiceCandidate): boolean {
  if (s.namespace !== c.namespace || (c.name !== undefined && s.name !== c.name)) return false;
  return Object.entries(c.selector).every(([k, v]) => s.selector?.[k] === v);
}

/**
 * The cluster DNS Service: the one whose ClusterIP the kubelets (or kOps kubeDNS.serverIP) use as nameserver,
 * else the first Service matching a candidate (in candidate order) that has a ClusterIP and is not headless.
 */
export function findDnsService(
  services: readonly ServiceInfo[], clusterDNS: readonly string[], kops: KopsNetworking | undefined, b: Builder,
  candidates: readonly DnsServiceCandidate[] = DNS_SERVICE_CANDIDATES,
): Snapshot['dnsService'] {
  const byClusterIP = new Map<string, ServiceInfo>();
  for (const s of services) for (const ip of s.clusterIPs) if (!byClusterIP.has(ip)) byClusterIP.set(ip, s);
  const dnsCandidates: Array<{ ip: string; foundBy: string }> = clusterDNS.map((ip) => ({ ip, foundBy: 'kubelet clusterDNS' }));
  if (kops?.kubeDNSServerIP) {
    const ip = b.ip(kops.kubeDNSServerIP, 'kOps spec.kubeDNS.serverIP');
    if (ip) dnsCandidates.push({ ip, foundBy: 'kOps kubeDNS.serverIP' });
  }
  for (const c of dnsCandidates) {
    const s = byClusterIP.get(c.ip);
    if (s) return { namespace: s.namespace, name: s.name, clusterIPs: [...s.clusterIPs], foundBy: c.foundBy };
  }
  const usable = services.filter((s) => !s.headless && s.clusterIPs.length > 0);
  for (const c of candidates) {
    const s = usable.find((x) => matches(x, c));
    if (s) {
      const selector = Object.entries(c.selector).map(([k, v]) => `${k}=${v}`).join(',');
      return { namespace: s.namespace, name: s.name, clusterIPs: [...s.clusterIPs], foundBy: c.origin ? `${c.origin} (selector ${selector})` : `selector ${selector}` };
    }
  }
  return undefined;
}
