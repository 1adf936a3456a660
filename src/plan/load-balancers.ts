/**
 * LoadBalancer Services in the new range (`plan --load-balancers move`; `keep`, the default, leaves them at their
 * ClusterIPs under kept ServiceCIDRs). A ClusterIP cannot be changed in place and a LoadBalancer Service cannot
 * pass through ExternalName without losing its load balancer, so each one is re-created at its mapped ClusterIP.
 * Whether its external address survives that depends on who hands it out: this module reads, per Service, which
 * platform keeps the address across a re-creation (and what to add so it does), and which addresses and DNS
 * records change where none does. Pure: the annotations are those documented by each platform (docs/platforms.md,
 * "LoadBalancer Services"), checked by test/unit/load-balancers.test.ts.
 */
import type { ServiceInfo } from '../cluster/types.ts';
import { splitList } from '../text.ts';
import type { PlanStep, StepItem } from './steps.ts';

/** keep: LoadBalancer Services keep their ClusterIPs (kept ServiceCIDRs); move: they are re-created in NEW. */
export type LoadBalancerMode = 'keep' | 'move';
export const DEFAULT_LOAD_BALANCERS: LoadBalancerMode = 'keep';
export const LOAD_BALANCER_MODES: readonly LoadBalancerMode[] = ['keep', 'move'];

/** MetalLB: the addresses to assign, comma-separated (both families for dual-stack); the older prefix still read. */
export const METALLB_IPS = 'metallb.io/loadBalancerIPs';
export const METALLB_IPS_LEGACY = 'metallb.universe.tf/loadBalancerIPs';
/** MetalLB's controller records the pool it assigned from on every Service it serves. */
export const METALLB_POOL = ['metallb.io/ip-allocated-from-pool', 'metallb.universe.tf/ip-allocated-from-pool'] as const;
/** GKE: names of reserved static addresses given to the load balancer's forwarding rules. */
export const GKE_STATIC = 'networking.gke.io/load-balancer-ip-addresses';
/** Azure cloud provider: an existing public IP by address or by name. */
export const AZURE_STATIC = [
  'service.beta.kubernetes.io/azure-load-balancer-ipv4', 'service.beta.kubernetes.io/azure-load-balancer-ipv6',
  'service.beta.kubernetes.io/azure-pip-name', 'service.beta.kubernetes.io/azure-pip-name-ipv6',
] as const;
/** AWS: Elastic IP allocations of a Network Load Balancer (one per subnet). */
export const AWS_EIPS = 'service.beta.kubernetes.io/aws-load-balancer-eip-allocations';
export const AWS_LB_TYPE = 'service.beta.kubernetes.io/aws-load-balancer-type';
/** Tailscale operator: the tailnet device name of the Service's proxy (default <namespace>-<name>). */
export const TAILSCALE_HOSTNAME = 'tailscale.com/hostname';
export const TAILSCALE_CLASS = 'tailscale';
/** external-dns: the DNS names it publishes for a Service (legacy prefix before v0.22, the new one after). */
export const EXTERNAL_DNS_HOSTNAMES = [
  'external-dns.alpha.kubernetes.io/hostname', 'external-dns.alpha.kubernetes.io/internal-hostname',
  'external-dns.kubernetes.io/hostname', 'external-dns.kubernetes.io/internal-hostname',
] as const;

/** Who keeps a LoadBalancer Service's external address across its re-creation. */
export type AddressKeeper =
  | 'metallb-annotation' | 'metallb' | 'spec.loadBalancerIP' | 'gke-static' | 'azure-static' | 'aws-eip' | 'tailscale-hostname' | 'none';

/** What happens to one LoadBalancer Service's external address when it is re-created in the new range. */
export interface LoadBalancerAddress {
  keeper: AddressKeeper;
  /** Its external addresses today (status.loadBalancer.ingress IPs and hostnames, spec.loadBalancerIP). */
  external: string[];
  /** Those the re-created Service has again. */
  kept: string[];
  /** Those that change (a gate stops before the Service is re-created when there is any). */
  changes: string[];
  /** Annotations the re-created Service gets so that its address comes back (absent: none needed). */
  pin?: Record<string, string>;
  /** DNS names external-dns publishes for it (they follow the new address once external-dns syncs). */
  dnsNames: string[];
  /** One sentence for the plan: how the address is kept, or that it changes. */
  note: string;
}

