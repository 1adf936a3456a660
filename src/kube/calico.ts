/** Calico (KDD mode: crd.projectcalico.org/v1) and Tigera operator resources, and Nodes. */
import type { ResourceType } from './resources.ts';

export const IPPOOLS: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ippools', namespaced: false };
export const IPAMBLOCKS: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ipamblocks', namespaced: false };
export const BLOCKAFFINITIES: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', plural: 'blockaffinities', namespaced: false };
export const IPAMHANDLES: ResourceType = { group: 'crd.projectcalico.org', version: 'v1', plural: 'ipamhandles', namespaced: false };
export const INSTALLATIONS: ResourceType = { group: 'operator.tigera.io', version: 'v1', plural: 'installations', namespaced: false };
export const NODES: ResourceType = { group: '', version: 'v1', plural: 'nodes', namespaced: false };

/** apiVersion and kind for backups of listed items (list items carry neither). */
export const KIND_OF: Readonly<Record<string, { apiVersion: string; kind: string }>> = {
  ippools: { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool' },
  ipamblocks: { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock' },
  blockaffinities: { apiVersion: 'crd.projectcalico.org/v1', kind: 'BlockAffinity' },
  ipamhandles: { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMHandle' },
  installations: { apiVersion: 'operator.tigera.io/v1', kind: 'Installation' },
  nodes: { apiVersion: 'v1', kind: 'Node' },
  pods: { apiVersion: 'v1', kind: 'Pod' },
};
