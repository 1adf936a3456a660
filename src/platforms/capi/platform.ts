/**
 * A Cluster API workload cluster: its nodes are Machines of a management cluster, which creates and replaces them
 * from the Cluster (spec.clusterNetwork: the pod and Service ranges) and the control plane provider's object.
 *
 * Recognised by the annotations the Cluster API Machine controller sets on each Node of a Machine (api/v1beta1
 * common_types.go: ClusterNameAnnotation "cluster.x-k8s.io/cluster-name", MachineAnnotation
 * "cluster.x-k8s.io/machine", OwnerKindAnnotation "cluster.x-k8s.io/owner-kind"); the control plane's owner kind
 * (KubeadmControlPlane) is shown with the evidence. Checked before kubeadm: a kubeadm-bootstrapped Cluster API
 * cluster shows kubeadm's signs too.
 *
 * Both moves are refused: with a KubeadmControlPlane, the control plane's kubeadm ClusterConfiguration
 * (spec.kubeadmConfigSpec.clusterConfiguration.networking: serviceSubnet, podSubnet) cannot change, as the
 * KubeadmControlPlane webhook's ValidateUpdate allows only the paths it lists and networking is not one of them
 * ("cannot be modified", controlplane/kubeadm/internal/webhooks/kubeadm_control_plane.go); the machines it creates
 * later (an upgrade, a remediation, a scale-up) join with the old ranges, undoing a move made on the running nodes.
 */
import type { Capability, Platform, PlatformNode } from '../../platform/types.ts';

export const CLUSTER_NAME = 'cluster.x-k8s.io/cluster-name';
export const MACHINE = 'cluster.x-k8s.io/machine';
export const OWNER_KIND = 'cluster.x-k8s.io/owner-kind';

const KCP_WEBHOOK = 'https://github.com/kubernetes-sigs/cluster-api/blob/main/controlplane/kubeadm/internal/webhooks/kubeadm_control_plane.go';

const SOURCES = [
  'https://github.com/kubernetes-sigs/cluster-api/blob/main/api/v1beta1/common_types.go',
  KCP_WEBHOOK,
  'https://github.com/kubernetes-sigs/cluster-api/blob/main/internal/webhooks/cluster.go',
  'https://cluster-api.sigs.k8s.io/user/concepts',
] as const;

const REFUSED: Capability = {
  supported: false,
  reason: 'the management cluster rebuilds this cluster\'s machines from its Cluster API objects, and the KubeadmControlPlane webhook refuses any change to '
    + 'spec.kubeadmConfigSpec.clusterConfiguration.networking (serviceSubnet, podSubnet: "cannot be modified", not among the paths its ValidateUpdate allows), '
    + 'so the control plane machines it creates later (an upgrade, a remediation) come back with the old ranges',
  instead: 'the ranges of a Cluster API cluster are set when it is created (Cluster spec.clusterNetwork): create a new workload cluster with the new ranges and move the workloads to it',
};

/** "N node(s) annotated <key> (e.g. <node>: <value>)", or undefined. */
function annotated(nodes: readonly PlatformNode[], key: string): string | undefined {
  const found = nodes.filter((n) => n.annotations[key] !== undefined);
  if (found.length === 0) return undefined;
  return `${found.length} node(s) annotated ${key} by the Cluster API Machine controller (e.g. ${found[0]!.name}: ${found[0]!.annotations[key]})`;
}

export const capi: Platform<'capi'> = {
  kind: 'capi',
  title: 'Cluster API',
  detect(input) {
    const cluster = annotated(input.nodes, CLUSTER_NAME);
    const machine = annotated(input.nodes, MACHINE);
    if (!cluster && !machine) return undefined;
    const owners = [...new Set(input.nodes.map((n) => n.annotations[OWNER_KIND]).filter((k): k is string => !!k))].sort();
    return [cluster, machine, owners.length ? `machines owned by ${owners.join(', ')} (${OWNER_KIND})` : undefined].filter((s): s is string => s !== undefined);
  },
  capabilities: { service: REFUSED, pod: REFUSED },
  sources: SOURCES,
};
