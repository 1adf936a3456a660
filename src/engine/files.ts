/**
 * Durable files: written to a temporary name, fsynced, renamed into place, and the directory fsynced, so a
 * crash at any point leaves either the old file or the complete new one. Mode 0600 (directories 0700):
 * backups and journals may hold Secrets' neighbours and cluster details.
 *
 * Reading goes through readRegularFile: the path is looked at (stat) before it is opened, and anything but a
 * regular file (a directory, a FIFO, a device, a socket) is refused without a blocking open or read.
 */
import {
  accessSync, chmodSync, closeSync, constants, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readSync, realpathSync,
  renameSync, statfsSync, statSync, writeSync, type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { errorLine, InputError } from '../errors.ts';

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try { fsyncSync(fd); } finally { closeSync(fd); }
}

// For the crash tests only: KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC=N[:TEXT] SIGKILLs the process between the Nth durable
// file's write and its fsync (a backup or plan copy written, not yet synced or renamed into place); with TEXT, only
// files whose path contains it count (e.g. Node__cluster: a Node's backup).
const killBeforeFsyncAt = /^(\d+)(?::(.+))?$/s.exec(process.env.KUBE_RENUMBER_TEST_KILL_BEFORE_FSYNC ?? '');
let durableWrites = 0;
function killBeforeFsync(path: string): void {
  if (killBeforeFsyncAt && Number(killBeforeFsyncAt[1]) > 0 && (!killBeforeFsyncAt[2] || path.includes(killBeforeFsyncAt[2]))
    && ++durableWrites >= Number(killBeforeFsyncAt[1])) process.kill(process.pid, 'SIGKILL');
}
// KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC=N[:TEXT]: the same between the Nth appended line's write and its fsync (a
// journal entry written, not yet synced); with TEXT, only lines that contain it count (e.g.
// "event":"step-start","step":"assign-podcidr-n1").
const killBeforeLineFsyncAt = /^(\d+)(?::(.+))?$/s.exec(process.env.KUBE_RENUMBER_TEST_KILL_BEFORE_JOURNAL_FSYNC ?? '');
let durableLines = 0;
function killBeforeLineFsync(line: string): void {
  if (killBeforeLineFsyncAt && Number(killBeforeLineFsyncAt[1]) > 0 && (!killBeforeLineFsyncAt[2] || line.includes(killBeforeLineFsyncAt[2]))
    && ++durableLines >= Number(killBeforeLineFsyncAt[1])) process.kill(process.pid, 'SIGKILL');
}

/** Write `data` to `path` atomically and durably, mode 0600. */
export function writeFileDurable(path: string, data: string): void {
  const dir = dirname(path);
  ensurePrivateDir(dir);
  const tmp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, data);
    killBeforeFsync(path);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDir(dir);
}

/** Create `path` with `data` only if it does not exist yet (durably); returns false if it already existed. */
export function createFileDurable(path: string, data: string): boolean {
  if (existsSync(path)) return false;
  writeFileDurable(path, data);
  return true;
}

