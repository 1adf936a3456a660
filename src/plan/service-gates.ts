/**
 * The gate steps of a Service CIDR migration plan: where a run stops until something outside the API has
 * changed (the ServiceCIDR API enabled, the apiserver flag, the kubelets' clusterDNS, the pods restarted).
 * buildServicePlan (plan.ts) places them between its API steps.
 */
import type { Snapshot } from '../cluster/types.ts';
import { gateInstructions, type DistroPatch, type PatchContext } from './distro-patches.ts';
import { distributionPlanner } from './distributions/registry.ts';
import type { ServiceCIDRApiState } from './preflight.ts';
import type { GateStep } from './steps.ts';

/** What the Service gates are built from: the cluster, the patch context and the distribution patches. */
export interface ServiceGateInputs {
  snap: Snapshot;
  ctx: PatchContext;
  patches: DistroPatch[];
}

/** The distribution patches a gate shows. */
function patchesFor(inp: ServiceGateInputs, gate: DistroPatch['gate']): DistroPatch[] {
  return inp.patches.filter((p) => p.gate === gate);
}

/** Gate `enable-servicecidr-api`: the feature gate and runtime-config on the apiservers and controller managers. */
export function enableServiceCIDRApiGate(inp: ServiceGateInputs, api: ServiceCIDRApiState): GateStep {
  const { snap, ctx } = inp;
  return {
    id: 'enable-servicecidr-api', kind: 'gate',
    description: `enable the ServiceCIDR API (networking.k8s.io/${api.version}) on every kube-apiserver and kube-controller-manager`,
    gate: {
      condition: 'servicecidr-api',
      reason: `Kubernetes ${snap.kubernetesVersion ?? ''} serves ServiceCIDR only with feature gate MultiCIDRServiceAllocator and --runtime-config; kube-controller-manager runs the ServiceCIDR finalizer under the same gate`.replace('  ', ' '),
      instructions: gateInstructions(snap, 'enable-servicecidr-api', ctx),
      check: `the apiserver serves networking.k8s.io/${api.version} servicecidrs and ServiceCIDR/kubernetes exists and is Ready`,
      patches: patchesFor(inp, 'enable-servicecidr-api'),
    },
    rollback: 'remove the flags again and restart; harmless while no ServiceCIDR other than kubernetes exists',
  };
}

/** Gate `restart-apiservers`: every kube-apiserver on the new --service-cluster-ip-range with the new certificate SANs. */
export function restartApiserversGate(inp: ServiceGateInputs): GateStep {
  const { snap, ctx } = inp;
  const { oldFlag, newFlag } = ctx;
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(', ');
  return {
    id: 'restart-apiservers', kind: 'gate',
    description: `restart every kube-apiserver with --service-cluster-ip-range=${newFlag.join(',')} and a serving certificate carrying ${sans || 'the new first IP'}`,
    gate: {
      condition: 'apiservers-on-new-range',
      reason: 'the apiserver gives default/kubernetes the first IP of its flag range and recreates ServiceCIDR/kubernetes from the flag; '
        + distributionPlanner(snap).restartApiserversReason,
      instructions: gateInstructions(snap, 'restart-apiservers', ctx),
      check: `every kube-apiserver pod runs with --service-cluster-ip-range=${newFlag.join(',')} (none left with ${oldFlag.join(',') || 'the old range'}), `
        + `and every apiserver endpoint's serving certificate carries ${sans || 'the new first IP'} as IP SANs`,
      patches: patchesFor(inp, 'restart-apiservers'),
    },
    rollback: `restart the apiservers with --service-cluster-ip-range=${oldFlag.join(',')} again (patch "before" texts)`,
  };
}

/** Gate `kubelet-cluster-dns`: the kubelets (or their node-local DNS cache) name the moved DNS Service's new IP. */
export function kubeletClusterDNSGate(inp: ServiceGateInputs): GateStep {
  const { snap, ctx } = inp;
  const local = snap.clusterDNS.length > 0 && !snap.clusterDNS.includes(ctx.oldDNS ?? '');
  return {
    id: 'kubelet-cluster-dns', kind: 'gate',
    description: local
      ? `kubelets use a node-local DNS cache (${snap.clusterDNS.join(',')}): point its upstream at ${ctx.newDNS} (node-local-dns ConfigMap; kOps does it from kubeDNS.serverIP)`
      : `change the kubelets' clusterDNS ${ctx.oldDNS} → ${ctx.newDNS} so new pods get the new nameserver`,
    gate: {
      condition: 'kubelet-cluster-dns',
      reason: 'kubelets write clusterDNS into every new pod\'s /etc/resolv.conf; it is node configuration, outside the API',
      instructions: gateInstructions(snap, 'kubelet-cluster-dns', ctx),
      check: local
        ? `the node-local DNS cache configuration names ${ctx.newDNS} as its upstream`
        : `every Ready node's kubelet reports clusterDNS ${ctx.newDNS} (GET /api/v1/nodes/NODE/proxy/configz)`,
      patches: patchesFor(inp, 'kubelet-cluster-dns'),
    },
    rollback: 'put the old clusterDNS back (its bridge still answers until remove-bridges)',
  };
}

/** Gate `restart-workloads`: every pod restarted after the moves, so it names the new IPs. */
export function restartWorkloadsGate(inp: ServiceGateInputs, dnsMoves: boolean): GateStep {
  return {
    id: 'restart-workloads', kind: 'gate',
    description: 'restart every pod so /etc/resolv.conf, KUBERNETES_SERVICE_HOST and <NAME>_SERVICE_HOST name the new IPs',
    gate: {
      condition: 'workloads-restarted',
      reason: 'running pods keep the nameserver and the Service environment variables they started with; the bridges answer at the old IPs until this is done',
      instructions: gateInstructions(inp.snap, 'restart-workloads', inp.ctx),
      check: 'no running pod other than hostNetwork pods (dnsPolicy ClusterFirstWithHostNet included) started before move-kubernetes'
        + (dnsMoves ? ' and kubelet-cluster-dns' : '') + ' finished',
      patches: [],
    },
    rollback: 'nothing to undo',
  };
}
