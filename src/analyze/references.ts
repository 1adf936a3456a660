/**
 * The references scan: what still names an old range and would break once the range moves, with a proposed
 * change for each. Sources: NetworkPolicy ipBlocks, Calico (Global)NetworkPolicy nets/notNets and network
 * sets, Service loadBalancerSourceRanges, Ingress and Service allow-list annotations, kube-proxy's
 * clusterCIDR, ip-masq-agent's nonMasqueradeCIDRs, CoreDNS Corefiles and any other kube-system ConfigMap text,
 * and the sources of src/cluster/references/ (Calico BGP, Istio and Linkerd capture ranges, container command/args/env,
 * other ConfigMaps, hostAliases, EndpointSlices not managed by their controller, webhook URLs; docs/references.md).
 * Pure: a function of the Snapshot and the moves.
 *
 * A value is a reference when it overlaps a move's `from`. Where the old addresses go (the "image") is `to`
 * for a value equal to `from` or covering it, and the same offset in `to` (same prefix length) for a value
 * inside `from` when that block fits in `to`. A value whose image is already covered (by itself or by another
 * entry of the same list or rule) keeps working and is not reported: 0.0.0.0/0 or ::/0 never is.
 *
 * A value that holds the old range among others (the default route, a whole private block, another range the
 * cluster uses, a node address) is "wide": it is never rewritten to the new range nor proposed for removal, only
 * reported as a warning to review (no change is needed where it means more than the old range).
 */
import type { ReferenceSource, ServiceInfo, Snapshot } from '../cluster/types.ts';
import {
  type AddressToken, formatToken, parseAddressToken, SOURCE_RANGE_ANNOTATIONS, splitAddressList,
} from '../cluster/reference-sources.ts';
import { bits, cidrSize, contains, formatCidr, overlaps, parseCidr, tryParseCidr, type Cidr } from '../net/index.ts';
import { addressPlan } from './addressing.ts';

export interface RangeMove {
  role: 'service' | 'pod';
  from: string;
  to: string;
}

export interface Reference {
  kind: string;
  namespace?: string;
  name: string;
  /** A readable path, e.g. `spec.ingress[0].from[1].ipBlock.cidr`. */
  field: string;
  /** The text found: one value, a whole list (`[a, b]`), or an annotation as written. */
  value: string;
  role: 'service' | 'pod';
  severity: 'error' | 'warning';
  /** The replacement text, when one can be computed (for allow-lists: the list to use during the move). */
  proposed?: string;
  /** Why it would break and what to do. */
  note: string;
}

interface ParsedMove {
  move: RangeMove;
  from: Cidr;
  to: Cidr;
}

interface Entry extends AddressToken {
  text: string;
}

type Relation = 'equal' | 'inside' | 'covers' | 'overlaps';

interface Match {
  entry: Entry;
  relation: Relation;
  /** Where the entry's old addresses go; undefined when that cannot be worked out, or for a wide value. */
  image?: Cidr;
  /** For a value that covers the old range among others: what else it holds (it is not rewritten). */
  wide?: string;
}

