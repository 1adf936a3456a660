/**
 * The bad-input corpus for targets that contain a live address: a --pod-cidr or --service-cidr holding a ClusterIP,
 * a pod IP or a node address is refused (exit 2) whatever the configured ranges say, naming one such address and
 * what holds it. The dumps are clusters that configure little or nothing we can read: k3s, AKS, GKE, EKS with
 * custom networking (test/unit/live-fixtures.ts).
 */
import { type BadInputCase, corpus } from './harness.ts';
import { aksObjects, eksCustomNetworkingObjects, gkeObjects, k3sObjects, listJson, node, pod } from '../live-fixtures.ts';

const FILES = {
  'k3s.json': listJson(k3sObjects()),
  'aks.json': listJson(aksObjects()),
  'gke.json': listJson(gkeObjects()),
  'eks.json': listJson(eksCustomNetworkingObjects()),
  'stray.json': listJson([...k3sObjects(), pod('shop', 'stray', '10.60.0.5', 'agent-1'), node('edge-1', '192.168.50.13', '10.42.2.0/24', '203.0.113.7')]),
};

const cases: BadInputCase[] = [];
const add = (name: string, args: string[], message: RegExp): void => {
  cases.push({ name, args, code: 2, message, files: FILES, timeoutMs: 60_000 });
};

add('k3s: --pod-cidr holding every ClusterIP', ['plan', '--pod-cidr', '10.43.0.0/16', '-f', '$D/k3s.json'],
  /^--pod-cidr 10\.43\.0\.0\/16 refused: 10\.43\.0\.0\/16 contains 10\.43\.0\.1, the ClusterIP of default\/kubernetes \(and 3 more live addresses\)/);
add('k3s: --pod-cidr holding the DNS Service\'s ClusterIP', ['plan', '--pod-cidr', '10.43.0.8/29', '-f', '$D/k3s.json'],
  /10\.43\.0\.8\/29 contains 10\.43\.0\.10, the ClusterIP of kube-system\/kube-dns/);
add('AKS: --pod-cidr inside the service range', ['plan', '--pod-cidr', '10.0.0.0/17', '--ipam', 'node', '-f', '$D/aks.json'],
  /10\.0\.0\.0\/17 contains 10\.0\.0\.1, the ClusterIP of default\/kubernetes/);
add('GKE: its service range as --pod-cidr', ['plan', '--pod-cidr', '34.118.224.0/20', '-f', '$D/gke.json'],
  /34\.118\.224\.0\/20 contains 34\.118\.224\.1, the ClusterIP of default\/kubernetes/);
add('EKS custom networking: --pod-cidr holding the pods of no configured range', ['plan', '--pod-cidr', '100.64.0.0/16', '--ipam', 'node', '-f', '$D/eks.json'],
  /100\.64\.0\.0\/16 contains 100\.64\.3\.7, the IP of pod kube-system\/coredns-1 \(and 2 more live addresses\)/);
add('--service-cidr holding a pod IP outside every range', ['plan', '--service-cidr', '10.60.0.0/16', '-f', '$D/stray.json'],
  /^--service-cidr 10\.60\.0\.0\/16 refused: 10\.60\.0\.0\/16 contains 10\.60\.0\.5, the IP of pod shop\/stray$/);
add('--service-cidr holding a node ExternalIP', ['plan', '--service-cidr', '203.0.113.0/24', '-f', '$D/stray.json'],
  /203\.0\.113\.0\/24 contains 203\.0\.113\.7, the ExternalIP of node edge-1/);
add('--pod-cidr holding a pod IP, with --service-cidr', ['plan', '--pod-cidr', '10.60.0.0/16', '--service-cidr', '10.100.0.0/16', '-f', '$D/stray.json'],
  /^--pod-cidr 10\.60\.0\.0\/16 refused: 10\.60\.0\.0\/16 contains 10\.60\.0\.5, the IP of pod shop\/stray$/);

corpus('targets holding live addresses', cases);
