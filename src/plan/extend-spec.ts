/**
 * spec.serviceExtension of a plan (plan --extend-service-cidr): what an extension plan adds. A leaf of src/plan/: the
 * plan's type (plan.ts) and the extension planner (extend.ts) both use it.
 */

export interface ServiceExtensionSpec {
  /** Every service range the cluster has today (they all stay). */
  from: string[];
  /** NEW: one CIDR per family, added as ServiceCIDR `name`. */
  add: string[];
  /** The ServiceCIDR the plan creates. */
  name: string;
  /** networking.k8s.io version of the ServiceCIDR API. */
  apiVersion: string;
  /** --service-cluster-ip-range, which stays as it is (ServiceCIDR `kubernetes` keeps its range). */
  flag: string[];
}
