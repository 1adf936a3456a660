/**
 * Generates the bundled example dumps (examples/<name>/*.yaml) deterministically: run
 *
 *     npx node examples/generate.ts
 *
 * and commit the output. Every name, address, uid and timestamp is derived from fixed inputs, so running
 * it twice gives byte-identical files. See examples/README.md for what each example shows.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { hash, suffix } from './names.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

type Obj = Record<string, any>;

// ---------------------------------------------------------------- helpers


function uid(seed: string): string {
  const hex = [0, 1, 2, 3].map((i) => hash(`${seed}#${i}`).toString(16).padStart(8, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function ipv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

function v4(s: string): number {
  return s.split('.').reduce((a, o) => a * 256 + Number(o), 0);
}

function list(items: Obj[]): Obj {
  return { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } };
}

function write(example: string, file: string, doc: Obj | Obj[]): void {
  const path = join(HERE, example, file);
  mkdirSync(dirname(path), { recursive: true });
  const docs = Array.isArray(doc) ? doc : [doc];
  const text = docs.map((d) => dump(d, { sortKeys: true, noRefs: true, lineWidth: -1, quoteStyle: 'double', seqNoIndent: true })).join('---\n');
  writeFileSync(path, text);
}

function meta(name: string, namespace: string | undefined, extra: Obj = {}, created = '2024-03-04T10:00:00Z'): Obj {
  const m: Obj = { creationTimestamp: created, name, resourceVersion: String(1000 + (hash(`${namespace}/${name}`) % 900000)), uid: uid(`${namespace}/${name}`), ...extra };
  if (namespace !== undefined) m.namespace = namespace;
  return m;
}

function node(o: {
  name: string; ip: string; externalIP?: string; podCIDR?: string; labels: Obj; annotations?: Obj; kubelet: string;
  providerID?: string; created?: string;
}): Obj {
  const addresses: Obj[] = [{ address: o.ip, type: 'InternalIP' }];
  if (o.externalIP) addresses.push({ address: o.externalIP, type: 'ExternalIP' });
  addresses.push({ address: o.name, type: 'Hostname' });
  const spec: Obj = {};
  if (o.podCIDR) {
    spec.podCIDR = o.podCIDR;
    spec.podCIDRs = [o.podCIDR];
  }
  if (o.providerID) spec.providerID = o.providerID;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: meta(o.name, undefined, { labels: o.labels, ...(o.annotations ? { annotations: o.annotations } : {}) }, o.created),
    spec,
    status: {
      addresses,
      conditions: [
        { lastHeartbeatTime: '2025-06-02T08:00:00Z', lastTransitionTime: '2025-05-01T00:00:00Z', message: 'kubelet is posting ready status', reason: 'KubeletReady', status: 'True', type: 'Ready' },
      ],
      nodeInfo: { architecture: 'amd64', kubeletVersion: o.kubelet, operatingSystem: 'linux' },
    },
  };
}

interface PodOpts {
  ns: string; name: string; node: string; ip: string; hostNetwork?: boolean; labels?: Obj; annotations?: Obj;
  owner?: { kind: string; name: string; apiVersion?: string }; containers: Obj[]; phase?: string; priorityClassName?: string;
}

function pod(o: PodOpts): Obj {
  const extra: Obj = {};
  if (o.labels) extra.labels = o.labels;
  if (o.annotations) extra.annotations = o.annotations;
  if (o.owner) {
    extra.ownerReferences = [{
      apiVersion: o.owner.apiVersion ?? (o.owner.kind === 'Node' ? 'v1' : o.owner.kind === 'Job' ? 'batch/v1' : 'apps/v1'),
      blockOwnerDeletion: true, controller: true, kind: o.owner.kind, name: o.owner.name, uid: uid(`${o.ns}/${o.owner.kind}/${o.owner.name}`),
    }];
  }
  const spec: Obj = { containers: o.containers, nodeName: o.node };
  if (o.hostNetwork) spec.hostNetwork = true;
  if (o.priorityClassName) spec.priorityClassName = o.priorityClassName;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta(o.name, o.ns, extra),
    spec,
    status: { phase: o.phase ?? 'Running', podIP: o.ip, podIPs: [{ ip: o.ip }] },
  };
}

function svc(o: {
  ns: string; name: string; type?: string; clusterIP?: string; ports?: Obj[]; selector?: Obj; labels?: Obj; annotations?: Obj;
  externalName?: string; lbIngress?: Obj[];
}): Obj {
  const spec: Obj = { type: o.type ?? 'ClusterIP' };
  if (o.clusterIP) {
    spec.clusterIP = o.clusterIP;
    spec.clusterIPs = [o.clusterIP];
    spec.ipFamilies = ['IPv4'];
    spec.ipFamilyPolicy = 'SingleStack';
    spec.internalTrafficPolicy = 'Cluster';
  }
  if (o.ports) spec.ports = o.ports;
  if (o.selector) spec.selector = o.selector;
  if (o.externalName) spec.externalName = o.externalName;
  spec.sessionAffinity = 'None';
  if (o.type === 'LoadBalancer' || o.type === 'NodePort') spec.externalTrafficPolicy = 'Cluster';
  const extra: Obj = {};
  if (o.labels) extra.labels = o.labels;
  if (o.annotations) extra.annotations = o.annotations;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(o.name, o.ns, extra),
    spec,
    status: { loadBalancer: o.lbIngress ? { ingress: o.lbIngress } : {} },
  };
}

function configMap(ns: string, name: string, data: Obj, extra: Obj = {}): Obj {
  return { apiVersion: 'v1', data, kind: 'ConfigMap', metadata: meta(name, ns, extra) };
}

/** IPAMBlock + BlockAffinity for one node's block; `used` are the offsets (within the block) in use. */
function calicoBlock(nodeName: string, cidr: string, used: Array<{ offset: number; handle: string }>, blockSize = 26): Obj[] {
  const size = 2 ** (32 - blockSize);
  const allocations: Array<number | null> = new Array(size).fill(null);
  const attributes: Obj[] = [];
  const sorted = [...used].sort((a, b) => a.offset - b.offset);
  for (const u of sorted) {
    allocations[u.offset] = attributes.length;
    attributes.push({ handle_id: u.handle, secondary: u.handle.startsWith('ipip') ? { node: nodeName, type: 'ipipTunnelAddress' } : { node: nodeName } });
  }
  const unallocated: number[] = [];
  for (let i = 0; i < size; i++) if (allocations[i] === null) unallocated.push(i);
  const dashed = cidr.replace(/[./]/g, '-');
  return [
    {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'IPAMBlock',
      metadata: meta(dashed, undefined),
      spec: { affinity: `host:${nodeName}`, allocations, attributes, cidr, deleted: false, sequenceNumber: 0, strictAffinity: false, unallocated },
    },
    {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'BlockAffinity',
      metadata: meta(`${nodeName}-${dashed}`, undefined),
      spec: { cidr, deleted: 'false', node: nodeName, state: 'confirmed' },
    },
  ];
}

function ippool(apiVersion: string, name: string, spec: Obj): Obj {
  return { apiVersion, kind: 'IPPool', metadata: meta(name, undefined), spec };
}

function goRunner(binary: string, image: string, flags: string[]): Obj {
  return {
    args: [`--log-file=/var/log/${binary}.log`, '--also-stdout', `/usr/local/bin/${binary}`, ...flags],
    command: ['/go-runner'],
    image,
    name: binary,
  };
}

/** A pod IP allocator over per-node Calico blocks: offset 0 is the node's IPIP tunnel address. */
class BlockAlloc {
  readonly used = new Map<string, Array<{ offset: number; handle: string }>>();
  readonly blocks: Map<string, string>;
  constructor(blocks: Map<string, string>) {
    this.blocks = blocks;
    for (const [n] of blocks) this.used.set(n, [{ offset: 0, handle: `ipip-tunnel-addr-${n}` }]);
  }
  next(nodeName: string, podNs: string, podName: string): string {
    const cidr = this.blocks.get(nodeName)!;
    const u = this.used.get(nodeName)!;
    const offset = u.length === 0 ? 0 : Math.max(...u.map((x) => x.offset)) + 1;
    u.push({ offset, handle: `k8s-pod-network.${hash(`${podNs}/${podName}`).toString(16).padStart(8, '0')}` });
    return ipv4(v4(cidr.split('/')[0]) + offset);
  }
  objects(): Obj[] {
    return [...this.blocks].flatMap(([n, cidr]) => calicoBlock(n, cidr, this.used.get(n)!));
  }
}

