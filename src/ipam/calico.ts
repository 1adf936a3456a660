/** Calico IPAM: pods take addresses from IPPools; moved by a new pool, the old one disabled, workloads restarted. */
import type { IpamOwner, OwnerCapability } from './types.ts';

const pod: OwnerCapability = {
  supported: true,
  path: 'calico',
  describe: (cni) => `pods get IPs from Calico IPAM${cni.operatorManaged ? ' (operator-managed: pools change through Installation.spec.calicoNetwork.ipPools)' : ''}: the pod range moves by pool migration, node podCIDRs are not used`,
};

export const calicoOperator: IpamOwner<'calico-operator'> = {
  kind: 'calico-operator',
  title: 'Calico IPAM (Tigera operator)',
  detect: (i) => (i.plugin === 'calico' && i.ipam === 'calico-ipam' && i.operatorManaged ? [...i.evidence, 'IPAM calico-ipam, Calico managed by the Tigera operator'] : undefined),
  pod,
  sources: ['https://docs.tigera.io/calico/latest/networking/ipam/migrate-pools'],
};

export const calicoManifest: IpamOwner<'calico'> = {
  kind: 'calico',
  title: 'Calico IPAM',
  detect: (i) => {
    if (i.plugin === 'calico' && i.ipam === 'calico-ipam') return [...i.evidence, 'IPAM calico-ipam'];
    // pools and no plugin seen (a dump without the calico-node pods): Calico still owns the addresses
    if ((i.plugin === 'calico' || i.plugin === 'unknown') && i.ipam === 'unknown' && i.pools > 0) return [`${i.pools} Calico IPPool(s) and no other IPAM seen`];
    return undefined;
  },
  pod,
  sources: ['https://docs.tigera.io/calico/latest/networking/ipam/migrate-pools'],
};
