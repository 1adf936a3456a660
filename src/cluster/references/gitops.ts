/**
 * GitOps: a Service an Argo CD Application syncs with selfHeal, or a Flux Kustomization or HelmRelease applies,
 * is put back as git has it while the move changes it (its type during an in-place move, the object itself when
 * it is re-created). Argo CD marks what it tracks with the annotation argocd.argoproj.io/tracking-id
 * ("<app>:<group>/<kind>:<namespace>/<name>") or the label app.kubernetes.io/instance (the Application's name);
 * Flux with the labels kustomize.toolkit.fluxcd.io/name and /namespace, helm.toolkit.fluxcd.io/name and /namespace
 * (docs/references.md). Reported only for Services the plan moves.
 */
import type { KubeObject, ReferenceSource } from '../types.ts';
import { sourceBase, strings, type ReferenceSourceModule } from './types.ts';

const APPLICATION = 'Application';

/** Who applies a Service from git, as its labels and annotations say; undefined when nothing does. */
function managerOf(o: KubeObject): { argo?: string; why?: string } | undefined {
  const labels = o.metadata?.labels ?? {};
  for (const [tool, kind] of [['kustomize', 'Kustomization'], ['helm', 'HelmRelease']] as const) {
    const name = labels[`${tool}.toolkit.fluxcd.io/name`];
    if (name) {
      const ns = labels[`${tool}.toolkit.fluxcd.io/namespace`] ?? '';
      return { why: `Flux ${kind} ${ns ? `${ns}/` : ''}${name} applies this Service and puts back what the move changes: suspend it `
        + `(flux suspend ${tool === 'kustomize' ? 'kustomization' : 'helmrelease'} ${name}${ns ? ` -n ${ns}` : ''}) before step move-services, and resume it once git names the new address` };
    }
  }
  const tracking = o.metadata?.annotations?.['argocd.argoproj.io/tracking-id'];
  const app = typeof tracking === 'string' && tracking.includes(':') ? tracking.slice(0, tracking.indexOf(':')) : labels['app.kubernetes.io/instance'];
  return app ? { argo: app } : undefined;
}

function read(o: KubeObject): ReferenceSource[] {
  const av = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  if (o.kind === APPLICATION && av.startsWith('argoproj.io/')) {
    // a marker for resolve(): an Application that heals what drifts from git
    return o.spec?.syncPolicy?.automated?.selfHeal === true ? [{ ...sourceBase(o), field: 'spec.syncPolicy.automated.selfHeal', format: 'text', use: 'address', values: [] }] : [];
  }
  if (o.kind !== 'Service' || av !== 'v1') return [];
  const m = managerOf(o);
  const ips = strings(o.spec?.clusterIPs).length > 0 ? strings(o.spec?.clusterIPs) : strings([o.spec?.clusterIP]);
  if (!m || ips.length === 0 || ips.includes('None')) return [];
  const src: ReferenceSource = { ...sourceBase(o), field: 'spec.clusterIPs', format: 'text', use: 'address', values: ips, onlyMoved: true };
  if (m.why) src.why = m.why;
  if (m.argo) src.gitopsApp = m.argo;
  return [src];
}

/** Services of Argo CD Applications without selfHeal, and the markers, dropped; the rest say which to suspend. */
function resolve(sources: ReferenceSource[]): ReferenceSource[] {
  const healing = new Map(sources.filter((s) => s.kind === APPLICATION).map((s) => [s.name, s]));
  return sources.flatMap((s) => {
    if (s.kind === APPLICATION) return [];
    if (s.gitopsApp === undefined) return [s];
    const app = healing.get(s.gitopsApp);
    if (!app) return [];
    const { gitopsApp, ...rest } = s;
    void gitopsApp;
    return [{ ...rest, why: `Argo CD Application ${app.namespace ? `${app.namespace}/` : ''}${app.name} syncs this Service with selfHeal and puts back what the move changes: `
      + 'turn selfHeal off (or suspend its automated sync) before step move-services, and turn it on again once git names the new address' }];
  });
}

export const gitops: ReferenceSourceModule = {
  lists: [{ group: 'argoproj.io', version: 'v1alpha1', plural: 'applications', kind: APPLICATION, namespaced: true }],
  read,
  resolve,
};