type LBInput = Pick<ServiceInfo, 'namespace' | 'name' | 'annotations' | 'loadBalancerIPs'>
  & Partial<Pick<ServiceInfo, 'loadBalancerIP' | 'loadBalancerClass' | 'loadBalancerHostnames'>>;

/** The DNS names external-dns publishes for the Service (every hostname annotation, deduplicated). */
export function externalDNSNames(annotations: Readonly<Record<string, string>>): string[] {
  return [...new Set(EXTERNAL_DNS_HOSTNAMES.flatMap((k) => splitList(annotations[k])))];
}

/**
 * Which platform keeps this Service's external address across a delete and a create, in this order (the first
 * that applies): MetalLB's annotation already set; spec.loadBalancerIP (MetalLB and the clouds that honour it ask
 * for it again; on a cloud it must name a reserved address, else the address is released with the load balancer);
 * GKE's static address names; Azure's public IP by address or name; AWS Elastic IP allocations (the addresses stay,
 * the NLB's DNS name is new); the Tailscale operator (the tailnet name stays when pinned, the tailnet IPs are new);
 * a Service MetalLB assigned (pinned by adding METALLB_IPS with its current addresses). Anything else loses it.
 */
export function loadBalancerAddress(s: LBInput): LoadBalancerAddress {
  const a = s.annotations ?? {};
  const ips = [...s.loadBalancerIPs];
  const hostnames = [...(s.loadBalancerHostnames ?? [])];
  const external = [...ips, ...hostnames];
  const dnsNames = externalDNSNames(a);
  const out = (keeper: AddressKeeper, kept: string[], note: string, pin?: Record<string, string>): LoadBalancerAddress => {
    const changes = external.filter((x) => !kept.includes(x));
    return { keeper, external, kept, changes, ...(pin ? { pin } : {}), dnsNames, note };
  };
  const metallbSet = a[METALLB_IPS] ?? a[METALLB_IPS_LEGACY];
  if (metallbSet) return out('metallb-annotation', external, `MetalLB assigns ${splitList(metallbSet).join(', ')} again (annotation ${a[METALLB_IPS] ? METALLB_IPS : METALLB_IPS_LEGACY})`);
  if (s.loadBalancerIP) {
    return out('spec.loadBalancerIP', external, `spec.loadBalancerIP ${s.loadBalancerIP} is asked for again (MetalLB assigns it; a cloud keeps it only when it is a reserved static address)`);
  }
  if (a[GKE_STATIC]) return out('gke-static', external, `GKE gives the reserved static address(es) ${splitList(a[GKE_STATIC]).join(', ')} (annotation ${GKE_STATIC}) to the new load balancer`);
  const azure = AZURE_STATIC.filter((k) => a[k]);
  if (azure.length > 0) return out('azure-static', external, `Azure gives the existing public IP (${azure.map((k) => `${k}=${a[k]}`).join(', ')}) to the new load balancer`);
  if (a[AWS_EIPS]) {
    return out('aws-eip', ips, `the Network Load Balancer is created again with Elastic IP allocations ${splitList(a[AWS_EIPS]).join(', ')}: its addresses stay, its DNS name is new`
      + (a[AWS_LB_TYPE] && !/nlb|external/.test(a[AWS_LB_TYPE]!) ? ` (${AWS_LB_TYPE} is ${a[AWS_LB_TYPE]}: Elastic IPs apply to an NLB only)` : ''));
  }
  if (s.loadBalancerClass === TAILSCALE_CLASS) {
    const name = a[TAILSCALE_HOSTNAME] ?? (hostnames[0]?.split('.')[0] || `${s.namespace}-${s.name}`);
    return out('tailscale-hostname', hostnames,
      `the Tailscale operator registers a new tailnet device named ${name}${a[TAILSCALE_HOSTNAME] ? '' : ` (pinned by ${TAILSCALE_HOSTNAME})`}: its MagicDNS name stays, its tailnet IPs are new`
        + ' (the old device must be gone first, else the new one gets a suffixed name)',
      a[TAILSCALE_HOSTNAME] ? undefined : { [TAILSCALE_HOSTNAME]: name });
  }
  if (METALLB_POOL.some((k) => a[k]) && ips.length > 0) {
    return out('metallb', external, `MetalLB assigns ${ips.join(', ')} again: the re-created Service carries ${METALLB_IPS}=${ips.join(',')}`, { [METALLB_IPS]: ips.join(',') });
  }
  return out('none', [], external.length > 0
    ? `no platform here keeps its address across a re-creation: ${external.join(', ')} will change${dnsNames.length > 0 ? ` and the DNS records ${dnsNames.join(', ')} must follow` : ''}`
    : 'it has no external address yet: nothing to keep');
}

