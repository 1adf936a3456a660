/**
 * The references gate: a plan whose references scan found errors (src/analyze/references.ts) stops before its first
 * change until every one is gone (the engine scans the cluster again at the gate) or `--ack-gate references` accepts
 * the list. The moves and the ClusterIP mapping the scan is made with come from the plan, here, for both. Pure.
 */
import type { RangeMove, Reference } from '../analyze/references.ts';
import type { Snapshot } from '../cluster/types.ts';
import { formatCidr, tryParseCidr } from '../net/index.ts';
import { HELM_RELEASES_RBAC_FILE } from './access-need.ts';
import type { PreflightCheck } from './check.ts';
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

/** How to list the deployed Helm releases into a file for an offline plan. */
export const HELM_RELEASES_KUBECTL = 'kubectl get secrets -A --field-selector type=helm.sh/release.v1 -l owner=helm,status=deployed -o yaml';

/**
 * Pre-flight check `helm-releases` of a live plan that moves the Service CIDR: whether Helm's release Secrets were
 * read for the references scan (a release pinning a ClusterIP is found only then). Offline the files hold what
 * they hold: no check. Reading them is opt-in (--read-helm-releases): it takes `list secrets` in every namespace.
 */
export function helmReleasesCheck(snap: Pick<Snapshot, 'source'>): PreflightCheck | undefined {
  if (snap.source.kind !== 'live') return undefined;
  if (snap.source.helmReleases) {
    return { id: 'helm-releases', status: 'pass', message: 'the deployed Helm releases were read (--read-helm-releases): a release pinning a ClusterIP is among the references', fix: '' };
  }
  return {
    id: 'helm-releases', status: 'warn',
    message: 'Helm releases were not read: a release that pins a ClusterIP would not be found',
    fix: `plan again with --read-helm-releases (needs ${HELM_RELEASES_RBAC_FILE}: list secrets in every namespace), or offline with the release Secrets among the files: ${HELM_RELEASES_KUBECTL}`,
  };
}

/**
 * The gate before the first change, when the scan found errors the plan does not handle; undefined otherwise.
 * `helmReleases`: the plan was read with --read-helm-releases, and so is the cluster at the gate.
 */
export function referencesGate(refs: readonly Reference[], spec: { podCIDR?: unknown }, helmReleases = false): PlanStep | undefined {
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
      check: `a new scan of the cluster${helmReleases ? ' (its deployed Helm releases included)' : ''} finds no error-severity reference (or --ack-gate references)`,
      ...(helmReleases ? { helmReleases: true as const } : {}),
    },
  };
}
