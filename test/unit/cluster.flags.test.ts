import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerWords, parseBool, parseComponentFlags, parseFlags, splitList } from '../../src/cluster/flags.ts';
import { componentContainer, imageVersion, isComponentPod } from '../../src/cluster/components.ts';

test('kubeadm layout: --flag=value in command', () => {
  const f = parseComponentFlags(containerWords({ command: ['kube-apiserver', '--service-cluster-ip-range=10.96.0.0/12', '--allow-privileged=true'] }), 'kube-apiserver');
  assert.equal(f.get('service-cluster-ip-range'), '10.96.0.0/12');
  assert.equal(f.get('allow-privileged'), 'true');
});

test('kOps layout: /go-runner wrapper flags are skipped', () => {
  const words = containerWords({
    command: ['/go-runner'],
    args: ['--log-file=/var/log/kube-controller-manager.log', '--also-stdout', '/usr/local/bin/kube-controller-manager', '--cluster-cidr=100.96.0.0/11', '--allocate-node-cidrs'],
  });
  const f = parseComponentFlags(words, 'kube-controller-manager');
  assert.equal(f.has('log-file'), false);
  assert.equal(f.has('also-stdout'), false);
  assert.equal(f.get('cluster-cidr'), '100.96.0.0/11');
  assert.equal(f.get('allocate-node-cidrs'), 'true');
});

test('shell layout: a single sh -c string is split into words', () => {
  const words = containerWords({
    command: ['/bin/sh', '-c', 'mkfifo /tmp/pipe; (tee -a /var/log/kube-apiserver.log < /tmp/pipe & ) ; exec /usr/local/bin/kube-apiserver --service-cluster-ip-range=100.64.0.0/13 --v=2 > /tmp/pipe 2>&1'],
  });
  const f = parseComponentFlags(words, 'kube-apiserver');
  assert.equal(f.get('service-cluster-ip-range'), '100.64.0.0/13');
  assert.equal(f.get('v'), '2');
});

test('--flag value as two words; booleans before another flag', () => {
  const f = parseFlags(['--cluster-cidr', '10.0.0.0/16', '--allocate-node-cidrs', '--node-cidr-mask-size', '24']);
  assert.equal(f.get('cluster-cidr'), '10.0.0.0/16');
  assert.equal(f.get('allocate-node-cidrs'), 'true');
  assert.equal(f.get('node-cidr-mask-size'), '24');
});

test('last occurrence wins', () => {
  assert.equal(parseFlags(['--v=2', '--v=4']).get('v'), '4');
});

test('splitList, parseBool', () => {
  assert.deepEqual(splitList(' 10.0.0.0/16, fd00::/108 ,'), ['10.0.0.0/16', 'fd00::/108']);
  assert.deepEqual(splitList(undefined), []);
  assert.equal(parseBool('false'), false);
  assert.equal(parseBool('True'), true);
  assert.equal(parseBool('maybe'), undefined);
});

test('component pods and containers', () => {
  const pod = {
    metadata: { name: 'kube-apiserver-cp1', namespace: 'kube-system', labels: { 'k8s-app': 'kube-apiserver' } },
    spec: { containers: [{ name: 'healthcheck', image: 'registry.k8s.io/kops/kube-apiserver-healthcheck:1.33.0' }, { name: 'main', image: 'registry.k8s.io/kube-apiserver:v1.33.4' }] },
  };
  assert.equal(isComponentPod(pod, 'kube-apiserver'), true);
  assert.equal(isComponentPod({ metadata: { name: 'kube-apiserver-x', namespace: 'default' } }, 'kube-apiserver'), false);
  assert.equal(componentContainer(pod, 'kube-apiserver')?.name, 'main');
  assert.equal(imageVersion('registry.k8s.io/kube-apiserver:v1.29.3@sha256:0123'), 'v1.29.3');
  assert.equal(imageVersion('localhost:5000/kube-apiserver'), undefined);
  assert.equal(imageVersion('k8s.gcr.io/kube-apiserver-amd64:1.20.7'), 'v1.20.7');
});
