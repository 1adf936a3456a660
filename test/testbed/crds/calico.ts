// The Calico CustomResourceDefinitions the testbed serves (crd.projectcalico.org/v1, Calico's "KDD" storage),
// written for this project from Calico's API reference (docs.tigera.io/calico/latest/reference/resources/ and
// the Go types of projectcalico/calico api/pkg/apis/projectcalico/v3 and libcalico-go/lib/apis/v3). They are
// test definitions, not Calico's files: each models every field kube-renumber and the testbed read or write,
// with the validation that matters for them; where a subtree is not modelled it is kept with
// x-kubernetes-preserve-unknown-fields. README.md in this folder lists where they differ from Calico's own.
//
//   import { calicoCRDs, calicoCRDsYaml } from './crds/calico.ts';
//   node test/testbed/crds/calico.ts > crds.yaml   # the same definitions as multi-document YAML
//
// The testbed (cluster.ts) applies calicoCRDsYaml() unless KUBE_RENUMBER_CALICO_CRDS names a directory of
// other CRD files (Calico's own, for instance).

import { dump as dumpYaml } from 'js-yaml';
import { fileURLToPath } from 'node:url';

export const CALICO_GROUP = 'crd.projectcalico.org';
export const CALICO_VERSION = 'v1';

/** An OpenAPI v3 schema node as a CustomResourceDefinition holds it (JSONSchemaProps). */
export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  nullable?: boolean;
  default?: unknown;
  anyOf?: Schema[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-validations'?: Array<{ rule: string; message: string }>;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string };
    scope: 'Cluster' | 'Namespaced';
    versions: Array<{ name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: Schema } }>;
  };
}

// ---- schema helpers --------------------------------------------------------------------------------

type Extra = Omit<Schema, 'type'>;

const str = (description: string, extra: Extra = {}): Schema => ({ type: 'string', description, ...extra });
const bool = (description: string): Schema => ({ type: 'boolean', description });
const int = (description: string, extra: Extra = {}): Schema => ({ type: 'integer', description, ...extra });
const num = (description: string): Schema => ({ type: 'number', description });
const arr = (description: string, items: Schema, extra: Extra = {}): Schema => ({ type: 'array', description, items, ...extra });
const obj = (description: string, properties: Record<string, Schema>, extra: Extra = {}): Schema => ({ type: 'object', description, properties, ...extra });
const map = (description: string, values: Schema): Schema => ({ type: 'object', description, additionalProperties: values });
/** A subtree this project does not model: any object, kept as written. */
const opaque = (description: string): Schema => ({ type: 'object', description, 'x-kubernetes-preserve-unknown-fields': true });
const intOrString = (description: string): Schema => ({ description, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });

/** A CIDR string (IPv4 or IPv6, prefix required), checked by the apiserver's CEL IP library. */
const cidr = (description: string, extra: Extra = {}): Schema =>
  str(description, {
    maxLength: 48,
    ...extra,
    'x-kubernetes-validations': [
      { rule: 'isCIDR(self)', message: 'must be a CIDR such as 10.244.0.0/16 or fd00::/48' },
      ...(extra['x-kubernetes-validations'] ?? []),
    ],
  });

/**
 * A network in a policy rule or network set: a CIDR, or one address (Calico reads it as /32 or /128). At most
 * 43 characters (ffff:…:ffff/128): the apiserver estimates a CEL rule's cost from maxLength and maxItems,
 * and 1024 rules x 256 nets of 48 characters exceed its per-rule budget.
 */
const net = (): Schema => str('A CIDR or a single IP address.', {
  maxLength: 43,
  'x-kubernetes-validations': [{ rule: 'isCIDR(self) || isIP(self)', message: 'must be a CIDR or an IP address' }],
});

/**
 * Most entries of a network set or an IP reservation. Calico sets no limit; the apiserver needs one to bound
 * the CEL cost of checking each entry (unbounded, it assumes ~1M entries and refuses the rule). An object
 * must fit etcd's 1.5 MiB anyway: about 100,000 short CIDRs.
 */
const MAX_SET_NETS = 100_000;

