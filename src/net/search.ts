/**
 * Free-block search: find aligned blocks inside search spaces that avoid existing allocations.
 * Works on free ranges (subtraction + alignment), so cost depends on the number of avoided ranges and
 * results, not on the size of the space.
 */
import { type Cidr, alignUp, checkPrefix } from './cidr.ts';
import { NetError, bits } from './ip.ts';
import { type Range, subtract } from './range.ts';

/**
 * Up to `limit` (default 1) aligned /prefix blocks that lie inside one of `within` and overlap nothing
 * in `avoid`: each search space in turn (preference order), lowest address first, no duplicates.
 * Spaces smaller than the wanted block are skipped; a prefix too long for a space's family is a NetError.
 */
export function findFreeBlocks(opts: {
  prefix: number;
  within: ReadonlyArray<Cidr>;
  avoid: ReadonlyArray<Cidr | Range>;
  limit?: number;
}): Cidr[] {
  const { prefix, within, avoid } = opts;
  const limit = opts.limit ?? 1;
  if (!Number.isInteger(limit) || limit < 0) throw new NetError(`invalid limit ${String(limit)}: must be a non-negative integer`);
  const found: Cidr[] = [];
  for (const space of within) {
    checkPrefix(prefix, space.family, `cannot search for /${prefix} blocks in ${space.family === 4 ? 'IPv4' : 'IPv6'} space`);
    if (found.length >= limit) break;
    if (prefix < space.prefix) continue;
    const size = 1n << BigInt(bits(space.family) - prefix);
    for (const free of subtract(space, [...avoid, ...found])) {
      for (let a = alignUp(free.start, prefix, space.family); a + size - 1n <= free.end; a += size) {
        if (found.length >= limit) return found;
        found.push({ family: space.family, network: a, prefix });
      }
    }
  }
  return found;
}

/** The first free aligned /prefix block (see findFreeBlocks), or undefined. */
export function findFreeBlock(prefix: number, within: ReadonlyArray<Cidr>, avoid: ReadonlyArray<Cidr | Range>): Cidr | undefined {
  return findFreeBlocks({ prefix, within, avoid, limit: 1 })[0];
}
