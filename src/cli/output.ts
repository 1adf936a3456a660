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

/**
 * How tables are drawn for the command being run (main() sets it from --no-headers, the terminal and NO_COLOR,
 * and resets it afterwards): without header rows, and with severities in colour.
 */
export interface TableStyle { noHeaders: boolean; color: boolean }
/** Colour on a terminal unless NO_COLOR is set (https://no-color.org) or TERM is dumb. */
export function colorFor(io: { env: NodeJS.ProcessEnv }, tty: boolean | undefined): boolean {
  return tty === true && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
}

let style: TableStyle = { noHeaders: false, color: false };
export function setTableStyle(s: TableStyle): void { style = s; }

const ANSI = { red: '\x1b[31m', yellow: '\x1b[33m', green: '\x1b[32m', reset: '\x1b[0m' } as const;
/** Columns whose cells are severities or check results, coloured on a terminal. */
const SEVERITY_COLUMNS = new Set(['severity', 'status', 'result']);
export function severityColor(value: string): keyof typeof ANSI | undefined {
  const v = value.toLowerCase();
  if (v === 'error' || v === 'fail' || v === 'failed' || v.startsWith('not undone')) return 'red';
  if (v === 'warning' || v === 'warn') return 'yellow';
  if (v === 'pass' || v === 'ok' || v === 'undone' || v === 'restored') return 'green';
  return undefined;
}
/** `text` in the colour of `severity` when the style says so. */
export function paint(text: string, severity: string, s: TableStyle = style): string {
  const c = s.color ? severityColor(severity) : undefined;
  return c ? `${ANSI[c]}${text}${ANSI.reset}` : text;
}

/** kubectl-style columns: upper-case headers, left-aligned, three spaces apart. */
export function table(headers: string[], rows: Array<Array<string | number | undefined>>, s: TableStyle = style): string {
  const body = rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))));
  const cells = [headers.map((h) => h.toUpperCase()), ...body];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const colored = headers.map((h) => s.color && SEVERITY_COLUMNS.has(h.toLowerCase()));
  const line = (r: string[], header: boolean) => r
    .map((c, i) => {
      const padded = i === r.length - 1 ? c : c.padEnd(widths[i]!);
      return !header && colored[i] && c !== '' ? paint(c, c.replace(/:.*$/, ''), s) + padded.slice(c.length) : padded;
    })
    .join('   ').trimEnd();
  return [...(s.noHeaders ? [] : [line(cells[0]!, true)]), ...body.map((r) => line(r, false))].join('\n') + '\n';
}

/** A titled section for human output. */
export function section(title: string, body: string): string {
  return `${title}\n${body}${body.endsWith('\n') ? '' : '\n'}\n`;
}

/** A Markdown table (cells escaped for pipes and newlines). */
export function markdownTable(headers: string[], rows: Array<Array<string | number | undefined>>): string {
  const cell = (c: string | number | undefined) => String(c ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    `| ${headers.map(cell).join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n') + '\n';
}
