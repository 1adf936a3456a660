import { install } from '../../src/install.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  type Cidr,
  type Family,
  type IP,
  type Range,
  alignUp,
  bits,
  cidrLast,
  cidrSize,
  cidrToRange,
  compareCidr,
  contains,
  findFreeBlocks,
  formatCidr,
  formatIP,
  merge,
  nthAddress,
  offsetOf,
  overlap,
  overlaps,
  parseCidr,
  parseIP,
  rangeToCidrs,
  smallestPrefixFor,
  split,
  subnetCount,
  subtract,
  supernet,
  usable,
} from '../../src/net/index.ts';
import { parseIPReason } from '../../src/net/ip.ts';
import { ipProblem } from '../../src/cluster/validate.ts';

install();

const max = (f: Family): bigint => (1n << BigInt(bits(f))) - 1n;
const mask = (f: Family, v: bigint, p: number): bigint => v & ~((1n << BigInt(bits(f) - p)) - 1n);
const count = (rs: ReadonlyArray<Range>): bigint => rs.reduce((n, r) => n + r.end - r.start + 1n, 0n);

// IPv6 values built from groups biased towards 0 / ffff so that zero runs and "::ffff:" occur often.
const group = fc.oneof(fc.constant(0n), fc.constant(0xffffn), fc.bigInt({ min: 0n, max: 0xffffn }));
const v6value = fc.oneof(
  fc.bigInt({ min: 0n, max: max(6) }),
  fc.array(group, { minLength: 8, maxLength: 8 }).map((gs) => gs.reduce((v, g) => (v << 16n) | g, 0n)),
);
const ipArb = (f: Family): fc.Arbitrary<IP> =>
  (f === 4 ? fc.bigInt({ min: 0n, max: max(4) }) : v6value).map((value) => ({ family: f, value }));
const anyIP = fc.oneof(ipArb(4), ipArb(6));
const cidrArb = (f: Family): fc.Arbitrary<Cidr> =>
  fc.tuple(ipArb(f), fc.integer({ min: 0, max: bits(f) })).map(([ip, prefix]) => ({ family: f, network: mask(f, ip.value, prefix), prefix }));
const anyCidr = fc.oneof(cidrArb(4), cidrArb(6));

// Small IPv4 world (10.0.0.0/22, 1024 addresses) so that random blocks and ranges actually interact.
const BASE = parseIP('10.0.0.0').value;
const SMALL = 1024n;
const smallCidr = fc
  .tuple(fc.bigInt({ min: 0n, max: SMALL - 1n }), fc.integer({ min: 22, max: 32 }))
  .map(([off, prefix]): Cidr => ({ family: 4, network: mask(4, BASE + off, prefix), prefix }));
const smallRange = fc
  .tuple(fc.bigInt({ min: 0n, max: SMALL - 1n }), fc.bigInt({ min: 0n, max: SMALL - 1n }))
  .map(([a, b]): Range => ({ family: 4, start: BASE + (a < b ? a : b), end: BASE + (a < b ? b : a) }));
const smallItem: fc.Arbitrary<Cidr | Range> = fc.oneof(smallCidr, smallRange);
const covered = (items: ReadonlyArray<Cidr | Range>, v: bigint): boolean => items.some((x) => contains(x, { family: 4, value: v }));

// The WHATWG URL parser serializes IPv6 hosts per RFC 5952 (without the IPv4-mapped mixed form).
const urlFormat = (v: bigint): string => new URL(`http://[${formatIP({ family: 6, value: v })}]/`).hostname.slice(1, -1);

