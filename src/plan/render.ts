/**
 * The plan as text: YAML (the file `apply` reads), back from YAML with validation, and Markdown for a
 * change request. Pure.
 */
import * as yaml from 'js-yaml';
import { unifiedDiff } from './diff.ts';
import type { PodCIDRSpec } from './pod-spec.ts';
import { renderReferences } from '../analyze/references.ts';
import { formatCidr, parseIP, type Cidr } from '../net/index.ts';
import {
  GATE_CONDITION_INFO, GATE_CONDITIONS, mappingCounts, markSupersessions, PLAN_API_VERSION, PLAN_KIND, STEP_KIND_NAMES, STEP_KINDS,
  type GateConditionInfo, type MigrationPlan, type PlanStep, type StepKindInfo,
} from './plan.ts';
import {
  bool, cidrAt, cidrList, DNS_LABEL, DNS_SUBDOMAIN, fail, fam, inAny, int, ipAt, label, list, obj, oneOf, onlyKeys, PlanFormatError, show, STEP_ID, str, strList, subdomain,
  type Obj,
} from './plan-fields.ts';
import { POD_PATH_NAMES, podPath } from './pod-paths/registry.ts';
import type { ServiceMapping } from './service-mapping.ts';
import { summaryLines, type PlanSummary } from './summary.ts';

export { PlanFormatError } from './plan-fields.ts';


/** Drops undefined values (so YAML has no nulls for absent fields). */
function clean<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** The plan as apply reads it; with `summary` (./summary.ts) that field comes first (apply reads it as a note only). */
export function planToYaml(plan: MigrationPlan, summary?: PlanSummary): string {
  return yaml.dump(clean(withSummary(plan, summary)), { noRefs: true, lineWidth: -1, sortKeys: false });
}

export function planToJson(plan: MigrationPlan, summary?: PlanSummary): string {
  return `${JSON.stringify(clean(withSummary(plan, summary)), null, 2)}\n`;
}

function withSummary(plan: MigrationPlan, summary: PlanSummary | undefined): object {
  if (!summary) return plan;
  const { summary: _old, ...rest } = plan as MigrationPlan & { summary?: unknown };
  return { summary, ...rest };
}

// ---------------------------------------------------------------------------------------------------
// Validation: every field the engine reads is checked here (the fields of a pod path's own section by that path,
// src/plan/pod-paths/), so a plan that passes cannot make it fail on a malformed value. The first bad field is
// named by its path in the document (spec.serviceCIDR.target[0]); the field readers are in plan-fields.ts.


interface Ranges {
  /** spec.serviceCIDR: ranges left, new flag, target, kept */
  svc?: { from: Cidr[]; to: Cidr[]; target: Cidr[]; kept: Cidr[] };
  pod?: { from: Cidr[]; to: Cidr[] };
  /** spec.serviceExtension: the ranges added */
  ext?: { add: Cidr[] };
  /** spec.podExtension: the pod ranges added */
  podExt?: { add: Cidr[] };
}

/** spec.podExtension (plan --extend-pod-cidr): every field the pod extension executor reads. */
function checkPodExtension(spec: Record<string, unknown>): { add: Cidr[] } {
  const P = 'spec.podExtension';
  if (spec.serviceCIDR !== undefined || spec.podCIDR !== undefined || spec.serviceExtension !== undefined) fail(P, 'a pod extension plan adds a pool and moves nothing: it has no serviceCIDR, podCIDR or serviceExtension');
  const ex = obj(spec.podExtension, P);
  onlyKeys(ex, P, ['ipam', 'from', 'add', 'pools', 'kubeProxy', 'masquerade']);
  oneOf(ex, 'ipam', P, ['calico'] as const);
  const from = cidrList(ex, 'from', P, { nonEmpty: true });
  const add = cidrList(ex, 'add', P, { nonEmpty: true, onePerFamily: true });
  add.forEach((a, i) => {
    if (!from.some((f) => f.family === a.family)) fail(`${P}.add[${i}]`, `${formatCidr(a)} is ${fam(a)}, but from has no ${fam(a)} range`);
    const hit = from.find((f) => f.family === a.family && (inAny([f], a) || inAny([a], f)));
    if (hit) fail(`${P}.add[${i}]`, `${formatCidr(a)} overlaps the pool ${formatCidr(hit)}`);
  });
  const pools = list(ex, 'pools', P)!;
  if (pools.length !== add.length) fail(`${P}.pools`, `must name one pool per range of add (${add.length})`);
  pools.forEach((v, i) => {
    const pp = `${P}.pools[${i}]`;
    const po = obj(v, pp);
    onlyKeys(po, pp, ['name', 'cidr', 'blockSize', 'ipipMode', 'vxlanMode', 'natOutgoing', 'nodeSelector', 'allowedUses', 'model']);
    subdomain(po, 'name', pp);
    str(po, 'model', pp);
    const c = cidrAt(str(po, 'cidr', pp)!, `${pp}.cidr`);
    if (formatCidr(c) !== formatCidr(add[i]!)) fail(`${pp}.cidr`, `must be spec.podExtension.add[${i}] (${formatCidr(add[i]!)})`);
    int(po, 'blockSize', pp, Math.max(c.prefix, c.family === 4 ? 20 : 116), c.family === 4 ? 32 : 128);
    for (const k of ['ipipMode', 'vxlanMode'] as const) oneOf(po, k, pp, ['Always', 'CrossSubnet', 'Never'] as const, true);
    bool(po, 'natOutgoing', pp, true);
    str(po, 'nodeSelector', pp, true);
    strList(po, 'allowedUses', pp, true);
  });
  if (ex.kubeProxy !== undefined) {
    const kp = obj(ex.kubeProxy, `${P}.kubeProxy`);
    onlyKeys(kp, `${P}.kubeProxy`, ['from', 'to', 'configMap']);
    str(kp, 'from', `${P}.kubeProxy`);
    const to = str(kp, 'to', `${P}.kubeProxy`)!.split(',').map((x, i) => cidrAt(x.trim(), `${P}.kubeProxy.to[${i}]`));
    bool(kp, 'configMap', `${P}.kubeProxy`);
    for (const a of add) if (!inAny(to, a)) fail(`${P}.kubeProxy.to`, `does not hold ${formatCidr(a)}`);
  }
  if (ex.masquerade !== undefined) {
    const M = `${P}.masquerade`;
    const m = obj(ex.masquerade, M);
    onlyKeys(m, M, ['namespace', 'name', 'key', 'from', 'to']);
    subdomain(m, 'namespace', M);
    subdomain(m, 'name', M);
    const key = str(m, 'key', M)!;
    if (!/^[-._a-zA-Z0-9]+$/.test(key)) fail(`${M}.key`, `${show(key)} is not a ConfigMap key`);
    strList(m, 'from', M);
    const to = strList(m, 'to', M)!.map((x, i) => cidrAt(x, `${M}.to[${i}]`));
    for (const a of add) if (!inAny(to, a)) fail(`${M}.to`, `does not hold ${formatCidr(a)}`);
  }
  return { add };
}

