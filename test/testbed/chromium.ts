// Headless Chromium for the HTML address-map test (test/integration/html-chromium.test.ts).
//
//   ensureChromium() -> the path of the `chromium` binary, installing Debian's `chromium` package with apt-get
//   when it is missing (as root, like ensureHostPackages in dataplane-build.ts does for iptables and nftables).
//   `npm run testbed -- chromium` does the same from the command line and prints the path last.
//
// The package lands where apt puts it (/usr/bin/chromium, /usr/lib/chromium/), downloaded archives stay in apt's
// cache (/var/cache/apt/archives): nothing of it lives in the checkout. The install time on this project's
// machine is in docs/testbed.md.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The Debian package and the command it puts on PATH. */
export const CHROMIUM_PACKAGE = { pkg: 'chromium', cmd: 'chromium' } as const;

/** The chromium binary on PATH (or /usr/bin), or undefined. CHROMIUM=/path overrides the search. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM) return existsSync(env.CHROMIUM) ? env.CHROMIUM : undefined;
  const dirs = [...(env.PATH ?? '').split(':'), '/usr/bin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, CHROMIUM_PACKAGE.cmd);
    if (existsSync(p)) return p;
  }
  return undefined;
}

function runQuiet(cmd: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    p.on('error', (e) => resolve({ code: 127, stderr: e.message }));
    p.on('close', (code) => resolve({ code: code ?? 1, stderr }));
  });
}

/**
 * Returns the chromium binary, installing the Debian package first when it is missing. Installing needs root;
 * without it the error says what to run. `apt-get update` runs only when the first install attempt fails (a
 * stale package index), so a machine whose index is fresh makes no extra request.
 */
export async function ensureChromium(log: (s: string) => void = (s) => process.stderr.write(`[chromium] ${s}\n`)): Promise<string> {
  const found = findChromium();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error(`the HTML test needs Debian's ${CHROMIUM_PACKAGE.pkg} package and installing it needs root: apt-get install -y ${CHROMIUM_PACKAGE.pkg}`);
  }
  const t = Date.now();
  log(`installing ${CHROMIUM_PACKAGE.pkg} with apt-get`);
  const args = ['install', '-y', '--no-install-recommends', CHROMIUM_PACKAGE.pkg];
  let r = await runQuiet('apt-get', args);
  if (r.code !== 0) {
    await runQuiet('apt-get', ['update']);
    r = await runQuiet('apt-get', args);
  }
  const path = findChromium();
  if (r.code !== 0 || !path) throw new Error(`apt-get install ${CHROMIUM_PACKAGE.pkg} failed (exit ${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  log(`installed ${path} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return path;
}

// ---------------------------------------------------------------------------------------------------
// A page in headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe: the
// browser reads commands on fd 3 and writes replies on fd 4), so no port is opened. Name resolution is mapped
// to nothing and a dead proxy is set, so a page that tried to fetch anything would fail (and the test sees the
// request in `requests`).

export interface PageEvents {
  /** Console errors, uncaught exceptions and browser log errors (CSP violations are logged there). */
  errors: string[];
  /** URLs of every request the page made, its own document included. */
  requests: string[];
}

interface Pending { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void; method: string }

export class Browser {
  private readonly proc: ReturnType<typeof spawn>;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners: Array<(m: { method: string; params: Record<string, unknown>; sessionId?: string }) => void> = [];
  private buf = '';
  private stderr = '';

