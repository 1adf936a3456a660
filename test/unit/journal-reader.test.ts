import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BackupStore } from '../../src/engine/backup.ts';
import { checkStateDir } from '../../src/engine/files.ts';
import { Journal, journalEntryProblem, readJournal } from '../../src/engine/journal.ts';
import { acquireLocalLock } from '../../src/engine/lock.ts';
import { InputError } from '../../src/errors.ts';
import { run } from './run-cli.ts';
import { KUBECONFIG, SERVICE_PLAN } from './bad-input/plan-fixtures.ts';

install();

const tmp = () => mkdtempSync(join(tmpdir(), 'kr-journal-'));
const line = (o: Record<string, unknown>) => `${JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', run: 'r', ...o })}\n`;
const inputError = (re: RegExp) => (e: unknown) => e instanceof InputError && re.test(e.message);

describe('journal reader', () => {
  it('reads entries; a missing journal is empty', () => {
    const d = tmp();
    assert.deepEqual(readJournal(join(d, 'none.jsonl')), []);
    writeFileSync(join(d, 'j'), line({ event: 'step-start', step: 'a' }) + '\n' + line({ event: 'step-done', step: 'a' }));
    assert.deepEqual(readJournal(join(d, 'j')).map((e) => e.event), ['step-start', 'step-done']);
  });

  it('skips a torn last line with a warning, and refuses the same line anywhere else naming the line', () => {
    const d = tmp();
    const p = join(d, 'j');
    writeFileSync(p, line({ event: 'run-start' }) + '{"ts":"2026-');
    const warnings: string[] = [];
    assert.equal(readJournal(p, { warn: (m) => warnings.push(m) }).length, 1);
    assert.match(warnings.join(), /line 2 is incomplete/);
    writeFileSync(p, line({ event: 'run-start' }) + '{"ts":"2026-\n' + line({ event: 'run-end' }));
    assert.throws(() => readJournal(p), inputError(/journal .*j: line 2: not JSON/));
  });

  it('refuses lines that are JSON but not entries', () => {
    const d = tmp();
    const p = join(d, 'j');
    for (const [bad, re] of [
      ['null', /line 1: null, not a journal entry/], ['7', /number 7/], ['[]', /a list/], ['"x"', /string "x"/], ['{}', /"ts" is missing/],
      [JSON.stringify({ ts: 1, run: 'r', event: 'run-start' }), /"ts" is number 1/],
      [JSON.stringify({ ts: 't', run: 'r', event: 'nope' }), /"event" is string "nope"/],
      [JSON.stringify({ ts: 't', run: 'r', event: 'backup', objects: 'a' }), /"objects" is not a list of strings/],
    ] as const) {
      writeFileSync(p, `${bad}\n${line({ event: 'run-end' })}`);
      assert.throws(() => readJournal(p), inputError(re), bad);
    }
    writeFileSync(p, Buffer.concat([Buffer.from(line({ event: 'run-start' })), Buffer.from([0, 1, 0xff, 0x0a])]));
    assert.throws(() => readJournal(p), inputError(/line 2: not text \(binary data\)/));
    assert.equal(journalEntryProblem({ ts: 't', run: 'r', event: 'gate', step: 's' }), undefined);
  });

  it('refuses a directory where the journal goes', () => {
    const d = tmp();
    mkdirSync(join(d, 'j'));
    assert.throws(() => readJournal(join(d, 'j')), inputError(/it is a directory, not a regular file/));
  });

  it('appending after a crash moves the torn line aside, so the next entry starts on its own line', () => {
    const d = tmp();
    const p = join(d, 'journal.jsonl');
    writeFileSync(p, line({ event: 'run-start' }) + '{"ts":"20', { mode: 0o600 });
    const warnings: string[] = [];
    const j = new Journal(p, 'r2', (m) => warnings.push(m));
    j.append('run-start');
    j.append('run-end');
    assert.deepEqual(readJournal(p).map((e) => e.event), ['run-start', 'run-start', 'run-end']);
    assert.equal(readFileSync(`${p}.torn`, 'utf8'), '{"ts":"20\n');
    assert.equal(statSync(`${p}.torn`).mode & 0o777, 0o600);
    assert.match(warnings.join(), /line 2 was torn/);
    // a complete last entry without its newline is kept, not moved
    writeFileSync(p, line({ event: 'run-start' }).trimEnd());
    new Journal(p, 'r3').append('run-end');
    assert.deepEqual(readJournal(p).map((e) => e.event), ['run-start', 'run-end']);
  });

  it('KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC=2 kills the process between the 2nd line\'s write and its fsync', () => {
    const p = join(tmp(), 'journal.jsonl');
    const src = `import { Journal } from ${JSON.stringify(new URL('../../src/engine/journal.ts', import.meta.url).href)};
      const j = new Journal(${JSON.stringify(p)}, 'r');
      j.append('run-start'); j.append('step-start', { step: 'a' }); j.append('step-done', { step: 'a' });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], { env: { ...process.env, KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: '2' } });
    assert.equal(r.signal, 'SIGKILL', String(r.stderr));
    // the line written before the kill is whole: the next run reads it, and nothing after it
    assert.deepEqual(readJournal(p).map((e) => e.event), ['run-start', 'step-start']);
  });

  it('with :TEXT, only the lines and files that contain it count', () => {
    const d = tmp();
    const p = join(d, 'journal.jsonl');
    const src = `import { Journal } from ${JSON.stringify(new URL('../../src/engine/journal.ts', import.meta.url).href)};
      const j = new Journal(${JSON.stringify(p)}, 'r');
      j.append('step-start', { step: 'a' }); j.append('step-start', { step: 'b' }); j.append('step-done', { step: 'b' }); j.append('step-done', { step: 'c' });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], { env: { ...process.env, KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC: '2:"step":"b"' } });
    assert.equal(r.signal, 'SIGKILL', String(r.stderr));
    assert.deepEqual(readJournal(p).map((e) => `${e.event} ${e.step}`), ['step-start a', 'step-start b', 'step-done b']);
    const files = `import { writeFileDurable } from ${JSON.stringify(new URL('../../src/engine/files.ts', import.meta.url).href)};
      for (const n of ['core_Pod_x_p.json', 'core_Node__cluster_n1.json', 'core_Node__cluster_n2.json']) writeFileDurable(${JSON.stringify(d)} + '/b/' + n, '{}');`;
    const f = spawnSync(process.execPath, ['--input-type=module', '-e', files], { env: { ...process.env, KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC: '2:Node__cluster' } });
    assert.equal(f.signal, 'SIGKILL', String(f.stderr));
    // the second Node's file was written under its temporary name, never renamed into place
    const names = readdirSync(join(d, 'b')).sort();
    assert.deepEqual(names.filter((n) => !n.startsWith('.')), ['core_Node__cluster_n1.json', 'core_Pod_x_p.json']);
    assert.equal(names.filter((n) => n.endsWith('.tmp')).length, 1);
  });
});

