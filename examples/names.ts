/**
 * Deterministic names for the generated dumps (examples/generate.ts, test/fixtures/platforms/generate-managed.ts):
 * the random-looking suffixes Kubernetes gives ReplicaSets and pods, driven by a hash of a seed, so the generators
 * rewrite identical files.
 */

/** FNV-1a 32-bit. */
export function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Kubernetes' "safe" random-suffix alphabet, driven by a hash of `seed`. */
export function suffix(seed: string, n: number): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let out = '';
  let h = hash(seed);
  for (let i = 0; i < n; i++) {
    out += alphabet[h % alphabet.length];
    h = hash(`${seed}/${i}/${h}`);
  }
  return out;
}
