/**
 * The kubeconfig, resolved as kubectl resolves it and checked before anything is sent: --kubeconfig names one
 * file; else KUBECONFIG is a list of files merged so that the first file to set a name (cluster, user, context)
 * or current-context wins and missing files are skipped; else ~/.kube/config; else the in-cluster service
 * account. Every problem is one message naming the file and the entry: a bad value on the command line
 * (unknown --context) is a usage error, a kubeconfig that cannot be read or holds something malformed is an
 * input error, no kubeconfig at all is "unreachable". Credentials are registered for redaction as they are read.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { load as loadYaml } from 'js-yaml';
import { createRequire } from 'node:module';
import type * as ClientNode from '@kubernetes/client-node';
import type { Cluster, Context, KubeConfig, User } from '@kubernetes/client-node';
import { InputError, UsageError, UserError } from '../errors.ts';
import { UnreachableError } from './errors.ts';
import { redact, REDACTED, redactUrl, registerSecret } from './redact.ts';

/** What src/kube uses of @kubernetes/client-node. */
export type ClientNodeParts = Pick<typeof ClientNode, 'KubeConfig'>;

let clientNodeModule: ClientNodeParts | undefined;

/**
 * @kubernetes/client-node, loaded on first use: commands that never talk to a cluster do not pay for it. Run as
 * ES modules (dist/, or the .ts sources) there is no `require`, so one is made for this file. In the single-file
 * executable (`npm run dist`) the bundle is CommonJS: there `require` exists, and a literal `require('…')` is
 * what the bundler follows and embeds (still evaluated only on first use); the executable has no node_modules
 * for a made `require` to search. It requires ./client-node.ts, which names the one class used, so that the
 * bundle holds no more of the package than that class needs.
 */
export function clientNode(): ClientNodeParts {
  clientNodeModule ??= (typeof require === 'function'
    ? require('./client-node.ts')
    : createRequire(import.meta.url)('@kubernetes/client-node')) as ClientNodeParts;
  return clientNodeModule;
}

export interface KubeConfigOptions {
  /** --kubeconfig: use exactly this file. */
  kubeconfig?: string;
  /** --context */
  context?: string;
  /** Environment to resolve KUBECONFIG, HOME and in-cluster config from. */
  env?: NodeJS.ProcessEnv;
  /** kubectl's connection flags, laid over the selected context as kubectl lays them (see ConnectionOverrides). */
  overrides?: ConnectionOverrides;
}

/**
 * kubectl's connection flags (client-go clientcmd's ConfigOverrides): each one, when given, replaces what the
 * selected context says. --cluster and --user pick other kubeconfig entries than the context's; --server,
 * --certificate-authority and --insecure-skip-tls-verify replace fields of the cluster (a CA file drops the
 * kubeconfig's certificate-authority-data, --insecure-skip-tls-verify drops both, --server drops tls-server-name);
 * --token replaces the user's credentials but a client certificate; --as, --as-group, --as-uid replace the
 * user's as, as-groups, as-uid. With --server and no kubeconfig at all, the flags alone make the connection.
 */
export interface ConnectionOverrides {
  cluster?: string;
  user?: string;
  server?: string;
  token?: string;
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
  as?: string;
  asGroups?: string[];
  asUid?: string;
}

/** Who the requests act as (the Impersonate-* headers), as client-go sends them. */
export interface Impersonation {
  user: string;
  groups: string[];
  uid?: string;
  /** as-user-extra: Impersonate-Extra-KEY headers, one per value. */
  extra: Record<string, string[]>;
}

/** An exec credential plugin, as the kubeconfig's users[].user.exec gives it. */
export interface ExecConfig {
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  apiVersion: string;
  interactiveMode?: string;
  installHint?: string;
}

/** The selected cluster and user, checked, with what the transport needs beyond client-node's objects. */
export interface ResolvedKubeConfig {
  kc: KubeConfig;
  /** The context in use ('' in-cluster). */
  context: string;
  cluster: Cluster;
  user: User | null;
  /** Where the cluster and user entries came from, for messages ("kubeconfig /path" or "in-cluster config"). */
  clusterSource: string;
  userSource: string;
  /** The server URL to send to: normalised, without userinfo. */
  server: URL;
  /** The server for messages and output: no userinfo, no credential query parameters. */
  displayServer: string;
  /** username:password from the server URL, sent as Basic auth when the user has no credentials of its own. */
  urlUserinfo?: { username: string; password: string };
  /** The user's exec credential plugin (run by the transport, not client-node). */
  exec?: ExecConfig;
  /** The token read from token-file, trimmed like kubectl. */
  tokenFromFile?: string;
  /** users[].user.as, as-groups, as-uid, as-user-extra with --as, --as-group, --as-uid over them; none without a user to act as. */
  impersonate?: Impersonation;
  /** True when the config came from the in-cluster service account. */
  inCluster: boolean;
}

