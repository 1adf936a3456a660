/**
 * k3s: one binary runs kube-apiserver, kube-controller-manager and (by default) flannel inside the k3s process,
 * configured by the k3s server's flags or /etc/rancher/k3s/config.yaml; there are no static pods or kubeadm
 * ConfigMaps to patch: the plans' patches go to config.yaml and their gates restart the k3s servers and agents
 * (plan.ts).
 *
 * Recognised by what k3s writes on its Node objects (each sign cited in docs/platforms.md):
 *  - the annotations k3s.io/node-args, k3s.io/node-config-hash, k3s.io/node-env (pkg/nodeconfig/nodeconfig.go);
 *  - the label node.kubernetes.io/instance-type=k3s and providerID k3s://<node>, set by k3s's embedded cloud
 *    provider, whose name and instance type are "k3s" (pkg/cloudprovider; k3s-io/k3s#3933);
 *  - the kubelet version's "+k3s" suffix (v1.31.4+k3s1).
 * Ranges: --cluster-cidr and --service-cidr from the servers' k3s.io/node-args, else k3s's documented defaults
 * (https://docs.k3s.io/cli/server), labelled as defaults; the embedded flannel's Network is the cluster CIDR
 * (pkg/agent/flannel/setup.go) unless --flannel-backend=none.
 */
import { SUPPORTED, type Platform, type PlatformInput, type PlatformRange } from '../../platform/types.ts';
import { isV6, serverArgs } from '../k3s-family/node-args.ts';
import { clusterDnsEvidence, programNodeSigns, programRanges } from '../k3s-family/signs.ts';

export const K3S_NODE_ARGS = 'k3s.io/node-args';

/** k3s's documented defaults (https://docs.k3s.io/cli/server, Networking). */
export const K3S_DEFAULTS = { clusterCIDR: '10.42.0.0/16', serviceCIDR: '10.43.0.0/16', clusterDNS: '10.43.0.10' } as const;

function ranges(input: PlatformInput): PlatformRange[] {
  const servers = serverArgs(input.nodes, K3S_NODE_ARGS);
  const out = programRanges(servers, K3S_NODE_ARGS, 'k3s', K3S_DEFAULTS);
  // k3s's embedded flannel writes its net-conf.json Network (and IPv6Network) from the cluster CIDRs
  // (pkg/agent/flannel/setup.go): the same range, read for the CNI. Only where flannel's annotations show it runs
  // and it is k3s's own: not with --flannel-backend=none, not when a flannel or Canal DaemonSet runs instead.
  const backends = new Set(servers.flatMap((s) => s.values['--flannel-backend'] ?? []));
  const flannelRuns = input.nodes.some((n) => n.annotations['flannel.alpha.coreos.com/backend-type'] !== undefined);
  const ownFlannel = ![...input.daemonSets].some((d) => /\/(kube-flannel-ds|canal|rke2-canal)(-|$)/.test(d));
  if (flannelRuns && ownFlannel && !(backends.size === 1 && backends.has('none'))) {
    const pods = out.filter((r) => r.role === 'pod');
    const v4 = pods.find((r) => !isV6(r.cidr));
    const v6 = pods.find((r) => isV6(r.cidr));
    for (const [r, field] of [[v4, 'Network'], [v6, 'IPv6Network']] as const) {
      if (r) out.push({ cidr: r.cidr, role: 'pod', source: `k3s embedded flannel ${field} (the cluster CIDR)`, label: `flannel ${field} of k3s's embedded flannel` });
    }
  }
  return out;
}

const SOURCES = [
  'https://docs.k3s.io/cli/server',
  'https://github.com/k3s-io/k3s/blob/master/pkg/nodeconfig/nodeconfig.go',
  'https://github.com/k3s-io/k3s/blob/master/pkg/cloudprovider/instances.go',
  'https://github.com/k3s-io/k3s/issues/3933',
  'https://github.com/k3s-io/k3s/blob/master/pkg/agent/flannel/setup.go',
  'https://github.com/k3s-io/k3s/blob/master/manifests/coredns.yaml',
  'https://docs.k3s.io/installation/configuration',
  'https://github.com/k3s-io/k3s/blob/master/pkg/util/args.go',
  'https://github.com/k3s-io/k3s/blob/master/pkg/cluster/bootstrap.go',
  'https://github.com/k3s-io/k3s/blob/master/pkg/daemons/control/deps/deps.go',
  'https://github.com/flannel-io/flannel/blob/master/pkg/subnet/kube/kube.go',
  'https://github.com/k3s-io/k3s/issues/3967',
  'https://github.com/k3s-io/k3s/issues/2603',
  'https://github.com/k3s-io/k3s/issues/6136',
  'https://github.com/k3s-io/k3s/issues/14347',
  'https://github.com/rancher/rke2/issues/2326',
] as const;

export const k3s: Platform<'k3s'> = {
  kind: 'k3s',
  title: 'k3s',
  detect(input) {
    const signs = programNodeSigns(input.nodes, 'k3s', '+k3s');
    if (signs.length === 0) return undefined;
    const dns = clusterDnsEvidence(serverArgs(input.nodes, K3S_NODE_ARGS), K3S_NODE_ARGS, 'k3s', K3S_DEFAULTS.clusterDNS);
    return dns ? [...signs, dns] : signs;
  },
  ranges,
  // The kube-dns Service k3s deploys from manifests/coredns.yaml (clusterIP: the --cluster-dns address).
  dnsServices: [{ namespace: 'kube-system', name: 'kube-dns', selector: { 'k8s-app': 'kube-dns' } }],
  // Both moves go through /etc/rancher/k3s/config.yaml on every server and server restarts in the order that keeps
  // the embedded kube-controller-manager starting (plan.ts, ../k3s-family/plan.ts).
  capabilities: { service: SUPPORTED, pod: SUPPORTED },
  sources: SOURCES,
  namedInPlans: true,
};
