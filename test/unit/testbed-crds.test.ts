// The Calico CRDs the testbed serves (test/testbed/crds/calico.ts) are this project's own definitions. Here,
// without an apiserver: they parse, they are structural (what apiextensions-apiserver demands), and every
// Calico object the tool or the testbed writes, and every one in the bundled examples, uses only declared
// fields with the declared types, enums and CIDR formats. The CEL rules themselves run on the real
// apiserver (test/integration/*calico* and the testbed start, which applies these definitions).
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject } from '../../src/cluster/types.ts';
import { BackupStore } from '../../src/engine/backup.ts';
import { Journal } from '../../src/engine/journal.ts';
import { PodExecutor } from '../../src/engine/pod-steps.ts';
import type { StepContext } from '../../src/engine/runner.ts';
import { BLOCKAFFINITIES, IPAMBLOCKS, IPAMHANDLES, IPPOOLS } from '../../src/kube/calico.ts';
import { KubeApiError, type KubeClient, type Method, type RequestOptions } from '../../src/kube/client.ts';
import { CALICO_REFERENCE_RESOURCES } from '../../src/kube/discover.ts';
import { parseCidr, parseIP } from '../../src/net/index.ts';
import { buildMigrationPlan } from '../../src/plan/plan.ts';
import {
  allocateFromBlock, blockAffinityObject, defaultPoolObject, ipamBlockObject, ipamHandleObject, newBlockSpec, releaseFromBlock,
} from '../testbed/calico-ipam.ts';
import { CASES } from '../testbed/crds/cases.ts';
import { CALICO_GROUP, calicoCRDs, calicoCRDsYaml, type CustomResourceDefinition, type Schema } from '../testbed/crds/calico.ts';
import { fixtureObjects } from '../testbed/fixture.ts';

install();

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');
const CRDS = calicoCRDs();

// ---- structural schemas (the rules of k8s.io/apiextensions-apiserver's structural schema check) ----------

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
/** Keywords a CRD schema may hold (v1 JSONSchemaProps); $ref, uniqueItems, additionalItems etc. are refused. */
const ALLOWED = new Set([
  'type', 'description', 'properties', 'additionalProperties', 'required', 'items', 'enum', 'format', 'pattern',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems',
  'minProperties', 'maxProperties', 'multipleOf', 'nullable', 'default', 'anyOf', 'allOf', 'oneOf', 'not', 'title', 'example',
  'x-kubernetes-int-or-string', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type', 'x-kubernetes-embedded-resource', 'x-kubernetes-validations',
]);
const FORMATS = new Set(['', 'int32', 'int64', 'float', 'double', 'byte', 'date', 'date-time', 'password', 'cidr', 'ipv4', 'ipv6', 'uri', 'hostname', 'email', 'uuid', 'mac', 'duration']);

