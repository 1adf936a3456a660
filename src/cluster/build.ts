/**
 * buildSnapshot: RawInventory → Snapshot. Pure and deterministic (same input, same output), one pass over
 * the objects plus per-kind work that is linear in the input, so 5,000 nodes and 150,000 pods are cheap.
 *
 * The objects are checked first (validate.ts): an object that cannot be a real Kubernetes object, or two
 * different copies of one object, is an InputError; exact copies are kept once. Past that gate nothing here
 * throws on bad data: a value a real cluster can hold but that cannot be understood (free text in a ConfigMap,
 * a node address, an annotation) becomes a warning and is left out.
 */
import {
  type Cidr,
  contains,
  formatCidr,
  formatIP,
  parseCidr,
  parseIP,
} from '../net/index.ts';
import type {
  ApiserverFlags,
  BlockAffinityInfo,
  CalicoBlock,
  CalicoPool,
  ClusterRange,
  ControllerManagerFlags,
  KopsNetworking,
  KubeadmNetworking,
  KubeObject,
  NodeInfo,
  PodInfo,
  RangeRole,
  RawInventory,
  ServiceCIDRInfo,
  ServiceInfo,
  Snapshot,
} from './types.ts';
import { componentContainer, isComponentPod } from './components.ts';
import { containerWords, parseBool, parseComponentFlags, parseIntFlag, splitList } from './flags.ts';
import { inferServerVersion } from './version.ts';
import { validateInventory } from './validate.ts';
import { ReferenceCollector } from './reference-sources.ts';
import { isKopsCluster, parseKopsCluster, type KopsParse, type RawRange } from '../distro/kops.ts';
import {
  clusterConfigurationFromConfigMap,
  kubeletClusterDNS,
  parseClusterConfiguration,
  parseEmbeddedYaml,
  pickKubeletConfigMap,
} from '../distro/kubeadm.ts';
import { detectDistribution, newDistroSignals } from '../distro/detect.ts';
import { type CniSignals, detectCni } from '../cni/detect.ts';

/** Interpretation warnings kept, at most (gaps are always kept); the rest are counted in one line. */
export const MAX_WARNINGS = 200;

/** Display order of range roles in Snapshot.ranges (discovery order within a role). */
const ROLE_ORDER: RangeRole[] = ['service', 'pod', 'pool', 'masquerade', 'node', 'node-pod'];

const CANONICAL_V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

const SERVICE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);

/** Mutable state of one build. */
class Builder {
  readonly warnings: string[] = [];
  private suppressed = 0;
  private readonly rangeKeys = new Set<string>();
  private readonly rangesByRole = new Map<RangeRole, ClusterRange[]>();
  private readonly cidrCache = new Map<string, Cidr | string>();

  warn(msg: string): void {
    if (this.warnings.length < MAX_WARNINGS) this.warnings.push(msg);
    else this.suppressed++;
  }

  finishWarnings(gaps: string[]): string[] {
    const out = [...gaps, ...this.warnings];
    if (this.suppressed > 0) out.push(`${this.suppressed} more warning(s) not shown`);
    return out;
  }

  /** Parses a CIDR leniently (as Kubernetes does: host bits are masked, with a warning). */
  parseCidr(raw: unknown, what: string): Cidr | undefined {
    if (typeof raw !== 'string') {
      this.warn(`${what}: ${JSON.stringify(raw)} is not a CIDR`);
      return undefined;
    }
    const key = raw.trim();
    let c = this.cidrCache.get(key);
    if (c === undefined) {
      try {
        c = parseCidr(key);
      } catch (e) {
        try {
          c = parseCidr(key, { normalize: true });
          this.warn(`${what}: "${key}" has host bits set; read as ${formatCidr(c)}`);
        } catch {
          c = (e as Error).message;
        }
      }
      this.cidrCache.set(key, c);
    }
    if (typeof c === 'string') {
      this.warn(`${what}: "${key}" is not a CIDR (${c})`);
      return undefined;
    }
    return c;
  }

  cidr(raw: unknown, what: string): string | undefined {
    const c = this.parseCidr(raw, what);
    return c ? formatCidr(c) : undefined;
  }

  /** Parses and formats an IP (canonical IPv4 passes through untouched: the common, hot case). */
  ip(raw: unknown, what: string): string | undefined {
    if (typeof raw === 'string' && CANONICAL_V4.test(raw)) return raw;
    if (typeof raw !== 'string') {
      this.warn(`${what} ${JSON.stringify(raw)} is not an IP`);
      return undefined;
    }
    try {
      return formatIP(parseIP(raw));
    } catch {
      this.warn(`${what} "${raw}" is not an IP`);
      return undefined;
    }
  }

  /** Adds a range (normalized); returns the normalized CIDR, or undefined when it is not one. */
  addRange(raw: unknown, role: RangeRole, source: string, label: string): string | undefined {
    const cidr = this.cidr(raw, source);
    if (cidr === undefined) return undefined;
    this.addNormalizedRange(cidr, role, source, label);
    return cidr;
  }

  addNormalizedRange(cidr: string, role: RangeRole, source: string, label: string): void {
    const key = `${cidr}\u0000${role}\u0000${source}`;
    if (this.rangeKeys.has(key)) return;
    this.rangeKeys.add(key);
    let list = this.rangesByRole.get(role);
    if (!list) this.rangesByRole.set(role, (list = []));
    list.push({ cidr, role, source, label });
  }

