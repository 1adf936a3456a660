/**
 * `inspect -o html` and `plan -o html`: one self-contained HTML document (inline SVG, CSS and a small script;
 * no fonts, images or anything else fetched: the Content-Security-Policy allows nothing but the page's own
 * style and script, by hash). Pure: report or plan in, a string out. Every text from the cluster is escaped.
 *
 * The address map is drawn by address-map.ts (its header explains the layout); this module chooses the ranges
 * (the catalog's well-known ranges, RFC 1918 and ULA, the cluster's ranges, the platform's reserved ranges, the
 * ranges to avoid, a plan's targets), marks the conflicts on them, and writes the rest of the page: the
 * conflicts with their reasons, capacity as bars, readiness, and for a plan its pre-flight checks, Service
 * mapping (old → new) and steps with the gates marked.
 */
import { createHash } from 'node:crypto';
import { CATALOG, SEVERITIES, type AvoidRange, type Severity } from '../analyze/catalog.ts';
import type { Conflict, ConflictSide } from '../analyze/conflicts.ts';
import type { InspectReport } from '../analyze/inspect.ts';
import { familyName, formatCidr, overlaps, parseCidr, tryParseCidr, type Cidr, type Family } from '../net/index.ts';
import { mappingCounts, type MigrationPlan } from '../plan/plan.ts';
import { podPath } from '../plan/pod-paths/registry.ts';
import type { PlanStep } from '../plan/steps.ts';
import { summaryLines, type PlanSummary } from '../plan/summary.ts';
import { CLUSTER_ROLES, esc, familyMap, ROLE_TITLE, type MapRange, type MapRole } from './address-map.ts';

export { esc } from './address-map.ts';

/** Private and unique-local blocks: context for the map (the catalog lists the ranges that conflict). */
const PRIVATE_RANGES: ReadonlyArray<{ cidr: string; name: string }> = [
  { cidr: '10.0.0.0/8', name: 'RFC 1918 10/8' },
  { cidr: '172.16.0.0/12', name: 'RFC 1918 172.16/12' },
  { cidr: '192.168.0.0/16', name: 'RFC 1918 192.168/16' },
  { cidr: 'fc00::/7', name: 'unique local (ULA)' },
];


const ROLE_OF_WHAT: ReadonlyArray<[string, MapRole]> = [
  ['service range', 'service'], ['pod range', 'pod'], ['Calico pool', 'pool'], ['node network', 'node'],
  ['nonMasqueradeCIDR', 'masquerade'], ['kube-controller-manager --cluster-cidr', 'pod'], ['avoided range', 'avoid'],
  ['reserved by', 'reserved'],
];

/**
 * The roles one side of a conflict names: its `what` lists them ("service range (…); Calico pool (…)"), or it
 * names a catalog entry. Sides that are node addresses or node podCIDRs name none (they are not on the map).
 */
function sideRoles(s: ConflictSide): MapRole[] {
  const roles = new Set<MapRole>();
  for (const part of s.what.split('; ')) {
    const hit = ROLE_OF_WHAT.find(([prefix]) => part.startsWith(prefix));
    if (hit) roles.add(hit[1]);
    else if (CATALOG.some((k) => k.name === part && k.cidr === s.cidr)) roles.add('catalog');
  }
  return [...roles];
}

interface Extra {
  avoid?: readonly AvoidRange[];
  /** The plan's targets and kept ranges. */
  plan?: MigrationPlan;
}

