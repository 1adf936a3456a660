/**
 * Gate `kubelet-cluster-dns` checked against the kubelets themselves: with `--read-kubelet-config` the gate
 * holds when every Ready node's kubelet runs with a clusterDNS that names the moved DNS Service's new IPs (and
 * not its old ones), as its configz shows (src/kube/kubelet-configz.ts). Nothing is written.
 */
import { kubeletsClusterDNS, type KubeletDNSReport } from '../kube/kubelet-configz.ts';
import { KUBELET_CONFIGZ_RBAC_FILE } from '../plan/access.ts';
import { firstAndMore } from '../text.ts';
import type { StepContext } from './runner.ts';

/** What the gate says when it does not hold yet, one line each (logged; the runner shows them with the stop). */
export function explainKubeletDNS(r: KubeletDNSReport, to: readonly string[]): string[] {
  const lines: string[] = [];
  const some = <T>(xs: T[], f: (x: T) => string) => firstAndMore(xs.map(f), 5, '; ', '; and ');
  if (r.ready === 0) lines.push('kubelet clusterDNS: no node is Ready, so no kubelet can show its configuration');
  if (r.behind.length > 0) {
    lines.push(`kubelet clusterDNS: ${r.behind.length} of ${r.ready} Ready node(s) still run without ${to.join(', ')}: `
      + some(r.behind, (b) => `${b.node} has [${b.clusterDNS.join(', ')}]`) + ' (change the configuration and restart those kubelets)');
  }
  const forbidden = r.unread.filter((u) => u.forbidden);
  if (forbidden.length > 0) {
    lines.push(`kubelet clusterDNS: reading configz is forbidden (get nodes/proxy is not granted: ${KUBELET_CONFIGZ_RBAC_FILE}, see docs/service-migration.md); `
      + 'or resume without --read-kubelet-config and with --ack-gate kubelet-cluster-dns');
  }
  const failed = r.unread.filter((u) => !u.forbidden);
  if (failed.length > 0) lines.push(`kubelet clusterDNS: ${failed.length} Ready node(s) did not answer: ${some(failed, (u) => `${u.node}: ${u.error.split('\n')[0]}`)}`);
  return lines;
}

/** Gate check: reads every Ready node's kubelet configuration; true when all of them name the new DNS IPs. */
export async function kubeletsServeNewDNS(ctx: StepContext, from: readonly string[], to: readonly string[]): Promise<boolean> {
  const r = await kubeletsClusterDNS(ctx.client, from, to);
  if (r.holds) {
    ctx.log(`kubelet clusterDNS: the kubelets of all ${r.ready} Ready node(s) name ${to.join(', ')} (configz)`);
    // a node that is not Ready cannot answer; its kubelet starts again with whatever its configuration says
    if (r.notReady.length > 0) (ctx.warn ?? ctx.log)(`kubelet clusterDNS not read on ${r.notReady.length} node(s) that are not Ready: ${r.notReady.join(', ')}: check their configuration before they return`);
    return true;
  }
  for (const line of explainKubeletDNS(r, to)) ctx.log(line);
  return false;
}
