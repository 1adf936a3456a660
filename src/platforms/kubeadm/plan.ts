/**
 * kubeadm (and kubespray, kubeadm underneath): ConfigMaps kube-system/kubeadm-config and kubelet-config, the
 * static pod manifests under /etc/kubernetes/manifests on every control-plane node, and the apiserver
 * certificate reissued with kubeadm init phase certs.
 */
import type { Snapshot } from '../../cluster/types.ts';
import { dump, mergeFeatureGates, mergeRuntimeConfig } from '../../plan/distributions/common.ts';
import type { DistributionPlanner, DistroPatch, PatchContext, PodPatchInputs } from '../../plan/distributions/types.ts';

function kubeadmPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const out: DistroPatch[] = [];
  const api = snap.apiservers[0];
  const kcm = snap.controllerManagers[0];
  const spray = snap.platform.kind === 'kubespray';
  const note = spray ? ' (kubespray: also set kube_service_addresses and skydns_server in the inventory, or the next playbook run puts the old values back)' : '';
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    const gate = ctx.enableApi !== 'v1';
    const fg = mergeFeatureGates(api?.featureGates, 'MultiCIDRServiceAllocator');
    const rc = mergeRuntimeConfig(api?.runtimeConfig, gv);
    out.push({
      id: 'kubeadm-enable-servicecidr-api-manifest', distribution: 'kubeadm', gate: 'enable-servicecidr-api',
      target: '/etc/kubernetes/manifests/kube-apiserver.yaml and kube-controller-manager.yaml on every control-plane node',
      description: `serve ${gv}; the kubelet restarts a static pod when its manifest changes`,
      before: [api?.featureGates ? `    - --feature-gates=${api.featureGates}` : '', api?.runtimeConfig ? `    - --runtime-config=${api.runtimeConfig}` : '', '# (kube-apiserver)'].filter(Boolean).join('\n') + '\n',
      after: [gate ? `    - --feature-gates=${fg}` : '', `    - --runtime-config=${rc}`, '# (kube-apiserver)', gate ? '    - --feature-gates=MultiCIDRServiceAllocator=true   # (kube-controller-manager: runs the ServiceCIDR finalizer)' : ''].filter(Boolean).join('\n') + '\n',
    });
    out.push({
      id: 'kubeadm-enable-servicecidr-api-config', distribution: 'kubeadm', gate: 'enable-servicecidr-api',
      target: 'ConfigMap kube-system/kubeadm-config, data.ClusterConfiguration',
      description: `so kubeadm upgrade keeps the flags${note}`,
      before: dump({ apiServer: { extraArgs: {} }, controllerManager: { extraArgs: {} } }),
      after: dump({
        apiServer: { extraArgs: { ...(gate ? { 'feature-gates': fg } : {}), 'runtime-config': rc } },
        ...(gate ? { controllerManager: { extraArgs: { 'feature-gates': 'MultiCIDRServiceAllocator=true' } } } : {}),
      }),
    });
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((s): s is string => !!s);
  out.push({
    id: 'kubeadm-config-service-subnet', distribution: 'kubeadm', gate: 'restart-apiservers',
    target: 'ConfigMap kube-system/kubeadm-config, data.ClusterConfiguration',
    description: `the new serviceSubnet, and both default/kubernetes IPs as certSANs for the reissued serving certificate${note}`,
    before: dump({ networking: { serviceSubnet: (snap.kubeadm?.serviceSubnet ?? ctx.oldFlag).join(',') }, apiServer: { certSANs: ['# ...existing entries'] } }).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
    after: dump({ networking: { serviceSubnet: ctx.newFlag.join(',') }, apiServer: { certSANs: ['# ...existing entries', ...sans] } }).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
  });
  out.push({
    id: 'kubeadm-apiserver-manifest', distribution: 'kubeadm', gate: 'restart-apiservers',
    target: '/etc/kubernetes/manifests/kube-apiserver.yaml on every control-plane node',
    description: 'the apiserver flag; the kubelet restarts the static pod when the manifest changes',
    before: `    - --service-cluster-ip-range=${(api?.serviceClusterIPRange ?? ctx.oldFlag).join(',')}\n`,
    after: `    - --service-cluster-ip-range=${ctx.newFlag.join(',')}\n`,
  });
  if (!kcm || kcm.serviceClusterIPRange) {
    out.push({
      id: 'kubeadm-controller-manager-manifest', distribution: 'kubeadm', gate: 'restart-apiservers',
      target: '/etc/kubernetes/manifests/kube-controller-manager.yaml on every control-plane node',
      description: 'kubeadm passes the service range to kube-controller-manager too',
      before: `    - --service-cluster-ip-range=${(kcm?.serviceClusterIPRange ?? ctx.oldFlag).join(',')}\n`,
      after: `    - --service-cluster-ip-range=${ctx.newFlag.join(',')}\n`,
    });
  }
  if (ctx.newDNS) {
    const cur = snap.kubeadm?.kubeletClusterDNS ?? (snap.clusterDNS.length > 0 ? snap.clusterDNS : [ctx.oldDNS!]);
    const next = cur.map((a) => (a === ctx.oldDNS ? ctx.newDNS! : a));
    out.push({
      id: 'kubeadm-kubelet-config', distribution: 'kubeadm', gate: 'kubelet-cluster-dns',
      target: 'ConfigMap kube-system/kubelet-config (data.kubelet), then /var/lib/kubelet/config.yaml on every node',
      description: `the nameserver kubelets give new pods${note}`,
      before: dump({ clusterDNS: cur }),
      after: dump({ clusterDNS: next }),
    });
  }
  return out;
}

