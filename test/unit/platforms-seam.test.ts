/**
 * The seam for platforms, derived from the registry (src/platforms/registry.ts) as test/unit/pod-paths-seam.test.ts
 * is for pod paths: every platform is installed into both layers under its own kind, and lives in its folder, so no
 * file of src/ outside that folder names it (its id as a string) or imports from it; the registry only imports.
 * What a platform knows that a lower layer asks (the signs its installer leaves, its documents read from files, the
 * node groups they cap, its readiness fact) is declared in its folder and installed by the registry.
 */
import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { plannerOfPlatform } from '../../src/plan/distributions/registry.ts';
import { fallbackPlatform, platformOf, platforms } from '../../src/platform/registry.ts';
import { PLATFORM_MODULES } from '../../src/platforms/registry.ts';

install();

const ROOT = new URL('../../', import.meta.url).pathname;
const REGISTRY = 'src/platforms/registry.ts';
/** Every platform the registry lists, in its order. */
const KINDS = Object.keys(PLATFORM_MODULES);
const MODULES = PLATFORM_MODULES as Record<string, { platform: { kind: string }; planner?: unknown }>;

/** The folder of each platform: the registry's import line that brings it in. */
function folders(): Map<string, string> {
  const out = new Map<string, string>();
  const text = readFileSync(`${ROOT}${REGISTRY}`, 'utf8');
  for (const m of text.matchAll(/^import \{ ([^}]+) \} from '\.\/([a-z0-9-]+)\/index\.ts';$/gm)) {
    for (const name of m[1]!.split(',').map((s) => s.trim())) out.set(name, m[2]!);
  }
  return out;
}

/** The .ts files of src/ outside `folder` that name platform `id` or import from `folder`. */
function namers(id: string, folder: string, files: readonly string[]): string[] {
  const names = new RegExp(`['"\`]${id}['"\`]`);
  const imports = new RegExp(`(?:from|import)\\s*\\(?['"][^'"]*/platforms/${folder}/`);
  return files.filter((f) => !f.startsWith(`src/platforms/${folder}/`)).filter((f) => {
    const text = readFileSync(`${ROOT}${f}`, 'utf8');
    return (f !== REGISTRY && imports.test(text)) || (names.test(text) && f !== REGISTRY);
  }).sort();
}

describe('platforms: one folder each, one registry line', () => {
  it('the registry installs every platform under its own kind, in its order, into detection and the planners', () => {
    assert.ok(KINDS.length >= 10, KINDS.join(', '));
    assert.deepEqual(platforms().map((p) => p.kind), KINDS, 'detection tries the platforms in the registry\'s order');
    assert.equal(fallbackPlatform().kind, KINDS.at(-1));
    for (const k of KINDS) {
      assert.equal(MODULES[k]!.platform.kind, k);
      assert.equal(platformOf(k), MODULES[k]!.platform);
      assert.equal(plannerOfPlatform(k), MODULES[k]!.planner ?? MODULES[KINDS.at(-1)!]!.planner, `${k} plans with its planner or the fallback's`);
    }
  });

  it('each platform comes from a folder of its own under src/platforms/ (a variant shares its folder)', () => {
    const f = folders();
    assert.deepEqual([...f.keys()].sort(), [...KINDS].sort(), 'the registry imports every platform from a folder');
    for (const k of KINDS) assert.ok(readdirSync(`${ROOT}src/platforms/${f.get(k)}`).includes('index.ts'), k);
    for (const k of KINDS) if (f.get(k) !== k) assert.ok(KINDS.includes(f.get(k)!), `${k} shares the folder of platform ${f.get(k)}`);
  });

  it('no file of src/ outside a platform\'s folder names it or imports from it', () => {
    const files = (readdirSync(`${ROOT}src`, { recursive: true }) as string[]).filter((x) => x.endsWith('.ts')).map((x) => `src/${x}`);
    const f = folders();
    for (const k of KINDS) {
      assert.deepEqual(namers(k, f.get(k)!, files), [], `files outside src/platforms/${f.get(k)}/ that name ${k}`);
    }
  });
});
