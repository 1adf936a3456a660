/**
 * A plan an SRE can approve: the pair of ranges chosen together (suggest --for services,pods), plans computed from
 * where the cluster ends (kOps nonMasqueradeCIDR), no placeholder and valid YAML in every patch, and no in-house
 * words in any output of any bundled example or platform fixture.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import { buildSnapshot } from '../../src/cluster/build.ts';
import { readInventoryFiles } from '../../src/cluster/files.ts';
import { buildMigrationPlan } from '../../src/plan/plan.ts';
import { contains, overlaps, parseCidr } from '../../src/net/index.ts';
import { run } from './run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KOPS = join(ROOT, 'examples/kops-tailscale');
const dirs = (d: string) => readdirSync(join(ROOT, d), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(ROOT, d, e.name)).sort();
const INPUTS = [...dirs('examples'), ...dirs('test/fixtures/platforms')];

interface Patch { id: string; before: string; after: string }
const patchesOf = (plan: any): Patch[] => (plan.steps ?? []).flatMap((s: any) => [...(s.patches ?? []), ...(s.gate?.patches ?? [])]);
/** The nonMasqueradeCIDR values a kOps patch text sets, wherever the field sits. */
const nmValues = (text: string): string[] => [...text.matchAll(/nonMasqueradeCIDR: (\S+)/g)].map((m) => m[1]!);

/** The pair suggest --for services,pods gives for `dir`, or undefined when it finds none. */
async function pairOf(dir: string): Promise<{ services: string; pods: string; envelope: string } | undefined> {
  const r = await run(['suggest', '--for', 'services,pods', '-f', dir, '-o', 'json']);
  if (r.code !== 0) return undefined;
  const j = JSON.parse(r.out);
  return { services: j.families.map((f: any) => f.services.cidr).join(','), pods: j.families.map((f: any) => f.pods.cidr).join(','), envelope: j.envelope };
}

