// Objects the Calico CRDs (calico.ts) must accept or refuse, with the reason. Checked offline by
// test/unit/testbed-crds.test.ts (all but the CEL-only cases) and on a real kube-apiserver by
// `node test/testbed/crds/check-live.ts` (all of them, and the updates below).

import { CALICO_GROUP, CALICO_VERSION } from './calico.ts';

export interface CalicoObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
}

export interface CRDCase {
  name: string;
  accept: boolean;
  object: CalicoObject;
  /** Refused only by a CEL rule across fields (or the CEL IP library), which the unit test does not evaluate. */
  celOnly?: boolean;
}

const G = `${CALICO_GROUP}/${CALICO_VERSION}`;
const pool = (name: string, spec: Record<string, unknown>): CalicoObject => ({ apiVersion: G, kind: 'IPPool', metadata: { name }, spec });
const block = (name: string, spec: Record<string, unknown>): CalicoObject => ({ apiVersion: G, kind: 'IPAMBlock', metadata: { name }, spec });
const affinity = (name: string, spec: Record<string, unknown>): CalicoObject => ({ apiVersion: G, kind: 'BlockAffinity', metadata: { name }, spec });
const ok = (name: string, object: CalicoObject): CRDCase => ({ name, accept: true, object });
const no = (name: string, object: CalicoObject, celOnly = false): CRDCase => ({ name, accept: false, object, ...(celOnly ? { celOnly } : {}) });

