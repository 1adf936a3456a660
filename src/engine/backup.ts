/**
 * Backups: one file per object, written durably (0600, directory 0700) before the object is changed or
 * deleted. The first backup of an object in a run wins: a resumed run never overwrites the original state
 * with an intermediate one.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObject } from '../cluster/types.ts';
import { errorLine, InputError } from '../errors.ts';
import { createFileDurable, decodeText, fileTypeName, ioReason, readRegularFile, statOrUndefined } from './files.ts';

/** The largest backup file read (one object). */
export const MAX_BACKUP_BYTES = 64 * 1024 * 1024;

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export function refOf(o: KubeObject): ObjectRef {
  return { apiVersion: o.apiVersion ?? 'v1', kind: o.kind ?? 'Unknown', namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' };
}

export function refKey(r: ObjectRef): string {
  const group = r.apiVersion.includes('/') ? r.apiVersion.split('/')[0] : 'core';
  return `${group}/${r.kind}/${r.namespace ?? '_cluster'}/${r.name}`;
}

/** File name for an object: group_kind_namespace_name.json, with anything unsafe replaced. */
export function backupFileName(r: ObjectRef): string {
  return `${refKey(r).replace(/\//g, '_').replace(/[^A-Za-z0-9._-]/g, '-')}.json`;
}

export interface BackupRecord {
  takenAt: string;
  run: string;
  /** The kube-system uid of the cluster the object was read from (absent in backups of older versions). */
  cluster?: string;
  object: KubeObject;
}

/** Reads and checks one backup file: InputError naming the file when it is not a backup record. */
export function readBackupFile(path: string): BackupRecord {
  const text = decodeText(readRegularFile(path, 'backup', MAX_BACKUP_BYTES));
  if (text === undefined) throw new InputError(`backup ${path}: not text (binary data); the backup is damaged`);
  let v: any;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new InputError(`backup ${path}: not JSON (${errorLine(e)}); the backup is damaged`);
  }
  const bad = (why: string): never => { throw new InputError(`backup ${path}: ${why}; the backup is damaged`); };
  if (!v || typeof v !== 'object' || Array.isArray(v)) bad('not a backup record (an object with takenAt, run and object)');
  if (typeof v.takenAt !== 'string') bad('"takenAt" is not a string');
  if (typeof v.run !== 'string') bad('"run" is not a string');
  if (v.cluster !== undefined && typeof v.cluster !== 'string') bad('"cluster" is not a string');
  const o = v.object;
  if (!o || typeof o !== 'object' || Array.isArray(o)) bad('"object" is not a Kubernetes object');
  if (typeof o.kind !== 'string' || o.kind === '') bad('"object.kind" is not a string');
  if (o.apiVersion !== undefined && typeof o.apiVersion !== 'string') bad('"object.apiVersion" is not a string');
  if (!o.metadata || typeof o.metadata !== 'object' || Array.isArray(o.metadata)) bad('"object.metadata" is not a mapping');
  if (typeof o.metadata.name !== 'string' || o.metadata.name === '') bad('"object.metadata.name" is not a string');
  if (o.metadata.namespace !== undefined && typeof o.metadata.namespace !== 'string') bad('"object.metadata.namespace" is not a string');
  return v as BackupRecord;
}

export class BackupStore {
  readonly dir: string;
  readonly run: string;
  /** The live cluster's kube-system uid, recorded in every backup this store writes (when known). */
  readonly cluster?: string;
  /** Told of every backup record this store writes, to copy it to the cluster (cluster-state.ts). */
  mirror?: (record: BackupRecord) => void;
  /** The directory is created with the first backup; nothing is written before. */
  constructor(dir: string, run: string, cluster?: string) {
    this.dir = dir;
    this.run = run;
    if (cluster) this.cluster = cluster;
  }

  pathFor(r: ObjectRef): string {
    return join(this.dir, backupFileName(r));
  }

  has(r: ObjectRef): boolean {
    return statOrUndefined(this.pathFor(r), 'backup') !== undefined;
  }

  /** Save the object unless a backup of it exists already; returns the file path. */
  save(o: KubeObject): string {
    const path = this.pathFor(refOf(o));
    const record: BackupRecord = { takenAt: new Date().toISOString(), run: this.run, ...(this.cluster ? { cluster: this.cluster } : {}), object: o };
    if (createFileDurable(path, `${JSON.stringify(record, null, 2)}\n`)) this.mirror?.(record);
    return path;
  }

  load(r: ObjectRef): KubeObject | undefined {
    const path = this.pathFor(r);
    if (!statOrUndefined(path, 'backup')) return undefined;
    return readBackupFile(path).object;
  }

  /** The backup files (*.json), sorted; InputError when the directory cannot be used. */
  files(): string[] {
    const st = statOrUndefined(this.dir, 'backups directory');
    if (!st) return [];
    if (!st.isDirectory()) throw new InputError(`backups directory ${this.dir} is ${fileTypeName(st)}, not a directory`);
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (e) {
      throw new InputError(`cannot read backups directory ${this.dir}: ${ioReason(e)}`);
    }
    return names.filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort().map((f) => join(this.dir, f));
  }

  /** Every backed-up object, sorted by file name; InputError naming the first damaged file. */
  all(): KubeObject[] {
    return this.records().map((r) => r.object);
  }

  /** Every backup record (object, run, cluster), sorted by file name; InputError naming the first damaged file. */
  records(): BackupRecord[] {
    return this.files().map((f) => readBackupFile(f));
  }

  /** Reads every backup once: InputError naming the first one that cannot be used. */
  check(): number {
    return this.all().length;
  }
}
