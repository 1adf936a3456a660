/**
 * A node deleted and registered again (node IPAM path) comes back with what its kubelet sets: its own labels
 * (hostname, os, arch, --node-labels) and taints (--register-with-taints). Labels and taints set on it through the
 * API (kubectl label, kubectl taint, an operator) are gone. After it registers, those of its backup (taken before
 * it was first changed) that it lacks now are put back: a label only when its key is absent (a value the kubelet
 * set again wins), a taint only when no taint with its key and effect is there. Taints the node controllers own
 * (node.kubernetes.io/*, node.cloudprovider.kubernetes.io/uninitialized) are theirs to set, never put back.
 */
import type { KubeObject } from '../cluster/types.ts';
import { getObject } from '../kube/resources.ts';
import { NODES } from '../kube/calico.ts';
import type { StepContext } from './runner.ts';
import { retryOnConflict, withRetry } from './toolkit.ts';

interface Taint { key: string; value?: string; effect: string }

const controllerTaint = (t: Taint) => t.key.startsWith('node.kubernetes.io/') || t.key === 'node.cloudprovider.kubernetes.io/uninitialized';

/** The labels and taints of `backup` that `current` lacks (pure). */
export function missingNodeMetadata(backup: KubeObject, current: KubeObject): { labels: Record<string, string>; taints: Taint[] } {
  const have = current.metadata?.labels ?? {};
  const labels = Object.fromEntries(Object.entries(backup.metadata?.labels ?? {}).filter(([k]) => !(k in have)));
  const now: Taint[] = current.spec?.taints ?? [];
  const taints = ((backup.spec?.taints ?? []) as Taint[])
    .filter((t) => !controllerTaint(t) && !now.some((n) => n.key === t.key && n.effect === t.effect))
    .map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect }));
  return { labels, taints };
}

function backupOf(ctx: StepContext, name: string): KubeObject | undefined {
  return ctx.backups.load({ apiVersion: 'v1', kind: 'Node', name });
}

/** Does the node carry every label and taint of its backup it should get back? (true without a backup) */
export async function nodeMetadataRestored(ctx: StepContext, name: string): Promise<boolean> {
  const b = backupOf(ctx, name);
  if (!b) return true;
  const cur = await withRetry(() => getObject(ctx.client, NODES, name));
  if (!cur) return false;
  const m = missingNodeMetadata(b, cur);
  return Object.keys(m.labels).length === 0 && m.taints.length === 0;
}

/** Put back the labels and taints of the node's backup it lacks now (resourceVersion precondition; 409 re-reads). */
export async function restoreNodeMetadata(ctx: StepContext, name: string): Promise<void> {
  const b = backupOf(ctx, name);
  if (!b || ctx.dryRun === 'client') return;
  await retryOnConflict(`Node ${name}`, async () => {
    const cur = await withRetry(() => getObject(ctx.client, NODES, name));
    if (!cur) throw new Error(`node ${name} is not registered`);
    const m = missingNodeMetadata(b, cur);
    if (Object.keys(m.labels).length === 0 && m.taints.length === 0) return;
    ctx.log(`node ${name}: putting back ${[...Object.keys(m.labels).map((k) => `label ${k}`), ...m.taints.map((t) => `taint ${t.key}:${t.effect}`)].join(', ')}`);
    await withRetry(() => ctx.client.request('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, {
      body: {
        metadata: { resourceVersion: cur.metadata?.resourceVersion, ...(Object.keys(m.labels).length > 0 ? { labels: m.labels } : {}) },
        ...(m.taints.length > 0 ? { spec: { taints: [...(cur.spec?.taints ?? []), ...m.taints] } } : {}),
      },
      contentType: 'application/merge-patch+json',
      query: { dryRun: ctx.dryRun === 'server' ? 'All' : undefined, fieldManager: 'kube-renumber' },
    }));
  });
}
