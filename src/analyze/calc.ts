import {
  bits, cidrSize, formatCidr, formatIP, ipFrom, NetError, nthAddress, parseCidr, split, subnetCount, usable,
} from '../net/index.ts';

/** A count in JSON: a number while exact, a decimal string beyond 2^53 (IPv6 ranges). */
export type Count = number | string;

export function toCount(n: bigint): Count {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

export interface CalcResult {
  cidr: string;
  family: 4 | 6;
  network: string;
  prefix: number;
  netmask?: string;
  broadcast?: string;
  firstUsable: string;
  lastUsable: string;
  usable: Count;
  total: Count;
  nodeBlocks?: {
    nodeMask: number;
    count: Count;
    first: string;
    last: string;
    addressesPerNode: Count;
    usablePerNode: Count;
  };
}

/** `kube-renumber calc`: the facts of one CIDR, and how many node blocks of --node-mask it holds. */
export function calc(input: string, nodeMask?: number): CalcResult {
  const c = parseCidr(input);
  const u = usable(c);
  const width = bits(c.family);
  const result: CalcResult = {
    cidr: formatCidr(c),
    family: c.family,
    network: formatIP(ipFrom(c.family, c.network)),
    prefix: c.prefix,
    firstUsable: formatIP(ipFrom(c.family, u.first)),
    lastUsable: formatIP(ipFrom(c.family, u.last)),
    usable: toCount(u.count),
    total: toCount(cidrSize(c)),
  };
  if (c.family === 4) {
    const mask = ((1n << 32n) - 1n) ^ ((1n << BigInt(32 - c.prefix)) - 1n);
    result.netmask = formatIP(ipFrom(4, mask));
  }
  if (u.broadcast !== undefined) result.broadcast = formatIP(ipFrom(c.family, u.broadcast));
  if (nodeMask !== undefined) {
    if (!Number.isInteger(nodeMask) || nodeMask < c.prefix || nodeMask > width) {
      throw new NetError(`--node-mask ${nodeMask} does not fit ${result.cidr}: it must be between ${c.prefix} and ${width}`);
    }
    const count = subnetCount(c, nodeMask);
    const [first] = split(c, nodeMask, 1);
    const lastNetwork = c.network + (count - 1n) * (1n << BigInt(width - nodeMask));
    const perNode = 1n << BigInt(width - nodeMask);
    result.nodeBlocks = {
      nodeMask,
      count: toCount(count),
      first: formatCidr(first!),
      last: formatCidr({ family: c.family, network: lastNetwork, prefix: nodeMask }),
      addressesPerNode: toCount(perNode),
      usablePerNode: toCount(usable({ family: c.family, network: c.network, prefix: nodeMask }).count),
    };
  }
  return result;
}

/** The IP at `offset` inside `cidr`, formatted. */
export function addressAt(cidr: string, offset: bigint): string {
  return formatIP(nthAddress(parseCidr(cidr), offset));
}
