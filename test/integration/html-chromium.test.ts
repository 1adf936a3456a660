// `inspect -o html` and `plan -o html` in a real browser: Debian's chromium (installed by the test setup when
// missing, test/testbed/chromium.ts), headless, driven over the DevTools protocol on a pipe, with name
// resolution and the proxy pointed at nothing. For the seed-000 example (examples/kops-tailscale) and a plan
// for it, at a laptop (1366×900) and a phone (390×844) viewport: no console error, no CSP violation, no request
// but the page itself, no horizontal page scroll (the map scrolls inside its own box), the SVG range elements
// rendered with their labels, the page's script and style applied (CSP hashes right), and screenshots that are
// PNGs of the viewport's size and not blank. Writes docs/address-map.png (the laptop view of the example) when
// its pixels changed.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Browser, ensureChromium, findChromium } from '../testbed/chromium.ts';
import { decodePng, imageStats } from '../testbed/png.ts';
import { spawn } from 'node:child_process';

/** The built CLI run from the checkout's root. */
function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(ROOT, 'bin/kube-renumber.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Relative, run from the checkout: the page names the example as a user typing the README's command would. */
const EX = 'examples/kops-tailscale';
const DOC_SHOT = join(ROOT, 'docs/address-map.png');
const canInstall = process.getuid?.() === 0 || findChromium() !== undefined;
const skip = canInstall ? false : 'chromium is missing and installing it needs root (apt-get install -y chromium)';

const VIEWPORTS = [
  { name: 'laptop', width: 1366, height: 900, mobile: false },
  { name: 'phone', width: 390, height: 844, mobile: true },
] as const;

interface RangeInfo { cidr: string; role: string; label: string; view: string; svg: boolean; width: number; title: string }

describe('HTML address map in headless Chromium', { skip }, () => {
  let browser: Browser;
  let dir: string;
  const pages: Record<string, { file: string; report: any; plan?: any }> = {};

  before(async () => {
    const binary = await ensureChromium();
    dir = mkdtempSync(join(tmpdir(), 'kr-html-'));
    browser = await Browser.launch(binary, join(dir, 'profile'));
    const get = async (args: string[]) => {
      const r = await cli(args);
      assert.equal(r.code, 0, r.err);
      return r.out;
    };
    const planArgs = ['plan', '-f', EX, '--service-cidr', '10.6.0.0/20', '--pod-cidr', '10.4.0.0/15'];
    const report = JSON.parse(await get(['inspect', '-f', EX, '-o', 'json']));
    writeFileSync(join(dir, 'inspect.html'), await get(['inspect', '-f', EX, '-o', 'html']));
    writeFileSync(join(dir, 'plan.html'), await get([...planArgs, '-o', 'html']));
    pages.inspect = { file: join(dir, 'inspect.html'), report };
    pages.plan = { file: join(dir, 'plan.html'), report, plan: JSON.parse(await get([...planArgs, '-o', 'json'])) };
  });

  after(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const which of ['inspect', 'plan'] as const) {
    for (const vp of VIEWPORTS) {
      test(`${which} at ${vp.width}×${vp.height} (${vp.name})`, async () => {
        const { file, report, plan } = pages[which]!;
        const url = pathToFileURL(file).href;
        const page = await browser.open(url, vp.width, vp.height, vp.mobile);
        try {
          const ranges = await page.evaluate<RangeInfo[]>(`Array.from(document.querySelectorAll('[data-cidr][data-role]')).map((e) => ({
            cidr: e.getAttribute('data-cidr'), role: e.getAttribute('data-role'), label: e.getAttribute('data-label'), view: e.getAttribute('data-view'),
            svg: e.namespaceURI === 'http://www.w3.org/2000/svg' && e.closest('svg') !== null,
            width: e.getBoundingClientRect().width, title: (e.querySelector('title') || {}).textContent || '' }))`);
          const expected = [
            ...report.serviceCIDRs.map((e: any) => ({ ...e, role: 'service' })), ...report.podCIDRs.map((e: any) => ({ ...e, role: 'pod' })),
            ...report.pools.map((e: any) => ({ ...e, role: 'pool' })), ...report.nodeCIDRs.map((e: any) => ({ ...e, role: 'node' })),
            ...report.masqueradeCIDRs.map((e: any) => ({ ...e, role: 'masquerade' })),
            ...(plan ? [...plan.spec.serviceCIDR.target, ...plan.spec.podCIDR.to].map((cidr: string) => ({ cidr, role: 'target', labels: [] })) : []),
          ];
          for (const e of expected) {
            const hit = ranges.filter((r) => r.cidr === e.cidr && r.role === e.role && r.view === 'detail');
            assert.equal(hit.length, 1, `${e.role} ${e.cidr}`);
            assert.ok(hit[0]!.svg, `${e.role} ${e.cidr} is an SVG element`);
            assert.ok(hit[0]!.width >= 20, `${e.role} ${e.cidr} is drawn (${hit[0]!.width} px wide)`);
            if (e.labels.length) assert.equal(hit[0]!.label, e.labels.join('; '));
            assert.ok(hit[0]!.title.includes(e.cidr));
          }
          const conflicts = await page.evaluate<number>(`document.querySelectorAll('li[data-conflict]').length`);
          assert.equal(conflicts, report.conflicts.length);

          // The style applied (its CSP hash is right): a service range is filled blue.
          const fill = await page.evaluate<string>(`getComputedStyle(document.querySelector('[data-role="service"][data-view="detail"] rect')).fill`);
          assert.equal(fill, 'rgb(191, 219, 254)');
          // The script ran (its CSP hash is right): a click on a range shows its details.
          const info = await page.evaluate<string>(`(() => { const el = document.querySelector('[data-role="service"][data-view="detail"]');
            el.dispatchEvent(new MouseEvent('click', { bubbles: true })); return document.getElementById('info').textContent; })()`);
          assert.ok(info.includes(report.serviceCIDRs[0].cidr), info);

          // No horizontal page scroll; on the phone the map scrolls inside its own box.
          const layout = await page.evaluate<{ page: number; inner: number; box: number; boxInner: number }>(`({ page: document.documentElement.scrollWidth,
            inner: window.innerWidth, box: document.querySelector('.mapbox').scrollWidth, boxInner: document.querySelector('.mapbox').clientWidth })`);
          assert.equal(layout.inner, vp.width);
          assert.ok(layout.page <= vp.width, `page is ${layout.page} px wide at ${vp.width}`);
          if (vp.mobile) assert.ok(layout.box > layout.boxInner, 'the map scrolls inside its box on a phone');

          const png = await page.screenshot();
          const img = decodePng(png);
          assert.equal(img.width, vp.width);
          assert.equal(img.height, vp.height);
          const stats = imageStats(img);
          assert.ok(stats.colours >= 50, `${stats.colours} colours`);
          assert.ok(stats.foreground >= 0.05, `${(stats.foreground * 100).toFixed(1)}% of pixels are not background`);

          assert.deepEqual(page.events.errors, []);
          assert.deepEqual(page.events.requests, [url]);

          if (which === 'inspect' && vp.name === 'laptop') {
            const same = existsSync(DOC_SHOT) && (() => {
              const old = decodePng(readFileSync(DOC_SHOT));
              return old.width === img.width && old.height === img.height && old.rgba.equals(img.rgba);
            })();
            if (!same) writeFileSync(DOC_SHOT, png);
          }
        } finally {
          await page.close();
        }
      });
    }
  }
});