/** Every range of the map, with the conflicts marked on the ranges they name. */
export function mapRanges(report: InspectReport, extra: Extra = {}): MapRange[] {
  const out: MapRange[] = [];
  const add = (cidr: string, role: MapRole, name: string, label: string, detail: string, level?: Severity) => {
    const c = tryParseCidr(cidr);
    if (!c) return;
    const text = formatCidr(c);
    if (out.some((r) => r.role === role && formatCidr(r.cidr) === text)) return;
    out.push({ cidr: c, role, name, label, detail, ...(level ? { level } : {}), conflicts: [] });
  };
  const entries = (role: MapRole, list: Array<{ cidr: string; labels: string[]; sources: string[] }>, name: (e: { labels: string[] }) => string) => {
    for (const e of list) add(e.cidr, role, name(e), e.labels.join('; '), `from: ${e.sources.join(', ')}`);
  };
  entries('service', report.serviceCIDRs, () => 'service range');
  entries('pod', report.podCIDRs, () => 'pod range');
  for (const p of report.pools) {
    add(p.cidr, 'pool', `pool ${p.name}${p.disabled ? ' (disabled)' : ''}`, p.labels.join('; '),
      `from: ${p.sources.join(', ')}; blockSize ${p.blockSize}${p.disabled ? '; disabled' : ''}${p.nodeSelector ? `; nodeSelector ${p.nodeSelector}` : ''}`);
  }
  entries('node', report.nodeCIDRs, () => 'node network');
  entries('masquerade', report.masqueradeCIDRs, () => 'nonMasqueradeCIDR');
  for (const r of report.platform?.reserved ?? []) add(r.cidr, 'reserved', `reserved: ${r.reason}`, `reserved by ${report.platform!.title}: ${r.reason}`, '');
  for (const a of extra.avoid ?? []) add(a.cidr, 'avoid', `avoid${a.reason ? `: ${a.reason}` : ''}`, `range to avoid${a.reason ? `: ${a.reason}` : ''}`, `from ${a.from}`);
  const plan = extra.plan;
  if (plan?.spec.serviceCIDR) {
    for (const t of plan.spec.serviceCIDR.target) add(t, 'target', 'new service range', 'new service range (--service-cidr)', `the plan moves Services from ${plan.spec.serviceCIDR.from.join(', ')}`);
    for (const k of plan.spec.serviceCIDR.kept) add(k, 'kept', 'kept ServiceCIDR', 'kept ServiceCIDR (IPs that stay)', 'Services that keep their ClusterIP keep this range allocated');
  }
  if (plan?.spec.podCIDR) {
    for (const t of plan.spec.podCIDR.to) add(t, 'target', 'new pod range', 'new pod range (--pod-cidr)', `the plan moves pods from ${plan.spec.podCIDR.from.join(', ')}`);
  }

  // Context: the catalog (tool defaults only where a range of the cluster or plan overlaps them) and RFC 1918/ULA,
  // for the families the cluster or plan has.
  const families = new Set<Family>(out.map((r) => r.cidr.family));
  const ours = [...out];
  for (const k of CATALOG) {
    const c = parseCidr(k.cidr);
    if (!families.has(c.family)) continue;
    if (k.severity === 'info' && !ours.some((r) => overlaps(r.cidr, c))) continue;
    add(k.cidr, 'catalog', k.name, k.name, k.reason, k.severity);
  }
  for (const p of PRIVATE_RANGES) {
    const c = parseCidr(p.cidr);
    if (families.has(c.family)) add(p.cidr, 'private', p.name, p.name, 'private address space');
  }

  // Conflicts: each side's ranges of the roles it names (any range of our own with that CIDR when it names none).
  report.conflicts.forEach((cf, i) => {
    for (const s of [cf.a, cf.b]) {
      const c = tryParseCidr(s.cidr);
      if (!c) continue;
      const text = formatCidr(c);
      const roles = sideRoles(s);
      for (const r of out) {
        if (formatCidr(r.cidr) !== text) continue;
        if (roles.length > 0 ? !roles.includes(r.role) : !CLUSTER_ROLES.includes(r.role)) continue;
        if (!r.conflicts.includes(i + 1)) r.conflicts.push(i + 1);
        if (!r.severity || SEVERITIES.indexOf(cf.severity) < SEVERITIES.indexOf(r.severity)) r.severity = cf.severity;
      }
    }
  });
  return out;
}

function conflictLine(c: Conflict, n: number): string {
  return `conflict ${n} (${c.severity}): ${c.a.cidr} overlaps ${c.b.cidr} (${c.b.what}): ${c.reason}`;
}

// ---------------------------------------------------------------------------------------------------
// The page

