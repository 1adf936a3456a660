/**
 * Helm releases (Helm 3's Secrets of type helm.sh/release.v1): a chart's rendered manifest or its values that pin a
 * Service's clusterIP. The next `helm upgrade` renders the old address again and fights the move. Of the Secret only
 * the pinned addresses are kept in the references; its data is never printed (docs/references.md).
 *
 * Storage (helm pkg/storage/driver): data.release is the base64 of base64(gzip(JSON of the release)); releases
 * stored before compression have no gzip header. The release JSON has `manifest` (the rendered YAML) and `config`
 * (the values given). Labels: owner=helm, name, status, version.
 *
 * Read live only when asked (`plan --read-helm-releases`): RBAC cannot grant Secrets by type or label, so listing
 * them takes `list secrets` in every namespace, which the read role does not grant; the opt-in file
 * deploy/rbac-helm-releases.yaml does. Without it they are read from files (--from-file with the release Secrets).
 */
import { gunzipSync } from 'node:zlib';
import { loadAll } from 'js-yaml';
import type { KubeObject, ReferenceSource } from '../types.ts';
import { sourceBase, type ReferenceSourceModule } from './types.ts';

export const HELM_RELEASE_TYPE = 'helm.sh/release.v1';

/** The most a release's JSON may take once unzipped: a Secret holds at most 1 MiB, a chart rarely more than a few. */
const MAX_RELEASE_BYTES = 64 << 20;

/** Release Secrets per page of the live list: each may be up to 1 MiB (Secret size limit), so pages stay small. */
const PAGE_SIZE = 20;

/** Where the live read keeps the pins it read from a release Secret whose data it dropped. */
const PINS = 'kubeRenumberReleasePins';

interface Pin { field: string; value: string }

/** The release JSON of a release Secret; undefined when it cannot be read. */
function decodeRelease(data: string): any {
  try {
    let b = Buffer.from(Buffer.from(data, 'base64').toString('latin1'), 'base64');
    if (b[0] === 0x1f && b[1] === 0x8b) b = gunzipSync(b, { maxOutputLength: MAX_RELEASE_BYTES });
    return JSON.parse(b.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Every string value of a key named clusterIP or clusterIPs in the values, with its path. */
function valuePins(v: unknown, path: string, out: Pin[]): void {
  if (Array.isArray(v)) { v.forEach((x, i) => valuePins(x, `${path}[${i}]`, out)); return; }
  if (!v || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    const at = path === '' ? k : `${path}.${k}`;
    if ((k === 'clusterIP' || k === 'clusterIPs') && (typeof x === 'string' || Array.isArray(x))) {
      for (const ip of (Array.isArray(x) ? x : [x])) if (typeof ip === 'string' && ip !== '' && ip !== 'None') out.push({ field: `values ${at}`, value: ip });
    } else valuePins(x, at, out);
  }
}

/** The clusterIPs a release pins: in its rendered Services' spec, and in its values. */
export function releasePins(release: any): Pin[] {
  const out: Pin[] = [];
  let docs: unknown[] = [];
  try { docs = typeof release?.manifest === 'string' ? loadAll(release.manifest) : []; } catch { docs = []; }
  for (const d of docs as any[]) {
    if (d?.kind !== 'Service') continue;
    const ips = [d.spec?.clusterIP, ...(Array.isArray(d.spec?.clusterIPs) ? d.spec.clusterIPs : [])];
    for (const ip of new Set(ips)) {
      if (typeof ip === 'string' && ip !== '' && ip !== 'None') out.push({ field: `manifest Service ${d.metadata?.name ?? ''} spec.clusterIP`, value: ip });
    }
  }
  valuePins(release?.config, '', out);
  return out;
}

/** The pins of a release Secret: those the live read kept, else read from its data. */
function pinsOf(o: KubeObject): Pin[] {
  const kept = o[PINS];
  if (Array.isArray(kept)) return kept.filter((p): p is Pin => typeof p?.field === 'string' && typeof p?.value === 'string');
  const data = typeof o.data?.release === 'string' ? decodeRelease(o.data.release) : undefined;
  return data ? releasePins(data) : [];
}

/**
 * What the live read keeps of a release Secret: its name, namespace, Helm's labels and the clusterIPs the release
 * pins. The data (the whole release: chart, values, which may hold credentials) is dropped as soon as it is read.
 */
export function slimRelease(o: KubeObject): KubeObject {
  const labels = o.metadata?.labels ?? {};
  const keep: Record<string, string> = {};
  for (const k of ['owner', 'name', 'status', 'version']) if (typeof labels[k] === 'string') keep[k] = labels[k]!;
  return {
    apiVersion: o.apiVersion ?? 'v1', kind: 'Secret', type: o.type,
    metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, labels: keep },
    [PINS]: pinsOf(o),
  };
}

function read(o: KubeObject): ReferenceSource[] {
  if (o.kind !== 'Secret' || o.type !== HELM_RELEASE_TYPE) return [];
  // superseded revisions are history: only the deployed one is upgraded from
  if (o.metadata?.labels?.status !== undefined && o.metadata.labels.status !== 'deployed') return [];
  const pins = pinsOf(o);
  const release = o.metadata?.labels?.name ?? o.metadata?.name ?? '';
  return pins.map((p) => ({
    ...sourceBase(o), field: `release ${release}: ${p.field}`, format: 'text', use: 'address', strict: true, values: [p.value],
    why: `Helm release ${release} pins it: the next helm upgrade renders it again and fights the move, so change the release's values (or chart) to the new address`,
  }));
}

/**
 * Listed live only with --read-helm-releases: the deployed revisions (label status=deployed, as Helm labels them) of
 * type helm.sh/release.v1 (a field selector the apiserver serves for Secrets), in small pages, each slimmed at once.
 */
export const helmReleases: ReferenceSourceModule = {
  lists: [{
    group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true, optIn: 'helm-releases',
    fieldSelector: `type=${HELM_RELEASE_TYPE}`, labelSelector: 'owner=helm,status=deployed', pageSize: PAGE_SIZE, slim: slimRelease,
  }],
  read,
};
