/**
 * kubectl's command-line habits: --flag=value and -o=json, Go durations, "did you mean", the plugin's name in
 * texts, version -o json|yaml, help CMD, shell completion (and kubectl's plugin completion protocol), colour on a
 * terminal, --no-headers, inspect -o markdown.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { editDistance, normalizeArgs, programName, suggestions } from '../../src/cli/args.ts';
import { parseGoDuration } from '../../src/cli/common.ts';
import { main, type Io } from '../../src/cli/main.ts';
import { connect } from '../../src/kube/client.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KOPS = join(ROOT, 'examples/kops-tailscale');

/** Run the CLI in-process as `program`, with stdout a terminal or not. */
async function cli(argv: string[], o: { env?: NodeJS.ProcessEnv; program?: string; tty?: boolean } = {}) {
  let out = '';
  let err = '';
  const io: Io = {
    out: (s) => { out += s; }, err: (s) => { err += s; }, env: { HOME: '/nonexistent', ...o.env },
    ...(o.program ? { program: o.program } : {}), stdoutTTY: o.tty === true, stderrTTY: o.tty === true,
  };
  const code = await main(argv, io);
  return { code, out, err };
}

describe('--flag=value and -o=json', () => {
  it('-o=json, --output=yaml and --node-mask=24 read as kubectl reads them', async () => {
    const a = await cli(['calc', '10.233.64.0/18', '-o=json', '--node-mask=24']);
    assert.equal(a.code, 0, a.err);
    assert.equal(JSON.parse(a.out).nodeBlocks.count, 64);
    const b = await cli(['calc', '10.233.64.0/18', '--output=yaml']);
    assert.equal(b.code, 0, b.err);
    assert.match(b.out, /^usable: 16382$/m);
    const c = await cli(['inspect', `--from-file=${KOPS}`, '-o=json']);
    assert.equal(c.code, 0, c.err);
    assert.ok(Array.isArray(JSON.parse(c.out).conflicts));
  });

  it('only a short flag that takes a value is split, and nothing after --', () => {
    const opts = { output: { type: 'string' as const, short: 'o' }, verbose: { type: 'boolean' as const, short: 'v' } };
    assert.deepEqual(normalizeArgs(['-o=json', '-v=1', '--', '-o=x'], opts), ['-o', 'json', '-v=1', '--', '-o=x']);
    assert.deepEqual(normalizeArgs(['-o=', '-ojson'], opts), ['-o', '', '-ojson']);
  });

  it('-o= (empty) is refused like -o ""', async () => {
    const r = await cli(['calc', '10.0.0.0/8', '-o=']);
    assert.equal(r.code, 2);
    assert.match(r.err, /^error: --output needs a value/);
  });
});

describe('Go durations', () => {
  it('reads what time.ParseDuration reads, and plain seconds', () => {
    const cases: Array<[string, number]> = [
      ['1m30s', 90_000], ['1h2m3.5s', 3_723_500], ['500ms', 500], ['0', 0], ['0s', 0], ['30', 30_000], ['1.5h', 5_400_000],
      ['250us', 0.25], ['1500000ns', 1.5], ['2h45m', 9_900_000], ['.5s', 500], ['1.s', 1000], ['+5s', 5000],
    ];
    for (const [raw, ms] of cases) assert.equal(parseGoDuration(raw), ms, raw);
    for (const raw of ['1x', '1d', '1e3s', 's', 'm1', '1m 30s', '', '--1s', '1.2.3s', 'ms']) assert.equal(parseGoDuration(raw), undefined, raw);
  });

  it('--request-timeout 1m30s and 0 are accepted on every command that reads a cluster', async () => {
    for (const v of ['1m30s', '0', '1h2m3.5s', '500ms']) {
      const r = await cli(['inspect', '-f', KOPS, '--request-timeout', v, '-o', 'json']);
      assert.equal(r.code, 0, `${v}: ${r.err}`);
    }
  });

  it('--request-timeout 0 waits as long as the server takes; 1s gives up on a 1.5 s answer', async () => {
    const srv = createServer((_req, res) => { setTimeout(() => { res.setHeader('content-type', 'application/json'); res.end('{"kind":"Status","ok":true}'); }, 1500); });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'kr-parity-'));
    writeFileSync(join(dir, 'kc'), ['apiVersion: v1', 'kind: Config', 'current-context: c',
      `clusters: [{name: k, cluster: {server: "http://127.0.0.1:${port}"}}]`, 'users: [{name: u, user: {}}]', 'contexts: [{name: c, context: {cluster: k, user: u}}]', ''].join('\n'));
    try {
      const patient = connect({ kubeconfig: join(dir, 'kc'), requestTimeoutMs: 0, env: {} });
      assert.deepEqual(await patient.request('GET', '/version'), { kind: 'Status', ok: true });
      const hasty = connect({ kubeconfig: join(dir, 'kc'), requestTimeoutMs: 1000, env: {} });
      await assert.rejects(hasty.request('GET', '/version'), /timed out after 1s/);
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });
});

