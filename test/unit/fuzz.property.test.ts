/**
 * Fuzzing the whole offline pipeline with random objects: real objects from the bundled examples, mutated
 * (fields dropped, types changed, null/lists/numbers/huge or unicode strings inserted, objects duplicated, as a
 * bad dump or a hand edit would), and arbitrary JSON. Whatever the input, the snapshot, inspect (conflicts,
 * capacity, readiness), suggest and the Service / Pod / combined plans must either succeed with output that
 * serialises, or fail with one of the errors the CLI maps to a documented exit code (UserError, NetError):
 * never a TypeError, RangeError or other crash that would end in exit 70.
 */
import { install } from '../../src/install.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { dump as yamlDump } from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import type { KubeObject, RawInventory, Snapshot } from '../../src/cluster/types.ts';
import { inspect } from '../../src/analyze/inspect.ts';
import { suggest } from '../../src/analyze/suggest.ts';
import type { AvoidRange } from '../../src/analyze/catalog.ts';
import { buildMigrationPlan, mappingCounts } from '../../src/plan/plan.ts';
import { refusals } from '../../src/plan/preflight.ts';
import { planFromYaml, planToJson, planToMarkdown, planToYaml, podSummaryRows } from '../../src/plan/render.ts';
import { UserError } from '../../src/errors.ts';
import { NetError } from '../../src/net/index.ts';

install();

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));
const RUNS = Number(process.env.KR_FUZZ_RUNS ?? 300);

/** A small, coherent cluster per example: every object but pods, nodes and IPAM blocks, and a few of those. */
async function loadExample(name: string): Promise<RawInventory> {
  const inv = await readInventoryFiles([join(EXAMPLES, name)]);
  const limits: Record<string, number> = { Pod: 12, Node: 6, IPAMBlock: 8, BlockAffinity: 8 };
  const count = new Map<string, number>();
  const objects = inv.objects.filter((o) => {
    const k = String(o.kind);
    const n = (count.get(k) ?? 0) + 1;
    count.set(k, n);
    return n <= (limits[k] ?? Infinity);
  });
  return { ...inv, objects };
}

const examples = await Promise.all(readdirSync(EXAMPLES, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => loadExample(d.name)));
const allObjects = examples.flatMap((e) => [...e.objects, ...e.configs]);

// ---------------------------------------------------------------- arbitraries

/** Values that break code expecting something else. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, true, false, 0, -1, 1.5, 2 ** 53, -0, Infinity, NaN, '', ' ', 'None', 'banana', '-', '/', '::', '0.0.0.0/0',
    '10.0.0.1', '10.0.0.0/8', '10.0.0.1/8', '300.1.1.1', '10.0.0.0/33', 'fd00::/8', 'fd00::1', 'fe80::1%eth0', '010.000.000.001', '1.2.3.4,5.6.7.8',
    '10.96.0.0/12,fd00:10:96::/108', 'ClusterIP', 'LoadBalancer', 'ExternalName', 'kube-system', 'host:n1', 'v1.35.4', '__proto__', 'constructor', 'toString',
    '::/0', '0.0.0.0/0', '255.255.255.255/32', '::1/128', '10.0.0.0/31', '100.64.0.0/10', '::ffff:10.0.0.1', 'fd00:10:96::a', 32, 128, 65535, 20, 116,
    '\u0000', '\n', 'é', '🙂', '\u202e', 'a'.repeat(5000), [], {}, [null], [1], ['x'], [[]], { a: 1 }, { '': null }),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 3 }),
);

type Path = Array<string | number>;

/** Every path to a value inside o (containers included), at most `limit`. */
function paths(o: unknown, limit = 400): Path[] {
  const out: Path[] = [];
  const walk = (v: unknown, p: Path): void => {
    if (out.length >= limit) return;
    if (p.length > 0) out.push(p);
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...p, i]));
    else if (v && typeof v === 'object') for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], [...p, k]);
  };
  walk(o, []);
  return out;
}

type Mutation = { op: 'drop' | 'set' | 'wrap' | 'addKey'; at: number; value: unknown; key: string };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('drop', 'set', 'set', 'wrap', 'addKey'),
  at: fc.nat(),
  value: nasty,
  key: fc.constantFrom('metadata', 'spec', 'status', 'name', 'namespace', 'cidr', 'clusterIP', 'clusterIPs', 'podCIDR', 'podCIDRs', 'items', 'data', 'labels', 'ownerReferences', 'blockSize', 'ports', 'containers', 'x'),
});

