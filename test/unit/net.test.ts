import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  type Cidr,
  NetError,
  alignUp,
  bits,
  cidrFirst,
  cidrFrom,
  cidrLast,
  cidrSize,
  cidrToRange,
  compareCidr,
  contains,
  findFreeBlock,
  findFreeBlocks,
  formatCidr,
  formatIP,
  ipFrom,
  isCidrString,
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
  tryParseCidr,
  usable,
} from '../../src/net/index.ts';

const C = (s: string): Cidr => parseCidr(s);
const F = (cs: ReadonlyArray<Cidr>): string[] => cs.map(formatCidr);
const ip = (s: string): bigint => parseIP(s).value;
const R = (a: string, b: string) => ({ family: parseIP(a).family, start: ip(a), end: ip(b) });
const fmtR = (rs: ReadonlyArray<{ family: 4 | 6; start: bigint; end: bigint }>) =>
  rs.map((r) => `${formatIP({ family: r.family, value: r.start })}-${formatIP({ family: r.family, value: r.end })}`);
const MAX6 = (1n << 128n) - 1n;

describe('parseIP / formatIP', () => {
  it('parses IPv4', () => {
    assert.deepEqual(parseIP('10.233.0.1'), { family: 4, value: 0x0ae90001n });
    assert.deepEqual(parseIP('  0.0.0.0 '), { family: 4, value: 0n });
    assert.deepEqual(parseIP('255.255.255.255'), { family: 4, value: 0xffffffffn });
  });
  it('parses IPv6 forms', () => {
    assert.deepEqual(parseIP('::'), { family: 6, value: 0n });
    assert.equal(ip('::1'), 1n);
    assert.equal(ip('2001:DB8::1'), 0x20010db8000000000000000000000001n);
    assert.equal(ip('2001:0db8:0000:0000:0000:0000:0000:0001'), ip('2001:db8::1'));
    assert.equal(ip('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), MAX6);
    assert.equal(ip('fe80::'), 0xfe80n << 112n);
    assert.equal(ip('1::'), 1n << 112n);
    assert.equal(ip('1:2:3:4:5:6:7::'), ip('1:2:3:4:5:6:7:0'));
  });
  it('parses IPv4-mapped and embedded IPv4 as IPv6', () => {
    assert.deepEqual(parseIP('::ffff:1.2.3.4'), { family: 6, value: 0xffff01020304n });
    assert.equal(ip('::ffff:0102:0304'), 0xffff01020304n);
    assert.equal(ip('64:ff9b::10.0.0.1'), (0x64ff9bn << 96n) | 0x0a000001n);
  });
  it('rejects bad addresses', () => {
    for (const s of ['010.0.0.1', '1.2.3', '1.2.3.4.5', '256.0.0.1', '1.2.3.-4', '', ':::', '1::2::3', '12345::', '::g', 'fe80::1%eth0',
      '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '1:2:3:4:5:6:7:8::', '1.2.3.4::', '::1.2.3', ':1::', '1:', 'x']) {
      assert.throws(() => parseIP(s), (e: unknown) => e instanceof NetError && e.message.includes(JSON.stringify(s)), s);
    }
  });
  it('formats per RFC 5952', () => {
    const cases: Array<[string, string]> = [
      ['2001:0db8:0:0:0:0:0:1', '2001:db8::1'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single 0 group is not compressed
      ['0:0:0:0:0:0:0:1', '::1'],
      ['0:0:0:0:0:0:0:0', '::'],
      ['fe80:0:0:0:0:0:0:0', 'fe80::'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // tie → first run
      ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'], // longest run wins
      ['2001:DB8:AAAA:0:0:0:0:0', '2001:db8:aaaa::'],
      ['1:0:0:0:0:0:0:0', '1::'],
      ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
      ['0:0:0:0:0:ffff:102:304', '::ffff:1.2.3.4'],
      ['::ffff:0:0', '::ffff:0.0.0.0'],
      ['::1:0:0', '::1:0:0'],
    ];
    for (const [input, want] of cases) assert.equal(formatIP(parseIP(input)), want, input);
  });
  it('ipFrom validates', () => {
    assert.deepEqual(ipFrom(4, 0xffffffffn), { family: 4, value: 0xffffffffn });
    assert.equal(formatIP(ipFrom(6, MAX6)), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
    assert.throws(() => ipFrom(4, 1n << 32n), NetError);
    assert.throws(() => ipFrom(6, -1n), NetError);
  });
  it('bits', () => {
    assert.equal(bits(4), 32);
    assert.equal(bits(6), 128);
  });
});

describe('parseCidr / formatCidr', () => {
  it('parses and formats', () => {
    assert.deepEqual(C('10.0.0.0/8'), { family: 4, network: 0x0a000000n, prefix: 8 });
    assert.deepEqual(C(' 0.0.0.0/0 '), { family: 4, network: 0n, prefix: 0 });
    assert.deepEqual(C('::/0'), { family: 6, network: 0n, prefix: 0 });
    assert.equal(formatCidr(C('FD00:0::/64')), 'fd00::/64');
    assert.equal(formatCidr(C('::ffff:0:0/96')), '::ffff:0.0.0.0/96');
    assert.equal(formatCidr(C('255.255.255.255/32')), '255.255.255.255/32');
    assert.equal(formatCidr(C('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128')), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128');
  });
  it('host bits: error with a suggestion, or masked with normalize', () => {
    assert.throws(() => C('10.0.0.1/8'), { name: 'NetError', message: 'invalid CIDR "10.0.0.1/8": host bits are set (did you mean 10.0.0.0/8?)' });
    assert.deepEqual(parseCidr('10.0.0.1/8', { normalize: true }), C('10.0.0.0/8'));
    assert.equal(formatCidr(parseCidr('2001:db8::1/32', { normalize: true })), '2001:db8::/32');
  });
  it('family option', () => {
    assert.throws(() => parseCidr('10.0.0.0/8', { family: 6 }), { message: '"10.0.0.0/8" is IPv4 but an IPv6 range was expected' });
    assert.throws(() => parseCidr('fd00::/8', { family: 4 }), { message: '"fd00::/8" is IPv6 but an IPv4 range was expected' });
    assert.equal(parseCidr('fd00::/8', { family: 6 }).family, 6);
  });
  it('prefix range messages', () => {
    assert.throws(() => C('10.0.0.0/33'), { message: 'invalid CIDR "10.0.0.0/33": prefix must be 0–32 for IPv4' });
    assert.throws(() => C('fd00::/129'), { message: 'invalid CIDR "fd00::/129": prefix must be 0–128 for IPv6' });
    assert.throws(() => C('10.0.0.0'), /add \/32/);
    assert.throws(() => C('fd00::1'), /add \/128/);
  });
  it('tryParseCidr / isCidrString', () => {
    assert.deepEqual(tryParseCidr('10.0.0.0/8'), C('10.0.0.0/8'));
    assert.equal(tryParseCidr('10.0.0.1/8'), undefined);
    assert.equal(tryParseCidr('nope'), undefined);
    assert.equal(isCidrString('fd00::/64'), true);
    assert.equal(isCidrString('10.0.0.0'), false);
    assert.equal(isCidrString('10.0.0.1/8'), false);
  });
  it('cidrFrom', () => {
    assert.deepEqual(cidrFrom(4, 0x0a000000n, 8), C('10.0.0.0/8'));
    assert.throws(() => cidrFrom(4, 0x0a000001n, 8), /did you mean 10.0.0.0\/8/);
    assert.deepEqual(cidrFrom(4, 0x0a000001n, 8, { normalize: true }), C('10.0.0.0/8'));
    assert.throws(() => cidrFrom(4, 0n, 33), NetError);
  });
});

describe('sizes and bounds', () => {
  it('cidrSize / first / last / toRange', () => {
    assert.equal(cidrSize(C('0.0.0.0/0')), 1n << 32n);
    assert.equal(cidrSize(C('::/0')), 1n << 128n);
    assert.equal(cidrSize(C('1.2.3.4/32')), 1n);
    assert.equal(cidrSize(C('::1/128')), 1n);
    assert.equal(cidrFirst(C('10.233.64.0/18')), ip('10.233.64.0'));
    assert.equal(cidrLast(C('10.233.64.0/18')), ip('10.233.127.255'));
    assert.equal(cidrLast(C('::/0')), MAX6);
    assert.equal(cidrLast(C('0.0.0.0/0')), 0xffffffffn);
    assert.deepEqual(cidrToRange(C('::ffff:0:0/96')), R('::ffff:0.0.0.0', '::ffff:255.255.255.255'));
  });
  it('usable: seed figures and edge prefixes', () => {
    const u = usable(C('10.233.0.0/18'));
    assert.equal(formatIP(ipFrom(4, u.first)), '10.233.0.1');
    assert.equal(formatIP(ipFrom(4, u.last)), '10.233.63.254');
    assert.equal(u.count, 16382n);
    assert.equal(u.broadcast, ip('10.233.63.255'));
    assert.deepEqual(usable(C('10.0.0.0/30')), { first: ip('10.0.0.1'), last: ip('10.0.0.2'), count: 2n, broadcast: ip('10.0.0.3') });
    assert.deepEqual(usable(C('10.0.0.0/31')), { first: ip('10.0.0.0'), last: ip('10.0.0.1'), count: 2n });
    assert.deepEqual(usable(C('10.0.0.7/32')), { first: ip('10.0.0.7'), last: ip('10.0.0.7'), count: 1n });
    assert.deepEqual(usable(C('0.0.0.0/0')), { first: 1n, last: 0xfffffffen, count: (1n << 32n) - 2n, broadcast: 0xffffffffn });
    assert.deepEqual(usable(C('fd00::/64')), { first: ip('fd00::1'), last: ip('fd00::ffff:ffff:ffff:ffff'), count: (1n << 64n) - 1n });
    assert.deepEqual(usable(C('fd00::/126')), { first: ip('fd00::1'), last: ip('fd00::3'), count: 3n });
    assert.deepEqual(usable(C('fd00::/127')), { first: ip('fd00::'), last: ip('fd00::1'), count: 2n });
    assert.deepEqual(usable(C('::1/128')), { first: 1n, last: 1n, count: 1n });
    assert.equal(usable(C('::/0')).count, MAX6);
  });
  it('nthAddress / offsetOf', () => {
    const c = C('10.233.0.0/18');
    assert.equal(formatIP(nthAddress(c, 10n)), '10.233.0.10');
    assert.equal(formatIP(nthAddress(c, 16383n)), '10.233.63.255');
    assert.throws(() => nthAddress(c, 16384n), NetError);
    assert.throws(() => nthAddress(c, -1n), NetError);
    assert.equal(offsetOf(c, parseIP('10.233.1.0')), 256n);
    assert.throws(() => offsetOf(c, parseIP('10.233.64.0')), /not inside 10.233.0.0\/18/);
    assert.throws(() => offsetOf(C('::/0'), parseIP('1.2.3.4')), NetError);
    assert.equal(formatIP(nthAddress(C('::/0'), MAX6)), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
  });
  it('smallestPrefixFor', () => {
    assert.equal(smallestPrefixFor(0n, 4), 32);
    assert.equal(smallestPrefixFor(1n, 4), 32);
    assert.equal(smallestPrefixFor(2n, 4), 31);
    assert.equal(smallestPrefixFor(3n, 4), 30);
    assert.equal(smallestPrefixFor(256n, 4), 24);
    assert.equal(smallestPrefixFor(257n, 4), 23);
    assert.equal(smallestPrefixFor(16382n, 4), 18);
    assert.equal(smallestPrefixFor(1n << 32n, 4), 0);
    assert.throws(() => smallestPrefixFor((1n << 32n) + 1n, 4), NetError);
    assert.equal(smallestPrefixFor(1n << 64n, 6), 64);
    assert.equal(smallestPrefixFor(1n << 128n, 6), 0);
  });
  it('compareCidr', () => {
    const list = ['fd00::/8', '10.0.0.0/16', '10.0.0.0/8', '9.0.0.0/8', '::/0'].map(C).sort(compareCidr);
    assert.deepEqual(F(list), ['9.0.0.0/8', '10.0.0.0/8', '10.0.0.0/16', '::/0', 'fd00::/8']);
    assert.equal(compareCidr(C('10.0.0.0/8'), C('10.0.0.0/8')), 0);
  });
});

describe('subnetting', () => {
  it('split: seed figure and edges', () => {
    const subs = split(C('10.233.64.0/18'), 24);
    assert.equal(subs.length, 64);
    assert.equal(formatCidr(subs[0]), '10.233.64.0/24');
    assert.equal(formatCidr(subs[63]), '10.233.127.0/24');
    assert.deepEqual(F(split(C('10.0.0.0/8'), 8)), ['10.0.0.0/8']);
    assert.deepEqual(F(split(C('fd00::/48'), 64, 3)), ['fd00::/64', 'fd00:0:0:1::/64', 'fd00:0:0:2::/64']);
    assert.deepEqual(F(split(C('::/0'), 1)), ['::/1', '8000::/1']);
    assert.equal(split(C('::/0'), 128, 0).length, 0);
    assert.equal(split(C('10.0.0.0/30'), 32, 100).length, 4);
    assert.throws(() => split(C('10.0.0.0/16'), 8), /new prefix must be ≥ 16/);
    assert.throws(() => split(C('10.0.0.0/16'), 33), NetError);
    assert.throws(() => split(C('::/0'), 64), /pass a limit/);
  });
  it('subnetCount', () => {
    assert.equal(subnetCount(C('10.233.64.0/18'), 24), 64n);
    assert.equal(subnetCount(C('::/0'), 128), 1n << 128n);
    assert.throws(() => subnetCount(C('10.0.0.0/16'), 15), NetError);
  });
  it('supernet', () => {
    assert.equal(formatCidr(supernet(C('10.233.64.0/24'), 18)), '10.233.64.0/18');
    assert.equal(formatCidr(supernet(C('10.233.64.0/24'), 0)), '0.0.0.0/0');
    assert.equal(formatCidr(supernet(C('fd00:1:2:3::/64'), 48)), 'fd00:1:2::/48');
    assert.throws(() => supernet(C('10.0.0.0/8'), 9), NetError);
  });
  it('alignUp', () => {
    assert.equal(alignUp(ip('10.0.0.1'), 24, 4), ip('10.0.1.0'));
    assert.equal(alignUp(ip('10.0.1.0'), 24, 4), ip('10.0.1.0'));
    assert.equal(alignUp(0n, 0, 4), 0n);
    assert.equal(alignUp(1n, 0, 4), 1n << 32n); // past the end: no such block
    assert.equal(alignUp(1n, 32, 4), 1n);
    assert.equal(alignUp(ip('fd00::1'), 64, 6), ip('fd00:0:0:1::'));
    assert.throws(() => alignUp(0n, 33, 4), NetError);
  });
});

describe('ranges and set operations', () => {
  it('rangeToCidrs', () => {
    assert.deepEqual(F(rangeToCidrs(R('10.0.0.0', '10.0.0.255'))), ['10.0.0.0/24']);
    assert.deepEqual(F(rangeToCidrs(R('10.0.0.1', '10.0.0.6'))), ['10.0.0.1/32', '10.0.0.2/31', '10.0.0.4/31', '10.0.0.6/32']);
    assert.deepEqual(F(rangeToCidrs(R('0.0.0.0', '255.255.255.255'))), ['0.0.0.0/0']);
    assert.deepEqual(F(rangeToCidrs(R('::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'))), ['::/0']);
    assert.deepEqual(F(rangeToCidrs(R('::1', '::1'))), ['::1/128']);
    assert.deepEqual(F(rangeToCidrs(R('255.255.255.254', '255.255.255.255'))), ['255.255.255.254/31']);
    assert.equal(rangeToCidrs(R('0.0.0.1', '255.255.255.254')).length, 62);
    assert.throws(() => rangeToCidrs({ family: 4, start: 5n, end: 4n }), NetError);
    assert.throws(() => rangeToCidrs({ family: 4, start: 0n, end: 1n << 32n }), NetError);
  });
  it('contains', () => {
    assert.equal(contains(C('10.0.0.0/8'), C('10.1.0.0/16')), true);
    assert.equal(contains(C('10.1.0.0/16'), C('10.0.0.0/8')), false);
    assert.equal(contains(C('10.0.0.0/8'), C('10.0.0.0/8')), true);
    assert.equal(contains(C('10.0.0.0/8'), parseIP('10.255.255.255')), true);
    assert.equal(contains(C('10.0.0.0/8'), parseIP('11.0.0.0')), false);
    assert.equal(contains(C('0.0.0.0/0'), parseIP('::')), false); // across families
    assert.equal(contains(C('::/0'), parseIP('1.2.3.4')), false);
    assert.equal(contains(C('::/0'), parseIP('::ffff:1.2.3.4')), true);
    assert.equal(contains(C('::ffff:0:0/96'), C('::ffff:10.0.0.0/104')), true);
    assert.equal(contains(R('10.0.0.5', '10.0.0.9'), C('10.0.0.8/31')), true);
  });
  it('overlaps / overlap', () => {
    assert.equal(overlaps(C('10.0.0.0/8'), C('10.200.0.0/16')), true);
    assert.equal(overlaps(C('10.0.0.0/16'), C('10.1.0.0/16')), false);
    assert.equal(overlaps(C('0.0.0.0/0'), C('::/0')), false);
    assert.deepEqual(overlap(C('10.0.0.0/8'), C('10.200.0.0/16')), cidrToRange(C('10.200.0.0/16')));
    assert.deepEqual(overlap(R('10.0.0.0', '10.0.0.10'), R('10.0.0.5', '10.0.0.20')), R('10.0.0.5', '10.0.0.10'));
    assert.equal(overlap(C('0.0.0.0/0'), C('::/0')), undefined);
    assert.equal(overlap(C('10.0.0.0/24'), C('10.0.1.0/24')), undefined);
  });
  it('subtract', () => {
    assert.deepEqual(fmtR(subtract(C('10.0.0.0/24'), [C('10.0.0.64/26')])), ['10.0.0.0-10.0.0.63', '10.0.0.128-10.0.0.255']);
    assert.deepEqual(subtract(C('10.0.0.0/24'), [C('10.0.0.0/8')]), []);
    assert.deepEqual(subtract(C('10.0.0.0/24'), []), [cidrToRange(C('10.0.0.0/24'))]);
    assert.deepEqual(subtract(C('10.0.0.0/24'), [C('::/0')]), [cidrToRange(C('10.0.0.0/24'))]);
    assert.deepEqual(
      fmtR(subtract(C('0.0.0.0/0'), [C('10.0.0.0/8'), C('0.0.0.0/8'), C('255.0.0.0/8'), C('11.0.0.0/8')])),
      ['1.0.0.0-9.255.255.255', '12.0.0.0-254.255.255.255'],
    );
    assert.deepEqual(fmtR(subtract(C('::/0'), [C('::/1')])), ['8000::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']);
  });
  it('merge', () => {
    assert.deepEqual(
      fmtR(merge([C('fd00::/64'), C('10.0.1.0/24'), C('10.0.0.0/24'), C('10.0.3.0/24'), C('fd00:0:0:1::/64'), R('10.0.2.5', '10.0.2.9')])),
      ['10.0.0.0-10.0.1.255', '10.0.2.5-10.0.2.9', '10.0.3.0-10.0.3.255', 'fd00::-fd00::1:ffff:ffff:ffff:ffff'],
    );
    assert.deepEqual(fmtR(merge([C('10.0.0.0/8'), C('10.1.0.0/16')])), ['10.0.0.0-10.255.255.255']);
    assert.deepEqual(merge([]), []);
  });
});

describe('findFreeBlocks', () => {
  it('first free aligned block, skipping existing allocations', () => {
    const within = [C('10.96.0.0/12')];
    const avoid = [C('10.96.0.0/16'), C('10.97.0.0/24')];
    assert.deepEqual(F(findFreeBlocks({ prefix: 16, within, avoid })), ['10.98.0.0/16']);
    assert.deepEqual(F(findFreeBlocks({ prefix: 24, within, avoid, limit: 2 })), ['10.97.1.0/24', '10.97.2.0/24']);
    assert.equal(formatCidr(findFreeBlock(18, [C('10.233.0.0/16')], [C('10.233.0.0/18')])!), '10.233.64.0/18');
  });
  it('search spaces in preference order; none duplicated', () => {
    const got = findFreeBlocks({ prefix: 24, within: [C('10.1.0.0/23'), C('10.0.0.0/8')], avoid: [C('10.0.0.0/16')], limit: 4 });
    assert.deepEqual(F(got), ['10.1.0.0/24', '10.1.1.0/24', '10.1.2.0/24', '10.1.3.0/24']);
  });
  it('returns nothing when full or when the space is smaller than the block', () => {
    assert.deepEqual(findFreeBlocks({ prefix: 24, within: [C('10.0.0.0/24')], avoid: [C('10.0.0.128/32')] }), []);
    assert.equal(findFreeBlock(16, [C('10.0.0.0/24')], []), undefined);
    assert.equal(findFreeBlocks({ prefix: 24, within: [C('10.0.0.0/16')], avoid: [], limit: 0 }).length, 0);
    assert.throws(() => findFreeBlocks({ prefix: 64, within: [C('10.0.0.0/8')], avoid: [] }), NetError);
  });
  it('ignores other families in avoid; mixed within', () => {
    const got = findFreeBlocks({ prefix: 24, within: [C('10.0.0.0/23'), C('fd00::/120')], avoid: [C('::/0'), C('10.0.0.0/23')], limit: 5 });
    assert.deepEqual(F(got), []);
    const v6b = findFreeBlocks({ prefix: 120, within: [C('fd00::/112')], avoid: [C('0.0.0.0/0')], limit: 2 });
    assert.deepEqual(F(v6b), ['fd00::/120', 'fd00::100/120']);
    assert.throws(() => findFreeBlocks({ prefix: 120, within: [C('10.0.0.0/8')], avoid: [] }), /must be 0–32 for IPv4/);
  });
  it('is fast on huge IPv6 spaces', () => {
    const t0 = performance.now();
    const within = [C('fd00:10::/48'), C('2001:db8::/32')];
    const avoid = [C('fd00:10::/49'), C('fd00:10:0:8000::/64'), C('fd00:10:0:8002::/63')];
    const got = findFreeBlocks({ prefix: 64, within, avoid, limit: 3 });
    assert.deepEqual(F(got), ['fd00:10:0:8001::/64', 'fd00:10:0:8004::/64', 'fd00:10:0:8005::/64']);
    const none = findFreeBlocks({ prefix: 64, within: [C('fd00:10::/48')], avoid: [C('fd00::/16')] });
    assert.deepEqual(none, []);
    const far = findFreeBlock(64, [C('::/0')], [R('::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe')]);
    assert.equal(far, undefined);
    const last = findFreeBlock(64, [C('::/0')], [R('::', 'ffff:ffff:ffff:fffe:ffff:ffff:ffff:ffff')]);
    assert.equal(formatCidr(last!), 'ffff:ffff:ffff:ffff::/64');
    assert.ok(performance.now() - t0 < 500);
  });
});
