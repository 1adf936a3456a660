/** The Service CIDR plan: mapping, pre-flight checks, steps, distribution patches, rendering. Pure. */
export * from './service-mapping.ts';
export * from './preflight.ts';
export * from './distro-patches.ts';
export * from './plan.ts';
export * from './render.ts';
export * from "./pod-plan.ts";
