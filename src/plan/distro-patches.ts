/**
 * What a human or a pipeline changes outside the Kubernetes API, per distribution, as reviewable
 * before/after text: kOps Cluster spec fields, kubeadm ConfigMaps and static pod manifests, k3s config.
 * Pure; the plan attaches these to its gates.
 */
import * as yaml from 'js-yaml';
import type { Snapshot } from '../cluster/types.ts';
import { tryParseCidr } from '../net/index.ts';
import { distributionOf, proposeNonMasquerade } from './preflight.ts';
import { slowUdpConntrackCleanup } from '../analyze/readiness.ts';

export type PatchGate = 'enable-servicecidr-api' | 'restart-apiservers' | 'kubelet-cluster-dns' | 'kcm-stop-allocating' | 'kcm-cluster-cidr' | 'pod-cidr-config';

export interface DistroPatch {
  id: string;
  distribution: 'kops' | 'kubeadm' | 'k3s' | 'generic';
  gate: PatchGate;
  /** What is edited, e.g. "kOps Cluster spec (kops edit cluster)". */
  target: string;
  description: string;
  before: string;
  after: string;
}

export interface PatchContext {
  /** --service-cluster-ip-range today and afterwards, in flag order (primary family first). */
  oldFlag: string[];
  newFlag: string[];
  /** The DNS Service's primary IP today and afterwards, when it moves. */
  oldDNS?: string;
  newDNS?: string;
  /** default/kubernetes today and afterwards. */
  oldKubernetesIP?: string;
  newKubernetesIP?: string;
  /** Set when the plan has to enable the ServiceCIDR API. */
  enableApi?: 'v1' | 'v1beta1' | 'v1alpha1';
  /** kOps: a new nonMasqueradeCIDR when NEW is outside the current one ('' when none fits). */
  nonMasqueradeCIDR?: string;
}

function dump(o: unknown): string {
  return yaml.dump(o, { noRefs: true, lineWidth: -1, sortKeys: false });
}

/** Nested object from a dotted path: path('spec.networking', {a: 1}). */
function at(path: string, value: Record<string, unknown>): Record<string, unknown> {
  return path.split('.').reverse().reduce<Record<string, unknown>>((acc, k) => ({ [k]: acc }), value);
}

/** "a=b,c=d" feature-gates with `gate` set to true. */
export function mergeFeatureGates(existing: string | undefined, gate: string): string {
  const parts = (existing ?? '').split(',').map((s) => s.trim()).filter(Boolean).filter((p) => p.split('=')[0] !== gate);
  return [...parts, `${gate}=true`].join(',');
}

/** "--runtime-config" with `group/version=true` added. */
export function mergeRuntimeConfig(existing: string | undefined, gv: string): string {
  const parts = (existing ?? '').split(',').map((s) => s.trim()).filter(Boolean).filter((p) => p.split('=')[0] !== gv);
  return [...parts, `${gv}=true`].join(',');
}

/** What a kOps patch edits. */
export const KOPS_EDIT = 'kOps Cluster spec (kops edit cluster, or the cluster manifest your pipeline applies with kops replace)';

/** The first lines of a kOps patch written without the Cluster spec: which layouts the fields may sit in. */
export const KOPS_UNREAD_HEADER = '# kOps Cluster spec not read (pre-flight kops-spec): change these fields where your spec has them.\n'
  + '# Networking layout (kops.k8s.io/v1alpha3): podCIDR, serviceClusterIPRange and nonMasqueradeCIDR under spec.networking, SANs in spec.api.additionalSANs;\n'
  + '# legacy layout (kops.k8s.io/v1alpha2): the same fields directly under spec, SANs in spec.additionalSans.\n';

function kopsPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const k = snap.kops;
  const out: DistroPatch[] = [];
  const edit = KOPS_EDIT;
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    const gates = ctx.enableApi === 'v1' ? undefined : { MultiCIDRServiceAllocator: 'true' };
    const after: Record<string, unknown> = {
      kubeAPIServer: { ...(gates ? { featureGates: gates } : {}), runtimeConfig: { [gv]: 'true' } },
      ...(gates ? { kubeControllerManager: { featureGates: gates }, kubelet: { featureGates: gates } } : {}),
    };
    out.push({
      id: 'kops-enable-servicecidr-api', distribution: 'kops', gate: 'enable-servicecidr-api', target: edit,
      description: `serve ${gv} (seed 001's snippet); merge into any featureGates/runtimeConfig already set`,
      before: '# spec.kubeAPIServer.featureGates / runtimeConfig without these keys\n',
      after: dump({ spec: after }),
    });
  }
  if (!k) {
    out.push(kopsServiceRangeUnread(snap, ctx));
    return out;
  }
  const net = k.layout === 'legacy' ? 'spec' : 'spec.networking';
  const sansField = k.layout === 'legacy' ? 'additionalSans' : 'additionalSANs';
  const sansPath = k.layout === 'legacy' ? 'spec' : 'spec.api';
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  const netBefore: Record<string, unknown> = { serviceClusterIPRange: k.serviceClusterIPRange ?? ctx.oldFlag.join(',') };
  const netAfter: Record<string, unknown> = { serviceClusterIPRange: ctx.newFlag[0] };
  if (ctx.nonMasqueradeCIDR !== undefined && k.nonMasqueradeCIDR) {
    netBefore.nonMasqueradeCIDR = k.nonMasqueradeCIDR;
    netAfter.nonMasqueradeCIDR = ctx.nonMasqueradeCIDR || 'TODO: a range holding serviceClusterIPRange and podCIDR (see preflight kops-non-masquerade)';
  }
  Object.assign(before, at(net, netBefore));
  Object.assign(after, at(net, netAfter));
  const merge = (dst: Record<string, any>, src: Record<string, any>) => {
    for (const [key, v] of Object.entries(src)) {
      if (v && typeof v === 'object' && !Array.isArray(v) && dst[key] && typeof dst[key] === 'object') merge(dst[key], v);
      else dst[key] = v;
    }
  };
  if (ctx.newDNS) {
    merge(before.spec as any, { kubeDNS: { serverIP: k.kubeDNSServerIP ?? `${ctx.oldDNS} # (unset: kOps derives it from the range)` } });
    merge(after.spec as any, { kubeDNS: { serverIP: ctx.newDNS } });
    if (k.kubeletClusterDNS) {
      merge(before.spec as any, { kubelet: { clusterDNS: k.kubeletClusterDNS } });
      merge(after.spec as any, { kubelet: { clusterDNS: k.kubeletClusterDNS.split(',').map((s) => (s.trim() === ctx.oldDNS ? ctx.newDNS : s.trim())).join(',') } });
    }
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((s): s is string => !!s);
  if (sans.length > 0) {
    merge(before, at(sansPath, { [sansField]: ['# ...existing entries'] }));
    merge(after, at(sansPath, { [sansField]: ['# ...existing entries', ...sans] }));
  }
  out.push({
    id: 'kops-service-range', distribution: 'kops', gate: 'restart-apiservers', target: edit,
    description: 'the new service range, the DNS Service IP (kOps validation requires it inside serviceClusterIPRange and kubelet.clusterDNS equal to it), '
      + 'and both default/kubernetes IPs as certificate SANs (the old one serves pods that still have it until they restart)',
    before: dump(before).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
    after: dump(after).replace(/- '# \.\.\.existing entries'/g, '# ...existing entries'),
  });
  return out;
}

/**
 * kops-service-range without the Cluster spec: every field by name, in the networking layout with the legacy
 * place beside it, and what is not known (whether kubeDNS.serverIP and kubelet.clusterDNS are set, the
 * current nonMasqueradeCIDR) said as such.
 */
