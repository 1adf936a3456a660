// The run's state kept in the cluster: chunks, parts, bases, the order of writes, and the merge with a state
// directory. The chunk logic is pure; the writer runs against an in-memory Secret store (what the apiserver does
// with these Secrets is shown by test/integration/state-in-cluster.test.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore, type BackupRecord } from '../../src/engine/backup.ts';
import {
  assemble, chunkSecrets, ClusterState, COMPACT_AFTER, LAZY_MAX, LAZY_MAX_MS, mirroredClient, readClusterCopy, STATE_NAMESPACE,
} from '../../src/engine/cluster-state.ts';
import { Journal, readJournal, type JournalEntry } from '../../src/engine/journal.ts';
import { mergedJournal, syncStateDir } from '../../src/engine/state-sync.ts';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';

const RUN = 'abcdef012345';
const entry = (event: JournalEntry['event'], step?: string): JournalEntry => ({ ts: new Date().toISOString(), run: RUN, event, ...(step ? { step } : {}) });
const svc = (name: string, extra = ''): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'default', name, annotations: { x: extra } }, spec: { clusterIP: '10.96.0.10' } });
const rec = (o: KubeObject): BackupRecord => ({ takenAt: new Date().toISOString(), run: RUN, object: o });

/** Secrets in memory, and the order of every write sent (Secrets and the rest). */
function memoryClient(opts: { failCreates?: number } = {}) {
  const secrets = new Map<string, KubeObject>();
  const writes: string[] = [];
  let failCreates = opts.failCreates ?? 0;
  const client: KubeClient = {
    server: 'https://example:6443', context: 'test', requestCount: 0, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
    async request(method: string, path: string, o?: { body?: unknown; query?: Record<string, unknown> }): Promise<any> {
      const base = `/api/v1/namespaces/${STATE_NAMESPACE}/secrets`;
      if (path === base && method === 'DELETE') {
        // deletecollection with a label selector of "k=v" and "k!=v" terms (a missing label matches "!=")
        const terms = String(o?.query?.labelSelector ?? '').split(',').map((t) => t.match(/^([^!=]+)(!?=)(.*)$/)!);
        for (const [name, s] of [...secrets]) {
          const labels = s.metadata?.labels ?? {};
          if (terms.every(([, k, op, v]) => (op === '=' ? labels[k!] === v : labels[k!] !== v))) { secrets.delete(name); }
        }
        writes.push(`deletecollection ${o?.query?.labelSelector}`);
        return {};
      }
      if (method === 'GET' && path === `/api/v1/namespaces/${STATE_NAMESPACE}`) return { metadata: { name: STATE_NAMESPACE } };
      if (path === base && method === 'POST') {
        const s = o!.body as KubeObject;
        if (failCreates > 0) { failCreates--; throw new KubeApiError('POST', path, 503, 'ServiceUnavailable', 'try again', 'unreachable'); }
        if (secrets.has(s.metadata!.name!)) throw new KubeApiError('POST', path, 409, 'AlreadyExists', 'exists');
        secrets.set(s.metadata!.name!, structuredClone(s));
        writes.push(`secret ${s.metadata!.name}`);
        return s;
      }
      if (path.startsWith(`${base}/`)) {
        const name = path.slice(base.length + 1);
        if (method === 'GET') { const s = secrets.get(name); if (!s) throw new KubeApiError('GET', path, 404, 'NotFound', 'no'); return s; }
        if (method === 'DELETE') { secrets.delete(name); writes.push(`delete ${name}`); return {}; }
      }
      if (method !== 'GET') writes.push(`${method} ${path}`);
      return {};
    },
    async* list(path: string, o?: { labelSelector?: string }) {
      const [, want] = (o?.labelSelector ?? '').split('=');
      for (const s of secrets.values()) if (s.metadata?.labels?.['kube-renumber.io/state-of'] === want) yield structuredClone(s);
    },
  };
  return { client, secrets, writes };
}

