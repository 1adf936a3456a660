/**
 * The address map: the ranges of one address family drawn as inline SVG. Pure (strings in, markup out).
 *
 * Layout. Address ranges of interest span from a /128 to a /0, so a linear scale shows either the whole space
 * (and every cluster range is a hairline) or one range (and the rest is off screen). CIDR blocks have a property
 * that gives a better layout: two blocks are either disjoint or one contains the other (a laminar family). So
 * the ranges form a forest by containment, and the map draws it as an icicle chart: each range is a box, the
 * ranges inside it are boxes in the row below, within its width, in address order, with the space between
 * them (addresses no listed range claims) drawn as hatched gaps.
 *
 * Widths are log-scaled per level: within its parent, a child or gap of n addresses gets a share proportional
 * to log2(n) + LOG_OFFSET (gaps at GAP_FACTOR of that), not to n, and no range gets less than the width its
 * CIDR needs as text (MIN_BOX, while the row has room). So a /24 node network beside a /12 target in a /8, or
 * an IPv6 /112 in fc00::/7, stays a readable box, while a bigger block still draws wider than a smaller one
 * beside it; the address order is kept, proportions are not (each box says its CIDR, its title its size).
 *
 * Each family gets an overview row (the whole space, /0, with its top-level blocks) and one detail panel per
 * top-level block that holds a cluster range, a target, a reserved or an avoided range: a zoom on the relevant
 * supernets (the RFC 1918 block, CGNAT, ...), each panel at the full width of the map.
 *
 * Every range box is a <g> carrying data-cidr, data-role and data-label (and data-conflicts: the numbers of the
 * conflicts it takes part in), with a <title> for hover text; the page's script shows the same text on a tap.
 */
import type { Severity } from '../analyze/catalog.ts';
import { bits, cidrLast, cidrSize, familyName, formatCidr, formatIP, type Cidr, type Family } from '../net/index.ts';

export type MapRole =
  | 'private' | 'catalog' | 'avoid' | 'reserved' | 'masquerade' | 'node' | 'service' | 'pod' | 'pool' | 'target' | 'kept';

/** Outermost first when two ranges have the same CIDR: context, then the cluster's, then the plan's. */
const ROLE_ORDER: readonly MapRole[] = ['private', 'catalog', 'avoid', 'reserved', 'masquerade', 'node', 'service', 'pod', 'pool', 'kept', 'target'];

/** Roles that belong to the cluster or the plan (the rest is context: well-known ranges). */
export const CLUSTER_ROLES: readonly MapRole[] = ['masquerade', 'node', 'service', 'pod', 'pool', 'reserved', 'avoid', 'target', 'kept'];

export const ROLE_TITLE: Record<MapRole, string> = {
  private: 'private range (RFC 1918 / ULA)',
  catalog: 'well-known range',
  avoid: 'range to avoid',
  reserved: 'reserved by the platform',
  masquerade: 'nonMasqueradeCIDR',
  node: 'node network',
  service: 'service range',
  pod: 'pod range',
  pool: 'Calico pool',
  target: 'target (new range)',
  kept: 'kept service range',
};

export interface MapRange {
  cidr: Cidr;
  role: MapRole;
  /** Short text drawn in the box. */
  name: string;
  /** The data-label: what the range is, as the report names it. */
  label: string;
  /** More text for the title and the details box (sources, reasons). */
  detail: string;
  /** For catalog ranges: how an overlap with it is reported. */
  level?: Severity;
  /** Numbers (1-based) of the conflicts this range takes part in, and the worst of their severities. */
  conflicts: number[];
  severity?: Severity;
}

interface TreeNode {
  r: MapRange;
  start: bigint;
  end: bigint;
  children: TreeNode[];
}

/** Sorted by address, then larger first, then ROLE_ORDER: a stack then nests each range in the last that holds it. */
export function containmentForest(ranges: readonly MapRange[]): TreeNode[] {
  const sorted = [...ranges].sort((a, b) =>
    (a.cidr.network < b.cidr.network ? -1 : a.cidr.network > b.cidr.network ? 1 : 0)
    || a.cidr.prefix - b.cidr.prefix
    || ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role));
  const roots: TreeNode[] = [];
  const stack: TreeNode[] = [];
  for (const r of sorted) {
    const node: TreeNode = { r, start: r.cidr.network, end: cidrLast(r.cidr), children: [] };
    while (stack.length > 0 && !(stack[stack.length - 1]!.start <= node.start && node.end <= stack[stack.length - 1]!.end)) stack.pop();
    if (stack.length > 0) stack[stack.length - 1]!.children.push(node);
    else roots.push(node);
    stack.push(node);
  }
  return roots;
}

const LOG_OFFSET = 6;
const GAP_FACTOR = 0.6;
/**
 * The overview row is a whole family, mostly addresses no listed range claims: its gaps get less room, and its
 * blocks (a /4 beside a /16) nearly the same, so each can say where it is.
 */
const OVERVIEW_GAP_FACTOR = 0.2;
const OVERVIEW_LOG_OFFSET = 16;

