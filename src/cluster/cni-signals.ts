/**
 * CNI signals: the node-agent pods and DaemonSets of Calico, Cilium, flannel and Canal seen among the
 * objects, and the detection (cni/detect.ts) run on them once the pass is done.
 */
import type { KubeObject } from './types.ts';
import type { Builder } from './builder.ts';
import { type CniResult, type CniSignals, detectCni } from '../cni/detect.ts';

/** Empty CNI signals. */
export function newCniSignals(): CniSignals {
  return { installations: [], poolCount: 0, blockCount: 0 };
}

/** Notes pod ns/name when it is a CNI plugin's node agent (the first pod of each plugin is kept). */
export function notePodCni(cni: CniSignals, ns: string, name: string, labels: Record<string, string>): void {
  const app = labels['k8s-app'];
  if (app === 'calico-node' || (name.startsWith('calico-node-') && !name.startsWith('calico-node-vertical'))) cni.calicoPod ??= `${ns}/${name}`;
  else if (app === 'cilium' || (name.startsWith('cilium-') && !name.startsWith('cilium-operator') && !name.startsWith('cilium-envoy'))) cni.ciliumPod ??= `${ns}/${name}`;
  else if (labels.app === 'flannel' || name.startsWith('kube-flannel-ds-')) cni.flannelPod ??= `${ns}/${name}`;
  else if (app === 'canal' || (ns === 'kube-system' && name.startsWith('canal-'))) cni.canalPod ??= `${ns}/${name}`;
}

/** Notes a DaemonSet (at "namespace/name" `where`) named after a CNI plugin's node agent; false when it is none. */
export function noteDaemonSetCni(cni: CniSignals, name: string, where: string): boolean {
  if (name === 'calico-node') cni.calicoDaemonSet ??= where;
  else if (name === 'cilium') cni.ciliumDaemonSet ??= where;
  else if (name === 'kube-flannel-ds' || name.startsWith('kube-flannel-ds-')) cni.flannelDaemonSet ??= where;
  else if (name === 'canal' || name === 'rke2-canal') cni.canalPod ??= `DaemonSet ${where}`;
  else return false;
  return true;
}

/**
 * Notes a node that flannel's kube subnet manager annotated (flannel.alpha.coreos.com/backend-type, set with
 * public-ip, backend-data and kube-subnet-manager by flannel-io/flannel pkg/subnet/kube): the only sign of k3s's
 * embedded flannel, which runs inside the k3s process (no pod, DaemonSet or kube-flannel-cfg ConfigMap). The first
 * such node is kept.
 */
export function noteNodeCni(cni: CniSignals, node: string, annotations: Record<string, unknown>): void {
  const backend = annotations['flannel.alpha.coreos.com/backend-type'];
  if (typeof backend === 'string' && /^[a-z0-9-]{1,32}$/.test(backend)) cni.flannelNode ??= `${node} annotated flannel.alpha.coreos.com/backend-type=${backend}`;
}

/** Notes a tigera-operator Installation (another group's Installation is ignored). */
export function noteInstallation(cni: CniSignals, o: KubeObject): void {
  if (String(o.apiVersion ?? '').startsWith('operator.tigera.io/')) cni.installations.push(o);
}

/**
 * Detects the CNI plugin and IPAM from the signals and the Calico pool and block counts; adds the ranges the
 * CNI's own config names and passes on its warnings.
 */
export function detectCniWithRanges(b: Builder, cni: CniSignals, poolCount: number, blockCount: number): CniResult {
  cni.poolCount = poolCount;
  cni.blockCount = blockCount;
  const cniResult = detectCni(cni);
  for (const r of cniResult.ranges) b.addRaw(r);
  for (const w of cniResult.warnings) b.warn(w);
  return cniResult;
}
