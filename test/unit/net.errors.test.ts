import { it } from 'node:test';
import assert from 'node:assert/strict';
import { NetError, parseCidr, parseIP } from '../../src/net/index.ts';

// Malformed CIDRs: each must throw NetError with a one-line message that quotes the input.
const BAD_CIDRS: Array<[string, RegExp]> = [
  ['10.0.0.0', /missing prefix length; add \/32/],
  ['fd00::1', /missing prefix length; add \/128/],
  ['10.0.0.0/', /missing prefix length after "\/"/],
  ['10.0.0.0/33', /prefix must be 0–32 for IPv4/],
  ['10.0.0.1/8', /host bits are set \(did you mean 10\.0\.0\.0\/8\?\)/],
  ['fd00::1/64', /did you mean fd00::\/64\?/],
  ['300.1.1.1/32', /octet 300 is out of range 0–255/],
  ['010.0.0.1/32', /leading zero/],
  ['1.2.3/24', /exactly 4/],
  ['::g/64', /hex digits/],
  ['fd00::/129', /prefix must be 0–128 for IPv6/],
  ['', /empty/],
  [' / ', /missing address/],
  ['/8', /missing address/],
  ['10.0.0.0/8/8', /more than one "\/"/],
  ['fe80::1%eth0/64', /zone/],
  ['1.2.3.4/-1', /prefix must be 0–32/],
  ['1.2.3.4/ 8', /whitespace/],
  ['10.0.0.0 /8', /whitespace/],
  ['1.2.3.4/08', /prefix must be 0–32/],
  ['1.2.3.4/8.0', /prefix must be 0–32/],
  ['1.2.3.4/0x8', /prefix must be 0–32/],
  ['1.2.3.4/1000', /prefix must be 0–32/],
  ['1:2:3:4:5:6:7:8:9/64', /8 groups/],
  ['1::2::3/64', /only once/],
  ['hello', /missing "\/prefix"/],
  ['hello/8', /not an IPv4 or IPv6 address/],
];

for (const [input, want] of BAD_CIDRS) {
  it(`parseCidr rejects ${JSON.stringify(input)}`, () => {
    assert.throws(
      () => parseCidr(input),
      (e: unknown) => {
        assert.ok(e instanceof NetError, 'is a NetError');
        assert.ok(e.message.includes(JSON.stringify(input)), `message names the input: ${e.message}`);
        assert.ok(!e.message.includes('\n'), 'one line');
        assert.match(e.message, want);
        return true;
      },
    );
  });
}

it('parseIP errors name the input', () => {
  for (const s of ['', '1.2.3.4/8', '::1%lo', '1.2.3.04', '1::2::3']) {
    assert.throws(() => parseIP(s), (e: unknown) => e instanceof NetError && e.message.includes(JSON.stringify(s)), s);
  }
});
