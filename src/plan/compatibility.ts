/**
 * What the version matrix found (`npm run matrix`, docs/compatibility.md): a Kubernetes version on which a path's
 * end-to-end run failed on the real control plane of that version is refused for that path, with the matrix's reason.
 * The data (compatibility-data.ts) is generated from test/matrix/results.json.
 */
import type { PreflightCheck } from './check.ts';
import { COMPATIBILITY_FAILURES, type CompatibilityPath } from './compatibility-data.ts';

/** The refusal of `path` on `version` when the matrix saw it fail on that minor; undefined otherwise. */
export function compatibilityCheck(version: string | undefined, path: CompatibilityPath, failures = COMPATIBILITY_FAILURES): PreflightCheck | undefined {
  const m = /^v?1\.(\d+)(\.|$)/.exec(version ?? '');
  if (!m) return undefined;
  const minor = Number(m[1]);
  const f = failures.find((x) => x.minor === minor && x.path === path);
  if (!f) return undefined;
  return {
    id: 'kubernetes-version', status: 'fail', target: true,
    message: `the ${path} path failed end to end on Kubernetes ${f.version} (the version matrix, docs/compatibility.md): ${f.reason}`,
    fix: 'see docs/compatibility.md for the versions this path was run on; upgrade the control plane to one of them, then plan again',
  };
}
