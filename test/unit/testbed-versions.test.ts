import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MATRIX_VERSIONS } from '../matrix/results.ts';
import { K8S_VERSION_PATTERN } from '../testbed/build.ts';

test('every version of the matrix is one the testbed build takes (the 1.38 beta included)', () => {
  for (const [minor, version] of Object.entries(MATRIX_VERSIONS)) {
    assert.match(version, K8S_VERSION_PATTERN, `${minor}: ${version}`);
    assert.ok(version.startsWith(`v${minor}.`), `${minor}: ${version}`);
  }
  assert.ok(Object.values(MATRIX_VERSIONS).some((v) => v.includes('-beta.')));
});

test('the testbed build refuses what the module proxy would not name a release', () => {
  for (const ok of ['v1.35.4', 'v1.38.0-beta.0', 'v1.38.0-rc.1', 'v1.38.0-alpha.2']) assert.match(ok, K8S_VERSION_PATTERN);
  for (const bad of ['1.35.4', 'v1.35', 'v1.35.4-foo', 'v1.35.4-beta', 'v1.35.4 ', 'v1.35.4-beta.0;rm']) assert.doesNotMatch(bad, K8S_VERSION_PATTERN);
});