type Raw = Record<string, unknown>;
interface Entry { name: string; body: Raw | null | undefined; file: string; index: number }
interface ParsedFile { file: string; clusters: Entry[]; users: Entry[]; contexts: Entry[]; current?: string; empty: boolean }

const isMap = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeName = (v: unknown): string => v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a mapping' : typeof v === 'string' ? 'a string' : `a ${typeof v}`;

function errnoText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  const known: Record<string, string> = {
    ENOENT: 'does not exist', EACCES: 'permission denied', EPERM: 'permission denied', EISDIR: 'is a directory',
    ENOTDIR: 'a part of the path is not a directory', ELOOP: 'too many symbolic links', ENAMETOOLONG: 'the path is too long',
  };
  return code && known[code] ? `${known[code]} (${code})` : (code ?? 'cannot be read');
}

/** Read a file the kubeconfig names (CA, client certificate, key, token file) or fail naming the field. */
function readReferencedFile(path: string, what: string): Buffer {
  try {
    if (statSync(path).isDirectory()) throw Object.assign(new Error('directory'), { code: 'EISDIR' });
    return readFileSync(path);
  } catch (e) {
    throw new InputError(`${what}: cannot read ${path}: ${errnoText(e)}`);
  }
}

/** Read and parse one kubeconfig file; structural problems are input errors naming the file. */
function parseFile(file: string, named: string): ParsedFile {
  let text: string;
  try {
    const st = statSync(file);
    if (st.isDirectory()) throw new InputError(`kubeconfig ${file} (${named}) is a directory, not a file`);
    const buf = readFileSync(file);
    if (buf.includes(0) || !isUtf8(buf)) throw new InputError(`kubeconfig ${file} (${named}) is not YAML: it holds binary data`);
    text = buf.toString('utf8');
  } catch (e) {
    if (e instanceof UserError) throw e;
    const code = (e as NodeJS.ErrnoException)?.code;
    if (code === 'ENOENT') throw new InputError(`kubeconfig ${file} (${named}) does not exist`);
    throw new InputError(`cannot read kubeconfig ${file} (${named}): ${errnoText(e)}`);
  }
  let doc: unknown;
  try {
    doc = loadYaml(text, { filename: file });
  } catch (e) {
    const ye = e as { reason?: string; mark?: { line?: number; column?: number } };
    // The reason and position only: js-yaml's message quotes the offending line, which may hold a credential.
    const at = ye.mark?.line !== undefined ? ` at line ${ye.mark.line + 1}, column ${(ye.mark.column ?? 0) + 1}` : '';
    throw new InputError(`kubeconfig ${file} (${named}) is not valid YAML: ${ye.reason ?? 'parse error'}${at}`);
  }
  const out: ParsedFile = { file, clusters: [], users: [], contexts: [], empty: false };
  if (doc === undefined || doc === null) return { ...out, empty: true };
  if (!isMap(doc)) throw new InputError(`kubeconfig ${file} (${named}) is not a kubeconfig: expected a mapping with clusters, users and contexts, found ${typeName(doc)}`);
  if (doc.kind !== undefined && doc.kind !== null && doc.kind !== 'Config') {
    throw new InputError(`kubeconfig ${file} (${named}) is not a kubeconfig: kind is ${JSON.stringify(String(doc.kind)).slice(0, 60)}, expected Config`);
  }
  const lists: Array<['clusters' | 'users' | 'contexts', string]> = [['clusters', 'cluster'], ['users', 'user'], ['contexts', 'context']];
  for (const [key, body] of lists) {
    const v = doc[key];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) throw new InputError(`kubeconfig ${file} (${named}): "${key}" must be a list, found ${typeName(v)}`);
    v.forEach((item, index) => {
      if (!isMap(item)) throw new InputError(`kubeconfig ${file} (${named}): ${key}[${index}] must be a mapping with name and ${body}, found ${typeName(item)}`);
      if (typeof item.name !== 'string' || item.name === '') throw new InputError(`kubeconfig ${file} (${named}): ${key}[${index}] has no name`);
      const b = item[body];
      if (b !== undefined && b !== null && !isMap(b)) throw new InputError(`kubeconfig ${file} (${named}): ${key}[${index}] ("${item.name}"): ${body} must be a mapping, found ${typeName(b)}`);
      out[key].push({ name: item.name, body: b as Raw | null | undefined, file, index });
    });
  }
  const cur = doc['current-context'];
  if (cur !== undefined && cur !== null && typeof cur !== 'string') throw new InputError(`kubeconfig ${file} (${named}): current-context must be a string, found ${typeName(cur)}`);
  if (cur) out.current = cur;
  if (!out.clusters.length && !out.users.length && !out.contexts.length && !out.current) out.empty = true;
  return out;
}