describe('chunks', () => {
  test('a chunk larger than a part is split, and reassembled in order', () => {
    const backups = Array.from({ length: 40 }, (_, i) => rec(svc(`s${i}`, randomBytes(3000).toString('hex'))));
    const secrets = chunkSecrets(RUN, 0, { journal: [entry('run-start')], backups }, { maxPart: 32 * 1024 });
    assert.ok(secrets.length > 3, `${secrets.length} parts`);
    const copy = assemble(RUN, secrets.reverse());
    assert.equal(copy.backups.length, 40);
    assert.deepEqual(copy.backups.map((r) => r.object.metadata!.name), backups.map((r) => r.object.metadata!.name));
    assert.equal(copy.nextSeq, 1);
  });

  test('a chunk with a part missing was never acknowledged whole: it is left out', () => {
    const a = chunkSecrets(RUN, 0, { journal: [entry('run-start')], backups: [] });
    const b = chunkSecrets(RUN, 1, { journal: [entry('step-start', 'x')], backups: [rec(svc('big', randomBytes(60_000).toString('hex')))] }, { maxPart: 16 * 1024 });
    const copy = assemble(RUN, [...a, ...b.slice(0, -1)]);
    assert.deepEqual(copy.journal.map((e) => e.event), ['run-start']);
    assert.equal(copy.backups.length, 0);
    assert.equal(copy.nextSeq, 2, 'the half-written chunk number is not used again');
  });

  test('the first backup of an object wins; a base starts the state afresh', () => {
    const first = rec(svc('a', 'original'));
    const copy = assemble(RUN, [
      ...chunkSecrets(RUN, 0, { journal: [entry('run-start')], backups: [first] }),
      ...chunkSecrets(RUN, 1, { journal: [], backups: [rec(svc('a', 'later'))] }),
    ]);
    assert.equal(copy.backups[0]!.object.metadata!.annotations!.x, 'original');
    const based = assemble(RUN, [
      ...chunkSecrets(RUN, 0, { journal: [entry('run-start')], backups: [] }),
      ...chunkSecrets(RUN, 1, { base: true, journal: [entry('run-start'), entry('run-end')], backups: [first] }),
      ...chunkSecrets(RUN, 2, { journal: [entry('run-start')], backups: [] }),
    ]);
    assert.deepEqual(based.journal.map((e) => e.event), ['run-start', 'run-end', 'run-start']);
  });

  test('an entry of another run in a chunk is refused', () => {
    const s = chunkSecrets(RUN, 0, { journal: [{ ...entry('run-start'), run: 'other' }], backups: [] });
    assert.throws(() => assemble(RUN, s), /damaged: chunk 0: a journal entry of another run/);
  });
});

