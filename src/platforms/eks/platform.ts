/**
 * Amazon EKS: a managed control plane whose kube-apiserver flags nobody outside AWS can change, with pod
 * addresses taken from the VPC by the Amazon VPC CNI (aws-node). Sources: docs/platforms.md.
 */
import { firstAndMore } from '../../text.ts';
import { managedEvidence } from '../managed/signs.ts';
import { objectsOf, type Platform, type PlatformInput, type ReservedRange } from '../../platform/types.ts';

const ENICONFIG = { group: 'crd.k8s.amazonaws.com', version: 'v1alpha1', plural: 'eniconfigs', kind: 'ENIConfig', namespaced: false } as const;

function detect(input: PlatformInput): string[] | undefined {
  const evidence = managedEvidence(input, {
    // Managed node groups, EKS Auto Mode / Fargate / hybrid nodes (compute-type), managed node groups' capacity type.
    labels: [{ key: 'eks.amazonaws.com/nodegroup' }, { key: 'eks.amazonaws.com/compute-type' }, { key: 'eks.amazonaws.com/capacityType' }],
    // The EKS-optimized AMIs' kubelet, e.g. v1.31.4-eks-aeac579; EKS Distro / EKS Anywhere builds read v1.28.3-eks-1-28-9 and are not EKS.
    kubeletVersion: /^v\d+\.\d+\.\d+-eks-[0-9a-f]{7}$/,
    serverHost: /\.eks\.amazonaws\.com(\.cn)?$/,
    providerID: 'aws:///',
    daemonSets: ['kube-system/aws-node', 'kube-system/eks-pod-identity-agent'],
  });
  if (!evidence) return undefined;
  const enis = objectsOf(input, ENICONFIG.group, ENICONFIG.kind).map((o) => o.metadata?.name).filter((n): n is string => typeof n === 'string');
  if (enis.length > 0) evidence.push(`ENIConfig${enis.length > 1 ? 's' : ''} ${firstAndMore(enis, 3)} (VPC CNI custom networking)`);
  return evidence;
}

function reserved(): ReservedRange[] {
  return [{ cidr: '169.254.170.23/32', reason: 'EKS Pod Identity Agent (link-local address on every node)' }];
}

export const eks: Platform<'eks'> = {
  kind: 'eks',
  title: 'Amazon EKS',
  reads: [ENICONFIG],
  detect,
  reserved,
  dnsServices: [{ namespace: 'kube-system', name: 'kube-dns', selector: { 'k8s-app': 'kube-dns' } }],
  capabilities: {
    service: {
      supported: false,
      reason: 'EKS sets the Service range (kubernetesNetworkConfig.serviceIpv4Cidr, else 10.100.0.0/16 or 172.20.0.0/16) when the cluster is created and it cannot be changed afterwards, and the kube-apiserver flag the move needs is not reachable on the managed control plane',
      instead: 'create a new EKS cluster with the new serviceIpv4Cidr and move the workloads to it (blue-green)',
    },
    pod: {
      supported: false,
      reason: 'pods take VPC addresses from the Amazon VPC CNI (aws-node): from the nodes\' subnets or, with custom networking, from the subnets the ENIConfigs name; there is no cluster pod CIDR to move',
      instead: 'associate a secondary CIDR block with the VPC (for example from 100.64.0.0/10), create subnets in it and an ENIConfig per subnet (VPC CNI custom networking), then create new node groups and move the workloads onto them',
    },
  },
  sources: [
    'https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html',
    'https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigResponse.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/create-cluster.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network-tutorial.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html',
    'https://docs.aws.amazon.com/eks/latest/userguide/pod-identities.html',
  ],
};
