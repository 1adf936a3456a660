/** What the node IPAM path's run writes besides what every pod path does (deploy/rbac-migrate-pods.yaml; npm run rbac). */
import type { PathRbac } from '../../plan/rbac-manifest.ts';

export const NODE_RBAC: PathRbac = {
  why: [
    'node IPAM path: delete a drained node, give a re-registered node its podCIDR (nodes patch, above);',
  ],
  rules: [
    { apiGroups: [''], resources: ['nodes'], verbs: ['delete'] },
  ],
};
