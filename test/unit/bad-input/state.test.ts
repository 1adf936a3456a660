/**
 * State directories, journals, locks and backups that cannot be used: each is refused with exit 3 and a
 * message naming the path, before the cluster is contacted, without hanging on a FIFO or a device, and
 * without writing anything.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { corpus, type BadInputCase } from './harness.ts';
import { defaultStateDirOf, KUBECONFIG, SERVICE_PLAN, withoutKubeconfigForStatus } from './plan-fixtures.ts';

// FIFOs cannot be made through the harness's `files`: they live in a directory of their own, outside the cases.
const FX = mkdtempSync(join(tmpdir(), 'kr-state-fx-'));
after(() => rmSync(FX, { recursive: true, force: true }));
for (const d of ['fifo-journal', 'fifo-lock', 'fifo-plan-copy']) mkdirSync(join(FX, d));
execFileSync('mkfifo', [join(FX, 'fifo-journal', 'journal.jsonl'), join(FX, 'fifo-lock', 'lock'), join(FX, 'fifo-plan-copy', 'plan.yaml'), join(FX, 'plan-fifo.yaml')]);

const BASE = { kubeconfig: KUBECONFIG, 'plan.yaml': SERVICE_PLAN };
const at = (cmd: string, stateDir: string) => [cmd, '$D/plan.yaml', '--kubeconfig', '$D/kubeconfig', '--state-dir', stateDir];

const entry = (o: Record<string, unknown>) => JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', run: 'r1', ...o });
const GOOD = entry({ event: 'run-start', detail: 'apply' });
const DONE = entry({ event: 'step-done', step: 'create-target-servicecidr' });
/** A journal with `bad` as line 2 of 3. */
const journalWith = (bad: string | Buffer): Buffer => Buffer.concat([Buffer.from(`${GOOD}\n`), Buffer.isBuffer(bad) ? bad : Buffer.from(bad), Buffer.from(`\n${DONE}\n`)]);

const cases: BadInputCase[] = [];

// ---- the state directory ----
for (const cmd of ['apply', 'resume', 'status', 'verify', 'rollback', 'restore']) {
  cases.push({ name: `${cmd}: state dir under a regular file`, args: at(cmd, '$D/afile/state'), files: { ...BASE, afile: 'x' }, code: 3, message: /state directory .*afile\/state: .*not a directory/ });
}
cases.push(
  { name: 'apply: state dir is a regular file', args: at('apply', '$D/afile'), files: { ...BASE, afile: 'x' }, code: 3, message: /state directory .*afile is a regular file, not a directory/ },
  { name: 'apply: state dir under /proc', args: at('apply', '/proc/self/kr-state'), files: BASE, code: 3, message: /\/proc is a pseudo file system/ },
  { name: 'status: state dir is /proc itself', args: at('status', '/proc'), files: BASE, code: 3, message: /\/proc is a pseudo file system/ },
  { name: 'resume: state dir under /sys', args: at('resume', '/sys/kernel/kr-state'), files: BASE, code: 3, message: /\/sys is a pseudo file system/ },
  { name: 'verify: state dir is /dev/null', args: at('verify', '/dev/null'), files: BASE, code: 3, message: /\/dev is a pseudo file system/ },
  { name: 'rollback: state dir under /dev/shm', args: at('rollback', '/dev/shm/kr-state'), files: BASE, code: 3, message: /\/dev is a pseudo file system/ },
  { name: 'apply: default state dir under a file in HOME', args: ['apply', '$D/plan.yaml', '--kubeconfig', '$D/kubeconfig'], files: { ...BASE, 'home/.local': 'x' }, code: 3, message: /state directory .*home\/\.local\/state\/kube-renumber\/[0-9a-f]{12}: .*not a directory/ },
  { name: 'status: XDG_STATE_HOME in /proc', args: ['status', '$D/plan.yaml'], env: { XDG_STATE_HOME: '/proc/1' }, files: BASE, code: 3, message: /\/proc is a pseudo file system/ },
);