describe('net properties', () => {
  it('parseIP ∘ formatIP round-trips (both families)', () => {
    fc.assert(
      fc.property(anyIP, (ip) => {
        const s = formatIP(ip);
        assert.deepEqual(parseIP(s), ip);
        assert.equal(formatIP(parseIP(`  ${s.toUpperCase()} `)), s);
      }),
    );
  });

  it('IPv6 formatting agrees with the WHATWG URL serializer (RFC 5952)', () => {
    fc.assert(
      fc.property(v6value, (v) => {
        fc.pre(v >> 32n !== 0xffffn); // mixed notation is ours only
        assert.equal(formatIP({ family: 6, value: v }), urlFormat(v));
      }),
    );
  });

  it('parseCidr ∘ formatCidr round-trips; normalize masks host bits', () => {
    fc.assert(
      fc.property(anyCidr, anyIP, (c, ip) => {
        assert.deepEqual(parseCidr(formatCidr(c)), c);
        assert.deepEqual(parseCidr(formatCidr(c), { family: c.family }), c);
        const p = Math.min(c.prefix, bits(ip.family));
        const n = parseCidr(`${formatIP(ip)}/${p}`, { normalize: true });
        assert.deepEqual(n, { family: ip.family, network: mask(ip.family, ip.value, p), prefix: p });
      }),
    );
  });

  it('contains / overlaps / overlap are symmetric and consistent with ranges', () => {
    fc.assert(
      fc.property(smallItem, smallItem, (a, b) => {
        const ov = overlap(a, b);
        assert.equal(overlaps(a, b), overlaps(b, a));
        assert.deepEqual(ov, overlap(b, a));
        assert.equal(overlaps(a, b), ov !== undefined);
        if (ov) assert.ok(contains(a, ov) && contains(b, ov));
        if (contains(a, b)) assert.deepEqual(ov, 'prefix' in b ? cidrToRange(b) : b);
        const ra = 'prefix' in a ? cidrToRange(a) : a;
        const rb = 'prefix' in b ? cidrToRange(b) : b;
        assert.equal(overlaps(a, b), ra.start <= rb.end && rb.start <= ra.end);
        assert.equal(contains(a, b), ra.start <= rb.start && rb.end <= ra.end);
        if ('prefix' in a && 'prefix' in b) assert.equal(overlaps(a, b), contains(a, b) || contains(b, a)); // CIDRs nest
      }),
    );
    fc.assert(
      fc.property(cidrArb(4), cidrArb(6), (a, b) => {
        assert.equal(overlaps(a, b), false);
        assert.equal(contains(a, b) || contains(b, a), false);
        assert.equal(overlap(a, b), undefined);
      }),
    );
  });

  it('subtract: ascending, disjoint from removed, and result + (from ∩ removed) = from', () => {
    fc.assert(
      fc.property(smallItem, fc.array(fc.oneof(smallItem, cidrArb(6)), { maxLength: 6 }), (from, remove) => {
        const out = subtract(from, remove);
        for (let i = 0; i < out.length; i++) {
          assert.ok(out[i].start <= out[i].end && contains(from, out[i]));
          if (i > 0) assert.ok(out[i - 1].end + 1n < out[i].start);
          for (const r of remove) assert.equal(overlaps(out[i], r), false);
        }
        const removed = merge(remove.map((r) => overlap(from, r)).filter((r): r is Range => r !== undefined));
        const f = 'prefix' in from ? cidrToRange(from) : from;
        assert.equal(count(out) + count(removed), f.end - f.start + 1n);
      }),
    );
  });

  it('merge: sorted, coalesced, idempotent, and covers exactly the same addresses', () => {
    fc.assert(
      fc.property(fc.array(smallItem, { maxLength: 8 }), (items) => {
        const m = merge(items);
        assert.deepEqual(merge(m), m);
        for (let i = 1; i < m.length; i++) assert.ok(m[i - 1].end + 1n < m[i].start);
        for (let v = BASE - 1n; v <= BASE + SMALL; v++) assert.equal(covered(m, v), covered(items, v));
      }),
      { numRuns: 60 },
    );
    fc.assert(
      fc.property(fc.array(anyCidr, { maxLength: 6 }), (cs) => {
        const m = merge(cs);
        for (let i = 1; i < m.length; i++) assert.ok(m[i - 1].family < m[i].family || m[i - 1].end + 1n < m[i].start);
        assert.deepEqual(merge([...cs].reverse()), m);
        for (const c of cs) assert.ok(m.some((r) => contains(r, c)));
      }),
    );
  });

  it('rangeToCidrs: exact, aligned, minimal cover', () => {
    const rangeArb = fc.oneof(fc.constant<Family>(4), fc.constant<Family>(6)).chain((f) =>
      fc.tuple(ipArb(f), ipArb(f)).map(([a, b]): Range => ({ family: f, start: a.value < b.value ? a.value : b.value, end: a.value < b.value ? b.value : a.value })),
    );
    fc.assert(
      fc.property(fc.oneof(rangeArb, smallRange), (r) => {
        const cs = rangeToCidrs(r);
        assert.equal(cs[0].network, r.start);
        assert.equal(cidrLast(cs[cs.length - 1]), r.end);
        for (let i = 0; i < cs.length; i++) {
          const c = cs[i];
          assert.equal(c.network % cidrSize(c), 0n);
          if (i > 0) assert.equal(c.network, cidrLast(cs[i - 1]) + 1n);
          if (c.prefix > 0) assert.equal(contains(r, supernet(c, c.prefix - 1)), false, `${formatCidr(c)} is not maximal`);
        }
      }),
    );
  });

  it('split covers exactly; limit truncates; subnetCount agrees', () => {
    fc.assert(
      fc.property(anyCidr, fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 300 }), (c, extra, limit) => {
        const np = Math.min(c.prefix + extra, bits(c.family));
        const subs = split(c, np);
        assert.equal(BigInt(subs.length), subnetCount(c, np));
        assert.deepEqual(merge(subs), [cidrToRange(c)]);
        for (let i = 0; i < subs.length; i++) {
          assert.equal(subs[i].prefix, np);
          if (i > 0) assert.equal(subs[i].network, cidrLast(subs[i - 1]) + 1n);
        }
        assert.deepEqual(split(c, np, limit), subs.slice(0, limit));
      }),
    );
  });

  it('address arithmetic: usable, nthAddress/offsetOf, alignUp, supernet, smallestPrefixFor, compareCidr', () => {
    fc.assert(
      fc.property(anyCidr, fc.bigInt({ min: 0n, max: max(6) }), fc.integer({ min: 0, max: 128 }), (c, r, p) => {
        const u = usable(c);
        assert.equal(u.count, u.last - u.first + 1n);
        assert.ok(contains(c, { family: c.family, value: u.first }) && contains(c, { family: c.family, value: u.last }));
        const off = r % cidrSize(c);
        const ip = nthAddress(c, off);
        assert.equal(offsetOf(c, ip), off);
        assert.deepEqual(parseIP(formatIP(ip)), ip);
        const ap = p % (bits(c.family) + 1);
        const v = r & max(c.family);
        const a = alignUp(v, ap, c.family);
        const size = 1n << BigInt(bits(c.family) - ap);
        assert.ok(a >= v && a - v < size && a % size === 0n);
        const sp = Math.min(ap, c.prefix);
        const s = supernet(c, sp);
        assert.ok(contains(s, c) && s.prefix === sp);
        const n = r % (max(c.family) + 2n);
        const sm = smallestPrefixFor(n, c.family);
        const smSize = 1n << BigInt(bits(c.family) - sm);
        assert.ok(smSize >= n && (sm === bits(c.family) || smSize / 2n < n));
      }),
    );
    fc.assert(
      fc.property(anyCidr, anyCidr, (a, b) => {
        assert.equal(Math.sign(compareCidr(a, b)) + Math.sign(compareCidr(b, a)), 0); // antisymmetric (avoids 0 vs -0)
        assert.equal(compareCidr(a, b) === 0, formatCidr(a) === formatCidr(b));
      }),
    );
  });

  // Brute force reference: each space in order, aligned candidates ascending, skip used/overlapping.
  function bruteForce(prefix: number, within: Cidr[], avoid: Array<Cidr | Range>, limit: number): Cidr[] {
    const out: Cidr[] = [];
    for (const w of within) {
      if (prefix < w.prefix) continue;
      const size = 1n << BigInt(bits(w.family) - prefix);
      for (let n = w.network; n <= cidrLast(w) && out.length < limit; n += size) {
        const c: Cidr = { family: w.family, network: n, prefix };
        if (![...avoid, ...out].some((x) => overlaps(x, c))) out.push(c);
      }
    }
    return out;
  }

  for (const f of [4, 6] as const) {
    it(`findFreeBlocks matches a brute force (IPv${f}, /20-sized world)`, () => {
      const base = f === 4 ? parseIP('10.0.0.0').value : parseIP('fd00::').value;
      const rel = (p: number) => bits(f) - 32 + p; // map an IPv4 prefix to the same-sized IPv6 prefix
      const world = 1n << BigInt(bits(f) - rel(20));
      const item = fc.oneof(
        fc.tuple(fc.bigInt({ min: 0n, max: world * 2n - 1n }), fc.integer({ min: 19, max: 32 })).map(
          ([o, p]): Cidr => ({ family: f, network: mask(f, base + o, rel(p)), prefix: rel(p) }),
        ),
        fc.tuple(fc.bigInt({ min: 0n, max: world * 2n - 1n }), fc.bigInt({ min: 0n, max: 600n })).map(
          ([o, len]): Range => ({ family: f, start: base + o, end: base + o + len }),
        ),
      );
      const space = fc.tuple(fc.bigInt({ min: 0n, max: world - 1n }), fc.integer({ min: 20, max: 26 })).map(
        ([o, p]): Cidr => ({ family: f, network: mask(f, base + o, rel(p)), prefix: rel(p) }),
      );
      fc.assert(
        fc.property(
          fc.integer({ min: 24, max: 28 }),
          fc.array(space, { minLength: 1, maxLength: 3 }),
          fc.array(item, { maxLength: 12 }),
          fc.integer({ min: 1, max: 6 }),
          (p, within, avoid, limit) => {
            const prefix = rel(p);
            const got = findFreeBlocks({ prefix, within, avoid, limit });
            assert.deepEqual(got.map(formatCidr), bruteForce(prefix, within, avoid, limit).map(formatCidr));
            for (const c of got) {
              assert.equal(c.prefix, prefix);
              assert.equal(c.network % cidrSize(c), 0n);
              assert.ok(within.some((w) => contains(w, c)));
              assert.ok(!avoid.some((a) => overlaps(a, c)));
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  }
});

describe('dotted quads (read by char code on the hot paths)', () => {
  // Text made of digits and dots (and a space now and then), biased towards four groups of one to four digits.
  const digits = fc.stringMatching(/^\d{0,4}$/);
  const dotted = fc.oneof(
    fc.array(digits, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.')),
    fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 4, maxLength: 4 }).map((o) => o.join('.')),
    fc.stringMatching(/^[ \d.]{0,18}$/),
  );

  /** The value of a canonical dotted quad (no leading zero, octets 0-255) after trimming, else undefined. */
  const canonical = (s: string): bigint | undefined => {
    const m = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.exec(s.trim());
    if (!m || m.slice(1).some((o) => Number(o) > 255)) return undefined;
    return m.slice(1).reduce((v, o) => (v << 8n) | BigInt(o), 0n);
  };

  it('parseIPReason reads a canonical dotted quad as its value and gives a reason for any other', () => {
    fc.assert(
      fc.property(dotted, (s) => {
        const want = canonical(s);
        const got = parseIPReason(s);
        if (want === undefined) assert.equal(typeof got, 'string', `${JSON.stringify(s)} read as ${JSON.stringify(got, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
        else assert.deepEqual(got, { family: 4, value: want });
      }),
      { numRuns: 3000 },
    );
  });

  it('ipProblem accepts exactly the IPv4 addresses with leading zeros older clusters stored, and what parseIP reads', () => {
    const legacy = (s: string): boolean => {
      const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
      return !!m && m.slice(1).every((o) => Number(o) <= 255);
    };
    fc.assert(
      fc.property(dotted, (s) => {
        assert.equal(ipProblem(s) === undefined, legacy(s) || canonical(s) !== undefined, JSON.stringify(s));
      }),
      { numRuns: 3000 },
    );
  });
});
