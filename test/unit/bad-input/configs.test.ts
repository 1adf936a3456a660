/**
 * The bad-input corpus for the config file (--config, KUBE_RENUMBER_CONFIG, ~/.config/kube-renumber/config.yaml):
 * a file that cannot be read or holds something malformed is exit 3, whichever way it was named; an empty one is
 * no error (checked, with the other files that must work, in the unit tests at the end).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../src/cli/config.ts';
import { run } from '../run-cli.ts';
import { corpus, ROOT, type BadInputCase } from './harness.ts';

const KOPS = `${ROOT}examples/kops-tailscale`;
const isRoot = process.getuid?.() === 0;

/** A config case: `inspect -f KOPS --config $D/config.yaml` with this content. */
const file = (name: string, content: string | Buffer, message: RegExp): BadInputCase => ({
  name, args: ['inspect', '-f', KOPS, '--config', '$D/config.yaml'], code: 3, message, files: { 'config.yaml': content },
});

const cases: BadInputCase[] = [
  { name: 'missing file', args: ['inspect', '-f', KOPS, '--config', '$D/nope.yaml'], code: 3, message: /cannot read config file .*nope\.yaml: no such file/ },
  { name: 'a directory', args: ['inspect', '-f', KOPS, '--config', '$D/conf'], code: 3, message: /cannot read config file .*conf: it is a directory/, dirs: ['conf'] },
  { name: 'missing file named by KUBE_RENUMBER_CONFIG', args: ['inspect', '-f', KOPS], code: 3, message: /nope\.yaml: no such file/, env: { KUBE_RENUMBER_CONFIG: '$D/nope.yaml' } },
  {
    name: 'default file in HOME with a bad CIDR', args: ['inspect', '-f', KOPS], code: 3, message: /config\.yaml avoid\[0\]: invalid CIDR "10\.0\.0\.1\/8": host bits are set/,
    files: { 'home/.config/kube-renumber/config.yaml': 'avoid:\n  - 10.0.0.1/8\n' },
  },
  {
    name: 'default file under XDG_CONFIG_HOME is a directory', args: ['inspect', '-f', KOPS], code: 3, message: /it is a directory/,
    dirs: ['xdg/kube-renumber/config.yaml'], env: { XDG_CONFIG_HOME: '$D/xdg' },
  },
  file('garbage YAML', 'avoid: [10.0.0.0/8\n', /config file .*config\.yaml is not valid YAML/),
  file('tab indentation', 'avoid:\n\t- 10.0.0.0/8\n', /is not valid YAML/),
  file('duplicate key', 'avoid: []\navoid: []\n', /is not valid YAML/),
  file('binary garbage', Buffer.from([0x00, 0xff, 0xfe, 0x01, 0x02, 0x7f, 0x80]), /config file .*config\.yaml/),
  file('a list at the top', '- 10.0.0.0/8\n', /must be a YAML mapping with an "avoid" list, not a list/),
  file('a string at the top', 'just words\n', /must be a YAML mapping .*not a string/),
  file('a number at the top', '42\n', /not a number/),
  file('unknown top-level key', 'avoids:\n  - 10.0.0.0/8\n', /unknown key "avoids" \(known: avoid\)/),
  file('avoid is a string', 'avoid: 10.0.0.0/8\n', /"avoid" must be a list/),
  file('avoid is a mapping', 'avoid:\n  cidr: 10.0.0.0/8\n', /"avoid" must be a list/),
  file('host bits set', 'avoid:\n  - 10.0.0.1/8\n', /avoid\[0\]: invalid CIDR "10\.0\.0\.1\/8": host bits are set \(did you mean 10\.0\.0\.0\/8\?\)/),
  file('IPv4 /33', 'avoid:\n  - 10.0.0.0/8\n  - 10.0.0.0/33\n', /avoid\[1\]: invalid CIDR "10\.0\.0\.0\/33"/),
  file('octet 999', 'avoid:\n  - 999.1.1.1/32\n', /avoid\[0\]: invalid CIDR "999\.1\.1\.1\/32"/),
  file('IPv6 garbage', 'avoid:\n  - "fd00:::/8"\n', /avoid\[0\]: invalid CIDR "fd00:::\/8"/),
  file('no prefix', 'avoid:\n  - 192.168.50.0\n', /avoid\[0\]: invalid CIDR "192\.168\.50\.0": .*prefix/),
  file('empty string entry', 'avoid:\n  - ""\n', /avoid\[0\]: invalid CIDR ""/),
  file('bad CIDR in the object form', 'avoid:\n  - cidr: 10.8.0.1/16\n    reason: office VPN\n', /avoid\[0\]: invalid CIDR "10\.8\.0\.1\/16": host bits/),
  file('number entry', 'avoid:\n  - 10\n', /avoid\[0\]: each entry is a CIDR string or \{cidr, reason\}/),
  file('null entry', 'avoid:\n  - null\n', /avoid\[0\]: each entry is a CIDR string or \{cidr, reason\}/),
  file('list entry', 'avoid:\n  - [10.0.0.0/8]\n', /avoid\[0\]: each entry is a CIDR string/),
  file('cidr is a number', 'avoid:\n  - cidr: 10\n', /avoid\[0\]: "cidr" must be a string/),
  file('cidr missing', 'avoid:\n  - reason: office\n', /avoid\[0\]: "cidr" must be a string/),
  file('reason is a list', 'avoid:\n  - cidr: 10.8.0.0/16\n    reason: [a, b]\n', /avoid\[0\]: "reason" must be a string/),
  file('unknown entry key', 'avoid:\n  - cidr: 10.8.0.0/16\n    resaon: typo\n', /avoid\[0\]: unknown key "resaon"/),
  file('reason inside cidr', 'avoid:\n  - cidr: 10.8.0.0/16=vpn\n', /avoid\[0\]: "cidr" holds "="/),
  {
    name: 'bad config on suggest', args: ['suggest', '--for', 'pods', '-f', KOPS, '--config', '$D/c.yaml'], code: 3, message: /avoid\[0\]: invalid CIDR/,
    files: { 'c.yaml': 'avoid: [banana]\n' },
  },
  {
    name: 'bad config on plan', args: ['plan', '--service-cidr', '10.200.0.0/16', '-f', KOPS, '--config', '$D/c.yaml'], code: 3, message: /avoid\[0\]: invalid CIDR/,
    files: { 'c.yaml': 'avoid: [10.0.0.0/33]\n' },
  },
  {
    name: 'a bad --avoid flag is still a command-line error', args: ['inspect', '-f', KOPS, '--config', '$D/c.yaml', '--avoid', 'banana'], code: 2, message: /--avoid: invalid CIDR "banana"/,
    files: { 'c.yaml': 'avoid: [10.8.0.0/16]\n' },
  },
];
if (!isRoot) {
  // root reads a 0000 file anyway: this case only means something for an ordinary user.
  cases.push({
    name: 'unreadable file (mode 0000)', args: ['inspect', '-f', KOPS, '--config', '$D/secret.yaml'], code: 3, message: /cannot read config file .*secret\.yaml: permission denied/,
    files: { 'secret.yaml': { content: 'avoid: []\n', mode: 0o000 } },
  });
}

