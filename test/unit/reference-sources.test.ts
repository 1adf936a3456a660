// The sources of src/cluster/references/, each on a fixture written from its project's documented format
// (docs/references.md), scanned against a Service and a pod move.
import { install } from '../../src/install.ts';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSnapshot } from '../../src/cluster/build.ts';
import type { KubeObject } from '../../src/cluster/types.ts';
import { scanReferences, type RangeMove, type Reference } from '../../src/analyze/references.ts';
import { REFERENCE_SOURCES, referenceLists } from '../../src/cluster/references/registry.ts';
import { slimPod } from '../../src/kube/discover.ts';
import { gzipSync } from 'node:zlib';

install();

const POD: RangeMove = { role: 'pod', from: '10.244.0.0/16', to: '10.200.0.0/16' };
const SVC: RangeMove = { role: 'service', from: '10.96.0.0/16', to: '10.100.0.0/16' };
const DNS: KubeObject = {
  apiVersion: 'v1', kind: 'Service', metadata: { name: 'kube-dns', namespace: 'kube-system' },
  spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ port: 53 }] },
};

function scan(objects: KubeObject[], moves = [SVC, POD], clusterIPs?: Map<string, string>): Reference[] {
  const snap = buildSnapshot({ source: { kind: 'live' }, objects: [DNS, ...objects], configs: [], gaps: [] });
  return scanReferences(snap, moves, clusterIPs ? { clusterIPs } : {});
}

function lines(refs: Reference[]): string[] {
  return refs.map((r) => `${r.severity} ${r.role} ${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.field}: ${r.value} → ${r.proposed ?? '-'}`);
}

function deployment(name: string, template: Record<string, unknown>, ns = 'app'): KubeObject {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns }, spec: { template } };
}

