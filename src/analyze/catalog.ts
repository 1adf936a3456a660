/**
 * Well-known address ranges, each with the reason it matters for a cluster's ranges.
 *
 * severity says how an overlap with a cluster range is reported by `inspect`:
 *  - error:   the range cannot work for pods or Services at all (loopback, link-local, multicast, reserved);
 *  - warning: a network that is commonly present beside clusters (CGNAT/Tailscale, Docker, default VPCs);
 *  - info:    a tool's default range: harmless alone, but every other cluster built with the same defaults
 *             collides with this one as soon as they are peered or joined by a VPN.
 * `suggest` avoids every entry.
 */
export type Severity = 'error' | 'warning' | 'info';
/** The severities, the gravest first. */
export const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];

export interface KnownRange {
  cidr: string;
  name: string;
  reason: string;
  severity: Severity;
}

export const CATALOG: readonly KnownRange[] = [
  // Networks that live beside clusters.
  { cidr: '100.64.0.0/10', name: 'CGNAT / Tailscale', severity: 'warning',
    reason: 'RFC 6598 shared address space; Tailscale gives every device an address here, so cluster IPs in it are unreachable or hijacked on tailnet hosts' },
  { cidr: 'fd7a:115c:a1e0::/48', name: 'Tailscale IPv6', severity: 'warning',
    reason: 'Tailscale assigns IPv6 device addresses from this ULA prefix' },
  { cidr: '172.17.0.0/16', name: 'Docker default bridge', severity: 'warning',
    reason: 'docker0 takes this range on any host running Docker; routes to it stay on the host' },
  { cidr: '172.31.0.0/16', name: 'AWS default VPC', severity: 'warning',
    reason: 'every AWS region\'s default VPC uses this range, so peering or VPN to it collides' },
  { cidr: '10.0.0.0/16', name: 'common first VPC range', severity: 'info',
    reason: 'the range cloud VPC wizards and most tutorials propose first; often already routed in peered networks' },
  // Ranges that can never be used.
  { cidr: '0.0.0.0/8', name: '"this network"', severity: 'error', reason: 'RFC 791/1122: not routable as a destination' },
  { cidr: '127.0.0.0/8', name: 'IPv4 loopback', severity: 'error', reason: 'RFC 1122: traffic never leaves the host' },
  { cidr: '169.254.0.0/16', name: 'IPv4 link-local', severity: 'error',
    reason: 'RFC 3927: not routed; cloud metadata (169.254.169.254) and NodeLocal DNSCache live here' },
  { cidr: '224.0.0.0/4', name: 'IPv4 multicast', severity: 'error', reason: 'RFC 5771: multicast, not unicast' },
  { cidr: '240.0.0.0/4', name: 'IPv4 reserved', severity: 'error', reason: 'RFC 1112: reserved for future use, dropped by most stacks' },
  { cidr: '::1/128', name: 'IPv6 loopback', severity: 'error', reason: 'RFC 4291: traffic never leaves the host' },
  { cidr: '::ffff:0:0/96', name: 'IPv4-mapped IPv6', severity: 'error', reason: 'RFC 4291: stands for IPv4 addresses, not routable' },
  { cidr: 'fe80::/10', name: 'IPv6 link-local', severity: 'error', reason: 'RFC 4291: not routed' },
  { cidr: 'ff00::/8', name: 'IPv6 multicast', severity: 'error', reason: 'RFC 4291: multicast, not unicast' },
  // Defaults of Kubernetes tools.
  { cidr: '100.64.0.0/13', name: 'kOps default service range', severity: 'info',
    reason: 'kOps serviceClusterIPRange default; inside CGNAT' },
  { cidr: '100.96.0.0/11', name: 'kOps default pod range', severity: 'info',
    reason: 'kOps podCIDR default; inside CGNAT' },
  { cidr: '172.20.0.0/16', name: 'kOps default VPC (networkCIDR)', severity: 'info',
    reason: 'kOps networkCIDR default: the node network of every kOps cluster built on defaults' },
  { cidr: '10.96.0.0/12', name: 'kubeadm default service range', severity: 'info',
    reason: 'kubeadm serviceSubnet default' },
  { cidr: '10.42.0.0/16', name: 'k3s default pod range', severity: 'info', reason: 'k3s --cluster-cidr default' },
  { cidr: '10.43.0.0/16', name: 'k3s default service range', severity: 'info', reason: 'k3s --service-cidr default' },
  { cidr: '192.168.0.0/16', name: 'Calico default pool', severity: 'info',
    reason: 'Calico CALICO_IPV4POOL_CIDR default; also the most common home and office LAN range' },
  { cidr: '10.244.0.0/16', name: 'flannel default network', severity: 'info', reason: 'flannel Network default (kube-flannel.yml)' },
];

/** A range the user asked to avoid (`--avoid CIDR[=reason]` or the config file). */
export interface AvoidRange {
  cidr: string;
  reason: string;
  from: string;
}
