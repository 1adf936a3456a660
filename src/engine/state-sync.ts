/**
 * Bringing a state directory and the cluster's copy of the run's state (cluster-state.ts) into agreement, when a
 * command opens a run: what the cluster holds and the directory lacks is written into the directory (a resume or
 * rollback on another machine, or after the directory was lost), and what the directory holds and the cluster
 * lacks is returned, to be written to the cluster before anything else (a run started before the cluster copy
 * existed, or whose last chunk was never written).
 *
 * The journal: when one is a prefix of the other, the longer one is the run's. When they differ (this directory
 * holds entries that never reached the cluster while another machine went on from the cluster's copy), the
 * cluster's is the run's: every change sent to the cluster was preceded by its copy. The local journal is then
 * kept beside it as journal.jsonl.diverged-<time>, and the caller is told.
 */
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { BackupStore, refKey, refOf } from './backup.ts';
import type { ClusterCopy, StatePayload } from './cluster-state.ts';
import { createFileDurable, writeFileDurable } from './files.ts';
import { readJournal, type JournalEntry } from './journal.ts';

export interface SyncResult {
  /** The run's journal after the merge. */
  entries: JournalEntry[];
  /** Entries and backup records copied from the cluster into the directory. */
  pulled: { journal: number; backups: number };
  /** What the cluster copy lacks, to be written to it. */
  push: StatePayload;
  /** Set when the local journal was moved aside (where to). */
  diverged?: string;
}

const same = (a: JournalEntry, b: JournalEntry) => JSON.stringify(a) === JSON.stringify(b);

function isPrefix(short: readonly JournalEntry[], long: readonly JournalEntry[]): boolean {
  return short.length <= long.length && short.every((e, i) => same(e, long[i]!));
}

/** The journal a command should go by, from the local entries and the cluster copy's (pure; as syncStateDir decides). */
export function mergedJournal(local: readonly JournalEntry[], cluster: readonly JournalEntry[] | undefined): JournalEntry[] {
  if (!cluster || isPrefix(cluster, local)) return [...local];
  return [...cluster];
}

/**
 * Makes the state directory hold everything the cluster copy holds (journal and backups), and returns what the
 * cluster copy lacks. With `copy` undefined (the cluster holds nothing of this run), everything local is returned.
 */
export function syncStateDir(stateDir: string, run: string, copy: ClusterCopy | undefined, cluster?: string): SyncResult {
  const journalPath = join(stateDir, 'journal.jsonl');
  const local = readJournal(journalPath);
  const remote = copy?.journal ?? [];
  const push: StatePayload = { journal: [], backups: [] };
  let entries: JournalEntry[];
  let pulled = 0;
  let diverged: string | undefined;
  if (isPrefix(remote, local)) {
    entries = local;
    push.journal = local.slice(remote.length);
  } else {
    if (!isPrefix(local, remote)) {
      diverged = `${journalPath}.diverged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      if (existsSync(journalPath)) renameSync(journalPath, diverged);
    }
    entries = remote;
    pulled = isPrefix(local, remote) ? remote.length - local.length : remote.length;
    writeFileDurable(journalPath, remote.map((e) => `${JSON.stringify(e)}\n`).join(''));
  }
  const store = new BackupStore(join(stateDir, 'backups'), run, cluster);
  const localRecords = store.records();
  const inCluster = new Set((copy?.backups ?? []).map((r) => refKey(refOf(r.object))));
  push.backups = localRecords.filter((r) => !inCluster.has(refKey(refOf(r.object))));
  let pulledBackups = 0;
  for (const r of copy?.backups ?? []) {
    if (createFileDurable(store.pathFor(refOf(r.object)), `${JSON.stringify(r, null, 2)}\n`)) pulledBackups++;
  }
  return { entries, pulled: { journal: pulled, backups: pulledBackups }, push, ...(diverged ? { diverged } : {}) };
}
