/** What the Calico path's run writes and reads besides what every pod path does (deploy/rbac-migrate-pods.yaml; npm run rbac). */
import type { PathRbac } from '../../plan/rbac-manifest.ts';

export const CALICO_RBAC: PathRbac = {
  why: [
    'Calico IPPools: create the new pool, disable and delete the old one; IPAM blocks, affinities and handles',
    '      of the old range: delete the leftovers; Installation (operator installs): edit ipPools;',
  ],
  rules: [
    { apiGroups: ['crd.projectcalico.org'], resources: ['ippools'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
    { apiGroups: ['crd.projectcalico.org'], resources: ['ipamblocks', 'blockaffinities', 'ipamhandles'], verbs: ['get', 'list', 'delete'] },
    { apiGroups: ['operator.tigera.io'], resources: ['installations'], verbs: ['get', 'list', 'update'] },
  ],
};
