import { suggestFamilies, suggestPairFamilies, type PairSuggestion, type Suggestion } from '../../analyze/suggest.ts';
import { computeCapacity } from '../../analyze/capacity.ts';
import { findConflicts } from '../../analyze/conflicts.ts';
import type { Snapshot } from '../../cluster/types.ts';
import type { AvoidRange } from '../../analyze/catalog.ts';
import { suggestPodExtension, type PodExtensionSuggestion } from '../../plan/extend-pod.ts';
import { avoidList, intFlag, loadSnapshot, numberFlag, str } from '../common.ts';
import { ExitCode, UsageError } from '../errors.ts';
import type { Command, Io } from '../command.ts';

/** What --for takes (both, comma-separated: a pair), and --family. */
export const SUGGEST_FOR = ['pods', 'services'] as const;
export const FAMILIES = ['4', '6'] as const;
import { parseOutput, renderData, table } from '../output.ts';

/** "512 nodes of /24: kOps InstanceGroups maxSize (3 groups)"; with the need when the floor decided. */
export function sizedForText(x: Suggestion): string {
  const f = x.sizedFor;
  const unit = f.what === 'nodes' ? `node${f.count === 1 ? '' : 's'} of /${x.need.nodeMask}` : `Service IP${f.count === 1 ? '' : 's'}`;
  return `${f.count} ${unit}: ${f.from}${f.need ? `; need ${f.need.count}: ${f.need.from}` : ''}`;
}

export const suggestCommand: Command = {
  name: 'suggest',
  summary: 'suggest the smallest free range for pods or services, or the pair of both, that overlaps nothing known',
  usage: 'kube-renumber suggest --for pods|services|services,pods [--nodes N] [--node-mask N] [--services N] [--headroom X] [--min-prefix N] [--family 4|6]',
  options: {
    for: { type: 'string' },
    nodes: { type: 'string' },
    'node-mask': { type: 'string' },
    services: { type: 'string' },
    headroom: { type: 'string' },
    family: { type: 'string' },
    alternatives: { type: 'string' },
    'min-prefix': { type: 'string' },
  },
  help: `Flags:
  --for pods|services      what the range is for (required)
  --for services,pods      both ranges, chosen together: disjoint, each sized as alone, inside one aligned
                           range (the envelope) that overlaps nothing below; on kOps the envelope is the new
                           nonMasqueradeCIDR (clear of networkCIDR), elsewhere the one range a firewall rule,
                           route or mesh setting names. Give the pair to one plan: plan --service-cidr --pod-cidr
  --nodes N                pods: nodes to plan for, times --headroom (default: the most nodes the cluster may
                           reach where it says so: kOps InstanceGroups maxSize, cluster-autoscaler --nodes or its status
                           ConfigMap, Cluster API max-size annotations, Karpenter NodePool limits.nodes;
                           else the cluster's node count times --headroom)
  --node-mask N            pods: each node's block prefix (default: the cluster's, else 24 / 64; dual-stack: with --family)
  --services N             services: Services to plan for (default: those with a ClusterIP today)
  --headroom X             multiply the count by X, 1 to 1000 (default 2: room to double)
  --family 4|6             address family (default: the cluster's; dual-stack: both, one suggestion each)
  --alternatives N         further candidates to list (default 3)
  --min-prefix N           the floor: never a range smaller than /N (default: services IPv4 /20, IPv6 /112;
                           pods 256 nodes at the node mask, a /16 of /24s); 32 (IPv4) or 128 (IPv6) turns it off

Search order: 10.0.0.0/8, then 172.16.0.0/12, then 192.168.0.0/16 (IPv6: fd00::/8); in each, the lowest
aligned block that overlaps no cluster range (current ones included), live address (ClusterIP, pod IP,
node address), catalog entry or --avoid range wins. Each suggestion says what it was sized for (SIZED FOR;
-o json: sizedFor). -o wide lists the rejected candidates and why.`,
  async run({ values, io }) {
    const raw = str(values, 'for');
    const words = (raw ?? '').split(',').map((w) => w.trim()).sort().join(',');
    const what = words === [...SUGGEST_FOR].sort().join(',') ? 'pair' : raw;
    if (what !== 'pods' && what !== 'services' && what !== 'pair') throw new UsageError('--for must be "pods", "services" or "services,pods"');
    const output = parseOutput(str(values, 'output'));
    const famRaw = str(values, 'family');
    if (famRaw !== undefined && !(FAMILIES as readonly string[]).includes(famRaw)) throw new UsageError(`--family ${famRaw} must be 4 or 6`);
    const avoid = avoidList(values, io);
    const opts = {
      family: famRaw ? (Number(famRaw) as 4 | 6) : undefined,
      nodes: intFlag(values, 'nodes', 1, 1_000_000),
      nodeMask: intFlag(values, 'node-mask', 1, 128),
      services: intFlag(values, 'services', 0, 100_000_000),
      headroom: numberFlag(values, 'headroom', 1, 1000),
      alternatives: intFlag(values, 'alternatives', 0, 100),
      minPrefix: intFlag(values, 'min-prefix', 1, 128),
      avoid,
    } as const;
    const snap = await loadSnapshot(values, io);
    if (what === 'pair') return printPairs(suggestPairFamilies(snap, opts), output, io);
    // Dual-stack without --family: one suggestion per family, the primary first.
    const all = suggestFamilies(snap, { ...opts, for: what });
    const s = all[0]!;
    const allFound = all.every((x) => x.cidr);
    // a Calico pool that only ran out (no free block, no conflict): the range next to it an extension plan takes
    const extension = what === 'pods' ? poolExtensions(snap, avoid) : [];
    if (output === 'json' || output === 'yaml') {
      // The primary family's suggestion as before, and `families`: one per family suggested.
      io.out(renderData({ ...s, families: all, ...(extension.length > 0 ? { extension } : {}) }, output));
      return allFound ? ExitCode.ok : ExitCode.findings;
    }
    const found = all.filter((x) => x.cidr);
    const multi = all.length > 1;
    if (found.length > 0) {
      io.out(multi
        ? table(['for', 'family', 'cidr', 'sized for', 'alternatives'], found.map((x) => [x.for, `IPv${x.family}`, x.cidr!, sizedForText(x), x.alternatives.join(', ') || '-']))
        : table(['for', 'cidr', 'sized for', 'alternatives'], found.map((x) => [x.for, x.cidr!, sizedForText(x), x.alternatives.join(', ') || '-'])));
      if (output === 'wide') {
        for (const x of found) {
          io.out(`\nREJECTED CANDIDATES${multi ? ` (IPv${x.family})` : ''} (searched ${x.searched.join(', ')})\n`);
          io.out(table(['from', 'to', 'count', 'overlaps', 'reason'], x.rejected.map((r) => [r.from, r.to, r.count, r.by, r.reason])));
        }
      }
    }
    for (const e of extension) io.out(`\n${extensionText(e)}\n`);
    if (!allFound) {
      const missing = all.filter((x) => !x.cidr);
      io.err(`error: ${missing.map((x) => `no free /${x.prefix} in ${x.searched.join(', ')} avoids every known range`).join('; ')}\n`);
      return ExitCode.findings;
    }
    return ExitCode.ok;
  },
};

