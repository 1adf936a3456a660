/**
 * k3s: /etc/rancher/k3s/config.yaml on every server renders the apiserver flag, the kubelets' clusterDNS, the
 * CoreDNS Service's address, kube-controller-manager's flags and the embedded flannel's Network; the commands
 * restart the k3s server and agent units (k3s-family.ts has what k3s and RKE2 share, with the sources).
 */
import * as family from './k3s-family.ts';
import type { DistributionPlanner } from './types.ts';

const K3S: family.Program = {
  id: 'k3s', title: 'k3s', config: '/etc/rancher/k3s/config.yaml', server: 'k3s', agent: 'k3s-agent',
  podStopExtra: [], podFinalExtra: [], kcmMirrorPod: false,
};

export const k3s: DistributionPlanner = {
  id: 'k3s',
  matches: (snap) => snap.distribution.kind === 'k3s',
  servicePatches: (snap, ctx) => family.servicePatches(K3S, snap, ctx),
  serviceGateInstructions: (snap, gate, ctx) => family.serviceGateInstructions(K3S, snap, gate, ctx),
  restartWorkloadsNote: [],
  restartApiserversReason: 'k3s runs kube-apiserver inside the k3s server process, from its service-cidr',
  certFix: (_snap, both) => `add ${both} to tls-san in /etc/rancher/k3s/config.yaml on every k3s server and restart k3s; k3s reissues the serving certificate at start when a tls-san is missing from it`,
  podPatches: (inp) => family.podPatches(K3S, inp),
  podChecks: (inp) => family.podChecks(K3S, inp),
  kubeProxyPatch: undefined,
  podGateInstructions: (gate) => family.podGateInstructions(K3S, gate),
  reregister: family.reregister(K3S),
  configCheck: () => undefined,
};