const STYLE = `
:root{--fg:#1f2937;--muted:#6b7280;--line:#d1d5db;--bg:#fff;--soft:#f9fafb;--err:#dc2626;--warn:#d97706;--info:#7c3aed;--ok:#15803d}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1320px;margin:0 auto;padding:0 20px}
header{padding-top:14px}
h1{font-size:20px;margin:0 0 2px}
h2{font-size:17px;margin:22px 0 8px;padding-bottom:3px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:14px 0 6px}
h4{font-size:13px;margin:10px 0 4px;color:var(--muted);font-weight:600}
p{margin:4px 0}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:6px 8px;overflow-x:auto;margin:4px 0;white-space:pre}
.sub{color:var(--muted);margin:0}
.hint{display:none;color:var(--muted);font-size:12.5px}
.summary{display:flex;flex-wrap:wrap;gap:6px 16px;margin:6px 0 0;padding:0;list-style:none}
.pill{display:inline-block;border-radius:9px;padding:0 7px;font-size:12px;font-weight:600;border:1px solid currentColor;white-space:nowrap}
.sev-error.pill,.pill.fail,.pill.gate{color:var(--err)}
.sev-warning.pill,.pill.warn,.pill.confirm{color:var(--warn)}
.sev-info.pill{color:var(--info)}
.pill.pass,.pill.ok{color:var(--ok)}
.pill.action{color:var(--muted)}
.mapbox{overflow-x:auto;overflow-y:hidden;border:1px solid var(--line);border-radius:4px;background:var(--soft);padding:4px;-webkit-overflow-scrolling:touch}
svg.map{display:block;width:100%;min-width:1000px;height:auto;font:11px system-ui,"DejaVu Sans",sans-serif}
svg.map .range{cursor:pointer}
svg.map .range rect{stroke-width:1;fill-opacity:.95}
svg.map .range:focus{outline:none}
svg.map .range:focus rect,svg.map .range.hl rect{stroke:#111827;stroke-width:3}
svg.map text{fill:#111827;pointer-events:none}
svg.map text.name{font-weight:600}
svg.map text.label{fill:#374151}
svg.map text.mono,svg.map text.cidr{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:10.5px}
svg.map .gap rect{fill:url(#hatch);stroke:#e5e7eb}
.role-private rect,.sw.role-private{fill:#eef2f7;stroke:#94a3b8}
.role-catalog rect,.sw.role-catalog{fill:#fef3c7;stroke:#b45309}
.role-catalog.level-error rect,.sw.role-catalog.level-error{fill:#e5e7eb;stroke:#4b5563}
.role-catalog.level-info rect,.sw.role-catalog.level-info{fill:#f5f3ff;stroke:#8b5cf6}
.role-service rect,.sw.role-service{fill:#bfdbfe;stroke:#1d4ed8}
.role-pod rect,.sw.role-pod{fill:#bbf7d0;stroke:#15803d}
.role-pool rect,.sw.role-pool{fill:#99f6e4;stroke:#0f766e}
.role-node rect,.sw.role-node{fill:#fed7aa;stroke:#c2410c}
.role-masquerade rect,.sw.role-masquerade{fill:#e9d5ff;stroke:#7e22ce}
.role-reserved rect,.sw.role-reserved{fill:#fecdd3;stroke:#be123c}
.role-avoid rect,.sw.role-avoid{fill:#fee2e2;stroke:#991b1b}
.role-target rect,.sw.role-target{fill:#cffafe;stroke:#0e7490;stroke-width:2.5;stroke-dasharray:6 3}
.role-kept rect,.sw.role-kept{fill:#dbeafe;stroke:#1d4ed8;stroke-dasharray:3 2}
svg.map .conflict.sev-error rect,.sw.conflict.sev-error{stroke:var(--err);stroke-width:3}
svg.map .conflict.sev-warning rect,.sw.conflict.sev-warning{stroke:#f59e0b;stroke-width:3}
svg.map .conflict.sev-info rect,.sw.conflict.sev-info{stroke:var(--info);stroke-width:2;stroke-dasharray:4 2}
svg.map .badge circle{fill:var(--err)}
svg.map .sev-warning .badge circle{fill:#d97706}
svg.map .sev-info .badge circle{fill:var(--info)}
svg.map .badge text{fill:#fff;font-weight:700;font-size:10px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0;padding:0;list-style:none;font-size:12.5px}
.legend li{display:flex;align-items:center;gap:5px}
.legend svg{flex:none}
#info{margin:8px 0;padding:6px 10px;border-left:4px solid var(--line);background:var(--soft);white-space:pre-wrap;overflow-wrap:anywhere;font-size:13px;min-height:2.2em}
ol.conflicts{padding-left:0;list-style:none;margin:4px 0}
ol.conflicts li{border:1px solid var(--line);border-left-width:4px;border-radius:4px;padding:5px 9px;margin:5px 0;overflow-wrap:anywhere}
ol.conflicts li.sev-error{border-left-color:var(--err)}
ol.conflicts li.sev-warning{border-left-color:var(--warn)}
ol.conflicts li.sev-info{border-left-color:var(--info)}
ol.conflicts li.hl{background:#fff7ed}
.num{font-weight:700;margin-right:4px}
.why{color:#374151}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid var(--line)}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td{overflow-wrap:anywhere}
td.mono{white-space:nowrap;overflow-wrap:normal}
td.mono,td.code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
table.facts th{width:13em;white-space:normal}
table.mapping td.ip{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px;white-space:nowrap}
tr.action-skip td{color:var(--muted)}
.bars{display:grid;grid-template-columns:minmax(0,1fr);gap:10px;max-width:900px}
.bar .what{display:flex;flex-wrap:wrap;justify-content:space-between;gap:0 12px}
.bar .what span:last-child{color:var(--muted)}
.bar svg{display:block;width:100%;height:14px}
.bar .track{fill:#e5e7eb}
.bar .used{fill:#2563eb}
.bar .used.high{fill:var(--warn)}
.bar .used.full{fill:var(--err)}
.bar .waiting{fill:var(--err);fill-opacity:.45}
ul.facts{padding-left:18px;margin:4px 0}
ol.steps{padding-left:0;list-style:none;counter-reset:step;margin:4px 0}
ol.steps>li{border:1px solid var(--line);border-radius:4px;padding:6px 10px;margin:6px 0;overflow-wrap:anywhere}
ol.steps>li.kind-gate{border-left:4px solid var(--err);background:#fef2f2}
ol.steps>li.kind-confirm{border-left:4px solid var(--warn);background:#fffbeb}
ol.steps .head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 8px}
ol.steps .n{font-weight:700}
details summary{cursor:pointer;color:var(--muted)}
footer{color:var(--muted);font-size:12px;padding:18px 20px 24px}
@media (max-width:640px){
 header,main,footer{padding-left:10px;padding-right:10px}
 h1{font-size:17px}
 .hint{display:block}
 body{font-size:13.5px}
 table.facts th{width:auto}
 table.facts,table.facts tbody,table.facts tr,table.facts th,table.facts td{display:block;width:100%}
 table.facts th{border-bottom:0;padding-bottom:0;background:none;color:var(--muted)}
 table.cards thead{display:none}
 table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
 table.cards tr{border-bottom:1px solid var(--line);padding:4px 0}
 table.cards td{border:0;padding:1px 4px;white-space:normal}
 table.cards td[data-th]::before{content:attr(data-th) ": ";color:var(--muted);font-weight:600;font-family:system-ui,"DejaVu Sans",sans-serif}
}
`.trim();