function kubeadmPodPatches(inp: PodPatchInputs): DistroPatch[] {
  const { snap, finalGate, allocAfter, oldCC, to } = inp;
  const out: DistroPatch[] = [];
  const manifest = '/etc/kubernetes/manifests/kube-controller-manager.yaml (every control-plane node)';
  if (allocAfter) {
    out.push({ id: 'kubeadm-kcm-stop-allocating', distribution: 'kubeadm', gate: 'kcm-stop-allocating', target: manifest, description: 'stop allocating node podCIDRs (nothing else changes)', before: '    - --allocate-node-cidrs=true\n', after: '    - --allocate-node-cidrs=false\n' });
  }
  out.push({
    id: 'kubeadm-config-pod-subnet', distribution: 'kubeadm', gate: finalGate, target: 'ConfigMap kube-system/kubeadm-config (ClusterConfiguration)',
    description: 'the pod subnet kubeadm renders for new control-plane nodes and upgrades', before: `networking:\n  podSubnet: ${snap.kubeadm?.podSubnet?.join(',') ?? oldCC}\n`, after: `networking:\n  podSubnet: ${to}\n`,
  });
  const masks = inp.masks;
  const lines = (xs: string[]) => xs.map((x) => (x.startsWith('#') ? `    ${x}\n` : `    - ${x}\n`)).join('');
  out.push({
    id: 'kubeadm-kcm-pod-cidr', distribution: 'kubeadm', gate: finalGate, target: manifest,
    description: (allocAfter ? 'allocate node podCIDRs from NEW again' : 'NEW as cluster CIDR; allocation stays off in the same edit so it starts while nodes keep old podCIDRs')
      + (masks.after.length > 0 ? `, with the plan's node podCIDR sizes (${masks.after.join(' ')})` : ''),
    before: `    - --allocate-node-cidrs=${allocAfter ? 'false' : 'true'}\n    - --cluster-cidr=${oldCC}\n${lines(masks.before)}`,
    after: `    - --allocate-node-cidrs=${allocAfter}\n    - --cluster-cidr=${to}\n${lines(masks.after)}`,
  });
  return out;
}

