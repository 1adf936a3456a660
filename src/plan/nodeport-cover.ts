/**
 * `--nodeport-cover`: an opt-in cover for the node ports of NodePort Services moved in place.
 *
 * Going ExternalName releases a Service's nodePorts, and the move's last write asks for them again. A node whose
 * kube-proxy syncs between the two writes drops the Service's NodePort rules and writes them again only at its next
 * sync, held back by its min-sync-period (1 s by default): measured, ~1.1 s of refused connections on that node
 * (docs/service-migration.md). The port cannot be held by another Service (the apiserver gives a nodePort to one
 * Service at a time), but its traffic can be covered: a LoadBalancer Service of class kube-renumber.io/cover whose
 * ports are the nodePorts and whose status.loadBalancer.ingress lists the node addresses. kube-proxy's iptables and
 * nftables modes match load-balancer IPs before their NodePort catch-all, so node-address:nodePort answers through
 * the cover whatever the Service does meanwhile.
 *
 * Opt-in, because the tool cannot know every address kube-proxy serves node ports on (every local address in
 * iptables mode by default, the node IPs in nftables mode, --nodeport-addresses where set), and refused where it is
 * not known to be safe: IPVS mode binds every load-balancer IP to its dummy interface kube-ipvs0 (here: the node's
 * own addresses) and unbinds them when the cover goes; without kube-proxy (an eBPF data plane) nothing says how a
 * load-balancer IP equal to a node address is handled. Pure: the engine does the work (src/engine/service/covers.ts).
 */
import type { Snapshot } from '../cluster/types.ts';
import { formatIP, parseIP } from '../net/index.ts';
import type { PreflightCheck } from './check.ts';
import type { ServiceMapping } from './service-mapping.ts';

/** What the plan records (spec.options.nodePortCover): `nodes` (every Node's InternalIP and ExternalIP, read at apply) or the addresses. */
export type NodePortCover = 'nodes' | string[];

/**
 * The flag's value: `off` (undefined), `nodes`, or IP[,IP...] (normalised, de-duplicated). Throws an Error whose
 * message names the bad part.
 */
export function parseNodePortCover(raw: string): NodePortCover | undefined {
  const v = raw.trim();
  if (v === 'off') return undefined;
  if (v === 'nodes') return 'nodes';
  const parts = v.split(',').map((x) => x.trim());
  if (parts.length === 0 || parts.some((x) => x === '')) throw new Error('must be off, nodes, or IP addresses separated by commas');
  const out: string[] = [];
  for (const p of parts) {
    let ip: string;
    try { ip = formatIP(parseIP(p)); } catch { throw new Error(`${JSON.stringify(p)} is not an IP address (off, nodes, or IP[,IP...])`); }
    if (!out.includes(ip)) out.push(ip);
  }
  return out;
}

/** The flag's words for a recorded value. */
export function nodePortCoverText(c: NodePortCover): string {
  return c === 'nodes' ? 'nodes' : c.join(',');
}

/** The kube-proxy data plane as the input shows it: a mode the cover is known to work with, or why not. */
export function kubeProxyModeFor(snap: Snapshot): { mode: 'iptables' | 'nftables'; defaulted: boolean } | { refused: string } {
  if (snap.cni.plugin === 'cilium') {
    return { refused: 'the CNI is Cilium, which may replace kube-proxy (kubeProxyReplacement); how its eBPF data plane treats a load-balancer IP equal to a node address is not known to kube-renumber' };
  }
  if (!snap.kubeProxy) {
    return { refused: 'kube-proxy\'s mode is not known (no ConfigMap kube-system/kube-proxy, no kube-proxy pod with --proxy-mode, no KubeProxyConfiguration in the input): '
      + 'no kube-proxy at all (an eBPF data plane replacing it) or one whose settings cannot be read' };
  }
  const mode = (snap.kubeProxy.mode ?? '').toLowerCase();
  // kube-proxy on Linux: an empty mode is iptables (cmd/kube-proxy/app/server_linux.go)
  if (mode === '') return { mode: 'iptables', defaulted: true };
  if (mode === 'iptables' || mode === 'nftables') return { mode, defaulted: false };
  if (mode === 'ipvs') {
    return { refused: 'kube-proxy runs in IPVS mode, which binds every load-balancer IP to its dummy interface kube-ipvs0 and unbinds it when the Service goes: '
      + 'here the nodes\' own addresses' };
  }
  return { refused: `kube-proxy's mode is ${snap.kubeProxy.mode}: only iptables and nftables are known to match load-balancer IPs before node ports` };
}

