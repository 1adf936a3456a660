import { readFileSync } from 'node:fs';

/** Set by the single-file build (`npm run dist`, scripts/dist.ts) from package.json: there is no package.json beside it. */
declare const KUBE_RENUMBER_VERSION: string | undefined;

/** The package version: given by the bundler, else read from package.json (two levels up from both src/cli and dist/cli). */
export const VERSION: string = (() => {
  if (typeof KUBE_RENUMBER_VERSION === 'string') return KUBE_RENUMBER_VERSION;
  try {
    return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;
  } catch {
    return 'unknown';
  }
})();
