/** Pure IPv4/IPv6 address math on BigInt. No I/O. */
export { type Family, type IP, NetError, bits, familyName, formatIP, ipFrom, maxValue, parseIP } from './ip.ts';
export {
  type Cidr,
  SPLIT_MAX,
  alignUp,
  cidrFirst,
  cidrFrom,
  cidrLast,
  cidrSize,
  compareCidr,
  formatCidr,
  isCidrString,
  nthAddress,
  offsetOf,
  parseCidr,
  smallestPrefixFor,
  split,
  subnetCount,
  supernet,
  tryParseCidr,
  usable,
} from './cidr.ts';
export { type Range, cidrToRange, contains, formatRange, merge, overlap, overlaps, rangeToCidrs, subtract, toRange } from './range.ts';
export { findFreeBlock, findFreeBlocks } from './search.ts';
