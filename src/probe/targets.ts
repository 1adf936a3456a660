/**
 * Which Services to probe: `--service [NS/]NAME[:PORT]` values, a targets file (YAML or JSON), and the node ports
 * of `--nodeport [NS/]NAME:NODEPORT`.
 */
import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import { errorLine } from '../errors.ts';
import type { NodePortTarget, ServiceTarget } from './probe.ts';

/** A target the user wrote wrongly. */
export class TargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetError';
  }
}

/** A target file that cannot be read or parsed. */
export class TargetFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetFileError';
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function checkPort(port: number, what: string): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new TargetError(`${what}: port must be a whole number from 1 to 65535`);
  return port;
}

function checkName(s: ServiceTarget, what: string): ServiceTarget {
  if (!DNS_LABEL.test(s.namespace)) throw new TargetError(`${what}: namespace "${s.namespace}" is not a valid DNS label`);
  if (!DNS_LABEL.test(s.name)) throw new TargetError(`${what}: Service name "${s.name}" is not a valid DNS label`);
  return s;
}

/** `[NS/]NAME[:PORT]`. */
export function parseServiceTarget(value: string, defaults: { namespace: string; port: number }, what = value): ServiceTarget {
  const m = value.trim().match(/^(?:([^/:\s]+)\/)?([^/:\s]+)(?::(\d+))?$/);
  if (!m) throw new TargetError(`${what}: expected [NAMESPACE/]NAME[:PORT], e.g. default/web:8080`);
  const port = m[3] !== undefined ? checkPort(Number(m[3]), what) : defaults.port;
  return checkName({ namespace: m[1] ?? defaults.namespace, name: m[2]!, port }, what);
}

/** `[NS/]NAME:NODEPORT`: a Service's node port (the port is not optional: it is the one on the nodes). */
export function parseNodePortTarget(value: string, defaults: { namespace: string }, what = value): NodePortTarget {
  const m = value.trim().match(/^(?:([^/:\s]+)\/)?([^/:\s]+):(\d+)$/);
  if (!m) throw new TargetError(`${what}: expected [NAMESPACE/]NAME:NODEPORT, e.g. default/web:30080`);
  const nodePort = checkPort(Number(m[3]), what);
  const s = checkName({ namespace: m[1] ?? defaults.namespace, name: m[2]!, port: nodePort }, what);
  return { namespace: s.namespace, name: s.name, nodePort };
}

/**
 * A targets file: a list (or `{services: [...]}`) whose entries are `[NS/]NAME[:PORT]` strings or
 * `{namespace, name, port}` objects.
 */
export function parseTargetsDocument(doc: unknown, defaults: { namespace: string; port: number }, file: string): ServiceTarget[] {
  const list = Array.isArray(doc) ? doc : doc && typeof doc === 'object' && Array.isArray((doc as { services?: unknown }).services)
    ? (doc as { services: unknown[] }).services : undefined;
  if (!list) throw new TargetFileError(`${file}: expected a list of Services, or a mapping with a "services" list`);
  return list.map((item, i) => {
    const what = `${file} services[${i}]`;
    if (typeof item === 'string') return parseServiceTarget(item, defaults, what);
    if (item && typeof item === 'object' && typeof (item as { name?: unknown }).name === 'string') {
      const o = item as { namespace?: unknown; name: string; port?: unknown };
      if (o.namespace !== undefined && typeof o.namespace !== 'string') throw new TargetError(`${what}: namespace must be a string`);
      const port = o.port === undefined ? defaults.port : typeof o.port === 'number' ? o.port : Number.NaN;
      return checkName({ namespace: (o.namespace as string | undefined) ?? defaults.namespace, name: o.name, port: checkPort(port, what) }, what);
    }
    throw new TargetError(`${what}: each entry is "[NS/]NAME[:PORT]" or {namespace, name, port}`);
  });
}

export function readTargetsFile(file: string, defaults: { namespace: string; port: number }): ServiceTarget[] {
  let doc: unknown;
  try {
    doc = yaml.load(readFileSync(file, 'utf8'));
  } catch (e) {
    const msg = errorLine(e);
    throw new TargetFileError(`cannot read targets file ${file}: ${msg}`);
  }
  return parseTargetsDocument(doc, defaults, file);
}