function checkMapping(v: unknown, path: string, r: Ranges): string {
  const m = obj(v, path);
  const ns = label(m, 'namespace', path)!;
  const name = label(m, 'name', path)!;
  oneOf(m, 'type', path, ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const);
  const action = oneOf(m, 'action', path, ['move', 'keep', 'skip'] as const);
  str(m, 'reason', path);
  const from = strList(m, 'from', path)!.map((x, i) => ipAt(x, `${path}.from[${i}]`));
  const to = strList(m, 'to', path)!.map((x, i) => ipAt(x, `${path}.to[${i}]`));
  const t = m.tier;
  if (!(t === null || (typeof t === 'number' && Number.isFinite(t)) || typeof t === 'string')) fail(`${path}.tier`, `must be a number, a string or null (got ${show(t)})`);
  bool(m, 'isDNS', path);
  bool(m, 'isKubernetes', path);
  oneOf(m, 'keptBecause', path, ['load-balancer', 'keep-flag', 'already-in-range', 'no-family', 'no-room'] as const, true);
  if (action === 'move') {
    if (!r.svc) fail(path, 'a Service moves, but the plan has no spec.serviceCIDR');
    if (from.length === 0) fail(`${path}.from`, 'a moved Service needs its ClusterIPs');
    if (to.length !== from.length) fail(`${path}.to`, `must have as many addresses as from (${from.length})`);
    to.forEach((ip, i) => {
      const f = from[i]!;
      if (ip.family !== f.family) fail(`${path}.to[${i}]`, `${show(m.to && (m.to as string[])[i])} is ${fam(ip)}, from[${i}] is ${fam(f)}`);
      if (ip.value !== f.value && !inAny(r.svc!.target, ip)) fail(`${path}.to[${i}]`, `${show((m.to as string[])[i])} is not inside spec.serviceCIDR.target (${r.svc!.target.map(formatCidr).join(', ')})`);
    });
  }
  return `${ns}/${name}`;
}

/** An item of a step whose items name `items` (STEP_KINDS). */
function checkItem(v: unknown, ip: string, items: StepKindInfo['items']): void {
  const o = obj(v, ip);
  const namespaced = items !== 'object';
  if (namespaced && o.namespace === '') fail(`${ip}.namespace`, 'must not be empty');
  label(o, 'namespace', ip, { empty: !namespaced });
  if (items === 'service') label(o, 'name', ip);
  else subdomain(o, 'name', ip);
  for (const k of ['from', 'to'] as const) {
    strList(o, k, ip)!.forEach((x, i) => { if (x.includes('/')) cidrAt(x, `${ip}.${k}[${i}]`); else ipAt(x, `${ip}.${k}[${i}]`); });
  }
  label(o, 'bridge', ip, { optional: true });
  if (o.loadBalancer !== undefined) {
    const lb = obj(o.loadBalancer, `${ip}.loadBalancer`);
    str(lb, 'keeper', `${ip}.loadBalancer`);
    strList(lb, 'kept', `${ip}.loadBalancer`);
    strList(lb, 'changes', `${ip}.loadBalancer`);
    strList(lb, 'dnsNames', `${ip}.loadBalancer`, true);
    if (lb.pin !== undefined) {
      const pin = obj(lb.pin, `${ip}.loadBalancer.pin`);
      for (const k of Object.keys(pin)) str(pin, k, `${ip}.loadBalancer.pin`);
    }
  }
}

