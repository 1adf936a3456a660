/**
 * Checks of values a plan is asked for, before anything is planned: the new Pod CIDR against the cluster and the
 * new Service CIDR, and names that end up in Kubernetes objects or select them (pool name, label keys, SANs).
 * Pure: each returns the problems as one-line messages (empty: fine).
 */
import { addressPlan, nodePodCIDRs } from '../analyze/addressing.ts';
import type { AvoidRange } from '../analyze/catalog.ts';
import type { Family, Snapshot } from '../cluster/types.ts';
import { contains, familyName, formatCidr, NetError, overlaps, parseIP, supernet, type Cidr } from '../net/index.ts';
import { parsePodTarget } from './pod-plan.ts';
import { overlapHits } from './preflight.ts';
import { parseTarget } from './service-mapping.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A Kubernetes DNS-1123 label: namespaces, Service names (lower-case alphanumerics and "-", at most 63). */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL.test(s);
}

/** A Kubernetes DNS-1123 subdomain: most object names (dot-separated labels, at most 253 characters). */
export function isDnsSubdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((l) => l.length > 0 && DNS_LABEL.test(l));
}

const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A label or annotation key: [PREFIX/]NAME, PREFIX a DNS-1123 subdomain, NAME at most 63 of [-A-Za-z0-9_.]. */
export function isQualifiedName(s: string): boolean {
  const parts = s.split('/');
  if (parts.length > 2) return false;
  const name = parts[parts.length - 1]!;
  if (name.length > 63 || !NAME_PART.test(name)) return false;
  return parts.length === 1 || isDnsSubdomain(parts[0]!);
}

/**
 * The problem with a NAMESPACE/NAME reference to an object, or undefined. `label`: the name is a DNS-1123 label
 * (Services), else a DNS-1123 subdomain (Deployments and most objects).
 */
export function objectRefProblem(ref: string, label = false): string | undefined {
  const parts = ref.split('/');
  if (parts.length !== 2) return 'must be namespace/name';
  if (!isDnsLabel(parts[0]!)) return `namespace "${parts[0]}" is not a valid namespace name`;
  if (!(label ? isDnsLabel(parts[1]!) : isDnsSubdomain(parts[1]!))) return `name "${parts[1]}" is not a valid ${label ? 'Service' : 'object'} name`;
  return undefined;
}

/**
 * The problem with an apiserver certificate SAN value, or undefined. Accepted: an IP address (v4 or v6), or a DNS
 * name that is `localhost`, starts with `kubernetes` (kubernetes, kubernetes.default, …), or has a dot; every
 * label 1–63 of letters, digits and "-", a leading "*." wildcard allowed. A single word such as "banana" is
 * refused: no apiserver is reached by it, it is far more likely a typo.
 */
export function certSanProblem(san: string): string | undefined {
  const s = san.trim();
  try {
    parseIP(s);
    return undefined;
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
  }
  if (/^[\d.]+$/.test(s) || s.includes(':')) return 'is not a valid IP address';
  const host = s.toLowerCase().replace(/\.$/, '');
  const labels = host.startsWith('*.') ? host.slice(2).split('.') : host.split('.');
  const okLabels = host.length <= 253 && labels.every((l) => l.length >= 1 && l.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(l));
  if (!okLabels) return 'is neither an IP address nor a DNS name';
  if (labels.length === 1 && host !== 'localhost' && !host.startsWith('kubernetes')) {
    return 'is a single-word name: give an IP address, or a DNS name with a dot (localhost and kubernetes* also work)';
  }
  return undefined;
}

export interface PodTargetOptions {
  /** --pod-cidr as given. */
  target: string;
  /** --service-cidr as given, when the plan moves both. */
  serviceTarget?: string;
  avoid?: readonly AvoidRange[];
}

/**
 * Why the new Pod CIDR is refused (empty: it is not, and the plan decides the rest). The same rules as for the
 * new Service CIDR: it parses, adds no family the cluster's pod ranges do not use, is apart from every current
 * pod range (equal to one is "nothing to move", containing one would put old and new addresses in one range),
 * and overlaps nothing else the cluster uses or must reach, the Service range and a new --service-cidr included.
 */
export function podTargetRefusals(snap: Snapshot, opts: PodTargetOptions): string[] {
  let target: Map<Family, Cidr>;
  try {
    target = parsePodTarget(opts.target);
  } catch (e) {
    if (e instanceof NetError) return [e.message];
    throw e;
  }
  const out: string[] = [];
  const current = currentPodRanges(snap);
  const families = new Set(current.map((c) => c.family));
  for (const t of target.values()) {
    if (families.size > 0 && !families.has(t.family)) {
      out.push(`${formatCidr(t)} is ${familyName(t.family)}, which the cluster's pod ranges do not use (${current.map(formatCidr).join(', ')}): give one CIDR per family the cluster uses`);
      continue;
    }
    for (const c of current.filter((x) => x.family === t.family)) {
      if (formatCidr(c) === formatCidr(t)) out.push(`${formatCidr(t)} is the current pod range: nothing to move`);
      else if (contains(t, c)) out.push(`${formatCidr(t)} contains the current pod range ${formatCidr(c)}: the new range must be apart from the old one (both are in use during the move)`);
    }
  }
  if (out.length > 0) return dedupe(out);
  for (const h of overlapHits(snap, opts.avoid ?? [], target)) out.push(h);
  if (opts.serviceTarget) {
    let svc: Map<Family, Cidr> | undefined;
    try { svc = parseTarget(opts.serviceTarget); } catch { svc = undefined; /* refused by the Service checks */ }
    for (const t of target.values()) {
      const s = svc?.get(t.family);
      if (s && overlaps(s, t)) out.push(`${formatCidr(t)} overlaps the new Service CIDR ${formatCidr(s)} (--service-cidr): the two must be apart`);
    }
  }
  return dedupe(out);
}

/** The cluster's pod ranges today: cluster CIDRs, Calico pools and node podCIDRs (each once, largest first). */
export function currentPodRanges(snap: Snapshot): Cidr[] {
  const all = [
    ...addressPlan(snap).filter((g) => g.role === 'pod' || g.role === 'pool').map((g) => g.parsed),
    ...nodePodCIDRs(snap).map((n) => n.cidr),
  ];
  // Largest first; a CIDR is dropped when one of its supernets is already kept (a lookup per prefix length, so
  // thousands of node podCIDRs stay linear).
  const out: Cidr[] = [];
  const kept = new Set<string>();
  const key = (c: Cidr) => `${c.family}/${c.network}/${c.prefix}`;
  for (const c of [...all].sort((a, b) => a.prefix - b.prefix)) {
    let inside = false;
    for (let p = 0; p <= c.prefix && !inside; p++) inside = kept.has(key(supernet(c, p)));
    if (inside) continue;
    kept.add(key(supernet(c, c.prefix)));
    out.push(c);
  }
  return out;
}

function dedupe(xs: string[]): string[] {
  return [...new Set(xs)];
}

