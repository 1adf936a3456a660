/**
 * The seam for step kinds and pod paths: every table is derived from the registries (STEP_KINDS,
 * GATE_CONDITION_INFO, src/pod-paths/registry.ts), so a kind, condition or path added to one of them without its
 * executor, planner, --ipam value or documentation fails here (and, for the typed tables, in the compiler).
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { PlanExecutor } from '../../src/engine/plan-executor.ts';
import { podPathEngine } from '../../src/engine/pod-paths/registry.ts';
import { PodExecutor } from '../../src/engine/pod-steps.ts';
import { ServiceExecutor } from '../../src/engine/service-steps.ts';
import { ExtensionExecutor } from '../../src/engine/service/extension.ts';
import { PodExtensionExecutor } from '../../src/engine/pod-extension.ts';
import type { PodPathId } from '../../src/ipam/types.ts';
import { buildMigrationPlan, type MigrationPlan } from '../../src/plan/plan.ts';
import { POD_PATH_NAMES, podPath } from '../../src/plan/pod-paths/registry.ts';
import { planFromYaml, planToYaml } from '../../src/plan/render.ts';
import {
  GATE_CONDITION_INFO, GATE_CONDITIONS, installPathKinds, STEP_KIND_NAMES, STEP_KINDS, type GateCondition, type GateConditionInfo, type StepKind, type StepKindInfo,
} from '../../src/plan/steps.ts';
import { POD_PATH_MODULES } from '../../src/pod-paths/registry.ts';
import { run } from './run-cli.ts';

install();

const ROOT = new URL('../../', import.meta.url).pathname;
const has = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);
/** Every path the registry lists, in its order. */
const POD_PATH_IDS = Object.keys(POD_PATH_MODULES) as PodPathId[];

/** Who runs a step kind: the Service executor, the extension executor, PodExecutor's shared steps, or a pod path's engine. */
function executorsOf(kind: StepKind): string[] {
  return [
    ...(has(ServiceExecutor.actions, kind) ? ['service'] : []),
    ...(has(ExtensionExecutor.actions, kind) ? ['extend'] : []),
    ...(has(PodExtensionExecutor.actions, kind) ? ['extend-pod'] : []),
    ...(has(PodExecutor.sharedSteps, kind) ? ['pod'] : []),
    ...POD_PATH_IDS.filter((id) => has(podPathEngine(id).steps, kind)).map((id) => `path ${id}`),
  ];
}

/** Who checks a gate condition: the Service executor or a pod path's engine. */
function checkersOf(c: GateCondition): string[] {
  return [
    ...(has(PlanExecutor.gates, c) ? ['plan'] : []),
    ...(has(ServiceExecutor.gates, c) ? ['service'] : []),
    ...(has(ExtensionExecutor.gates, c) ? ['extend'] : []),
    ...(has(PodExtensionExecutor.gates, c) ? ['extend-pod'] : []),
    ...POD_PATH_IDS.filter((id) => has(podPathEngine(id).gates, c)).map((id) => `path ${id}`),
  ];
}

/** The executor a kind's STEP_KINDS entry says it has. */
function expectedExecutor(info: StepKindInfo): string[] {
  if (info.family === 'control') return [];
  if (info.family === 'service') return ['service'];
  if (info.family === 'extend' || info.family === 'extend-pod') return [info.family];
  return info.path ? [`path ${info.path}`] : ['pod'];
}

async function examplePlan(example: string, pod: Record<string, unknown>): Promise<MigrationPlan> {
  const snap = buildSnapshot(await readInventoryFiles([`${ROOT}examples/${example}`]));
  return buildMigrationPlan(snap, { pod: { target: '', ...pod } as never });
}

/** Plans of each pod path, on examples where that path applies (node: with a hook and without, so every node kind and gate appears). */
const PATH_PLANS: Record<PodPathId, Array<() => Promise<MigrationPlan>>> = {
  calico: [() => examplePlan('kops-tailscale', { target: '10.32.0.0/13' })],
  'cilium-multi-pool': [() => examplePlan('cilium-multi-pool', { target: '10.60.0.0/16' })],
  node: [
    () => examplePlan('kubeadm-exhausted', { target: '10.244.0.0/14', ipam: 'node', nodeHook: 'true' }),
    () => examplePlan('kubeadm-exhausted', { target: '10.244.0.0/14', ipam: 'node' }),
    () => examplePlan('kubeadm-exhausted', { target: '10.244.0.0/14', ipam: 'node', nodeHook: 'true', maxUnavailable: '100%' }),
    () => examplePlan('kubeadm-exhausted', { target: '10.244.0.0/14', ipam: 'node', maxUnavailable: '100%' }),
  ],
};

