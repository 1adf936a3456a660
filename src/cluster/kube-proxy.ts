/**
 * kube-proxy's mode and cluster CIDR, from (in this order of preference) ConfigMap kube-system/kube-proxy,
 * the flags of a kube-proxy pod, or a KubeProxyConfiguration file.
 */
import type { KubeObject, Snapshot } from './types.ts';
import type { Builder } from './builder.ts';
import { componentContainer } from './components.ts';
import { containerWords, parseComponentFlags, splitList } from './flags.ts';
import { parseEmbeddedYaml } from './kubeadm-config.ts';

/** kube-proxy settings as the snapshot records them. */
export type KubeProxySettings = NonNullable<Snapshot['kubeProxy']>;

/** kube-proxy settings read from the flags of one pod. */
export interface KubeProxyFromPod extends KubeProxySettings {
  pod: string;
}

/** The --cluster-cidr and --proxy-mode flags of kube-proxy pod `name`; undefined when it sets neither. */
export function readKubeProxyPod(o: KubeObject, name: string): KubeProxyFromPod | undefined {
  const c = componentContainer(o, 'kube-proxy');
  if (!c) return undefined;
  const flags = parseComponentFlags(containerWords(c), 'kube-proxy');
  if (!flags.has('cluster-cidr') && !flags.has('proxy-mode')) return undefined;
  const kp: KubeProxyFromPod = { pod: name };
  if (flags.has('cluster-cidr')) kp.clusterCIDR = flags.get('cluster-cidr');
  if (flags.has('proxy-mode')) kp.mode = flags.get('proxy-mode');
  return kp;
}

/** The non-empty clusterCIDR and mode of a KubeProxyConfiguration given as a file. */
export function readKubeProxyConfiguration(c: KubeObject): KubeProxySettings {
  const kp = c as Record<string, any>;
  return {
    ...(typeof kp.clusterCIDR === 'string' && kp.clusterCIDR !== '' ? { clusterCIDR: kp.clusterCIDR } : {}),
    ...(typeof kp.mode === 'string' && kp.mode !== '' ? { mode: kp.mode } : {}),
  };
}

/**
 * kube-proxy's settings from the first source that has them (the ConfigMap, a pod's flags, a file), adding
 * its cluster CIDR as a pod range. A ConfigMap whose config.conf is not YAML is a warning and skipped.
 */
export function readKubeProxy(
  cm: KubeObject | undefined,
  fromPod: KubeProxyFromPod | undefined,
  fromFile: KubeProxySettings | undefined,
  b: Builder,
): Snapshot['kubeProxy'] {
  let kubeProxy: Snapshot['kubeProxy'];
  if (cm && typeof cm.data?.['config.conf'] === 'string') {
    const kp = parseEmbeddedYaml(cm.data['config.conf']);
    if (typeof kp === 'string') b.warn(`ConfigMap kube-system/kube-proxy: config.conf is not valid YAML (${kp})`);
    else {
      kubeProxy = {};
      if (typeof kp.clusterCIDR === 'string' && kp.clusterCIDR !== '') kubeProxy.clusterCIDR = kp.clusterCIDR;
      if (typeof kp.mode === 'string' && kp.mode !== '') kubeProxy.mode = kp.mode;
      for (const c of splitList(kubeProxy.clusterCIDR)) b.addRange(c, 'pod', 'kube-proxy clusterCIDR', 'kube-proxy clusterCIDR (ConfigMap kube-system/kube-proxy)');
    }
  }
  if (!kubeProxy && fromPod) {
    const { pod, ...rest } = fromPod;
    kubeProxy = rest;
    for (const c of splitList(rest.clusterCIDR)) b.addRange(c, 'pod', 'kube-proxy --cluster-cidr', `kube-proxy --cluster-cidr (pod ${pod})`);
  }
  if (!kubeProxy && fromFile) {
    kubeProxy = fromFile;
    for (const c of splitList(fromFile.clusterCIDR)) b.addRange(c, 'pod', 'KubeProxyConfiguration clusterCIDR', 'kube-proxy clusterCIDR (KubeProxyConfiguration file)');
  }
  return kubeProxy;
}