const immutable = (what: string) => ({ rule: 'self == oldSelf', message: `${what} cannot be changed` });

// ---- IPAM -------------------------------------------------------------------------------------------

const ENCAP_MODES = ['Never', 'Always', 'CrossSubnet'];
const ipv4 = 'cidr(self.cidr).ip().family() == 4';

export const IPPOOL_SPEC: Schema = obj(
  'IPPoolSpec: a range Calico IPAM assigns pod addresses from.',
  {
    cidr: cidr('The pool CIDR. Host bits must be zero; cannot be changed once created.', {
      'x-kubernetes-validations': [
        { rule: '!isCIDR(self) || cidr(self) == cidr(self).masked()', message: 'must be a network address (host bits zero), e.g. 10.244.0.0/16' },
        immutable('cidr'),
      ],
    }),
    blockSize: int('Prefix length of the blocks handed to nodes: 20-32 (IPv4), 116-128 (IPv6); 0 or absent = 26 (IPv4) or 122 (IPv6). Cannot be changed once created.', {
      minimum: 0, maximum: 128, 'x-kubernetes-validations': [immutable('blockSize')],
    }),
    ipipMode: str('When IP-in-IP encapsulation is used (IPv4 only).', { enum: ENCAP_MODES }),
    vxlanMode: str('When VXLAN encapsulation is used.', { enum: ENCAP_MODES }),
    natOutgoing: bool('Masquerade traffic from this pool to destinations outside every pool.'),
    disabled: bool('No new addresses are assigned from a disabled pool.'),
    disableBGPExport: bool('Do not export this pool\'s routes over BGP.'),
    nodeSelector: str('Calico selector of the nodes that may take blocks from this pool (e.g. all()).', { maxLength: 1024 }),
    namespaceSelector: str('Calico selector of the namespaces whose pods may take addresses from this pool.', { maxLength: 1024 }),
    allowedUses: arr('What the pool\'s addresses are for; absent or empty = [Workload, Tunnel].',
      str('A use.', { enum: ['Workload', 'Tunnel', 'LoadBalancer'] }), { maxItems: 10, 'x-kubernetes-list-type': 'set' }),
    assignmentMode: str('Automatic: IPAM picks from this pool; Manual: only explicit requests.', { enum: ['Automatic', 'Manual'] }),
    // The Calico v1 (etcd-era) spelling, still served by crd.projectcalico.org/v1 and read by kube-renumber.
    ipip: obj('Deprecated v1 form of ipipMode.', {
      enabled: bool('IP-in-IP on.'),
      mode: str('always or cross-subnet (v1 spelling).', { enum: ['always', 'cross-subnet'] }),
    }),
    'nat-outgoing': bool('Deprecated v1 form of natOutgoing.'),
  },
  {
    required: ['cidr'],
    'x-kubernetes-validations': [
      {
        rule: `!isCIDR(self.cidr) || !has(self.blockSize) || self.blockSize == 0 || (${ipv4} ? self.blockSize >= 20 && self.blockSize <= 32 : self.blockSize >= 116 && self.blockSize <= 128)`,
        message: 'blockSize must be 20-32 for an IPv4 pool and 116-128 for an IPv6 pool',
      },
      {
        rule: `!isCIDR(self.cidr) || (has(self.disabled) && self.disabled) || cidr(self.cidr).prefixLength() <= (has(self.blockSize) && self.blockSize != 0 ? self.blockSize : (${ipv4} ? 26 : 122))`,
        message: 'the pool is smaller than one block: its prefix must be at most blockSize',
      },
      {
        rule: "!has(self.ipipMode) || !has(self.vxlanMode) || self.ipipMode == 'Never' || self.vxlanMode == 'Never'",
        message: 'ipipMode and vxlanMode cannot both be enabled',
      },
      {
        rule: `!isCIDR(self.cidr) || ${ipv4} || !has(self.ipipMode) || self.ipipMode == 'Never'`,
        message: 'IP-in-IP is not supported on IPv6 pools',
      },
    ],
  },
);

const blockAffinityFor = 'Affinity of the block: host:<node> or virtual:<name>; absent = no affinity.';

