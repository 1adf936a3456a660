/**
 * The run's state kept in the cluster as well as on disk: the journal's entries and every backup record, as
 * gzip-compressed chunks in Secrets of the namespace `kube-renumber`, one series per run (plan id).
 *
 * Why Secrets: backups hold bare Pods, Deployments' pod templates and Nodes, whose env values and annotations
 * may carry credentials; Secrets are what RBAC (the built-in `view` role cannot read them), audit policies and
 * encryption at rest treat as sensitive, ConfigMaps are not.
 *
 * Durability order: the journal and the backup store queue what they write locally (`enqueue*`); before any
 * write of the run reaches the cluster, `flush()` creates the next chunk and waits for the apiserver's answer
 * (mirroredClient does this for every non-GET request of the steps). So whatever a change depends on (its
 * backup, the journal line saying it is about to happen) is in the cluster before the change is sent.
 * Lines that record what already happened and that no later change depends on (LAZY_EVENTS: a helper's uid
 * after its create, a node's timings) do not force a chunk of their own: they go with the next chunk something
 * else forces, or with the next write once the oldest has waited LAZY_MAX_MS or LAZY_MAX of them are queued.
 * A Service move writes three times after its bridge's create; forcing a chunk for that one line cost a
 * request per moved Service (docs/benchmarks.md, service-renumber). Chunks are only ever created, never updated: chunk <seq> is
 * `kr-state-<run>-<seq>-<part>`; a chunk whose gzip is larger than MAX_PART_BYTES is split into parts, and a
 * chunk missing a part (a crash between two parts' creates) was never acknowledged whole and is ignored.
 * Every COMPACT_AFTER chunks the whole state is written as a base chunk and the chunks before it deleted.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type { KubeObject } from '../cluster/types.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { withRetry } from '../kube/retry.ts';
import { errorLine, UserError } from '../errors.ts';
import { refKey, refOf, type BackupRecord } from './backup.ts';
import { journalEntryProblem, type JournalEntry } from './journal.ts';

/** The namespace the tool keeps its runs' state in (deploy/rbac.yaml creates it; an admin run creates it). */
export const STATE_NAMESPACE = 'kube-renumber';
/** The label naming the run (plan id) a state chunk belongs to. */
export const STATE_RUN_LABEL = 'kube-renumber.io/state-of';
/** The chunk's seq as a label too: a compaction deletes every chunk of the run but the base's in one request. */
export const STATE_SEQ_LABEL = 'kube-renumber.io/state-seq';
export const STATE_SECRET_TYPE = 'kube-renumber.io/state';
/** A Secret's data may hold 1 MiB; a part stays well below it (base64 and metadata on top). */
export const MAX_PART_BYTES = 700 * 1024;
/** Chunks after the last base before the whole state is written again as one base. */
export const COMPACT_AFTER = 200;

const SECRETS = `/api/v1/namespaces/${STATE_NAMESPACE}/secrets`;

/**
 * Journal events that need not reach the cluster before the next write (see the header): `created` is written
 * after its create answered, so a window without it in the cluster exists whatever is done (a resume adopts
 * such a helper by its run labels; a rollback from another machine names it to delete by hand), and `report`
 * carries figures only.
 */
export const LAZY_EVENTS: ReadonlySet<JournalEntry['event']> = new Set(['created', 'report']);
/** Lazy lines wait for a forced chunk at most this long (then the next write sends them) … */
export const LAZY_MAX_MS = 1000;
/** … or until this many are queued. */
export const LAZY_MAX = 64;

/** What one chunk holds. A base chunk holds the whole state; the others what was added since the chunk before. */
export interface StatePayload {
  base?: boolean;
  journal: JournalEntry[];
  backups: BackupRecord[];
}

/** The state of a run as the cluster holds it. */
export interface ClusterCopy {
  journal: JournalEntry[];
  backups: BackupRecord[];
  /** Chunks read (after the last base), and the next free sequence number. */
  chunks: number;
  nextSeq: number;
}

export function chunkName(run: string, seq: number, part: number): string {
  return `kr-state-${run}-${String(seq).padStart(6, '0')}-${part}`;
}

