// Benchmark: the size of a run's state kept in the cluster (src/engine/cluster-state.ts) for a large cluster.
//
//   npm run bench -- state-size [--services N]
//
// Builds N Service backups (default 20,000) shaped as the apiserver returns them (random uids, labels, annotations,
// managedFields, two ports, selector, clusterIP/clusterIPs, families, status) and the journal of an in-place run
// moving them (per Service a `created` entry for its cover, a backup entry per batch, step entries), writes them as
// one base chunk, and reports: raw JSON bytes, gzip bytes, Secrets (parts of at most MAX_PART_BYTES), the time to
// build them and to read them back (assemble). No cluster: sizes and CPU time only.
// Human-readable table on stdout, then one JSON line (last stdout line).

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { KubeObject } from '../src/cluster/types.ts';
import type { BackupRecord } from '../src/engine/backup.ts';
import { assemble, chunkSecrets, MAX_PART_BYTES } from '../src/engine/cluster-state.ts';
import type { JournalEntry } from '../src/engine/journal.ts';

const RUN = '0123456789ab';

function service(i: number): KubeObject {
  const ns = `team-${i % 200}`;
  const name = `svc-${i.toString(36)}-backend`;
  const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
  const ts = '2026-01-02T03:04:05Z';
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: {
      name, namespace: ns, uid: randomUUID(), resourceVersion: String(100000 + i), creationTimestamp: ts,
      labels: { app: name, 'app.kubernetes.io/part-of': ns, tier: 'backend' },
      annotations: { 'meta.helm.sh/release-name': ns, 'meta.helm.sh/release-namespace': ns },
      managedFields: [{
        manager: 'helm', operation: 'Update', apiVersion: 'v1', time: ts, fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:meta.helm.sh/release-name': {}, 'f:meta.helm.sh/release-namespace': {} }, 'f:labels': { '.': {}, 'f:app': {}, 'f:tier': {} } },
          'f:spec': { 'f:internalTrafficPolicy': {}, 'f:ports': { '.': {}, 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} } }, 'f:selector': {}, 'f:sessionAffinity': {}, 'f:type': {} } },
      }],
    },
    spec: {
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }, { name: 'metrics', protocol: 'TCP', port: 9090, targetPort: 9090 }],
      selector: { app: name }, clusterIP: ip, clusterIPs: [ip], type: 'ClusterIP', sessionAffinity: 'None',
      ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster',
    },
    status: { loadBalancer: {} },
  } as KubeObject;
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { services: { type: 'string' } } });
  const n = Number(values.services ?? 20000);
  const ts = new Date().toISOString();
  const backups: BackupRecord[] = Array.from({ length: n }, (_, i) => ({ takenAt: ts, run: RUN, cluster: 'b2f4c6d8-1a3c-4e5f-8a9b-0c1d2e3f4a5b', object: service(i) }));
  const journal: JournalEntry[] = [{ ts, run: RUN, event: 'run-start', detail: 'apply' }];
  for (let b = 0; b < n; b += 500) {
    journal.push({ ts, run: RUN, event: 'backup', step: 'move-services', objects: backups.slice(b, b + 500).map((r) => `core/Service/${r.object.metadata!.namespace}/${r.object.metadata!.name}`), detail: '500 file(s)' });
  }
  for (const r of backups) journal.push({ ts, run: RUN, event: 'created', objects: [`core/Service/${r.object.metadata!.namespace}/${r.object.metadata!.name}-kr-cover@${randomUUID()}`] });
  journal.push({ ts, run: RUN, event: 'step-done', step: 'move-services' });
  const raw = Buffer.byteLength(JSON.stringify({ base: true, journal, backups }));
  const t0 = performance.now();
  const secrets = chunkSecrets(RUN, 0, { base: true, journal, backups });
  const tBuild = performance.now() - t0;
  const gz = secrets.reduce((s, x) => s + Buffer.from((x as { data: Record<string, string> }).data['state.json.gz']!, 'base64').length, 0);
  const stored = secrets.reduce((s, x) => s + Buffer.byteLength(JSON.stringify(x)), 0);
  const t1 = performance.now();
  const back = assemble(RUN, secrets);
  const tRead = performance.now() - t1;
  if (back.backups.length !== n || back.journal.length !== journal.length) throw new Error('the state read back differs');
  const MiB = 1024 * 1024;
  const rows: Array<[string, string]> = [
    ['Services backed up', String(n)],
    ['journal entries', String(journal.length)],
    ['state as JSON', `${(raw / MiB).toFixed(1)} MiB`],
    ['gzip', `${(gz / MiB).toFixed(2)} MiB (${(raw / gz).toFixed(0)}x)`],
    ['Secrets (parts)', `${secrets.length} of at most ${MAX_PART_BYTES / 1024} KiB gzip`],
    ['stored (base64 Secrets)', `${(stored / MiB).toFixed(2)} MiB`],
    ['build (gzip)', `${tBuild.toFixed(0)} ms`],
    ['read back (gunzip, parse, check)', `${tRead.toFixed(0)} ms`],
  ];
  process.stdout.write(`${rows.map(([k, v]) => `${k.padEnd(34)} ${v}`).join('\n')}\n`);
  process.stdout.write(`${JSON.stringify({ services: n, journalEntries: journal.length, rawBytes: raw, gzipBytes: gz, secrets: secrets.length, storedBytes: stored, buildMs: Math.round(tBuild), readMs: Math.round(tRead) })}\n`);
  return 0;
}