export const IPAMBLOCK_SPEC: Schema = obj(
  'IPAMBlockSpec: one block of a pool and the addresses allocated in it.',
  {
    cidr: cidr('The block\'s CIDR.'),
    affinity: str(blockAffinityFor, { pattern: '^(host|virtual):[a-zA-Z0-9.\\-_]+$' }),
    affinityClaimTime: str('When the affinity was claimed.', { format: 'date-time' }),
    allocations: arr('Per ordinal of the block: null = free, else the index of its entry in attributes.',
      int('Index into attributes.', { nullable: true }), { 'x-kubernetes-list-type': 'atomic' }),
    unallocated: arr('The free ordinals, in the order they are handed out.', int('An ordinal.'), { 'x-kubernetes-list-type': 'atomic' }),
    attributes: arr('Metadata of the allocations.', obj('One allocation\'s owner.', {
      handle_id: str('The IPAMHandle that owns the allocation.'),
      secondary: map('Owner attributes (namespace, node, pod, timestamp).', str('A value.')),
      alternateOwnerAttrs: map('Attributes of a second owner during an address migration.', str('A value.')),
      releasedAt: str('When the allocation was released (cool-down).', { format: 'date-time' }),
    }), { 'x-kubernetes-list-type': 'atomic' }),
    sequenceNumber: int('Incremented on every write of the block.', { format: 'int64', default: 0 }),
    sequenceNumberForAllocation: map('Ordinal (as a string) to the block\'s sequenceNumber when it was allocated.', int('A sequence number.', { format: 'int64' })),
    deleted: bool('Set just before the block is deleted (race guard).'),
    strictAffinity: bool('Deprecated (IPAMConfig holds it now).'),
  },
  { required: ['cidr', 'allocations', 'unallocated', 'attributes', 'strictAffinity'] },
);

export const BLOCKAFFINITY_SPEC: Schema = obj(
  'BlockAffinitySpec: a node\'s claim on a block.',
  {
    state: str('Where the claim stands.', { enum: ['pending', 'confirmed', 'pendingDeletion'] }),
    node: str('The node the block is affine to.'),
    type: str('host or virtual.'),
    cidr: cidr('The block\'s CIDR.'),
    deleted: str('"true" once the affinity is being removed (a string in the v1 CRD).', { enum: ['true', 'false'] }),
  },
  { required: ['state', 'node', 'cidr', 'deleted'] },
);

export const IPAMHANDLE_SPEC: Schema = obj(
  'IPAMHandleSpec: the allocations held by one owner (e.g. k8s-pod-network.<pod uid>).',
  {
    handleID: str('The handle\'s ID (the object\'s name).'),
    block: map('Block CIDR to the number of this handle\'s allocations in it.', int('A count.', { minimum: 0 })),
    deleted: bool('Set just before the handle is deleted (race guard).'),
  },
  { required: ['handleID', 'block'] },
);

export const IPAMCONFIG_SPEC: Schema = obj(
  'IPAMConfigSpec: cluster-wide IPAM settings (object name "default").',
  {
    strictAffinity: bool('No borrowing of addresses from other nodes\' blocks.'),
    autoAllocateBlocks: bool('Claim blocks for nodes on demand.'),
    maxBlocksPerHost: int('Most blocks a node may claim; 0 = no limit.', { minimum: 0, maximum: 1_000_000 }),
  },
  { required: ['strictAffinity', 'autoAllocateBlocks'] },
);

export const IPRESERVATION_SPEC: Schema = obj(
  'IPReservationSpec: addresses Calico IPAM never hands out.',
  {
    reservedCIDRs: arr('CIDRs (a single address as /32 or /128).', cidr('A reserved CIDR.'), { maxItems: MAX_SET_NETS, 'x-kubernetes-list-type': 'set' }),
  },
);

