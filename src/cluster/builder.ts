/**
 * The mutable state of one snapshot build: the warnings (capped at MAX_WARNINGS) and the ranges found so far,
 * with the lenient CIDR and IP parsing every reader shares.
 */
import { type Cidr, formatCidr, formatIP, parseCidr, parseIP } from '../net/index.ts';
import type { ClusterRange, RangeRole } from './types.ts';
import type { RawRange } from '../vocabulary.ts';

/** Interpretation warnings kept, at most (gaps are always kept); the rest are counted in one line. */
export const MAX_WARNINGS = 200;

/** Display order of range roles in Snapshot.ranges (discovery order within a role). */
const ROLE_ORDER: RangeRole[] = ['service', 'pod', 'pool', 'masquerade', 'node', 'node-pod'];

const CANONICAL_V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Mutable state of one build. */
export class Builder {
  readonly warnings: string[] = [];
  private suppressed = 0;
  private readonly rangeKeys = new Set<string>();
  private readonly rangesByRole = new Map<RangeRole, ClusterRange[]>();
  private readonly cidrCache = new Map<string, Cidr | string>();

  /** Records an interpretation warning (counted only, past MAX_WARNINGS). */
  warn(msg: string): void {
    if (this.warnings.length < MAX_WARNINGS) this.warnings.push(msg);
    else this.suppressed++;
  }

  /** The snapshot's warnings: the gaps first, then the kept warnings, then the count of the others. */
  finishWarnings(gaps: string[]): string[] {
    const out = [...gaps, ...this.warnings];
    if (this.suppressed > 0) out.push(`${this.suppressed} more warning(s) not shown`);
    return out;
  }

  /** Parses a CIDR leniently (as Kubernetes does: host bits are masked, with a warning). */
  parseCidr(raw: unknown, what: string): Cidr | undefined {
    if (typeof raw !== 'string') {
      this.warn(`${what}: ${JSON.stringify(raw)} is not a CIDR`);
      return undefined;
    }
    const key = raw.trim();
    let c = this.cidrCache.get(key);
    if (c === undefined) {
      try {
        c = parseCidr(key);
      } catch (e) {
        try {
          c = parseCidr(key, { normalize: true });
          this.warn(`${what}: "${key}" has host bits set; read as ${formatCidr(c)}`);
        } catch {
          c = (e as Error).message;
        }
      }
      this.cidrCache.set(key, c);
    }
    if (typeof c === 'string') {
      this.warn(`${what}: "${key}" is not a CIDR (${c})`);
      return undefined;
    }
    return c;
  }

  /** Like parseCidr, formatted. */
  cidr(raw: unknown, what: string): string | undefined {
    const c = this.parseCidr(raw, what);
    return c ? formatCidr(c) : undefined;
  }

  /** Parses and formats an IP (canonical IPv4 passes through untouched: the common, hot case). */
  ip(raw: unknown, what: string): string | undefined {
    if (typeof raw === 'string' && CANONICAL_V4.test(raw)) return raw;
    if (typeof raw !== 'string') {
      this.warn(`${what} ${JSON.stringify(raw)} is not an IP`);
      return undefined;
    }
    try {
      return formatIP(parseIP(raw));
    } catch {
      this.warn(`${what} "${raw}" is not an IP`);
      return undefined;
    }
  }

  /** Adds a range (normalized); returns the normalized CIDR, or undefined when it is not one. */
  addRange(raw: unknown, role: RangeRole, source: string, label: string): string | undefined {
    const cidr = this.cidr(raw, source);
    if (cidr === undefined) return undefined;
    this.addNormalizedRange(cidr, role, source, label);
    return cidr;
  }

  /** Adds an already normalized range, once per (CIDR, role, source). */
  addNormalizedRange(cidr: string, role: RangeRole, source: string, label: string): void {
    const key = `${cidr}\u0000${role}\u0000${source}`;
    if (this.rangeKeys.has(key)) return;
    this.rangeKeys.add(key);
    let list = this.rangesByRole.get(role);
    if (!list) this.rangesByRole.set(role, (list = []));
    list.push({ cidr, role, source, label });
  }

  /** Adds a range a distribution or CNI parser found. */
  addRaw(r: RawRange): string | undefined {
    return this.addRange(r.cidr, r.role, r.source, r.label);
  }

  /** All ranges, in ROLE_ORDER. */
  ranges(): ClusterRange[] {
    return ROLE_ORDER.flatMap((r) => this.rangesByRole.get(r) ?? []);
  }

  /** The ranges of one role, in discovery order. */
  rangesOf(role: RangeRole): ClusterRange[] {
    return this.rangesByRole.get(role) ?? [];
  }
}
