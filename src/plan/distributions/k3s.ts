/**
 * k3s: /etc/rancher/k3s/config.yaml on every server renders the apiserver flag, the kubelets' clusterDNS and the
 * CoreDNS Service; the ServiceCIDR API and the pod patches are set as plain flags (generic).
 */
import { dump } from './common.ts';
import { generic, GENERIC_ENABLE_API, genericPatches, genericPodPatches } from './generic.ts';
import type { DistributionPlanner, DistroPatch, PatchContext } from './types.ts';
import type { Snapshot } from '../../cluster/types.ts';

function k3sPatches(_snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const before: Record<string, string> = { 'service-cidr': ctx.oldFlag.join(',') };
  const after: Record<string, string> = { 'service-cidr': ctx.newFlag.join(',') };
  if (ctx.newDNS) {
    before['cluster-dns'] = ctx.oldDNS!;
    after['cluster-dns'] = ctx.newDNS;
  }
  if (ctx.newKubernetesIP) after['tls-san'] = `${[ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(',')}  # add to existing entries`;
  return [{
    id: 'k3s-server-config', distribution: 'k3s', gate: 'restart-apiservers',
    target: '/etc/rancher/k3s/config.yaml on every k3s server',
    description: 'k3s renders the apiserver flag, the kubelets\' clusterDNS and the CoreDNS Service from these',
    before: dump(before), after: dump(after),
  }];
}

export const k3s: DistributionPlanner = {
  id: 'k3s',
  matches: (snap) => snap.distribution.kind === 'k3s',
  servicePatches: (snap, ctx) => [...(ctx.enableApi ? genericPatches(snap, ctx).filter((p) => p.gate === 'enable-servicecidr-api') : []), ...k3sPatches(snap, ctx)],
  serviceGateInstructions(_snap, gate) {
    switch (gate) {
      case 'enable-servicecidr-api':
        return [...GENERIC_ENABLE_API];
      case 'restart-apiservers':
        return ['edit /etc/rancher/k3s/config.yaml on every server (patch k3s-server-config)', 'systemctl restart k3s on each server in turn', 'kube-renumber resume'];
      case 'kubelet-cluster-dns':
        return ['k3s agents take clusterDNS from the server (already changed): restart k3s-agent on every agent', 'kube-renumber resume'];
      default:
        return gate satisfies never;
    }
  },
  restartWorkloadsNote: [],
  restartApiserversReason: 'the flag lives outside the API',
  certFix: (_snap, both) => `add --tls-san=${both} to every k3s server (config.yaml tls-san) and restart k3s; k3s regenerates the serving certificate`,
  podPatches: genericPodPatches,
  kubeProxyPatch: { always: false, distribution: 'generic' },
  podGateInstructions: generic.podGateInstructions,
  configCheck: () => undefined,
};
