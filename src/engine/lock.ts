/**
 * Two locks stop two runs at once: a Lease in the cluster (coordination.k8s.io/v1, kube-system/kube-renumber),
 * which stops two operators on two machines, and a lock file in the local state directory, which stops two
 * processes sharing one journal. Both record who holds them; neither holds a credential.
 */
import { closeSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { InputError, UserError } from '../errors.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { isTransient, retryDelay, withRetry } from '../kube/retry.ts';
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

/**
 * This process's identity as a Lease holder: who and where (for the message another operator reads), the run, and a
 * part unique to this process, so two processes never share an identity (as client-go's hostname_uuid).
 */
export function holderIdentity(run: string): string {
  let user = 'unknown';
  try { user = userInfo().username; } catch { /* no passwd entry */ }
  return `${user}@${hostname()}/${run}/${process.pid}-${randomBytes(4).toString('hex')}`;
}

export interface LeaseLock {
  readonly holder: string;
  /** Throws LockedError once the Lease is lost (taken by another holder, or not renewed within the renew deadline). */
  assertHeld(): void;
  /** Aborted when the Lease is lost. */
  readonly signal: AbortSignal;
  /** One renewal now (the timer calls it every retry period). */
  renew(): Promise<void>;
  release(): Promise<void>;
}

export interface LeaseOptions {
  /** How long the Lease holds without renewal (leaseDurationSeconds written into it). Default 60. */
  durationSeconds?: number;
  /** How long this run goes on writing without a successful renewal: less than the duration. Default 2/3 of it. */
  renewDeadlineSeconds?: number;
  /** How often the Lease is renewed, and how often a held Lease is looked at again while waiting. Default 5 s. */
  retryPeriodMs?: number;
  /** Take over a Lease that another holder still renews (the user knows that holder is gone). */
  forceUnlock?: boolean;
  /** A monotonic clock in ms (performance.now by default): all expiry is judged on it, never on another machine's clock. */
  monotonic?: () => number;
  /** Wall clock for renewTime/acquireTime, which only humans and other tools read. */
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
  /** Told once when the Lease is held by another holder and this run waits to see whether it is renewed. */
  onWait?: (message: string) => void;
  /** No renewal timer (tests call renew() themselves). */
  noTimer?: boolean;
}

const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;

/**
 * Take the cluster Lease with client-go's leader-election rules, or throw LockedError naming the holder.
 *  - A Lease held by another holder is taken over only when this process has watched it unchanged (same
 *    resourceVersion) for the holder's whole leaseDurationSeconds on its own monotonic clock; the other machine's
 *    renewTime is never compared with ours. Seen renewed while watching: LockedError at once.
 *  - forceUnlock takes it over at once, whoever holds it.
 *  - Every write of the Lease names the resourceVersion it read: of two runs taking it at once, one gets 409.
 *  - Once held it is renewed every retry period; a run that cannot renew within the renew deadline (or finds the
 *    Lease taken) loses it: assertHeld() throws and `signal` aborts from then on.
 */
export async function acquireLease(client: KubeClient, holder: string, opts: LeaseOptions = {}): Promise<LeaseLock> {
  const duration = opts.durationSeconds ?? 60;
  const renewDeadlineMs = (opts.renewDeadlineSeconds ?? (duration * 2) / 3) * 1000;
  const retryMs = opts.retryPeriodMs ?? 5000;
  const mono = opts.monotonic ?? (() => performance.now());
  const now = opts.now ?? (() => new Date());
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  /** MicroTime: RFC 3339 with microseconds. */
  const micro = () => now().toISOString().replace(/Z$/, '000Z');
  const spec = () => ({ holderIdentity: holder, leaseDurationSeconds: duration, renewTime: micro() });
  let current: any;
  let observed: { rv: string; at: number } | undefined;
  let told = false;
  // A write of the Lease that met a transient error (429, 5xx, a reset: its answer may be lost) is not repeated
  // blindly: the loop reads the Lease again and decides from what it finds (ours already, someone else's, none).
  let transient = 0;
  const again = async (e: unknown): Promise<void> => {
    if (!isTransient(e) || ++transient > 10) throw e;
    await sleep(retryDelay(e, transient));
  };
  for (let attempt = 0; ; attempt++) {
    if (attempt > 10_000) throw new LockedError(`could not take Lease ${LEASE_NAMESPACE}/${LEASE_NAME}: it kept changing`);
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
        await again(e2);
        continue;
      }
    }
    const s = current?.spec ?? {};
    const rv = String(current?.metadata?.resourceVersion ?? '');
    const other = typeof s.holderIdentity === 'string' && s.holderIdentity !== '' && s.holderIdentity !== holder;
    if (other && !opts.forceUnlock) {
      const held = (typeof s.leaseDurationSeconds === 'number' && s.leaseDurationSeconds > 0 ? s.leaseDurationSeconds : duration) * 1000;
      if (observed && observed.rv !== rv) {
        throw new LockedError(`another kube-renumber run holds the lock: Lease ${LEASE_NAMESPACE}/${LEASE_NAME} held by ${s.holderIdentity}, `
          + `renewed while this run watched it (use --force-unlock only if that run is gone)`);
      }
      if (!observed) observed = { rv, at: mono() };
      const left = observed.at + held - mono();
      if (left > 0) {
        if (!told) {
          told = true;
          opts.onWait?.(`Lease ${LEASE_NAMESPACE}/${LEASE_NAME} is held by ${s.holderIdentity}: waiting up to ${Math.ceil(left / 1000)}s to see whether it is renewed (taken over if not)`);
        }
        await sleep(Math.min(retryMs, left));
        continue;
      }
    }
    try {
      current = await client.request('PUT', `${leasePath}/${LEASE_NAME}`, {
        body: { ...current, spec: { ...s, ...spec(), acquireTime: micro(), leaseTransitions: (s.leaseTransitions ?? 0) + (other ? 1 : 0) } },
      });
      break;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409) continue; // someone else moved it (or our lost write did): look again
      await again(e);
    }
  }
  if (current?.spec?.holderIdentity !== holder) throw new LockedError(`could not take Lease ${LEASE_NAMESPACE}/${LEASE_NAME}: it kept changing`);
  let stopped = false;
  let lost: string | undefined;
  let lastRenew = mono();
  const abort = new AbortController();
  const lose = (why: string) => {
    if (lost !== undefined) return;
    lost = why;
    abort.abort(new LockedError(why));
  };
  const checkDeadline = () => {
    if (lost === undefined && !stopped && mono() - lastRenew > renewDeadlineMs) {
      lose(`could not renew Lease ${LEASE_NAMESPACE}/${LEASE_NAME} within ${Math.round(renewDeadlineMs / 1000)}s: stopping before another run may take it`);
    }
  };
  let renewing: Promise<void> | undefined;
  const renewOnce = async (): Promise<void> => {
    if (stopped || lost !== undefined) return;
    try {
      current = await client.request('PUT', `${leasePath}/${LEASE_NAME}`, { body: { ...current, spec: { ...current.spec, renewTime: micro() } } });
      if (current?.spec?.holderIdentity === holder) lastRenew = mono();
    } catch (e) {
      if (e instanceof KubeApiError && (e.status === 409 || e.status === 404)) {
        try {
          const cur: any = await client.request('GET', `${leasePath}/${LEASE_NAME}`);
          if (cur?.spec?.holderIdentity !== holder) lose(`lost Lease ${LEASE_NAMESPACE}/${LEASE_NAME} to ${cur?.spec?.holderIdentity || 'nobody'}: stopping at once`);
          else current = cur;
        } catch (e2) {
          if (e2 instanceof KubeApiError && e2.status === 404) lose(`Lease ${LEASE_NAMESPACE}/${LEASE_NAME} was deleted: stopping at once`);
          // else the next renewal tries again
        }
      }
      // any other failure: tried again next period; the renew deadline decides
    }
    checkDeadline();
  };
  const timer = opts.noTimer ? undefined : setInterval(() => {
    checkDeadline();
    if (!renewing) renewing = renewOnce().finally(() => { renewing = undefined; });
  }, retryMs);
  timer?.unref();
  return {
    holder,
    signal: abort.signal,
    renew: renewOnce,
    assertHeld() {
      checkDeadline();
      if (lost !== undefined) throw new LockedError(lost);
    },
    async release() {
      stopped = true;
      if (timer) clearInterval(timer);
      await renewing;
      if (lost !== undefined) return;
      try {
        // A DELETE whose answer was lost is tried again: then 404 (it was deleted) or 409 (taken since) ends it.
        await withRetry(async () => {
          const cur: any = await client.request('GET', `${leasePath}/${LEASE_NAME}`);
          if (cur?.spec?.holderIdentity !== holder) return;
          await client.request('DELETE', `${leasePath}/${LEASE_NAME}`, { body: { preconditions: { resourceVersion: cur.metadata.resourceVersion } } });
        }, { attempts: 4, sleep });
      } catch {
        // it expires by itself
      }
    },
  };
}

