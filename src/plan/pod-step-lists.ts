/**
 * The steps of a Pod CIDR migration, in three lists (before the restarts, the restarts, the clean-up after
 * them): the pod path's own (src/plan/pod-paths/) with the steps every path shares around them (the critical
 * Deployments scaled up and back, verify-pods last), and the node IPAM path's steps (kube-controller-manager
 * stops allocating, every node drained, re-registered and given a podCIDR in NEW, then allocation resumes),
 * which src/plan/pod-paths/node.ts plans. buildPodSection (pod-plan.ts) builds the spec they are written from.
 */
import type { DistroPatch } from './distro-patches.ts';
import { plannerById } from './distributions/registry.ts';
import type { PodCIDRSpec, PodPatchGate } from './pod-spec.ts';
import type { Distribution, PodPath, PodStepInputs, PodStepLists } from './pod-paths/types.ts';
import type { PlanStep } from './steps.ts';
import { planWaves, waveSize } from './node-waves.ts';
import { podConsentStep } from './pod-consent.ts';

export type { PodStepInputs, PodStepLists } from './pod-paths/types.ts';

/** The step lists of `spec`'s pod path, with the critical Deployments scaled around the restarts and verify-pods last. */
export function podStepLists(path: Pick<PodPath, 'stepLists' | 'endState' | 'consent'>, spec: PodCIDRSpec, distro: Distribution, patches: DistroPatch[]): PodStepLists {
  const inp: PodStepInputs = { spec, distro, patches };
  const scale = criticalScaleSteps(spec.restarts.critical);
  const own = path.stepLists(inp);
  return {
    prepare: [podConsentStep(spec, path.consent(spec)), ...own.prepare, scale.up],
    restart: own.restart,
    finish: [scale.down, ...own.finish, verifyPodsStep(spec, path.endState(spec))],
  };
}

/** Step `verify-pods`: the end state of the Pod CIDR migration (`endState`: what the path checks besides pods and workloads). */
function verifyPodsStep(spec: PodCIDRSpec, endState: string): PlanStep {
  return {
    id: 'verify-pods', kind: 'verify-pods',
    description: `check the end state: no non-hostNetwork pod has an address in ${spec.from.join(', ')}; every Deployment, StatefulSet and DaemonSet at its desired replicas${endState}`,
    rollback: 'nothing to undo',
  };
}

/** Steps `scale-critical` and `restore-scale` for the critical Deployments (namespace/name). */
function criticalScaleSteps(critical: readonly string[]): { up: PlanStep; down: PlanStep } {
  const critItems = critical.map((c) => { const [namespace, name] = c.split('/'); return { namespace: namespace!, name: name!, from: [], to: [] }; });
  return {
    up: {
      id: 'scale-critical', kind: 'scale-critical',
      description: `scale ${critical.join(', ') || 'no Deployment'} up by one replica (at least 2) before pods restart, so name resolution never rests on one pod`,
      items: critItems,
      rollback: 'put the replicas back from the backup',
    },
    down: {
      id: 'restore-scale', kind: 'restore-scale',
      description: `put ${critical.join(', ') || 'no Deployment'} back to the replicas they had before scale-critical`,
      items: critItems,
      rollback: 'nothing to undo',
    },
  };
}

/** The distribution patches a pod gate shows. */
export function patchesFor(inp: PodStepInputs, gate: PodPatchGate): DistroPatch[] {
  return inp.patches.filter((p) => p.gate === gate);
}

/** Node-IPAM path: kube-controller-manager stops allocating; each node re-registered into NEW; allocation from NEW resumes. */
export function nodeStepLists(inp: PodStepInputs): PodStepLists {
  const node = inp.spec.node!;
  const rereg = plannerById(inp.distro).reregister;
  return {
    prepare: [kcmStopAllocatingGate(inp)],
    restart: planWaves(node.nodes, waveSize(node.maxUnavailable, node.nodes.length))
      .flatMap((wave, i) => (wave.length === 1 ? nodeMoveSteps(wave[0]!, node.hook, rereg) : nodeWaveSteps(wave, i + 1, node.hook, rereg))),
    finish: [kcmClusterCidrGate(inp)],
  };
}

