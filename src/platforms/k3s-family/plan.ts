/**
 * What k3s and RKE2 share as distributions (../k3s/plan.ts, ../rke2/plan.ts): one config file on every server,
 * /etc/rancher/<program>/config.yaml, whose keys are the server's flags without the dashes (repeatable flags as
 * YAML lists; https://docs.k3s.io/installation/configuration, https://docs.rke2.io/install/configuration), read at
 * every start. The server renders the kube-apiserver flag (`service-cidr`), the kubelets' clusterDNS and the DNS
 * Service's address (`cluster-dns`), kube-controller-manager's --cluster-cidr and the CNI's network (`cluster-cidr`),
 * and appends `kube-apiserver-arg` / `kube-controller-manager-arg` after its own defaults, which they override
 * (GetArgs, pkg/util/args.go). `cluster-cidr`, `service-cidr` and `cluster-dns` are critical values every server must
 * share: a server checks them against the server it joins at start and exits on a mismatch ("critical configuration
 * value mismatch", pkg/cluster/bootstrap.go compareConfig), so servers restart starting with the one the others
 * name in `server:`. Sources in docs/platforms.md.
 *
 * Pod CIDR on the node path: flannel (k3s's embedded one, Canal's) refuses a node whose podCIDR lies outside its
 * Network ("subnet ... specified in the flannel net config doesn't contain ... PodCIDR", flannel-io/flannel
 * pkg/subnet/kube/kube.go), and the server gives flannel the cluster-cidr as its Network. While nodes of both
 * ranges exist, the cluster-cidr is therefore the smallest range holding the old and the new one, with
 * kube-controller-manager not allocating (it exits at start while a node's podCIDR is outside --cluster-cidr and
 * allocation is on: k3s-io/k3s#3967); NEW, with allocation back on, once every node is in NEW.
 */
import { addressPlan } from '../../analyze/addressing.ts';
import { CATALOG } from '../../analyze/catalog.ts';
import { formatCidr, overlaps, parseCidr, tryParseCidr, type Cidr } from '../../net/index.ts';
import type { PreflightCheck } from '../../plan/check.ts';
import type { Snapshot } from '../../cluster/types.ts';
import { covering, dump, mergeFeatureGates, mergeRuntimeConfig } from '../../plan/distributions/common.ts';
import type { Distribution, DistributionPlanner, DistroPatch, PatchContext, PodGateRole, PodPatchInputs, ServiceGate } from '../../plan/distributions/types.ts';
import type { PodPatchGate } from '../../plan/pod-spec.ts';
import { firstAndMore } from '../../text.ts';

/** How one k3s-family distribution is named on disk and in systemd. */
export interface Program {
  id: Distribution;
  title: string;
  /** The config file every server reads at start. */
  config: string;
  /** The systemd unit of a server and of an agent. */
  server: string;
  agent: string;
  /** Lines added at the final pod gate, after the servers and agents restarted (e.g. the CNI's DaemonSet). */
  podFinalExtra: readonly string[];
  /** Lines added at kcm-stop-allocating after the servers restarted (e.g. wait for the CNI's rendered config). */
  podStopExtra: readonly string[];
  /** Whether kube-controller-manager shows as a mirror pod (RKE2's static pods) so the gates check it themselves. */
  kcmMirrorPod: boolean;
}

const EXISTING = '# ...existing entries';

/** YAML text with list entries '# ...' written as comments (dump quotes them). */
function yamlText(o: unknown): string {
  return dump(o).replace(/- '(# [^']*)'/g, '$1');
}

/** The servers' names from the control-plane role label the k3s-family servers carry, for instructions. */
export function serverNames(snap: Snapshot): string[] {
  return snap.nodes.filter((n) => n.labels['node-role.kubernetes.io/control-plane'] !== undefined || n.labels['node-role.kubernetes.io/master'] !== undefined).map((n) => n.name);
}

function serversText(snap: Snapshot | undefined): string {
  const names = snap ? serverNames(snap) : [];
  return names.length === 0 ? 'every server' : `every server (${firstAndMore(names, 5)})`;
}

