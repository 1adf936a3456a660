/**
 * Every output format of `plan` starts with the plan's summary, and the summary agrees with the plan: its moves
 * are the plan's ranges, its Service counts the mapping's, its restarts the pods the dump holds, its nodes the
 * node steps' items, its gates the plan's gate steps, its rollback the first step a rollback cannot undo whole.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import { planSummary, durationText, MEASURED_RATES } from '../../src/plan/summary.ts';
import { instructionMarkdown } from '../../src/plan/render.ts';
import { run } from './run-cli.ts';
import { install } from '../../src/install.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KOPS = join(ROOT, 'examples/kops-tailscale');
const KUBEADM = join(ROOT, 'examples/kubeadm-exhausted');

/** The dump's pods as kubectl wrote them: the restarts are counted from these, independently of the snapshot. */
function dumpPods(dir: string): any[] {
  const docs = yaml.loadAll(readFileSync(join(dir, 'pods.yaml'), 'utf8')) as any[];
  return docs.flatMap((d) => (d?.kind === 'List' || Array.isArray(d?.items) ? d.items : [d])).filter((o) => o?.kind === 'Pod');
}

/** Pods on the pod network that a restart finds (running, not hostNetwork, not mirror), in `prefix` when given. */
function restartable(pods: any[], inPrefix?: string): any[] {
  return pods.filter((p) => !p.spec?.hostNetwork && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'
    && !(p.metadata.ownerReferences ?? []).some((o: any) => o.kind === 'Node')
    && (!inPrefix || (p.status?.podIPs ?? [{ ip: p.status?.podIP }]).some((x: any) => String(x?.ip).startsWith(inPrefix))));
}

const FORMATS = ['table', 'wide', 'json', 'yaml', 'markdown', 'html'] as const;
const ARGS = ['plan', '-f', KOPS, '--service-cidr', '10.6.0.0/20', '--pod-cidr', '10.4.0.0/15'];

