/**
 * OpenShift 4.x (and OKD): the Cluster Network Operator owns the cluster's network configuration, read from the
 * cluster-scoped `Network` object of config.openshift.io/v1 named `cluster` (spec/status clusterNetwork,
 * serviceNetwork, networkType) and refined in the operator.openshift.io/v1 `Network` named `cluster`
 * (OVN-Kubernetes' internal subnets). The cluster DNS Service is the DNS operator's openshift-dns/dns-default.
 *
 * Recognised by the Network config (config.openshift.io/v1, canonical name `cluster`) or the ClusterVersion object
 * (config.openshift.io/v1, `version`), or by two weaker signs together: nodes labelled node.openshift.io/os_id, the namespaces of
 * OpenShift's own operators (openshift-dns, openshift-ovn-kubernetes, ...), kubelets reporting a "+<commit>"
 * version suffix.
 *
 * Refused: moving the Service network (serviceNetwork cannot be changed after installation) and moving the pod
 * network (OpenShift documents only expanding clusterNetwork's CIDR mask, on OVN-Kubernetes, through the Network
 * config; the network address and hostPrefix stay). Sources: the `sources` list, quoted in docs/platforms.md.
 */
import { NetError, formatCidr, parseCidr, tryParseCidr } from '../../net/index.ts';
import { firstAndMore } from '../../text.ts';
import type { KubeObject } from '../../vocabulary.ts';
import { objectsOf, type Platform, type PlatformInput, type PlatformRange, type PlatformResource, type ReservedRange } from '../../platform/types.ts';

const CONFIG_GROUP = 'config.openshift.io';
const OPERATOR_GROUP = 'operator.openshift.io';

const NETWORK_CONFIG: PlatformResource = { group: CONFIG_GROUP, version: 'v1', plural: 'networks', kind: 'Network', namespaced: false };
const NETWORK_OPERATOR: PlatformResource = { group: OPERATOR_GROUP, version: 'v1', plural: 'networks', kind: 'Network', namespaced: false };
const CLUSTER_VERSION: PlatformResource = { group: CONFIG_GROUP, version: 'v1', plural: 'clusterversions', kind: 'ClusterVersion', namespaced: false };

/** Namespaces of OpenShift's own operators and their operands (cluster-dns-operator, cluster-network-operator, ...). */
const OPENSHIFT_NAMESPACES = [
  'openshift-dns', 'openshift-dns-operator', 'openshift-network-operator', 'openshift-ovn-kubernetes', 'openshift-sdn',
  'openshift-kube-apiserver', 'openshift-kube-controller-manager', 'openshift-etcd', 'openshift-cluster-version',
  'openshift-machine-config-operator',
];
/** Set on every node OpenShift's kubelet registers: rhcos, rhel, scos, fedora, Windows. */
const OS_ID_LABEL = 'node.openshift.io/os_id';
/** OpenShift kubelets report the upstream version and the openshift/kubernetes commit: v1.10.0+b81c8f8. */
const KUBELET_SUFFIX = /^v\d+\.\d+\.\d+\+[0-9a-f]{7,}$/;

/** The object of this group/kind named `name`. */
function named(input: PlatformInput, r: PlatformResource, name: string): KubeObject | undefined {
  return objectsOf(input, r.group, r.kind).find((o) => o.metadata?.name === name);
}

function detect(input: PlatformInput): string[] | undefined {
  const strong: string[] = [];
  const net = named(input, NETWORK_CONFIG, 'cluster');
  if (net) strong.push(`Network.config.openshift.io/cluster (networkType ${networkType(net) ?? 'not set'})`);
  const cv = theClusterVersion(input);
  if (cv) strong.push(`ClusterVersion.config.openshift.io/${cv.metadata?.name ?? ''}${clusterVersion(cv) ? ` (${clusterVersion(cv)})` : ''}`);

  const weak: string[] = [];
  const osIds = input.nodes.filter((n) => n.labels[OS_ID_LABEL] !== undefined);
  if (osIds.length > 0) {
    const ids = [...new Set(osIds.map((n) => n.labels[OS_ID_LABEL]))].join(', ');
    weak.push(`${osIds.length} of ${input.nodes.length} nodes labelled ${OS_ID_LABEL} (${ids})`);
  }
  const ns = OPENSHIFT_NAMESPACES.filter((n) => input.namespaces.has(n));
  if (ns.length > 0) weak.push(`OpenShift operator namespaces ${firstAndMore(ns, 3)}`);
  const kubelet = input.nodes.find((n) => n.kubeletVersion && KUBELET_SUFFIX.test(n.kubeletVersion));
  if (kubelet) weak.push(`kubelet version ${kubelet.kubeletVersion} (OpenShift's +commit suffix) on ${kubelet.name}`);

  if (strong.length > 0) return [...strong, ...weak];
  // One weak sign alone (a namespace someone named openshift-dns, a custom kubelet build) is not enough.
  return weak.length >= 2 ? weak : undefined;
}