/** The restart order that keeps the critical values matching (see the header). */
function restartServers(p: Program): string {
  return `systemctl restart ${p.server} on each server in turn, first the one the others name in \`server:\` (it compares nothing at start), then the others, each after the previous one's node is Ready `
    + '(a server that reaches one still on the old values exits with "critical configuration value mismatch"; it starts once restarted again after that one)';
}

export function servicePatches(p: Program, snap: Snapshot, ctx: PatchContext): DistroPatch[] {
  const out: DistroPatch[] = [];
  const target = `${p.config} on ${serversText(snap)}`;
  if (ctx.enableApi) {
    const gv = `networking.k8s.io/${ctx.enableApi}`;
    const gate = ctx.enableApi !== 'v1';
    const api = snap.apiservers[0];
    out.push({
      id: `${p.id}-enable-servicecidr-api`, distribution: p.id, gate: 'enable-servicecidr-api', target,
      description: `serve ${gv}: ${p.title} appends these after its own kube-apiserver and kube-controller-manager flags`,
      before: yamlText({ 'kube-apiserver-arg': [EXISTING], 'kube-controller-manager-arg': [EXISTING] }),
      after: yamlText({
        'kube-apiserver-arg': [EXISTING, ...(gate ? [`feature-gates=${mergeFeatureGates(api?.featureGates, 'MultiCIDRServiceAllocator')}`] : []), `runtime-config=${mergeRuntimeConfig(api?.runtimeConfig, gv)}`],
        ...(gate ? { 'kube-controller-manager-arg': [EXISTING, 'feature-gates=MultiCIDRServiceAllocator=true'] } : {}),
      }),
    });
  }
  const before: Record<string, unknown> = { 'service-cidr': ctx.oldFlag.join(',') };
  const after: Record<string, unknown> = { 'service-cidr': ctx.newFlag.join(',') };
  if (ctx.newDNS) {
    before['cluster-dns'] = ctx.oldDNS!;
    after['cluster-dns'] = ctx.newDNS;
  }
  const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter((s): s is string => !!s);
  if (sans.length > 0) {
    before['tls-san'] = [EXISTING];
    after['tls-san'] = [EXISTING, ...sans];
  }
  const fg = ctx.apiserverFeatureGates;
  if (fg) {
    before['kube-apiserver-arg'] = [EXISTING, ...(fg.before ? [`feature-gates=${fg.before}`] : [])];
    after['kube-apiserver-arg'] = [EXISTING, `feature-gates=${fg.after}`];
  }
  out.push({
    id: `${p.id}-server-config`, distribution: p.id, gate: 'restart-apiservers', target,
    description: `${p.title} renders kube-apiserver's --service-cluster-ip-range from service-cidr, the kubelets' clusterDNS and the DNS Service's address from cluster-dns, `
      + 'and reissues the apiserver serving certificate at start when a tls-san is missing from it; every server must carry the same values'
      + (fg ? `; kube-apiserver-arg feature-gates=${fg.after} replaces any feature-gates entry there (${fg.why})` : ''),
    before: yamlText(before), after: yamlText(after),
  });
  return out;
}

export function serviceGateInstructions(p: Program, snap: Snapshot, gate: ServiceGate, ctx: PatchContext): string[] {
  switch (gate) {
    case 'enable-servicecidr-api':
      return [`edit ${p.config} on ${serversText(snap)} (patch ${p.id}-enable-servicecidr-api)`, restartServers(p), 'kube-renumber resume'];
    case 'restart-apiservers': {
      const sans = [ctx.oldKubernetesIP, ctx.newKubernetesIP].filter(Boolean).join(',');
      return [
        `edit ${p.config} on ${serversText(snap)} (patch ${p.id}-server-config${sans ? `; tls-san keeps its entries and adds ${sans}` : ''})`,
        restartServers(p),
        'kube-renumber resume',
      ];
    }
    case 'kubelet-cluster-dns':
      return [`${p.title} agents take clusterDNS from the servers (changed at restart-apiservers): systemctl restart ${p.agent} on every agent, one at a time (running pods keep running)`, 'kube-renumber resume'];
    default:
      return gate satisfies never;
  }
}

