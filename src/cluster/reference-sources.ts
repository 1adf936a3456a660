/**
 * The fields of ordinary objects that name addresses (NetworkPolicy ipBlocks, Calico policy nets, Ingress
 * allow-list annotations, kube-system ConfigMaps), read into ReferenceSource records for the references scan
 * (src/analyze/references.ts). Pure; nothing here throws on bad data: what cannot be read is left out.
 */
import { addressTokens, splitAddressList } from './address-tokens.ts';
import { parseEmbeddedYaml } from './kubeadm-config.ts';
import type { KubeObject, ReferenceSource } from './types.ts';
import { REFERENCE_SOURCES } from './references/registry.ts';
import { strings } from './references/types.ts';

export { addressTokens, formatToken, parseAddressToken, reverseZone, splitAddressList, type AddressToken, type TokenForm } from './address-tokens.ts';

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

function isCalico(av: string): boolean {
  return av.startsWith('crd.projectcalico.org/') || av.startsWith('projectcalico.org/');
}

/**
 * Collects ReferenceSources over all objects: the sources here (policies, Ingress annotations, kube-system
 * ConfigMaps), then those of ./references/ (one file each, listed in ./references/registry.ts). Calico objects seen
 * through both APIs count once (the v3 view).
 */
export class ReferenceCollector {
  private readonly list: ReferenceSource[] = [];
  /** The records of each source of ./references/, in the registry's order. */
  private readonly bySource: ReferenceSource[][] = Object.values(REFERENCE_SOURCES).map(() => []);
  private readonly calico = new Map<string, { v3: boolean; sources: ReferenceSource[] }>();

  add(o: KubeObject): void {
    const own = Object.values(REFERENCE_SOURCES).flatMap((s, i) => s.read(o).map((r) => ({ i, r })));
    const kept = withoutRepeats(own.map((x) => x.r));
    own.forEach(({ i }, k) => { if (kept[k]) this.bySource[i]!.push(kept[k]); });
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
    const modules = Object.values(REFERENCE_SOURCES);
    const own = this.bySource.flatMap((records, i) => modules[i]!.resolve?.(records) ?? records);
    return [...this.list, ...[...this.calico.values()].flatMap((c) => c.sources), ...own];
  }
}

/**
 * One object's sources, each in its place: a value of a free-text field left out where a structured source of the
 * same field already holds it (a ConfigMap key's text and the Istio or Linkerd setting read from it); undefined
 * where nothing is left.
 */
function withoutRepeats(sources: ReferenceSource[]): Array<ReferenceSource | undefined> {
  return sources.map((s) => {
    if (s.format !== 'text') return s;
    const held = sources.filter((o) => o !== s && o.format !== 'text' && o.field.startsWith(s.field))
      .flatMap((o) => (o.format === 'csv' ? o.values.flatMap(splitAddressList) : o.values));
    const values = s.values.filter((v) => !held.includes(v));
    return values.length === s.values.length ? s : values.length === 0 ? undefined : { ...s, values };
  });
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