/**
 * The gate condition of a plan written before gates named theirs: the gate ids of those plans named their
 * conditions. Returns undefined (and validation then names the field) for any other id.
 */
function legacyGateCondition(id: string): string | undefined {
  const byId: Record<string, string> = {
    'enable-servicecidr-api': 'servicecidr-api', 'restart-apiservers': 'apiservers-on-new-range', 'kubelet-cluster-dns': 'kubelet-cluster-dns',
    'restart-workloads': 'workloads-restarted', 'pod-cidr-config': 'pod-cidr-config',
  };
  // the pod paths' own gates (their legacyGateId)
  const own = (exact: boolean) => GATE_CONDITIONS.find((c) => {
    const g = (GATE_CONDITION_INFO[c] as GateConditionInfo).legacyGateId;
    return g !== undefined && g.endsWith('-') !== exact && (exact ? id === g : id.startsWith(g));
  });
  return byId[id] ?? own(true) ?? own(false);
}

/**
 * supersededBy names later steps of the plan. A plan written before steps carried the field gets it from
 * the same rule the planner uses (markSupersessions).
 */
function checkSupersessions(steps: PlanStep[]): void {
  if (!steps.some((s) => (s as { supersededBy?: unknown }).supersededBy !== undefined)) {
    markSupersessions(steps);
    return;
  }
  const at = new Map(steps.map((s, i) => [s.id, i]));
  steps.forEach((s, i) => {
    const o = s as unknown as Obj;
    const later = strList(o, 'supersededBy', `steps[${i}]`, true) ?? [];
    later.forEach((id, j) => {
      const k = at.get(id);
      if (k === undefined) fail(`steps[${i}].supersededBy[${j}]`, `names ${show(id)}, which is not a step of this plan`);
      if (k <= i) fail(`steps[${i}].supersededBy[${j}]`, `names ${show(id)}, which does not come after ${s.id}`);
    });
  });
}

function checkStep(v: unknown, path: string, r: Ranges): { id: string; kind: string } {
  const s = obj(v, path);
  const id = str(s, 'id', path)!;
  if (!STEP_ID.test(id)) fail(`${path}.id`, `${show(id)} is not a step id (letters, digits, "-", "_" and ".")`);
  const kind = oneOf(s, 'kind', path, STEP_KIND_NAMES)!;
  const info: StepKindInfo = STEP_KINDS[kind];
  str(s, 'description', path);
  str(s, 'rollback', path);
  const t = s.tier;
  if (!(t === undefined || t === null || (typeof t === 'number' && Number.isFinite(t)) || typeof t === 'string')) fail(`${path}.tier`, `must be a number, a string or null (got ${show(t)})`);
  if ((kind === 'gate' || kind === 'confirm') && s.gate === undefined) fail(`${path}.gate`, `missing (a ${kind} step needs one)`);
  const g = s.gate !== undefined ? obj(s.gate, `${path}.gate`) : undefined;
  if (kind === 'gate' && g!.condition === undefined) g!.condition = legacyGateCondition(id);
  const condition = kind === 'gate' ? oneOf(g!, 'condition', `${path}.gate`, GATE_CONDITIONS)! : undefined;
  const cond: GateConditionInfo | undefined = condition !== undefined ? GATE_CONDITION_INFO[condition] : undefined;
  // the migration a step belongs to: its kind's, a gate's by its condition, a confirmation the Service CIDR's unless the plan moves the Pod CIDR
  const family = kind === 'confirm' ? (r.pod ? 'pod' : 'service') : cond?.family ?? info.family;
  if (family === 'service' && !r.svc) {
    fail(`${path}.kind`, `${kind}${kind === 'gate' ? ` ${id}` : ''} belongs to a Service CIDR migration, but the plan has no spec.serviceCIDR`);
  }
  if (family === 'extend' && !r.ext) {
    fail(`${path}.kind`, `${kind}${kind === 'gate' ? ` ${id}` : ''} belongs to an extension plan, but the plan has no spec.serviceExtension`);
  }
  if (family === 'extend-pod' && !r.podExt) {
    fail(`${path}.kind`, `${kind}${kind === 'gate' ? ` ${id}` : ''} belongs to a pod extension plan, but the plan has no spec.podExtension`);
  }
  if (family === 'pod' && !r.pod) {
    fail(`${path}.kind`, `${kind}${kind === 'gate' ? ` ${id}` : ''} belongs to a Pod CIDR migration, but the plan has no spec.podCIDR`);
  }
  if (g) {
    str(g, 'reason', `${path}.gate`);
    strList(g, 'instructions', `${path}.gate`);
    str(g, 'check', `${path}.gate`);
    if (g.helmReleases !== undefined && (g.helmReleases !== true || condition !== 'references')) {
      fail(`${path}.gate.helmReleases`, `${show(g.helmReleases)}: only gate references reads Helm's release Secrets again, and only as true`);
    }
    (list(g, 'patches', `${path}.gate`, true) ?? []).forEach((p, i) => {
      const pp = `${path}.gate.patches[${i}]`;
      const o = obj(p, pp);
      for (const k of ['id', 'distribution', 'gate', 'target', 'description', 'before', 'after']) str(o, k, pp);
    });
  }
  const items = list(s, 'items', path, true) ?? [];
  items.forEach((it, i) => checkItem(it, `${path}.items[${i}]`, info.items));
  if (info.nodePodCIDRs && r.pod) {
    // what the engine patches onto each node (spec.podCIDRs): one CIDR per family of spec.podCIDR.to, inside it
    items.forEach((item, i) => {
      const ip = `${path}.items[${i}]`;
      const got = cidrList(item as Obj, 'to', ip, { nonEmpty: true, onePerFamily: true });
      got.forEach((c, j) => { if (!inAny(r.pod!.to, c)) fail(`${ip}.to[${j}]`, `${formatCidr(c)} is not inside spec.podCIDR.to (${r.pod!.to.map(formatCidr).join(', ')})`); });
      for (const t of r.pod!.to) if (!got.some((c) => c.family === t.family)) fail(`${ip}.to`, `has no ${fam(t)} podCIDR (spec.podCIDR.to has ${formatCidr(t)})`);
    });
  }
  if (info.nodesOnce || cond?.nodesOnce) {
    // a wave names each of its nodes once
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const name = (item as Obj).name;
      if (typeof name === 'string' && seen.has(name)) fail(`${path}.items[${i}].name`, `node ${show(name)} is named twice in this step`);
      if (typeof name === 'string') seen.add(name);
    });
  }
  if ((info.firstItem || cond?.firstItem) && items.length === 0) {
    fail(`${path}.items`, `a ${kind} step names what it works on in its first item; it has none`);
  }
  (list(s, 'serviceCIDRs', path, true) ?? []).forEach((sc, i) => {
    const sp = `${path}.serviceCIDRs[${i}]`;
    const o = obj(sc, sp);
    subdomain(o, 'name', sp);
    cidrList(o, 'cidrs', sp, { nonEmpty: true, onePerFamily: true });
    const purpose = oneOf(o, 'purpose', sp, ['target', 'keep', 'bridge', 'old', 'extend'] as const);
    if (purpose === 'extend') {
      // what the extension executor creates, deletes at rollback and verifies: exactly the plan's added ranges
      const cidrs = cidrList(o, 'cidrs', sp);
      if (!r.ext || cidrs.map(formatCidr).join(',') !== r.ext.add.map(formatCidr).join(',')) fail(`${sp}.cidrs`, `must be spec.serviceExtension.add (${r.ext?.add.map(formatCidr).join(', ') ?? 'absent'})`);
    }
  });
  return { id, kind };
}

