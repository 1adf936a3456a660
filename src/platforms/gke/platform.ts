/**
 * Google Kubernetes Engine: a managed control plane whose kube-apiserver flags nobody outside Google can change;
 * in VPC-native clusters pod addresses are alias IP ranges (subnet secondary ranges) of the VPC.
 * Sources: docs/platforms.md.
 */
import { managedEvidence } from '../managed/signs.ts';
import type { Platform, PlatformInput } from '../../platform/types.ts';

function detect(input: PlatformInput): string[] | undefined {
  return managedEvidence(input, {
    // Every node of a node pool carries its pool's name; kOps on GCE sets other cloud.google.com/ labels, never these.
    labels: [{ key: 'cloud.google.com/gke-nodepool' }, { key: 'cloud.google.com/gke-os-distribution' }, { key: 'cloud.google.com/gke-provisioning' }],
    // GKE versions read 1.31.3-gke.1162000.
    kubeletVersion: /^v\d+\.\d+\.\d+-gke\.\d+$/,
    // The DNS-based control plane endpoint (gke-<id>.<location>.gke.goog); the IP endpoint shows nothing.
    serverHost: /\.gke\.goog$/,
    providerID: 'gce://',
    daemonSets: ['kube-system/netd', 'kube-system/anetd', 'kube-system/gke-metadata-server', 'kube-system/fluentbit-gke', 'kube-system/pdcsi-node'],
    configMaps: ['kube-system/netd-config'],
  });
}

export const gke: Platform<'gke'> = {
  kind: 'gke',
  title: 'Google Kubernetes Engine (GKE)',
  detect,
  dnsServices: [{ namespace: 'kube-system', name: 'kube-dns', selector: { 'k8s-app': 'kube-dns' } }],
  capabilities: {
    service: {
      supported: false,
      reason: 'GKE chooses the Service range when the cluster is created (--services-ipv4-cidr or --services-secondary-range-name; GKE-managed 34.118.224.0/20 by default on newer clusters) and runs the kube-apiserver itself, so the apiserver flag the move needs cannot be changed',
      instead: 'create a new GKE cluster with the new Service range and move the workloads to it (blue-green)',
    },
    pod: {
      supported: false,
      reason: 'pod addresses are VPC alias IP ranges (subnet secondary ranges) GKE hands to each node, and a secondary range in use cannot be replaced without putting the cluster into an unstable state',
      instead: 'add Pod IPv4 ranges with discontiguous multi-Pod CIDR (a new node pool with --pod-ipv4-range) and move the workloads onto it, or create a new cluster',
    },
  },
  sources: [
    'https://cloud.google.com/kubernetes-engine/docs/how-to/alias-ips',
    'https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips',
    'https://github.com/googleapis/googleapis/commit/2ddfcb8dc096563243837a32f06ad471b971396c',
    'https://wdenniss.com/gke-network-planning',
    'https://github.com/GoogleCloudPlatform/netd/blob/master/netd.yaml',
  ],
};
