/**
 * kubectl's command-line habits on top of node:util parseArgs: `-o=json` (pflag reads `-X=VALUE` as the value
 * VALUE), "did you mean" for a mistyped flag or command, the program's name as the user called it (`kubectl
 * renumber` when run as the kubectl plugin), and parseArgs' own errors as one plain sentence.
 */
import { basename } from 'node:path';
import type { Io, Options } from './command.ts';
import { UsageError } from './errors.ts';

/**
 * `-o=json` → `-o json` for a short flag that takes a value (before any `--`), and kubectl's log level in each of
 * its spellings (`-v=6`, `-v6`, `-v 6`, `--v=6`, `--v 6`) → `--v=6`; `-v` alone stays the boolean -v (--verbose).
 * Everything else untouched.
 */
export function normalizeArgs(args: readonly string[], options: Options): string[] {
  const shorts = new Set(Object.values(options).filter((o) => o.type === 'string' && o.short).map((o) => o.short!));
  const level = 'v' in options;
  const out: string[] = [];
  let ended = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (ended) { out.push(a); continue; }
    if (a === '--') { ended = true; out.push(a); continue; }
    if (level) {
      const v = a.match(/^(?:-v=?|--v=)(.*)$/s);
      if (v && (a.startsWith('--v=') || a.startsWith('-v=') || /^\d+$/.test(v[1]!))) { out.push(`--v=${v[1]}`); continue; }
      if ((a === '-v' || a === '--v') && /^\d+$/.test(args[i + 1] ?? '')) { out.push(`--v=${args[++i]}`); continue; }
    }
    const m = a.match(/^-([A-Za-z])=(.*)$/s);
    if (m && shorts.has(m[1]!)) out.push(`-${m[1]}`, m[2]!);
    else out.push(a);
  }
  return out;
}

/** Levenshtein distance (insertions, deletions, substitutions, and transpositions of neighbours). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidates closest to `word`, like cobra's suggestions: within an edit distance of 2 (3 for words of 8 or
 * more letters), or starting with it; the closest first, at most three.
 */
export function suggestions(word: string, candidates: readonly string[]): string[] {
  const w = word.toLowerCase();
  const limit = w.length >= 8 ? 3 : 2;
  return candidates
    .map((c) => ({ c, d: editDistance(w, c.toLowerCase()) }))
    .filter(({ c, d }) => d <= limit || (w.length >= 2 && c.startsWith(w)))
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .slice(0, 3)
    .map(({ c }) => c);
}

/** " (did you mean --kubeconfig?)", " (did you mean --a or --b?)", or "". */
export function didYouMean(found: readonly string[]): string {
  if (found.length === 0) return '';
  return ` (did you mean ${found.length === 1 ? found[0] : `${found.slice(0, -1).join(', ')} or ${found.at(-1)}`}?)`;
}

/**
 * parseArgs' error as one sentence: the flag, what is wrong, the closest known flags, and where to look.
 * (parseArgs' own text spans lines and quotes the flag in an unbalanced way.)
 */
export function parseArgsError(e: unknown, cmd: string, options: Options, taken: (flag: string) => boolean, prog: string): UsageError {
  const msg = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: string }).code;
  const see = ` (see "${prog} ${cmd} --help")`;
  const flagOf = (m: RegExpMatchArray | null) => m?.[1]?.replace(/ <value>$/, '') ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = flagOf(msg.match(/^Unknown option '([^']+)'/));
    const longs = Object.keys(options).filter(taken).map((k) => `--${k}`);
    if (flag.startsWith('--')) return new UsageError(`unknown flag ${flag} for ${cmd}${didYouMean(suggestions(flag, longs)) || see}`);
    const shorts = Object.entries(options).filter(([k, o]) => o.short && taken(k)).map(([k, o]) => `-${o.short} (--${k})`);
    return new UsageError(`unknown shorthand flag ${flag} for ${cmd}${shorts.length ? ` (${cmd} takes ${shorts.join(', ')})` : ''}${see}`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    let m = msg.match(/^Option '([^']+)' argument is ambiguous/);
    if (m) return new UsageError(`${flagOf(m)} needs a value, and the next word looks like a flag (write ${flagOf(m)}=VALUE for a value that starts with "-")${see}`);
    m = msg.match(/^Option '([^']+)' argument missing/);
    if (m) return new UsageError(`${flagOf(m)} needs a value${see}`);
    m = msg.match(/^Option '([^']+)' does not take an argument/);
    if (m) return new UsageError(`${flagOf(m)} takes no value${see}`);
  }
  return new UsageError(`${msg.split('\n')[0]}${see}`);
}

/**
 * The name to show in usage, help and error text: `kubectl renumber` when run as the kubectl plugin (the
 * program was called as kubectl-renumber, or kubectl set KUBECTL_PLUGINS_CALLER), else `kube-renumber`.
 */
export function programName(io: Pick<Io, 'env' | 'program'>): string {
  const p = io.program ? basename(io.program) : '';
  if (io.env.KUBECTL_PLUGINS_CALLER || /^kubectl[-_]/.test(p)) return 'kubectl renumber';
  return 'kube-renumber';
}

const COMMAND_WORDS = 'COMMAND|inspect|calc|suggest|plan|apply|resume|status|verify|rollback|restore|probe|version|help|completion';
const INVOCATION = new RegExp(`(?<![\\w./-])kube-renumber(?= (?:${COMMAND_WORDS})\\b)`, 'g');

/** Every "kube-renumber COMMAND" in `text` as the program was called ("kubectl renumber COMMAND" as a plugin). */
export function brand(text: string, prog: string): string {
  return prog === 'kube-renumber' ? text : text.replace(INVOCATION, prog);
}
