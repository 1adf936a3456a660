/**
 * The offline loader: `kubectl get ... -o yaml|json` dumps (and kOps / kubeadm configs) → RawInventory.
 *
 * Accepts, per path: a file, a directory (its *.yaml, *.yml, *.json files, sorted by name, not
 * recursive), or "-" for stdin. A file may hold one object, a List (kind: List or a typed list such as
 * ServiceList, whose items may lack kind/apiVersion), several YAML documents, or a JSON array.
 *
 * Routing: kOps Cluster specs, kubeadm ClusterConfiguration, KubeletConfiguration and
 * KubeProxyConfiguration documents go to `configs`; other kubeadm/kOps documents (InitConfiguration,
 * JoinConfiguration, InstanceGroup, ...) are ignored; everything else goes to `objects`.
 *
 * Every problem is an InputError with a one-line message naming the file and what to do.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { InputError } from '../errors.ts';
import type { KubeObject, RawInventory } from './types.ts';
import { inferServerVersion } from './version.ts';

export { InputError };

const HINT = 'expected `kubectl get ... -o yaml` (or -o json) output';
const EXTENSIONS = ['.yaml', '.yml', '.json'];

function ioReason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const code = typeof err?.code === 'string' ? err.code : undefined;
  const msg = String(err?.message ?? e);
  // Node: "ENOENT: no such file or directory, open 'x'" → "ENOENT: no such file or directory"
  const m = /^([A-Z]+): ([^,]+)/.exec(msg);
  const text = m ? `${m[1]}: ${m[2]}` : code ? `${code}: ${msg}` : msg;
  const fix =
    code === 'ENOENT' ? 'check the path' :
    code === 'EACCES' || code === 'EPERM' ? 'check its permissions' :
    code === 'EISDIR' ? 'pass the directory itself or a file in it' :
    'check the path';
  return `${text} (${fix})`;
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

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  return Buffer.concat(chunks).toString('utf8');
}

/** Where a document goes. */
function route(o: KubeObject): 'object' | 'config' | 'ignore' {
  const av = o.apiVersion ?? '';
  const group = av.includes('/') ? av.slice(0, av.indexOf('/')) : '';
  if (group === 'kops.k8s.io' || group === 'kops') return o.kind === 'Cluster' ? 'config' : 'ignore';
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
    if (o.kind!.endsWith('List') && Array.isArray(items)) {
      const itemKind = o.kind === 'List' ? undefined : o.kind!.slice(0, -'List'.length);
      for (let j = 0; j < items.length; j++) {
        const item = items[j];
        if (item && typeof item === 'object' && !Array.isArray(item) && itemKind !== undefined) {
          const it = item as KubeObject;
          if (it.kind === undefined) it.kind = itemKind;
          if (it.apiVersion === undefined) it.apiVersion = o.apiVersion;
        }
        const whyItem = describe(item);
        if (whyItem !== '') throw new InputError(`${name}: ${docs.length > 1 ? `${what}, ` : ''}item ${j + 1} of the ${o.kind} is not a Kubernetes object (${whyItem}); ${HINT}`);
        add(item as KubeObject);
      }
    } else {
      add(o);
    }
  }
  if (seen === 0) throw new InputError(`${name}: empty file (only comments or empty documents); ${HINT}`);
  return { objects, configs };
}

export async function readInventoryFiles(paths: string[]): Promise<RawInventory> {
  if (paths.length === 0) throw new InputError(`no input files given; ${HINT}`);
  const files = await expand(paths);
  const objects: KubeObject[] = [];
  const configs: KubeObject[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = f === '-' ? await readStdin() : await readFile(f, 'utf8');
    } catch (e) {
      throw new InputError(`cannot read ${f === '-' ? 'stdin' : f}: ${ioReason(e)}`);
    }
    parseInventoryText(text, f === '-' ? 'stdin' : f, objects, configs);
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