/** The node addresses `nodes` stands for, as the input shows them (apply reads them again). */
export function nodeAddresses(snap: Snapshot): string[] {
  const out: string[] = [];
  for (const n of snap.nodes) {
    for (const a of [...n.internalIPs, ...n.externalIPs]) {
      let ip: string;
      try { ip = formatIP(parseIP(a)); } catch { continue; }
      if (!out.includes(ip)) out.push(ip);
    }
  }
  return out;
}

/**
 * Check `nodeport-cover` (present only with the flag): refused (a target check: exit 2, no plan; apply stops before
 * its first write) with recreate, on a data plane it is not known to be safe with, or with `nodes` and no Node
 * address; else what it will do and cost.
 */
export function nodePortCoverCheck(snap: Snapshot, mapping: readonly ServiceMapping[], strategy: 'in-place' | 'recreate', cover: NodePortCover): PreflightCheck {
  const id = 'nodeport-cover';
  const flag = `--nodeport-cover ${nodePortCoverText(cover)}`;
  const refuse = (why: string, fix: string): PreflightCheck => ({ id, status: 'fail', target: true, message: `${flag} refused: ${why}`, fix });
  if (strategy !== 'in-place') return refuse('it covers moves in place; --strategy recreate deletes the Service', 'plan with --strategy in-place, or without --nodeport-cover');
  const kp = kubeProxyModeFor(snap);
  if ('refused' in kp) return refuse(kp.refused, 'plan without --nodeport-cover (each NodePort Service\'s node port may be refused for about a second on some nodes during its move)');
  const addresses = cover === 'nodes' ? nodeAddresses(snap) : cover;
  if (addresses.length === 0) return refuse('no Node shows an InternalIP or ExternalIP address', 'give the addresses kube-proxy serves node ports on: --nodeport-cover IP[,IP...]');
  const byKey = new Map(snap.services.map((s) => [`${s.namespace}/${s.name}`, s]));
  const covered = mapping.filter((m) => m.action === 'move' && !m.isKubernetes)
    .map((m) => byKey.get(`${m.namespace}/${m.name}`))
    .filter((s) => !!s && s.type !== 'ExternalName' && s.ports.some((p) => typeof p.nodePort === 'number'));
  const ports = covered.reduce((n, s) => n + s!.ports.filter((p) => typeof p.nodePort === 'number').length, 0);
  if (covered.length === 0) {
    return { id, status: 'warn', message: `${flag}: no moved Service has node ports; nothing to cover`, fix: 'plan without --nodeport-cover' };
  }
  const where = cover === 'nodes'
    ? `every Node's InternalIP and ExternalIP, read again at apply (${addresses.length} now: ${addresses.slice(0, 4).join(', ')}${addresses.length > 4 ? ', …' : ''})`
    : `${addresses.join(', ')} as given`;
  return {
    id, status: 'pass',
    message: `${flag} (kube-proxy ${kp.mode}${kp.defaulted ? ', its default mode' : ''}): before each batch's moves, each of the ${covered.length} moved NodePort Service(s) gets a second cover `
      + '(type LoadBalancer, class kube-renumber.io/cover, no node ports of its own, its ports = the Service\'s nodePorts) whose load-balancer status lists '
      + `${where}; kube-proxy matches load-balancer IPs before its NodePort rules, so those addresses answer on the nodePorts throughout the move. `
      + `It stays until the moved Service has been programmed (--propagation-delay after its last write). Cost: one kube-proxy rule per address × nodePort while a batch moves `
      + `(${addresses.length} × ${ports} = ${addresses.length * ports} over the plan, a batch's share at a time), plus a ClusterIP from the top of the new range per cover`
      + ', and a healthCheckNodePort allocated per cover of a Service with externalTrafficPolicy Local (the cover takes the Service\'s policy). '
      + 'Node ports served on addresses the list lacks are not covered',
    fix: '',
  };
}
