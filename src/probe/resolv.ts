/**
 * `--dns-server auto`: the first `nameserver` of resolv.conf. In a pod that is the cluster DNS Service (the
 * kubelet writes the pod's resolv.conf from its clusterDNS), so the probe finds it without being told.
 * Node built-ins only: this file runs inside the probe pod.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export const RESOLV_CONF = '/etc/resolv.conf';

export interface ResolvConf {
  /** `nameserver` lines, in order (IP addresses only; anything else is skipped) */
  nameservers: string[];
  /** the last `search` line's domains (resolv.conf semantics: a later line replaces an earlier one) */
  search: string[];
}

/** Parse resolv.conf text: comments (`#`, `;`) and unknown lines are ignored. */
export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  let search: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (!line) continue;
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) {
      // an IPv6 address may carry a zone (fe80::1%eth0); the Resolver takes it as it is
      const ip = rest[0];
      if (isIP(ip.replace(/%.*$/, ''))) nameservers.push(ip);
    } else if (key === 'search' || key === 'domain') {
      search = rest;
    }
  }
  return { nameservers, search };
}

/** The first nameserver of the resolv.conf at `path`; throws an Error saying why there is none. */
export function resolvConfNameserver(path: string = RESOLV_CONF, read: (p: string) => string = (p) => readFileSync(p, 'utf8')): string {
  let text: string;
  try {
    text = read(path);
  } catch (e) {
    throw new Error(`--dns-server auto: cannot read ${path}: ${(e as Error).message.split('\n')[0]}`);
  }
  const first = parseResolvConf(text).nameservers[0];
  if (!first) throw new Error(`--dns-server auto: no nameserver line with an IP address in ${path}`);
  return first;
}