/** The Secrets of one chunk: its gzip split into parts of at most `maxPart` bytes. Pure. */
export function chunkSecrets(run: string, seq: number, payload: StatePayload, opts: { cluster?: string; maxPart?: number } = {}): KubeObject[] {
  const gz = gzipSync(Buffer.from(JSON.stringify(payload)));
  const max = opts.maxPart ?? MAX_PART_BYTES;
  const parts = Math.max(1, Math.ceil(gz.length / max));
  const out: KubeObject[] = [];
  for (let p = 0; p < parts; p++) {
    out.push({
      apiVersion: 'v1', kind: 'Secret', type: STATE_SECRET_TYPE,
      metadata: {
        name: chunkName(run, seq, p), namespace: STATE_NAMESPACE,
        labels: { [STATE_RUN_LABEL]: run, [STATE_SEQ_LABEL]: String(seq), 'app.kubernetes.io/managed-by': 'kube-renumber' },
        annotations: {
          'kube-renumber.io/seq': String(seq), 'kube-renumber.io/part': String(p), 'kube-renumber.io/parts': String(parts),
          ...(payload.base ? { 'kube-renumber.io/base': 'true' } : {}),
          ...(opts.cluster ? { 'kube-renumber.io/cluster': opts.cluster } : {}),
        },
      },
      data: { 'state.json.gz': gz.subarray(p * max, (p + 1) * max).toString('base64') },
    } as KubeObject);
  }
  return out;
}

function damaged(run: string, why: string): never {
  throw new UserError(`the cluster copy of run ${run}'s state (secrets -n ${STATE_NAMESPACE} -l ${STATE_RUN_LABEL}=${run}) is damaged: ${why}`, 'input');
}

/**
 * Reassembles a run's chunks (pure): complete chunks in sequence order from the last complete base on; a chunk
 * with a part missing is skipped (never acknowledged whole). Backups: the first record of an object wins.
 */
export function assemble(run: string, secrets: readonly KubeObject[]): ClusterCopy {
  const bySeq = new Map<number, { parts: number; base: boolean; data: Map<number, Buffer> }>();
  let maxSeq = -1;
  for (const s of secrets) {
    const a = s.metadata?.annotations ?? {};
    const seq = Number(a['kube-renumber.io/seq']);
    const part = Number(a['kube-renumber.io/part']);
    const parts = Number(a['kube-renumber.io/parts']);
    if (!Number.isInteger(seq) || !Number.isInteger(part) || !Number.isInteger(parts) || seq < 0 || part < 0 || part >= parts) {
      damaged(run, `${s.metadata?.name} has no valid seq/part/parts annotations`);
    }
    maxSeq = Math.max(maxSeq, seq);
    const data = (s as { data?: Record<string, string> }).data?.['state.json.gz'];
    if (typeof data !== 'string') damaged(run, `${s.metadata?.name} holds no state.json.gz`);
    const c = bySeq.get(seq) ?? { parts, base: a['kube-renumber.io/base'] === 'true', data: new Map() };
    c.data.set(part, Buffer.from(data, 'base64'));
    bySeq.set(seq, c);
  }
  const complete = [...bySeq.entries()].filter(([, c]) => c.data.size === c.parts).sort((x, y) => x[0] - y[0]);
  const lastBase = complete.findLastIndex(([, c]) => c.base);
  const use = lastBase >= 0 ? complete.slice(lastBase) : complete;
  const journal: JournalEntry[] = [];
  const backups: BackupRecord[] = [];
  const seen = new Set<string>();
  for (const [seq, c] of use) {
    let payload: StatePayload;
    try {
      const gz = Buffer.concat([...Array(c.parts).keys()].map((p) => c.data.get(p)!));
      payload = JSON.parse(gunzipSync(gz).toString('utf8'));
    } catch (e) {
      damaged(run, `chunk ${seq}: ${errorLine(e)}`);
    }
    if (!payload || !Array.isArray(payload.journal) || !Array.isArray(payload.backups)) damaged(run, `chunk ${seq} is not a state chunk`);
    for (const e of payload.journal) {
      const problem = journalEntryProblem(e);
      if (problem) damaged(run, `chunk ${seq}: a journal entry: ${problem}`);
      if (e.run !== run) damaged(run, `chunk ${seq}: a journal entry of another run (${JSON.stringify(e.run).slice(0, 40)})`);
      journal.push(e);
    }
    for (const r of payload.backups) {
      if (!r || typeof r !== 'object' || !r.object || typeof r.object.kind !== 'string' || typeof r.object.metadata?.name !== 'string') {
        damaged(run, `chunk ${seq}: a backup record is not an object's backup`);
      }
      const key = refKey(refOf(r.object));
      if (seen.has(key)) continue;
      seen.add(key);
      backups.push(r);
    }
  }
  return { journal, backups, chunks: use.length, nextSeq: maxSeq + 1 };
}

