/**
 * The gate steps of a Service CIDR migration plan: where a run stops until something outside the API has
 * changed (the ServiceCIDR API enabled, the apiserver flag, the kubelets' clusterDNS, the pods restarted).
 * buildServicePlan (plan.ts) places them between its API steps.
 */
import type { Snapshot } from '../cluster/types.ts';
import { slowUdpConntrackCleanup } from '../analyze/readiness.ts';
import { gateInstructions, type DistroPatch, type PatchContext } from './distro-patches.ts';
import { distributionPlanner } from './distributions/registry.ts';
import type { ServiceCIDRApiState } from './preflight.ts';
import type { ActionStep, ConfirmStep, GateStep } from './steps.ts';
import { POD_CONSENT_STEP } from './pod-consent.ts';
import { recreateGrantText } from './recreate-grants.ts';

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

/** What the restart-workloads gate and step check: no pod but hostNetwork ones started before the moves. */
function restartedCheck(dnsMoves: boolean): string {
  return 'no running pod other than hostNetwork pods (dnsPolicy ClusterFirstWithHostNet included) and mirror pods started before move-kubernetes'
    + (dnsMoves ? ' and kubelet-cluster-dns' : '') + ' finished';
}

/**
 * Gate `restart-workloads` (plan --restart-workloads=manual, or the default where the distribution's own
 * procedure restarts every pod: `because` says how): every pod restarted after the moves, so it names the new IPs.
 */
export function restartWorkloadsGate(inp: ServiceGateInputs, dnsMoves: boolean, because?: string): GateStep {
  return {
    id: 'restart-workloads', kind: 'gate',
    description: 'restart every pod so /etc/resolv.conf, KUBERNETES_SERVICE_HOST and <NAME>_SERVICE_HOST name the new IPs'
      + (because ? ` (left to the operator: ${because}; plan --restart-workloads=tool makes it a step)` : ''),
    gate: {
      condition: 'workloads-restarted',
      reason: 'running pods keep the nameserver and the Service environment variables they started with; the bridges answer at the old IPs until this is done',
      instructions: gateInstructions(inp.snap, 'restart-workloads', inp.ctx),
      check: restartedCheck(dnsMoves),
      patches: [],
    },
    rollback: 'nothing to undo',
  };
}

/**
 * Step `restart-workloads` (plan --restart-workloads=tool, the default): the Pod CIDR path's restart engine
 * restarts every workload with a pod started before the moves, so /etc/resolv.conf and the Service variables
 * name the new IPs.
 */
export function restartWorkloadsStep(inp: ServiceGateInputs, restarts: { parallel: number; critical: readonly string[] }, dnsMoves: boolean): ActionStep {
  const crit = restarts.critical;
  const slow = slowUdpConntrackCleanup(inp.snap);
  return {
    id: 'restart-workloads', kind: 'restart-workloads',
    description: 'restart every workload with a pod (not hostNetwork, not a mirror pod) started before move-kubernetes'
      + (dnsMoves ? ' and kubelet-cluster-dns' : '') + ' finished, so /etc/resolv.conf, KUBERNETES_SERVICE_HOST and <NAME>_SERVICE_HOST name the new IPs: '
      + `${crit.length > 0 ? `${crit.join(', ')} first (a Deployment that a Service with a UDP port selects, as the cluster DNS, is handed over pod by pod: each old pod leaves its ReplicaSet, then its Services once its replacement serves, and is evicted after a hold that outlasts kube-proxy's clean-up of its UDP conntrack entries; any other is scaled up by one replica (at least 2) and restarted), ` : ''}`
      + `${restarts.parallel} rollout(s) at a time; Deployments, StatefulSets and DaemonSets by the restartedAt annotation (awaited, paused ones reported, never forced), `
      + 'except StatefulSets behind a PodDisruptionBudget, whose pods are evicted one at a time instead (their controller\'s rollout does not consult budgets); '
      + 'Job pods (only where the eviction cannot fail the Job) and bare pods by eviction through the Eviction API (PodDisruptionBudgets respected; bare pods created again from their backup); '
      + `${crit.length > 0 ? `then the scaled-up ones back to their replicas. ` : ''}Done when ${restartedCheck(dnsMoves)}`
      + (slow ? `. kube-proxy ${slow} clears stale UDP conntrack entries slowly (kubernetes/kubernetes#135323): each handed-over pod is held 48 s` : ''),
    ...(crit.length > 0 ? { items: crit.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name!, from: [], to: [] }; }) } : {}),
    rollback: 'nothing to undo: restarted pods name the new IPs, which stay (the scaled-up Deployments are put back from their backups)',
  };
}

/**
 * The confirmation before a Service move whose restarts the tool runs, as the Pod CIDR path asks it
 * (./pod-consent.ts): emptyDir volumes start empty, bare pods are deleted and created again from their backup.
 */
export function serviceRestartConsentStep(barePodNamespaces: readonly string[]): ConfirmStep {
  return {
    id: POD_CONSENT_STEP, kind: 'confirm',
    description: 'confirm the restarts of step restart-workloads: every pod started before the moves is created again, so emptyDir volumes start empty (kubectl drain --delete-emptydir-data); '
      + `bare pods (no controller) are deleted and created again from their backup: same spec, new uid (kubectl drain --force)${barePodNamespaces.length > 0 ? `; they run in namespace(s) ${barePodNamespaces.join(', ')}` : '; none runs now'}`,
    gate: {
      reason: 'what these restarts delete does not come back as it was; like kubectl drain, they run only once confirmed',
      instructions: [
        'check the plan\'s steps (kube-renumber plan -o markdown)',
        ...(barePodNamespaces.length > 0 ? [recreateGrantText(barePodNamespaces)] : []),
        'kube-renumber resume --yes (apply --yes confirms it)',
      ],
      check: 'none: a person confirms',
    },
    rollback: 'nothing to undo',
  };
}