/** Validates a parsed plan document; returns it typed. PlanFormatError names the first bad field. */
export function validatePlan(doc: unknown): MigrationPlan {
  const p = obj(doc, 'plan');
  if (p.apiVersion !== PLAN_API_VERSION) fail('apiVersion', `is ${show(p.apiVersion)}, expected ${PLAN_API_VERSION} (a plan written by kube-renumber plan -o yaml)`);
  if (p.kind !== PLAN_KIND) fail('kind', `is ${show(p.kind)}, expected ${PLAN_KIND}`);
  onlyKeys(p, '', ['summary', 'apiVersion', 'kind', 'metadata', 'spec', 'preflight', 'mapping', 'references', 'steps']);
  // the summary plan -o yaml writes first is for people: apply computes it again from the plan and the live cluster
  if (p.summary !== undefined) obj(p.summary, 'summary');
  const md = obj(p.metadata, 'metadata');
  str(md, 'generatedFrom', 'metadata');
  str(md, 'kubernetesVersion', 'metadata', true);
  str(md, 'distribution', 'metadata');
  str(md, 'platform', 'metadata', true);
  str(md, 'generator', 'metadata', true);
  if (md.cluster !== undefined) {
    // the cluster the plan is bound to (src/plan/identity.ts); absent in offline plans and older plans
    const c = obj(md.cluster, 'metadata.cluster');
    onlyKeys(c, 'metadata.cluster', ['uid', 'server']);
    const uid = str(c, 'uid', 'metadata.cluster')!;
    if (!/^[A-Za-z0-9][-A-Za-z0-9]{0,127}$/.test(uid)) fail('metadata.cluster.uid', `${show(uid)} is not a uid (the kube-system namespace's metadata.uid)`);
    const server = str(c, 'server', 'metadata.cluster', true);
    if (server !== undefined && (server.length > 2048 || /[\s\x00-\x1f]/.test(server))) fail('metadata.cluster.server', `${show(server)} is not an apiserver URL`);
  }
  const spec = obj(p.spec, 'spec');
  onlyKeys(spec, 'spec', ['serviceCIDR', 'strategy', 'options', 'podCIDR', 'serviceExtension', 'podExtension']);
  if (spec.serviceCIDR === undefined && spec.podCIDR === undefined && spec.serviceExtension === undefined && spec.podExtension === undefined) {
    fail('spec', 'names neither serviceCIDR, podCIDR, serviceExtension nor podExtension: nothing to migrate');
  }
  const r: Ranges = {};
  if (spec.podExtension !== undefined) r.podExt = checkPodExtension(spec);
  if (spec.serviceExtension !== undefined) {
    const P = 'spec.serviceExtension';
    if (spec.serviceCIDR !== undefined || spec.podCIDR !== undefined) fail(P, 'an extension plan adds a range and moves nothing: it has no serviceCIDR or podCIDR');
    const ex = obj(spec.serviceExtension, P);
    onlyKeys(ex, P, ['from', 'add', 'name', 'apiVersion', 'flag']);
    const from = cidrList(ex, 'from', P, { nonEmpty: true });
    const add = cidrList(ex, 'add', P, { nonEmpty: true, onePerFamily: true });
    cidrList(ex, 'flag', P, { nonEmpty: true, onePerFamily: true });
    add.forEach((a, i) => {
      if (!from.some((f) => f.family === a.family)) fail(`${P}.add[${i}]`, `${formatCidr(a)} is ${fam(a)}, but from has no ${fam(a)} range`);
      const hit = from.find((f) => f.family === a.family && (inAny([f], a) || inAny([a], f)));
      if (hit) fail(`${P}.add[${i}]`, `${formatCidr(a)} overlaps the service range ${formatCidr(hit)}`);
    });
    subdomain(ex, 'name', P);
    const api = str(ex, 'apiVersion', P)!;
    if (!['networking.k8s.io/v1', 'networking.k8s.io/v1beta1', 'networking.k8s.io/v1alpha1'].includes(api)) {
      fail(`${P}.apiVersion`, `${show(api)} is not a ServiceCIDR API version (networking.k8s.io/v1, v1beta1 or v1alpha1)`);
    }
    r.ext = { add };
  }
  if (spec.serviceCIDR !== undefined) {
    const P = 'spec.serviceCIDR';
    const sc = obj(spec.serviceCIDR, P);
    const from = cidrList(sc, 'from', P, { nonEmpty: true });
    const to = cidrList(sc, 'to', P, { nonEmpty: true, onePerFamily: true });
    const target = cidrList(sc, 'target', P, { nonEmpty: true, onePerFamily: true });
    const kept = cidrList(sc, 'kept', P);
    target.forEach((t, i) => {
      if (!from.some((f) => f.family === t.family)) fail(`${P}.target[${i}]`, `${formatCidr(t)} is ${fam(t)}, but from has no ${fam(t)} range`);
      if (!to.some((x) => x.family === t.family && x.network === t.network && x.prefix === t.prefix)) fail(`${P}.target[${i}]`, `${formatCidr(t)} is not in to (${to.map(formatCidr).join(', ')})`);
    });
    to.forEach((t, i) => {
      if (!from.some((f) => f.family === t.family)) fail(`${P}.to[${i}]`, `${formatCidr(t)} is ${fam(t)}, but from has no ${fam(t)} range`);
    });
    kept.forEach((k, i) => {
      if (!inAny(from, k)) fail(`${P}.kept[${i}]`, `${formatCidr(k)} is not inside from (${from.map(formatCidr).join(', ')})`);
    });
    const api = str(sc, 'apiVersion', P)!;
    if (!['networking.k8s.io/v1', 'networking.k8s.io/v1beta1', 'networking.k8s.io/v1alpha1'].includes(api)) {
      fail(`${P}.apiVersion`, `${show(api)} is not a ServiceCIDR API version (networking.k8s.io/v1, v1beta1 or v1alpha1)`);
    }
    const mk = obj(sc.minKeptPrefix, `${P}.minKeptPrefix`);
    int(mk, 'ipv4', `${P}.minKeptPrefix`, 0, 32);
    int(mk, 'ipv6', `${P}.minKeptPrefix`, 0, 128);
    oneOf(spec, 'strategy', 'spec', ['in-place', 'recreate'] as const);
    const o = obj(spec.options, 'spec.options');
    int(o, 'batchSize', 'spec.options', 1, 100_000);
    if (typeof o.headroom !== 'number' || !Number.isFinite(o.headroom) || o.headroom < 1) fail('spec.options.headroom', `must be a number >= 1 (got ${show(o.headroom)})`);
    str(o, 'tierKey', 'spec.options');
    oneOf(o, 'tierOrder', 'spec.options', ['ascending', 'descending'] as const);
    strList(o, 'keep', 'spec.options');
    (strList(o, 'apiserverCertSANs', 'spec.options', true) ?? []).forEach((x, i) => {
      if (x.length > 253 || !/^[A-Za-z0-9.:*-]+$/.test(x)) fail(`spec.options.apiserverCertSANs[${i}]`, `${show(x)} is not an IP address or DNS name`);
    });
    oneOf(o, 'restartWorkloads', 'spec.options', ['tool', 'manual'] as const, true);
    oneOf(o, 'loadBalancers', 'spec.options', ['keep', 'move'] as const, true);
    const isIP = (x: string) => { try { parseIP(x); return true; } catch { return false; } };
    if (o.nodePortCover !== undefined) {
      const c = o.nodePortCover;
      if (c !== 'nodes') {
        if (!Array.isArray(c) || c.length === 0) fail('spec.options.nodePortCover', `${show(c)} is neither nodes nor a non-empty list of IP addresses`);
        (c as unknown[]).forEach((x, i) => { if (typeof x !== 'string' || !isIP(x)) fail(`spec.options.nodePortCover[${i}]`, `${show(x)} is not an IP address`); });
      }
    }
    const dns = str(o, 'clusterDNS', 'spec.options', true);
    if (dns !== undefined && dns !== 'none' && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(dns)) {
      fail('spec.options.clusterDNS', `${show(dns)} is neither none nor a Service as namespace/name`);
    }
    if (sc.restarts !== undefined) {
      const rs = obj(sc.restarts, `${P}.restarts`);
      int(rs, 'parallel', `${P}.restarts`, 1, 100);
      (strList(rs, 'critical', `${P}.restarts`) ?? []).forEach((c, i) => {
        if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(c)) fail(`${P}.restarts.critical[${i}]`, `${show(c)} is not a Deployment as namespace/name`);
      });
      (strList(rs, 'barePodNamespaces', `${P}.restarts`) ?? []).forEach((n, i) => {
        if (!DNS_LABEL.test(n)) fail(`${P}.restarts.barePodNamespaces[${i}]`, `${show(n)} is not a namespace name`);
      });
    }
    r.svc = { from, to, target, kept };
  } else {
    if (spec.strategy !== undefined) fail('spec.strategy', 'set, but the plan has no spec.serviceCIDR');
    if (spec.options !== undefined) fail('spec.options', 'set, but the plan has no spec.serviceCIDR');
  }
  if (spec.podCIDR !== undefined) {
    const P = 'spec.podCIDR';
    const pc = obj(spec.podCIDR, P);
    const from = cidrList(pc, 'from', P);
    const to = cidrList(pc, 'to', P, { nonEmpty: true, onePerFamily: true });
    from.forEach((f, i) => {
      if (!to.some((t) => t.family === f.family)) fail(`${P}.from[${i}]`, `${formatCidr(f)} is ${fam(f)}, but to has no ${fam(f)} range`);
    });
    const ipam = oneOf(pc, 'ipam', P, POD_PATH_NAMES)!;
    const rs = obj(pc.restarts, `${P}.restarts`);
    int(rs, 'parallel', `${P}.restarts`, 1, 10_000);
    strList(rs, 'critical', `${P}.restarts`)!.forEach((c, i) => {
      const [ns, name, more] = c.split('/');
      if (more !== undefined || !ns || !name || !DNS_LABEL.test(ns) || name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
        fail(`${P}.restarts.critical[${i}]`, `${show(c)} is not namespace/name`);
      }
    });
    (strList(pc, 'barePodNamespaces', P, true) ?? []).forEach((ns, i) => {
      if (!DNS_LABEL.test(ns)) fail(`${P}.barePodNamespaces[${i}]`, `${show(ns)} is not a namespace name`);
    });
    podPath(ipam).validate(pc, P, to);
    r.pod = { from, to };
  }
  list(p, 'preflight', 'plan')!.forEach((c, i) => {
    const cp = `preflight[${i}]`;
    const co = obj(c, cp);
    str(co, 'id', cp);
    oneOf(co, 'status', cp, ['pass', 'warn', 'fail'] as const);
    str(co, 'message', cp);
    str(co, 'fix', cp);
    bool(co, 'target', cp, true);
  });
  const services = new Set<string>();
  list(p, 'mapping', 'plan')!.forEach((m, i) => {
    const key = checkMapping(m, `mapping[${i}]`, r);
    if (services.has(key)) fail(`mapping[${i}]`, `${key} is mapped twice`);
    services.add(key);
  });
  (list(p, 'references', 'plan', true) ?? []).forEach((x, i) => { obj(x, `references[${i}]`); });
  const ids = new Set<string>();
  const steps = list(p, 'steps', 'plan')!;
  steps.forEach((s, i) => {
    const { id } = checkStep(s, `steps[${i}]`, r);
    if (ids.has(id)) fail(`steps[${i}].id`, `"${id}" is used twice`);
    ids.add(id);
  });
  const plan = p as unknown as MigrationPlan;
  checkSupersessions(plan.steps);
  return plan;
}

