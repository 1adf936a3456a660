/**
 * The one installer: every platform (src/platforms/registry.ts) and every pod path (src/pod-paths/registry.ts) into
 * the layers below them (detection, planners, executors, step kinds, the kind table). Nothing is installed by
 * importing a module: the entry points call install() first, the CLI (src/cli/main.ts), the benchmarks, the
 * scripts and each test file, so any of them runs alone. Idempotent: a second call does nothing.
 */
import { installPlatformModules } from './platforms/registry.ts';
import { installPodPathModules } from './pod-paths/registry.ts';

export function install(): void {
  installPlatformModules();
  installPodPathModules();
}
