/**
 * The node IPAM pod path, plan side: pods take addresses from their node's spec.podCIDR (flannel, kubenet,
 * host-local, Cilium's kubernetes IPAM). podCIDR is immutable, so every node is drained, deleted and
 * re-registered, and gets its podCIDR in NEW from this tool while kube-controller-manager does not allocate (it
 * crashes at start while any node's podCIDR is outside --cluster-cidr; see docs/testbed.md): kube-controller-manager
 * stops allocating, every node drained, re-registered and given a podCIDR in NEW, then allocation resumes
 * (nodeStepLists). Its executors: engine.ts; its kinds: kinds.ts.
 */
import { clusterCIDRs } from '../../analyze/capacity.ts';
import type { Family, Snapshot } from '../../cluster/types.ts';
import { contains, familyName, formatCidr, split, tryParseCidr, type Cidr } from '../../net/index.ts';
import { need, POD_RBAC_FILE } from '../../plan/access-need.ts';
import { plannerById } from '../../plan/distributions/registry.ts';
import { cidrList, fail, fam, inAny, int, list, obj, onlyKeys, str, subdomain, type Obj } from '../../plan/plan-fields.ts';
import { maskKey, type NodeMaskSizes, type PodCIDRSpec } from '../../plan/pod-spec.ts';
import { patchesFor, podGateInstructions } from '../../plan/pod-step-lists.ts';
import { DEFAULT_MAX_UNAVAILABLE, parseMaxUnavailable, planWaves, waveSize, ZONE_LABEL } from '../../plan/node-waves.ts';
import type { PreflightCheck } from '../../plan/preflight.ts';
import type { PlanStep } from '../../plan/steps.ts';
import { KCM_DEFAULT_MASK, kcmMaskFlag, pass } from '../../plan/pod-paths/common.ts';
import type { PodPath, PodPlanOptions, PodStepInputs, PodStepLists } from '../../plan/pod-paths/types.ts';

/** The node podCIDR size for a family: kube-controller-manager's flags, kubeadm, the nodes' podCIDRs, else kcm's default. */
function nodeMaskOf(snap: Snapshot, f: Family): number {
  const set = kcmMaskFlag(snap, f);
  if (set) return set.size;
  const fromNode = snap.nodes.flatMap((n) => n.podCIDRs).map((c) => tryParseCidr(c)).find((c) => c?.family === f);
  if (fromNode) return fromNode.prefix;
  return KCM_DEFAULT_MASK[f];
}

/** Node path: why node podCIDRs of /`mask` in `t` do not work for `nodes` nodes, or undefined when they do. */
function nodeMaskProblem(f: Family, t: Cidr, mask: number, nodes: number, headroom: number): string | undefined {
  if (mask < t.prefix || mask > (f === 4 ? 32 : 128) || mask - t.prefix > 16) {
    return `node podCIDR size /${mask} does not fit ${formatCidr(t)} (kube-controller-manager needs the node mask at most 16 bits longer than the cluster CIDR)`;
  }
  const have = 1n << BigInt(mask - t.prefix);
  const need = BigInt(Math.ceil(Math.max(nodes, 1) * headroom));
  if (have < need) return `${formatCidr(t)} holds ${have} node podCIDRs of /${mask}; ${nodes} node(s) x${headroom} headroom need ${need}`;
  return undefined;
}