/** The largest plan read: far beyond a plan for tens of thousands of Services. */
export const MAX_PLAN_BYTES = 64 * 1024 * 1024;

/**
 * Reads a plan written by planToYaml (or planToJson: JSON is YAML). `source` (the file name) starts every
 * message: "plan.yaml: spec.serviceCIDR.target[0]: "banana" is not a CIDR (...)".
 */
export function planFromYaml(text: string, source?: string): MigrationPlan {
  const prefix = source !== undefined ? `${source}: ` : 'invalid plan: ';
  if (text.length > MAX_PLAN_BYTES) throw new PlanFormatError(`${prefix}${text.length} characters is more than a plan may have`);
  if (text.includes('\0')) throw new PlanFormatError(`${prefix}not text (binary data): not a plan written by kube-renumber plan -o yaml`);
  if (text.trim() === '') throw new PlanFormatError(`${prefix}the file is empty`);
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    const err = e as { reason?: string; mark?: { line?: number }; message?: string };
    const line = err.mark?.line !== undefined ? ` at line ${err.mark.line + 1}` : '';
    throw new PlanFormatError(`${prefix}not YAML${line}: ${(err.reason ?? err.message ?? String(e)).split('\n')[0]}`);
  }
  if (doc === undefined || doc === null) throw new PlanFormatError(`${prefix}the file is empty`);
  try {
    return validatePlan(doc);
  } catch (e) {
    if (e instanceof PlanFormatError && source !== undefined && e.field !== undefined) {
      throw new PlanFormatError(`${prefix}${e.message.replace(/^invalid plan: /, '')}`, e.field);
    }
    throw e;
  }
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