function isUtf8(buf: Buffer): boolean {
  try { new TextDecoder('utf-8', { fatal: true }).decode(buf); return true; } catch { return false; }
}

/** The files to read, and how they were named (for messages). */
function locate(opts: KubeConfigOptions, env: NodeJS.ProcessEnv): { files: string[]; named: string } | 'in-cluster' | 'flags' {
  if (opts.kubeconfig !== undefined) {
    if (opts.kubeconfig.trim() === '') throw new UsageError('--kubeconfig needs a file path');
    return { files: [opts.kubeconfig], named: 'named by --kubeconfig' };
  }
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (list.length > 0) {
    const present = list.filter((f) => existsSync(f));
    if (present.length === 0) {
      throw new InputError(list.length === 1
        ? `kubeconfig ${list[0]} (named by KUBECONFIG) does not exist`
        : `none of the KUBECONFIG files exist (${list.join(delimiter)})`);
    }
    return { files: [...new Set(present)], named: 'from KUBECONFIG' };
  }
  const home = env.HOME || homedir();
  const file = join(home, '.kube', 'config');
  if (existsSync(file)) return { files: [file], named: 'the default kubeconfig' };
  // like kubectl: --server with no kubeconfig is a connection of the flags alone, not the in-cluster one
  if (opts.overrides?.server !== undefined) return 'flags';
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return 'in-cluster';
  throw new UnreachableError('no kubeconfig found (~/.kube/config, KUBECONFIG) and not running in a cluster: use --kubeconfig, or --from-file for offline input');
}

/** A string field of an entry, or an input error naming it. */
function strField(body: Raw, key: string, where: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new InputError(`${where}: ${key} must be a string, found ${typeName(v)}`);
  return v;
}

function boolField(body: Raw, key: string, where: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new InputError(`${where}: ${key} must be true or false, found ${typeName(v)}`);
  return v;
}

