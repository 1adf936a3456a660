// The standard fixture: a small but varied cluster for renumbering tests.
//
//   const fx = await populate(tb, { namespaces: 2, deployments: 2, replicas: 2, services: 20 });
//
// Creates, in namespaces tb-app-0..N-1:
//   - Deployments web-<j> (replicas each) with a ClusterIP Service web-<j> in front;
//   - a StatefulSet db (2 replicas) with its headless Service db (clusterIP: None);
//   - Services: svc-nodeport (NodePort), svc-lb (LoadBalancer, status.loadBalancer.ingress set through the
//     status subresource), svc-external (ExternalName), svc-multiport (TCP 80 + 443 + UDP 53);
//   - PodDisruptionBudgets web-0 (minAvailable 1) and db (maxUnavailable 1);
//   - `services` extra plain ClusterIP Services bulk-<k>, spread over the namespaces (selector app=web-0).
// In tb-app-0 also a DaemonSet agent (one pod per node).
// In kube-system: Service kube-dns at the 10th IP of the service range (53/UDP, 53/TCP, 9153/TCP) and a
// CoreDNS-like Deployment coredns (label k8s-app=kube-dns, 2 replicas), with a PDB; ConfigMap calico-config
// (cni_network_config with "ipam": {"type": "calico-ipam"}).
// Cluster-wide: Calico IPPool default-ipv4-ippool (pod CIDR, blockSize 26, ipipMode Always, natOutgoing).
//
// With waitRunning (default true) it returns once every fixture pod is Running with a pod IP.

import type { Testbed } from './cluster.ts';
import { nthIP } from './ip.ts';
import type { KubeObject } from './kube.ts';

export interface FixtureOptions {
  /** App namespaces (default 2). */
  namespaces?: number;
  /** Deployments per namespace (default 2). */
  deployments?: number;
  /** Replicas per Deployment (default 2). */
  replicas?: number;
  /** Extra plain ClusterIP Services in total, spread over the namespaces (default 0). */
  services?: number;
  /** Wait until all fixture pods run with an IP (default true). */
  waitRunning?: boolean;
  /** Calico IPPool + calico-config (default true; needs the Calico CRDs). */
  calico?: boolean;
  timeoutMs?: number;
  /**
   * Fixed ClusterIPs (from the 200th address of the range on, in creation order) and nodePorts (from 30100 on)
   * instead of the apiserver's random ones, so that every run gives the same addresses (the walkthrough's page).
   */
  fixedAddresses?: boolean;
}

export interface FixtureResult {
  namespaces: string[];
  kubeDnsIP: string;
  /** "namespace/name" of every Service the fixture created. */
  services: string[];
  /** Pods expected once all workloads are up. */
  expectedPods: number;
  loadBalancerIngressIP: string;
}

export const LB_INGRESS_IP = '203.0.113.10'; // TEST-NET-3: documentation only, never contacted
const IMAGE = 'registry.k8s.io/pause:3.10';

function container(name: string, ports: { containerPort: number; protocol?: string; name?: string }[] = []) {
  return { name, image: IMAGE, ports, resources: { requests: { cpu: '10m', memory: '16Mi' } } };
}

function podTemplate(labels: Record<string, string>, ports: { containerPort: number; protocol?: string; name?: string }[]) {
  return {
    metadata: { labels },
    spec: {
      containers: [container('main', ports)],
      terminationGracePeriodSeconds: 0,
      // only kwok's own taint (in setups that add it): tolerating everything would also tolerate
      // node.kubernetes.io/unschedulable, and cordoned nodes would keep receiving pods
      tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
    },
  };
}