describe('did you mean', () => {
  it('edit distance counts insertions, deletions, substitutions and swaps', () => {
    assert.equal(editDistance('kubconfig', 'kubeconfig'), 1);
    assert.equal(editDistance('inspcet', 'inspect'), 1);
    assert.equal(editDistance('plan', 'apply'), 4);
    assert.deepEqual(suggestions('--kubconfig', ['--kubeconfig', '--context', '--output']), ['--kubeconfig']);
    assert.deepEqual(suggestions('banana', ['inspect', 'plan', 'apply']), []);
  });

  it('an unknown flag: one plain line, the closest flag, no parser text', async () => {
    const r = await cli(['inspect', '--kubconfig', 'x']);
    assert.equal(r.code, 2);
    assert.equal(r.err, 'error: unknown flag --kubconfig for inspect (did you mean --kubeconfig or --config?)\n');
    const far = await cli(['plan', '--frobnicate', '-f', KOPS]);
    assert.equal(far.err, 'error: unknown flag --frobnicate for plan (see "kube-renumber plan --help")\n');
    const short = await cli(['calc', '10.0.0.0/8', '-X']);
    assert.match(short.err, /^error: unknown shorthand flag -X for calc \(calc takes -o \(--output\), -v \(--verbose\), -h \(--help\)\)/);
    // a flag the command does not take is not suggested
    const notTaken = await cli(['calc', '10.0.0.0/8', '--kubeconfg', 'x']);
    assert.doesNotMatch(notTaken.err, /--kubeconfig/);
  });

  it('an unknown command: the closest command', async () => {
    assert.equal((await cli(['inspct'])).err, 'error: unknown command "inspct" (did you mean inspect?)\n');
    assert.equal((await cli(['rollbak', 'p.yaml'])).err, 'error: unknown command "rollbak" (did you mean rollback?)\n');
    const none = await cli(['frobnicate']);
    assert.equal(none.code, 2);
    assert.match(none.err, /unknown command "frobnicate" \(commands: inspect, calc, .*completion, help\)/);
  });
});