/**
 * Where a file outside the paths' folders names a pod path id in code (comments excluded): a string literal equal to
 * an id ('node', 'calico', 'cilium-multi-pool') or an identifier spelling it (node, calico, ciliumMultiPool), read
 * with the TypeScript parser. The installer (src/pod-paths/registry.ts) is exempt. Many are homonyms (a Node object,
 * the Calico CNI, the node address role), which a parser cannot tell apart from the path.
 */
function podPathNames(ids: readonly string[]): string[] {
  const camel = (id: string) => id.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const files = (readdirSync(`${ROOT}src`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => `src/${f}`).sort();
  const out: string[] = [];
  for (const f of files) {
    if (f === 'src/pod-paths/registry.ts') continue;
    const sf = ts.createSourceFile(f, readFileSync(`${ROOT}${f}`, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node): void => {
      const shown = ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) ? `'${n.text}'` : ts.isIdentifier(n) ? n.text : undefined;
      const id = shown === undefined ? undefined : ids.find((x) => shown === `'${x}'` || shown === camel(x));
      if (id !== undefined && !f.startsWith(`src/pod-paths/${id}/`)) out.push(`${f}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1} ${shown}`);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

/**
 * The names of a pod path id outside its folder and the installer, per file, as podPathNames found them when the
 * check was written (issue 50: 163 in all, most of them homonyms). A file may not name an id more often than this;
 * an entry is lowered (or removed at 0) when a file names one less often.
 */
const PATH_ID_NAMES_LEFT: Readonly<Record<string, number>> = {
   'src/plan/render.ts': 1,
   'src/plan/extend-spec.ts': 1,
   'src/plan/extend-pod.ts': 2,
   'src/cli/commands/plan.ts': 1,
   'src/analyze/addressing.ts': 4, 'src/analyze/capacity.ts': 3, 'src/analyze/conflicts.ts': 10,
   'src/analyze/inspect.ts': 2, 'src/analyze/live.ts': 9, 'src/analyze/references.ts': 1,
   'src/cli/commands/apply.ts': 1, 'src/cli/commands/inspect.ts': 1, 'src/cli/fleet.ts': 1, 'src/cluster/build.ts': 2,
   'src/cluster/builder.ts': 1, 'src/cluster/calico.ts': 4, 'src/cluster/cni-signals.ts': 2,
   'src/cluster/collect.ts': 9, 'src/cluster/kops-spec.ts': 3, 'src/cluster/readers.ts': 4,
   'src/cluster/reference-sources.ts': 4, 'src/cluster/types.ts': 2, 'src/cluster/validate.ts': 10,
   'src/cni/detect.ts': 10, 'src/engine/kubelet-dns-gate.ts': 2, 'src/ipam/calico.ts': 6, 'src/ipam/cilium.ts': 4,
   'src/ipam/node-podcidr.ts': 3, 'src/ipam/registry.ts': 2, 'src/kube/discover.ts': 2,
   'src/kube/kubelet-configz.ts': 14, 'src/plan/compatibility-data.ts': 2, 'src/plan/extend.ts': 2,
   'src/plan/pod-plan.ts': 3, 'src/plan/pod-spec.ts': 1, 'src/plan/preflight.ts': 1,
   'src/platforms/k3s-family/node-args.ts': 4, 'src/platforms/k3s-family/plan.ts': 2,
   'src/platforms/k3s-family/signs.ts': 2, 'src/platforms/kops/plan.ts': 1, 'src/platforms/rke2/platform.ts': 2,
   'src/probe/deploy.ts': 1, 'src/render/address-map.ts': 18, 'src/render/html.ts': 4, 'src/vocabulary.ts': 1,
};

describe('step kinds: one table, one executor each', () => {
  it('every step kind has exactly the one executor its STEP_KINDS entry names', () => {
    assert.ok(STEP_KIND_NAMES.length >= 20, 'the table lists the kinds');
    for (const kind of STEP_KIND_NAMES) {
      assert.deepEqual(executorsOf(kind), expectedExecutor(STEP_KINDS[kind]), kind);
    }
  });

  it('the executors hold no kind the table does not list', () => {
    const listed = new Set<string>(STEP_KIND_NAMES);
    const tables = [ServiceExecutor.actions, ExtensionExecutor.actions, PodExtensionExecutor.actions, PodExecutor.sharedSteps, ...POD_PATH_IDS.map((id) => podPathEngine(id).steps)];
    for (const t of tables) for (const k of Object.keys(t)) assert.ok(listed.has(k), `${k} is in STEP_KINDS`);
  });

  it('every gate condition has exactly one check, the one GATE_CONDITION_INFO names', () => {
    for (const c of GATE_CONDITIONS) {
      const info: GateConditionInfo = GATE_CONDITION_INFO[c];
      assert.deepEqual(checkersOf(c), [info.family === 'control' ? 'plan' : info.family === 'service' || info.family === 'extend' || info.family === 'extend-pod' ? info.family : `path ${info.path}`], c);
    }
    const tables = [PlanExecutor.gates, ServiceExecutor.gates, ExtensionExecutor.gates, PodExtensionExecutor.gates, ...POD_PATH_IDS.map((id) => podPathEngine(id).gates)];
    for (const t of tables) for (const k of Object.keys(t)) assert.ok((GATE_CONDITIONS as readonly string[]).includes(k), `${k} is in GATE_CONDITION_INFO`);
  });
});

describe('pod paths: one module each, one registry line', () => {
  it('the registry installs every path, each under its own id, into both layers', () => {
    assert.ok(POD_PATH_IDS.length >= 3);
    assert.deepEqual([...POD_PATH_NAMES], POD_PATH_IDS, '--ipam accepts the installed paths in the registry\'s order');
    for (const id of POD_PATH_IDS) {
      assert.equal(podPath(id).id, id);
      assert.equal(podPathEngine(id).id, id);
      assert.equal(POD_PATH_MODULES[id].plan, podPath(id));
    }
    assert.deepEqual(Object.keys(PATH_PLANS).sort(), [...POD_PATH_IDS].sort(), 'this test plans every path');
  });

  it('a path\'s own kinds must name it, and no kind is installed twice', () => {
    const before = [...STEP_KIND_NAMES];
    assert.throws(() => installPathKinds('calico', { 'x-kind': { family: 'pod', path: 'node', items: 'object' } }, {}), /must name it/);
    assert.throws(() => installPathKinds('cilium-multi-pool', { 'create-ciliumpodippool': { family: 'pod', path: 'cilium-multi-pool', items: 'object' } }, {}), /already/);
    assert.throws(() => installPathKinds('node', {}, { 'kcm-cluster-cidr': { family: 'pod', path: 'node' } }), /already/);
    assert.deepEqual([...STEP_KIND_NAMES], before, 'a refused install adds nothing');
  });

  it('a path in a folder of its own is that folder and one registry line: nothing else in src/ names its kinds or imports it', () => {
    const files = (readdirSync(`${ROOT}src`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => `src/${f}`);
    const folders = POD_PATH_IDS.filter((id) => files.some((f) => f.startsWith(`src/pod-paths/${id}/`)));
    assert.deepEqual(folders, ['calico', 'node', 'cilium-multi-pool'], 'the paths in folders of their own');
    for (const id of folders) {
      const folder = `src/pod-paths/${id}/`;
      const m = POD_PATH_MODULES[id];
      // pod-cidr-config is also the name of the distributions' patch gate (src/plan/distributions/types.ts), which every path's plan may name
      const own = [...Object.keys(m.stepKinds ?? {}), ...Object.keys(m.gateConditions ?? {}).filter((c) => c !== 'pod-cidr-config')];
      assert.ok(own.length >= 4, `${id} declares its kinds`);
      const imports = new RegExp(`(?:from|import)\\s*\\(?['"][^'"]*/pod-paths/${id}/`);
      for (const f of files) {
        if (f.startsWith(folder)) continue;
        const text = readFileSync(`${ROOT}${f}`, 'utf8');
        for (const k of own) assert.ok(!text.includes(`'${k}'`), `${f} names ${k}, a kind of the ${id} path (it belongs in ${folder})`);
        if (f !== 'src/pod-paths/registry.ts') assert.doesNotMatch(text, imports, `${f} imports from ${folder}`);
      }
    }
  });

  for (const id of POD_PATH_IDS) {
    it(`${id}: its plans use its own kinds and gates and the shared ones, all of its own, and each runs through its executor`, async () => {
      const used = new Set<string>();
      const gates = new Set<string>();
      for (const make of PATH_PLANS[id]) {
        const plan = await make();
        assert.equal(plan.spec.podCIDR?.ipam, id, plan.preflight.filter((c) => c.status === 'fail').map((c) => c.message).join('; '));
        for (const s of plan.steps) {
          used.add(s.kind);
          const info: StepKindInfo = STEP_KINDS[s.kind];
          assert.ok(info.path === undefined || info.path === id, `${s.id} (${s.kind}) belongs to path ${info.path}, the plan is ${id}`);
          if (s.kind === 'gate') {
            gates.add(s.gate.condition);
            const c: GateConditionInfo = GATE_CONDITION_INFO[s.gate.condition];
            assert.ok(c.path === undefined || c.path === id, `gate ${s.id} (${s.gate.condition}) belongs to path ${c.path}`);
          }
        }
        // every step becomes an engine step, and the plan reads back as written
        const steps = new PlanExecutor(plan, { token: 't' }).steps();
        assert.deepEqual(steps.map((s) => s.id), plan.steps.map((s) => s.id));
        assert.deepEqual(planFromYaml(planToYaml(plan)).spec.podCIDR, JSON.parse(JSON.stringify(plan.spec.podCIDR)));
      }
      for (const k of STEP_KIND_NAMES.filter((x) => (STEP_KINDS[x] as StepKindInfo).path === id)) assert.ok(used.has(k), `a ${id} plan has a ${k} step`);
      for (const c of GATE_CONDITIONS.filter((x) => (GATE_CONDITION_INFO[x] as GateConditionInfo).path === id)) assert.ok(gates.has(c), `a ${id} plan has a ${c} gate`);
    });
  }

  it('outside its folder, no file but the installer names a pod path id more often than PATH_ID_NAMES_LEFT records', () => {
    const found = podPathNames(POD_PATH_IDS);
    const count: Record<string, number> = {};
    for (const h of found) { const f = h.slice(0, h.indexOf(':')); count[f] = (count[f] ?? 0) + 1; }
    const grew = Object.keys(count).filter((f) => count[f]! > (PATH_ID_NAMES_LEFT[f] ?? 0));
    assert.deepEqual(grew, [], `more names of a pod path id outside its folder (each belongs in src/pod-paths/<id>/):\n${found.filter((h) => grew.some((f) => h.startsWith(`${f}:`))).join('\n')}`);
    assert.deepEqual(count, PATH_ID_NAMES_LEFT, 'fewer names than recorded: lower PATH_ID_NAMES_LEFT');
  });

  it('--ipam accepts every path id (and nothing else), and the help and docs name each', async () => {
    const kubeadm = `${ROOT}examples/kubeadm-exhausted`;
    const bad = await run(['plan', '--pod-cidr', '10.244.0.0/14', '--ipam', 'no-such-path', '-f', kubeadm]);
    assert.equal(bad.code, 2);
    for (const id of POD_PATH_IDS) assert.match(bad.err, new RegExp(`\\b${id}\\b`), `the error names ${id}`);
    const help = await run(['plan', '--help']);
    const docs = readFileSync(`${ROOT}docs/pod-migration.md`, 'utf8');
    for (const id of POD_PATH_IDS) {
      const r = await run(['plan', '--pod-cidr', '10.244.0.0/14', '--ipam', id, '-f', kubeadm]);
      assert.doesNotMatch(r.err, /--ipam .* must be/, `--ipam ${id} is accepted`);
      assert.match(help.out + help.err, new RegExp(`--ipam [a-z|]*\\b${id}\\b`), `plan --help names --ipam ${id}`);
      assert.match(docs, new RegExp(`src/(plan/pod-paths/${id}\\.ts|pod-paths/${id}/)`), `docs/pod-migration.md names the ${id} path's module`);
      // a path's own flags are refused with another path
      for (const other of POD_PATH_IDS.filter((o) => o !== id)) {
        for (const flag of podPath(other).flags) {
          const r2 = await run(['plan', '--pod-cidr', '10.244.0.0/14', '--ipam', id, `--${flag}`, flag === 'node-hook' ? 'true' : flag === 'pool-name' ? 'p' : '24', '-f', kubeadm]);
          assert.equal(r2.code, 2, `--${flag} with --ipam ${id}`);
          assert.match(r2.err, new RegExp(`--${flag} needs --ipam ${other}`));
        }
      }
    }
  });
});