/** base64 data from the kubeconfig, or an input error naming the field. */
function base64Field(body: Raw, key: string, where: string): string | undefined {
  const v = strField(body, key, where);
  if (v === undefined) return undefined;
  const compact = v.replace(/\s+/g, '');
  if (compact === '') throw new InputError(`${where}: ${key} is empty`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw new InputError(`${where}: ${key} is not base64`);
  return compact;
}

/** Check that PEM text holds at least one certificate and that every certificate in it parses. */
export function checkCertificates(pem: Buffer | string, what: string): void {
  const text = Buffer.isBuffer(pem) ? pem.toString('utf8') : pem;
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new InputError(`${what} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  blocks.forEach((b, i) => {
    try { new X509Certificate(b); } catch { throw new InputError(`${what}: certificate ${i + 1} of ${blocks.length} is not a valid X.509 certificate`); }
  });
}

/** Parse a server value like kubectl: a URL, or host:port (https assumed). */
function parseServer(raw: string, where: string): { url: URL; userinfo?: { username: string; password: string } } {
  // Whatever precedes an "@" may be a credential, URL or not.
  const masked = raw.includes('@') ? `${REDACTED}@${raw.slice(raw.lastIndexOf('@') + 1)}` : raw;
  const shown = redact(masked.length > 120 ? `${masked.slice(0, 120)}…` : masked);
  const bad = (why: string) => new InputError(`${where}: server "${shown}" ${why}`);
  let text = raw.trim();
  if (text === '') throw new InputError(`${where}: server is empty`);
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) {
    // host, host:port, [v6]:port: kubectl reads these as https.
    if (/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d+)?(\/.*)?$/.test(text)) text = `https://${text}`;
    else throw bad('is not a URL (expected https://HOST[:PORT])');
  }
  let url: URL;
  try { url = new URL(text); } catch { throw bad('is not a URL (expected https://HOST[:PORT])'); }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad(`has scheme ${url.protocol.slice(0, 20)}//: only https:// and http:// are supported`);
  if (!url.hostname) throw bad('has no host');
  if (url.search || url.hash) throw bad('must not have a query or a fragment');
  let userinfo: { username: string; password: string } | undefined;
  if (url.username || url.password) {
    userinfo = { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
    registerSecret(url.username); registerSecret(url.password);
    registerSecret(userinfo.username); registerSecret(userinfo.password);
    registerSecret(`${url.username}:${url.password}`);
    url.username = '';
    url.password = '';
  }
  return { url, userinfo };
}

function sourceOf(file: string): string { return `kubeconfig ${file}`; }

/** Resolve and check the kubeconfig: the selected context, its cluster and user. */
export function resolveKubeConfig(opts: KubeConfigOptions = {}): ResolvedKubeConfig {
  const env = opts.env ?? process.env;
  const o = opts.overrides ?? {};
  checkOverrides(o);
  const where = locate(opts, env);
  if (where === 'in-cluster') return inCluster(env, opts.context, o);
  if (where === 'flags') return fromFlags(o);

  const parsed = where.files.map((f) => parseFile(f, where.named));
  const describe = where.files.length === 1 ? `kubeconfig ${where.files[0]}` : `the kubeconfig (KUBECONFIG=${where.files.join(delimiter)})`;
  if (parsed.every((p) => p.empty)) {
    throw new InputError(`${describe} is empty: it holds no contexts, clusters or users`);
  }
  const clusters = new Map<string, Entry>();
  const users = new Map<string, Entry>();
  const contexts = new Map<string, Entry>();
  let current: { name: string; file: string } | undefined;
  for (const p of parsed) {
    for (const e of p.clusters) if (!clusters.has(e.name)) clusters.set(e.name, e);
    for (const e of p.users) if (!users.has(e.name)) users.set(e.name, e);
    for (const e of p.contexts) if (!contexts.has(e.name)) contexts.set(e.name, e);
    if (!current && p.current) current = { name: p.current, file: p.file };
  }
  const names = (m: Map<string, Entry>) => [...m.keys()].join(', ') || 'none';

  let ctx: Entry | undefined;
  if (opts.context !== undefined) {
    ctx = contexts.get(opts.context);
    if (!ctx) throw new UsageError(`context "${opts.context}" is not in the kubeconfig (contexts: ${names(contexts)})`);
  } else if (current) {
    ctx = contexts.get(current.name);
    if (!ctx) throw new InputError(`current-context "${current.name}" of ${sourceOf(current.file)} is not one of its contexts (contexts: ${names(contexts)}): fix it or pass --context`);
  } else {
    throw new InputError(`${describe} has no current-context: pass --context NAME (contexts: ${names(contexts)})`);
  }

  const ctxWhere = `context "${ctx.name}" in ${sourceOf(ctx.file)}`;
  if (!ctx.body) throw new InputError(`${ctxWhere} has no context mapping (cluster, user)`);
  const clusterName = o.cluster ?? strField(ctx.body, 'cluster', ctxWhere);
  if (!clusterName) throw new InputError(`${ctxWhere} names no cluster`);
  const userName = o.user ?? strField(ctx.body, 'user', ctxWhere);
  const cEntry = clusters.get(clusterName);
  if (!cEntry && o.cluster !== undefined) throw new UsageError(`--cluster "${o.cluster}" is not in the kubeconfig (clusters: ${names(clusters)})`);
  if (!cEntry) throw new InputError(`${ctxWhere} names cluster "${clusterName}", which is not in the kubeconfig (clusters: ${names(clusters)})`);
  const uEntry = userName ? users.get(userName) : undefined;
  if (userName && !uEntry && o.user !== undefined) throw new UsageError(`--user "${o.user}" is not in the kubeconfig (users: ${names(users)})`);
  if (userName && !uEntry) throw new InputError(`${ctxWhere} names user "${userName}", which is not in the kubeconfig (users: ${names(users)})`);

  // The cluster.
  const cWhere = `cluster "${cEntry.name}" in ${sourceOf(cEntry.file)}`;
  const cb = cEntry.body;
  if (!cb) throw new InputError(`${cWhere} has no cluster mapping (server, certificate-authority-data)`);
  const serverRaw = strField(cb, 'server', cWhere);
  if (serverRaw === undefined && o.server === undefined) throw new InputError(`${cWhere} has no server`);
  const { url, userinfo } = o.server !== undefined ? serverFlag(o.server) : parseServer(serverRaw!, cWhere);
  const base = dirname(resolve(cEntry.file));
  const abs = (p: string, b: string) => (isAbsolute(p) ? p : join(b, p));
  // --insecure-skip-tls-verify drops the kubeconfig's CA, --certificate-authority its certificate-authority-data
  const skipTLSVerify = o.insecureSkipTlsVerify === true || (boolField(cb, 'insecure-skip-tls-verify', cWhere) ?? false);
  const caFileRaw = o.insecureSkipTlsVerify ? undefined : o.certificateAuthority !== undefined ? resolve(o.certificateAuthority) : strField(cb, 'certificate-authority', cWhere);
  const caData = o.insecureSkipTlsVerify || o.certificateAuthority !== undefined ? undefined : base64Field(cb, 'certificate-authority-data', cWhere);
  // a --server of its own is not the name the kubeconfig's tls-server-name was written for
  const tlsServerName = o.server !== undefined ? undefined : strField(cb, 'tls-server-name', cWhere);
  const proxyUrl = strField(cb, 'proxy-url', cWhere);
  if (proxyUrl !== undefined) {
    registerSecret(proxyUrl);
    let pu: URL;
    try { pu = new URL(proxyUrl); } catch { throw new InputError(`${cWhere}: proxy-url "${redact(proxyUrl)}" is not a URL`); }
    registerSecret(pu.password); registerSecret(pu.username);
    if (!['http:', 'https:', 'socks:', 'socks4:', 'socks4a:', 'socks5:', 'socks5h:'].includes(pu.protocol)) {
      throw new InputError(`${cWhere}: proxy-url ${redactUrl(proxyUrl)} has scheme ${pu.protocol}//: use http, https or socks5`);
    }
  }
  const caFile = caFileRaw ? abs(caFileRaw, base) : undefined;
  if (url.protocol === 'https:' && !skipTLSVerify) {
    if (caFile) checkCertificates(readReferencedFile(caFile, `${cWhere}: certificate-authority`), `${cWhere}: certificate-authority ${caFile}`);
    else if (caData) checkCertificates(Buffer.from(caData, 'base64'), `${cWhere}: certificate-authority-data`);
  }
  const cluster: Cluster = {
    name: cEntry.name, server: url.toString().replace(/\/$/, ''), caData, caFile, skipTLSVerify, tlsServerName, proxyUrl,
  };

  // The user.
  let user: User | null = null;
  let exec: ExecConfig | undefined;
  let tokenFromFile: string | undefined;
  let impersonate: Impersonation | undefined;
  const userSource = uEntry ? sourceOf(uEntry.file) : '';
  if (uEntry) {
    const uWhere = `user "${uEntry.name}" in ${sourceOf(uEntry.file)}`;
    const ub: Raw = uEntry.body ?? {};
    const ubase = dirname(resolve(uEntry.file));
    // --token replaces the user's own credentials but a client certificate
    const own = o.token === undefined;
    const token = own ? strField(ub, 'token', uWhere) : o.token;
    registerSecret(token);
    const password = own ? strField(ub, 'password', uWhere) : undefined;
    registerSecret(password);
    const username = own ? strField(ub, 'username', uWhere) : undefined;
    const tokenFile = own ? strField(ub, 'token-file', uWhere) : undefined;
    if (tokenFile !== undefined && !token) {
      const t = readReferencedFile(abs(tokenFile, ubase), `${uWhere}: token-file`).toString('utf8').trim();
      registerSecret(t);
      if (t === '') throw new InputError(`${uWhere}: token-file ${abs(tokenFile, ubase)} is empty`);
      tokenFromFile = t;
    }
    for (const [k, v] of [['token', token], ['token-file', tokenFromFile]] as const) {
      if (v !== undefined && v !== '' && !/^[\x21-\x7e]+$/.test(v.trim())) throw new InputError(`${uWhere}: ${k} holds characters a bearer token cannot have`);
    }
    const certFileRaw = strField(ub, 'client-certificate', uWhere);
    const keyFileRaw = strField(ub, 'client-key', uWhere);
    const certData = base64Field(ub, 'client-certificate-data', uWhere);
    registerSecret(ub['client-key-data']);
    const keyData = base64Field(ub, 'client-key-data', uWhere);
    impersonate = impersonation(ub, uWhere, o);
    const ap = own ? ub['auth-provider'] : undefined;
    if (ap !== undefined && ap !== null) {
      if (!isMap(ap)) throw new InputError(`${uWhere}: auth-provider must be a mapping, found ${typeName(ap)}`);
      const cfg = ap.config;
      if (isMap(cfg)) for (const v of Object.values(cfg)) registerSecret(v);
      if (typeof ap.name !== 'string' || !ap.name) throw new InputError(`${uWhere}: auth-provider has no name`);
      if (cfg !== undefined && cfg !== null && !isMap(cfg)) throw new InputError(`${uWhere}: auth-provider config must be a mapping, found ${typeName(cfg)}`);
    }
    const ex = own ? ub.exec : undefined;
    if (ex !== undefined && ex !== null) exec = parseExec(ex, uWhere, ubase);
    const certFile = certFileRaw ? abs(certFileRaw, ubase) : undefined;
    const keyFile = keyFileRaw ? abs(keyFileRaw, ubase) : undefined;
    const cert = certFile ? readReferencedFile(certFile, `${uWhere}: client-certificate`) : certData ? Buffer.from(certData, 'base64') : undefined;
    const key = keyFile ? readReferencedFile(keyFile, `${uWhere}: client-key`) : keyData ? Buffer.from(keyData, 'base64') : undefined;
    if (key) registerSecret(key.toString('utf8'));
    if (cert && !key) throw new InputError(`${uWhere} has a client certificate but no client-key`);
    if (key && !cert) throw new InputError(`${uWhere} has a client-key but no client certificate`);
    if (cert && key) checkClientPair(cert, key, uWhere);
    user = {
      name: uEntry.name, token: token || undefined, password, username, certData, certFile, keyData, keyFile,
      authProvider: isMap(ap) ? ap : undefined,
      // The exec plugin is run by our transport (timeouts, redaction), never by client-node.
      exec: undefined,
    };
  }

  if (!uEntry && o.token !== undefined) user = { name: '', token: o.token };
  if (!uEntry) impersonate = impersonation({}, '', o);
  const kc = new (clientNode().KubeConfig)();
  const context: Context = { name: ctx.name, cluster: cEntry.name, user: uEntry?.name ?? '' };
  kc.loadFromOptions({ clusters: [cluster], users: user ? [user] : [], contexts: [context], currentContext: ctx.name });
  return {
    kc, context: ctx.name, cluster, user, clusterSource: sourceOf(cEntry.file), userSource,
    server: url, displayServer: redactUrl(url.toString()).replace(/\/$/, ''), urlUserinfo: userinfo,
    exec, tokenFromFile, ...(impersonate ? { impersonate } : {}), inCluster: false,
  };
}

/** The client certificate and key must be PEM and belong together. */
export function checkClientPair(cert: Buffer | string, key: Buffer | string, where: string): void {
  const certText = Buffer.isBuffer(cert) ? cert.toString('utf8') : cert;
  checkCertificates(certText, `${where}: client certificate`);
  const keyText = Buffer.isBuffer(key) ? key.toString('utf8') : key;
  if (!/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(keyText)) throw new InputError(`${where}: client key holds no PEM private key`);
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    const code = (e as { code?: string }).code ?? '';
    const why = /MISMATCH/i.test(code) ? 'the client key does not belong to the client certificate' : `the client certificate or key cannot be used (${code || 'invalid'})`;
    throw new InputError(`${where}: ${why}`);
  }
}

function parseExec(ex: unknown, uWhere: string, base: string): ExecConfig {
  const w = `${uWhere}: exec`;
  if (!isMap(ex)) throw new InputError(`${w} must be a mapping, found ${typeName(ex)}`);
  const command = strField(ex, 'command', w);
  if (!command) throw new InputError(`${w} has no command`);
  const args = ex.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) throw new InputError(`${w}: args must be a list of strings`);
  for (const a of args as string[]) registerSecret(a.includes('=') ? a.slice(a.indexOf('=') + 1) : undefined);
  const envList = ex.env ?? [];
  if (!Array.isArray(envList) || envList.some((e) => !isMap(e) || typeof e.name !== 'string' || typeof e.value !== 'string')) {
    throw new InputError(`${w}: env must be a list of {name, value} strings`);
  }
  for (const e of envList as Array<{ value: string }>) if (e.value.length >= 8) registerSecret(e.value);
  const apiVersion = strField(ex, 'apiVersion', w) ?? 'client.authentication.k8s.io/v1beta1';
  if (!/^client\.authentication\.k8s\.io\/(v1|v1beta1|v1alpha1)$/.test(apiVersion)) {
    throw new InputError(`${w}: apiVersion ${JSON.stringify(apiVersion).slice(0, 80)} is not client.authentication.k8s.io/v1 or v1beta1`);
  }
  const interactiveMode = strField(ex, 'interactiveMode', w);
  const installHint = strField(ex, 'installHint', w);
  // Like kubectl: a command with a path separator is relative to the kubeconfig's directory.
  const cmd = command.includes('/') && !isAbsolute(command) ? join(base, command) : command;
  return { command: cmd, args: args as string[], env: envList as ExecConfig['env'], apiVersion, interactiveMode, installHint };
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function inCluster(env: NodeJS.ProcessEnv, context: string | undefined, o: ConnectionOverrides): ResolvedKubeConfig {
  if (context !== undefined) throw new UsageError(`--context "${context}": there is no kubeconfig (running in-cluster)`);
  if (o.cluster !== undefined) throw new UsageError(`--cluster "${o.cluster}": there is no kubeconfig (running in-cluster)`);
  if (o.user !== undefined) throw new UsageError(`--user "${o.user}": there is no kubeconfig (running in-cluster)`);
  const dir = SA_DIR;
  const tokenPath = join(dir, 'token');
  if (!existsSync(tokenPath)) {
    throw new UnreachableError(`no kubeconfig found (~/.kube/config, KUBECONFIG) and no service account token at ${tokenPath} for in-cluster access: use --kubeconfig, or --from-file for offline input`);
  }
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT!;
  const where = 'in-cluster config (KUBERNETES_SERVICE_HOST/PORT)';
  const { url } = parseServer(`https://${host.includes(':') ? `[${host}]` : host}:${port}`, where);
  const caFile = o.insecureSkipTlsVerify ? undefined : o.certificateAuthority !== undefined ? resolve(o.certificateAuthority) : join(dir, 'ca.crt');
  if (caFile) checkCertificates(readReferencedFile(caFile, `${where}: CA`), `${where}: CA ${caFile}`);
  const token = readReferencedFile(tokenPath, `${where}: token`).toString('utf8').trim();
  registerSecret(token);
  const cluster: Cluster = { name: 'in-cluster', server: url.toString().replace(/\/$/, ''), caFile, skipTLSVerify: o.insecureSkipTlsVerify === true };
  // The token file is read again by the transport (it is rotated); authProvider tokenFile is client-node's.
  const user: User = o.token !== undefined ? { name: 'in-cluster', token: o.token }
    : { name: 'in-cluster', authProvider: { name: 'tokenFile', config: { tokenFile: tokenPath } } };
  const impersonate = impersonation({}, '', o);
  const kc = new (clientNode().KubeConfig)();
  kc.loadFromOptions({ clusters: [cluster], users: [user], contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'in-cluster' }], currentContext: 'in-cluster' });
  return {
    kc, context: '', cluster, user, clusterSource: where, userSource: where, server: url,
    displayServer: redactUrl(url.toString()).replace(/\/$/, ''), ...(impersonate ? { impersonate } : {}), inCluster: true,
  };
}

