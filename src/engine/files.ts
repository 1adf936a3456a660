/**
 * Durable files: written to a temporary name, fsynced, renamed into place, and the directory fsynced, so a
 * crash at any point leaves either the old file or the complete new one. Mode 0600 (directories 0700):
 * backups and journals may hold Secrets' neighbours and cluster details.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync, chmodSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try { fsyncSync(fd); } finally { closeSync(fd); }
}

/** Write `data` to `path` atomically and durably, mode 0600. */
export function writeFileDurable(path: string, data: string): void {
  const dir = dirname(path);
  ensurePrivateDir(dir);
  const tmp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, data);
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
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