/** `path` as one shell word. */
export function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

/**
 * Every "kube-renumber resume|status|verify|rollback|restore" in `text` naming the plan file: the plan does not
 * know where it is stored, so its gate texts say `kube-renumber resume`, and apply (which does know) or the
 * Markdown (with a placeholder) puts the path in when it shows them.
 */
export function withPlanPath(text: string, path: string): string {
  return text.replace(/(?<![\w./-])kube-renumber (resume|status|verify|rollback|restore)\b/g, (_m, cmd: string) => `kube-renumber ${cmd} ${shellWord(path)}`);
}

/** The commands an instruction runs: these words start one (after the start, ": " or "; "). */
const COMMAND_START = /(^|: |; )((?:kubectl|kops|kube-renumber|kubeadm|systemctl|calicoctl|cilium|helm|for \w+ in) )/;
/** Where a command ends and words for people go on: a comment, a parenthesis, "on every node", ", one at a time". */
const COMMAND_END = /\s+#\s|\s\((?=[a-z])|\s+on (?:every|each) |, (?:one|each|then|or) /;

/** `x` as a code span (one that holds a backtick gets two, as Markdown wants). */
function code(x: string): string {
  return x.includes('`') ? `\`\` ${x} \`\`` : `\`${x}\``;
}

/**
 * A gate's instruction in Markdown: the words as words, each command in it as code ("kops edit cluster (apply patch
 * X)" → `kops edit cluster` (apply patch X)).
 */