/**
 * A client whose every request first asks `check` (which throws once the run lost its lock): no new request, read or
 * write, starts after that, so waits that poll end at their next poll and no write goes out.
 */
export function guardedClient(client: KubeClient, check: () => void): KubeClient {
  return {
    get server() { return client.server; },
    get context() { return client.context; },
    get requestCount() { return client.requestCount; },
    get limiter() { return client.limiter; },
    async request(method, path, opts) {
      check();
      return client.request(method, path, opts);
    },
    async* list(path, opts) {
      check();
      for await (const o of client.list(path, opts)) {
        yield o;
      }
    },
    async watch(path, opts, onEvent) {
      check();
      return client.watch(path, opts, onEvent);
    },
  };
}

/** A lock file is a few hundred bytes; anything much larger is not ours. */
const MAX_LOCK_BYTES = 64 * 1024;

/** The lock file's content, or {} when it is gone or not JSON (torn: treated as stale). */
function readLock(path: string): { pid?: unknown; holder?: unknown; start?: unknown } {
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

/**
 * A lock file holding our pid; a file left by a dead process is taken over. Taking over is itself done under a
 * second lock file (`<lock>.takeover`, created exclusively), so of two processes that find the same stale file at
 * once only one removes it: the other finds the new owner's file and stops.
 */
export function acquireLocalLock(path: string, holder: string): { release(): void } {
  checkLockPath(path);
  ensurePrivateDir(dirname(path));
  // The lock is written whole to a file of our own, then linked into place: link() creates the lock atomically with
  // its content, so no other process ever reads a lock file still empty (and takes it for a stale one).
  const mine = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const fd = openSync(mine, 'wx', 0o600);
  try {
    const start = processStart(process.pid);
    writeSync(fd, JSON.stringify({ pid: process.pid, holder, since: new Date().toISOString(), ...(start ? { start } : {}) }));
  } finally {
    closeSync(fd);
  }
  try {
    return takeLock(path, mine);
  } finally {
    try { unlinkSync(mine); } catch { /* gone */ }
  }
}

/** Links `mine` (a complete lock file) into place as `path`, taking over a stale lock at most twice. */
function takeLock(path: string, mine: string): { release(): void } {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      linkSync(mine, path);
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
      refuseIfLive(path);
      takeOverStale(path);
    }
  }
  throw new LockedError(`could not take the lock ${path}`);
}

