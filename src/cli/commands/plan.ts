import { connect as tlsConnect } from 'node:tls';
import { loadKubeConfig } from '../../kube/client.ts';
import { buildMigrationPlan, DEFAULT_BATCH_SIZE, DEFAULT_HEADROOM, DEFAULT_STRATEGY, mappingCounts, type MigrationPlan, type RestartMode, type Strategy, type TierOrder } from '../../plan/plan.ts';
import type { LoadBalancerMode } from '../../plan/load-balancers.ts';
import { parseNodePortCover, type NodePortCover } from '../../plan/nodeport-cover.ts';
import { refusals } from '../../plan/preflight.ts';
import { platformRefusal, podOwnerRefusal, podPathOf } from '../../plan/platform-gate.ts';
import { extensionRows, podExtensionRows, planToJson, planToMarkdown, planToYaml, podSummaryRows } from '../../plan/render.ts';
import { buildExtensionPlan, podExtensionRefusal } from '../../plan/extend.ts';
import { buildPodExtensionPlan } from '../../plan/extend-pod.ts';
import { DEFAULT_PARALLEL } from '../../plan/pod-plan.ts';
import { DEFAULT_MAX_UNAVAILABLE, parseMaxUnavailable } from '../../plan/node-waves.ts';
import { isPodPathId, orList, POD_PATH_NAMES, podPath } from '../../plan/pod-paths/registry.ts';
import { DEFAULT_TIER_KEY, parseTarget } from '../../plan/service-mapping.ts';
import { parsePodTarget } from '../../plan/pod-plan.ts';
import { certSanProblem, isDnsSubdomain, isQualifiedName, objectRefProblem, podTargetRefusals } from '../../plan/targets.ts';
import { NetError } from '../../net/index.ts';
import { firstAndMore, splitList } from '../../text.ts';
import { avoidList, connectOptions, durationFlag, intFlag, list, loadSnapshot, numberFlag, readsLive, str } from '../common.ts';
import { ExitCode, UsageError } from '../errors.ts';
import type { Command, Io, Values } from '../command.ts';
import { parseOutput, section, table } from '../output.ts';
import type { Reference } from '../../analyze/references.ts';
import { VERSION } from '../version.ts';
import { inspect } from '../../analyze/inspect.ts';
import { renderPlanHtml } from '../../render/html.ts';
import { planFleet } from '../fleet.ts';
import { planSummary, summaryLines, type PlanSummary } from '../../plan/summary.ts';

/** What --strategy takes. */
export const STRATEGIES = ['in-place', 'recreate'] as const satisfies readonly Strategy[];

/** The largest --headroom: beyond it no range of either family would do, and the arithmetic stays finite. */
const MAX_HEADROOM = 1000;

/** Flags of the Pod CIDR move (the installed paths', read when asked, as the help below), and of the Service CIDR move: each needs its move's target. */
const podFlags = (): string[] => ['ipam', ...POD_PATH_NAMES.flatMap((id) => podPath(id).flags)];
const SERVICE_FLAGS = ['keep', 'strategy', 'tier-key', 'tier-order', 'batch-size', 'apiserver-cert-san', 'restart-workloads', 'cluster-dns', 'load-balancers', 'nodeport-cover', 'read-helm-releases'] as const;

/**
 * --node-mask-size: one whole number from 1 to 128 per family of --pod-cidr, comma-separated in its order (one
 * number for a single-stack --pod-cidr). Whether each fits its range is the plan's pod-target-size check.
 */
