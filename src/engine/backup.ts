/**
 * Backups: one file per object, written durably (0600, directory 0700) before the object is changed or
 * deleted. The first backup of an object in a run wins: a resumed run never overwrites the original state
 * with an intermediate one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObject } from '../cluster/types.ts';
import { createFileDurable, ensurePrivateDir } from './files.ts';

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
  object: KubeObject;
}

export class BackupStore {
  readonly dir: string;
  readonly run: string;
  constructor(dir: string, run: string) {
    this.dir = dir;
    this.run = run;
    ensurePrivateDir(dir);
  }

  pathFor(r: ObjectRef): string {
    return join(this.dir, backupFileName(r));
  }

  has(r: ObjectRef): boolean {
    return existsSync(this.pathFor(r));
  }

  /** Save the object unless a backup of it exists already; returns the file path. */
  save(o: KubeObject): string {
    const path = this.pathFor(refOf(o));
    const record: BackupRecord = { takenAt: new Date().toISOString(), run: this.run, object: o };
    createFileDurable(path, `${JSON.stringify(record, null, 2)}\n`);
    return path;
  }

  load(r: ObjectRef): KubeObject | undefined {
    const path = this.pathFor(r);
    if (!existsSync(path)) return undefined;
    return (JSON.parse(readFileSync(path, 'utf8')) as BackupRecord).object;
  }

  /** Every backed-up object, sorted by file name. */
  all(): KubeObject[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => (JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as BackupRecord).object);
  }
}
