/**
 * What the read role (deploy/rbac.yaml, ClusterRole kube-renumber-read) reads of the platforms' own objects, to
 * recognise a platform and its ranges (src/platform/): one place, in the order the file lists them. Pure.
 */
import type { RbacRule } from './rbac-manifest.ts';

export const PLATFORM_READ_RULES: readonly RbacRule[] = [
  { comment: ['OpenShift\'s network configuration and version, read to recognise the platform and its ranges.'], apiGroups: ['config.openshift.io'], resources: ['networks', 'clusterversions'], verbs: ['get', 'list'] },
  { apiGroups: ['operator.openshift.io'], resources: ['networks'], verbs: ['get', 'list'] },
  {
    comment: ['Other platforms\' own objects, read to recognise the platform and its ranges (src/platform/): EKS ENIConfigs, AKS', 'NodeNetworkConfigs, RKE2\'s HelmCharts.'],
    apiGroups: ['crd.k8s.amazonaws.com'], resources: ['eniconfigs'], verbs: ['get', 'list'],
  },
  { apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['get', 'list'] },
  { apiGroups: ['helm.cattle.io'], resources: ['helmcharts'], verbs: ['get', 'list'] },
];
