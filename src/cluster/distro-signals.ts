/**
 * Distribution signs found among the objects (pods, nodes, Calico settings), gathered into the DistroSignals
 * that detectDistribution weighs. Some node and pod signs are counted or kept once during the pass over the
 * objects and reported after it.
 */
import type { KubeObject, NodeInfo } from './types.ts';
import type { DistroSignals } from '../distro/detect.ts';
import { nsName } from './readers.ts';

/** Signs seen during the pass over the objects and reported once, after it. */
export interface PassDistroSigns {
  kopsNodeCount: number;
  kopsNodeExample: string;
  kubeadmNodeCount: number;
  kubeadmNodeExample: string;
  kubesprayNodeSign?: string;
  k3sSign?: string;
  nodeLocalDnsSign?: string;
  sslDirSign?: string;
}

/** No signs yet. */
export function newPassDistroSigns(): PassDistroSigns {
  return { kopsNodeCount: 0, kopsNodeExample: '', kubeadmNodeCount: 0, kubeadmNodeExample: '' };
}

/** Signs of a kube-system pod: kops-controller (up to 8 kept) and kubespray's nodelocaldns. */
export function noteSystemPodSigns(distro: DistroSignals, signs: PassDistroSigns, name: string, app: unknown): void {
  if (app === 'kops-controller' && distro.kops.length < 8) distro.kops.push(`pod kube-system/${name} (kops-controller)`);
  if (app === 'nodelocaldns' || name.startsWith('nodelocaldns-')) signs.nodeLocalDnsSign ??= `pod kube-system/${name} (kubespray's nodelocaldns)`;
}

/** Signs of a node: kOps instance group label, kubeadm cri-socket annotation, k3s and kubespray marks. */
export function noteNodeSigns(signs: PassDistroSigns, node: NodeInfo, o: KubeObject): void {
  const labels = node.labels;
  const ig = labels['kops.k8s.io/instancegroup'];
  if (ig !== undefined) {
    if (signs.kopsNodeCount++ === 0) signs.kopsNodeExample = `${node.name}: ${ig}`;
  }
  const ann = (o.metadata ?? {}).annotations ?? {};
  if (ann['kubeadm.alpha.kubernetes.io/cri-socket'] !== undefined) {
    if (signs.kubeadmNodeCount++ === 0) signs.kubeadmNodeExample = node.name;
  }
  signs.k3sSign ??= k3sNodeSign(node, ann, o);
  if (signs.kubesprayNodeSign === undefined) {
    const k = Object.keys(labels).find((x) => x.includes('kubespray')) ?? Object.keys(ann).find((x) => x.includes('kubespray'));
    if (k) signs.kubesprayNodeSign = `node ${node.name} has label/annotation ${k}`;
  }
}

/** Why a node looks like k3s (instance-type label, k3s.io/ annotation, "+k3s" kubelet), or undefined. */
function k3sNodeSign(node: NodeInfo, ann: Record<string, string>, o: KubeObject): string | undefined {
  if (node.labels['node.kubernetes.io/instance-type'] === 'k3s') return `node ${node.name} labelled node.kubernetes.io/instance-type=k3s`;
  const k = Object.keys(ann).find((a) => a.startsWith('k3s.io/'));
  if (k) return `node ${node.name} annotated ${k}`;
  if (String(o.status?.nodeInfo?.kubeletVersion ?? '').includes('+k3s')) return `node ${node.name} kubelet ${o.status.nodeInfo.kubeletVersion}`;
  return undefined;
}

/** Signs in a Calico ClusterInformation spec.clusterType: "kubespray" (a strong sign) and "kubeadm". */
export function noteClusterInformation(distro: DistroSignals, o: KubeObject): void {
  const t = o.spec?.clusterType;
  if (typeof t === 'string') {
    const parts = t.split(',').map((s) => s.trim());
    if (parts.includes('kubespray')) {
      distro.kubespray.push(`Calico ClusterInformation clusterType "${t}"`);
      distro.kubesprayStrong = true;
    }
    if (parts.includes('kubeadm')) distro.kubeadm.push(`Calico ClusterInformation clusterType "${t}" names kubeadm`);
  }
}

/** A strong kubespray sign when ConfigMap calico-config's data.cluster_type names "kubespray". */
export function noteCalicoConfigClusterType(distro: DistroSignals, calicoConfig: KubeObject | undefined): void {
  if (!calicoConfig) return;
  const t = calicoConfig.data?.cluster_type;
  if (typeof t === 'string' && t.split(',').map((s) => s.trim()).includes('kubespray')) {
    distro.kubespray.push(`ConfigMap ${nsName(calicoConfig)} cluster_type "${t}"`);
    distro.kubesprayStrong = true;
  }
}

/** Reports the signs the pass counted or kept (node counts with an example, first k3s and kubespray signs). */
export function addPassDistroSigns(distro: DistroSignals, signs: PassDistroSigns): void {
  if (signs.kopsNodeCount > 0) distro.kops.push(`${signs.kopsNodeCount} node(s) labelled kops.k8s.io/instancegroup (e.g. ${signs.kopsNodeExample})`);
  if (signs.k3sSign) distro.k3s.push(signs.k3sSign);
  if (signs.kubeadmNodeCount > 0) distro.kubeadm.push(`${signs.kubeadmNodeCount} node(s) annotated kubeadm.alpha.kubernetes.io/cri-socket (e.g. ${signs.kubeadmNodeExample})`);
  if (signs.sslDirSign) distro.kubespray.push(signs.sslDirSign);
  if (signs.nodeLocalDnsSign) distro.kubespray.push(signs.nodeLocalDnsSign);
  if (signs.kubesprayNodeSign) distro.kubespray.push(signs.kubesprayNodeSign);
}
