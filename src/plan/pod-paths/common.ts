/**
 * What the pod paths' planners share (src/plan/pod-paths/): generated names, the check constructor, and
 * kube-controller-manager's node podCIDR size. A leaf of src/plan/pod-paths/.
 */
import type { Family, Snapshot } from '../../cluster/types.ts';
import type { PreflightCheck } from '../preflight.ts';

/** Prefix of the names this tool gives new objects (pools). */
export const POOL_PREFIX = 'kube-renumber';

export function famOf(c: string): Family {
  return c.includes(':') ? 6 : 4;
}

/** The slug used in generated names: 172.16.0.0/13 → 172-16-0-0-13. */
export function slug(cidr: string): string {
  return cidr.toLowerCase().replace(/[:./]/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
}

export function pass(id: string, message: string, target = false): PreflightCheck {
  return { id, status: 'pass', message, fix: '', ...(target ? { target: true } : {}) };
}

/**
 * kube-controller-manager's node podCIDR size for a family as its flags (mirror pods) or kubeadm's extraArgs
 * set it, with the flag that does; undefined when neither is read.
 */
export function kcmMaskFlag(snap: Snapshot, f: Family): { flag: string; size: number } | undefined {
  const perFamily = f === 4 ? 'node-cidr-mask-size-ipv4' : 'node-cidr-mask-size-ipv6';
  for (const k of snap.controllerManagers) {
    const m = f === 4 ? k.nodeCIDRMaskSizeIPv4 : k.nodeCIDRMaskSizeIPv6;
    if (m !== undefined) return { flag: perFamily, size: m };
    if (k.nodeCIDRMaskSize !== undefined) return { flag: 'node-cidr-mask-size', size: k.nodeCIDRMaskSize };
  }
  const args = snap.kubeadm?.controllerManagerExtraArgs ?? {};
  for (const flag of [perFamily, 'node-cidr-mask-size']) {
    const v = args[flag];
    if (v && /^\d+$/.test(v)) return { flag, size: Number(v) };
  }
  return undefined;
}

/** kube-controller-manager's default node podCIDR size (--node-cidr-mask-size-ipv4 / -ipv6 unset). */
export const KCM_DEFAULT_MASK: Record<Family, number> = { 4: 24, 6: 64 };
