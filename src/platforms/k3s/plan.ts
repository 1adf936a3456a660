/**
 * k3s: /etc/rancher/k3s/config.yaml on every server renders the apiserver flag, the kubelets' clusterDNS, the
 * CoreDNS Service's address, kube-controller-manager's flags and the embedded flannel's Network; the commands
 * restart the k3s server and agent units (../k3s-family/plan.ts has what k3s and RKE2 share, with the sources).
 */
import * as family from '../k3s-family/plan.ts';
import type { DistributionPlanner } from '../../plan/distributions/types.ts';

const K3S: family.Program = {
  id: 'k3s', title: 'k3s', config: '/etc/rancher/k3s/config.yaml', server: 'k3s', agent: 'k3s-agent',
  podStopExtra: [], podFinalExtra: [], kcmMirrorPod: false,
};

export const k3s: DistributionPlanner = family.programPlanner(K3S, {
  id: 'k3s',
  restartApiserversReason: 'k3s runs kube-apiserver inside the k3s server process, from its service-cidr',
  certFix: (_snap, both) => `add ${both} to tls-san in /etc/rancher/k3s/config.yaml on every k3s server and restart k3s; k3s reissues the serving certificate at start when a tls-san is missing from it`,
});
