/**
 * Wording helpers every layer shares: a comma-separated list read into its parts, and a list shown as its first few
 * items and how many more. Imports nothing; pure.
 */

/** Splits a comma-separated flag value ("10.0.0.0/16,fd00::/108") into trimmed, non-empty parts. */
export function splitList(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * The first `max` items joined by `sep`, then " and K more" when K items are left out: "a, b, c" or "a, b and 3 more".
 * `and` is what precedes the count ("; and 3 more" after items joined by "; ").
 */
export function firstAndMore(items: readonly string[], max: number, sep = ', ', and = ' and '): string {
  return items.slice(0, max).join(sep) + (items.length > max ? `${and}${items.length - max} more` : '');
}