function log2(n: bigint): number {
  return n <= 1n ? 0 : Math.log2(Number(n));
}

type Piece = { node: TreeNode; start: bigint; end: bigint; weight: number } | { node?: undefined; start: bigint; end: bigint; weight: number };

/** The children of [start, end] and the gaps between them, in address order, each with its width weight. */
function pieces(start: bigint, end: bigint, children: readonly TreeNode[], gapFactor: number, offset: number): Piece[] {
  const out: Piece[] = [];
  let at = start;
  const gap = (s: bigint, e: bigint) => out.push({ start: s, end: e, weight: (log2(e - s + 1n) + offset) * gapFactor });
  for (const c of children) {
    if (c.start > at) gap(at, c.start - 1n);
    out.push({ node: c, start: c.start, end: c.end, weight: log2(c.end - c.start + 1n) + offset });
    at = c.end + 1n;
  }
  if (at <= end) gap(at, end);
  return out;
}

export function esc(s: string | number): string {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** "65,536 addresses", "2^64 addresses". */
export function sizeText(n: bigint): string {
  if (n < 10_000_000_000n) return `${Number(n).toLocaleString('en-US')} address${n === 1n ? '' : 'es'}`;
  const p = n.toString(2).length - 1;
  return (1n << BigInt(p)) === n ? `2^${p} addresses` : `about 2^${p} addresses`;
}

function rangeText(family: Family, start: bigint, end: bigint): string {
  return `${formatIP({ family, value: start })} – ${formatIP({ family, value: end })}`;
}

/** The title (hover text) of a range box. */
export function rangeTitle(r: MapRange, conflictText: (n: number) => string): string {
  const lines = [
    `${r.label} — ${formatCidr(r.cidr)}`,
    `${ROLE_TITLE[r.role]}; ${rangeText(r.cidr.family, r.cidr.network, cidrLast(r.cidr))} (${sizeText(cidrSize(r.cidr))})`,
  ];
  if (r.detail) lines.push(r.detail);
  for (const n of r.conflicts) lines.push(conflictText(n));
  return lines.join('\n');
}

/** Text cut to fit `width` pixels at the map's font size (an estimate: 6.4 px per character). */
function fit(s: string, width: number): string | undefined {
  const max = Math.floor((width - 8) / 6.4);
  if (max < 3) return undefined;
  return s.length <= max ? s : `${s.slice(0, Math.max(1, max - 1))}…`;
}

export const MAP_WIDTH = 1000;
const ROW = 46;
const BOX = 40;

function depthOf(n: TreeNode): number {
  return 1 + Math.max(0, ...n.children.map(depthOf));
}

function num(x: number): string {
  return (Math.round(x * 10) / 10).toString();
}

interface Ctx { conflictText: (n: number) => string; view: 'overview' | 'detail' }

function rangeBox(r: MapRange, x: number, y: number, w: number, ctx: Ctx): string {
  const cls = ['range', `role-${r.role}`, ...(r.level ? [`level-${r.level}`] : []), ...(r.severity ? ['conflict', `sev-${r.severity}`] : [])];
  const cidr = formatCidr(r.cidr);
  const rw = Math.max(1, w - 2);
  let out = `<g class="${cls.join(' ')}" data-cidr="${esc(cidr)}" data-role="${r.role}" data-label="${esc(r.label)}" data-view="${ctx.view}"`
    + `${r.conflicts.length ? ` data-conflicts="${r.conflicts.join(' ')}"` : ''}${r.severity ? ` data-severity="${r.severity}"` : ''} tabindex="0">`
    + `<title>${esc(rangeTitle(r, ctx.conflictText))}</title>`
    + `<rect x="${num(x + 1)}" y="${num(y)}" width="${num(rw)}" height="${BOX}" rx="3"></rect>`;
  const badge = r.conflicts.length > 0 && w >= 30 && ctx.view === 'detail';
  const textWidth = w - (badge ? 22 : 0);
  const name = fit(r.name, textWidth);
  const c = fit(cidr, w);
  if (ctx.view === 'overview') {
    // The overview is about where each block sits: its network address, then its prefix length and name.
    const net = fit(formatIP({ family: r.cidr.family, value: r.cidr.network }), w);
    const rest = fit(`/${r.cidr.prefix} ${r.name}`, w);
    if (net) out += `<text x="${num(x + 6)}" y="${num(y + 16)}" class="name mono">${esc(net)}</text>`;
    if (rest) out += `<text x="${num(x + 6)}" y="${num(y + 32)}" class="label">${esc(rest)}</text>`;
  } else if (name && c) {
    out += `<text x="${num(x + 6)}" y="${num(y + 16)}" class="name">${esc(name)}</text>`;
    out += `<text x="${num(x + 6)}" y="${num(y + 32)}" class="cidr">${esc(c)}</text>`;
  } else if (c) {
    out += `<text x="${num(x + 6)}" y="${num(y + 24)}" class="cidr">${esc(c)}</text>`;
  }
  if (badge) {
    const label = `${r.conflicts[0]}${r.conflicts.length > 1 ? '+' : ''}`;
    out += `<g class="badge"><circle cx="${num(x + w - 12)}" cy="${num(y + 11)}" r="8"></circle>`
      + `<text x="${num(x + w - 12)}" y="${num(y + 15)}" text-anchor="middle">${esc(label)}</text></g>`;
  }
  return `${out}</g>`;
}

function gapBox(family: Family, start: bigint, end: bigint, x: number, y: number, w: number): string {
  if (w < 1) return '';
  return `<g class="gap"><title>${esc(`no listed range: ${rangeText(family, start, end)} (${sizeText(end - start + 1n)})`)}</title>`
    + `<rect x="${num(x + 1)}" y="${num(y)}" width="${num(Math.max(0.5, w - 2))}" height="${BOX}"></rect></g>`;
}

function place(n: TreeNode, x: number, w: number, depth: number, ctx: Ctx, out: string[]): void {
  out.push(rangeBox(n.r, x, depth * ROW, w, ctx));
  if (n.children.length === 0) return;
  layoutRow(n.r.cidr.family, n.start, n.end, n.children, x, w, depth + 1, ctx, out, true);
}

function layoutRow(family: Family, start: bigint, end: bigint, children: readonly TreeNode[], x: number, w: number, depth: number, ctx: Ctx, out: string[], recurse: boolean): void {
  const ps = recurse ? pieces(start, end, children, GAP_FACTOR, LOG_OFFSET) : pieces(start, end, children, OVERVIEW_GAP_FACTOR, OVERVIEW_LOG_OFFSET);
  const widths = allot(ps, w, recurse ? MIN_BOX : MIN_OVERVIEW_BOX);
  let cx = x;
  ps.forEach((p, i) => {
    const pw = widths[i]!;
    if (p.node) {
      if (recurse) place(p.node, cx, pw, depth, ctx, out);
      else out.push(rangeBox(p.node.r, cx, depth * ROW, pw, ctx));
    } else {
      out.push(gapBox(family, p.start, p.end, cx, depth * ROW, pw));
    }
    cx += pw;
  });
}

/** Wide enough for an IPv6 CIDR such as fd00:10:96::/112 at the map's font size. */
const MIN_BOX = 116;
const MIN_OVERVIEW_BOX = 84;

/**
 * Widths for the pieces of a row, by weight, except that no range gets less than `min` (or an equal share of
 * the row when that is less): such ranges get `min` and the rest share what is left by weight. The log scale
 * alone leaves an IPv6 /112 beside a /8 gap too narrow to name.
 */
function allot(ps: readonly Piece[], w: number, min: number): number[] {
  const ranges = ps.filter((p) => p.node).length;
  const floor = ranges > 0 ? Math.min(min, w / ranges) : 0;
  const fixed = new Set<number>();
  for (;;) {
    const free = w - fixed.size * floor;
    const weight = ps.reduce((s, p, i) => s + (fixed.has(i) ? 0 : p.weight), 0);
    const widths = ps.map((p, i) => (fixed.has(i) ? floor : weight > 0 ? (free * p.weight) / weight : 0));
    const short = ps.map((p, i) => i).filter((i) => ps[i]!.node && !fixed.has(i) && widths[i]! < floor);
    if (short.length === 0) return widths;
    for (const i of short) fixed.add(i);
  }
}

function svg(width: number, height: number, label: string, body: string): string {
  // 2 units of margin all round, so the outlines of the outermost boxes are not clipped.
  return `<svg class="map" viewBox="-2 -2 ${width + 4} ${height + 4}" width="${width + 4}" height="${height + 4}" role="img" aria-label="${esc(label)}">${body}</svg>`;
}

export interface FamilyMap {
  family: Family;
  overview: string;
  panels: Array<{ id: string; title: string; svg: string }>;
}

/** Whether a subtree holds a range of the cluster or the plan (it then gets a detail panel). */
function relevant(n: TreeNode): boolean {
  return CLUSTER_ROLES.includes(n.r.role) || n.children.some(relevant);
}

/** The overview row and the detail panels of one family. */
export function familyMap(family: Family, ranges: readonly MapRange[], conflictText: (n: number) => string): FamilyMap {
  const roots = containmentForest(ranges.filter((r) => r.cidr.family === family));
  const name = familyName(family);
  const ov: string[] = [];
  layoutRow(family, 0n, (1n << BigInt(bits(family))) - 1n, roots, 0, MAP_WIDTH, 0, { conflictText, view: 'overview' }, ov, false);
  const overview = svg(MAP_WIDTH, BOX, `${name} address space: the top-level ranges, log-scaled`, ov.join(''));
  const panels = roots.filter(relevant).map((root, i) => {
    const out: string[] = [];
    place(root, 0, MAP_WIDTH, 0, { conflictText, view: 'detail' }, out);
    const h = depthOf(root) * ROW - (ROW - BOX);
    const title = `${formatCidr(root.r.cidr)} — ${root.r.name}`;
    return { id: `map-${name.toLowerCase()}-${i + 1}`, title, svg: svg(MAP_WIDTH, h, `${name} ${title}`, out.join('')) };
  });
  return { family, overview, panels };
}
