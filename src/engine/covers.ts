/**
 * Covers: how an in-place Service move keeps every address a client may hold answering, on stock Kubernetes.
 *
 * Moving a Service in place passes through ExternalName (the only door the apiserver leaves open to change a
 * ClusterIP). kube-proxy sees that as "the old IP is gone" and, a moment later, "the bridge holds the old IP"
 * and "the Service holds the new IP"; each change reaches the rules of every node at its own next sync (iptables
 * mode: at most once per --iptables-min-sync-period, 1 s by default). Between those syncs the old IP has no
 * rule, and a DNS answer may already name the new IP before any node has a rule for it: measured on the
 * data-plane testbed, up to ~2 s per Service (docs/benchmarks.md, zero-downtime).
 *
 * A cover closes both windows without forks or deprecated fields: a Service of type LoadBalancer with its own
 * ClusterIP, the moved Service's selector and ports, `loadBalancerClass: kube-renumber.io/cover` (no cloud or
 * load-balancer controller acts on a class it does not own) and no node ports, whose
 * `status.loadBalancer.ingress` kube-renumber sets to the old AND the new IPs. kube-proxy (iptables and
 * nftables modes alike, and eBPF dataplanes that honour LoadBalancer status) programs load-balancer IPs for
 * in-cluster traffic, so once the cover is programmed both addresses answer whatever the moved Service does.
 * While the Service is ExternalName, its name is a CNAME to the cover, whose own ClusterIP answers. The cover
 * is removed only after the bridge (old IP) and the moved Service (new IP) have their endpoints and one more
 * propagation delay has passed (kube-proxy, plus the DNS TTL for answers that named the cover).
 *
 * Nothing here is needed for correctness of the end state: covers are removed by the step that created them
 * (and by remove-bridges as a backstop), and `verify` reports any left.
 */
import type { KubeObject } from '../cluster/types.ts';
import { formatIP, parseCidr, parseIP, usable, type Cidr, type Family } from '../net/index.ts';
import { MANAGED_LABEL } from '../plan/plan.ts';

export const COVER_FOR_LABEL = 'kube-renumber.io/cover-for';
/**
 * Label naming the run (the plan id) that created a helper object (bridge, cover, copied EndpointSlice). With the
 * helper's uid journaled as `created`, it is what lets moveBack and the clean-ups touch only this run's objects.
 */
export const RUN_LABEL = 'kube-renumber.io/run';

/**
 * Is `o` a helper of this run: managed by kube-renumber, `forLabel` naming `forName`, and, when `run` is given,
 * labelled with that run. An object of the same name without these labels is someone else's: never patched or
 * deleted.
 */
export function ownedHelper(o: KubeObject | undefined, forLabel: string, forName: string, run?: string): boolean {
  const l = o?.metadata?.labels ?? {};
  return l[MANAGED_LABEL] === 'true' && l[forLabel] === forName && (run === undefined || l[RUN_LABEL] === run);
}
/** loadBalancerClass of cover Services. */
export const COVER_CLASS = 'kube-renumber.io/cover';

const norm = (ip: string) => formatIP(parseIP(ip));

/**
 * A cover for `orig`: LoadBalancer of class COVER_CLASS at `clusterIPs`, same selector, ports (no node ports),
 * families and session affinity. Selectorless Services get a copy of their EndpointSlices (coverSlices).
 */
export function coverService(orig: KubeObject, name: string, clusterIPs: readonly string[], run?: string): KubeObject {
  const s = orig.spec ?? {};
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: {
      name, namespace: orig.metadata!.namespace,
      labels: { [MANAGED_LABEL]: 'true', [COVER_FOR_LABEL]: orig.metadata!.name!, ...(run ? { [RUN_LABEL]: run } : {}) },
    },
    spec: {
      type: 'LoadBalancer', loadBalancerClass: COVER_CLASS, allocateLoadBalancerNodePorts: false,
      externalTrafficPolicy: 'Cluster',
      clusterIP: clusterIPs[0], clusterIPs: [...clusterIPs],
      ...(s.selector && Object.keys(s.selector).length > 0 ? { selector: s.selector } : {}),
      ports: (s.ports ?? []).map((p: Record<string, unknown>) => { const { nodePort, ...rest } = p; void nodePort; return rest; }),
      ...(s.ipFamilies ? { ipFamilies: s.ipFamilies.slice(0, clusterIPs.length), ipFamilyPolicy: clusterIPs.length > 1 ? 'RequireDualStack' : 'SingleStack' } : {}),
      ...(s.internalTrafficPolicy ? { internalTrafficPolicy: s.internalTrafficPolicy } : {}),
      ...(s.sessionAffinity ? { sessionAffinity: s.sessionAffinity } : {}),
      ...(s.sessionAffinityConfig ? { sessionAffinityConfig: s.sessionAffinityConfig } : {}),
      ...(s.publishNotReadyAddresses ? { publishNotReadyAddresses: true } : {}),
    },
  };
}