describe('writer', () => {
  test('every write of the run is preceded by the chunk holding what was journaled and backed up before it', async () => {
    const mem = memoryClient({ failCreates: 1 });
    const state = new ClusterState(mem.client, RUN);
    const client = mirroredClient(mem.client, state);
    state.enqueueJournal(entry('run-start'));
    state.enqueueBackup(rec(svc('a')));
    await client.request('PATCH', '/api/v1/namespaces/default/services/a', { body: {} });
    await client.request('GET', '/api/v1/namespaces/default/services/a');
    await client.request('PATCH', '/api/v1/namespaces/default/services/a', { body: {} });
    state.enqueueJournal(entry('step-done', 'x'));
    await client.request('DELETE', '/api/v1/namespaces/default/services/b');
    assert.deepEqual(mem.writes, [
      `secret kr-state-${RUN}-000000-0`, 'PATCH /api/v1/namespaces/default/services/a', 'PATCH /api/v1/namespaces/default/services/a',
      `secret kr-state-${RUN}-000001-0`, 'DELETE /api/v1/namespaces/default/services/b',
    ]);
    const copy = await readClusterCopy(mem.client, RUN);
    assert.deepEqual(copy!.journal.map((e) => e.event), ['run-start', 'step-done']);
    assert.equal(copy!.backups.length, 1);
  });

  test('writes at once share one chunk; after COMPACT_AFTER chunks a base replaces the chunks before it', async () => {
    const mem = memoryClient();
    const state = new ClusterState(mem.client, RUN);
    const client = mirroredClient(mem.client, state);
    for (let i = 0; i < 5; i++) state.enqueueJournal(entry('step-start', `t${i}`));
    await Promise.all([1, 2, 3].map((i) => client.request('POST', `/api/v1/namespaces/default/services`, { body: { i } })));
    assert.equal(mem.writes.filter((w) => w.startsWith('secret')).length, 1);
    for (let i = 0; i < COMPACT_AFTER + 2; i++) {
      state.enqueueJournal(entry('step-start', `s${i}`));
      await state.flush();
    }
    const copy = await readClusterCopy(mem.client, RUN);
    assert.equal(copy!.journal.length, 5 + COMPACT_AFTER + 2, 'nothing lost by the compaction');
    assert.ok(mem.secrets.size < 10, `${mem.secrets.size} chunks left after the base`);
    // one DELETE of the collection, keeping only the base's parts
    assert.deepEqual(mem.writes.filter((w) => w.startsWith('delete')), [`deletecollection kube-renumber.io/state-of=${RUN},kube-renumber.io/state-seq!=${COMPACT_AFTER}`]);
    assert.deepEqual([...mem.secrets.values()].map((x) => Number(x.metadata?.labels?.['kube-renumber.io/state-seq'])).sort((a, b) => a - b), [COMPACT_AFTER, COMPACT_AFTER + 1, COMPACT_AFTER + 2], 'the base and the chunks after it');
  });

  test('a lazy line (created, report) does not force a chunk: it goes with the next chunk something else forces', async () => {
    const mem = memoryClient();
    const state = new ClusterState(mem.client, RUN);
    const client = mirroredClient(mem.client, state);
    state.enqueueJournal(entry('step-start', 'move'));
    await client.request('POST', '/api/v1/namespaces/default/services', { body: {} });
    for (let i = 0; i < 5; i++) {
      state.enqueueJournal({ ...entry('created'), objects: [`v1/Service/default/b${i}@uid-${i}`] });
      await client.request('PATCH', `/api/v1/namespaces/default/services/s${i}`, { body: {} });
    }
    state.enqueueJournal(entry('step-done', 'move'));
    await client.request('DELETE', '/api/v1/namespaces/default/services/c');
    const chunks = mem.writes.filter((w) => w.startsWith('secret '));
    assert.deepEqual(chunks, [`secret kr-state-${RUN}-000000-0`, `secret kr-state-${RUN}-000001-0`], 'two chunks, none for the created lines alone');
    assert.deepEqual(mem.writes.slice(-2), [`secret kr-state-${RUN}-000001-0`, 'DELETE /api/v1/namespaces/default/services/c']);
    const copy = await readClusterCopy(mem.client, RUN);
    assert.deepEqual(copy!.journal.map((e) => e.event), ['step-start', 'created', 'created', 'created', 'created', 'created', 'step-done']);
  });

  test('lazy lines reach the cluster by the first write after LAZY_MAX_MS, after LAZY_MAX of them, or by themselves after LAZY_MAX_MS', async () => {
    // by the next write once the oldest has waited long enough
    {
      const mem = memoryClient();
      const state = new ClusterState(mem.client, RUN);
      const client = mirroredClient(mem.client, state);
      state.enqueueJournal(entry('created'));
      assert.equal(state.mustFlush(), false);
      assert.equal(state.mustFlush(Date.now() + LAZY_MAX_MS), true);
      await new Promise((r) => setTimeout(r, LAZY_MAX_MS + 50));
      // the timer may have sent it already; either way it is in the cluster before this write
      await client.request('PATCH', '/api/v1/namespaces/default/services/a', { body: {} });
      assert.deepEqual(mem.writes, [`secret kr-state-${RUN}-000000-0`, 'PATCH /api/v1/namespaces/default/services/a']);
    }
    // by count
    {
      const mem = memoryClient();
      const state = new ClusterState(mem.client, RUN);
      const client = mirroredClient(mem.client, state);
      for (let i = 0; i < LAZY_MAX - 1; i++) state.enqueueJournal(entry('report'));
      assert.equal(state.mustFlush(), false);
      state.enqueueJournal(entry('report'));
      assert.equal(state.mustFlush(), true);
      await client.request('PATCH', '/api/v1/namespaces/default/services/a', { body: {} });
      assert.equal(mem.writes[0], `secret kr-state-${RUN}-000000-0`);
      assert.equal((await readClusterCopy(mem.client, RUN))!.journal.length, LAZY_MAX);
    }
    // with no write at all: the timer sends them
    {
      const mem = memoryClient();
      const state = new ClusterState(mem.client, RUN);
      state.enqueueJournal(entry('created'));
      await new Promise((r) => setTimeout(r, LAZY_MAX_MS + 300));
      assert.deepEqual(mem.writes, [`secret kr-state-${RUN}-000000-0`]);
      assert.equal(state.hasPending, false);
    }
  });

  test('a backup or any other line is not lazy', async () => {
    for (const queue of [(st: ClusterState) => st.enqueueBackup(rec(svc('a'))), (st: ClusterState) => st.enqueueJournal(entry('step-start', 'x'))]) {
      const mem = memoryClient();
      const state = new ClusterState(mem.client, RUN);
      queue(state);
      assert.equal(state.mustFlush(), true);
    }
  });

  test('the mirrored client hands watches through, without a chunk first', async () => {
    const mem = memoryClient();
    const seen: string[] = [];
    const inner: KubeClient = { ...mem.client, watch: async (path) => { seen.push(path); } };
    const state = new ClusterState(inner, RUN);
    state.enqueueJournal(entry('step-start', 'x'));
    await mirroredClient(inner, state).watch('/apis/discovery.k8s.io/v1/endpointslices', {}, () => {});
    assert.deepEqual(seen, ['/apis/discovery.k8s.io/v1/endpointslices']);
    assert.deepEqual(mem.writes, [], 'a watch is a read');
  });

  test('a chunk name taken by something else is refused', async () => {
    const mem = memoryClient();
    mem.secrets.set(`kr-state-${RUN}-000000-0`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `kr-state-${RUN}-000000-0`, labels: {} } });
    const state = new ClusterState(mem.client, RUN);
    state.enqueueJournal(entry('run-start'));
    await assert.rejects(state.flush(), /is not this run's state chunk/);
  });
});