/** What makes `s` (at `path`) non-structural or not accepted by the apiserver; [] when fine. */
function structuralProblems(s: Schema, path: string, inJunctor = false): string[] {
  const out: string[] = [];
  for (const k of Object.keys(s)) if (!ALLOWED.has(k)) out.push(`${path}: keyword ${k} is not allowed in a CRD schema`);
  if (inJunctor) {
    // inside anyOf/allOf/oneOf/not: value validations only
    for (const k of ['type', 'default', 'nullable', 'additionalProperties', 'description', 'x-kubernetes-preserve-unknown-fields']) {
      if (k in s && !(k === 'type' && path.endsWith('anyOf'))) out.push(`${path}: ${k} inside a junctor`);
    }
  } else {
    const intOrString = s['x-kubernetes-int-or-string'] === true;
    const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
    if (intOrString) {
      const any = JSON.stringify(s.anyOf ?? []);
      if (s.type !== undefined || (s.anyOf && any !== JSON.stringify([{ type: 'integer' }, { type: 'string' }]))) out.push(`${path}: int-or-string must have no type and anyOf [integer, string] at most`);
    } else if (!s.type || !TYPES.has(s.type)) {
      if (!preserve) out.push(`${path}: no type`);
    }
    if (s.type === 'array' && !s.items) out.push(`${path}: array without items`);
    if (s.type !== 'array' && s.items) out.push(`${path}: items on a ${s.type}`);
    if (s.type !== 'object' && (s.properties || s.additionalProperties)) out.push(`${path}: properties on a ${s.type}`);
    if (s.properties && s.additionalProperties) out.push(`${path}: both properties and additionalProperties`);
    if (s.type === 'object' && !s.properties && !s.additionalProperties && !preserve && path !== '.metadata') out.push(`${path}: an object with no fields declared and no x-kubernetes-preserve-unknown-fields (everything would be pruned)`);
    for (const r of s.required ?? []) if (!s.properties || !(r in s.properties)) out.push(`${path}: required ${r} is not a property`);
    if (s.format !== undefined && !FORMATS.has(s.format)) out.push(`${path}: unknown format ${s.format}`);
    if (s.pattern !== undefined) {
      try { new RegExp(s.pattern); } catch { out.push(`${path}: pattern does not compile`); }
    }
    for (const v of s.enum ?? []) {
      if (!valueHasType(v, s)) out.push(`${path}: enum value ${JSON.stringify(v)} is not a ${s.type}`);
    }
    if (s.default !== undefined && !valueHasType(s.default, s)) out.push(`${path}: default is not a ${s.type}`);
    if (s['x-kubernetes-list-type'] && s.type !== 'array') out.push(`${path}: x-kubernetes-list-type on a ${s.type}`);
    if (s['x-kubernetes-list-type'] === 'set' && s.items && s.items.type !== 'string' && s.items.type !== 'integer') out.push(`${path}: a set of non-scalars`);
    for (const v of s['x-kubernetes-validations'] ?? []) {
      if (typeof v.rule !== 'string' || v.rule.trim() === '') out.push(`${path}: empty CEL rule`);
      if (typeof v.message !== 'string' || v.message === '') out.push(`${path}: CEL rule without a message`);
      if (/\boldSelf\b/.test(v.rule) && path.includes('[*]')) out.push(`${path}: a transition rule (oldSelf) inside a list`);
    }
  }
  for (const [k, p] of Object.entries(s.properties ?? {})) out.push(...structuralProblems(p, `${path}.${k}`));
  if (s.additionalProperties) out.push(...structuralProblems(s.additionalProperties, `${path}.*`));
  if (s.items) out.push(...structuralProblems(s.items, `${path}[*]`));
  for (const a of s.anyOf ?? []) out.push(...structuralProblems(a, `${path}.anyOf`, true));
  return out;
}

function valueHasType(v: unknown, s: Schema): boolean {
  if (v === null) return s.nullable === true;
  switch (s.type) {
    case 'string': return typeof v === 'string';
    case 'boolean': return typeof v === 'boolean';
    case 'integer': return Number.isInteger(v);
    case 'number': return typeof v === 'number';
    case 'array': return Array.isArray(v);
    case 'object': return typeof v === 'object' && !Array.isArray(v);
    default: return s['x-kubernetes-int-or-string'] ? Number.isInteger(v) || typeof v === 'string' : true;
  }
}

/**
 * Where a CEL rule's cost is unbounded: the apiserver estimates a rule's cost from the maxItems of every list
 * around it and the maxLength of the strings it reads, and refuses a definition over budget (with no maxItems
 * it assumes as many items as fit in a 3 MB request). Found by kube-apiserver v1.35.4 refusing five of these.
 */
function unboundedRules(s: Schema, path: string, listsBounded = true): string[] {
  const out: string[] = [];
  if (s['x-kubernetes-validations']?.length) {
    if (!listsBounded) out.push(`${path}: a CEL rule inside a list without maxItems`);
    if (s.type === 'string' && s.maxLength === undefined && !s.enum) out.push(`${path}: a CEL rule on a string without maxLength`);
  }
  for (const [k, p] of Object.entries(s.properties ?? {})) out.push(...unboundedRules(p, `${path}.${k}`, listsBounded));
  if (s.additionalProperties) out.push(...unboundedRules(s.additionalProperties, `${path}.*`, false));
  if (s.items) out.push(...unboundedRules(s.items, `${path}[*]`, listsBounded && s.maxItems !== undefined));
  return out;
}

