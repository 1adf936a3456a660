// The Calico CRDs (calico.ts) on a real kube-apiserver: starts a testbed (which applies them; the apiserver
// refuses a definition it cannot accept, e.g. a CEL rule over its cost budget), creates every object of
// cases.ts with `kubectl create --validate=strict` (unknown fields refused, not pruned), applies the IPPool
// updates, and prints one line per case. Exit 1 when a verdict differs from the expected one.
//
//   node test/testbed/crds/check-live.ts [--version v1.35.4]

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Testbed } from '../cluster.ts';
import { CASES, POOL_UPDATES } from './cases.ts';

const { values } = parseArgs({ options: { version: { type: 'string' } } });
const t0 = Date.now();
const tb = await Testbed.start({ nodes: 1, ...(values.version ? { version: values.version } : {}) });
let unexpected = 0;
try {
  console.log(`testbed ${values.version ?? '(default version)'} up, Calico CRDs established, in ${Date.now() - t0} ms`);
  const report = (name: string, want: boolean, r: { code: number; stdout: string; stderr: string }) => {
    const got = r.code === 0;
    if (got !== want) unexpected++;
    const why = got ? 'accepted' : `refused: ${(r.stderr || r.stdout).trim().split('\n').filter((l) => !l.includes('some validation rules were not checked')).join(' ')}`;
    console.log(`${got === want ? 'ok  ' : 'FAIL'} ${name}: ${why}`);
  };
  for (const c of CASES) {
    const f = join(tb.stateDir, 'case.json');
    await writeFile(f, JSON.stringify(c.object));
    report(c.name, c.accept, await tb.kubectl(['create', '--validate=strict', '-f', f]));
  }
  const p1 = CASES[0]!.object.metadata.name;
  for (const u of POOL_UPDATES) {
    report(u.name, u.accept, await tb.kubectl(['patch', 'ippools.crd.projectcalico.org', p1, '--type=merge', '-p', JSON.stringify(u.patch)]));
  }
} finally {
  await tb.stop();
}
console.log(`${CASES.length + POOL_UPDATES.length} cases, ${unexpected} unexpected, ${Date.now() - t0} ms`);
process.exit(unexpected ? 1 : 0);
