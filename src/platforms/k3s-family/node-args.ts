/**
 * What k3s and RKE2 servers tell about their own configuration on their Node objects, shared by
 * ../k3s/platform.ts and ../rke2/platform.ts.
 *
 * Both write the annotation `<program>.io/node-args` (k3s.io/node-args, rke2.io/node-args): a JSON array of the
 * process's arguments merged with its config file, `--flag=value` split into two elements, first element "server"
 * or "agent" (https://github.com/k3s-io/k3s/blob/master/pkg/nodeconfig/nodeconfig.go, getNodeArgs; config file
 * values since k3s-io/k3s#3289). k3s replaces the values of the flags it knows to be secret with "********", but
 * not all: the short `-t TOKEN` form stayed readable (k3s-io/k3s#14347), and any other flag may carry a secret.
 * So this reader takes the values of a few named flags only (the ranges, the DNS address, the flannel backend),
 * keeps a value only when it has the shape of an address or a CIDR, and never returns anything else from the
 * annotation: no other value can reach evidence, warnings or output through here.
 */
import type { PlatformNode, PlatformRange } from '../../platform/types.ts';
import { firstAndMore, splitList } from '../../text.ts';

/** The flags read, and only these. */
export type ReadFlag = '--cluster-cidr' | '--service-cidr' | '--cluster-dns' | '--flannel-backend';

const READ_FLAGS: readonly ReadFlag[] = ['--cluster-cidr', '--service-cidr', '--cluster-dns', '--flannel-backend'];

const CIDR_SHAPE = /^[0-9A-Fa-f:.]+\/\d{1,3}$/;
const IP_SHAPE = /^[0-9A-Fa-f:.]+$/;
const BACKEND_SHAPE = /^[a-z0-9-]{1,32}$/;

/** A server's node-args, reduced to the values of the flags read (each flag's values in order; comma lists split). */
export interface ServerArgs {
  node: string;
  values: Partial<Record<ReadFlag, string[]>>;
}

function shapeOk(flag: ReadFlag, v: string): boolean {
  if (flag === '--cluster-cidr' || flag === '--service-cidr') return CIDR_SHAPE.test(v);
  if (flag === '--cluster-dns') return IP_SHAPE.test(v);
  return BACKEND_SHAPE.test(v);
}

/**
 * The read flags of one node-args annotation, or undefined when it is not a JSON array of strings or the node is
 * not a server (its first element is not "server"). Both `--flag value` and `--flag=value` are understood; a
 * flag given several times keeps all its values, comma-separated lists (dual-stack) are split.
 */
export function readNodeArgs(text: string | undefined): Partial<Record<ReadFlag, string[]>> | undefined {
  if (typeof text !== 'string') return undefined;
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(args) || args.length === 0 || !args.every((a) => typeof a === 'string')) return undefined;
  const list = args as string[];
  if (list[0] !== 'server') return undefined;
  const out: Partial<Record<ReadFlag, string[]>> = {};
  for (let i = 1; i < list.length; i++) {
    const a = list[i]!;
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const flag = READ_FLAGS.find((f) => f === name);
    if (!flag) continue;
    let raw: string | undefined;
    if (eq > 0) raw = a.slice(eq + 1);
    else if (i + 1 < list.length && !list[i + 1]!.startsWith('-')) raw = list[++i];
    if (raw === undefined) continue;
    for (const v of splitList(raw)) {
      if (!shapeOk(flag, v)) continue;
      (out[flag] ??= []).push(v);
    }
  }
  return out;
}

/** Every server node's read flags from the annotation `key`, in node order. */
export function serverArgs(nodes: readonly PlatformNode[], key: string): ServerArgs[] {
  const out: ServerArgs[] = [];
  for (const n of nodes) {
    const values = readNodeArgs(n.annotations[key]);
    if (values) out.push({ node: n.name, values });
  }
  return out;
}

/**
 * The ranges one flag names across the servers' node-args: one range per distinct value, its source the
 * annotation and flag, its label the servers that name it. Empty when no server names the flag.
 */
export function rangesFromArgs(servers: readonly ServerArgs[], key: string, flag: '--cluster-cidr' | '--service-cidr', what: string): PlatformRange[] {
  const byValue = new Map<string, string[]>();
  for (const s of servers) for (const v of s.values[flag] ?? []) {
    const list = byValue.get(v);
    if (list) list.push(s.node);
    else byValue.set(v, [s.node]);
  }
  return [...byValue].map(([cidr, nodes]) => ({
    cidr,
    role: flag === '--cluster-cidr' ? 'pod' as const : 'service' as const,
    source: `${key} ${flag}`,
    label: `${what} ${flag} (node-args of server ${firstAndMore(nodes, 3)})`,
  }));
}

/** Whether a CIDR or address is IPv6 (has a colon). */
export function isV6(s: string): boolean {
  return s.includes(':');
}
