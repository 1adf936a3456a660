/**
 * The fields of ordinary objects that name addresses (NetworkPolicy ipBlocks, Calico policy nets, Ingress
 * allow-list annotations, kube-system ConfigMaps), read into ReferenceSource records for the references scan
 * (src/analyze/references.ts). Pure; nothing here throws on bad data: what cannot be read is left out.
 */
import { type Cidr, cidrFrom, formatCidr, formatIP, parseCidr, parseIP } from '../net/index.ts';
import { parseEmbeddedYaml } from './kubeadm-config.ts';
import type { KubeObject, ReferenceSource } from './types.ts';

/**
 * Annotations that hold a comma-separated list of client addresses or CIDRs, with what the list does.
 * ingress-nginx (whitelist- is the older name of allowlist-), HAProxy Kubernetes Ingress (haproxy.org/,
 * allow-list/deny-list and their older whitelist/blacklist), HAProxy Ingress (haproxy-ingress.github.io/),
 * Traefik v1 (traefik.ingress.kubernetes.io/ and the shared ingress.kubernetes.io/ prefix), Apache APISIX,
 * the AWS Load Balancer Controller (alb inbound-cidrs), and the Service annotation cloud providers read when
 * spec.loadBalancerSourceRanges is empty.
 */
export const SOURCE_RANGE_ANNOTATIONS: Readonly<Record<string, 'allow' | 'deny'>> = {
  'nginx.ingress.kubernetes.io/whitelist-source-range': 'allow',
  'nginx.ingress.kubernetes.io/allowlist-source-range': 'allow',
  'nginx.ingress.kubernetes.io/denylist-source-range': 'deny',
  'haproxy.org/allow-list': 'allow',
  'haproxy.org/whitelist': 'allow',
  'haproxy.org/deny-list': 'deny',
  'haproxy.org/blacklist': 'deny',
  'haproxy-ingress.github.io/allowlist-source-range': 'allow',
  'haproxy-ingress.github.io/whitelist-source-range': 'allow',
  'haproxy-ingress.github.io/denylist-source-range': 'deny',
  'ingress.kubernetes.io/whitelist-source-range': 'allow',
  'traefik.ingress.kubernetes.io/whitelist-source-range': 'allow',
  'k8s.apisix.apache.org/allowlist-source-range': 'allow',
  'k8s.apisix.apache.org/blocklist-source-range': 'deny',
  'alb.ingress.kubernetes.io/inbound-cidrs': 'allow',
  'service.beta.kubernetes.io/load-balancer-source-ranges': 'allow',
};

/** Annotations never scanned: they repeat the object (kubectl apply's copy) or are not configuration. */
const SKIPPED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

/** How an address token was written, so a replacement can be written the same way. */
export type TokenForm = 'ip' | 'cidr' | 'zone';

export interface AddressToken {
  /** The block it names (an address is a /32 or /128; host bits of a CIDR are masked off). */
  cidr: Cidr;
  form: TokenForm;
}

const V4_TOKEN = /(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:\/\d{1,3})?(?![\w]|\.\d)/g;
const V6_TOKEN = /(?<![\w:.])(?:[0-9A-Fa-f]{1,4}|:)[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:\/\d{1,3})?(?![\w:])/g;
const ZONE4 = /^((?:\d{1,3}\.){1,4})in-addr\.arpa\.?$/i;
const ZONE6 = /^((?:[0-9a-f]\.){1,32})ip6\.arpa\.?$/i;
const ZONE_TOKEN = /(?<![\w.-])(?:(?:\d{1,3}\.){1,4}in-addr|(?:[0-9A-Fa-f]\.){1,32}ip6)\.arpa\.?(?![\w-])/gi;

/**
 * Reads one address token: "10.96.0.10", "10.244.0.0/16" (host bits allowed, as Kubernetes allows them in
 * ipBlock.cidr), "fd00::/64", or a reverse-DNS zone ("96.10.in-addr.arpa", "…ip6.arpa"). Undefined otherwise.
 */
export function parseAddressToken(raw: string): AddressToken | undefined {
  const t = raw.trim();
  if (t === '') return undefined;
  const z4 = ZONE4.exec(t);
  if (z4) {
    const octets = z4[1]!.slice(0, -1).split('.').reverse();
    if (octets.some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith('0')))) return undefined;
    let value = 0n;
    for (let i = 0; i < 4; i++) value = (value << 8n) | BigInt(octets[i] ?? 0);
    return { cidr: cidrFrom(4, value, octets.length * 8), form: 'zone' };
  }
  const z6 = ZONE6.exec(t);
  if (z6) {
    const nibbles = z6[1]!.slice(0, -1).split('.').reverse();
    let value = 0n;
    for (let i = 0; i < 32; i++) value = (value << 4n) | BigInt(parseInt(nibbles[i] ?? '0', 16));
    return { cidr: cidrFrom(6, value, nibbles.length * 4), form: 'zone' };
  }
  try {
    if (t.includes('/')) return { cidr: parseCidr(t, { normalize: true }), form: 'cidr' };
    const ip = parseIP(t);
    return { cidr: cidrFrom(ip.family, ip.value, ip.family === 4 ? 32 : 128), form: 'ip' };
  } catch {
    return undefined;
  }
}

