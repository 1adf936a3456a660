// plan --fleet from dumps (the seeds' clusters), its refusals, and the order and stops of a fleet run.
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runFleet, type FleetIndex, type FleetIndexEntry } from '../../src/cli/fleet.ts';
import { ExitCode } from '../../src/cli/errors.ts';
import { planFromYaml } from '../../src/plan/render.ts';
import { overlaps, parseCidr } from '../../src/net/index.ts';
import { run } from './run-cli.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ex = (n: string) => join(ROOT, 'examples', n);

function fleetFile(doc: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'kr-fleet-unit-'));
  const p = join(dir, 'fleet.yaml');
  writeFileSync(p, JSON.stringify(doc));
  return p;
}
const FLEET = {
  apiVersion: 'kube-renumber.io/v1', kind: 'Fleet',
  avoid: [{ cidr: '10.0.0.0/16', reason: 'VPC' }, '10.1.0.0/16=peer'],
  clusters: [
    { name: 'kops', fromFile: ex('kops-tailscale') },
    { name: 'kubeadm', fromFile: ex('kubeadm-exhausted') },
    { name: 'legacy', fromFile: ex('kops-legacy-pool') },
  ],
  canary: 'kubeadm',
};

describe('plan --fleet', () => {
  it('the seeds\' clusters: distinct ranges, current ones kept where they can be, one valid plan per moving cluster', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kr-fleet-out-')), 'plans');
    const r = await run(['plan', '--fleet', fleetFile(FLEET), '--output-directory', out, '-o', 'json']);
    // legacy's old Kubernetes has no ServiceCIDR API: its plan is written with a failed pre-flight check
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /pre-flight check\(s\) failed in legacy \(servicecidr-api\)/);
    const index = JSON.parse(r.out) as FleetIndex;
    assert.equal(index.canary, 'kubeadm');
    const byName = new Map(index.clusters.map((c) => [c.name, c]));
    // seed 000: kOps defaults inside Tailscale's 100.64.0.0/10: both move
    assert.match(byName.get('kops')!.service.why!, /100\.64\.0\.0\/10 \(CGNAT \/ Tailscale\)/);
    // seed 004: the service range stays; the /18 pod range is too small for 76 nodes and moves
    assert.equal(byName.get('kubeadm')!.service.moved, false);
    assert.equal(byName.get('kubeadm')!.service.to, '10.233.0.0/18');
    assert.match(byName.get('kubeadm')!.pod.why!, /too small/);
    // new ranges are never below the floor (Services /20, pods 256 nodes of /24: a /16); kops's pod range holds
    // its InstanceGroups' 451 nodes (a /15)
    for (const c of index.clusters) {
      if (c.service.moved) assert.ok(parseCidr(c.service.to).prefix <= 20, `${c.name} service ${c.service.to}`);
      if (c.pod.moved) assert.ok(parseCidr(c.pod.to).prefix <= 16, `${c.name} pod ${c.pod.to}`);
    }
    assert.equal(parseCidr(byName.get('kops')!.pod.to).prefix, 15);
    const ranges = index.clusters.flatMap((c) => [c.service.to, c.pod.to]);
    for (const [i, a] of ranges.entries()) {
      for (const b of ranges.slice(i + 1)) assert.ok(!overlaps(parseCidr(a), parseCidr(b)), `${a} overlaps ${b}`);
      for (const avoided of ['10.0.0.0/16', '10.1.0.0/16', '100.64.0.0/10']) assert.ok(!overlaps(parseCidr(a), parseCidr(avoided)), `${a} vs ${avoided}`);
    }
    assert.deepEqual(readdirSync(out).sort(), ['fleet.yaml', 'kops.html', 'kops.yaml', 'kubeadm.html', 'kubeadm.yaml', 'legacy.html', 'legacy.yaml', 'summary.json']);
    for (const c of index.clusters) {
      const plan = planFromYaml(readFileSync(join(out, c.plan!), 'utf8'), c.plan!);
      if (c.service.moved) assert.deepEqual(plan.spec.serviceCIDR!.target, [c.service.to]);
      else assert.equal(plan.spec.serviceCIDR, undefined);
      if (c.pod.moved) assert.deepEqual(plan.spec.podCIDR!.to, [c.pod.to]);
      assert.equal(statSync(join(out, c.plan!)).mode & 0o777, 0o600);
      assert.match(readFileSync(join(out, `${c.name}.html`), 'utf8'), /^<!DOCTYPE html>/i);
    }
    assert.equal(statSync(out).mode & 0o777, 0o700);
    // the table says the same, and the plans in the directory are what apply --fleet reads
    const again = await run(['plan', '--fleet', fleetFile(FLEET), '--output-directory', out]);
    assert.equal(again.code, 2);
    assert.match(again.err, /^error: --output-directory .* is not empty/);
    const st = await run(['status', '--fleet', out, '-o', 'json']);
    assert.equal(st.code, 0, st.err);
    assert.deepEqual(JSON.parse(st.out).clusters.map((c: { state: string }) => c.state), ['not started', 'not started', 'not started']);
  });

  it('the fleet file\'s minPrefix lowers the floor of new ranges', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kr-fleet-out-')), 'plans');
    const r = await run(['plan', '--fleet', fleetFile({ ...FLEET, minPrefix: { service: 24, pod: 20 } }), '--output-directory', out, '-o', 'json']);
    const index = JSON.parse(r.out) as FleetIndex;
    const kops = index.clusters.find((c) => c.name === 'kops')!;
    assert.equal(parseCidr(kops.service.to).prefix, 24);
    // the pod range still holds the InstanceGroups' 451 nodes: the floor never shrinks a need
    assert.equal(parseCidr(kops.pod.to).prefix, 15);
    const legacy = index.clusters.find((c) => c.name === 'legacy')!;
    assert.equal(parseCidr(legacy.pod.to).prefix, 20);
  });

  it('rules that cannot all be met: one error line naming the cluster and the ranges, exit 2, nothing written', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kr-fleet-out-')), 'plans');
    const full = { ...FLEET, avoid: ['10.0.0.0/8=datacenter', '172.16.0.0/12=offices', '192.168.0.0/16=labs'] };
    const r = await run(['plan', '--fleet', fleetFile(full), '--output-directory', out]);
    assert.equal(r.code, ExitCode.usage);
    assert.equal(r.err.split('\n').filter(Boolean).length, 1, r.err);
    assert.match(r.err, /^error: the fleet's ranges cannot all be met: cluster \w+: no free \/\d+ for its (service|pod) range in 10\.0\.0\.0\/8, 172\.16\.0\.0\/12, 192\.168\.0\.0\/16 .*\(nothing was written\)$/m);
    assert.equal(existsSync(out), false);
  });

  it('a bad fleet file is exit 3 naming the field; flags that clash with --fleet are exit 2', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kr-fleet-out-')), 'plans');
    const cases: Array<[object, RegExp]> = [
      [{ ...FLEET, kind: 'Fleets' }, /apiVersion\/kind: expected kube-renumber\.io\/v1 Fleet/],
      [{ ...FLEET, clusters: [] }, /clusters: must list at least one cluster/],
      [{ ...FLEET, clusters: [{ name: 'Bad_Name', fromFile: ex('kops-tailscale') }] }, /clusters\[0\]\.name: .* must be a DNS label/],
      [{ ...FLEET, clusters: [{ name: 'a', fromFile: ex('kops-tailscale'), context: 'x' }] }, /clusters\[0\]: give fromFile .* not both/],
      [{ ...FLEET, clusters: [{ name: 'a', fromFile: ex('kops-tailscale'), colour: 'x' }] }, /clusters\[0\]\.colour: unknown field/],
      [{ ...FLEET, avoid: ['banana'] }, /avoid\[0\]/],
      [{ ...FLEET, headroom: 0 }, /headroom: must be a number from 1 to 1000/],
      [{ ...FLEET, canary: 'nope' }, /canary: nope is not one of the clusters/],
      [{ ...FLEET, minPrefix: 20 }, /minPrefix: must be a mapping/],
      [{ ...FLEET, minPrefix: { service: 33 } }, /minPrefix\.service: must be an IPv4 prefix length from 1 to 32, not 33/],
      [{ ...FLEET, minPrefix: { nodes: 16 } }, /minPrefix\.nodes: unknown field \(service, pod\)/],
      [{ ...FLEET, clusters: [{ name: 'a', fromFile: ex('kops-tailscale'), ipam: 'weave' }] }, /clusters\[0\]\.ipam: weave must be calico, node or cilium-multi-pool$/m],
    ];
    for (const [doc, msg] of cases) {
      const r = await run(['plan', '--fleet', fleetFile(doc), '--output-directory', out]);
      assert.equal(r.code, ExitCode.input, `${JSON.stringify(doc).slice(0, 80)}: ${r.err}`);
      assert.match(r.err, msg);
      assert.equal(existsSync(out), false);
    }
    const noDir = await run(['plan', '--fleet', fleetFile(FLEET)]);
    assert.equal(noDir.code, ExitCode.usage);
    assert.match(noDir.err, /--output-directory DIR/);
    const both = await run(['plan', '--fleet', fleetFile(FLEET), '--output-directory', out, '--service-cidr', '10.9.0.0/16']);
    assert.equal(both.code, ExitCode.usage);
    const positional = await run(['apply', 'plan.yaml', '--fleet', out]);
    assert.equal(positional.code, ExitCode.usage);
    assert.match(positional.err, /--fleet takes the place of the PLAN/);
    const notFleet = await run(['apply', '--fleet', out]);
    assert.equal(notFleet.code, ExitCode.input);
    assert.match(notFleet.err, /no fleet\.yaml: not a directory written by kube-renumber plan --fleet/);
  });

  it('every pod path is accepted as a cluster\'s ipam: a Cilium multi-pool cluster is planned on its path', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kr-fleet-out-')), 'plans');
    const doc = { ...FLEET, avoid: ['10.42.0.0/16=its pods today'], clusters: [{ name: 'cmp', fromFile: ex('cilium-multi-pool'), ipam: 'cilium-multi-pool' }], canary: undefined };
    const r = await run(['plan', '--fleet', fleetFile(doc), '--output-directory', out, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const [c] = (JSON.parse(r.out) as FleetIndex).clusters;
    assert.equal(c!.pod.moved, true);
    const plan = planFromYaml(readFileSync(join(out, c!.plan!), 'utf8'), c!.plan!);
    assert.equal(plan.spec.podCIDR!.ipam, 'cilium-multi-pool');
    assert.deepEqual(plan.spec.podCIDR!.to, [c!.pod.to]);
  });
});

