/**
 * Any other self-managed cluster: the flags of kube-apiserver, kube-controller-manager and the kubelets,
 * wherever this cluster sets them; a person (or pipeline) changes them and acknowledges the gates.
 */
import { dump, mergeFeatureGates, mergeRuntimeConfig } from '../../plan/distributions/common.ts';
import type { DistributionPlanner, DistroPatch, PatchContext, PodPatchInputs } from '../../plan/distributions/types.ts';
import type { Snapshot } from '../../cluster/types.ts';

export function genericPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const out: DistroPatch[] = [];
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    out.push({
      id: 'generic-enable-servicecidr-api', distribution: 'generic', gate: 'enable-servicecidr-api',
      target: 'kube-apiserver and kube-controller-manager flags, wherever this cluster sets them',
      description: `serve ${gv}`,
      before: [['feature-gates', snap.apiservers[0]?.featureGates], ['runtime-config', snap.apiservers[0]?.runtimeConfig]]
        .map(([flag, v]) => (v ? `--${flag}=${v}\n` : `# --${flag} not set\n`)).join(''),
      after: `--feature-gates=${mergeFeatureGates(snap.apiservers[0]?.featureGates, 'MultiCIDRServiceAllocator')}\n--runtime-config=${mergeRuntimeConfig(snap.apiservers[0]?.runtimeConfig, gv)}\n`,
    });
  }
  out.push({
    id: 'generic-apiserver-flag', distribution: 'generic', gate: 'restart-apiservers',
    target: 'kube-apiserver flags on every apiserver (and kube-controller-manager when it has the flag)',
    description: 'the service range the apiserver gives default/kubernetes its IP from',
    before: `--service-cluster-ip-range=${ctx.oldFlag.join(',')}\n`,
    after: `--service-cluster-ip-range=${ctx.newFlag.join(',')}\n`,
  });
  if (ctx.newDNS) {
    out.push({
      id: 'generic-kubelet-cluster-dns', distribution: 'generic', gate: 'kubelet-cluster-dns',
      target: 'every kubelet\'s configuration (KubeletConfiguration clusterDNS or --cluster-dns)',
      description: 'the nameserver kubelets give new pods',
      before: dump({ clusterDNS: snap.clusterDNS.length > 0 ? snap.clusterDNS : [ctx.oldDNS] }),
      after: dump({ clusterDNS: (snap.clusterDNS.length > 0 ? snap.clusterDNS : [ctx.oldDNS!]).map((a) => (a === ctx.oldDNS ? ctx.newDNS : a)) }),
    });
  }
  return out;
}

/** kube-controller-manager flags of a Pod CIDR move. */
export function genericPodPatches(inp: PodPatchInputs): DistroPatch[] {
  const { finalGate, allocAfter, oldCC, to, masks } = inp;
  const out: DistroPatch[] = [];
  if (allocAfter) out.push({ id: 'generic-kcm-stop-allocating', distribution: 'generic', gate: 'kcm-stop-allocating', target: 'kube-controller-manager flags', description: 'stop allocating node podCIDRs', before: '--allocate-node-cidrs=true', after: '--allocate-node-cidrs=false' });
  const flags = masks.before.filter((x) => !x.startsWith('#'));
  out.push({
    id: 'generic-kcm-pod-cidr', distribution: 'generic', gate: finalGate, target: 'kube-controller-manager flags',
    description: (allocAfter ? 'allocate from NEW again' : 'NEW as cluster CIDR with allocation off') + (masks.after.length > 0 ? `, with the plan's node podCIDR sizes (${masks.after.join(' ')})` : ''),
    before: [`--allocate-node-cidrs=${allocAfter ? 'false' : 'true'}`, `--cluster-cidr=${oldCC}`, ...flags].join(' '),
    after: [`--allocate-node-cidrs=${allocAfter}`, `--cluster-cidr=${to}`, ...masks.after].join(' '),
  });
  return out;
}

/** The commands at the enable-servicecidr-api gate when the flags are set by hand. */
export const GENERIC_ENABLE_API = ['set the flags of patch generic-enable-servicecidr-api on every kube-apiserver and kube-controller-manager and restart them one at a time', 'kube-renumber resume'];

export const generic: DistributionPlanner = {
  id: 'generic',
  servicePatches: genericPatches,
  serviceGateInstructions(_snap, gate, ctx) {
    switch (gate) {
      case 'enable-servicecidr-api':
        return [...GENERIC_ENABLE_API];
      case 'restart-apiservers': {
        const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(',');
        return [
          `reissue the kube-apiserver serving certificate with ${sans} as IP SANs`,
          'restart every kube-apiserver with the new --service-cluster-ip-range (patch generic-apiserver-flag), one at a time',
          'kube-renumber resume',
        ];
      }
      case 'kubelet-cluster-dns':
        return ['change clusterDNS in every kubelet\'s configuration (patch generic-kubelet-cluster-dns) and restart the kubelets', 'kube-renumber resume'];
      default:
        return gate satisfies never;
    }
  },
  restartWorkloadsNote: [],
  restartApiserversReason: 'the flag lives outside the API',
  certFix: (_snap, both) => `reissue the kube-apiserver serving certificate with ${both} as IP SANs, the way this cluster's certificates are managed, then restart every kube-apiserver`,
  podPatches: genericPodPatches,
  kubeProxyPatch: { always: false, distribution: 'generic' },
  podGateInstructions: (gate) => (gate === 'kcm-stop-allocating'
    ? ['restart every kube-controller-manager with --allocate-node-cidrs=false (patch generic-kcm-stop-allocating)', `kube-renumber resume --ack-gate ${gate}`]
    : ['restart every kube-controller-manager with the flags of patch generic-kcm-pod-cidr', 'set kube-proxy clusterCIDR (patch kube-proxy-cluster-cidr) and restart kube-proxy', `kube-renumber resume --ack-gate ${gate}`]),
  reregister: 'systemctl restart kubelet (it registers the Node again)',
  configCheck: () => undefined,
};
