/**
 * RKE2: /etc/rancher/rke2/config.yaml on every server. At every start the rke2 server writes the kube-apiserver,
 * kube-controller-manager and kube-proxy static pods from it (pkg/podtemplate), and rewrites its HelmCharts'
 * injected values global.clusterCIDR, global.serviceCIDR and global.clusterDNS from it (pkg/bootstrap/bootstrap.go
 * setChartValues): the rke2-coredns Service's address and Canal's flannel Network follow the config file, and hand
 * edits of the manifests do not last. ../k3s-family/plan.ts has what k3s and RKE2 share, with the sources.
 */
import * as family from '../k3s-family/plan.ts';
import type { DistributionPlanner } from '../../plan/distributions/types.ts';

const RKE2: family.Program = {
  id: 'rke2', title: 'RKE2', config: '/etc/rancher/rke2/config.yaml', server: 'rke2-server', agent: 'rke2-agent',
  podStopExtra: [
    'with Canal: wait until the rke2-canal chart shows the wider range (kubectl -n kube-system get helmchart rke2-canal -o jsonpath=\'{.spec.set.global\\.clusterCIDR}\') '
      + 'and its helm-install Job completed, so the canal pod of a node that registers again reads it',
  ],
  podFinalExtra: [
    'with Canal: once the rke2-canal chart shows NEW (as above), kubectl -n kube-system rollout restart daemonset rke2-canal (flannel reads its Network at start)',
  ],
  kcmMirrorPod: true,
};

export const rke2: DistributionPlanner = family.programPlanner(RKE2, {
  id: 'rke2',
  restartApiserversReason: 'the rke2 server writes the kube-apiserver static pod from its service-cidr at every start',
  certFix: (_snap, both) => `add ${both} to tls-san in /etc/rancher/rke2/config.yaml on every RKE2 server and restart rke2-server; it reissues the serving certificate at start when a tls-san is missing from it`,
});