/** Gate `kcm-stop-allocating`: kube-controller-manager restarted with --allocate-node-cidrs=false. */
function kcmStopAllocatingGate(inp: PodStepInputs): PlanStep {
  return {
    id: 'kcm-stop-allocating', kind: 'gate',
    description: 'restart kube-controller-manager with --allocate-node-cidrs=false (nothing else changed): it then starts whatever podCIDRs the nodes have, and leaves new nodes\' podCIDRs to this tool',
    gate: {
      condition: 'kcm-stop-allocating',
      reason: 'kube-controller-manager refuses to start while a node\'s podCIDR lies outside --cluster-cidr (measured: it exits at start), and nodes of both ranges coexist during the move',
      instructions: podGateInstructions(inp.distro, 'kcm-stop-allocating'),
      check: 'every kube-controller-manager pod runs with --allocate-node-cidrs=false (mirror pod flags; --ack-gate kcm-stop-allocating where there are none)',
      patches: patchesFor(inp, 'kcm-stop-allocating'),
    },
    rollback: 'restart it with --allocate-node-cidrs=true again (only while every node still has its old podCIDR)',
  };
}

/** Gate `kcm-cluster-cidr`: kube-controller-manager allocating from NEW again, with the distribution's pod range changed. */
function kcmClusterCidrGate(inp: PodStepInputs): PlanStep {
  const newText = inp.spec.to;
  return {
    id: 'kcm-cluster-cidr', kind: 'gate',
    description: `restart kube-controller-manager with --cluster-cidr=${newText.join(',')} and --allocate-node-cidrs=true (every node's podCIDR is in NEW now, so it starts), and change the distribution's pod range and kube-proxy clusterCIDR`,
    gate: {
      condition: 'kcm-cluster-cidr',
      reason: 'new nodes need podCIDRs from kube-controller-manager again; the flag lives outside the API',
      instructions: podGateInstructions(inp.distro, 'kcm-cluster-cidr'),
      check: `every kube-controller-manager pod runs with --cluster-cidr=${newText.join(',')} and --allocate-node-cidrs=true (--ack-gate kcm-cluster-cidr where there is no mirror pod)`,
      patches: patchesFor(inp, 'kcm-cluster-cidr'),
    },
    rollback: 'restart it with --allocate-node-cidrs=false (it will not start with the old --cluster-cidr any more)',
  };
}

type NodeMove = NonNullable<PodCIDRSpec['node']>['nodes'][number];

/** One node's move: drained and deleted, re-registered (by the hook, else at a gate), given its podCIDR in NEW. */
function nodeMoveSteps(n: NodeMove, hook: string | undefined, rereg: string): PlanStep[] {
  const item = () => ({ namespace: '', name: n.name, from: n.from, to: n.to });
  return [{
    id: `drain-node-${n.name}`, kind: 'drain-node',
    description: `node ${n.name} (${n.from.join(',') || 'no podCIDR'}): cordon (once a node in NEW is Ready: every node still in the old range), evict its pods through the Eviction API (PodDisruptionBudgets respected; DaemonSet and mirror pods stay), delete the Node object and the pods left on it`,
    items: [item()],
    rollback: 'a deleted Node cannot be put back with its podCIDR: it re-registers and takes a podCIDR in NEW',
  }, hook ? {
    id: `reregister-node-${n.name}`, kind: 'reregister-node',
    description: `run the node hook for ${n.name} (KUBE_RENUMBER_NODE=${n.name}) and wait until the node is registered again`,
    items: [item()],
    rollback: 'nothing to undo',
  } : {
    id: `reregister-node-${n.name}`, kind: 'gate',
    description: `re-register node ${n.name}: restart its kubelet (or replace the machine keeping the name) so it creates its Node object again`,
    items: [item()],
    gate: {
      condition: 'node-reregistered',
      reason: 'only the kubelet (or the machine\'s provisioning) registers a node',
      instructions: [`on ${n.name}: ${rereg}`, 'kube-renumber resume'],
      check: `Node ${n.name} exists again`,
    },
    rollback: 'nothing to undo',
  }, {
    id: `assign-podcidr-${n.name}`, kind: 'assign-podcidr',
    description: `give node ${n.name} podCIDR ${n.to.join(',')}, wait until it is Ready, and delete any pod that started on it before it had the podCIDR (its owner recreates it)`,
    items: [item()],
    rollback: 'a node podCIDR cannot be changed: delete and re-register the node again',
  }];
}

