/**
 * Credentials never leave the process in a message: every text the kube layer builds for the user, and every
 * line the CLI writes to stderr, goes through `redact`. Two nets: the credentials actually loaded (tokens,
 * passwords, keys, URL userinfo, exec plugin tokens) registered as they are read, and patterns for the shapes a
 * credential takes in text (URL userinfo, Authorization values, credential query parameters, private keys,
 * JWTs, credential fields in JSON or YAML).
 */

/** What replaces a credential. */
export const REDACTED = '[redacted]';

/** Shorter strings are not registered: they would mask ordinary words. */
const MIN_SECRET_LENGTH = 6;

const secrets = new Set<string>();
let ordered: string[] = [];

/** Remember a credential so that no later message can contain it. */
export function registerSecret(value: unknown): void {
  if (typeof value !== 'string') return;
  const candidates = [value, value.trim()];
  // A base64 credential (client-key-data) is also masked in its decoded form, line by line.
  if (/^[A-Za-z0-9+/=\s]+$/.test(value) && value.length >= 16) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    for (const line of decoded.split('\n')) if (!/^-----/.test(line.trim())) candidates.push(line.trim());
  }
  if (value.includes('\n')) for (const line of value.split('\n')) if (!/^-----/.test(line.trim())) candidates.push(line.trim());
  let added = false;
  for (const c of candidates) {
    if (c.length >= MIN_SECRET_LENGTH && !secrets.has(c)) { secrets.add(c); added = true; }
    // Percent-encoded forms appear in URLs.
    const enc = encodeURIComponent(c);
    if (enc !== c && enc.length >= MIN_SECRET_LENGTH && !secrets.has(enc)) { secrets.add(enc); added = true; }
  }
  if (added) ordered = [...secrets].sort((a, b) => b.length - a.length);
}

/** Query parameter names that carry credentials. */
const SECRET_PARAM = '(?:[A-Za-z0-9_.-]*(?:token|passw(?:or)?d|passwd|secret|api[_-]?key|apikey|signature|credential|session|auth)[A-Za-z0-9_.-]*|key|sig|code)';
/** Field names (JSON, YAML, kubeconfig, ExecCredential) that carry credentials. */
const SECRET_FIELD = '(?:(?:id|access|refresh|bearer|auth|session)?[_-]?token|idToken|accessToken|refreshToken|passw(?:or)?d|passwd|client[_-]?secret|clientSecret|api[_-]?key|apiKey|client-key-data|clientKeyData|authorization)';

const PATTERNS: Array<[RegExp, string]> = [
  // PEM private keys, whole blocks or a block cut short.
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, `${REDACTED} private key`],
  // URL userinfo: scheme://user:password@host, scheme://token@host.
  [/([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s/?#@'"]*@/g, `$1${REDACTED}@`],
  // user:password@host without a scheme.
  [/(?<![A-Za-z0-9._~%!$&'()*+,;=:-])[A-Za-z0-9._~%!$&'()*+,;=-]+:[^\s/?#@'"]+@(?=[A-Za-z0-9[])/g, `${REDACTED}@`],
  // Authorization header values.
  [/\b(Bearer|Basic|Digest|Negotiate|BEARER|BASIC) +(?!\[redacted\])[A-Za-z0-9._~+/=-]{6,}/g, `$1 ${REDACTED}`],
  // Credential query parameters.
  [new RegExp(`([?&;]${SECRET_PARAM}=)[^&#\\s'"]*`, 'gi'), `$1${REDACTED}`],
  // "token": "…", token: …, password=…
  [new RegExp(`((?<![A-Za-z0-9_./\\\\-])["']?${SECRET_FIELD}["']?\\s*[:=]\\s*)(?!\\[redacted\\])("[^"]*"|'[^']*'|[^\\s,;}\\]]+)`, 'gi'), `$1${REDACTED}`],
  // JWTs (service account tokens, OIDC id tokens).
  [/\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*/g, REDACTED],
];

/** The text with every registered credential and every credential-shaped part replaced. */
export function redact(text: string): string {
  let out = text;
  for (const s of ordered) if (out.includes(s)) out = out.split(s).join(REDACTED);
  for (const [re, rep] of PATTERNS) out = out.replace(re, rep);
  return out;
}

/** A URL for display: userinfo removed, credential query parameters masked. Unparsable input is redacted as text. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    let text = u.toString();
    // URL adds "/" to a bare origin; keep the server as it was written.
    if (u.pathname === '/' && !u.search && !u.hash && !url.endsWith('/')) text = text.slice(0, -1);
    return redact(text);
  } catch {
    return redact(url.includes('@') ? `${REDACTED}@${url.slice(url.lastIndexOf('@') + 1)}` : url);
  }
}
