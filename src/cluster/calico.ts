/**
 * Calico objects: IPPools (from the CRDs or the projectcalico.org/v3 API), IPAMBlocks and BlockAffinities.
 */
import { formatCidr } from '../net/index.ts';
import type { BlockAffinityInfo, CalicoBlock, CalicoPool, KubeObject } from './types.ts';
import type { Builder } from './builder.ts';

/**
 * An encapsulation mode as today's IPPool takes it (Always, CrossSubnet, Never): Calico's v1 API wrote the IP-in-IP
 * mode in lower case with a dash ("always", "cross-subnet"), and a pool copied from it must not carry that spelling.
 */
function encapMode(mode: string): string {
  const key = mode.toLowerCase().replace(/[-_]/g, '');
  return key === 'always' ? 'Always' : key === 'crosssubnet' ? 'CrossSubnet' : key === 'never' ? 'Never' : mode;
}

/** A pool's record; undefined when its CIDR is not one (with a warning). */
function readPool(o: KubeObject, b: Builder): CalicoPool | undefined {
  const name = o.metadata?.name ?? '';
  const spec = o.spec ?? {};
  const c = b.parseCidr(spec.cidr, `IPPool/${name}`);
  if (!c) return undefined;
  let blockSize = c.family === 4 ? 26 : 122;
  if (spec.blockSize !== undefined && spec.blockSize !== null) {
    const n = Number(spec.blockSize);
    if (n === 0) { /* 0 is Calico's default for the family */ } else if (Number.isInteger(n)) blockSize = n;
    else b.warn(`IPPool/${name}: blockSize ${JSON.stringify(spec.blockSize)} is not a number; assuming ${blockSize}`);
  }
  const pool: CalicoPool = { name, cidr: formatCidr(c), blockSize, disabled: spec.disabled === true };
  if (typeof spec.nodeSelector === 'string') pool.nodeSelector = spec.nodeSelector;
  const ipip = typeof spec.ipipMode === 'string' ? spec.ipipMode : spec.ipip?.enabled === true ? (spec.ipip.mode ?? 'Always') : undefined;
  if (ipip !== undefined) pool.ipipMode = encapMode(ipip);
  if (typeof spec.vxlanMode === 'string') pool.vxlanMode = encapMode(spec.vxlanMode);
  const nat = typeof spec.natOutgoing === 'boolean' ? spec.natOutgoing : spec['nat-outgoing'];
  if (typeof nat === 'boolean') pool.natOutgoing = nat;
  if (Array.isArray(spec.allowedUses)) pool.allowedUses = spec.allowedUses.filter((x: unknown) => typeof x === 'string');
  return pool;
}

/**
 * Reads a Calico IPPool into `pools` (another group's IPPool is ignored). The v3 API and the CRDs show the
 * same pools; one is kept per name (the v3 view when both).
 */
export function collectPool(o: KubeObject, b: Builder, pools: Map<string, CalicoPool>): void {
  const av = String(o.apiVersion ?? '');
  if (!av.startsWith('crd.projectcalico.org/') && !av.startsWith('projectcalico.org/')) return;
  const pool = readPool(o, b);
  if (pool) {
    if (!pools.has(pool.name) || av.startsWith('projectcalico.org/')) pools.set(pool.name, pool);
  }
}

/** An IPAMBlock's record (CIDR, affine node, allocated addresses); undefined when its CIDR is not one. */
export function readIPAMBlock(o: KubeObject, b: Builder): CalicoBlock | undefined {
  const spec = o.spec ?? {};
  const cidr = b.cidr(spec.cidr, `IPAMBlock/${o.metadata?.name ?? ''}`);
  if (!cidr) return undefined;
  const block: CalicoBlock = { cidr, allocated: 0 };
  if (typeof spec.affinity === 'string' && spec.affinity.startsWith('host:')) block.node = spec.affinity.slice(5);
  if (Array.isArray(spec.allocations)) {
    let n = 0;
    for (const a of spec.allocations) if (a !== null && a !== undefined) n++;
    block.allocated = n;
  }
  return block;
}

/** A BlockAffinity's record (name, node, CIDR, state); undefined when its CIDR is not one. */
export function readBlockAffinity(o: KubeObject, b: Builder): BlockAffinityInfo | undefined {
  const spec = o.spec ?? {};
  const name = o.metadata?.name ?? '';
  const cidr = b.cidr(spec.cidr, `BlockAffinity/${name}`);
  if (!cidr) return undefined;
  const a: BlockAffinityInfo = { name, node: typeof spec.node === 'string' ? spec.node : '', cidr };
  if (typeof spec.state === 'string') a.state = spec.state;
  return a;
}

/** Adds each pool's CIDR as a 'pool' range. */
export function addPoolRanges(b: Builder, pools: Iterable<CalicoPool>): void {
  for (const p of pools) b.addNormalizedRange(p.cidr, 'pool', `IPPool/${p.name}`, `Calico pool ${p.name}${p.disabled ? ' (disabled)' : ''}`);
}
