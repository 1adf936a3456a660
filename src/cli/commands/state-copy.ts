/**
 * The cluster's copy of a run's state, for the commands of apply.ts: read it before the live checks (a state
 * directory lost or on another machine still knows how far the run got), bring the state directory in step with
 * it once the locks are held, and keep it current while the run writes (engine/cluster-state.ts).
 */
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterState, readClusterCopy, STATE_NAMESPACE, STATE_RUN_LABEL, type ClusterCopy } from '../../engine/cluster-state.ts';
import type { JournalEntry } from '../../engine/journal.ts';
import { mergedJournal, syncStateDir } from '../../engine/state-sync.ts';
import { KubeApiError, type KubeClient } from '../../kube/client.ts';
import { UserError } from '../errors.ts';

/**
 * The run's state in the cluster; undefined when there is none. A role that may not read it is an error for a
 * command that writes (its state would have one copy) and a warning for one that only reads.
 */
export async function readStateCopy(client: KubeClient, run: string, opts: { required: boolean; warn: (m: string) => void }): Promise<ClusterCopy | undefined> {
  try {
    return await readClusterCopy(client, run);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 403) {
      const msg = `not allowed to read the run's state in the cluster (list secrets -n ${STATE_NAMESPACE}): grant the state Role of deploy/rbac.yaml`;
      if (opts.required) throw new UserError(`${msg} (nothing was changed)`, 'forbidden');
      opts.warn(`${msg}; going by the state directory alone`);
      return undefined;
    }
    throw e;
  }
}

/** The journal to go by before the locks are taken: the local one, or the cluster's when it is further on. */
export function journalWithCopy(local: JournalEntry[], copy: ClusterCopy | undefined): JournalEntry[] {
  return mergedJournal(local, copy?.journal);
}

/**
 * With the locks held: the state directory gets what the cluster copy holds, the cluster copy what the directory
 * holds, and the returned writer keeps the cluster copy current (hook it to the journal and backups, and put
 * mirroredClient in front of the steps' client).
 */
export async function attachClusterState(client: KubeClient, run: string, stateDir: string, opts: { cluster?: string; check: () => void; warn: (m: string) => void }): Promise<ClusterState> {
  const copy = await readStateCopy(client, run, { required: true, warn: opts.warn });
  const sync = syncStateDir(stateDir, run, copy, opts.cluster);
  if (sync.diverged) opts.warn(`the state directory's journal differs from the run's copy in the cluster, which is the run's: kept it as ${sync.diverged}`);
  if (sync.pulled.journal + sync.pulled.backups > 0) {
    opts.warn(`took ${sync.pulled.journal} journal entr${sync.pulled.journal === 1 ? 'y' : 'ies'} and ${sync.pulled.backups} backup(s) from the run's copy in the cluster (secrets -n ${STATE_NAMESPACE} -l ${STATE_RUN_LABEL}=${run})`);
  }
  const state = new ClusterState(client, run, { ...(opts.cluster ? { cluster: opts.cluster } : {}), check: opts.check });
  state.startFrom(copy);
  for (const e of sync.push.journal) state.enqueueJournal(e);
  for (const r of sync.push.backups) state.enqueueBackup(r);
  await state.flush();
  return state;
}

/**
 * For a command that only reads (verify) or a dry run: a temporary directory (0700) holding the state directory's
 * journal and backups with the cluster copy's merged in; nothing is written to the state directory or the cluster.
 */
export function readOnlyStateDir(stateDir: string, run: string, copy: ClusterCopy | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), 'kube-renumber-state-'));
  for (const name of ['journal.jsonl', 'backups']) {
    const from = join(stateDir, name);
    if (existsSync(from)) cpSync(from, join(dir, name), { recursive: true });
  }
  if (copy) syncStateDir(dir, run, copy);
  return dir;
}
