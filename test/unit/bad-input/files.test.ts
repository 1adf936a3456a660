/**
 * Bad dumps given with -f to the commands that build a snapshot (inspect, suggest, plan for services and for
 * pods): files that cannot be read or parsed, documents that are not Kubernetes objects, objects a real
 * apiserver could not have returned (missing or mistyped metadata, wrong types or malformed addresses in fields
 * kube-renumber reads), conflicting copies of one object, broken distribution configs, stdin garbage, YAML alias
 * bombs and extreme nesting. Each ends in exit 3 with one error line naming the file (or the object) and the
 * problem. Exact copies of an object are not an error (test/unit/cluster.build.test.ts).
 */
import { type BadInputCase, corpus, ROOT } from './harness.ts';

const INSPECT = (f: string) => ['inspect', '-f', f];
const SUGGEST_SVC = (f: string) => ['suggest', '--for', 'services', '-f', f];
const SUGGEST_POD = (f: string) => ['suggest', '--for', 'pods', '-f', f];
const PLAN_SVC = (f: string) => ['plan', '--service-cidr', '172.30.0.0/16', '-f', f];
const PLAN_POD = (f: string) => ['plan', '--pod-cidr', '172.31.0.0/16', '-f', f];
const COMMANDS = { inspect: INSPECT, 'plan-services': PLAN_SVC, 'plan-pods': PLAN_POD, 'suggest-services': SUGGEST_SVC, 'suggest-pods': SUGGEST_POD };

const svc = (meta: string, spec = 'clusterIP: 10.96.0.10') => `apiVersion: v1
kind: Service
${meta}
spec:
  ${spec}
`;
const GOOD_SVC = svc('metadata: {name: web, namespace: default, resourceVersion: "100"}', 'clusterIP: 10.96.0.10\n  ports: [{port: 80}]');
const node = (spec: string) => `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: ${spec}
status: {addresses: [{type: InternalIP, address: 192.168.1.10}]}
`;
const pool = (spec: string) => `apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: ${spec}
`;
const kops = (spec: string, apiVersion = 'kops.k8s.io/v1alpha2') => `apiVersion: ${apiVersion}
kind: Cluster
metadata: {name: prod.example.com}
spec:
${spec}
`;
const kubeadm = (networking: string) => `apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.30.2
networking:
${networking}
`;

/** A billion-laughs document: 9 levels of 9 aliases (387,420,489 leaves if expanded). */
function bomb(where: 'ports' | 'labels' | 'unknown' | 'document' | 'items' | 'data'): string {
  const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++) {
    const p = String.fromCharCode(96 + i);
    const n = String.fromCharCode(97 + i);
    levels.push(`${n}: &${n} [*${p},*${p},*${p},*${p},*${p},*${p},*${p},*${p},*${p}]`);
  }
  const defs = `x-bomb:\n${levels.map((l) => `  ${l}`).join('\n')}\n`;
  switch (where) {
    case 'document':
      return `${defs.replace('x-bomb:\n', '- &top\n').replace(/^ {2}/gm, '  ')}- *i\n`.replace('- &top\n', '- \n');
    case 'ports':
      return `apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n${defs}spec:\n  clusterIP: 10.96.0.10\n  ports: [*i]\n`;
    case 'labels':
      return `apiVersion: v1\nkind: Service\n${defs}metadata: {name: web, namespace: default, labels: {app: *i}}\nspec: {clusterIP: 10.96.0.10}\n`;
    case 'data':
      return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-proxy, namespace: kube-system}\n${defs}data: {config.conf: *i}\n`;
    case 'items':
      return `apiVersion: v1\nkind: List\n${defs}items: [*i, *i]\n`;
    case 'unknown': {
      // Two copies of one Service whose unknown field x expands to 9^9 leaves through two separate alias chains
      // that differ only in the very last leaf: comparing them must stay bounded (each shared pair once).
      const other = levels.map((l) => l.replace(/&([a-i])/g, '&$1$1').replace(/\*([a-i])/g, '*$1$1')).map((l) => l.replace(/^([a-i])\1?:/, '$1$1:'));
      other[0] = other[0]!.replace('"lol"]', '"LOL"]');
      return `apiVersion: v1\nkind: List\nx-bomb:\n${[...levels, ...other].map((l) => `  ${l}`).join('\n')}\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: default}, spec: {clusterIP: 10.96.0.10, x: *i}}\n- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: default}, spec: {clusterIP: 10.96.0.10, x: *ii}}\n`;
    }
  }
}

const deepList = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
const deepJsonService = (n: number) => `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default"},"spec":{"clusterIP":"10.96.0.10","ports":${deepList(n)}}}`;