describe('reference sources', () => {
  test('Calico BGPConfiguration: serviceClusterIPs naming the old Service range must add the new one', () => {
    const refs = scan([{
      apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' },
      spec: { serviceClusterIPs: [{ cidr: '10.96.0.0/16' }], serviceExternalIPs: [{ cidr: '104.244.42.129/32' }] },
    }]);
    assert.deepEqual(lines(refs), ['error service BGPConfiguration default spec.serviceClusterIPs[].cidr: [10.96.0.0/16] → [10.96.0.0/16, 10.100.0.0/16]']);
    assert.match(refs[0]!.note, /does not advertise 10\.100\.0\.0\/16 over BGP/);
  });

  test('Istio: pod-template capture annotations and the injector ConfigMap values', () => {
    const refs = scan([
      deployment('web', { metadata: { annotations: {
        'traffic.sidecar.istio.io/includeOutboundIPRanges': '10.96.0.0/16,10.244.0.0/16',
        'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.244.7.0/24',
      } }, spec: { containers: [{ name: 'web' }] } }),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'istio-sidecar-injector', namespace: 'istio-system' },
        data: { values: JSON.stringify({ global: { proxy: { includeIPRanges: '10.96.0.0/16', excludeIPRanges: '' } } }) } },
    ]);
    assert.deepEqual(lines(refs), [
      'error service Deployment app/web spec.template.metadata.annotations["traffic.sidecar.istio.io/includeOutboundIPRanges"]: 10.96.0.0/16,10.244.0.0/16 → 10.96.0.0/16,10.244.0.0/16,10.100.0.0/16,10.200.0.0/16',
      'error pod Deployment app/web spec.template.metadata.annotations["traffic.sidecar.istio.io/includeOutboundIPRanges"]: 10.96.0.0/16,10.244.0.0/16 → 10.96.0.0/16,10.244.0.0/16,10.100.0.0/16,10.200.0.0/16',
      'error pod Deployment app/web spec.template.metadata.annotations["traffic.sidecar.istio.io/excludeOutboundIPRanges"]: 10.244.7.0/24 → 10.244.7.0/24,10.200.7.0/24',
      'error service ConfigMap istio-system/istio-sidecar-injector data["values"].global.proxy.includeIPRanges: 10.96.0.0/16 → 10.96.0.0/16,10.100.0.0/16',
    ]);
    assert.match(refs[0]!.note, /bypasses the mesh/);
    assert.match(refs[2]!.note, /captured by the sidecar/);
  });

  test('Linkerd: clusterNetworks naming the old pod range; the default private blocks are only a warning', () => {
    const cm = (v: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'linkerd-config', namespace: 'linkerd' }, data: { values: `clusterDomain: cluster.local\nclusterNetworks: "${v}"\n` } });
    assert.deepEqual(lines(scan([cm('10.244.0.0/16,10.96.0.0/16')], [POD])), ['error pod ConfigMap linkerd/linkerd-config data["values"].clusterNetworks: 10.244.0.0/16,10.96.0.0/16 → 10.244.0.0/16,10.96.0.0/16,10.200.0.0/16']);
    const wide = scan([cm('10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16')], [POD]);
    assert.deepEqual(wide.map((r) => r.severity), []);
    // a new range outside the default blocks is a finding of the wide value: a warning, never rewritten
    const out = scan([cm('10.0.0.0/8')], [{ role: 'pod', from: '10.244.0.0/16', to: '172.31.0.0/16' }]);
    assert.deepEqual(out.map((r) => `${r.severity} ${r.proposed ?? '-'}`), ['warning -']);
  });

  test('containers: a ClusterIP in args or env is an error with the mapped address; a range there is a warning', () => {
    const refs = scan([
      { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'node-local-dns', namespace: 'kube-system' }, spec: { template: { spec: {
        containers: [{ name: 'node-cache', args: ['-localip', '169.254.20.10,10.96.0.10', '-conf', '/etc/Corefile'] }],
      } } } },
      deployment('ingress', { spec: { containers: [{ name: 'nginx', env: [{ name: 'TRUSTED', value: '10.244.0.0/16' }, { name: 'SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }] } }),
    ], [SVC, POD], new Map([['10.96.0.10', '10.100.0.10']]));
    assert.deepEqual(lines(refs), [
      'error service DaemonSet kube-system/node-local-dns spec.template.spec.containers[name=node-cache].command/args: 10.96.0.10 → 10.100.0.10',
      'warning pod Deployment app/ingress spec.template.spec.containers[name=nginx].env[TRUSTED]: 10.244.0.0/16 → 10.200.0.0/16',
    ]);
    assert.match(refs[0]!.note, /ClusterIP of Service kube-system\/kube-dns.*Change it to 10\.100\.0\.10 \(the plan's mapping\)/);
  });

  test('ConfigMaps outside kube-system: a resolver by ClusterIP', () => {
    const refs = scan([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'resolv', namespace: 'app' }, data: { 'resolv.conf': 'nameserver 10.96.0.10\noptions ndots:5\n' } }]);
    assert.deepEqual(lines(refs), ['error service ConfigMap app/resolv data["resolv.conf"]: 10.96.0.10 → 10.100.0.10']);
  });

  test('hostAliases: a ClusterIP or a pod address, in a template or a bare pod (as the live read keeps it)', () => {
    const bare = slimPod({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'tool', namespace: 'app' },
      spec: { nodeName: 'n1', hostAliases: [{ ip: '10.244.3.7', hostnames: ['db'] }], containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Running', podIP: '10.244.1.2' },
    });
    const refs = scan([deployment('web', { spec: { hostAliases: [{ ip: '10.96.0.10', hostnames: ['dns'] }, { ip: '192.0.2.1', hostnames: ['ext'] }] } }), bare]);
    assert.deepEqual(lines(refs), [
      'error service Deployment app/web spec.template.spec.hostAliases[0].ip (dns): 10.96.0.10 → 10.100.0.10',
      'error pod Pod app/tool spec.hostAliases[0].ip (db): 10.244.3.7 → -',
    ]);
  });

  test('EndpointSlices: only those the EndpointSlice controller does not manage', () => {
    const slice = (name: string, labels: Record<string, string>): KubeObject => ({
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name, namespace: 'app', labels }, addressType: 'IPv4',
      endpoints: [{ addresses: ['10.244.1.5'] }, { addresses: ['192.0.2.9'] }],
    });
    const refs = scan([
      slice('auto', { 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' }),
      slice('mirrored', { 'endpointslice.kubernetes.io/managed-by': 'endpointslicemirroring-controller.k8s.io' }),
      slice('manual', {}),
    ]);
    assert.deepEqual(lines(refs), [
      'error pod EndpointSlice app/mirrored endpoints[].addresses: 10.244.1.5 → -',
      'error pod EndpointSlice app/manual endpoints[].addresses: 10.244.1.5 → -',
    ]);
  });

  test('webhooks: a clientConfig.url at an address in the old Service range, with the URL to use', () => {
    const refs = scan([{
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'policy' },
      webhooks: [
        { name: 'a.example.com', clientConfig: { url: 'https://10.96.5.5:8443/validate' } },
        { name: 'b.example.com', clientConfig: { service: { namespace: 'x', name: 'y' } } },
        { name: 'c.example.com', clientConfig: { url: 'https://hooks.example.com/v' } },
      ],
    }]);
    assert.deepEqual(lines(refs), ['error service ValidatingWebhookConfiguration policy webhooks[0].clientConfig.url (a.example.com): 10.96.5.5 → https://10.100.5.5:8443/validate']);
  });

  test('Helm: a deployed release whose manifest or values pin a clusterIP in the old range; the data is not printed', () => {
    // as helm's secrets driver stores it: data.release = base64(base64(gzip(JSON of the release)))
    const secret = (status: string, release: Record<string, unknown>, gzip = true): KubeObject => {
      const json = Buffer.from(JSON.stringify(release));
      const stored = (gzip ? gzipSync(json) : json).toString('base64');
      return {
        apiVersion: 'v1', kind: 'Secret', type: 'helm.sh/release.v1',
        metadata: { name: `sh.helm.release.v1.web.v${status === 'deployed' ? 2 : 1}`, namespace: 'app', labels: { owner: 'helm', name: 'web', status } },
        data: { release: Buffer.from(stored).toString('base64') },
      };
    };
    const release = {
      name: 'web', config: { service: { clusterIP: '10.96.7.7', type: 'ClusterIP' }, password: 'hunter2' },
      manifest: '---\n# Source: web/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  clusterIP: 10.96.7.7\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: headless\nspec:\n  clusterIP: None\n',
    };
    const refs = scan([secret('deployed', release), secret('superseded', release, false)], [SVC], new Map([['10.96.7.7', '10.100.9.9']]));
    assert.deepEqual(lines(refs), [
      'error service Secret app/sh.helm.release.v1.web.v2 release web: manifest Service web spec.clusterIP: 10.96.7.7 → 10.100.9.9',
      'error service Secret app/sh.helm.release.v1.web.v2 release web: values service.clusterIP: 10.96.7.7 → 10.100.9.9',
    ]);
    assert.match(refs[0]!.note, /next helm upgrade renders it again/);
    assert.equal(JSON.stringify(refs).includes('hunter2'), false);
    // a release stored before compression (no gzip header) is read as well
    assert.equal(scan([secret('deployed', release, false)], [SVC]).length, 2);
  });

  test('GitOps: a moved Service that Flux applies, or an Argo CD Application syncs with selfHeal, names what to suspend', () => {
    const svc = (name: string, ip: string, meta: { labels?: Record<string, string>; annotations?: Record<string, string> }): KubeObject => ({
      apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'app', ...meta }, spec: { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip], ports: [{ port: 80 }] },
    });
    const app = (name: string, selfHeal: boolean): KubeObject => ({
      apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: 'argocd' },
      spec: { syncPolicy: { automated: { prune: true, selfHeal } } },
    });
    const objects = [
      svc('flux', '10.96.1.1', { labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system' } }),
      svc('argo', '10.96.1.2', { annotations: { 'argocd.argoproj.io/tracking-id': 'shop:/Service:app/argo' } }),
      svc('argo-manual', '10.96.1.3', { labels: { 'app.kubernetes.io/instance': 'manual' } }),
      svc('kept', '10.96.1.4', { labels: { 'helm.toolkit.fluxcd.io/name': 'kept', 'helm.toolkit.fluxcd.io/namespace': 'flux-system' } }),
      app('shop', true), app('manual', false),
    ];
    const moved = new Map([['10.96.1.1', '10.100.1.1'], ['10.96.1.2', '10.100.1.2'], ['10.96.1.3', '10.100.1.3']]);
    const refs = scan(objects, [SVC], moved);
    assert.deepEqual(lines(refs), [
      'error service Service app/flux spec.clusterIPs: 10.96.1.1 → 10.100.1.1',
      'error service Service app/argo spec.clusterIPs: 10.96.1.2 → 10.100.1.2',
    ]);
    assert.match(refs[0]!.note, /Flux Kustomization flux-system\/apps .*flux suspend kustomization apps -n flux-system\) before step move-services/);
    assert.match(refs[1]!.note, /Argo CD Application argocd\/shop syncs this Service with selfHeal/);
  });

  test('the registry: every source reads, and the live lists name each resource once', () => {
    assert.ok(Object.values(REFERENCE_SOURCES).every((s) => typeof s.read === 'function'));
    const keys = referenceLists().map((l) => `${l.group}/${l.plural}`);
    assert.equal(new Set(keys).size, keys.length);
    assert.ok(keys.includes('admissionregistration.k8s.io/validatingwebhookconfigurations'));
  });
});
