import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as yaml from 'js-yaml';
import type { AvoidRange } from '../analyze/catalog.ts';
import { errorLine } from '../errors.ts';
import { formatCidr, NetError, parseCidr } from '../net/index.ts';
import { InputError } from './errors.ts';

/** The user's config file (YAML). Documented in README "Configuration". */
export interface UserConfig {
  avoid: AvoidRange[];
  file?: string;
}

/** `--avoid CIDR[=reason]`. */
export function parseAvoid(value: string, from = '--avoid'): AvoidRange {
  const eq = value.indexOf('=');
  const cidr = (eq < 0 ? value : value.slice(0, eq)).trim();
  const reason = eq < 0 ? '' : value.slice(eq + 1).trim();
  try {
    return { cidr: formatCidr(parseCidr(cidr)), reason, from };
  } catch (e) {
    if (e instanceof NetError) throw new NetError(`${from}: ${e.message}`);
    throw e;
  }
}

export function configPath(explicit: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (explicit) return explicit;
  if (env.KUBE_RENUMBER_CONFIG) return env.KUBE_RENUMBER_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME ?? homedir(), '.config');
  const file = join(base, 'kube-renumber', 'config.yaml');
  return existsSync(file) ? file : undefined;
}

const CONFIG_KEYS = ['avoid'];
const ENTRY_KEYS = ['cidr', 'reason'];

/** An avoid entry of a config file: a bad CIDR there is a bad file (exit 3), not a bad command line. */
function parseConfigAvoid(value: string, from: string): AvoidRange {
  try {
    return parseAvoid(value, from);
  } catch (e) {
    if (e instanceof NetError) throw new InputError(e.message);
    throw e;
  }
}

/**
 * The config file: the explicit path, else KUBE_RENUMBER_CONFIG, else ~/.config/kube-renumber/config.yaml when
 * present. Empty (or only comments) is the same as no file. Anything unreadable, not YAML, of the wrong shape or
 * with a bad CIDR is an InputError (exit 3) naming the file and the entry.
 */
export function loadConfig(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): UserConfig {
  const file = configPath(explicit, env);
  if (!file) return { avoid: [] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file'
      : err.code === 'EISDIR' ? 'it is a directory'
        : err.code === 'EACCES' || err.code === 'EPERM' ? 'permission denied'
          : err.code ?? errorLine(e);
    throw new InputError(`cannot read config file ${file}: ${why}`);
  }
  text = text.replace(/^\uFEFF/, '');
  if (text.split(/\r?\n/).every((l) => /^\s*(#.*)?$/.test(l))) return { avoid: [], file };
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    const msg = errorLine(e);
    throw new InputError(`config file ${file} is not valid YAML: ${msg}`);
  }
  if (doc == null) return { avoid: [], file };
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new InputError(`config file ${file} must be a YAML mapping with an "avoid" list, not ${Array.isArray(doc) ? 'a list' : `a ${typeof doc}`}`);
  }
  const unknown = Object.keys(doc).filter((k) => !CONFIG_KEYS.includes(k));
  if (unknown.length > 0) throw new InputError(`config file ${file}: unknown key "${unknown[0]}" (known: ${CONFIG_KEYS.join(', ')})`);
  const avoid: AvoidRange[] = [];
  const list: unknown = (doc as { avoid?: unknown }).avoid ?? [];
  if (!Array.isArray(list)) throw new InputError(`config file ${file}: "avoid" must be a list`);
  for (const [i, item] of list.entries()) {
    const from = `${file} avoid[${i}]`;
    if (typeof item === 'string') {
      avoid.push(parseConfigAvoid(item, from));
    } else if (item && typeof item === 'object' && !Array.isArray(item)) {
      const o = item as Record<string, unknown>;
      const extra = Object.keys(o).filter((k) => !ENTRY_KEYS.includes(k));
      if (extra.length > 0) throw new InputError(`${from}: unknown key "${extra[0]}" (an entry is a CIDR string or {cidr, reason})`);
      if (typeof o.cidr !== 'string') throw new InputError(`${from}: "cidr" must be a string such as 10.8.0.0/16`);
      if (o.reason !== undefined && o.reason !== null && typeof o.reason !== 'string') throw new InputError(`${from}: "reason" must be a string`);
      if (o.cidr.includes('=')) throw new InputError(`${from}: "cidr" holds "=": give the reason as "reason"`);
      avoid.push({ ...parseConfigAvoid(o.cidr, from), reason: typeof o.reason === 'string' ? o.reason : '' });
    } else {
      throw new InputError(`${from}: each entry is a CIDR string or {cidr, reason}`);
    }
  }
  return { avoid, file };
}
