/**
 * One source for what used to be written twice (issue 50): the kOps nonMasqueradeCIDR checks live in the kOps
 * platform's folder only; every kind a step can back up is restorable from one kind table; shell completion
 * offers what the registries and the flags' parsers hold.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SEVERITIES } from '../../src/analyze/catalog.ts';
import { completeWords, flagValues } from '../../src/cli/completion.ts';
import { STRATEGIES } from '../../src/cli/commands/plan.ts';
import { COMMANDS, GLOBAL_OPTIONS, main } from '../../src/cli/main.ts';
import { OUTPUT_FORMATS } from '../../src/cli/output.ts';
import { DRY_RUNS } from '../../src/cli/session.ts';
import { knownKinds, resourceOfKind, resourceOfObject } from '../../src/kube/kinds.ts';
import { apiVersionOf } from '../../src/kube/resources.ts';
import { POD_PATH_NAMES } from '../../src/plan/pod-paths/registry.ts';
import { POD_PATH_MODULES } from '../../src/pod-paths/registry.ts';

install();

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? tsFiles(p) : n.endsWith('.ts') ? [p] : [];
  });
}

/** The code of a TypeScript file without its comments (good enough for identifiers: no comment markers in strings here). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('the kOps nonMasqueradeCIDR is checked in the kOps folder only', () => {
  const KOPS_DIR = join(ROOT, 'src', 'platforms', 'kops');
  /** A kOps Cluster spec's nonMasqueradeCIDR read from the snapshot, or the id of a check of it. */
  const NAMES_IT = /kops\??\.nonMasqueradeCIDR|'pod-kops-nonmasquerade'|'kops-pod-non-masquerade'/;

  it('no code outside src/platforms/kops/ reads the snapshot\'s nonMasqueradeCIDR or writes a check of it', () => {
    const hits = tsFiles(join(ROOT, 'src')).filter((f) => !f.startsWith(KOPS_DIR) && NAMES_IT.test(code(readFileSync(f, 'utf8')))).map((f) => relative(ROOT, f));
    assert.deepEqual(hits, []);
  });

  it('the check can fail: it sees the reads in code, not in a comment', () => {
    assert.match(code('const x = snap.kops?.nonMasqueradeCIDR; // y'), NAMES_IT);
    assert.match(code("return { id: 'pod-kops-nonmasquerade' };"), NAMES_IT);
    assert.doesNotMatch(code('/** snap.kops.nonMasqueradeCIDR */\nconst x = 1; // kops.nonMasqueradeCIDR'), NAMES_IT);
  });

  it('both Pod checks come from the kOps planner', () => {
    const text = code(readFileSync(join(KOPS_DIR, 'plan.ts'), 'utf8'));
    for (const id of ['pod-kops-nonmasquerade', 'kops-pod-non-masquerade']) assert.match(text, new RegExp(`'${id}'`));
  });
});

describe('one kind table: every kind a step backs up is restorable', () => {
  it('a Cilium multi-pool run\'s old CiliumPodIPPool (v2alpha1 or v2) resolves to its resource, at the version it was read at', () => {
    for (const version of ['v2alpha1', 'v2']) {
      const backup = { apiVersion: `cilium.io/${version}`, kind: 'CiliumPodIPPool', metadata: { name: 'default' }, spec: { ipv4: { cidrs: ['10.0.0.0/16'], maskSize: 24 } } };
      assert.deepEqual(resourceOfObject(backup), { group: 'cilium.io', version, plural: 'ciliumpodippools', namespaced: false, kind: 'CiliumPodIPPool' });
    }
  });

  it('every kind each pod path declares resolves to the resource it declared, and is in the table once', () => {
    for (const m of Object.values(POD_PATH_MODULES)) {
      for (const k of m.kinds) assert.deepEqual(resourceOfKind(apiVersionOf(k), k.kind), k, `${m.plan.id}: ${k.kind}`);
    }
    const kinds = knownKinds();
    assert.equal(new Set(kinds).size, kinds.length);
  });

  it('each path declares the kinds of the objects its engine builds or backs up by name (kind literals in its folder)', () => {
    for (const id of POD_PATH_NAMES) {
      const dir = join(ROOT, 'src', 'pod-paths', id);
      const declared = new Set(POD_PATH_MODULES[id].kinds.map((k) => k.kind));
      const used = new Set(tsFiles(dir).flatMap((f) => [...code(readFileSync(f, 'utf8')).matchAll(/\bkind: '([A-Z]\w+)'/g)].map((m) => m[1]!)));
      for (const kind of used) assert.ok(declared.has(kind) || resourceOfKind(undefined, kind), `${id}: kind ${kind} is built or loaded in src/pod-paths/${id}/ but is in no kind table`);
    }
  });

  it('the kinds the core backs up resolve (Services, Pods, Nodes, workloads, ServiceCIDRs, EndpointSlices, Calico\'s)', () => {
    const want: Array<[string, string, string]> = [
      ['v1', 'Service', 'services'], ['v1', 'Pod', 'pods'], ['v1', 'Node', 'nodes'], ['v1', 'ConfigMap', 'configmaps'],
      ['apps/v1', 'Deployment', 'deployments'], ['apps/v1', 'StatefulSet', 'statefulsets'], ['apps/v1', 'DaemonSet', 'daemonsets'],
      ['networking.k8s.io/v1beta1', 'ServiceCIDR', 'servicecidrs'], ['discovery.k8s.io/v1', 'EndpointSlice', 'endpointslices'],
      ['crd.projectcalico.org/v1', 'IPPool', 'ippools'], ['crd.projectcalico.org/v1', 'IPAMBlock', 'ipamblocks'],
      ['crd.projectcalico.org/v1', 'BlockAffinity', 'blockaffinities'], ['crd.projectcalico.org/v1', 'IPAMHandle', 'ipamhandles'],
      ['operator.tigera.io/v1', 'Installation', 'installations'],
    ];
    for (const [apiVersion, kind, plural] of want) {
      const t = resourceOfKind(apiVersion, kind);
      assert.equal(t?.plural, plural, `${apiVersion} ${kind}`);
      assert.equal(apiVersionOf(t!), apiVersion);
    }
    assert.equal(resourceOfKind('example.com/v1', 'Service'), undefined, 'the group is part of the kind');
    assert.equal(resourceOfKind('v1', 'Widget'), undefined);
  });

  it('no other file maps a kind to a resource by hand (restore and the executors look kinds up in src/kube/kinds.ts)', () => {
    const handTable = /\.kind === '[A-Z]\w*'\)?\s*(\?|return)\s*(this\.)?[A-Z_]{2,}\b|^\s*[a-z]+s: \{ apiVersion: '[^']+', kind: '[A-Z]\w*' \},?$/m;
    assert.match("if (o.kind === 'IPPool') return IPPOOLS;", handTable);
    assert.match("  ippools: { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool' },", handTable);
    assert.doesNotMatch("      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },", handTable);
    const hits = tsFiles(join(ROOT, 'src')).filter((f) => handTable.test(code(readFileSync(f, 'utf8')))).map((f) => relative(ROOT, f));
    assert.deepEqual(hits, []);
  });
});