/** A wave's nodes and their zones, for step descriptions: "n1 (zone a), n2 (zone b)". */
function waveText(wave: readonly NodeMove[]): string {
  return wave.map((n) => `${n.name}${n.zone ? ` (zone ${n.zone})` : ''}`).join(', ');
}

/**
 * A wave of several nodes moved at once. With a hook: one step that takes each node through drain,
 * re-registration and its podCIDR on its own, all the wave's nodes at the same time (a node that fails leaves the
 * others to finish; one not yet deleted is uncordoned). Without one: the wave's drains, a gate until every node of
 * the wave is registered again, then their podCIDRs.
 */
function nodeWaveSteps(wave: readonly NodeMove[], k: number, hook: string | undefined, rereg: string): PlanStep[] {
  const items = () => wave.map((n) => ({ namespace: '', name: n.name, from: n.from, to: n.to }));
  const names = wave.map((n) => n.name).join(', ');
  const drainText = 'cordon (once a node in NEW is Ready: every node still in the old range), evict its pods through the Eviction API (PodDisruptionBudgets respected: an eviction a budget refuses waits, so the wave never disrupts more than the budgets allow; DaemonSet and mirror pods stay), delete the Node object and the pods left on it';
  if (hook) {
    return [{
      id: `move-nodes-wave-${k}`, kind: 'move-nodes',
      description: `wave ${k}, ${wave.length} nodes at once: ${waveText(wave)}. Each node: ${drainText}; run the node hook (KUBE_RENUMBER_NODE=<node>) and wait until it is registered again; give it its podCIDR in NEW, wait until it is Ready, and delete any pod that started on it before it had the podCIDR. A node that fails stops the run once the others are done; one not yet deleted is uncordoned`,
      items: items(),
      rollback: 'a deleted Node cannot be put back with its podCIDR: it re-registers and takes a podCIDR in NEW',
    }];
  }
  return [{
    id: `drain-nodes-wave-${k}`, kind: 'drain-node',
    description: `wave ${k}, ${wave.length} nodes at once: ${waveText(wave)}. Each node: ${drainText}. A node that fails stops the run once the others are drained; one not yet deleted is uncordoned`,
    items: items(),
    rollback: 'a deleted Node cannot be put back with its podCIDR: it re-registers and takes a podCIDR in NEW',
  }, {
    id: `reregister-nodes-wave-${k}`, kind: 'gate',
    description: `re-register the nodes of wave ${k} (${names}): restart their kubelets (or replace the machines keeping the names) so they create their Node objects again`,
    items: items(),
    gate: {
      condition: 'node-reregistered',
      reason: 'only the kubelet (or the machine\'s provisioning) registers a node',
      instructions: [`on each of ${names}: ${rereg}`, 'kube-renumber resume'],
      check: `Nodes ${names} exist again`,
    },
    rollback: 'nothing to undo',
  }, {
    id: `assign-podcidr-wave-${k}`, kind: 'assign-podcidr',
    description: `give each node of wave ${k} its podCIDR in NEW (${wave.map((n) => `${n.name} ${n.to.join(',')}`).join(', ')}), wait until it is Ready, and delete any pod that started on it before it had the podCIDR (its owner recreates it)`,
    items: items(),
    rollback: 'a node podCIDR cannot be changed: delete and re-register the node again',
  }];
}

/** What a person (or pipeline) runs at a pod gate, per distribution. */
export function podGateInstructions(distro: Distribution, gate: PodPatchGate): string[] {
  return plannerById(distro).podGateInstructions(gate);
}