/** Node path: each node's new podCIDRs, deterministically: nodes in name order take the blocks of NEW in order. */
function nodePodCIDRs(snap: Snapshot, target: Map<Family, Cidr>, masks: Map<Family, number>): NonNullable<PodCIDRSpec['node']>['nodes'] {
  const blocks = new Map<Family, Cidr[]>();
  for (const [f, t] of target) blocks.set(f, split(t, masks.get(f)!, snap.nodes.length));
  return [...snap.nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((n, i) => ({
      name: n.name, from: [...n.podCIDRs], to: [...target.keys()].map((f) => formatCidr(blocks.get(f)![i]!)),
      ...(n.labels[ZONE_LABEL] ? { zone: n.labels[ZONE_LABEL] } : {}),
    }));
}

/** Node path: the node mask and the nodes' new podCIDRs, with check `pod-target-size` and the node-path checks. */
function nodeSizing(
  snap: Snapshot, opts: PodPlanOptions, target: Map<Family, Cidr>, headroom: number,
): { node: NonNullable<PodCIDRSpec['node']>; checks: PreflightCheck[] } {
  const nodes = snap.nodes.length;
  const masks = new Map<Family, number>();
  const problems: string[] = [];
  const given = opts.nodeMaskSize === undefined ? undefined : typeof opts.nodeMaskSize === 'number' ? [opts.nodeMaskSize] : [...opts.nodeMaskSize];
  if (given && given.length !== target.size) {
    problems.push(`${given.length} node podCIDR size(s) (${given.map((m) => `/${m}`).join(',')}) for ${target.size} famil${target.size === 1 ? 'y' : 'ies'} of NEW (${[...target.values()].map(formatCidr).join(',')}): give one size per family, in the order of NEW (e.g. --node-mask-size ${[...target.keys()].map((f) => (f === 4 ? 24 : 64)).join(',')})`);
  }
  [...target].forEach(([f, t], i) => {
    const mask = given?.[i] ?? nodeMaskOf(snap, f);
    masks.set(f, mask);
    const problem = nodeMaskProblem(f, t, mask, nodes, headroom);
    if (problem) problems.push(problem);
  });
  const sizeCheck: PreflightCheck = problems.length > 0
    ? { id: 'pod-target-size', status: 'fail', target: true, message: problems.join('; '), fix: 'choose a larger range or a longer --node-mask-size (one per family), or lower --headroom' }
    : pass('pod-target-size', [...target].map(([f, t]) => `${formatCidr(t)}: ${1n << BigInt(masks.get(f)! - t.prefix)} node podCIDRs of /${masks.get(f)} for ${nodes} node(s)`).join('; '), true);
  const maskSizes: NodeMaskSizes = {};
  for (const [f, m] of masks) maskSizes[maskKey(f)] = m;
  return {
    node: {
      maskSizes,
      nodes: problems.length === 0 ? nodePodCIDRs(snap, target, masks) : [],
      ...(opts.nodeHook ? { hook: opts.nodeHook } : {}),
      maxUnavailable: opts.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE,
    },
    checks: [sizeCheck, ...nodeFamiliesCheck(snap, target), ...nodePathChecks(snap, opts)],
  };
}

/**
 * Node path: check `pod-node-families` (a refusal) when the nodes' podCIDRs or the cluster CIDRs have a family
 * NEW does not name. A re-registered node gets its podCIDRs once, every family at the same time, and
 * kube-controller-manager's --cluster-cidr afterwards names every family: moving one family of a dual-stack
 * node-IPAM cluster would leave the nodes without the other.
 */
function nodeFamiliesCheck(snap: Snapshot, target: Map<Family, Cidr>): PreflightCheck[] {
  const have = new Set<Family>([
    ...clusterCIDRs(snap).map((c) => c.cidr.family),
    ...snap.nodes.flatMap((n) => n.podCIDRs).map((c) => tryParseCidr(c)?.family).filter((f): f is Family => f !== undefined),
  ]);
  const missing = [...have].filter((f) => !target.has(f)).sort();
  if (missing.length === 0) return [];
  return [{
    id: 'pod-node-families', status: 'fail', target: true,
    message: `the nodes' podCIDRs are ${[...have].sort().map(familyName).join(' and ')}, NEW names no ${missing.map(familyName).join(' or ')} range: a node gets its podCIDRs once, one per family, when it registers again, so node IPAM moves every family at once`,
    fix: `give --pod-cidr one range per family the nodes use, comma-separated (e.g. ${[...have].sort().map((f) => (f === 4 ? '10.245.0.0/16' : 'fd00:10:245::/56')).join(',')})`,
  }];
}

/** Node path: checks `pod-kcm-flags`, `pod-node-hook` and `pod-autoscaler`. */
function nodePathChecks(snap: Snapshot, opts: PodPlanOptions): PreflightCheck[] {
  const nodes = snap.nodes.length;
  return [
    snap.controllerManagers.length > 0
      ? pass('pod-kcm-flags', `kube-controller-manager flags are visible (${snap.controllerManagers.map((k) => k.pod).join(', ')}): the gates check them`)
      : { id: 'pod-kcm-flags', status: 'warn', message: 'kube-controller-manager runs without a mirror pod: its flags cannot be read, so its two gates need --ack-gate', fix: '' },
    opts.nodeHook
      ? pass('pod-node-hook', `nodes re-register through the hook: ${opts.nodeHook}`)
      : { id: 'pod-node-hook', status: 'warn', message: `no --node-hook: each of the ${nodes} node(s) stops at a gate after it is deleted, until its kubelet registers it again`, fix: 'give --node-hook CMD (run with KUBE_RENUMBER_NODE=<name>) to re-register nodes without stopping' },
    { id: 'pod-autoscaler', status: 'warn', message: 'while kube-controller-manager does not allocate podCIDRs, nodes added by an autoscaler get none from it', fix: 'pause the cluster autoscaler for the migration; verify names any node left without a podCIDR in NEW' },
  ];
}

/**
 * spec.podCIDR.node: a podCIDR size per family of `to` (maskSizes; a plan written before dual-stack has one
 * maskSize, read as the size of to's one family), and each node's new podCIDRs: one per family of `to`, in
 * it, of that family's size, no two nodes sharing one.
 */
function checkNodeSection(n: Obj, P: string, to: readonly Cidr[]): void {
  onlyKeys(n, P, ['maskSizes', 'maskSize', 'hook', 'maxUnavailable', 'nodes']);
  if (n.maskSize !== undefined) {
    if (n.maskSizes !== undefined) fail(`${P}.maskSize`, 'set together with maskSizes: give maskSizes only');
    if (to.length !== 1) fail(`${P}.maskSize`, `one size for ${to.length} families of spec.podCIDR.to (${to.map(formatCidr).join(', ')}): give maskSizes {ipv4, ipv6} (plan again)`);
    const t = to[0]!;
    const bits = t.family === 4 ? 32 : 128;
    const m = int(n, 'maskSize', P, 1, bits)!;
    if (m < t.prefix) fail(`${P}.maskSize`, `/${m} is larger than spec.podCIDR.to (${formatCidr(t)})`);
    n.maskSizes = { [maskKey(t.family)]: m };
    delete n.maskSize;
  }
  const ms = obj(n.maskSizes, `${P}.maskSizes`);
  onlyKeys(ms, `${P}.maskSizes`, to.map((t) => maskKey(t.family)));
  const sizes = new Map<number, number>();
  for (const t of to) {
    const k = maskKey(t.family);
    if (ms[k] === undefined) fail(`${P}.maskSizes.${k}`, `missing (spec.podCIDR.to has the ${fam(t)} range ${formatCidr(t)})`);
    const m = int(ms, k, `${P}.maskSizes`, 1, t.family === 4 ? 32 : 128)!;
    if (m < t.prefix) fail(`${P}.maskSizes.${k}`, `/${m} is larger than spec.podCIDR.to's ${formatCidr(t)}`);
    sizes.set(t.family, m);
  }
  str(n, 'hook', P, true);
  if (n.maxUnavailable !== undefined) {
    const m = n.maxUnavailable;
    if (typeof m !== 'number' && typeof m !== 'string') fail(`${P}.maxUnavailable`, `must be a whole number or a percentage such as "10%" (got ${JSON.stringify(m)})`);
    try { n.maxUnavailable = parseMaxUnavailable(m as number | string); } catch (e) { fail(`${P}.maxUnavailable`, `${JSON.stringify(m)}: ${(e as Error).message.replace(/^max-unavailable \S+: /, '')}`); }
  }
  const taken = new Map<string, string>();
  list(n, 'nodes', P)!.forEach((x, i) => {
    const np = `${P}.nodes[${i}]`;
    const no = obj(x, np);
    const name = subdomain(no, 'name', np);
    cidrList(no, 'from', np);
    str(no, 'zone', np, true);
    const got = cidrList(no, 'to', np, { nonEmpty: true, onePerFamily: true });
    got.forEach((c, j) => {
      if (!inAny(to, c)) fail(`${np}.to[${j}]`, `${formatCidr(c)} is not inside spec.podCIDR.to (${to.map(formatCidr).join(', ')})`);
      if (c.prefix !== sizes.get(c.family)) fail(`${np}.to[${j}]`, `${formatCidr(c)} is not a /${sizes.get(c.family)} (maskSizes.${maskKey(c.family)})`);
      const other = taken.get(formatCidr(c));
      if (other !== undefined) fail(`${np}.to[${j}]`, `${formatCidr(c)} is node ${other}'s too`);
      taken.set(formatCidr(c), name);
    });
    for (const t of to) if (!got.some((c) => c.family === t.family)) fail(`${np}.to`, `has no ${fam(t)} podCIDR (spec.podCIDR.to has ${formatCidr(t)})`);
  });
}

/** The node podCIDR sizes of a node-path section, in the order of spec.podCIDR.to: "/24 (IPv4), /64 (IPv6)". */
export function maskSizesText(pc: PodCIDRSpec): string {
  const ms = pc.node?.maskSizes ?? {};
  const fams = pc.to.map((t) => (t.includes(':') ? 6 : 4) as 4 | 6);
  const parts = fams.map((f) => ms[maskKey(f)]).map((m, i) => (m === undefined ? undefined : `/${m}${fams.length > 1 ? ` (${familyName(fams[i]!)})` : ''}`));
  return parts.filter(Boolean).join(', ') || 'no size';
}

/** The plan summary's node rows: nodes and re-registration, and the waves. */
function nodeSummaryRows(pc: PodCIDRSpec, node: NonNullable<PodCIDRSpec['node']>): Array<[string, string]> {
  const size = waveSize(node.maxUnavailable, node.nodes.length);
  const zones = new Set(node.nodes.map((n) => n.zone ?? '')).size;
  return [
    ['Nodes', `${node.nodes.length} node(s), ${maskSizesText(pc)} each; re-registration: ${node.hook ? `hook \`${node.hook}\`` : `a gate per ${size > 1 ? 'wave' : 'node'}`}`],
    ['Node waves', `max-unavailable ${node.maxUnavailable ?? `${DEFAULT_MAX_UNAVAILABLE} (default; the plan predates waves)`}: ${size === 1 ? 'one node at a time' : `${Math.ceil(node.nodes.length / size)} wave(s) of up to ${size} nodes`}${zones > 1 ? `, each spread across ${zones} zones` : ''}; PodDisruptionBudgets respected`],
  ];
}

/** Node-IPAM path: kube-controller-manager stops allocating; each node re-registered into NEW; allocation from NEW resumes. */
function nodeStepLists(inp: PodStepInputs): PodStepLists {
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

export const nodePath: PodPath<'node'> = {
  id: 'node',
  moves: 'node podCIDRs',
  hint: 'node podCIDRs: flannel, kubenet, host-local, Cilium kubernetes IPAM',
  flags: ['node-mask-size', 'node-hook', 'max-unavailable'],
  mixes: true,
  planned: 'node IPAM: pods take addresses from their node\'s spec.podCIDR',
  kcmAllocatesAfter: true,
  finalGate: 'kcm-cluster-cidr',
  oldRanges({ snap, opts, target }, checks) {
    const insideNew = (c: Cidr) => { const t = target.get(c.family); return !!t && contains(t, c); };
    const cc = clusterCIDRs(snap).map((c) => c.cidr).filter((c) => target.has(c.family) && !insideNew(c));
    const nodeCidrs = snap.nodes.flatMap((n) => n.podCIDRs).map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c && target.has(c.family) && !insideNew(c));
    const from = [...cc];
    for (const n of nodeCidrs) if (!from.some((c) => contains(c, n))) from.push(n);
    if (from.length === 0) {
      checks.push({ id: 'pod-old-range', status: 'fail', target: true, message: 'no node podCIDR or cluster CIDR outside NEW: nothing to move', fix: 'check `kube-renumber inspect`' });
      return undefined;
    }
    return {
      from,
      size: (headroom) => {
        const sized = nodeSizing(snap, opts, target, headroom);
        return { section: { node: sized.node }, checks: sized.checks };
      },
    };
  },
  stepLists: nodeStepLists,
  recordedOptions: (pc) => (pc.node ? {
    // one size per family, in the order of NEW, as --node-mask-size takes them
    nodeMaskSize: pc.to.map((c) => pc.node!.maskSizes[c.includes(':') ? 'ipv6' : 'ipv4']).filter((m): m is number => m !== undefined),
    ...(pc.node.hook ? { nodeHook: pc.node.hook } : {}),
    ...(pc.node.maxUnavailable !== undefined ? { maxUnavailable: pc.node.maxUnavailable } : {}),
  } : {}),
  consent: (spec) => {
    const nodes = (spec.node?.nodes ?? []).map((n) => n.name);
    return nodes.length > 0 ? [`node(s) ${nodes.join(', ')} are deleted and registered again: labels and taints set through the API are put back from each node's backup after it registers; other fields set through the API (annotations, spec.providerID set by hand) are not`] : [];
  },
  endState: (spec) => `; every node's podCIDR in ${spec.to.join(',')}`,
  validate: (pc, P, to) => checkNodeSection(obj(pc.node, `${P}.node`), `${P}.node`, to),
  access: () => [need('delete', '', 'nodes', POD_RBAC_FILE, 'delete a drained node so it registers again with a podCIDR of the new range')],
  summary: () => 'node podCIDRs (nodes drained and re-registered)',
  summaryRows: (pc) => (pc.node ? nodeSummaryRows(pc, pc.node) : []),
  markdown: (pc, table) => (pc.node && pc.node.nodes.length > 0
    ? `\n## Node podCIDRs\n\n${table(['Node', 'Zone', 'From', 'To'], pc.node.nodes.map((n) => [n.name, n.zone ?? '-', n.from.join(',') || '-', n.to.join(',')]))}`
    : ''),
};