describe('shell completion offers what the registries and the flags\' parsers hold', () => {
  const complete = (...words: string[]) => {
    let out = '';
    return main(['__complete', ...words], { out: (x) => { out += x; }, err: () => {}, env: {} }).then(() => out.split('\n').filter((l) => l && !l.startsWith(':')));
  };

  it('--ipam: every pod path installed, in the registry\'s order', async () => {
    assert.deepEqual(await complete('plan', '--ipam', ''), [...POD_PATH_NAMES]);
    assert.deepEqual(POD_PATH_NAMES, Object.keys(POD_PATH_MODULES));
    assert.ok(POD_PATH_NAMES.includes('cilium-multi-pool'));
  });

  it('the other word lists are their parsers\' lists', async () => {
    const v = flagValues();
    assert.deepEqual(v.output, OUTPUT_FORMATS);
    assert.deepEqual(v['fail-on'], SEVERITIES);
    assert.deepEqual(v.strategy, STRATEGIES);
    assert.deepEqual(v['dry-run'], DRY_RUNS);
    assert.deepEqual(await complete('plan', '-o', ''), [...OUTPUT_FORMATS, 'markdown', 'html']);
    assert.deepEqual(await complete('inspect', '--fail-on', ''), [...SEVERITIES]);
  });

  it('every word completion offers for a flag, the command accepts (no usage error naming the flag)', async () => {
    const direct = completeWords(['plan', '--strategy', ''], COMMANDS, GLOBAL_OPTIONS, () => true).split('\n').filter((l) => l && !l.startsWith(':'));
    assert.deepEqual(direct, [...STRATEGIES]);
    for (const [cmd, flag] of [['plan', 'ipam'], ['plan', 'strategy'], ['plan', 'tier-order'], ['suggest', 'family'], ['inspect', 'fail-on']] as const) {
      for (const word of await complete(cmd, `--${flag}`, '')) {
        let err = '';
        await main([cmd, `--${flag}`, word, '-f', '/nonexistent-kr-input'], { out: () => {}, err: (x) => { err += x; }, env: {} });
        assert.doesNotMatch(err, new RegExp(`--${flag}[ =]${word} (must|is not)`), `${cmd} --${flag} ${word}: ${err}`);
      }
    }
  });
});

describe('explicit wiring: a test file runs alone, without --import', () => {
  it('a few representative files pass with node --test FILE and nothing preloaded', () => {
    for (const f of ['test/unit/platform-capi.test.ts', 'test/unit/pod-paths-seam.test.ts', 'test/unit/references-gate.test.ts']) {
      const r = spawnSync(process.execPath, ['--test', '--test-reporter=dot', f], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
      assert.equal(r.status, 0, `${f}:\n${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}`);
    }
  });

  it('importing the registries installs nothing: a lower registry asked first names the installer', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e',
      `import '${join(ROOT, 'src/pod-paths/registry.ts')}'; import { platforms } from '${join(ROOT, 'src/platform/registry.ts')}'; try { platforms(); console.log('installed'); } catch (e) { console.log(e.message); }`],
    { cwd: ROOT, encoding: 'utf8' });
    assert.match(r.stdout, /call install\(\) \(src\/install\.ts\) first/, r.stderr);
  });
});
