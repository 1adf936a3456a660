import * as yaml from 'js-yaml';
import { UsageError } from './errors.ts';

export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function parseOutput(v: string | undefined, extra: readonly string[] = []): OutputFormat {
  const value = v ?? 'table';
  if ((OUTPUT_FORMATS as readonly string[]).includes(value) || extra.includes(value)) return value as OutputFormat;
  throw new UsageError(`-o ${value} is not a known output format (use ${[...OUTPUT_FORMATS, ...extra].join(', ')})`);
}

/** Drop undefined values so JSON and YAML agree and YAML has no `null`s for absent fields. */
function clean(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)));
}

export function renderData(v: unknown, format: 'json' | 'yaml'): string {
  if (format === 'json') return `${JSON.stringify(clean(v), null, 2)}\n`;
  return yaml.dump(clean(v), { noRefs: true, lineWidth: -1, sortKeys: false });
}

/** kubectl-style columns: upper-case headers, left-aligned, three spaces apart. */
export function table(headers: string[], rows: Array<Array<string | number | undefined>>): string {
  const cells = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd())
    .join('\n') + '\n';
}

/** A titled section for human output. */
export function section(title: string, body: string): string {
  return `${title}\n${body}${body.endsWith('\n') ? '' : '\n'}\n`;
}
