export * from './probe.ts';
export * from './stats.ts';
export { PROTOCOLS, type Protocol } from './wire.ts';
export * from './targets.ts';
export * from './resolv.ts';
