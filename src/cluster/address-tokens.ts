/**
 * Address tokens in configuration text: an address, a CIDR or a reverse-DNS zone, read and written back the way it
 * was written. Used by every source of the references scan (./reference-sources.ts, ./references/). Pure.
 */
import { type Cidr, cidrFrom, formatCidr, formatIP, parseCidr, parseIP } from '../net/index.ts';

/** How an address token was written, so a replacement can be written the same way. */
export type TokenForm = 'ip' | 'cidr' | 'zone';

export interface AddressToken {
  /** The block it names (an address is a /32 or /128; host bits of a CIDR are masked off). */
  cidr: Cidr;
  form: TokenForm;
}

const V4_TOKEN = /(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:\/\d{1,3})?(?![\w]|\.\d)/g;
const V6_TOKEN = /(?<![\w:.])(?:[0-9A-Fa-f]{1,4}|:)[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:\/\d{1,3})?(?![\w:])/g;
const ZONE4 = /^((?:\d{1,3}\.){1,4})in-addr\.arpa\.?$/i;
const ZONE6 = /^((?:[0-9a-f]\.){1,32})ip6\.arpa\.?$/i;
const ZONE_TOKEN = /(?<![\w.-])(?:(?:\d{1,3}\.){1,4}in-addr|(?:[0-9A-Fa-f]\.){1,32}ip6)\.arpa\.?(?![\w-])/gi;

/**
 * Reads one address token: "10.96.0.10", "10.244.0.0/16" (host bits allowed, as Kubernetes allows them in
 * ipBlock.cidr), "fd00::/64", or a reverse-DNS zone ("96.10.in-addr.arpa", "…ip6.arpa"). Undefined otherwise.
 */
export function parseAddressToken(raw: string): AddressToken | undefined {
  const t = raw.trim();
  if (t === '') return undefined;
  const z4 = ZONE4.exec(t);
  if (z4) {
    const octets = z4[1]!.slice(0, -1).split('.').reverse();
    if (octets.some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith('0')))) return undefined;
    let value = 0n;
    for (let i = 0; i < 4; i++) value = (value << 8n) | BigInt(octets[i] ?? 0);
    return { cidr: cidrFrom(4, value, octets.length * 8), form: 'zone' };
  }
  const z6 = ZONE6.exec(t);
  if (z6) {
    const nibbles = z6[1]!.slice(0, -1).split('.').reverse();
    let value = 0n;
    for (let i = 0; i < 32; i++) value = (value << 4n) | BigInt(parseInt(nibbles[i] ?? '0', 16));
    return { cidr: cidrFrom(6, value, nibbles.length * 4), form: 'zone' };
  }
  try {
    if (t.includes('/')) return { cidr: parseCidr(t, { normalize: true }), form: 'cidr' };
    const ip = parseIP(t);
    return { cidr: cidrFrom(ip.family, ip.value, ip.family === 4 ? 32 : 128), form: 'ip' };
  } catch {
    return undefined;
  }
}

/** The reverse-DNS zone of a block, when it ends on an octet (IPv4) or nibble (IPv6) boundary. */
export function reverseZone(c: Cidr): string | undefined {
  if (c.family === 4) {
    if (c.prefix % 8 !== 0 || c.prefix === 0) return undefined;
    const octets: string[] = [];
    for (let i = 0; i < c.prefix / 8; i++) octets.push(String((c.network >> BigInt(24 - 8 * i)) & 0xffn));
    return `${octets.reverse().join('.')}.in-addr.arpa`;
  }
  if (c.prefix % 4 !== 0 || c.prefix === 0) return undefined;
  const nibbles: string[] = [];
  for (let i = 0; i < c.prefix / 4; i++) nibbles.push(((c.network >> BigInt(124 - 4 * i)) & 0xfn).toString(16));
  return `${nibbles.reverse().join('.')}.ip6.arpa`;
}

/** Writes a block the way `form` wrote the original: an address, a CIDR, or a reverse zone (CIDR when it has none). */
export function formatToken(c: Cidr, form: TokenForm): string {
  const full = c.family === 4 ? 32 : 128;
  if (form === 'ip' && c.prefix === full) return formatIP({ family: c.family, value: c.network });
  if (form === 'zone') return reverseZone(c) ?? formatCidr(c);
  return formatCidr(c);
}

/**
 * The addresses, CIDRs and reverse zones in a text, each once, in order of first appearance. Words that look
 * like addresses but are not (versions, times, MAC addresses) are left out by parsing each candidate.
 */
export function addressTokens(text: string): string[] {
  const found: Array<{ at: number; token: string }> = [];
  for (const re of [ZONE_TOKEN, V4_TOKEN, V6_TOKEN]) {
    for (const m of text.matchAll(re)) {
      let token = m[0];
      if (re === ZONE_TOKEN) token = token.replace(/\.$/, '');
      // "::" alone, or two groups without "::", is not an address (C++ scopes, times, ports).
      else if (re === V6_TOKEN && (/^:+$/.test(token) || (!token.includes('::') && token.split(':').length < 3))) continue;
      if (parseAddressToken(token) !== undefined) found.push({ at: m.index, token });
    }
  }
  // The IPv4-looking start of an in-addr.arpa name ("1.0.96.10.in-addr.arpa") is not an address.
  const zones = found.filter((f) => /arpa$/i.test(f.token));
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of found.sort((a, b) => a.at - b.at)) {
    if (zones.some((z) => z !== f && f.at >= z.at && f.at < z.at + z.token.length)) continue;
    if (seen.has(f.token)) continue;
    seen.add(f.token);
    out.push(f.token);
  }
  return out;
}

/** Splits a comma/space separated list of addresses into its entries. */
export function splitAddressList(s: string): string[] {
  return s.split(/[\s,]+/).filter((x) => x !== '');
}