/** One LoadBalancer Service the plan moves: its mapping and what the snapshot read of it. */
export interface LoadBalancerMove {
  namespace: string;
  name: string;
  from: string[];
  to: string[];
  /** The bridge Service holding `from` for in-cluster clients until the bridges are removed. */
  bridge: string;
  address: LoadBalancerAddress;
}

/** The step item of a LoadBalancer move. */
export function loadBalancerItem(m: LoadBalancerMove): StepItem {
  const a = m.address;
  return {
    namespace: m.namespace, name: m.name, from: [...m.from], to: [...m.to], bridge: m.bridge,
    loadBalancer: { keeper: a.keeper, kept: [...a.kept], changes: [...a.changes], ...(a.pin ? { pin: { ...a.pin } } : {}), ...(a.dnsNames.length > 0 ? { dnsNames: [...a.dnsNames] } : {}) },
  };
}

/**
 * The steps of `--load-balancers move`, one Service at a time: a gate before each one whose external address changes
 * (it names the addresses and the DNS records; it holds once the Service was moved, or with --ack-gate), then step
 * move-load-balancers: delete it (uid precondition), create the bridge at its old ClusterIP, create it again from its
 * backup at the mapped ClusterIP with the pin annotations, wait for its external address.
 */
export function loadBalancerSteps(moves: readonly LoadBalancerMove[]): PlanStep[] {
  const steps: PlanStep[] = [];
  moves.forEach((m, i) => {
    const key = `${m.namespace}/${m.name}`;
    const a = m.address;
    const item = loadBalancerItem(m);
    if (a.changes.length > 0) {
      steps.push({
        id: `load-balancer-${i + 1}-address`, kind: 'gate',
        description: `LoadBalancer Service ${key}: ${a.changes.join(', ')} will change when it is re-created (${a.note})`,
        items: [item],
        gate: {
          condition: 'load-balancer-address',
          reason: `the external address${a.changes.length > 1 ? 'es' : ''} ${a.changes.join(', ')} of ${key} cannot be kept across its re-creation`
            + (a.dnsNames.length > 0 ? `; DNS records that point at it: ${a.dnsNames.join(', ')} (external-dns updates them once the new address is assigned)` : '; no external-dns record names it: find the DNS records and clients that use it'),
          instructions: [
            `tell the clients of ${a.changes.join(', ')}; lower the TTL of ${a.dnsNames.length > 0 ? a.dnsNames.join(', ') : 'the DNS records that point at it'} ahead of the move`,
            ...(a.keeper === 'none' ? [`or keep the address: reserve it on the platform and name it in the Service (docs/platforms.md, "LoadBalancer Services"), then plan again`] : []),
            `kube-renumber resume --ack-gate load-balancer-${i + 1}-address`,
          ],
          check: `Service ${key} is already at ${m.to.join(',')} (moved), or the gate is acknowledged with --ack-gate`,
        },
        rollback: 'nothing to undo',
      });
    }
    steps.push({
      id: `move-load-balancer-${i + 1}`, kind: 'move-load-balancers',
      description: `re-create LoadBalancer Service ${key} at ${m.to.join(',')} (from ${m.from.join(',')}): delete it, a bridge takes the old ClusterIP, create it again from its backup`
        + (a.pin ? ` with ${Object.entries(a.pin).map(([k, v]) => `${k}=${v}`).join(', ')}` : '')
        + `; ${a.kept.length > 0 ? `${a.kept.join(', ')} kept (${a.note}); ` : ''}${a.changes.length > 0 ? `${a.changes.join(', ')} change; ` : ''}`
        + 'its external address is unassigned between the delete and the new assignment',
      items: [item],
      rollback: 'delete the bridge, re-create the Service from its backup at its old ClusterIP with the same pin, so its external address comes back (possible while the old range is not drained)',
    });
  });
  return steps;
}