/** LockedError when the lock file names a live process other than this one. */
function refuseIfLive(path: string): void {
  const cur = readLock(path);
  if (typeof cur.pid === 'number' && Number.isInteger(cur.pid) && cur.pid > 0 && cur.pid !== process.pid && pidAlive(cur.pid, cur.start)) {
    throw new LockedError(`another kube-renumber process (pid ${cur.pid}, ${typeof cur.holder === 'string' ? cur.holder : 'unknown'}) is using ${dirname(path)}`);
  }
}

/** A takeover lock older than this was left by a process that died while taking over. */
const STALE_TAKEOVER_MS = 30_000;

/** Removes the stale lock file at `path`, under the exclusive `<path>.takeover` file. */
function takeOverStale(path: string): void {
  const guard = `${path}.takeover`;
  let fd: number;
  try {
    fd = openSync(guard, 'wx', 0o600);
  } catch (e: any) {
    if (e?.code !== 'EEXIST') throw e;
    const st = statOrUndefined(guard, 'lock file');
    if (st && Date.now() - st.mtimeMs > STALE_TAKEOVER_MS) {
      try { unlinkSync(guard); } catch (e2: any) { if (e2?.code !== 'ENOENT') throw e2; }
      return; // the next attempt takes over
    }
    throw new LockedError(`another kube-renumber process is taking over the lock in ${dirname(path)}`);
  }
  try {
    closeSync(fd);
    refuseIfLive(path); // looked at again under the guard: another process may have taken it meanwhile
    try { unlinkSync(path); } catch (e2: any) { if (e2?.code !== 'ENOENT') throw e2; }
  } finally {
    try { unlinkSync(guard); } catch { /* gone */ }
  }
}

