/** What the Cilium multi-pool path's run writes and reads besides what every pod path does (deploy/rbac-migrate-pods.yaml; npm run rbac). */
import { binding, role, type PathRbac } from '../../plan/rbac-manifest.ts';

const CONFIG_ROLE = 'kube-renumber-migrate-pods-cilium-config';

export const CILIUM_MULTI_POOL_RBAC: PathRbac = {
  why: [
    'Cilium multi-pool: create the new CiliumPodIPPool and delete the old one once no CiliumNode (read) lists it;',
    '      namespaces (read): none may choose a pool by annotation; CiliumNodeConfigs (read): none may set the',
    '      default pool for some nodes; ConfigMap kube-system/cilium-config (that one',
    '      name, Role below): the default pool and the native-routing CIDR.',
  ],
  rules: [
    { apiGroups: ['cilium.io'], resources: ['ciliumpodippools'], verbs: ['get', 'list', 'create', 'delete'] },
    { apiGroups: ['cilium.io'], resources: ['ciliumnodes', 'ciliumnodeconfigs'], verbs: ['get', 'list'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list'] },
  ],
  docs: [
    { object: role(CONFIG_ROLE, [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cilium-config'], verbs: ['get', 'patch'] }], 'kube-system') },
    { object: binding(CONFIG_ROLE, 'Role', CONFIG_ROLE, 'kube-renumber-migrate', 'kube-system') },
  ],
};