export const CLUSTERINFORMATION_SPEC: Schema = obj(
  'ClusterInformationSpec: facts calico-node records about the cluster (object name "default").',
  {
    clusterGUID: str('Unique ID of the cluster.'),
    clusterType: str('Comma-separated environment tags, e.g. "k8s,bgp,kubeadm" or "kubespray,bgp,kubeadm,kdd,k8s".'),
    calicoVersion: str('Version of calico-node.'),
    datastoreReady: bool('False while a datastore migration runs.'),
    variant: str('Calico or an enterprise variant.'),
  },
);

// ---- policy ------------------------------------------------------------------------------------------

const SELECTOR = { maxLength: 1024 };
const nets = (description: string): Schema => arr(description, net(), { maxItems: 256 });
const ports = (description: string): Schema => arr(description, intOrString('A port, a range "from:to", or a named port.'), { maxItems: 50 });
const protocol = (description: string): Schema => intOrString(description);
const icmp = (description: string): Schema => obj(description, {
  type: int('ICMP type.', { minimum: 0, maximum: 254 }),
  code: int('ICMP code (needs type).', { minimum: 0, maximum: 255 }),
});

const ENTITY_RULE: Schema = obj('What a rule matches at one end (source or destination).', {
  nets: nets('Match addresses in any of these networks.'),
  notNets: nets('Do not match addresses in these networks.'),
  selector: str('Calico selector of endpoints (and network sets).', SELECTOR),
  notSelector: str('Negated selector.', SELECTOR),
  namespaceSelector: str('Calico selector of namespaces.', SELECTOR),
  ports: ports('Match these ports.'),
  notPorts: ports('Do not match these ports.'),
  serviceAccounts: obj('Match endpoints by ServiceAccount.', {
    names: arr('ServiceAccount names.', str('A name.')),
    selector: str('Selector of ServiceAccount labels.', SELECTOR),
  }),
  services: obj('Match a Kubernetes Service\'s endpoints.', {
    name: str('The Service.', { maxLength: 253 }),
    namespace: str('Its namespace.', { maxLength: 253 }),
  }),
});

const RULE: Schema = obj('One ingress or egress rule.', {
  action: str('What a match does.', { enum: ['Allow', 'Deny', 'Log', 'Pass'] }),
  ipVersion: int('4 or 6.', { enum: [4, 6] }),
  protocol: protocol('TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255.'),
  notProtocol: protocol('Negated protocol.'),
  icmp: icmp('ICMP match.'),
  notICMP: icmp('Negated ICMP match.'),
  source: ENTITY_RULE,
  destination: ENTITY_RULE,
  http: opaque('HTTP match (methods, paths); not modelled here.'),
  metadata: obj('Rule metadata.', { annotations: map('Annotations.', str('A value.')) }),
}, { required: ['action'] });

const POLICY_COMMON: Record<string, Schema> = {
  tier: str('The tier the policy belongs to (default: default).'),
  order: num('Lower orders apply first.'),
  selector: str('Calico selector of the endpoints the policy applies to.', SELECTOR),
  serviceAccountSelector: str('Selector of the ServiceAccounts the policy applies to.', SELECTOR),
  types: arr('Which directions the policy covers.', str('A direction.', { enum: ['Ingress', 'Egress'] }), { minItems: 1, maxItems: 2 }),
  ingress: arr('Ingress rules, in order.', RULE, { maxItems: 1024 }),
  egress: arr('Egress rules, in order.', RULE, { maxItems: 1024 }),
  performanceHints: arr('Hints to Felix.', str('A hint.', { enum: ['AssumeNeededOnEveryNode'] })),
};

export const NETWORKPOLICY_SPEC: Schema = obj('NetworkPolicySpec: a namespaced Calico policy.', { ...POLICY_COMMON });

export const GLOBALNETWORKPOLICY_SPEC: Schema = obj('GlobalNetworkPolicySpec: a cluster-wide Calico policy.', {
  ...POLICY_COMMON,
  namespaceSelector: str('Calico selector of the namespaces whose endpoints the policy applies to.', SELECTOR),
  doNotTrack: bool('Apply before connection tracking (untracked policy).'),
  preDNAT: bool('Apply before DNAT (host endpoints).'),
  applyOnForward: bool('Also apply to forwarded traffic.'),
});

