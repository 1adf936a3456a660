/**
 * Types every layer shares (cluster model, adapters, the Kubernetes port): the shape of a raw object, the API
 * resources a platform or IPAM owner reads (and the key their objects are kept by), and the roles an address range
 * plays. Imports nothing.
 */

/** A raw Kubernetes object as the API (or a dump) returns it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion?: string; kind?: string; name?: string; uid?: string; controller?: boolean }>;
    deletionTimestamp?: string;
    finalizers?: string[];
    [k: string]: unknown;
  };
  spec?: any;
  status?: any;
  data?: Record<string, string>;
  [k: string]: unknown;
}

/**
 * An API resource a module wants listed live (when the server serves it) and kept for it: platforms' and IPAM
 * owners' `reads`. Several versions of one resource may be declared, newest first: the newest served is listed.
 */
export interface ApiResource {
  group: string;
  version: string;
  /** The resource's plural, as in the URL. */
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** "group/Kind" ("" group for core): the key of the kept objects of declared kinds. */
export function objectKey(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/** What a range is used for. */
export type RangeRole =
  | 'service'        // a range Services take ClusterIPs from
  | 'pod'            // a range pods take IPs from (cluster CIDR, pool)
  | 'node-pod'       // one node's spec.podCIDR
  | 'node'           // the node network (derived from node InternalIPs, or configured)
  | 'masquerade'     // kOps nonMasqueradeCIDR
  | 'pool';          // a Calico IPPool

/** A range as written in a configuration (a kOps spec, a CNI's settings), not yet validated. */
export interface RawRange {
  cidr: string;
  role: RangeRole;
  source: string;
  label: string;
}
