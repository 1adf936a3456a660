import { suggest } from '../../analyze/suggest.ts';
import { avoidList, intFlag, loadSnapshot, numberFlag, str } from '../common.ts';
import { ExitCode, UsageError } from '../errors.ts';
import type { Command } from '../command.ts';
import { parseOutput, renderData, table } from '../output.ts';

export const suggestCommand: Command = {
  name: 'suggest',
  summary: 'suggest the smallest free range for pods or services that overlaps nothing known',
  usage: 'kube-renumber suggest --for pods|services [--nodes N] [--node-mask N] [--services N] [--headroom X] [--family 4|6]',
  options: {
    for: { type: 'string' },
    nodes: { type: 'string' },
    'node-mask': { type: 'string' },
    services: { type: 'string' },
    headroom: { type: 'string' },
    family: { type: 'string' },
    alternatives: { type: 'string' },
  },
  help: `Flags:
  --for pods|services      what the range is for (required)
  --nodes N                pods: nodes to plan for (default: the cluster's node count)
  --node-mask N            pods: each node's block prefix (default: the cluster's, else 24 / 64)
  --services N             services: Services to plan for (default: those with a ClusterIP today)
  --headroom X             multiply the count by X, 1 to 1000 (default 2: room to double)
  --family 4|6             address family (default: the cluster's)
  --alternatives N         further candidates to list (default 3)

Search order: 10.0.0.0/8, then 172.16.0.0/12, then 192.168.0.0/16 (IPv6: fd00::/8); in each, the lowest
aligned block that overlaps no cluster range (current ones included), live address (ClusterIP, pod IP,
node address), catalog entry or --avoid range wins. -o wide lists the rejected candidates and why.`,
  async run({ values, io }) {
    const what = str(values, 'for');
    if (what !== 'pods' && what !== 'services') throw new UsageError('--for must be "pods" or "services"');
    const output = parseOutput(str(values, 'output'));
    const famRaw = str(values, 'family');
    if (famRaw !== undefined && famRaw !== '4' && famRaw !== '6') throw new UsageError(`--family ${famRaw} must be 4 or 6`);
    const avoid = avoidList(values, io);
    const opts = {
      for: what,
      family: famRaw ? (Number(famRaw) as 4 | 6) : undefined,
      nodes: intFlag(values, 'nodes', 1, 1_000_000),
      nodeMask: intFlag(values, 'node-mask', 1, 128),
      services: intFlag(values, 'services', 0, 100_000_000),
      headroom: numberFlag(values, 'headroom', 1, 1000),
      alternatives: intFlag(values, 'alternatives', 0, 100),
      avoid,
    } as const;
    const snap = await loadSnapshot(values, io);
    const s = suggest(snap, opts);
    if (output === 'json' || output === 'yaml') {
      io.out(renderData(s, output));
      return s.cidr ? ExitCode.ok : ExitCode.findings;
    }
    if (!s.cidr) {
      io.err(`error: no free /${s.prefix} in ${s.searched.join(', ')} avoids every known range\n`);
      return ExitCode.findings;
    }
    const needText = s.for === 'pods'
      ? `${s.need.count} nodes (${s.need.nodes} x headroom ${s.need.headroom}) with /${s.need.nodeMask} each`
      : `${s.need.count} Service IPs (${s.need.services} x headroom ${s.need.headroom})`;
    io.out(table(['for', 'cidr', 'need', 'alternatives'], [[s.for, s.cidr, needText, s.alternatives.join(', ') || '-']]));
    if (output === 'wide') {
      io.out(`\nREJECTED CANDIDATES (searched ${s.searched.join(', ')})\n`);
      io.out(table(['from', 'to', 'count', 'overlaps', 'reason'], s.rejected.map((r) => [r.from, r.to, r.count, r.by, r.reason])));
    }
    return ExitCode.ok;
  },
};