/** The reverse-DNS zone of a block, when it ends on an octet (IPv4) or nibble (IPv6) boundary. */
export function reverseZone(c: Cidr): string | undefined {
  if (c.family === 4) {
    if (c.prefix % 8 !== 0 || c.prefix === 0) return undefined;
    const octets: string[] = [];
    for (let i = 0; i < c.prefix / 8; i++) octets.push(String((c.network >> BigInt(24 - 8 * i)) & 0xffn));
    return `${octets.reverse().join('.')}.in-addr.arpa`;
  }
  if (c.prefix % 4 !== 0 || c.prefix === 0) return undefined;
  const nibbles: string[] = [];
  for (let i = 0; i < c.prefix / 4; i++) nibbles.push(((c.network >> BigInt(124 - 4 * i)) & 0xfn).toString(16));
  return `${nibbles.reverse().join('.')}.ip6.arpa`;
}

/** Writes a block the way `form` wrote the original: an address, a CIDR, or a reverse zone (CIDR when it has none). */
export function formatToken(c: Cidr, form: TokenForm): string {
  const full = c.family === 4 ? 32 : 128;
  if (form === 'ip' && c.prefix === full) return formatIP({ family: c.family, value: c.network });
  if (form === 'zone') return reverseZone(c) ?? formatCidr(c);
  return formatCidr(c);
}

/**
 * The addresses, CIDRs and reverse zones in a text, each once, in order of first appearance. Words that look
 * like addresses but are not (versions, times, MAC addresses) are left out by parsing each candidate.
 */
export function addressTokens(text: string): string[] {
  const found: Array<{ at: number; token: string }> = [];
  for (const re of [ZONE_TOKEN, V4_TOKEN, V6_TOKEN]) {
    for (const m of text.matchAll(re)) {
      let token = m[0];
      if (re === ZONE_TOKEN) token = token.replace(/\.$/, '');
      // "::" alone, or two groups without "::", is not an address (C++ scopes, times, ports).
      else if (re === V6_TOKEN && (/^:+$/.test(token) || (!token.includes('::') && token.split(':').length < 3))) continue;
      if (parseAddressToken(token) !== undefined) found.push({ at: m.index, token });
    }
  }
  // The IPv4-looking start of an in-addr.arpa name ("1.0.96.10.in-addr.arpa") is not an address.
  const zones = found.filter((f) => /arpa$/i.test(f.token));
  const seen = new Set<string>();
  const out: string[] = [];
  for (const f of found.sort((a, b) => a.at - b.at)) {
    if (zones.some((z) => z !== f && f.at >= z.at && f.at < z.at + z.token.length)) continue;
    if (seen.has(f.token)) continue;
    seen.add(f.token);
    out.push(f.token);
  }
  return out;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function isCalico(av: string): boolean {
  return av.startsWith('crd.projectcalico.org/') || av.startsWith('projectcalico.org/');
}

/** Collects ReferenceSources over all objects; Calico objects seen through both APIs count once (the v3 view). */
export class ReferenceCollector {
  private readonly list: ReferenceSource[] = [];
  private readonly calico = new Map<string, { v3: boolean; sources: ReferenceSource[] }>();

  add(o: KubeObject): void {
    const av = typeof o.apiVersion === 'string' ? o.apiVersion : '';
    switch (o.kind) {
      case 'NetworkPolicy':
        if (av.startsWith('networking.k8s.io/')) this.list.push(...networkPolicy(o, av));
        else if (isCalico(av)) this.addCalico(o, av, calicoPolicy(o, av));
        break;
      case 'GlobalNetworkPolicy':
        if (isCalico(av)) this.addCalico(o, av, calicoPolicy(o, av));
        break;
      case 'NetworkSet':
      case 'GlobalNetworkSet':
        if (isCalico(av)) this.addCalico(o, av, calicoNetworkSet(o, av));
        break;
      case 'Ingress':
        if (av.startsWith('networking.k8s.io/') || av.startsWith('extensions/')) this.list.push(...ingress(o, av));
        break;
      case 'ConfigMap':
        if (o.metadata?.namespace === 'kube-system') this.list.push(...configMap(o, av || 'v1'));
        break;
      default:
    }
  }

  private addCalico(o: KubeObject, av: string, sources: ReferenceSource[]): void {
    const key = `${o.kind}\u0000${o.metadata?.namespace ?? ''}\u0000${o.metadata?.name ?? ''}`;
    const v3 = av.startsWith('projectcalico.org/');
    const prev = this.calico.get(key);
    if (!prev || (v3 && !prev.v3)) this.calico.set(key, { v3, sources });
  }

  sources(): ReferenceSource[] {
    return [...this.list, ...[...this.calico.values()].flatMap((c) => c.sources)];
  }
}

function base(o: KubeObject, apiVersion: string): Pick<ReferenceSource, 'kind' | 'apiVersion' | 'namespace' | 'name'> {
  const b: Pick<ReferenceSource, 'kind' | 'apiVersion' | 'namespace' | 'name'> = { kind: o.kind ?? '', apiVersion, name: o.metadata?.name ?? '' };
  if (typeof o.metadata?.namespace === 'string' && o.metadata.namespace !== '') b.namespace = o.metadata.namespace;
  return b;
}

function networkPolicy(o: KubeObject, av: string): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  const b = base(o, av);
  for (const [dir, peersKey] of [['ingress', 'from'], ['egress', 'to']] as const) {
    const rules = o.spec?.[dir];
    if (!Array.isArray(rules)) continue;
    rules.forEach((rule: any, i: number) => {
      const peers = rule?.[peersKey];
      if (!Array.isArray(peers)) return;
      peers.forEach((peer: any, j: number) => {
        const ib = peer?.ipBlock;
        if (!ib || typeof ib.cidr !== 'string') return;
        const at = `spec.${dir}[${i}].${peersKey}[${j}].ipBlock`;
        out.push({ ...b, field: `${at}.cidr`, format: 'cidr', use: 'allow', values: [ib.cidr] });
        const except = strings(ib.except);
        if (except.length > 0) out.push({ ...b, field: `${at}.except`, format: 'list', use: 'deny', values: except, within: ib.cidr });
      });
    });
  }
  return out;
}

