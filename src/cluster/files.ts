/**
 * The offline loader: `kubectl get ... -o yaml|json` dumps (and kOps / kubeadm configs) → RawInventory.
 *
 * Accepts, per path: a file, a directory (its *.yaml, *.yml, *.json files, sorted by name, not
 * recursive), or "-" for stdin. A file may hold one object, a List (kind: List or a typed list such as
 * ServiceList, whose items may lack kind/apiVersion), several YAML documents, or a JSON array.
 *
 * Routing: kOps Cluster specs and InstanceGroups, kubeadm ClusterConfiguration, KubeletConfiguration and
 * KubeProxyConfiguration documents go to `configs`; other kubeadm/kOps documents (InitConfiguration,
 * JoinConfiguration, ...) are ignored; everything else goes to `objects`.
 *
 * Size: up to `streamAbove` bytes (default 64 MiB) a file is read whole and becomes one string parsed at once.
 * Above, a JSON file (a List, any object, an array) is read a window at a time, the next one read ahead on
 * libuv's thread pool while one is parsed (./json-list.ts), and parsed
 * item by item, so a `kubectl get pods -A -o json` of several GB reads in less CPU time than JSON.parse of its
 * text (docs/benchmarks.md, large-list) and without ever holding the whole text: Pods outside kube-system are read field by field and
 * keep only the fields the snapshot reads (name, namespace, uid, labels, ownerReferences' kind, name and
 * controller, nodeName, hostNetwork, phase, podIP(s)); their other fields are skipped over (strings and brackets tracked, values not
 * otherwise checked); everything else is parsed whole. Standard input and pipes are read whole first.
 * YAML above the longest string the runtime can hold (~512 MiB) cannot be parsed: the error says to dump
 * with -o json.
 *
 * Every problem is an InputError with a one-line message naming the file and what to do.
 */
import { constants as bufferConstants } from 'node:buffer';
import { closeSync, fstatSync, openSync, read, readSync, statSync } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { InputError } from '../errors.ts';
import { platformConfigFiles } from '../platform/registry.ts';
import { setItemOrigin, setObjectOrigin } from './validate.ts';
import { type AsyncByteSource, type ElementFields, parseJsonBytes, parseJsonStreamAhead, WINDOW_BYTES } from './json-list.ts';
import type { KubeObject, RawInventory } from './types.ts';
import { inferServerVersion } from './version.ts';

export { InputError };

const HINT = 'expected `kubectl get ... -o yaml` (or -o json) output';
const EXTENSIONS = ['.yaml', '.yml', '.json'];

/** Files larger than this are parsed from bytes, item by item, when they are JSON. */
export const STREAM_ABOVE = 64 * 1024 * 1024;
/** The longest string (UTF-16 code units) the runtime can build; a file of at most this many bytes always fits one. */
const MAX_STRING = bufferConstants.MAX_STRING_LENGTH;
/** One read call reads at most this much. */
const READ_CHUNK = 1024 * 1024 * 1024;

export interface ReadInventoryOptions {
  /** Parse JSON files larger than this many bytes item by item (default STREAM_ABOVE). */
  streamAbove?: number;
  /** The longest text parsed as one string (default: the runtime's limit; tests make it small). */
  stringLimit?: number;
  /** Bytes of a file parsed item by item held per window (default WINDOW_BYTES; tests make it small). */
  windowBytes?: number;
}

function ioReason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const code = typeof err?.code === 'string' ? err.code : undefined;
  const msg = String(err?.message ?? e);
  // Node: "ENOENT: no such file or directory, open 'x'" → "ENOENT: no such file or directory"
  const m = /^([A-Z]+): ([^,]+)/.exec(msg);
  const text = m ? `${m[1]}: ${m[2]}` : code ? `${code}: ${msg}` : msg;
  const fix =
    code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG' ? 'check the path' :
    code === 'EACCES' || code === 'EPERM' ? 'check its permissions' :
    code === 'EISDIR' ? 'pass the directory itself or a file in it' :
    undefined;
  return fix === undefined ? text : `${text} (${fix})`;
}

