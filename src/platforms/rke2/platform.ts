/**
 * RKE2 (Rancher's Kubernetes distribution built on k3s): the rke2 server runs etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler as static pods it writes itself from its flags or
 * /etc/rancher/rke2/config.yaml, and deploys the CNI (Canal by default, Calico or Cilium) and CoreDNS as Helm
 * charts (HelmChart objects, helm.cattle.io/v1) whose values it rewrites on every start. Editing those
 * manifests by hand does not last: the plans' patches go to config.yaml (plan.ts). A Pod
 * CIDR move is refused with Calico, whose pool the rke2-calico chart owns.
 *
 * Recognised by what RKE2 writes on its Node objects (k3s's code with program name "rke2"): the annotations
 * rke2.io/node-args, rke2.io/node-config-hash, rke2.io/node-env, the label node.kubernetes.io/instance-type=rke2
 * and providerID rke2://<node> of its embedded cloud provider, the "+rke2r" kubelet version; or by its
 * HelmCharts (kube-system/rke2-coredns, rke2-canal, ...). Sources in docs/platforms.md.
 * Ranges: the servers' rke2.io/node-args, the global.clusterCIDR / global.serviceCIDR values RKE2 injects into
 * its HelmCharts (pkg/bootstrap/bootstrap.go setChartValues), else RKE2's documented defaults, labelled as such.
 */
import { objectsOf, SUPPORTED, type Platform, type PlatformInput, type PlatformRange } from '../../platform/types.ts';
import { firstAndMore, splitList } from '../../text.ts';
import { rangesFromArgs, serverArgs } from '../k3s-family/node-args.ts';
import { clusterDnsEvidence, programNodeSigns } from '../k3s-family/signs.ts';

export const RKE2_NODE_ARGS = 'rke2.io/node-args';

/** RKE2's documented defaults (https://docs.rke2.io/reference/server_config, Networking). */
export const RKE2_DEFAULTS = { clusterCIDR: '10.42.0.0/16', serviceCIDR: '10.43.0.0/16', clusterDNS: '10.43.0.10' } as const;

const HELM_CHART = { group: 'helm.cattle.io', version: 'v1', plural: 'helmcharts', kind: 'HelmChart', namespaced: true } as const;

const CIDR_SHAPE = /^[0-9A-Fa-f:.]+\/\d{1,3}$/;

/** RKE2's own HelmCharts: kube-system, named rke2-*. */
function rke2Charts(input: PlatformInput): Array<{ name: string; set: Record<string, unknown> }> {
  return objectsOf(input, HELM_CHART.group, HELM_CHART.kind)
    .filter((o) => o.metadata?.namespace === 'kube-system' && typeof o.metadata?.name === 'string' && o.metadata.name.startsWith('rke2-'))
    .map((o) => ({ name: String(o.metadata?.name), set: o.spec?.set && typeof o.spec.set === 'object' ? o.spec.set : {} }));
}

/** The CIDRs RKE2 injected into its charts' spec.set under `key` (comma-separated for dual-stack). */
function chartRanges(input: PlatformInput, key: 'global.clusterCIDR' | 'global.serviceCIDR'): PlatformRange[] {
  const byValue = new Map<string, string[]>();
  for (const c of rke2Charts(input)) {
    const v = c.set[key];
    if (typeof v !== 'string') continue;
    for (const cidr of splitList(v).filter((s) => CIDR_SHAPE.test(s))) {
      const list = byValue.get(cidr);
      if (list) list.push(c.name);
      else byValue.set(cidr, [c.name]);
    }
  }
  return [...byValue].map(([cidr, charts]) => ({
    cidr,
    role: key === 'global.clusterCIDR' ? 'pod' as const : 'service' as const,
    source: `RKE2 HelmChart spec.set ${key}`,
    label: `RKE2 ${key} (HelmChart kube-system/${firstAndMore(charts, 3)})`,
  }));
}