/** The smallest range per family holding the old ranges and NEW: the cluster-cidr while nodes of both exist. */
export function bridgeClusterCIDR(from: readonly string[], to: readonly string[]): string[] {
  const parse = (xs: readonly string[]) => xs.map((x) => tryParseCidr(x)).filter((c): c is Cidr => !!c);
  const olds = parse(from);
  return parse(to).map((t) => formatCidr(covering([t, ...olds.filter((o) => o.family === t.family)])));
}

/**
 * The wider cluster-cidr the servers run with while nodes of both ranges exist is flannel's Network then: traffic
 * from pods to any address inside it is not masqueraded, and an address of it that is a node's would be taken for
 * pod network. So it must hold no node address (refused: choose NEW nearer the old range), be no wider than /8
 * (IPv6 /16), and what else it holds (known ranges beside clusters, the cluster's other ranges) is named.
 */
export function podChecks(p: Program, inp: PodPatchInputs): PreflightCheck[] {
  if (!inp.allocAfter) return [];
  const id = `pod-${p.id}-bridge-range`;
  const bridge = bridgeClusterCIDR([...inp.oldCC.split(','), ...inp.spec.from], inp.spec.to).map((c) => parseCidr(c));
  const groups = addressPlan(inp.snap);
  const own = [...inp.oldCC.split(','), ...inp.spec.from, ...inp.spec.to].map((c) => tryParseCidr(c)).filter((c): c is Cidr => !!c);
  const fails: string[] = [];
  const warns: string[] = [];
  for (const c of bridge) {
    const text = formatCidr(c);
    if (c.prefix < (c.family === 4 ? 8 : 16)) fails.push(`${text} is wider than /${c.family === 4 ? 8 : 16}`);
    const nodes = groups.filter((g) => g.role === 'node' && overlaps(g.parsed, c)).map((g) => g.cidr);
    if (nodes.length > 0) fails.push(`${text} holds the node network ${nodes.join(', ')}`);
    const others = groups.filter((g) => g.role !== 'node' && g.role !== 'pod' && g.role !== 'pool' && overlaps(g.parsed, c)
      && !own.some((o) => formatCidr(o) === formatCidr(g.parsed))).map((g) => `${g.cidr} (${g.role})`);
    const known = CATALOG.filter((k) => k.severity !== 'info' && overlaps(parseCidr(k.cidr), c)).map((k) => `${k.cidr} (${k.name})`);
    if (others.length + known.length > 0) warns.push(`${text} holds ${[...others, ...known].join(', ')}`);
  }
  const what = `the cluster-cidr while nodes of both ranges exist (patch ${p.id}-kcm-stop-allocating; flannel's Network then)`;
  if (fails.length > 0) {
    return [{ id, status: 'fail', target: true, message: `${what}: ${fails.join('; ')}`, fix: 'choose NEW nearer the old pod range, so that the smallest range holding both is narrow and clear of the node network' }];
  }
  if (warns.length > 0) {
    return [{ id, status: 'warn', message: `${what}: ${warns.join('; ')}: traffic from pods to these addresses is not masqueraded until the last pod gate`, fix: 'choose NEW nearer the old pod range, or accept it for the length of the move' }];
  }
  return [{ id, status: 'pass', message: `${what}: ${bridge.map(formatCidr).join(',')} holds no node address and no other known range`, fix: '' }];
}

