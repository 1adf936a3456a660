/**
 * Which CNI plugin and which IPAM a cluster uses, from the signals the snapshot builder collected in its
 * single pass over the objects. Pure; no I/O.
 *
 * IPAM rules:
 *  - Calico: the CNI config in ConfigMap calico-config (cni_network_config, a JSON template with
 *    unquoted __PLACEHOLDERS__, so read with a regex) names "calico-ipam" or "host-local"; the operator's
 *    Installation spec.cni.ipam.type says Calico/HostLocal; IPAMBlock objects mean calico-ipam is in use.
 *  - Cilium: cilium-config data.ipam (default "cluster-pool"); recorded raw in `ipamMode`. Note that
 *    Cilium's "kubernetes" mode takes pod IPs from the nodes' spec.podCIDRs (like host-local); ipam is
 *    still reported as 'cilium', check ipamMode.
 *  - Flannel: host-local on each node's podCIDR.
 */
import type { KubeObject } from '../vocabulary.ts';
import type { RawRange } from '../vocabulary.ts';
import type { IpamOwnerFacts } from '../ipam/types.ts';

export type CniKind = 'calico' | 'cilium' | 'flannel' | 'unknown';
export type IpamKind = 'calico-ipam' | 'host-local' | 'cilium' | 'unknown';

export interface CniSignals {
  /** First pod seen of each plugin's node agent, e.g. "kube-system/calico-node-abcde". */
  calicoPod?: string;
  ciliumPod?: string;
  flannelPod?: string;
  /**
   * A node annotated by flannel's kube subnet manager (e.g. "node-a annotated flannel.alpha.coreos.com/backend-type=vxlan"):
   * k3s's embedded flannel runs inside the k3s process, so it shows no pod, DaemonSet or ConfigMap, only these.
   */
  flannelNode?: string;
  canalPod?: string;
  /** DaemonSets by "namespace/name" that identify a plugin. */
  calicoDaemonSet?: string;
  ciliumDaemonSet?: string;
  flannelDaemonSet?: string;
  calicoConfig?: KubeObject;
  ciliumConfig?: KubeObject;
  flannelConfig?: KubeObject;
  installations: KubeObject[];
  poolCount: number;
  blockCount: number;
}

export interface CniResult {
  plugin: CniKind;
  ipam: IpamKind;
  operatorManaged: boolean;
  evidence: string[];
  /** Raw IPAM mode detail, e.g. "calico-ipam", "host-local usePodCidr", "cluster-pool", "kubernetes". */
  ipamMode?: string;
  /** Pod ranges named in the CNI's own config (Cilium cluster pool, flannel Network). */
  ranges: RawRange[];
  /** Who hands pods their addresses (src/ipam/), added by the snapshot builder. */
  owner?: IpamOwnerFacts;
  warnings: string[];
}

/** ipam.type inside a CNI config JSON template (tolerates the unquoted placeholders). */
export function cniConfigIpam(text: string): { type: string; usePodCidr: boolean } | undefined {
  const m = /"ipam"\s*:\s*\{([^{}]*)\}/.exec(text);
  if (!m) return undefined;
  const t = /"type"\s*:\s*"([^"]+)"/.exec(m[1]);
  if (!t) return undefined;
  return { type: t[1], usePodCidr: /"subnet"\s*:\s*"usePodCidr"/.test(m[1]) };
}