describe('plan summary', async () => {
  const json = await run([...ARGS, '-o', 'json']);
  assert.equal(json.code, 0, json.err);
  const doc = JSON.parse(json.out);
  const s = doc.summary;

  it('json and yaml: summary is the first field, the same in both', async () => {
    assert.equal(Object.keys(doc)[0], 'summary');
    const y = await run([...ARGS, '-o', 'yaml']);
    assert.equal(y.code, 0, y.err);
    assert.match(y.out, /^summary:\n/);
    assert.deepEqual((yaml.load(y.out) as any).summary, s);
  });

  it('every format starts with the summary and shows its values', async () => {
    for (const f of FORMATS) {
      const r = await run([...ARGS, '-o', f]);
      assert.equal(r.code, 0, `${f}: ${r.err}`);
      const text = r.out;
      const first = f === 'table' || f === 'wide' ? /^SUMMARY\n/ : f === 'markdown' ? /^# Migration: [^\n]+\n\n## Summary\n/ : f === 'html' ? /<main>\s*<section id="summary"><h2>Summary<\/h2>/ : /^(\{\n {2}"summary"|summary:)/;
      assert.match(text, first, `${f} starts with the summary`);
      for (const v of ['100.64.0.0/13 → 10.6.0.0/20', '100.96.0.0/11 → 10.4.0.0/15', `${s.services.moved} moved`, 'kube-renumber rollback PLAN.yaml']) {
        if (f === 'json' || f === 'yaml') continue;
        assert.ok(text.includes(v), `${f}: the summary shows ${v}`);
      }
      if (f !== 'json' && f !== 'yaml') {
        // the summary comes before the first section of the plan itself
        const at = text.indexOf('kube-renumber rollback PLAN.yaml');
        const plan = f === 'markdown' ? text.indexOf('| Cluster |') : f === 'html' ? text.indexOf('<section id="plan">') : text.indexOf('\nPLAN\n');
        assert.ok(at >= 0 && plan > at, `${f}: summary before the plan (${at} < ${plan})`);
      }
    }
  });

  it('moves and Service counts are the plan\'s own', () => {
    assert.deepEqual(s.moves, [
      { range: 'Service CIDR', from: doc.spec.serviceCIDR.from, to: doc.spec.serviceCIDR.target },
      { range: 'Pod CIDR', from: doc.spec.podCIDR.from, to: doc.spec.podCIDR.to },
    ]);
    const count = (a: string) => doc.mapping.filter((m: any) => m.action === a).length;
    assert.deepEqual(s.services, { moved: count('move'), kept: count('keep'), skipped: count('skip') });
  });

  it('restarts: the step that restarts is the plan\'s, and its counts are the dump\'s pods in the old pod range', () => {
    const step = doc.steps.findIndex((x: any) => x.kind === 'restart-pods');
    assert.ok(step >= 0);
    const r = s.restarts.find((x: any) => x.by === 'tool');
    assert.equal(r.step, 'restart-pods');
    assert.equal(r.number, step + 1);
    const pods = restartable(dumpPods(KOPS), '100.');
    assert.ok(pods.length > 0);
    assert.equal(r.counts.reduce((a: number, c: any) => a + c.pods, 0), pods.length, 'every restarted pod counted once');
    const bare = pods.filter((p) => !(p.metadata.ownerReferences ?? []).some((o: any) => o.controller)).length;
    assert.equal(r.counts.find((c: any) => c.kind === 'bare pod')?.workloads ?? 0, bare);
    const sets = new Set(pods.filter((p) => p.metadata.ownerReferences?.[0]?.kind === 'StatefulSet').map((p) => p.metadata.ownerReferences[0].name));
    assert.equal(r.counts.find((c: any) => c.kind === 'StatefulSet')?.workloads ?? 0, sets.size);
    // the kOps gate restart-workloads holds once the tool's restart did it
    const gate = s.restarts.find((x: any) => x.by === 'operator');
    assert.equal(gate.step, 'restart-workloads');
    assert.match(gate.what, /restart-pods/);
  });

  it('gates: one line for each gate and confirmation of the plan, in order, with its step number', () => {
    const pauses = doc.steps.map((x: any, i: number) => ({ x, i })).filter(({ x }: any) => x.kind === 'gate' || x.kind === 'confirm');
    assert.deepEqual(s.stops.map((g: any) => [g.step, g.number, g.kind]), pauses.map(({ x, i }: any) => [x.id, i + 1, x.kind]));
  });

  it('rollback: the last change before the first step a rollback cannot undo whole, and the command', () => {
    const oneWay = doc.steps.findIndex((x: any) => x.id === s.rollback.firstOneWay.step);
    assert.equal(s.rollback.firstOneWay.number, oneWay + 1);
    assert.equal(doc.steps[oneWay].kind, 'drain-servicecidrs', 'the old range goes first in this plan');
    const last = doc.steps[s.rollback.lastUndoable.number - 1];
    assert.equal(last.id, s.rollback.lastUndoable.step);
    assert.ok(s.rollback.lastUndoable.number < oneWay + 1);
    for (const x of doc.steps.slice(s.rollback.lastUndoable.number, oneWay)) assert.ok(['gate', 'confirm'].includes(x.kind), `${x.id} changes nothing`);
    assert.equal(s.rollback.command, 'kube-renumber rollback PLAN.yaml');
  });

  it('duration: a range labelled as an estimate, from the measured rates and the plan\'s own counts', () => {
    assert.equal(s.duration.estimate, true);
    assert.ok(s.duration.minSeconds > 0 && s.duration.minSeconds <= s.duration.maxSeconds);
    const moved = doc.steps.filter((x: any) => ['move-services', 'move-load-balancers', 'move-kubernetes', 'sweep-services'].includes(x.kind)).reduce((a: number, x: any) => a + (x.items ?? []).length, 0);
    const batches = doc.steps.filter((x: any) => x.kind === 'move-services' || x.kind === 'move-load-balancers').length;
    const svc = s.duration.parts[0];
    assert.equal(svc.minSeconds, Math.round(moved / MEASURED_RATES.servicesPerSecond.fast + batches * MEASURED_RATES.batchWaitSeconds));
    const workloads = s.restarts[0].counts.reduce((a: number, c: any) => a + c.workloads, 0);
    const rounds = Math.ceil(workloads / doc.spec.podCIDR.restarts.parallel);
    assert.equal(s.duration.parts[1].maxSeconds, Math.round(rounds * MEASURED_RATES.rolloutRoundSeconds.slow));
    assert.match(durationText({ minSeconds: 70, maxSeconds: 82 }), /^about 70 to 82 seconds$/);
    assert.match(durationText({ minSeconds: 40, maxSeconds: 300 }), /^about 40 seconds to 5 minutes$/);
  });

  it('references: counts of the plan\'s references by what they need', async () => {
    assert.deepEqual(s.references, { total: (doc.references ?? []).length, needAction: (doc.references ?? []).filter((r: any) => r.severity === 'error').length, toReview: (doc.references ?? []).filter((r: any) => r.severity !== 'error').length });
    // every bundled example: the summary counts the plan's references
    const dirs = [...readdirSync(join(ROOT, 'examples'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(ROOT, 'examples', e.name))];
    for (const d of dirs) {
      const r = await run(['plan', '-f', d, '--service-cidr', '10.250.0.0/20', '-o', 'json']);
      if (r.code > 1) continue;
      const p = JSON.parse(r.out);
      const refs = p.references ?? [];
      assert.deepEqual(p.summary.references.total, refs.length, d);
    }
  });

  it('node path: the nodes counted are the node steps\' items, one wave a step', async () => {
    const r = await run(['plan', '-f', KUBEADM, '--pod-cidr', '10.100.0.0/14', '--ipam', 'node', '--node-hook', 'true', '--max-unavailable', '10%', '-o', 'json']);
    assert.ok(r.code <= 1, r.err);
    const p = JSON.parse(r.out);
    const steps = p.steps.filter((x: any) => x.kind === 'move-nodes' || x.kind === 'drain-node');
    assert.ok(steps.length > 1);
    const nodes = p.summary.restarts.find((x: any) => x.counts[0]?.kind === 'Node');
    assert.equal(nodes.counts[0].workloads, steps.reduce((a: number, x: any) => a + x.items.length, 0));
    assert.match(nodes.what, new RegExp(`in ${steps.length} waves`));
    assert.equal(p.summary.rollback.firstOneWay.step, steps[0].id);
  });

  it('planSummary without pods names the restarts without counts', () => {
    const plan = { ...doc };
    delete plan.summary;
    const bare = planSummary(plan, undefined);
    assert.deepEqual(bare.restarts.map((x) => x.counts), [[], []]);
    assert.equal(bare.rollback.command, 'kube-renumber rollback plan.yaml');
  });
});

describe('apply prints the summary before its first change', () => {
  // docs/walkthrough.md is a real run's output (test/integration/walkthrough.test.ts keeps it so)
  it('in docs/walkthrough.md, each apply starts with the summary, before its first step', () => {
    const page = readFileSync(join(ROOT, 'docs/walkthrough.md'), 'utf8');
    const runs = [...page.matchAll(/^\$ kube-renumber apply (\S+)[^\n]*\n([\s\S]*?)(?=^\$ |^```)/gm)];
    assert.ok(runs.length > 0, 'the page shows apply');
    for (const [, file, out] of runs) {
      const summary = out!.indexOf('SUMMARY\n');
      const step = out!.search(/^\[1\/\d+\] /m);
      assert.ok(summary === 0, `apply ${file}: the summary comes first (at ${summary})`);
      assert.ok(step > summary, `apply ${file}: before the first step (at ${step})`);
      assert.match(out!, new RegExp(`kube-renumber rollback ${file.replace(/[.]/g, '\\.')} undoes`), `apply ${file}: the rollback names the plan file`);
    }
  });
});

describe('plan -o markdown reads as prose', () => {
  it('gate instructions: words as words, commands as code', () => {
    assert.equal(instructionMarkdown('kops edit cluster (apply patch kops-service-range)'), '`kops edit cluster` (apply patch kops-service-range)');
    assert.equal(instructionMarkdown('on every node: kubeadm upgrade node phase kubelet-config && systemctl restart kubelet'),
      'on every node: `kubeadm upgrade node phase kubelet-config && systemctl restart kubelet`');
    assert.equal(instructionMarkdown('delete (or let their owners recreate) bare pods'), 'delete (or let their owners recreate) bare pods');
    assert.equal(instructionMarkdown('kops rolling-update cluster --yes   # the remaining (node) instance groups'), '`kops rolling-update cluster --yes` (the remaining (node) instance groups)');
  });

  it('no instruction of a bundled example is one code span of words', async () => {
    const r = await run([...ARGS, '-o', 'markdown']);
    assert.equal(r.code, 0, r.err);
    const items = r.out.split('\n').filter((l) => /^\d+\. /.test(l));
    assert.ok(items.length > 3);
    for (const l of items) assert.doesNotMatch(l, /^\d+\. `[^`]*\b(?:every|then|when|each|the)\b[^`]*`$/, `prose in a code span: ${l}`);
  });
});
