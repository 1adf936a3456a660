import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import type { InspectReport } from '../../src/analyze/inspect.ts';
import type { MigrationPlan } from '../../src/plan/plan.ts';
import { parseCidr } from '../../src/net/index.ts';
import { containmentForest, type MapRange } from '../../src/render/address-map.ts';
import { CONTENT_SECURITY_POLICY, renderInspectHtml } from '../../src/render/html.ts';
import { all, parseHtml, text, type El } from './html-parse.ts';
import { run } from './run-cli.ts';

install();

const EX = 'examples/kops-tailscale';

async function ok(argv: string[]): Promise<string> {
  const r = await run(argv);
  assert.equal(r.code, 0, r.err);
  return r.out;
}

const ranges = (doc: El) => all(doc, (e) => e.attrs['data-cidr'] !== undefined && e.attrs['data-role'] !== undefined);
const find = (doc: El, cidr: string, role: string, view = 'detail') =>
  ranges(doc).filter((e) => e.attrs['data-cidr'] === cidr && e.attrs['data-role'] === role && e.attrs['data-view'] === view);

/** Every cluster range of an inspect report, with the role the map gives it. */
function clusterRanges(r: InspectReport): Array<{ cidr: string; role: string; labels: string[] }> {
  return [
    ...r.serviceCIDRs.map((e) => ({ ...e, role: 'service' })),
    ...r.podCIDRs.map((e) => ({ ...e, role: 'pod' })),
    ...r.pools.map((e) => ({ ...e, role: 'pool' })),
    ...r.nodeCIDRs.map((e) => ({ ...e, role: 'node' })),
    ...r.masqueradeCIDRs.map((e) => ({ ...e, role: 'masquerade' })),
  ];
}

