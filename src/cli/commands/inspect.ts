import { ownerCapabilityOf } from '../../ipam/registry.ts';
import { SEVERITIES, type Severity } from '../../analyze/catalog.ts';
import { inspect, type InspectReport } from '../../analyze/inspect.ts';
import { avoidList, loadSnapshot, str } from '../common.ts';
import { ExitCode, UsageError } from '../errors.ts';
import type { Command } from '../command.ts';
import { markdownTable, parseOutput, renderData, section as textSection, table as textTable } from '../output.ts';
import { renderInspectHtml } from '../../render/html.ts';
import { VERSION } from '../version.ts';


export const inspectCommand: Command = {
  name: 'inspect',
  summary: "show the cluster's ranges, every conflict, capacity and migration readiness (changes nothing)",
  usage: 'kube-renumber inspect [--from-file PATH ...] [--avoid CIDR[=REASON] ...] [--exit-code [--fail-on SEVERITY]] [-o table|wide|json|yaml|markdown|html]',
  outputs: ['markdown', 'html'],
  options: {
    'exit-code': { type: 'boolean' },
    'fail-on': { type: 'string' },
  },
  help: `Flags:
  --exit-code              exit 1 when conflicts of --fail-on severity or worse exist (like kubectl diff)
  --fail-on SEVERITY       error | warning | info (default warning)
Output: -o html writes one self-contained HTML page (address map, conflicts, capacity) to stdout.`,
  async run({ values, io }) {
    const output = parseOutput(str(values, 'output'), [...inspectCommand.outputs!, 'md']) as string;
    const failOn = (str(values, 'fail-on') ?? 'warning') as Severity;
    if (!SEVERITIES.includes(failOn)) throw new UsageError(`--fail-on ${failOn} must be one of ${SEVERITIES.join(', ')}`);
    const avoid = avoidList(values, io);
    const snap = await loadSnapshot(values, io);
    const report = inspect(snap, { avoid });
    if (output === 'json' || output === 'yaml') io.out(renderData(report, output));
    else if (output === 'html') io.out(renderInspectHtml(report, { avoid, generator: `kube-renumber ${VERSION}` }));
    else if (output === 'markdown' || output === 'md') io.out(renderInspect(report, true, 'markdown'));
    else io.out(renderInspect(report, output === 'wide'));
    if (values['exit-code'] === true) {
      const limit = SEVERITIES.indexOf(failOn);
      const failing = report.conflicts.filter((c) => SEVERITIES.indexOf(c.severity) <= limit);
      if (failing.length > 0) {
        io.err(`${failing.length} conflict(s) at severity ${failOn} or worse\n`);
        return ExitCode.findings;
      }
    }
    return ExitCode.ok;
  },
};

function sourceText(r: InspectReport['source']): string {
  return r.kind === 'live' ? `live: ${r.server ?? ''}${r.context ? ` (context ${r.context})` : ''}${r.files?.length ? `; configs from ${r.files.join(', ')}` : ''}` : `files: ${r.files.join(', ')}`;
}

/** " (no Pod CIDR move here)" when the owner of the pod addresses refuses one. */
function ownerNote(kind: string): string {
  return ownerCapabilityOf(kind).supported ? '' : ' (kube-renumber cannot move the Pod CIDR here: see plan --pod-cidr)';
}

/**
 * The report as text tables (kubectl style) or, for a change request or a wiki page, as Markdown: the same
 * sections and rows either way.
 */