function sizeText(n: number): string {
  return n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(1)} GiB` : n >= 1024 ** 2 ? `${(n / 1024 ** 2).toFixed(0)} MiB` : `${n} bytes`;
}

/**
 * The whole file as bytes: one Buffer of its size, filled by sequential reads of at most READ_CHUNK (no 2 GiB
 * limit); pipes and special files (size 0, e.g. `-f <(kubectl get ...)`) are read to their end.
 */
async function readBytes(path: string): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size > bufferConstants.MAX_LENGTH) throw new InputError(`cannot read ${path}: ${sizeText(size)} is more than one buffer can hold`);
    let buf: Buffer;
    try {
      buf = Buffer.allocUnsafe(size);
    } catch {
      throw new InputError(`cannot read ${path}: ${sizeText(size)} does not fit in memory`);
    }
    let off = 0;
    while (off < size) {
      const { bytesRead } = await fh.read(buf, off, Math.min(READ_CHUNK, size - off), null);
      if (bytesRead === 0) break; // shrank while being read
      off += bytesRead;
    }
    if (off < size) return buf.subarray(0, off);
    // grew while being read, or a pipe / special file reporting size 0: read to the end
    const more: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(size === 0 ? 1024 * 1024 : 64 * 1024);
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      more.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
    }
    return more.length === 0 ? buf : Buffer.concat([buf, ...more]);
  } finally {
    await fh.close();
  }
}

/** Expands directories; returns the files to read, in order ("-" stays "-"). */
async function expand(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      out.push(p);
      continue;
    }
    let st;
    try {
      st = await stat(p);
    } catch (e) {
      throw new InputError(`cannot read ${p}: ${ioReason(e)}`);
    }
    if (st.isDirectory()) {
      let names: string[];
      try {
        names = await readdir(p);
      } catch (e) {
        throw new InputError(`cannot read ${p}: ${ioReason(e)}`);
      }
      const files = names.filter((n) => EXTENSIONS.some((x) => n.toLowerCase().endsWith(x)) && !n.startsWith('.')).sort();
      if (files.length === 0) throw new InputError(`${p}: the directory has no .yaml, .yml or .json files; ${HINT}`);
      for (const f of files) out.push(join(p, f));
    } else {
      out.push(p);
    }
  }
  return out;
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  return Buffer.concat(chunks);
}

/** Where a document goes. */
function route(o: KubeObject): 'object' | 'config' | 'ignore' {
  const av = o.apiVersion ?? '';
  const group = av.includes('/') ? av.slice(0, av.indexOf('/')) : '';
  // a platform's own documents, read only from files (e.g. the kOps Cluster spec and InstanceGroups: node-limits.ts)
  const own = platformConfigFiles(group);
  if (own) return own.kinds.includes(String(o.kind)) ? 'config' : 'ignore';
  if (group === 'kubeadm.k8s.io') return o.kind === 'ClusterConfiguration' ? 'config' : 'ignore';
  if (group === 'kubelet.config.k8s.io' && o.kind === 'KubeletConfiguration') return 'config';
  if (group === 'kubeproxy.config.k8s.io' && o.kind === 'KubeProxyConfiguration') return 'config';
  return 'object';
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list, not a mapping';
  if (v === null) return 'empty';
  if (typeof v !== 'object') return `a ${typeof v}, not a mapping`;
  const o = v as Record<string, unknown>;
  if (typeof o.kind !== 'string' || o.kind === '') return 'no kind';
  if (typeof o.apiVersion !== 'string' || o.apiVersion === '') return 'no apiVersion';
  return '';
}

/**
 * Parses one file's text. `name` is used in messages. Appends to `objects` / `configs`.
 * Exported for tests and for callers that already hold the text.
 */
export function parseInventoryText(text: string, name: string, objects: KubeObject[] = [], configs: KubeObject[] = []): { objects: KubeObject[]; configs: KubeObject[] } {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') throw new InputError(`${name}: empty file; ${HINT}`);
  let docs: unknown[] | undefined;
  const first = text.trimStart()[0];
  if (first === '{' || first === '[') {
    try {
      const v = JSON.parse(text) as unknown;
      docs = Array.isArray(v) ? v : [v];
    } catch {
      docs = undefined; // not strict JSON: let the YAML parser try, and report with a line number
    }
  }
  if (docs === undefined) {
    try {
      docs = loadAll(text, { filename: name });
    } catch (e) {
      const err = e as { reason?: string; mark?: { line?: number }; message?: string };
      const line = typeof err.mark?.line === 'number' ? ` at line ${err.mark.line + 1}` : '';
      const reason = err.reason ?? String(err.message ?? e).split('\n')[0];
      throw new InputError(`${name}: not valid YAML or JSON${line}: ${reason}; ${HINT}`);
    }
  }
  return addDocuments(docs, name, objects, configs);
}

/** The first byte that is not whitespace (after a UTF-8 BOM), or -1. */
function firstByte(buf: Buffer): number {
  let i = buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x0a || buf[i] === 0x0d || buf[i] === 0x09)) i++;
  return i < buf.length ? buf[i] : -1;
}

/**
 * Parses one file's bytes: up to `streamAbove` bytes as text (parseInventoryText), above that JSON item by
 * item (Pods outside kube-system slimmed to what the snapshot reads; a JSON error is reported with its byte
 * offset and line, without a second try as YAML). Appends to `objects` / `configs`.
 */
export function parseInventoryBytes(buf: Buffer, name: string, objects: KubeObject[] = [], configs: KubeObject[] = [], opts: ReadInventoryOptions = {}): { objects: KubeObject[]; configs: KubeObject[] } {
  const limit = Math.min(opts.stringLimit ?? MAX_STRING, MAX_STRING);
  const streamAbove = Math.min(opts.streamAbove ?? STREAM_ABOVE, limit);
  if (buf.length <= streamAbove) return parseInventoryText(buf.toString('utf8'), name, objects, configs);
  const first = firstByte(buf);
  if (first === 0x7b || first === 0x5b) {
    let v: unknown;
    try {
      v = parseJsonBytes(buf, { item: slimItem, fields: POD_FIELDS });
    } catch (e) {
      if (e instanceof InputError) throw new InputError(`${name}: ${e.message}; ${HINT}`);
      throw e;
    }
    return addDocuments(Array.isArray(v) ? v : [v], name, objects, configs);
  }
  if (buf.length > limit) {
    throw new InputError(`${name}: ${sizeText(buf.length)} of YAML is more than can be parsed at once (at most ${sizeText(limit)}); `
      + 'dump a cluster this large with `kubectl get ... -o json`, which is read item by item');
  }
  return parseInventoryText(buf.toString('utf8'), name, objects, configs);
}

const SLIM_METADATA = ['name', 'namespace', 'uid', 'labels', 'ownerReferences'] as const;
const SLIM_SPEC = ['nodeName', 'hostNetwork'] as const;
const SLIM_STATUS = ['phase', 'podIP', 'podIPs'] as const;
/** Of each owner reference, what the snapshot reads (the controller's kind and name). */
const SLIM_OWNER = ['kind', 'name', 'controller'] as const;

/** `o` with only `keys` (anything that is not a mapping is returned as it is). */
function pick(o: unknown, keys: readonly string[]): unknown {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return o;
  const src = o as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (Object.hasOwn(src, k)) out[k] = src[k];
  return out;
}

/** The owner references of a slimmed Pod's metadata cut to SLIM_OWNER (in place; anything that is not a list of mappings stays). */
function slimOwners(md: unknown): void {
  if (md === null || typeof md !== 'object' || Array.isArray(md)) return;
  const m = md as Record<string, unknown>;
  const refs = m.ownerReferences;
  if (Array.isArray(refs)) m.ownerReferences = refs.map((r) => pick(r, SLIM_OWNER));
}

/**
 * A List item as kept from a streamed file: Pods outside kube-system keep only what buildSnapshot reads
 * (kube-system pods are read for component flags, images and CNI agents, and stay whole); anything else
 * stays whole.
 */
function slimItem(v: unknown, head: Readonly<Record<string, unknown>>): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const o = v as KubeObject;
  const kind = o.kind ?? (head.kind === 'PodList' ? 'Pod' : undefined);
  if (kind !== 'Pod') return v;
  const md = o.metadata;
  if (md === null || typeof md !== 'object' || Array.isArray(md) || md.namespace === 'kube-system') return v;
  const out: KubeObject = {};
  if (Object.hasOwn(o, 'apiVersion')) out.apiVersion = o.apiVersion;
  if (Object.hasOwn(o, 'kind')) out.kind = o.kind;
  out.metadata = pick(md, SLIM_METADATA) as KubeObject['metadata'];
  slimOwners(out.metadata);
  if (Object.hasOwn(o, 'spec')) out.spec = pick(o.spec, SLIM_SPEC);
  if (Object.hasOwn(o, 'status')) out.status = pick(o.status, SLIM_STATUS);
  return out;
}

/** Pods outside kube-system read field by field (json-list.ts): the same fields slimItem keeps. */
const POD_FIELDS: ElementFields = {
  whole: ['apiVersion', 'kind'],
  picked: { metadata: SLIM_METADATA, spec: SLIM_SPEC, status: SLIM_STATUS },
  accept: (kept, head) => {
    const kind = (kept.kind as string | undefined) ?? (head.kind === 'PodList' ? 'Pod' : undefined);
    const md = kept.metadata as Record<string, unknown> | null | undefined;
    return kind === 'Pod' && md !== null && typeof md === 'object' && !Array.isArray(md) && md.namespace !== 'kube-system';
  },
  finish: (kept) => slimOwners(kept.metadata),
};

/** The 1-based line of a byte offset of an open file (for messages: reads the file up to there). */
function lineInFile(fd: number, offset: number): number {
  const chunk = Buffer.allocUnsafe(1024 * 1024);
  let line = 1;
  for (let pos = 0; pos < offset;) {
    const n = readSync(fd, chunk, 0, Math.min(chunk.length, offset - pos), pos);
    if (n <= 0) break;
    for (let i = chunk.indexOf(0x0a); i !== -1 && i < n; i = chunk.indexOf(0x0a, i + 1)) line++;
    pos += n;
  }
  return line;
}

/**
 * A regular file of more than `streamAbove` bytes whose first byte is "{" or "[", read a window at a time (the
 * next window read ahead while one is parsed: json-list.ts parseJsonStreamAhead) and parsed item by item into
 * `objects` / `configs`; false (nothing read) for any other file. A file whose size or modification time
 * changed while it was read is refused: its items would not be one state of the cluster.
 */
async function readStreamed(path: string, objects: KubeObject[], configs: KubeObject[], opts: ReadInventoryOptions): Promise<boolean> {
  const limit = Math.min(opts.stringLimit ?? MAX_STRING, MAX_STRING);
  const streamAbove = Math.min(opts.streamAbove ?? STREAM_ABOVE, limit);
  // look before opening: opening a named pipe and closing it again would lose what its writer sent (or leave the
  // writer dead and the next open waiting for a writer forever); a pipe is read whole by the caller instead
  const ahead = statSync(path);
  if (!ahead.isFile() || ahead.size <= streamAbove) return false;
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size <= streamAbove) return false;
    const head = Buffer.allocUnsafe(Math.min(st.size, 64 * 1024));
    const first = firstByte(head.subarray(0, readSync(fd, head, 0, head.length, 0)));
    if (first !== 0x7b && first !== 0x5b) return false;
    const src: AsyncByteSource = {
      readAt: (buf, off, len, pos) => new Promise((resolve, reject) => {
        read(fd, buf, off, Math.min(len, READ_CHUNK), pos, (err, n) => (err ? reject(err) : resolve(n)));
      }),
      lineAt: (offset) => lineInFile(fd, offset),
    };
    let v: unknown;
    try {
      v = await parseJsonStreamAhead(src, { item: slimItem, fields: POD_FIELDS }, opts.windowBytes ?? WINDOW_BYTES);
    } catch (e) {
      if (e instanceof InputError) throw new InputError(`${path}: ${e.message}; ${HINT}`);
      throw e;
    }
    const now = fstatSync(fd);
    if (now.size !== st.size || now.mtimeMs !== st.mtimeMs) {
      throw new InputError(`${path}: the file changed while it was read (${now.size !== st.size ? `its size went from ${st.size} to ${now.size} bytes` : 'modified'}); read it again once it is complete`);
    }
    addDocuments(Array.isArray(v) ? v : [v], path, objects, configs);
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Routes parsed documents (Lists flattened) into `objects` / `configs`. */
function addDocuments(docs: unknown[], name: string, objects: KubeObject[], configs: KubeObject[]): { objects: KubeObject[]; configs: KubeObject[] } {
  let seen = 0;
  const add = (o: KubeObject): void => {
    const r = route(o);
    if (r === 'object') objects.push(o);
    else if (r === 'config') configs.push(o);
  };
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i];
    if (doc === null || doc === undefined) continue; // empty YAML document (stray "---")
    seen++;
    const what = docs.length > 1 ? `document ${i + 1}` : 'the document';
    const why = describe(doc);
    if (why !== '') throw new InputError(`${name}: ${what} is not a Kubernetes object (${why}); ${HINT}`);
    const o = doc as KubeObject;
    const items = (o as { items?: unknown }).items;
    if (o.kind!.endsWith('List') && items !== undefined && items !== null && !Array.isArray(items)) {
      throw new InputError(`${name}: ${docs.length > 1 ? `${what}, ` : ''}the items of the ${o.kind} are ${describeValue(items)}, not a list; ${HINT}`);
    }
    if (o.kind!.endsWith('List') && Array.isArray(items)) {
      const itemKind = o.kind === 'List' ? undefined : o.kind!.slice(0, -'List'.length);
      const list = `${name}${docs.length > 1 ? ` ${what},` : ''}`;
      for (let j = 0; j < items.length; j++) {
        const item = items[j];
        if (item && typeof item === 'object' && !Array.isArray(item) && itemKind !== undefined) {
          const it = item as KubeObject;
          if (it.kind === undefined) it.kind = itemKind;
          if (it.apiVersion === undefined) it.apiVersion = o.apiVersion;
        }
        const whyItem = describe(item);
        if (whyItem !== '') throw new InputError(`${name}: ${docs.length > 1 ? `${what}, ` : ''}item ${j + 1} of the ${o.kind} is not a Kubernetes object (${whyItem}); ${HINT}`);
        setItemOrigin(item as KubeObject, list, j + 1);
        add(item as KubeObject);
      }
    } else {
      setObjectOrigin(o, docs.length > 1 ? `${name} ${what}` : name);
      add(o);
    }
  }
  if (seen === 0) throw new InputError(`${name}: empty file (only comments or empty documents); ${HINT}`);
  return { objects, configs };
}

function describeValue(v: unknown): string {
  return typeof v === 'object' && v !== null ? 'a mapping' : `a ${typeof v}`;
}

export async function readInventoryFiles(paths: string[], opts: ReadInventoryOptions = {}): Promise<RawInventory> {
  if (paths.length === 0) throw new InputError(`no input files given; ${HINT}`);
  const files = await expand(paths);
  const objects: KubeObject[] = [];
  const configs: KubeObject[] = [];
  for (const f of files) {
    let buf: Buffer;
    try {
      if (f !== '-' && await readStreamed(f, objects, configs, opts)) continue;
      buf = f === '-' ? await readStdin() : await readBytes(f);
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError(`cannot read ${f === '-' ? 'stdin' : f}: ${ioReason(e)}`);
    }
    parseInventoryBytes(buf, f === '-' ? 'stdin' : f, objects, configs, opts);
  }
  const inv: RawInventory = { source: { kind: 'file', files }, objects, configs, gaps: [] };
  const version = inferServerVersion(objects, configs);
  if (version !== undefined) inv.serverVersion = version;
  const apiVersions = new Set<string>();
  for (const o of objects) {
    if (o.kind === 'ServiceCIDR' && typeof o.apiVersion === 'string' && o.apiVersion.startsWith('networking.k8s.io/')) apiVersions.add(o.apiVersion);
  }
  if (apiVersions.size > 0) inv.serviceCIDRApiVersions = [...apiVersions].sort();
  return inv;
}
