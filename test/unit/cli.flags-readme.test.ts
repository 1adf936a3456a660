// The flag table of docs/reference.md (### Flags; the README links it) and each command's --help agree: every flag a command's help lists is a row
// of the table naming that command, every row names exactly the commands whose help lists the flag, short forms
// match, and the row's meaning shares a word with each help line. Also: every flag a command parses is in its help,
// and no flag name means two things (one row per name).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMMANDS as ALL, main, GLOBAL_OPTIONS } from '../../src/cli/main.ts';

const README = readFileSync(fileURLToPath(new URL('../../docs/reference.md', import.meta.url)), 'utf8');
const COMMANDS = ['inspect', 'calc', 'suggest', 'plan', 'apply', 'resume', 'status', 'verify', 'rollback', 'restore', 'probe', 'rbac', 'version', 'completion'];

interface HelpFlag { short?: string; desc: string }

async function help(cmd: string): Promise<string> {
  let out = '';
  const code = await main([cmd, '--help'], { out: (s) => { out += s; }, err: () => {}, env: {} });
  assert.equal(code, 0);
  return out;
}

/** The flags a help text lists: lines "  -s, --server URL   text", "  --keep NS/NAME   text", "  -v=N, --v=N  text". */
export function helpFlags(text: string): Map<string, HelpFlag> {
  const flags = new Map<string, HelpFlag>();
  for (const line of text.split('\n')) {
    const m = /^ {2}(?:-(\w)(?:=N)?, )?--([a-z][a-z0-9-]*)(?:=\S+)?(?: \S+)?(?: {2,}(.*))?$/.exec(line);
    if (!m || flags.has(m[2]!)) continue;
    flags.set(m[2]!, { ...(m[1] ? { short: m[1] } : {}), desc: (m[3] ?? '').trim() });
  }
  return flags;
}

interface Row { flag: string; short?: string; commands: string[]; meaning: string; line: string }

/** The rows of the README's "### Flags" table. */
function readmeRows(): Row[] {
  const start = README.indexOf('\n### Flags\n');
  assert.ok(start >= 0, 'docs/reference.md has a "### Flags" section');
  const section = README.slice(start + 1, README.indexOf('\n#', start + 2));
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  assert.ok(rows.length > 50, `the table has its rows (${rows.length})`);
  return rows.map((line) => {
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim());
    assert.equal(cells.length, 3, `three cells: ${line}`);
    const [flagCell, cmdCell, meaning] = cells as [string, string, string];
    const flag = /`(?:-\w(?:=N)?`, `)?--([a-z][a-z0-9-]*)/.exec(flagCell)?.[1];
    assert.ok(flag, `a --flag in ${flagCell}`);
    const short = /^`-(\w)(?:=N)?`, /.exec(flagCell)?.[1];
    const but = /^every command but (.*)$/.exec(cmdCell);
    const named = [...(but ? but[1]! : cmdCell).matchAll(/`([a-z]+)`/g)].map((m) => m[1]!);
    for (const c of named) assert.ok(COMMANDS.includes(c), `${c} in "${cmdCell}" is a command`);
    const commands = cmdCell === 'every command' ? COMMANDS : but ? COMMANDS.filter((c) => !named.includes(c)) : named;
    return { flag, ...(short ? { short } : {}), commands, meaning, line };
  });
}

const STOP = new Set(['with', 'from', 'that', 'this', 'when', 'each', 'also', 'only', 'then', 'else', 'every', 'default', 'instead', 'their', 'there', 'which']);
const words = (s: string) => new Set(s.toLowerCase().replace(/[`'"]/g, '').split(/[^a-z0-9-]+/).filter((w) => w.length >= 4 && !STOP.has(w)));

describe('README flag table and --help agree', async () => {
  const helps = new Map<string, Map<string, HelpFlag>>();
  for (const c of COMMANDS) helps.set(c, helpFlags(await help(c)));
  const rows = readmeRows();

  test('one row per flag name: one meaning per name across commands', () => {
    const seen = rows.map((r) => r.flag);
    assert.deepEqual(seen.filter((f, i) => seen.indexOf(f) !== i), []);
  });

  test('every flag in a command\'s help is a row naming that command, with the same short form', () => {
    for (const [cmd, flags] of helps) {
      for (const [flag, h] of flags) {
        const row = rows.find((r) => r.flag === flag);
        assert.ok(row, `${cmd} --help lists --${flag}, the README table does not`);
        assert.ok(row.commands.includes(cmd), `${cmd} --help lists --${flag}; its README row names ${row.commands.join(', ')}`);
        assert.equal(row.short, h.short, `--${flag}: short form in ${cmd} --help -${h.short ?? '(none)'}, in the README -${row.short ?? '(none)'}`);
      }
    }
  });

  test('every row names exactly the commands whose help lists the flag, and shares a meaning word with each', () => {
    for (const row of rows) {
      for (const cmd of COMMANDS) {
        const h = helps.get(cmd)!.get(row.flag);
        assert.equal(h !== undefined, row.commands.includes(cmd), `--${row.flag}: README says ${row.commands.includes(cmd) ? '' : 'not '}${cmd}, its --help ${h ? 'lists' : 'does not list'} it`);
        if (!h || h.desc === '') continue;
        const common = [...words(h.desc)].filter((w) => words(row.meaning).has(w));
        assert.ok(common.length > 0, `--${row.flag}: ${cmd} --help says "${h.desc}", the README "${row.meaning}": no word in common`);
      }
    }
  });

  test('every flag a command parses is in its help: its own, and exactly the globals it takes (the others refused)', async () => {
    for (const c of ALL) {
      const listed = helps.get(c.name);
      if (!listed) continue;
      for (const own of Object.keys(c.options)) assert.ok(listed.has(own), `${c.name} takes --${own}; its --help does not list it`);
      for (const [g, o] of Object.entries(GLOBAL_OPTIONS)) {
        if (g === 'help') continue;
        let err = '';
        // an empty value (or --v= after a boolean) is refused once the flag itself is taken: no command runs
        const argv = o.type === 'string' ? [c.name, `--${g}=`] : [c.name, `--${g}`, '--v='];
        const code = await main(argv, { out: () => {}, err: (s) => { err += s; }, env: {} });
        assert.equal(code, 2, `${argv.join(' ')}: ${err}`);
        if (listed.has(g)) assert.match(err, /needs a value, got an empty string/, `${c.name} --help lists --${g}, yet: ${err}`);
        else assert.match(err, new RegExp(`^error: ${c.name} does not take --${g}: `), `${c.name} --help leaves out --${g}, yet: ${err}`);
      }
    }
  });
});
