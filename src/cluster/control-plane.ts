/**
 * Control-plane static pods: the flags of kube-apiserver and kube-controller-manager that name ranges.
 */
import type { ApiserverFlags, ControllerManagerFlags, KubeObject, RangeRole } from './types.ts';
import type { Builder } from './builder.ts';
import { componentContainer } from './components.ts';
import { containerWords, parseBool, parseComponentFlags, parseIntFlag, splitList, type FlagMap } from './flags.ts';

/** The CIDRs of a range flag, each added to the snapshot as `role`; undefined when the flag is not set. */
function flagRanges(f: FlagMap, flag: string, b: Builder, role: RangeRole, source: string, label: string): string[] | undefined {
  if (!f.has(flag)) return undefined;
  const out: string[] = [];
  for (const raw of splitList(f.get(flag))) {
    const n = b.addRange(raw, role, source, label);
    if (n) out.push(n);
  }
  return out;
}

/** The words of a control-plane pod, kept for the platforms' detection (PlatformInput.controlPlaneFlags). */
export type ControlPlaneWords = Array<{ pod: string; words: string[] }>;

/** Reads a kube-apiserver pod's flags into `out`, adding its Service ranges; keeps its words in `seen`. */
export function readApiserver(o: KubeObject, b: Builder, out: ApiserverFlags[], seen: ControlPlaneWords): void {
  const c = componentContainer(o, 'kube-apiserver');
  if (!c) return;
  const name = o.metadata?.name ?? '';
  const words = containerWords(c);
  const f = parseComponentFlags(words, 'kube-apiserver');
  const info: ApiserverFlags = { pod: name };
  const svc = flagRanges(f, 'service-cluster-ip-range', b, 'service', 'kube-apiserver --service-cluster-ip-range', 'Service CIDR (kube-apiserver flag)');
  if (svc) info.serviceClusterIPRange = svc;
  if (f.has('feature-gates')) info.featureGates = f.get('feature-gates');
  if (f.has('runtime-config')) info.runtimeConfig = f.get('runtime-config');
  const plugins = f.get('enable-admission-plugins') ?? f.get('admission-control');
  if (plugins !== undefined) info.admissionPlugins = splitList(plugins);
  if (f.has('advertise-address')) info.advertiseAddress = f.get('advertise-address');
  out.push(info);
  seen.push({ pod: name, words });
}

/** Reads a kube-controller-manager pod's flags into `out`, adding its pod and Service ranges; keeps its words in `seen`. */
export function readControllerManager(o: KubeObject, b: Builder, out: ControllerManagerFlags[], seen: ControlPlaneWords): void {
  const c = componentContainer(o, 'kube-controller-manager');
  if (!c) return;
  const name = o.metadata?.name ?? '';
  const words = containerWords(c);
  const f = parseComponentFlags(words, 'kube-controller-manager');
  const info: ControllerManagerFlags = { pod: name };
  const pods = flagRanges(f, 'cluster-cidr', b, 'pod', 'kube-controller-manager --cluster-cidr', 'cluster CIDR (kube-controller-manager flag)');
  if (pods) info.clusterCIDR = pods;
  const intFlag = (flag: string): number | undefined => {
    if (!f.has(flag)) return undefined;
    const v = parseIntFlag(f.get(flag));
    if (v === undefined) b.warn(`pod kube-system/${name}: --${flag}=${f.get(flag)} is not a number`);
    return v;
  };
  const m = intFlag('node-cidr-mask-size');
  if (m !== undefined) info.nodeCIDRMaskSize = m;
  const m4 = intFlag('node-cidr-mask-size-ipv4');
  if (m4 !== undefined) info.nodeCIDRMaskSizeIPv4 = m4;
  const m6 = intFlag('node-cidr-mask-size-ipv6');
  if (m6 !== undefined) info.nodeCIDRMaskSizeIPv6 = m6;
  const alloc = parseBool(f.get('allocate-node-cidrs'));
  if (alloc !== undefined) info.allocateNodeCIDRs = alloc;
  const svc = flagRanges(f, 'service-cluster-ip-range', b, 'service', 'kube-controller-manager --service-cluster-ip-range', 'Service CIDR (kube-controller-manager flag)');
  if (svc) info.serviceClusterIPRange = svc;
  out.push(info);
  seen.push({ pod: name, words });
}