export const CASES: readonly CRDCase[] = [
  ok('IPPool with every setting the engine copies', pool('p1', { cidr: '10.10.0.0/16', blockSize: 26, ipipMode: 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()', allowedUses: ['Workload', 'Tunnel'] })),
  ok('IPv6 IPPool, VXLAN CrossSubnet', pool('p2', { cidr: 'fd00:10::/48', blockSize: 122, vxlanMode: 'CrossSubnet' })),
  ok('IPPool in the v1 spelling (ipip, nat-outgoing)', pool('p3', { cidr: '10.11.0.0/16', ipip: { enabled: true, mode: 'always' }, 'nat-outgoing': true })),
  ok('IPPool blockSize 0 (the default, as in Calico)', pool('p4', { cidr: '10.12.0.0/16', blockSize: 0 })),
  ok('a disabled IPPool smaller than a block', pool('p5', { cidr: '10.13.0.0/28', disabled: true })),
  ok('IPv6 IPPool blockSize 126', pool('p6', { cidr: 'fd00:11::/48', blockSize: 126 })),
  no('IPPool without cidr', pool('b1', { blockSize: 26 })),
  no('IPPool cidr without a prefix', pool('b2', { cidr: '10.10.0.0' })),
  no('IPPool cidr that is no address', pool('b3', { cidr: 'banana' })),
  no('IPPool cidr with host bits', pool('b4', { cidr: '10.10.0.1/16' })),
  no('IPv4 IPPool blockSize 19', pool('b5', { cidr: '10.10.0.0/16', blockSize: 19 }), true),
  no('IPv4 IPPool blockSize 33', pool('b6', { cidr: '10.10.0.0/16', blockSize: 33 }), true),
  no('IPv6 IPPool blockSize 115', pool('b7', { cidr: 'fd00:10::/48', blockSize: 115 }), true),
  no('IPPool blockSize 129', pool('b8', { cidr: 'fd00:10::/48', blockSize: 129 })),
  no('an enabled IPPool smaller than one block', pool('b9', { cidr: '10.10.0.0/28', blockSize: 26 }), true),
  no('IPPool ipipMode in the v1 spelling', pool('b10', { cidr: '10.10.0.0/16', ipipMode: 'always' })),
  no('IPPool vxlanMode not an encapsulation mode', pool('b11', { cidr: '10.10.0.0/16', vxlanMode: 'Sometimes' })),
  no('IPPool with IP-in-IP and VXLAN', pool('b12', { cidr: '10.10.0.0/16', ipipMode: 'Always', vxlanMode: 'Always' }), true),
  no('IPv6 IPPool with IP-in-IP', pool('b13', { cidr: 'fd00:10::/48', ipipMode: 'Always' }), true),
  no('IPPool allowedUses not a use', pool('b14', { cidr: '10.10.0.0/16', allowedUses: ['Pods'] })),
  no('IPPool allowedUses twice the same', pool('b15', { cidr: '10.10.0.0/16', allowedUses: ['Workload', 'Workload'] })),
  no('IPPool without spec', { apiVersion: G, kind: 'IPPool', metadata: { name: 'b16' } }),
  no('IPPool with an undeclared field', pool('b17', { cidr: '10.10.0.0/16', colour: 'blue' })),
  ok('IPAMBlock as Calico IPAM writes it', block('10-10-0-0-30', { cidr: '10.10.0.0/30', affinity: 'host:tb-node-0', allocations: [0, null, null, null], unallocated: [1, 2, 3], attributes: [{ handle_id: 'k8s-pod-network.x', secondary: { namespace: 'ns', node: 'tb-node-0', pod: 'x' } }], strictAffinity: false, deleted: false, sequenceNumber: 1, sequenceNumberForAllocation: { '0': 0 } })),
  no('IPAMBlock affinity not host: or virtual:', block('bb1', { cidr: '10.10.0.0/30', affinity: 'node tb-node-0', allocations: [], unallocated: [], attributes: [], strictAffinity: false })),
  no('IPAMBlock without unallocated', block('bb2', { cidr: '10.10.0.0/30', allocations: [], attributes: [], strictAffinity: false })),
  no('IPAMBlock cidr not a CIDR', block('bb3', { cidr: '10.10.0.0', allocations: [], unallocated: [], attributes: [], strictAffinity: false })),
  ok('BlockAffinity as Calico IPAM writes it', affinity('n-10-10-0-0-26', { node: 'n', cidr: '10.10.0.0/26', state: 'confirmed', deleted: 'false', type: 'host' })),
  no('BlockAffinity state not a state', affinity('ab1', { node: 'n', cidr: '10.10.0.0/26', state: 'done', deleted: 'false' })),
  no('BlockAffinity deleted as a boolean (a string in the v1 CRD)', affinity('ab2', { node: 'n', cidr: '10.10.0.0/26', state: 'confirmed', deleted: false })),
  ok('IPAMHandle', { apiVersion: G, kind: 'IPAMHandle', metadata: { name: 'h1' }, spec: { handleID: 'h1', block: { '10.10.0.0/26': 1 }, deleted: false } }),
  no('IPAMHandle with a negative count', { apiVersion: G, kind: 'IPAMHandle', metadata: { name: 'hb1' }, spec: { handleID: 'hb1', block: { '10.10.0.0/26': -1 } } }),
  ok('GlobalNetworkPolicy with nets, a bare IP, ports and an HTTP match', { apiVersion: G, kind: 'GlobalNetworkPolicy', metadata: { name: 'g1' }, spec: { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow', protocol: 'TCP', source: { nets: ['10.244.0.0/16', '10.0.0.1', 'fd00::/64'] }, destination: { ports: [80, '8000:8080'] }, http: { methods: ['GET'] } }] } }),
  no('GlobalNetworkPolicy net with prefix /33', { apiVersion: G, kind: 'GlobalNetworkPolicy', metadata: { name: 'gb1' }, spec: { ingress: [{ action: 'Allow', source: { nets: ['10.244.0.0/33'] } }] } }),
  no('GlobalNetworkPolicy action not an action', { apiVersion: G, kind: 'GlobalNetworkPolicy', metadata: { name: 'gb2' }, spec: { ingress: [{ action: 'Permit' }] } }),
  ok('NetworkPolicy with notNets', { apiVersion: G, kind: 'NetworkPolicy', metadata: { name: 'n1', namespace: 'default' }, spec: { tier: 'default', order: 10.5, selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { notNets: ['10.96.0.0/24'] } }] } }),
  ok('NetworkSet', { apiVersion: G, kind: 'NetworkSet', metadata: { name: 's1', namespace: 'default' }, spec: { nets: ['198.51.100.0/24', '203.0.113.7'] } }),
  no('GlobalNetworkSet net that is no address', { apiVersion: G, kind: 'GlobalNetworkSet', metadata: { name: 'sb1' }, spec: { nets: ['not-a-net'] } }),
  ok('IPReservation', { apiVersion: G, kind: 'IPReservation', metadata: { name: 'r1' }, spec: { reservedCIDRs: ['10.10.0.1/32'] } }),
  ok('IPAMConfig', { apiVersion: G, kind: 'IPAMConfig', metadata: { name: 'default' }, spec: { strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0 } }),
  ok('ClusterInformation', { apiVersion: G, kind: 'ClusterInformation', metadata: { name: 'default' }, spec: { clusterType: 'k8s,bgp,kubeadm', calicoVersion: 'v3.31.7', datastoreReady: true } }),
  ok('Tier', { apiVersion: G, kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100, defaultAction: 'Pass' } }),
];

/** Merge patches of IPPool p1 (first case above) after it was created: cidr and blockSize are immutable. */
export const POOL_UPDATES: ReadonlyArray<{ name: string; accept: boolean; patch: Record<string, unknown> }> = [
  { name: 'change an IPPool\'s cidr', accept: false, patch: { spec: { cidr: '10.20.0.0/16' } } },
  { name: 'change an IPPool\'s blockSize', accept: false, patch: { spec: { blockSize: 24 } } },
  { name: 'disable an IPPool', accept: true, patch: { spec: { disabled: true } } },
];
