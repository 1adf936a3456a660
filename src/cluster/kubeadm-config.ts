/**
 * kubeadm: the ClusterConfiguration (from ConfigMap kube-system/kubeadm-config or a file) and the
 * KubeletConfiguration (ConfigMap kube-system/kubelet-config[-1.xx], data.kubelet). Pure; no I/O.
 */
import { load } from 'js-yaml';
import { splitList } from '../text.ts';
import type { KubeObject } from '../vocabulary.ts';

export interface KubeadmNetworking {
  podSubnet?: string[];
  serviceSubnet?: string[];
  dnsDomain?: string;
  kubernetesVersion?: string;
  /** kube-controller-manager extraArgs cluster-cidr / node-cidr-mask-size when set there. */
  controllerManagerExtraArgs?: Record<string, string>;
  apiServerExtraArgs?: Record<string, string>;
  /** clusterDNS from the kubelet-config ConfigMap. */
  kubeletClusterDNS?: string[];
}

/** Parses a YAML/JSON text into a plain object, or returns an error string. */
export function parseEmbeddedYaml(text: string): Record<string, any> | string {
  try {
    const doc = load(text);
    if (doc === null || doc === undefined) return 'empty';
    if (typeof doc !== 'object' || Array.isArray(doc)) return 'not a mapping';
    return doc as Record<string, any>;
  } catch (e) {
    const err = e as { reason?: string; mark?: { line?: number }; message?: string };
    const line = err.mark?.line !== undefined ? ` (line ${err.mark.line + 1})` : '';
    return `${err.reason ?? err.message ?? String(e)}${line}`;
  }
}

/**
 * extraArgs in both layouts: v1beta3 map `{cluster-cidr: "10.0.0.0/16"}` and v1beta4 list
 * `[{name: cluster-cidr, value: "10.0.0.0/16"}]`. With the list form a repeated name keeps the last.
 */
export function normalizeExtraArgs(extraArgs: unknown): Record<string, string> | undefined {
  if (extraArgs === null || extraArgs === undefined) return undefined;
  const out: Record<string, string> = {};
  if (Array.isArray(extraArgs)) {
    for (const a of extraArgs) {
      if (a && typeof a === 'object' && typeof a.name === 'string') out[a.name] = a.value === undefined || a.value === null ? '' : String(a.value);
    }
  } else if (typeof extraArgs === 'object') {
    for (const [k, v] of Object.entries(extraArgs as Record<string, unknown>)) out[k] = v === null || v === undefined ? '' : String(v);
  } else {
    return undefined;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A kubeadm ClusterConfiguration (any kubeadm.k8s.io version) → KubeadmNetworking. */
export function parseClusterConfiguration(cc: Record<string, any>): KubeadmNetworking {
  const net = (cc.networking ?? {}) as Record<string, unknown>;
  const out: KubeadmNetworking = {};
  const pod = typeof net.podSubnet === 'string' ? splitList(net.podSubnet) : [];
  const svc = typeof net.serviceSubnet === 'string' ? splitList(net.serviceSubnet) : [];
  if (pod.length > 0) out.podSubnet = pod;
  if (svc.length > 0) out.serviceSubnet = svc;
  if (typeof net.dnsDomain === 'string') out.dnsDomain = net.dnsDomain;
  if (typeof cc.kubernetesVersion === 'string') out.kubernetesVersion = normalizeVersion(cc.kubernetesVersion);
  const cm = normalizeExtraArgs(cc.controllerManager?.extraArgs);
  if (cm) out.controllerManagerExtraArgs = cm;
  const api = normalizeExtraArgs(cc.apiServer?.extraArgs);
  if (api) out.apiServerExtraArgs = api;
  return out;
}

/** kubeadm-config ConfigMap → its parsed ClusterConfiguration, or an error string. */
export function clusterConfigurationFromConfigMap(cm: KubeObject): Record<string, any> | string | undefined {
  const text = cm.data?.ClusterConfiguration;
  if (typeof text !== 'string') return undefined;
  return parseEmbeddedYaml(text);
}

/** clusterDNS of a KubeletConfiguration document. */
export function kubeletClusterDNS(kc: Record<string, any>): string[] {
  const v = kc.clusterDNS;
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string' && x.trim() !== '').map((x) => x.trim());
  if (typeof v === 'string') return splitList(v);
  return [];
}

/**
 * Picks the kubelet config ConfigMap: "kubelet-config" (kubeadm ≥ 1.24) or, failing that, the highest
 * "kubelet-config-1.xx" (older kubeadm).
 */
export function pickKubeletConfigMap(cms: KubeObject[]): KubeObject | undefined {
  let best: KubeObject | undefined;
  let bestMinor = -1;
  for (const cm of cms) {
    const name = cm.metadata?.name ?? '';
    if (name === 'kubelet-config') return cm;
    const m = /^kubelet-config-1\.(\d+)$/.exec(name);
    if (m && Number(m[1]) > bestMinor) {
      best = cm;
      bestMinor = Number(m[1]);
    }
  }
  return best;
}

/** "1.29.3" → "v1.29.3"; other strings unchanged (trimmed). */
export function normalizeVersion(v: string): string {
  const t = v.trim();
  return /^\d+\.\d+/.test(t) ? `v${t}` : t;
}
