/**
 * What the k3s-family platforms (k3s, RKE2) share in recognising a cluster and reading its ranges: the signs their
 * Node objects carry and the ranges their servers' node-args name, for one program given by its name.
 */
import type { PlatformNode, PlatformRange } from '../../platform/types.ts';
import { firstAndMore } from '../../text.ts';
import { rangesFromArgs, type ServerArgs } from './node-args.ts';

/** "N node(s) <what> (e.g. <example>)" for the nodes `pick` finds something on, or undefined. */
function nodeSign(nodes: readonly PlatformNode[], pick: (n: PlatformNode) => string | undefined, what: string): string | undefined {
  let count = 0;
  let example = '';
  for (const n of nodes) {
    const found = pick(n);
    if (found === undefined) continue;
    if (count++ === 0) example = found;
  }
  return count === 0 ? undefined : `${count} node(s) ${what} (e.g. ${example})`;
}

/**
 * The node signs of a k3s-family platform (`program`: the program's name, as its annotations carry it): the program's annotations, the
 * instance-type label and providerID its embedded cloud provider sets, the kubelet version suffix. Annotation
 * values are never shown, only their keys.
 */
export function programNodeSigns(nodes: readonly PlatformNode[], program: string, versionMark: string): string[] {
  const prefix = `${program}.io/`;
  const preferred = [`${program}.io/node-args`, `${program}.io/node-config-hash`, `${program}.io/node-env`];
  const signs = [
    nodeSign(nodes, (n) => {
      const keys = Object.keys(n.annotations).filter((k) => k.startsWith(prefix));
      if (keys.length === 0) return undefined;
      return `${n.name}: ${keys.find((k) => preferred.includes(k)) ?? keys[0]}`;
    }, `annotated ${prefix}* by ${program}`),
    nodeSign(nodes, (n) => (n.labels['node.kubernetes.io/instance-type'] === program ? n.name : undefined),
      `labelled node.kubernetes.io/instance-type=${program} by ${program}'s embedded cloud provider`),
    nodeSign(nodes, (n) => (n.providerID?.startsWith(`${program}://`) ? `${n.name}: ${n.providerID}` : undefined), `with providerID ${program}://<node>`),
    nodeSign(nodes, (n) => (n.kubeletVersion?.includes(versionMark) ? `${n.name}: ${n.kubeletVersion}` : undefined), `with a ${versionMark} kubelet`),
  ];
  return signs.filter((s): s is string => s !== undefined);
}

/** The --cluster-dns value(s) the servers name, or the default, as one evidence line. */
export function clusterDnsEvidence(servers: readonly ServerArgs[], key: string, program: string, fallback: string): string | undefined {
  if (servers.length === 0) return undefined;
  const named = [...new Set(servers.flatMap((s) => s.values['--cluster-dns'] ?? []))];
  if (named.length > 0) return `${key} --cluster-dns ${named.join(',')} (node-args of server ${firstAndMore(servers.filter((s) => s.values['--cluster-dns']).map((s) => s.node), 3)})`;
  return `--cluster-dns not in any server's ${key}: ${program} default ${fallback}`;
}

/**
 * The ranges a k3s-family server's configuration names: each flag from the servers' node-args, else the
 * documented default labelled as such (with why: no server named it, or no server's node-args were seen).
 */
export function programRanges(servers: readonly ServerArgs[], key: string, title: string, defaults: { clusterCIDR: string; serviceCIDR: string }): PlatformRange[] {
  const out: PlatformRange[] = [];
  const why = servers.length === 0 ? `no server's ${key} seen` : `not set in the ${key} of server ${firstAndMore(servers.map((s) => s.node), 3)}`;
  for (const [flag, role, def] of [['--cluster-cidr', 'pod', defaults.clusterCIDR], ['--service-cidr', 'service', defaults.serviceCIDR]] as const) {
    const read = rangesFromArgs(servers, key, flag, title);
    if (read.length > 0) out.push(...read);
    else out.push({ cidr: def, role, source: `${title} default ${flag} (${why})`, label: `${title} ${flag} default ${def}, not read from the cluster` });
  }
  return out;
}