// ---- objects against the schemas ---------------------------------------------------------------------

/** The CEL rules this file can judge without an apiserver (the rest run on the real one). */
const RULES: Record<string, (v: any) => boolean> = {
  'isCIDR(self)': (v) => isCidr(v),
  'isCIDR(self) || isIP(self)': (v) => isCidr(v) || isIp(v),
  '!isCIDR(self) || cidr(self) == cidr(self).masked()': (v) => !isCidr(v) || ok(() => parseCidr(v)),
};
const ok = (f: () => unknown): boolean => { try { f(); return true; } catch { return false; } };
const isCidr = (v: string): boolean => v.includes('/') && ok(() => parseCidr(v, { normalize: true }));
const isIp = (v: string): boolean => !v.includes('/') && ok(() => parseIP(v));

/**
 * Why `v` (at `path`) does not fit `s`: a field the schema does not declare (the apiserver would prune it, or
 * refuse it with fieldValidation=Strict), a wrong type, an enum, bounds, pattern, or a CIDR rule above.
 * `partial`: a merge patch, so required fields may be absent.
 */
function fit(v: unknown, s: Schema, path: string, partial = false): string[] {
  if (v === null) return s.nullable ? [] : [`${path}: null`];
  if (s['x-kubernetes-int-or-string']) return Number.isInteger(v) || typeof v === 'string' ? [] : [`${path}: not an int or a string`];
  if (!valueHasType(v, s)) return [`${path}: ${JSON.stringify(v)} is not a ${s.type}`];
  const out: string[] = [];
  if (s.enum && !s.enum.includes(v)) out.push(`${path}: ${JSON.stringify(v)} is not one of ${s.enum.join(', ')}`);
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) out.push(`${path}: ${v} < ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) out.push(`${path}: ${v} > ${s.maximum}`);
  }
  if (typeof v === 'string') {
    if (s.maxLength !== undefined && v.length > s.maxLength) out.push(`${path}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern).test(v)) out.push(`${path}: ${JSON.stringify(v)} does not match ${s.pattern}`);
    if (s.format === 'date-time' && Number.isNaN(Date.parse(v))) out.push(`${path}: not a date-time`);
  }
  for (const r of s['x-kubernetes-validations'] ?? []) {
    const judge = RULES[r.rule];
    if (judge && !judge(v)) out.push(`${path}: ${JSON.stringify(v)}: ${r.message}`);
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) out.push(`${path}: more than ${s.maxItems} items`);
    if (s.minItems !== undefined && v.length < s.minItems) out.push(`${path}: fewer than ${s.minItems} items`);
    if (s['x-kubernetes-list-type'] === 'set' && new Set(v).size !== v.length) out.push(`${path}: duplicate items in a set`);
    v.forEach((x, i) => out.push(...fit(x, s.items!, `${path}[${i}]`, partial)));
  } else if (s.type === 'object') {
    const o = v as Record<string, unknown>;
    if (!partial) for (const r of s.required ?? []) if (!(r in o)) out.push(`${path}.${r}: required`);
    if (s['x-kubernetes-preserve-unknown-fields'] && !s.properties) return out;
    for (const [k, x] of Object.entries(o)) {
      const sub = s.properties?.[k] ?? s.additionalProperties;
      if (!sub) {
        if (!s['x-kubernetes-preserve-unknown-fields'] && path !== '') out.push(`${path}.${k}: not declared`);
        continue;
      }
      if (path === '' && k === 'metadata') continue;
      out.push(...fit(x, sub, `${path}.${k}`, partial));
    }
  }
  return out;
}

/** An object as any of our modules types it (src/ and test/testbed/ each have their own KubeObject). */
interface Obj { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string }; spec?: any }