function nn(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

export function detectCni(s: CniSignals): CniResult {
  const evidence: string[] = [];
  const warnings: string[] = [];
  const ranges: RawRange[] = [];
  const found: CniKind[] = [];
  const note = (kind: CniKind, why: string): void => {
    evidence.push(why);
    if (!found.includes(kind)) found.push(kind);
  };

  // --- Calico ---
  if (s.calicoPod) note('calico', `pod ${s.calicoPod}`);
  if (s.canalPod) note('calico', `pod ${s.canalPod} (Canal: Calico policy on flannel networking)`);
  if (s.calicoDaemonSet) note('calico', `DaemonSet ${s.calicoDaemonSet}`);
  if (s.calicoConfig) note('calico', `ConfigMap ${nn(s.calicoConfig)}`);
  if (s.poolCount > 0) note('calico', `${s.poolCount} Calico IPPool(s)`);
  if (s.blockCount > 0) note('calico', `${s.blockCount} Calico IPAMBlock(s)`);
  const operatorManaged = s.installations.length > 0;
  for (const inst of s.installations) {
    note('calico', `Installation/${inst.metadata?.name ?? 'default'} (operator.tigera.io: the Tigera operator manages Calico)`);
    const pools = inst.spec?.calicoNetwork?.ipPools;
    if (Array.isArray(pools)) {
      for (const p of pools) {
        if (p && typeof p.cidr === 'string') evidence.push(`Installation/${inst.metadata?.name ?? 'default'} calicoNetwork.ipPools: ${p.cidr}${p.blockSize ? ` blockSize ${p.blockSize}` : ''}${p.disabled ? ' (disabled)' : ''}`);
      }
    }
  }

  // --- Cilium ---
  if (s.ciliumPod) note('cilium', `pod ${s.ciliumPod}`);
  if (s.ciliumDaemonSet) note('cilium', `DaemonSet ${s.ciliumDaemonSet}`);
  if (s.ciliumConfig) note('cilium', `ConfigMap ${nn(s.ciliumConfig)}`);

  // --- flannel ---
  if (s.flannelPod) note('flannel', `pod ${s.flannelPod}`);
  if (s.flannelDaemonSet) note('flannel', `DaemonSet ${s.flannelDaemonSet}`);
  if (s.flannelConfig) note('flannel', `ConfigMap ${nn(s.flannelConfig)}`);
  if (s.flannelNode) note('flannel', `node ${s.flannelNode} (flannel's kube subnet manager)`);

  // Several plugins: Cilium (chaining aside) or Calico own pod addressing; Canal shows calico + flannel.
  let plugin: CniKind = 'unknown';
  for (const k of ['cilium', 'calico', 'flannel'] as const) {
    if (found.includes(k)) {
      plugin = k;
      break;
    }
  }
  if (found.length > 1) evidence.push(`signs of several plugins (${found.join(', ')}); taking ${plugin}`);

  let ipam: IpamKind = 'unknown';
  let ipamMode: string | undefined;

  // flannel config ranges are reported whatever the plugin (Canal uses them).
  if (s.flannelConfig) {
    const text = s.flannelConfig.data?.['net-conf.json'];
    if (typeof text === 'string') {
      try {
        const conf = JSON.parse(text) as Record<string, unknown>;
        if (typeof conf.Network === 'string') ranges.push({ cidr: conf.Network, role: 'pod', source: 'kube-flannel-cfg Network', label: 'flannel Network' });
        if (typeof conf.IPv6Network === 'string') ranges.push({ cidr: conf.IPv6Network, role: 'pod', source: 'kube-flannel-cfg IPv6Network', label: 'flannel IPv6Network' });
      } catch {
        warnings.push(`ConfigMap ${nn(s.flannelConfig)}: net-conf.json is not valid JSON`);
      }
    }
  }

  if (plugin === 'calico') {
    const text = s.calicoConfig?.data?.cni_network_config;
    const fromConfig = typeof text === 'string' ? cniConfigIpam(text) : undefined;
    const instIpam = s.installations.map((i) => i.spec?.cni?.ipam?.type).find((t) => typeof t === 'string') as string | undefined;
    if (fromConfig) {
      evidence.push(`calico-config cni_network_config ipam.type=${fromConfig.type}${fromConfig.usePodCidr ? ' subnet=usePodCidr' : ''}`);
      if (fromConfig.type === 'calico-ipam') ipam = 'calico-ipam';
      else if (fromConfig.type === 'host-local') ipam = 'host-local';
      ipamMode = fromConfig.type + (fromConfig.usePodCidr ? ' usePodCidr' : '');
    } else if (instIpam) {
      evidence.push(`Installation spec.cni.ipam.type=${instIpam}`);
      if (instIpam === 'Calico') ipam = 'calico-ipam';
      else if (instIpam === 'HostLocal') ipam = 'host-local';
      ipamMode = instIpam;
    } else if (s.canalPod) {
      ipam = 'host-local';
      ipamMode = 'host-local (Canal default)';
    }
    if (ipam === 'unknown' && s.blockCount > 0) {
      ipam = 'calico-ipam';
      ipamMode = 'calico-ipam';
      evidence.push('IPAMBlocks present: Calico IPAM allocates pod addresses');
    }
  } else if (plugin === 'cilium') {
    const data = s.ciliumConfig?.data ?? {};
    const mode = typeof data.ipam === 'string' && data.ipam.trim() !== '' ? data.ipam.trim() : s.ciliumConfig ? 'cluster-pool' : undefined;
    if (mode) {
      ipam = 'cilium';
      ipamMode = mode;
      evidence.push(`cilium-config ipam=${mode}${typeof data.ipam === 'string' ? '' : ' (default)'}`);
    }
    for (const key of ['cluster-pool-ipv4-cidr', 'cluster-pool-ipv6-cidr']) {
      const v = data[key];
      if (typeof v === 'string') {
        for (const c of v.split(/[\s,]+/).filter(Boolean)) ranges.push({ cidr: c, role: 'pod', source: `cilium-config ${key}`, label: `Cilium cluster pool (${key})` });
      }
    }
  } else if (plugin === 'flannel') {
    ipam = 'host-local';
    ipamMode = 'host-local (flannel, node podCIDR)';
  }
  return { plugin, ipam, operatorManaged, evidence, ipamMode, ranges, warnings };
}
