/**
 * CIDR blocks: parsing, formatting, sizes, subnetting and address arithmetic. Pure, no I/O.
 */
import { type Family, type IP, NetError, bits, familyName, formatIP, ipFrom, maxValue, parseIPReason } from './ip.ts';

export interface Cidr {
  readonly family: Family;
  readonly network: bigint;
  readonly prefix: number;
}

/** Subnets `split` returns without an explicit limit, at most. */
export const SPLIT_MAX = 1 << 20;

/** Throws unless `prefix` is an integer 0..bits(family). `what` names the offending input. */
export function checkPrefix(prefix: number, family: Family, what: string): void {
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits(family)) {
    throw new NetError(`${what}: prefix ${String(prefix)} is invalid; it must be 0–${bits(family)} for ${familyName(family)}`);
  }
}

function hostMask(family: Family, prefix: number): bigint {
  return (1n << BigInt(bits(family) - prefix)) - 1n;
}

/** Builds a Cidr; NetError on a bad prefix or value, or when host bits are set (unless `normalize`). */
export function cidrFrom(family: Family, network: bigint, prefix: number, opts: { normalize?: boolean } = {}): Cidr {
  const ip = ipFrom(family, network);
  checkPrefix(prefix, family, `invalid CIDR ${formatIP(ip)}/${prefix}`);
  const host = network & hostMask(family, prefix);
  if (host !== 0n && !opts.normalize) {
    const fixed = formatCidr({ family, network: network - host, prefix });
    throw new NetError(`invalid CIDR "${formatIP(ip)}/${prefix}": host bits are set (did you mean ${fixed}?)`);
  }
  return { family, network: network - host, prefix };
}

/**
 * Parses "address/prefix" (e.g. "10.0.0.0/8", "fd00::/64"); surrounding whitespace is trimmed. A bare
 * address is rejected. Host bits set → NetError, unless `normalize` (then masked off). `family`
 * requires that family.
 */
export function parseCidr(s: string, opts: { normalize?: boolean; family?: Family } = {}): Cidr {
  const bad = (why: string): NetError => new NetError(`invalid CIDR ${JSON.stringify(s)}: ${why}`);
  if (typeof s !== 'string') throw bad('not a string');
  const t = s.trim();
  const example = 'expected address/prefix such as 10.0.0.0/8 or fd00::/64';
  if (t === '') throw bad(`empty; ${example}`);
  if (/\s/.test(t)) throw bad(`contains whitespace; ${example}`);
  const parts = t.split('/');
  if (parts.length > 2) throw bad(`more than one "/"; ${example}`);
  if (parts.length === 2 && parts[0] === '') throw bad(`missing address before "/"; ${example}`);
  const ip = parseIPReason(parts[0]);
  if (parts.length === 1) {
    if (typeof ip === 'string') throw bad(`missing "/prefix"; ${example}`);
    throw bad(`missing prefix length; add /${bits(ip.family)} for a single address, or the network's prefix`);
  }
  if (typeof ip === 'string') throw bad(ip);
  const p = parts[1];
  const range = `prefix must be 0–${bits(ip.family)} for ${familyName(ip.family)}`;
  if (p === '') throw bad(`missing prefix length after "/"; ${range}`);
  if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > bits(ip.family)) throw bad(range);
  const prefix = Number(p);
  if (opts.family !== undefined && opts.family !== ip.family) {
    throw new NetError(`${JSON.stringify(s)} is ${familyName(ip.family)} but an ${familyName(opts.family)} range was expected`);
  }
  const host = ip.value & hostMask(ip.family, prefix);
  if (host !== 0n && !opts.normalize) {
    throw bad(`host bits are set (did you mean ${formatCidr({ family: ip.family, network: ip.value - host, prefix })}?)`);
  }
  return { family: ip.family, network: ip.value - host, prefix };
}

/** parseCidr, returning undefined instead of throwing (strict: host bits set → undefined). */
export function tryParseCidr(s: string): Cidr | undefined {
  try {
    return parseCidr(s);
  } catch (e) {
    if (e instanceof NetError) return undefined;
    throw e;
  }
}

/** True iff parseCidr(s) would succeed. */
export function isCidrString(s: string): boolean {
  return tryParseCidr(s) !== undefined;
}

/** "network/prefix", the network formatted by formatIP. */
export function formatCidr(c: Cidr): string {
  return `${formatIP({ family: c.family, value: c.network })}/${c.prefix}`;
}

/** Number of addresses in the block: 2^(bits − prefix). */
export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(bits(c.family) - c.prefix);
}

/** The network (first) address value. */
export function cidrFirst(c: Cidr): bigint {
  return c.network;
}

/** The last address value. */
export function cidrLast(c: Cidr): bigint {
  return c.network + cidrSize(c) - 1n;
}

