/** Helpers the distribution planners share: YAML text for patches, flag merging, the kOps edit target. */
import * as yaml from 'js-yaml';
import { contains, supernet, type Cidr } from '../../net/index.ts';
import { splitList } from '../../text.ts';

export function dump(o: unknown): string {
  return yaml.dump(o, { noRefs: true, lineWidth: -1, sortKeys: false });
}

/** Nested object from a dotted path: path('spec.networking', {a: 1}). */
export function at(path: string, value: Record<string, unknown>): Record<string, unknown> {
  return path.split('.').reverse().reduce<Record<string, unknown>>((acc, k) => ({ [k]: acc }), value);
}

/** "a=b,c=d" feature-gates with `gate` set to true. */
export function mergeFeatureGates(existing: string | undefined, gate: string): string {
  const parts = splitList(existing).filter((p) => p.split('=')[0] !== gate);
  return [...parts, `${gate}=true`].join(',');
}

/** "--runtime-config" with `group/version=true` added. */
export function mergeRuntimeConfig(existing: string | undefined, gv: string): string {
  const parts = splitList(existing).filter((p) => p.split('=')[0] !== gv);
  return [...parts, `${gv}=true`].join(',');
}

/** The smallest CIDR containing every one of `cs` (all of one family). */
export function covering(cs: readonly Cidr[]): Cidr {
  let c = cs[0]!;
  while (!cs.every((x) => contains(c, x)) && c.prefix > 0) c = supernet(c, c.prefix - 1);
  return c;
}