export function fixtureObjects(serviceCIDR: string, podCIDR: string, opts: FixtureOptions = {}) {
  const nsCount = opts.namespaces ?? 2;
  const deployments = opts.deployments ?? 2;
  const replicas = opts.replicas ?? 2;
  const extra = opts.services ?? 0;
  const calico = opts.calico ?? true;
  const namespaces = Array.from({ length: nsCount }, (_, i) => `tb-app-${i}`);
  const kubeDnsIP = nthIP(serviceCIDR, 10);

  const nsObjs: KubeObject[] = namespaces.map((name) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'kube-renumber.test/fixture': 'true' } },
  }));
  const objs: KubeObject[] = [];
  const services: string[] = [];
  let expectedPods = 0;
  let nextIP = 200;
  let nextPort = 30100;
  const svc = (ns: string, name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject => {
    services.push(`${ns}/${name}`);
    if (opts.fixedAddresses && spec.type !== 'ExternalName') {
      if (spec.clusterIP === undefined) spec = { ...spec, clusterIP: nthIP(serviceCIDR, nextIP++) };
      if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') {
        spec = { ...spec, ports: (spec.ports as Array<Record<string, unknown>>).map((p) => ({ ...p, nodePort: nextPort++ })) };
      }
    }
    return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns, labels }, spec };
  };

  // kube-system: DNS
  objs.push(
    svc(
      'kube-system',
      'kube-dns',
      {
        selector: { 'k8s-app': 'kube-dns' },
        clusterIP: kubeDnsIP,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
          { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
        ],
      },
      { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' },
    ),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        template: podTemplate({ 'k8s-app': 'kube-dns' }, [
          { containerPort: 53, protocol: 'UDP', name: 'dns' },
          { containerPort: 53, protocol: 'TCP', name: 'dns-tcp' },
          { containerPort: 9153, protocol: 'TCP', name: 'metrics' },
        ]),
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { 'k8s-app': 'kube-dns' } } },
    },
  );
  expectedPods += 2;

  if (calico) {
    objs.push(
      {
        apiVersion: 'crd.projectcalico.org/v1',
        kind: 'IPPool',
        metadata: { name: 'default-ipv4-ippool' },
        spec: {
          cidr: podCIDR,
          blockSize: 26,
          ipipMode: 'Always',
          vxlanMode: 'Never',
          natOutgoing: true,
          nodeSelector: 'all()',
          allowedUses: ['Workload', 'Tunnel'],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'calico-config', namespace: 'kube-system' },
        data: {
          typha_service_name: 'none',
          calico_backend: 'bird',
          veth_mtu: '0',
          cni_network_config: JSON.stringify(
            {
              name: 'k8s-pod-network',
              cniVersion: '0.3.1',
              plugins: [
                {
                  type: 'calico',
                  log_level: 'info',
                  datastore_type: 'kubernetes',
                  nodename: '__KUBERNETES_NODE_NAME__',
                  mtu: '__CNI_MTU__',
                  ipam: { type: 'calico-ipam' },
                  policy: { type: 'k8s' },
                  kubernetes: { kubeconfig: '__KUBECONFIG_FILEPATH__' },
                },
                { type: 'portmap', snat: true, capabilities: { portMappings: true } },
                { type: 'bandwidth', capabilities: { bandwidth: true } },
              ],
            },
            null,
            2,
          ),
        },
      },
    );
  }

  namespaces.forEach((ns, nsIndex) => {
    for (let j = 0; j < deployments; j++) {
      const app = `web-${j}`;
      objs.push({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: app, namespace: ns, labels: { app } },
        spec: {
          replicas,
          selector: { matchLabels: { app } },
          template: podTemplate({ app }, [{ containerPort: 8080, name: 'http' }]),
        },
      });
      objs.push(svc(ns, app, { selector: { app }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }, { app }));
      expectedPods += replicas;
    }
    objs.push(
      svc(ns, 'db', {
        clusterIP: 'None',
        selector: { app: 'db' },
        ports: [{ name: 'pg', port: 5432, targetPort: 5432 }],
      }),
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: ns, labels: { app: 'db' } },
        spec: {
          serviceName: 'db',
          replicas: 2,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: { app: 'db' } },
          template: podTemplate({ app: 'db' }, [{ containerPort: 5432, name: 'pg' }]),
        },
      },
      svc(ns, 'svc-nodeport', {
        type: 'NodePort',
        selector: { app: 'web-0' },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }),
      svc(ns, 'svc-lb', {
        type: 'LoadBalancer',
        selector: { app: 'web-0' },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }),
      svc(ns, 'svc-external', { type: 'ExternalName', externalName: 'db.example.com' }),
      svc(ns, 'svc-multiport', {
        selector: { app: 'web-0' },
        ports: [
          { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
          { name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' },
          { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
        ],
      }),
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'db', namespace: ns },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'db' } } },
      },
    );
    expectedPods += 2;
    if (deployments > 0) {
      objs.push({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web-0', namespace: ns },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'web-0' } } },
      });
    }
    if (nsIndex === 0) {
      objs.push({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent', namespace: ns, labels: { app: 'agent' } },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: podTemplate({ app: 'agent' }, []),
        },
      });
    }
  });

  for (let k = 0; k < extra; k++) {
    const ns = namespaces[k % namespaces.length]!;
    objs.push(
      svc(ns, `bulk-${k}`, { selector: { app: 'web-0' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }, {
        'kube-renumber.test/bulk': 'true',
      }),
    );
  }

  return { nsObjs, objs, namespaces, kubeDnsIP, services, expectedPods };
}

interface PodLite {
  metadata: { name: string; namespace?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string };
}

export async function populate(tb: Testbed, opts: FixtureOptions = {}): Promise<FixtureResult> {
  const built = fixtureObjects(tb.serviceCIDR, tb.options.podCIDR, { calico: tb.options.calicoCRDs, ...opts });
  const nodes = (await tb.client.list('/api/v1/nodes')).items.length;
  const daemonPods = nodes;
  await tb.client.createAll(built.nsObjs);
  // Pods need the namespace's default ServiceAccount (kube-controller-manager creates it).
  await waitUntil(
    'default ServiceAccounts in fixture namespaces',
    async () => {
      for (const ns of [...built.namespaces, 'kube-system']) {
        const sa = await tb.client.getOrUndefined(`/api/v1/namespaces/${ns}/serviceaccounts/default`);
        if (!sa) return false;
      }
      return true;
    },
    opts.timeoutMs ?? 60_000,
  );
  await tb.client.createAll(built.objs);
  for (const ns of built.namespaces) {
    await tb.client.request('PATCH', `/api/v1/namespaces/${ns}/services/svc-lb/status`, {
      status: { loadBalancer: { ingress: [{ ip: LB_INGRESS_IP }] } },
    }, 'application/merge-patch+json');
  }
  const expectedPods = built.expectedPods + daemonPods;
  if (opts.waitRunning ?? true) {
    await waitUntil(
      `${expectedPods} fixture pods Running with an IP`,
      async () => {
        let running = 0;
        for (const ns of [...built.namespaces, 'kube-system']) {
          const pods = await tb.client.list<PodLite>(`/api/v1/namespaces/${ns}/pods`);
          running += pods.items.filter((p) => p.status?.phase === 'Running' && p.status.podIP).length;
        }
        return running >= expectedPods;
      },
      opts.timeoutMs ?? 120_000,
    );
  }
  return {
    namespaces: built.namespaces,
    kubeDnsIP: built.kubeDnsIP,
    services: built.services,
    expectedPods,
    loadBalancerIngressIP: LB_INGRESS_IP,
  };
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}
