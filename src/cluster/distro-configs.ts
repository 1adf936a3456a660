/**
 * Distribution configs: a kOps Cluster spec, a kubeadm ClusterConfiguration (as a file or in ConfigMap
 * kube-system/kubeadm-config), KubeletConfiguration and KubeProxyConfiguration files, and the kubelet
 * clusterDNS they configure.
 */
import type { KopsNetworking, KubeadmNetworking, KubeObject } from './types.ts';
import type { Builder } from './builder.ts';
import { splitList } from './flags.ts';
import { isKopsCluster, parseKopsCluster, type KopsParse } from './kops-spec.ts';
import {
  clusterConfigurationFromConfigMap,
  kubeletClusterDNS,
  parseClusterConfiguration,
  parseEmbeddedYaml,
  pickKubeletConfigMap,
} from './kubeadm-config.ts';
import { type KubeProxySettings, readKubeProxyConfiguration } from './kube-proxy.ts';

/** What the distribution config files say (the first of each kind). */
export interface DistroConfigFiles {
  kops?: KopsParse;
  kubeadm?: KubeadmNetworking;
  kubeletDNS?: string[];
  kubeProxy?: KubeProxySettings;
}

/** Whether o is a kubeadm.k8s.io object of this kind. */
function isKubeadmKind(o: KubeObject, kind: string): boolean {
  return o.kind === kind && typeof o.apiVersion === 'string' && o.apiVersion.startsWith('kubeadm.k8s.io/');
}

/** Whether o is a distribution config (kOps Cluster, kubeadm ClusterConfiguration, Kubelet/KubeProxyConfiguration). */
export function isDistroConfig(o: KubeObject): boolean {
  return isKopsCluster(o) || isKubeadmKind(o, 'ClusterConfiguration') || o.kind === 'KubeletConfiguration' || o.kind === 'KubeProxyConfiguration';
}

/**
 * Reads the distribution configs. A second kOps Cluster spec is a warning and ignored; later copies of the other
 * kinds are ignored silently.
 */
export function readDistroConfigs(configs: KubeObject[], b: Builder): DistroConfigFiles {
  const files: DistroConfigFiles = {};
  for (const c of configs) {
    if (!c || typeof c !== 'object') continue;
    if (isKopsCluster(c)) {
      if (files.kops) {
        b.warn(`more than one kOps Cluster spec given; using the first and ignoring Cluster/${c.metadata?.name ?? ''}`);
        continue;
      }
      files.kops = parseKopsCluster(c);
    } else if (isKubeadmKind(c, 'ClusterConfiguration')) {
      if (files.kubeadm) continue;
      files.kubeadm = parseClusterConfiguration(c as Record<string, any>);
    } else if (c.kind === 'KubeletConfiguration') {
      files.kubeletDNS ??= kubeletClusterDNS(c as Record<string, any>);
    } else if (c.kind === 'KubeProxyConfiguration') {
      files.kubeProxy ??= readKubeProxyConfiguration(c);
    }
  }
  return files;
}

/** Adds the Service and pod ranges of a kubeadm ClusterConfiguration; prefix names where it came from. */
function addKubeadmRanges(b: Builder, k: KubeadmNetworking, prefix: string): void {
  for (const c of k.serviceSubnet ?? []) b.addRange(c, 'service', `${prefix} serviceSubnet`, `kubeadm serviceSubnet (${prefix})`);
  for (const c of k.podSubnet ?? []) b.addRange(c, 'pod', `${prefix} podSubnet`, `kubeadm podSubnet (${prefix})`);
  for (const c of splitList(k.apiServerExtraArgs?.['service-cluster-ip-range'])) {
    b.addRange(c, 'service', `${prefix} apiServer.extraArgs service-cluster-ip-range`, `kubeadm apiServer extraArgs (${prefix})`);
  }
  for (const c of splitList(k.controllerManagerExtraArgs?.['cluster-cidr'])) {
    b.addRange(c, 'pod', `${prefix} controllerManager.extraArgs cluster-cidr`, `kubeadm controllerManager extraArgs (${prefix})`);
  }
}

/**
 * The kubeadm networking: ConfigMap kube-system/kubeadm-config (live truth) wins over a ClusterConfiguration
 * file. The ranges of both are added, the ConfigMap's first.
 */
export function resolveKubeadm(kubeadmCM: KubeObject | undefined, fromFile: KubeadmNetworking | undefined, b: Builder): KubeadmNetworking | undefined {
  let kubeadm: KubeadmNetworking | undefined;
  if (kubeadmCM) {
    const cc = clusterConfigurationFromConfigMap(kubeadmCM);
    if (typeof cc === 'string') b.warn(`ConfigMap kube-system/kubeadm-config: data.ClusterConfiguration is not valid YAML (${cc})`);
    else if (cc) {
      kubeadm = parseClusterConfiguration(cc);
      addKubeadmRanges(b, kubeadm, 'kubeadm-config');
    }
  }
  if (fromFile) addKubeadmRanges(b, fromFile, 'ClusterConfiguration');
  return kubeadm ?? fromFile;
}

/** Appends the IPs to clusterDNS, normalized, skipping bad ones (with a warning) and ones already there. */
function addClusterDNS(b: Builder, clusterDNS: string[], ips: string[], what: string): void {
  for (const raw of ips) {
    const ip = b.ip(raw, what);
    if (ip !== undefined && !clusterDNS.includes(ip)) clusterDNS.push(ip);
  }
}

/**
 * The kubelet clusterDNS from kubeadm's kubelet-config ConfigMap, else a KubeletConfiguration file; also
 * recorded on the kubeadm networking when there is one.
 */
export function readClusterDNS(kubeletConfigMaps: KubeObject[], fromFile: string[] | undefined, kubeadm: KubeadmNetworking | undefined, b: Builder): string[] {
  const clusterDNS: string[] = [];
  const kubeletCM = pickKubeletConfigMap(kubeletConfigMaps);
  if (kubeletCM) {
    const text = kubeletCM.data?.kubelet;
    if (typeof text === 'string') {
      const kc = parseEmbeddedYaml(text);
      if (typeof kc === 'string') b.warn(`ConfigMap kube-system/${kubeletCM.metadata?.name}: data.kubelet is not valid YAML (${kc})`);
      else {
        const dns = kubeletClusterDNS(kc);
        addClusterDNS(b, clusterDNS, dns, `ConfigMap kube-system/${kubeletCM.metadata?.name}: clusterDNS`);
        if (kubeadm && dns.length > 0) kubeadm.kubeletClusterDNS = [...clusterDNS];
      }
    }
  }
  if (clusterDNS.length === 0 && fromFile) {
    addClusterDNS(b, clusterDNS, fromFile, 'KubeletConfiguration clusterDNS');
    if (kubeadm && clusterDNS.length > 0) kubeadm.kubeletClusterDNS = [...clusterDNS];
  }
  return clusterDNS;
}

/**
 * Applies a kOps Cluster spec: adds its ranges and, when no kubelet config named one, its clusterDNS.
 * Returns its networking.
 */
export function applyKops(kopsParse: KopsParse | undefined, clusterDNS: string[], b: Builder): KopsNetworking | undefined {
  if (!kopsParse) return undefined;
  for (const r of kopsParse.ranges) b.addRaw(r);
  if (clusterDNS.length === 0) addClusterDNS(b, clusterDNS, kopsParse.clusterDNS, 'kOps spec clusterDNS');
  return kopsParse.networking;
}