describe('suggest --for services,pods', () => {
  it('kOps + Calico in 100.64.0.0/10: disjoint pair, each sized as alone, inside one free envelope clear of networkCIDR', async () => {
    const r = await run(['suggest', '--for', 'services,pods', '-f', KOPS, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const j = JSON.parse(r.out);
    const svc = parseCidr(j.services.cidr);
    const pod = parseCidr(j.pods.cidr);
    const env = parseCidr(j.envelope);
    assert.equal(j.envelopeIs, 'nonMasqueradeCIDR');
    assert.ok(!overlaps(svc, pod), `${j.services.cidr} and ${j.pods.cidr} overlap`);
    assert.ok(contains(env, svc) && contains(env, pod), `${j.envelope} does not hold both`);
    assert.ok(!overlaps(env, parseCidr('172.20.0.0/16')), `${j.envelope} overlaps networkCIDR`);
    assert.ok(!overlaps(env, parseCidr('100.64.0.0/10')), `${j.envelope} overlaps the Tailscale range`);
    // each sized as suggest sizes it alone
    for (const what of ['services', 'pods'] as const) {
      const alone = JSON.parse((await run(['suggest', '--for', what, '-f', KOPS, '-o', 'json'])).out);
      assert.equal(j[what].prefix, alone.prefix, what);
    }
    const table = await run(['suggest', '--for', 'pods,services', '-f', KOPS]);
    assert.equal(table.code, 0);
    for (const v of [j.services.cidr, j.pods.cidr, j.envelope]) assert.ok(table.out.includes(v), `table lacks ${v}`);
    assert.match(table.out, /envelope .*nonMasqueradeCIDR/);
    // elsewhere the envelope is named as such, no platform setting
    const k3s = JSON.parse((await run(['suggest', '--for', 'services,pods', '-f', join(ROOT, 'examples/k3s'), '-o', 'json'])).out);
    assert.equal(k3s.envelopeIs, undefined);
  });

  it('--for with anything else is refused with exit 2', async () => {
    const r = await run(['suggest', '--for', 'services,nodes', '-f', KOPS]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^error: --for must be/);
  });
});

describe('plans computed from where the cluster ends (kOps nonMasqueradeCIDR)', () => {
  it('the pair suggest gives plans in one: exit 0, no placeholder, every patch parses, nonMasqueradeCIDR = the envelope', async () => {
    const pair = await pairOf(KOPS);
    assert.ok(pair);
    const r = await run(['plan', '-f', KOPS, '--service-cidr', pair.services, '--pod-cidr', pair.pods, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.out, /TODO/);
    const patches = patchesOf(JSON.parse(r.out));
    const kops = patches.filter((p) => p.id === 'kops-service-range' || p.id === 'kops-pod-cidr');
    assert.equal(kops.length, 2);
    for (const p of patches) for (const t of [p.before, p.after]) yaml.loadAll(t);
    for (const p of kops) assert.deepEqual(nmValues(p.after), [pair.envelope], p.id);
  });

  it('explicit --service-cidr 172.24.0.0/15 --pod-cidr 172.16.0.0/13 gives 172.16.0.0/12 where the VPC allows', async () => {
    // the kOps example with its VPC (networkCIDR and node addresses) moved out of 172.16.0.0/12
    const dir = mkdtempSync(join(tmpdir(), 'kr-kops-vpc-'));
    try {
      cpSync(KOPS, dir, { recursive: true });
      for (const f of readdirSync(dir)) writeFileSync(join(dir, f), readFileSync(join(dir, f), 'utf8').replaceAll('172.20.', '10.20.'));
      const snap = buildSnapshot(await readInventoryFiles([dir]));
      const plan = buildMigrationPlan(snap, { service: { target: '172.24.0.0/15' }, pod: { target: '172.16.0.0/13' } });
      const kops = patchesOf(plan).filter((p) => p.id === 'kops-service-range' || p.id === 'kops-pod-cidr');
      assert.equal(kops.length, 2);
      for (const p of kops) assert.deepEqual(nmValues(p.after), ['172.16.0.0/12'], p.id);
      // the same targets on the example itself: 172.16.0.0/12 would hold its VPC 172.20.0.0/16
      const onVpc = buildMigrationPlan(buildSnapshot(await readInventoryFiles([KOPS])), { service: { target: '172.24.0.0/15' }, pod: { target: '172.16.0.0/13' } });
      assert.ok(onVpc.preflight.some((c) => c.status === 'fail' && c.target && /nonMasqueradeCIDR/.test(c.message)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the pair in one plan: pod-kops-nonmasquerade judges the nonMasqueradeCIDR the Service part sets; kops-interim-spec warns of the spec between the two kOps edits', async () => {
    const pair = await pairOf(KOPS);
    assert.ok(pair);
    const snap = buildSnapshot(await readInventoryFiles([KOPS]));
    const plan = buildMigrationPlan(snap, { service: { target: pair.services }, pod: { target: pair.pods } });
    const nm = plan.preflight.find((c) => c.id === 'pod-kops-nonmasquerade')!;
    assert.equal(nm.status, 'pass', nm.message);
    assert.match(nm.message, new RegExp(`nonMasqueradeCIDR ${pair.envelope.replaceAll('.', '\\.')} \\(set with the Service range at gate restart-apiservers`));
    // between the gates: serviceClusterIPRange and nonMasqueradeCIDR new, podCIDR still 100.96.0.0/11 outside it
    const interim = plan.preflight.find((c) => c.id === 'kops-interim-spec')!;
    assert.equal(interim.status, 'warn');
    assert.ok(!contains(parseCidr(pair.envelope), parseCidr('100.96.0.0/11')));
    assert.match(interim.message, /podCIDR 100\.96\.0\.0\/11 outside nonMasqueradeCIDR/);
    assert.match(interim.fix, /kops update cluster without --yes/);
    // a single-range plan edits the spec once: no interim spec
    const single = buildMigrationPlan(snap, { service: { target: '100.32.0.0/16' } });
    assert.ok(!single.preflight.some((c) => c.id === 'kops-interim-spec'));
    assert.ok(!single.preflight.some((c) => c.status === 'fail'), single.preflight.filter((c) => c.status === 'fail').map((c) => c.message).join('; '));
  });

  it('a single-range plan with no valid nonMasqueradeCIDR exits 2 naming the pair', async () => {
    const pair = await pairOf(KOPS);
    assert.ok(pair);
    for (const flags of [['--service-cidr', '10.200.0.0/20'], ['--pod-cidr', '10.64.0.0/12']]) {
      const r = await run(['plan', '-f', KOPS, ...flags, '-o', 'yaml']);
      assert.equal(r.code, 2, flags.join(' '));
      assert.equal(r.out, '');
      assert.equal(r.err.trim().split('\n').length, 1);
      assert.ok(r.err.includes(`--service-cidr ${pair.services} --pod-cidr ${pair.pods}`), r.err);
    }
  });
});

/** In-house words no user-facing text may use (`--seed` is no flag of any command: checked below). */
const IN_HOUSE = [/\bseeds?\b/i, /upstream step/i, /zendesk/i];
const inHouse = (text: string) => IN_HOUSE.filter((re) => re.test(text)).map(String);

describe('every example and platform fixture, every output', () => {
  it('the words are not flags', async () => {
    const help = await run(['help']);
    assert.doesNotMatch(help.out + help.err, /--seed/);
  });

  it('help of every command has no in-house words', async () => {
    const cmds = ['inspect', 'calc', 'suggest', 'plan', 'apply', 'resume', 'status', 'verify', 'rollback', 'restore', 'probe', 'version', 'completion', 'rbac'];
    for (const c of cmds) {
      const r = await run([c, '--help']);
      assert.ok(r.out.length + r.err.length > 0, c);
      assert.deepEqual(inHouse(r.out + r.err), [], `${c} --help`);
    }
  });

  for (const dir of INPUTS) {
    const name = dir.slice(ROOT.length);
    it(`${name}: plans single and combined, patches parse, no placeholder, no in-house words`, async () => {
      const pair = await pairOf(dir);
      const plans: string[][] = [['--service-cidr', '172.24.0.0/16'], ['--pod-cidr', '10.64.0.0/12'], ['--service-cidr', '172.24.0.0/16', '--pod-cidr', '10.64.0.0/12']];
      if (pair) plans.push(['--service-cidr', pair.services, '--pod-cidr', pair.pods]);
      const codes: number[] = [];
      for (const flags of plans) {
        const r = await run(['plan', '-f', dir, ...flags, '-o', 'json']);
        const what = `${name} ${flags.join(' ')}`;
        assert.doesNotMatch(r.out + r.err, /TODO/, what);
        assert.deepEqual(inHouse(r.out + r.err), [], what);
        codes.push(r.code);
        if (r.code === 2) { assert.equal(r.out, '', what); continue; }
        for (const p of patchesOf(JSON.parse(r.out))) {
          for (const t of [p.before, p.after]) assert.doesNotThrow(() => yaml.loadAll(t), `${what}: patch ${p.id} does not parse:\n${t}`);
        }
        for (const o of ['yaml', 'markdown', 'html', 'wide']) {
          const f = await run(['plan', '-f', dir, ...flags, '-o', o]);
          assert.equal(f.code, r.code, `${what} -o ${o}`);
          assert.doesNotMatch(f.out, /TODO/, `${what} -o ${o}`);
          assert.deepEqual(inHouse(f.out + f.err), [], `${what} -o ${o}`);
        }
      }
      // where a combined plan is written at all, the pair suggest gives is written too
      if (pair && codes[2] !== 2) assert.notEqual(codes[3], 2, `${name}: the suggested pair plans`);
      for (const args of [['inspect'], ['inspect', '-o', 'json'], ['suggest', '--for', 'services', '-o', 'wide'], ['suggest', '--for', 'pods', '-o', 'yaml'], ['suggest', '--for', 'services,pods', '-o', 'wide']]) {
        const r = await run([...args, '-f', dir]);
        assert.deepEqual(inHouse(r.out + r.err), [], `${name} ${args.join(' ')}`);
      }
    });
  }

  it('the check can fail: it finds the words in a text that has them', () => {
    assert.deepEqual(inHouse('as in seed 000, then upstream step 2'), [String(IN_HOUSE[0]), String(IN_HOUSE[1])]);
  });
});