  private constructor(binary: string, userDataDir: string) {
    this.proc = spawn(binary, [
      '--headless', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--mute-audio',
      `--user-data-dir=${userDataDir}`, '--no-first-run', '--no-default-browser-check', '--disable-extensions',
      '--disable-background-networking', '--disable-component-update', '--disable-default-apps', '--disable-sync',
      '--no-pings', '--metrics-recording-only', '--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=127.0.0.1:9',
      '--force-color-profile=srgb', '--font-render-hinting=none', 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.on('data', (d: Buffer) => { this.stderr = (this.stderr + d.toString()).slice(-4000); });
    const out = this.proc.stdio[4] as NodeJS.ReadableStream;
    out.on('data', (d: Buffer) => {
      this.buf += d.toString('utf8');
      let i: number;
      while ((i = this.buf.indexOf('\0')) >= 0) {
        const msg = JSON.parse(this.buf.slice(0, i)) as { id?: number; result?: Record<string, unknown>; error?: { message: string }; method?: string; params?: Record<string, unknown>; sessionId?: string };
        this.buf = this.buf.slice(i + 1);
        if (msg.id !== undefined) {
          const p = this.pending.get(msg.id);
          this.pending.delete(msg.id);
          if (msg.error) p?.reject(new Error(`${p.method}: ${msg.error.message}`));
          else p?.resolve(msg.result ?? {});
        } else if (msg.method) {
          for (const l of this.listeners) l({ method: msg.method, params: msg.params ?? {}, sessionId: msg.sessionId });
        }
      }
    });
    this.proc.on('exit', () => {
      for (const p of this.pending.values()) p.reject(new Error(`chromium exited: ${this.stderr.trim().split('\n').slice(-3).join(' ')}`));
      this.pending.clear();
    });
  }

  static async launch(binary: string, userDataDir: string): Promise<Browser> {
    const b = new Browser(binary, userDataDir);
    await b.send('Browser.getVersion');
    return b;
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const w = this.proc.stdio[3] as NodeJS.WritableStream;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      w.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  /**
   * Opens `url` in a new tab at width × height (CSS pixels, device scale 1; `mobile` makes the page's viewport
   * meta count, as on a phone), waits for the load event, and returns a handle to evaluate, screenshot and close.
   */
  async open(url: string, width: number, height: number, mobile: boolean) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' }) as { targetId: string };
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true }) as { sessionId: string };
    const events: PageEvents = { errors: [], requests: [] };
    let loaded: () => void = () => {};
    const load = new Promise<void>((r) => { loaded = r; });
    this.listeners.push((m) => {
      if (m.sessionId !== sessionId) return;
      const p = m.params as Record<string, any>;
      if (m.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert')) events.errors.push(`console.${p.type}: ${(p.args ?? []).map((a: any) => a.value ?? a.description).join(' ')}`);
      if (m.method === 'Runtime.exceptionThrown') events.errors.push(`exception: ${p.exceptionDetails?.exception?.description ?? p.exceptionDetails?.text}`);
      if (m.method === 'Log.entryAdded' && p.entry?.level === 'error') events.errors.push(`log (${p.entry.source}): ${p.entry.text}`);
      if (m.method === 'Network.requestWillBeSent') events.requests.push(String(p.request?.url));
      if (m.method === 'Page.loadEventFired') loaded();
    });
    for (const d of ['Page', 'Runtime', 'Log', 'Network']) await this.send(`${d}.enable`, {}, sessionId);
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile }, sessionId);
    await this.send('Page.navigate', { url }, sessionId);
    await load;
    return {
      events,
      evaluate: async <T>(expression: string): Promise<T> => {
        const r = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId) as { result: { value: T }; exceptionDetails?: { text: string } };
        if (r.exceptionDetails) throw new Error(`evaluate: ${r.exceptionDetails.text}`);
        return r.result.value;
      },
      /** A PNG of the viewport, or of the whole page with `fullPage`. */
      screenshot: async (fullPage = false): Promise<Buffer> => {
        const r = await this.send('Page.captureScreenshot', { format: 'png', ...(fullPage ? { captureBeyondViewport: true, clip: await this.pageClip(sessionId) } : {}) }, sessionId) as { data: string };
        return Buffer.from(r.data, 'base64');
      },
      close: () => this.send('Target.closeTarget', { targetId }).then(() => undefined),
    };
  }

  private async pageClip(sessionId: string) {
    const m = await this.send('Page.getLayoutMetrics', {}, sessionId) as { cssContentSize: { width: number; height: number } };
    return { x: 0, y: 0, width: Math.ceil(m.cssContentSize.width), height: Math.ceil(m.cssContentSize.height), scale: 1 };
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((r) => { if (this.proc.exitCode !== null) r(); else this.proc.on('exit', () => r()); });
    try { await Promise.race([this.send('Browser.close'), exited]); } catch { /* already gone */ }
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  }
}
