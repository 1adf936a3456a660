/**
 * What kubeadm and kubespray (which always drives kubeadm) leave in what the cluster model read (PlatformInput), as
 * evidence lines in the order they are shown.
 *  - kubeadm: ConfigMap kube-system/kubeadm-config (with a readable ClusterConfiguration); a Calico
 *    ClusterInformation clusterType naming "kubeadm"; a ClusterConfiguration file; nodes annotated
 *    kubeadm.alpha.kubernetes.io/cri-socket.
 *  - kubespray: a Calico ClusterInformation spec.clusterType or calico-config data.cluster_type naming "kubespray"
 *    (kubespray sets CLUSTER_TYPE=kubespray,bgp: a sign strong enough alone); kubeadm certificatesDir or
 *    control-plane flags under /etc/kubernetes/ssl (kubeadm itself uses /etc/kubernetes/pki); a kube-system
 *    DaemonSet or pod "nodelocaldns" (kubespray's name; the upstream addon is "node-local-dns"); a node label or
 *    annotation key containing "kubespray".
 * kubespray is recognised by kubeadm signs plus one of its own, or by a strong one alone.
 */
import { clusterConfigurationFromConfigMap } from '../../cluster/kubeadm-config.ts';
import type { PlatformInput } from '../../platform/types.ts';
import type { KubeObject } from '../../vocabulary.ts';

export interface KubeadmSigns {
  kubeadm: string[];
  kubespray: string[];
  /** A kubespray sign strong enough on its own (Calico cluster type). */
  kubesprayStrong: boolean;
}

const SSL = '/etc/kubernetes/ssl';
const typeParts = (t: string) => t.split(',').map((s) => s.trim());

/** The first ClusterConfiguration among the configuration documents. */
function clusterConfigurationFile(configs: readonly KubeObject[]): KubeObject | undefined {
  return configs.find((c) => c && typeof c === 'object' && c.kind === 'ClusterConfiguration' && typeof c.apiVersion === 'string' && c.apiVersion.startsWith('kubeadm.k8s.io/'));
}

export function kubeadmSigns(input: PlatformInput): KubeadmSigns {
  const kubeadm: string[] = [];
  const kubespray: string[] = [];
  let kubesprayStrong = false;
  const cm = input.configMaps.get('kube-system/kubeadm-config');
  const cc = cm ? clusterConfigurationFromConfigMap(cm) : undefined;
  if (cc && typeof cc !== 'string') kubeadm.push('ConfigMap kube-system/kubeadm-config');
  for (const t of input.calicoClusterTypes) {
    if (t.object !== 'ClusterInformation') continue;
    const parts = typeParts(t.value);
    if (parts.includes('kubespray')) {
      kubespray.push(`Calico ClusterInformation clusterType "${t.value}"`);
      kubesprayStrong = true;
    }
    if (parts.includes('kubeadm')) kubeadm.push(`Calico ClusterInformation clusterType "${t.value}" names kubeadm`);
  }
  const file = clusterConfigurationFile(input.configs);
  if (file) {
    kubeadm.push(`kubeadm ClusterConfiguration (${file.apiVersion}) given as a file`);
    const dir = (file as Record<string, any>).certificatesDir;
    if (typeof dir === 'string' && dir.startsWith(SSL)) kubespray.push(`ClusterConfiguration certificatesDir ${dir} (kubespray's layout)`);
  }
  if (cc && typeof cc !== 'string' && typeof cc.certificatesDir === 'string' && cc.certificatesDir.startsWith(SSL)) {
    kubespray.push(`kubeadm-config certificatesDir ${cc.certificatesDir} (kubespray's layout)`);
  }
  for (const t of input.calicoClusterTypes) {
    if (t.object === 'ConfigMap' && typeParts(t.value).includes('kubespray')) {
      kubespray.push(`ConfigMap ${t.where} cluster_type "${t.value}"`);
      kubesprayStrong = true;
    }
  }
  const criSocket = input.nodes.filter((n) => n.annotations['kubeadm.alpha.kubernetes.io/cri-socket'] !== undefined);
  if (criSocket.length > 0) kubeadm.push(`${criSocket.length} node(s) annotated kubeadm.alpha.kubernetes.io/cri-socket (e.g. ${criSocket[0]!.name})`);
  for (const f of input.controlPlaneFlags) {
    const w = f.words.find((x) => x.includes(`=${SSL}/`));
    if (w) {
      kubespray.push(`pod kube-system/${f.pod} flag ${w} (kubespray keeps certificates in ${SSL})`);
      break;
    }
  }
  for (const w of input.systemWorkloads) {
    if (w.kind === 'Pod' && (w.app === 'nodelocaldns' || w.name.startsWith('nodelocaldns-'))) {
      kubespray.push(`pod kube-system/${w.name} (kubespray's nodelocaldns)`);
      break;
    }
    if (w.kind === 'DaemonSet' && w.name === 'nodelocaldns') {
      kubespray.push(`DaemonSet kube-system/${w.name} (kubespray's nodelocaldns)`);
      break;
    }
  }
  for (const n of input.nodes) {
    const k = Object.keys(n.labels).find((x) => x.includes('kubespray')) ?? Object.keys(n.annotations).find((x) => x.includes('kubespray'));
    if (k) {
      kubespray.push(`node ${n.name} has label/annotation ${k}`);
      break;
    }
  }
  return { kubeadm, kubespray, kubesprayStrong };
}
