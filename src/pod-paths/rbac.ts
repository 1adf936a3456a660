/**
 * The shipped RBAC files (deploy/rbac*.yaml) as `npm run rbac` writes them: plan/rbac-core.ts's declarations with
 * what each pod path of the registry declares (its rbac), in the registry's order.
 */
import { rbacFiles } from '../plan/rbac-core.ts';
import { renderRbacFile } from '../plan/rbac-manifest.ts';
import type { PodPathModule } from './module.ts';
import { POD_PATH_MODULES } from './registry.ts';

/** Each file's path (from the repository root) and text. */
export function shippedRbac(): Array<{ path: string; text: string }> {
  const paths = (Object.values(POD_PATH_MODULES) as PodPathModule[]).map((m) => m.rbac);
  return rbacFiles(paths).map((f) => ({ path: f.path, text: renderRbacFile(f) }));
}
