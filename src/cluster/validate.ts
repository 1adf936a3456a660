/**
 * The gate in front of buildSnapshot: every raw object (live or from dump files) is checked for what a real
 * kube-apiserver guarantees before anything is interpreted, and duplicates are resolved.
 *
 *  - An object that cannot be a real Kubernetes object (not a mapping, no kind, no metadata.name, a name or
 *    namespace that is not a string, a field we read with the wrong type, an address or range the apiserver
 *    would have refused in a field we use) is an InputError: one line naming where it came from (the file when
 *    known), the object (kind namespace/name), the JSON path and what is wrong.
 *  - The same object twice (same group, kind, namespace and name, identical content, e.g. two overlapping dumps)
 *    is kept once, silently. The same identity with different content (another resourceVersion, another
 *    clusterIP) is an InputError naming both and the first difference.
 *  - Distribution configs given as files (kOps Cluster spec, kubeadm ClusterConfiguration, KubeletConfiguration,
 *    KubeProxyConfiguration) must hold well-formed ranges and addresses in the fields we read.
 *
 * Nothing a real apiserver returns is refused: headless Services (clusterIP "None"), ExternalName Services
 * without a ClusterIP, dual-stack clusterIPs, nodes without a podCIDR, pods without IPs, podCIDRs with host
 * bits set (the apiserver accepts them), IPv4 addresses with leading zeros (stored before Kubernetes 1.33's
 * strict validation), unknown fields and unknown kinds. Values a real cluster can hold but kube-renumber cannot
 * use (free text in ConfigMaps, node addresses, annotations) stay warnings in buildSnapshot.
 *
 * Pure; linear in the input (the deep comparison runs only for objects that share an identity).
 */
import { InputError } from '../errors.ts';
import { platformConfigFiles } from '../platform/registry.ts';
import { parseCidr } from '../net/cidr.ts';
import { dottedQuadValue, parseIPReason } from '../net/ip.ts';
import { splitList } from '../text.ts';
import type { KubeObject, RawInventory } from './types.ts';

/**
 * Where an object was read from, e.g. "services.yaml", "dump.yaml document 3", "list.json item 12". Loaders
 * that know it record it with setObjectOrigin; messages fall back to the input's file list.
 */
const origins = new WeakMap<object, string | ItemOrigin>();

/** Item `item` (1-based) of the List described by `list` (e.g. "list.json"): no string made per item of a huge List. */
interface ItemOrigin {
  readonly list: string;
  readonly item: number;
}

export function setObjectOrigin(o: object, where: string): void {
  if (o && typeof o === 'object') origins.set(o, where);
}

/** setObjectOrigin(o, `${list} item ${item}`), the text made only when a message needs it. */
export function setItemOrigin(o: object, list: string, item: number): void {
  if (o && typeof o === 'object') origins.set(o, { list, item });
}

export function objectOrigin(o: object): string | undefined {
  const where = o && typeof o === 'object' ? origins.get(o) : undefined;
  return where === undefined || typeof where === 'string' ? where : `${where.list} item ${where.item}`;
}

const SERVICE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);
const CALICO_GROUPS = new Set(['crd.projectcalico.org', 'projectcalico.org']);
const MAX_NAME = 253;
const MAX_SHOWN = 60;

type Json = unknown;

/**
 * A value for a message: JSON, cut short, always one line. Bounded however large or deep the value is (a YAML
 * alias bomb expands exponentially; only the first characters are ever produced).
 */
