/**
 * What every part of the Service CIDR executor shares (src/engine/service/): its options, the helpers' label, the
 * small readers of a Service's IPs, the view of a batch and the evidence of a move, and the Service re-created
 * from its backup. A leaf of src/engine/service/.
 */
import type { KubeObject } from '../../cluster/types.ts';
import { KubeApiError } from '../../kube/client.ts';
import { forCreate } from '../../kube/resources.ts';
import { formatIP, parseIP } from '../../net/index.ts';

export interface ServiceExecOptions {
  /** Cluster DNS domain for ExternalName targets (default cluster.local). */
  clusterDomain?: string;
  /** Gates the operator asserts by hand when the cluster cannot show them (e.g. no kubelet configz). */
  acknowledgedGates?: readonly string[];
  /** Gate kubelet-cluster-dns reads each Ready node's kubelet configz (needs get nodes/proxy: src/engine/kubelet-dns-gate.ts). */
  readKubeletConfig?: boolean;
  /** How long to wait for the apiserver/controllers to show an effect (default 60 s). */
  timeoutMs?: number;
  /** Parallel Service moves inside one batch (default 8). */
  concurrency?: number;
  /**
   * in-place: put up cover Services (src/engine/covers.ts) so the old and the new IP answer throughout a move
   * (default true). false: the move leaves a window of up to kube-proxy's sync period per Service.
   */
  covers?: boolean;
  /**
   * How long a change needs to reach every node's kube-proxy rules and every DNS cache (default 5 s: kube-proxy's
   * 1 s minimum sync period with room for slow syncs, and CoreDNS's 5 s TTL for Service records). Waited once
   * after the covers of a batch are up and once before they come down.
   */
  propagationDelayMs?: number;
  /**
   * How long an in-place move waits for a nodePort that the apiserver shows allocated though no Service holds it
   * (default 12 min; see patchBack).
   */
  nodePortLeakWaitMs?: number;
  /**
   * The run (the plan id): bridges, covers and copied EndpointSlices carry it as label RUN_LABEL, and only
   * objects with it (and, for deletes by moveBack, a uid journaled as `created` by this run) are changed.
   */
  token?: string;
  /**
   * Follow the EndpointSlices the engine waits for with a watch (default true); false: LIST them again every
   * 50–250 ms, as before the watch (the service-renumber benchmark compares the two).
   */
  watch?: boolean;
  /** How long one workload's restart (rollout or evictions) may take in step restart-workloads (default 5 min). */
  rolloutTimeoutMs?: number;
}

export const BRIDGE_FOR_LABEL = 'kube-renumber.io/bridge-for';
export const MANAGED_BY = 'kube-renumber.io';

export const svcRef = (ns: string, name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: ns, name });
export const itemKey = (it: { namespace: string; name: string }) => `${it.namespace}/${it.name}`;

export function sameIPs(a: readonly string[] | undefined, b: readonly string[]): boolean {
  if (!a || a.length !== b.length) return false;
  return a.every((x, i) => formatIP(parseIP(x)) === formatIP(parseIP(b[i]!)));
}

export function ipsOf(s: KubeObject | undefined): string[] {
  if (!s?.spec) return [];
  if (Array.isArray(s.spec.clusterIPs)) return s.spec.clusterIPs.filter((x: string) => x && x !== 'None');
  return s.spec.clusterIP && s.spec.clusterIP !== 'None' ? [s.spec.clusterIP] : [];
}

/** JSON with object keys sorted at every depth, so equal specs compare equal whatever their key order. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as any)[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** What the cluster shows for a batch: "namespace/name" → the Service, its bridge, its cover (undefined: absent). */
export type ServiceView = Map<string, KubeObject | undefined>;

/** A planned ServiceCIDR as the cluster has it. */
export type ServiceCIDRState = 'absent' | 'ready' | 'pending' | 'deleting' | 'different';

/** What the writes of one move returned: the end state, without another read. */
export interface MoveEvidence {
  service?: KubeObject;
  bridge?: KubeObject;
  /** Whether this process wrote the Service (else it was found moved already). */
  wrote: boolean;
}

/** The apiserver refused an explicit ClusterIP that is still (or already) allocated. */
export function isIPTaken(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 422 && /already allocated/i.test(e.message);
}

/** The Service as it must be re-created from its backup, at `ips`. */
export function recreated(orig: KubeObject, ips: string[]): KubeObject {
  const o = forCreate(orig);
  return { ...o, apiVersion: 'v1', kind: 'Service', spec: { ...orig.spec, clusterIP: ips[0], clusterIPs: ips } };
}
