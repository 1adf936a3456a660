/**
 * Readers of a plan document's fields for its validation (render.ts validatePlan, and each pod path's own section,
 * src/plan/pod-paths/): each checks one field's type and value and names the first bad one by its path in the
 * document (spec.serviceCIDR.target[0]). Pure.
 */
import { InputError } from '../cluster/files.ts';
import { contains, familyName, NetError, parseCidr, parseIP, type Cidr, type IP } from '../net/index.ts';

/** A plan file that cannot be used; the message names the field. Exit code 3 like any unreadable input. */
export class PlanFormatError extends InputError {
  /** The path of the bad field in the document (spec.serviceCIDR.target[0]), when one is to blame. */
  readonly field?: string;
  constructor(message: string, field?: string) {
    super(message);
    this.name = 'PlanFormatError';
    this.field = field;
  }
}

export type Obj = Record<string, unknown>;

export function fail(path: string, why: string): never {
  throw new PlanFormatError(`invalid plan: ${path}: ${why}`, path);
}
export function show(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Date) return `a date (${JSON.stringify(v)})`;
  if (typeof v === 'object') return 'a mapping';
  const t = JSON.stringify(v) ?? String(v);
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
export function obj(v: unknown, path: string): Obj {
  if (!v || typeof v !== 'object' || Array.isArray(v) || v instanceof Date) fail(path, v === undefined ? 'missing' : `must be a mapping (got ${show(v)})`);
  return v as Obj;
}
export function str(o: Obj, k: string, path: string, optional = false): string | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string') fail(`${path}.${k}`, v === undefined ? 'missing' : `must be a string (got ${show(v)})`);
  return v;
}
export function strList(o: Obj, k: string, path: string, optional = false): string[] | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (!Array.isArray(v)) fail(`${path}.${k}`, v === undefined ? 'missing' : `must be a list (got ${show(v)})`);
  v.forEach((x, i) => { if (typeof x !== 'string') fail(`${path}.${k}[${i}]`, `must be a string (got ${show(x)})`); });
  return v as string[];
}
export function bool(o: Obj, k: string, path: string, optional = false): boolean | undefined {
  if (o[k] === undefined && optional) return undefined;
  if (typeof o[k] !== 'boolean') fail(`${path}.${k}`, o[k] === undefined ? 'missing' : `must be true or false (got ${show(o[k])})`);
  return o[k] as boolean;
}
export function list(o: Obj, k: string, path: string, optional = false): unknown[] | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (!Array.isArray(v)) fail(`${path}.${k}`, v === undefined ? 'missing' : `must be a list (got ${show(v)})`);
  return v;
}
export function oneOf<T extends string>(o: Obj, k: string, path: string, allowed: readonly T[], optional = false): T | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v as T)) fail(`${path}.${k}`, `must be one of ${allowed.join(', ')}${v === undefined ? ' (missing)' : ` (got ${show(v)})`}`);
  return v as T;
}
export function int(o: Obj, k: string, path: string, min: number, max: number, optional = false): number | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) fail(`${path}.${k}`, `must be a whole number from ${min} to ${max} (got ${show(v)})`);
  return v;
}
export function onlyKeys(o: Obj, path: string, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(path === '' ? k : `${path}.${k}`, `unknown field (expected ${allowed.join(', ')})`);
}

/** DNS-1123 label (namespaces, Service names): lowercase alphanumerics and "-", at most 63. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** DNS-1123 subdomain (nodes, pools, ServiceCIDRs, Deployments): labels joined by ".", at most 253. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export function label(o: Obj, k: string, path: string, opts: { optional?: boolean; empty?: boolean } = {}): string | undefined {
  const v = str(o, k, path, opts.optional);
  if (v === undefined || (v === '' && opts.empty)) return v;
  if (!DNS_LABEL.test(v)) fail(`${path}.${k}`, `${show(v)} is not a valid name (lowercase letters, digits and "-", at most 63)`);
  return v;
}
export function subdomain(o: Obj, k: string, path: string): string {
  const v = str(o, k, path)!;
  if (v.length > 253 || !DNS_SUBDOMAIN.test(v)) fail(`${path}.${k}`, `${show(v)} is not a valid name (lowercase letters, digits, "-" and ".", at most 253)`);
  return v;
}
/** A step id: what the journal, --ack-gate and status name the step by. */
export const STEP_ID = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$/;

export function cidrAt(v: string, path: string): Cidr {
  try {
    return parseCidr(v);
  } catch (e) {
    if (e instanceof NetError) fail(path, `${show(v)} is not a CIDR (${e.message.replace(/^invalid CIDR "[^"]*": /, '')})`);
    throw e;
  }
}
export function ipAt(v: string, path: string): IP {
  try {
    return parseIP(v);
  } catch (e) {
    if (e instanceof NetError) fail(path, `${show(v)} is not an IP address (${e.message.replace(/^invalid IP address "[^"]*": /, '')})`);
    throw e;
  }
}
export function cidrList(o: Obj, k: string, path: string, opts: { nonEmpty?: boolean; onePerFamily?: boolean } = {}): Cidr[] {
  const raw = strList(o, k, path)!;
  if (opts.nonEmpty && raw.length === 0) fail(`${path}.${k}`, 'must name at least one CIDR');
  const out = raw.map((c, i) => cidrAt(c, `${path}.${k}[${i}]`));
  if (opts.onePerFamily) {
    out.forEach((c, i) => {
      if (out.findIndex((x) => x.family === c.family) !== i) fail(`${path}.${k}[${i}]`, `${show(raw[i])}: at most one ${familyName(c.family)} CIDR`);
    });
  }
  return out;
}
export function inAny(ranges: readonly Cidr[], x: Cidr | IP): boolean {
  return ranges.some((r) => r.family === x.family && contains(r, x));
}
export const fam = (c: Cidr | IP) => familyName(c.family);