function nodeMaskSizes(values: Values, podTarget: string | undefined): number[] | undefined {
  const raw = str(values, 'node-mask-size');
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((x) => x.trim());
  const sizes = parts.map((x) => {
    const n = Number(x.replace(/^\//, ''));
    if (!/^\/?\d+$/.test(x) || !Number.isInteger(n) || n < 1 || n > 128) {
      throw new UsageError(`--node-mask-size ${raw} must be a whole number from 1 to 128${parts.length > 1 ? ' per family' : ''}${x !== raw ? ` (got ${JSON.stringify(x)})` : ''}`);
    }
    return n;
  });
  if (podTarget) {
    const fams = [...parsePodTarget(podTarget).keys()];
    if (fams.length !== sizes.length) {
      throw new UsageError(`--node-mask-size ${raw} gives ${sizes.length} size(s), --pod-cidr ${podTarget} has ${fams.length} famil${fams.length === 1 ? 'y' : 'ies'}: give one size per family in the order of --pod-cidr, e.g. --node-mask-size ${fams.map((f) => (f === 4 ? 24 : 64)).join(',')}`);
    }
  }
  return sizes;
}

/** A target that does not parse is refused before the cluster is read. */
function refuseUnparsable(parse: () => unknown, what: string): void {
  try {
    parse();
  } catch (e) {
    if (e instanceof NetError) throw new UsageError(`${what} refused: ${e.message}`);
    throw e;
  }
}

export const TIER_ORDERS: Readonly<Record<string, TierOrder>> = { asc: 'ascending', ascending: 'ascending', desc: 'descending', descending: 'descending' };

export const planCommand: Command = {
  name: 'plan',
  summary: 'write the ordered, reviewable plan that moves the Service CIDR, the Pod CIDR, or both (changes nothing)',
  usage: 'kube-renumber plan [--service-cidr NEW] [--pod-cidr NEW] [--extend-service-cidr ADD] [--extend-pod-cidr ADD] [--keep NS/NAME ...] [--strategy in-place|recreate] [--tier-key KEY] [--tier-order asc|desc] '
    + '[--batch-size N] [--headroom X] [--restart-workloads tool|manual] [--cluster-dns none|NS/NAME] [--load-balancers keep|move] [--nodeport-cover off|nodes|IP[,IP...]] [--read-helm-releases] [--parallel N] [--critical NS/NAME ...] [--node-hook CMD] [--max-unavailable N|P%] [-o yaml|json|markdown|html|table]',
  outputs: ['markdown', 'html'],
  options: {
    'service-cidr': { type: 'string' },
    'extend-service-cidr': { type: 'string' },
    'extend-pod-cidr': { type: 'string' },
    keep: { type: 'string', multiple: true },
    strategy: { type: 'string' },
    'tier-key': { type: 'string' },
    'tier-order': { type: 'string' },
    'batch-size': { type: 'string' },
    headroom: { type: 'string' },
    'apiserver-cert-san': { type: 'string', multiple: true },
    'restart-workloads': { type: 'string' },
    'cluster-dns': { type: 'string' },
    'load-balancers': { type: 'string' },
    'nodeport-cover': { type: 'string' },
    'read-helm-releases': { type: 'boolean' },
    'pod-cidr': { type: 'string' },
    ipam: { type: 'string' },
    parallel: { type: 'string' },
    critical: { type: 'string', multiple: true },
    'block-size': { type: 'string' },
    'pool-name': { type: 'string' },
    'node-mask-size': { type: 'string' },
    'node-hook': { type: 'string' },
    fleet: { type: 'string' },
    'output-directory': { type: 'string' },
    'max-unavailable': { type: 'string' },
  },
  get help() {
    return `Flags:
  --service-cidr NEW       the new Service CIDR; dual-stack: one per family, comma-separated
  --pod-cidr NEW           the new Pod CIDR (one per family); with --service-cidr: one combined plan
                           (at least one of the two is required)
  --extend-service-cidr ADD  add ADD to the Service range instead of moving it (one CIDR per family): a second
                           ServiceCIDR, the apiserver flag, Services and pods left as they are (1.29 and later;
                           a plan of its own, without the move's flags). Rollback deletes it while no Service
                           holds an address in it
  --extend-pod-cidr ADD    add ADD to the pod range instead of moving it. Calico IPAM: a second IPPool with the
                           old pool's settings (encapsulation, natOutgoing, blockSize where it fits, nodeSelector),
                           no pool disabled, no pod restarted; kube-proxy's clusterCIDR widened to one range holding
                           both at a gate (refused when that range would hold anything but pod ranges), ip-masq-
                           agent's nonMasqueradeCIDRs grown; on kOps ADD must lie inside nonMasqueradeCIDR. Rollback
                           deletes the pool while no pod holds an address in it and refuses, naming them, once one
                           does. Refused on node IPAM (kube-controller-manager takes one cluster CIDR per family) and
                           not written yet for Cilium multi-pool; the error line says what to do instead
  --keep NS/NAME           keep this Service's ClusterIP (repeatable)
  --load-balancers M       keep (default): LoadBalancer Services keep their ClusterIPs, under ServiceCIDRs kept in
                           the old range; move: each is re-created in the new range with its external address
                           kept where its platform allows (MetalLB, spec.loadBalancerIP, GKE/Azure static
                           addresses, AWS Elastic IPs, the Tailscale operator's hostname), and a gate before each
                           one whose address changes, naming the address and its external-dns records
  --strategy S             in-place (ExternalName round trip behind a bridge, old and new IP kept answering by
                           a cover Service: no request failed while it worked) or recreate (delete and create at
                           the new IP: clients of the old IP fail until they restart); default ${DEFAULT_STRATEGY}
  --tier-key KEY           label (else annotation) holding each Service's tier (default ${DEFAULT_TIER_KEY})
  --tier-order asc|desc    asc (default): tier 0 moves first; desc: for criticality labels where 1 is the
                           most critical. Untiered Services move first.
  --batch-size N           Services per step (default ${DEFAULT_BATCH_SIZE})
  --headroom X             NEW must hold today's moved Service IPs (pods: nodes) times X, 1 to 1000 (default ${DEFAULT_HEADROOM})
  --apiserver-cert-san IP  the apiserver serving certificate's SANs, when read elsewhere (repeatable): IP
                           addresses, or DNS names with a dot (or localhost, kubernetes*); live input reads
                           them over TLS from the kubeconfig server
  --restart-workloads M    tool: step restart-workloads restarts every workload with a pod started before the
                           moves (waves of --parallel, PodDisruptionBudgets respected, the cluster DNS and
                           --critical first); manual: a gate, the operator restarts them. Default tool, except
                           where the distribution's procedure already restarts every pod (kOps' node rolling update)
  --cluster-dns none|NS/NAME  the cluster has no cluster DNS (none), or its DNS Service is NS/NAME (when it is
                           not found); recorded in the plan and checked again by apply
  --nodeport-cover off|nodes|IP[,IP...]
                           in-place: while a NodePort Service moves, answer its node ports through a second cover
                           (type LoadBalancer, ports = its nodePorts) whose load-balancer status lists these
                           addresses: nodes = every Node's InternalIP and ExternalIP, read at apply; or the addresses
                           kube-proxy serves node ports on. Costs one kube-proxy rule per address × nodePort while a
                           batch moves. Refused unless kube-proxy runs in iptables or nftables mode (not IPVS, not
                           replaced by an eBPF data plane). Default off: a node port may be refused for about a
                           second on some nodes (docs/service-migration.md). Recorded, checked again by apply
  --read-helm-releases     the references scan reads the deployed Helm releases (Secrets of type
                           helm.sh/release.v1) and finds a release pinning a ClusterIP; so does the plan's gate
                           references at apply. Needs list secrets in every namespace (deploy/rbac-helm-releases.yaml,
                           not among the default roles); only the pinned addresses are kept (docs/references.md)
Restart flags (the Pod CIDR move, and the Service move's step restart-workloads):
  --parallel N             workload rollouts in flight at once (default ${DEFAULT_PARALLEL})
  --critical NS/NAME       a Deployment scaled up by one before the restarts, besides the cluster DNS (repeatable)
Pod CIDR flags:
  ${`--ipam ${POD_PATH_NAMES.join('|')}`.padEnd(23)}  how pods get addresses (default: detected): ${POD_PATH_NAMES.map((id) => podPath(id).moves).join(', or ')}
  --block-size N           Calico: block size of the new pool (default: the old pool's)
  --pool-name NAME         Calico: name of the new pool, a Kubernetes object name (default kube-renumber-<cidr>)
  --node-mask-size N[,N]   node path: podCIDR size per node, one per family of --pod-cidr in its order
                           (e.g. 24,64; default: kube-controller-manager's, else the nodes' podCIDRs' sizes)
  --node-hook CMD          node path: command that re-registers a deleted node (env KUBE_RENUMBER_NODE);
                           without it every node stops at a gate until its kubelet registers it again
  --max-unavailable N|P%   node path: nodes drained at once, a number or a percentage of the nodes (rounded
                           down, at least 1); each wave spreads across zones (topology.kubernetes.io/zone)
                           and waits on PodDisruptionBudgets (default ${DEFAULT_MAX_UNAVAILABLE}: one node at a time)
Fleet flags (docs/fleet.md):
  --fleet FILE             give every cluster of the fleet file its own Service and Pod ranges (current ones kept
                           where they overlap nothing) and write one plan per cluster that moves
  --output-directory DIR   where --fleet writes the plans, fleet.yaml, summary.json and one HTML page per plan
                           (a new or empty directory)

Pod CIDR flags need --pod-cidr; --keep, --strategy, --tier-key, --tier-order, --batch-size,
--apiserver-cert-san, --restart-workloads, --cluster-dns, --load-balancers, --nodeport-cover and
--read-helm-releases need --service-cidr; --parallel and --critical need --pod-cidr, or --service-cidr without
--restart-workloads=manual.
Output: -o yaml is the file apply reads; markdown is for a change request; html is one self-contained page
(address map with the targets, steps with the gates, Service mapping); table (default) is a summary.
Exit codes: 0 plan written; 1 plan written but pre-flight checks failed (fix them before apply);
2 the target is refused (bad CIDR or family, overlaps a known range, contains a live address, too small), no plan
can be written (current service range unknown, nothing to move, IPAM unknown: give --ipam), --nodeport-cover is refused
(recreate, kube-proxy not known to run in iptables or nftables mode, no address), or the move is refused
on this platform or by the owner of the pod addresses (docs/platforms.md): one error line, no plan. With --fleet: 2
also when the fleet's ranges cannot all be met (the line names the clusters and ranges) or a cluster's plan is
refused; nothing is written; 3 the fleet file is not valid.`;
  },
  async run({ values, io }) {
    if (values.fleet !== undefined) return planFleet(values, io, { readCertSANs: readServingCertSANs });
    if (values['output-directory'] !== undefined) throw new UsageError('--output-directory goes with --fleet FILE');
    const extendPods = str(values, 'extend-pod-cidr');
    if (extendPods !== undefined) {
      refuseUnparsable(() => parsePodTarget(extendPods), `--extend-pod-cidr ${extendPods}`);
      return planExtension(values, io, extendPods, 'extend-pod-cidr');
    }
    const extend = str(values, 'extend-service-cidr');
    if (extend !== undefined) return planExtension(values, io, extend, 'extend-service-cidr');
    const target = str(values, 'service-cidr');
    const podTarget = str(values, 'pod-cidr');
    if (!target && !podTarget) throw new UsageError('give --service-cidr NEW, --pod-cidr NEW, or both, e.g. --service-cidr 172.24.0.0/15');
    // Values are checked before the cluster is read: a bad command line is exit 2 whatever the cluster.
    if (target) refuseUnparsable(() => parseTarget(target), `--service-cidr ${target}`);
    if (podTarget) refuseUnparsable(() => parsePodTarget(podTarget), `--pod-cidr ${podTarget}`);
    const needs = (flags: readonly string[], what: string) => {
      for (const f of flags) if (values[f] !== undefined) throw new UsageError(`--${f} needs ${what}`);
    };
    if (!podTarget) needs(podFlags(), '--pod-cidr (it applies to the Pod CIDR move)');
    if (!target) needs(SERVICE_FLAGS, '--service-cidr (it applies to the Service CIDR move)');
    const ipamRaw = str(values, 'ipam');
    if (ipamRaw !== undefined && !isPodPathId(ipamRaw)) throw new UsageError(`--ipam ${ipamRaw} must be ${orList(POD_PATH_NAMES)}`);
    const ipam = ipamRaw;
    // a path's own flags need that path
    if (ipam) {
      for (const other of POD_PATH_NAMES.filter((id) => id !== ipam)) {
        needs(podPath(other).flags, `--ipam ${other} (${podPath(other).moves}); --ipam ${ipam} moves ${podPath(ipam).moves}`);
      }
    }
    const critical = list(values, 'critical').flatMap((k) => splitList(k));
    for (const k of critical) {
      const problem = objectRefProblem(k);
      if (problem) throw new UsageError(`--critical ${k}: ${problem} (a Deployment as namespace/name)`);
    }
    const parallel = intFlag(values, 'parallel', 1, 100);
    const restartRaw = str(values, 'restart-workloads');
    if (restartRaw !== undefined && restartRaw !== 'tool' && restartRaw !== 'manual') throw new UsageError(`--restart-workloads ${restartRaw} must be tool or manual`);
    if (!podTarget && restartRaw === 'manual') {
      for (const f of ['parallel', 'critical']) if (values[f] !== undefined) throw new UsageError(`--${f} needs --pod-cidr, or the tool's restarts (not --restart-workloads=manual)`);
    }
    const clusterDNS = str(values, 'cluster-dns');
    const loadBalancers = str(values, 'load-balancers');
    if (loadBalancers !== undefined && loadBalancers !== 'keep' && loadBalancers !== 'move') throw new UsageError(`--load-balancers ${loadBalancers} must be keep or move`);
    const nodePortCoverRaw = str(values, 'nodeport-cover');
    let nodePortCover: NodePortCover | undefined;
    if (nodePortCoverRaw !== undefined) {
      try { nodePortCover = parseNodePortCover(nodePortCoverRaw); } catch (e) { throw new UsageError(`--nodeport-cover ${nodePortCoverRaw}: ${(e as Error).message}`); }
    }
    if (clusterDNS !== undefined && clusterDNS !== 'none') {
      const problem = objectRefProblem(clusterDNS, true);
      if (problem) throw new UsageError(`--cluster-dns ${clusterDNS}: ${problem} (none, or a Service as namespace/name)`);
    }
    const blockSize = intFlag(values, 'block-size', 1, 128);
    const nodeMaskSize = nodeMaskSizes(values, podTarget);
    const maxUnavailableRaw = str(values, 'max-unavailable');
    let maxUnavailable: number | string | undefined;
    if (maxUnavailableRaw !== undefined) {
      try { maxUnavailable = parseMaxUnavailable(maxUnavailableRaw); } catch (e) { throw new UsageError(`--${(e as Error).message}`); }
    }
    const poolName = str(values, 'pool-name');
    if (poolName !== undefined && !isDnsSubdomain(poolName)) {
      throw new UsageError(`--pool-name ${JSON.stringify(poolName)} is not a valid Kubernetes object name (lower-case letters, digits, "-" and ".", at most 253, each part starting and ending alphanumeric)`);
    }
    const tierKey = str(values, 'tier-key');
    if (tierKey !== undefined && !isQualifiedName(tierKey)) {
      throw new UsageError(`--tier-key ${JSON.stringify(tierKey)} is not a valid label or annotation key ([PREFIX/]NAME: NAME at most 63 of letters, digits, "-", "_" and ".", starting and ending alphanumeric; PREFIX a DNS subdomain)`);
    }
    const output = parseOutput(str(values, 'output'), [...planCommand.outputs!, 'md']);
    const strategyRaw = str(values, 'strategy') ?? DEFAULT_STRATEGY;
    if (!(STRATEGIES as readonly string[]).includes(strategyRaw)) throw new UsageError(`--strategy ${strategyRaw} must be in-place or recreate`);
    const orderRaw = str(values, 'tier-order') ?? 'asc';
    const tierOrder = TIER_ORDERS[orderRaw];
    if (!tierOrder) throw new UsageError(`--tier-order ${orderRaw} must be asc or desc`);
    const keep = list(values, 'keep').flatMap((k) => splitList(k));
    for (const k of keep) {
      const problem = objectRefProblem(k, true);
      if (problem) throw new UsageError(`--keep ${k}: ${problem} (a Service as namespace/name)`);
    }
    const givenSans = list(values, 'apiserver-cert-san').flatMap((s) => splitList(s));
    for (const san of givenSans) {
      const problem = certSanProblem(san);
      if (problem) throw new UsageError(`--apiserver-cert-san ${san} ${problem}`);
    }
    const avoid = avoidList(values, io);
    const batchSize = intFlag(values, 'batch-size', 1, 10_000);
    const headroom = numberFlag(values, 'headroom', 1, MAX_HEADROOM);
    const snap = await loadSnapshot(values, io);
    for (const move of [...(target ? ['service' as const] : []), ...(podTarget ? ['pod' as const] : [])]) {
      const refused = platformRefusal(snap, move) ?? (move === 'pod' ? podOwnerRefusal(snap, ipam) : undefined);
      if (refused) throw new UsageError(refused);
    }
    if (podTarget) {
      const refused = podTargetRefusals(snap, { target: podTarget, serviceTarget: target, avoid });
      if (refused.length > 0) throw new UsageError(`--pod-cidr ${podTarget} refused: ${firstAndMore(refused, 4, '; ')}`);
    }
    let sans = givenSans;
    if (target && sans.length === 0 && readsLive(values)) {
      const read = await readServingCertSANs(values, io);
      if (read) sans = read;
    }
    const plan = buildMigrationPlan(snap, {
      generator: `kube-renumber ${VERSION}`,
      ...(podTarget ? {
        pod: {
          target: podTarget, avoid, critical,
          ...(ipam ? { ipam } : {}),
          ...(parallel !== undefined ? { parallel } : {}),
          ...(blockSize !== undefined ? { blockSize } : {}),
          ...(nodeMaskSize !== undefined ? { nodeMaskSize } : {}),
          ...(poolName ? { poolName } : {}),
          ...(str(values, 'node-hook') ? { nodeHook: str(values, 'node-hook') } : {}),
          ...(maxUnavailable !== undefined ? { maxUnavailable } : {}),
          ...(headroom !== undefined ? { headroom } : {}),
        },
      } : {}),
      service: target ? {
      target,
      keep,
      strategy: strategyRaw as Strategy,
      tierKey,
      tierOrder,
      batchSize,
      headroom,
      avoid,
      apiserverCertSANs: sans.length > 0 ? sans : undefined,
      certSANsGiven: givenSans.length > 0,
      critical,
      ...(parallel !== undefined ? { parallel } : {}),
      ...(restartRaw ? { restartWorkloads: restartRaw as RestartMode } : {}),
      ...(clusterDNS !== undefined ? { clusterDNS } : {}),
      ...(loadBalancers !== undefined ? { loadBalancers: loadBalancers as LoadBalancerMode } : {}),
      ...(nodePortCover !== undefined ? { nodePortCover } : {}),
      } : undefined,
    });
    const refused = refusals(plan.preflight);
    if (refused.length > 0) {
      const what = [target ? `--service-cidr ${target}` : '', podTarget ? `--pod-cidr ${podTarget}` : ''].filter(Boolean).join(' / ');
      throw new UsageError(`${what} refused: ${refused.map((c) => c.message).join('; ')}`);
    }
    // every format starts with the summary: what moves and restarts, the gates, the time, how far a rollback goes
    const summary = planSummary(plan, snap.pods, PLAN_FILE);
    if (output === 'yaml') io.out(planToYaml(plan, summary));
    else if (output === 'json') io.out(planToJson(plan, summary));
    else if ((output as string) === 'markdown' || (output as string) === 'md') io.out(planToMarkdown(plan, PLAN_FILE, summary));
    else if ((output as string) === 'html') io.out(renderPlanHtml(plan, inspect(snap, { avoid }), { avoid, generator: `kube-renumber ${VERSION}`, summary }));
    else io.out(renderPlanTable(plan, output === 'wide', summary));
    const failed = plan.preflight.filter((c) => c.status === 'fail');
    if (failed.length > 0) {
      io.err(`${failed.length} pre-flight check(s) failed (${failed.map((c) => c.id).join(', ')}): the plan is printed for review; fix them before apply\n`);
      return ExitCode.findings;
    }
    return ExitCode.ok;
  },
};

/** Flags of plan that an extension plan takes besides --extend-service-cidr (the rest belong to a move). */
const EXTENSION_FLAGS = new Set(['avoid', 'avoid-file', 'output']);

/**
 * plan --extend-service-cidr ADD (src/plan/extend.ts) or --extend-pod-cidr ADD (src/plan/extend-pod.ts, Calico IPAM;
 * any other owner of the pod addresses is refused with the reason): the plan that adds ADD and moves nothing.
 */
async function planExtension(values: Values, io: Io, add: string, flag: 'extend-service-cidr' | 'extend-pod-cidr'): Promise<number> {
  if (flag === 'extend-service-cidr') refuseUnparsable(() => parseTarget(add), `--extend-service-cidr ${add}`);
  const own = new Set(Object.keys(planCommand.options ?? {}));
  for (const [k, v] of Object.entries(values)) {
    if (v !== undefined && own.has(k) && k !== flag && !EXTENSION_FLAGS.has(k)) throw new UsageError(`--${k} does not go with --${flag} (an extension moves nothing; plan the move on its own)`);
  }
  const output = parseOutput(str(values, 'output'), ['markdown', 'md']);
  const avoid = avoidList(values, io);
  const snap = await loadSnapshot(values, io);
  if (flag === 'extend-pod-cidr' && podPathOf(snap) !== 'calico') throw new UsageError(podExtensionRefusal(snap, add));
  const generator = `kube-renumber ${VERSION}`;
  const plan = flag === 'extend-pod-cidr' ? buildPodExtensionPlan(snap, { add, avoid, generator }) : buildExtensionPlan(snap, { add, avoid, generator });
  const refused = refusals(plan.preflight);
  if (refused.length > 0) throw new UsageError(`--${flag} ${add} refused: ${refused.map((c) => c.message).join('; ')}`);
  if (output === 'yaml') io.out(planToYaml(plan));
  else if (output === 'json') io.out(planToJson(plan));
  else if ((output as string) === 'markdown' || (output as string) === 'md') io.out(planToMarkdown(plan));
  else io.out(renderPlanTable(plan, output === 'wide'));
  const failed = plan.preflight.filter((c) => c.status === 'fail');
  if (failed.length > 0) {
    io.err(`${failed.length} pre-flight check(s) failed (${failed.map((c) => c.id).join(', ')}): the plan is printed for review; fix them before apply\n`);
    return ExitCode.findings;
  }
  return ExitCode.ok;
}

/** The apiserver serving certificate's IP SANs, read over TLS from the kubeconfig server; undefined when not readable. */
export async function readServingCertSANs(values: Values, io: Io): Promise<string[] | undefined> {
  let url: URL;
  try {
    const kc = loadKubeConfig(connectOptions(values, io));
    url = new URL(kc.getCurrentCluster()!.server);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  const timeout = durationFlag(values, 'request-timeout') ?? 10_000;
  return await new Promise<string[] | undefined>((resolve) => {
    const isIP = /^[\d.]+$/.test(host) || host.includes(':');
    const sock = tlsConnect({ host, port, rejectUnauthorized: false, ...(isIP ? {} : { servername: host }) }, () => {
      const alt = sock.getPeerCertificate()?.subjectaltname ?? '';
      sock.end();
      const ips = splitList(alt).filter((s) => s.startsWith('IP Address:')).map((s) => s.slice('IP Address:'.length));
      if (values.verbose === true) io.err(`apiserver serving certificate at ${host}:${port}: IP SANs ${ips.join(', ') || 'none'}\n`);
      resolve(ips);
    });
    sock.setTimeout(timeout, () => { sock.destroy(); resolve(undefined); });
    sock.on('error', () => resolve(undefined));
  });
}

/** The name the plan's texts give the file plan -o yaml writes (the plan does not know where it is stored). */
const PLAN_FILE = 'PLAN.yaml';

/** The summary as a table's section (also what apply prints on stderr before its first change). */
export function summarySection(summary: PlanSummary): string {
  return section('SUMMARY', table(['what', 'value'], summaryLines(summary).map(([k, v]) => [k.toLowerCase(), v])));
}

export function renderPlanTable(plan: MigrationPlan, wide: boolean, summary?: PlanSummary): string {
  const sc = plan.spec.serviceCIDR;
  const c = mappingCounts(plan);
  const dns = plan.mapping.find((m) => m.isDNS);
  const kube = plan.mapping.find((m) => m.isKubernetes);
  const rows: Array<Array<string | number>> = [['kubernetes', `${plan.metadata.kubernetesVersion ?? 'unknown'} (${plan.metadata.distribution})`],
    ['bound to', plan.metadata.cluster ? `kube-system uid ${plan.metadata.cluster.uid}` : 'no cluster (offline): apply needs --accept-unbound-plan']];
  if (sc) rows.push(
    ['service range', `${sc.from.join(', ')} -> ${sc.target.join(', ')} (flag afterwards: ${sc.to.join(',') || '?'}, ${sc.apiVersion})`],
    ['strategy', plan.spec.strategy ?? '-'],
    ['services', `${c.move} move, ${c.keep} keep, ${c.skip} skip`],
    ['cluster DNS', dns ? `${dns.namespace}/${dns.name} ${dns.from.join(',')} -> ${dns.to.join(',')}` : 'not found'],
    ['default/kubernetes', kube ? `${kube.from.join(',')} -> ${kube.to.join(',')}` : 'not found'],
    ['kept ranges', sc.kept.join(', ') || '-'],
  );
  if (plan.spec.podCIDR) rows.push(...podSummaryRows(plan.spec.podCIDR).map(([k, v]) => [k.toLowerCase(), v]));
  if (plan.spec.serviceExtension) rows.push(...extensionRows(plan.spec.serviceExtension).map(([k, v]) => [k.toLowerCase(), v]));
  if (plan.spec.podExtension) rows.push(...podExtensionRows(plan.spec.podExtension).map(([k, v]) => [k.toLowerCase(), v]));
  let out = (summary ? summarySection(summary) : '') + section('PLAN', table(['field', 'value'], rows));
  out += section('PRE-FLIGHT', table(wide ? ['status', 'check', 'finding', 'fix'] : ['status', 'check', 'finding'],
    plan.preflight.map((p) => (wide ? [p.status.toUpperCase(), p.id, p.message, p.fix] : [p.status.toUpperCase(), p.id, p.message]))));
  const mrows = plan.mapping.filter((m) => wide || m.action !== 'skip');
  if (sc) out += section(`MAPPING${wide ? '' : ' (skipped Services: -o wide)'}`, table(['action', 'service', 'type', 'tier', 'from', 'to'],
    mrows.map((m) => [m.action, `${m.namespace}/${m.name}${m.isDNS ? ' (DNS)' : ''}`, m.type, m.tier === null ? '-' : String(m.tier), m.from.join(',') || '-', m.to.join(',') || '-'])));
  out += section('STEPS', plan.steps.length > 0
    ? table(['#', 'step', 'kind', 'what'], plan.steps.map((s, i) => [i + 1, s.id, s.kind, (s.items ? `${s.items.length} item(s): ` : '') + (wide || s.description.length <= 100 ? s.description : `${s.description.slice(0, 99)}…`)]))
    : 'none: the pre-flight checks stop the migration\n');
  out += referencesSection(plan.references ?? [], wide);
  return out.trimEnd() + '\n';
}

/**
 * REFERENCES: how many places name an old range, by severity, and each error (each warning too with -o wide):
 * object, field, value, proposed value. The notes are in -o markdown, yaml and html.
 */
export function referencesSection(refs: readonly Reference[], wide: boolean): string {
  if (refs.length === 0) return '';
  const errors = refs.filter((r) => r.severity === 'error').length;
  const shown = refs.filter((r) => wide || r.severity === 'error');
  const title = `REFERENCES: ${errors} error(s), ${refs.length - errors} warning(s)${wide || errors === refs.length ? '' : ' (warnings: -o wide)'}`;
  return section(title, shown.length > 0
    ? table(['severity', 'role', 'object', 'field', 'value', 'proposed'], shown.map((r) => [r.severity, r.role, `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`, r.field, r.value, r.proposed ?? '-']))
    : 'no errors\n');
}
