/**
 * The plan as text: YAML (the file `apply` reads), back from YAML with validation, and Markdown for a
 * change request. Pure.
 */
import * as yaml from 'js-yaml';
import { InputError } from '../cluster/files.ts';
import type { PodCIDRSpec } from './pod-plan.ts';
import { renderReferences } from '../analyze/references.ts';
import { mappingCounts, PLAN_API_VERSION, PLAN_KIND, STEP_KINDS, type MigrationPlan, type PlanStep } from './plan.ts';
import type { ServiceMapping } from './service-mapping.ts';

/** A plan file that cannot be used; the message names the field. Exit code 3 like any unreadable input. */
export class PlanFormatError extends InputError {
  constructor(message: string) {
    super(message);
    this.name = 'PlanFormatError';
  }
}

/** Drops undefined values (so YAML has no nulls for absent fields). */
function clean<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export function planToYaml(plan: MigrationPlan): string {
  return yaml.dump(clean(plan), { noRefs: true, lineWidth: -1, sortKeys: false });
}

export function planToJson(plan: MigrationPlan): string {
  return `${JSON.stringify(clean(plan), null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------------
// Validation

type Obj = Record<string, unknown>;

function fail(path: string, why: string): never {
  throw new PlanFormatError(`invalid plan: ${path}: ${why}`);
}
function obj(v: unknown, path: string): Obj {
  if (!v || typeof v !== 'object' || Array.isArray(v)) fail(path, 'must be a mapping');
  return v as Obj;
}
function str(o: Obj, k: string, path: string, optional = false): string | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string') fail(`${path}.${k}`, v === undefined ? 'missing' : 'must be a string');
  return v;
}
function strList(o: Obj, k: string, path: string, optional = false): string[] | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (!Array.isArray(v)) fail(`${path}.${k}`, v === undefined ? 'missing' : 'must be a list');
  v.forEach((x, i) => { if (typeof x !== 'string') fail(`${path}.${k}[${i}]`, 'must be a string'); });
  return v as string[];
}
function bool(o: Obj, k: string, path: string): boolean {
  if (typeof o[k] !== 'boolean') fail(`${path}.${k}`, o[k] === undefined ? 'missing' : 'must be true or false');
  return o[k] as boolean;
}
function list(o: Obj, k: string, path: string, optional = false): unknown[] | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (!Array.isArray(v)) fail(`${path}.${k}`, v === undefined ? 'missing' : 'must be a list');
  return v;
}
function oneOf<T extends string>(o: Obj, k: string, path: string, allowed: readonly T[], optional = false): T | undefined {
  const v = o[k];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v as T)) fail(`${path}.${k}`, `must be one of ${allowed.join(', ')}${v === undefined ? ' (missing)' : ` (got ${JSON.stringify(v)})`}`);
  return v as T;
}

function checkMapping(v: unknown, path: string): void {
  const m = obj(v, path);
  str(m, 'namespace', path);
  str(m, 'name', path);
  oneOf(m, 'type', path, ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const);
  oneOf(m, 'action', path, ['move', 'keep', 'skip'] as const);
  str(m, 'reason', path);
  strList(m, 'from', path);
  strList(m, 'to', path);
  const t = m.tier;
  if (!(t === null || typeof t === 'number' || typeof t === 'string')) fail(`${path}.tier`, 'must be a number, a string or null');
  bool(m, 'isDNS', path);
  bool(m, 'isKubernetes', path);
}

function checkStep(v: unknown, path: string): void {
  const s = obj(v, path);
  str(s, 'id', path);
  oneOf(s, 'kind', path, STEP_KINDS);
  str(s, 'description', path);
  str(s, 'rollback', path);
  if (s.gate !== undefined) {
    const g = obj(s.gate, `${path}.gate`);
    str(g, 'reason', `${path}.gate`);
    strList(g, 'instructions', `${path}.gate`);
    str(g, 'check', `${path}.gate`);
    (list(g, 'patches', `${path}.gate`, true) ?? []).forEach((p, i) => {
      const pp = `${path}.gate.patches[${i}]`;
      const o = obj(p, pp);
      for (const k of ['id', 'distribution', 'gate', 'target', 'description', 'before', 'after']) str(o, k, pp);
    });
  }
  if ((s.kind === 'gate' || s.kind === 'confirm') && s.gate === undefined) fail(`${path}.gate`, `missing (a ${s.kind} step needs one)`);
  (list(s, 'items', path, true) ?? []).forEach((it, i) => {
    const ip = `${path}.items[${i}]`;
    const o = obj(it, ip);
    str(o, 'namespace', ip);
    str(o, 'name', ip);
    strList(o, 'from', ip);
    strList(o, 'to', ip);
    str(o, 'bridge', ip, true);
  });
  (list(s, 'serviceCIDRs', path, true) ?? []).forEach((sc, i) => {
    const sp = `${path}.serviceCIDRs[${i}]`;
    const o = obj(sc, sp);
    str(o, 'name', sp);
    strList(o, 'cidrs', sp);
    oneOf(o, 'purpose', sp, ['target', 'keep', 'bridge', 'old'] as const);
  });
}

/** Validates a parsed plan document; returns it typed. PlanFormatError names the first bad field. */
export function validatePlan(doc: unknown): MigrationPlan {
  const p = obj(doc, 'plan');
  if (p.apiVersion !== PLAN_API_VERSION) fail('apiVersion', `is ${JSON.stringify(p.apiVersion)}, expected ${PLAN_API_VERSION} (a plan written by kube-renumber plan -o yaml)`);
  if (p.kind !== PLAN_KIND) fail('kind', `is ${JSON.stringify(p.kind)}, expected ${PLAN_KIND}`);
  const md = obj(p.metadata, 'metadata');
  str(md, 'generatedFrom', 'metadata');
  str(md, 'kubernetesVersion', 'metadata', true);
  str(md, 'distribution', 'metadata');
  const spec = obj(p.spec, 'spec');
  if (spec.serviceCIDR === undefined && spec.podCIDR === undefined) fail('spec', 'names neither serviceCIDR nor podCIDR: nothing to migrate');
  if (spec.serviceCIDR !== undefined) {
    const sc = obj(spec.serviceCIDR, 'spec.serviceCIDR');
    for (const k of ['from', 'to', 'target', 'kept']) strList(sc, k, 'spec.serviceCIDR');
    str(sc, 'apiVersion', 'spec.serviceCIDR');
    const mk = obj(sc.minKeptPrefix, 'spec.serviceCIDR.minKeptPrefix');
    for (const k of ['ipv4', 'ipv6']) if (!Number.isInteger(mk[k])) fail(`spec.serviceCIDR.minKeptPrefix.${k}`, 'must be a whole number');
    oneOf(spec, 'strategy', 'spec', ['in-place', 'recreate'] as const);
    const o = obj(spec.options, 'spec.options');
    if (!Number.isInteger(o.batchSize) || (o.batchSize as number) < 1) fail('spec.options.batchSize', 'must be a whole number >= 1');
    if (typeof o.headroom !== 'number' || o.headroom < 1) fail('spec.options.headroom', 'must be a number >= 1');
    str(o, 'tierKey', 'spec.options');
    oneOf(o, 'tierOrder', 'spec.options', ['ascending', 'descending'] as const);
    strList(o, 'keep', 'spec.options');
  }
  if (spec.podCIDR !== undefined) {
    const pc = obj(spec.podCIDR, 'spec.podCIDR');
    strList(pc, 'from', 'spec.podCIDR');
    strList(pc, 'to', 'spec.podCIDR');
    oneOf(pc, 'ipam', 'spec.podCIDR', ['calico', 'node'] as const);
    const r = obj(pc.restarts, 'spec.podCIDR.restarts');
    if (!Number.isInteger(r.parallel) || (r.parallel as number) < 1) fail('spec.podCIDR.restarts.parallel', 'must be a whole number >= 1');
    strList(r, 'critical', 'spec.podCIDR.restarts');
    if (pc.ipam === 'calico') {
      const c = obj(pc.calico, 'spec.podCIDR.calico');
      for (const k of ['oldPools', 'newPools'] as const) {
        list(c, k, 'spec.podCIDR.calico')!.forEach((p, i) => {
          const pp = `spec.podCIDR.calico.${k}[${i}]`;
          const po = obj(p, pp);
          str(po, 'name', pp);
          str(po, 'cidr', pp);
          if (!Number.isInteger(po.blockSize)) fail(`${pp}.blockSize`, 'must be a whole number');
        });
      }
    } else {
      const n = obj(pc.node, 'spec.podCIDR.node');
      if (!Number.isInteger(n.maskSize)) fail('spec.podCIDR.node.maskSize', 'must be a whole number');
      str(n, 'hook', 'spec.podCIDR.node', true);
      list(n, 'nodes', 'spec.podCIDR.node')!.forEach((x, i) => {
        const np = `spec.podCIDR.node.nodes[${i}]`;
        const no = obj(x, np);
        str(no, 'name', np);
        strList(no, 'from', np);
        strList(no, 'to', np);
      });
    }
  }
  list(p, 'preflight', 'plan')!.forEach((c, i) => {
    const cp = `preflight[${i}]`;
    const co = obj(c, cp);
    str(co, 'id', cp);
    oneOf(co, 'status', cp, ['pass', 'warn', 'fail'] as const);
    str(co, 'message', cp);
    str(co, 'fix', cp);
  });
  list(p, 'mapping', 'plan')!.forEach((m, i) => checkMapping(m, `mapping[${i}]`));
  const ids = new Set<string>();
  list(p, 'steps', 'plan')!.forEach((s, i) => {
    checkStep(s, `steps[${i}]`);
    const id = (s as Obj).id as string;
    if (ids.has(id)) fail(`steps[${i}].id`, `"${id}" is used twice`);
    ids.add(id);
  });
  return p as unknown as MigrationPlan;
}

/** Reads a plan written by planToYaml (or planToJson: JSON is YAML). */
export function planFromYaml(text: string): MigrationPlan {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    const err = e as { reason?: string; mark?: { line?: number }; message?: string };
    const line = err.mark?.line !== undefined ? ` at line ${err.mark.line + 1}` : '';
    throw new PlanFormatError(`invalid plan: not YAML${line}: ${err.reason ?? err.message ?? String(e)}`);
  }
  if (doc === undefined || doc === null) throw new PlanFormatError('invalid plan: the file is empty');
  return validatePlan(doc);
}

// ---------------------------------------------------------------------------------------------------
// Markdown

function cell(s: string | number | null | undefined): string {
  return String(s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function mdTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  return [
    `| ${headers.join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n') + '\n';
}

const STATUS: Record<string, string> = { pass: 'PASS', warn: 'WARN', fail: 'FAIL' };

function tierText(t: ServiceMapping['tier']): string {
  return t === null ? '-' : String(t);
}

function ips(a: string[]): string {
  return a.length > 0 ? a.join(', ') : '-';
}

function stepMarkdown(s: PlanStep, n: number): string {
  let out = `### ${n}. \`${s.id}\` (${s.kind})\n\n${s.description}\n\n`;
  for (const sc of s.serviceCIDRs ?? []) out += `- ServiceCIDR \`${sc.name}\`: ${sc.cidrs.join(', ')} (${sc.purpose})\n`;
  if ((s.serviceCIDRs ?? []).length > 0) out += '\n';
  if ((s.items ?? []).length > 0) {
    out += mdTable(['Namespace', 'Name', 'From', 'To', 'Bridge'], s.items!.map((i) => [i.namespace, i.name, ips(i.from), ips(i.to), i.bridge ?? '-']));
    out += '\n';
  }
  if (s.gate) {
    out += s.kind === 'confirm' ? `**Confirm** (apply --yes skips it): ${s.gate.reason}\n\n` : `**Gate**: ${s.gate.reason}\n\n`;
    if (s.kind !== 'confirm') {
      out += s.gate.instructions.map((x, i) => `${i + 1}. \`${x.replace(/`/g, "'")}\``).join('\n') + '\n\n';
      out += `Resume checks: ${s.gate.check}\n\n`;
    }
    for (const p of s.gate.patches ?? []) {
      out += `**Patch \`${p.id}\`** (${p.distribution}) — ${p.target}: ${p.description}\n\nBefore:\n\n\`\`\`yaml\n${p.before.trimEnd()}\n\`\`\`\n\nAfter:\n\n\`\`\`yaml\n${p.after.trimEnd()}\n\`\`\`\n\n`;
    }
  }
  out += `Rollback: ${s.rollback}\n\n`;
  return out;
}