export function podPatches(p: Program, inp: PodPatchInputs): DistroPatch[] {
  const { snap, spec, finalGate, stopGate, oldCC, to, masks } = inp;
  const target = `${p.config} on ${serversText(snap)}`;
  const out: DistroPatch[] = [];
  const maskArgs = masks.after.map((m) => m.replace(/^--/, ''));
  if (stopGate) {
    const bridge = bridgeClusterCIDR([...oldCC.split(','), ...spec.from], spec.to).join(',');
    out.push({
      id: `${p.id}-kcm-stop-allocating`, distribution: p.id, gate: stopGate, target,
      description: `kube-controller-manager stops allocating node podCIDRs (kube-controller-manager-arg overrides ${p.title}'s own --allocate-node-cidrs=true), `
        + `and cluster-cidr becomes ${bridge}, which holds the old and the new node podCIDRs, so flannel starts on a node of either range while they coexist`,
      before: yamlText({ 'cluster-cidr': oldCC, 'kube-controller-manager-arg': [EXISTING] }),
      after: yamlText({ 'cluster-cidr': bridge, 'kube-controller-manager-arg': [EXISTING, 'allocate-node-cidrs=false'] }),
    });
    out.push({
      id: `${p.id}-pod-cidr`, distribution: p.id, gate: finalGate, target,
      description: `every node's podCIDR is in NEW: cluster-cidr NEW (kube-controller-manager, flannel's Network, kube-proxy), allocation back on${maskArgs.length > 0 ? ` with the plan's node podCIDR sizes (${maskArgs.join(' ')})` : ''}`,
      before: yamlText({ 'cluster-cidr': bridge, 'kube-controller-manager-arg': [EXISTING, 'allocate-node-cidrs=false'] }),
      after: yamlText({ 'cluster-cidr': to, 'kube-controller-manager-arg': [`${EXISTING} (allocate-node-cidrs=false removed)`, ...maskArgs] }),
    });
    return out;
  }
  out.push({
    id: `${p.id}-pod-cidr`, distribution: p.id, gate: finalGate, target,
    description: 'NEW as cluster-cidr with allocation off in the same edit, so kube-controller-manager starts while nodes keep their old podCIDRs',
    before: yamlText({ 'cluster-cidr': oldCC, 'kube-controller-manager-arg': [EXISTING] }),
    after: yamlText({ 'cluster-cidr': to, 'kube-controller-manager-arg': [EXISTING, 'allocate-node-cidrs=false', ...maskArgs] }),
  });
  return out;
}

export function podGateInstructions(p: Program, gate: PodPatchGate, role: PodGateRole): string[] {
  const resume = p.kcmMirrorPod ? 'kube-renumber resume' : `kube-renumber resume --ack-gate ${gate}   (${p.title} runs kube-controller-manager inside the server process: no pod shows its flags)`;
  if (role === 'stop-allocating') {
    return [
      `edit ${p.config} on every server (patch ${p.id}-kcm-stop-allocating)`,
      restartServers(p),
      ...p.podStopExtra,
      `agents need no restart now: each takes the wider cluster-cidr when ${p.agent} restarts to register it again`,
      resume,
    ];
  }
  return [
    `edit ${p.config} on every server (patch ${p.id}-pod-cidr)`,
    restartServers(p),
    `then systemctl restart ${p.agent} on each agent in turn: it takes the new cluster-cidr for flannel and kube-proxy (running pods keep running)`,
    ...p.podFinalExtra,
    resume,
  ];
}

/** How a node registers again after its Node object was deleted. */
export function reregister(p: Program): string {
  return `systemctl restart ${p.agent} (${p.server} on a server): the kubelet inside it registers the Node again`;
}

/** What a k3s-family distribution says of itself; the rest of its planner is this file's, for its Program. */
export type ProgramOwn = Pick<DistributionPlanner, 'id' | 'restartApiserversReason' | 'certFix'>;

/** The planner of a k3s-family distribution: its own members, and this file's functions for program `p`. */
export function programPlanner(p: Program, own: ProgramOwn): DistributionPlanner {
  return {
    ...own,
    servicePatches: (snap, ctx) => servicePatches(p, snap, ctx),
    serviceGateInstructions: (snap, gate, ctx) => serviceGateInstructions(p, snap, gate, ctx),
    restartWorkloadsNote: [],
    podPatches: (inp) => podPatches(p, inp),
    podChecks: (inp) => podChecks(p, inp),
    kubeProxyPatch: undefined,
    podGateInstructions: (gate, role) => podGateInstructions(p, gate, role),
    reregister: reregister(p),
    configCheck: () => undefined,
  };
}
