import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, test } from 'node:test';
import { compatibilityCheck } from '../../src/plan/compatibility.ts';
import { MATRIX_UNBUILT as MATRIX_UNBUILT_DATA } from '../../src/plan/compatibility-data.ts';
import { buildServicePlan } from '../../src/plan/plan.ts';
import { kubeadmSnapshot, svc } from './fixtures.ts';
import { failureReason, MATRIX_VERSIONS, renderCompatibilityData, renderCompatibilityPage, withReadmeTable, type MatrixResults } from '../matrix/results.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the version matrix and the planner', () => {
  const failures = [{ minor: 30, version: 'v1.30.14', path: 'service' as const, reason: 'apply: exit 6' }];

  test('a failed version/path pair is refused with the matrix reason; other minors and paths are not', () => {
    const c = compatibilityCheck('v1.30.2', 'service', failures);
    assert.equal(c?.status, 'fail');
    assert.equal(c?.target, true);
    assert.match(c!.message, /service path failed end to end on Kubernetes v1\.30\.14 .*apply: exit 6/);
    assert.equal(compatibilityCheck('v1.30.2', 'node', failures), undefined);
    assert.equal(compatibilityCheck('v1.31.0', 'service', failures), undefined);
    assert.equal(compatibilityCheck(undefined, 'service', failures), undefined);
    assert.equal(compatibilityCheck('v1.30.1-eks-1234', 'service', failures)?.status, 'fail');
  });

  test('a minor the matrix could not build warns, naming the nearest version run; a failure there still refuses', () => {
    const unbuilt = [{ minor: 29, version: 'v1.29.6', reason: 'the Go module proxy refuses k8s.io/endpointslice@v0.29.6' }];
    const w = compatibilityCheck('v1.29.3', 'service', [], unbuilt, ['v1.37.2', 'v1.30.14']);
    assert.equal(w?.status, 'warn');
    assert.match(w!.message, /not run on Kubernetes 1\.29: its testbed could not be built \(the Go module proxy refuses k8s\.io\/endpointslice@v0\.29\.6\); the nearest version it ran on is v1\.30\.14/);
    assert.equal(compatibilityCheck('v1.29.3', 'service', [{ minor: 29, version: 'v1.29.6', path: 'service', reason: 'x' }], unbuilt, [])?.status, 'fail');
    assert.equal(compatibilityCheck('v1.30.3', 'service', [], unbuilt, ['v1.30.14']), undefined);
  });

  test('the page and the planner data are made from results.json as committed', () => {
    const file = join(ROOT, 'test/matrix/results.json');
    const results: MatrixResults = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { entries: [] };
    assert.equal(readFileSync(join(ROOT, 'docs/compatibility.md'), 'utf8'), renderCompatibilityPage(results), 'run `npm run matrix -- --render-only`');
    assert.equal(readFileSync(join(ROOT, 'src/plan/compatibility-data.ts'), 'utf8'), renderCompatibilityData(results), 'run `npm run matrix -- --render-only`');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    assert.equal(withReadmeTable(readme, results), readme, 'the README table: run `npm run matrix -- --render-only`');
    assert.match(readme, /## Supported Kubernetes versions/);
  });

  test('rendering: a failure becomes a refusal and a line of the page; every matrix version has a row', () => {
    const results: MatrixResults = { entries: [
      { version: 'v1.29.6', path: 'service', result: 'pass', seconds: 70, tests: 5, passed: 5, date: '2026-11-28', loadAverage: [1, 1], serviceCIDRApi: 'v1alpha1', buildSeconds: 900 },
      { version: 'v1.29.6', path: 'node', result: 'fail', seconds: 80, tests: 2, passed: 1, date: '2026-11-28', loadAverage: [1, 1], failedTest: 'plan', reason: 'kcm exited' },
    ] };
    const page = renderCompatibilityPage(results);
    for (const v of Object.values(MATRIX_VERSIONS)) assert.match(page, new RegExp(`\\| ${v.replace(/\./g, '\\.')} \\|`));
    assert.match(page, /\| v1\.29\.6 \| networking\.k8s\.io\/v1alpha1 \(gate \+ runtime-config\) \| 900 \| pass \(70 s\) \| \*\*fail\*\* \(80 s\) \| not run yet \|/);
    assert.match(page, /- \*\*v1\.29\.6, node\*\*: test "plan": kcm exited/);
    const data = renderCompatibilityData(results);
    assert.match(data, /\{ minor: 29, version: "v1\.29\.6", path: "node", reason: "plan: kcm exited" \}/);
    assert.match(data, /MATRIX_PASSED_VERSIONS: readonly string\[\] = \["v1\.29\.6"\]/);
  });
});

describe('a matrix failure\'s reason', () => {
  it('is the CLI\'s error line, its end kept when long (the apiserver\'s words come last)', () => {
    const cause = 'failed: POST /api/v1/namespaces/default/services: 422 Invalid Service "x" is invalid: the provided range does not match the current range';
    const msg = `[1/16] confirm: started\n[1/16] confirm: done\nerror: ${'step description '.repeat(50)}${cause}\n  then run: kube-renumber resume`;
    const r = failureReason(msg);
    assert.ok(r.length <= 600, `${r.length} characters`);
    assert.match(r, /^error: …/);
    assert.ok(r.includes('the provided range does not match the current range'), r);
    assert.equal(failureReason(`error: short cause`), 'error: short cause');
  });
  it('is the message\'s start when there is no error line', () => {
    assert.equal(failureReason('AssertionError: 1 !== 2\n  at x'), 'AssertionError: 1 !== 2 at x');
    assert.equal(failureReason('x'.repeat(700)).length, 600);
  });
});

describe('plan consults the version matrix for the Service path', () => {
  const snapshotOn = (kubernetesVersion: string) => kubeadmSnapshot([svc('default', 'kubernetes', '10.96.0.1', { ports: [{ port: 443 }] }),
    svc('kube-system', 'kube-dns', '10.96.0.10', { ports: [{ port: 53, protocol: 'UDP' }], selector: { 'k8s-app': 'kube-dns' } })],
  { kubernetesVersion });

  test('a minor the matrix could not build is a warning in the plan; a minor it ran is not mentioned', () => {
    const unbuilt = MATRIX_UNBUILT_DATA[0];
    assert.ok(unbuilt, 'the matrix lists a minor it could not build');
    const p = buildServicePlan(snapshotOn(`v1.${unbuilt.minor}.2`), { target: '172.24.0.0/16' });
    const c = p.preflight.find((x) => x.id === 'kubernetes-version');
    assert.equal(c?.status, 'warn', JSON.stringify(p.preflight.map((x) => x.id)));
    assert.match(c!.message, /the service path was not run on Kubernetes 1\.\d+/);
    const ran = buildServicePlan(snapshotOn('v1.37.1'), { target: '172.24.0.0/16' });
    assert.equal(ran.preflight.find((x) => x.id === 'kubernetes-version'), undefined);
  });
});
