/**
 * What the version matrix found (`npm run matrix`, docs/compatibility.md): a Kubernetes version on which a path's
 * end-to-end run failed on the real control plane of that version is refused for that path, with the matrix's reason.
 * The data (compatibility-data.ts) is generated from test/matrix/results.json.
 */
import type { PreflightCheck } from './check.ts';
import { COMPATIBILITY_FAILURES, MATRIX_PASSED_VERSIONS, MATRIX_UNBUILT, type CompatibilityPath } from './compatibility-data.ts';

const minorOfVersion = (v: string | undefined): number | undefined => {
  const m = /^v?1\.(\d+)(\.|$)/.exec(v ?? '');
  return m ? Number(m[1]) : undefined;
};

/**
 * The refusal of `path` on `version` when the matrix saw it fail on that minor; a warning when the matrix could not
 * build that minor here (nothing ran on it), naming the nearest minor that passed; undefined otherwise.
 */
export function compatibilityCheck(
  version: string | undefined, path: CompatibilityPath,
  failures = COMPATIBILITY_FAILURES, unbuilt = MATRIX_UNBUILT, passed = MATRIX_PASSED_VERSIONS,
): PreflightCheck | undefined {
  const minor = minorOfVersion(version);
  if (minor === undefined) return undefined;
  const f = failures.find((x) => x.minor === minor && x.path === path);
  const u = unbuilt.find((x) => x.minor === minor);
  if (!f && u) {
    const nearest = [...passed].sort((a, b) => Math.abs(minorOfVersion(a)! - minor) - Math.abs(minorOfVersion(b)! - minor))[0];
    return {
      id: 'kubernetes-version', status: 'warn',
      message: `the ${path} path was not run on Kubernetes 1.${minor}: its testbed could not be built (${u.reason})`
        + (nearest ? `; the nearest version it ran on is ${nearest}` : ''),
      fix: 'see docs/compatibility.md; rehearse the plan on a copy of the cluster first',
    };
  }
  if (!f) return undefined;
  return {
    id: 'kubernetes-version', status: 'fail', target: true,
    message: `the ${path} path failed end to end on Kubernetes ${f.version} (the version matrix, docs/compatibility.md): ${f.reason}`,
    fix: 'see docs/compatibility.md for the versions this path was run on; upgrade the control plane to one of them, then plan again',
  };
}