function calicoPolicy(o: KubeObject, av: string): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  const b = base(o, av);
  for (const dir of ['ingress', 'egress'] as const) {
    const rules = o.spec?.[dir];
    if (!Array.isArray(rules)) continue;
    rules.forEach((rule: any, i: number) => {
      for (const end of ['source', 'destination'] as const) {
        for (const [key, use] of [['nets', 'allow'], ['notNets', 'deny']] as const) {
          const values = strings(rule?.[end]?.[key]);
          if (values.length > 0) out.push({ ...b, field: `spec.${dir}[${i}].${end}.${key}`, format: 'list', use, values });
        }
      }
    });
  }
  return out;
}

function calicoNetworkSet(o: KubeObject, av: string): ReferenceSource[] {
  const values = strings(o.spec?.nets);
  return values.length > 0 ? [{ ...base(o, av), field: 'spec.nets', format: 'list', use: 'set', values }] : [];
}

function ingress(o: KubeObject, av: string): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  const b = base(o, av);
  const ann = o.metadata?.annotations;
  if (!ann || typeof ann !== 'object') return out;
  for (const [key, value] of Object.entries(ann)) {
    if (typeof value !== 'string' || SKIPPED_ANNOTATIONS.has(key)) continue;
    const field = `metadata.annotations["${key}"]`;
    const use = SOURCE_RANGE_ANNOTATIONS[key];
    if (use) out.push({ ...b, field, format: 'csv', use, values: [value] });
    else {
      const tokens = addressTokens(value);
      if (tokens.length > 0) out.push({ ...b, field, format: 'text', use: 'text', values: tokens });
    }
  }
  return out;
}

/** Splits a comma/space separated list of addresses into its entries. */
export function splitAddressList(s: string): string[] {
  return s.split(/[\s,]+/).filter((x) => x !== '');
}

function configMap(o: KubeObject, av: string): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  const b = base(o, av);
  const name = o.metadata?.name ?? '';
  const data = o.data;
  if (!data || typeof data !== 'object') return out;
  for (const [key, text] of Object.entries(data)) {
    if (typeof text !== 'string') continue;
    const field = `data["${key}"]`;
    // Structured settings first; the text scan below leaves out what they already hold.
    const structured: string[] = [];
    if (name === 'kube-proxy' && key === 'config.conf') {
      const kp = parseEmbeddedYaml(text);
      if (typeof kp !== 'string' && typeof kp.clusterCIDR === 'string' && kp.clusterCIDR.trim() !== '') {
        out.push({ ...b, field: `${field}.clusterCIDR`, format: 'csv', use: 'cluster', values: [kp.clusterCIDR] });
        structured.push(...splitAddressList(kp.clusterCIDR));
      }
    } else if (name === 'ip-masq-agent') {
      const cfg = parseEmbeddedYaml(text);
      const cidrs = typeof cfg === 'string' ? [] : strings(cfg.nonMasqueradeCIDRs);
      if (cidrs.length > 0) {
        out.push({ ...b, field: `${field}.nonMasqueradeCIDRs`, format: 'list', use: 'nomasq', values: cidrs });
        structured.push(...cidrs);
      }
    }
    const tokens = addressTokens(text).filter((t) => !structured.includes(t));
    if (tokens.length > 0) out.push({ ...b, field, format: 'text', use: key === 'Corefile' ? 'dns' : 'text', values: tokens });
  }
  return out;
}
