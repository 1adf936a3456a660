/**
 * Command-line flags of control-plane components as they appear in (mirror) pod specs.
 *
 * Handles the layouts seen in practice:
 *  - kubeadm: command: [kube-apiserver, --flag=value, ...]
 *  - kOps (current): command: [/go-runner], args: [--log-file=..., --also-stdout, /usr/local/bin/kube-apiserver, --flag=value, ...]
 *  - kOps (old) / hand-written: command: [/bin/sh, -c, "exec /usr/local/bin/kube-apiserver --flag=value ... 2>&1 | tee ..."]
 *  - `--flag value` as two separate words.
 * Pure; no I/O.
 */
import { splitList } from '../text.ts';

export { splitList };

/** Flags by name (without the leading dashes). A flag given twice keeps the last value, as pflag does. */
export type FlagMap = Map<string, string>;

/**
 * Words of a container's command + args. Elements that contain whitespace (shell scripts) are split
 * into words, with simple quote stripping; everything else is kept verbatim.
 */
export function containerWords(container: { command?: unknown; args?: unknown }): string[] {
  const out: string[] = [];
  for (const list of [container.command, container.args]) {
    if (!Array.isArray(list)) continue;
    for (const w of list) {
      if (typeof w !== 'string') continue;
      if (/\s/.test(w.trim())) {
        for (const part of w.trim().split(/\s+/)) out.push(part.replace(/^['"]|['"]$/g, ''));
      } else if (w !== '') {
        out.push(w);
      }
    }
  }
  return out;
}

/**
 * Parses flags that follow the component binary `binary` (e.g. "kube-apiserver"). Words before the
 * binary (a wrapper such as /go-runner and its own flags) are skipped when the binary appears among
 * the words; otherwise every word is parsed.
 */
export function parseComponentFlags(words: string[], binary: string): FlagMap {
  let start = 0;
  for (let i = words.length - 1; i >= 0; i--) {
    const w = words[i];
    if (w.startsWith('-')) continue;
    const base = w.slice(w.lastIndexOf('/') + 1);
    if (base === binary) {
      start = i + 1;
      break;
    }
  }
  return parseFlags(words.slice(start));
}

/** Parses `--flag=value`, `--flag value` and bare boolean `--flag` (value "true"). Single-dash flags too. */
export function parseFlags(words: string[]): FlagMap {
  const flags: FlagMap = new Map();
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (!w.startsWith('-') || w === '-' || w === '--') continue;
    const body = w.replace(/^--?/, '');
    const eq = body.indexOf('=');
    if (eq >= 0) {
      flags.set(body.slice(0, eq), body.slice(eq + 1));
      continue;
    }
    const next = words[i + 1];
    // `--flag value`: the next word is a value unless it is itself a flag or a shell operator.
    if (next !== undefined && !next.startsWith('-') && !/^(\||&&|;|>|2>|1>|2>&1|>>)/.test(next)) {
      flags.set(body, next);
      i++;
    } else {
      flags.set(body, 'true');
    }
  }
  return flags;
}

/** Parses a Go-style boolean flag value; undefined when it is not one. */
export function parseBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === '1' || v === 't') return true;
  if (v === 'false' || v === '0' || v === 'f') return false;
  return undefined;
}

/** Parses an integer flag value; undefined when it is not one. */
export function parseIntFlag(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value.trim());
}
