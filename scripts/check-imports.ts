/**
 * Import rules for src/, checked by `npm test`:
 *  - no import cycle between files (type-only imports included: they tie the layers together just the same);
 *  - no cycle between folders (src/net, src/cluster, src/cni, ...; src/cli/commands counts as src/cli);
 *  - nothing outside src/cli imports src/cli.
 * Prints each violation on stderr and exits 1 if there is any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ImportGraph { files: string[]; edges: Map<string, Set<string>> }

const IMPORT_RE = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/g;

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The relative-import graph of every .ts file under root, keyed by path relative to root. */
export function importGraph(root: string): ImportGraph {
  const files = walk(root).map((f) => relative(root, f));
  const edges = new Map<string, Set<string>>();
  for (const f of files) {
    const text = readFileSync(join(root, f), 'utf8');
    const to = new Set<string>();
    for (const m of text.matchAll(IMPORT_RE)) to.add(relative(root, resolve(root, dirname(f), m[1]!)));
    edges.set(f, to);
  }
  return { files, edges };
}

/** Strongly connected components with more than one node (or a self loop): Tarjan's algorithm. */
export function cycles(nodes: string[], edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1 || edges.get(v)?.has(v)) out.push(comp.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) visit(n);
  return out;
}

/** The folder a file belongs to for layering: its first path segment ('errors.ts' → 'errors'). */
export function layerOf(file: string): string {
  const first = file.split('/')[0]!;
  return first.endsWith('.ts') ? first.slice(0, -3) : first;
}

export function violations(graph: ImportGraph): string[] {
  const bad: string[] = [];
  for (const c of cycles(graph.files, graph.edges)) bad.push(`file cycle: ${c.join(' → ')}`);
  const folders = new Map<string, Set<string>>();
  const why = new Map<string, string>();
  for (const [from, tos] of graph.edges) {
    for (const to of tos) {
      const a = layerOf(from);
      const b = layerOf(to);
      if (a === b) continue;
      if (!folders.has(a)) folders.set(a, new Set());
      folders.get(a)!.add(b);
      if (!why.has(`${a}>${b}`)) why.set(`${a}>${b}`, `${from} imports ${to}`);
      if (b === 'cli') bad.push(`${from} imports ${to}: only src/cli may import src/cli`);
    }
  }
  for (const c of cycles([...folders.keys()].sort(), folders)) {
    const examples = c.flatMap((a) => c.filter((b) => b !== a && folders.get(a)?.has(b)).map((b) => why.get(`${a}>${b}`)!));
    bad.push(`folder cycle: ${c.join(' ↔ ')} (${examples.join('; ')})`);
  }
  return bad;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(fileURLToPath(new URL('../src', import.meta.url)));
  const bad = violations(importGraph(root));
  for (const b of bad) process.stderr.write(`${b}\n`);
  if (bad.length) {
    process.stderr.write(`${bad.length} import rule violation(s) in src/\n`);
    process.exit(1);
  }
  process.stdout.write('src/: no import cycles\n');
}
