import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as yaml from 'js-yaml';
import type { AvoidRange } from '../analyze/catalog.ts';
import { formatCidr, NetError, parseCidr } from '../net/index.ts';
import { ExitCode, UserError } from './errors.ts';

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

export function loadConfig(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): UserConfig {
  const file = configPath(explicit, env);
  if (!file) return { avoid: [] };
  let doc: any;
  try {
    doc = yaml.load(readFileSync(file, 'utf8'));
  } catch (e) {
    const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
    throw new UserError(`cannot read config file ${file}: ${msg}`, 'input');
  }
  if (doc == null) return { avoid: [], file };
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new UserError(`config file ${file} must be a YAML mapping with an "avoid" list`, 'input');
  }
  const avoid: AvoidRange[] = [];
  const list = doc.avoid ?? [];
  if (!Array.isArray(list)) throw new UserError(`config file ${file}: "avoid" must be a list`, 'input');
  for (const [i, item] of list.entries()) {
    const from = `${file} avoid[${i}]`;
    if (typeof item === 'string') avoid.push(parseAvoid(item, from));
    else if (item && typeof item === 'object' && typeof item.cidr === 'string') {
      avoid.push({ ...parseAvoid(item.cidr, from), reason: typeof item.reason === 'string' ? item.reason : '' });
    } else {
      throw new UserError(`${from}: each entry is a CIDR string or {cidr, reason}`, 'input');
    }
  }
  return { avoid, file };
}
