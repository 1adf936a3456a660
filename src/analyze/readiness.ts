import { ipamOwnerFacts } from './ipam-owner.ts';
import { ownerCapabilityOf } from '../ipam/registry.ts';
import type { Snapshot } from '../cluster/types.ts';
import { contains, formatIP, nthAddress, parseIP } from '../net/index.ts';
import { cidrsOf } from './addressing.ts';
import { computeCapacity } from './capacity.ts';
import { nodeReach } from './sizing.ts';

/**
 * Readiness facts for a migration: each a yes/no/unknown with a one-line explanation. `ok: false` is not an
 * error by itself; it tells which path a migration takes or what must be fixed first.
 */
export interface ReadinessFact {
  id: string;
  ok: boolean | null;
  summary: string;
}

/**
 * A platform's own readiness fact (e.g. its configuration not in the input), by platform kind: installed by
 * src/platforms/registry.ts from each platform's module.
 */
export type PlatformReadinessFact = (snap: Snapshot) => ReadinessFact | undefined;

const PLATFORM_FACTS = new Map<string, PlatformReadinessFact>();

/** Installs the readiness fact of the platform of this kind; once per kind. */
export function installPlatformReadinessFact(kind: string, fact: PlatformReadinessFact): void {
  if (PLATFORM_FACTS.has(kind)) throw new Error(`the readiness fact of platform ${kind} is installed already`);
  PLATFORM_FACTS.set(kind, fact);
}

function minor(version: string | undefined): number | undefined {
  const m = version?.match(/^v?1\.(\d+)/);
  return m ? Number(m[1]) : undefined;
}

/**
 * The kube-proxy version a snapshot points at: the oldest kubelet (kube-proxy normally runs the kubelet's
 * version), else the apiserver's; undefined when neither is known or when Cilium runs without kube-proxy.
 */
export function kubeProxyVersion(snap: Snapshot): { version: string; minor: number } | undefined {
  if (snap.cni.ipam === 'cilium' && !snap.kubeProxy) return undefined;
  const kubelets = snap.nodes.map((n) => n.kubeletVersion).filter((x): x is string => minor(x) !== undefined);
  kubelets.sort((a, b) => minor(a)! - minor(b)!);
  const version = kubelets[0] ?? snap.kubernetesVersion;
  const m = minor(version);
  return version !== undefined && m !== undefined ? { version, minor: m } : undefined;
}

/**
 * kube-proxy 1.32 to 1.35 deletes stale UDP conntrack entries with one netlink filter per entry, matched against
 * every entry (kubernetes/kubernetes#135323; linear from 1.36, #135511). Replacing CoreDNS pods while a node
 * sends many lookups then leaves part of its lookups going to the gone pods until that clean-up ends.
 */
export function slowUdpConntrackCleanup(snap: Snapshot): string | undefined {
  const kp = kubeProxyVersion(snap);
  return kp && kp.minor >= 32 && kp.minor <= 35 ? kp.version : undefined;
}