export function instructionMarkdown(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const m = COMMAND_START.exec(rest);
    if (!m) return out + rest;
    const start = m.index + m[1]!.length;
    out += rest.slice(0, start);
    const after = rest.slice(start);
    const end = COMMAND_END.exec(after);
    const cmd = (end ? after.slice(0, end.index) : after).trimEnd();
    out += code(cmd);
    rest = after.slice(cmd.length).replace(/^\s+#\s+/, ' (') ;
    if (rest !== after.slice(cmd.length)) rest += ')';
  }
}

function stepMarkdown(s: PlanStep, n: number, path: string): string {
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
      out += s.gate.instructions.map((x, i) => `${i + 1}. ${instructionMarkdown(withPlanPath(x, path))}`).join('\n') + '\n\n';
      out += `Resume checks (${s.gate.condition}): ${s.gate.check}\n\n`;
    }
    for (const p of s.gate.patches ?? []) {
      const diff = unifiedDiff(`${p.before.trimEnd()}\n`, `${p.after.trimEnd()}\n`, { from: `${p.target} (before)`, to: `${p.target} (after)` });
      out += `**Patch \`${p.id}\`** (${p.distribution}) — ${p.target}: ${p.description}\n\n\`\`\`diff\n${diff || '(no change)\n'}\`\`\`\n\n`;
    }
  }
  if ((s.supersededBy ?? []).length > 0) out += `Counts as done once the run reaches ${s.supersededBy!.map((x) => `\`${x}\``).join(', ')} (which undoes part of it on purpose).\n\n`;
  out += `Rollback: ${s.rollback}\n\n`;
  return out;
}

/** Summary rows of a Pod CIDR section. */
export function podSummaryRows(pc: PodCIDRSpec): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['Pod range', `${pc.from.join(', ')} → ${pc.to.join(', ')}`],
    ['Pod IPAM', podPath(pc.ipam).summary(pc)],
    ['Restarts', `${pc.restarts.parallel} rollout(s) at a time; scaled up first: ${pc.restarts.critical.join(', ') || 'none'}`],
  ];
  // each path's rows for its own section (spec.podCIDR.<path>)
  for (const id of POD_PATH_NAMES) rows.push(...podPath(id).summaryRows(pc));
  return rows;
}

/** The summary rows of an extension plan (spec.serviceExtension): the table and the Markdown show these. */
export function extensionRows(ext: NonNullable<MigrationPlan['spec']['serviceExtension']>): Array<[string, string]> {
  return [
    ['Service range', `${ext.from.join(', ')} stays; ${ext.add.join(', ')} added as ServiceCIDR ${ext.name} (${ext.apiVersion})`],
    ['apiserver flag', `--service-cluster-ip-range stays ${ext.flag.join(',')} (the default ServiceCIDR kubernetes keeps it)`],
    ['Restarts', 'none: no Service moves, no pod restarts'],
  ];
}

/** The summary rows of a pod extension plan (spec.podExtension): the table and the Markdown show these. */
export function podExtensionRows(ext: NonNullable<MigrationPlan['spec']['podExtension']>): Array<[string, string]> {
  return [
    ['Pod range', `${ext.from.join(', ')} stays (no pool disabled); ${ext.pools.map((p) => `${p.cidr} added as IPPool ${p.name} (/${p.blockSize} blocks, settings of ${p.model})`).join(', ')}`],
    ['kube-proxy', ext.kubeProxy ? `clusterCIDR ${ext.kubeProxy.from} -> ${ext.kubeProxy.to} at gate extend-kube-proxy (kube-proxy restarted: host network)` : 'unchanged'],
    ['ip-masq-agent', ext.masquerade ? `nonMasqueradeCIDRs + ${ext.masquerade.to.filter((x) => !ext.masquerade!.from.includes(x)).join(', ')} (re-read without a restart)` : 'unchanged'],
    ['Restarts', `no workload pod restarts; pods keep their addresses${ext.kubeProxy ? '; kube-proxy (host network) restarts once' : ''}`],
  ];
}

/** The summary as a list of sentences: words as words, the rollback command as code. */
export function summaryMarkdown(summary: PlanSummary): string {
  const cmd = summary.rollback.command;
  return summaryLines(summary).map(([k, v]) => `- **${k}:** ${v.replace(cmd, code(cmd))}`).join('\n') + '\n';
}

/**
 * `planPath`: where the plan is stored, named in every resume hint (default PLAN.yaml: the file written with
 * plan -o yaml, which the Markdown does not know).
 */
export function planToMarkdown(plan: MigrationPlan, planPath = 'PLAN.yaml', summary?: PlanSummary): string {
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
  const ext = plan.spec.serviceExtension;
  const title = [sc ? `Service CIDR ${sc.from.join(', ') || '?'} → ${sc.target.join(', ') || '?'}` : '', pc ? `Pod CIDR ${pc.from.join(', ')} → ${pc.to.join(', ')}` : ''].filter(Boolean).join('; ');
  const pext = plan.spec.podExtension;
  let out = ext ? `# Extension: Service range ${ext.from.join(', ')} + ${ext.add.join(', ')}\n\n`
    : pext ? `# Extension: pod range ${pext.from.join(', ')} + ${pext.add.join(', ')}\n\n` : `# Migration: ${title || 'nothing planned (see the failed pre-flight checks)'}\n\n`;
  if (summary) out += `## Summary\n\n${summaryMarkdown(summary)}\n`;
  const rows: Array<[string, string]> = [
    ['Cluster', plan.metadata.generatedFrom],
    ['Bound to', plan.metadata.cluster
      ? `kube-system uid ${plan.metadata.cluster.uid}${plan.metadata.cluster.server ? ` (${plan.metadata.cluster.server})` : ''}: apply refuses any other cluster`
      : 'no cluster (offline plan): apply needs --accept-unbound-plan'],
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
  if (ext) rows.push(...extensionRows(ext));
  if (pext) rows.push(...podExtensionRows(pext));
  rows.push(['Pre-flight', `${failed.length} failed, ${warned.length} warning(s), ${plan.preflight.length - failed.length - warned.length} passed`]);
  out += mdTable(['', ''], rows);
  out += '\n## Pre-flight checks\n\n';
  out += mdTable(['Check', 'Status', 'Finding', 'Fix'], plan.preflight.map((c) => [`\`${c.id}\``, STATUS[c.status] ?? c.status, c.message, c.fix || '-']));
  if (failed.length > 0) out += `\n**${failed.length} check(s) failed: fix them before apply.**\n`;

  if (pc) for (const id of POD_PATH_NAMES) out += podPath(id).markdown(pc, mdTable);
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
  plan.steps.forEach((s, i) => { out += stepMarkdown(s, i + 1, planPath); });

  out += '## Rollback notes\n\n';
  out += `- Every step backs up the objects it changes first; \`kube-renumber rollback ${shellWord(planPath)}\` undoes completed steps in reverse where the API allows and says what it cannot undo.\n`;
  if (pc) out += '- Pods restarted into NEW stay there after a rollback of the pool steps; re-enable the old pool (or give nodes old podCIDRs) and restart again to move back.\n';
  if (ext) out += `- ServiceCIDR \`${ext.name}\` is deleted by rollback only while no Service holds an address in it; once one does, rollback refuses and names them.\n`;
  if (sc) out += '- Moved Services can return to their old IPs only while the old range is allocatable: before `drain-old-servicecidrs`, or after creating a ServiceCIDR for the old range again.\n';
  if (pext) out += `- IPPool ${pext.pools.map((p) => `\`${p.name}\``).join(', ')} is deleted by rollback only while no pod holds an address in it; once one does, rollback refuses and names them.\n`;
  if (!ext && !pext) {
    out += '- A deleted ServiceCIDR cannot be restored; a new one with the same range makes it allocatable again.\n';
    out += '- Apiserver flags, certificates and kubelet configuration go back by applying each patch in reverse (the "-" lines) and restarting.\n';
    out += '- Pods restarted with the new nameserver and Service variables keep working after a rollback only while the bridges and the new range exist.\n';
  }
  out += '\n';
  out += mdTable(['Step', 'Rollback'], plan.steps.map((s) => [`\`${s.id}\``, s.rollback]));
  return out;
}