describe('a state directory and the cluster copy', () => {
  test('an empty directory gets the cluster copy; what only the directory holds is to be written to the cluster', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-sync-'));
    const journal = [entry('run-start'), entry('step-start', 'a'), entry('step-done', 'a')];
    const copy = assemble(RUN, chunkSecrets(RUN, 0, { journal, backups: [rec(svc('a')), rec(svc('b'))] }));
    const r = syncStateDir(dir, RUN, copy);
    assert.deepEqual(readJournal(join(dir, 'journal.jsonl')), journal);
    assert.equal(readdirSync(join(dir, 'backups')).length, 2);
    assert.deepEqual(r.pulled, { journal: 3, backups: 2 });
    assert.equal(r.push.journal.length + r.push.backups.length, 0);
    // the directory goes on alone (the cluster copy's last chunk never written)
    new Journal(join(dir, 'journal.jsonl'), RUN).append('step-start', { step: 'b' });
    new BackupStore(join(dir, 'backups'), RUN).save(svc('c'));
    const r2 = syncStateDir(dir, RUN, copy);
    assert.deepEqual(r2.push.journal.map((e) => e.step), ['b']);
    assert.deepEqual(r2.push.backups.map((x) => x.object.metadata!.name), ['c']);
  });

  test('a directory whose journal differs from the cluster copy takes the cluster copy and keeps its own aside', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-sync-'));
    const j = new Journal(join(dir, 'journal.jsonl'), RUN);
    j.append('run-start');
    j.append('step-failed', { step: 'a' });
    const remote = [readJournal(join(dir, 'journal.jsonl'))[0]!, entry('step-done', 'a')];
    const r = syncStateDir(dir, RUN, assemble(RUN, chunkSecrets(RUN, 0, { journal: remote, backups: [] })));
    assert.ok(r.diverged && existsSync(r.diverged));
    assert.deepEqual(readJournal(join(dir, 'journal.jsonl')), remote);
    assert.deepEqual(mergedJournal(remote.slice(0, 1), remote), remote);
    assert.deepEqual(mergedJournal(remote, remote.slice(0, 1)), remote);
  });
});