function ranges(input: PlatformInput): PlatformRange[] {
  const servers = serverArgs(input.nodes, RKE2_NODE_ARGS);
  const out: PlatformRange[] = [];
  const why = servers.length === 0 ? `no server's ${RKE2_NODE_ARGS} seen` : `not set in the ${RKE2_NODE_ARGS} of server ${firstAndMore(servers.map((s) => s.node), 3)}`;
  for (const [flag, key, role, def] of [
    ['--cluster-cidr', 'global.clusterCIDR', 'pod', RKE2_DEFAULTS.clusterCIDR],
    ['--service-cidr', 'global.serviceCIDR', 'service', RKE2_DEFAULTS.serviceCIDR],
  ] as const) {
    const read = [...rangesFromArgs(servers, RKE2_NODE_ARGS, flag, 'RKE2'), ...chartRanges(input, key)];
    if (read.length > 0) out.push(...read);
    else out.push({ cidr: def, role, source: `RKE2 default ${flag} (${why}, no RKE2 HelmChart ${key})`, label: `RKE2 ${flag} default ${def}, not read from the cluster` });
  }
  return out;
}

export const rke2: Platform<'rke2'> = {
  kind: 'rke2',
  title: 'RKE2',
  reads: [HELM_CHART],
  detect(input) {
    const signs = programNodeSigns(input.nodes, 'rke2', '+rke2');
    const charts = rke2Charts(input).map((c) => c.name);
    if (charts.length > 0) signs.push(`HelmChart(s) kube-system/${firstAndMore(charts, 3)} (helm.cattle.io/v1, deployed by RKE2)`);
    if (signs.length === 0) return undefined;
    const ds = [...input.daemonSets].filter((d) => d.startsWith('kube-system/rke2-'));
    if (ds.length > 0) signs.push(`DaemonSet(s) ${firstAndMore(ds, 3)}`);
    const dns = clusterDnsEvidence(serverArgs(input.nodes, RKE2_NODE_ARGS), RKE2_NODE_ARGS, 'RKE2', RKE2_DEFAULTS.clusterDNS);
    return dns ? [...signs, dns] : signs;
  },
  ranges,
  // The rke2-coredns chart's Service (rancher/rke2#2428: kube-system/rke2-coredns-rke2-coredns, 10.43.0.10,
  // selector app.kubernetes.io/instance=rke2-coredns,app.kubernetes.io/name=rke2-coredns,k8s-app=kube-dns).
  dnsServices: [{ namespace: 'kube-system', name: 'rke2-coredns-rke2-coredns', selector: { 'k8s-app': 'kube-dns' } }],
  // Both moves go through /etc/rancher/rke2/config.yaml on every server, which the rke2 server renders its static
  // pods and its charts' injected values from at every start (plan.ts, ../k3s-family/plan.ts).
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  ownerCapability(owner) {
    if (owner !== 'calico' && owner !== 'calico-operator') return undefined;
    return {
      supported: false,
      reason: 'RKE2 deploys Calico from its rke2-calico HelmChart, whose Installation and IP pool it renders from the chart values and cluster-cidr '
        + 'and rewrites at every rke2 server start (pkg/bootstrap/bootstrap.go setChartValues), so a pool kube-renumber adds or disables '
        + 'through the Installation is put back by the next chart upgrade; kube-renumber has no path that edits the chart\'s values',
      instead: 'change the IP pool in a HelmChartConfig kube-system/rke2-calico (installation.calicoNetwork.ipPools) together with cluster-cidr in '
        + '/etc/rancher/rke2/config.yaml, following Calico\'s pool migration (https://docs.tigera.io/calico/latest/networking/ipam/migrate-pools)',
    };
  },
  sources: [
    'https://docs.rke2.io/reference/server_config',
    'https://github.com/rancher/rke2/blob/master/pkg/bootstrap/bootstrap.go',
    'https://github.com/rancher/rke2/blob/master/pkg/podtemplate/podtemplate.go',
    'https://github.com/rancher/rke2/issues/2589',
    'https://github.com/rancher/rke2/issues/2428',
    'https://github.com/rancher/rke2/issues/2635',
    'https://github.com/rancher/rke2/issues/2326',
    'https://docs.rke2.io/install/configuration',
    'https://github.com/k3s-io/k3s/blob/master/pkg/cluster/bootstrap.go',
    'https://github.com/flannel-io/flannel/blob/master/pkg/subnet/kube/kube.go',
    'https://github.com/k3s-io/k3s/blob/master/pkg/nodeconfig/nodeconfig.go',
    'https://github.com/k3s-io/k3s/issues/3967',
    'https://github.com/kubernetes/kubernetes/issues/50305',
  ],
};