// ---- the journal ----
const DS = defaultStateDirOf(SERVICE_PLAN).replace('$D/', '');
cases.push(
  { name: 'status: journal is a FIFO', args: at('status', join(FX, 'fifo-journal')), files: BASE, code: 3, message: /journal .*journal\.jsonl is a FIFO/ },
  { name: 'resume: journal is a FIFO', args: at('resume', join(FX, 'fifo-journal')), files: BASE, code: 3, message: /journal .*journal\.jsonl is a FIFO/ },
  { name: 'apply: journal is a directory', args: at('apply', '$D/state'), files: BASE, dirs: ['state/journal.jsonl'], code: 3, message: /journal .*journal\.jsonl is a directory, expected a regular file/ },
  { name: 'status: journal is a directory (default state dir)', args: ['status', '$D/plan.yaml'], files: BASE, dirs: [`${DS}/journal.jsonl`], code: 3, message: /journal .*journal\.jsonl is a directory/ },
);
const badLines: Array<[string, string, string | Buffer, RegExp]> = [
  ['status', 'a null line', 'null', /line 2: null, not a journal entry/],
  ['resume', 'a number line', '42', /line 2: number 42, not a journal entry/],
  ['rollback', 'an array line', '[{"event":"step-done"}]', /line 2: a list, not a journal entry/],
  ['status', 'a string line', '"step-done"', /line 2: string "step-done", not a journal entry/],
  ['apply', 'a line without event', entry({ step: 'x' }), /line 2: "event" is missing/],
  ['status', 'an unknown event', entry({ event: 'explode' }), /line 2: "event" is string "explode", not one of/],
  ['rollback', 'a step that is a number', entry({ event: 'step-done', step: 5 }), /line 2: "step" is number 5, not a string/],
  ['status', 'objects that are not strings', entry({ event: 'backup', objects: [1] }), /line 2: "objects" is not a list of strings/],
  ['resume', 'a line torn in the middle', '{"ts":"2026-01-01T00:', /line 2: not JSON/],
  ['status', 'binary garbage in the middle', Buffer.from([0x00, 0xff, 0xfe, 0x13, 0x37, 0x00]), /line 2: not text \(binary data\)/],
  ['apply', 'invalid UTF-8 in the middle', Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]), /line 2: not text/],
];
for (const [cmd, what, bad, message] of badLines) {
  cases.push({ name: `${cmd}: journal with ${what}`, args: at(cmd, '$D/state'), files: { ...BASE, 'state/journal.jsonl': journalWith(bad) }, code: 3, message: new RegExp(`journal .*state/journal\\.jsonl: ${message.source}`) });
}
cases.push(
  { name: 'status: journal whose last complete line is null', args: at('status', '$D/state'), files: { ...BASE, 'state/journal.jsonl': `${GOOD}\nnull\n` }, code: 3, message: /journal\.jsonl: line 2: null/ },
  { name: 'status: journal of binary data (default state dir)', args: ['status', '$D/plan.yaml'], files: { ...BASE, [`${DS}/journal.jsonl`]: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00]) }, code: 3, message: /journal .*journal\.jsonl: line 1: not text/ },
);

// ---- lock, plan copy, backups ----
cases.push(
  { name: 'apply: lock file is a directory', args: at('apply', '$D/state'), files: BASE, dirs: ['state/lock'], code: 3, message: /lock file .*state\/lock is a directory/ },
  { name: 'restore: lock file is a directory', args: at('restore', '$D/state'), files: BASE, dirs: ['state/lock'], code: 3, message: /lock file .*state\/lock is a directory/ },
  { name: 'apply: lock file is a FIFO', args: at('apply', join(FX, 'fifo-lock')), files: BASE, code: 3, message: /lock file .*lock is a FIFO/ },
  { name: 'resume: plan copy is a FIFO', args: at('resume', join(FX, 'fifo-plan-copy')), files: BASE, code: 3, message: /plan copy .*plan\.yaml is a FIFO/ },
  { name: 'apply: plan copy is a directory', args: at('apply', '$D/state'), files: BASE, dirs: ['state/plan.yaml'], code: 3, message: /plan copy .*plan\.yaml is a directory/ },
  { name: 'apply: plan itself is a FIFO', args: ['apply', join(FX, 'plan-fifo.yaml'), '--kubeconfig', '$D/kubeconfig', '--state-dir', '$D/state'], files: BASE, code: 3, message: /plan-fifo\.yaml: it is a FIFO/ },
  { name: 'apply: backups is a file', args: at('apply', '$D/state'), files: { ...BASE, 'state/backups': 'x' }, code: 3, message: /backups directory .*state\/backups is a regular file, expected a directory/ },
  { name: 'verify: backups is a file', args: at('verify', '$D/state'), files: { ...BASE, 'state/backups': 'x' }, code: 3, message: /backups directory .*is a regular file/ },
  { name: 'restore: a backup that is not JSON', args: at('restore', '$D/state'), files: { ...BASE, 'state/backups/core_Service_shop_web.json': '{"takenAt": "2026-' }, code: 3, message: /backup .*core_Service_shop_web\.json: not JSON/ },
  { name: 'verify: a backup that is null', args: at('verify', '$D/state'), files: { ...BASE, 'state/backups/core_Service_shop_web.json': 'null' }, code: 3, message: /backup .*core_Service_shop_web\.json: not a backup record/ },
  { name: 'restore: a backup without its object name', args: at('restore', '$D/state'), files: { ...BASE, 'state/backups/core_Service_shop_web.json': JSON.stringify({ takenAt: 'x', run: 'r', object: { kind: 'Service', metadata: {} } }) }, code: 3, message: /"object\.metadata\.name" is not a string/ },
  { name: 'rollback: a backup that is a directory', args: at('rollback', '$D/state'), files: BASE, dirs: ['state/backups/core_Service_shop_web.json'], code: 3, message: /backup .*core_Service_shop_web\.json: it is a directory/ },
  { name: 'apply: a backup of binary data', args: at('apply', '$D/state'), files: { ...BASE, 'state/backups/core_Service_shop_web.json': Buffer.from([0, 1, 2, 0xff]) }, code: 3, message: /backup .*: not text \(binary data\)/ },
);

withoutKubeconfigForStatus(cases);
corpus('state directories, journals, locks and backups', cases);