export const NETWORKSET_SPEC: Schema = obj('NetworkSetSpec: named networks for policy selectors (namespaced).', {
  nets: arr('The networks.', net(), { maxItems: MAX_SET_NETS }),
});

export const GLOBALNETWORKSET_SPEC: Schema = obj('GlobalNetworkSetSpec: named networks for policy selectors (cluster-wide).', {
  nets: arr('The networks.', net(), { maxItems: MAX_SET_NETS }),
});

export const TIER_SPEC: Schema = obj('TierSpec: an ordered group of policies.', {
  order: num('Lower orders apply first; absent = last.'),
  defaultAction: str('What a policy of this tier does with traffic no rule matched.', { enum: ['Pass', 'Deny'] }),
});

// ---- the definitions ---------------------------------------------------------------------------------

interface Kind {
  kind: string;
  plural: string;
  scope: 'Cluster' | 'Namespaced';
  spec: Schema;
  /** The object is meaningless without a spec (IPAM objects): spec is required. */
  specRequired?: boolean;
}

/** Every Calico kind the testbed serves. */
export const CALICO_KINDS: readonly Kind[] = [
  { kind: 'IPPool', plural: 'ippools', scope: 'Cluster', spec: IPPOOL_SPEC, specRequired: true },
  { kind: 'IPAMBlock', plural: 'ipamblocks', scope: 'Cluster', spec: IPAMBLOCK_SPEC, specRequired: true },
  { kind: 'BlockAffinity', plural: 'blockaffinities', scope: 'Cluster', spec: BLOCKAFFINITY_SPEC, specRequired: true },
  { kind: 'IPAMHandle', plural: 'ipamhandles', scope: 'Cluster', spec: IPAMHANDLE_SPEC, specRequired: true },
  { kind: 'IPAMConfig', plural: 'ipamconfigs', scope: 'Cluster', spec: IPAMCONFIG_SPEC },
  { kind: 'IPReservation', plural: 'ipreservations', scope: 'Cluster', spec: IPRESERVATION_SPEC },
  { kind: 'ClusterInformation', plural: 'clusterinformations', scope: 'Cluster', spec: CLUSTERINFORMATION_SPEC },
  { kind: 'NetworkPolicy', plural: 'networkpolicies', scope: 'Namespaced', spec: NETWORKPOLICY_SPEC },
  { kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', scope: 'Cluster', spec: GLOBALNETWORKPOLICY_SPEC },
  { kind: 'NetworkSet', plural: 'networksets', scope: 'Namespaced', spec: NETWORKSET_SPEC },
  { kind: 'GlobalNetworkSet', plural: 'globalnetworksets', scope: 'Cluster', spec: GLOBALNETWORKSET_SPEC },
  { kind: 'Tier', plural: 'tiers', scope: 'Cluster', spec: TIER_SPEC },
];

function definition(k: Kind): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${k.plural}.${CALICO_GROUP}`, labels: { 'app.kubernetes.io/part-of': 'kube-renumber-testbed' } },
    spec: {
      group: CALICO_GROUP,
      names: { kind: k.kind, listKind: `${k.kind}List`, plural: k.plural, singular: k.kind.toLowerCase() },
      scope: k.scope,
      versions: [{
        name: CALICO_VERSION,
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: `Calico ${k.kind} (${CALICO_GROUP}/${CALICO_VERSION}): kube-renumber's test definition.`,
            properties: {
              apiVersion: str('APIVersion of the object.'),
              kind: str('Kind of the object.'),
              metadata: { type: 'object' },
              spec: k.spec,
            },
            ...(k.specRequired ? { required: ['spec'] } : {}),
          },
        },
      }],
    },
  };
}

/** The definitions, fresh objects on every call. */
export function calicoCRDs(): CustomResourceDefinition[] {
  return structuredClone(CALICO_KINDS.map(definition));
}

/** The definitions as one multi-document YAML text (what the testbed applies). */
export function calicoCRDsYaml(): string {
  return calicoCRDs().map((c) => `---\n${dumpYaml(c, { lineWidth: -1, noRefs: true })}`).join('');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(calicoCRDsYaml());
