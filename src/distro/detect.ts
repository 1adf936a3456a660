/**
 * Which installer the signs name, from signals the snapshot builder collected: the platforms recognised by their
 * installer (src/platforms/kops/, kubeadm/) read it as PlatformInput.installer. Pure.
 *
 * Precedence: kops > k3s > kubespray > kubeadm > none (no installer sign: the platforms decide without one).
 *  - kops: a kOps Cluster spec was given, nodes carry the label kops.k8s.io/instancegroup, or a
 *    kops-controller pod runs.
 *  - k3s: nodes labelled node.kubernetes.io/instance-type=k3s, annotated k3s.io/*, or a kubelet version
 *    with "+k3s".
 *  - kubespray: kubespray always drives kubeadm, so kubeadm signs plus one kubespray sign, or a strong
 *    kubespray sign alone. Kubespray signs: Calico ClusterInformation spec.clusterType or the calico-config
 *    data.cluster_type naming "kubespray" (kubespray sets CLUSTER_TYPE=kubespray,bgp); control-plane
 *    flags or kubeadm certificatesDir under /etc/kubernetes/ssl (kubeadm itself uses /etc/kubernetes/pki);
 *    a kube-system DaemonSet named "nodelocaldns" (kubespray's name; the upstream addon is
 *    "node-local-dns"); a node label or annotation key containing "kubespray".
 *  - kubeadm: ConfigMap kube-system/kubeadm-config, a ClusterConfiguration file, or nodes annotated
 *    kubeadm.alpha.kubernetes.io/cri-socket.
 */

export type DistributionKind = 'kops' | 'kubeadm' | 'kubespray' | 'k3s' | 'none';

export interface DistroSignals {
  kops: string[];
  k3s: string[];
  kubeadm: string[];
  kubespray: string[];
  /** A kubespray sign strong enough on its own (Calico cluster type). */
  kubesprayStrong: boolean;
}

export function newDistroSignals(): DistroSignals {
  return { kops: [], k3s: [], kubeadm: [], kubespray: [], kubesprayStrong: false };
}

export function detectDistribution(s: DistroSignals): { kind: DistributionKind; evidence: string[] } {
  if (s.kops.length > 0) return { kind: 'kops', evidence: s.kops };
  if (s.k3s.length > 0) return { kind: 'k3s', evidence: s.k3s };
  if (s.kubespray.length > 0 && (s.kubeadm.length > 0 || s.kubesprayStrong)) return { kind: 'kubespray', evidence: [...s.kubespray, ...s.kubeadm] };
  if (s.kubeadm.length > 0) return { kind: 'kubeadm', evidence: s.kubeadm };
  return { kind: 'none', evidence: ['no kOps, k3s, kubespray or kubeadm signs found'] };
}