  addRaw(r: RawRange): string | undefined {
    return this.addRange(r.cidr, r.role, r.source, r.label);
  }

  ranges(): ClusterRange[] {
    return ROLE_ORDER.flatMap((r) => this.rangesByRole.get(r) ?? []);
  }

  rangesOf(role: RangeRole): ClusterRange[] {
    return this.rangesByRole.get(role) ?? [];
  }
}

function nsName(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

function strMap(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return v as Record<string, string>;
}

function condition(o: KubeObject, type: string): boolean | undefined {
  const conds = o.status?.conditions;
  if (!Array.isArray(conds)) return undefined;
  const c = conds.find((x: any) => x && x.type === type);
  if (!c) return undefined;
  return c.status === 'True';
}

const SERVICE_CIDR_VERSION_RANK: Record<string, number> = { v1: 3, v1beta1: 2, v1alpha1: 1 };

function apiVersionOnly(av: string): string {
  return av.slice(av.lastIndexOf('/') + 1);
}

/** The newest ServiceCIDR API version served: 'v1' | 'v1beta1' | 'v1alpha1'; null if none; undefined if unknown. */
function newestServiceCIDRApi(versions: string[] | undefined): string | null | undefined {
  if (versions === undefined) return undefined;
  let best: string | null = null;
  for (const v of versions) {
    const short = apiVersionOnly(v);
    if (SERVICE_CIDR_VERSION_RANK[short] !== undefined && (best === null || SERVICE_CIDR_VERSION_RANK[short] > SERVICE_CIDR_VERSION_RANK[best])) best = short;
  }
  return best;
}

function isKubeadmKind(o: KubeObject, kind: string): boolean {
  return o.kind === kind && typeof o.apiVersion === 'string' && o.apiVersion.startsWith('kubeadm.k8s.io/');
}

export function buildSnapshot(raw: RawInventory): Snapshot {
  const inv = validateInventory(raw);
  const b = new Builder();
  const distro = newDistroSignals();
  const cni: CniSignals = { installations: [], poolCount: 0, blockCount: 0 };

  const services: ServiceInfo[] = [];
  const pods: PodInfo[] = [];
  const nodes: NodeInfo[] = [];
  const serviceCIDRs = new Map<string, ServiceCIDRInfo>();
  const pools = new Map<string, CalicoPool>();
  const blocks = new Map<string, CalicoBlock>();
  const affinities = new Map<string, BlockAffinityInfo>();
  const apiservers: ApiserverFlags[] = [];
  const controllerManagers: ControllerManagerFlags[] = [];
  const configMaps = new Map<string, KubeObject>();
  const kubeletConfigMaps: KubeObject[] = [];
  const configs: KubeObject[] = [...inv.configs];
  const references = new ReferenceCollector();
  let kubeProxyFromPod: { clusterCIDR?: string; mode?: string; pod: string } | undefined;
  let kopsNodeCount = 0;
  let kopsNodeExample = '';
  let kubeadmNodeCount = 0;
  let kubeadmNodeExample = '';
  let kubesprayNodeSign: string | undefined;
  let k3sSign: string | undefined;
  let nodeLocalDnsSign: string | undefined;
  let sslDirSign: string | undefined;

  // ---------- one pass over the objects ----------
  for (const o of inv.objects) {
    if (!o || typeof o !== 'object') continue;
    const md = o.metadata ?? {};
    if (o.kind !== 'Pod') references.add(o);
    // Pods, Services, Nodes and ConfigMaps are the core group's (apiVersion "v1"); a Knative Service or another
    // group's kind of the same name is something else.
    const core = typeof o.apiVersion === 'string' && !o.apiVersion.includes('/');
    switch (core || (o.kind !== 'Pod' && o.kind !== 'Service' && o.kind !== 'Node' && o.kind !== 'ConfigMap') ? o.kind : undefined) {
      case 'Pod': {
        const name = md.name ?? '';
        const ns = md.namespace ?? '';
        const spec = o.spec ?? {};
        const status = o.status ?? {};
        const what = `Pod ${ns}/${name}: podIP`;
        const podIPs: string[] = [];
        if (Array.isArray(status.podIPs) && status.podIPs.length > 0) {
          for (const p of status.podIPs) {
            const ip = b.ip(p?.ip, what);
            if (ip !== undefined) podIPs.push(ip);
          }
        } else if (status.podIP !== undefined && status.podIP !== null && status.podIP !== '') {
          const ip = b.ip(status.podIP, what);
          if (ip !== undefined) podIPs.push(ip);
        }
        const info: PodInfo = { namespace: ns, name, podIPs, hostNetwork: spec.hostNetwork === true, labels: md.labels ?? {} };
        if (typeof spec.nodeName === 'string') info.nodeName = spec.nodeName;
        if (typeof status.phase === 'string') info.phase = status.phase;
        const ref = md.ownerReferences?.find((r) => r && r.controller === true);
        if (ref && ref.kind && ref.name) info.owner = { kind: ref.kind, name: ref.name };
        pods.push(info);

        const labels = md.labels ?? {};
        const app = labels['k8s-app'];
        if (app === 'calico-node' || (name.startsWith('calico-node-') && !name.startsWith('calico-node-vertical'))) cni.calicoPod ??= `${ns}/${name}`;
        else if (app === 'cilium' || (name.startsWith('cilium-') && !name.startsWith('cilium-operator') && !name.startsWith('cilium-envoy'))) cni.ciliumPod ??= `${ns}/${name}`;
        else if (labels.app === 'flannel' || name.startsWith('kube-flannel-ds-')) cni.flannelPod ??= `${ns}/${name}`;
        else if (app === 'canal' || (ns === 'kube-system' && name.startsWith('canal-'))) cni.canalPod ??= `${ns}/${name}`;
        if (ns === 'kube-system') {
          if (app === 'kops-controller' && distro.kops.length < 8) distro.kops.push(`pod kube-system/${name} (kops-controller)`);
          if (app === 'nodelocaldns' || name.startsWith('nodelocaldns-')) nodeLocalDnsSign ??= `pod kube-system/${name} (kubespray's nodelocaldns)`;
          if (isComponentPod(o, 'kube-apiserver')) readApiserver(o, b, apiservers, (s) => (sslDirSign ??= s));
          else if (isComponentPod(o, 'kube-controller-manager')) readControllerManager(o, b, controllerManagers, (s) => (sslDirSign ??= s));
          else if (kubeProxyFromPod === undefined && isComponentPod(o, 'kube-proxy')) {
            const c = componentContainer(o, 'kube-proxy');
            if (c) {
              const flags = parseComponentFlags(containerWords(c), 'kube-proxy');
              if (flags.has('cluster-cidr') || flags.has('proxy-mode')) {
                kubeProxyFromPod = { pod: name };
                if (flags.has('cluster-cidr')) kubeProxyFromPod.clusterCIDR = flags.get('cluster-cidr');
                if (flags.has('proxy-mode')) kubeProxyFromPod.mode = flags.get('proxy-mode');
              }
            }
          }
        }
        break;
      }
      case 'Service': {
        const svc = readService(o, b);
        services.push(svc);
        break;
      }
      case 'Node': {
        const node = readNode(o, b);
        nodes.push(node);
        const labels = node.labels;
        const ig = labels['kops.k8s.io/instancegroup'];
        if (ig !== undefined) {
          if (kopsNodeCount++ === 0) kopsNodeExample = `${node.name}: ${ig}`;
        }
        const ann = md.annotations ?? {};
        if (ann['kubeadm.alpha.kubernetes.io/cri-socket'] !== undefined) {
          if (kubeadmNodeCount++ === 0) kubeadmNodeExample = node.name;
        }
        if (k3sSign === undefined) {
          if (labels['node.kubernetes.io/instance-type'] === 'k3s') k3sSign = `node ${node.name} labelled node.kubernetes.io/instance-type=k3s`;
          else {
            const k = Object.keys(ann).find((a) => a.startsWith('k3s.io/'));
            if (k) k3sSign = `node ${node.name} annotated ${k}`;
            else if (String(o.status?.nodeInfo?.kubeletVersion ?? '').includes('+k3s')) k3sSign = `node ${node.name} kubelet ${o.status.nodeInfo.kubeletVersion}`;
          }
        }
        if (kubesprayNodeSign === undefined) {
          const k = Object.keys(labels).find((x) => x.includes('kubespray')) ?? Object.keys(ann).find((x) => x.includes('kubespray'));
          if (k) kubesprayNodeSign = `node ${node.name} has label/annotation ${k}`;
        }
        break;
      }
      case 'ConfigMap': {
        const name = md.name ?? '';
        if (md.namespace === 'kube-system' && (name === 'kubelet-config' || /^kubelet-config-1\.\d+$/.test(name))) kubeletConfigMaps.push(o);
        else if (name === 'calico-config') cni.calicoConfig ??= o;
        else if (name === 'cilium-config') cni.ciliumConfig ??= o;
        else if (name === 'kube-flannel-cfg') cni.flannelConfig ??= o;
        else configMaps.set(nsName(o), o);
        break;
      }
      case 'DaemonSet': {
        const name = md.name ?? '';
        const where = nsName(o);
        if (name === 'calico-node') cni.calicoDaemonSet ??= where;
        else if (name === 'cilium') cni.ciliumDaemonSet ??= where;
        else if (name === 'kube-flannel-ds' || name.startsWith('kube-flannel-ds-')) cni.flannelDaemonSet ??= where;
        else if (name === 'canal') cni.canalPod ??= `DaemonSet ${where}`;
        else if (name === 'nodelocaldns' && md.namespace === 'kube-system') nodeLocalDnsSign ??= `DaemonSet ${where} (kubespray's nodelocaldns)`;
        break;
      }
      case 'ServiceCIDR': {
        if (!String(o.apiVersion ?? '').startsWith('networking.k8s.io/')) break;
        const name = md.name ?? '';
        const info: ServiceCIDRInfo = {
          name,
          cidrs: [],
          apiVersion: o.apiVersion ?? '',
          deleting: md.deletionTimestamp !== undefined && md.deletionTimestamp !== null,
        };
        const cidrs = o.spec?.cidrs;
        if (Array.isArray(cidrs)) {
          for (const c of cidrs) {
            const n = b.cidr(c, `ServiceCIDR/${name}`);
            if (n) info.cidrs.push(n);
          }
        }
        const ready = condition(o, 'Ready');
        if (ready !== undefined) info.ready = ready;
        const prev = serviceCIDRs.get(name);
        const rank = (x: ServiceCIDRInfo): number => SERVICE_CIDR_VERSION_RANK[apiVersionOnly(x.apiVersion)] ?? 0;
        if (!prev || rank(info) > rank(prev)) serviceCIDRs.set(name, info);
        break;
      }
      case 'IPPool': {
        const av = String(o.apiVersion ?? '');
        if (!av.startsWith('crd.projectcalico.org/') && !av.startsWith('projectcalico.org/')) break;
        const pool = readPool(o, b);
        if (pool) {
          // The v3 API and the CRDs show the same pools; keep one per name (the v3 view when both).
          if (!pools.has(pool.name) || av.startsWith('projectcalico.org/')) pools.set(pool.name, pool);
        }
        break;
      }
      case 'IPAMBlock': {
        const spec = o.spec ?? {};
        const cidr = b.cidr(spec.cidr, `IPAMBlock/${md.name ?? ''}`);
        if (!cidr) break;
        const block: CalicoBlock = { cidr, allocated: 0 };
        if (typeof spec.affinity === 'string' && spec.affinity.startsWith('host:')) block.node = spec.affinity.slice(5);
        if (Array.isArray(spec.allocations)) {
          let n = 0;
          for (const a of spec.allocations) if (a !== null && a !== undefined) n++;
          block.allocated = n;
        }
        blocks.set(cidr, block);
        break;
      }
      case 'BlockAffinity': {
        const spec = o.spec ?? {};
        const name = md.name ?? '';
        const cidr = b.cidr(spec.cidr, `BlockAffinity/${name}`);
        if (!cidr) break;
        const a: BlockAffinityInfo = { name, node: typeof spec.node === 'string' ? spec.node : '', cidr };
        if (typeof spec.state === 'string') a.state = spec.state;
        affinities.set(name, a);
        break;
      }
      case 'Installation':
        if (String(o.apiVersion ?? '').startsWith('operator.tigera.io/')) cni.installations.push(o);
        break;
      case 'ClusterInformation': {
        const t = o.spec?.clusterType;
        if (typeof t === 'string') {
          const parts = t.split(',').map((s) => s.trim());
          if (parts.includes('kubespray')) {
            distro.kubespray.push(`Calico ClusterInformation clusterType "${t}"`);
            distro.kubesprayStrong = true;
          }
          if (parts.includes('kubeadm')) distro.kubeadm.push(`Calico ClusterInformation clusterType "${t}" names kubeadm`);
        }
        break;
      }
      default:
        // Distribution configs passed among the objects are treated as configs.
        if (isKopsCluster(o) || isKubeadmKind(o, 'ClusterConfiguration') || o.kind === 'KubeletConfiguration' || o.kind === 'KubeProxyConfiguration') configs.push(o);
    }
  }

  // ---------- distribution configs ----------
  let kopsParse: KopsParse | undefined;
  let fileKubeadm: KubeadmNetworking | undefined;
  let fileKubeletDNS: string[] | undefined;
  let fileKubeProxy: { clusterCIDR?: string; mode?: string } | undefined;
  for (const c of configs) {
    if (!c || typeof c !== 'object') continue;
    if (isKopsCluster(c)) {
      if (kopsParse) {
        b.warn(`more than one kOps Cluster spec given; using the first and ignoring Cluster/${c.metadata?.name ?? ''}`);
        continue;
      }
      kopsParse = parseKopsCluster(c);
      distro.kops.unshift(`kOps Cluster spec ${c.metadata?.name ?? ''} (${c.apiVersion}, ${kopsParse.networking.layout} layout)`);
    } else if (isKubeadmKind(c, 'ClusterConfiguration')) {
      if (fileKubeadm) continue;
      fileKubeadm = parseClusterConfiguration(c as Record<string, any>);
      distro.kubeadm.push(`kubeadm ClusterConfiguration (${c.apiVersion}) given as a file`);
      if (typeof (c as any).certificatesDir === 'string' && (c as any).certificatesDir.startsWith('/etc/kubernetes/ssl')) {
        distro.kubespray.push(`ClusterConfiguration certificatesDir ${(c as any).certificatesDir} (kubespray's layout)`);
      }
    } else if (c.kind === 'KubeletConfiguration') {
      fileKubeletDNS ??= kubeletClusterDNS(c as Record<string, any>);
    } else if (c.kind === 'KubeProxyConfiguration') {
      const kp = c as Record<string, any>;
      fileKubeProxy ??= {
        ...(typeof kp.clusterCIDR === 'string' && kp.clusterCIDR !== '' ? { clusterCIDR: kp.clusterCIDR } : {}),
        ...(typeof kp.mode === 'string' && kp.mode !== '' ? { mode: kp.mode } : {}),
      };
    }
  }

  // kubeadm-config ConfigMap (live truth) wins over a ClusterConfiguration file.
  let kubeadm: KubeadmNetworking | undefined;
  const kubeadmCM = configMaps.get('kube-system/kubeadm-config');
  if (kubeadmCM) {
    const cc = clusterConfigurationFromConfigMap(kubeadmCM);
    if (typeof cc === 'string') b.warn(`ConfigMap kube-system/kubeadm-config: data.ClusterConfiguration is not valid YAML (${cc})`);
    else if (cc) {
      kubeadm = parseClusterConfiguration(cc);
      distro.kubeadm.unshift('ConfigMap kube-system/kubeadm-config');
      if (typeof cc.certificatesDir === 'string' && cc.certificatesDir.startsWith('/etc/kubernetes/ssl')) {
        distro.kubespray.push(`kubeadm-config certificatesDir ${cc.certificatesDir} (kubespray's layout)`);
      }
      addKubeadmRanges(b, kubeadm, 'kubeadm-config');
    }
  }
  if (fileKubeadm) addKubeadmRanges(b, fileKubeadm, 'ClusterConfiguration');
  kubeadm ??= fileKubeadm;

  // kubelet clusterDNS: kubeadm's kubelet-config ConfigMap, a KubeletConfiguration file, the kOps spec.
  const clusterDNS: string[] = [];
  const addDNS = (ips: string[], what: string): void => {
    for (const raw of ips) {
      const ip = b.ip(raw, what);
      if (ip !== undefined && !clusterDNS.includes(ip)) clusterDNS.push(ip);
    }
  };
  const kubeletCM = pickKubeletConfigMap(kubeletConfigMaps);
  if (kubeletCM) {
    const text = kubeletCM.data?.kubelet;
    if (typeof text === 'string') {
      const kc = parseEmbeddedYaml(text);
      if (typeof kc === 'string') b.warn(`ConfigMap kube-system/${kubeletCM.metadata?.name}: data.kubelet is not valid YAML (${kc})`);
      else {
        const dns = kubeletClusterDNS(kc);
        addDNS(dns, `ConfigMap kube-system/${kubeletCM.metadata?.name}: clusterDNS`);
        if (kubeadm && dns.length > 0) kubeadm.kubeletClusterDNS = [...clusterDNS];
      }
    }
  }
  if (clusterDNS.length === 0 && fileKubeletDNS) {
    addDNS(fileKubeletDNS, 'KubeletConfiguration clusterDNS');
    if (kubeadm && clusterDNS.length > 0) kubeadm.kubeletClusterDNS = [...clusterDNS];
  }

  let kops: KopsNetworking | undefined;
  if (kopsParse) {
    kops = kopsParse.networking;
    for (const r of kopsParse.ranges) b.addRaw(r);
    if (clusterDNS.length === 0) addDNS(kopsParse.clusterDNS, 'kOps spec clusterDNS');
  }

  // ---------- kube-proxy ----------
  let kubeProxy: Snapshot['kubeProxy'];
  const kpCM = configMaps.get('kube-system/kube-proxy');
  if (kpCM && typeof kpCM.data?.['config.conf'] === 'string') {
    const kp = parseEmbeddedYaml(kpCM.data['config.conf']);
    if (typeof kp === 'string') b.warn(`ConfigMap kube-system/kube-proxy: config.conf is not valid YAML (${kp})`);
    else {
      kubeProxy = {};
      if (typeof kp.clusterCIDR === 'string' && kp.clusterCIDR !== '') kubeProxy.clusterCIDR = kp.clusterCIDR;
      if (typeof kp.mode === 'string' && kp.mode !== '') kubeProxy.mode = kp.mode;
      for (const c of splitList(kubeProxy.clusterCIDR)) b.addRange(c, 'pod', 'kube-proxy clusterCIDR', 'kube-proxy clusterCIDR (ConfigMap kube-system/kube-proxy)');
    }
  }
  if (!kubeProxy && kubeProxyFromPod) {
    const { pod, ...rest } = kubeProxyFromPod;
    kubeProxy = rest;
    for (const c of splitList(rest.clusterCIDR)) b.addRange(c, 'pod', 'kube-proxy --cluster-cidr', `kube-proxy --cluster-cidr (pod ${pod})`);
  }
  if (!kubeProxy && fileKubeProxy) {
    kubeProxy = fileKubeProxy;
    for (const c of splitList(fileKubeProxy.clusterCIDR)) b.addRange(c, 'pod', 'KubeProxyConfiguration clusterCIDR', 'kube-proxy clusterCIDR (KubeProxyConfiguration file)');
  }

  // ---------- ServiceCIDRs, Calico ----------
  for (const sc of serviceCIDRs.values()) {
    for (const c of sc.cidrs) b.addNormalizedRange(c, 'service', `ServiceCIDR/${sc.name}`, `ServiceCIDR ${sc.name}${sc.deleting ? ' (being deleted)' : ''}`);
  }
  for (const p of pools.values()) b.addNormalizedRange(p.cidr, 'pool', `IPPool/${p.name}`, `Calico pool ${p.name}${p.disabled ? ' (disabled)' : ''}`);
  cni.poolCount = pools.size;
  cni.blockCount = blocks.size;
  if (cni.calicoConfig) {
    const t = cni.calicoConfig.data?.cluster_type;
    if (typeof t === 'string' && t.split(',').map((s) => s.trim()).includes('kubespray')) {
      distro.kubespray.push(`ConfigMap ${nsName(cni.calicoConfig)} cluster_type "${t}"`);
      distro.kubesprayStrong = true;
    }
  }
  const cniResult = detectCni(cni);
  for (const r of cniResult.ranges) b.addRaw(r);
  for (const w of cniResult.warnings) b.warn(w);

  // ---------- nodes: per-node pod CIDRs and the node network ----------
  for (const n of nodes) {
    for (const c of n.podCIDRs) b.addNormalizedRange(c, 'node-pod', `Node/${n.name} spec.podCIDR`, `node ${n.name} podCIDR`);
  }
  addNodeNetworkRanges(b, nodes);

  // ---------- distribution ----------
  if (kopsNodeCount > 0) distro.kops.push(`${kopsNodeCount} node(s) labelled kops.k8s.io/instancegroup (e.g. ${kopsNodeExample})`);
  if (k3sSign) distro.k3s.push(k3sSign);
  if (kubeadmNodeCount > 0) distro.kubeadm.push(`${kubeadmNodeCount} node(s) annotated kubeadm.alpha.kubernetes.io/cri-socket (e.g. ${kubeadmNodeExample})`);
  if (sslDirSign) distro.kubespray.push(sslDirSign);
  if (nodeLocalDnsSign) distro.kubespray.push(nodeLocalDnsSign);
  if (kubesprayNodeSign) distro.kubespray.push(kubesprayNodeSign);
  const distribution = detectDistribution(distro);

  // ---------- Services: kubernetes and DNS ----------
  const kubernetesSvc = services.find((s) => s.namespace === 'default' && s.name === 'kubernetes');
  const byClusterIP = new Map<string, ServiceInfo>();
  for (const s of services) for (const ip of s.clusterIPs) if (!byClusterIP.has(ip)) byClusterIP.set(ip, s);
  let dnsService: Snapshot['dnsService'];
  const dnsCandidates: Array<{ ip: string; foundBy: string }> = clusterDNS.map((ip) => ({ ip, foundBy: 'kubelet clusterDNS' }));
  if (kops?.kubeDNSServerIP) {
    const ip = b.ip(kops.kubeDNSServerIP, 'kOps spec.kubeDNS.serverIP');
    if (ip) dnsCandidates.push({ ip, foundBy: 'kOps kubeDNS.serverIP' });
  }
  for (const c of dnsCandidates) {
    const s = byClusterIP.get(c.ip);
    if (s) {
      dnsService = { namespace: s.namespace, name: s.name, clusterIPs: [...s.clusterIPs], foundBy: c.foundBy };
      break;
    }
  }
  if (!dnsService) {
    const bySelector = services.filter((s) => s.namespace === 'kube-system' && s.selector?.['k8s-app'] === 'kube-dns' && !s.headless && s.clusterIPs.length > 0);
    const s = bySelector.find((x) => x.name === 'kube-dns') ?? bySelector.find((x) => x.name === 'coredns') ?? bySelector[0];
    if (s) dnsService = { namespace: s.namespace, name: s.name, clusterIPs: [...s.clusterIPs], foundBy: 'selector k8s-app=kube-dns' };
  }

  const snapshot: Snapshot = {
    source: inv.source,
    distribution,
    cni: {
      plugin: cniResult.plugin,
      ipam: cniResult.ipam,
      operatorManaged: cniResult.operatorManaged,
      evidence: cniResult.evidence,
      ...(cniResult.ipamMode !== undefined ? { ipamMode: cniResult.ipamMode } : {}),
    },
    ranges: b.ranges(),
    serviceCIDRs: [...serviceCIDRs.values()],
    kubernetesServiceIPs: kubernetesSvc ? [...kubernetesSvc.clusterIPs] : [],
    clusterDNS,
    apiservers,
    controllerManagers,
    nodes,
    services,
    pods,
    pools: [...pools.values()],
    blocks: [...blocks.values()],
    blockAffinities: [...affinities.values()],
    referenceSources: references.sources(),
    warnings: [],
  };
  const version = inv.serverVersion ?? inferServerVersion(inv.objects, inv.configs);
  if (version !== undefined) snapshot.kubernetesVersion = version;
  const api = newestServiceCIDRApi(inv.serviceCIDRApiVersions);
  if (api !== undefined) snapshot.serviceCIDRApi = api;
  if (dnsService) snapshot.dnsService = dnsService;
  if (kubeProxy) snapshot.kubeProxy = kubeProxy;
  if (kops) snapshot.kops = kops;
  if (kubeadm) snapshot.kubeadm = kubeadm;
  snapshot.warnings = b.finishWarnings(inv.gaps);
  return snapshot;
}

// ---------------------------------------------------------------------------------------------------

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

function readApiserver(o: KubeObject, b: Builder, out: ApiserverFlags[], ssl: (s: string) => void): void {
  const c = componentContainer(o, 'kube-apiserver');
  if (!c) return;
  const name = o.metadata?.name ?? '';
  const words = containerWords(c);
  const f = parseComponentFlags(words, 'kube-apiserver');
  const info: ApiserverFlags = { pod: name };
  if (f.has('service-cluster-ip-range')) {
    info.serviceClusterIPRange = [];
    for (const raw of splitList(f.get('service-cluster-ip-range'))) {
      const n = b.addRange(raw, 'service', 'kube-apiserver --service-cluster-ip-range', 'Service CIDR (kube-apiserver flag)');
      if (n) info.serviceClusterIPRange.push(n);
    }
  }
  if (f.has('feature-gates')) info.featureGates = f.get('feature-gates');
  if (f.has('runtime-config')) info.runtimeConfig = f.get('runtime-config');
  const plugins = f.get('enable-admission-plugins') ?? f.get('admission-control');
  if (plugins !== undefined) info.admissionPlugins = splitList(plugins);
  if (f.has('advertise-address')) info.advertiseAddress = f.get('advertise-address');
  out.push(info);
  const w = words.find((x) => x.includes('=/etc/kubernetes/ssl/'));
  if (w) ssl(`pod kube-system/${name} flag ${w} (kubespray keeps certificates in /etc/kubernetes/ssl)`);
}

function readControllerManager(o: KubeObject, b: Builder, out: ControllerManagerFlags[], ssl: (s: string) => void): void {
  const c = componentContainer(o, 'kube-controller-manager');
  if (!c) return;
  const name = o.metadata?.name ?? '';
  const words = containerWords(c);
  const f = parseComponentFlags(words, 'kube-controller-manager');
  const info: ControllerManagerFlags = { pod: name };
  if (f.has('cluster-cidr')) {
    info.clusterCIDR = [];
    for (const raw of splitList(f.get('cluster-cidr'))) {
      const n = b.addRange(raw, 'pod', 'kube-controller-manager --cluster-cidr', 'cluster CIDR (kube-controller-manager flag)');
      if (n) info.clusterCIDR.push(n);
    }
  }
  const intFlag = (flag: string): number | undefined => {
    if (!f.has(flag)) return undefined;
    const v = parseIntFlag(f.get(flag));
    if (v === undefined) b.warn(`pod kube-system/${name}: --${flag}=${f.get(flag)} is not a number`);
    return v;
  };
  const m = intFlag('node-cidr-mask-size');
  if (m !== undefined) info.nodeCIDRMaskSize = m;
  const m4 = intFlag('node-cidr-mask-size-ipv4');
  if (m4 !== undefined) info.nodeCIDRMaskSizeIPv4 = m4;
  const m6 = intFlag('node-cidr-mask-size-ipv6');
  if (m6 !== undefined) info.nodeCIDRMaskSizeIPv6 = m6;
  const alloc = parseBool(f.get('allocate-node-cidrs'));
  if (alloc !== undefined) info.allocateNodeCIDRs = alloc;
  if (f.has('service-cluster-ip-range')) {
    info.serviceClusterIPRange = [];
    for (const raw of splitList(f.get('service-cluster-ip-range'))) {
      const n = b.addRange(raw, 'service', 'kube-controller-manager --service-cluster-ip-range', 'Service CIDR (kube-controller-manager flag)');
      if (n) info.serviceClusterIPRange.push(n);
    }
  }
  out.push(info);
  const w = words.find((x) => x.includes('=/etc/kubernetes/ssl/'));
  if (w) ssl(`pod kube-system/${name} flag ${w} (kubespray keeps certificates in /etc/kubernetes/ssl)`);
}

function readService(o: KubeObject, b: Builder): ServiceInfo {
  const md = o.metadata ?? {};
  const ns = md.namespace ?? '';
  const name = md.name ?? '';
  const spec = o.spec ?? {};
  const what = `Service ${ns}/${name}:`;
  let type: ServiceInfo['type'] = 'ClusterIP';
  if (typeof spec.type === 'string') {
    if (SERVICE_TYPES.has(spec.type)) type = spec.type as ServiceInfo['type'];
    else b.warn(`${what} unknown type "${spec.type}", read as ClusterIP`);
  }
  const raw: unknown[] = Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0 ? spec.clusterIPs : spec.clusterIP !== undefined && spec.clusterIP !== null ? [spec.clusterIP] : [];
  const headless = raw[0] === 'None' || spec.clusterIP === 'None';
  const clusterIPs: string[] = [];
  for (const r of raw) {
    if (r === 'None' || r === '') continue;
    const ip = b.ip(r, `${what} clusterIP`);
    if (ip !== undefined) clusterIPs.push(ip);
  }
  const ports: ServiceInfo['ports'] = [];
  if (Array.isArray(spec.ports)) {
    for (const p of spec.ports) {
      if (!p || typeof p !== 'object') continue;
      const port: ServiceInfo['ports'][number] = { port: Number(p.port) };
      if (typeof p.name === 'string' && p.name !== '') port.name = p.name;
      if (typeof p.protocol === 'string') port.protocol = p.protocol;
      if (typeof p.targetPort === 'number' || typeof p.targetPort === 'string') port.targetPort = p.targetPort;
      if (typeof p.nodePort === 'number') port.nodePort = p.nodePort;
      ports.push(port);
    }
  }
  const lb: string[] = [];
  const addLB = (v: unknown): void => {
    if (v === undefined || v === null || v === '') return;
    const ip = b.ip(v, `${what} load balancer IP`);
    if (ip !== undefined && !lb.includes(ip)) lb.push(ip);
  };
  const ingress = o.status?.loadBalancer?.ingress;
  if (Array.isArray(ingress)) for (const i of ingress) addLB(i?.ip);
  addLB(spec.loadBalancerIP);
  const externalIPs: string[] = [];
  if (Array.isArray(spec.externalIPs)) {
    for (const e of spec.externalIPs) {
      const ip = b.ip(e, `${what} externalIP`);
      if (ip !== undefined) externalIPs.push(ip);
    }
  }
  const info: ServiceInfo = {
    namespace: ns,
    name,
    type,
    clusterIPs,
    headless,
    ports,
    loadBalancerIPs: lb,
    loadBalancerSourceRanges: Array.isArray(spec.loadBalancerSourceRanges) ? spec.loadBalancerSourceRanges.filter((x: unknown) => typeof x === 'string') : [],
    externalIPs,
    labels: strMap(md.labels),
    annotations: strMap(md.annotations),
  };
  if (typeof spec.externalName === 'string') info.externalName = spec.externalName;
  if (spec.selector && typeof spec.selector === 'object' && !Array.isArray(spec.selector)) info.selector = spec.selector;
  return info;
}

function readNode(o: KubeObject, b: Builder): NodeInfo {
  const md = o.metadata ?? {};
  const name = md.name ?? '';
  const spec = o.spec ?? {};
  const rawCidrs: unknown[] = Array.isArray(spec.podCIDRs) && spec.podCIDRs.length > 0 ? spec.podCIDRs : spec.podCIDR ? [spec.podCIDR] : [];
  const podCIDRs: string[] = [];
  for (const r of rawCidrs) {
    const c = b.cidr(r, `Node/${name} spec.podCIDR`);
    if (c) podCIDRs.push(c);
  }
  const internalIPs: string[] = [];
  const externalIPs: string[] = [];
  const addrs = o.status?.addresses;
  if (Array.isArray(addrs)) {
    for (const a of addrs) {
      if (!a || (a.type !== 'InternalIP' && a.type !== 'ExternalIP')) continue;
      const ip = b.ip(a.address, `Node/${name}: ${a.type}`);
      if (ip === undefined) continue;
      (a.type === 'InternalIP' ? internalIPs : externalIPs).push(ip);
    }
  }
  const node: NodeInfo = { name, podCIDRs, internalIPs, externalIPs, labels: strMap(md.labels), unschedulable: spec.unschedulable === true };
  const ready = condition(o, 'Ready');
  if (ready !== undefined) node.ready = ready;
  const kubelet = o.status?.nodeInfo?.kubeletVersion;
  if (typeof kubelet === 'string' && kubelet !== '') node.kubeletVersion = kubelet;
  return node;
}

function readPool(o: KubeObject, b: Builder): CalicoPool | undefined {
  const name = o.metadata?.name ?? '';
  const spec = o.spec ?? {};
  const c = b.parseCidr(spec.cidr, `IPPool/${name}`);
  if (!c) return undefined;
  let blockSize = c.family === 4 ? 26 : 122;
  if (spec.blockSize !== undefined && spec.blockSize !== null) {
    const n = Number(spec.blockSize);
    if (Number.isInteger(n)) blockSize = n;
    else b.warn(`IPPool/${name}: blockSize ${JSON.stringify(spec.blockSize)} is not a number; assuming ${blockSize}`);
  }
  const pool: CalicoPool = { name, cidr: formatCidr(c), blockSize, disabled: spec.disabled === true };
  if (typeof spec.nodeSelector === 'string') pool.nodeSelector = spec.nodeSelector;
  const ipip = typeof spec.ipipMode === 'string' ? spec.ipipMode : spec.ipip?.enabled === true ? (spec.ipip.mode ?? 'Always') : undefined;
  if (ipip !== undefined) pool.ipipMode = ipip;
  if (typeof spec.vxlanMode === 'string') pool.vxlanMode = spec.vxlanMode;
  const nat = typeof spec.natOutgoing === 'boolean' ? spec.natOutgoing : spec['nat-outgoing'];
  if (typeof nat === 'boolean') pool.natOutgoing = nat;
  if (Array.isArray(spec.allowedUses)) pool.allowedUses = spec.allowedUses.filter((x: unknown) => typeof x === 'string');
  return pool;
}

/**
 * The node network. A configured one (kOps networkCIDR / additionalNetworkCIDRs, already added) is
 * authoritative. Nodes whose InternalIP lies outside every configured node range contribute a heuristic
 * range: the /24 (IPv4) or /64 (IPv6) around the address, de-duplicated, source "node InternalIPs".
 * The real subnet may be larger or smaller; /24 and /64 are the common LAN/VPC subnet sizes and keep the
 * estimate tight enough not to flag unrelated ranges as overlapping.
 */
function addNodeNetworkRanges(b: Builder, nodes: NodeInfo[]): void {
  const configured: Cidr[] = [];
  for (const r of b.rangesOf('node')) {
    try {
      configured.push(parseCidr(r.cidr));
    } catch {
      // normalized already; cannot happen
    }
  }
  const seen = new Set<string>();
  for (const n of nodes) {
    for (const raw of n.internalIPs) {
      let ip;
      try {
        ip = parseIP(raw);
      } catch {
        continue;
      }
      if (configured.some((c) => contains(c, ip))) continue;
      const prefix = ip.family === 4 ? 24 : 64;
      const cidr = formatCidr(parseCidr(`${formatIP(ip)}/${prefix}`, { normalize: true }));
      if (seen.has(cidr)) continue;
      seen.add(cidr);
      b.addNormalizedRange(cidr, 'node', 'node InternalIPs', `node network around the nodes' InternalIPs (/${prefix} guess)`);
    }
  }
}