function crdFor(o: Obj): CustomResourceDefinition {
  const [group, version] = String(o.apiVersion).split('/');
  const c = CRDS.find((x) => x.spec.group === group && x.spec.names.kind === o.kind && x.spec.versions.some((v) => v.name === version));
  assert.ok(c, `no definition serves ${o.apiVersion} ${o.kind}`);
  return c;
}

/** Problems of a whole object against its kind's schema. */
function problems(o: Obj, partial = false): string[] {
  const c = crdFor(o);
  const { status, ...rest } = o as Obj & { status?: unknown };
  void status;
  return fit(rest, c.spec.versions[0]!.schema.openAPIV3Schema, '', partial).map((p) => `${o.kind}/${o.metadata?.name}: ${p}`);
}

// ---- a fake apiserver for the engine's IPPool writes ---------------------------------------------------

interface Write { method: string; path: string; body: any; contentType?: string }

/** Holds objects by path; records every write. Enough for the create-ippool and disable-ippools steps. */
function fakeCluster(objects: KubeObject[]): KubeClient & { writes: Write[] } {
  const store = new Map<string, KubeObject>();
  const pathOf = (o: KubeObject) => `/apis/${CALICO_GROUP}/v1/ippools/${o.metadata!.name}`;
  for (const o of objects) if (o.kind === 'IPPool') store.set(pathOf(o), { ...o, metadata: { ...o.metadata, resourceVersion: '1' } });
  const writes: Write[] = [];
  let rv = 1;
  return {
    server: 'https://127.0.0.1:1', context: 'fake', writes,
    get requestCount() { return 0; }, async watch(): Promise<void> { throw new Error('this fake client has no watch'); },
    async request<T>(method: Method, path: string, opts: RequestOptions = {}): Promise<T> {
      const p = path.split('?')[0]!;
      if (method === 'GET') {
        const o = store.get(p);
        if (!o) throw new KubeApiError(method, p, 404, 'NotFound', `${p} not found`);
        return structuredClone(o) as T;
      }
      writes.push({ method, path: p, body: structuredClone(opts.body), contentType: opts.contentType });
      if (method === 'POST') {
        const o = structuredClone(opts.body) as KubeObject;
        store.set(`${p}/${o.metadata!.name}`, { ...o, metadata: { ...o.metadata, resourceVersion: String(++rv) } });
        return o as T;
      }
      if (method === 'PATCH') {
        const cur = store.get(p)!;
        const body = opts.body as any;
        const next = { ...cur, spec: { ...cur.spec, ...body.spec }, metadata: { ...cur.metadata, resourceVersion: String(++rv) } };
        store.set(p, next);
        return next as T;
      }
      throw new Error(`unexpected ${method} ${p}`);
    },
    async *list(path: string) {
      for (const [p, o] of store) if (p.startsWith(`${path}/`)) yield structuredClone(o);
    },
  };
}

/** The kops-tailscale example with its IPPool's spec replaced by `spec`, planned to 10.200.0.0/16, and the
 *  writes of the create-ippool and disable-ippools steps run against a fake cluster holding the old pool. */
async function engineWrites(spec: Record<string, unknown>): Promise<Write[]> {
  const raw = await readInventoryFiles([join(EXAMPLES, 'kops-tailscale')]);
  const pool = raw.objects.find((o) => o.kind === 'IPPool')!;
  pool.spec = spec;
  const plan = buildMigrationPlan(buildSnapshot(raw), { pod: { target: '10.200.0.0/16' } });
  const client = fakeCluster(raw.objects);
  const dir = mkdtempSync(join(tmpdir(), 'kr-crds-'));
  const ctx: StepContext = { client, backups: new BackupStore(join(dir, 'b'), 'r'), journal: new Journal(join(dir, 'j'), 'r'), dryRun: 'none', log: () => {} };
  const exec = new PodExecutor(plan, { timeoutMs: 1_000, token: 'r' });
  for (const kind of ['create-ippool', 'disable-ippools']) {
    const p = plan.steps.find((s) => s.kind === kind);
    assert.ok(p, `the plan has a ${kind} step`);
    await exec.step(p).apply!(ctx);
  }
  return client.writes;
}