// A generous limit: a hang is still caught, a slow start on a busy machine is not one.
corpus('config files', cases.map((c) => ({ timeoutMs: 60_000, ...c })));

describe('config files that work', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kr-config-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: string): string => {
    const p = join(dir, name);
    writeFileSync(p, content);
    return p;
  };

  it('an empty file is the same as no avoid list', async () => {
    const empty = write('empty.yaml', '');
    assert.deepEqual(loadConfig(empty, {}).avoid, []);
    const r = await run(['inspect', '-f', KOPS, '--config', empty, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, '');
    const none = await run(['inspect', '-f', KOPS, '-o', 'json']);
    assert.deepEqual(JSON.parse(r.out).conflicts, JSON.parse(none.out).conflicts);
  });

  it('only comments, blank lines, a BOM or a lone document marker count as empty', () => {
    for (const [name, content] of [['comments.yaml', '# nothing yet\n\n   # really\n'], ['blank.yaml', '\n  \n'], ['bom.yaml', '\uFEFF'], ['marker.yaml', '---\n'], ['null-avoid.yaml', 'avoid:\n']]) {
      assert.deepEqual(loadConfig(write(name!, content!), {}).avoid, [], name);
    }
  });

  it('an empty file named by KUBE_RENUMBER_CONFIG or found in HOME is no error', async () => {
    const viaEnv = await run(['inspect', '-f', KOPS, '-o', 'json'], { KUBE_RENUMBER_CONFIG: write('env-empty.yaml', '') });
    assert.equal(viaEnv.code, 0, viaEnv.err);
    const home = join(dir, 'home');
    mkdirSync(join(home, '.config', 'kube-renumber'), { recursive: true });
    writeFileSync(join(home, '.config', 'kube-renumber', 'config.yaml'), '');
    const viaHome = await run(['inspect', '-f', KOPS, '-o', 'json'], { HOME: home });
    assert.equal(viaHome.code, 0, viaHome.err);
  });

  it('reads both entry forms, and the ranges reach the conflicts', async () => {
    const p = write('ok.yaml', 'avoid:\n  - cidr: 172.20.0.0/16\n    reason: office VPN\n  - 192.168.50.0/24\n  - cidr: fd00:50::/64\n');
    const cfg = loadConfig(p, {});
    assert.deepEqual(cfg.avoid.map((a) => [a.cidr, a.reason]), [['172.20.0.0/16', 'office VPN'], ['192.168.50.0/24', ''], ['fd00:50::/64', '']]);
    assert.equal(cfg.file, p);
    const r = await run(['inspect', '-f', KOPS, '--config', p, '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const conflicts = JSON.parse(r.out).conflicts as Array<{ b: { cidr: string } }>;
    assert.ok(conflicts.some((c) => c.b.cidr === '172.20.0.0/16' && JSON.stringify(c).includes('office VPN')), JSON.stringify(conflicts));
  });

  it('a 0000 file is refused with exit 3 (skipped as root, who can read it)', { skip: isRoot ? 'running as root: a 0000 file is readable' : false }, async () => {
    const p = write('locked.yaml', 'avoid: []\n');
    chmodSync(p, 0o000);
    const r = await run(['inspect', '-f', KOPS, '--config', p]);
    assert.equal(r.code, 3);
    assert.match(r.err, /permission denied/);
  });
});