/**
 * What a state directory's lock file says:
 *  - `absent`: no lock file (no run holds the directory, or one ended without its lock file: a clean end removes it).
 *  - `held`: it names a live process of this machine.
 *  - `stale`: it names a process of this machine that is gone, or is torn (no pid): the next run takes it over.
 *  - `elsewhere`: it was written on another machine (its holder names another host; a shared directory): whether
 *    that process lives cannot be seen from here.
 */
export type LocalLockState =
  | { state: 'absent' }
  | { state: 'held' | 'stale' | 'elsewhere'; pid?: number; holder?: string; since?: string; host?: string };

/**
 * The state of the lock file at `path`, for status: read only, the file is neither taken nor removed. Throws
 * InputError when something that is not a regular lock file sits there, as taking the lock would.
 */
export function localLockState(path: string): LocalLockState {
  checkLockPath(path);
  if (statOrUndefined(path, 'lock file') === undefined) return { state: 'absent' };
  const cur: { pid?: unknown; holder?: unknown; since?: unknown; start?: unknown } = readLock(path);
  const pid = typeof cur.pid === 'number' && Number.isInteger(cur.pid) && cur.pid > 0 ? cur.pid : undefined;
  const holder = typeof cur.holder === 'string' ? cur.holder : undefined;
  const since = typeof cur.since === 'string' ? cur.since : undefined;
  if (pid === undefined && statOrUndefined(path, 'lock file') === undefined) return { state: 'absent' }; // removed as we read it
  const about = { ...(pid !== undefined ? { pid } : {}), ...(holder !== undefined ? { holder } : {}), ...(since !== undefined ? { since } : {}) };
  // holderIdentity: user@host/run/pid-random; a holder of another form is taken to be of this machine
  const host = holder?.match(/^[^@/]*@([^/]+)\//)?.[1];
  if (host !== undefined && host !== hostname()) return { state: 'elsewhere', ...about, host };
  return { state: pid !== undefined && pidAlive(pid, cur.start) ? 'held' : 'stale', ...about };
}

/**
 * Whether the process that wrote a lock still runs: its pid is alive and, where the lock recorded when that process
 * started (`start`, Linux), the process now at that pid started then too. Without it a pid used again after a crash
 * or a reboot (pids start low again after a reboot) would read as the holder, and resume would be refused.
 */
function pidAlive(pid: number, start?: unknown): boolean {
  try {
    process.kill(pid, 0);
  } catch (e: any) {
    if (e?.code !== 'EPERM') return false;
  }
  if (typeof start !== 'string') return true;
  const now = processStart(pid);
  return now === undefined || now === start;
}

/**
 * When the process of this pid started, as "<boot id>:<start time in clock ticks since boot>" (Linux: /proc), or
 * undefined where that cannot be read. The boot id tells a pid of an earlier boot from the same pid now.
 */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after "(comm) ": state is field 3, starttime field 22
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return start && /^\d+$/.test(start) && boot ? `${boot}:${start}` : undefined;
  } catch {
    return undefined;
  }
}