function kopsServiceRangeUnread(snap: Snapshot, ctx: PatchContext): DistroPatch {
  const newSvc = ctx.newFlag[0]!;
  const parsed = tryParseCidr(newSvc);
  const nm = parsed ? proposeNonMasquerade(snap, parsed) : undefined;
  const b: string[] = ['spec:', '  networking:                # legacy layout: these fields directly under spec', `    serviceClusterIPRange: ${ctx.oldFlag.join(',')}`,
    '    nonMasqueradeCIDR: (not read; kOps default 100.64.0.0/10)'];
  const a: string[] = ['spec:', '  networking:', `    serviceClusterIPRange: ${newSvc}`,
    nm
      ? `    nonMasqueradeCIDR: ${nm}   # only if the current one does not contain ${newSvc} and the pod range`
      : `    nonMasqueradeCIDR: TODO if the current one does not contain ${newSvc}: no range clear of the node network and well-known ranges holds serviceClusterIPRange ${newSvc} and the pod range; move the Pod CIDR next to the new service range first or together`];
  if (ctx.newDNS) {
    b.push('  kubeDNS:', `    serverIP: ${ctx.oldDNS}      # when set (kOps derives it from the range otherwise)`, '  kubelet:', `    clusterDNS: ${ctx.oldDNS}    # when set`);
    a.push('  kubeDNS:', `    serverIP: ${ctx.newDNS}`, '  kubelet:', `    clusterDNS: ${ctx.newDNS}    # when set (other entries unchanged)`);
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((x): x is string => !!x);
  if (sans.length > 0) {
    b.push('  api:                       # legacy layout: spec.additionalSans', '    additionalSANs:', '      # ...existing entries');
    a.push('  api:', '    additionalSANs:', '      # ...existing entries', ...sans.map((x) => `      - ${x}`));
  }
  return {
    id: 'kops-service-range', distribution: 'kops', gate: 'restart-apiservers', target: KOPS_EDIT,
    description: 'the new service range (spec.networking.serviceClusterIPRange, legacy layout spec.serviceClusterIPRange), a nonMasqueradeCIDR that holds it, '
      + 'the DNS Service IP (kOps validation requires kubeDNS.serverIP inside serviceClusterIPRange and kubelet.clusterDNS equal to it), '
      + 'and both default/kubernetes IPs as certificate SANs; the Cluster spec was not read, so the fields are named for both layouts',
    before: KOPS_UNREAD_HEADER + b.join('\n') + '\n',
    after: KOPS_UNREAD_HEADER + a.join('\n') + '\n',
  };
}

function kubeadmPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const out: DistroPatch[] = [];
  const api = snap.apiservers[0];
  const kcm = snap.controllerManagers[0];
  const spray = snap.distribution.kind === 'kubespray';
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

function genericPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const out: DistroPatch[] = [];
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    out.push({
      id: 'generic-enable-servicecidr-api', distribution: 'generic', gate: 'enable-servicecidr-api',
      target: 'kube-apiserver and kube-controller-manager flags, wherever this cluster sets them',
      description: `serve ${gv}`,
      before: `--feature-gates=${snap.apiservers[0]?.featureGates ?? ''}\n--runtime-config=${snap.apiservers[0]?.runtimeConfig ?? ''}\n`,
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

/** Every distribution patch of the plan, in gate order. */
export function distroPatches(snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  switch (distributionOf(snap)) {
    case 'kops':
      return kopsPatches(snap, ctx);
    case 'kubeadm':
      return kubeadmPatches(snap, ctx);
    case 'k3s':
      return [...(ctx.enableApi ? genericPatches(snap, ctx).filter((p) => p.gate === 'enable-servicecidr-api') : []), ...k3sPatches(snap, ctx)];
    default:
      return genericPatches(snap, ctx);
  }
}

/** The commands a human or pipeline runs at a gate, per distribution. */
export function gateInstructions(snap: Snapshot, gate: Exclude<PatchGate, 'kcm-stop-allocating' | 'kcm-cluster-cidr' | 'pod-cidr-config'> | 'restart-workloads', ctx: PatchContext): string[] {
  const d = distributionOf(snap);
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(',');
  switch (gate) {
    case 'enable-servicecidr-api':
      if (d === 'kops') return ['kops edit cluster (apply patch kops-enable-servicecidr-api)', 'kops update cluster --yes', 'kops rolling-update cluster --instance-group-roles=control-plane --yes', 'kube-renumber resume'];
      if (d === 'kubeadm') return ['on each control-plane node in turn: edit the static pod manifests (patch kubeadm-enable-servicecidr-api-manifest) and wait for the apiserver to be Ready', 'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-enable-servicecidr-api-config)', 'kube-renumber resume'];
      return ['set the flags of patch generic-enable-servicecidr-api on every kube-apiserver and kube-controller-manager and restart them one at a time', 'kube-renumber resume'];
    case 'restart-apiservers':
      if (d === 'kops') {
        return [
          'kops edit cluster (apply patch kops-service-range)',
          'kops update cluster --yes',
          'kops rolling-update cluster --instance-group-roles=control-plane --yes   # control plane only: nodes roll at the kubelet-cluster-dns gate',
          'kube-renumber resume',
        ];
      }
      if (d === 'kubeadm') {
        return [
          'kubectl -n kube-system edit cm kubeadm-config (patch kubeadm-config-service-subnet)',
          `on each control-plane node in turn: kubectl -n kube-system get cm kubeadm-config -o jsonpath='{.data.ClusterConfiguration}' > /root/kubeadm.yaml; `
            + 'mv /etc/kubernetes/pki/apiserver.crt /etc/kubernetes/pki/apiserver.key /root/; '
            + `kubeadm init phase certs apiserver --config /root/kubeadm.yaml   # SANs include ${sans}`,
          'then edit /etc/kubernetes/manifests/kube-apiserver.yaml and kube-controller-manager.yaml (patches kubeadm-apiserver-manifest, kubeadm-controller-manager-manifest) and wait until the apiserver is Ready before the next node',
          'kube-renumber resume',
        ];
      }
      if (d === 'k3s') return ['edit /etc/rancher/k3s/config.yaml on every server (patch k3s-server-config)', 'systemctl restart k3s on each server in turn', 'kube-renumber resume'];
      return [
        `reissue the kube-apiserver serving certificate with ${sans} as IP SANs`,
        'restart every kube-apiserver with the new --service-cluster-ip-range (patch generic-apiserver-flag), one at a time',
        'kube-renumber resume',
      ];
    case 'kubelet-cluster-dns':
      if (d === 'kops') return ['kops rolling-update cluster --yes   # the remaining (node) instance groups: new kubelet clusterDNS, and every pod restarts on a new node', 'kube-renumber resume'];
      if (d === 'kubeadm') {
        return [
          'kubectl -n kube-system edit cm kubelet-config (patch kubeadm-kubelet-config)',
          'on every node: kubeadm upgrade node phase kubelet-config && systemctl restart kubelet',
          'kube-renumber resume',
        ];
      }
      if (d === 'k3s') return ['k3s agents take clusterDNS from the server (already changed): restart k3s-agent on every agent', 'kube-renumber resume'];
      return ['change clusterDNS in every kubelet\'s configuration (patch generic-kubelet-cluster-dns) and restart the kubelets', 'kube-renumber resume'];
    case 'restart-workloads': {
      const slow = slowUdpConntrackCleanup(snap);
      return [
        'restart every workload: for ns in $(kubectl get ns -o jsonpath=\'{.items[*].metadata.name}\'); do kubectl -n "$ns" rollout restart deployment,statefulset,daemonset; done',
        'delete (or let their owners recreate) bare pods and finished-Job pods that are still running',
        ...(slow ? [`kube-proxy ${slow} clears stale UDP conntrack entries slowly (kubernetes/kubernetes#135323): restart CoreDNS at a quiet hour, or lookups from busy nodes can fail for as long as that clean-up takes`] : []),
        ...(d === 'kops' ? ['(kOps: a node rolling update after move-kubernetes already did this)'] : []),
        'kube-renumber resume',
      ];
    }
  }
}