/** No reference to anything outside the document: no src, no href but #fragments, no url() but url(#id), no @import. */
function assertSelfContained(html: string, doc: El): void {
  for (const el of all(doc, () => true)) {
    for (const [k, v] of Object.entries(el.attrs)) {
      if (k === 'src' || k === 'srcset' || k === 'action' || k === 'formaction' || k === 'xlink:href') assert.fail(`<${el.tag} ${k}="${v}">`);
      if (k === 'href') assert.match(v, /^#[\w-]+$/, `<${el.tag} href="${v}">`);
      if (k.startsWith('on')) assert.fail(`inline event handler <${el.tag} ${k}>`);
    }
    if (el.tag === 'link' || el.tag === 'iframe' || el.tag === 'object' || el.tag === 'embed' || el.tag === 'img' || el.tag === 'base') assert.fail(`<${el.tag}>`);
  }
  assert.doesNotMatch(html, /https?:/i, 'no http: or https: anywhere');
  assert.doesNotMatch(html.replace(/url\(#[\w-]+\)/g, ''), /url\(/, 'url() only for #fragments');
  assert.doesNotMatch(html, /@import|@font-face/);
  assert.doesNotMatch(html.replace(/\/\/[^\n]*$/gm, (m) => (m.includes('://') ? m : '')), /(src|href)\s*=\s*"\/\//);
}

/** The CSP meta tag: nothing allowed but this page's own <style> and <script>, by their hashes. */
function assertCsp(doc: El): void {
  const meta = all(doc, (e) => e.tag === 'meta' && e.attrs['http-equiv'] === 'Content-Security-Policy');
  assert.equal(meta.length, 1);
  const csp = meta[0]!.attrs.content!;
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*|https?:|data:/);
  const hash = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
  const scripts = all(doc, (e) => e.tag === 'script');
  const styles = all(doc, (e) => e.tag === 'style');
  assert.equal(scripts.length, 1);
  assert.equal(styles.length, 1);
  assert.ok(csp.includes(`script-src ${hash(scripts[0]!.raw!)}`), 'the script hash is the script');
  assert.ok(csp.includes(`style-src ${hash(styles[0]!.raw!)}`), 'the style hash is the style');
}

describe('inspect -o html', () => {
  it('is one well-formed, self-contained document with a strict CSP', async () => {
    const html = await ok(['inspect', '-f', EX, '-o', 'html']);
    assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
    const doc = parseHtml(html);
    assertSelfContained(html, doc);
    assertCsp(doc);
    assert.equal(all(doc, (e) => e.tag === 'html').length, 1);
    assert.ok(all(doc, (e) => e.tag === 'meta' && e.attrs.name === 'viewport').length === 1);
  });

  it('draws every cluster range of the example with its CIDR, role and label', async () => {
    const report = JSON.parse(await ok(['inspect', '-f', EX, '-o', 'json'])) as InspectReport;
    const doc = parseHtml(await ok(['inspect', '-f', EX, '-o', 'html']));
    const expected = clusterRanges(report);
    assert.ok(expected.length >= 5);
    for (const e of expected) {
      const hit = find(doc, e.cidr, e.role);
      assert.equal(hit.length, 1, `${e.role} ${e.cidr} on the map`);
      assert.equal(hit[0]!.attrs['data-label'], e.labels.join('; '));
      const title = all(hit[0]!, (x) => x.tag === 'title');
      assert.ok(text(title[0]!).includes(e.cidr));
      assert.equal(hit[0]!.tag, 'g');
      assert.equal(all(hit[0]!, (x) => x.tag === 'rect').length >= 1, true);
    }
    // Context: CGNAT / Tailscale, RFC 1918 and link-local, each once in the detail panels or the overview.
    assert.equal(find(doc, '100.64.0.0/10', 'catalog').length, 1);
    assert.equal(find(doc, '169.254.0.0/16', 'catalog', 'overview').length, 1);
    assert.equal(find(doc, '172.16.0.0/12', 'private').length, 1);
  });

  it('lists every conflict with its reason and marks it on the ranges it names', async () => {
    const report = JSON.parse(await ok(['inspect', '-f', EX, '-o', 'json'])) as InspectReport;
    const doc = parseHtml(await ok(['inspect', '-f', EX, '-o', 'html']));
    assert.ok(report.conflicts.length > 0);
    const items = all(doc, (e) => e.tag === 'li' && e.attrs['data-conflict'] !== undefined);
    assert.equal(items.length, report.conflicts.length);
    report.conflicts.forEach((c, i) => {
      const li = items[i]!;
      assert.equal(li.attrs['data-conflict'], String(i + 1));
      assert.equal(li.attrs['data-severity'], c.severity);
      assert.equal(li.attrs['data-a'], c.a.cidr);
      assert.ok(text(li).includes(c.reason), `conflict ${i + 1} says why`);
      const marked = ranges(doc).filter((e) => e.attrs['data-view'] === 'detail' && (e.attrs['data-conflicts'] ?? '').split(' ').includes(String(i + 1)));
      assert.ok(marked.some((e) => e.attrs['data-cidr'] === c.a.cidr), `conflict ${i + 1} marked on ${c.a.cidr}`);
      assert.ok(marked.some((e) => e.attrs['data-cidr'] === c.b.cidr), `conflict ${i + 1} marked on ${c.b.cidr}`);
      for (const m of marked) assert.ok(text(all(m, (x) => x.tag === 'title')[0]!).includes(c.reason));
    });
    // A catalog conflict marks the catalog range and the cluster range, not the masquerade range of the same CIDR.
    const tailscale = report.conflicts.findIndex((c) => c.a.cidr === '100.64.0.0/13' && c.b.cidr === '100.64.0.0/10');
    assert.ok(tailscale >= 0);
    const masq = find(doc, '100.64.0.0/10', 'masquerade')[0]!;
    assert.ok(!(masq.attrs['data-conflicts'] ?? '').split(' ').includes(String(tailscale + 1)));
  });

  it('shows capacity as bars: nodes, service IPs and pool blocks', async () => {
    const report = JSON.parse(await ok(['inspect', '-f', EX, '-o', 'json'])) as InspectReport;
    const doc = parseHtml(await ok(['inspect', '-f', EX, '-o', 'html']));
    const bars = all(doc, (e) => e.attrs['data-bar'] !== undefined);
    const cap = report.capacity;
    assert.equal(bars.length, cap.nodeIpam.length + cap.serviceRanges.length + cap.pools.length);
    const svc = bars.find((b) => b.attrs['data-bar']!.includes(cap.serviceRanges[0]!.cidr))!;
    assert.equal(svc.attrs['data-used'], String(cap.serviceRanges[0]!.used));
    assert.equal(svc.attrs['data-total'], String(cap.serviceRanges[0]!.usable));
    const pool = bars.find((b) => b.attrs['data-bar']!.includes(cap.pools[0]!.name))!;
    assert.equal(pool.attrs['data-used'], String(cap.pools[0]!.blocksUsed));
  });

  it('keeps small ranges readable: every box of a detail panel is wide enough for its CIDR, IPv6 included', async () => {
    const seed = parseHtml(await ok(['inspect', '-f', EX, '-o', 'html', '--avoid', '172.20.8.0/24=office']));
    assert.equal(find(seed, '172.20.8.0/24', 'avoid').length, 1);
    // Dual-stack kubeadm: an IPv6 /112 service range in fc00::/7.
    const dual = parseHtml(await ok(['inspect', '-f', 'test/fixtures/inventory/kubeadm-v1beta4.yaml', '-o', 'html']));
    assert.equal(find(dual, 'fd00:10:96::/112', 'service').length, 1);
    assert.equal(find(dual, 'fd00:10:244::/56', 'pod').length, 1);
    assert.equal(find(dual, 'fc00::/7', 'private').length, 1);
    for (const doc of [seed, dual]) {
      for (const e of ranges(doc).filter((x) => x.attrs['data-view'] === 'detail')) {
        const rect = all(e, (x) => x.tag === 'rect')[0]!;
        const need = e.attrs['data-cidr']!.length * 6.4 + 8;
        assert.ok(Number(rect.attrs.width) >= need, `${e.attrs['data-cidr']} is ${rect.attrs.width} wide, needs ${need}`);
        assert.ok(all(e, (x) => x.tag === 'text').some((t) => text(t) === e.attrs['data-cidr']), `${e.attrs['data-cidr']} is written out`);
      }
    }
  });

  it('escapes what comes from the cluster: a Service and a pool named <script>…', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kr-html-'));
    cpSync(EX, dir, { recursive: true });
    const evil = '<script>alert(1)<';
    const calico = readFileSync(join(dir, 'calico.yaml'), 'utf8').replace('name: default-ipv4-ippool', `name: ${JSON.stringify(evil)}`);
    writeFileSync(join(dir, 'calico.yaml'), calico);
    const svcs = yaml.load(readFileSync(join(dir, 'services.yaml'), 'utf8')) as { items: Array<Record<string, any>> };
    const web = structuredClone(svcs.items.find((s) => s.metadata.name === 'web')!);
    web.metadata.name = '"><script>alert(2)';
    web.metadata.uid = 'c0ffee00-0000-4000-8000-000000000001';
    web.spec.clusterIP = '100.70.4.99';
    web.spec.clusterIPs = ['100.70.4.99'];
    svcs.items.push(web);
    writeFileSync(join(dir, 'services.yaml'), yaml.dump(svcs));

    const ins = await ok(['inspect', '-f', dir, '-o', 'html']);
    const plan = await ok(['plan', '-f', dir, '--service-cidr', '100.32.0.0/16', '-o', 'html']);
    for (const html of [ins, plan]) {
      const doc = parseHtml(html);
      assert.equal(all(doc, (e) => e.tag === 'script').length, 1, 'only the page\'s own script');
      assert.doesNotMatch(html, /<script>alert/);
      assert.ok(find(doc, '100.96.0.0/11', 'pool')[0]!.attrs['data-label']!.includes(evil), 'the pool name is there, as text');
    }
    const row = all(parseHtml(plan), (e) => e.tag === 'tr' && e.attrs['data-service'] === 'default/"><script>alert(2)');
    assert.equal(row.length, 1);
    assert.ok(text(row[0]!).includes('default/"><script>alert(2)'));
  });

  it('escapes labels, reasons and names in a report given directly', async () => {
    const report = JSON.parse(await ok(['inspect', '-f', EX, '-o', 'json'])) as InspectReport;
    const bad = '</title></g></svg><script>alert(3)</script><img src=x onerror=alert(4)>&amp;';
    report.serviceCIDRs[0]!.labels = [bad];
    report.conflicts[0]!.reason = bad;
    report.warnings = [bad];
    report.dnsService = { ...report.dnsService!, name: bad };
    const html = renderInspectHtml(report, { generator: bad, avoid: [{ cidr: '10.1.0.0/16', reason: bad, from: bad }] });
    const doc = parseHtml(html);
    assertSelfContained(html, doc);
    assert.equal(all(doc, (e) => e.tag === 'script').length, 1);
    assert.equal(all(doc, (e) => e.tag === 'img').length, 0);
    assert.equal(find(doc, '100.64.0.0/13', 'service')[0]!.attrs['data-label'], bad);
    assert.equal(find(doc, '10.1.0.0/16', 'avoid')[0]!.attrs['data-label'], `range to avoid: ${bad}`);
    assert.ok(text(all(doc, (e) => e.attrs['data-conflict'] === '1')[0]!).includes(bad));
  });

  it('is refused where it does not belong, and listed where it does', async () => {
    const r = await run(['suggest', '--for', 'services', '-f', EX, '-o', 'html']);
    assert.equal(r.code, 2);
    assert.match(r.err, /^error: -o html is not a known output format/);
    assert.match((await run(['inspect', '--help'])).out, /-o table\|wide\|json\|yaml\|markdown\|html/);
    assert.match((await run(['plan', '--help'])).out, /html/);
  });
});

describe('plan -o html', () => {
  // kOps: the pair suggest --for services,pods gives (both inside the new nonMasqueradeCIDR 10.4.0.0/14)
  const argv = ['plan', '-f', EX, '--service-cidr', '10.6.0.0/20', '--pod-cidr', '10.4.0.0/15'];

  it('draws the targets, the mapping old → new, and every step with its gates', async () => {
    const plan = JSON.parse(await ok([...argv, '-o', 'json'])) as MigrationPlan;
    const html = await ok([...argv, '-o', 'html']);
    const doc = parseHtml(html);
    assertSelfContained(html, doc);
    assertCsp(doc);
    for (const t of [...plan.spec.serviceCIDR!.target, ...plan.spec.podCIDR!.to]) {
      assert.equal(find(doc, t, 'target').length, 1, `target ${t}`);
    }
    for (const k of plan.spec.serviceCIDR!.kept) assert.equal(find(doc, k, 'kept').length, 1, `kept ${k}`);
    // Today's ranges and conflicts are there too.
    assert.equal(find(doc, '100.64.0.0/13', 'service').length, 1);
    assert.ok(all(doc, (e) => e.attrs['data-conflict'] !== undefined).length > 0);

    const rows = all(doc, (e) => e.tag === 'tr' && e.attrs['data-service'] !== undefined);
    assert.equal(rows.length, plan.mapping.length);
    for (const m of plan.mapping) {
      const row = rows.find((r) => r.attrs['data-service'] === `${m.namespace}/${m.name}`)!;
      assert.ok(row, `${m.namespace}/${m.name}`);
      assert.equal(row.attrs['data-action'], m.action);
      assert.equal(row.attrs['data-from'], m.from.join(','));
      assert.equal(row.attrs['data-to'], m.to.join(','));
    }

    const steps = all(doc, (e) => e.tag === 'li' && e.attrs['data-step'] !== undefined);
    assert.deepEqual(steps.map((s) => s.attrs['data-step']), plan.steps.map((s) => s.id));
    const gates = plan.steps.filter((s) => s.kind === 'gate' || s.kind === 'confirm').map((s) => s.id);
    assert.ok(gates.length > 0);
    assert.deepEqual(steps.filter((s) => s.attrs['data-gate'] === 'true').map((s) => s.attrs['data-step']), gates);
    for (const s of plan.steps.filter((x) => x.kind === 'gate')) {
      const li = steps.find((x) => x.attrs['data-step'] === s.id)!;
      assert.ok(text(li).includes('GATE'));
      assert.ok(text(li).includes(s.gate!.reason));
    }
    const checks = all(doc, (e) => e.attrs['data-check'] !== undefined);
    assert.deepEqual(checks.map((c) => c.attrs['data-check']), plan.preflight.map((c) => c.id));
  });
});

describe('plan -o html: the pod IPAM row', () => {
  // The row is the planned path's own summary (the Markdown plan's "Pod IPAM"), whichever path it is.
  const cases: Array<[string, string, string]> = [
    ['kubeadm-exhausted', 'calico', 'Calico IPAM'],
    ['k3s', 'node', 'node podCIDRs (nodes drained and re-registered)'],
    ['cilium-multi-pool', 'cilium-multi-pool', 'Cilium multi-pool IPAM (a new CiliumPodIPPool, the default pool switched)'],
  ];
  for (const [example, ipam, row] of cases) {
    it(`${example}: ${ipam}`, async () => {
      const argv = ['plan', '-f', `examples/${example}`, '--pod-cidr', '10.60.0.0/16'];
      const plan = JSON.parse(await ok([...argv, '-o', 'json'])) as MigrationPlan;
      assert.equal(plan.spec.podCIDR!.ipam, ipam);
      const doc = parseHtml(await ok([...argv, '-o', 'html']));
      const rows = all(doc, (e) => e.tag === 'tr' && e.children.some((c) => typeof c !== 'string' && c.tag === 'th' && text(c) === 'pod IPAM'));
      assert.equal(rows.length, 1);
      assert.equal(text(rows[0]!).replace(/^pod IPAM/, ''), row);
    });
  }
});

describe('address map layout', () => {
  const r = (cidr: string, role: MapRange['role']): MapRange => ({ cidr: parseCidr(cidr), role, name: cidr, label: cidr, detail: '', conflicts: [] });

  it('nests CIDRs by containment, equal CIDRs outermost by role (context, then the cluster, then the plan)', () => {
    const forest = containmentForest([
      r('100.96.0.0/11', 'pool'), r('100.64.0.0/13', 'service'), r('100.64.0.0/10', 'masquerade'), r('100.64.0.0/10', 'catalog'),
      r('100.96.0.0/11', 'pod'), r('172.20.0.0/16', 'node'), r('172.16.0.0/12', 'private'), r('10.0.0.0/8', 'private'),
    ]);
    const show = (n: ReturnType<typeof containmentForest>[number]): unknown => [`${n.r.role} ${n.r.name}`, ...n.children.map(show)];
    assert.deepEqual(forest.map(show), [
      ['private 10.0.0.0/8'],
      ['catalog 100.64.0.0/10', ['masquerade 100.64.0.0/10', ['service 100.64.0.0/13'], ['pod 100.96.0.0/11', ['pool 100.96.0.0/11']]]],
      ['private 172.16.0.0/12', ['node 172.20.0.0/16']],
    ]);
  });
});