export function renderInspect(r: InspectReport, wide: boolean, format: 'text' | 'markdown' = 'text'): string {
  const md = format === 'markdown';
  let out = md ? `# Address plan: ${sourceText(r.source).replace(/\|/g, '\\|')}\n\n` : '';
  const section = (title: string, body: string) => (md ? `## ${title[0]}${title.slice(1).toLowerCase()}\n\n${body}\n` : textSection(title, body));
  const table = (headers: string[], rows: Array<Array<string | number | undefined>>) => (md ? markdownTable(headers.map((h) => h || ' '), rows) : textTable(headers, rows));
  const api = r.serviceCIDRApi ? `ServiceCIDR API ${r.serviceCIDRApi}` : r.serviceCIDRApi === null ? 'no ServiceCIDR API' : 'ServiceCIDR API unknown';
  out += section('CLUSTER', table(['field', 'value'], [
    ['source', sourceText(r.source)],
    ['kubernetes', `${r.kubernetesVersion ?? 'unknown'} (${api})`],
    ['platform', `${r.platform.title}${wide ? ` (${r.platform.evidence.join('; ')})` : ''}`],
    ['cni / ipam', `${r.cni.plugin} / ${r.cni.ipam}${r.cni.operatorManaged ? ' (operator-managed)' : ''}${wide && r.cni.evidence.length ? ` (${r.cni.evidence.join('; ')})` : ''}`],
    ['pod addresses from', r.cni.owner ? `${r.cni.owner.title}${ownerNote(r.cni.owner.kind)}` : 'unknown'],
    ...(r.platform.reserved.length ? [['reserved by platform', r.platform.reserved.map((x) => wide ? `${x.cidr} (${x.reason})` : x.cidr).join(', ')]] : []),
    ['kubernetes service', r.kubernetesServiceIPs.join(', ') || '-'],
    ['cluster DNS', r.dnsService ? `${r.dnsService.namespace}/${r.dnsService.name} ${r.dnsService.clusterIPs.join(',')} (by ${r.dnsService.foundBy})` : 'not found'],
  ]));

  const rows: string[][] = [];
  const add = (role: string, entries: Array<{ cidr: string; sources: string[]; labels: string[] }>) => {
    for (const e of entries) rows.push([role, e.cidr, wide ? e.sources.join(', ') : e.labels.join(', ')]);
  };
  add('service', r.serviceCIDRs);
  add('pod', r.podCIDRs);
  for (const p of r.pools) {
    rows.push(['pool', p.cidr, `${p.name} blockSize ${p.blockSize}${p.disabled ? ' DISABLED' : ''}${p.nodeSelector && wide ? ` nodeSelector ${p.nodeSelector}` : ''}`]);
  }
  add('masquerade', r.masqueradeCIDRs);
  add('node', r.nodeCIDRs);
  out += section('RANGES', rows.length ? table(['role', 'cidr', wide ? 'sources' : 'what'], rows) : 'none found\n');

  const counts = SEVERITIES.map((s) => {
    const n = r.conflicts.filter((c) => c.severity === s).length;
    return `${n} ${s === 'info' || n === 1 ? s : `${s}s`}`;
  }).join(', ');
  out += section(`CONFLICTS (${counts})`, r.conflicts.length
    ? table(wide ? ['severity', 'range', 'is', 'overlaps', 'which is', 'why'] : ['severity', 'range', 'overlaps', 'why'],
      r.conflicts.map((c) => wide
        ? [c.severity, c.a.cidr, c.a.what, c.b.cidr, c.b.what, c.reason]
        : [c.severity, c.a.cidr, `${c.b.cidr} (${c.b.what.replace(/ \(.*$/, '')})`, c.reason]))
    : 'none\n');

  const cap = r.capacity;
  const capRows: string[][] = [];
  for (const n of cap.nodeIpam) {
    capRows.push(['nodes', `${n.clusterCIDR} with /${n.nodeMask} per node: max ${n.maxNodes} nodes, ${n.nodesWithPodCIDR} allocated, ${n.nodesLeft} left, ${n.nodesWaiting} waiting without a podCIDR`]);
    capRows.push(['pods per node', `${n.usablePerNode} usable addresses per /${n.nodeMask} (kubelet maxPods also applies)`]);
  }
  capRows.push(['node count', `${cap.nodes.total} (${cap.nodes.withPodCIDR} with a podCIDR, ${cap.nodes.withoutPodCIDR} without${cap.nodes.waiting.length ? `: ${cap.nodes.waiting.slice(0, wide ? 20 : 5).join(', ')}${cap.nodes.withoutPodCIDR > (wide ? 20 : 5) ? ', ...' : ''}` : ''})`]);
  for (const l of cap.nodeLimits?.sources ?? []) {
    const groups = l.groups.slice(0, wide ? 20 : 5).map((g) => `${g.name} ${g.max}`).join(', ') + (l.groups.length > (wide ? 20 : 5) ? ', ...' : '');
    capRows.push(['nodes may reach', `${l.max}: ${l.what} (${groups})`]);
  }
  for (const n of cap.nodeLimits?.notes ?? []) capRows.push(['nodes may reach', n]);
  for (const s of cap.serviceRanges) capRows.push(['service IPs', `${s.cidr}: ${s.used} used, ${s.free} free of ${s.usable}`]);
  for (const p of cap.podRanges) capRows.push([`pod IPs (${p.role})`, `${p.cidr}: ${p.podIPs} in use`]);
  for (const p of cap.pools) {
    capRows.push(['calico blocks', `${p.name} ${p.cidr}: ${p.blocksUsed} of ${p.blocksTotal} /${p.blockSize} blocks on ${p.nodesWithBlocks} nodes (max ${p.maxBlocksOnANode} on one node)`]);
  }
  capRows.push(['pods', `${cap.pods.total} (${cap.pods.hostNetwork} hostNetwork, ${cap.pods.podRangeKnown
    ? `${cap.pods.outsideKnownRanges} IPs outside known pod ranges`
    : 'pod range unknown: no cluster CIDR, Calico pool or node podCIDR seen'})`]);
  capRows.push(['services', `${cap.services.total} (${cap.services.withClusterIP} with a ClusterIP, ${cap.services.headless} headless, ${cap.services.externalName} ExternalName, ${cap.services.loadBalancer} LoadBalancer, ${cap.services.nodePort} NodePort)`]);
  out += section('CAPACITY', table(['what', 'value'], capRows));

  const mark = (ok: boolean | null) => (ok === true ? 'ok' : ok === false ? 'NO' : '?');
  out += section('READINESS', table(['', 'fact'], r.readiness.map((f) => [mark(f.ok), f.summary])));
  if (r.recommendations?.length) out += section('RECOMMENDED', `${r.recommendations.join('\n')}\n`);
  return out.trimEnd() + '\n';
}
