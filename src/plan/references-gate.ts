/**
 * The references gate: a plan whose references scan found errors (src/analyze/references.ts) stops before its first
 * change until every one is gone (the engine scans the cluster again at the gate) or `--ack-gate references` accepts
 * the list. The moves and the ClusterIP mapping the scan is made with come from the plan, here, for both. Pure.
 */
import type { RangeMove, Reference } from '../analyze/references.ts';
import { formatCidr, tryParseCidr } from '../net/index.ts';
import type { PlanStep } from './steps.ts';
import type { ServiceMapping } from './service-mapping.ts';

export const REFERENCES_GATE = 'references';

/** The plan's moves: each old range of spec.serviceCIDR and spec.podCIDR with the new range of its family. */
export function planMoves(spec: { serviceCIDR?: { from: string[]; target: string[] }; podCIDR?: { from: string[]; to: string[] } }): RangeMove[] {
  const moves: RangeMove[] = [];
  const pair = (role: RangeMove['role'], from: string[], to: string[]) => {
    for (const f of from) {
      const fc = tryParseCidr(f);
      const t = to.map((x) => tryParseCidr(x)).find((x) => x && fc && x.family === fc.family);
      if (fc && t && formatCidr(fc) !== formatCidr(t)) moves.push({ role, from: formatCidr(fc), to: formatCidr(t) });
    }
  };
  if (spec.serviceCIDR) pair('service', spec.serviceCIDR.from, spec.serviceCIDR.target);
  if (spec.podCIDR) pair('pod', spec.podCIDR.from, spec.podCIDR.to);
  return moves;
}

/** Old ClusterIP → new, of the Services the plan moves. */
export function mappedClusterIPs(mapping: readonly ServiceMapping[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of mapping) {
    if (m.action !== 'move') continue;
    m.from.forEach((ip, i) => { if (m.to[i] && m.to[i] !== ip) out.set(ip, m.to[i]!); });
  }
  return out;
}

/** "Kind ns/name field: value → proposed", one reference. */
export function referenceLine(r: Reference): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.field}: ${r.value}${r.proposed ? ` → ${r.proposed}` : ''}`;
}

/**
 * The errors the gate holds for: every error-severity reference but those the plan's own steps handle. kube-proxy's
 * clusterCIDR in a plan that moves the Pod CIDR is one (pre-flight check pod-kube-proxy says what to set, and the
 * pod path's gate waits for it: pod-cidr-config, kcm-cluster-cidr).
 */
export function gateErrors(refs: readonly Reference[], spec: { podCIDR?: unknown }): Reference[] {
  const handled = (r: Reference) => spec.podCIDR !== undefined && r.role === 'pod' && r.kind === 'ConfigMap' && r.namespace === 'kube-system'
    && r.name === 'kube-proxy' && r.field.endsWith('.clusterCIDR');
  return refs.filter((r) => r.severity === 'error' && !handled(r));
}

/** The gate before the first change, when the scan found errors the plan does not handle; undefined otherwise. */
export function referencesGate(refs: readonly Reference[], spec: { podCIDR?: unknown }): PlanStep | undefined {
  const errors = gateErrors(refs, spec);
  if (errors.length === 0) return undefined;
  return {
    id: REFERENCES_GATE, kind: 'gate',
    description: `${errors.length} place(s) name an old range or ClusterIP and break when it moves: change them first`,
    rollback: 'nothing to undo: the gate changes nothing',
    gate: {
      condition: 'references',
      reason: 'configuration outside the tool names the old ranges; moving first would break what it configures',
      instructions: [
        ...errors.map((r) => `${referenceLine(r)} (${r.role})`),
        'change each as proposed (the plan\'s references section says why; a GitOps-managed object is changed in git)',
        `or accept the list as it is: resume with --ack-gate ${REFERENCES_GATE}`,
      ],
      check: 'a new scan of the cluster finds no error-severity reference (or --ack-gate references)',
    },
  };
}