export function show(v: Json): string {
  const parts: string[] = [];
  let length = 0;
  const put = (t: string): boolean => {
    parts.push(t);
    length += t.length;
    return length <= MAX_SHOWN;
  };
  const walk = (x: Json, depth: number): boolean => {
    if (x === undefined) return put('undefined');
    if (x === null || typeof x === 'boolean' || typeof x === 'number') return put(typeof x === 'number' && !Number.isFinite(x) ? String(x) : JSON.stringify(x));
    if (typeof x === 'string') return put(JSON.stringify(x.length > MAX_SHOWN ? x.slice(0, MAX_SHOWN) : x));
    if (typeof x === 'bigint') return put(String(x));
    if (typeof x !== 'object') return put(String(typeof x));
    if (depth > 4) return put(Array.isArray(x) ? '[…]' : '{…}');
    if (Array.isArray(x)) {
      if (!put('[')) return false;
      for (let i = 0; i < x.length; i++) if ((i > 0 && !put(',')) || !walk(x[i], depth + 1)) return false;
      return put(']');
    }
    if (!put('{')) return false;
    let first = true;
    for (const k in x as Record<string, unknown>) {
      if (!Object.prototype.hasOwnProperty.call(x, k)) continue;
      if ((!first && !put(',')) || !put(`${JSON.stringify(k.length > MAX_SHOWN ? k.slice(0, MAX_SHOWN) : k)}:`) || !walk((x as Record<string, unknown>)[k], depth + 1)) return false;
      first = false;
    }
    return put('}');
  };
  walk(v, 0);
  let s = parts.join('');
  s = s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN - 1)}…` : s;
}

function typeName(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `a ${typeof v}`;
}

function isMap(v: Json): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** null means absent in Kubernetes JSON (a Go nil). */
function absent(v: Json): v is null | undefined {
  return v === undefined || v === null;
}

function key(path: string, k: string | number): string {
  if (typeof k === 'number') return `${path}[${k}]`;
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) ? (path ? `${path}.${k}` : k) : `${path}[${show(k)}]`;
}

/** IPv4 with leading zeros, as clusters validated before Kubernetes 1.33 may still store (it runs for every pod IP). */
function legacyV4(s: string): boolean {
  return dottedQuadValue(s, true) !== -1;
}

/** Why s is not an IP address; undefined when it is one. */
export function ipProblem(s: string): string | undefined {
  if (legacyV4(s)) return undefined;
  const r = parseIPReason(s);
  return typeof r === 'string' ? r : undefined;
}

/** Why s is not a CIDR (host bits set are accepted, as the apiserver does); undefined when it is one. */
export function cidrProblem(s: string): string | undefined {
  const slash = s.indexOf('/');
  if (slash > 0 && legacyV4(s.slice(0, slash).trim()) && /^(0|[1-9]\d?)$/.test(s.slice(slash + 1).trim()) && Number(s.slice(slash + 1)) <= 32) return undefined;
  try {
    parseCidr(s, { normalize: true });
    return undefined;
  } catch (e) {
    return (e instanceof Error ? e.message : String(e)).replace(/^invalid CIDR "(?:[^"\\]|\\.)*": /, '');
  }
}

/** The dot-separated parts of the paths Check.at() has looked up (each object looks up the same few). */
const PATH_PARTS = new Map<string, readonly string[]>();
const MAX_PATHS = 4096;

function pathParts(path: string): readonly string[] {
  let parts = PATH_PARTS.get(path);
  if (parts === undefined) {
    parts = path.split('.');
    if (PATH_PARTS.size < MAX_PATHS) PATH_PARTS.set(path, parts);
  }
  return parts;
}

/** Problems in one object (or config), collected by path; the first one is reported. */
class Check {
  problem: string | undefined;
  readonly o: Record<string, unknown>;

  constructor(o: Record<string, unknown>) {
    this.o = o;
  }

  fail(path: string, what: string): false {
    this.problem ??= `${path} ${what}`;
    return false;
  }

  at(path: string): Json {
    let v: Json = this.o;
    for (const part of pathParts(path)) {
      if (!isMap(v)) return undefined;
      v = v[part];
    }
    return v;
  }

  /** Optional mapping (absent or null is fine). */
  map(path: string, v: Json = this.at(path)): Record<string, unknown> | undefined {
    if (absent(v)) return undefined;
    if (!isMap(v)) {
      this.fail(path, `is ${typeName(v)} (${show(v)}), not a mapping`);
      return undefined;
    }
    return v;
  }

  list(path: string, v: Json = this.at(path)): unknown[] | undefined {
    if (absent(v)) return undefined;
    if (!Array.isArray(v)) {
      this.fail(path, `is ${typeName(v)} (${show(v)}), not a list`);
      return undefined;
    }
    return v;
  }

  str(path: string, v: Json = this.at(path)): string | undefined {
    if (absent(v)) return undefined;
    if (typeof v !== 'string') {
      this.fail(path, `is ${typeName(v)} (${show(v)}), not a string`);
      return undefined;
    }
    return v;
  }

  bool(path: string, v: Json = this.at(path)): void {
    if (!absent(v) && typeof v !== 'boolean') this.fail(path, `is ${typeName(v)} (${show(v)}), not true or false`);
  }

  int(path: string, min: number, max: number, v: Json = this.at(path)): number | undefined {
    if (absent(v)) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.fail(path, `is ${show(v)}, not a whole number from ${min} to ${max}`);
      return undefined;
    }
    return v;
  }

  strMap(path: string, v: Json = this.at(path)): void {
    const m = this.map(path, v);
    if (!m) return;
    const keys = Object.keys(m);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const x = m[k];
      if (typeof x !== 'string') {
        this.fail(key(path, k), `is ${typeName(x)} (${show(x)}), not a string`);
        return;
      }
    }
  }

  strList(path: string, v: Json = this.at(path)): string[] | undefined {
    const l = this.list(path, v);
    if (!l) return undefined;
    for (let i = 0; i < l.length; i++) {
      if (typeof l[i] !== 'string') {
        this.fail(key(path, i), `is ${typeName(l[i])} (${show(l[i])}), not a string`);
        return undefined;
      }
    }
    return l as string[];
  }

  ip(path: string, v: Json = this.at(path), opts: { allowEmpty?: boolean; allowNone?: boolean } = {}): string | undefined {
    const s = this.str(path, v);
    if (s === undefined) return undefined;
    if ((s === '' && opts.allowEmpty) || (s === 'None' && opts.allowNone)) return s;
    const why = ipProblem(s);
    if (why !== undefined) {
      this.fail(path, `${show(s)} is not an IP address (${why})`);
      return undefined;
    }
    return s;
  }

  cidr(path: string, v: Json = this.at(path), opts: { allowEmpty?: boolean } = {}): string | undefined {
    const s = this.str(path, v);
    if (s === undefined || (s === '' && opts.allowEmpty)) return s;
    const why = cidrProblem(s);
    if (why !== undefined) {
      this.fail(path, `${show(s)} is not a CIDR (${why})`);
      return undefined;
    }
    return s;
  }

  /** A comma-separated list of CIDRs in one string, as flags and kubeadm write them. */
  cidrCsv(path: string, v: Json = this.at(path)): void {
    const s = this.str(path, v);
    if (s === undefined) return;
    for (const part of splitList(s)) {
      const why = cidrProblem(part);
      if (why !== undefined) {
        this.fail(path, `${show(s)} is not a CIDR${s.includes(',') ? ' list' : ''} (${show(part)}: ${why})`);
        return;
      }
    }
  }
}

/** "kind ns/name" for messages. */
function describeObject(o: Record<string, unknown>): string {
  const md = isMap(o.metadata) ? o.metadata : {};
  const kind = typeof o.kind === 'string' && o.kind !== '' ? o.kind : 'object';
  const name = typeof md.name === 'string' ? md.name : '';
  const ns = typeof md.namespace === 'string' && md.namespace !== '' ? `${md.namespace}/` : '';
  return name ? `${kind} ${show(`${ns}${name}`).slice(1, -1)}` : kind === 'object' ? 'an object' : `a ${kind}`;
}

function groupOf(apiVersion: unknown): string {
  const av = typeof apiVersion === 'string' ? apiVersion : '';
  return av.includes('/') ? av.slice(0, av.indexOf('/')) : '';
}

/** Where object (or config) `index` of the inventory came from, for messages. */
function whereFrom(inv: RawInventory, o: unknown, index: number, list: 'object' | 'config' = 'object'): string {
  const known = objectOrigin(o as object);
  if (known) return known;
  const src = inv.source as RawInventory['source'] | undefined;
  if (src?.kind === 'file') {
    const files = src.files.map((f) => (f === '-' ? 'stdin' : f));
    if (files.length === 1) return files[0]!;
    const shown = files.length <= 3 ? files.join(', ') : `${files.slice(0, 2).join(', ')} and ${files.length - 2} more files`;
    return list === 'object' ? `object ${index + 1} of ${shown}` : `a config in ${shown}`;
  }
  return 'the cluster';
}

function objectError(inv: RawInventory, o: unknown, index: number, what: string): InputError {
  const where = whereFrom(inv, o, index);
  const obj = isMap(o) ? describeObject(o) : 'an object';
  return new InputError(`${where}: ${obj}: ${what}; not a valid Kubernetes object (fix or remove it)`);
}

// ---------------------------------------------------------------------------------------------------
// per-kind checks: the fields buildSnapshot, the analyzers and the planners read

function checkMetadata(c: Check): void {
  const o = c.o;
  if (typeof o.kind !== 'string' || o.kind === '') {
    c.fail('kind', absent(o.kind) ? 'is missing' : `is ${typeName(o.kind)} (${show(o.kind)}), not a kind name`);
    return;
  }
  if (typeof o.apiVersion !== 'string' || o.apiVersion === '') {
    c.fail('apiVersion', absent(o.apiVersion) ? 'is missing' : `is ${typeName(o.apiVersion)} (${show(o.apiVersion)}), not an API version`);
    return;
  }
  if (o.kind.endsWith('List') && 'items' in o) {
    c.fail('items', Array.isArray(o.items) ? 'holds a nested list' : `is ${typeName(o.items)} (${show(o.items)}), not a list of objects`);
    return;
  }
  if (absent(o.metadata)) {
    c.fail('metadata', 'is missing (every object has metadata.name)');
    return;
  }
  const md = c.map('metadata');
  if (!md) return;
  const name = md.name;
  if (absent(name) || name === '') {
    c.fail('metadata.name', 'is missing');
    return;
  }
  if (typeof name !== 'string') {
    c.fail('metadata.name', `is ${typeName(name)} (${show(name)}), not a string`);
    return;
  }
  if (name.length > MAX_NAME || /[\s\u0000-\u001f\u007f-\u009f/]/.test(name)) {
    c.fail('metadata.name', `${show(name)} is not a valid name`);
    return;
  }
  const ns = md.namespace;
  if (!absent(ns)) {
    if (typeof ns !== 'string') {
      c.fail('metadata.namespace', `is ${typeName(ns)} (${show(ns)}), not a string`);
      return;
    }
    if (ns !== '' && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns)) {
      c.fail('metadata.namespace', `${show(ns)} is not a valid namespace name`);
      return;
    }
  }
  c.strMap('metadata.labels');
  c.strMap('metadata.annotations');
  c.str('metadata.uid');
  c.str('metadata.resourceVersion');
  const owners = c.list('metadata.ownerReferences');
  for (let i = 0; owners && i < owners.length; i++) {
    const p = `metadata.ownerReferences[${i}]`;
    const r = c.map(p, owners[i]);
    if (!r) {
      if (absent(owners[i])) c.fail(p, 'is null');
      continue;
    }
    c.str(`${p}.kind`, r.kind);
    c.str(`${p}.name`, r.name);
    c.bool(`${p}.controller`, r.controller);
  }
}

function checkService(c: Check): void {
  const spec = c.map('spec');
  if (!spec) return;
  const type = c.str('spec.type');
  if (type !== undefined && !SERVICE_TYPES.has(type)) c.fail('spec.type', `${show(type)} is not a Service type (ClusterIP, NodePort, LoadBalancer, ExternalName)`);
  const one = c.ip('spec.clusterIP', spec.clusterIP, { allowEmpty: true, allowNone: true });
  const ips = c.list('spec.clusterIPs', spec.clusterIPs);
  if (ips) {
    if (ips.length > 2) c.fail('spec.clusterIPs', `has ${ips.length} entries; a Service has at most one per family`);
    const families = new Set<number>();
    for (let i = 0; i < ips.length; i++) {
      const ip = c.ip(`spec.clusterIPs[${i}]`, ips[i], { allowNone: i === 0 && ips.length === 1, allowEmpty: false });
      if (ip === undefined || ip === 'None') continue;
      const fam = ip.includes(':') ? 6 : 4;
      if (families.has(fam)) c.fail('spec.clusterIPs', `${show(ips)} has two IPv${fam} addresses; a Service has at most one per family`);
      families.add(fam);
    }
    if (one !== undefined && one !== '' && ips.length > 0 && typeof ips[0] === 'string' && ips[0] !== one) {
      c.fail('spec.clusterIPs[0]', `${show(ips[0])} differs from spec.clusterIP ${show(one)}`);
    }
  }
  const ports = c.list('spec.ports', spec.ports);
  for (let i = 0; ports && i < ports.length; i++) {
    const p = `spec.ports[${i}]`;
    const port = c.map(p, ports[i]);
    if (!port) {
      if (absent(ports[i])) c.fail(p, 'is null');
      continue;
    }
    if (absent(port.port)) c.fail(`${p}.port`, 'is missing');
    c.int(`${p}.port`, 1, 65535, port.port);
    c.int(`${p}.nodePort`, 0, 65535, port.nodePort);
    c.str(`${p}.name`, port.name);
    c.str(`${p}.protocol`, port.protocol);
    const tp = port.targetPort;
    if (!absent(tp) && typeof tp !== 'string') c.int(`${p}.targetPort`, 0, 65535, tp);
  }
  c.strMap('spec.selector', spec.selector);
  c.str('spec.externalName', spec.externalName);
  const ext = c.strList('spec.externalIPs', spec.externalIPs);
  for (let i = 0; ext && i < ext.length; i++) c.ip(`spec.externalIPs[${i}]`, ext[i]);
  c.strList('spec.loadBalancerSourceRanges', spec.loadBalancerSourceRanges);
  c.str('spec.loadBalancerIP', spec.loadBalancerIP);
  const status = c.map('status');
  const lb = status ? c.map('status.loadBalancer', status.loadBalancer) : undefined;
  const ingress = lb ? c.list('status.loadBalancer.ingress', lb.ingress) : undefined;
  for (let i = 0; ingress && i < ingress.length; i++) {
    const ing = c.map(`status.loadBalancer.ingress[${i}]`, ingress[i]);
    if (ing) c.str(`status.loadBalancer.ingress[${i}].ip`, ing.ip);
  }
}

function checkNode(c: Check): void {
  const spec = c.map('spec');
  if (spec) {
    const one = c.cidr('spec.podCIDR', spec.podCIDR, { allowEmpty: true });
    const cidrs = c.strList('spec.podCIDRs', spec.podCIDRs);
    for (let i = 0; cidrs && i < cidrs.length; i++) c.cidr(`spec.podCIDRs[${i}]`, cidrs[i]);
    if (cidrs && cidrs.length > 2) c.fail('spec.podCIDRs', `has ${cidrs.length} entries; a node has at most one per family`);
    if (one && cidrs && cidrs.length > 0 && cidrs[0] !== one) c.fail('spec.podCIDRs[0]', `${show(cidrs[0])} differs from spec.podCIDR ${show(one)}`);
    c.bool('spec.unschedulable', spec.unschedulable);
  }
  const status = c.map('status');
  if (!status) return;
  const addrs = c.list('status.addresses', status.addresses);
  for (let i = 0; addrs && i < addrs.length; i++) {
    const a = c.map(`status.addresses[${i}]`, addrs[i]);
    if (!a) continue;
    c.str(`status.addresses[${i}].type`, a.type);
    c.str(`status.addresses[${i}].address`, a.address);
  }
  checkConditions(c, status);
  const info = c.map('status.nodeInfo', status.nodeInfo);
  if (info) c.str('status.nodeInfo.kubeletVersion', info.kubeletVersion);
}

function checkConditions(c: Check, status: Record<string, unknown>): void {
  const conds = c.list('status.conditions', status.conditions);
  for (let i = 0; conds && i < conds.length; i++) {
    const x = c.map(`status.conditions[${i}]`, conds[i]);
    if (!x) continue;
    c.str(`status.conditions[${i}].type`, x.type);
    c.str(`status.conditions[${i}].status`, x.status);
  }
}

function checkContainers(c: Check, spec: Record<string, unknown>, field: 'containers' | 'initContainers'): void {
  const cs = c.list(field === 'containers' ? 'spec.containers' : 'spec.initContainers', spec[field]);
  for (let i = 0; cs && i < cs.length; i++) {
    const p = `spec.${field}[${i}]`;
    const ct = c.map(p, cs[i]);
    if (!ct) continue;
    c.str(`${p}.name`, ct.name);
    c.str(`${p}.image`, ct.image);
    c.strList(`${p}.command`, ct.command);
    c.strList(`${p}.args`, ct.args);
  }
}

function checkPod(c: Check): void {
  const spec = c.map('spec');
  if (spec) {
    c.str('spec.nodeName', spec.nodeName);
    c.bool('spec.hostNetwork', spec.hostNetwork);
    checkContainers(c, spec, 'containers');
    checkContainers(c, spec, 'initContainers');
  }
  const status = c.map('status');
  if (!status) return;
  c.str('status.phase', status.phase);
  c.ip('status.podIP', status.podIP, { allowEmpty: true });
  const ips = c.list('status.podIPs', status.podIPs);
  for (let i = 0; ips && i < ips.length; i++) {
    const p = c.map(`status.podIPs[${i}]`, ips[i]);
    if (p) c.ip(`status.podIPs[${i}].ip`, p.ip);
    else if (absent(ips[i])) c.fail(`status.podIPs[${i}]`, 'is null');
  }
  checkConditions(c, status);
}

function checkServiceCIDR(c: Check): void {
  const spec = c.map('spec');
  if (!spec) return;
  const cidrs = c.strList('spec.cidrs', spec.cidrs);
  for (let i = 0; cidrs && i < cidrs.length; i++) c.cidr(`spec.cidrs[${i}]`, cidrs[i]);
  const status = c.map('status');
  if (status) checkConditions(c, status);
}

function checkCalico(c: Check, kind: string): void {
  const spec = c.map('spec');
  if (!spec) return;
  if (kind === 'IPPool') {
    const cidr = c.cidr('spec.cidr', spec.cidr);
    if (absent(spec.cidr)) c.fail('spec.cidr', 'is missing');
    const width = cidr?.includes(':') ? 128 : 32;
    c.int('spec.blockSize', 0, width, spec.blockSize);
    c.bool('spec.disabled', spec.disabled);
    c.str('spec.nodeSelector', spec.nodeSelector);
    c.str('spec.ipipMode', spec.ipipMode);
    c.str('spec.vxlanMode', spec.vxlanMode);
    c.bool('spec.natOutgoing', spec.natOutgoing);
    c.strList('spec.allowedUses', spec.allowedUses);
    const ipip = c.map('spec.ipip', spec.ipip);
    if (ipip) c.str('spec.ipip.mode', ipip.mode);
  } else if (kind === 'IPAMBlock') {
    c.cidr('spec.cidr', spec.cidr);
    if (absent(spec.cidr)) c.fail('spec.cidr', 'is missing');
    c.str('spec.affinity', spec.affinity);
    c.list('spec.allocations', spec.allocations);
  } else if (kind === 'BlockAffinity') {
    c.cidr('spec.cidr', spec.cidr);
    if (absent(spec.cidr)) c.fail('spec.cidr', 'is missing');
    c.str('spec.node', spec.node);
    c.str('spec.state', spec.state);
  }
}

function checkInstallation(c: Check): void {
  const spec = c.map('spec');
  if (!spec) return;
  const net = c.map('spec.calicoNetwork', spec.calicoNetwork);
  const pools = net ? c.list('spec.calicoNetwork.ipPools', net.ipPools) : undefined;
  for (let i = 0; pools && i < pools.length; i++) {
    const p = `spec.calicoNetwork.ipPools[${i}]`;
    const pool = c.map(p, pools[i]);
    if (!pool) continue;
    c.cidr(`${p}.cidr`, pool.cidr);
    c.int(`${p}.blockSize`, 0, 128, pool.blockSize);
  }
}

function checkObject(c: Check): void {
  checkMetadata(c);
  if (c.problem) return;
  const o = c.o;
  const kind = o.kind as string;
  const group = groupOf(o.apiVersion);
  switch (kind) {
    case 'Service':
      if (group === '') checkService(c);
      break;
    case 'Node':
      if (group === '') checkNode(c);
      break;
    case 'Pod':
      if (group === '') checkPod(c);
      break;
    case 'ConfigMap':
      if (group === '') c.strMap('data');
      break;
    case 'ServiceCIDR':
      if (group === 'networking.k8s.io') checkServiceCIDR(c);
      break;
    case 'IPPool':
    case 'IPAMBlock':
    case 'BlockAffinity':
      if (CALICO_GROUPS.has(group)) checkCalico(c, kind);
      break;
    case 'Installation':
      if (group === 'operator.tigera.io') checkInstallation(c);
      break;
  }
  if (!c.problem && (kind === 'Service' || kind === 'Pod') && group === '') {
    const md = o.metadata as Record<string, unknown>;
    if (typeof md.namespace !== 'string' || md.namespace === '') c.fail('metadata.namespace', `is missing (a ${kind} is namespaced)`);
  }
}

// ---------------------------------------------------------------------------------------------------
// distribution configs

function isConfigKind(o: Record<string, unknown>): boolean {
  const g = groupOf(o.apiVersion);
  return platformConfigFiles(g)?.validated.includes(String(o.kind)) === true
    || (g === 'kubeadm.k8s.io' && o.kind === 'ClusterConfiguration')
    || o.kind === 'KubeletConfiguration'
    || o.kind === 'KubeProxyConfiguration';
}

function checkExtraArgs(c: Check, path: string, args: Json, flags: string[]): void {
  if (absent(args)) return;
  if (Array.isArray(args)) {
    for (let i = 0; i < args.length; i++) {
      const a = c.map(`${path}[${i}]`, args[i]);
      if (!a) continue;
      const name = c.str(`${path}[${i}].name`, a.name);
      if (name !== undefined && flags.includes(name)) c.cidrCsv(`${path}[${i}].value`, a.value);
    }
  } else if (isMap(args)) {
    for (const f of flags) if (!absent(args[f])) c.cidrCsv(key(path, f), args[f]);
  } else {
    c.fail(path, `is ${typeName(args)} (${show(args)}), not a mapping or a list`);
  }
}

function checkConfig(c: Check): void {
  const o = c.o;
  const g = groupOf(o.apiVersion);
  if (o.kind === 'Cluster') {
    const spec = c.map('spec');
    if (!spec) return;
    c.str('spec.kubernetesVersion', spec.kubernetesVersion);
    const net = c.map('spec.networking', spec.networking);
    for (const f of ['nonMasqueradeCIDR', 'podCIDR', 'serviceClusterIPRange', 'networkCIDR']) {
      c.cidr(`spec.${f}`, spec[f], { allowEmpty: true });
      if (net) c.cidr(`spec.networking.${f}`, net[f], { allowEmpty: true });
    }
    for (const [base, v] of [['spec', spec.additionalNetworkCIDRs], ['spec.networking', net?.additionalNetworkCIDRs]] as const) {
      const l = c.strList(`${base}.additionalNetworkCIDRs`, v);
      for (let i = 0; l && i < l.length; i++) c.cidr(`${base}.additionalNetworkCIDRs[${i}]`, l[i]);
    }
    const kcm = c.map('spec.kubeControllerManager', spec.kubeControllerManager);
    if (kcm) {
      c.cidr('spec.kubeControllerManager.clusterCIDR', kcm.clusterCIDR, { allowEmpty: true });
      c.bool('spec.kubeControllerManager.allocateNodeCIDRs', kcm.allocateNodeCIDRs);
    }
    const api = c.map('spec.kubeAPIServer', spec.kubeAPIServer);
    if (api) c.cidr('spec.kubeAPIServer.serviceClusterIPRange', api.serviceClusterIPRange, { allowEmpty: true });
    const dns = c.map('spec.kubeDNS', spec.kubeDNS);
    if (dns) c.ip('spec.kubeDNS.serverIP', dns.serverIP, { allowEmpty: true });
    const kubelet = c.map('spec.kubelet', spec.kubelet);
    if (kubelet) c.ip('spec.kubelet.clusterDNS', kubelet.clusterDNS, { allowEmpty: true });
  } else if (o.kind === 'ClusterConfiguration' && g === 'kubeadm.k8s.io') {
    c.str('kubernetesVersion');
    c.str('certificatesDir');
    const net = c.map('networking');
    if (net) {
      c.cidrCsv('networking.podSubnet', net.podSubnet);
      c.cidrCsv('networking.serviceSubnet', net.serviceSubnet);
      c.str('networking.dnsDomain', net.dnsDomain);
    }
    const api = c.map('apiServer');
    if (api) checkExtraArgs(c, 'apiServer.extraArgs', api.extraArgs, ['service-cluster-ip-range']);
    const kcm = c.map('controllerManager');
    if (kcm) checkExtraArgs(c, 'controllerManager.extraArgs', kcm.extraArgs, ['cluster-cidr', 'service-cluster-ip-range']);
  } else if (o.kind === 'InstanceGroup') {
    // kOps InstanceGroup: its sizes are the most nodes the cluster may reach (node-limits.ts)
    const spec = c.map('spec');
    if (spec) {
      c.int('spec.maxSize', 0, 1_000_000, spec.maxSize);
      c.int('spec.minSize', 0, 1_000_000, spec.minSize);
      c.str('spec.role', spec.role);
    }
  } else if (o.kind === 'KubeletConfiguration') {
    const dns = c.strList('clusterDNS');
    for (let i = 0; dns && i < dns.length; i++) c.ip(`clusterDNS[${i}]`, dns[i]);
  } else if (o.kind === 'KubeProxyConfiguration') {
    c.cidrCsv('clusterCIDR');
    c.str('mode');
  }
}

function configError(inv: RawInventory, o: unknown, index: number, what: string, list: 'object' | 'config'): InputError {
  const where = whereFrom(inv, o, index, list);
  const obj = isMap(o) ? `${typeof o.kind === 'string' ? o.kind : 'config'}${isMap(o.metadata) && typeof o.metadata.name === 'string' ? ` ${show(o.metadata.name).slice(1, -1)}` : ''}` : 'a config';
  return new InputError(`${where}: ${obj}: ${what}`);
}

// ---------------------------------------------------------------------------------------------------
// duplicates

/**
 * Values compared, at most, between two copies of one object before they are called different. A real object
 * is at most 1.5 MiB in etcd, far fewer values than this.
 */
export const MAX_COMPARE = 500_000;

/**
 * The first path (depth first, in document order, metadata.resourceVersion first) where a and b differ, with
 * both values; undefined when they are equal. Iterative (any depth), each pair of shared subtrees compared once
 * (YAML aliases), and bounded: past MAX_COMPARE nodes the copies count as different.
 */
export function firstDifference(a: Json, b: Json): { path: string; a: Json; b: Json } | undefined {
  if (isMap(a) && isMap(b) && isMap(a.metadata) && isMap(b.metadata) && a.metadata.resourceVersion !== b.metadata.resourceVersion) {
    return { path: 'metadata.resourceVersion', a: a.metadata.resourceVersion, b: b.metadata.resourceVersion };
  }
  // Paths are built only for the answer: each visited node keeps its parent and key.
  const parents: number[] = [];
  const keys: Array<string | number> = [];
  const pathOf = (node: number, last?: string | number): string => {
    const parts: Array<string | number> = last === undefined ? [] : [last];
    for (let n = node; n > 0; n = parents[n]!) parts.push(keys[n]!);
    parts.reverse();
    const shown = parts.length > 16 ? [...parts.slice(0, 8), '…', ...parts.slice(-6)] : parts;
    return shown.reduce<string>((p, k) => (k === '…' ? `${p}…` : key(p, k)), '') || '(the whole object)';
  };
  parents.push(0);
  keys.push('');
  const stack: Array<[Json, Json, number]> = [[a, b, 0]];
  const queued = new WeakMap<object, WeakSet<object>>();
  let visited = 0;
  while (stack.length > 0) {
    const [x, y, node] = stack.pop()!;
    if (Object.is(x, y)) continue;
    if (++visited > MAX_COMPARE) return { path: pathOf(node), a: '(too large to compare)', b: '(too large to compare)' };
    if (typeof x !== typeof y || x === null || y === null || typeof x !== 'object' || Array.isArray(x) !== Array.isArray(y)) return { path: pathOf(node), a: x, b: y };
    const yo = y as object;
    let seen = queued.get(x);
    if (seen?.has(yo)) continue;
    if (!seen) queued.set(x, (seen = new WeakSet()));
    seen.add(yo);
    const children: Array<[Json, Json, string | number]> = [];
    if (Array.isArray(x)) {
      const yl = y as unknown[];
      if (x.length !== yl.length) {
        const i = Math.min(x.length, yl.length);
        return { path: pathOf(node, i), a: x[i], b: yl[i] };
      }
      for (let i = 0; i < x.length; i++) children.push([x[i], yl[i], i]);
    } else {
      const xm = x as Record<string, unknown>;
      const ym = y as Record<string, unknown>;
      const ks = [...new Set([...Object.keys(xm), ...Object.keys(ym)])];
      const ordered = [...ks.filter((k) => k === 'metadata'), ...ks.filter((k) => k !== 'metadata').sort()];
      for (const k of ordered) {
        if (Object.prototype.hasOwnProperty.call(xm, k) !== Object.prototype.hasOwnProperty.call(ym, k)) return { path: pathOf(node, k), a: xm[k], b: ym[k] };
        children.push([xm[k], ym[k], k]);
      }
    }
    visited += children.length;
    if (visited > MAX_COMPARE) return { path: pathOf(node), a: '(too large to compare)', b: '(too large to compare)' };
    for (let i = children.length - 1; i >= 0; i--) {
      const [cx, cy, k] = children[i]!;
      if (Object.is(cx, cy)) continue;
      parents.push(node);
      keys.push(k);
      stack.push([cx, cy, parents.length - 1]);
    }
  }
  return undefined;
}

/** Objects by identity (kind, group, namespace, name), nested so that no key is built per object. */
type Identities = Map<string, Map<string, Map<string, Map<string, number>>>>;

/** The index of the first object of o's identity seen so far; undefined (and `index` recorded) for the first. */
function firstOfIdentity(seen: Identities, o: Record<string, unknown>, index: number): number | undefined {
  const md = o.metadata as Record<string, unknown>;
  const kind = String(o.kind);
  const group = groupOf(o.apiVersion);
  const ns = typeof md.namespace === 'string' ? md.namespace : '';
  const name = String(md.name);
  let byGroup = seen.get(kind);
  if (byGroup === undefined) seen.set(kind, (byGroup = new Map()));
  let byNs = byGroup.get(group);
  if (byNs === undefined) byGroup.set(group, (byNs = new Map()));
  let byName = byNs.get(ns);
  if (byName === undefined) byNs.set(ns, (byName = new Map()));
  const first = byName.get(name);
  if (first === undefined) byName.set(name, index);
  return first;
}

/**
 * Checks the inventory and returns it with exact duplicates dropped (the same RawInventory when there are
 * none). Throws InputError on the first object that cannot be real or on conflicting duplicates.
 */
export function validateInventory(inv: RawInventory): RawInventory {
  if (!inv || typeof inv !== 'object' || !Array.isArray(inv.objects) || !Array.isArray(inv.configs) || !Array.isArray(inv.gaps)) {
    throw new InputError('the inventory is not a list of objects');
  }
  const seen: Identities = new Map();
  let kept: KubeObject[] | undefined;
  for (let i = 0; i < inv.objects.length; i++) {
    const o = inv.objects[i] as unknown;
    if (!isMap(o)) throw objectError(inv, o, i, `is ${typeName(o)} (${show(o)}), not a mapping`);
    const c = new Check(o);
    if (isConfigKind(o)) {
      // A distribution config among the objects: buildSnapshot treats it as a config.
      checkConfig(c);
      if (c.problem) throw configError(inv, o, i, c.problem, 'object');
      kept?.push(o as KubeObject);
      continue;
    }
    checkObject(c);
    if (c.problem) throw objectError(inv, o, i, c.problem);
    const first = firstOfIdentity(seen, o, i);
    if (first === undefined) {
      kept?.push(o as KubeObject);
      continue;
    }
    const prev = { o: inv.objects[first] as unknown as Record<string, unknown>, index: first };
    // The same object served in two versions of its API (ServiceCIDR v1 and v1beta1): buildSnapshot picks one.
    if (prev.o.apiVersion !== o.apiVersion) {
      kept?.push(o as KubeObject);
      continue;
    }
    const d = firstDifference(prev.o, o);
    if (d === undefined) {
      kept ??= inv.objects.slice(0, i);
      continue;
    }
    const a = whereFrom(inv, prev.o, prev.index);
    const b = whereFrom(inv, o, i);
    const both = a === b ? (a.startsWith('object ') ? `objects ${prev.index + 1} and ${i + 1} of ${a.replace(/^object \d+ of /, '')}` : `twice in ${a}`) : `in ${a} and in ${b}`;
    // k3s/RKE2 node-args and node-env annotations can hold a join token or a datastore password: never shown.
    const shown = /\.io\/node-(args|env)"\]/.test(d.path) ? '(value not shown: it may hold secrets)' : `${show(d.a)} vs ${show(d.b)}`;
    throw new InputError(`${describeObject(o)} appears ${both} with different content (${d.path}: ${shown}); give one copy of each object, e.g. from one dump`);
  }
  let configs: KubeObject[] | undefined;
  for (let i = 0; i < inv.configs.length; i++) {
    const o = inv.configs[i] as unknown;
    if (!isMap(o)) throw configError(inv, o, i, `is ${typeName(o)} (${show(o)}), not a mapping`, 'config');
    const c = new Check(o);
    if (typeof o.kind !== 'string' || o.kind === '') c.fail('kind', absent(o.kind) ? 'is missing' : `is ${typeName(o.kind)} (${show(o.kind)}), not a kind name`);
    else if (typeof o.apiVersion !== 'string' || o.apiVersion === '') c.fail('apiVersion', absent(o.apiVersion) ? 'is missing' : `is ${typeName(o.apiVersion)} (${show(o.apiVersion)}), not an API version`);
    else checkConfig(c);
    if (c.problem) throw configError(inv, o, i, c.problem, 'config');
    // The same config twice (a directory and a file in it): once. Different ones are buildSnapshot's to weigh.
    const earlier = (configs ?? inv.configs.slice(0, i)) as unknown[];
    if (earlier.some((p) => firstDifference(p, o) === undefined)) configs ??= inv.configs.slice(0, i);
    else configs?.push(o as KubeObject);
  }
  if (!kept && !configs) return inv;
  return { ...inv, objects: kept ?? inv.objects, configs: configs ?? inv.configs };
}
