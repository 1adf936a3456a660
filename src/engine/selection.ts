/**
 * --only / --skip: which steps of a plan a run executes, named like kubeadm phases. Each value is a step id
 * or a pattern with `*` (any characters), and may list several, comma-separated: `--skip 'move-tier-2-*'`,
 * `--only create-target-servicecidr,move-tier-1-batch-1`. Every pattern must name at least one step of the
 * plan, so a typo is an error rather than a run that does everything.
 */
import { UsageError } from '../errors.ts';
import type { StepSelection } from './runner.ts';

/** Step ids are letters, digits, "-", "_" and "."; patterns add "*". */
const PATTERN = /^[A-Za-z0-9*]([-A-Za-z0-9_.*]*[A-Za-z0-9*])?$/;

function matcher(pattern: string): (id: string) => boolean {
  if (!pattern.includes('*')) return (id) => id === pattern;
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.]/g, '\\.')).join('.*')}$`);
  return (id) => re.test(id);
}

function expand(flag: 'only' | 'skip', values: readonly string[], ids: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const v of values) {
    for (const raw of v.split(',')) {
      const p = raw.trim();
      if (p === '') throw new UsageError(`--${flag} needs a step id of the plan (or a pattern with *), e.g. --${flag} ${ids[0] ?? 'verify'}`);
      if (p.length > 253 || !PATTERN.test(p)) throw new UsageError(`--${flag} ${JSON.stringify(p)} is not a step id or pattern (letters, digits, "-", "_", "." and "*")`);
      const m = matcher(p);
      const hits = ids.filter(m);
      if (hits.length === 0) {
        const shown = ids.length > 12 ? `${ids.slice(0, 12).join(', ')}, ... (${ids.length} in all; see kube-renumber status)` : ids.join(', ');
        throw new UsageError(`--${flag} ${JSON.stringify(p)} names no step of the plan (its steps: ${shown})`);
      }
      for (const h of hits) out.add(h);
    }
  }
  return out;
}

/** The selection for a run, or undefined when neither flag is given. Throws UsageError (exit 2). */
export function parseSelection(only: readonly string[], skip: readonly string[], ids: readonly string[]): StepSelection | undefined {
  if (only.length === 0 && skip.length === 0) return undefined;
  const sel: StepSelection = {};
  if (only.length > 0) sel.only = expand('only', only, ids);
  if (skip.length > 0) sel.skip = expand('skip', skip, ids);
  if (sel.only && [...sel.only].every((id) => sel.skip?.has(id))) {
    throw new UsageError('--only and --skip together leave no step to run');
  }
  return sel;
}
