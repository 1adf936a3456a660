// The project's own Calico definitions (test/testbed/crds/) on the real kube-apiserver: every case of cases.ts is
// accepted or refused as Calico's API reference says (check-live.ts prints one line per case).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

test('the Calico CRDs accept and refuse what Calico does', () => {
  const script = join(fileURLToPath(new URL('.', import.meta.url)), '../testbed/crds/check-live.ts');
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^\d+ cases, 0 unexpected/m);
  assert.doesNotMatch(r.stdout, /^FAIL/m);
});