/** The connection flags' own checks, before any file is read: kubectl's refusals, as usage errors. */
export function checkOverrides(o: ConnectionOverrides): void {
  if (o.insecureSkipTlsVerify && o.certificateAuthority !== undefined) {
    throw new UsageError('--certificate-authority cannot go with --insecure-skip-tls-verify: one trusts a CA, the other trusts any server (give one)');
  }
  if (o.token !== undefined) {
    registerSecret(o.token);
    if (!/^[\x21-\x7e]+$/.test(o.token.trim())) throw new UsageError('--token holds characters a bearer token cannot have');
  }
  for (const [flag, v] of [['--as', o.as], ['--as-uid', o.asUid], ...(o.asGroups ?? []).map((g) => ['--as-group', g] as const)] as const) {
    if (v !== undefined && (v.trim() === '' || /[\r\n\0]/.test(v))) throw new UsageError(`${flag} ${JSON.stringify(v)} is not a user, group or uid name`);
  }
}

/** --server as a URL, or a usage error naming the flag. */
function serverFlag(raw: string): ReturnType<typeof parseServer> {
  try {
    return parseServer(raw, '--server');
  } catch (e) {
    if (e instanceof InputError) throw new UsageError(e.message.replace(/^--server: server /, '--server '));
    throw e;
  }
}