export const kubeadm: DistributionPlanner = {
  id: 'kubeadm',
  servicePatches: kubeadmPatches,
  serviceGateInstructions(_snap, gate, ctx) {
    switch (gate) {
      case 'enable-servicecidr-api':
        return ['on each control-plane node in turn: edit the static pod manifests (patch kubeadm-enable-servicecidr-api-manifest) and wait for the apiserver to be Ready', 'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-enable-servicecidr-api-config)', 'kube-renumber resume'];
      case 'restart-apiservers': {
        const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(',');
        return [
          'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-config-service-subnet)',
          `on each control-plane node in turn: kubectl -n kube-system get cm kubeadm-config -o jsonpath='{.data.ClusterConfiguration}' > /root/kubeadm.yaml; `
            + 'mv /etc/kubernetes/pki/apiserver.crt /etc/kubernetes/pki/apiserver.key /root/; '
            + `kubeadm init phase certs apiserver --config /root/kubeadm.yaml   # SANs include ${sans}`,
          'then edit /etc/kubernetes/manifests/kube-apiserver.yaml and kube-controller-manager.yaml (patches kubeadm-apiserver-manifest, kubeadm-controller-manager-manifest) and wait until the apiserver is Ready before the next node',
          'kube-renumber resume',
        ];
      }
      case 'kubelet-cluster-dns':
        return [
          'kubectl -n kube-system edit cm kubelet-config (patch kubeadm-kubelet-config)',
          'on every node: kubeadm upgrade node phase kubelet-config && systemctl restart kubelet',
          'kube-renumber resume',
        ];
      default:
        return gate satisfies never;
    }
  },
  restartWorkloadsNote: [],
  restartApiserversReason: 'the flag lives outside the API',
  certFix: (_snap, both) => `on every control-plane node: add ${both} to apiServer.certSANs in the kubeadm ClusterConfiguration (kubectl -n kube-system get cm kubeadm-config -o jsonpath='{.data.ClusterConfiguration}' > kubeadm.yaml), `
    + 'move /etc/kubernetes/pki/apiserver.crt and apiserver.key aside, run `kubeadm init phase certs apiserver --config kubeadm.yaml` '
    + `(or --apiserver-cert-extra-sans=${both}), then restart kube-apiserver`,
  podPatches: kubeadmPodPatches,
  kubeProxyPatch: { always: true, distribution: 'kubeadm' },
  podGateInstructions(gate) {
    if (gate === 'kcm-stop-allocating') return ['on each control-plane node: edit /etc/kubernetes/manifests/kube-controller-manager.yaml (patch kubeadm-kcm-stop-allocating)', 'kube-renumber resume'];
    return [
      'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-config-pod-subnet)',
      'on each control-plane node: edit /etc/kubernetes/manifests/kube-controller-manager.yaml (patch kubeadm-kcm-pod-cidr)',
      'kubectl -n kube-system edit cm kube-proxy (patch kube-proxy-cluster-cidr), then kubectl -n kube-system rollout restart daemonset kube-proxy',
      'kube-renumber resume',
    ];
  },
  reregister: 'systemctl restart kubelet (it registers the Node again)',
  configCheck(snap: Snapshot) {
    if (snap.kubeadm) return undefined;
    const why = snap.platform.evidence.slice(0, 2).join('; ');
    return {
      id: 'kubeadm-config', status: 'warn',
      message: `${snap.platform.kind === 'kubespray' ? 'kubespray (kubeadm)' : 'kubeadm'} cluster${why ? ` (${why})` : ''}, but no kubeadm ClusterConfiguration in the input (ConfigMap kube-system/kubeadm-config missing or not readable): `
        + 'podSubnet and serviceSubnet were not read; the kubeadm-config patches show the values of the control-plane flags',
      fix: 'live: allow reading ConfigMaps in kube-system (deploy/rbac.yaml); offline: add `kubectl -n kube-system get configmap kubeadm-config -o yaml` to the input, or -f the ClusterConfiguration file',
    };
  },
};
