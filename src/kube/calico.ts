/** Calico (KDD mode: crd.projectcalico.org/v1) and Tigera operator resources, and Nodes. */
import type { KindResource } from './resources.ts';

export const IPPOOLS: KindResource = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ippools', namespaced: false, kind: 'IPPool' };
export const IPAMBLOCKS: KindResource = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ipamblocks', namespaced: false, kind: 'IPAMBlock' };
export const BLOCKAFFINITIES: KindResource = { group: 'crd.projectcalico.org', version: 'v1', plural: 'blockaffinities', namespaced: false, kind: 'BlockAffinity' };
export const IPAMHANDLES: KindResource = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ipamhandles', namespaced: false, kind: 'IPAMHandle' };
export const INSTALLATIONS: KindResource = { group: 'operator.tigera.io', version: 'v1', plural: 'installations', namespaced: false, kind: 'Installation' };
export const NODES: KindResource = { group: '', version: 'v1', plural: 'nodes', namespaced: false, kind: 'Node' };