function mutate(base: unknown, muts: Mutation[]): unknown {
  const o = structuredClone(base);
  for (const m of muts) {
    const ps = paths(o);
    if (ps.length === 0) continue;
    const p = ps[m.at % ps.length]!;
    let parent = o as Record<string | number, unknown>;
    for (const k of p.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
    const last = p[p.length - 1]!;
    if (m.op === 'drop') {
      if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
      else delete parent[last];
    } else if (m.op === 'set') parent[last] = m.value;
    else if (m.op === 'wrap') parent[last] = [parent[last]];
    else {
      const target = parent[last];
      if (target && typeof target === 'object' && !Array.isArray(target)) (target as Record<string, unknown>)[m.key] = m.value;
      else parent[last] = { [m.key]: m.value };
    }
  }
  return o;
}

/** Usually nothing, sometimes some. */
function rarely<T>(arb: fc.Arbitrary<T[]>): fc.Arbitrary<T[]> {
  return fc.oneof({ weight: 4, arbitrary: fc.constant<T[]>([]) }, { weight: 1, arbitrary: arb });
}

/**
 * An inventory: one example's cluster, some of its objects mutated, copied or replaced, plus random objects.
 * Generated as a small recipe (so a counterexample prints short) and built inside the property.
 */
const recipe = fc.record({
  example: fc.nat({ max: examples.length - 1 }),
  edits: fc.array(fc.record({ index: fc.nat(), muts: fc.array(mutation, { minLength: 1, maxLength: 3 }), how: fc.constantFrom('replace', 'add', 'copy', 'copyMutated') }), { maxLength: 3 }),
  foreign: rarely(fc.array(fc.record({ base: fc.nat(), muts: fc.array(mutation, { maxLength: 2 }) }), { minLength: 1, maxLength: 2 })),
  random: rarely(fc.array(fc.oneof(
    fc.jsonValue({ maxDepth: 4 }),
    fc.record({ apiVersion: fc.constantFrom('v1', 'crd.projectcalico.org/v1', 'networking.k8s.io/v1', 'kops.k8s.io/v1alpha2', 'kubeadm.k8s.io/v1beta3'),
      kind: fc.constantFrom('Service', 'Node', 'Pod', 'ConfigMap', 'IPPool', 'IPAMBlock', 'BlockAffinity', 'ServiceCIDR', 'Cluster', 'ClusterConfiguration', 'NetworkPolicy', 'List'),
      metadata: fc.oneof(fc.record({ name: fc.string({ minLength: 1, maxLength: 8 }), namespace: fc.constantFrom('default', 'kube-system') }), nasty),
      spec: fc.oneof(fc.dictionary(fc.constantFrom('cidr', 'clusterIP', 'clusterIPs', 'podCIDR', 'podCIDRs', 'type', 'ports', 'blockSize', 'cidrs', 'networking', 'serviceClusterIPRange'), nasty), nasty),
      status: nasty }, { requiredKeys: ['apiVersion', 'kind'] }),
  ), { minLength: 1, maxLength: 2 })),
  configsFrom: fc.boolean(),
});

type Recipe = typeof recipe extends fc.Arbitrary<infer R> ? R : never;

function materialize({ example, edits, foreign, random, configsFrom }: Recipe): RawInventory {
  const ex = examples[example]!;
  const objects: unknown[] = structuredClone(ex.objects);
  const configs: unknown[] = structuredClone(ex.configs);
  for (const e of edits) {
    const pool = configsFrom && configs.length > 0 ? configs : objects;
    const i = e.index % pool.length;
    if (e.how === 'replace') pool[i] = mutate(pool[i], e.muts);
    else if (e.how === 'add') pool.push(mutate(pool[i], e.muts));
    else if (e.how === 'copy') pool.push(structuredClone(pool[i]));
    else pool.push(mutate(pool[i], e.muts));
  }
  for (const f of foreign) objects.push(mutate(allObjects[f.base % allObjects.length], f.muts));
  objects.push(...random);
  return { ...ex, objects: objects as KubeObject[], configs: configs as KubeObject[] };
}

const inventory = recipe;

const targetCidr = fc.oneof(
  fc.constantFrom('172.30.0.0/16', '172.31.0.0/16', '10.200.0.0/16', '192.168.128.0/17', '100.64.0.0/13', '10.0.0.0/8', 'fd00:99::/108', '172.30.0.0/16,fd00:99::/108', '0.0.0.0/0', '10.96.0.0/12'),
  fc.tuple(fc.nat({ max: 255 }), fc.nat({ max: 255 }), fc.integer({ min: 8, max: 30 })).map(([a, b, p]) => `10.${a}.${b}.0/${p}`),
);

const avoid: fc.Arbitrary<AvoidRange[]> = fc.array(fc.constantFrom('10.8.0.0/16', '172.16.0.0/12', '192.168.50.0/24').map((cidr) => ({ cidr, reason: 'test', from: 'flag' }) as AvoidRange), { maxLength: 2 });

// ---------------------------------------------------------------- properties

/** Only errors the CLI maps to a documented exit code other than 70. */
function expected(e: unknown): boolean {
  return e instanceof UserError || e instanceof NetError;
}

function rethrowUnexpected(e: unknown, what: string): void {
  if (!expected(e)) {
    const err = e instanceof Error ? e : new Error(String(e));
    err.message = `${what}: ${err.name}: ${err.message}`;
    throw err;
  }
}

/** Serialises (JSON and YAML) without throwing, and JSON round-trips. */
function serialisable(v: unknown, what: string): void {
  const json = JSON.stringify(v);
  assert.equal(typeof json, 'string', `${what}: not JSON-serialisable`);
  JSON.parse(json);
  yamlDump(v, { noRefs: true, skipInvalid: false });
}

function snapshotOf(inv: RawInventory): Snapshot | undefined {
  try {
    const s = buildSnapshot(inv);
    serialisable(s, 'snapshot');
    return s;
  } catch (e) {
    rethrowUnexpected(e, 'buildSnapshot');
    return undefined;
  }
}

function attempt(what: string, fn: () => unknown): void {
  let out: unknown;
  try {
    out = fn();
  } catch (e) {
    rethrowUnexpected(e, what);
    return;
  }
  serialisable(out, what);
}

function plans(snap: Snapshot, service: string | undefined, pod: string | undefined, avoidRanges: AvoidRange[]): void {
  attempt(`plan ${service ?? ''} ${pod ?? ''}`, () => {
    const plan = buildMigrationPlan(snap, {
      generator: 'kube-renumber fuzz',
      ...(service ? { service: { target: service, avoid: avoidRanges } } : {}),
      ...(pod ? { pod: { target: pod, avoid: avoidRanges, critical: [] } } : {}),
    });
    refusals(plan.preflight);
    mappingCounts(plan);
    if (plan.spec.podCIDR) podSummaryRows(plan.spec.podCIDR);
    planToJson(plan);
    planToMarkdown(plan);
    const yaml = planToYaml(plan);
    // What apply reads back must be what plan wrote.
    assert.deepEqual(JSON.parse(JSON.stringify(planFromYaml(yaml, 'plan.yaml'))), JSON.parse(planToJson(plan)), 'the plan reads back as written');
    return plan;
  });
}

const params = { numRuns: RUNS } as const;

describe('fuzz: random and mutated objects through snapshot, analyzers and planners', () => {
  it('the examples themselves build and plan (the fuzz starts from valid clusters)', () => {
    assert.ok(examples.length >= 3);
    for (const ex of examples) {
      const s = buildSnapshot(structuredClone(ex));
      assert.ok(s.services.length > 0 && s.nodes.length > 0, 'a real cluster');
      const plan = buildMigrationPlan(s, { service: { target: '172.30.0.0/16' } });
      assert.ok(plan.mapping.length > 0);
    }
  });

  it('buildSnapshot and inspect: success with serialisable output, or a documented error', () => {
    let built = 0;
    let refused = 0;
    fc.assert(fc.property(inventory, avoid, (inv, av) => {
      const s = snapshotOf(materialize(inv));
      if (!s) { refused++; return; }
      built++;
      attempt('inspect', () => inspect(s, { avoid: av }));
    }), params);
    // Both outcomes are exercised: the mutations are neither all harmless nor all fatal.
    if (process.env.KR_FUZZ_STATS) console.log(`built ${built}, refused ${refused}`);
    assert.ok(built > RUNS / 20 && refused > RUNS / 20, `built ${built}, refused ${refused}`);
  });

  it('suggest for pods and services, with random counts and masks', () => {
    fc.assert(fc.property(inventory, avoid, fc.option(fc.integer({ min: 1, max: 100_000 })), fc.option(fc.integer({ min: 1, max: 128 })), fc.constantFrom(undefined, 4, 6) as fc.Arbitrary<4 | 6 | undefined>,
      (inv, av, n, mask, family) => {
        const s = snapshotOf(materialize(inv));
        if (!s) return;
        attempt('suggest pods', () => suggest(s, { for: 'pods', avoid: av, ...(n ? { nodes: n } : {}), ...(mask ? { nodeMask: mask } : {}), ...(family ? { family } : {}) }));
        attempt('suggest services', () => suggest(s, { for: 'services', avoid: av, ...(n ? { services: n } : {}), ...(family ? { family } : {}) }));
      }), params);
  });

  it('Service, Pod and combined plans', () => {
    fc.assert(fc.property(inventory, targetCidr, targetCidr, avoid, fc.constantFrom('service', 'pod', 'both'), (inv, svcTarget, podTarget, av, which) => {
      const s = snapshotOf(materialize(inv));
      if (!s) return;
      plans(s, which !== 'pod' ? svcTarget : undefined, which !== 'service' ? podTarget : undefined, av);
    }), { ...params, numRuns: Math.max(50, Math.floor(RUNS / 2)) });
  });

  it('arbitrary JSON as the whole inventory or as its objects', () => {
    fc.assert(fc.property(fc.array(fc.jsonValue({ maxDepth: 5 }), { maxLength: 5 }), fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }), (objects, configs) => {
      const s = snapshotOf({ source: { kind: 'file', files: ['x.yaml'] }, objects: objects as KubeObject[], configs: configs as KubeObject[], gaps: [] });
      if (s) attempt('inspect', () => inspect(s));
    }), params);
  });
});