export function readiness(snap: Snapshot): ReadinessFact[] {
  const facts: ReadinessFact[] = [];
  const v = minor(snap.kubernetesVersion);

  // ServiceCIDR API.
  if (snap.serviceCIDRApi) {
    facts.push({ id: 'service-cidr-api', ok: true,
      summary: `ServiceCIDR API served (networking.k8s.io/${snap.serviceCIDRApi}): the Service CIDR can move without an outage` });
  } else if (snap.serviceCIDRApi === null) {
    const how = v === undefined ? 'upgrade to 1.33+ or enable it'
      : v >= 33 ? 'it should be on by default: check --runtime-config'
        : v >= 31 ? 'enable feature gate MultiCIDRServiceAllocator and --runtime-config=networking.k8s.io/v1beta1=true'
          : v >= 29 ? 'enable feature gate MultiCIDRServiceAllocator and --runtime-config=networking.k8s.io/v1alpha1=true'
            : 'upgrade to 1.29+ (1.33+ has it on by default); older clusters keep a RangeAllocation bitmap that goes stale when the range changes';
    facts.push({ id: 'service-cidr-api', ok: false, summary: `ServiceCIDR API not served: ${how}` });
  } else {
    facts.push({ id: 'service-cidr-api', ok: null,
      summary: v === undefined ? 'ServiceCIDR API: unknown (offline input without ServiceCIDR objects or version)'
        : v >= 33 ? `ServiceCIDR API: expected (v1 is on by default from 1.33; cluster is ${snap.kubernetesVersion})`
          : v >= 29 ? `ServiceCIDR API: unknown; on ${snap.kubernetesVersion} it needs the MultiCIDRServiceAllocator gate and runtime-config`
            : `ServiceCIDR API: not available on ${snap.kubernetesVersion} (needs 1.29+; on by default from 1.33): the service range `
              + 'sits in a RangeAllocation bitmap that goes stale when the range changes' });
  }

  // kubernetes Service at the first IP of the service range.
  const svc = cidrsOf(snap, 'service');
  const kip = snap.kubernetesServiceIPs[0];
  if (kip && svc.length > 0) {
    const ip = parseIP(kip);
    const range = svc.find((c) => contains(c, ip));
    const first = range ? formatIP(nthAddress(range, 1n)) : undefined;
    facts.push({ id: 'kubernetes-service', ok: first === formatIP(ip),
      summary: first === formatIP(ip)
        ? `default/kubernetes is ${kip}, the first IP of ${range ? formatCidrish(range) : '?'}`
        : `default/kubernetes is ${kip}, not the first IP of a known service range` });
  }

  // DNS.
  if (snap.dnsService) {
    facts.push({ id: 'cluster-dns', ok: true,
      summary: `cluster DNS is ${snap.dnsService.namespace}/${snap.dnsService.name} at ${snap.dnsService.clusterIPs.join(',')} (found by ${snap.dnsService.foundBy})` });
  } else {
    facts.push({ id: 'cluster-dns', ok: false, summary: 'cluster DNS Service not found (no kubelet clusterDNS match, no k8s-app=kube-dns selector)' });
  }

  // HA apiservers must agree.
  const ranges = new Set(snap.apiservers.map((a) => (a.serviceClusterIPRange ?? []).join(',')));
  if (snap.apiservers.length > 1) {
    facts.push({ id: 'apiservers-agree', ok: ranges.size === 1,
      summary: ranges.size === 1
        ? `${snap.apiservers.length} kube-apiservers, all with --service-cluster-ip-range=${[...ranges][0]}`
        : `kube-apiservers disagree on --service-cluster-ip-range: ${[...ranges].join(' vs ')}` });
  }

  // Who owns the pod addresses (src/ipam/), and so which path moves them, if any.
  const owner = ipamOwnerFacts(snap);
  const cap = owner ? ownerCapabilityOf(owner.kind) : undefined;
  facts.push({ id: 'pod-ipam', ok: cap === undefined ? null : cap.supported,
    summary: !owner || !cap ? 'pod IPAM owner unknown'
      : !cap.supported ? `pods get IPs from ${owner.title}: it owns them, so plan --pod-cidr refuses to move them (docs/platforms.md)`
        : cap.describe(snap.cni) });

  // The platform's own configuration, when the platform is known but its configuration was not read.
  const unread = PLATFORM_FACTS.get(snap.platform.kind)?.(snap);
  if (unread) facts.push(unread);

  const kcm = snap.controllerManagers[0];
  if (kcm?.allocateNodeCIDRs && snap.cni.ipam === 'calico-ipam') {
    facts.push({ id: 'allocate-node-cidrs', ok: null,
      summary: 'kube-controller-manager allocates node podCIDRs although Calico IPAM ignores them: changing --cluster-cidr '
        + 'without re-registering nodes crash-loops it; set allocate-node-cidrs=false first (kOps: allocateNodeCIDRs: false)' });
  }
  const waiting = snap.nodes.filter((n) => n.podCIDRs.length === 0).length;
  if (kcm?.allocateNodeCIDRs !== false && waiting > 0 && snap.nodes.some((n) => n.podCIDRs.length > 0)) {
    facts.push({ id: 'nodes-waiting', ok: false, summary: `${waiting} node(s) have no podCIDR: the cluster CIDR may be exhausted` });
  }

  // The most nodes the cluster may reach (autoscaler, InstanceGroups, Cluster API, Karpenter) against the most its
  // pod range can give an address range: a maximum above it is a Pod CIDR move waiting to happen (examples/kubeadm-exhausted).
  const reach = nodeReach(snap);
  const room = reach ? podRangeNodeRoom(snap) : undefined;
  if (reach && room) {
    const fits = room.nodes >= BigInt(reach.count);
    facts.push({ id: 'node-reach', ok: fits,
      summary: fits
        ? `${reach.from} allow ${reach.count} node(s); ${room.what} holds ${room.nodes}`
        : `${reach.from} allow ${reach.count} node(s) but ${room.what} holds only ${room.nodes}: nodes past that get no pod range `
          + `(new pods stay Pending); move the Pod CIDR before the cluster grows there (kube-renumber suggest --for pods)` });
  }

  const bare = snap.pods.filter((p) => !p.hostNetwork && !p.owner).length;
  const jobs = snap.pods.filter((p) => !p.hostNetwork && p.owner?.kind === 'Job').length;
  if (bare + jobs > 0) {
    facts.push({ id: 'unmanaged-pods', ok: null,
      summary: `${bare} bare pod(s) and ${jobs} Job pod(s) cannot be rolled: a pod migration must evict them` });
  }
  const hostNet = snap.pods.filter((p) => p.hostNetwork).length;
  facts.push({ id: 'host-network-pods', ok: true, summary: `${hostNet} hostNetwork pod(s) keep the node IP and need no restart` });

  const kp = kubeProxyVersion(snap);
  if (kp) {
    const slow = slowUdpConntrackCleanup(snap);
    facts.push({ id: 'kube-proxy-udp-conntrack', ok: slow ? null : true,
      summary: slow
        ? `kube-proxy ${slow} clears stale UDP conntrack entries in quadratic time (kubernetes/kubernetes#135323, fixed in 1.36): `
          + 'when CoreDNS pods are replaced while a node sends ~1,000 lookups a second, part of them go to the gone pods '
          + 'until the clean-up ends (29 s measured at 17,000 entries). Any CoreDNS rollout does this; the restarts '
          + 'kube-renumber runs hand CoreDNS over pod by pod instead, each old pod held 48 s after it left its Services; '
          + 'a restart left to the operator (--restart-workloads=manual) should come at a quiet hour, or with NodeLocal DNSCache'
        : `kube-proxy ${kp.version}: stale UDP conntrack entries (DNS after a CoreDNS restart) are cleared in linear time` });
  }

  for (const w of snap.warnings) facts.push({ id: 'gap', ok: null, summary: w });
  return facts;
}

function formatCidrish(c: { family: 4 | 6; network: bigint; prefix: number }): string {
  return `${formatIP({ family: c.family, value: c.network })}/${c.prefix}`;
}



/**
 * The most nodes the pod range can serve: node IPAM's cluster CIDR at its node mask, or the enabled Calico pools'
 * blocks (a node takes at least one); undefined when neither is known.
 */
function podRangeNodeRoom(snap: Snapshot): { nodes: bigint; what: string } | undefined {
  const cap = computeCapacity(snap);
  const ni = cap.nodeIpam[0];
  if (ni) return { nodes: BigInt(ni.maxNodes), what: `${ni.clusterCIDR} at /${ni.nodeMask} per node` };
  const pools = cap.pools.filter((p) => !p.disabled && BigInt(p.blocksTotal) > 0n);
  if (pools.length === 0) return undefined;
  const blocks = pools.reduce((n, p) => n + BigInt(p.blocksTotal), 0n);
  return { nodes: blocks, what: `${pools.map((p) => p.cidr).join(', ')} in /${pools[0]!.blockSize} blocks` };
}