const cases: BadInputCase[] = [];
// Generous: a case that hangs is still caught, and a loaded machine (every case starts a Node process) is not a failure.
const add = (name: string, args: string[], message: RegExp, extra: Partial<BadInputCase> = {}) => cases.push({ name, args, code: 3, message, timeoutMs: 60_000, ...extra });

/** One bad input through every command that reads -f (or the first `only` of them). */
function everywhere(name: string, files: Record<string, string | Buffer>, path: string, message: RegExp, only = 3): void {
  for (const [cmd, args] of Object.entries(COMMANDS).slice(0, only)) add(`${name} (${cmd})`, args(path), message, { files });
}

// ---------------------------------------------------------------- unreadable, unparseable

everywhere('missing path', {}, '$D/nope.yaml', /nope\.yaml.*(ENOENT|no such file)/, 2);
add('empty file', INSPECT('$D/empty.yaml'), /empty\.yaml: empty file/, { files: { 'empty.yaml': '' } });
add('whitespace only', PLAN_SVC('$D/blank.yaml'), /blank\.yaml: empty file/, { files: { 'blank.yaml': '\n   \n\t\n' } });
add('comments only', SUGGEST_POD('$D/c.yaml'), /c\.yaml: empty file/, { files: { 'c.yaml': '# nothing\n---\n# here\n' } });
add('empty directory', INSPECT('$D/dump'), /dump: the directory has no \.yaml/, { dirs: ['dump'] });
add('directory without yaml files', PLAN_POD('$D/dump'), /dump: the directory has no \.yaml/, { files: { 'dump/README.txt': 'kubectl get all\n' } });
add('binary file', INSPECT('$D/x.yaml'), /x\.yaml: /, { files: { 'x.yaml': Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x3a, 0x0a, 0x5b, 0x00]) } });
add('binary after a good document', SUGGEST_SVC('$D/x.yaml'), /x\.yaml: /, { files: { 'x.yaml': Buffer.concat([Buffer.from(`${GOOD_SVC}---\n`), Buffer.from([0x00, 0x01, 0x02, 0x7b, 0x5b, 0xff])]) } });
add('garbage YAML', PLAN_SVC('$D/g.yaml'), /g\.yaml: not valid YAML or JSON/, { files: { 'g.yaml': 'apiVersion: v1\nkind: [Service\nmetadata: {name: x\n' } });
add('tab-indented YAML', SUGGEST_POD('$D/g.yaml'), /g\.yaml: not valid YAML or JSON/, { files: { 'g.yaml': 'apiVersion: v1\nkind: Service\nmetadata:\n\tname: web\n' } });
add('JSON syntax error', PLAN_POD('$D/s.json'), /s\.json: not valid YAML or JSON/, { files: { 's.json': '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web",}' } });
add('truncated JSON', INSPECT('$D/s.json'), /s\.json: not valid YAML or JSON/, { files: { 's.json': '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Serv' } });
add('a scalar', SUGGEST_SVC('$D/s.yaml'), /s\.yaml: the document is not a Kubernetes object \(a number/, { files: { 's.yaml': '42\n' } });
add('a string', PLAN_SVC('$D/s.yaml'), /s\.yaml: the document is not a Kubernetes object \(a string/, { files: { 's.yaml': 'kubectl get svc -A -o yaml\n' } });
add('JSON array of scalars', PLAN_POD('$D/s.json'), /s\.json: document 1 is not a Kubernetes object/, { files: { 's.json': '[1, 2, 3]' } });
add('a list of lists', INSPECT('$D/s.yaml'), /s\.yaml: the document is not a Kubernetes object \(a list/, { files: { 's.yaml': '- - a\n  - b\n' } });

// ---------------------------------------------------------------- not Kubernetes objects

add('no kind', SUGGEST_POD('$D/s.yaml'), /s\.yaml: .*no kind/, { files: { 's.yaml': 'apiVersion: v1\nmetadata: {name: web, namespace: default}\n' } });
add('no apiVersion', PLAN_SVC('$D/s.yaml'), /s\.yaml: .*no apiVersion/, { files: { 's.yaml': 'kind: Service\nmetadata: {name: web, namespace: default}\n' } });
add('kind is a list', INSPECT('$D/s.yaml'), /s\.yaml: .*no kind/, { files: { 's.yaml': 'apiVersion: v1\nkind: [Service]\nmetadata: {name: web}\n' } });
add('List whose items is not a list', PLAN_POD('$D/l.yaml'), /l\.yaml: the items of the List are a string, not a list/, { files: { 'l.yaml': 'apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ""}\nitems: "kubectl get all"\n' } });
add('List whose items is a mapping', SUGGEST_SVC('$D/l.yaml'), /l\.yaml: the items of the ServiceList are a mapping, not a list/, { files: { 'l.yaml': 'apiVersion: v1\nkind: ServiceList\nitems: {web: {clusterIP: 10.96.0.10}}\n' } });
add('List item without kind', INSPECT('$D/l.yaml'), /l\.yaml: item 2 of the List is not a Kubernetes object \(no kind\)/, { files: { 'l.yaml': `apiVersion: v1\nkind: List\nitems:\n- ${GOOD_SVC.replace(/\n/g, '\n  ')}\n- apiVersion: v1\n  metadata: {name: x}\n` } });

everywhere('Service without metadata', { 's.yaml': svc('') }, '$D/s.yaml', /s\.yaml: a Service: metadata is missing/);
add('metadata without name', INSPECT('$D/s.yaml'), /s\.yaml: a Service: metadata\.name is missing/, { files: { 's.yaml': svc('metadata: {namespace: default}') } });
add('metadata is a list', PLAN_SVC('$D/s.yaml'), /s\.yaml: a Service: metadata is a list/, { files: { 's.yaml': svc('metadata: [web]') } });
everywhere('name is a number', { 's.yaml': svc('metadata: {name: 5, namespace: default}') }, '$D/s.yaml', /s\.yaml: a Service: metadata\.name is a number \(5\), not a string/, 2);
everywhere('namespace is a list', { 's.yaml': svc('metadata: {name: web, namespace: [a]}') }, '$D/s.yaml', /s\.yaml: Service web: metadata\.namespace is a list \(\["a"\]\), not a string/);
add('Service without namespace', SUGGEST_SVC('$D/s.yaml'), /s\.yaml: Service web: metadata\.namespace is missing/, { files: { 's.yaml': svc('metadata: {name: web}') } });
add('name with a newline', INSPECT('$D/s.json'), /s\.json: Service default\/web\\nx: metadata\.name "web\\nx" is not a valid name/, { files: { 's.json': '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web\\nx","namespace":"default"},"spec":{}}' } });
add('name too long', PLAN_POD('$D/s.yaml'), /s\.yaml: Service default\/a+…?: metadata\.name "a+…? is not a valid name/, { files: { 's.yaml': svc(`metadata: {name: ${'a'.repeat(300)}, namespace: default}`) } });
add('label value is a number', SUGGEST_POD('$D/s.yaml'), /s\.yaml: Service default\/web: metadata\.labels\.tier is a number \(1\), not a string/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default, labels: {tier: 1}}') } });
add('ownerReferences is a mapping', INSPECT('$D/p.yaml'), /p\.yaml: Pod default\/p: metadata\.ownerReferences is a mapping/, { files: { 'p.yaml': 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, ownerReferences: {kind: ReplicaSet}}\n' } });

// ---------------------------------------------------------------- wrong types and malformed addresses in fields we read

everywhere('clusterIP is a number', { 's.yaml': svc('metadata: {name: web, namespace: default}', 'clusterIP: 12') }, '$D/s.yaml', /s\.yaml: Service default\/web: spec\.clusterIP is a number \(12\), not a string/);
everywhere('clusterIPs is a string', { 's.yaml': svc('metadata: {name: web, namespace: default}', 'clusterIPs: "x"') }, '$D/s.yaml', /s\.yaml: Service default\/web: spec\.clusterIPs is a string \("x"\), not a list/, 3);
add('clusterIP is garbage', PLAN_SVC('$D/s.yaml'), /spec\.clusterIP "banana" is not an IP address/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'clusterIP: banana') } });
add('clusterIPs has two IPv4', PLAN_SVC('$D/s.yaml'), /spec\.clusterIPs .* has two IPv4 addresses/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'clusterIPs: [10.96.0.10, 10.96.0.11]') } });
add('clusterIP and clusterIPs disagree', INSPECT('$D/s.yaml'), /spec\.clusterIPs\[0\] "10\.96\.0\.11" differs from spec\.clusterIP "10\.96\.0\.10"/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'clusterIP: 10.96.0.10\n  clusterIPs: [10.96.0.11]') } });
add('unknown Service type', SUGGEST_SVC('$D/s.yaml'), /spec\.type "Magic" is not a Service type/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'type: Magic') } });
add('port is a string', PLAN_SVC('$D/s.yaml'), /spec\.ports\[0\]\.port is "http", not a whole number from 1 to 65535/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'ports: [{port: http}]') } });
add('port out of range', INSPECT('$D/s.yaml'), /spec\.ports\[0\]\.port is 70000/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'ports: [{port: 70000}]') } });
add('externalIPs garbage', PLAN_SVC('$D/s.yaml'), /spec\.externalIPs\[0\] "300\.1\.1\.1" is not an IP address/, { files: { 's.yaml': svc('metadata: {name: web, namespace: default}', 'externalIPs: [300.1.1.1]') } });
add('spec is a string', SUGGEST_POD('$D/s.yaml'), /Service default\/web: spec is a string/, { files: { 's.yaml': 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec: ClusterIP\n' } });
everywhere('node podCIDR banana', { 'n.yaml': node('{podCIDR: banana}') }, '$D/n.yaml', /n\.yaml: Node n1: spec\.podCIDR "banana" is not a CIDR/, 3);
add('node podCIDR prefix out of range', PLAN_POD('$D/n.yaml'), /Node n1: spec\.podCIDR "10\.244\.1\.0\/33" is not a CIDR/, { files: { 'n.yaml': node('{podCIDR: 10.244.1.0/33}') } });
add('node podCIDRs not a list', PLAN_POD('$D/n.yaml'), /Node n1: spec\.podCIDRs is a string/, { files: { 'n.yaml': node('{podCIDRs: 10.244.1.0/24}') } });
add('pod podIP garbage', INSPECT('$D/p.yaml'), /Pod default\/p: status\.podIP "nope" is not an IP address/, { files: { 'p.yaml': 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nstatus: {podIP: nope}\n' } });
add('pod podIPs not a list', PLAN_POD('$D/p.yaml'), /Pod default\/p: status\.podIPs is a mapping/, { files: { 'p.yaml': 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nstatus: {podIPs: {ip: 10.244.1.5}}\n' } });
everywhere('pool cidr banana', { 'pool.yaml': pool('{cidr: banana, blockSize: 26}') }, '$D/pool.yaml', /pool\.yaml: IPPool default-ipv4-ippool: spec\.cidr "banana" is not a CIDR/);
add('pool without cidr', PLAN_POD('$D/pool.yaml'), /IPPool default-ipv4-ippool: spec\.cidr is missing/, { files: { 'pool.yaml': pool('{blockSize: 26}') } });
add('pool blockSize a string', PLAN_POD('$D/pool.yaml'), /spec\.blockSize is "26", not a whole number from 0 to 32/, { files: { 'pool.yaml': pool('{cidr: 100.96.0.0/11, blockSize: "26"}') } });
add('IPAMBlock cidr garbage', INSPECT('$D/b.yaml'), /IPAMBlock 10-0-0-0-26: spec\.cidr "10\.0\.0\.0\/26\/1" is not a CIDR/, { files: { 'b.yaml': 'apiVersion: crd.projectcalico.org/v1\nkind: IPAMBlock\nmetadata: {name: 10-0-0-0-26}\nspec: {cidr: 10.0.0.0/26/1, allocations: []}\n' } });
add('ServiceCIDR cidrs not a list', PLAN_SVC('$D/sc.yaml'), /ServiceCIDR kubernetes: spec\.cidrs is a string/, { files: { 'sc.yaml': 'apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: kubernetes}\nspec: {cidrs: 10.96.0.0/12}\n' } });
add('Installation pool cidr garbage', INSPECT('$D/i.yaml'), /Installation default: spec\.calicoNetwork\.ipPools\[0\]\.cidr "x" is not a CIDR/, { files: { 'i.yaml': 'apiVersion: operator.tigera.io/v1\nkind: Installation\nmetadata: {name: default}\nspec: {calicoNetwork: {ipPools: [{cidr: x}]}}\n' } });
add('ConfigMap data value is a list', SUGGEST_SVC('$D/cm.yaml'), /ConfigMap kube-system\/kube-proxy: data\["config\.conf"\] is a list/, { files: { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-proxy, namespace: kube-system}\ndata: {config.conf: [a]}\n' } });

// ---------------------------------------------------------------- distribution configs

everywhere('kOps spec with a garbage podCIDR', { 'cluster.yaml': kops('  networking:\n    calico: {}\n    podCIDR: 100.96.0.0/banana\n    serviceClusterIPRange: 100.64.0.0/13', 'kops.k8s.io/v1alpha3') }, '$D/cluster.yaml', /cluster\.yaml: Cluster prod\.example\.com: spec\.networking\.podCIDR "100\.96\.0\.0\/banana" is not a CIDR/);
add('kOps legacy serviceClusterIPRange a number', PLAN_SVC('$D/cluster.yaml'), /Cluster prod\.example\.com: spec\.serviceClusterIPRange is a number/, { files: { 'cluster.yaml': kops('  serviceClusterIPRange: 10\n  networking: {calico: {}}') } });
add('kOps kubeDNS serverIP garbage', PLAN_SVC('$D/cluster.yaml'), /spec\.kubeDNS\.serverIP "dns" is not an IP address/, { files: { 'cluster.yaml': kops('  kubeDNS: {serverIP: dns}\n  networking: {calico: {}}') } });
add('kOps networking is a list', INSPECT('$D/cluster.yaml'), /spec\.networking is a list/, { files: { 'cluster.yaml': kops('  networking: [calico]') } });
everywhere('kubeadm serviceSubnet garbage', { 'kubeadm.yaml': kubeadm('  serviceSubnet: garbage\n  podSubnet: 10.244.0.0/16') }, '$D/kubeadm.yaml', /kubeadm\.yaml: ClusterConfiguration: networking\.serviceSubnet "garbage" is not a CIDR/);
add('kubeadm podSubnet list with garbage', PLAN_POD('$D/kubeadm.yaml'), /networking\.podSubnet "10\.244\.0\.0\/16,banana" is not a CIDR list/, { files: { 'kubeadm.yaml': kubeadm('  podSubnet: 10.244.0.0/16,banana') } });
add('kubeadm extraArgs cluster-cidr garbage', INSPECT('$D/kubeadm.yaml'), /kubeadm\.yaml: ClusterConfiguration: controllerManager\.extraArgs\.cluster-cidr "x" is not a CIDR/, { files: { 'kubeadm.yaml': `${kubeadm('  podSubnet: 10.244.0.0/16')}controllerManager:\n  extraArgs: {cluster-cidr: x}\n` } });
add('KubeletConfiguration clusterDNS garbage', SUGGEST_SVC('$D/kubelet.yaml'), /KubeletConfiguration: clusterDNS\[0\] "dns" is not an IP address/, { files: { 'kubelet.yaml': 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [dns]\n' } });
add('KubeProxyConfiguration clusterCIDR a number', PLAN_POD('$D/kp.yaml'), /KubeProxyConfiguration: clusterCIDR is a number/, { files: { 'kp.yaml': 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10\n' } });

// ---------------------------------------------------------------- duplicates

const GOOD_SVC_LATER = GOOD_SVC.replace('resourceVersion: "100"', 'resourceVersion: "205"');
everywhere('conflicting copies in two files', { 'a.yaml': GOOD_SVC, 'b.yaml': GOOD_SVC_LATER }, '$D', /Service default\/web appears in .*a\.yaml and in .*b\.yaml with different content \(metadata\.resourceVersion: "100" vs "205"\)/);
add('conflicting copies in one file', PLAN_SVC('$D/s.yaml'), /Service default\/web appears in .*s\.yaml document 1 and in .*s\.yaml document 2 with different content \(spec\.clusterIP: "10\.96\.0\.10" vs "10\.96\.0\.11"\)/, { files: { 's.yaml': `${svc('metadata: {name: web, namespace: default}')}---\n${svc('metadata: {name: web, namespace: default}', 'clusterIP: 10.96.0.11')}` } });
add('example plus an edited copy of one of its Services', ['inspect', '-f', `${ROOT}examples/kops-tailscale`, '-f', '$D/web.yaml'], /Service default\/web appears in .* with different content/, {
  files: { 'web.yaml': 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default, resourceVersion: "280003", uid: 11c12ae8-12c1-4c7b-a3c1-2e0e14c12fa1, creationTimestamp: "2024-03-04T10:00:00Z"}\nspec: {clusterIP: 100.70.4.99}\n' },
});

// ---------------------------------------------------------------- stdin

add('stdin garbage', ['inspect', '-f', '-'], /stdin: not valid YAML or JSON/, { stdin: '{{{ not yaml\n' });
add('stdin empty', ['plan', '--service-cidr', '172.30.0.0/16', '-f', '-'], /stdin: empty file/, { stdin: '' });
add('stdin binary', ['suggest', '--for', 'pods', '-f', '-'], /stdin: /, { stdin: Buffer.from([0x00, 0xff, 0x00, 0x5b, 0x7b]) });
add('stdin Service without metadata', ['plan', '--pod-cidr', '172.31.0.0/16', '-f', '-'], /stdin: a Service: metadata is missing/, { stdin: svc('') });

// ---------------------------------------------------------------- YAML bombs and deep nesting: refused quickly

add('alias bomb as the document', INSPECT('$D/bomb.yaml'), /bomb\.yaml: .*not a Kubernetes object/, { files: { 'bomb.yaml': bomb('document') } });
add('alias bomb in spec.ports', PLAN_SVC('$D/bomb.yaml'), /Service default\/web: spec\.ports\[0\] is a list \(\[\[\[\[/, { files: { 'bomb.yaml': bomb('ports') } });
add('alias bomb in a label', SUGGEST_SVC('$D/bomb.yaml'), /metadata\.labels\.app is a list/, { files: { 'bomb.yaml': bomb('labels') } });
add('alias bomb in ConfigMap data', PLAN_POD('$D/bomb.yaml'), /data\["config\.conf"\] is a list/, { files: { 'bomb.yaml': bomb('data') } });
add('alias bomb as List items', INSPECT('$D/bomb.yaml'), /item 1 of the List is not a Kubernetes object \(a list/, { files: { 'bomb.yaml': bomb('items') } });
add('alias bomb in two copies of one object', PLAN_SVC('$D/bomb.yaml'), /Service default\/web appears in .*bomb\.yaml item 1 and in .*bomb\.yaml item 2 with different content \(spec\.x\[0\]\[0\]\[0\]\[0\]\[0\]\[0\]\[0\]\[0\]\[8\]: "lol" vs "LOL"\)/, { files: { 'bomb.yaml': bomb('unknown') } });
add('deep nesting (JSON, 100000 levels)', INSPECT('$D/deep.json'), /deep\.json: /, { files: { 'deep.json': deepList(100_000) } });
add('deep nesting (YAML flow, 100000 levels)', PLAN_POD('$D/deep.yaml'), /deep\.yaml: /, { files: { 'deep.yaml': `apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec: {ports: ${deepList(100_000)}}\n` } });
add('deep nesting inside a Service (JSON, 5000 levels)', SUGGEST_SVC('$D/deep.json'), /deep\.json: Service default\/web: spec\.ports\[0\] is a list/, { files: { 'deep.json': deepJsonService(5000) } });

corpus('-f dump files', cases);
