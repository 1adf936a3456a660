// The control of control-plane-load (`--control`): the same node replacement as the node path's waves, done without
// kube-renumber, as a plain script would do it. For each wave of `size` nodes (by name, as the plan orders them):
// cordon; evict every pod a controller other than a DaemonSet owns (eviction API; a budget's 429 retried after 5 s, as
// `kubectl drain` does; a bare pod is left where it is, as drain without --force leaves it); delete the Node; run the
// same node hook (the Node created again and Ready); give it its podCIDR in the new range; then wait until every
// Deployment and DaemonSet is available again before the next wave. Requests go out 8 at a time, with no adaptive
// window. What another client sees meanwhile is the control plane's reaction to the churn (scheduling, controllers
// re-creating pods, kwok), with as little client traffic as the job allows. With `pace` (nodes a minute) a wave starts
// only once the nodes before it have taken their share of time: the same work spread out, to see what a rate costs.

import { spawn } from 'node:child_process';
import type { KubeClient } from '../src/kube/client.ts';
import { KubeApiError } from '../src/kube/errors.ts';
import { mapLimit } from '../src/engine/toolkit.ts';
import { formatCidr, parseCidr, split } from '../src/net/cidr.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The node hook for `node`, at CPU priority `nice` as the tool's process runs its hooks (control-plane-load --tool-nice). */
function runHook(hook: string, node: string, nice: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('nice', ['-n', String(nice), ...hook.split(' ')], { env: { ...process.env, KUBE_RENUMBER_NODE: node }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => { err += b; });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`hook for ${node} exited ${code}: ${err.trim()}`))));
  });
}

/** Evicts a pod, retrying a budget's 429 every 5 s; the number of retries. */
async function evict(client: KubeClient, ns: string, name: string): Promise<number> {
  const body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: ns } };
  for (let retries = 0; ; retries++) {
    try { await client.request('POST', `/api/v1/namespaces/${ns}/pods/${name}/eviction`, { body }); return retries; } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return retries;
      if (e instanceof KubeApiError && e.status === 429) { await sleep(5000); continue; }
      throw e;
    }
  }
}

/** Until every Deployment and DaemonSet is available (at most `limitMs`); the number still missing. */
async function available(client: KubeClient, limitMs: number): Promise<number> {
  const end = Date.now() + limitMs;
  for (;;) {
    let missing = 0;
    for await (const d of client.list('/apis/apps/v1/deployments') as AsyncIterable<any>) missing += Math.max(0, (d.spec?.replicas ?? 1) - (d.status?.availableReplicas ?? 0));
    for await (const d of client.list('/apis/apps/v1/daemonsets') as AsyncIterable<any>) missing += Math.max(0, (d.status?.desiredNumberScheduled ?? 0) - (d.status?.numberAvailable ?? 0));
    if (missing === 0 || Date.now() > end) return missing;
    await sleep(1000);
  }
}

export interface ControlFigures { waves: number; evictions: number; evictionRetries: number; missingAfterWaves: number[] }

/** Moves every node to a /24 of `to` in waves of `size`, as described above. */
export async function replaceNodesWithoutTool(client: KubeClient, opts: { to: string; size: number; hook: string; nice: number; pace?: number; log: (m: string) => void }): Promise<ControlFigures> {
  const names: string[] = [];
  for await (const n of client.list('/api/v1/nodes')) names.push(n.metadata!.name!);
  names.sort();
  const blocks = split(parseCidr(opts.to), 24, names.length).map(formatCidr);
  const cidrOf = new Map(names.map((n, i) => [n, blocks[i]!]));
  const figures: ControlFigures = { waves: 0, evictions: 0, evictionRetries: 0, missingAfterWaves: [] };
  const t0 = Date.now();
  for (let w = 0; w * opts.size < names.length; w++) {
    if (opts.pace) await sleep(t0 + ((w * opts.size) / opts.pace) * 60_000 - Date.now());
    const wave = names.slice(w * opts.size, (w + 1) * opts.size);
    await mapLimit(wave, 8, (n) => client.request('PATCH', `/api/v1/nodes/${n}`, { body: { spec: { unschedulable: true } } }));
    const pods: Array<{ ns: string; name: string }> = [];
    await mapLimit(wave, 8, async (n) => {
      for await (const p of client.list('/api/v1/pods', { fieldSelector: `spec.nodeName=${n}` }) as AsyncIterable<any>) {
        const owners: any[] = p.metadata.ownerReferences ?? [];
        if (owners.length > 0 && !owners.some((o) => o.kind === 'DaemonSet')) pods.push({ ns: p.metadata.namespace, name: p.metadata.name });
      }
    });
    await mapLimit(pods, 8, async (p) => { figures.evictionRetries += await evict(client, p.ns, p.name); });
    figures.evictions += pods.length;
    await mapLimit(wave, 8, async (n) => {
      try { await client.request('DELETE', `/api/v1/nodes/${n}`); } catch (e) { if (!(e instanceof KubeApiError && e.status === 404)) throw e; }
    });
    await mapLimit(wave, 8, (n) => runHook(opts.hook, n, opts.nice));
    await mapLimit(wave, 8, (n) => client.request('PATCH', `/api/v1/nodes/${n}`, { body: { spec: { podCIDR: cidrOf.get(n), podCIDRs: [cidrOf.get(n)] } } }));
    const missing = await available(client, 300_000);
    figures.waves++;
    figures.missingAfterWaves.push(missing);
    opts.log(`control wave ${w + 1}: ${wave.length} nodes replaced, ${pods.length} pods evicted, ${missing} replica(s) still missing after it`);
  }
  return figures;
}