/** With --server and no kubeconfig anywhere: a connection of the flags alone, as kubectl makes one. */
function fromFlags(o: ConnectionOverrides): ResolvedKubeConfig {
  if (o.cluster !== undefined || o.user !== undefined) {
    throw new UsageError(`${o.cluster !== undefined ? `--cluster "${o.cluster}"` : `--user "${o.user}"`}: there is no kubeconfig to name it in (only --server and the other flags)`);
  }
  const where = 'the command line (--server)';
  const { url, userinfo } = serverFlag(o.server!);
  const caFile = o.certificateAuthority !== undefined ? resolve(o.certificateAuthority) : undefined;
  if (caFile && url.protocol === 'https:') checkCertificates(readReferencedFile(caFile, '--certificate-authority'), `--certificate-authority ${caFile}`);
  const cluster: Cluster = { name: 'flags', server: url.toString().replace(/\/$/, ''), caFile, skipTLSVerify: o.insecureSkipTlsVerify === true };
  const user: User | null = o.token !== undefined ? { name: '', token: o.token } : null;
  const impersonate = impersonation({}, '', o);
  const kc = new (clientNode().KubeConfig)();
  kc.loadFromOptions({ clusters: [cluster], users: user ? [user] : [], contexts: [{ name: '', cluster: 'flags', user: '' }], currentContext: '' });
  return {
    kc, context: '', cluster, user, clusterSource: where, userSource: where, server: url,
    displayServer: redactUrl(url.toString()).replace(/\/$/, ''), urlUserinfo: userinfo, ...(impersonate ? { impersonate } : {}), inCluster: false,
  };
}