describe('state directory, lock and backups checks', () => {
  it('refuses paths under a file, pseudo file systems and wrong entry types; accepts a new directory', () => {
    const d = tmp();
    writeFileSync(join(d, 'f'), 'x');
    assert.throws(() => checkStateDir(join(d, 'f', 'state')), inputError(/not a directory/));
    assert.throws(() => checkStateDir(join(d, 'f')), inputError(/is a regular file, not a directory/));
    assert.throws(() => checkStateDir('/proc/self/x'), inputError(/\/proc is a pseudo file system/));
    assert.throws(() => checkStateDir('/sys'), inputError(/\/sys is a pseudo file system/));
    assert.throws(() => checkStateDir('/dev/null'), inputError(/\/dev is a pseudo file system/));
    assert.deepEqual(checkStateDir(join(d, 'new', 'state')), { exists: false });
    mkdirSync(join(d, 's', 'lock'), { recursive: true });
    assert.throws(() => checkStateDir(join(d, 's')), inputError(/lock file .* is a directory, expected a regular file/));
  });

  it('a lock path that is a directory is an input error, not a crash', () => {
    const d = tmp();
    mkdirSync(join(d, 'lock'));
    assert.throws(() => acquireLocalLock(join(d, 'lock'), 'me'), inputError(/lock file .* is a directory/));
  });

  it('backups: nothing is created until the first save; damaged files are named', () => {
    const d = tmp();
    const b = new BackupStore(join(d, 'b'), 'r');
    assert.throws(() => statSync(join(d, 'b')));
    assert.deepEqual(b.all(), []);
    mkdirSync(join(d, 'b'));
    writeFileSync(join(d, 'b', 'x.json'), '{"takenAt":');
    assert.throws(() => b.all(), inputError(/backup .*x\.json: not JSON/));
    writeFileSync(join(d, 'b', 'x.json'), JSON.stringify({ takenAt: 't', run: 'r', object: { kind: 'Service', metadata: { name: 7 } } }));
    assert.throws(() => b.check(), inputError(/"object\.metadata\.name" is not a string/));
  });
});

describe('apply reaches the cluster only with valid flags, plan and state', () => {
  it('a valid plan and state directory get as far as the (unreachable) cluster: exit 4', async () => {
    const d = tmp();
    writeFileSync(join(d, 'plan.yaml'), SERVICE_PLAN);
    writeFileSync(join(d, 'kubeconfig'), KUBECONFIG);
    const r = await run(['apply', join(d, 'plan.yaml'), '--kubeconfig', join(d, 'kubeconfig'), '--state-dir', join(d, 'state'), '--timeout', '30s']);
    assert.equal(r.code, 4, r.err);
    assert.match(r.err, /^error: cannot reach the API server https:\/\/127\.0\.0\.1:/);
    const bad = await run(['apply', join(d, 'plan.yaml'), '--kubeconfig', join(d, 'kubeconfig'), '--state-dir', join(d, 'state2'), '--timeout', '0']);
    assert.equal(bad.code, 2, bad.err);
    assert.throws(() => statSync(join(d, 'state2')));
  });
});
