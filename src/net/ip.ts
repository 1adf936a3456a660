/**
 * IP addresses as BigInt values: parsing, formatting, family helpers. Pure, no I/O.
 */

export type Family = 4 | 6;

/** Every parse/validation error in `src/net`. The message is one line naming the input and the fix. */
export class NetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetError';
  }
}

export interface IP {
  readonly family: Family;
  readonly value: bigint;
}

/** Address width of a family: 32 or 128. */
export function bits(family: Family): 32 | 128 {
  if (family === 4) return 32;
  if (family === 6) return 128;
  throw new NetError(`invalid address family ${String(family)}: must be 4 or 6`);
}

/** The largest address value of a family (all ones). */
export function maxValue(family: Family): bigint {
  return (1n << BigInt(bits(family))) - 1n;
}

/** Human name of a family, e.g. "IPv4". */
export function familyName(family: Family): string {
  return family === 4 ? 'IPv4' : 'IPv6';
}

/** Builds an IP from a family and a value; NetError if the value does not fit the family. */
export function ipFrom(family: Family, value: bigint): IP {
  if (typeof value !== 'bigint' || value < 0n || value > maxValue(family)) {
    throw new NetError(`invalid ${familyName(family)} address value ${String(value)}: must be 0–${maxValue(family)}`);
  }
  return { family, value };
}

/** Parses an address; returns the IP, or a reason string explaining why it is invalid. */
export function parseIPReason(input: string): IP | string {
  if (typeof input !== 'string') return 'not a string';
  const fast = dottedQuadValue(input);
  if (fast !== -1) return { family: 4, value: BigInt(fast) };
  const s = input.trim();
  if (s === '') return 'empty address';
  if (s.includes('%')) return 'zone ids (%…) are not supported; remove the zone suffix';
  if (s.includes(':')) return parseV6(s);
  if (!/^[\d.]+$/.test(s)) return 'not an IPv4 or IPv6 address';
  const v = parseV4(s);
  return typeof v === 'string' ? v : { family: 4, value: v };
}

/**
 * The value of a dotted quad (four octets 0-255 of 1 to 3 ASCII digits, nothing else), read by char code; -1 for
 * anything else. Without `leadingZeros` an octet may not start with 0 unless it is 0 (a plain address: parseV4
 * reads, and explains, everything this refuses); with it, "010" is the octet 10, as clusters validated before
 * Kubernetes 1.33 may still store. Pod and Service addresses take this path.
 */
export function dottedQuadValue(s: string, leadingZeros = false): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (!leadingZeros && digits === 1 && octet === 0) return -1; // a leading zero
      octet = octet * 10 + (c - 0x30);
      if (++digits > 3 || octet > 255) return -1;
    } else if (c === 0x2e) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

function parseV4(s: string): bigint | string {
  const parts = s.split('.');
  if (parts.length !== 4) return 'an IPv4 address needs exactly 4 dot-separated octets';
  let value = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return `octet "${p}" is not a decimal number 0–255`;
    if (p.length > 1 && p[0] === '0') return `octet "${p}" has a leading zero (ambiguous octal); write ${Number(p)}`;
    const n = Number(p);
    if (n > 255) return `octet ${n} is out of range 0–255`;
    value = (value << 8n) | BigInt(n);
  }
  return value;
}

function parseV6(s: string): IP | string {
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return 'an IPv6 address may contain only hex digits, ":" and an embedded IPv4 suffix';
  const halves = s.split('::');
  if (halves.length > 2) return '"::" may appear only once';
  const groups: number[][] = [];
  for (let h = 0; h < halves.length; h++) {
    const half = halves[h];
    const out: number[] = [];
    if (half !== '') {
      const parts = half.split(':');
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        const last = i === parts.length - 1 && h === halves.length - 1;
        if (p.includes('.')) {
          if (!last) return 'an embedded IPv4 address must be at the end';
          const v4 = parseV4(p);
          if (typeof v4 === 'string') return `embedded IPv4 "${p}": ${v4}`;
          out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
        } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
          out.push(parseInt(p, 16));
        } else {
          return p === '' ? 'empty group (stray ":")' : `group "${p}" is not 1–4 hex digits`;
        }
      }
    }
    groups.push(out);
  }
  let all: number[];
  if (halves.length === 2) {
    const n = groups[0].length + groups[1].length;
    if (n > 7) return 'too many groups for "::" compression';
    all = [...groups[0], ...new Array<number>(8 - n).fill(0), ...groups[1]];
  } else {
    if (groups[0].length !== 8) return `an IPv6 address needs 8 groups (or "::"), got ${groups[0].length}`;
    all = groups[0];
  }
  let value = 0n;
  for (const g of all) value = (value << 16n) | BigInt(g);
  return { family: 6, value };
}

/**
 * Parses an IPv4 dotted quad (no leading zeros) or an IPv6 address (full, compressed, or with an
 * embedded IPv4 suffix such as "::ffff:1.2.3.4", which stays IPv6). Trims whitespace; rejects zone ids.
 */
export function parseIP(s: string): IP {
  const r = parseIPReason(s);
  if (typeof r === 'string') throw new NetError(`invalid IP address ${JSON.stringify(s)}: ${r}`);
  return r;
}

function formatV4(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((sh) => String((v >> sh) & 0xffn)).join('.');
}

/**
 * Formats an address. IPv6 follows RFC 5952: lowercase, no leading zeros, the longest run (first on a
 * tie) of two or more zero groups compressed to "::"; IPv4-mapped addresses (::ffff:0:0/96) use the
 * mixed notation "::ffff:1.2.3.4" (RFC 5952 §5).
 */
export function formatIP(ip: IP): string {
  const { family, value } = ipFrom(ip.family, ip.value);
  if (family === 4) return formatV4(value);
  if (value >> 32n === 0xffffn) return `::ffff:${formatV4(value & 0xffffffffn)}`;
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 1; // a single zero group is never compressed
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}