describe('as the kubectl plugin', () => {
  it('is detected from the program name or KUBECTL_PLUGINS_CALLER', () => {
    assert.equal(programName({ env: {}, program: '/usr/local/bin/kubectl-renumber' }), 'kubectl renumber');
    assert.equal(programName({ env: { KUBECTL_PLUGINS_CALLER: '/usr/bin/kubectl' }, program: '/x/bin/kube-renumber.js' }), 'kubectl renumber');
    assert.equal(programName({ env: {}, program: '/x/bin/kube-renumber.js' }), 'kube-renumber');
    assert.equal(programName({ env: {} }), 'kube-renumber');
  });

  it('usage, help and errors say "kubectl renumber"', async () => {
    const plugin = { program: '/home/u/.krew/bin/kubectl-renumber' };
    const top = await cli(['--help'], plugin);
    assert.match(top.out, /^Usage: kubectl renumber COMMAND \[flags\]$/m);
    assert.match(top.out, /Run "kubectl renumber COMMAND --help"/);
    assert.doesNotMatch(top.out, /kube-renumber (COMMAND|inspect)/);
    const h = await cli(['inspect', '--help'], { env: { KUBECTL_PLUGINS_CALLER: '/usr/bin/kubectl' } });
    assert.match(h.out, /^Usage: kubectl renumber inspect /m);
    // names that are not invocations stay as they are
    assert.match(h.out, /~\/\.config\/kube-renumber\/config\.yaml/);
    const e = await cli(['plan', '--bogus', '-f', KOPS], plugin);
    assert.equal(e.err, 'error: unknown flag --bogus for plan (see "kubectl renumber plan --help")\n');
    const a = await cli(['apply'], plugin);
    assert.match(a.err, /\(usage: kubectl renumber apply PLAN\.yaml/);
    const plain = await cli(['plan', '--bogus', '-f', KOPS]);
    assert.match(plain.err, /see "kube-renumber plan --help"/);
  });
});

describe('version and help', () => {
  it('version -o json|yaml is a document; plain version is the number', async () => {
    const j = await cli(['version', '-o', 'json']);
    assert.equal(j.code, 0);
    const doc = JSON.parse(j.out);
    assert.match(doc.version, /^\d+\.\d+\.\d+/);
    assert.equal(doc.nodeVersion, process.version);
    assert.equal(doc.platform, `${process.platform}/${process.arch}`);
    const y = await cli(['version', '-o=yaml']);
    assert.match(y.out, new RegExp(`^version: ${doc.version.replace(/\./g, '\\.')}\nnodeVersion: ${process.version.replace(/\./g, '\\.')}\nplatform: `));
    assert.equal((await cli(['version'])).out, `${doc.version}\n`);
  });

  it('version refuses what it does not take', async () => {
    for (const args of [['--bogus'], ['extra'], ['--kubeconfig', 'x'], ['-o', 'xml'], ['--no-headers']]) {
      const r = await cli(['version', ...args]);
      assert.equal(r.code, 2, `version ${args.join(' ')}: ${r.err}`);
      assert.equal(r.out, '');
      assert.match(r.err, /^error: /);
    }
  });

  it('help CMD prints that command\'s help', async () => {
    for (const c of ['inspect', 'plan', 'apply', 'completion']) {
      const a = await cli(['help', c]);
      const b = await cli([c, '--help']);
      assert.equal(a.code, 0);
      assert.equal(a.out, b.out);
      assert.match(a.out, new RegExp(`^Usage: kube-renumber ${c}`, 'm'));
    }
    const bad = await cli(['help', 'inspct']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /did you mean inspect\?/);
    assert.equal((await cli(['help', 'a', 'b'])).code, 2);
  });
});

describe('completion', () => {
  it('answers in cobra\'s protocol: candidates, then :DIRECTIVE', async () => {
    const ask = async (...words: string[]) => (await cli(['__complete', ...words])).out;
    assert.equal(await ask('ap'), 'apply\n:4\n');
    assert.equal(await ask('inspect', '--kube'), '--kubeconfig\n:4\n');
    assert.equal(await ask('inspect', '-o', ''), 'table\nwide\njson\nyaml\nmarkdown\nhtml\n:4\n');
    assert.equal(await ask('suggest', '--for', 'p'), 'pods\n:4\n');
    assert.equal(await ask('plan', '--output=m'), '--output=markdown\n:4\n');
    assert.equal(await ask('inspect', '-f', ''), ':0\n', 'file names for -f');
    assert.equal(await ask('apply', ''), ':0\n', 'file names for the plan');
    assert.equal(await ask('completion', ''), 'bash\nzsh\nfish\n:4\n');
    assert.equal(await ask('help', 'ro'), 'rollback\n:4\n');
    // flags the command does not take are not offered
    assert.doesNotMatch(await ask('calc', '--'), /--kubeconfig/);
    assert.match(await ask('calc', '--'), /--node-mask/);
  });

  it('completion bash drives bash\'s completion through the program', { skip: spawnSync('bash', ['--version']).status !== 0 && 'no bash' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-comp-'));
    // the program on PATH as the script calls it: the CLI from the sources
    writeFileSync(join(dir, 'kube-renumber'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'test/unit/bad-input/entry.ts')}" "$@"\n`, { mode: 0o755 });
    const script = spawnSync(process.execPath, [join(ROOT, 'test/unit/bad-input/entry.ts'), 'completion', 'bash'], { encoding: 'utf8' }).stdout;
    writeFileSync(join(dir, 'comp.bash'), script);
    const complete = (line: string) => spawnSync('bash', ['-c', `source ${dir}/comp.bash; COMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); `
      + `[ "\${line: -1}" = " " ] ; __kube_renumber_complete; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8', env: { PATH: `${dir}:${process.env.PATH}` } }).stdout;
    assert.equal(complete('kube-renumber insp'), 'inspect\n');
    assert.equal(complete('kube-renumber suggest --for se'), 'services\n');
    assert.match(complete('kube-renumber plan --service'), /^--service-cidr$/m);
  });

  it('zsh and fish scripts call the program; an unknown shell is exit 2', async () => {
    assert.match((await cli(['completion', 'zsh'])).out, /^#compdef kube-renumber\n[\s\S]*bashcompinit[\s\S]*__complete/);
    assert.match((await cli(['completion', 'fish'])).out, /complete -c kube-renumber -f -a '\(__kube_renumber_complete\)'/);
    const bad = await cli(['completion', 'tcsh']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^error: completion tcsh: unknown shell \(use bash, zsh, fish\)/);
  });

  it('bin/kubectl_complete-renumber answers kubectl\'s plugin completion (needs dist/: npm run build)', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/kubectl_complete-renumber'), 'resu'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'resume\n:4\n');
    const pkg = JSON.parse(spawnSync('cat', [join(ROOT, 'package.json')], { encoding: 'utf8' }).stdout);
    assert.equal(pkg.bin['kubectl_complete-renumber'], 'bin/kube-renumber.js');
  });
});

describe('colour and --no-headers', () => {
  const ESC = '\x1b[';
  it('severities are coloured on a terminal, with table or wide output only', async () => {
    const tty = await cli(['inspect', '-f', KOPS], { tty: true });
    assert.equal(tty.code, 0);
    assert.ok(tty.out.includes(`${ESC}31merror${ESC}0m`) || tty.out.includes(`${ESC}33mwarning${ESC}0m`), tty.out);
    // the colour codes do not shift the columns: the same text once they are stripped
    const plain = await cli(['inspect', '-f', KOPS]);
    // eslint-disable-next-line no-control-regex
    assert.equal(tty.out.replace(/\x1b\[\d+m/g, ''), plain.out);
    assert.ok(!plain.out.includes(ESC), 'no colour when stdout is not a terminal');
    assert.ok(!(await cli(['inspect', '-f', KOPS], { tty: true, env: { NO_COLOR: '1' } })).out.includes(ESC), 'none with NO_COLOR');
    assert.ok(!(await cli(['inspect', '-f', KOPS, '-o', 'json'], { tty: true })).out.includes(ESC), 'none with -o json');
    assert.ok((await cli(['inspect', '-f', KOPS, '-o', 'wide'], { tty: true })).out.includes(ESC), 'colour with -o wide');
    const plan = await cli(['plan', '--service-cidr', '100.32.0.0/15', '-f', KOPS], { tty: true });
    assert.match(plan.out, /\x1b\[32mPASS\x1b\[0m/);
  });

  it('--no-headers drops the column headers of table output, and is refused with other formats', async () => {
    const withH = await cli(['calc', '10.0.0.0/16']);
    const noH = await cli(['calc', '10.0.0.0/16', '--no-headers']);
    assert.match(withH.out, /^FIELD\s+VALUE\n/);
    assert.equal(noH.out, withH.out.split('\n').slice(1).join('\n'));
    const sug = await cli(['suggest', '--for', 'services', '-f', KOPS, '--no-headers', '-o', 'wide']);
    assert.equal(sug.code, 0, sug.err);
    assert.doesNotMatch(sug.out, /^FOR\s+CIDR/m);
    const bad = await cli(['calc', '10.0.0.0/16', '--no-headers', '-o', 'json']);
    assert.equal(bad.code, 2);
    assert.equal(bad.out, '');
    assert.match(bad.err, /^error: --no-headers applies to table output, not -o json/);
  });
});

describe('inspect -o markdown', () => {
  it('the same sections as the table, as Markdown', async () => {
    const r = await cli(['inspect', '-f', KOPS, '-o', 'markdown']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^# Address plan: files: /);
    for (const h of ['Cluster', 'Ranges', 'Capacity', 'Readiness']) assert.match(r.out, new RegExp(`^## ${h}$`, 'm'));
    assert.match(r.out, /^## Conflicts \(\d+ errors?, \d+ warnings?, \d+ info\)$/m);
    assert.match(r.out, /^\| Severity \| Range \| Is \| Overlaps \| Which is \| Why \|$/im);
    assert.match(r.out, /^\| service \| 100\.64\.0\.0\/13 \| /m);
    assert.match(r.out, /100\.64\.0\.0\/10/);
  });
});

describe('inspect --help lists the -o formats inspect takes', () => {
  it('the -o line and the usage line name the same formats, each of them runs, and the refusal names no other', async () => {
    const help = (await cli(['inspect', '--help'])).out;
    const line = /^ {2}-o, --output FORMAT +(.*)$/m.exec(help)?.[1] ?? '';
    const listed = line.replace(/\s*\(.*$/, '').split(' | ');
    const usage = /\[-o ([a-z|]+)\]/.exec(help)?.[1]?.split('|') ?? [];
    assert.deepEqual(listed, usage);
    for (const f of listed) {
      const r = await cli(['inspect', '-f', KOPS, '-o', f]);
      assert.equal(r.code, 0, `inspect -o ${f}: ${r.err}`);
    }
    const bad = await cli(['inspect', '-f', KOPS, '-o', 'nope']);
    assert.equal(bad.code, 2);
    const accepted = /\(use ([^)]*)\)/.exec(bad.err)?.[1]?.split(', ') ?? [];
    // md is markdown's short alias
    assert.deepEqual(accepted.filter((f) => f !== 'md'), listed);
  });
});
