/**
 * One thing a run asks of the API server (a verb on a resource, where, and why) and the shipped file granting it.
 * A leaf of src/plan, so the pod paths (src/plan/pod-paths/) can name their own needs and plan/access.ts can
 * collect them. Pure.
 */
import type { ResourceAccess } from '../kube/access-review.ts';

export interface AccessNeed extends ResourceAccess {
  /** The shipped file granting it. */
  file: string;
  why: string;
}

export const need = (verb: string, group: string, resource: string, file: string, why: string, more: Partial<AccessNeed> = {}): AccessNeed =>
  ({ verb, group, resource, file, why, ...more });

/** The file granting what a Pod CIDR move needs. */
export const POD_RBAC_FILE = 'deploy/rbac-migrate-pods.yaml';

/** The file granting get nodes/proxy for --read-kubelet-config: never among the default roles (docs/service-migration.md). */
export const KUBELET_CONFIGZ_RBAC_FILE = 'deploy/rbac-kubelet-configz.yaml';

/**
 * The file granting list secrets in every namespace for --read-helm-releases (the references scan reads Helm's
 * release Secrets): never among the default roles (docs/references.md).
 */
export const HELM_RELEASES_RBAC_FILE = 'deploy/rbac-helm-releases.yaml';