/** Append one line durably (O_APPEND + fsync), creating the file 0600. */
export function appendLineDurable(path: string, line: string): void {
  ensurePrivateDir(dirname(path));
  const fd = openSync(path, 'a', 0o600);
  try {
    writeSync(fd, line.endsWith('\n') ? line : `${line}\n`);
    killBeforeLineFsync(line);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------------
// Reading, and checking paths before they are used

/** A short reason for a failed file system call: its code (ENOENT, EACCES, ...) or message. */
export function ioReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  const known: Record<string, string> = {
    ENOENT: 'no such file or directory', EACCES: 'permission denied', EPERM: 'operation not permitted',
    ENOTDIR: 'a part of the path is not a directory', EISDIR: 'is a directory', ELOOP: 'too many symbolic links',
    ENAMETOOLONG: 'the name is too long', EROFS: 'read-only file system', ENOSPC: 'no space left on the device',
  };
  if (code && known[code]) return `${known[code]} (${code})`;
  return code ?? (errorLine(e));
}

/** What a stat says a path is, for messages: "a directory", "a FIFO", ... */
export function fileTypeName(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** stat, or undefined when the path does not exist; any other failure is an InputError about `what`. */
export function statOrUndefined(path: string, what: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new InputError(`cannot use ${what} ${path}: ${ioReason(e)}`);
  }
}

/**
 * The bytes of a regular file of at most `maxBytes`. A directory, FIFO, device or socket is refused before it is
 * opened (and the opened descriptor is checked again, opened non-blocking, so a path swapped in between cannot
 * block the read). Every failure is an InputError naming `what` and the path.
 */
export function readRegularFile(path: string, what: string, maxBytes: number): Buffer {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    throw new InputError(`cannot read ${what} ${path}: ${ioReason(e)}`);
  }
  if (!st.isFile()) throw new InputError(`cannot read ${what} ${path}: it is ${fileTypeName(st)}, not a regular file`);
  if (st.size > maxBytes) throw new InputError(`cannot read ${what} ${path}: ${st.size} bytes is more than the ${maxBytes} a ${what} may have`);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new InputError(`cannot read ${what} ${path}: ${ioReason(e)}`);
  }
  try {
    const fst = fstatSync(fd);
    if (!fst.isFile()) throw new InputError(`cannot read ${what} ${path}: it is ${fileTypeName(fst)}, not a regular file`);
    if (fst.size > maxBytes) throw new InputError(`cannot read ${what} ${path}: ${fst.size} bytes is more than the ${maxBytes} a ${what} may have`);
    const buf = Buffer.alloc(fst.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot read ${what} ${path}: ${ioReason(e)}`);
  } finally {
    closeSync(fd);
  }
}

/** Decode UTF-8 text; undefined when the bytes are not text (invalid UTF-8, or a NUL byte). */
export function decodeText(buf: Uint8Array): string | undefined {
  if (buf.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    return undefined;
  }
}

/** Pseudo file systems a state directory can never live on (statfs f_type). */
const PSEUDO_FS: Record<number, string> = {
  0x9fa0: 'proc', 0x62656572: 'sysfs', 0x1cd1: 'devpts', 0x27e0eb: 'cgroup', 0x63677270: 'cgroup2', 0x64626720: 'debugfs',
  0x73636673: 'securityfs', 0x74726163: 'tracefs', 0x6e736673: 'nsfs', 0x42494e4d: 'binfmt_misc', 0xcafe4a11: 'bpf',
  0x50495045: 'pipefs', 0x534f434b: 'sockfs', 0x6165676c: 'pstore', 0xde5e81e4: 'efivarfs', 0x19800202: 'mqueue',
  0x958458f6: 'hugetlbfs', 0x62646576: 'bdevfs', 0x65735546: 'fusectl', 0x1373: 'devfs',
};
const PSEUDO_ROOTS = ['/proc', '/sys', '/dev'];

function under(p: string, root: string): boolean {
  return p === root || p.startsWith(`${root}/`);
}

/** Throws unless `p` (existing) is on a file system files can be kept on. */
function refusePseudo(p: string, dir: string): void {
  let real = p;
  try { real = realpathSync(p); } catch { /* checked by the caller's stat */ }
  for (const root of [resolve(p), real]) {
    const r = PSEUDO_ROOTS.find((x) => under(root, x));
    if (r) throw new InputError(`state directory ${dir}: ${r} is a pseudo file system, not a place for a journal and backups; choose another --state-dir`);
  }
  try {
    const fs = statfsSync(real);
    const name = PSEUDO_FS[Number(fs.type)];
    if (name) throw new InputError(`state directory ${dir}: ${real} is on a ${name} pseudo file system, not a place for a journal and backups; choose another --state-dir`);
  } catch (e) {
    if (e instanceof InputError) throw e;
    // statfs not available here: the path check above stands
  }
}

/** What a state directory holds, and the type each entry must have. */
export const STATE_ENTRIES: ReadonlyArray<{ name: string; dir: boolean; what: string }> = [
  { name: 'journal.jsonl', dir: false, what: 'journal' },
  { name: 'lock', dir: false, what: 'lock file' },
  { name: 'plan.yaml', dir: false, what: 'plan copy' },
  { name: 'backups', dir: true, what: 'backups directory' },
];

/**
 * Checks, without writing anything, that `dir` is or can become a real directory we can create 0600 files in:
 * every existing part of the path is a directory, the deepest existing one is writable, none is on a pseudo
 * file system (/proc, /sys, /dev), and what the directory already holds has the right types. InputError (3)
 * otherwise, naming the path and why.
 */
export function checkStateDir(dir: string, opts: { writable?: boolean } = {}): { exists: boolean } {
  const writable = opts.writable ?? true;
  if (dir.includes('\0')) throw new InputError(`state directory ${JSON.stringify(dir)}: the path holds a NUL byte`);
  const abs = resolve(dir);
  // the deepest existing ancestor (or the directory itself)
  let existing = abs;
  let st: Stats | undefined;
  for (;;) {
    try {
      st = statSync(existing);
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') throw new InputError(`state directory ${dir}: a part of the path is not a directory (ENOTDIR)`);
      if (code !== 'ENOENT') throw new InputError(`state directory ${dir}: cannot use ${existing}: ${ioReason(e)}`);
      const up = dirname(existing);
      if (up === existing) throw new InputError(`state directory ${dir}: no part of the path exists`);
      existing = up;
    }
  }
  refusePseudo(existing, dir);
  if (!st.isDirectory()) {
    throw new InputError(existing === abs
      ? `state directory ${dir} is ${fileTypeName(st)}, not a directory`
      : `state directory ${dir}: ${existing} is ${fileTypeName(st)}, not a directory`);
  }
  if (writable) {
    try {
      accessSync(existing, constants.W_OK | constants.X_OK);
    } catch (e) {
      throw new InputError(`state directory ${dir}: ${existing === abs ? 'it' : existing} is not writable (${ioReason(e)})`);
    }
  }
  const exists = existing === abs;
  if (exists) {
    for (const entry of STATE_ENTRIES) {
      const p = join(abs, entry.name);
      let est: Stats;
      try {
        est = statSync(p);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw new InputError(`state directory ${dir}: cannot use its ${entry.what} ${p}: ${ioReason(e)}`);
      }
      const ok = entry.dir ? est.isDirectory() : est.isFile();
      if (!ok) throw new InputError(`state directory ${dir}: its ${entry.what} ${p} is ${fileTypeName(est)}, expected ${entry.dir ? 'a directory' : 'a regular file'}`);
      if (writable && entry.dir) {
        try {
          accessSync(p, constants.W_OK | constants.X_OK);
        } catch (e) {
          throw new InputError(`state directory ${dir}: its ${entry.what} ${p} is not writable (${ioReason(e)})`);
        }
      }
    }
  }
  return { exists };
}