/** The ports of `orig` that have a nodePort. */
export function nodePortsOf(orig: KubeObject | undefined): Record<string, any>[] {
  return ((orig?.spec?.ports ?? []) as Record<string, any>[]).filter((p) => typeof p.nodePort === 'number' && p.nodePort > 0);
}

/**
 * The cover of `orig`'s node ports (plan --nodeport-cover, src/plan/nodeport-cover.ts): LoadBalancer of class
 * COVER_CLASS at `clusterIPs` (spares, like a cover's), no node ports of its own, one port per nodePort of `orig`
 * with `port` = that nodePort and its targetPort and protocol; the selector, families, session affinity and
 * externalTrafficPolicy of `orig` (Local: the apiserver allocates the cover a healthCheckNodePort). Its status then
 * lists the node addresses (coverStatus): kube-proxy (iptables, nftables) matches a load-balancer IP and port
 * before its NodePort rules, so node-address:nodePort answers through the cover whatever `orig` does meanwhile.
 */
export function nodePortCoverService(orig: KubeObject, name: string, clusterIPs: readonly string[], run?: string): KubeObject {
  const base = coverService(orig, name, clusterIPs, run);
  const s = orig.spec ?? {};
  return {
    ...base,
    spec: {
      ...base.spec,
      externalTrafficPolicy: s.externalTrafficPolicy === 'Local' ? 'Local' : 'Cluster',
      ports: nodePortsOf(orig).map((p) => ({
        ...(p.name ? { name: p.name } : {}), protocol: p.protocol ?? 'TCP', port: p.nodePort, targetPort: p.targetPort ?? p.port,
        ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
      })),
    },
  };
}

/** The status that makes kube-proxy answer `ips` (old and new) for the cover. */
export function coverStatus(ips: readonly string[]): { loadBalancer: { ingress: { ip: string }[] } } {
  const seen = new Set<string>();
  const ingress: { ip: string }[] = [];
  for (const ip of ips) {
    const n = norm(ip);
    if (!seen.has(n)) { seen.add(n); ingress.push({ ip: n }); }
  }
  return { loadBalancer: { ingress } };
}

/** The load-balancer IPs a cover's status carries now. */
export function coverIngress(svc: KubeObject | undefined): string[] {
  return ((svc?.status?.loadBalancer?.ingress ?? []) as { ip?: string }[]).filter((i) => i.ip).map((i) => norm(i.ip!));
}

/** Does the cover's status carry every one of `ips`? */
export function coverCarries(svc: KubeObject | undefined, ips: readonly string[]): boolean {
  const have = new Set(coverIngress(svc));
  return ips.every((ip) => have.has(norm(ip)));
}

/**
 * Free addresses for covers' own ClusterIPs: from the top of each target range downwards (the mapping keeps
 * offsets, so the top of a range is the least likely to be wanted), skipping every address in `used` (allocated
 * IPAddresses, every IP of the plan's mapping, addresses already picked). One per family per cover; undefined
 * for a family when the range has nothing left. Pure.
 */
export function pickSpares(targets: readonly string[], families: readonly Family[], used: Set<string>, count: number): (string[] | undefined)[] {
  const ranges = new Map<Family, Cidr>();
  for (const t of targets) { const c = parseCidr(t); if (!ranges.has(c.family)) ranges.set(c.family, c); }
  const cursor = new Map<Family, bigint>();
  const out: (string[] | undefined)[] = [];
  for (let k = 0; k < count; k++) {
    const ips: string[] = [];
    for (const fam of families) {
      const c = ranges.get(fam);
      if (!c) break;
      const { first, last } = usable(c);
      let v = cursor.get(fam) ?? last;
      // IPv6 ranges are huge: bound the search so a pathological `used` set cannot spin
      let budget = 1_000_000;
      while (v >= first && budget-- > 0) {
        const ip = formatIP({ family: fam, value: v });
        v--;
        if (!used.has(ip)) { ips.push(ip); used.add(ip); break; }
      }
      cursor.set(fam, v);
    }
    out.push(ips.length === families.length ? ips : undefined);
  }
  return out;
}

/** Ready endpoint addresses in a set of EndpointSlices (`ready` unset counts as ready, as kube-proxy reads it). */
export function readyAddresses(slices: readonly KubeObject[]): Set<string> {
  const out = new Set<string>();
  for (const sl of slices) {
    for (const ep of (sl as any).endpoints ?? []) {
      if (ep?.conditions?.ready === false) continue;
      for (const a of ep.addresses ?? []) out.add(String(a));
    }
  }
  return out;
}
