/**
 * The containers of Deployments, StatefulSets, DaemonSets and bare pods, in every namespace: addresses and CIDRs in
 * command, args and env values (node-local-dns's -localip, a resolver given by address, an ingress controller's
 * trusted-proxy ranges). A ClusterIP written there keeps pointing at the old address after the move.
 */
import { addressTokens } from '../address-tokens.ts';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { podTemplateOf, slimWorkload, sourceBase, strings, under, type ReferenceSourceModule } from './types.ts';

function read(o: KubeObject): ReferenceSource[] {
  const t = podTemplateOf(o);
  if (!t) return [];
  const out: ReferenceSource[] = [];
  for (const group of ['initContainers', 'containers'] as const) {
    const list = t.spec[group];
    if (!Array.isArray(list)) continue;
    for (const c of list) {
      const at = under(t.at, `spec.${group}[name=${c?.name ?? ''}]`);
      const texts: Array<[string, string]> = [[`${at}.command/args`, [...strings(c?.command), ...strings(c?.args)].join(' ')]];
      for (const e of Array.isArray(c?.env) ? c.env : []) if (typeof e?.value === 'string') texts.push([`${at}.env[${e.name}]`, e.value]);
      for (const [field, text] of texts) {
        const values = addressTokens(text);
        if (values.length > 0) out.push({ ...sourceBase(o), field, format: 'text', use: 'address', values });
      }
    }
  }
  return out;
}

const apps = (plural: string, kind: string) => ({ group: 'apps', version: 'v1', plural, kind, namespaced: true, slim: slimWorkload });

export const workloads: ReferenceSourceModule = {
  lists: [
    apps('deployments', 'Deployment'), apps('statefulsets', 'StatefulSet'), apps('daemonsets', 'DaemonSet'),
  ],
  read,
};