/**
 * Who to act as, as client-go takes it: the user's as, as-groups, as-uid and as-user-extra, each replaced by its
 * flag when given (--as-group replaces the whole list). Groups, a uid or extra without a user to act as are refused
 * (client-go refuses them too): naming the flag when a flag brought them, else the kubeconfig user.
 */
function impersonation(ub: Raw, uWhere: string, o: ConnectionOverrides): Impersonation | undefined {
  const user = o.as ?? strField(ub, 'as', uWhere);
  let groups: string[] = [];
  const g = ub['as-groups'];
  if (g !== undefined && g !== null) {
    if (!Array.isArray(g) || g.some((x) => typeof x !== 'string')) throw new InputError(`${uWhere}: as-groups must be a list of strings`);
    groups = g as string[];
  }
  if (o.asGroups && o.asGroups.length > 0) groups = o.asGroups;
  const uid = o.asUid ?? strField(ub, 'as-uid', uWhere);
  const extra: Record<string, string[]> = {};
  const x = ub['as-user-extra'];
  if (x !== undefined && x !== null) {
    if (!isMap(x) || Object.values(x).some((v) => !Array.isArray(v) || v.some((e) => typeof e !== 'string'))) {
      throw new InputError(`${uWhere}: as-user-extra must be a mapping of names to lists of strings`);
    }
    for (const [k, v] of Object.entries(x)) extra[k] = v as string[];
  }
  if (!user) {
    if ((o.asGroups?.length ?? 0) > 0 || o.asUid !== undefined) throw new UsageError('--as-group and --as-uid need --as USER (the user to act as; the kubeconfig user names none)');
    if (groups.length > 0 || uid !== undefined || Object.keys(extra).length > 0) throw new InputError(`${uWhere}: as-groups, as-uid or as-user-extra without as (the user to act as)`);
    return undefined;
  }
  return { user, groups, ...(uid !== undefined ? { uid } : {}), extra };
}
