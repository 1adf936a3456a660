// A background loop that runs a sync every few milliseconds until stopped, as the data planes' follow() do
// (dataplane.ts: kube-proxy and CoreDNS pods; calico-node.ts: pods through the calico CNI plugin). Each distinct
// error is written once (prefix + message) until a sync succeeds again; stop() wakes the loop and waits for the
// sync in progress to end.

export class FollowLoop {
  #on = true;
  #wake: (() => void) | undefined;
  #lastError = '';
  readonly #done: Promise<void>;

  constructor(sync: () => Promise<unknown>, intervalMs: number, prefix: string) {
    this.#done = (async () => {
      while (this.#on) {
        try {
          await sync();
          this.#lastError = '';
        } catch (e) {
          const msg = e instanceof Error ? e.message : String(e);
          if (msg !== this.#lastError && this.#on) process.stderr.write(`${prefix}${msg}\n`);
          this.#lastError = msg;
        }
        if (!this.#on) break;
        await new Promise<void>((r) => {
          const t = setTimeout(r, intervalMs);
          this.#wake = () => {
            clearTimeout(t);
            r();
          };
        });
      }
    })();
  }

  /** Ends the loop: no sync starts after this; waits for the one in progress. */
  async stop(): Promise<void> {
    this.#on = false;
    this.#wake?.();
    await this.#done;
  }
}