/** Blocks a value may hold whole only by meaning much more than one cluster range. */
const WIDE_BLOCKS: readonly Cidr[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7', 'fd00::/8'].map((c) => parseCidr(c));

const ROLE_NAME: Record<string, string> = {
  service: 'Service range', pod: 'pod range', pool: 'Calico pool', masquerade: 'non-masquerade range', node: 'node network',
};

/**
 * What else `v` (which contains `m.from`) holds, when it holds far more than the old range: the default route,
 * a whole private block, another range the cluster uses, a node address. Undefined for a value that is the
 * old range or just a little larger.
 */
function widerThanOld(v: Cidr, m: ParsedMove, snap: Snapshot): string | undefined {
  if (!contains(v, m.from) || v.prefix === m.from.prefix) return undefined;
  if (v.prefix === 0) return 'it is the default route, every address';
  const block = WIDE_BLOCKS.find((b) => b.family === v.family && contains(v, b));
  if (block) return block.prefix === v.prefix ? `it is the whole private block ${formatCidr(block)}` : `it holds all of ${formatCidr(block)}`;
  const other = addressPlan(snap).find((g) => g.parsed.family === v.family && contains(v, g.parsed) && !overlaps(g.parsed, m.from));
  if (other) return `it also holds the ${ROLE_NAME[other.role] ?? other.role} ${other.cidr}`;
  for (const n of snap.nodes) {
    for (const a of [...n.internalIPs, ...n.externalIPs]) {
      const c = tryParseCidr(a.includes(':') ? `${a}/128` : `${a}/32`);
      if (c && c.family === v.family && contains(v, c) && !contains(m.from, c)) return `it also holds node ${n.name}'s address ${a}`;
    }
  }
  return undefined;
}

/** The block `v` (overlapping `m.from`) maps to, and how it relates to `from`. */
function relate(v: Cidr, m: ParsedMove): { relation: Relation; image?: Cidr } {
  if (v.prefix === m.from.prefix && v.network === m.from.network) return { relation: 'equal', image: m.to };
  if (contains(v, m.from)) return { relation: 'covers', image: m.to };
  if (contains(m.from, v)) {
    const offset = v.network - m.from.network;
    if (offset + cidrSize(v) <= cidrSize(m.to)) {
      return { relation: 'inside', image: { family: v.family, network: m.to.network + offset, prefix: v.prefix } };
    }
    return { relation: 'inside' };
  }
  return { relation: 'overlaps' };
}

/**
 * The entries of `values` that reach into `m.from` and would not be covered after the move (by themselves or
 * `coverage`). With `snap`, an entry that covers the old range among others is marked wide and gets no image.
 */
function matchesOf(entries: Entry[], m: ParsedMove, coverage: Cidr[], snap?: Snapshot): Match[] {
  const out: Match[] = [];
  for (const e of entries) {
    if (!overlaps(e.cidr, m.from)) continue;
    const r = relate(e.cidr, m);
    if (r.image && (contains(e.cidr, r.image) || coverage.some((c) => contains(c, r.image!)))) continue;
    const wide = snap && r.relation === 'covers' ? widerThanOld(e.cidr, m, snap) : undefined;
    out.push(wide ? { entry: e, relation: r.relation, wide } : { entry: e, ...r });
  }
  return out;
}

function parseEntries(texts: string[]): Entry[] {
  const out: Entry[] = [];
  for (const text of texts) {
    const t = parseAddressToken(text);
    if (t) out.push({ ...t, text: text.trim() });
  }
  return out;
}

function entriesOf(src: ReferenceSource): { texts: string[]; entries: Entry[] } {
  const texts = src.format === 'csv' ? src.values.flatMap(splitAddressList) : src.values.map((v) => v.trim());
  return { texts, entries: parseEntries(texts) };
}

/** The smallest block holding both. */
function commonSupernet(a: Cidr, b: Cidr): Cidr {
  const width = bits(a.family);
  let p = Math.min(a.prefix, b.prefix);
  while (p > 0) {
    const mask = ((1n << BigInt(p)) - 1n) << BigInt(width - p);
    if ((a.network & mask) === (b.network & mask)) break;
    p--;
  }
  const mask = p === 0 ? 0n : ((1n << BigInt(p)) - 1n) << BigInt(width - p);
  return { family: a.family, network: a.network & mask, prefix: p };
}

const ROLE_RANGE: Record<RangeMove['role'], string> = { service: 'Service range', pod: 'pod range' };

/** "is the old pod range", "lies inside the old pod range 10.244.0.0/16", "covers … but not …". */
function how(x: Match, m: ParsedMove): string {
  const range = `the old ${ROLE_RANGE[m.move.role]} ${formatCidr(m.from)}`;
  switch (x.relation) {
    case 'equal': return `${x.entry.text} is the old ${ROLE_RANGE[m.move.role]}`;
    case 'inside': return `${x.entry.text} lies inside ${range}`;
    case 'covers': return x.wide
      ? `${x.entry.text} covers ${range} among others (${x.wide}) but not the new ${formatCidr(m.to)}`
      : `${x.entry.text} covers ${range} but not the new ${formatCidr(m.to)}`;
    default: return `${x.entry.text} overlaps ${range}`;
  }
}

/** What to do about wide values: nothing rewritten, nothing removed; the new range beside them where it belongs. */
function wideTodo(ms: Match[], m: ParsedMove, src: ReferenceSource): string {
  const texts = [...new Set(ms.map((x) => x.entry.text))].join(', ');
  const to = formatCidr(m.to);
  return `It is not rewritten: no change is needed where ${texts} is meant for more than the old ${ROLE_RANGE[m.move.role]}, `
    + `and it must stay after the move (never replace or remove it). Review whether ${to} belongs beside it`
    + `${src.use === 'nomasq' ? ` (for ip-masq-agent it does: pods in ${to} must not be masqueraded)` : ''}.`;
}

/** What to know about a narrow value's image: pod addresses change, ClusterIPs keep their offset. */
function offsetCaveat(x: Match, m: ParsedMove, snap: Snapshot): string {
  if (x.relation !== 'inside') return '';
  if (!x.image) {
    return ` ${formatCidr(m.to)} is smaller than ${formatCidr(m.from)} and has no block at the same offset: review by hand.`;
  }
  if (m.move.role === 'pod') {
    return ' Pods get new addresses when they restart, so the same offset in the new range is only a guess: '
      + 'prefer selecting the pods by label.';
  }
  const full = x.entry.cidr.prefix === bits(x.entry.cidr.family);
  const svc = full ? serviceWithClusterIP(snap, formatToken(x.entry.cidr, 'ip')) : undefined;
  return svc
    ? ` It is the ClusterIP of Service ${svc.namespace}/${svc.name}; the Service mapping keeps the offset where it can (check the plan's mapping).`
    : ' ClusterIPs keep their offset where the Service mapping can (check the plan\'s mapping).';
}

function serviceWithClusterIP(snap: Snapshot, ip: string): ServiceInfo | undefined {
  return snap.services.find((s) => s.clusterIPs.includes(ip));
}

function listText(src: ReferenceSource, texts: string[]): string {
  if (src.format === 'csv') {
    const raw = src.values[0] ?? '';
    return texts.join(/,\s/.test(raw) ? ', ' : ',');
  }
  return `[${texts.join(', ')}]`;
}

function withAdded(texts: string[], entries: Entry[], images: Array<{ cidr: Cidr; form: Entry['form'] }>): string[] {
  const out = [...texts];
  for (const img of images) {
    // Already listed, or inside another new block being added (e.g. a /24 of the old range next to the whole range).
    if (entries.some((e) => contains(e.cidr, img.cidr))) continue;
    if (images.some((o) => o.cidr.prefix < img.cidr.prefix && contains(o.cidr, img.cidr))) continue;
    const t = formatToken(img.cidr, img.form === 'zone' ? 'cidr' : img.form);
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

function oldNew(ms: Match[]): { olds: string; news: string } {
  const olds = [...new Set(ms.map((x) => x.entry.text))].join(', ');
  const news = [...new Set(ms.filter((x) => x.image).map((x) => formatToken(x.image!, x.entry.form)))].join(', ');
  return { olds, news };
}

/** What some well-known kube-system ConfigMaps are, for the note. */
function configMapHint(src: ReferenceSource): string {
  if (src.kind !== 'ConfigMap') return '';
  const n = src.name;
  if (n === 'kubeadm-config') return ' kubeadm reads this on upgrade and join: it must name the new range once the move is done.';
  if (n === 'kubelet-config' || /^kubelet-config-1\.\d+$/.test(n)) return ' Nodes that join or upgrade take their kubelet configuration (clusterDNS) from it.';
  if (n === 'calico-config' || n === 'cilium-config' || n === 'kube-flannel-cfg' || n === 'canal-config') return ' This is CNI configuration: pods get their addresses from it.';
  if (n === 'nodelocaldns' || n === 'node-local-dns') return ' The node-local DNS cache forwards to the cluster DNS Service by address.';
  return '';
}

// ---------------------------------------------------------------------------------------------------

interface Ctx {
  snap: Snapshot;
  moves: ParsedMove[];
  out: Reference[];
  /** Every ReferenceSource, for coverage by sibling peers of the same policy rule. */
  all: ReferenceSource[];
  /** Old ClusterIP → new, from the plan's mapping. */
  clusterIPs: ReadonlyMap<string, string>;
}

function ref(src: ReferenceSource, m: ParsedMove, severity: Reference['severity'], value: string, note: string, proposed?: string): Reference {
  const r: Reference = { kind: src.kind, name: src.name, field: src.field, value, role: m.move.role, severity, note };
  if (src.namespace !== undefined) r.namespace = src.namespace;
  if (proposed !== undefined) r.proposed = proposed;
  return r;
}

/** The NetworkPolicy rule a field belongs to: `spec.ingress[0]` for `spec.ingress[0].from[1].ipBlock.cidr`. */
function ruleOf(field: string): string | undefined {
  return /^(spec\.(?:ingress|egress)\[\d+\])\.(?:from|to)\[\d+\]\.ipBlock\.(?:cidr|except)$/.exec(field)?.[1];
}

/** Values of the same use in the same NetworkPolicy rule (its other peers), for coverage. */
function siblings(ctx: Ctx, src: ReferenceSource): Cidr[] {
  const rule = ruleOf(src.field);
  if (rule === undefined || src.kind !== 'NetworkPolicy' || !src.apiVersion.startsWith('networking.k8s.io/')) return [];
  return ctx.all
    .filter((s) => s !== src && s.kind === src.kind && s.apiVersion === src.apiVersion && s.namespace === src.namespace
      && s.name === src.name && s.use === src.use && ruleOf(s.field) === rule)
    .flatMap((s) => parseEntries(s.values).map((e) => e.cidr));
}

/** One CIDR (NetworkPolicy ipBlock.cidr). */
function scanSingle(ctx: Ctx, src: ReferenceSource): void {
  const { entries } = entriesOf(src);
  const sib = siblings(ctx, src);
  for (const m of ctx.moves) {
    const [x] = matchesOf(entries, m, [...entries.map((e) => e.cidr), ...sib], ctx.snap);
    if (!x) continue;
    if (x.wide) {
      ctx.out.push(ref(src, m, 'warning', x.entry.text, `${how(x, m)}. ${wideTodo([x], m, src)}`));
      continue;
    }
    const img = x.image ? formatToken(x.image, x.entry.form) : undefined;
    const except = ctx.all.find((s) => s.kind === src.kind && s.namespace === src.namespace && s.name === src.name
      && s.field === src.field.replace(/\.cidr$/, '.except'));
    const note = `${how(x, m)}: after the move the peer no longer matches the addresses it meant. `
      + (img
        ? `During the move keep this peer and add a second one with ipBlock.cidr ${img}${except ? ' (its except entries moved likewise)' : ''}; after it, only ${img}.`
        : 'Review by hand.')
      + offsetCaveat(x, m, ctx.snap);
    ctx.out.push(ref(src, m, 'error', x.entry.text, note, img));
  }
}

const LIST_WHY: Record<string, (olds: string, news: string, src: ReferenceSource) => string> = {
  allow: (o, n, src) => (src.kind === 'Ingress' || src.kind === 'Service'
    ? `clients from ${n || 'the new range'} are refused until they are allowed`
    : `traffic from or to ${n || 'the new range'} is not matched by this rule`),
  deny: (_o, n) => `${n || 'the new range'} is no longer excluded, so what this list kept out is let in`,
  nomasq: (_o, n) => `ip-masq-agent masquerades (SNATs) traffic to ${n || 'the new range'} until it is listed`,
  set: (_o, n) => `policies selecting this network set no longer match ${n || 'the new range'}`,
  advertise: (_o, n) => `Calico does not advertise ${n || 'the new range'} over BGP, so routers outside the cluster have no route to it`,
  capture: (_o, n, src) => (src.kind === 'ConfigMap' && src.name === 'linkerd-config'
    ? `Linkerd's proxies do not treat ${n || 'the new range'} as the cluster's network (no service discovery or opaque ports for it)`
    : `the sidecar no longer captures traffic to ${n || 'the new range'}: it bypasses the mesh (no mTLS, no mesh policy)`),
  nocapture: (_o, n) => `traffic to ${n || 'the new range'} is captured by the sidecar, which the exclusion was there to avoid`,
};

/** Allow-lists, deny-lists, network sets, ip-masq-agent: one Reference per (list, move); one proposed list for all moves. */
function scanList(ctx: Ctx, src: ReferenceSource): void {
  const { texts, entries } = entriesOf(src);
  if (entries.length === 0) return;
  const coverage = [...entries.map((e) => e.cidr), ...siblings(ctx, src)];
  const within = src.within !== undefined ? parseAddressToken(src.within)?.cidr : undefined;
  const perMove = ctx.moves.map((m) => {
    const all = matchesOf(entries, m, coverage, ctx.snap);
    return { m, ms: all.filter((x) => !x.wide), wide: all.filter((x) => x.wide) };
  });
  const images = perMove.flatMap(({ ms }) => ms.filter((x) => x.image).map((x) => ({ cidr: x.image!, form: x.entry.form })));
  const fits = images.filter((i) => !within || contains(within, i.cidr));
  const during = fits.length > 0 ? listText(src, withAdded(texts, entries, fits)) : undefined;
  const value = src.format === 'csv' ? (src.values[0] ?? '') : `[${texts.join(', ')}]`;
  for (const { m, ms, wide } of perMove) {
    const wideText = wide.length > 0 ? ` ${wide.map((x) => how(x, m)).join('; ')}. ${wideTodo(wide, m, src)}` : '';
    if (ms.length === 0) {
      if (wide.length > 0) ctx.out.push(ref(src, m, 'warning', value, wideText.trim()));
      continue;
    }
    const { olds, news } = oldNew(ms);
    const mine = ms.filter((x) => x.image);
    const mineFit = mine.filter((x) => !within || contains(within, x.image!));
    let proposed: string | undefined;
    let todo: string;
    if (mine.length === 0) {
      todo = 'Review by hand.';
    } else if (mineFit.length > 0) {
      proposed = during;
      todo = `During the move list both (the proposed list); after it, remove ${olds}${mineFit.length < mine.length ? ' (the rest goes with the new peer)' : ''}.`;
    } else {
      proposed = `[${[...new Set(mine.map((x) => formatToken(x.image!, x.entry.form)))].join(', ')}]`;
      todo = `The peer itself moves (ipBlock.cidr ${src.within}): give the new peer this except list (proposed); after the move the old peer goes.`;
    }
    const relation = ms.map((x) => how(x, m)).join('; ');
    const why = mine.length > 0 && mineFit.length === 0
      ? `${news} must be excluded from the new peer as ${olds} is from this one`
      : (LIST_WHY[src.use] ?? LIST_WHY.allow!)(olds, news, src);
    const caveat = ms.map((x) => offsetCaveat(x, m, ctx.snap)).find((c) => c !== '') ?? '';
    ctx.out.push(ref(src, m, 'error', value, `${relation}: after the move ${why}. ${todo}${caveat}${wideText}`, proposed));
  }
}

/**
 * Why `c` cannot be kube-proxy's clusterCIDR, which must hold only pod addresses: it is wider than /8 (IPv6 /16:
 * the default route or close), or holds the node network, a node address or another cluster range (not a pod
 * range). Undefined when it can. Used for the plans' kube-proxy fix texts too.
 */
export function clusterCIDRTooWide(c: Cidr, snap: Snapshot): string | undefined {
  if (c.prefix < (c.family === 4 ? 8 : 16)) return c.prefix === 0 ? 'every address' : `all of ${formatCidr(c)}, far more than the pod ranges`;
  const other = addressPlan(snap).find((g) => g.parsed.family === c.family && g.role !== 'pod' && g.role !== 'pool' && g.role !== 'masquerade' && overlaps(c, g.parsed));
  if (other) return `the ${ROLE_NAME[other.role] ?? other.role} ${other.cidr}`;
  for (const n of snap.nodes) {
    for (const a of [...n.internalIPs, ...n.externalIPs]) {
      const ip = tryParseCidr(a.includes(':') ? `${a}/128` : `${a}/32`);
      if (ip && ip.family === c.family && contains(c, ip)) return `node ${n.name}'s address ${a}`;
    }
  }
  return undefined;
}

/** kube-proxy clusterCIDR: one CIDR per family, so "both" means a common supernet during the move. */
function scanClusterCIDR(ctx: Ctx, src: ReferenceSource): void {
  const { texts, entries } = entriesOf(src);
  for (const m of ctx.moves) {
    const ms = matchesOf(entries, m, entries.map((e) => e.cidr));
    if (ms.length === 0) continue;
    const x = ms[0]!;
    const after = texts.map((t) => {
      const hit = ms.find((y) => y.entry.text === t);
      return hit ? (hit.image ? formatToken(hit.image, 'cidr') : t) : t;
    });
    const both = commonSupernet(x.entry.cidr, m.to);
    const tooWide = clusterCIDRTooWide(both, ctx.snap);
    const during = tooWide
      ? `no single range holds both without also holding ${tooWide}, which kube-proxy must not count as pods: during the move set detectLocalMode to `
        + 'InterfaceNamePrefix (Calico: cali) or BridgeInterface instead, or accept that pods in the new range are masqueraded until the switch'
      : `during the move it must cover both ranges (e.g. ${formatCidr(both)}: it holds no node address or other cluster range)`;
    const note = `${how(x, m)}: kube-proxy treats traffic from outside clusterCIDR as external (masquerade, local-traffic detection), `
      + `so pods in ${formatCidr(m.to)} would be handled as outside the cluster. It takes one CIDR per family: ${during}, and only `
      + `${formatCidr(m.to)} after it (the proposed value: the pod range).${offsetCaveat(x, m, ctx.snap)}`;
    ctx.out.push(ref(src, m, 'error', src.values[0] ?? texts.join(','), note, x.image ? after.join(',') : undefined));
  }
}

/** Free text (Corefile, other kube-system ConfigMaps, other annotations): one Reference per token. */
function scanText(ctx: Ctx, src: ReferenceSource): void {
  const entries = parseEntries(src.values);
  for (const m of ctx.moves) {
    for (const x of matchesOf(entries, m, [], ctx.snap)) {
      if (x.wide) {
        ctx.out.push(ref(src, m, 'warning', x.entry.text, `${how(x, m)}. ${wideTodo([x], m, src)}${configMapHint(src)}`));
        continue;
      }
      const img = x.image ? formatToken(x.image, x.entry.form) : undefined;
      const isAddress = x.entry.form === 'ip';
      let severity: Reference['severity'] = 'warning';
      let note: string;
      if (src.use === 'dns' && isAddress) {
        severity = 'error';
        note = `${how(x, m)}: the Corefile sends queries to (or serves on) an address that ${m.move.role === 'service' ? 'moves' : 'goes away'}. `
          + (img ? `Change it to ${img} once the address has moved.` : 'Review by hand.');
      } else if (src.use === 'dns') {
        note = `${how(x, m)}: reverse lookups (PTR) for ${formatCidr(m.to)} are not served by this zone. `
          + (img ? `During the move serve ${img} alongside${img.endsWith('.arpa') ? '' : ' (CoreDNS accepts a CIDR as a zone)'}; after it, only ${img}.` : 'Review by hand.');
      } else {
        note = `${how(x, m)}: if this configures something in the cluster it breaks after the move. `
          + (img ? `Change it to ${img} (during the move it may need both).` : 'Review by hand.');
      }
      note += configMapHint(src);
      ctx.out.push(ref(src, m, severity, x.entry.text, note + offsetCaveat(x, m, ctx.snap), img));
    }
  }
}

/**
 * Addresses used as they are (container command, args and env, ConfigMaps outside kube-system, hostAliases,
 * EndpointSlices, webhook URLs): a Service's ClusterIP, or any address of a strict source, in an old range is an
 * error, with the mapped address where the plan has one; other values are warnings to check.
 */
function scanAddress(ctx: Ctx, src: ReferenceSource): void {
  const entries = parseEntries(src.values);
  for (const m of ctx.moves) {
    for (const x of matchesOf(entries, m, [], ctx.snap)) {
      const img = x.image ? formatToken(x.image, x.entry.form) : undefined;
      if (x.wide || x.entry.form !== 'ip') {
        const note = x.wide ? `${how(x, m)}. ${wideTodo([x], m, src)}`
          : `${how(x, m)}: if it configures something (trusted proxies, allowed clients) it must name ${img ?? formatCidr(m.to)} too during the move and only that after it.`;
        ctx.out.push(ref(src, m, 'warning', x.entry.text, note, x.wide ? undefined : img));
        continue;
      }
      const svc = m.move.role === 'service' ? serviceWithClusterIP(ctx.snap, x.entry.text) : undefined;
      const mapped = ctx.clusterIPs.get(x.entry.text);
      if (src.onlyMoved && !mapped) continue;
      const to = m.move.role === 'service' ? (mapped ?? img) : undefined;
      const proposed = to === undefined ? undefined : src.whole !== undefined ? src.whole.replace(x.entry.text, to) : to;
      if (m.move.role === 'pod') {
        const note = `${x.entry.text} is a pod address in the old pod range ${formatCidr(m.from)}: pods get new addresses in ${formatCidr(m.to)} `
          + 'when they move, so nothing answers at it afterwards. Name a Service instead, or write the new address once the pod has moved.';
        ctx.out.push(ref(src, m, src.strict ? 'error' : 'warning', x.entry.text, note));
        continue;
      }
      const what = svc ? `the ClusterIP of Service ${svc.namespace}/${svc.name}` : `an address in the old Service range ${formatCidr(m.from)} that no Service holds now`;
      const note = `${x.entry.text} is ${what}: after the move nothing answers at it. ${src.why ? `${src.why}. ` : ''}`
        + (to ? `Change it to ${to}${mapped ? ' (the plan\'s mapping)' : ''} once the Service has moved (during the move both answer).` : 'Review by hand.');
      ctx.out.push(ref(src, m, svc || src.strict ? 'error' : 'warning', x.entry.text, note, proposed));
    }
  }
}

/** Service allow-lists as ReferenceSources: spec.loadBalancerSourceRanges and the source-ranges annotation. */
function serviceSources(snap: Snapshot): ReferenceSource[] {
  const out: ReferenceSource[] = [];
  for (const s of snap.services) {
    const b = { kind: 'Service', apiVersion: 'v1', namespace: s.namespace, name: s.name };
    if (s.loadBalancerSourceRanges.length > 0) {
      out.push({ ...b, field: 'spec.loadBalancerSourceRanges', format: 'list', use: 'allow', values: s.loadBalancerSourceRanges });
    }
    for (const [key, value] of Object.entries(s.annotations)) {
      if (SOURCE_RANGE_ANNOTATIONS[key] && typeof value === 'string') {
        out.push({ ...b, field: `metadata.annotations["${key}"]`, format: 'csv', use: SOURCE_RANGE_ANNOTATIONS[key], values: [value] });
      }
    }
  }
  return out;
}

function parseMove(m: RangeMove): ParsedMove {
  const from = parseCidr(m.from, { normalize: true });
  const to = parseCidr(m.to, { normalize: true, family: from.family });
  return { move: m, from, to };
}

/**
 * Everything in the snapshot that names an old range and would break after the moves, errors first (in the
 * order found within a severity). `clusterIPs` (old → new, the plan's mapping) gives the new value of a ClusterIP
 * written somewhere. Throws NetError on a move that is not a CIDR pair of one family.
 */
export function scanReferences(snap: Snapshot, moves: readonly RangeMove[], opts: { clusterIPs?: ReadonlyMap<string, string> } = {}): Reference[] {
  const all = [...(snap.referenceSources ?? []), ...serviceSources(snap)];
  const ctx: Ctx = { snap, moves: moves.map(parseMove), out: [], all, clusterIPs: opts.clusterIPs ?? new Map() };
  if (ctx.moves.length === 0) return [];
  for (const src of all) {
    if (src.use === 'address') scanAddress(ctx, src);
    else if (src.format === 'text') scanText(ctx, src);
    else if (src.use === 'cluster') scanClusterCIDR(ctx, src);
    else if (src.format === 'cidr') scanSingle(ctx, src);
    else scanList(ctx, src);
  }
  const rank = { error: 0, warning: 1 };
  return ctx.out
    .map((r, i) => ({ r, i }))
    .sort((a, b) => rank[a.r.severity] - rank[b.r.severity] || a.i - b.i)
    .map((x) => x.r);
}

// ---------------------------------------------------------------------------------------------------
// Markdown

function cell(s: string | undefined): string {
  return (s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function code(s: string | undefined): string {
  return s === undefined || s === '' ? '-' : `\`${s.replace(/`/g, "'")}\``;
}

/** A Markdown section listing the references, for a plan or a change request. */
export function renderReferences(refs: readonly Reference[]): string {
  let out = '## References to the old ranges\n\n';
  if (refs.length === 0) return `${out}Nothing found names an old range.\n`;
  const errors = refs.filter((r) => r.severity === 'error').length;
  const warnings = refs.length - errors;
  out += `${refs.length} place(s) name an old range (${errors} error(s), ${warnings} warning(s)). `
    + 'Errors break when the range moves; warnings are configuration text, or values that hold the old range among others (never rewritten), to check. During the move, allow-lists and '
    + 'policies must allow both the old and the new range (the proposed value); afterwards, only the new one.\n\n';
  out += '| Severity | Role | Object | Field | Value | Proposed | Note |\n| --- | --- | --- | --- | --- | --- | --- |\n';
  for (const r of refs) {
    const obj = `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
    out += `| ${[r.severity, r.role, obj, code(r.field), code(r.value), code(r.proposed), r.note].map(cell).join(' | ')} |\n`;
  }
  return out;
}