/** How many /newPrefix subnets `c` holds; NetError unless c.prefix ≤ newPrefix ≤ bits. */
export function subnetCount(c: Cidr, newPrefix: number): bigint {
  checkPrefix(newPrefix, c.family, `cannot split ${formatCidr(c)} into /${newPrefix}`);
  if (newPrefix < c.prefix) {
    throw new NetError(`cannot split ${formatCidr(c)} into /${newPrefix}: the new prefix must be ≥ ${c.prefix}`);
  }
  return 1n << BigInt(newPrefix - c.prefix);
}

/**
 * The /newPrefix subnets of `c`, in address order, at most `limit` of them. Without a limit, more than
 * SPLIT_MAX subnets is a NetError (pass a limit).
 */
export function split(c: Cidr, newPrefix: number, limit?: number): Cidr[] {
  const count = subnetCount(c, newPrefix);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
    throw new NetError(`invalid limit ${String(limit)}: must be a non-negative integer`);
  }
  if (limit === undefined && count > BigInt(SPLIT_MAX)) {
    throw new NetError(`splitting ${formatCidr(c)} into /${newPrefix} gives ${count} subnets; pass a limit`);
  }
  const n = limit === undefined || BigInt(limit) > count ? Number(count) : limit;
  const step = 1n << BigInt(bits(c.family) - newPrefix);
  const out: Cidr[] = [];
  for (let i = 0; i < n; i++) out.push({ family: c.family, network: c.network + BigInt(i) * step, prefix: newPrefix });
  return out;
}

/**
 * The smallest network address of a /prefix block that is ≥ value. The result exceeds the family's
 * maximum address when no such block exists.
 */
export function alignUp(value: bigint, prefix: number, family: Family): bigint {
  checkPrefix(prefix, family, `cannot align to /${prefix}`);
  if (value < 0n) throw new NetError(`cannot align ${value}: address values are non-negative`);
  const mask = hostMask(family, prefix);
  return (value + mask) & ~mask;
}

/** The /newPrefix block enclosing `c`; NetError unless 0 ≤ newPrefix ≤ c.prefix. */
export function supernet(c: Cidr, newPrefix: number): Cidr {
  checkPrefix(newPrefix, c.family, `no supernet /${newPrefix} of ${formatCidr(c)}`);
  if (newPrefix > c.prefix) {
    throw new NetError(`no supernet /${newPrefix} of ${formatCidr(c)}: the new prefix must be ≤ ${c.prefix}`);
  }
  return { family: c.family, network: c.network & ~hostMask(c.family, newPrefix), prefix: newPrefix };
}

/**
 * Assignable host addresses. IPv4 ≤/30 excludes network and broadcast; /31 (RFC 3021) and /32 use all.
 * IPv6 ≤/126 excludes the subnet-router anycast (network) address; /127 and /128 use all.
 */
export function usable(c: Cidr): { first: bigint; last: bigint; count: bigint; broadcast?: bigint } {
  const size = cidrSize(c);
  const last = cidrLast(c);
  if (size <= 2n) return { first: c.network, last, count: size };
  if (c.family === 4) return { first: c.network + 1n, last: last - 1n, count: size - 2n, broadcast: last };
  return { first: c.network + 1n, last, count: size - 1n };
}

/** The address at `offset` from the network address; NetError if outside the block. */
export function nthAddress(c: Cidr, offset: bigint): IP {
  if (offset < 0n || offset >= cidrSize(c)) {
    throw new NetError(`offset ${offset} is outside ${formatCidr(c)} (valid: 0–${cidrSize(c) - 1n})`);
  }
  return { family: c.family, value: c.network + offset };
}

/** ip − network; NetError if the address is not inside the block. */
export function offsetOf(c: Cidr, ip: IP): bigint {
  if (ip.family !== c.family || ip.value < c.network || ip.value > cidrLast(c)) {
    throw new NetError(`address ${formatIP(ip)} is not inside ${formatCidr(c)}`);
  }
  return ip.value - c.network;
}

/** Orders by family (IPv4 first), then network, then prefix (shorter first). */
export function compareCidr(a: Cidr, b: Cidr): number {
  if (a.family !== b.family) return a.family - b.family;
  if (a.network !== b.network) return a.network < b.network ? -1 : 1;
  return a.prefix - b.prefix;
}

/** The largest prefix whose block holds at least `addresses` addresses; NetError if none does. */
export function smallestPrefixFor(addresses: bigint, family: Family): number {
  const width = bits(family);
  if (addresses > maxValue(family) + 1n) {
    throw new NetError(`no ${familyName(family)} block holds ${addresses} addresses (at most 2^${width})`);
  }
  const hostBits = addresses <= 1n ? 0 : (addresses - 1n).toString(2).length;
  return width - hostBits;
}