/** Reads a run's state from the cluster; undefined when the cluster holds none (or the namespace does not exist). */
export async function readClusterCopy(client: KubeClient, run: string): Promise<ClusterCopy | undefined> {
  const secrets: KubeObject[] = [];
  try {
    for await (const s of client.list(SECRETS, { labelSelector: `${STATE_RUN_LABEL}=${run}` })) secrets.push(s);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
  if (secrets.length === 0) return undefined;
  return assemble(run, secrets);
}

/** The writer of a run's cluster copy (one per run; the Lease makes it the only one). */
export class ClusterState {
  readonly run: string;
  private readonly client: KubeClient;
  private readonly cluster?: string;
  private readonly check: () => void;
  private pending: StatePayload = { journal: [], backups: [] };
  /** Everything in the cluster copy (for a base chunk). */
  private all: StatePayload = { journal: [], backups: [] };
  private nextSeq = 0;
  private sinceBase = 0;
  private inflight: Promise<void> | undefined;
  /** Something queued must reach the cluster before the next write (anything but a lazy line). */
  private eager = false;
  /** When the oldest lazy line still queued was queued (ms), and how many are queued. */
  private lazySince = 0;
  private lazyCount = 0;
  private lazyTimer: ReturnType<typeof setTimeout> | undefined;
  private nsChecked = false;
  /** Chunks and bytes (gzip) written by this process: figures for docs and tests. */
  readonly written = { chunks: 0, bytes: 0 };

  constructor(client: KubeClient, run: string, opts: { cluster?: string; check?: () => void } = {}) {
    this.client = client;
    this.run = run;
    if (opts.cluster) this.cluster = opts.cluster;
    this.check = opts.check ?? (() => {});
  }

  /** Start from what the cluster holds (readClusterCopy). */
  startFrom(copy: ClusterCopy | undefined): void {
    if (!copy) return;
    this.all = { journal: [...copy.journal], backups: [...copy.backups] };
    this.nextSeq = copy.nextSeq;
    this.sinceBase = copy.chunks;
  }

  enqueueJournal(e: JournalEntry): void {
    this.pending.journal.push(e);
    if (!LAZY_EVENTS.has(e.event)) this.eager = true;
    else if (this.lazyCount++ === 0) {
      this.lazySince = Date.now();
      if (!this.lazyTimer) this.armLazyTimer(LAZY_MAX_MS);
    }
  }

  /** Lazy lines are sent within LAZY_MAX_MS even when no write comes (a long wait); a failure is met again by the next flush. */
  private armLazyTimer(ms: number): void {
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = undefined;
      if (this.lazyCount === 0) return;
      const left = this.lazySince + LAZY_MAX_MS - Date.now();
      if (left > 0) this.armLazyTimer(left);
      else this.flush().catch(() => {});
    }, ms);
    this.lazyTimer.unref?.();
  }

  enqueueBackup(r: BackupRecord): void {
    this.pending.backups.push(r);
    this.eager = true;
  }

  get hasPending(): boolean {
    return this.pending.journal.length > 0 || this.pending.backups.length > 0;
  }

  /**
   * Must the next write wait for flush()? When something queued is not a lazy line, when lazy lines have waited
   * long enough or are many, or while a chunk is being written (it may hold what the write depends on).
   */
  mustFlush(now = Date.now()): boolean {
    return this.inflight !== undefined || this.eager
      || (this.lazyCount > 0 && (this.lazyCount >= LAZY_MAX || now - this.lazySince >= LAZY_MAX_MS));
  }

  /**
   * Everything queued reaches the cluster (one chunk, created and acknowledged) before this returns. Concurrent
   * callers share the chunk being written, and what they queued meanwhile goes into the next one.
   */
  async flush(): Promise<void> {
    while (this.inflight || this.hasPending) {
      if (this.inflight) {
        await this.inflight;
        continue;
      }
      const batch = this.pending;
      const marks = { eager: this.eager, lazySince: this.lazySince, lazyCount: this.lazyCount };
      this.pending = { journal: [], backups: [] };
      this.eager = false;
      this.lazyCount = 0;
      this.inflight = this.writeChunk(batch).finally(() => { this.inflight = undefined; });
      try {
        await this.inflight;
      } catch (e) {
        // not written: queued again in front of what came since, for the next try
        this.pending = { journal: [...batch.journal, ...this.pending.journal], backups: [...batch.backups, ...this.pending.backups] };
        this.eager ||= marks.eager;
        // the batch's lazy lines are older than any queued since
        if (marks.lazyCount > 0) { this.lazySince = marks.lazySince; this.lazyCount += marks.lazyCount; }
        throw e;
      }
    }
  }

  private async writeChunk(batch: StatePayload): Promise<void> {
    this.check();
    await this.ensureNamespace();
    const base = this.sinceBase >= COMPACT_AFTER;
    const seq = this.nextSeq;
    const payload = base ? { base: true, journal: [...this.all.journal, ...batch.journal], backups: [...this.all.backups, ...batch.backups] } : batch;
    const secrets = chunkSecrets(this.run, seq, payload, this.cluster ? { cluster: this.cluster } : {});
    for (const s of secrets) await this.create(s);
    this.nextSeq = seq + 1;
    this.all.journal.push(...batch.journal);
    this.all.backups.push(...batch.backups);
    this.written.chunks++;
    this.written.bytes += secrets.reduce((n, s) => n + Buffer.from((s as { data: Record<string, string> }).data['state.json.gz']!, 'base64').length, 0);
    if (base) {
      this.sinceBase = 1;
      await this.deleteBefore(seq);
    } else {
      this.sinceBase++;
    }
  }

  /** Create one part; a create whose answer was lost is found as AlreadyExists with our run label. */
  private async create(s: KubeObject): Promise<void> {
    await withRetry(async () => {
      try {
        await this.client.request('POST', SECRETS, { body: s });
      } catch (e) {
        if (!(e instanceof KubeApiError && e.status === 409 && e.reason === 'AlreadyExists')) throw e;
        const cur = await this.client.request<KubeObject>('GET', `${SECRETS}/${s.metadata!.name}`);
        const same = cur.metadata?.labels?.[STATE_RUN_LABEL] === this.run
          && (cur as { data?: Record<string, string> }).data?.['state.json.gz'] === (s as { data: Record<string, string> }).data['state.json.gz'];
        if (!same) throw new UserError(`secret ${STATE_NAMESPACE}/${s.metadata!.name} exists and is not this run's state chunk: another run writes the same state (nothing more was changed)`, 'locked');
      }
    });
  }

  /** The namespace exists (created when missing and we may; deploy/rbac.yaml creates it for the shipped roles). */
  private async ensureNamespace(): Promise<void> {
    if (this.nsChecked) return;
    try {
      await this.client.request('GET', `/api/v1/namespaces/${STATE_NAMESPACE}`);
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 404)) {
        // a role without namespaces get (the shipped one) still may write in it: the create says
        if (!(e instanceof KubeApiError && e.status === 403)) throw e;
        this.nsChecked = true;
        return;
      }
      try {
        await withRetry(() => this.client.request('POST', '/api/v1/namespaces', {
          body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: STATE_NAMESPACE, labels: { 'app.kubernetes.io/managed-by': 'kube-renumber' } } },
        }));
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409) { /* made meanwhile */ } else if (err instanceof KubeApiError && err.status === 403) {
          throw new UserError(`namespace ${STATE_NAMESPACE}, where the run's state is kept in the cluster, does not exist and we may not create it: `
            + 'apply deploy/rbac.yaml (it creates the namespace), or create it (nothing was changed)', 'forbidden');
        } else throw err;
      }
    }
    this.nsChecked = true;
  }

  /**
   * After a base chunk: the chunks before it are no longer read. One DELETE of the collection: every Secret of the
   * run but the base's parts (label state-seq other than the base's; a chunk written before that label had none, and
   * `!=` takes those too). No chunk comes after the base meanwhile: this runs inside the base's write, and one
   * process writes (the Lease). A crash before it leaves chunks a reader skips (it starts at the last base).
   */
  private async deleteBefore(seq: number): Promise<void> {
    await withRetry(() => this.client.request('DELETE', SECRETS, {
      query: { labelSelector: `${STATE_RUN_LABEL}=${this.run},${STATE_SEQ_LABEL}!=${seq}` },
    }));
  }
}

/**
 * `client` whose every write (any method but GET) first waits for `state.flush()` when it must: the cluster copy
 * holds every journal entry and backup written before the change is sent, lazy lines (LAZY_EVENTS) within
 * LAZY_MAX_MS.
 */
export function mirroredClient(client: KubeClient, state: ClusterState): KubeClient {
  return {
    get server() { return client.server; },
    get context() { return client.context; },
    get requestCount() { return client.requestCount; },
    get limiter() { return client.limiter; },
    async request(method, path, opts) {
      if (method !== 'GET' && state.mustFlush()) await state.flush();
      return client.request(method, path, opts);
    },
    list: (path, opts) => client.list(path, opts),
    // a watch is a read: nothing to flush first
    watch: (path, opts, onEvent) => client.watch(path, opts, onEvent),
  };
}