describe('fleet run order and stops', () => {
  const entry = (name: string): FleetIndexEntry => ({ name, plan: `${name}.yaml`, service: { to: '10.0.0.0/24', moved: true }, pod: { to: '10.1.0.0/24', moved: true } });
  const index = (names: string[], canary?: string): FleetIndex => ({
    apiVersion: 'kube-renumber.io/v1', kind: 'FleetPlan', metadata: { generator: 't', fleetFile: 'f' }, ...(canary ? { canary } : {}),
    moves: { ranges: 0, clusters: 0, addresses: 0 }, clusters: [...names.map(entry), { name: 'keeps', service: { to: '10.2.0.0/24', moved: false }, pod: { to: '10.3.0.0/24', moved: false } }],
  });
  const io = () => { const lines: string[] = []; return { lines, io: { out: (s: string) => lines.push(s), err: (s: string) => lines.push(s), env: {} } }; };
  /** A run of `steps` steps, one per tick, that fails at step `failAt` or stops when asked at a boundary. */
  const scripted = (log: string[], script: Record<string, { steps: number; failAt?: number; gateAt?: number }>) =>
    async (c: FleetIndexEntry, _v: unknown, _io: unknown, stopBefore: () => string | undefined) => {
      const s = script[c.name]!;
      for (let i = 0; i < s.steps; i++) {
        const why = stopBefore();
        if (why) { log.push(`${c.name} stopped before ${i}: ${why}`); return ExitCode.gate; }
        await new Promise((r) => setTimeout(r, 5));
        if (i === s.failAt) { log.push(`${c.name} failed at ${i}`); return ExitCode.verifyFailed; }
        if (i === s.gateAt) { log.push(`${c.name} gate at ${i}`); return ExitCode.gate; }
        log.push(`${c.name} ${i}`);
      }
      return ExitCode.ok;
    };

  it('the canary alone first, then waves of N; clusters that keep their ranges never run', async () => {
    const log: string[] = [];
    const r = await runFleet(index(['a', 'b', 'c', 'd'], 'c'), { parallel: 2, values: {}, io: io().io, completed: () => false,
      run: scripted(log, { a: { steps: 2 }, b: { steps: 2 }, c: { steps: 2 }, d: { steps: 2 } }) });
    assert.deepEqual(r.map((x) => [x.name, x.wave, x.code]), [['c', 0, 0], ['a', 1, 0], ['b', 1, 0], ['d', 2, 0]]);
    assert.deepEqual(log.slice(0, 2), ['c 0', 'c 1']);
    assert.deepEqual(new Set(log.slice(2, 6)), new Set(['a 0', 'a 1', 'b 0', 'b 1']));
    assert.deepEqual(log.slice(6), ['d 0', 'd 1']);
  });

  it('a failure stops the other clusters of its wave at their next step boundary, and no later wave starts; the next run resumes', async () => {
    const log: string[] = [];
    const r = await runFleet(index(['a', 'b', 'c']), { parallel: 2, values: {}, io: io().io, completed: () => false,
      run: scripted(log, { a: { steps: 1 }, b: { steps: 10, failAt: 1 }, c: { steps: 10 } }) });
    assert.deepEqual(r.map((x) => [x.name, x.code]), [['a', 0], ['b', ExitCode.verifyFailed], ['c', ExitCode.gate]]);
    assert.ok(log.some((l) => /^c stopped before \d: cluster b of the fleet failed \(exit 6\)/.test(l)), log.join('\n'));
    assert.ok(log.filter((l) => /^c \d$/.test(l)).length < 10, 'c did not run to its end');
    // resumed: the canary completed before is skipped, b and c run to their end
    const log2: string[] = [];
    const again = await runFleet(index(['a', 'b', 'c']), { parallel: 2, values: {}, io: io().io, completed: (c) => c.name === 'a',
      run: scripted(log2, { a: { steps: 1 }, b: { steps: 3 }, c: { steps: 3 } }) });
    assert.deepEqual(again.map((x) => [x.name, x.code]), [['a', 0], ['b', 0], ['c', 0]]);
    assert.ok(!log2.some((l) => l.startsWith('a ')), 'a is not run again');
  });

  it('a canary that stops at a gate or fails holds back every wave; a gate does not stop its wave\'s other clusters', async () => {
    const log: string[] = [];
    const r = await runFleet(index(['a', 'b', 'c']), { parallel: 2, values: {}, io: io().io, completed: () => false,
      run: scripted(log, { a: { steps: 3, gateAt: 1 }, b: { steps: 2 }, c: { steps: 2 } }) });
    assert.deepEqual(r.map((x) => [x.name, x.code]), [['a', ExitCode.gate]]);
    const log2: string[] = [];
    const r2 = await runFleet(index(['a', 'b', 'c']), { parallel: 2, values: {}, io: io().io, completed: (c) => c.name === 'a',
      run: scripted(log2, { a: { steps: 1 }, b: { steps: 4, gateAt: 0 }, c: { steps: 4 } }) });
    assert.deepEqual(r2.map((x) => [x.name, x.code]), [['a', 0], ['b', ExitCode.gate], ['c', 0]]);
    assert.deepEqual(log2.filter((l) => l.startsWith('c ')), ['c 0', 'c 1', 'c 2', 'c 3']);
  });

  it('an error thrown by a cluster\'s run is its exit code, and stops the others too', async () => {
    const log: string[] = [];
    const out = io();
    const r = await runFleet(index(['a', 'b', 'c']), { parallel: 2, values: {}, io: out.io, completed: (c) => c.name === 'a',
      run: async (c, v, cio, stopBefore) => {
        if (c.name === 'b') { await new Promise((res) => setTimeout(res, 5)); const { UserError } = await import('../../src/errors.ts'); throw new UserError('locked by another run', 'locked'); }
        return scripted(log, { c: { steps: 20 } })(c, v, cio, stopBefore);
      } });
    assert.deepEqual(r.map((x) => [x.name, x.code]), [['a', 0], ['b', ExitCode.locked], ['c', ExitCode.gate]]);
    assert.ok(out.lines.some((l) => l === '[b] error: locked by another run\n'), out.lines.join(''));
  });
});