/** The page's script: details of a range on click, tap or Enter; a conflict in the list lights up its ranges. */
const SCRIPT = `
(function () {
  var info = document.getElementById('info');
  function show(el) {
    var t = el.querySelector('title');
    if (info && t) info.textContent = t.textContent;
  }
  var ranges = document.querySelectorAll('[data-cidr][data-role]');
  for (var i = 0; i < ranges.length; i++) {
    (function (el) {
      el.addEventListener('click', function () { show(el); });
      el.addEventListener('focus', function () { show(el); });
      el.addEventListener('keydown', function (e) { if (e.key === 'Enter') show(el); });
    })(ranges[i]);
  }
  var items = document.querySelectorAll('li[data-conflict]');
  for (var j = 0; j < items.length; j++) {
    (function (li) {
      var hit = document.querySelectorAll('[data-conflicts~="' + li.getAttribute('data-conflict') + '"]');
      function set(on) { for (var k = 0; k < hit.length; k++) hit[k].classList.toggle('hl', on); li.classList.toggle('hl', on); }
      li.addEventListener('mouseenter', function () { set(true); });
      li.addEventListener('mouseleave', function () { set(false); });
      li.addEventListener('click', function () { set(!li.classList.contains('hl')); });
    })(items[j]);
  }
})();
`.trim();

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** Nothing may be fetched: no default source, and only this page's own style and script (by hash). */
export const CONTENT_SECURITY_POLICY = `default-src 'none'; style-src ${sha256(STYLE)}; script-src ${sha256(SCRIPT)}; img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'`;

const HATCH = '<svg class="defs" width="0" height="0" aria-hidden="true"><defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
  + '<rect width="6" height="6" fill="#ffffff"></rect><line x1="0" y1="0" x2="0" y2="6" stroke="#e5e7eb" stroke-width="3"></line></pattern></defs></svg>';