/** Each write checked against the schema: a POST as a whole object, a merge patch as a partial one. */
function writeProblems(writes: Write[]): string[] {
  return writes.flatMap((w) => {
    if (w.method === 'POST') return problems(w.body);
    const { metadata, ...rest } = w.body;
    void metadata;
    return problems({ apiVersion: `${CALICO_GROUP}/v1`, kind: 'IPPool', metadata: { name: w.path.split('/').pop() }, ...rest }, true);
  });
}

// ---- the tests ---------------------------------------------------------------------------------------

describe('the Calico CRDs the testbed serves are our own definitions', () => {
  it('the YAML the testbed applies parses back to the same definitions, one per kind, well named', () => {
    const docs = loadAll(calicoCRDsYaml()) as CustomResourceDefinition[];
    assert.deepEqual(docs, CRDS);
    for (const c of CRDS) {
      assert.equal(c.apiVersion, 'apiextensions.k8s.io/v1');
      assert.equal(c.kind, 'CustomResourceDefinition');
      assert.equal(c.metadata.name, `${c.spec.names.plural}.${c.spec.group}`);
      assert.equal(c.spec.group, CALICO_GROUP);
      assert.equal(c.spec.names.listKind, `${c.spec.names.kind}List`);
      assert.equal(c.spec.names.singular, c.spec.names.kind.toLowerCase());
      assert.deepEqual(c.spec.versions.map((v) => [v.name, v.served, v.storage]), [['v1', true, true]]);
    }
    assert.equal(new Set(CRDS.map((c) => c.metadata.name)).size, CRDS.length);
  });

  it('serves every Calico resource kube-renumber and the testbed use', () => {
    const served = new Set(CRDS.map((c) => c.spec.names.plural));
    const used = [IPPOOLS, IPAMBLOCKS, BLOCKAFFINITIES, IPAMHANDLES].map((t) => t.plural);
    // the references scan; ipamconfigs, ipreservations, clusterinformations, tiers: a Calico cluster's IPAM and policy kinds
    for (const r of [...used, ...CALICO_REFERENCE_RESOURCES, 'ipamconfigs', 'ipreservations', 'clusterinformations', 'tiers']) {
      assert.ok(served.has(r), `${r} served`);
    }
    assert.equal(CRDS.find((c) => c.spec.names.plural === 'networkpolicies')!.spec.scope, 'Namespaced');
    assert.equal(CRDS.find((c) => c.spec.names.plural === 'networksets')!.spec.scope, 'Namespaced');
    for (const c of CRDS) if (!['networkpolicies', 'networksets'].includes(c.spec.names.plural)) assert.equal(c.spec.scope, 'Cluster', c.metadata.name);
  });

  it('every schema is structural: a type on every node, nothing the apiserver refuses', () => {
    for (const c of CRDS) {
      assert.deepEqual(structuralProblems(c.spec.versions[0]!.schema.openAPIV3Schema, ''), [], c.metadata.name);
    }
  });

  it('every CEL rule has bounded inputs (maxItems on the lists around it, maxLength on its string)', () => {
    for (const c of CRDS) assert.deepEqual(unboundedRules(c.spec.versions[0]!.schema.openAPIV3Schema, ''), [], c.metadata.name);
    assert.deepEqual(unboundedRules({ type: 'array', items: { type: 'string', maxLength: 9, 'x-kubernetes-validations': [{ rule: 'isIP(self)', message: 'm' }] } }, ''),
      ['[*]: a CEL rule inside a list without maxItems']);
  });

  it('the structural check and the object check can fail', () => {
    assert.match(structuralProblems({ type: 'object', properties: { a: { description: 'x' } as Schema } }, '').join(), /\.a: no type/);
    assert.match(structuralProblems({ type: 'array' }, '').join(), /array without items/);
    assert.match(structuralProblems({ type: 'object', properties: { a: { type: 'object' } } }, '').join(), /no fields declared/);
    const pool = defaultPoolObject('10.244.0.0/16');
    assert.deepEqual(problems(pool), []);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, ipipMode: 'always' } }), ['IPPool/default-ipv4-ippool: .spec.ipipMode: "always" is not one of Never, Always, CrossSubnet']);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, color: 'red' } }), ['IPPool/default-ipv4-ippool: .spec.color: not declared']);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, cidr: '10.244.0.1/16' } }), ['IPPool/default-ipv4-ippool: .spec.cidr: "10.244.0.1/16": must be a network address (host bits zero), e.g. 10.244.0.0/16']);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, cidr: '10.244.0.0' } }), ['IPPool/default-ipv4-ippool: .spec.cidr: "10.244.0.0": must be a CIDR such as 10.244.0.0/16 or fd00::/48']);
    assert.deepEqual(problems({ ...pool, spec: { blockSize: 26 } }), ['IPPool/default-ipv4-ippool: .spec.cidr: required']);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, blockSize: 129 } }), ['IPPool/default-ipv4-ippool: .spec.blockSize: 129 > 128']);
    assert.deepEqual(problems({ ...pool, spec: { ...pool.spec, allowedUses: ['Workload', 'Pods'] } }), ['IPPool/default-ipv4-ippool: .spec.allowedUses[1]: "Pods" is not one of Workload, Tunnel, LoadBalancer']);
  });

  it('the cases check-live.ts runs on the apiserver: accepted or refused here too (all but the CEL-only ones)', () => {
    const judged = CASES.filter((c) => !c.celOnly);
    assert.ok(judged.length >= 30 && judged.some((c) => !c.accept), 'most cases are judged here, refusals among them');
    for (const c of judged) {
      const p = problems(c.object);
      assert.equal(p.length === 0, c.accept, `${c.name}: ${p.join('; ') || 'no problem found'}`);
    }
  });

  it('the IPPool the engine creates, and its patches, use only declared fields with valid values', async () => {
    const cases: Array<Record<string, unknown>> = [
      // the kops example's own pool (ipipMode Always, natOutgoing)
      { cidr: '100.96.0.0/11', blockSize: 26, ipipMode: 'Always', natOutgoing: true, nodeSelector: 'all()' },
      // every setting the plan copies
      { cidr: '100.96.0.0/11', blockSize: 24, ipipMode: 'Never', vxlanMode: 'CrossSubnet', natOutgoing: false, nodeSelector: "kubernetes.io/os == 'linux'", allowedUses: ['Workload', 'Tunnel'] },
      // nothing but the CIDR
      { cidr: '100.96.0.0/11' },
      // the v1 (etcd-era) spelling, IP-in-IP on without a mode
      { cidr: '100.96.0.0/11', ipip: { enabled: true }, 'nat-outgoing': true },
    ];
    for (const spec of cases) {
      const writes = await engineWrites(spec);
      assert.deepEqual(writes.map((w) => `${w.method} ${w.path}`), [
        `POST /apis/${CALICO_GROUP}/v1/ippools`,
        `PATCH /apis/${CALICO_GROUP}/v1/ippools/default-ipv4-ippool`,
      ], JSON.stringify(spec));
      assert.deepEqual(writeProblems(writes), [], JSON.stringify(spec));
      assert.equal(writes[0]!.body.spec.cidr, '10.200.0.0/16');
      assert.deepEqual(writes[1]!.body.spec, { disabled: true });
    }
  });

  it('the IPPool the engine creates from a v1 pool with a lower-case IP-in-IP mode', async () => {
    for (const mode of ['always', 'cross-subnet']) {
      assert.deepEqual(writeProblems(await engineWrites({ cidr: '100.96.0.0/11', ipip: { enabled: true, mode } })), [], mode);
    }
  });

  it('what the testbed writes: the Calico IPAM stand-in\'s pools, blocks, affinities, handles, and the fixture\'s pool', () => {
    const block = ipamBlockObject('10.244.1.0/26', 'tb-node-1');
    assert.ok(allocateFromBlock(block.spec, 'k8s-pod-network.uid-1', { namespace: 'ns', node: 'tb-node-1', pod: 'p', timestamp: '2026-01-01 00:00:00 +0000 UTC' }));
    assert.ok(allocateFromBlock(block.spec, 'k8s-pod-network.uid-2', { namespace: 'ns', node: 'tb-node-1', pod: 'q', timestamp: '2026-01-01 00:00:00 +0000 UTC' }));
    releaseFromBlock(block.spec, 'k8s-pod-network.uid-1');
    const affinity = blockAffinityObject('tb-node-1', '10.244.1.0/26');
    const objs: Obj[] = [
      defaultPoolObject('10.244.0.0/16'),
      ipamBlockObject('10.244.0.0/26', 'tb-node-0'),
      { ...ipamBlockObject('10.244.2.0/28', 'tb-node-2'), spec: newBlockSpec('10.244.2.0/28', 'tb-node-2') },
      block,
      affinity,
      { ...affinity, spec: { ...affinity.spec, state: 'confirmed' } },
      ipamHandleObject('k8s-pod-network.uid-2', '10.244.1.0/26'),
      ...(fixtureObjects('10.96.0.0/16', '10.244.0.0/16').objs as Obj[]).filter((o) => String(o.apiVersion).startsWith(`${CALICO_GROUP}/`)),
    ];
    assert.ok(objs.some((o) => o.metadata?.name === 'default-ipv4-ippool' && o.spec?.allowedUses), 'the fixture\'s pool is among them');
    assert.deepEqual(objs.flatMap((o) => problems(o)), []);
  });

  it('every Calico object in the bundled examples fits (IPPool, IPAMBlock, BlockAffinity, ClusterInformation)', async () => {
    const dirs = readdirSync(EXAMPLES, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(EXAMPLES, d.name));
    assert.ok(dirs.length >= 3, 'the examples');
    const raw = await readInventoryFiles(dirs);
    const calico = raw.objects.filter((o) => String(o.apiVersion).startsWith(`${CALICO_GROUP}/`));
    assert.deepEqual([...new Set(calico.map((o) => o.kind))].sort(), ['BlockAffinity', 'ClusterInformation', 'IPAMBlock', 'IPPool']);
    assert.deepEqual(calico.flatMap((o) => problems(o)), []);
  });

  it('the policy and network-set objects the references scan reads fit', () => {
    const objs: Obj[] = [
      { apiVersion: `${CALICO_GROUP}/v1`, kind: 'GlobalNetworkPolicy', metadata: { name: 'allow-cluster' },
        spec: { selector: 'all()', types: ['Ingress'], order: 100, ingress: [{ action: 'Allow', protocol: 'TCP', source: { nets: ['10.244.0.0/16', '10.96.0.0/16'] }, destination: { ports: [443, '8000:8080'] } }] } },
      { apiVersion: `${CALICO_GROUP}/v1`, kind: 'NetworkPolicy', metadata: { name: 'no-dns-range', namespace: 'refs' },
        spec: { tier: 'default', selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { notNets: ['10.96.0.0/24', '10.96.0.10'] } }] } },
      { apiVersion: `${CALICO_GROUP}/v1`, kind: 'NetworkSet', metadata: { name: 'office', namespace: 'refs' }, spec: { nets: ['198.51.100.0/24', 'fd00::/64', '203.0.113.7'] } },
      { apiVersion: `${CALICO_GROUP}/v1`, kind: 'GlobalNetworkSet', metadata: { name: 'peers' }, spec: { nets: ['10.244.0.0/16'] } },
    ];
    assert.deepEqual(objs.flatMap((o) => problems(o)), []);
    assert.match(problems({ ...objs[3]!, spec: { nets: ['10.244.0.0/33'] } }).join(), /must be a CIDR or an IP address/);
    assert.match(problems({ ...objs[0]!, spec: { ingress: [{ action: 'Permit' }] } }).join(), /"Permit" is not one of Allow, Deny, Log, Pass/);
  });
});
