/**
 * Inclusive address ranges and set operations over CIDRs/ranges. Pure, no I/O.
 */
import { type Cidr, cidrLast } from './cidr.ts';
import { type Family, type IP, NetError, bits, familyName, formatIP, maxValue } from './ip.ts';

/** An inclusive range [start, end] of one family. */
export interface Range {
  readonly family: Family;
  readonly start: bigint;
  readonly end: bigint;
}

/** The range a CIDR covers. */
export function cidrToRange(c: Cidr): Range {
  return { family: c.family, start: c.network, end: cidrLast(c) };
}

/** Normalizes a Cidr, Range or IP to a Range. */
export function toRange(x: Cidr | Range | IP): Range {
  if ('prefix' in x) return cidrToRange(x);
  if ('value' in x) return { family: x.family, start: x.value, end: x.value };
  return x;
}

/** Formats a range as "start–end". */
export function formatRange(r: Range): string {
  return `${formatIP({ family: r.family, value: r.start })}–${formatIP({ family: r.family, value: r.end })}`;
}

/** The minimal list of aligned CIDRs covering exactly `r`, ascending. */
export function rangeToCidrs(r: Range): Cidr[] {
  const width = bits(r.family);
  if (r.start < 0n || r.end > maxValue(r.family) || r.start > r.end) {
    throw new NetError(`invalid ${familyName(r.family)} range ${r.start}–${r.end}: need 0 ≤ start ≤ end ≤ ${maxValue(r.family)}`);
  }
  const out: Cidr[] = [];
  let start = r.start;
  while (start <= r.end) {
    let size = start === 0n ? 1n << BigInt(width) : start & -start; // largest block aligned at start
    while (size > r.end - start + 1n) size >>= 1n;
    out.push({ family: r.family, network: start, prefix: width - (size.toString(2).length - 1) });
    start += size;
  }
  return out;
}

/** True iff `inner` lies entirely within `outer`; false across families. */
export function contains(outer: Cidr | Range, inner: Cidr | Range | IP): boolean {
  const o = toRange(outer);
  const i = toRange(inner);
  return o.family === i.family && o.start <= i.start && i.end <= o.end;
}

/** True iff the two share an address; false across families. */
export function overlaps(a: Cidr | Range, b: Cidr | Range): boolean {
  return overlap(a, b) !== undefined;
}

/** The intersection, or undefined if empty (or across families). */
export function overlap(a: Cidr | Range, b: Cidr | Range): Range | undefined {
  const x = toRange(a);
  const y = toRange(b);
  if (x.family !== y.family) return undefined;
  const start = x.start > y.start ? x.start : y.start;
  const end = x.end < y.end ? x.end : y.end;
  return start <= end ? { family: x.family, start, end } : undefined;
}

/**
 * Coalesces overlapping and adjacent ranges: IPv4 first, then IPv6, each sorted by start.
 */
export function merge(ranges: ReadonlyArray<Cidr | Range>): Range[] {
  const sorted = ranges.map(toRange).sort((a, b) =>
    a.family !== b.family ? a.family - b.family : a.start < b.start ? -1 : a.start > b.start ? 1 : 0,
  );
  const out: Range[] = [];
  for (const r of sorted) {
    const prev = out[out.length - 1];
    if (prev && prev.family === r.family && r.start <= prev.end + 1n) {
      if (r.end > prev.end) out[out.length - 1] = { family: prev.family, start: prev.start, end: r.end };
    } else {
      out.push({ family: r.family, start: r.start, end: r.end });
    }
  }
  return out;
}

/** `from` minus every range in `remove` (other families ignored): ascending, disjoint ranges. */
export function subtract(from: Cidr | Range, remove: ReadonlyArray<Cidr | Range>): Range[] {
  const f = toRange(from);
  const out: Range[] = [];
  let cursor = f.start;
  for (const r of merge(remove)) {
    if (r.family !== f.family || r.end < cursor) continue;
    if (r.start > f.end) break;
    if (r.start > cursor) out.push({ family: f.family, start: cursor, end: r.start - 1n });
    cursor = r.end + 1n;
    if (cursor > f.end) return out;
  }
  out.push({ family: f.family, start: cursor, end: f.end });
  return out;
}
