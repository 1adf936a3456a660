// control-plane-load's own figures: busy cores from two /proc/stat readings, and --compare's verdict.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { busyCores, COMPARE_MAX_P99, compareVerdict, daemonPodNode, machineTicks, run, type RunLine } from '../../bench/control-plane-load.ts';

const stat = (user: number, nice: number, system: number, idle: number, iowait: number, irq: number, softirq: number, steal: number) =>
  `cpu  ${user} ${nice} ${system} ${idle} ${iowait} ${irq} ${softirq} ${steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n`;

test('machineTicks: busy counts user, nice, system, irq, softirq and steal; idle and iowait only in all', () => {
  assert.deepEqual(machineTicks(stat(100, 20, 30, 400, 50, 5, 7, 3)), { busy: 165, all: 615 });
});

test('busyCores: the share of ticks busy between two readings, times the cores', () => {
  const a = machineTicks(stat(100, 0, 0, 100, 0, 0, 0, 0));
  // 150 busy ticks of 200 on 2 cores: 1.5 cores busy
  assert.equal(busyCores(a, machineTicks(stat(220, 10, 20, 150, 0, 0, 0, 0)), 2), 1.5);
  // nothing elapsed: 0, not NaN
  assert.equal(busyCores(a, a, 2), 0);
});

test('machineTicks refuses a file without a cpu line', () => {
  assert.throws(() => machineTicks('intr 1 2 3\n'), /no cpu line/);
});

test('machineTicks reads this machine: busy never above all', () => {
  const t = machineTicks();
  assert.ok(t.all > 0 && t.busy >= 0 && t.busy <= t.all, JSON.stringify(t));
});

// --compare's verdict: the tool's run against the control's
const line = (over: Partial<RunLine> & { p99?: number } = {}): RunLine => ({
  mode: 'tool', completed: 1, leaseLosses: 0, podsLost: 0, pdbViolations: 0, idle: { p99Ms: 100 }, during: { p99Ms: over.p99 ?? 400 },
  otherClientP99Ratio: 4, resumeSeconds: 900, ...over,
});
const control = line({ mode: 'control', p99: 400 });

test('compareVerdict: PASS when the tool completed cleanly and its p99 during is within COMPARE_MAX_P99 of the control\'s', () => {
  const v = compareVerdict(control, line({ p99: 400 * COMPARE_MAX_P99 }));
  assert.deepEqual(v, { pass: true, toolOverControlP99: COMPARE_MAX_P99, failures: [] });
  // a tool faster on the probe than the control passes too
  assert.equal(compareVerdict(control, line({ p99: 300 })).toolOverControlP99, 0.75);
});

test('compareVerdict: FAIL names each reason', () => {
  const slow = compareVerdict(control, line({ p99: 520 }));
  assert.equal(slow.pass, false);
  assert.match(slow.failures.join(), /1\.3 × the control's \(520 against 400 ms\), above 1\.25/);
  const bad = compareVerdict(line({ mode: 'control', completed: 0, p99: 400 }), line({ completed: 0, leaseLosses: 2, podsLost: 1, pdbViolations: 3 }));
  assert.equal(bad.pass, false);
  for (const re of [/control did not complete/, /tool's run did not complete/, /lost its Lease 2/, /pods lost: tool 1, control 0/, /PodDisruptionBudget 3/]) {
    assert.ok(bad.failures.some((f) => re.test(f)), `${re} in ${bad.failures.join(' | ')}`);
  }
  assert.match(compareVerdict(line({ mode: 'control', p99: 0 }), line()).failures.join(), /no p99 during/);
  assert.match(compareVerdict(line(), line()).failures.join(), /modes are tool and tool/);
});

test('bad input: one error line, exit 2, before any testbed starts', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['--pace', '0'], /^error: --pace 0 must be a number of nodes a minute, more than 0\n$/],
    [['--control', '--pace', 'fast'], /^error: --pace fast must be/],
    [['--compare', '--control'], /^error: --compare runs the control itself; leave out --control\n$/],
    // --compare hands its flags to each run: the control's refuses them before its testbed
    [['--compare', '--pace=-1'], /^error: --pace -1 must be/],
    [['--pase', '20'], /^error: Unknown option '--pase'/],
    [['--tool-nice', '20'], /^error: --tool-nice must be a whole number from 0 to 19\n$/],
    [['--nodes', '2000'], /^error: --nodes \(at most 1024\)/],
  ];
  for (const [args, want] of cases) {
    const written: string[] = [];
    const w = t.mock.method(process.stderr, 'write', (s: string) => { written.push(String(s)); return true; });
    let code: number;
    try { code = await run(args, () => { throw new Error('nothing goes to stdout'); }); } finally { w.mock.restore(); }
    assert.equal(code, 2, args.join(' '));
    assert.equal(written.length, 1, `${args.join(' ')}: ${written.join('')}`);
    assert.match(written[0]!, want);
  }
});

// podsLost's account names an unbound DaemonSet pod's node: the DaemonSet controller pins each pod to its node by a
// required affinity on metadata.name, and spec.nodeName stays empty until the scheduler binds it
test('daemonPodNode: the node a DaemonSet pod is pinned to before it is bound', () => {
  const pinned = (fields: unknown[]) => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'agent-x', namespace: 'tb-wl-0' },
    spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: fields }] } } } },
  });
  assert.equal(daemonPodNode(pinned([{ key: 'metadata.name', operator: 'In', values: ['tb-node-367'] }])), 'tb-node-367');
  // not a pin to one node: another field, another operator, several names
  assert.equal(daemonPodNode(pinned([{ key: 'spec.unschedulable', operator: 'In', values: ['false'] }])), undefined);
  assert.equal(daemonPodNode(pinned([{ key: 'metadata.name', operator: 'NotIn', values: ['tb-node-367'] }])), undefined);
  assert.equal(daemonPodNode(pinned([{ key: 'metadata.name', operator: 'In', values: ['a', 'b'] }])), undefined);
  assert.equal(daemonPodNode({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} }), undefined);
});
