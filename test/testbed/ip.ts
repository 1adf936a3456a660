// Small IPv4/IPv6 CIDR helpers for the testbed (kept separate from src/ on purpose: the testbed must
// not depend on the code it tests).

export interface Cidr {
  family: 4 | 6;
  base: bigint;
  prefix: number;
  bits: number;
}

function parseIPv4(s: string): bigint | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let v = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

function parseIPv6(s: string): bigint | undefined {
  if (!s.includes(':')) return undefined;
  const [head, tail, extra] = s.split('::');
  if (extra !== undefined) return undefined;
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const missing = 8 - h.length - t.length;
  if (tail === undefined ? h.length !== 8 : missing < 1) return undefined;
  const groups = [...h, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...t];
  let v = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v;
}

export function parseIP(s: string): { family: 4 | 6; value: bigint } {
  const v4 = parseIPv4(s);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = parseIPv6(s);
  if (v6 !== undefined) return { family: 6, value: v6 };
  throw new Error(`not an IP address: ${s}`);
}

export function formatIP(family: 4 | 6, v: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((sh) => String((v >> sh) & 255n)).join('.');
  }
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((v >> BigInt(i * 16)) & 0xffffn).toString(16));
  // compress the longest run of zero groups
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

export function parseCIDR(s: string): Cidr {
  const [addr, pfx] = s.split('/');
  if (addr === undefined || pfx === undefined || !/^\d{1,3}$/.test(pfx)) throw new Error(`not a CIDR: ${s}`);
  const { family, value } = parseIP(addr);
  const bits = family === 4 ? 32 : 128;
  const prefix = Number(pfx);
  if (prefix > bits) throw new Error(`not a CIDR: ${s}`);
  const hostBits = BigInt(bits - prefix);
  const base = (value >> hostBits) << hostBits;
  return { family, base, prefix, bits };
}

export function formatCIDR(c: Cidr): string {
  return `${formatIP(c.family, c.base)}/${c.prefix}`;
}

/** The n-th address of the range (0 = network address). */
export function nthIP(cidr: string, n: number): string {
  const c = parseCIDR(cidr);
  const size = 1n << BigInt(c.bits - c.prefix);
  if (BigInt(n) >= size || n < 0) throw new Error(`${cidr} has no address #${n}`);
  return formatIP(c.family, c.base + BigInt(n));
}

export function cidrContains(cidr: string, ip: string): boolean {
  const c = parseCIDR(cidr);
  const a = parseIP(ip);
  if (a.family !== c.family) return false;
  const hostBits = BigInt(c.bits - c.prefix);
  return a.value >> hostBits === c.base >> hostBits;
}

export function cidrFamily(cidr: string): 4 | 6 {
  return parseCIDR(cidr).family;
}