/** `suggest --for services,pods`: each family's pair and envelope, as a table (-o wide: the rejected envelopes) or data. */
function printPairs(all: PairSuggestion[], output: ReturnType<typeof parseOutput>, io: Io): number {
  const allFound = all.every((x) => x.envelope);
  if (output === 'json' || output === 'yaml') {
    // The primary family's pair as the top level, and `families`: one pair per family.
    io.out(renderData({ for: 'services,pods', ...all[0]!, families: all }, output));
    return allFound ? ExitCode.ok : ExitCode.findings;
  }
  const found = all.filter((x) => x.envelope);
  const multi = all.length > 1;
  if (found.length > 0) {
    const rows = found.flatMap((x) => [
      [...(multi ? [`IPv${x.family}`] : []), 'services', x.services.cidr!, sizedForText(x.services)],
      [...(multi ? [`IPv${x.family}`] : []), 'pods', x.pods.cidr!, sizedForText(x.pods)],
      [...(multi ? [`IPv${x.family}`] : []), 'envelope', x.envelope!,
        `holds both${x.envelopeIs ? ` (the new ${x.envelopeIs})` : ''}; alternatives: ${x.alternatives.join(', ') || '-'}`],
    ]);
    io.out(table([...(multi ? ['family'] : []), 'for', 'cidr', 'sized for'], rows));
    io.err(`plan both in one: kube-renumber plan --service-cidr ${found.map((x) => x.services.cidr).join(',')} --pod-cidr ${found.map((x) => x.pods.cidr).join(',')}\n`);
    if (output === 'wide') {
      for (const x of found) {
        io.out(`\nREJECTED ENVELOPES${multi ? ` (IPv${x.family})` : ''} (searched ${x.searched.join(', ')})\n`);
        io.out(table(['from', 'to', 'count', 'overlaps', 'reason'], x.rejected.map((r) => [r.from, r.to, r.count, r.by, r.reason])));
      }
    }
  }
  if (!allFound) {
    io.err(`error: ${all.filter((x) => !x.envelope).map((x) => `no free /${x.prefix} in ${x.searched.join(', ')} avoids every known range (an envelope holding a /${x.services.prefix} service range and a /${x.pods.prefix} pod range)`).join('; ')}\n`);
    return ExitCode.findings;
  }
  return ExitCode.ok;
}

/** The enabled Calico pools with every block taken and no conflict naming them, and the range next to each (src/plan/extend-pod.ts). */
function poolExtensions(snap: Snapshot, avoid: readonly AvoidRange[]): PodExtensionSuggestion[] {
  const conflicts = findConflicts(snap, { avoid });
  const named = (cidr: string) => conflicts.some((c) => c.severity !== 'info' && (c.a.cidr === cidr || c.b.cidr === cidr));
  const exhausted = new Set(computeCapacity(snap).pools
    .filter((p) => !p.disabled && Number.isFinite(Number(p.blocksTotal)) && p.blocksUsed >= Number(p.blocksTotal) && !named(p.cidr)).map((p) => p.name));
  return exhausted.size > 0 ? suggestPodExtension(snap, { avoid, exhausted }) : [];
}

/** One line per pool that ran out: the extension to plan instead of the move, or why none next to it is possible. */
export function extensionText(e: PodExtensionSuggestion): string {
  const head = `extend instead: the Calico pool ${e.pool} ${e.poolCidr} has no free block and conflicts with nothing`;
  return e.cidr
    ? `${head}; ${e.cidr} next to it can be added without moving anything${e.kubeProxy ? ` (kube-proxy's clusterCIDR becomes ${e.kubeProxy})` : ''}: kube-renumber plan --extend-pod-cidr ${e.cidr}`
    : `${head}, but no range next to it can be added${e.refused ? ` (${e.refused})` : ''}: move it with the range above, or see plan --extend-pod-cidr's refusal for what would allow one`;
}