/** The cluster's ClusterVersion (one per cluster, `oc get clusterversion/version`): the one named `version`, else any. */
function theClusterVersion(input: PlatformInput): KubeObject | undefined {
  return named(input, CLUSTER_VERSION, 'version') ?? objectsOf(input, CLUSTER_VERSION.group, CLUSTER_VERSION.kind)[0];
}

function networkType(net: KubeObject): string | undefined {
  const t = net.status?.networkType ?? net.spec?.networkType;
  return typeof t === 'string' && t !== '' ? t : undefined;
}

/** The version the cluster runs: the newest Completed entry of status.history, else status.desired.version. */
function clusterVersion(cv: KubeObject): string | undefined {
  const history: any[] = Array.isArray(cv.status?.history) ? cv.status.history : [];
  const done = history.find((h) => h?.state === 'Completed' && typeof h.version === 'string' && h.version !== '');
  const v = done?.version ?? cv.status?.desired?.version;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The oldest version in status.history (newest first); history is capped, so it bounds the install version from above. */
function oldestVersion(cv: KubeObject | undefined): { major: number; minor: number } | undefined {
  const history: any[] = Array.isArray(cv?.status?.history) ? cv!.status.history : [];
  const last = [...history].reverse().find((h) => typeof h?.version === 'string' && /^\d+\.\d+/.test(h.version));
  const m = last ? /^(\d+)\.(\d+)/.exec(last.version) : null;
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : [];
}

function ranges(input: PlatformInput): PlatformRange[] {
  const net = named(input, NETWORK_CONFIG, 'cluster');
  if (!net) return [];
  const out: PlatformRange[] = [];
  for (const part of ['spec', 'status'] as const) {
    const where = `Network.config.openshift.io/cluster ${part}`;
    const cn: any[] = Array.isArray(net[part]?.clusterNetwork) ? net[part].clusterNetwork : [];
    for (const e of cn) {
      if (typeof e?.cidr !== 'string' || e.cidr === '') continue;
      const host = typeof e.hostPrefix === 'number' ? ` (hostPrefix ${e.hostPrefix})` : '';
      out.push({ cidr: e.cidr, role: 'pod', source: `${where}.clusterNetwork`, label: `OpenShift clusterNetwork${host}` });
    }
    for (const s of strings(net[part]?.serviceNetwork)) {
      out.push({ cidr: s, role: 'service', source: `${where}.serviceNetwork`, label: 'OpenShift serviceNetwork' });
    }
  }
  return out;
}

/** The network of an OVN-Kubernetes node annotation's address ("100.64.0.4/16" → 100.64.0.0/16). */
function networkOf(addr: unknown): string | undefined {
  if (typeof addr !== 'string') return undefined;
  try {
    return formatCidr(parseCidr(addr, { normalize: true }));
  } catch (e) {
    if (e instanceof NetError) return undefined;
    throw e;
  }
}

function annotationJson(input: PlatformInput, key: string): any[] {
  const out: any[] = [];
  for (const n of input.nodes) {
    const raw = n.annotations[key];
    if (typeof raw !== 'string') continue;
    try { out.push(JSON.parse(raw)); } catch { /* not JSON: ignored */ }
  }
  return out;
}

/** One reserved subnet per family: the operator config's override, else what the nodes report, else the default. */
function pick(override: unknown, fromNodes: Array<string | undefined>, dflt: string): { cidr: string; from: string } {
  if (typeof override === 'string' && tryParseCidr(override)) return { cidr: override, from: 'Network.operator.openshift.io/cluster' };
  const seen = [...new Set(fromNodes.filter((x): x is string => !!x))];
  if (seen.length === 1) return { cidr: seen[0]!, from: 'node annotations' };
  return { cidr: dflt, from: 'default' };
}

function reserved(input: PlatformInput): ReservedRange[] {
  const net = named(input, NETWORK_CONFIG, 'cluster');
  const op = named(input, NETWORK_OPERATOR, 'cluster');
  const type = (net ? networkType(net) : undefined) ?? op?.spec?.defaultNetwork?.type;
  // OpenShift SDN has no such internal subnets; an unknown type on a 4.x cluster is most likely OVN-Kubernetes
  // (the only plugin for new installs since 4.15), so its subnets are reported rather than missed.
  if (type === 'OpenShiftSDN') return [];
  const ovn = op?.spec?.defaultNetwork?.ovnKubernetesConfig ?? {};
  const why = (what: string, p: { from: string }, dflt: string) =>
    `OVN-Kubernetes ${what} (${p.from === 'default' ? `default ${dflt}` : `from ${p.from}`})`;
  const out: ReservedRange[] = [];

  // The gateway router's join address: {"default":{"ipv4":"100.64.0.4/16"}}, or {"ipv4":...} in the older, singular annotation.
  const joinNodes = [
    ...annotationJson(input, 'k8s.ovn.org/node-gateway-router-lrp-ifaddrs').map((j) => j?.default),
    ...annotationJson(input, 'k8s.ovn.org/node-gateway-router-lrp-ifaddr'),
  ];
  const join4 = pick(ovn.ipv4?.internalJoinSubnet ?? ovn.v4InternalSubnet, joinNodes.map((j) => networkOf(j?.ipv4)), '100.64.0.0/16');
  out.push({ cidr: join4.cidr, reason: why('join subnet (internalJoinSubnet)', join4, '100.64.0.0/16') });
  const join6 = pick(ovn.ipv6?.internalJoinSubnet ?? ovn.v6InternalSubnet, joinNodes.map((j) => networkOf(j?.ipv6)), 'fd98::/64');
  out.push({ cidr: join6.cidr, reason: why('join subnet (IPv6 internalJoinSubnet)', join6, 'fd98::/64') });

  const transitNodes = annotationJson(input, 'k8s.ovn.org/node-transit-switch-port-ifaddr');
  const tr4 = pick(ovn.ipv4?.internalTransitSwitchSubnet, transitNodes.map((t) => networkOf(t?.ipv4)), '100.88.0.0/16');
  out.push({ cidr: tr4.cidr, reason: why('transit switch subnet (internalTransitSwitchSubnet)', tr4, '100.88.0.0/16') });
  const tr6 = pick(ovn.ipv6?.internalTransitSwitchSubnet, transitNodes.map((t) => networkOf(t?.ipv6)), 'fd97::/64');
  out.push({ cidr: tr6.cidr, reason: why('transit switch subnet (IPv6 internalTransitSwitchSubnet)', tr6, 'fd97::/64') });

  // Masquerade: 169.254.169.0/29 and fd69::/125 on clusters installed before 4.17 (kept on upgrade),
  // 169.254.0.0/17 and fd69::/112 on clusters installed with 4.17 or later.
  const masqNodes = annotationJson(input, 'k8s.ovn.org/node-masquerade-subnet');
  const old = oldestVersion(theClusterVersion(input));
  const before417 = old !== undefined && old.major === 4 && old.minor < 17;
  const [d4, d6] = before417 ? ['169.254.169.0/29', 'fd69::/125'] : ['169.254.0.0/17', 'fd69::/112'];
  const gw = ovn.gatewayConfig ?? {};
  const m4 = pick(gw.ipv4?.internalMasqueradeSubnet, masqNodes.map((m) => networkOf(m?.ipv4)), d4);
  out.push({ cidr: m4.cidr, reason: why('masquerade subnet (internalMasqueradeSubnet)', m4, d4) });
  const m6 = pick(gw.ipv6?.internalMasqueradeSubnet, masqNodes.map((m) => networkOf(m?.ipv6)), d6);
  out.push({ cidr: m6.cidr, reason: why('masquerade subnet (IPv6 internalMasqueradeSubnet)', m6, d6) });
  return out;
}

export const openshift: Platform<'openshift'> = {
  kind: 'openshift',
  title: 'OpenShift',
  reads: [NETWORK_CONFIG, NETWORK_OPERATOR, CLUSTER_VERSION],
  detect,
  ranges,
  reserved,
  dnsServices: [{ namespace: 'openshift-dns', name: 'dns-default', selector: { 'dns.operator.openshift.io/daemonset-dns': 'default' } }],
  capabilities: {
    service: {
      supported: false,
      reason: 'OpenShift\'s serviceNetwork (Network.config.openshift.io/cluster) cannot be changed after installation, '
        + 'and the Cluster Network Operator, not kube-renumber, configures the kube-apiservers\' service range',
      instead: 'install a new cluster with the serviceNetwork you want and move the workloads to it',
    },
    pod: {
      supported: false,
      reason: 'OpenShift documents only expanding the clusterNetwork range (OVN-Kubernetes only; same network address '
        + 'and hostPrefix, a shorter CIDR mask); any other pod network change is not supported after installation',
      instead: 'to get more pod addresses, expand the range in place with `oc patch Network.config.openshift.io cluster '
        + '--type=merge` (clusterNetwork cidr with a shorter mask, hostPrefix unchanged); for a different range, install a new cluster',
    },
  },
  sources: [
    'https://docs.redhat.com/fr/documentation/openshift_container_platform/4.12/html/networking/nw-operator-cr_cluster-network-operator',
    'https://github.com/openshift/openshift-docs/blob/main/networking/configuring-cluster-network-range.adoc',
    'https://github.com/openshift/openshift-docs/blob/main/modules/nw-cluster-network-range-edit.adoc',
    'https://docs.redhat.com/es/documentation/openshift_container_platform/4.17/html/networking/cidr-range-definitions',
    'https://github.com/openshift/api/blob/master/config/v1/types_network.go',
    'https://github.com/openshift/api/blob/master/operator/v1/types_network.go',
    'https://github.com/openshift/api/blob/master/config/v1/types_cluster_version.go',
    'https://github.com/openshift/cluster-dns-operator/blob/master/pkg/operator/controller/names.go',
    'https://github.com/openshift/cluster-dns-operator/blob/master/pkg/operator/controller/controller.go',
    'https://github.com/openshift/enhancements/blob/master/enhancements/baremetal/add-bare-metal-host-to-vsphere.md',
    'https://github.com/openshift/ovn-kubernetes/blob/master/go-controller/pkg/util/node_annotations.go',
  ],
};