function page(title: string, subtitle: string, summary: string, body: string, generator: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${esc(CONTENT_SECURITY_POLICY)}">
<meta name="generator" content="${esc(generator)}">
<title>${esc(title)}</title>
<style>${STYLE}</style>
</head>
<body>
${HATCH}
<header>
<h1>${esc(title)}</h1>
<p class="sub">${esc(subtitle)}</p>
${summary}
</header>
<main>
${body}
</main>
<footer>Written by ${esc(generator)}. This page works offline: everything it shows is inside this file.</footer>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function pill(cls: string, text: string): string {
  return `<span class="pill ${cls}">${esc(text)}</span>`;
}

/** A table that turns into one card per row on a phone (each cell then says its column's name). */
function cardTable(cls: string, headers: string[], rows: Array<{ attrs?: string; cells: Array<{ html: string; cls?: string }> }>): string {
  return `<div class="scroll"><table class="cards ${cls}"><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>`
    + rows.map((r) => `<tr${r.attrs ? ` ${r.attrs}` : ''}>${r.cells.map((c, i) => `<td data-th="${esc(headers[i]!)}"${c.cls ? ` class="${c.cls}"` : ''}>${c.html}</td>`).join('')}</tr>`).join('')
    + '</tbody></table></div>';
}

function factsTable(rows: Array<[string, string]>): string {
  return `<table class="facts"><tbody>${rows.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</tbody></table>`;
}

const LEGEND_ROLES: Array<[string, string]> = [
  ['role-service', ROLE_TITLE.service], ['role-pod', ROLE_TITLE.pod], ['role-pool', ROLE_TITLE.pool], ['role-node', ROLE_TITLE.node],
  ['role-masquerade', ROLE_TITLE.masquerade], ['role-reserved', ROLE_TITLE.reserved], ['role-avoid', ROLE_TITLE.avoid],
  ['role-target', ROLE_TITLE.target], ['role-kept', ROLE_TITLE.kept],
  ['role-catalog', 'well-known network beside clusters'], ['role-catalog level-error', 'unusable (loopback, link-local, ...)'],
  ['role-catalog level-info', "a tool's default range"], ['role-private', ROLE_TITLE.private],
  ['role-private conflict sev-error', 'conflict: error'], ['role-private conflict sev-warning', 'conflict: warning'], ['role-private conflict sev-info', 'conflict: info'],
];

function legend(ranges: readonly MapRange[]): string {
  const present = new Set<string>();
  for (const r of ranges) {
    present.add(`role-${r.role}${r.level && r.role === 'catalog' && r.level !== 'warning' ? ` level-${r.level}` : ''}`);
    if (r.severity) present.add(`role-private conflict sev-${r.severity}`);
  }
  const items = LEGEND_ROLES.filter(([cls]) => present.has(cls));
  return `<ul class="legend" aria-label="legend">${items.map(([cls, text]) =>
    `<li><svg width="22" height="14" aria-hidden="true"><rect class="sw ${cls}" x="1.5" y="1.5" width="19" height="11" rx="2"></rect></svg>${esc(text)}</li>`).join('')}`
    + '<li><svg width="22" height="14" aria-hidden="true"><rect x="1.5" y="1.5" width="19" height="11" fill="url(#hatch)" stroke="#d1d5db"></rect></svg>addresses no listed range claims</li></ul>';
}

function mapSection(report: InspectReport, ranges: MapRange[]): string {
  const text = (n: number) => conflictLine(report.conflicts[n - 1]!, n);
  const families = ([4, 6] as Family[]).filter((f) => ranges.some((r) => r.cidr.family === f && CLUSTER_ROLES.includes(r.role)));
  let out = '<section id="map"><h2>Address map</h2>';
  out += '<p class="sub">Each box is a range; the ranges inside it are drawn in the row below. Widths grow with the logarithm of the size, so small ranges stay visible (the text says each range\'s real size). Hover, tap or focus a range for its details; conflicts are outlined and numbered as in the list below.</p>';
  out += legend(ranges);
  out += '<p class="hint">The map is wider than this screen: swipe each box sideways.</p>';
  if (families.length === 0) out += '<p>No cluster ranges were found.</p>';
  for (const f of families) {
    const m = familyMap(f, ranges, text);
    out += `<h3>${familyName(f)}</h3><h4>The whole ${familyName(f)} space</h4><div class="mapbox">${m.overview}</div>`;
    for (const p of m.panels) out += `<h4 id="${p.id}">${esc(p.title)}</h4><div class="mapbox">${p.svg}</div>`;
  }
  out += '<div id="info" aria-live="polite">Select a range on the map for its details.</div></section>';
  return out;
}

function conflictsSection(report: InspectReport): string {
  const counts = SEVERITIES.map((s) => `${report.conflicts.filter((c) => c.severity === s).length} ${s}`).join(', ');
  let out = `<section id="conflicts"><h2>Conflicts (${esc(counts)})</h2>`;
  if (report.conflicts.length === 0) return `${out}<p>None.</p></section>`;
  out += '<ol class="conflicts">';
  report.conflicts.forEach((c, i) => {
    out += `<li class="sev-${c.severity}" data-conflict="${i + 1}" data-severity="${c.severity}" data-kind="${esc(c.kind)}" data-a="${esc(c.a.cidr)}" data-b="${esc(c.b.cidr)}">`
      + `<span class="num">${i + 1}</span>${pill(`sev-${c.severity}`, c.severity)} <span class="mono">${esc(c.a.cidr)}</span> ${esc(c.a.what)}`
      + ` <b>overlaps</b> <span class="mono">${esc(c.b.cidr)}</span> ${esc(c.b.what)}<br><span class="why">${esc(c.reason)}</span></li>`;
  });
  return `${out}</ol></section>`;
}

function bar(what: string, used: number, total: number, text: string, waiting = 0): string {
  const frac = total > 0 ? Math.min(1, used / total) : 0;
  const shown = used > 0 ? Math.max(frac, 0.006) : 0;
  const wait = total > 0 ? Math.min(1 - shown, waiting / total) : 0;
  const cls = frac >= 1 ? 'used full' : frac >= 0.8 ? 'used high' : 'used';
  return `<div class="bar" data-bar="${esc(what)}" data-used="${used}" data-total="${total}"><div class="what"><span>${esc(what)}</span><span>${esc(text)}</span></div>`
    + `<svg viewBox="0 0 1000 14" preserveAspectRatio="none" role="img" aria-label="${esc(`${what}: ${text}`)}"><rect class="track" width="1000" height="14" rx="3"></rect>`
    + `${shown > 0 ? `<rect class="${cls}" width="${(shown * 1000).toFixed(1)}" height="14" rx="3"></rect>` : ''}`
    + `${wait > 0 ? `<rect class="waiting" x="${(shown * 1000).toFixed(1)}" width="${(wait * 1000).toFixed(1)}" height="14"></rect>` : ''}</svg></div>`;
}

const n = (x: number | string) => (typeof x === 'number' ? x.toLocaleString('en-US') : x);
const nn = (x: number | string) => Number(x);

function capacitySection(report: InspectReport): string {
  const cap = report.capacity;
  const bars: string[] = [];
  for (const ni of cap.nodeIpam) {
    bars.push(bar(`nodes: podCIDRs of /${ni.nodeMask} in ${ni.clusterCIDR}`, ni.nodesWithPodCIDR, nn(ni.maxNodes),
      `${n(ni.nodesWithPodCIDR)} of ${n(ni.maxNodes)} used, ${n(ni.nodesLeft)} left${ni.nodesWaiting ? `, ${n(ni.nodesWaiting)} node(s) waiting without one` : ''}`, ni.nodesWaiting));
  }
  for (const s of cap.serviceRanges) {
    bars.push(bar(`service IPs in ${s.cidr}`, s.used, nn(s.usable), `${n(s.used)} used, ${n(s.free)} free of ${n(s.usable)}`));
  }
  for (const p of cap.pools) {
    bars.push(bar(`Calico blocks of pool ${p.name} (${p.cidr}, /${p.blockSize})`, p.blocksUsed, nn(p.blocksTotal),
      `${n(p.blocksUsed)} of ${n(p.blocksTotal)} blocks on ${n(p.nodesWithBlocks)} node(s)${p.disabled ? ', disabled' : ''}`));
  }
  const facts = [
    `nodes: ${cap.nodes.total} (${cap.nodes.withPodCIDR} with a podCIDR, ${cap.nodes.withoutPodCIDR} without${cap.nodes.waiting.length ? `: ${cap.nodes.waiting.join(', ')}` : ''})`,
    ...cap.nodeIpam.map((ni) => `pods per node: ${n(ni.usablePerNode)} usable addresses per /${ni.nodeMask} (kubelet maxPods also applies)`),
    ...cap.podRanges.map((p) => `pod IPs in ${p.cidr} (${p.role}): ${n(p.podIPs)}`),
    `pods: ${cap.pods.total} (${cap.pods.hostNetwork} on the host network, ${cap.pods.outsideKnownRanges} IPs outside known pod ranges)`,
    `Services: ${cap.services.total} (${cap.services.withClusterIP} with a ClusterIP, ${cap.services.headless} headless, ${cap.services.externalName} ExternalName, ${cap.services.loadBalancer} LoadBalancer, ${cap.services.nodePort} NodePort)`,
  ];
  return `<section id="capacity"><h2>Capacity</h2><div class="bars">${bars.join('') || '<p>No ranges to measure.</p>'}</div>`
    + `<ul class="facts">${facts.map((f) => `<li>${esc(f)}</li>`).join('')}</ul></section>`;
}

function clusterSection(r: InspectReport): string {
  const api = r.serviceCIDRApi ? `ServiceCIDR API ${r.serviceCIDRApi}` : r.serviceCIDRApi === null ? 'no ServiceCIDR API' : 'ServiceCIDR API unknown';
  const rows: Array<[string, string]> = [
    ['source', r.source.kind === 'live' ? `live: ${r.source.server ?? ''}${r.source.context ? ` (context ${r.source.context})` : ''}` : `files: ${r.source.files.join(', ')}`],
    ['Kubernetes', `${r.kubernetesVersion ?? 'unknown'} (${api})`],
    ['platform', r.platform.title],
    ['CNI / IPAM', `${r.cni.plugin} / ${r.cni.ipam}${r.cni.operatorManaged ? ' (operator-managed)' : ''}`],
    ['pod addresses from', r.cni.owner?.title ?? 'unknown'],
    ...(r.platform?.reserved.length ? [['reserved by the platform', r.platform.reserved.map((x) => `${x.cidr} (${x.reason})`).join(', ')] as [string, string]] : []),
    ['kubernetes Service', r.kubernetesServiceIPs.join(', ') || '-'],
    ['cluster DNS', r.dnsService ? `${r.dnsService.namespace}/${r.dnsService.name} ${r.dnsService.clusterIPs.join(', ')} (found by ${r.dnsService.foundBy})` : 'not found'],
  ];
  let out = `<section id="cluster"><h2>Cluster</h2>${factsTable(rows)}`;
  const ranges: Array<[string, string, string]> = [
    ...r.serviceCIDRs.map((e) => ['service', e.cidr, e.labels.join('; ')] as [string, string, string]),
    ...r.podCIDRs.map((e) => ['pod', e.cidr, e.labels.join('; ')] as [string, string, string]),
    ...r.pools.map((p) => ['pool', p.cidr, `${p.name}, blockSize ${p.blockSize}${p.disabled ? ', disabled' : ''}`] as [string, string, string]),
    ...r.masqueradeCIDRs.map((e) => ['masquerade', e.cidr, e.labels.join('; ')] as [string, string, string]),
    ...r.nodeCIDRs.map((e) => ['node', e.cidr, e.labels.join('; ')] as [string, string, string]),
  ];
  out += `<h3>Ranges</h3>${cardTable('ranges', ['role', 'CIDR', 'what'], ranges.map(([role, cidr, what]) => ({
    cells: [{ html: esc(role) }, { html: esc(cidr), cls: 'mono' }, { html: esc(what) }],
  })))}`;
  const mark = (ok: boolean | null) => (ok === true ? pill('ok', 'ok') : ok === false ? pill('fail', 'no') : pill('action', '?'));
  out += `<h3>Readiness</h3><ul class="facts">${r.readiness.map((f) => `<li>${mark(f.ok)} ${esc(f.summary)}</li>`).join('')}</ul>`;
  if (r.warnings.length > 0) out += `<h3>Warnings</h3><ul class="facts">${r.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>`;
  return `${out}</section>`;
}

function summaryLine(report: InspectReport, extra: string[] = []): string {
  const items = [
    ...report.serviceCIDRs.map((e) => `services ${e.cidr}`),
    ...report.podCIDRs.map((e) => `pods ${e.cidr}`),
    ...extra,
  ];
  const counts = SEVERITIES.map((s) => [s, report.conflicts.filter((c) => c.severity === s).length] as const).filter(([, k]) => k > 0);
  return `<ul class="summary">${items.map((t) => `<li class="mono">${esc(t)}</li>`).join('')}`
    + `<li>${counts.length ? counts.map(([s, k]) => pill(`sev-${s}`, `${k} ${s}${k === 1 || s === 'info' ? '' : 's'}`)).join(' ') : pill('ok', 'no conflicts')}</li></ul>`;
}

export interface HtmlOptions {
  avoid?: readonly AvoidRange[];
  /** "kube-renumber 0.1.0" */
  generator: string;
}

function clusterName(r: InspectReport): string {
  return r.source.kind === 'live' ? (r.source.context ?? r.source.server ?? 'live cluster') : (r.source.files[0]?.replace(/\/[^/]*$/, '') ?? 'files');
}

/** `inspect -o html`. */
export function renderInspectHtml(report: InspectReport, opts: HtmlOptions): string {
  const ranges = mapRanges(report, { avoid: opts.avoid });
  const body = mapSection(report, ranges) + conflictsSection(report) + capacitySection(report) + clusterSection(report);
  return page(`Address plan: ${clusterName(report)}`,
    `Kubernetes ${report.kubernetesVersion ?? 'unknown'}, ${report.platform.title}, ${report.cni.plugin} / ${report.cni.ipam}`,
    summaryLine(report), body, opts.generator);
}

// ---------------------------------------------------------------------------------------------------
// Plans

function preflightSection(plan: MigrationPlan): string {
  return `<section id="preflight"><h2>Pre-flight checks</h2><ol class="conflicts">${plan.preflight.map((c) =>
    `<li class="sev-${c.status === 'fail' ? 'error' : c.status === 'warn' ? 'warning' : 'ok'}" data-check="${esc(c.id)}" data-status="${c.status}">`
    + `${pill(c.status, c.status.toUpperCase())} <code>${esc(c.id)}</code> ${esc(c.message)}${c.fix ? `<br><span class="why">fix: ${esc(c.fix)}</span>` : ''}</li>`).join('')}</ol></section>`;
}

function mappingSection(plan: MigrationPlan): string {
  if (!plan.spec.serviceCIDR) return '';
  const c = mappingCounts(plan);
  const ips = (a: string[]) => (a.length ? a.join(', ') : '-');
  const order = { move: 0, keep: 1, skip: 2 } as const;
  const rows = [...plan.mapping].sort((a, b) => order[a.action] - order[b.action]);
  return `<section id="mapping"><h2>Service mapping (old → new)</h2><p>${c.move} moved, ${c.keep} kept, ${c.skip} skipped.</p>`
    + cardTable('mapping', ['Service', 'type', 'tier', 'action', 'old', 'new', 'why'], rows.map((m) => ({
      attrs: `class="action-${m.action}" data-service="${esc(`${m.namespace}/${m.name}`)}" data-action="${m.action}" data-from="${esc(m.from.join(','))}" data-to="${esc(m.to.join(','))}"`,
      cells: [
        { html: `${esc(`${m.namespace}/${m.name}`)}${m.isDNS ? ' (DNS)' : ''}${m.isKubernetes ? ' (API)' : ''}` }, { html: esc(m.type) },
        { html: esc(m.tier === null ? '-' : String(m.tier)) }, { html: esc(m.action) },
        { html: esc(ips(m.from)), cls: 'ip' }, { html: `${m.action === 'move' ? '→ ' : ''}${esc(ips(m.to))}`, cls: 'ip' }, { html: esc(m.reason) },
      ],
    })))
    + '</section>';
}

function stepItem(s: PlanStep, i: number): string {
  const gate = s.kind === 'gate' || s.kind === 'confirm';
  let out = `<li class="step kind-${s.kind}" data-step="${esc(s.id)}" data-kind="${s.kind}"${gate ? ' data-gate="true"' : ''}>`
    + `<div class="head"><span class="n">${i + 1}.</span>${s.kind === 'gate' ? pill('gate', 'GATE') : s.kind === 'confirm' ? pill('confirm', 'CONFIRM') : pill('action', s.kind)}`
    + `<code>${esc(s.id)}</code></div><p>${esc(s.description)}</p>`;
  if (s.items?.length) out += `<p class="sub">${s.items.length} item(s): ${esc(s.items.slice(0, 6).map((x) => `${x.namespace ? `${x.namespace}/` : ''}${x.name}`).join(', '))}${s.items.length > 6 ? ', …' : ''}</p>`;
  for (const sc of s.serviceCIDRs ?? []) out += `<p class="sub">ServiceCIDR <code>${esc(sc.name)}</code>: ${esc(sc.cidrs.join(', '))} (${esc(sc.purpose)})</p>`;
  if (s.gate) {
    out += `<p><b>${s.kind === 'confirm' ? 'Confirm' : 'Gate'}:</b> ${esc(s.gate.reason)}</p>`;
    if (s.gate.instructions.length) out += `<pre>${esc(s.gate.instructions.join('\n'))}</pre>`;
    if (s.kind === 'gate') out += `<p class="sub">resume checks: ${esc(s.gate.check)}</p>`;
    for (const p of s.gate.patches ?? []) {
      out += `<details><summary>patch ${esc(p.id)} (${esc(p.distribution)}): ${esc(p.target)}</summary><p>${esc(p.description)}</p><pre>${esc(p.before.trimEnd())}</pre><p>becomes</p><pre>${esc(p.after.trimEnd())}</pre></details>`;
    }
  }
  out += `<details><summary>rollback</summary><p>${esc(s.rollback)}</p></details></li>`;
  return out;
}

function stepsSection(plan: MigrationPlan): string {
  const gates = plan.steps.filter((s) => s.kind === 'gate').length;
  return `<section id="steps"><h2>Steps (${plan.steps.length}, ${gates} gate${gates === 1 ? '' : 's'})</h2>`
    + (plan.steps.length ? `<ol class="steps">${plan.steps.map(stepItem).join('')}</ol>` : '<p>None: the pre-flight checks stop the migration.</p>')
    + '</section>';
}

function referencesSection(plan: MigrationPlan): string {
  if (!plan.references?.length) return '';
  return `<section id="references"><h2>References to the old ranges (${plan.references.length})</h2>`
    + cardTable('references', ['object', 'field', 'value', 'proposed', 'note'], plan.references.map((r) => ({
      cells: [
        { html: esc(`${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`) }, { html: esc(r.field), cls: 'code' },
        { html: esc(r.value), cls: 'code' }, { html: esc(r.proposed ?? '-'), cls: 'code' }, { html: esc(r.note) },
      ],
    })))
    + '</section>';
}

/** `plan -o html`: the plan with the map of today's ranges and its targets. `report` is today's inspect report. */
/** `plan -o html`; `summary`: the plan's summary (src/plan/summary.ts), the page's first section. */
export function renderPlanHtml(plan: MigrationPlan, report: InspectReport, opts: HtmlOptions & { summary: PlanSummary }): string {
  const sc = plan.spec.serviceCIDR;
  const pc = plan.spec.podCIDR;
  const moves = [sc ? `Service CIDR ${sc.from.join(', ') || '?'} → ${sc.target.join(', ')}` : '', pc ? `Pod CIDR ${pc.from.join(', ')} → ${pc.to.join(', ')}` : ''].filter(Boolean);
  const ranges = mapRanges(report, { avoid: opts.avoid, plan });
  const failed = plan.preflight.filter((c) => c.status === 'fail').length;
  const rows: Array<[string, string]> = [
    ['cluster', plan.metadata.generatedFrom],
    ['Kubernetes', `${plan.metadata.kubernetesVersion ?? 'unknown'} (${plan.metadata.distribution})`],
    ...(sc ? [
      ['service range', `${sc.from.join(', ')} → ${sc.target.join(', ')} (--service-cluster-ip-range afterwards: ${sc.to.join(',') || '?'})`],
      ['strategy', plan.spec.strategy ?? '-'],
      ['kept ranges', sc.kept.join(', ') || 'none'],
    ] as Array<[string, string]> : []),
    ...(pc ? [
      ['pod range', `${pc.from.join(', ')} → ${pc.to.join(', ')}`],
      ['pod IPAM', podPath(pc.ipam).summary(pc)],
    ] as Array<[string, string]> : []),
    ['pre-flight', `${failed} failed, ${plan.preflight.filter((c) => c.status === 'warn').length} warning(s), ${plan.preflight.filter((c) => c.status === 'pass').length} passed`],
  ];
  const body = `<section id="summary"><h2>Summary</h2>${factsTable(summaryLines(opts.summary))}</section>`
    + `<section id="plan"><h2>Plan</h2>${factsTable(rows)}</section>`
    + mapSection(report, ranges) + preflightSection(plan) + mappingSection(plan) + stepsSection(plan) + referencesSection(plan)
    + conflictsSection(report) + capacitySection(report);
  const extra = [...(sc?.target ?? []).map((t) => `new services ${t}`), ...(pc?.to ?? []).map((t) => `new pods ${t}`)];
  return page(`Migration plan: ${moves.join('; ')}`, `${clusterName(report)}; Kubernetes ${plan.metadata.kubernetesVersion ?? 'unknown'}, ${plan.metadata.distribution}`,
    summaryLine(report, extra), body, opts.generator);
}
