/**
 * Admission webhooks (ValidatingWebhookConfiguration, MutatingWebhookConfiguration) called at a URL
 * (webhooks[].clientConfig.url) whose host is an address: one in an old range is not called after the move, and a
 * webhook with failurePolicy Fail then refuses every request it matches. A clientConfig.service names the Service
 * and is resolved by the apiserver; it needs nothing.
 */
import { parseAddressToken } from '../address-tokens.ts';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { slimReferenceConfig } from './slim.ts';
import { sourceBase, type ReferenceSourceModule } from './types.ts';

/** The host of a URL when it is an address ("https://10.96.0.5:443/x", "https://[fd00::5]/x"). */
export function urlAddress(url: string): string | undefined {
  const m = /^[a-z]+:\/\/(?:\[([^\]]+)\]|([^/:?#]+))/i.exec(url.trim());
  const host = m?.[1] ?? m?.[2];
  return host !== undefined && parseAddressToken(host)?.form === 'ip' ? host : undefined;
}

function read(o: KubeObject): ReferenceSource[] {
  if ((o.kind !== 'ValidatingWebhookConfiguration' && o.kind !== 'MutatingWebhookConfiguration') || !String(o.apiVersion ?? '').startsWith('admissionregistration.k8s.io/')) return [];
  const hooks = Array.isArray(o.webhooks) ? o.webhooks : [];
  return hooks.flatMap((w: any, i: number) => {
    const url = w?.clientConfig?.url;
    const ip = typeof url === 'string' ? urlAddress(url) : undefined;
    return ip ? [{ ...sourceBase(o), field: `webhooks[${i}].clientConfig.url (${w?.name ?? ''})`, format: 'text' as const, use: 'address' as const, strict: true, values: [ip], whole: url }] : [];
  });
}

const admission = (plural: string, kind: string) => ({ group: 'admissionregistration.k8s.io', version: 'v1', plural, kind, namespaced: false, slim: slimReferenceConfig });

export const webhooks: ReferenceSourceModule = {
  lists: [admission('validatingwebhookconfigurations', 'ValidatingWebhookConfiguration'), admission('mutatingwebhookconfigurations', 'MutatingWebhookConfiguration')],
  read,
};