/** The plan for a change request: summary, pre-flight, mapping, steps with gates, rollback notes. */
/** Summary rows of a Pod CIDR section. */
export function podSummaryRows(pc: PodCIDRSpec): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['Pod range', `${pc.from.join(', ')} → ${pc.to.join(', ')}`],
    ['Pod IPAM', pc.ipam === 'calico' ? `Calico IPAM${pc.calico?.operatorManaged ? ' (operator-managed: through Installation)' : ''}` : 'node podCIDRs (nodes drained and re-registered)'],
    ['Restarts', `${pc.restarts.parallel} rollout(s) at a time; scaled up first: ${pc.restarts.critical.join(', ') || 'none'}`],
  ];
  if (pc.calico) rows.push(['Pools', `${pc.calico.oldPools.map((p) => `${p.name} ${p.cidr}`).join(', ')} → ${pc.calico.newPools.map((p) => `${p.name} ${p.cidr} /${p.blockSize} blocks`).join(', ')}`]);
  if (pc.node) rows.push(['Nodes', `${pc.node.nodes.length} node(s), /${pc.node.maskSize} each; re-registration: ${pc.node.hook ? `hook \`${pc.node.hook}\`` : 'a gate per node'}`]);
  return rows;
}

export function planToMarkdown(plan: MigrationPlan): string {
  const sc = plan.spec.serviceCIDR;
  const counts = mappingCounts(plan);
  const dns = plan.mapping.find((m) => m.isDNS);
  const kube = plan.mapping.find((m) => m.isKubernetes);
  const failed = plan.preflight.filter((c) => c.status === 'fail');
  const warned = plan.preflight.filter((c) => c.status === 'warn');
  const tiers = plan.steps.filter((s) => s.kind === 'move-services' && s.id.startsWith('move-tier-'))
    .map((s) => (s.tier === null || s.tier === undefined ? 'untiered' : String(s.tier)))
    .filter((t, i, a) => a.indexOf(t) === i);
  const pc = plan.spec.podCIDR;
  const title = [sc ? `Service CIDR ${sc.from.join(', ') || '?'} → ${sc.target.join(', ') || '?'}` : '', pc ? `Pod CIDR ${pc.from.join(', ')} → ${pc.to.join(', ')}` : ''].filter(Boolean).join('; ');
  let out = `# Migration: ${title}\n\n`;
  const rows: Array<[string, string]> = [
    ['Cluster', plan.metadata.generatedFrom],
    ['Kubernetes', `${plan.metadata.kubernetesVersion ?? 'unknown'} (${plan.metadata.distribution})`],
  ];
  if (sc) {
    const o = plan.spec.options!;
    rows.push(
      ['Service range', `${sc.from.join(', ')} → ${sc.target.join(', ')} (--service-cluster-ip-range afterwards: ${sc.to.join(',') || '?'})`],
      ['ServiceCIDR API', sc.apiVersion],
      ['Strategy', plan.spec.strategy ?? '-'],
      ['Services', `${counts.move} moved, ${counts.keep} kept, ${counts.skip} skipped`],
      ['Cluster DNS', dns ? `${dns.namespace}/${dns.name} ${ips(dns.from)} → ${ips(dns.to)} (${dns.action})` : 'not found'],
      ['default/kubernetes', kube ? `${ips(kube.from)} → ${ips(kube.to)}` : 'not found'],
      ['Kept ranges', sc.kept.length > 0 ? `${sc.kept.join(', ')} (at least /${sc.minKeptPrefix.ipv4} IPv4, /${sc.minKeptPrefix.ipv6} IPv6)` : 'none'],
      ['Tier order', tiers.length > 0 ? `${tiers.join(' → ')} (key ${o.tierKey}, ${o.tierOrder}), batches of ${o.batchSize}` : '-'],
    );
  }
  if (pc) rows.push(...podSummaryRows(pc));
  rows.push(['Pre-flight', `${failed.length} failed, ${warned.length} warning(s), ${plan.preflight.length - failed.length - warned.length} passed`]);
  out += mdTable(['', ''], rows);
  out += '\n## Pre-flight checks\n\n';
  out += mdTable(['Check', 'Status', 'Finding', 'Fix'], plan.preflight.map((c) => [`\`${c.id}\``, STATUS[c.status] ?? c.status, c.message, c.fix || '-']));
  if (failed.length > 0) out += `\n**${failed.length} check(s) failed: fix them before apply.**\n`;

  if (pc?.node && pc.node.nodes.length > 0) {
    out += `\n## Node podCIDRs\n\n`;
    out += mdTable(['Node', 'From', 'To'], pc.node.nodes.map((n) => [n.name, n.from.join(',') || '-', n.to.join(',')]));
  }
  if (sc) out += `\n## Service mapping\n\n${counts.move} moved, ${counts.keep} kept, ${counts.skip} skipped.\n\n`;
  if (dns) out += `- Cluster DNS: \`${dns.namespace}/${dns.name}\` ${ips(dns.from)} → ${ips(dns.to)} — ${dns.reason}\n`;
  if (kube) out += `- default/kubernetes: ${ips(kube.from)} → ${ips(kube.to)} — ${kube.reason}\n`;
  if (dns || kube) out += '\n';
  const section = (title: string, rows: ServiceMapping[]) => {
    if (rows.length === 0) return;
    out += `### ${title} (${rows.length})\n\n`;
    out += mdTable(['Namespace', 'Name', 'Type', 'Tier', 'From', 'To', 'Why'], rows.map((m) => [m.namespace, m.name, m.type, tierText(m.tier), ips(m.from), ips(m.to), m.reason]));
    out += '\n';
  };
  section('Moved', plan.mapping.filter((m) => m.action === 'move'));
  section('Kept', plan.mapping.filter((m) => m.action === 'keep'));
  section('Skipped', plan.mapping.filter((m) => m.action === 'skip'));

  if (plan.references && plan.references.length > 0) out += `\n${renderReferences(plan.references)}\n`;
  out += '## Steps\n\n';
  if (plan.steps.length === 0) out += 'None: the pre-flight checks above stop the migration.\n\n';
  plan.steps.forEach((s, i) => { out += stepMarkdown(s, i + 1); });

  out += '## Rollback notes\n\n';
  out += '- Every step backs up the objects it changes first; `kube-renumber rollback` undoes completed steps in reverse where the API allows and says what it cannot undo.\n';
  if (pc) out += '- Pods restarted into NEW stay there after a rollback of the pool steps; re-enable the old pool (or give nodes old podCIDRs) and restart again to move back.\n';
  if (sc) out += '- Moved Services can return to their old IPs only while the old range is allocatable: before `drain-old-servicecidrs`, or after creating a ServiceCIDR for the old range again.\n';
  out += '- A deleted ServiceCIDR cannot be restored; a new one with the same range makes it allocatable again.\n';
  out += '- Apiserver flags, certificates and kubelet configuration go back by applying each patch\'s "before" text and restarting.\n';
  out += '- Pods restarted with the new nameserver and Service variables keep working after a rollback only while the bridges and the new range exist.\n\n';
  out += mdTable(['Step', 'Rollback'], plan.steps.map((s) => [`\`${s.id}\``, s.rollback]));
  return out;
}
