/**
 * Two locks stop two runs at once: a Lease in the cluster (coordination.k8s.io/v1, kube-system/kube-renumber),
 * which stops two operators on two machines, and a lock file in the local state directory, which stops two
 * processes sharing one journal. Both record who holds them; neither holds a credential.
 */
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { InputError, UserError } from '../errors.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { ensurePrivateDir, fileTypeName, readRegularFile, statOrUndefined } from './files.ts';
import { dirname } from 'node:path';

export class LockedError extends UserError {
  constructor(message: string) {
    super(message, 'locked');
    this.name = 'LockedError';
  }
}

export const LEASE_NAMESPACE = 'kube-system';
export const LEASE_NAME = 'kube-renumber';

export function holderIdentity(run: string): string {
  let user = 'unknown';
  try { user = userInfo().username; } catch { /* no passwd entry */ }
  return `${user}@${hostname()}/${run}`;
}

export interface LeaseLock {
  readonly holder: string;
  /** Throws LockedError when a renewal found the Lease taken by someone else. */
  assertHeld(): void;
  release(): Promise<void>;
}

const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;

/**
 * Take the cluster Lease, or throw LockedError naming the holder. A Lease whose holder stopped renewing
 * for longer than its duration is taken over. The Lease is renewed every duration/3 until release().
 */
export async function acquireLease(client: KubeClient, holder: string, opts: { durationSeconds?: number; now?: () => Date } = {}): Promise<LeaseLock> {
  const duration = opts.durationSeconds ?? 60;
  const now = opts.now ?? (() => new Date());
  /** MicroTime: RFC 3339 with microseconds. */
  const micro = () => now().toISOString().replace(/Z$/, '000Z');
  const spec = () => ({ holderIdentity: holder, leaseDurationSeconds: duration, renewTime: micro() });
  let current: any;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      current = await client.request('GET', `${leasePath}/${LEASE_NAME}`);
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      try {
        current = await client.request('POST', leasePath, {
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE_NAME, namespace: LEASE_NAMESPACE },
            spec: { ...spec(), acquireTime: micro() } },
        });
        break;
      } catch (e2) {
        if (e2 instanceof KubeApiError && e2.status === 409) continue;
        throw e2;
      }
    }
    const s = current?.spec ?? {};
    const renewed = s.renewTime ? Date.parse(s.renewTime) : 0;
    const expired = !s.holderIdentity || renewed + (s.leaseDurationSeconds ?? duration) * 1000 < now().getTime();
    if (s.holderIdentity && s.holderIdentity !== holder && !expired) {
      const left = Math.max(0, Math.round((renewed + (s.leaseDurationSeconds ?? duration) * 1000 - now().getTime()) / 1000));
      throw new LockedError(`another kube-renumber run holds the lock: Lease ${LEASE_NAMESPACE}/${LEASE_NAME} held by ${s.holderIdentity} (renewed ${s.renewTime}, expires in ${left}s unless renewed)`);
    }
    try {
      current = await client.request('PUT', `${leasePath}/${LEASE_NAME}`, {
        body: { ...current, spec: { ...s, ...spec(), acquireTime: s.holderIdentity === holder ? s.acquireTime : micro() } },
      });
      break;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409) continue; // someone else moved it: look again
      throw e;
    }
  }
  if (current?.spec?.holderIdentity !== holder) throw new LockedError(`could not take Lease ${LEASE_NAMESPACE}/${LEASE_NAME}: it kept changing`);
  let stopped = false;
  let lostTo: string | undefined;
  const timer = setInterval(async () => {
    if (stopped) return;
    try {
      current = await client.request('PUT', `${leasePath}/${LEASE_NAME}`, { body: { ...current, spec: { ...current.spec, renewTime: micro() } } });
    } catch (e) {
      // 409: someone wrote the Lease; if it is no longer ours, the run must stop before its next step
      if (e instanceof KubeApiError && e.status === 409) {
        try {
          const cur: any = await client.request('GET', `${leasePath}/${LEASE_NAME}`);
          if (cur?.spec?.holderIdentity !== holder) lostTo = cur?.spec?.holderIdentity ?? 'nobody';
          else current = cur;
        } catch { /* the next renewal tries again */ }
      }
    }
  }, Math.max(1000, (duration * 1000) / 3));
  timer.unref();
  return {
    holder,
    assertHeld() {
      if (lostTo !== undefined) throw new LockedError(`lost Lease ${LEASE_NAMESPACE}/${LEASE_NAME} to ${lostTo}: stopping before the next step`);
    },
    async release() {
      stopped = true;
      clearInterval(timer);
      try {
        const cur: any = await client.request('GET', `${leasePath}/${LEASE_NAME}`);
        if (cur?.spec?.holderIdentity !== holder) return;
        await client.request('DELETE', `${leasePath}/${LEASE_NAME}`, { body: { preconditions: { resourceVersion: cur.metadata.resourceVersion } } });
      } catch {
        // it expires by itself
      }
    },
  };
}

/** A lock file is a few hundred bytes; anything much larger is not ours. */
const MAX_LOCK_BYTES = 64 * 1024;

/** The lock file's content, or {} when it is gone or not JSON (torn: treated as stale). */
function readLock(path: string): { pid?: unknown; holder?: unknown } {
  try {
    const v = JSON.parse(readRegularFile(path, 'lock file', MAX_LOCK_BYTES).toString('utf8'));
    return v && typeof v === 'object' ? v : {};
  } catch (e) {
    if (e instanceof InputError && statOrUndefined(path, 'lock file') !== undefined) throw e;
    return {};
  }
}

/** Throws InputError when something that is not a regular file sits where the lock file goes. */
function checkLockPath(path: string): void {
  const st = statOrUndefined(path, 'lock file');
  if (st && !st.isFile()) throw new InputError(`cannot use lock file ${path}: it is ${fileTypeName(st)}, not a regular file (move it away)`);
}

/** A lock file holding our pid; a file left by a dead process is taken over. */
export function acquireLocalLock(path: string, holder: string): { release(): void } {
  checkLockPath(path);
  ensurePrivateDir(dirname(path));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify({ pid: process.pid, holder, since: new Date().toISOString() }));
      closeSync(fd);
      return {
        release() {
          try {
            if (readLock(path).pid === process.pid) unlinkSync(path);
          } catch { /* already gone */ }
        },
      };
    } catch (e: any) {
      if (e?.code !== 'EEXIST') throw e;
      checkLockPath(path);
      const cur = readLock(path);
      if (typeof cur.pid === 'number' && Number.isInteger(cur.pid) && cur.pid > 0 && cur.pid !== process.pid && pidAlive(cur.pid)) {
        throw new LockedError(`another kube-renumber process (pid ${cur.pid}, ${typeof cur.holder === 'string' ? cur.holder : 'unknown'}) is using ${dirname(path)}`);
      }
      try { unlinkSync(path); } catch (e2: any) { if (e2?.code !== 'ENOENT') throw e2; }
    }
  }
  throw new LockedError(`could not take the lock ${path}`);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === 'EPERM';
  }
}
