/**
 * The kubelets' running configuration, read through the API server's node proxy:
 * `GET /api/v1/nodes/NODE/proxy/configz` answers `{"kubeletconfig": {...}}`, the KubeletConfiguration the
 * kubelet of NODE runs with (flags and config file merged), so it shows a change only once that kubelet was
 * restarted with it.
 *
 * The request needs `get` on `nodes/proxy`, which reaches every endpoint of the kubelet's API, exec and attach
 * included (docs/service-migration.md#reading-the-kubelets-configuration): it is asked only where the operator
 * opted in (`--read-kubelet-config`) and granted it (deploy/rbac-kubelet-configz.yaml). Only GETs of
 * `/configz` are ever sent through it.
 */
import { isReady } from '../cluster/readers.ts';
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from './client.ts';

/** The nodes whose kubelet is asked: those whose Ready condition is True (a NotReady kubelet cannot answer). */
export function readyNodes(nodes: readonly KubeObject[]): KubeObject[] {
  return nodes.filter((n) => isReady(n));
}

export type ConfigzRead =
  | { node: string; ok: true; clusterDNS: string[] }
  | { node: string; ok: false; forbidden: boolean; error: string };

/** The path of NODE's configz through the API server. */
export function configzPath(node: string): string {
  return `/api/v1/nodes/${encodeURIComponent(node)}/proxy/configz`;
}

/** clusterDNS of a configz answer (an empty list where the kubelet names none); throws on an answer that is not one. */
export function clusterDNSOf(body: unknown): string[] {
  const kc = (body as { kubeletconfig?: { clusterDNS?: unknown } } | null | undefined)?.kubeletconfig;
  if (!kc || typeof kc !== 'object') throw new Error('the answer has no kubeletconfig object');
  const dns = kc.clusterDNS ?? [];
  if (!Array.isArray(dns) || dns.some((x) => typeof x !== 'string')) throw new Error('kubeletconfig.clusterDNS is not a list of strings');
  return dns as string[];
}

/** NODE's kubelet's clusterDNS; a refusal or an unreachable kubelet is a failed read, never a throw. */
export async function readKubeletClusterDNS(client: KubeClient, node: string, timeoutMs = 10_000): Promise<ConfigzRead> {
  try {
    const body = await client.request('GET', configzPath(node), { timeoutMs });
    return { node, ok: true, clusterDNS: clusterDNSOf(body) };
  } catch (e) {
    // the API server's own refusal names the resource: `cannot get resource "nodes/proxy"` (a kubelet's refusal,
    // passed through, names its subresources otherwise)
    const forbidden = e instanceof KubeApiError && e.status === 403 && e.message.includes('nodes/proxy');
    return { node, ok: false, forbidden, error: e instanceof Error ? e.message : String(e) };
  }
}

/** Same IP text whatever its spelling (IPv6 zero runs, case). */
function sameIP(a: string, b: string): boolean {
  const norm = (s: string) => s.trim().toLowerCase();
  if (norm(a) === norm(b)) return true;
  try {
    return new URL(`http://[${norm(a)}]/`).host === new URL(`http://[${norm(b)}]/`).host;
  } catch {
    return false;
  }
}

/**
 * Whether a kubelet's clusterDNS hands out the new DNS IPs: every IP of `to` is in it and no IP of `from` is
 * (a kubelet naming the old IP first would send every new pod's lookups there first, to time out once the old
 * IP is gone).
 */
export function namesNewDNS(clusterDNS: readonly string[], from: readonly string[], to: readonly string[]): boolean {
  return to.every((ip) => clusterDNS.some((d) => sameIP(d, ip))) && !from.some((ip) => clusterDNS.some((d) => sameIP(d, ip)));
}

export interface KubeletDNSReport {
  /** Every Ready node's kubelet answered and names the new DNS IPs (and there is at least one Ready node). */
  holds: boolean;
  ready: number;
  /** Nodes whose kubelet answers with other clusterDNS, with what it names. */
  behind: Array<{ node: string; clusterDNS: string[] }>;
  /** Nodes whose configz could not be read. */
  unread: Array<{ node: string; forbidden: boolean; error: string }>;
  /** Nodes not Ready, not asked. */
  notReady: string[];
}

/** Reads every Ready node's kubelet configuration (`concurrency` at a time) and compares its clusterDNS. */
export async function kubeletsClusterDNS(client: KubeClient, from: readonly string[], to: readonly string[], opts: { concurrency?: number; timeoutMs?: number } = {}): Promise<KubeletDNSReport> {
  const nodes: KubeObject[] = [];
  for await (const n of client.list('/api/v1/nodes')) nodes.push(n);
  const ready = readyNodes(nodes);
  const readySet = new Set(ready);
  const reads: ConfigzRead[] = new Array(ready.length);
  let next = 0;
  const worker = async () => {
    while (next < ready.length) {
      const i = next++;
      reads[i] = await readKubeletClusterDNS(client, ready[i]!.metadata?.name ?? '', opts.timeoutMs);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 8, ready.length) }, worker));
  const behind: KubeletDNSReport['behind'] = [];
  const unread: KubeletDNSReport['unread'] = [];
  for (const r of reads) {
    if (!r.ok) unread.push({ node: r.node, forbidden: r.forbidden, error: r.error });
    else if (!namesNewDNS(r.clusterDNS, from, to)) behind.push({ node: r.node, clusterDNS: r.clusterDNS });
  }
  return {
    holds: ready.length > 0 && behind.length === 0 && unread.length === 0,
    ready: ready.length,
    behind,
    unread,
    notReady: nodes.filter((n) => !readySet.has(n)).map((n) => n.metadata?.name ?? ''),
  };
}
