/**
 * The README a newcomer reads: a first plan of the bundled example within its first screen, with the ranges
 * `suggest` gives for it; no line over 200 characters outside code blocks; every link to a file of the checkout
 * (and to a heading in it) resolves. The same link check for docs/reference.md, where the reference moved.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { run } from './run-cli.ts';
import { install } from '../../src/install.ts';

install();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** A first screen: what a terminal or a repository page shows before one scrolls. */
const FIRST_SCREEN = 50;

/** The lines outside fenced code blocks, with their numbers. */
export function proseLines(text: string): Array<[number, string]> {
  let fenced = false;
  const out: Array<[number, string]> = [];
  text.split('\n').forEach((l, i) => {
    if (/^\s*(```|~~~)/.test(l)) { fenced = !fenced; return; }
    if (!fenced) out.push([i + 1, l]);
  });
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation but "-" and "_" dropped, spaces to "-". */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  return new Set(proseLines(text).filter(([, l]) => /^#{1,6} /.test(l)).map(([, l]) => anchorOf(l.replace(/^#+ /, ''))));
}

/** Every relative link of `file` that names no existing file, or no heading of it. */
function brokenLinks(file: string): string[] {
  const text = proseLines(readFileSync(file, 'utf8')).map(([, l]) => l).join('\n').replace(/`[^`\n]*`/g, '');
  const bad: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const url = m[1]!;
    if (/^[a-z]+:/.test(url)) continue;
    const [path, anchor] = url.split('#') as [string, string | undefined];
    const target = path === '' ? file : join(dirname(file), path);
    if (!existsSync(target)) { bad.push(`${url}: no such file`); continue; }
    if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) bad.push(`${url}: no such heading`);
  }
  return bad;
}

describe('README', () => {
  it('has no line over 200 characters outside code blocks', () => {
    const long = proseLines(README).filter(([, l]) => l.length > 200).map(([n, l]) => `line ${n}: ${l.length} characters`);
    assert.deepEqual(long, []);
    // the rule sees a long line: one in a code block is left alone, one outside is reported
    const sample = `text\n\`\`\`sh\n${'x'.repeat(250)}\n\`\`\`\n${'y'.repeat(201)}\n`;
    assert.deepEqual(proseLines(sample).filter(([, l]) => l.length > 200).map(([n]) => n), [5]);
  });

  it('a first plan of the bundled example within the first screen, with the ranges suggest gives', async () => {
    const screen = README.split('\n').slice(0, FIRST_SCREEN).join('\n');
    const plan = /^npx kube-renumber plan -f (examples\/[\w-]+) --service-cidr (\S+) --pod-cidr (\S+)$/m.exec(screen);
    assert.ok(plan, `no "npx kube-renumber plan -f examples/..." in the README's first ${FIRST_SCREEN} lines`);
    const [, dir, svc, pods] = plan;
    const s = await run(['suggest', '--for', 'services,pods', '-f', join(ROOT, dir!), '-o', 'json']);
    assert.equal(s.code, 0, s.err);
    const j = JSON.parse(s.out);
    assert.deepEqual([svc, pods], [j.services.cidr, j.pods.cidr], 'the README plans the pair suggest gives');
    assert.ok(README.replace(/\s+/g, ' ').includes(`the envelope ${j.envelope}, which becomes the new nonMasqueradeCIDR`), `the README names suggest's envelope ${j.envelope}`);
    const p = await run(['plan', '-f', join(ROOT, dir!), '--service-cidr', svc!, '--pod-cidr', pods!]);
    assert.equal(p.code, 0, `the README's plan command works: ${p.err}`);
    assert.match(p.out, /^SUMMARY\n/);
    // the five commands, each with what it prints
    for (const c of ['inspect', 'suggest', 'plan', 'apply', 'verify']) assert.match(README, new RegExp(`^- \`${c}\`: `, 'm'), `what ${c} prints`);
  });

  it('links the walkthrough, production and the reference, and every link resolves', () => {
    for (const doc of ['docs/walkthrough.md', 'docs/production.md', 'docs/reference.md']) assert.ok(README.includes(`](${doc})`), doc);
    assert.deepEqual(brokenLinks(join(ROOT, 'README.md')), []);
    assert.deepEqual(brokenLinks(join(ROOT, 'docs/reference.md')), []);
    assert.equal(anchorOf('State, backups, locks'), 'state-backups-locks');
    assert.equal(anchorOf('Address map: `-o html`'), 'address-map--o-html');
  });

  it('names no placeholder address to install from', () => {
    // the one address to fill in is where you publish archives yourself (--release-url)
    assert.doesNotMatch(README.replace(/--release-url https:\/\/HOST\S*/g, ''), /https?:\/\/HOST\b/);
    assert.doesNotMatch(README, /placeholder/i);
  });
});
