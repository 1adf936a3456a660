/**
 * npm run rbac: writes deploy/rbac*.yaml from what the code declares (src/plan/rbac-core.ts, src/plan/rbac-platforms.ts,
 * src/pod-paths/<id>/rbac.ts). test/unit/rbac-generated.test.ts fails while a committed file differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { install } from '../src/install.ts';
import { shippedRbac } from '../src/pod-paths/rbac.ts';

install();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
for (const f of shippedRbac()) {
  const file = join(ROOT, f.path);
  let old = '';
  try { old = readFileSync(file, 'utf8'); } catch { /* a new file */ }
  if (old === f.text) continue;
  writeFileSync(file, f.text);
  process.stdout.write(`wrote ${f.path}\n`);
}