const dnsPorts = [
  { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
  { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
  { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
];

// ================================================================ kops-tailscale (seed 000)

function kopsTailscale(): void {
  const ex = 'kops-tailscale';
  const version = 'v1.33.4';
  const cluster = 'prod.example.com';
  const nodes = [
    { name: 'i-0a4c1e7f2b9d30001', ig: 'control-plane-us-east-1a', zone: 'us-east-1a', ip: '172.20.45.17', ext: '198.51.100.17', pod: '100.96.0.0/24', block: '100.105.14.64/26', cp: true, type: 't3.medium' },
    { name: 'i-0a4c1e7f2b9d30002', ig: 'nodes-us-east-1a', zone: 'us-east-1a', ip: '172.20.51.203', ext: '198.51.100.23', pod: '100.96.1.0/24', block: '100.112.201.0/26', cp: false, type: 'm6i.large' },
    { name: 'i-0a4c1e7f2b9d30003', ig: 'nodes-us-east-1b', zone: 'us-east-1b', ip: '172.20.77.41', ext: '198.51.100.41', pod: '100.96.2.0/24', block: '100.99.37.128/26', cp: false, type: 'm6i.large' },
    { name: 'i-0a4c1e7f2b9d30004', ig: 'nodes-us-east-1c', zone: 'us-east-1c', ip: '172.20.108.9', ext: '198.51.100.9', pod: '100.96.3.0/24', block: '100.121.88.192/26', cp: false, type: 'm6i.large' },
    { name: 'i-0a4c1e7f2b9d30005', ig: 'nodes-us-east-1a', zone: 'us-east-1a', ip: '172.20.60.130', ext: '198.51.100.130', pod: '100.96.4.0/24', block: '100.103.250.0/26', cp: false, type: 'm6i.large' },
    { name: 'i-0a4c1e7f2b9d30006', ig: 'nodes-us-east-1b', zone: 'us-east-1b', ip: '172.20.91.66', ext: '198.51.100.66', pod: '100.96.5.0/24', block: '100.117.6.64/26', cp: false, type: 'm6i.large' },
  ];
  const cp = nodes[0];
  const workers = nodes.slice(1);

  // --- cluster.yaml: the kOps spec, v1alpha3 layout (addressing under spec.networking)
  write(ex, 'cluster.yaml', {
    apiVersion: 'kops.k8s.io/v1alpha3',
    kind: 'Cluster',
    metadata: { creationTimestamp: '2023-09-12T09:30:00Z', name: cluster },
    spec: {
      api: { loadBalancer: { class: 'Network', type: 'Public' } },
      authorization: { rbac: {} },
      channel: 'stable',
      cloudProvider: { aws: {} },
      configStore: { base: `s3://example-kops-state/${cluster}` },
      etcdClusters: ['main', 'events'].map((n) => ({ cpuRequest: n === 'main' ? '200m' : '100m', etcdMembers: [{ encryptedVolume: true, instanceGroup: 'control-plane-us-east-1a', name: 'a' }], manager: { backupRetentionDays: 90 }, memoryRequest: '100Mi', name: n })),
      iam: { allowContainerRegistry: true, legacy: false },
      kubeDNS: { provider: 'CoreDNS', serverIP: '100.64.0.10' },
      kubelet: { anonymousAuth: false },
      kubernetesVersion: version.slice(1),
      networking: {
        calico: {},
        networkCIDR: '172.20.0.0/16',
        nonMasqueradeCIDR: '100.64.0.0/10',
        podCIDR: '100.96.0.0/11',
        serviceClusterIPRange: '100.64.0.0/13',
        subnets: [
          { cidr: '172.20.32.0/19', name: 'us-east-1a', type: 'Public', zone: 'us-east-1a' },
          { cidr: '172.20.64.0/19', name: 'us-east-1b', type: 'Public', zone: 'us-east-1b' },
          { cidr: '172.20.96.0/19', name: 'us-east-1c', type: 'Public', zone: 'us-east-1c' },
        ],
        topology: { dns: 'Public' },
      },
    },
  });

  // --- instancegroups.yaml: the kOps InstanceGroups (`kops get instancegroups -o yaml`; like the Cluster spec they
  // live in the state store). Their maxSize is the most nodes the cluster may reach: 1 + 3 x 150 = 451.
  const groups = [
    { name: 'control-plane-us-east-1a', role: 'ControlPlane', type: 't3.medium', min: 1, max: 1, subnets: ['us-east-1a'] },
    ...['a', 'b', 'c'].map((z) => ({ name: `nodes-us-east-1${z}`, role: 'Node', type: 'm6i.large', min: 1, max: 150, subnets: [`us-east-1${z}`] })),
  ];
  write(ex, 'instancegroups.yaml', groups.map((g) => ({
    apiVersion: 'kops.k8s.io/v1alpha3',
    kind: 'InstanceGroup',
    metadata: { creationTimestamp: '2023-09-12T09:30:00Z', labels: { 'kops.k8s.io/cluster': cluster }, name: g.name },
    spec: {
      image: '099720109477/ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250610',
      machineType: g.type, maxSize: g.max, minSize: g.min, role: g.role, subnets: g.subnets,
    },
  })));

  // --- nodes
  write(ex, 'nodes.yaml', list(nodes.map((n) => node({
    name: n.name, ip: n.ip, externalIP: n.ext, podCIDR: n.pod, kubelet: version, providerID: `aws:///${n.zone}/${n.name}`,
    labels: {
      'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'kops.k8s.io/instancegroup': n.ig, 'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', 'node.kubernetes.io/instance-type': n.type, 'topology.kubernetes.io/region': 'us-east-1',
      'topology.kubernetes.io/zone': n.zone, ...(n.cp ? { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' } : { 'node-role.kubernetes.io/node': '' }),
    },
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'projectcalico.org/IPv4Address': `${n.ip}/19`, 'projectcalico.org/IPv4IPIPTunnelAddr': n.block.split('/')[0], 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
  }))));

  // --- pods
  const alloc = new BlockAlloc(new Map(nodes.map((n) => [n.name, n.block])));
  const pods: Obj[] = [];
  const mirror = { 'kubernetes.io/config.mirror': 'a1b2c3d4e5f60718293a4b5c6d7e8f90', 'kubernetes.io/config.source': 'file' };
  pods.push(pod({
    ns: 'kube-system', name: `kube-apiserver-${cp.name}`, node: cp.name, ip: cp.ip, hostNetwork: true, priorityClassName: 'system-cluster-critical',
    labels: { 'k8s-app': 'kube-apiserver' }, annotations: { ...mirror, 'dns.alpha.kubernetes.io/internal': `api.internal.${cluster}` },
    owner: { kind: 'Node', name: cp.name },
    containers: [
      goRunner('kube-apiserver', `registry.k8s.io/kube-apiserver:${version}`, [
        '--allow-privileged=true', '--anonymous-auth=false', `--advertise-address=${cp.ip}`, '--api-audiences=kubernetes.svc.default',
        '--authorization-mode=Node,RBAC', '--bind-address=0.0.0.0', '--client-ca-file=/srv/kubernetes/ca.crt', '--cloud-provider=external',
        '--enable-admission-plugins=DefaultStorageClass,DefaultTolerationSeconds,LimitRanger,MutatingAdmissionWebhook,NamespaceLifecycle,NodeRestriction,ResourceQuota,RuntimeClass,ServiceAccount,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook',
        '--etcd-servers=https://127.0.0.1:4001', '--etcd-servers-overrides=/events#https://127.0.0.1:4002', '--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP',
        '--secure-port=443', `--service-account-issuer=https://api.internal.${cluster}`, '--service-account-key-file=/srv/kubernetes/kube-apiserver/service-account.pub',
        '--service-cluster-ip-range=100.64.0.0/13', '--storage-backend=etcd3', '--tls-cert-file=/srv/kubernetes/kube-apiserver/server.crt',
        '--tls-private-key-file=/srv/kubernetes/kube-apiserver/server.key', '--v=2',
      ]),
      { args: ['--ca-cert=/secrets/ca.crt', '--client-cert=/secrets/client.crt', '--client-key=/secrets/client.key'], command: ['/kube-apiserver-healthcheck'], image: 'registry.k8s.io/kops/kube-apiserver-healthcheck:1.33.0', name: 'healthcheck' },
    ],
  }));
  pods.push(pod({
    ns: 'kube-system', name: `kube-controller-manager-${cp.name}`, node: cp.name, ip: cp.ip, hostNetwork: true, priorityClassName: 'system-cluster-critical',
    labels: { 'k8s-app': 'kube-controller-manager' }, annotations: mirror, owner: { kind: 'Node', name: cp.name },
    containers: [goRunner('kube-controller-manager', `registry.k8s.io/kube-controller-manager:${version}`, [
      '--allocate-node-cidrs=true', '--attach-detach-reconcile-sync-period=1m0s', '--authentication-kubeconfig=/var/lib/kube-controller-manager/kubeconfig',
      '--authorization-kubeconfig=/var/lib/kube-controller-manager/kubeconfig', '--cloud-provider=external', '--cluster-cidr=100.96.0.0/11',
      `--cluster-name=${cluster}`, '--cluster-signing-cert-file=/srv/kubernetes/kube-controller-manager/ca.crt', '--cluster-signing-key-file=/srv/kubernetes/kube-controller-manager/ca.key',
      '--configure-cloud-routes=false', '--kubeconfig=/var/lib/kube-controller-manager/kubeconfig', '--leader-elect=true', '--root-ca-file=/srv/kubernetes/ca.crt',
      '--service-account-private-key-file=/srv/kubernetes/kube-controller-manager/service-account.key', '--use-service-account-credentials=true', '--v=2',
    ])],
  }));
  pods.push(pod({
    ns: 'kube-system', name: `kube-scheduler-${cp.name}`, node: cp.name, ip: cp.ip, hostNetwork: true, labels: { 'k8s-app': 'kube-scheduler' }, annotations: mirror,
    owner: { kind: 'Node', name: cp.name },
    containers: [goRunner('kube-scheduler', `registry.k8s.io/kube-scheduler:${version}`, ['--config=/var/lib/kube-scheduler/config.yaml', '--leader-elect=true', '--v=2'])],
  }));
  pods.push(pod({
    ns: 'kube-system', name: `kops-controller-${suffix('kops-controller', 5)}`, node: cp.name, ip: cp.ip, hostNetwork: true,
    labels: { 'k8s-addon': 'kops-controller.addons.k8s.io', 'k8s-app': 'kops-controller', version: 'v1.33.0' }, owner: { kind: 'DaemonSet', name: 'kops-controller' },
    containers: [{ command: ['/kops-controller', '--v=2', '--conf=/etc/kubernetes/kops-controller/config/config.yaml'], image: 'registry.k8s.io/kops/kops-controller:1.33.0', name: 'kops-controller' }],
  }));
  for (const n of nodes) {
    pods.push(pod({
      ns: 'kube-system', name: `kube-proxy-${n.name}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'kube-proxy', tier: 'node' }, annotations: mirror, owner: { kind: 'Node', name: n.name },
      containers: [goRunner('kube-proxy', `registry.k8s.io/kube-proxy:${version}`, [
        '--cluster-cidr=100.96.0.0/11', '--conntrack-max-per-core=131072', `--hostname-override=${n.name}`, '--kubeconfig=/var/lib/kube-proxy/kubeconfig',
        `--master=https://api.internal.${cluster}`, '--oom-score-adj=-998', '--v=2',
      ])],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `calico-node-${suffix(`calico-node/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'calico-node', 'controller-revision-hash': '6c9f7d8b54', 'pod-template-generation': '1' }, owner: { kind: 'DaemonSet', name: 'calico-node' },
      containers: [{ env: [{ name: 'CALICO_IPV4POOL_CIDR', value: '100.96.0.0/11' }, { name: 'CALICO_IPV4POOL_IPIP', value: 'CrossSubnet' }, { name: 'CLUSTER_TYPE', value: 'kops,bgp' }], image: 'quay.io/calico/node:v3.29.3', name: 'calico-node' }],
    }));
  }
  const work = (ns: string, base: string, rs: string, count: number, labels: Obj, image: string, nodeIdx: number[], ownerKind = 'ReplicaSet'): void => {
    for (let i = 0; i < count; i++) {
      const n = workers[nodeIdx[i % nodeIdx.length]];
      const name = ownerKind === 'StatefulSet' ? `${base}-${i}` : `${rs}-${suffix(`${ns}/${rs}/${i}`, 5)}`;
      pods.push(pod({ ns, name, node: n.name, ip: alloc.next(n.name, ns, name), labels, owner: { kind: ownerKind, name: ownerKind === 'StatefulSet' ? base : rs }, containers: [{ image, name: base }] }));
    }
  };
  work('kube-system', 'coredns', 'coredns-6b8c9d7f5d', 2, { 'k8s-app': 'kube-dns', 'pod-template-hash': '6b8c9d7f5d' }, 'registry.k8s.io/coredns/coredns:v1.12.1', [0, 2]);
  work('kube-system', 'coredns-autoscaler', 'coredns-autoscaler-5c7f9b6d8', 1, { 'k8s-app': 'coredns-autoscaler' }, 'registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.9.0', [1]);
  work('kube-system', 'calico-kube-controllers', 'calico-kube-controllers-7d9b5c8f6', 1, { 'k8s-app': 'calico-kube-controllers' }, 'quay.io/calico/kube-controllers:v3.29.3', [3]);
  work('kube-system', 'pod-identity-webhook', 'pod-identity-webhook-54d8f9c7b', 1, { app: 'pod-identity-webhook' }, 'amazon/amazon-eks-pod-identity-webhook:v0.6.7', [4]);
  work('kube-system', 'metrics-server', 'metrics-server-7b6d9f8c4', 1, { 'k8s-app': 'metrics-server' }, 'registry.k8s.io/metrics-server/metrics-server:v0.7.2', [1]);
  work('ingress-nginx', 'controller', 'ingress-nginx-controller-6f8d9c7b5', 2, { 'app.kubernetes.io/component': 'controller', 'app.kubernetes.io/name': 'ingress-nginx' }, 'registry.k8s.io/ingress-nginx/controller:v1.12.1', [0, 2]);
  work('default', 'web', 'web-7c9f8d6b5', 3, { app: 'web', 'pod-template-hash': '7c9f8d6b5' }, 'ghcr.io/example/web:2.14.0', [0, 1, 2]);
  work('default', 'api', 'api-85f6c7d9b4', 2, { app: 'api', 'pod-template-hash': '85f6c7d9b4' }, 'ghcr.io/example/api:5.3.1', [3, 4]);
  work('monitoring', 'prometheus', 'prometheus', 1, { 'app.kubernetes.io/name': 'prometheus' }, 'quay.io/prometheus/prometheus:v3.2.1', [2], 'StatefulSet');
  {
    const n = workers[1];
    pods.push(pod({ ns: 'default', name: 'debug', node: n.name, ip: alloc.next(n.name, 'default', 'debug'), labels: { run: 'debug' }, containers: [{ image: 'nicolaka/netshoot:v0.13', name: 'debug' }] }));
    const job = 'nightly-report-29100960';
    const name = `${job}-${suffix(job, 5)}`;
    pods.push(pod({ ns: 'batch', name, node: workers[4].name, ip: alloc.next(workers[4].name, 'batch', name), labels: { 'job-name': job }, owner: { kind: 'Job', name: job }, containers: [{ image: 'ghcr.io/example/report:1.0.3', name: 'report' }] }));
  }
  write(ex, 'pods.yaml', list(pods));

  // --- services
  write(ex, 'services.yaml', list([
    svc({ ns: 'default', name: 'kubernetes', clusterIP: '100.64.0.1', labels: { component: 'apiserver', provider: 'kubernetes' }, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 443 }] }),
    svc({ ns: 'kube-system', name: 'kube-dns', clusterIP: '100.64.0.10', labels: { 'k8s-addon': 'coredns.addons.k8s.io', 'k8s-app': 'kube-dns', 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' }, selector: { 'k8s-app': 'kube-dns' }, ports: dnsPorts }),
    svc({ ns: 'kube-system', name: 'metrics-server', clusterIP: '100.71.9.3', labels: { 'k8s-app': 'metrics-server' }, selector: { 'k8s-app': 'metrics-server' }, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 'https' }] }),
    svc({ ns: 'kube-system', name: 'pod-identity-webhook', clusterIP: '100.68.77.5', selector: { app: 'pod-identity-webhook' }, ports: [{ port: 443, protocol: 'TCP', targetPort: 10250 }] }),
    svc({
      ns: 'ingress-nginx', name: 'ingress-nginx-controller', type: 'LoadBalancer', clusterIP: '100.66.133.7',
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' }, selector: { 'app.kubernetes.io/component': 'controller', 'app.kubernetes.io/name': 'ingress-nginx' },
      ports: [{ name: 'http', nodePort: 31080, port: 80, protocol: 'TCP', targetPort: 'http' }, { name: 'https', nodePort: 31443, port: 443, protocol: 'TCP', targetPort: 'https' }],
      lbIngress: [{ ip: '203.0.113.25', ipMode: 'VIP' }],
    }),
    svc({ ns: 'ingress-nginx', name: 'ingress-nginx-controller-admission', clusterIP: '100.69.12.200', selector: { 'app.kubernetes.io/component': 'controller', 'app.kubernetes.io/name': 'ingress-nginx' }, ports: [{ name: 'https-webhook', port: 443, protocol: 'TCP', targetPort: 'webhook' }] }),
    svc({ ns: 'default', name: 'web', clusterIP: '100.70.4.21', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'default', name: 'web-headless', clusterIP: 'None', selector: { app: 'web' }, ports: [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'default', name: 'api', type: 'NodePort', clusterIP: '100.65.200.14', selector: { app: 'api' }, ports: [{ name: 'http', nodePort: 30080, port: 8080, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'default', name: 'external-db', type: 'ExternalName', externalName: 'db.internal.example.com' }),
    svc({ ns: 'monitoring', name: 'prometheus', clusterIP: '100.67.250.100', selector: { 'app.kubernetes.io/name': 'prometheus' }, ports: [{ name: 'web', port: 9090, protocol: 'TCP', targetPort: 'web' }] }),
    svc({ ns: 'monitoring', name: 'prometheus-operated', clusterIP: 'None', selector: { 'app.kubernetes.io/name': 'prometheus' }, ports: [{ name: 'web', port: 9090, protocol: 'TCP', targetPort: 'web' }] }),
  ]));

  // --- ServiceCIDR (v1, served and on by default from 1.33)
  write(ex, 'servicecidrs.yaml', list([{
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: meta('kubernetes', undefined, { finalizers: ['networking.k8s.io/service-cidr-finalizer'] }, '2025-05-20T07:12:44Z'),
    spec: { cidrs: ['100.64.0.0/13'] },
    status: { conditions: [{ lastTransitionTime: '2025-05-20T07:12:44Z', message: 'Kubernetes Service CIDR is ready', reason: '', status: 'True', type: 'Ready' }] },
  }]));

  // --- ConfigMaps
  write(ex, 'configmaps.yaml', list([
    configMap('kube-system', 'calico-config', {
      calico_backend: 'bird',
      cni_network_config: [
        '{', '  "name": "k8s-pod-network",', '  "cniVersion": "0.3.1",', '  "plugins": [', '    {', '      "type": "calico",', '      "log_level": "info",',
        '      "log_file_path": "/var/log/calico/cni/cni.log",', '      "datastore_type": "kubernetes",', '      "nodename": "__KUBERNETES_NODE_NAME__",', '      "mtu": __CNI_MTU__,',
        '      "ipam": {', '          "type": "calico-ipam"', '      },', '      "policy": {', '          "type": "k8s"', '      },', '      "kubernetes": {',
        '          "kubeconfig": "__KUBECONFIG_FILEPATH__"', '      }', '    },', '    {', '      "type": "portmap",', '      "snat": true,',
        '      "capabilities": {"portMappings": true}', '    },', '    {', '      "type": "bandwidth",', '      "capabilities": {"bandwidth": true}', '    }', '  ]', '}', '',
      ].join('\n'),
      typha_service_name: 'none',
      veth_mtu: '0',
    }),
    configMap('kube-system', 'coredns', {
      Corefile: '.:53 {\n    errors\n    health {\n      lameduck 5s\n    }\n    ready\n    kubernetes cluster.local. in-addr.arpa ip6.arpa {\n      pods insecure\n      fallthrough in-addr.arpa ip6.arpa\n      ttl 30\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n      max_concurrent 1000\n    }\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n',
    }, { labels: { 'addonmanager.kubernetes.io/mode': 'EnsureExists' } }),
  ]));

  // --- Calico: the pool, and per-node blocks with their affinities
  write(ex, 'calico.yaml', list([
    ippool('crd.projectcalico.org/v1', 'default-ipv4-ippool', { allowedUses: ['Workload', 'Tunnel'], blockSize: 26, cidr: '100.96.0.0/11', ipipMode: 'CrossSubnet', natOutgoing: true, nodeSelector: 'all()', vxlanMode: 'Never' }),
    ...alloc.objects(),
  ]));
}

// ================================================================ kops-legacy-pool (seed 002)

function kopsLegacyPool(): void {
  const ex = 'kops-legacy-pool';
  const version = 'v1.28.9';
  const cluster = 'legacy.example.com';
  const nodes = [
    { name: 'ip-172-20-33-12.eu-west-1.compute.internal', ig: 'master-eu-west-1a', ip: '172.20.33.12', pod: '100.96.0.0/24', block: '100.66.3.0/26', master: true },
    { name: 'ip-172-20-40-101.eu-west-1.compute.internal', ig: 'nodes', ip: '172.20.40.101', pod: '100.96.1.0/24', block: '100.101.7.64/26', master: false },
    { name: 'ip-172-20-58-230.eu-west-1.compute.internal', ig: 'nodes', ip: '172.20.58.230', pod: '100.96.2.0/24', block: '100.88.240.128/26', master: false },
  ];
  const master = nodes[0];

  // The legacy (v1alpha2, top-level) layout, as `kops get cluster --full` prints it for a cluster first
  // created before kOps 1.7 and upgraded since.
  write(ex, 'cluster.yaml', {
    apiVersion: 'kops.k8s.io/v1alpha2',
    kind: 'Cluster',
    metadata: { creationTimestamp: '2017-05-02T14:03:11Z', name: cluster },
    spec: {
      api: { dns: {} },
      channel: 'stable',
      cloudProvider: 'aws',
      configBase: `s3://example-kops-state/${cluster}`,
      kubeAPIServer: { serviceClusterIPRange: '100.64.0.0/13' },
      kubeControllerManager: { allocateNodeCIDRs: true, clusterCIDR: '100.96.0.0/11' },
      kubeDNS: { domain: 'cluster.local', provider: 'CoreDNS', serverIP: '100.64.0.10' },
      kubelet: { clusterDNS: '100.64.0.10', clusterDomain: 'cluster.local', nonMasqueradeCIDR: '100.64.0.0/10' },
      kubernetesVersion: version.slice(1),
      masterPublicName: `api.${cluster}`,
      networkCIDR: '172.20.0.0/16',
      networking: { calico: { crossSubnet: true } },
      nonMasqueradeCIDR: '100.64.0.0/10',
      serviceClusterIPRange: '100.64.0.0/13',
      subnets: [{ cidr: '172.20.32.0/19', name: 'eu-west-1a', type: 'Public', zone: 'eu-west-1a' }],
      topology: { dns: { type: 'Public' }, masters: 'public', nodes: 'public' },
    },
  });

  write(ex, 'nodes.yaml', list(nodes.map((n) => node({
    name: n.name, ip: n.ip, podCIDR: n.pod, kubelet: version, created: '2024-11-18T09:00:00Z',
    labels: {
      'kops.k8s.io/instancegroup': n.ig, 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux',
      ...(n.master ? { 'kubernetes.io/role': 'master', 'node-role.kubernetes.io/control-plane': '' } : { 'kubernetes.io/role': 'node', 'node-role.kubernetes.io/node': '' }),
    },
  }))));

  const alloc = new BlockAlloc(new Map(nodes.map((n) => [n.name, n.block])));
  const pods: Obj[] = [];
  const mirror = { 'kubernetes.io/config.mirror': '0f1e2d3c4b5a69788796a5b4c3d2e1f0', 'kubernetes.io/config.source': 'file' };
  pods.push(pod({
    ns: 'kube-system', name: `kube-apiserver-${master.name}`, node: master.name, ip: master.ip, hostNetwork: true, labels: { 'k8s-app': 'kube-apiserver' }, annotations: mirror,
    owner: { kind: 'Node', name: master.name },
    containers: [goRunner('kube-apiserver', `registry.k8s.io/kube-apiserver:${version}`, [
      '--allow-privileged=true', `--advertise-address=${master.ip}`, '--authorization-mode=Node,RBAC', '--etcd-servers=https://127.0.0.1:4001', '--secure-port=443',
      '--service-cluster-ip-range=100.64.0.0/13', '--storage-backend=etcd3', '--v=2',
    ])],
  }));
  pods.push(pod({
    ns: 'kube-system', name: `kube-controller-manager-${master.name}`, node: master.name, ip: master.ip, hostNetwork: true, labels: { 'k8s-app': 'kube-controller-manager' }, annotations: mirror,
    owner: { kind: 'Node', name: master.name },
    containers: [goRunner('kube-controller-manager', `registry.k8s.io/kube-controller-manager:${version}`, [
      '--allocate-node-cidrs=true', '--cloud-provider=aws', '--cluster-cidr=100.96.0.0/11', `--cluster-name=${cluster}`, '--configure-cloud-routes=false',
      '--kubeconfig=/var/lib/kube-controller-manager/kubeconfig', '--leader-elect=true', '--v=2',
    ])],
  }));
  for (const n of nodes) {
    pods.push(pod({
      ns: 'kube-system', name: `kube-proxy-${n.name}`, node: n.name, ip: n.ip, hostNetwork: true, labels: { 'k8s-app': 'kube-proxy', tier: 'node' }, annotations: mirror,
      owner: { kind: 'Node', name: n.name },
      containers: [goRunner('kube-proxy', `registry.k8s.io/kube-proxy:${version}`, ['--cluster-cidr=100.96.0.0/11', `--hostname-override=${n.name}`, '--kubeconfig=/var/lib/kube-proxy/kubeconfig', '--v=2'])],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `calico-node-${suffix(`legacy/calico-node/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true,
      labels: { 'k8s-app': 'calico-node' }, owner: { kind: 'DaemonSet', name: 'calico-node' },
      containers: [{ image: 'quay.io/calico/node:v3.26.4', name: 'calico-node' }],
    }));
  }
  const place = (ns: string, name: string, nodeIdx: number, labels: Obj, owner: { kind: string; name: string } | undefined, image: string, ip?: string): void => {
    const n = nodes[nodeIdx];
    pods.push(pod({ ns, name, node: n.name, ip: ip ?? alloc.next(n.name, ns, name), labels, ...(owner ? { owner } : {}), containers: [{ image, name: name.split('-')[0] }] }));
  };
  place('kube-system', `coredns-7b5f8c9d6-${suffix('legacy/coredns/0', 5)}`, 1, { 'k8s-app': 'kube-dns' }, { kind: 'ReplicaSet', name: 'coredns-7b5f8c9d6' }, 'registry.k8s.io/coredns/coredns:v1.10.1');
  place('kube-system', `coredns-7b5f8c9d6-${suffix('legacy/coredns/1', 5)}`, 2, { 'k8s-app': 'kube-dns' }, { kind: 'ReplicaSet', name: 'coredns-7b5f8c9d6' }, 'registry.k8s.io/coredns/coredns:v1.10.1');
  place('default', `web-5c8d7f9b6-${suffix('legacy/web/0', 5)}`, 0, { app: 'web' }, { kind: 'ReplicaSet', name: 'web-5c8d7f9b6' }, 'ghcr.io/example/web:1.9.2');
  place('default', `web-5c8d7f9b6-${suffix('legacy/web/1', 5)}`, 1, { app: 'web' }, { kind: 'ReplicaSet', name: 'web-5c8d7f9b6' }, 'ghcr.io/example/web:1.9.2');
  place('default', `api-6d9c8b7f5-${suffix('legacy/api/0', 5)}`, 2, { app: 'api' }, { kind: 'ReplicaSet', name: 'api-6d9c8b7f5' }, 'ghcr.io/example/api:3.0.0');
  // A pod whose address the Service allocator later handed to a Service too: the collision seed 002 warns of.
  {
    const n = nodes[0];
    const name = `worker-8f7d6c5b4-${suffix('legacy/worker/0', 5)}`;
    const used = alloc.used.get(n.name)!;
    used.push({ offset: 5, handle: `k8s-pod-network.${hash(`default/${name}`).toString(16).padStart(8, '0')}` });
    place('default', name, 0, { app: 'worker' }, { kind: 'ReplicaSet', name: 'worker-8f7d6c5b4' }, 'ghcr.io/example/worker:0.4.1', '100.66.3.5');
  }
  write(ex, 'pods.yaml', list(pods));

  write(ex, 'services.yaml', list([
    svc({ ns: 'default', name: 'kubernetes', clusterIP: '100.64.0.1', labels: { component: 'apiserver', provider: 'kubernetes' }, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 443 }] }),
    svc({ ns: 'kube-system', name: 'kube-dns', clusterIP: '100.64.0.10', labels: { 'k8s-app': 'kube-dns' }, selector: { 'k8s-app': 'kube-dns' }, ports: dnsPorts }),
    svc({ ns: 'default', name: 'web', clusterIP: '100.65.4.9', selector: { app: 'web' }, ports: [{ port: 80, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'default', name: 'queue', clusterIP: '100.66.3.5', selector: { app: 'queue' }, ports: [{ port: 5672, protocol: 'TCP', targetPort: 5672 }] }),
  ]));

  write(ex, 'calico.yaml', list([
    ippool('crd.projectcalico.org/v1', 'default-ipv4-ippool', { blockSize: 26, cidr: '100.64.0.0/10', ipipMode: 'CrossSubnet', natOutgoing: true, nodeSelector: 'all()', vxlanMode: 'Never' }),
    ...alloc.objects(),
  ]));
}

// ================================================================ kubeadm-exhausted (seed 004)

function kubeadmExhausted(): void {
  const ex = 'kubeadm-exhausted';
  const version = 'v1.20.7';
  // Seed 004: 3 control-plane nodes, 18 CPU and 58 GPU worker nodes (76 workers, 79 Node objects).
  // Pod range 10.233.64.0/18 with /24 per node → 64 node CIDRs: the first 64 nodes to register got one,
  // the last 15 GPU nodes none.
  const nodes: Array<{ name: string; ip: string; role: 'cp' | 'cpu' | 'gpu'; pod?: string; block: string }> = [];
  const add = (name: string, ip: string, role: 'cp' | 'cpu' | 'gpu'): void => {
    const i = nodes.length;
    nodes.push({ name, ip, role, ...(i < 64 ? { pod: `10.233.${64 + i}.0/24` } : {}), block: ipv4(v4('10.233.64.0') + i * 64) + '/26' });
  };
  for (let i = 1; i <= 3; i++) add(`k8s-master-0${i}`, `192.168.10.${10 + i}`, 'cp');
  for (let i = 1; i <= 18; i++) add(`k8s-node-cpu-${String(i).padStart(2, '0')}`, `192.168.10.${20 + i}`, 'cpu');
  for (let i = 1; i <= 58; i++) add(`k8s-node-gpu-${String(i).padStart(2, '0')}`, `192.168.10.${100 + i}`, 'gpu');
  const masters = nodes.filter((n) => n.role === 'cp');
  const workers = nodes.filter((n) => n.role !== 'cp');

  write(ex, 'nodes.yaml', list(nodes.map((n, i) => node({
    name: n.name, ip: n.ip, kubelet: version, created: `2021-0${i < 21 ? 6 : 9}-${String(1 + (i % 28)).padStart(2, '0')}T08:00:00Z`, ...(n.pod ? { podCIDR: n.pod } : {}),
    labels: {
      'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux',
      ...(n.role === 'cp' ? { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/master': '' } : {}),
      ...(n.role === 'gpu' ? { 'nvidia.com/gpu.present': 'true', 'node-type': 'gpu' } : n.role === 'cpu' ? { 'node-type': 'cpu' } : {}),
    },
    annotations: {
      'kubeadm.alpha.kubernetes.io/cri-socket': '/var/run/dockershim.sock', 'node.alpha.kubernetes.io/ttl': '0',
      'projectcalico.org/IPv4Address': `${n.ip}/24`, 'projectcalico.org/IPv4IPIPTunnelAddr': n.block.split('/')[0],
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    },
  }))));

  const alloc = new BlockAlloc(new Map(nodes.map((n) => [n.name, n.block])));
  const pods: Obj[] = [];
  const mirror = { 'kubernetes.io/config.mirror': '5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b', 'kubernetes.io/config.source': 'file' };
  for (const m of masters) {
    pods.push(pod({
      ns: 'kube-system', name: `kube-apiserver-${m.name}`, node: m.name, ip: m.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { component: 'kube-apiserver', tier: 'control-plane' }, annotations: { ...mirror, 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': `${m.ip}:6443` },
      owner: { kind: 'Node', name: m.name },
      containers: [{
        command: [
          'kube-apiserver', `--advertise-address=${m.ip}`, '--allow-privileged=true', '--anonymous-auth=True', '--apiserver-count=3', '--authorization-mode=Node,RBAC',
          '--bind-address=0.0.0.0', '--client-ca-file=/etc/kubernetes/ssl/ca.crt', '--enable-admission-plugins=NodeRestriction', '--enable-bootstrap-token-auth=true',
          '--endpoint-reconciler-type=lease', '--etcd-cafile=/etc/ssl/etcd/ssl/ca.pem', '--etcd-servers=https://192.168.10.11:2379,https://192.168.10.12:2379,https://192.168.10.13:2379',
          '--insecure-port=0', '--kubelet-preferred-address-types=InternalDNS,InternalIP,Hostname,ExternalDNS,ExternalIP', '--profiling=False', '--request-timeout=1m0s',
          '--secure-port=6443', '--service-account-issuer=https://kubernetes.default.svc.cluster.local', '--service-account-key-file=/etc/kubernetes/ssl/sa.pub',
          '--service-account-signing-key-file=/etc/kubernetes/ssl/sa.key', '--service-cluster-ip-range=10.233.0.0/18', '--service-node-port-range=30000-32767',
          '--storage-backend=etcd3', '--tls-cert-file=/etc/kubernetes/ssl/apiserver.crt', '--tls-private-key-file=/etc/kubernetes/ssl/apiserver.key',
        ],
        image: `k8s.gcr.io/kube-apiserver:${version}`,
        name: 'kube-apiserver',
      }],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `kube-controller-manager-${m.name}`, node: m.name, ip: m.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { component: 'kube-controller-manager', tier: 'control-plane' }, annotations: mirror, owner: { kind: 'Node', name: m.name },
      containers: [{
        // The flags of seed 004's /etc/kubernetes/manifests/kube-controller-manager.yaml.
        command: [
          'kube-controller-manager', '--allocate-node-cidrs=true', '--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf',
          '--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf', '--bind-address=0.0.0.0', '--client-ca-file=/etc/kubernetes/ssl/ca.crt',
          '--cluster-cidr=10.233.64.0/18', '--cluster-name=cluster.local', '--cluster-signing-cert-file=/etc/kubernetes/ssl/ca.crt',
          '--cluster-signing-key-file=/etc/kubernetes/ssl/ca.key', '--configure-cloud-routes=false', '--controllers=*,bootstrapsigner,tokencleaner',
          '--kubeconfig=/etc/kubernetes/controller-manager.conf', '--leader-elect=true', '--leader-elect-lease-duration=15s', '--leader-elect-renew-deadline=10s',
          '--node-cidr-mask-size=24', '--node-monitor-grace-period=40s', '--node-monitor-period=5s', '--pod-eviction-timeout=5m0s', '--port=0', '--profiling=False',
          '--requestheader-client-ca-file=/etc/kubernetes/ssl/front-proxy-ca.crt', '--root-ca-file=/etc/kubernetes/ssl/ca.crt',
          '--service-account-private-key-file=/etc/kubernetes/ssl/sa.key', '--service-cluster-ip-range=10.233.0.0/18', '--terminated-pod-gc-threshold=12500',
          '--use-service-account-credentials=true',
        ],
        image: `k8s.gcr.io/kube-controller-manager:${version}`,
        name: 'kube-controller-manager',
      }],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `kube-scheduler-${m.name}`, node: m.name, ip: m.ip, hostNetwork: true, labels: { component: 'kube-scheduler', tier: 'control-plane' }, annotations: mirror,
      owner: { kind: 'Node', name: m.name },
      containers: [{ command: ['kube-scheduler', '--authentication-kubeconfig=/etc/kubernetes/scheduler.conf', '--bind-address=0.0.0.0', '--leader-elect=true', '--port=0'], image: `k8s.gcr.io/kube-scheduler:${version}`, name: 'kube-scheduler' }],
    }));
  }
  for (const n of nodes) {
    pods.push(pod({
      ns: 'kube-system', name: `kube-proxy-${suffix(`kube-proxy/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'kube-proxy', 'controller-revision-hash': '7d8f9c6b5', 'pod-template-generation': '1' }, owner: { kind: 'DaemonSet', name: 'kube-proxy' },
      containers: [{ command: ['/usr/local/bin/kube-proxy', '--config=/var/lib/kube-proxy/config.conf', '--hostname-override=$(NODE_NAME)'], image: `k8s.gcr.io/kube-proxy:${version}`, name: 'kube-proxy' }],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `calico-node-${suffix(`kubespray/calico-node/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'calico-node', 'controller-revision-hash': '5b9c8d7f6', 'pod-template-generation': '1' }, owner: { kind: 'DaemonSet', name: 'calico-node' },
      containers: [{ env: [{ name: 'CLUSTER_TYPE', valueFrom: { configMapKeyRef: { key: 'cluster_type', name: 'calico-config' } } }], image: 'quay.io/calico/node:v3.17.4', name: 'calico-node' }],
    }));
  }
  const placeOn = (n: (typeof nodes)[number], ns: string, name: string, labels: Obj, owner: { kind: string; name: string }, image: string): void => {
    pods.push(pod({ ns, name, node: n.name, ip: alloc.next(n.name, ns, name), labels, owner, containers: [{ image, name: owner.name.replace(/-[a-z0-9]+$/, '') }] }));
  };
  placeOn(workers[0], 'kube-system', `coredns-657959df74-${suffix('ka/coredns/0', 5)}`, { 'k8s-app': 'kube-dns', 'pod-template-hash': '657959df74' }, { kind: 'ReplicaSet', name: 'coredns-657959df74' }, 'k8s.gcr.io/coredns:1.7.0');
  placeOn(workers[1], 'kube-system', `coredns-657959df74-${suffix('ka/coredns/1', 5)}`, { 'k8s-app': 'kube-dns', 'pod-template-hash': '657959df74' }, { kind: 'ReplicaSet', name: 'coredns-657959df74' }, 'k8s.gcr.io/coredns:1.7.0');
  placeOn(workers[2], 'kube-system', `dns-autoscaler-7f9c6d8b5-${suffix('ka/dnsa', 5)}`, { 'k8s-app': 'dns-autoscaler' }, { kind: 'ReplicaSet', name: 'dns-autoscaler-7f9c6d8b5' }, 'k8s.gcr.io/cpa/cluster-proportional-autoscaler-amd64:1.8.3');
  placeOn(workers[3], 'kube-system', `calico-kube-controllers-8b5ff5d58-${suffix('ka/ckc', 5)}`, { 'k8s-app': 'calico-kube-controllers' }, { kind: 'ReplicaSet', name: 'calico-kube-controllers-8b5ff5d58' }, 'quay.io/calico/kube-controllers:v3.17.4');
  placeOn(workers[4], 'kube-system', `metrics-server-5d8f9c7b6-${suffix('ka/ms', 5)}`, { 'k8s-app': 'metrics-server' }, { kind: 'ReplicaSet', name: 'metrics-server-5d8f9c7b6' }, 'k8s.gcr.io/metrics-server/metrics-server:v0.4.2');
  // Workloads: two per worker: CPU nodes run the web tier, GPU nodes inference.
  workers.forEach((n, i) => {
    if (n.role === 'cpu') {
      placeOn(n, 'shop', `web-6c7d8f9b5d-${suffix(`ka/web/${i}`, 5)}`, { app: 'web' }, { kind: 'ReplicaSet', name: 'web-6c7d8f9b5d' }, 'harbor.example.internal/shop/web:4.2.0');
      placeOn(n, 'shop', `api-5f6b7c8d9e-${suffix(`ka/api/${i}`, 5)}`, { app: 'api' }, { kind: 'ReplicaSet', name: 'api-5f6b7c8d9e' }, 'harbor.example.internal/shop/api:4.2.0');
    } else {
      placeOn(n, 'ai', `inference-7b8c9d6f5-${suffix(`ka/inf/${i}`, 5)}`, { app: 'inference' }, { kind: 'ReplicaSet', name: 'inference-7b8c9d6f5' }, 'harbor.example.internal/ai/inference:1.8.0');
      placeOn(n, 'monitoring', `dcgm-exporter-${suffix(`ka/dcgm/${i}`, 5)}`, { app: 'dcgm-exporter' }, { kind: 'DaemonSet', name: 'dcgm-exporter' }, 'nvcr.io/nvidia/k8s/dcgm-exporter:2.1.8-2.4.0-rc.2-ubuntu18.04');
    }
  });
  write(ex, 'pods.yaml', list(pods));

  write(ex, 'services.yaml', list([
    svc({ ns: 'default', name: 'kubernetes', clusterIP: '10.233.0.1', labels: { component: 'apiserver', provider: 'kubernetes' }, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] }),
    // kubespray names the cluster DNS Service "coredns" and gives it the third address of the range.
    svc({ ns: 'kube-system', name: 'coredns', clusterIP: '10.233.0.3', labels: { 'addonmanager.kubernetes.io/mode': 'Reconcile', 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'coredns' }, annotations: { 'prometheus.io/port': '9153', 'prometheus.io/scrape': 'true' }, selector: { 'k8s-app': 'kube-dns' }, ports: dnsPorts }),
    svc({ ns: 'kube-system', name: 'metrics-server', clusterIP: '10.233.17.201', labels: { 'k8s-app': 'metrics-server' }, selector: { 'k8s-app': 'metrics-server' }, ports: [{ port: 443, protocol: 'TCP', targetPort: 'https' }] }),
    svc({ ns: 'shop', name: 'web', clusterIP: '10.233.45.6', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'shop', name: 'api', clusterIP: '10.233.8.200', selector: { app: 'api' }, ports: [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'shop', name: 'web-nodeport', type: 'NodePort', clusterIP: '10.233.31.77', selector: { app: 'web' }, ports: [{ name: 'http', nodePort: 30080, port: 80, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'ai', name: 'inference', type: 'NodePort', clusterIP: '10.233.23.11', selector: { app: 'inference' }, ports: [{ name: 'grpc', nodePort: 30500, port: 8500, protocol: 'TCP', targetPort: 8500 }] }),
    svc({ ns: 'ai', name: 'inference-headless', clusterIP: 'None', selector: { app: 'inference' }, ports: [{ name: 'grpc', port: 8500, protocol: 'TCP', targetPort: 8500 }] }),
    svc({ ns: 'monitoring', name: 'dcgm-exporter', clusterIP: '10.233.52.140', selector: { app: 'dcgm-exporter' }, ports: [{ name: 'metrics', port: 9400, protocol: 'TCP', targetPort: 9400 }] }),
    svc({ ns: 'shop', name: 'payments', type: 'ExternalName', externalName: 'payments.example.internal' }),
  ]));

  const clusterConfiguration = [
    'apiServer:', '  certSANs:', '  - kubernetes', '  - kubernetes.default', '  - kubernetes.default.svc', '  - kubernetes.default.svc.cluster.local', '  - 10.233.0.1',
    '  - localhost', '  - 127.0.0.1', '  - k8s-master-01', '  - k8s-master-02', '  - k8s-master-03', '  - 192.168.10.11', '  - 192.168.10.12', '  - 192.168.10.13',
    '  extraArgs:', '    allow-privileged: "true"', '    anonymous-auth: "True"', '    apiserver-count: "3"', '    authorization-mode: Node,RBAC', '    bind-address: 0.0.0.0',
    '    enable-admission-plugins: NodeRestriction', '    endpoint-reconciler-type: lease', '    insecure-port: "0"',
    '    kubelet-preferred-address-types: InternalDNS,InternalIP,Hostname,ExternalDNS,ExternalIP', '    profiling: "False"', '    request-timeout: 1m0s',
    '    service-node-port-range: 30000-32767', '    storage-backend: etcd3', '  timeoutForControlPlane: 5m0s', 'apiVersion: kubeadm.k8s.io/v1beta2',
    'certificatesDir: /etc/kubernetes/ssl', 'clusterName: cluster.local', 'controlPlaneEndpoint: 192.168.10.11:6443', 'controllerManager:', '  extraArgs:',
    '    bind-address: 0.0.0.0', '    cluster-signing-duration: 8760h0m0s', '    configure-cloud-routes: "false"', '    leader-elect-lease-duration: 15s',
    '    leader-elect-renew-deadline: 10s', '    node-cidr-mask-size: "24"', '    node-monitor-grace-period: 40s', '    node-monitor-period: 5s',
    '    pod-eviction-timeout: 5m0s', '    profiling: "False"', '    terminated-pod-gc-threshold: "12500"', 'dns:', '  imageRepository: k8s.gcr.io', '  imageTag: 1.7.0',
    '  type: CoreDNS', 'etcd:', '  external:', '    caFile: /etc/ssl/etcd/ssl/ca.pem', '    certFile: /etc/ssl/etcd/ssl/node-k8s-master-01.pem', '    endpoints:',
    '    - https://192.168.10.11:2379', '    - https://192.168.10.12:2379', '    - https://192.168.10.13:2379', '    keyFile: /etc/ssl/etcd/ssl/node-k8s-master-01-key.pem',
    'imageRepository: k8s.gcr.io', 'kind: ClusterConfiguration', `kubernetesVersion: ${version}`, 'networking:', '  dnsDomain: cluster.local',
    '  podSubnet: 10.233.64.0/18', '  serviceSubnet: 10.233.0.0/18', 'scheduler:', '  extraArgs:', '    bind-address: 0.0.0.0', '',
  ].join('\n');
  const kubelet = [
    'apiVersion: kubelet.config.k8s.io/v1beta1', 'authentication:', '  anonymous:', '    enabled: false', '  webhook:', '    cacheTTL: 0s', '    enabled: true',
    '  x509:', '    clientCAFile: /etc/kubernetes/ssl/ca.crt', 'authorization:', '  mode: Webhook', 'cgroupDriver: systemd', 'clusterDNS:', '- 10.233.0.3',
    'clusterDomain: cluster.local', 'kind: KubeletConfiguration', 'maxPods: 110', 'resolvConf: /run/systemd/resolve/resolv.conf', 'rotateCertificates: true', '',
  ].join('\n');
  const kubeProxy = [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1', 'bindAddress: 0.0.0.0', 'clientConnection:', '  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf',
    'clusterCIDR: 10.233.64.0/18', 'ipvs:', '  scheduler: rr', '  strictARP: false', 'kind: KubeProxyConfiguration', 'mode: ipvs', 'nodePortAddresses: []', '',
  ].join('\n');
  write(ex, 'configmaps.yaml', list([
    configMap('kube-system', 'kubeadm-config', {
      ClusterConfiguration: clusterConfiguration,
      ClusterStatus: 'apiEndpoints:\n  k8s-master-01:\n    advertiseAddress: 192.168.10.11\n    bindPort: 6443\n  k8s-master-02:\n    advertiseAddress: 192.168.10.12\n    bindPort: 6443\n  k8s-master-03:\n    advertiseAddress: 192.168.10.13\n    bindPort: 6443\napiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterStatus\n',
    }),
    configMap('kube-system', 'kubelet-config-1.20', { kubelet }),
    configMap('kube-system', 'kube-proxy', { 'config.conf': kubeProxy, 'kubeconfig.conf': 'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\n' }, { labels: { app: 'kube-proxy' } }),
    // kubespray's calico-config: no CNI template here (kubespray writes /etc/cni/net.d itself).
    configMap('kube-system', 'calico-config', { calico_backend: 'bird', cluster_type: 'kubespray,bgp' }),
    configMap('kube-system', 'coredns', { Corefile: '.:53 {\n    errors\n    health {\n        lameduck 5s\n    }\n    ready\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n      pods insecure\n      fallthrough in-addr.arpa ip6.arpa\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n      prefer_udp\n    }\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n' }),
  ]));

  // `calicoctl get ippool -o yaml`: a typed list of the projectcalico.org/v3 API (as in seed 004).
  write(ex, 'ippools.yaml', {
    apiVersion: 'projectcalico.org/v3',
    items: [ippool('projectcalico.org/v3', 'default-pool', { blockSize: 26, cidr: '10.233.64.0/18', ipipMode: 'Always', natOutgoing: true, nodeSelector: 'all()', vxlanMode: 'Never' })],
    kind: 'IPPoolList',
    metadata: { resourceVersion: '93872451' },
  });
  write(ex, 'calico-ipam.yaml', list([
    {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'ClusterInformation',
      metadata: meta('default', undefined),
      spec: { calicoVersion: 'v3.17.4', clusterGUID: '3f1b6a0c9e2d4c7b8a5e6f7d8c9b0a1e', clusterType: 'kubespray,bgp,kubeadm,kdd,k8s', datastoreReady: true },
    },
    ...alloc.objects(),
  ]));
}

// ================================================================ cilium-cluster-pool, cilium-multi-pool

/**
 * A kubeadm cluster (v1.30.14, no --pod-network-cidr: kube-controller-manager allocates no node podCIDRs) with
 * Cilium 1.15.19 installed by its Helm chart in native routing: pods take their addresses from Cilium's own IPAM,
 * cluster-pool (CiliumNode spec.ipam.podCIDRs) or multi-pool (a CiliumPodIPPool `default`, CiliumNode
 * spec.ipam.pools). The chart's cilium-config keys are those of install/kubernetes/cilium/templates/
 * cilium-configmap.yaml in the v1.15.19 module; the SOURCES.md of each example names where each fact comes from.
 */
function ciliumKubeadm(ex: string, mode: 'cluster-pool' | 'multi-pool'): void {
  const version = 'v1.30.14';
  const cilium = 'v1.15.19';
  const POD = '10.42.0.0/16';
  const nodes = [
    { name: 'cp-1', ip: '198.51.100.10', cp: true },
    { name: 'worker-1', ip: '198.51.100.11', cp: false },
    { name: 'worker-2', ip: '198.51.100.12', cp: false },
    { name: 'worker-3', ip: '198.51.100.13', cp: false },
  ].map((n, i) => ({ ...n, cidr: `10.42.${i}.0/24`, router: `10.42.${i}.${90 + i}` }));
  const labels = (n: (typeof nodes)[number]): Obj => ({
    'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux',
    ...(n.cp ? { 'node-role.kubernetes.io/control-plane': '' } : {}),
  });
  write(ex, 'nodes.yaml', list(nodes.map((n) => node({
    name: n.name, ip: n.ip, kubelet: version, created: '2025-02-10T09:00:00Z', labels: labels(n),
    annotations: { 'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///var/run/containerd/containerd.sock', 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
  }))));
  // The agent's CiliumNode: its addresses (CiliumInternalIP: the router address, from the node's pod CIDR) and IPAM.
  write(ex, 'ciliumnodes.yaml', list(nodes.map((n) => ({
    apiVersion: 'cilium.io/v2', kind: 'CiliumNode',
    metadata: meta(n.name, undefined, { labels: labels(n), ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: n.name, uid: uid(`undefined/${n.name}`) }] }),
    spec: {
      addresses: [{ ip: n.ip, type: 'InternalIP' }, { ip: n.router, type: 'CiliumInternalIP' }],
      ipam: mode === 'cluster-pool'
        ? { podCIDRs: [n.cidr] }
        : { pools: { allocated: [{ cidrs: [n.cidr], pool: 'default' }], requested: [{ needed: { 'ipv4-addrs': 16 }, pool: 'default' }] } },
    },
    status: { ipam: { 'operator-status': {} } },
  }))));
  if (mode === 'multi-pool') {
    write(ex, 'ciliumpodippools.yaml', list([{ apiVersion: 'cilium.io/v2alpha1', kind: 'CiliumPodIPPool', metadata: meta('default', undefined), spec: { ipv4: { cidrs: [POD], maskSize: 24 } } }]));
  }
  const pods: Obj[] = [];
  const mirror = { 'kubernetes.io/config.mirror': '0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f', 'kubernetes.io/config.source': 'file' };
  const cp = nodes[0]!;
  pods.push(pod({
    ns: 'kube-system', name: `kube-apiserver-${cp.name}`, node: cp.name, ip: cp.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
    labels: { component: 'kube-apiserver', tier: 'control-plane' }, annotations: { ...mirror, 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': `${cp.ip}:6443` }, owner: { kind: 'Node', name: cp.name },
    containers: [{ command: ['kube-apiserver', `--advertise-address=${cp.ip}`, '--allow-privileged=true', '--authorization-mode=Node,RBAC', '--client-ca-file=/etc/kubernetes/pki/ca.crt', '--enable-admission-plugins=NodeRestriction', '--enable-bootstrap-token-auth=true', '--etcd-servers=https://127.0.0.1:2379', '--secure-port=6443', '--service-account-issuer=https://kubernetes.default.svc.cluster.local', '--service-account-key-file=/etc/kubernetes/pki/sa.pub', '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key', '--service-cluster-ip-range=10.96.0.0/12', '--tls-cert-file=/etc/kubernetes/pki/apiserver.crt', '--tls-private-key-file=/etc/kubernetes/pki/apiserver.key'], image: `registry.k8s.io/kube-apiserver:${version}`, name: 'kube-apiserver' }],
  }));
  pods.push(pod({
    ns: 'kube-system', name: `kube-controller-manager-${cp.name}`, node: cp.name, ip: cp.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
    labels: { component: 'kube-controller-manager', tier: 'control-plane' }, annotations: mirror, owner: { kind: 'Node', name: cp.name },
    // kubeadm init without --pod-network-cidr: no --allocate-node-cidrs, no --cluster-cidr
    containers: [{ command: ['kube-controller-manager', '--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf', '--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf', '--bind-address=127.0.0.1', '--client-ca-file=/etc/kubernetes/pki/ca.crt', '--cluster-name=kubernetes', '--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt', '--cluster-signing-key-file=/etc/kubernetes/pki/ca.key', '--controllers=*,bootstrapsigner,tokencleaner', '--kubeconfig=/etc/kubernetes/controller-manager.conf', '--leader-elect=true', '--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt', '--root-ca-file=/etc/kubernetes/pki/ca.crt', '--service-account-private-key-file=/etc/kubernetes/pki/sa.key', '--use-service-account-credentials=true'], image: `registry.k8s.io/kube-controller-manager:${version}`, name: 'kube-controller-manager' }],
  }));
  for (const n of nodes) {
    pods.push(pod({
      ns: 'kube-system', name: `kube-proxy-${suffix(`${ex}/kube-proxy/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'kube-proxy', 'controller-revision-hash': '6c9b8d7f5', 'pod-template-generation': '1' }, owner: { kind: 'DaemonSet', name: 'kube-proxy' },
      containers: [{ command: ['/usr/local/bin/kube-proxy', '--config=/var/lib/kube-proxy/config.conf', '--hostname-override=$(NODE_NAME)'], image: `registry.k8s.io/kube-proxy:${version}`, name: 'kube-proxy' }],
    }));
    pods.push(pod({
      ns: 'kube-system', name: `cilium-${suffix(`${ex}/cilium/${n.name}`, 5)}`, node: n.name, ip: n.ip, hostNetwork: true, priorityClassName: 'system-node-critical',
      labels: { 'k8s-app': 'cilium', 'app.kubernetes.io/name': 'cilium-agent', 'app.kubernetes.io/part-of': 'cilium', 'controller-revision-hash': '7f8d9c6b4', 'pod-template-generation': '1' }, owner: { kind: 'DaemonSet', name: 'cilium' },
      containers: [{ args: ['--config-dir=/tmp/cilium/config-map'], command: ['cilium-agent'], image: `quay.io/cilium/cilium:${cilium}`, name: 'cilium-agent' }],
    }));
  }
  pods.push(pod({
    ns: 'kube-system', name: `cilium-operator-6d5b8c7f9d-${suffix(`${ex}/cilium-operator`, 5)}`, node: cp.name, ip: cp.ip, hostNetwork: true, priorityClassName: 'system-cluster-critical',
    labels: { 'io.cilium/app': 'operator', name: 'cilium-operator', 'app.kubernetes.io/name': 'cilium-operator', 'app.kubernetes.io/part-of': 'cilium', 'pod-template-hash': '6d5b8c7f9d' }, owner: { kind: 'ReplicaSet', name: 'cilium-operator-6d5b8c7f9d' },
    containers: [{ args: ['--config-dir=/tmp/cilium/config-map', '--debug=$(CILIUM_DEBUG)'], command: ['cilium-operator-generic'], image: `quay.io/cilium/operator-generic:${cilium}`, name: 'cilium-operator' }],
  }));
  // Pod-network pods: each from its node's pod CIDR, after the router address.
  const next = new Map(nodes.map((n) => [n.name, 10]));
  const on = (n: (typeof nodes)[number], ns: string, name: string, podLabels: Obj, owner: { kind: string; name: string }, image: string): void => {
    const k = next.get(n.name)!;
    next.set(n.name, k + 7);
    pods.push(pod({ ns, name, node: n.name, ip: ipv4(v4(n.cidr.split('/')[0]!) + k), labels: podLabels, owner, containers: [{ image, name: owner.name.replace(/-[a-z0-9]+$/, '') }] }));
  };
  on(nodes[1]!, 'kube-system', `coredns-7db6d8ff4d-${suffix(`${ex}/coredns/0`, 5)}`, { 'k8s-app': 'kube-dns', 'pod-template-hash': '7db6d8ff4d' }, { kind: 'ReplicaSet', name: 'coredns-7db6d8ff4d' }, 'registry.k8s.io/coredns/coredns:v1.11.3');
  on(nodes[2]!, 'kube-system', `coredns-7db6d8ff4d-${suffix(`${ex}/coredns/1`, 5)}`, { 'k8s-app': 'kube-dns', 'pod-template-hash': '7db6d8ff4d' }, { kind: 'ReplicaSet', name: 'coredns-7db6d8ff4d' }, 'registry.k8s.io/coredns/coredns:v1.11.3');
  nodes.slice(1).forEach((n, i) => {
    on(n, 'shop', `web-5c8f7d9b6c-${suffix(`${ex}/web/${i}`, 5)}`, { app: 'web', 'pod-template-hash': '5c8f7d9b6c' }, { kind: 'ReplicaSet', name: 'web-5c8f7d9b6c' }, 'ghcr.io/example/shop-web:2.3.1');
    on(n, 'shop', `api-6f9d8c7b5a-${suffix(`${ex}/api/${i}`, 5)}`, { app: 'api', 'pod-template-hash': '6f9d8c7b5a' }, { kind: 'ReplicaSet', name: 'api-6f9d8c7b5a' }, 'ghcr.io/example/shop-api:2.3.1');
  });
  on(nodes[1]!, 'shop', 'db-0', { app: 'db', 'statefulset.kubernetes.io/pod-name': 'db-0' }, { kind: 'StatefulSet', name: 'db' }, 'docker.io/library/postgres:16.4');
  write(ex, 'pods.yaml', list(pods));

  write(ex, 'services.yaml', list([
    svc({ ns: 'default', name: 'kubernetes', clusterIP: '10.96.0.1', labels: { component: 'apiserver', provider: 'kubernetes' }, ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] }),
    svc({ ns: 'kube-system', name: 'kube-dns', clusterIP: '10.96.0.10', labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' }, selector: { 'k8s-app': 'kube-dns' }, ports: dnsPorts }),
    svc({ ns: 'kube-system', name: 'hubble-peer', clusterIP: '10.103.41.17', labels: { 'k8s-app': 'cilium' }, selector: { 'k8s-app': 'cilium' }, ports: [{ name: 'peer-service', port: 443, protocol: 'TCP', targetPort: 4244 }] }),
    svc({ ns: 'shop', name: 'web', clusterIP: '10.104.12.80', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'shop', name: 'api', clusterIP: '10.109.200.3', selector: { app: 'api' }, ports: [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 }] }),
    svc({ ns: 'shop', name: 'db', clusterIP: 'None', selector: { app: 'db' }, ports: [{ name: 'pg', port: 5432, protocol: 'TCP', targetPort: 5432 }] }),
  ]));

  const ciliumConfig: Obj = {
    'agent-not-ready-taint-key': 'node.cilium.io/agent-not-ready', 'auto-direct-node-routes': 'true', 'cluster-id': '0', 'cluster-name': 'default',
    'enable-ipv4': 'true', 'enable-ipv4-masquerade': 'true', 'enable-ipv6': 'false', 'enable-ipv6-masquerade': 'true', 'enable-bpf-masquerade': 'false',
    'identity-allocation-mode': 'crd', 'ipv4-native-routing-cidr': POD, 'kube-proxy-replacement': 'false', 'routing-mode': 'native', 'tunnel-protocol': 'vxlan',
    ipam: mode,
    ...(mode === 'cluster-pool'
      ? { 'cluster-pool-ipv4-cidr': POD, 'cluster-pool-ipv4-mask-size': '24' }
      : { 'auto-create-cilium-pod-ip-pools': `default=ipv4-cidrs:${POD};ipv4-mask-size:24` }),
  };
  const clusterConfiguration = [
    'apiServer: {}', 'apiVersion: kubeadm.k8s.io/v1beta3', 'certificatesDir: /etc/kubernetes/pki', 'clusterName: kubernetes', 'controllerManager: {}', 'dns: {}',
    'etcd:', '  local:', '    dataDir: /var/lib/etcd', 'imageRepository: registry.k8s.io', 'kind: ClusterConfiguration', `kubernetesVersion: ${version}`,
    'networking:', '  dnsDomain: cluster.local', '  serviceSubnet: 10.96.0.0/12', 'scheduler: {}', '',
  ].join('\n');
  const kubeProxy = ['apiVersion: kubeproxy.config.k8s.io/v1alpha1', 'bindAddress: 0.0.0.0', 'clientConnection:', '  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf', 'clusterCIDR: ""', 'kind: KubeProxyConfiguration', 'mode: ""', ''].join('\n');
  write(ex, 'configmaps.yaml', list([
    configMap('kube-system', 'cilium-config', ciliumConfig, { labels: { 'app.kubernetes.io/managed-by': 'Helm' }, annotations: { 'meta.helm.sh/release-name': 'cilium', 'meta.helm.sh/release-namespace': 'kube-system' } }),
    configMap('kube-system', 'kubeadm-config', { ClusterConfiguration: clusterConfiguration }),
    configMap('kube-system', 'kubelet-config', { kubelet: ['apiVersion: kubelet.config.k8s.io/v1beta1', 'cgroupDriver: systemd', 'clusterDNS:', '- 10.96.0.10', 'clusterDomain: cluster.local', 'kind: KubeletConfiguration', ''].join('\n') }),
    configMap('kube-system', 'kube-proxy', { 'config.conf': kubeProxy }, { labels: { app: 'kube-proxy' } }),
  ]));
}

kopsTailscale();
kopsLegacyPool();
kubeadmExhausted();
ciliumKubeadm('cilium-cluster-pool', 'cluster-pool');
ciliumKubeadm('cilium-multi-pool', 'multi-pool');
