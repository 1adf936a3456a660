/**
 * The service range of a cluster that names it nowhere we can read (no kube-apiserver flags, no ServiceCIDR
 * objects, no distribution config: managed control planes, k3s, OpenShift dumps), inferred from the ClusterIPs
 * it hands out. Pure.
 */
import { bits, contains, familyName, formatCidr, formatIP, parseIP, supernet, type Cidr, type IP } from '../net/index.ts';
import type { Builder } from './builder.ts';
import type { Family, ServiceInfo, ServiceRangeInference, Snapshot } from './types.ts';

/** Every inferred range's source starts with this. */
export const INFERRED_SOURCE = 'inferred from ';

/** The largest range the apiserver accepts (--service-cluster-ip-range): IPv4 /12, IPv6 /108. */
const LARGEST: Record<Family, number> = { 4: 12, 6: 108 };

/**
 * For each family that has ClusterIPs but no known service range: the smallest aligned CIDR whose first address is
 * default/kubernetes's ClusterIP (the apiserver gives it the first IP of the range) and that holds every ClusterIP
 * of that family, the DNS Service's among them. Added to the builder as a 'service' range whose source states the
 * evidence; a family where that is not possible (no default/kubernetes address of the family, no other ClusterIP
 * to bound the range, ClusterIPs that fit no such CIDR, or one larger than the apiserver accepts) is returned
 * without a CIDR and with the reason.
 */
export function inferServiceRanges(
  services: readonly ServiceInfo[], dns: Snapshot['dnsService'], b: Builder,
): ServiceRangeInference[] {
  const known = new Set<Family>();
  for (const r of b.rangesOf('service')) {
    try { known.add(parseIP(r.cidr.split('/')[0]!).family); } catch { /* normalized already */ }
  }
  const byFamily = new Map<Family, Array<{ ip: IP; svc: ServiceInfo }>>();
  for (const s of services) {
    for (const a of s.clusterIPs) {
      let ip: IP;
      try { ip = parseIP(a); } catch { continue; }
      if (known.has(ip.family)) continue;
      const list = byFamily.get(ip.family) ?? [];
      list.push({ ip, svc: s });
      byFamily.set(ip.family, list);
    }
  }
  const out: ServiceRangeInference[] = [];
  for (const [family, list] of [...byFamily].sort((x, y) => x[0] - y[0])) {
    const fam = familyName(family);
    const kube = list.find((x) => x.svc.namespace === 'default' && x.svc.name === 'kubernetes');
    if (!kube) {
      out.push({ family, evidence: `no service range is configured where it can be read, and default/kubernetes has no ${fam} ClusterIP in the input to infer it from` });
      continue;
    }
    if (list.length < 2) {
      out.push({ family, evidence: `no service range is configured where it can be read, and default/kubernetes ${formatIP(kube.ip)} is the only ${fam} ClusterIP: nothing bounds the range` });
      continue;
    }
    const range = smallestFrom(kube.ip, list.map((x) => x.ip));
    const dnsIP = dns ? list.find((x) => x.svc.namespace === dns.namespace && x.svc.name === dns.name) : undefined;
    const others = list.length - 1 - (dnsIP ? 1 : 0);
    const evidence = `default/kubernetes ${formatIP(kube.ip)}${dnsIP ? ` and ${dns!.namespace}/${dns!.name} ${formatIP(dnsIP.ip)}` : ''}`
      + `${others > 0 ? ` and ${others} other ClusterIP${others === 1 ? '' : 's'}` : ''}`;
    if (!range) {
      out.push({ family, evidence: `no service range is configured where it can be read, and the ${fam} ClusterIPs (${evidence}) fit no CIDR that starts at default/kubernetes ${formatIP(kube.ip)} and that the apiserver accepts (/${LARGEST[family]} at most)` });
      continue;
    }
    const cidr = formatCidr(range);
    const source = `${INFERRED_SOURCE}${evidence}; not read from the apiserver`;
    b.addNormalizedRange(cidr, 'service', source, 'Service CIDR (inferred)');
    out.push({ family, cidr, evidence: source });
  }
  return out;
}

/** The smallest CIDR with network `kube` − 1 holding every address, at most LARGEST; undefined when none. */
function smallestFrom(kube: IP, ips: readonly IP[]): Cidr | undefined {
  if (kube.value === 0n) return undefined;
  const width = bits(kube.family);
  const host: Cidr = { family: kube.family, network: kube.value - 1n, prefix: width };
  let lo = ips[0]!;
  let hi = ips[0]!;
  for (const ip of ips) {
    if (ip.value < lo.value) lo = ip;
    if (ip.value > hi.value) hi = ip;
  }
  for (let p = width - 1; p >= LARGEST[kube.family]; p--) {
    const c = supernet(host, p);
    if (c.network !== host.network) return undefined;
    if (contains(c, lo) && contains(c, hi)) return c;
  }
  return undefined;
}
