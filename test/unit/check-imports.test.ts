import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { cycles, importGraph, layerOf, violations } from '../../scripts/check-imports.ts';

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'kr-imports-'));
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

describe('import rules', () => {
  it('finds a file cycle through type-only and multi-line imports', () => {
    const root = tree({
      'cli/main.ts': "import {\n  a,\n  b,\n} from './commands/x.ts';\n",
      'cli/commands/x.ts': "import type { Io } from '../main.ts';\nexport const a = 1, b = 2;\n",
      'net/ip.ts': 'export const x = 1;\n',
    });
    const v = violations(importGraph(root));
    assert.deepEqual(v, ['file cycle: cli/commands/x.ts → cli/main.ts']);
  });

  it('finds a folder cycle even without a file cycle, and names an import on each side', () => {
    const root = tree({
      'cluster/build.ts': "import { parse } from '../distro/kops.ts';\n",
      'cluster/types.ts': 'export type T = 1;\n',
      'distro/kops.ts': "import type { T } from '../cluster/types.ts';\nexport const parse = 1;\n",
    });
    const v = violations(importGraph(root));
    assert.equal(v.length, 1);
    assert.match(v[0]!, /^folder cycle: cluster ↔ distro \(cluster\/build\.ts imports distro\/kops\.ts; distro\/kops\.ts imports cluster\/types\.ts\)$/);
  });

  it('refuses imports of src/cli from other folders', () => {
    const root = tree({
      'cli/errors.ts': 'export const E = 1;\n',
      'engine/run.ts': "export { E } from '../cli/errors.ts';\n",
    });
    assert.deepEqual(violations(importGraph(root)), ['engine/run.ts imports cli/errors.ts: only src/cli may import src/cli']);
  });

  it('accepts a layered tree', () => {
    const root = tree({
      'errors.ts': 'export class E extends Error {}\n',
      'net/ip.ts': "import { E } from '../errors.ts';\n",
      'cluster/build.ts': "import { E } from '../errors.ts';\nimport '../net/ip.ts';\n",
      'cli/main.ts': "import '../cluster/build.ts';\nimport './commands/a.ts';\n",
      'cli/commands/a.ts': "import '../../cluster/build.ts';\n",
    });
    assert.deepEqual(violations(importGraph(root)), []);
    assert.equal(layerOf('errors.ts'), 'errors');
    assert.equal(layerOf('cli/commands/a.ts'), 'cli');
  });

  it('cycles: self loops count, acyclic graphs give none', () => {
    assert.deepEqual(cycles(['a'], new Map([['a', new Set(['a'])]])), [['a']]);
    assert.deepEqual(cycles(['a', 'b', 'c'], new Map([['a', new Set(['b'])], ['b', new Set(['c'])]])), []);
    assert.deepEqual(cycles(['a', 'b', 'c'], new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a'])]])), [['a', 'b', 'c']]);
  });
});
